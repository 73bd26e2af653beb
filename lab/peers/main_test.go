package peers

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that every peer a test starts (gnet engines, net and
// net/http servers and their connection goroutines) is gone when Serve
// returns. gnet's default goroutine pool (ants) is a package-level pool
// created at init and kept for the life of the process; its two
// housekeeping goroutines are not a leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
