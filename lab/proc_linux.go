//go:build linux

package lab

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sluicenet/sluice/internal/procstat"
)

// serverProc is a running server child process.
type serverProc struct {
	*Child
	cpus []int // what the process's threads are allowed on, read back
}

// serverStopNotes are serverProc.stop's notes.
var serverStopNotes = StopNotes{
	Failed: "server exit after SIGTERM: %v",
	Killed: "server did not exit within %v of SIGTERM; killed",
}

// startServer starts bin with args, env added to the environment,
// GOMAXPROCS=procs and pinned to cpus, and waits up to timeout for its
// "listening on HOST:PORT" line.
func startServer(bin string, args, env []string, procs int, cpus []int, timeout time.Duration) (*serverProc, error) {
	c, stdout, err := NewChild(bin, args, env, procs)
	if err != nil {
		return nil, err
	}
	if err := c.Start(cpus); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrServerStart, bin, err)
	}
	switch err := c.AwaitListening(stdout, timeout); {
	case errors.Is(err, ErrChildExited):
		return nil, fmt.Errorf("%w: %s exited (%v) before listening: %s", ErrServerStart, bin, c.Err, c.Output.String())
	case err != nil:
		return nil, fmt.Errorf("%w: %s printed no %q line within %v: %s", ErrServerStart, bin, listenPrefix, timeout, c.Output.String())
	}
	return checkPinned(&serverProc{Child: c}, bin, cpus)
}

// checkPinned reads back the CPUs of every thread of the started p and kills
// it unless they are within cpus (none: not pinned, nothing to check).
func checkPinned(p *serverProc, bin string, cpus []int) (*serverProc, error) {
	if len(cpus) > 0 {
		got, err := procstat.ProcessCPUs(p.Pid)
		if err != nil {
			p.Kill()
			return nil, err
		}
		p.cpus = got
		if !subset(got, cpus) {
			p.Kill()
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
	return p.Stop(timeout, serverStopNotes)
}

// readUserSys reads pid's user and system CPU time, in clock ticks.
func readUserSys(pid int) (user, sys int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseUserSys(b)
}
