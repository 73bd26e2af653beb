package peers

import (
	"embed"
	"fmt"
)

// cSources are the C floor servers (c/*.c), built into cmd/bench so that it
// can compile them wherever it runs.
//
//go:embed c/epoll_echo.c c/uring_echo.c
var cSources embed.FS

// CSource returns the source of the C floor server in file c/name:
// epoll_echo.c (single-threaded level-triggered epoll) or uring_echo.c
// (io_uring with multishot accept and recv into a provided buffer ring).
// Each takes its port as its only argument and echoes on 127.0.0.1 without
// framing. The comparison runner (package lab) compiles them with cc.
func CSource(name string) ([]byte, error) {
	b, err := cSources.ReadFile("c/" + name)
	if err != nil {
		return nil, fmt.Errorf("sluice: peers: C source: %w", err)
	}
	return b, nil
}
