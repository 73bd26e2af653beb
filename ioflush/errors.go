package ioflush

import "errors"

// ErrUnsupported is returned by Flush on systems other than Linux.
// errors.Is(ErrUnsupported, errors.ErrUnsupported) also holds.
var ErrUnsupported = unsupportedError{}

// ErrInvalidWrite is returned by Flush when writev reports more bytes written
// than it was given, which only a broken kernel or test seam can do. The
// queue is left as it was before that call.
var ErrInvalidWrite = errors.New("sluice: ioflush: writev reported more bytes than it was given")

type unsupportedError struct{}

func (unsupportedError) Error() string {
	return "sluice: ioflush: vectored flushing needs Linux"
}

// Is makes ErrUnsupported match errors.ErrUnsupported.
func (unsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }
