package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/sluicenet/sluice/lab"
)

// defaultHammerOut is where bench overload -hammer writes without -out.
const defaultHammerOut = "../docs/overload/hammer"

// hammerFlags are bench overload's -hammer flags; -works, -modes,
// -min-samples and -resume are the matrix's, and the rest (-rounds,
// -duration, -unloaded, -shed-args, -out, -from, -server-cpus,
// -client-cpus, -client-procs) are shared with the parts.
type hammerFlags struct {
	hammer  bool
	cells   string
	servers string
	noRef   bool
	redial  bool
}

func (h *hammerFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&h.hammer, "hammer", false, "run the hammer cells instead of the parts: every -hammer-servers server in closed loops of C connections × D requests in flight (-hammer-cells) at every -works and -modes, its goodput against sluice-noshed's in the same loop and round, its admitted p99 against its own at -unloaded (0.5) of that capacity, and the sluice servers' time on refused frames (sluice_refuse_share_ratio from cmd/echo's admin endpoint); writes hammer.json and hammer.md into -out ("+defaultHammerOut+" unless given)")
	fs.StringVar(&h.cells, "hammer-cells", "", "hammer: closed loops CONNSxINFLIGHT, comma-separated (empty: 1000x8,1000x64,64x64)")
	fs.StringVar(&h.servers, "hammer-servers", "", "hammer: servers under test, from sluice-shed-default, sluice-shed, sluice-shed-tight, sluice-noshed, gnet, net (empty: sluice-shed-default,gnet,net)")
	fs.BoolVar(&h.noRef, "hammer-no-ref", false, "hammer: leave out the reference runs (faster; the admitted p99 is then not judged)")
	fs.BoolVar(&h.redial, "hammer-reconnect", false, "hammer: the closed loops dial a connection closed with a final refusal again after its retry-after, as a client honouring it would (bench load -reconnect; default: it stays closed)")
}

// config parses the hammer's lists, and the matrix flags it shares, into
// cfg.
func (h *hammerFlags) config(mf *matrixFlags, cfg *lab.HammerConfig) error {
	var err error
	if cfg.Shapes, err = lab.ParseHammerShapes(h.cells); err != nil {
		return fmt.Errorf("-hammer-cells: %w", err)
	}
	var mc lab.MatrixConfig
	if err := mf.config(&mc); err != nil {
		return err
	}
	cfg.Works, cfg.Modes, cfg.MinSamples = mc.Works, mc.Modes, mc.MinSamples
	same := func(s string) (string, error) { return s, nil }
	cfg.Servers, _ = parseList(h.servers, same)
	cfg.NoReference = h.noRef
	cfg.Reconnect = h.redial
	return nil
}

// runHammer runs (or, with from, re-renders or resumes) the hammer cells
// and writes their report into out, checkpointing hammer.json after every
// block.
func runHammer(ctx context.Context, hf *hammerFlags, mf *matrixFlags, cfg lab.HammerConfig, serverCPUs, clientCPUs, from, out string) error {
	var prev *lab.HammerReport
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		prev = new(lab.HammerReport)
		if err := json.Unmarshal(b, prev); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		if !mf.resume {
			return printPaths(lab.WriteHammerReport(prev, out))
		}
	} else if mf.resume {
		return fmt.Errorf("-resume needs -from with a saved hammer.json")
	}
	if err := hf.config(mf, &cfg); err != nil {
		return err
	}
	var err error
	if cfg.ServerCPUs, cfg.ClientCPUs, err = parsePinning(serverCPUs, clientCPUs); err != nil {
		return err
	}
	cfg.Progress = os.Stderr
	cfg.Checkpoint = func(rep *lab.HammerReport) {
		if _, err := lab.WriteHammerReport(rep, out); err != nil {
			fmt.Fprintln(os.Stderr, "bench: checkpoint:", err)
		}
	}
	if self, err := os.Executable(); err == nil && isBenchBinary(self) {
		cfg.BenchBin = self
	}
	rep, err := lab.Hammer(ctx, cfg, prev)
	if rep == nil {
		return err
	}
	if werr := printPaths(lab.WriteHammerReport(rep, out)); err == nil {
		err = werr
	}
	return err
}
