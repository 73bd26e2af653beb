//go:build !linux

package server

// tcpInfo is the scratch struct listenQueue fills (nothing outside Linux).
type tcpInfo struct{}

// listenQueue is not available outside Linux.
func listenQueue(fd int, info *tcpInfo) (depth, limit uint32, ok bool) { return 0, 0, false }

func sysWrite(fd int, b []byte) (int, errno) { return 0, errnoUnsupported }
