package kv

import "encoding/binary"

// Envelope payloads of the kv methods:
//
//	GET, DELETE, INCR:  the key, the whole payload
//	PUT:                uvarint(len(key)) key value
//
// AppendPut and DecodePut write and read the PUT form.

// AppendPut appends the payload of a PUT of value under key to dst.
func AppendPut(dst, key, value []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, value...)
}

// DecodePut splits a PUT payload into key and value, which alias p. It
// fails with ErrBadPayload when the length prefix is malformed, longer
// than the payload, or announces an empty key.
func DecodePut(p []byte) (key, value []byte, err error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > uint64(len(p)-k) {
		return nil, nil, ErrBadPayload
	}
	p = p[k:]
	return p[:n:n], p[n:], nil
}
