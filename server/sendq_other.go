//go:build !linux

package server

// The ring's send path exists only on Linux (sendq_linux.go); recv mode,
// which selects it, is never on elsewhere.

func (l *loop) flushSend(c *Conn)           {}
func (l *loop) sendDone(c *Conn, res int32) {}
func (l *loop) orphanOut(c *Conn) bool      { return false }
func (l *loop) roomForSend(c *Conn)         {}
