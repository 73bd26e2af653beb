package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/big"
	"testing"
	"unsafe"
)

// checkDecodeShape asserts what every Decode result must satisfy, whatever
// the codec: n within the input, nothing returned with an error or with
// n == 0, a typed error, and a frame that aliases the consumed bytes.
func checkDecodeShape(t *testing.T, data, frame []byte, n int, err error) {
	t.Helper()
	if n < 0 || n > len(data) {
		t.Fatalf("n = %d outside [0, %d]", n, len(data))
	}
	if err != nil {
		if !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("untyped error %v", err)
		}
		if n != 0 || frame != nil {
			t.Fatalf("error %v with n = %d, frame = %q", err, n, frame)
		}
		return
	}
	if n == 0 {
		if frame != nil {
			t.Fatalf("need-more result with frame %q", frame)
		}
		return
	}
	if len(frame) > n {
		t.Fatalf("frame of %d bytes from %d consumed", len(frame), n)
	}
	if len(frame) > 0 && !sameArray(frame, data) {
		t.Fatalf("frame does not alias the input")
	}
}

// sameArray reports whether frame lies inside data's backing array.
func sameArray(frame, data []byte) bool {
	f := uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	d := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return f >= d && f+uintptr(len(frame)) <= d+uintptr(len(data))
}

func FuzzLengthFixed32(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c'}, uint16(16))
	f.Add([]byte{0, 0, 1, 45}, uint16(300))
	f.Add([]byte{0xff, 0xff}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		c := LengthPrefixed{Header: Fixed32, MaxFrameBytes: int(max)}
		limit := uint64(maxFrame(int(max)))
		frame, n, err := c.Decode(data)
		checkDecodeShape(t, data, frame, n, err)

		// A plain model: pad a short header with zero bytes (the smallest
		// value it can still become) and compare.
		var hdr [4]byte
		copy(hdr[:], data)
		size := uint64(binary.BigEndian.Uint32(hdr[:]))
		switch {
		case size > limit:
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("header %x (size %d > %d): err = %v", hdr, size, limit, err)
			}
		case len(data) < 4 || uint64(len(data)-4) < size:
			if n != 0 || err != nil {
				t.Fatalf("incomplete frame: n = %d, err = %v", n, err)
			}
		default:
			if err != nil || uint64(n) != 4+size || !bytes.Equal(frame, data[4:n]) {
				t.Fatalf("complete frame of %d: got %d bytes, n = %d, err = %v", size, len(frame), n, err)
			}
			if enc := c.AppendEncode(nil, frame); !bytes.Equal(enc, data[:n]) {
				t.Fatalf("re-encode %x != %x", enc, data[:n])
			}
			if _, pn, perr := c.Decode(data[:n-1]); pn != 0 || perr != nil {
				t.Fatalf("proper prefix of a valid frame: n = %d, err = %v", pn, perr)
			}
		}
	})
}

func FuzzLengthUvarint(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c'}, uint16(16))
	f.Add([]byte{0xac, 0x02}, uint16(300))
	f.Add([]byte{0x81, 0x00}, uint16(0))
	f.Add(bytes.Repeat([]byte{0xff}, 11), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		c := LengthPrefixed{Header: Uvarint, MaxFrameBytes: int(max)}
		limit := uint64(maxFrame(int(max)))
		frame, n, err := c.Decode(data)
		checkDecodeShape(t, data, frame, n, err)

		// The model is encoding/binary's Uvarint plus the minimality rule.
		v, k := binary.Uvarint(data)
		switch {
		case k < 0:
			if err == nil {
				t.Fatalf("binary.Uvarint overflows (%d) but Decode accepted: n = %d", k, n)
			}
		case k == 0:
			if errors.Is(err, ErrMalformed) {
				t.Fatalf("incomplete varint %x called malformed: %v", data, err)
			}
			if errors.Is(err, ErrFrameTooLarge) {
				// Early rejection must be justified: the smallest minimal
				// completion (one more byte, 0x01) is already too large.
				least, _ := binary.Uvarint(append(append([]byte(nil), data...), 1))
				if least <= limit && len(data) < binary.MaxVarintLen64-1 {
					t.Fatalf("early reject of %x but %d fits in %d", data, least, limit)
				}
			}
			if err == nil && n != 0 {
				t.Fatalf("incomplete varint consumed %d", n)
			}
		case k > 1 && data[k-1] == 0:
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("non-minimal varint %x accepted: err = %v", data[:k], err)
			}
		case v > limit:
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("size %d > %d: err = %v", v, limit, err)
			}
		case uint64(len(data)-k) < v:
			if n != 0 || err != nil {
				t.Fatalf("incomplete frame: n = %d, err = %v", n, err)
			}
		default:
			if err != nil || n != k+int(v) || !bytes.Equal(frame, data[k:n]) {
				t.Fatalf("complete frame of %d: got %d bytes, n = %d, err = %v", v, len(frame), n, err)
			}
			if enc := c.AppendEncode(nil, frame); !bytes.Equal(enc, data[:n]) {
				t.Fatalf("re-encode %x != %x", enc, data[:n])
			}
			for p := 0; p < n && p <= k+1; p++ {
				if _, pn, perr := c.Decode(data[:p]); pn != 0 || perr != nil {
					t.Fatalf("prefix %d of a valid frame: n = %d, err = %v", p, pn, perr)
				}
			}
			if _, pn, perr := c.Decode(data[:n-1]); pn != 0 || perr != nil {
				t.Fatalf("proper prefix of a valid frame: n = %d, err = %v", pn, perr)
			}
		}
	})
}

func FuzzDelimited(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), byte(0), uint16(0))
	f.Add([]byte("abcd"), byte(0), uint16(3))
	f.Add([]byte("a;b"), byte(';'), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, delim byte, max uint16) {
		c := Delimited{Delim: delim, MaxFrameBytes: int(max)}
		d := delim
		if d == 0 {
			d = '\n'
		}
		limit := maxFrame(int(max))
		frame, n, err := c.Decode(data)
		checkDecodeShape(t, data, frame, n, err)

		i := bytes.IndexByte(data, d)
		switch {
		case i >= 0 && i <= limit:
			if err != nil || n != i+1 || !bytes.Equal(frame, data[:i]) {
				t.Fatalf("line of %d: got %q, n = %d, err = %v", i, frame, n, err)
			}
			if enc := c.AppendEncode(nil, frame); !bytes.Equal(enc, data[:n]) {
				t.Fatalf("re-encode %q != %q", enc, data[:n])
			}
		case len(data) > limit:
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("%d bytes without a delimiter within %d: err = %v", len(data), limit+1, err)
			}
		default:
			if n != 0 || err != nil {
				t.Fatalf("incomplete line: n = %d, err = %v", n, err)
			}
		}
	})
}

// FuzzRoundTrip encodes two frames with a codec chosen by kind and decodes
// them back; frames the codec must refuse are checked to be refused on both
// ends.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("first"), []byte("second"), uint8(0), uint16(0))
	f.Add([]byte("first"), []byte(""), uint8(1), uint16(5))
	f.Add([]byte("toolong"), []byte("x"), uint8(2), uint16(3))
	f.Add([]byte("a\nb"), []byte("c"), uint8(3), uint16(0))
	f.Fuzz(func(t *testing.T, a, b []byte, kind uint8, max uint16) {
		limit := maxFrame(int(max))
		var c Codec
		var appendFrame func(dst, frame []byte) ([]byte, error)
		switch kind % 4 {
		case 0:
			raw := append(append([]byte(nil), a...), b...)
			frame, n, err := Raw{}.Decode(Raw{}.AppendEncode(nil, raw))
			if err != nil || n != len(raw) || !bytes.Equal(frame, raw) {
				t.Fatalf("raw: %q, %d, %v", frame, n, err)
			}
			return
		case 1:
			lp := LengthPrefixed{Header: Fixed32, MaxFrameBytes: int(max)}
			c, appendFrame = lp, lp.AppendFrame
		case 2:
			lp := LengthPrefixed{Header: Uvarint, MaxFrameBytes: int(max)}
			c, appendFrame = lp, lp.AppendFrame
		case 3:
			dl := Delimited{MaxFrameBytes: int(max)}
			c, appendFrame = dl, dl.AppendFrame
		}
		var wire []byte
		for _, m := range [][]byte{a, b} {
			var err error
			wire, err = appendFrame(wire, m)
			if err == nil {
				continue
			}
			if errors.Is(err, ErrFrameTooLarge) {
				if len(m) <= limit {
					t.Fatalf("AppendFrame refused %d bytes with limit %d", len(m), limit)
				}
				// The receiving side must refuse it too (unless a delimiter
				// inside the frame splits it into lines that fit).
				split := kind%4 == 3 && bytes.IndexByte(m, '\n') >= 0
				if _, _, derr := c.Decode(c.AppendEncode(nil, m)); !split && !errors.Is(derr, ErrFrameTooLarge) {
					t.Fatalf("oversize frame of %d (limit %d) decoded: %v", len(m), limit, derr)
				}
			} else if !errors.Is(err, ErrMalformed) || bytes.IndexByte(m, '\n') < 0 {
				t.Fatalf("AppendFrame(%q): %v", m, err)
			}
			return
		}
		frames, rest, err := decodeAll(c, wire)
		if err != nil || len(rest) != 0 || len(frames) != 2 || !bytes.Equal(frames[0], a) || !bytes.Equal(frames[1], b) {
			t.Fatalf("round trip of %q, %q: frames %q, rest %q, err %v", a, b, frames, rest, err)
		}
	})
}

// lengthFieldSizes maps the fuzzer's size byte to a LengthField.Size (0
// stands for the default, 4).
var lengthFieldSizes = [...]int{0, 1, 2, 4, 8}

// lengthFieldModel is the reference model of LengthField.Decode, written
// the plain way: encoding/binary reads the field and math/big does the
// arithmetic, so no size can overflow. It returns the frame's bounds in
// data, or need (more input), or the error class.
func lengthFieldModel(c LengthField, data []byte) (start, end int, need bool, err error) {
	size := c.Size
	if size == 0 {
		size = 4
	}
	hdr := c.Offset + size
	if len(data) < hdr {
		return 0, 0, true, nil
	}
	f := data[c.Offset:hdr]
	var order binary.ByteOrder = binary.BigEndian
	if c.LittleEndian {
		order = binary.LittleEndian
	}
	var v uint64
	switch size {
	case 1:
		v = uint64(f[0])
	case 2:
		v = uint64(order.Uint16(f))
	case 4:
		v = uint64(order.Uint32(f))
	case 8:
		v = order.Uint64(f)
	}
	body := new(big.Int).SetUint64(v)
	body.Add(body, big.NewInt(int64(c.Adjustment)))
	if c.IncludesHeader {
		body.Sub(body, big.NewInt(int64(hdr)))
	}
	if body.Sign() < 0 {
		return 0, 0, false, ErrMalformed
	}
	frame := new(big.Int).Set(body)
	if c.KeepHeader {
		frame.Add(frame, big.NewInt(int64(hdr)))
	}
	if frame.Cmp(big.NewInt(int64(maxFrame(c.MaxFrameBytes)))) > 0 {
		return 0, 0, false, ErrFrameTooLarge
	}
	if big.NewInt(int64(len(data)-hdr)).Cmp(body) < 0 {
		return 0, 0, true, nil
	}
	end = hdr + int(body.Int64())
	if !c.KeepHeader {
		start = hdr
	}
	return start, end, false, nil
}

// checkLengthFieldEncode encodes frame with c.AppendFrame and, when c
// accepts it, decodes it back: one frame, all of the wire, the same bytes
// (with KeepHeader, the frame's own prefix and body around the length
// field c wrote). A refusal must be typed.
func checkLengthFieldEncode(t *testing.T, c LengthField, frame []byte) {
	t.Helper()
	wire, err := c.AppendFrame(nil, frame)
	if err != nil {
		if !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("%+v: AppendFrame(%x): untyped error %v", c, frame, err)
		}
		return
	}
	got, n, derr := c.Decode(wire)
	want := frame
	if c.KeepHeader {
		hdr := c.HeaderBytes()
		if !bytes.Equal(wire[:c.Offset], frame[:c.Offset]) || !bytes.Equal(wire[hdr:], frame[hdr:]) {
			t.Fatalf("%+v: AppendFrame(%x) = %x changed more than the length field", c, frame, wire)
		}
		want = wire
	}
	if derr != nil || n != len(wire) || !bytes.Equal(got, want) {
		t.Fatalf("%+v: Decode(AppendFrame(%x) = %x) = %x, %d, %v", c, frame, wire, got, n, derr)
	}
}

// FuzzLengthField compares LengthField.Decode with lengthFieldModel over
// every configuration the fuzzer picks, and checks that a decoded frame
// re-encodes to its wire bytes, that its proper prefixes need more, and
// that data encoded as a frame decodes back.
func FuzzLengthField(f *testing.F) {
	f.Add([]byte{0, 2, 'h', 'i'}, uint8(0), uint8(2), false, false, false, int16(0), uint16(0))
	f.Add([]byte{7, 5, 0, 'a', 'b', 'c'}, uint8(1), uint8(2), true, true, true, int16(0), uint16(16))
	f.Add([]byte{1, 'a', 'c', 'k'}, uint8(0), uint8(1), false, false, false, int16(2), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, offset, size uint8, little, incl, keep bool, adj int16, max uint16) {
		c := LengthField{Offset: int(offset % 16), Size: lengthFieldSizes[int(size)%len(lengthFieldSizes)],
			LittleEndian: little, IncludesHeader: incl, KeepHeader: keep, Adjustment: int(adj), MaxFrameBytes: int(max)}
		checkLengthFieldEncode(t, c, data)
		frame, n, err := c.Decode(data)
		checkDecodeShape(t, data, frame, n, err)

		start, end, need, merr := lengthFieldModel(c, data)
		switch {
		case merr != nil:
			if !errors.Is(err, merr) {
				t.Fatalf("%+v on %x: err = %v; model says %v", c, data, err, merr)
			}
		case need:
			if n != 0 || err != nil {
				t.Fatalf("%+v on %x: n = %d, err = %v; model needs more", c, data, n, err)
			}
		default:
			if err != nil || n != end || !bytes.Equal(frame, data[start:end]) {
				t.Fatalf("%+v on %x: %x, n = %d, err = %v; model [%d:%d]", c, data, frame, n, err, start, end)
			}
			if _, pn, perr := c.Decode(data[:n-1]); n > 0 && (pn != 0 || perr != nil) {
				t.Fatalf("proper prefix of a valid frame: n = %d, err = %v", pn, perr)
			}
			enc, eerr := c.AppendFrame(nil, frame)
			wire := data[:n]
			if !c.KeepHeader {
				// The bytes before the field are not in the frame: encoded as zeros.
				if eerr == nil && !bytes.Equal(enc[:c.Offset], make([]byte, c.Offset)) {
					t.Fatalf("%+v: prefix encoded as %x", c, enc[:c.Offset])
				}
				enc, wire = enc[min(c.Offset, len(enc)):], wire[c.Offset:]
			}
			if eerr != nil || !bytes.Equal(enc, wire) {
				t.Fatalf("%+v: re-encode %x (%v) != %x", c, enc, eerr, wire)
			}
		}
	})
}
