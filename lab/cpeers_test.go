package lab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicenet/sluice/lab/peers"
)

// TestBuildCPeerErrors checks BuildCPeer's refusals with a stand-in
// compiler: no compiler, a source that is not there, and a build that fails
// for want of liburing's headers, from a directory and from the lab's own
// sources (written into the output directory first).
func TestBuildCPeerErrors(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"epoll_echo.c", "uring_echo.c"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noHeader := filepath.Join(dir, "fakecc")
	script := "#!/bin/sh\necho 'uring_echo.c:9:10: fatal error: liburing.h: No such file or directory' >&2\nexit 1\n"
	if err := os.WriteFile(noHeader, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := BuildCPeer(ctx, filepath.Join(dir, "no-such-cc"), ServerCEpoll, dir, dir); !errors.Is(err, ErrNoCompiler) {
		t.Errorf("missing compiler: %v", err)
	}
	if _, _, err := BuildCPeer(ctx, noHeader, ServerCEpoll, filepath.Join(dir, "elsewhere"), dir); !errors.Is(err, ErrServerUnavailable) || !strings.Contains(err.Error(), "-peers-dir") {
		t.Errorf("missing source: %v", err)
	}
	_, cmdLine, err := BuildCPeer(ctx, noHeader, ServerCUring, dir, dir)
	if !errors.Is(err, ErrMissingLibrary) || !strings.Contains(err.Error(), "liburing-dev") || !strings.HasSuffix(cmdLine, "-luring") {
		t.Errorf("missing liburing: %v (command %q)", err, cmdLine)
	}
	out := t.TempDir()
	_, cmdLine, err = BuildCPeer(ctx, noHeader, ServerCUring, "", out)
	if !errors.Is(err, ErrMissingLibrary) || !strings.Contains(cmdLine, filepath.Join(out, "uring_echo.c")) {
		t.Errorf("own sources: %v (command %q)", err, cmdLine)
	}
	want, err := peers.CSource("uring_echo.c")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "uring_echo.c")); err != nil || !bytes.Equal(got, want) || !bytes.Contains(got, []byte("io_uring_prep_recv_multishot")) {
		t.Errorf("own source written: %v, %d bytes, want the %d of lab/peers/c/uring_echo.c", err, len(got), len(want))
	}
	if _, _, err := BuildCPeer(ctx, noHeader, ServerGnet, dir, dir); !errors.Is(err, ErrServerUnavailable) {
		t.Errorf("not a C peer: %v", err)
	}
}
