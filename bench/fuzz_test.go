package bench

import (
	"testing"
)

// FuzzNextResponse: the response decoder never panics, never consumes more
// than its input, returns a payload inside the input, and decodes what
// appendRequest encodes.
func FuzzNextResponse(f *testing.F) {
	f.Add(uint8(1), []byte("\x00\x00\x00\x03abc"))
	f.Add(uint8(2), []byte("0000000000000001xx\nrest"))
	f.Add(uint8(1), []byte("\xff\xff\xff\xff"))
	f.Add(uint8(2), []byte(""))
	f.Fuzz(func(t *testing.T, codec uint8, buf []byte) {
		c := Codec(codec%2 + 1) // length or line
		payload, n, err := nextResponse(c, buf)
		if err != nil {
			if n != 0 || payload != nil {
				t.Fatalf("error with n %d", n)
			}
			return
		}
		if n < 0 || n > len(buf) {
			t.Fatalf("consumed %d of %d", n, len(buf))
		}
		if n > 0 && c.WireBytes(len(payload)) != n {
			t.Fatalf("payload %d bytes from %d wire bytes", len(payload), n)
		}
		// Round trip: a request built from the payload's size decodes back.
		if len(payload) <= 4096 {
			req := appendRequest(nil, c, 42, len(payload)+16, newFiller(len(payload)+16))
			p2, n2, err := nextResponse(c, req)
			if err != nil || n2 != len(req) || checkResponse(c, p2, 42, len(payload)+16, newFiller(len(payload)+16)) != nil {
				t.Fatalf("round trip: n %d of %d, err %v", n2, len(req), err)
			}
		}
	})
}
