package admission

import (
	"fmt"
	"net/netip"
)

// Tenant key tags keep the key spaces apart, so that an envelope tenant named
// with four bytes can never collide with an IPv4 address.
const (
	tagIP     = 'i'
	tagPrefix = 'p'
	tagTenant = 't'
)

// TenantKeyFunc appends the tenant key for one request to dst and returns
// the extended slice, like strconv.Append*: with a dst of enough capacity
// (64 bytes covers the built-in functions), it does not allocate. peer is the
// connection's remote address; tenant is the envelope's tenant field, nil
// when the protocol has none.
type TenantKeyFunc func(dst []byte, peer netip.AddrPort, tenant []byte) []byte

// AppendIPKey appends the key of one peer address: IPv4-mapped IPv6
// addresses are unmapped first so that one client has one key whichever
// socket family accepted it; the zone is ignored.
func AppendIPKey(dst []byte, addr netip.Addr) []byte {
	return appendAddrBytes(append(dst, tagIP), addr.Unmap())
}

// AppendPrefixKey appends the key of the network containing addr: the first
// v4Bits of an IPv4 address or the first v6Bits of an IPv6 address (for
// example 24 and 64, so one /64 of IPv6 addresses, which a single host
// commonly owns, is one tenant).
func AppendPrefixKey(dst []byte, addr netip.Addr, v4Bits, v6Bits int) []byte {
	addr = addr.Unmap().WithZone("")
	bits := v6Bits
	if addr.Is4() {
		bits = v4Bits
	}
	p, err := addr.Prefix(bits)
	if err != nil { // invalid addr or bits: fall back to the exact address
		return AppendIPKey(dst, addr)
	}
	dst = append(dst, tagPrefix, byte(bits))
	return appendAddrBytes(dst, p.Addr())
}

// AppendTenantKey appends the key of a named tenant (the envelope's field).
func AppendTenantKey(dst, tenant []byte) []byte {
	return append(append(dst, tagTenant), tenant...)
}

// appendAddrBytes appends the address's 4 or 16 raw bytes (nothing for the
// zero Addr, which then keys all address-less peers together).
func appendAddrBytes(dst []byte, a netip.Addr) []byte {
	if !a.IsValid() {
		return dst
	}
	if a.Is4() {
		b := a.As4()
		return append(dst, b[:]...)
	}
	b := a.As16()
	return append(dst, b[:]...)
}

// KeyByIP keys tenants by the peer's exact address.
func KeyByIP() TenantKeyFunc {
	return func(dst []byte, peer netip.AddrPort, _ []byte) []byte {
		return AppendIPKey(dst, peer.Addr())
	}
}

// KeyByPrefix keys tenants by the peer's network: v4Bits in [0, 32], v6Bits
// in [0, 128].
func KeyByPrefix(v4Bits, v6Bits int) (TenantKeyFunc, error) {
	if v4Bits < 0 || v4Bits > 32 || v6Bits < 0 || v6Bits > 128 {
		return nil, fmt.Errorf("%w: /%d for IPv4, /%d for IPv6", ErrBadPrefix, v4Bits, v6Bits)
	}
	return func(dst []byte, peer netip.AddrPort, _ []byte) []byte {
		return AppendPrefixKey(dst, peer.Addr(), v4Bits, v6Bits)
	}, nil
}

// KeyByTenantOr keys by the envelope's tenant field when present and by
// fallback (KeyByIP, KeyByPrefix or a custom function) otherwise.
func KeyByTenantOr(fallback TenantKeyFunc) TenantKeyFunc {
	return func(dst []byte, peer netip.AddrPort, tenant []byte) []byte {
		if len(tenant) > 0 {
			return AppendTenantKey(dst, tenant)
		}
		return fallback(dst, peer, tenant)
	}
}
