//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tailBuffer keeps the last tailBufferBytes written to it (a child's output,
// for error messages). It is safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBufferBytes = 8 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBufferBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBufferBytes:]...)
	}
	return len(p), nil
}

// String returns the kept output, trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// serverProc is a running server child process.
type serverProc struct {
	cmd    *exec.Cmd
	pid    int
	addr   string
	cpus   []int // what the process's threads are allowed on, read back
	output tailBuffer
	done   chan struct{}
	err    error // from Wait, valid after done
}

// listenPrefix is the line cmd/echo and the peers print once they accept.
const listenPrefix = "listening on "

// startServer starts bin with args, env added to the environment,
// GOMAXPROCS=procs and pinned to cpus, and waits up to timeout for its
// "listening on HOST:PORT" line.
func startServer(bin string, args, env []string, procs int, cpus []int, timeout time.Duration) (*serverProc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), fmt.Sprintf("GOMAXPROCS=%d", procs))
	p := &serverProc{cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &p.output
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := StartPinned(cmd, cpus); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrServerStart, bin, err)
	}
	p.pid = cmd.Process.Pid
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(strings.TrimSpace(line), listenPrefix); ok && !found {
				found = true
				addrCh <- strings.TrimSpace(a)
				continue
			}
			_, _ = p.output.Write(append([]byte(line), '\n'))
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case a := <-addrCh:
		p.addr = a
	case <-p.done:
		return nil, fmt.Errorf("%w: %s exited (%v) before listening: %s", ErrServerStart, bin, p.err, p.output.String())
	case <-time.After(timeout):
		p.kill()
		return nil, fmt.Errorf("%w: %s printed no %q line within %v: %s", ErrServerStart, bin, listenPrefix, timeout, p.output.String())
	}
	if len(cpus) > 0 {
		got, err := ProcessCPUs(p.pid)
		if err != nil {
			p.kill()
			return nil, err
		}
		p.cpus = got
		if !subset(got, cpus) {
			p.kill()
			return nil, fmt.Errorf("%w: %s runs on CPUs %v, asked for %v", ErrServerStart, bin, got, cpus)
		}
	}
	return p, nil
}

func subset(a, b []int) bool {
	in := map[int]bool{}
	for _, v := range b {
		in[v] = true
	}
	for _, v := range a {
		if !in[v] {
			return false
		}
	}
	return true
}

// stop sends SIGTERM and waits up to timeout for a clean exit, then kills.
// It returns a note when the server did not exit cleanly.
func (p *serverProc) stop(timeout time.Duration) string {
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
			return fmt.Sprintf("server exit after SIGTERM: %v", p.err)
		}
		return ""
	case <-time.After(timeout):
		p.kill()
		return fmt.Sprintf("server did not exit within %v of SIGTERM; killed", timeout)
	}
}

// kill kills the process and waits for it.
func (p *serverProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// runChild runs bin with args, env added to the environment, GOMAXPROCS=procs,
// pinned to cpus, and returns its stdout; ctx or timeout kill it.
func runChild(ctx context.Context, bin string, args, env []string, procs int, cpus []int, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), env...), fmt.Sprintf("GOMAXPROCS=%d", procs))
	var out bytes.Buffer
	var errOut tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 2 * time.Second
	if err := StartPinned(cmd, cpus); err != nil {
		return nil, err
	}
	if err := cmd.Wait(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, errOut.String())
	}
	return out.Bytes(), nil
}
