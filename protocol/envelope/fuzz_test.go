package envelope

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/sluicenet/sluice/protocol"
)

// within reports whether b lies inside data's backing array.
func within(b, data []byte) bool {
	if len(b) == 0 {
		return true
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	d := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return p >= d && p+uintptr(len(b)) <= d+uintptr(len(data))
}

// FuzzDecode checks framing: never panics, never consumes more than its
// input, returns whole frames within the limit, rejects only what can never
// become valid.
func FuzzDecode(f *testing.F) {
	for _, g := range goldens {
		f.Add(mustHex(f, g.hex), uint16(0))
	}
	f.Add([]byte{0, 0, 0, 17, 2}, uint16(0))
	f.Add([]byte{0, 1}, uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		c := Codec{MaxFrameBytes: int(max)}
		frame, n, err := c.Decode(data)
		if n < 0 || n > len(data) {
			t.Fatalf("n = %d outside [0, %d]", n, len(data))
		}
		if c.Validate() != nil {
			if !errors.Is(err, protocol.ErrInvalidConfig) {
				t.Fatalf("invalid codec %d: err = %v", max, err)
			}
			return
		}
		limit := uint64(c.limit())
		var lenField [4]byte
		copy(lenField[:], data)
		size := uint64(binary.BigEndian.Uint32(lenField[:])) + LengthFieldBytes
		switch {
		case size > limit:
			if !errors.Is(err, ErrFrameTooLarge) || !errors.Is(err, protocol.ErrFrameTooLarge) {
				t.Fatalf("size %d > limit %d: err = %v", size, limit, err)
			}
		case len(data) < LengthFieldBytes:
			if err != nil || n != 0 {
				t.Fatalf("partial length field: n = %d, err = %v", n, err)
			}
		case size < FixedHeaderBytes:
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("size %d below the fixed header: err = %v", size, err)
			}
		case len(data) > offVersion && data[offVersion] != Version:
			if !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("version %d: err = %v", data[offVersion], err)
			}
		case uint64(len(data)) < size:
			if err != nil || n != 0 || frame != nil {
				t.Fatalf("incomplete frame: n = %d, err = %v", n, err)
			}
		default:
			if err != nil || uint64(n) != size || !bytes.Equal(frame, data[:n]) || !within(frame, data) {
				t.Fatalf("whole frame of %d: n = %d, err = %v", size, n, err)
			}
			// The frame alone decodes to itself, and every prefix waits.
			if f2, n2, err2 := c.Decode(frame); err2 != nil || n2 != n || !bytes.Equal(f2, frame) {
				t.Fatalf("frame alone: %d, %v", n2, err2)
			}
			if _, n2, err2 := c.Decode(data[:n-1]); n2 != 0 || err2 != nil {
				t.Fatalf("proper prefix: %d, %v", n2, err2)
			}
		}
		if err != nil && (n != 0 || frame != nil || !errors.Is(err, protocol.ErrMalformed) && !errors.Is(err, protocol.ErrFrameTooLarge)) {
			t.Fatalf("error %v with n = %d, frame %x", err, n, frame)
		}
	})
}

// FuzzParse checks that Parse never panics, that every error is typed, and
// that whatever it accepts is canonical: writing the message back gives the
// same bytes, and its fields alias the frame.
func FuzzParse(f *testing.F) {
	for _, g := range goldens {
		f.Add(mustHex(f, g.hex))
	}
	f.Add(AppendReject(nil, 1, StatusUnavailable, time.Second, "busy"))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var m Message
		err := Parse(frame, &m)
		if err != nil {
			if !errors.Is(err, protocol.ErrMalformed) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate refuses: %v", err)
		}
		for _, b := range [][]byte{m.Method, m.Tenant, m.IdempotencyKey, m.Payload} {
			if !within(b, frame) || (len(b) > 0 && cap(b) != len(b)) {
				t.Fatalf("field does not alias the frame with clipped capacity")
			}
		}
		out, err := m.Append(nil)
		if err != nil || !bytes.Equal(out, frame) {
			t.Fatalf("re-encode: %v\n%x\n%x", err, out, frame)
		}
		if id, ok := PeekRequestID(frame); !ok || id != m.RequestID {
			t.Fatalf("PeekRequestID = %d, %v; want %d", id, ok, m.RequestID)
		}
		if m.Size() != len(frame) {
			t.Fatalf("Size = %d; frame %d", m.Size(), len(frame))
		}
	})
}

// FuzzRoundTrip builds messages from arbitrary fields: Append either refuses
// (leaving dst alone, with Validate's error) or writes a frame that Decode
// returns whole and Parse turns back into the same message.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(1), uint16(6), uint64(7), uint8(0), uint8(1), int64(250), uint32(0), []byte("PUT"), []byte("acme"), []byte("k1"), []byte("a=1"))
	f.Add(uint8(3), uint16(8), uint64(7), uint8(3), uint8(0), int64(0), uint32(300), []byte(""), []byte(""), []byte(""), []byte("tenant"))
	f.Add(uint8(2), uint16(32), uint64(1<<63), uint8(2), uint8(0), int64(0), uint32(0), []byte(""), []byte(""), []byte(""), []byte("stored"))
	f.Add(uint8(1), uint16(1), uint64(0), uint8(0), uint8(3), int64(-5), uint32(0), []byte("GET"), []byte(""), []byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, typ uint8, flags uint16, id uint64, status, prio uint8, deadline int64, retry uint32,
		method, tenant, key, payload []byte) {
		m := Message{Type: Type(typ), Flags: Flags(flags), RequestID: id, Status: Status(status), Priority: Priority(prio),
			DeadlineMillis: deadline, RetryAfterMillis: retry, Method: method, Tenant: tenant, IdempotencyKey: key, Payload: payload}
		prefix := []byte("prefix")
		out, err := m.Append(prefix)
		if verr := m.Validate(); verr != err {
			t.Fatalf("Append err %v != Validate err %v", err, verr)
		}
		if err != nil {
			if !errors.Is(err, protocol.ErrMalformed) || !bytes.Equal(out, prefix) {
				t.Fatalf("refused with %v, dst %q", err, out)
			}
			return
		}
		if !bytes.HasPrefix(out, prefix) || len(out)-len(prefix) != m.Size() {
			t.Fatalf("Append wrote %d bytes after the prefix; Size %d", len(out)-len(prefix), m.Size())
		}
		wire := out[len(prefix):]
		frame, n, err := Codec{MaxFrameBytes: m.Size()}.Decode(wire)
		if err != nil || n != len(wire) {
			t.Fatalf("Decode: %d, %v", n, err)
		}
		if _, _, err := (Codec{MaxFrameBytes: max(m.Size()-1, FixedHeaderBytes)}).Decode(wire); m.Size() > FixedHeaderBytes && !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("limit one below the size: %v", err)
		}
		var got Message
		if err := Parse(frame, &got); err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if !equalMessages(&got, &m) {
			t.Fatalf("round trip:\n%+v\n%+v", got, m)
		}
	})
}

// FuzzAppendReject checks that any reject the helper writes parses, carries
// the id, a failure status, the retry hint rounded up, and a prefix of the
// reason that is still valid UTF-8 when the reason was.
func FuzzAppendReject(f *testing.F) {
	f.Add(uint64(7), uint8(3), int64(300*time.Millisecond), "tenant")
	f.Add(uint64(0), uint8(0), int64(-1), "")
	f.Add(uint64(1), uint8(4), int64(1), string(bytes.Repeat([]byte("é"), 200)))
	f.Fuzz(func(t *testing.T, id uint64, status uint8, retryNanos int64, reason string) {
		frame := AppendReject(nil, id, Status(status), time.Duration(retryNanos), reason)
		var m Message
		if err := Parse(frame, &m); err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if m.Type != TypeReject || m.RequestID != id || m.Status == StatusOK {
			t.Fatalf("got %v id %d status %v", m.Type, m.RequestID, m.Status)
		}
		if Status(status) != StatusOK && Status(status) <= maxStatus && m.Status != Status(status) {
			t.Fatalf("status %v; want %v", m.Status, Status(status))
		}
		d, ok := m.RetryAfter()
		if ok != (retryNanos > 0) || (ok && d < min(time.Duration(retryNanos), MaxRetryAfterMillis*time.Millisecond)) {
			t.Fatalf("retry-after %v, %v for %d ns", d, ok, retryNanos)
		}
		if !bytes.HasPrefix([]byte(reason), m.Payload) || len(m.Payload) > MaxReasonBytes ||
			(len(reason) <= MaxReasonBytes && len(m.Payload) != len(reason)) ||
			(len(reason) > MaxReasonBytes && len(m.Payload) < MaxReasonBytes-3) {
			t.Fatalf("reason of %d bytes became %d", len(reason), len(m.Payload))
		}
		if utf8.ValidString(reason) && !utf8.Valid(m.Payload) {
			t.Fatalf("truncation split a character")
		}
	})
}
