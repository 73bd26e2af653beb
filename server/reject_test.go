package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
)

// TestRejectsWellFormed: refusals reach the client as replies in its own
// protocol, with the reason and retry-after, and the connection keeps
// working afterwards: length-prefixed and line frames carry
// "-REJECT reason ms".
func TestRejectsWellFormed(t *testing.T) {
	tl, err := admission.NewTenantLimiter(admission.TenantConfig{
		Quota: admission.Quota{Count: 10, Per: time.Second, Burst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []protocol.Codec{protocol.LengthPrefixed{}, protocol.Delimited{}} {
		t.Run(fmt.Sprintf("%T", codec), func(t *testing.T) {
			adm := newAdmitter(t, admission.Config{Tenants: tl, MemoryLimitBytes: -1})
			e := start(t, Config{Loops: 1, Codec: codec, Admission: AdmissionPolicy{Admitter: adm,
				// each connection is its own tenant, so the subtests do not share a quota
				TenantKey: func(dst []byte, peer netip.AddrPort, _ []byte) []byte {
					return binary.BigEndian.AppendUint16(dst, peer.Port())
				}}}, newTestHandler())
			c := dial(t, e)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			r := bufio.NewReader(c)
			send := func(msg string) { c.Write(codec.AppendEncode(nil, []byte(msg))) }
			recv := func() string {
				if _, ok := codec.(protocol.LengthPrefixed); ok {
					var hdr [4]byte
					if _, err := io.ReadFull(r, hdr[:]); err != nil {
						t.Fatalf("read: %v", err)
					}
					b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
					if _, err := io.ReadFull(r, b); err != nil {
						t.Fatalf("read: %v", err)
					}
					return string(b)
				}
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				return strings.TrimSuffix(line, "\n")
			}
			send("one")
			send("two") // over the burst of 1: refused
			if got := recv(); got != "one" {
				t.Fatalf("first reply %q", got)
			}
			got := recv()
			reason, retry, ok := protocol.ParseRejectText([]byte(got))
			if !ok || reason != "tenant" || retry <= 0 || retry > 100*time.Millisecond {
				t.Fatalf("second reply %q: want a tenant reject with retry-after in (0, 100ms]", got)
			}
			time.Sleep(retry)
			send("three") // the connection still works, and the quota has refilled
			if got := recv(); got != "three" {
				t.Fatalf("after the retry-after: %q", got)
			}
		})
	}
}
