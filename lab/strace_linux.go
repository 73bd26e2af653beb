//go:build linux

package lab

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// straceAttachTimeout bounds the wait for strace to attach to every thread.
const straceAttachTimeout = 5 * time.Second

// measureStrace runs scenario s for StraceDuration against a fresh srv with
// strace -c -f attached to it and returns the system calls per message.
func (c *comparison) measureStrace(ctx context.Context, srv string, s Scenario) SyscallMix {
	mix := SyscallMix{Server: srv, Scenario: s.Name}
	straceBin, err := exec.LookPath("strace")
	if err != nil {
		mix.Skipped = "strace is not installed"
		return mix
	}
	p, err := c.startServer(srv)
	if err != nil {
		mix.Error = err.Error()
		return mix
	}
	defer p.stop(serverStopTimeout)

	dir, err := os.MkdirTemp("", "sluice-strace-")
	if err != nil {
		mix.Error = err.Error()
		return mix
	}
	defer os.RemoveAll(dir)
	outFile := filepath.Join(dir, "strace.txt")
	st := exec.Command(straceBin, "-c", "-f", "-o", outFile, "-p", strconv.Itoa(p.Pid))
	var stErr TailBuffer
	st.Stderr = &stErr
	if err := st.Start(); err != nil {
		mix.Skipped = "strace did not start: " + err.Error()
		return mix
	}
	stDone := make(chan error, 1)
	go func() { stDone <- st.Wait() }()
	// strace reports each attached thread on stderr; wait until it has
	// attached (or given up).
	deadline := time.Now().Add(straceAttachTimeout)
	for !strings.Contains(stErr.String(), "attached") && time.Now().Before(deadline) {
		select {
		case err := <-stDone:
			mix.Skipped = "strace could not attach (ptrace not permitted?): " + errText(err) + " " + stErr.String()
			return mix
		case <-time.After(20 * time.Millisecond):
		}
	}
	time.Sleep(100 * time.Millisecond) // the remaining threads

	res, runErr := c.runLoadChild(ctx, c.loadArgs(p.Addr, p.Pid, s, 0, 0, c.cfg.StraceDuration), c.cfg.StraceDuration)
	_ = st.Process.Signal(syscall.SIGINT)
	select {
	case <-stDone:
	case <-time.After(10 * time.Second):
		_ = st.Process.Kill()
		<-stDone
	}
	if res == nil {
		mix.Error = "load under strace: " + errText(runErr)
		return mix
	}
	mix.Msgs = res.Msgs
	b, err := os.ReadFile(outFile)
	if err != nil {
		mix.Error = "strace wrote no summary: " + err.Error() + " " + stErr.String()
		return mix
	}
	calls, err := parseStraceSummary(string(b))
	if err != nil {
		mix.Error = err.Error()
		return mix
	}
	for i := range calls {
		mix.TotalCalls += calls[i].Calls
		if mix.Msgs > 0 {
			calls[i].PerMsg = float64(calls[i].Calls) / float64(mix.Msgs)
		}
	}
	mix.Calls = calls
	if mix.Msgs > 0 {
		mix.CallsPerMsg = float64(mix.TotalCalls) / float64(mix.Msgs)
	}
	return mix
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
