package tune

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestMainUsage(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-h"}, 0, "usage: tune"},
		{[]string{"-nope"}, 2, "flag provided but not defined"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-conns", "0"}, 2, "invalid target: connections 0"},
		{[]string{"-mem-share", "2"}, 2, "memory share 2"},
		{[]string{"-msg-bytes", "abc"}, 2, `size "abc"`},
		{[]string{"-msg-bytes", "8GiB"}, 2, "message size"},
		{[]string{"-root", "testdata/does-not-exist"}, 2, "not a readable directory"},
		{[]string{"-root", "testdata/mkfixtures.sh"}, 2, "not a readable directory"},
	}
	for i, tc := range tests {
		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb, DirFS)
		if code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%d: Main(%q) = %d, stderr %q; want %d and %q", i, tc.args, code, errb.String(), tc.code, tc.stderr)
		}
		if tc.code != 0 && out.Len() > 0 {
			t.Errorf("%d: wrote a report on failure: %q", i, out.String())
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestMainWriteError(t *testing.T) {
	for _, args := range [][]string{{"-root", "testdata/small"}, {"-root", "testdata/small", "-json"}} {
		var errb bytes.Buffer
		if code := Main(args, failWriter{}, &errb, DirFS); code != 1 || !strings.Contains(errb.String(), "disk full") {
			t.Errorf("Main(%q) to a failing writer = %d, stderr %q; want 1", args, code, errb.String())
		}
	}
}

func TestMainFlagsReachTarget(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-root", "testdata/small", "-json", "-conns", "123", "-msg-bytes", "2KiB", "-inflight", "3",
		"-mem-share", "0.25", "-mem-bytes", "4GiB", "-conn-rate", "7", "-rate", "9"}
	if code := Main(args, &out, &errb, DirFS); code != 0 {
		t.Fatalf("Main = %d: %s", code, errb.String())
	}
	for _, want := range []string{`"conns": 123`, `"msg_bytes": 2048`, `"inflight_msgs": 3`, `"mem_share": 0.25`,
		`"mem_bytes": 4294967296`, `"conn_rate_per_sec": 7`, `"msg_rate_per_sec": 9`, `"mem_limit_bytes": 1073741824`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
}
