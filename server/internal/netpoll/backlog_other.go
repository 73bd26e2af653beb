//go:build !linux

package netpoll

// TCPInfo is the scratch struct ListenQueue fills (nothing outside Linux).
type TCPInfo struct{}

// ListenQueue is not available outside Linux.
func ListenQueue(fd int, info *TCPInfo) (depth, limit uint32, ok bool) { return 0, 0, false }
