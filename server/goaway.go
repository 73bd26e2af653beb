package server

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/admission/shed"
)

// Final refusals (docs/OVERLOAD.md#final-refusals). A rationing loop
// still reads and refuses a held connection once per hold; a connection
// that has been refused for AdmissionPolicy.GoAwayAfter, goAwayRefusals
// frames or more, without one of its frames admitted is past any share
// the loop can give it, so instead of another hold it gets one last
// refusal, reason "goaway" with a retry-after, and is closed once that is
// written (the way HTTP/2's GOAWAY closes a connection). Its tenant's new connections are then refused at
// accept, with the same frame and a close, until the retry-after has
// passed: a client that reconnects at once costs an accept, a write and a
// close, not reads and refusals.

// ErrGoAway is the close cause of a connection closed with a final
// refusal. It matches ErrRejected.
var ErrGoAway = fmt.Errorf("%w: refused past AdmissionPolicy.GoAwayAfter (goaway)", ErrRejected)

// DefaultGoAwayAfter is AdmissionPolicy.GoAwayAfter when derived: five of
// the longest ration holds (shed.MaxRationHold), so that a connection is
// closed only after several holds in a row brought it nothing but
// refusals, which a client served within its share never sees.
const DefaultGoAwayAfter = time.Duration(5 * shed.MaxRationHold)

// coolSlots is how many tenants the accept gate remembers at once; past
// it the entry that ends first is replaced (the gate is best effort: a
// forgotten tenant's connections are served and refused frame by frame).
const coolSlots = 256

// coolTable is the engine's accept gate for tenants closed with a final
// refusal: their key's hash and until when their new connections are
// refused. Loops add to it and look it up under mu; latest lets accept
// skip the lock while nothing cools.
type coolTable struct {
	latest atomic.Int64 // the latest end of any entry (engine clock)
	mu     sync.Mutex
	ent    [coolSlots]coolEntry
}

// coolEntry is one cooling tenant.
type coolEntry struct {
	key   uint64 // FNV-1a of the tenant key; 0: free
	until int64
}

// add makes key cool until until: in its own entry, or in place of the
// one that ends first (a free or expired one if any).
func (t *coolTable) add(key uint64, until int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := 0
	for i := range t.ent {
		if t.ent[i].key == key {
			at = i
			break
		}
		if t.ent[i].until < t.ent[at].until {
			at = i
		}
	}
	if e := &t.ent[at]; e.key != key || e.until < until {
		*e = coolEntry{key: key, until: until}
	}
	if until > t.latest.Load() {
		t.latest.Store(until) // every writer holds mu
	}
}

// left returns how long key still cools at now (0: it does not).
func (t *coolTable) left(key uint64, now int64) int64 {
	if t.latest.Load() <= now {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.ent {
		if e := &t.ent[i]; e.key == key && e.until > now {
			return e.until - now
		}
	}
	return 0
}

// keyHash is FNV-1a of a tenant key, never 0 (a free entry).
func keyHash(key []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range key {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return max(h, 1)
}

// goAwayRefusals is how many of a connection's frames in a row must have
// been refused, besides GoAwayAfter, before it gets a final refusal: the
// saturation of connStage.refusedRun. A client that waits for each answer
// sends a frame per round trip, and one paced far below its share sends
// far fewer in GoAwayAfter; a client that answers each refusal with a new
// request sends them by the hundred.
const goAwayRefusals = math.MaxUint8

// goAwayDue reports whether a connection about to be held is past
// GoAwayAfter: refused since then without one of its frames admitted, and
// at least goAwayRefusals times. A connection that has sent a critical
// frame is never closed this way: its critical traffic would go with it.
func (s *stage) goAwayDue(a *connStage) bool {
	return s.goAwayAfter > 0 && !a.critical && a.refusedRun >= goAwayRefusals && a.refusedSince != 0 && s.v.now-a.refusedSince >= s.goAwayAfter
}

// goAway closes c with a final refusal (reason "goaway", retry-after
// GoAwayAfter) after its queued output, and makes its tenant cool for as
// long.
func (s *stage) goAway(c *Conn) {
	s.st[cGoAways]++
	s.st.refused(admission.ReasonGoAway)
	s.act.answerReject(c, nil, admission.ReasonGoAway.String(), time.Duration(s.goAwayAfter))
	s.e.cool.add(keyHash(s.key(s.keyBuf[:0], c.remote, nil)), s.v.now+s.goAwayAfter)
	s.act.requestClose(c, ErrGoAway)
}

// cooling returns how long peer's tenant is still refused at accept
// (0: it is not).
func (s *stage) cooling(peer netip.AddrPort) time.Duration {
	if s.goAwayAfter <= 0 || s.e.cool.latest.Load() <= s.v.now {
		return 0
	}
	return time.Duration(s.e.cool.left(keyHash(s.key(s.keyBuf[:0], peer, nil)), s.v.now))
}
