// Package tune reads a Linux host's limits and proposes sluice budgets for a
// target load. It is the logic behind cmd/tune.
//
// It owns three steps, each usable alone:
//
//   - ReadHost reads cores (online list, cpuinfo, affinity, cgroup v1/v2
//     CPU quota), memory (MemTotal, cgroup v2 memory.max, v1
//     memory.limit_in_bytes), RLIMIT_NOFILE (from proc/self/limits) and the
//     TCP and file sysctls, all through an fs.FS rooted at "/" or at a
//     fixture tree. A file that is missing or malformed becomes a Reading
//     that says so; reading never fails as a whole.
//   - Compute turns a Host and a Target (connections, message size,
//     pipelined messages, memory share) into Budgets: connection and
//     global queued-bytes watermarks, per-connection out-queue budgets,
//     per-turn read and flush budgets, listen backlog, GOMEMLIMIT, each with
//     its reason. Check compares the kernel and process limits with what the
//     budgets need and gives the sysctl -w, ulimit and LimitNOFILE lines.
//   - Plan joins the two into a Report that WriteText and WriteJSON print,
//     with the budgets as cmd/echo flags and as a server.Config literal.
//
// It refuses to change the host: every read goes through fs.FS, which has no
// way to open a file for writing, and it imports neither syscall nor
// x/sys/unix (a test inspects the source). The commands it prints are for
// an operator to run. It does not measure anything either: the constants
// behind the arithmetic (IdleConnBytes, RuntimeReserveBytes, ...) are
// planning figures with their reasons in their doc comments.
//
// Usage:
//
//	h := tune.ReadHost(os.DirFS("/"), "/")
//	r, err := tune.Plan(h, tune.Target{Conns: 10000, MsgBytes: 128, InflightMsgs: 16, MemShare: 0.5})
//	if err != nil { ... } // only an invalid target fails
//	tune.WriteText(os.Stdout, r)
//
// The golden tests read fixture trees under testdata/ (a small host, a large
// tuned host, a container with cgroup limits, a broken host); run
// go test ./internal/tune -run TestGolden -update to rewrite the goldens.
package tune
