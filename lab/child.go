package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicenet/sluice/internal/procstat"
)

// tailBufferBytes is how much of a child's output a TailBuffer keeps.
const tailBufferBytes = 8 << 10

// TailBuffer keeps the last 8 KiB written to it (a child's output, for error
// messages). It is safe for concurrent use; the zero value is ready.
type TailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write appends p, dropping what is older than the last 8 KiB. It never
// fails.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBufferBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBufferBytes:]...)
	}
	return len(p), nil
}

// String returns the kept output, trimmed.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// Child is a server child process of a runner, made by NewChild. Only a
// runner's own children are ever signalled, by pid.
type Child struct {
	// Cmd is the command; its Stderr is Output.
	Cmd *exec.Cmd
	// Pid is the process id, set by Start.
	Pid int
	// Addr is where the child listens, once known (AwaitListening sets it).
	Addr string
	// Output keeps the end of the child's stderr, and of its stdout where
	// that is copied to it.
	Output TailBuffer
	// Done is closed when the process has exited.
	Done chan struct{}
	// Err is what Wait returned, valid once Done is closed.
	Err error
	// TermIsClean makes Stop count an exit by the SIGTERM it sent as clean,
	// for a child with no SIGTERM handler (the C peers).
	TermIsClean bool
}

// NewChild prepares bin with args and env added to the environment, with
// GOMAXPROCS=procs when procs > 0, and returns it with its stdout. The
// process starts with Start.
func NewChild(bin string, args, env []string, procs int) (*Child, io.Reader, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv(env, procs)
	c := &Child{Cmd: cmd, Done: make(chan struct{})}
	cmd.Stderr = &c.Output
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	return c, stdout, nil
}

// childEnv is this process's environment with env added and, when procs > 0,
// GOMAXPROCS=procs.
func childEnv(env []string, procs int) []string {
	e := append(os.Environ(), env...)
	if procs > 0 {
		e = append(e, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	return e
}

// Start starts the process pinned to cpus (none: unpinned, see StartPinned)
// and waits for its exit in the background, closing Done then.
func (c *Child) Start(cpus []int) error {
	if err := procstat.StartPinned(c.Cmd, cpus); err != nil {
		return err
	}
	c.Pid = c.Cmd.Process.Pid
	go func() {
		c.Err = c.Cmd.Wait()
		close(c.Done)
	}()
	return nil
}

// listenPrefix is the line cmd/echo, cmd/kv and the peers print once they
// accept.
const listenPrefix = "listening on "

// Errors of AwaitListening.
var (
	// ErrChildExited reports a child that exited before it printed its
	// "listening on" line; Child.Err says how.
	ErrChildExited = errors.New("sluice: bench: child exited")
	// ErrNoListenLine reports a child that printed no "listening on" line
	// in time.
	ErrNoListenLine = errors.New("sluice: bench: no listening line")
)

// AwaitListening reads stdout, the started child's, for its "listening on
// HOST:PORT" line and waits up to timeout for it, setting Addr. The other
// lines go to Output. It returns ErrChildExited when the child exits first
// and ErrNoListenLine when timeout passes first; it kills the child then.
func (c *Child) AwaitListening(stdout io.Reader, timeout time.Duration) error {
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
			_, _ = c.Output.Write(append([]byte(line), '\n'))
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case c.Addr = <-addrCh:
		return nil
	case <-c.Done:
		return ErrChildExited
	case <-time.After(timeout):
		c.Kill()
		return ErrNoListenLine
	}
}

// StopNotes are the notes Child.Stop returns for a child that did not exit
// cleanly, as fmt formats.
type StopNotes struct {
	// Failed formats Wait's error for an exit with one after SIGTERM.
	Failed string
	// Killed formats the timeout for a child that did not exit in time.
	Killed string
}

// Stop sends SIGTERM and waits up to timeout for the exit, then kills the
// child. It returns "" for a clean exit (an exit status of 0 counts as
// clean), and otherwise a note: that the child had exited during the run, or
// notes.Failed or notes.Killed filled in.
func (c *Child) Stop(timeout time.Duration, notes StopNotes) string {
	select {
	case <-c.Done:
		return fmt.Sprintf("server exited during the run: %v: %s", c.Err, c.Output.String())
	default:
	}
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.Done:
		var ee *exec.ExitError
		if c.Err != nil && !(errors.As(c.Err, &ee) && (ee.ExitCode() == 0 || c.TermIsClean && termSignal(ee))) {
			return fmt.Sprintf(notes.Failed, c.Err)
		}
		return ""
	case <-time.After(timeout):
		c.Kill()
		return fmt.Sprintf(notes.Killed, timeout)
	}
}

// termSignal reports whether the process ended by SIGTERM.
func termSignal(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// Kill kills the child and waits for it.
func (c *Child) Kill() {
	_ = c.Cmd.Process.Kill()
	<-c.Done
}

// ChildStartError is RunChild's error for a child that did not start. Its
// text is Err's.
type ChildStartError struct {
	// Err is StartPinned's error.
	Err error
}

// Error returns Err's text.
func (e *ChildStartError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ChildStartError) Unwrap() error { return e.Err }

// RunChild runs bin with args and env added to the environment, with
// GOMAXPROCS=procs when procs > 0, pinned to cpus, and returns its stdout;
// ctx or timeout kill it. A child that does not start returns a
// *ChildStartError; a failed run returns its stdout and an error with the
// end of its stderr.
func RunChild(ctx context.Context, bin string, args, env []string, procs int, cpus []int, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv(env, procs)
	var out bytes.Buffer
	var errOut TailBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 2 * time.Second
	if err := procstat.StartPinned(cmd, cpus); err != nil {
		return nil, &ChildStartError{Err: err}
	}
	if err := cmd.Wait(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, errOut.String())
	}
	return out.Bytes(), nil
}
