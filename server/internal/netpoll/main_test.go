package netpoll

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// backendEnv selects the backend the readiness tests run on, as it does
// for package server's suite: "epoll" (the default) or "io_uring".
const backendEnv = "SLUICE_TEST_BACKEND"

// suiteURing: the suite runs on io_uring (backendEnv).
var suiteURing bool

func TestMain(m *testing.M) {
	switch b := os.Getenv(backendEnv); b {
	case "", "epoll":
	case "io_uring", "iouring", "uring":
		suiteURing = true
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want epoll or io_uring\n", backendEnv, b)
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}
