package admission

import (
	"net/netip"
	"syscall"
	"time"
)

// t0 is the start of every time table; tests pass t0 plus offsets, never the
// real clock.
var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

func netipMustParse(s string) netip.Addr { return netip.MustParseAddr(s) }

func netipMustParseAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func errEMFILE() error { return syscall.EMFILE }
