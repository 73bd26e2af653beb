package httpecho

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every engine a
// test starts is shut down.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
