package tune

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
)

// sizeFlag is a flag.Value for a byte count: "512", "64KiB", "4GiB", "1.5G"
// (K, M, G and T are binary, like KiB, MiB, GiB and TiB).
type sizeFlag struct{ n *int64 }

func (s sizeFlag) String() string {
	if s.n == nil {
		return "0"
	}
	return strconv.FormatInt(*s.n, 10)
}

func (s sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s.n = n
	return nil
}

// parseSize parses a byte count with an optional binary unit.
func parseSize(v string) (int64, error) {
	t := strings.TrimSpace(v)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"TiB", tib}, {"GiB", gib}, {"MiB", mib}, {"KiB", kib},
		{"T", tib}, {"G", gib}, {"M", mib}, {"K", kib}, {"k", kib}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) || f*float64(mult) >= math.MaxInt64/2 || t == "" {
		return 0, fmt.Errorf("%w: size %q: want bytes, optionally with KiB, MiB, GiB or TiB", ErrUsage, v)
	}
	return int64(f * float64(mult)), nil
}

// Main is cmd/tune: it parses args, reads the host under -root through the
// fs.FS that open returns (os.DirFS in cmd/tune), and writes the report to
// stdout. It returns the process exit code: 0 on success (warnings
// included), 2 on bad usage or an invalid target, 1 when writing fails.
func Main(args []string, stdout, stderr io.Writer, open func(root string) fs.FS) int {
	fl := flag.NewFlagSet("tune", flag.ContinueOnError)
	fl.SetOutput(stderr)
	t := DefaultTarget
	msgBytes := int64(t.MsgBytes)
	root := fl.String("root", "/", "directory to read the host's proc and sys trees from (for fixtures)")
	asJSON := fl.Bool("json", false, "print the report as JSON")
	fl.IntVar(&t.Conns, "conns", t.Conns, "expected concurrent connections")
	fl.Var(sizeFlag{&msgBytes}, "msg-bytes", "typical message size in bytes (512, 4KiB)")
	fl.IntVar(&t.InflightMsgs, "inflight", t.InflightMsgs, "messages one connection pipelines before waiting for replies")
	fl.Float64Var(&t.MemShare, "mem-share", t.MemShare, "fraction of the host's memory (or cgroup limit) sluice may use")
	fl.Var(sizeFlag{&t.MemBytes}, "mem-bytes", "plan for this much memory instead of what the host shows (4GiB)")
	fl.Float64Var(&t.ConnRatePerSec, "conn-rate", 0, "peak new connections per second (0: assume all reconnect within a second)")
	fl.Float64Var(&t.MsgRatePerSec, "rate", 0, "expected messages per second over all connections (0: unknown)")
	fl.Usage = func() {
		fmt.Fprintf(stderr, "usage: tune [flags]\n\n"+
			"tune reads this host's CPU, memory, cgroup and kernel limits (read only) and proposes\n"+
			"sluice budgets for a target, as cmd/echo flags and a server.Config literal, with the\n"+
			"sysctl and ulimit lines the target needs.\n\n")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "tune: %v: unexpected argument %q\n", ErrUsage, fl.Arg(0))
		return 2
	}
	if msgBytes > math.MaxInt32 {
		msgBytes = math.MaxInt32 // Validate reports it
	}
	t.MsgBytes = int(msgBytes)
	if err := t.Validate(); err != nil {
		fmt.Fprintf(stderr, "tune: %v\n", err)
		return 2
	}
	fsys := open(*root)
	if st, err := fs.Stat(fsys, "."); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "tune: %v: -root %s is not a readable directory\n", ErrUsage, *root)
		return 2
	}
	r, err := Plan(ReadHost(fsys, *root), t)
	if err != nil {
		fmt.Fprintf(stderr, "tune: %v\n", err)
		return 2
	}
	if *asJSON {
		err = WriteJSON(stdout, r)
	} else {
		err = WriteText(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune: write: %v\n", err)
		return 1
	}
	return 0
}

// DirFS is the open function cmd/tune passes to Main: os.DirFS, which can
// only open files for reading.
func DirFS(root string) fs.FS { return os.DirFS(root) }
