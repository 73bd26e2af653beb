package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicenet/sluice/admission"
)

// TestEngineCapsReachAdmitter: the engine owns its loop count and the caps
// it enforces (MaxConns, MaxQueuedBytes); New hands them to the policy's
// Admitter (admission.Binding), whose budgets then derive from them, and
// an Admitter serves one engine.
func TestEngineCapsReachAdmitter(t *testing.T) {
	adm := newAdmitter(t, admission.Config{MaxInflightReqs: 5, MemoryLimitBytes: -1})
	e, err := New(Config{Loops: 3, MaxConns: 10, MaxQueuedBytes: 1 << 20, Admission: AdmissionPolicy{Admitter: adm}}, HandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	want := admission.GlobalBudgets{MaxConns: 10, MaxInflightReqs: 5, MaxQueuedBytes: 1 << 20, MemoryLimitBytes: -1}
	if got := adm.Budgets(); got != want {
		t.Errorf("Admitter.Budgets() = %+v, want %+v", got, want)
	}
	if adm.Loop(2) == nil || adm.Loop(3) != nil {
		t.Error("the Admitter does not have exactly the engine's 3 loop handles")
	}
	if e.cfg.MaxConns != 10 || e.cfg.MaxConnsLow != 9 || e.cfg.MaxQueuedBytes != 1<<20 {
		t.Errorf("MaxConns %d MaxConnsLow %d MaxQueuedBytes %d, want 10, 9, %d",
			e.cfg.MaxConns, e.cfg.MaxConnsLow, e.cfg.MaxQueuedBytes, 1<<20)
	}
	if _, err := New(Config{Loops: 1, Admission: AdmissionPolicy{Admitter: adm}}, HandlerFuncs{}); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, admission.ErrBound) {
		t.Errorf("a second engine on the same Admitter: %v, want ErrInvalidConfig wrapping admission.ErrBound", err)
	}
}

// rejectCodec is a line codec that can answer a refusal in protocol.
type rejectCodec struct{ lineCodec }

func (rejectCodec) AppendReject(dst, frame []byte, reason string, retryAfter time.Duration) []byte {
	return fmt.Appendf(dst, "REJECT %s retry-after=%s\n", reason, retryAfter)
}

// lineCodec: frames are lines, replies are lines.
type lineCodec struct{}

func (lineCodec) Decode(buf []byte) ([]byte, int, error) {
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		return buf[:i], i + 1, nil
	}
	return nil, 0, nil
}

func (lineCodec) AppendEncode(dst, frame []byte) []byte { return append(append(dst, frame...), '\n') }

// denyX refuses frames that start with "x".
type denyX struct{ calls int }

func (d *denyX) AdmitFrame(c *Conn, frame []byte, now time.Time) Verdict {
	d.calls++
	if len(frame) > 0 && frame[0] == 'x' {
		return Verdict{Reject: true, Reason: "tenant", RetryAfter: 300 * time.Millisecond}
	}
	return Verdict{}
}

// TestAdmissionSeam: a refused frame never reaches OnFrame; a codec that
// can say so answers in protocol and the connection stays usable; without
// one the connection closes with ErrRejected.
func TestAdmissionSeam(t *testing.T) {
	t.Run("in-protocol", func(t *testing.T) {
		h := newTestHandler()
		e := start(t, Config{Loops: 1, Codec: rejectCodec{}, Admission: AdmitFunc((&denyX{}).AdmitFrame)}, h)
		c := dial(t, e)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("a1\nx2\na3\n"))
		r := bufio.NewReader(c)
		for i, want := range []string{"a1\n", "REJECT tenant retry-after=300ms\n", "a3\n"} {
			if got, err := r.ReadString('\n'); err != nil || got != want {
				t.Fatalf("%d: %q, %v; want %q", i, got, err, want)
			}
		}
		waitUntil(t, 5*time.Second, "stats", func() bool { s := e.Stats(); return s.Rejects == 1 && s.Frames == 3 })
	})
	t.Run("close", func(t *testing.T) {
		h := newTestHandler()
		e := start(t, Config{Loops: 1, Codec: lineCodec{}, Admission: AdmitFunc((&denyX{}).AdmitFrame)}, h)
		c := dial(t, e)
		sc := h.nextOpen(t)
		c.Write([]byte("x\n"))
		if cause := h.closeOf(t, sc, 5*time.Second); !errors.Is(cause, ErrRejected) {
			t.Fatalf("cause %v, want ErrRejected", cause)
		}
	})
}
