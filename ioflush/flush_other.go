//go:build !linux

package ioflush

import "github.com/sluicenet/sluice/ringq"

// scratch holds nothing where Flush is unsupported.
type scratch struct{}

// Flush returns ErrUnsupported: vectored flushing needs Linux. q is left
// untouched.
func (f *Flusher) Flush(fd int, q *ringq.Ring[Segment], budgetBytes int) (n int, res Result, err error) {
	return 0, Flushed, ErrUnsupported
}
