//go:build linux

package procstat

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pinning, the way this package does it:
//
//   - A child process (a server, or the generator under the comparison runner)
//     is started from an OS thread whose affinity has been set to the target
//     CPUs for the duration of the fork: the child's first thread inherits the
//     mask and every thread the Go runtime creates later inherits it from
//     there. This is what taskset does, without needing taskset. StartPinned
//     then reads the mask of every thread of the child back to prove it.
//   - The running process (the load generator's -cpus flag) is pinned by setting the mask
//     of every existing thread (/proc/self/task); threads created later inherit
//     it. PinProcess does that.

// cpuSet builds a CPU mask.
func cpuSet(cpus []int) (unix.CPUSet, error) {
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		if c < 0 || c >= 1024 {
			return set, fmt.Errorf("%w: CPU %d out of range", ErrInvalidCPUList, c)
		}
		set.Set(c)
	}
	if set.Count() == 0 {
		return set, fmt.Errorf("%w: empty CPU list", ErrInvalidCPUList)
	}
	return set, nil
}

// cpuList returns the CPUs in set, ascending.
func cpuList(set *unix.CPUSet) []int {
	var out []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// AvailableCPUs returns the CPUs this process may run on.
func AvailableCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, os.NewSyscallError("sched_getaffinity", err)
	}
	return cpuList(&set), nil
}

// StartPinned starts cmd with every thread of the new process restricted to
// cpus (see the note on pinning above). An empty cpus starts it unpinned.
func StartPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	set, err := cpuSet(cpus)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return os.NewSyscallError("sched_getaffinity", err)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return os.NewSyscallError("sched_setaffinity", err)
	}
	startErr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &old); err != nil && startErr == nil {
		// Cannot happen in practice (the mask was just read); the only cost
		// would be this thread running on the child's CPUs.
		return os.NewSyscallError("sched_setaffinity", err)
	}
	return startErr
}

// PinProcess restricts every thread of the calling process, and so every
// thread it creates afterwards, to cpus.
func PinProcess(cpus []int) error {
	set, err := cpuSet(cpus)
	if err != nil {
		return err
	}
	tids, err := threadIDs(os.Getpid())
	if err != nil {
		return err
	}
	for _, tid := range tids {
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return os.NewSyscallError("sched_setaffinity", err)
		}
	}
	return nil
}

// ProcessCPUs returns the union of the CPU masks of every thread of pid, so a
// caller can check that a pinned process really is pinned.
func ProcessCPUs(pid int) ([]int, error) {
	tids, err := threadIDs(pid)
	if err != nil {
		return nil, err
	}
	var union unix.CPUSet
	union.Zero()
	for _, tid := range tids {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			if err == unix.ESRCH {
				continue // the thread exited meanwhile
			}
			return nil, os.NewSyscallError("sched_getaffinity", err)
		}
		for _, c := range cpuList(&set) {
			union.Set(c)
		}
	}
	return cpuList(&union), nil
}

// threadIDs lists the thread ids of pid from /proc/PID/task.
func threadIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	sort.Ints(tids)
	return tids, nil
}
