//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package uring

import (
	"errors"
	"runtime"
	"testing"
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
