package server

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicenet/sluice/protocol"
)

func TestErrors(t *testing.T) {
	all := []error{ErrUnsupported, ErrInvalidConfig, ErrStarted, ErrEngineClosed, ErrClosed,
		ErrQueueFull, ErrInboxFull, ErrIdleTimeout, ErrFrameTimeout, ErrWriteStall,
		ErrFrameTooLarge, ErrMalformed, ErrPeerClosed, ErrLocalClose, ErrShutdown, ErrRejected,
		errInBufferFull, errCodecOverrun, errPollFailed}
	for i, err := range all {
		if !strings.HasPrefix(err.Error(), "sluice: ") {
			t.Errorf("%d: %q lacks the sluice: prefix", i, err)
		}
	}
	for i, err := range []error{ErrIdleTimeout, ErrFrameTimeout, ErrWriteStall} {
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%d: %v does not match os.ErrDeadlineExceeded", i, err)
		}
		var te interface{ Timeout() bool }
		if !errors.As(err, &te) || !te.Timeout() {
			t.Errorf("%d: %v is not a Timeout()", i, err)
		}
	}
	if errors.Is(ErrPeerClosed, os.ErrDeadlineExceeded) {
		t.Error("ErrPeerClosed matches os.ErrDeadlineExceeded")
	}
	if !errors.Is(ErrUnsupported, errors.ErrUnsupported) {
		t.Error("ErrUnsupported does not match errors.ErrUnsupported")
	}
	if !errors.Is(errInBufferFull, protocol.ErrFrameTooLarge) {
		t.Error("errInBufferFull is not ErrFrameTooLarge")
	}
}

func TestCauseOf(t *testing.T) {
	tests := []struct {
		err  error
		want CloseCause
	}{
		{ErrPeerClosed, CausePeerClosed},
		{ErrLocalClose, CauseLocal},
		{ErrIdleTimeout, CauseIdleTimeout},
		{ErrFrameTimeout, CauseFrameTimeout},
		{ErrWriteStall, CauseWriteStall},
		{fmt.Errorf("%w: big", protocol.ErrFrameTooLarge), CauseFrameTooLarge},
		{errInBufferFull, CauseFrameTooLarge},
		{fmt.Errorf("x: %w", protocol.ErrMalformed), CauseMalformed},
		{ErrQueueFull, CauseQueueFull},
		{fmt.Errorf("%w: tenant", ErrRejected), CauseRejected},
		{ErrShutdown, CauseShutdown},
		{os.NewSyscallError("read", syscall.ECONNRESET), CauseIOError},
		{errors.New("mine"), CauseIOError},
	}
	for i, tt := range tests {
		if got := CauseOf(tt.err); got != tt.want {
			t.Errorf("%d: CauseOf(%v) = %v, want %v", i, tt.err, got, tt.want)
		}
	}
}
