//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDetectProbeDiscriminates pins the assumption Detect's multishot probe
// rests on: a flag the kernel does not know fails the entry with EINVAL at
// prep, before the (invalid) descriptor is looked up, so EBADF means the
// flag is known.
func TestDetectProbeDiscriminates(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(Config{Entries: 8})
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("io_uring unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.tryEBADF(func() (*SQE, error) { return r.PrepAcceptMultishot(-1, 0, 0) }) {
		t.Skip("kernel lacks multishot accept; nothing to discriminate")
	}
	unknown := func() (*SQE, error) {
		s, err := r.PrepAcceptMultishot(-1, 0, 0)
		if s != nil {
			s.ioprio = 1 << 15 // no such accept flag
		}
		return s, err
	}
	if r.tryEBADF(unknown) {
		t.Fatal("an unknown accept flag passed as EBADF: Detect's multishot probe would report anything as supported")
	}
}

// TestDetectRefused plays kernels that refuse io_uring: Detect returns a
// *MissingError that matches ErrUnsupported and names the cause, which is
// what the tests' skip and an engine's fallback rest on.
func TestDetectRefused(t *testing.T) {
	saved := sysSetup
	t.Cleanup(func() { sysSetup = saved })
	for _, e := range []unix.Errno{unix.ENOSYS, unix.EPERM} {
		sysSetup = func(uint32, *params) (uintptr, unix.Errno) { return 0, e }
		f, err := Detect()
		var me *MissingError
		if f != 0 || !errors.As(err, &me) || !errors.Is(err, ErrUnsupported) || !errors.Is(err, e) {
			t.Errorf("%v: Detect() = %v, %v; want no features and a *MissingError matching ErrUnsupported and the errno", e, f, err)
			continue
		}
		if !strings.Contains(err.Error(), e.Error()) {
			t.Errorf("%v: message %q does not name the cause", e, err)
		}
		if _, err := New(Config{}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%v: New() = %v, want ErrUnsupported", e, err)
		}
	}
	sysSetup = func(uint32, *params) (uintptr, unix.Errno) { return 0, unix.ENOMEM }
	if _, err := Detect(); !errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.ENOMEM) {
		t.Errorf("ENOMEM: Detect() = %v, want a *MissingError wrapping ENOMEM", err)
	}
	if _, err := New(Config{}); errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.ENOMEM) {
		t.Errorf("ENOMEM: New() = %v, want the errno, not ErrUnsupported", err)
	}
}
