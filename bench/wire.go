package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The generator frames its requests and checks its responses with its own
// small encoder and decoder rather than with package protocol: the load
// generator is the oracle for the servers under test, so it must not share the
// code it is checking.

// Codec names the wire format the generator speaks. Its flag names raw,
// length, line and http are those of cmd/echo's -codec flag; resp speaks to
// redis-server and cmd/kv. The zero value is CodecRaw.
type Codec uint8

// The codecs.
const (
	// CodecRaw sends opaque payload bytes; the server echoes bytes and may split
	// or coalesce them, so the generator accounts for bytes, not frames.
	CodecRaw Codec = iota
	// CodecLength prefixes each payload with its length as 4 bytes big-endian.
	CodecLength
	// CodecLine terminates each payload with '\n'.
	CodecLine
	// CodecRESP sends each payload as a RESP2 ECHO command
	// ("*2\r\n$4\r\nECHO\r\n$N\r\n...\r\n", what redis-server and sluice's kv
	// answer) and expects it back as a bulk string. An error reply that is a
	// refusal ("-BUSY ...", sluice's "-ERR sluice: too many requests (reason)")
	// counts as a reject; any other error reply fails the connection.
	CodecRESP
	// CodecHTTP sends each payload as the body of an HTTP/1.1 keep-alive
	// "POST /echo" (what sluice's cmd/echo -codec http answers) and expects
	// a 2xx response whose Content-Length body is the payload. 429 and 503
	// count as rejects; chunked responses and other statuses fail the
	// connection.
	CodecHTTP
	// CodecLength1, CodecLength2 and CodecLength8 prefix each payload with
	// its length as 1, 2 or 8 bytes big-endian; CodecLength2LE,
	// CodecLength4LE and CodecLength8LE as 2, 4 or 8 bytes little-endian. A
	// 1-byte field carries payloads up to 255 bytes, a 2-byte one up to
	// 65,535.
	CodecLength1
	CodecLength2
	CodecLength8
	CodecLength2LE
	CodecLength4LE
	CodecLength8LE
	numCodecs
)

// codecNames are the codecs' flag names, by value.
var codecNames = [numCodecs]string{"raw", "length", "line", "resp", "http",
	"length1", "length2", "length8", "length2le", "length4le", "length8le"}

// lengthHeaderBytes is the size of the CodecLength header.
const lengthHeaderBytes = 4

// byteOrder reads and appends integers in one byte order
// (binary.BigEndian, binary.LittleEndian).
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// lengthField returns the size in bytes and the byte order of a
// length-prefix codec's header; fieldBytes is 0 for the other codecs.
func (c Codec) lengthField() (fieldBytes int, order byteOrder) {
	switch c {
	case CodecLength:
		return lengthHeaderBytes, binary.BigEndian
	case CodecLength1:
		return 1, binary.BigEndian
	case CodecLength2:
		return 2, binary.BigEndian
	case CodecLength8:
		return 8, binary.BigEndian
	case CodecLength2LE:
		return 2, binary.LittleEndian
	case CodecLength4LE:
		return 4, binary.LittleEndian
	case CodecLength8LE:
		return 8, binary.LittleEndian
	}
	return 0, nil
}

// MaxPayloadBytes returns the largest payload c can carry: MaxMessageBytes,
// or less for a length field of 1 or 2 bytes.
func (c Codec) MaxPayloadBytes() int {
	switch fieldBytes, _ := c.lengthField(); fieldBytes {
	case 1:
		return 1<<8 - 1
	case 2:
		return 1<<16 - 1
	}
	return MaxMessageBytes
}

// appendLength appends size as a fieldBytes-byte length in order.
func appendLength(dst []byte, fieldBytes int, order byteOrder, size int) []byte {
	switch fieldBytes {
	case 1:
		return append(dst, byte(size))
	case 2:
		return order.AppendUint16(dst, uint16(size))
	case 4:
		return order.AppendUint32(dst, uint32(size))
	}
	return order.AppendUint64(dst, uint64(size))
}

// readLength reads a fieldBytes-byte length in order from the start of b,
// which holds at least fieldBytes bytes.
func readLength(b []byte, fieldBytes int, order byteOrder) uint64 {
	switch fieldBytes {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(order.Uint16(b))
	case 4:
		return uint64(order.Uint32(b))
	}
	return order.Uint64(b)
}

// MaxMessageBytes is the largest payload the generator sends: the default
// maximum frame of package protocol (1 MiB), so every server accepts it.
const MaxMessageBytes = 1 << 20

// String returns the codec's flag name: raw, length, line, resp or http.
func (c Codec) String() string {
	if c < numCodecs {
		return codecNames[c]
	}
	return "codec(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText encodes the codec as its flag name (for JSON).
func (c Codec) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a flag name (for JSON).
func (c *Codec) UnmarshalText(b []byte) error {
	v, err := ParseCodec(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ParseCodec parses a codec's flag name: raw, length, line, resp or http.
func ParseCodec(s string) (Codec, error) {
	for i, name := range codecNames {
		if s == name {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown codec %q (want %s)", ErrInvalidConfig, s, strings.Join(codecNames[:], ", "))
}

// WireBytes returns the bytes on the wire of a request of size payload
// bytes.
func (c Codec) WireBytes(size int) int {
	if fieldBytes, _ := c.lengthField(); fieldBytes > 0 {
		return fieldBytes + size
	}
	switch c {
	case CodecLine:
		return size + 1
	case CodecRESP:
		return len(respEchoHead) + len("$\r\n") + decimalDigits(size) + size + len("\r\n")
	case CodecHTTP:
		return len(httpRequestHead) + decimalDigits(size) + len("\r\n\r\n") + size
	}
	return size
}

// maxResponseBytes bounds the wire bytes of a response to a request of size
// payload bytes: the request's own size for the echo framings, plus room for
// a RESP error line or an HTTP response head. A longer response is
// ErrMismatch.
func (c Codec) maxResponseBytes(size int) int {
	switch c {
	case CodecRESP:
		return c.WireBytes(size) + maxRESPErrorBytes
	case CodecHTTP:
		return size + maxHTTPHeadBytes
	}
	return c.WireBytes(size)
}

// seqBytes returns how many payload bytes carry the sequence number for a
// payload of size bytes, or 0 when the payload is too small to carry one (the
// response is then matched by length and order only).
func (c Codec) seqBytes(size int) int {
	if fieldBytes, _ := c.lengthField(); fieldBytes > 0 && size >= 8 {
		return 8
	}
	switch c {
	case CodecRESP, CodecHTTP:
		if size >= 8 {
			return 8
		}
	case CodecLine:
		if size >= 16 {
			return 16
		}
	}
	return 0
}

// decimalDigits returns the length of n (n >= 0) in decimal.
func decimalDigits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// fillerByte pads payloads; it is never '\n'.
const fillerByte = 'x'

// newFiller returns n filler bytes, the source every request payload is
// copied from.
func newFiller(n int) []byte { return bytes.Repeat([]byte{fillerByte}, n) }

const hexDigits = "0123456789abcdef"

// appendRequest appends one request of payload size bytes carrying seq to dst
// and returns the extended slice. filler must hold at least size bytes. It
// never allocates when dst has room.
func appendRequest(dst []byte, c Codec, seq uint64, size int, filler []byte) []byte {
	if fieldBytes, order := c.lengthField(); fieldBytes > 0 {
		dst = appendLength(dst, fieldBytes, order, size)
		return appendPayload(dst, c, seq, size, filler)
	}
	switch c {
	case CodecRESP:
		dst = append(dst, respEchoHead...)
		return appendRESPBulk(dst, c, seq, size, filler)
	case CodecHTTP:
		dst = append(dst, httpRequestHead...)
		dst = strconv.AppendInt(dst, int64(size), 10)
		dst = append(dst, "\r\n\r\n"...)
		return appendPayload(dst, c, seq, size, filler)
	case CodecLine:
		if c.seqBytes(size) == 16 {
			for shift := 60; shift >= 0; shift -= 4 {
				dst = append(dst, hexDigits[(seq>>uint(shift))&0xf])
			}
			dst = append(dst, filler[:size-16]...)
		} else {
			dst = append(dst, filler[:size]...)
		}
		return append(dst, '\n')
	}
	return append(dst, filler[:size]...)
}

// appendPayload appends a binary payload of size bytes: the sequence number
// as 8 bytes big-endian when it fits, then filler.
func appendPayload(dst []byte, c Codec, seq uint64, size int, filler []byte) []byte {
	if c.seqBytes(size) == 8 {
		dst = binary.BigEndian.AppendUint64(dst, seq)
		return append(dst, filler[:size-8]...)
	}
	return append(dst, filler[:size]...)
}

// appendRESPBulk appends a payload as a RESP bulk string: the ECHO
// command's argument, and its reply.
func appendRESPBulk(dst []byte, c Codec, seq uint64, size int, filler []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(size), 10)
	dst = append(dst, "\r\n"...)
	dst = appendPayload(dst, c, seq, size, filler)
	return append(dst, "\r\n"...)
}

// nextResponse finds the first complete response frame in buf for a framed
// codec (every codec but CodecRaw). It returns the payload (aliasing buf),
// the wire bytes it occupies, or n == 0 when more input is needed. The
// payload of a RESP error reply is its line with the leading '-'; that of an
// HTTP response with a status outside 2xx is its status line (see
// responseReject). A length above MaxMessageBytes, or a line or head longer
// than its limit without a delimiter, is ErrMismatch: the stream can never
// resynchronise.
func nextResponse(c Codec, buf []byte) (payload []byte, n int, err error) {
	if fieldBytes, order := c.lengthField(); fieldBytes > 0 {
		if len(buf) < fieldBytes {
			return nil, 0, nil
		}
		size := readLength(buf, fieldBytes, order)
		if size > MaxMessageBytes {
			return nil, 0, fmt.Errorf("%w: length header %d above %d", ErrMismatch, size, MaxMessageBytes)
		}
		end := fieldBytes + int(size)
		if len(buf) < end {
			return nil, 0, nil
		}
		return buf[fieldBytes:end], end, nil
	}
	switch c {
	case CodecRESP:
		return nextRESP(buf)
	case CodecHTTP:
		return nextHTTP(buf)
	case CodecLine:
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			if len(buf) > MaxMessageBytes {
				return nil, 0, fmt.Errorf("%w: no line end within %d bytes", ErrMismatch, MaxMessageBytes)
			}
			return nil, 0, nil
		}
		return buf[:i], i + 1, nil
	}
	return nil, 0, fmt.Errorf("%w: codec %v has no frames", ErrInvalidConfig, c)
}

// checkResponse verifies that payload is the echo of the request of size
// bytes with sequence number seq: its length, its sequence number and every
// filler byte (filler must hold at least size bytes). It never allocates on
// success.
func checkResponse(c Codec, payload []byte, seq uint64, size int, filler []byte) error {
	if len(payload) != size {
		return fmt.Errorf("%w: response of %d bytes to a request of %d", ErrMismatch, len(payload), size)
	}
	sb := c.seqBytes(size)
	if !bytes.Equal(payload[sb:], filler[:size-sb]) {
		return fmt.Errorf("%w: payload bytes differ from the request's", ErrMismatch)
	}
	switch sb {
	case 8:
		if got := binary.BigEndian.Uint64(payload); got != seq {
			return fmt.Errorf("%w: sequence %d, want %d", ErrMismatch, got, seq)
		}
	case 16:
		var got uint64
		for _, b := range payload[:16] {
			d := strings.IndexByte(hexDigits, b)
			if d < 0 {
				return fmt.Errorf("%w: sequence is not hex", ErrMismatch)
			}
			got = got<<4 | uint64(d)
		}
		if got != seq {
			return fmt.Errorf("%w: sequence %d, want %d", ErrMismatch, got, seq)
		}
	}
	return nil
}

// rawAccount matches echoed bytes to requests for CodecRaw, where the server
// may split and coalesce: responses are a byte stream, and a request is
// answered once as many bytes as it carried have come back after the bytes of
// every earlier request. The zero value is ready to use.
type rawAccount struct {
	partialBytes int // bytes received toward the oldest outstanding request
}

// take accounts n more received bytes against the outstanding requests in q
// (oldest first) and returns how many of them are now complete; the caller pops
// them. More bytes than were sent is ErrMismatch.
func (a *rawAccount) take(n int, q *inflight) (msgs int, err error) {
	have := a.partialBytes + n
	for msgs < q.len() {
		size := int(q.at(msgs).size)
		if have < size {
			break
		}
		have -= size
		msgs++
	}
	if msgs == q.len() && have > 0 {
		return msgs, fmt.Errorf("%w: %d bytes more than were sent", ErrMismatch, have)
	}
	a.partialBytes = have
	return msgs, nil
}
