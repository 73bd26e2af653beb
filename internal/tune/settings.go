package tune

import (
	"fmt"
	"math"
	"time"
)

// Verdict is what a kernel setting needs for the target.
type Verdict string

// The verdicts of a Setting.
const (
	// VerdictOK means the current value is enough for the target.
	VerdictOK Verdict = "ok"
	// VerdictRaise means the current value is below what the target needs.
	VerdictRaise Verdict = "raise"
	// VerdictLower means the current value is above what the target needs
	// (a timeout that lets dead sockets pile up).
	VerdictLower Verdict = "lower"
	// VerdictUnknown means the value could not be read; the commands are
	// given anyway.
	VerdictUnknown Verdict = "unknown"
	// VerdictMalformed means the value could not be parsed.
	VerdictMalformed Verdict = "malformed"
	// VerdictAdvice means the setting does not limit the target as given;
	// the reason says when it would.
	VerdictAdvice Verdict = "advice"
)

// Limits reports whether the verdict means the host, as it is, may not
// serve the target.
func (v Verdict) Limits() bool { return v != VerdictOK && v != VerdictAdvice }

// Setting is one kernel or process limit checked against the target.
type Setting struct {
	// Name is the sysctl name, or RLIMIT_NOFILE.
	Name string `json:"name"`
	// Current is the value on the host as it reads, or why it is unknown.
	Current string `json:"current"`
	// Needed is what the target needs ("" when nothing is needed).
	Needed string `json:"needed,omitempty"`
	// Verdict is ok, raise, lower, unknown, malformed or advice.
	Verdict Verdict `json:"verdict"`
	// Commands set the needed value (sysctl -w, ulimit, systemd). tune never
	// runs them.
	Commands []string `json:"commands,omitempty"`
	// Reason says in plain words what the setting does to sluice.
	Reason string `json:"reason"`
}

// pageBytes is the page size tcp_mem is counted in. Linux on amd64 and most
// arm64 distributions use 4 KiB pages; tune assumes it.
const pageBytes = 4096

// atLeast builds a Setting for a single-integer sysctl that must be at
// least need, and the warning when it is not.
func atLeast(h *Host, name string, need int64, reason, consequence string) (Setting, string) {
	r := h.Sysctl(name)
	s := Setting{Name: name, Needed: fmt.Sprintf(">= %d", need), Reason: reason}
	cmd := fmt.Sprintf("sysctl -w %s=%d", name, need)
	v, ok := unread(r, &s)
	switch {
	case !ok:
		s.Commands = []string{cmd}
		return s, ""
	case v >= need:
		s.Verdict = VerdictOK
		return s, ""
	}
	s.Verdict = VerdictRaise
	s.Commands = []string{cmd}
	return s, fmt.Sprintf("%s is %d, below the %d the target needs: %s", name, v, need, consequence)
}

// unread fills s.Current from r. It returns the first value and true when r
// was read; otherwise it sets s.Verdict to unknown or malformed.
func unread(r Reading, s *Setting) (int64, bool) {
	s.Current = r.Describe()
	switch r.Status {
	case StatusOK:
		return r.Values[0], true
	case StatusMalformed:
		s.Verdict = VerdictMalformed
	default:
		s.Verdict = VerdictUnknown
	}
	return 0, false
}

// Check compares the host's kernel and process limits with what target t
// and budgets b need. It returns one Setting per limit and a warning for
// each limit that may stop the target.
func Check(h Host, t Target, b Budgets) ([]Setting, []string) {
	var out []Setting
	var warns []string
	add := func(s Setting, w string) {
		out = append(out, s)
		// A value that could not be read is a warning when the target needs
		// something from it; advice without a need stays in the table.
		if w == "" && s.Needed != "" && (s.Verdict == VerdictUnknown || s.Verdict == VerdictMalformed) {
			w = fmt.Sprintf("%s could not be checked, %s; it must be %s", s.Name, s.Current, s.Needed)
		}
		if w != "" {
			warns = append(warns, w)
		}
	}
	add(checkNoFile(&h, b))
	add(atLeast(&h, "fs.nr_open", b.NoFileNeeded,
		"the ceiling on any process's RLIMIT_NOFILE: ulimit -n cannot go above it",
		"RLIMIT_NOFILE cannot be raised far enough"))
	add(atLeast(&h, "fs.file-max", b.NoFileNeeded+fileMaxHeadroom,
		fmt.Sprintf("open files for the whole host: sluice's descriptors plus %d for everything else", fileMaxHeadroom),
		"accept4 fails with ENFILE for every process on the host"))
	add(atLeast(&h, "net.core.somaxconn", int64(b.Backlog),
		"listen() silently cuts the backlog down to this; connections beyond it are dropped while accepts pause",
		"the listen backlog is truncated and handshakes are dropped during accept pauses"))
	add(atLeast(&h, "net.ipv4.tcp_max_syn_backlog", int64(b.Backlog),
		"half-open connections waiting for the handshake's last ACK; beyond it SYNs are dropped unless syncookies are on",
		"SYNs are dropped in a connection burst"))
	add(checkSyncookies(&h))
	add(checkNetdev(&h, t))
	add(checkSockBuf(&h, "net.ipv4.tcp_rmem", t, "receive"))
	add(checkSockBuf(&h, "net.ipv4.tcp_wmem", t, "send"))
	add(checkTCPMem(&h, t, b))
	add(advice(&h, "net.core.rmem_max", "caps SO_RCVBUF set with setsockopt; autotuned receive buffers follow tcp_rmem instead, so it matters only if sluice sets buffer sizes explicitly"))
	add(advice(&h, "net.core.wmem_max", "caps SO_SNDBUF set with setsockopt; autotuned send buffers follow tcp_wmem instead, so it matters only if sluice sets buffer sizes explicitly"))
	add(checkPortRange(&h, t))
	add(checkTWReuse(&h))
	add(checkFinTimeout(&h, t))
	add(checkKeepalive(&h))
	return out, warns
}

// fileMaxHeadroom is what fs.file-max must leave for the rest of the host.
const fileMaxHeadroom = 65536

func checkNoFile(h *Host, b Budgets) (Setting, string) {
	need := b.NoFileNeeded
	s := Setting{Name: "RLIMIT_NOFILE", Needed: fmt.Sprintf("soft >= %d", need),
		Reason: "every connection is a file descriptor; at the soft limit accept4 fails with EMFILE and accepts pause. " +
			"It is read from " + h.NoFile.Path + ", so it is the limit of the shell that ran tune: start sluice the same way, or set it in its unit"}
	cmds := []string{fmt.Sprintf("ulimit -n %d", need), fmt.Sprintf("LimitNOFILE=%d (systemd unit, [Service])", need)}
	soft, okS := h.NoFile.Int(0)
	hard, _ := h.NoFile.Int(1)
	if !okS {
		unread(h.NoFile, &s)
		s.Commands = cmds
		return s, ""
	}
	s.Current = fmt.Sprintf("soft %s, hard %s", fmtLimit(soft), fmtLimit(hard))
	if soft >= need {
		s.Verdict = VerdictOK
		return s, ""
	}
	s.Verdict = VerdictRaise
	s.Commands = cmds
	w := fmt.Sprintf("RLIMIT_NOFILE soft limit %d is below the %d descriptors the target needs: accepts hit EMFILE at about %d connections",
		soft, need, max(0, soft-(need-int64(b.MaxConns))))
	if hard < need {
		w += fmt.Sprintf("; the hard limit (%d) must be raised too, which takes root", hard)
	}
	return s, w
}

func checkSyncookies(h *Host) (Setting, string) {
	const name = "net.ipv4.tcp_syncookies"
	s := Setting{Name: name, Needed: "1",
		Reason: "answers a SYN flood or a full SYN queue with cookies instead of dropping handshakes (2 sends cookies even without a flood)"}
	v, ok := unread(h.Sysctl(name), &s)
	switch {
	case !ok:
		s.Commands = []string{"sysctl -w " + name + "=1"}
		return s, ""
	case v == 0:
		s.Verdict = VerdictRaise
		s.Commands = []string{"sysctl -w " + name + "=1"}
		return s, name + " is 0: a connection burst beyond the SYN backlog loses handshakes"
	default:
		s.Verdict = VerdictOK
		return s, ""
	}
}

// netdevDrainSeconds is how long a core's softirq may be held up before it
// drains its input queue: the backlog must hold what arrives meanwhile.
const netdevDrainSeconds = 0.010

// mssBytes is the payload of one Ethernet-sized TCP segment.
const mssBytes = 1448

func checkNetdev(h *Host, t Target) (Setting, string) {
	const name = "net.core.netdev_max_backlog"
	reason := "packets queued per core before the TCP stack sees them; beyond it the kernel drops them (see softnet_stat)"
	if t.MsgRatePerSec == 0 {
		s := Setting{Name: name, Verdict: VerdictAdvice, Reason: reason + "; pass -rate to check it against a message rate"}
		unread(h.Sysctl(name), &s)
		if s.Verdict != VerdictMalformed && s.Verdict != VerdictUnknown {
			s.Verdict = VerdictAdvice
		}
		return s, ""
	}
	cores := max(h.CPU.Cores, 1)
	segs := (int64(t.MsgBytes) + mssBytes - 1) / mssBytes
	pps := t.MsgRatePerSec * float64(segs) / float64(cores)
	need := max(int64(1000), int64(math.Ceil(pps*netdevDrainSeconds)))
	return atLeast(h, name, need,
		fmt.Sprintf("%s; at %.0f packets/s per core it must hold %.0f ms of arrivals", reason, pps, netdevDrainSeconds*1000),
		"packets are dropped before TCP sees them, and the peers retransmit")
}

// checkSockBuf checks that autotuning may grow a socket buffer to hold two
// pipelined bursts.
func checkSockBuf(h *Host, name string, t Target, dir string) (Setting, string) {
	need := max(nextPow2(2*t.burstBytes()), 64<<10)
	r := h.Sysctl(name)
	s := Setting{Name: name, Needed: fmt.Sprintf("max >= %d", need),
		Reason: fmt.Sprintf("min, default and max %s buffer per socket; autotuning grows a busy socket's buffer up to max, which must hold two pipelined bursts (%d x %d bytes each)", dir, t.InflightMsgs, t.MsgBytes)}
	if _, ok := unread(r, &s); !ok {
		return s, ""
	}
	lo, def, hi := r.Values[0], r.Values[1], r.Values[2]
	if hi >= need {
		s.Verdict = VerdictOK
		return s, ""
	}
	s.Verdict = VerdictRaise
	s.Commands = []string{fmt.Sprintf("sysctl -w %s=\"%d %d %d\"", name, lo, def, need)}
	return s, fmt.Sprintf("%s max %d is below two bursts (%d): a pipelined burst waits for window updates", name, hi, need)
}

func checkTCPMem(h *Host, t Target, b Budgets) (Setting, string) {
	const name = "net.ipv4.tcp_mem"
	needBytes := int64(b.MaxConns) * 2 * t.burstBytes()
	needPages := (needBytes + pageBytes - 1) / pageBytes
	r := h.Sysctl(name)
	s := Setting{Name: name, Needed: fmt.Sprintf("pressure >= %d pages (%s)", needPages, fmtBytes(needBytes)),
		Reason: fmt.Sprintf("kernel memory for all TCP sockets, in %d-byte pages (min, pressure, max); above pressure the kernel shrinks buffers, at max it drops data. "+
			"The target needs room for every connection to hold one burst each way (%d x 2 x %s)", pageBytes, b.MaxConns, fmtBytes(t.burstBytes()))}
	if _, ok := unread(r, &s); !ok {
		return s, ""
	}
	lo, press, hi := r.Values[0], r.Values[1], r.Values[2]
	if press >= needPages {
		s.Verdict = VerdictOK
		return s, ""
	}
	s.Verdict = VerdictRaise
	newHi := max(hi, needPages+needPages/2)
	s.Commands = []string{fmt.Sprintf("sysctl -w %s=\"%d %d %d\"", name, lo, needPages, newHi)}
	return s, fmt.Sprintf("%s pressure (%d pages, %s) is below the %s the target's sockets may hold: the kernel shrinks their buffers under load",
		name, press, fmtBytes(press*pageBytes), fmtBytes(needBytes))
}

func advice(h *Host, name, reason string) (Setting, string) {
	s := Setting{Name: name, Verdict: VerdictAdvice, Reason: reason}
	unread(h.Sysctl(name), &s)
	return s, ""
}

func checkPortRange(h *Host, t Target) (Setting, string) {
	const name = "net.ipv4.ip_local_port_range"
	r := h.Sysctl(name)
	s := Setting{Name: name, Verdict: VerdictAdvice,
		Reason: "local ports for outgoing connections; a server's accepted connections use none. " +
			"It limits a load generator or proxy on this host: one port per connection to the same address and port"}
	if _, ok := unread(r, &s); !ok {
		return s, ""
	}
	ports := r.Values[1] - r.Values[0] + 1
	s.Current += fmt.Sprintf(" (%d ports)", ports)
	if ports < int64(t.Conns) {
		s.Needed = fmt.Sprintf(">= %d ports, for a load generator on this host", t.Conns)
		if r.Values[0] > 1024 || r.Values[1] < 65535 {
			s.Commands = []string{fmt.Sprintf("sysctl -w %s=\"1024 65535\"", name)}
		}
		if int64(t.Conns) > 64512 {
			s.Reason += "; beyond 64512 ports, spread the generator over several source addresses (127.0.0.2, ...)"
		}
	}
	return s, ""
}

func checkTWReuse(h *Host) (Setting, string) {
	const name = "net.ipv4.tcp_tw_reuse"
	s := Setting{Name: name, Verdict: VerdictAdvice,
		Reason: "lets outgoing connections reuse ports in TIME-WAIT (1: always, 2: loopback only); accepted connections are unaffected. " +
			"A load generator or proxy on this host that opens many short connections wants 1"}
	unread(h.Sysctl(name), &s)
	return s, ""
}

func checkFinTimeout(h *Host, t Target) (Setting, string) {
	const name = "net.ipv4.tcp_fin_timeout"
	r := h.Sysctl(name)
	s := Setting{Name: name, Verdict: VerdictAdvice,
		Reason: "how long an orphaned connection waits in FIN-WAIT-2 for a peer that never finishes closing"}
	v, ok := unread(r, &s)
	if !ok || t.ConnRatePerSec == 0 {
		if ok {
			s.Reason += "; pass -conn-rate to check it against connection churn"
		}
		return s, ""
	}
	lingering := t.ConnRatePerSec * float64(v)
	if lingering <= float64(t.Conns) {
		s.Verdict = VerdictOK
		return s, ""
	}
	need := max(int64(10), int64(float64(t.Conns)/t.ConnRatePerSec))
	s.Verdict = VerdictLower
	s.Needed = fmt.Sprintf("<= %d", need)
	s.Commands = []string{fmt.Sprintf("sysctl -w %s=%d", name, need)}
	s.Reason += fmt.Sprintf("; at %.0f new connections/s up to %.0f of them may linger, more than the %d live ones", t.ConnRatePerSec, lingering, t.Conns)
	return s, fmt.Sprintf("%s is %d s: at -conn-rate %.0f/s up to %.0f orphaned sockets may wait in FIN-WAIT-2, more than the %d live connections",
		name, v, t.ConnRatePerSec, lingering, t.Conns)
}

func checkKeepalive(h *Host) (Setting, string) {
	s := Setting{Name: "net.ipv4.tcp_keepalive_time/intvl/probes", Verdict: VerdictAdvice,
		Reason: "dead-peer detection, only for sockets with SO_KEEPALIVE; sluice's idle timeout closes silent connections sooner. " +
			"If you rely on keepalive, 600/30/5 finds a dead peer in 12.5 minutes"}
	names := []string{"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
	var vs [3]int64
	for i, n := range names {
		one := Setting{}
		v, ok := unread(h.Sysctl(n), &one)
		if !ok {
			s.Verdict, s.Current = one.Verdict, one.Current
			return s, ""
		}
		vs[i] = v
	}
	detect := time.Duration(vs[0]+vs[1]*vs[2]) * time.Second
	s.Current = fmt.Sprintf("%d s / %d s / %d (a dead peer is found after %s)", vs[0], vs[1], vs[2], detect)
	return s, ""
}
