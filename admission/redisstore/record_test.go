package redisstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluicenet/sluice/admission"
)

func TestRecordRoundTrip(t *testing.T) {
	for i, r := range []record{
		{token: 1, fp: fp("a")},
		{done: true, token: 1<<64 - 1, fp: fp("b"), status: 201, response: []byte("created")},
		{done: true, token: 7, status: 0xffff},
	} {
		b := appendRecord(nil, r)
		got, err := decodeRecord(b)
		if err != nil || got.done != r.done || got.token != r.token || got.fp != r.fp || got.status != r.status || !bytes.Equal(got.response, r.response) {
			t.Errorf("%d: %+v -> %x -> %+v %v", i, r, b, got, err)
		}
	}
}

func TestRecordCorrupt(t *testing.T) {
	good := appendRecord(nil, record{token: 1, fp: fp("a")})
	done := appendRecord(nil, record{done: true, token: 1})
	for i, b := range [][]byte{
		nil,
		good[:headerLen-1],
		append(append([]byte(nil), good...), 'x'), // in progress with a tail
		done[:doneHeaderLen-1],
		append([]byte{'X'}, good[1:]...),
		appendRecord(nil, record{token: 0}),
	} {
		if _, err := decodeRecord(b); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%d: %x: err %v", i, b, err)
		}
	}
}

// FuzzDecodeRecord: the decoder never panics, accepts only what
// appendRecord can produce, and re-encodes what it accepts byte for byte.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, record{token: 1, fp: admission.FingerprintOf(nil, []byte("x"))}))
	f.Add(appendRecord(nil, record{done: true, token: 42, status: 200, response: []byte("hello")}))
	f.Add([]byte("D"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v is not ErrCorruptRecord", err)
			}
			return
		}
		if again := appendRecord(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("round trip: %x -> %+v -> %x", b, r, again)
		}
	})
}
