package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// Process time limits of the external runner.
const (
	extStartTimeout = 15 * time.Second // until a server accepts connections
	extStopTimeout  = 5 * time.Second  // from SIGTERM to exit, then SIGKILL
)

// errNotReady reports a server that did not become ready.
var errNotReady = errors.New("sluice: bench external: server not ready")

// tailWriter keeps the last 8 KiB written to it, for error messages. It is
// safe for concurrent use.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8<<10 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-8<<10:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// extProc is a server process started by the external runner. Only the
// runner's own children are ever signalled, by pid.
type extProc struct {
	cmd    *exec.Cmd
	pid    int
	addr   string
	output tailWriter
	done   chan struct{}
	err    error // from Wait, valid after done
}

// startListening starts bin pinned to cpus with GOMAXPROCS=procs and waits
// for its "listening on HOST:PORT" line (cmd/echo, cmd/kv, cmd/bench peer).
func startListening(bin string, args, env []string, procs int, cpus []int) (*extProc, error) {
	p, stdout, err := startExt(bin, args, env, procs, cpus)
	if err != nil {
		return nil, err
	}
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if a, ok := strings.CutPrefix(line, "listening on "); ok && !found {
				found = true
				addrCh <- strings.TrimSpace(a)
				continue
			}
			_, _ = p.output.Write([]byte(line + "\n"))
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p.addr = <-addrCh:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%w: %s exited (%v): %s", errNotReady, bin, p.err, p.output.String())
	case <-time.After(extStartTimeout):
		p.kill()
		return nil, fmt.Errorf("%w: %s printed no listening line within %v: %s", errNotReady, bin, extStartTimeout, p.output.String())
	}
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
	go func() { _, _ = io.Copy(&p.output, stdout) }()
	p.addr = addr
	deadline := time.Now().Add(extStartTimeout)
	for {
		if redisPing(addr) == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%w: redis-server exited (%v): %s", errNotReady, p.err, p.output.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("%w: redis-server did not answer PING on %s within %v: %s", errNotReady, addr, extStartTimeout, p.output.String())
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
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if procs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	p := &extProc{cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &p.output
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := bench.StartPinned(cmd, cpus); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p.pid = cmd.Process.Pid
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, stdout, nil
}

// stop sends SIGTERM and waits for the exit, then SIGKILL. It returns a note
// when the process did not exit cleanly. redis-server exits 0 on SIGTERM
// too.
func (p *extProc) stop() string {
	select {
	case <-p.done:
		return fmt.Sprintf("server exited during the run: %v: %s", p.err, p.output.String())
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		var ee *exec.ExitError
		if p.err != nil && !(errors.As(p.err, &ee) && ee.ExitCode() == 0) {
			return fmt.Sprintf("exit after SIGTERM: %v", p.err)
		}
		return ""
	case <-time.After(extStopTimeout):
		p.kill()
		return fmt.Sprintf("no exit within %v of SIGTERM; killed", extStopTimeout)
	}
}

// kill sends SIGKILL to the process and waits for it.
func (p *extProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// runTool runs a client tool pinned to cpus and returns its stdout; ctx or
// timeout kill it.
func runTool(ctx context.Context, bin string, args []string, cpus []int, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	var errOut tailWriter
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 2 * time.Second
	if err := bench.StartPinned(cmd, cpus); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	if err := cmd.Wait(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
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
func coreUtil(a, b map[int]bench.CoreTicks, cpus []int) float64 {
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
