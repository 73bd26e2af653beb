package protocol

import (
	"errors"
	"testing"
)

func TestDelimitedDecode(t *testing.T) {
	tests := []struct {
		c       Delimited
		in      string
		frame   string
		n       int
		wantErr error
	}{
		{Delimited{}, "", "", 0, nil},
		{Delimited{}, "abc", "", 0, nil},
		{Delimited{}, "\n", "", 1, nil},
		{Delimited{}, "abc\n", "abc", 4, nil},
		{Delimited{}, "abc\r\n", "abc\r", 5, nil},
		{Delimited{}, "a\nb\n", "a", 2, nil},
		{Delimited{Delim: ';'}, "a\nb;c", "a\nb", 4, nil},
		{Delimited{MaxFrameBytes: 3}, "abc\n", "abc", 4, nil},                  // exactly the max
		{Delimited{MaxFrameBytes: 3}, "abc", "", 0, nil},                       // may still end at byte 4
		{Delimited{MaxFrameBytes: 3}, "abcd", "", 0, ErrFrameTooLarge},         // max+1 bytes, no delimiter
		{Delimited{MaxFrameBytes: 3}, "abcd\n", "", 0, ErrFrameTooLarge},       // delimiter too late
		{Delimited{MaxFrameBytes: 3}, "ab\ncdefgh", "ab", 3, nil},              // the long tail is the next frame's problem
		{Delimited{MaxFrameBytes: 1}, "\n", "", 1, nil},                        //
		{Delimited{MaxFrameBytes: -1}, "a\n", "", 0, ErrInvalidConfig},         //
		{Delimited{Delim: 0xff, MaxFrameBytes: 2}, "\x00\xff", "\x00", 2, nil}, //
	}
	for i, tt := range tests {
		frame, n, err := tt.c.Decode([]byte(tt.in))
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: Decode(%q) err = %v; want %v", i, tt.in, err, tt.wantErr)
			continue
		}
		if n != tt.n || string(frame) != tt.frame {
			t.Errorf("%d: Decode(%q) = %q, %d; want %q, %d", i, tt.in, frame, n, tt.frame, tt.n)
		}
		if n > 0 && cap(frame) != len(frame) {
			t.Errorf("%d: frame capacity %d not clipped to %d", i, cap(frame), len(frame))
		}
	}
}

func TestDelimitedEncode(t *testing.T) {
	tests := []struct {
		c       Delimited
		frame   string
		want    string
		wantErr error
	}{
		{Delimited{}, "", "\n", nil},
		{Delimited{}, "abc", "abc\n", nil},
		{Delimited{Delim: ';'}, "abc", "abc;", nil},
		{Delimited{}, "a\nb", "", ErrMalformed},
		{Delimited{MaxFrameBytes: 2}, "abc", "", ErrFrameTooLarge},
		{Delimited{MaxFrameBytes: -2}, "abc", "", ErrInvalidConfig},
	}
	for i, tt := range tests {
		got, err := tt.c.AppendFrame([]byte("<"), []byte(tt.frame))
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%d: AppendFrame(%q) err = %v; want %v", i, tt.frame, err, tt.wantErr)
			continue
		}
		if err != nil {
			if string(got) != "<" {
				t.Errorf("%d: dst changed on error: %q", i, got)
			}
			continue
		}
		if string(got) != "<"+tt.want {
			t.Errorf("%d: AppendFrame(%q) = %q; want %q", i, tt.frame, got, "<"+tt.want)
		}
		if enc := tt.c.AppendEncode(nil, []byte(tt.frame)); string(enc) != tt.want {
			t.Errorf("%d: AppendEncode(%q) = %q; want %q", i, tt.frame, enc, tt.want)
		}
	}
}
