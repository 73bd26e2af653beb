package kv

import (
	"errors"
	"testing"
)

func TestPutPayload(t *testing.T) {
	p := AppendPut(nil, []byte("key"), []byte("value"))
	k, v, err := DecodePut(p)
	if err != nil || string(k) != "key" || string(v) != "value" {
		t.Fatalf("round trip: %q %q %v", k, v, err)
	}
	for _, bad := range [][]byte{nil, {0}, {5, 'a'}, {0x80}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, _, err := DecodePut(bad); !errors.Is(err, ErrBadPayload) {
			t.Errorf("DecodePut(%x): %v, want ErrBadPayload", bad, err)
		}
	}
	k, v, err = DecodePut(AppendPut(nil, []byte("k"), nil))
	if err != nil || string(k) != "k" || len(v) != 0 {
		t.Fatalf("empty value: %q %q %v", k, v, err)
	}
}
