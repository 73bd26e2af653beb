package admission

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessCPUTime returns the process's cumulative user plus system CPU time
// from getrusage(RUSAGE_SELF). It is a syscall (about a microsecond): call it
// per sample, not per message.
func ProcessCPUTime() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, os.NewSyscallError("getrusage", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
