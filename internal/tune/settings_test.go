package tune

import (
	"errors"
	"strings"
	"testing"
)

// withSysctl returns h with name read as vs.
func withSysctl(h Host, name string, vs ...int64) Host {
	h.Sysctls[name] = ok(sysctlPath(name), vs...)
	return h
}

func findSetting(ss []Setting, name string) Setting {
	for _, s := range ss {
		if s.Name == name {
			return s
		}
	}
	return Setting{Name: name, Verdict: "absent"}
}

func TestCheckVerdicts(t *testing.T) {
	target := Target{Conns: 10000, MsgBytes: 512, InflightMsgs: 16, MemShare: 0.5}
	malformedReading := failed("proc/sys/net/core/somaxconn", malformed("not an integer", "x"))
	tests := []struct {
		name    string
		edit    func(Host) Host
		target  func(Target) Target
		setting string
		want    Verdict
		cmd     string // a command that must be offered ("" for none)
		warn    string // a substring of a warning ("" for no warning about it)
	}{
		{"somaxconn low", func(h Host) Host { return withSysctl(h, "net.core.somaxconn", 128) }, nil,
			"net.core.somaxconn", VerdictRaise, "sysctl -w net.core.somaxconn=2048", "net.core.somaxconn is 128"},
		{"somaxconn enough", func(h Host) Host { return withSysctl(h, "net.core.somaxconn", 4096) }, nil,
			"net.core.somaxconn", VerdictOK, "", ""},
		{"somaxconn missing", func(h Host) Host { return h }, nil,
			"net.core.somaxconn", VerdictUnknown, "sysctl -w net.core.somaxconn=2048", "net.core.somaxconn could not be checked"},
		{"somaxconn malformed", func(h Host) Host { h.Sysctls["net.core.somaxconn"] = malformedReading; return h }, nil,
			"net.core.somaxconn", VerdictMalformed, "sysctl -w net.core.somaxconn=2048", `not an integer: "x"`},
		{"nofile low soft and hard", func(h Host) Host { h.NoFile = ok("proc/self/limits", 1024, 4096); return h }, nil,
			"RLIMIT_NOFILE", VerdictRaise, "ulimit -n 12580", "hard limit (4096) must be raised too"},
		{"nofile low soft only", func(h Host) Host { h.NoFile = ok("proc/self/limits", 1024, Unlimited); return h }, nil,
			"RLIMIT_NOFILE", VerdictRaise, "LimitNOFILE=12580 (systemd unit, [Service])", "EMFILE at about 944 connections"},
		{"nofile unlimited", func(h Host) Host { h.NoFile = ok("proc/self/limits", Unlimited, Unlimited); return h }, nil,
			"RLIMIT_NOFILE", VerdictOK, "", ""},
		{"syncookies off", func(h Host) Host { return withSysctl(h, "net.ipv4.tcp_syncookies", 0) }, nil,
			"net.ipv4.tcp_syncookies", VerdictRaise, "sysctl -w net.ipv4.tcp_syncookies=1", "tcp_syncookies is 0"},
		{"syncookies always", func(h Host) Host { return withSysctl(h, "net.ipv4.tcp_syncookies", 2) }, nil,
			"net.ipv4.tcp_syncookies", VerdictOK, "", ""},
		{"rmem max too small", func(h Host) Host { return withSysctl(h, "net.ipv4.tcp_rmem", 4096, 8192, 16384) }, nil,
			"net.ipv4.tcp_rmem", VerdictRaise, `sysctl -w net.ipv4.tcp_rmem="4096 8192 65536"`, "tcp_rmem max 16384"},
		{"wmem big bursts", func(h Host) Host { return withSysctl(h, "net.ipv4.tcp_wmem", 4096, 16384, 4194304) },
			func(t Target) Target { t.MsgBytes = 1 << 20; return t },
			"net.ipv4.tcp_wmem", VerdictRaise, `sysctl -w net.ipv4.tcp_wmem="4096 16384 33554432"`, "tcp_wmem max"},
		{"tcp_mem pressure low", func(h Host) Host { return withSysctl(h, "net.ipv4.tcp_mem", 1000, 2000, 3000) }, nil,
			"net.ipv4.tcp_mem", VerdictRaise, `sysctl -w net.ipv4.tcp_mem="1000 50000 75000"`, "tcp_mem pressure (2000 pages"},
		{"netdev without rate", func(h Host) Host { return withSysctl(h, "net.core.netdev_max_backlog", 10) }, nil,
			"net.core.netdev_max_backlog", VerdictAdvice, "", ""},
		{"netdev missing without rate is no warning", func(h Host) Host { return h }, nil,
			"net.core.netdev_max_backlog", VerdictUnknown, "", ""},
		{"netdev with rate", func(h Host) Host { return withSysctl(h, "net.core.netdev_max_backlog", 1000) },
			func(t Target) Target { t.MsgRatePerSec = 2e6; return t },
			// 2M msgs/s, one segment each, over 4 cores: 500k pps x 10 ms.
			"net.core.netdev_max_backlog", VerdictRaise, "sysctl -w net.core.netdev_max_backlog=5000", "netdev_max_backlog is 1000"},
		{"fin timeout with churn", func(h Host) Host { return withSysctl(h, "net.ipv4.tcp_fin_timeout", 60) },
			func(t Target) Target { t.ConnRatePerSec = 1000; return t },
			"net.ipv4.tcp_fin_timeout", VerdictLower, "sysctl -w net.ipv4.tcp_fin_timeout=10", "60000 orphaned sockets"},
		{"fin timeout without churn", func(h Host) Host { return withSysctl(h, "net.ipv4.tcp_fin_timeout", 60) },
			func(t Target) Target { t.ConnRatePerSec = 10; return t },
			"net.ipv4.tcp_fin_timeout", VerdictOK, "", ""},
		{"port range small", func(h Host) Host { return withSysctl(h, "net.ipv4.ip_local_port_range", 32768, 32867) }, nil,
			"net.ipv4.ip_local_port_range", VerdictAdvice, `sysctl -w net.ipv4.ip_local_port_range="1024 65535"`, ""},
		{"file-max", func(h Host) Host { return withSysctl(h, "fs.file-max", 1000) }, nil,
			"fs.file-max", VerdictRaise, "sysctl -w fs.file-max=78116", "ENFILE"},
		{"keepalive", func(h Host) Host {
			h = withSysctl(h, "net.ipv4.tcp_keepalive_time", 600)
			h = withSysctl(h, "net.ipv4.tcp_keepalive_intvl", 30)
			return withSysctl(h, "net.ipv4.tcp_keepalive_probes", 5)
		}, nil, "net.ipv4.tcp_keepalive_time/intvl/probes", VerdictAdvice, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := target
			if tc.target != nil {
				tg = tc.target(target)
			}
			h := tc.edit(hostWith(4, 8<<30))
			b, err := Compute(h, tg)
			if err != nil {
				t.Fatal(err)
			}
			ss, warns := Check(h, tg, b)
			s := findSetting(ss, tc.setting)
			if s.Verdict != tc.want {
				t.Fatalf("verdict %q, want %q (%+v)", s.Verdict, tc.want, s)
			}
			if tc.cmd != "" && !contains(s.Commands, tc.cmd) {
				t.Errorf("commands %q lack %q", s.Commands, tc.cmd)
			}
			if tc.cmd == "" && len(s.Commands) > 0 {
				t.Errorf("unexpected commands %q", s.Commands)
			}
			mentions := false
			for _, w := range warns {
				if strings.Contains(w, tc.setting) || (tc.setting == "RLIMIT_NOFILE" && strings.Contains(w, "RLIMIT_NOFILE")) {
					mentions = true
					if tc.warn == "" || !strings.Contains(w, tc.warn) {
						t.Errorf("warning %q, want one containing %q", w, tc.warn)
					}
				}
			}
			if tc.warn != "" && !mentions {
				t.Errorf("no warning about %s in %q", tc.setting, warns)
			}
			if s.Reason == "" || s.Current == "" {
				t.Errorf("setting lacks reason or current value: %+v", s)
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestVerdictLimits(t *testing.T) {
	for v, want := range map[Verdict]bool{VerdictOK: false, VerdictAdvice: false, VerdictRaise: true,
		VerdictLower: true, VerdictUnknown: true, VerdictMalformed: true} {
		if v.Limits() != want {
			t.Errorf("%s.Limits() = %v", v, !want)
		}
	}
}

func TestSysctlMissingIsTyped(t *testing.T) {
	h := hostWith(1, 1<<30)
	r := h.Sysctl("net.core.somaxconn")
	if r.Status != StatusMissing || !errors.Is(r.Err, ErrMissing) {
		t.Fatalf("reading %+v: want missing with ErrMissing", r)
	}
}
