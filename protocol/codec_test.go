package protocol

import (
	"bytes"
	"errors"
	"testing"
)

// decodeAll decodes frames from buf until it needs more input or fails.
func decodeAll(c Codec, buf []byte) (frames [][]byte, rest []byte, err error) {
	for {
		frame, n, err := c.Decode(buf)
		if err != nil {
			return frames, buf, err
		}
		if n == 0 {
			return frames, buf, nil
		}
		frames = append(frames, frame)
		buf = buf[n:]
	}
}

func TestRaw(t *testing.T) {
	tests := []struct {
		in    string
		frame string
		n     int
	}{
		{"", "", 0},
		{"a", "a", 1},
		{"hello\nworld", "hello\nworld", 11},
	}
	for i, tt := range tests {
		frame, n, err := Raw{}.Decode([]byte(tt.in))
		if err != nil || n != tt.n || string(frame) != tt.frame {
			t.Errorf("%d: Decode(%q) = %q, %d, %v; want %q, %d, nil", i, tt.in, frame, n, err, tt.frame, tt.n)
		}
		if n > 0 && cap(frame) != len(frame) {
			t.Errorf("%d: frame capacity %d not clipped to %d", i, cap(frame), len(frame))
		}
		if got := (Raw{}).AppendEncode([]byte("x"), []byte(tt.in)); string(got) != "x"+tt.in {
			t.Errorf("%d: AppendEncode = %q", i, got)
		}
	}
}

func TestByName(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		want    Codec
		wantErr error
	}{
		{"raw", 0, Raw{}, nil},
		{"length", 0, LengthPrefixed{Header: Fixed32}, nil},
		{"length", 512, LengthPrefixed{Header: Fixed32, MaxFrameBytes: 512}, nil},
		{"varint", 77, LengthPrefixed{Header: Uvarint, MaxFrameBytes: 77}, nil},
		{"line", 9, Delimited{Delim: '\n', MaxFrameBytes: 9}, nil},
		{"Line", 0, nil, ErrUnknownCodec},
		{"", 0, nil, ErrUnknownCodec},
		{"resp", 0, nil, ErrUnknownCodec},
		{"length", -1, nil, ErrInvalidConfig},
	}
	for i, tt := range tests {
		got, err := ByName(tt.name, tt.max)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: ByName(%q, %d) err = %v; want %v", i, tt.name, tt.max, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("%d: ByName(%q, %d) = %#v; want %#v", i, tt.name, tt.max, got, tt.want)
		}
	}
	for i, name := range Names() {
		if _, err := ByName(name, 0); err != nil {
			t.Errorf("%d: Names() lists %q but ByName fails: %v", i, name, err)
		}
	}
}

// TestErrorsArePrefixed checks every sentinel and wrapped error message.
func TestErrorsArePrefixed(t *testing.T) {
	errs := []error{ErrFrameTooLarge, ErrMalformed, ErrUnknownCodec, ErrInvalidConfig,
		errFixed32TooLarge, errUvarintTooLarge, errUvarintOverflow, errUvarintPadded,
		errLineTooLong, errFrameHasDelim, errUnknownHeader, errNegativeMax,
		errFieldTooLarge, errFieldNegative, errFieldBelowZero, errFieldOverflow, errFieldShortFrame,
		errFieldSize, errFieldOffset, errFieldAdjustment}
	for i, err := range errs {
		if !bytes.HasPrefix([]byte(err.Error()), []byte("sluice: ")) {
			t.Errorf("%d: %q lacks the sluice: prefix", i, err)
		}
	}
}

// TestDecodeAllocs proves Decode and AppendEncode (into a buffer with room)
// allocate nothing, for every codec in this package, including error paths.
func TestDecodeAllocs(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 300)
	codecs := []Codec{
		Raw{},
		LengthPrefixed{Header: Fixed32, MaxFrameBytes: 1000},
		LengthPrefixed{Header: Uvarint, MaxFrameBytes: 1000},
		Delimited{MaxFrameBytes: 1000},
	}
	bad := [][]byte{
		{0xff, 0xff, 0xff, 0xff},
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
		{0x81, 0x00},
		bytes.Repeat([]byte("x"), 1002),
	}
	dst := make([]byte, 0, 4096)
	for i, c := range codecs {
		wire := c.AppendEncode(nil, payload)
		allocs := testing.AllocsPerRun(200, func() {
			frame, n, err := c.Decode(wire)
			if err != nil || n != len(wire) || len(frame) != len(payload) {
				t.Fatalf("%d: Decode = %d bytes, %d, %v", i, len(frame), n, err)
			}
			dst = c.AppendEncode(dst[:0], frame)
			for _, b := range bad {
				c.Decode(b)
			}
		})
		if allocs != 0 {
			t.Errorf("%d: %T: %v allocs per Decode+AppendEncode; want 0", i, c, allocs)
		}
	}
}
