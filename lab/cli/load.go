package cli

import (
	"context"
	"os"

	"github.com/sluicenet/sluice/internal/loadcmd"
)

// runLoad runs one load test (the generator the comparison runner starts as
// its client process); cmd/sluiceload runs the same command.
func runLoad(ctx context.Context, args []string) error {
	return loadcmd.Run(ctx, "bench load", args, os.Stdout, os.Stderr)
}
