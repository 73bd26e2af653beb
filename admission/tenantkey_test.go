package admission

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

func TestTenantKeys(t *testing.T) {
	ip := KeyByIP()
	p24, err := KeyByPrefix(24, 64)
	if err != nil {
		t.Fatal(err)
	}
	tenantOrIP := KeyByTenantOr(ip)
	ap := func(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
	same := []struct {
		name string
		f    TenantKeyFunc
		a, b netip.AddrPort
		ta   []byte
		tb   []byte
	}{
		{"ip ignores port", ip, ap("192.0.2.1:1"), ap("192.0.2.1:2"), nil, nil},
		{"ip unmaps v4-in-v6", ip, ap("192.0.2.1:1"), ap("[::ffff:192.0.2.1]:1"), nil, nil},
		{"ip ignores zone", ip, ap("[fe80::1%eth0]:1"), ap("[fe80::1%eth1]:1"), nil, nil},
		{"/24 groups a network", p24, ap("192.0.2.1:1"), ap("192.0.2.254:1"), nil, nil},
		{"/64 groups a network", p24, ap("[2001:db8:1:2::1]:1"), ap("[2001:db8:1:2:ffff::9]:1"), nil, nil},
		{"tenant field wins", tenantOrIP, ap("192.0.2.1:1"), ap("198.51.100.1:1"), []byte("acme"), []byte("acme")},
	}
	for _, c := range same {
		ka, kb := c.f(nil, c.a, c.ta), c.f(nil, c.b, c.tb)
		if !bytes.Equal(ka, kb) {
			t.Errorf("%s: %x != %x", c.name, ka, kb)
		}
	}
	differ := []struct {
		name string
		ka   []byte
		kb   []byte
	}{
		{"different IPs", ip(nil, ap("192.0.2.1:1"), nil), ip(nil, ap("192.0.2.2:1"), nil)},
		{"different /24s", p24(nil, ap("192.0.2.1:1"), nil), p24(nil, ap("192.0.3.1:1"), nil)},
		{"different /64s", p24(nil, ap("[2001:db8:1:2::1]:1"), nil), p24(nil, ap("[2001:db8:1:3::1]:1"), nil)},
		// A tenant named by the 4 bytes of an address must not share its
		// quota.
		{"tenant vs ip", tenantOrIP(nil, ap("192.0.2.1:1"), []byte{192, 0, 2, 1}), tenantOrIP(nil, ap("192.0.2.1:1"), nil)},
		{"ip vs /32", ip(nil, ap("192.0.2.1:1"), nil), AppendPrefixKey(nil, netip.MustParseAddr("192.0.2.1"), 32, 128)},
		{"tenant vs no tenant", tenantOrIP(nil, ap("192.0.2.1:1"), []byte("a")), tenantOrIP(nil, ap("192.0.2.1:1"), []byte("b"))},
	}
	for _, c := range differ {
		if bytes.Equal(c.ka, c.kb) {
			t.Errorf("%s: both %x", c.name, c.ka)
		}
	}
	if _, err := KeyByPrefix(33, 64); !errors.Is(err, ErrBadPrefix) {
		t.Errorf("/33: %v", err)
	}
	if _, err := KeyByPrefix(24, 129); !errors.Is(err, ErrBadPrefix) {
		t.Errorf("/129: %v", err)
	}
	if k := ip(nil, netip.AddrPort{}, nil); len(k) != 1 {
		t.Errorf("zero address key %x", k)
	}
}

func TestTenantKeyNoAlloc(t *testing.T) {
	p, _ := KeyByPrefix(24, 64)
	f := KeyByTenantOr(p)
	buf := make([]byte, 0, 64)
	peer := netip.MustParseAddrPort("[2001:db8::1]:5")
	if n := testing.AllocsPerRun(100, func() { buf = f(buf[:0], peer, nil) }); n != 0 {
		t.Errorf("prefix key allocates %v", n)
	}
}
