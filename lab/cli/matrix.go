package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicenet/sluice/lab"
)

// defaultMatrixOut is where bench overload -matrix writes without -out.
const defaultMatrixOut = "../docs/overload/matrix"

// matrixFlags are bench overload's -matrix flags; the rest (-rounds,
// -duration, -unloaded, -shed-args, -out, -from, -server-cpus,
// -client-cpus) are shared with the parts.
type matrixFlags struct {
	matrix     bool
	factors    string
	works      string
	modes      string
	conns      string
	servers    string
	minSamples int
	resume     bool
}

func (m *matrixFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&m.matrix, "matrix", false, "run the overload matrix instead of the parts: every server at every -works, -modes and -conns-list, offered -factors times its capacity of the same round, against its p99 at -unloaded (0.5) of it; writes matrix.json, matrix.md and matrix-MODE-CONNS.svg into -out ("+defaultMatrixOut+" unless given)")
	fs.StringVar(&m.factors, "factors", "", "matrix: offered loads, multiples of capacity, comma-separated (empty: 2,5,10)")
	fs.StringVar(&m.works, "works", "", "matrix and hammer: simulated CPU cost per frame, comma-separated (empty: 50us,200us,2ms,20ms; with -hammer 50us,200us,2ms)")
	fs.StringVar(&m.modes, "modes", "", "matrix and hammer: work modes, inline and pool (cmd/echo -work-mode; gnet and net run inline only, so pool cells have the sluice servers alone) (empty: both)")
	fs.StringVar(&m.conns, "conns-list", "", "matrix: connection counts, comma-separated (empty: 64,1000)")
	fs.StringVar(&m.servers, "matrix-servers", "", "matrix: servers, from sluice-shed-default (cmd/echo -shed, the defaults), sluice-shed (with -shed-args), sluice-shed-tight, sluice-noshed, gnet, net (empty: sluice-shed-default,gnet,net)")
	fs.IntVar(&m.minSamples, "min-samples", 0, "matrix and hammer: a run's window is lengthened (up to 2m) until the server is expected to serve this many requests in it (0: 1000)")
	fs.BoolVar(&m.resume, "resume", false, "matrix and hammer: with -from, run the blocks the saved matrix.json (hammer.json) lacks (an interrupted matrix, or more -rounds) with its configuration, and write the whole into -out")
}

// config parses the dimension lists into cfg.
func (m *matrixFlags) config(cfg *lab.MatrixConfig) error {
	var err error
	if cfg.Factors, err = parseList(m.factors, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return fmt.Errorf("-factors: %w", err)
	}
	if cfg.Works, err = parseList(m.works, time.ParseDuration); err != nil {
		return fmt.Errorf("-works: %w", err)
	}
	if cfg.Conns, err = parseList(m.conns, strconv.Atoi); err != nil {
		return fmt.Errorf("-conns-list: %w", err)
	}
	same := func(s string) (string, error) { return s, nil }
	cfg.Modes, _ = parseList(m.modes, same)
	cfg.Servers, _ = parseList(m.servers, same)
	cfg.MinSamples = m.minSamples
	return nil
}

// parseList parses a comma-separated list (empty: nil).
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runMatrix runs (or, with from, re-renders or resumes) the overload
// matrix and writes its report into out, checkpointing matrix.json after
// every block.
func runMatrix(ctx context.Context, mf *matrixFlags, cfg lab.MatrixConfig, serverCPUs, clientCPUs, from, out string) error {
	var prev *lab.MatrixReport
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		prev = new(lab.MatrixReport)
		if err := json.Unmarshal(b, prev); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		if !mf.resume {
			return printPaths(lab.WriteMatrixReport(prev, out))
		}
	} else if mf.resume {
		return fmt.Errorf("-resume needs -from with a saved matrix.json")
	}
	if err := mf.config(&cfg); err != nil {
		return err
	}
	var err error
	if cfg.ServerCPUs, cfg.ClientCPUs, err = parsePinning(serverCPUs, clientCPUs); err != nil {
		return err
	}
	cfg.Progress = os.Stderr
	cfg.Checkpoint = func(rep *lab.MatrixReport) {
		if _, err := lab.WriteMatrixReport(rep, out); err != nil {
			fmt.Fprintln(os.Stderr, "bench: checkpoint:", err)
		}
	}
	if self, err := os.Executable(); err == nil && isBenchBinary(self) {
		cfg.BenchBin = self
	}
	rep, err := lab.Matrix(ctx, cfg, prev)
	if rep == nil {
		return err
	}
	if werr := printPaths(lab.WriteMatrixReport(rep, out)); err == nil {
		err = werr
	}
	return err
}

// printPaths prints the files a report writer wrote and returns its error.
func printPaths(paths []string, err error) error {
	for _, p := range paths {
		fmt.Println("wrote", p)
	}
	return err
}
