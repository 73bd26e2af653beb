package redisstore

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicenet/sluice/admission"
)

// The record stored under an idempotency key:
//
//	offset  size  field
//	0       1     state: 'P' in progress, 'D' done
//	1       8     claim token, big-endian (never 0)
//	9       32    fingerprint (SHA-256)
//	41      2     status, big-endian        (done only)
//	43      n     response, n <= MaxResponseBytes (done only)
//
// The Lua scripts compare bytes 0..8 (state and token) and nothing else, so
// the layout of the rest can grow behind a new state byte.
const (
	stateInProgress = 'P'
	stateDone       = 'D'
	headerLen       = 1 + 8 + 32
	doneHeaderLen   = headerLen + 2
)

type record struct {
	done     bool
	token    uint64
	fp       admission.Fingerprint
	status   uint16
	response []byte // aliases the decoded input
}

// appendRecord appends r's encoding to dst.
func appendRecord(dst []byte, r record) []byte {
	st := byte(stateInProgress)
	if r.done {
		st = stateDone
	}
	dst = append(dst, st)
	dst = binary.BigEndian.AppendUint64(dst, r.token)
	dst = append(dst, r.fp[:]...)
	if r.done {
		dst = binary.BigEndian.AppendUint16(dst, r.status)
		dst = append(dst, r.response...)
	}
	return dst
}

// decodeRecord parses a record; the response aliases b.
func decodeRecord(b []byte) (record, error) {
	var r record
	if len(b) < headerLen {
		return r, fmt.Errorf("%w: %d bytes", ErrCorruptRecord, len(b))
	}
	switch b[0] {
	case stateInProgress:
		if len(b) != headerLen {
			return r, fmt.Errorf("%w: in-progress record of %d bytes", ErrCorruptRecord, len(b))
		}
	case stateDone:
		if len(b) < doneHeaderLen {
			return r, fmt.Errorf("%w: done record of %d bytes", ErrCorruptRecord, len(b))
		}
		r.done = true
		r.status = binary.BigEndian.Uint16(b[headerLen:])
		r.response = b[doneHeaderLen:]
	default:
		return r, fmt.Errorf("%w: state byte %#x", ErrCorruptRecord, b[0])
	}
	r.token = binary.BigEndian.Uint64(b[1:])
	if r.token == 0 {
		return r, fmt.Errorf("%w: zero token", ErrCorruptRecord)
	}
	copy(r.fp[:], b[9:headerLen])
	return r, nil
}
