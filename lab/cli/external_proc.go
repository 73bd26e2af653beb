package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/sluicenet/sluice/internal/procstat"
	"github.com/sluicenet/sluice/lab"
)

// Process time limits of the external runner.
const (
	extStartTimeout = 15 * time.Second // until a server accepts connections
	extStopTimeout  = 5 * time.Second  // from SIGTERM to exit, then SIGKILL
)

// errNotReady reports a server that did not become ready.
var errNotReady = errors.New("sluice: bench external: server not ready")

// extProc is a server process started by the external runner.
type extProc struct {
	*lab.Child
}

// extStopNotes are extProc.stop's notes.
var extStopNotes = lab.StopNotes{
	Failed: "exit after SIGTERM: %v",
	Killed: "no exit within %v of SIGTERM; killed",
}

// startListening starts bin pinned to cpus with GOMAXPROCS=procs and waits
// for its "listening on HOST:PORT" line (cmd/echo, cmd/kv, cmd/bench peer).
func startListening(bin string, args, env []string, procs int, cpus []int) (*extProc, error) {
	p, stdout, err := startExt(bin, args, env, procs, cpus)
	if err != nil {
		return nil, err
	}
	switch err := p.AwaitListening(stdout, extStartTimeout); {
	case errors.Is(err, lab.ErrChildExited):
		return nil, fmt.Errorf("%w: %s exited (%v): %s", errNotReady, bin, p.Err, p.Output.String())
	case err != nil:
		return nil, fmt.Errorf("%w: %s printed no listening line within %v: %s", errNotReady, bin, extStartTimeout, p.Output.String())
	}
	return p, nil
}

// startRedisServer starts redis-server on addr (a free loopback port)
// without persistence, in dir, pinned to cpus, and waits until it answers
// PING.
func startRedisServer(bin, addr, dir string, cpus []int) (*extProc, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	args := []string{"--port", port, "--bind", host, "--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no"}
	p, stdout, err := startExt(bin, args, nil, 0, cpus)
	if err != nil {
		return nil, err
	}
	go func() { _, _ = io.Copy(&p.Output, stdout) }()
	p.Addr = addr
	deadline := time.Now().Add(extStartTimeout)
	for {
		if redisPing(addr) == nil {
			return p, nil
		}
		select {
		case <-p.Done:
			return nil, fmt.Errorf("%w: redis-server exited (%v): %s", errNotReady, p.Err, p.Output.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("%w: redis-server did not answer PING on %s within %v: %s", errNotReady, addr, extStartTimeout, p.Output.String())
		}
	}
}

// redisPing sends one inline PING and expects +PONG.
func redisPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "+PONG\r\n" {
		return fmt.Errorf("%w: PING answered %q", errNotReady, buf)
	}
	return nil
}

// startExt starts bin pinned to cpus (none: unpinned), with GOMAXPROCS=procs
// when procs > 0, and returns its stdout.
func startExt(bin string, args, env []string, procs int, cpus []int) (*extProc, io.Reader, error) {
	c, stdout, err := lab.NewChild(bin, args, env, procs)
	if err != nil {
		return nil, nil, err
	}
	if err := c.Start(cpus); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return &extProc{Child: c}, stdout, nil
}

// stop sends SIGTERM and waits for the exit, then SIGKILL. It returns a note
// when the process did not exit cleanly. redis-server exits 0 on SIGTERM
// too.
func (p *extProc) stop() string {
	return p.Stop(extStopTimeout, extStopNotes)
}

// runTool runs a client tool pinned to cpus and returns its stdout; ctx or
// timeout kill it.
func runTool(ctx context.Context, bin string, args []string, cpus []int, timeout time.Duration) (string, error) {
	out, err := lab.RunChild(ctx, bin, args, nil, 0, cpus, timeout)
	if se := (*lab.ChildStartError)(nil); errors.As(err, &se) {
		return "", fmt.Errorf("start %s: %w", bin, se.Err)
	}
	return string(out), err
}

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago, for a server that cannot report the port it picked (redis-server).
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// goBuildTo builds pkg of the module in dir into out; the error carries the
// compiler's first lines.
func goBuildTo(ctx context.Context, goCmd, dir, pkg, out string) error {
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, pkg)
	cmd.Dir = dir
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		text := strings.TrimSpace(msg.String())
		if lines := strings.Split(text, "\n"); len(lines) > 8 {
			text = strings.Join(lines[:8], "\n") + "\n..."
		}
		return fmt.Errorf("go build %s: %v: %s", pkg, err, text)
	}
	return nil
}

// toolVersion returns the first line a tool prints for its version flag.
func toolVersion(bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}

// coreUtil returns the busy fraction of cpus between two /proc/stat
// readings, or -1 when unknown.
func coreUtil(a, b map[int]procstat.CoreTicks, cpus []int) float64 {
	var busy, total int64
	for _, c := range cpus {
		busy += b[c].Busy - a[c].Busy
		total += b[c].Total - a[c].Total
	}
	if total <= 0 {
		return -1
	}
	return float64(busy) / float64(total)
}
