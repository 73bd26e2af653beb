//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package server

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicenet/sluice/internal/uring"

	"github.com/sluicenet/sluice/server/internal/netpoll"
)

func TestBackendNames(t *testing.T) {
	for i, tc := range []struct {
		in   string
		want Backend
		ok   bool
	}{
		{"epoll", BackendEpoll, true}, {"", BackendEpoll, true},
		{"io_uring", BackendIOURing, true}, {"uring", BackendIOURing, true}, {"kqueue", 0, false},
	} {
		got, err := ParseBackend(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%d: ParseBackend(%q) = %v, %v", i, tc.in, got, err)
		}
		if tc.ok && tc.in != "" && tc.in != "uring" && got.String() != tc.in {
			t.Errorf("%d: String() = %q, want %q", i, got.String(), tc.in)
		}
	}
	if _, err := New(Config{Backend: 9}, HandlerFuncs{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Backend 9: %v, want ErrInvalidConfig", err)
	}
}

// syncBuffer is a log sink safe for the loops' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBackendFallback: where the kernel lacks what the io_uring backend
// needs, New runs epoll and logs the MissingError's text once.
func TestBackendFallback(t *testing.T) {
	old := uringCheck
	defer func() { uringCheck = old }()
	missing := &uring.MissingError{Missing: uring.FeatMultishotAccept}
	uringCheck = func() error { return missing }
	var logs syncBuffer
	e, err := New(Config{Backend: BackendIOURing, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Backend() != BackendEpoll {
		t.Errorf("Backend() = %v, want epoll after the fallback", e.Backend())
	}
	if got := logs.String(); strings.Count(got, "using epoll") != 1 || !strings.Contains(got, missing.Error()) {
		t.Errorf("log %q: want one fallback line with %q", got, missing.Error())
	}
}

// TestBackendEcho runs a pipelined echo with exact bytes on each backend
// explicitly (the rest of the suite runs on SLUICE_TEST_BACKEND's).
func TestBackendEcho(t *testing.T) {
	for _, b := range []Backend{BackendEpoll, BackendIOURing} {
		t.Run(b.String(), func(t *testing.T) {
			e := start(t, Config{Loops: 2, Backend: b, Codec: codecByName(t, "length", 0)}, echoHandlerAlloc)
			want := b
			if testBackend != BackendEpoll {
				want = testBackend
			}
			if err := netpoll.CheckURing(); err != nil {
				want = BackendEpoll
			}
			if e.Backend() != want {
				t.Fatalf("Backend() = %v, want %v", e.Backend(), want)
			}
			var wg sync.WaitGroup
			for i := 0; i < 8; i++ {
				c := dial(t, e)
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.SetDeadline(time.Now().Add(20 * time.Second))
					out := pipelined(64, 100+i)
					in := make([]byte, len(out))
					for r := 0; r < 50; r++ {
						if _, err := c.Write(out); err != nil {
							t.Error(err)
							return
						}
						if _, err := io.ReadFull(c, in); err != nil {
							t.Error(err)
							return
						}
						if !bytes.Equal(in, out) {
							t.Errorf("conn %d round %d: echoed bytes differ", i, r)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
