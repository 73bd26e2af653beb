package uring_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind (a client, a
// waker, a reader).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
