package http1

import "bytes"

// The two-pass ServerCodec.Decode this package had before Decode parsed
// strictly: a fast framing pass (the end of the head, Content-Length),
// falling back to the strict Decode, with Server parsing every frame again.
// It is kept here, unchanged, as the reference of FuzzServerSinglePass and
// of TestServerCodecDecode's fast column.

// legacyDecode is the old ServerCodec.Decode.
func (c ServerCodec) legacyDecode(buf []byte) (frame []byte, n int, err error) {
	if n := c.frameFast(buf); n > 0 {
		return buf[:n:n], n, nil
	}
	frame, n, err = c.Codec.Decode(buf)
	if err != nil {
		return buf[:len(buf):len(buf)], len(buf), nil
	}
	return frame, n, nil
}

// fastLimits returns MaxHeaderBytes and MaxBodyBytes with defaults applied;
// ok is false for a configuration Codec refuses (the strict Decode then
// reports it).
func (c ServerCodec) fastLimits() (maxHead int, maxBody int64, ok bool) {
	lim, err := c.limits()
	if err != nil {
		return 0, 0, false
	}
	return lim.maxHead, lim.maxBody, true
}

var crlfcrlf = []byte("\r\n\r\n")

// frameFast returns the length of the request at the start of buf when it
// is whole and plainly framed: its head ends within MaxHeaderBytes, it has
// no Transfer-Encoding, and at most plain-decimal Content-Length fields that
// agree, within MaxBodyBytes, with the whole body in buf. Otherwise it
// returns 0 and the strict parser decides. In a request valid under RFC
// 9112, no CR or LF occurs inside the request line or a field line, so the
// first CRLFCRLF ends the head; Server's strict parse of the frame checks
// the rest.
func (c ServerCodec) frameFast(buf []byte) int {
	if len(buf) == 0 || buf[0] == '\r' || buf[0] == '\n' {
		return 0
	}
	maxHead, maxBody, ok := c.fastLimits()
	if !ok {
		return 0
	}
	window := buf
	if len(window) > maxHead {
		window = window[:maxHead]
	}
	end := bytes.Index(window, crlfcrlf)
	if end < 0 {
		return 0
	}
	head := end + len(crlfcrlf)
	cl := int64(-1)
	// Field lines start after the request line's LF; the head's last line
	// is the empty one.
	i := bytes.IndexByte(buf[:end], '\n') + 1
	for i > 0 && i < head-2 {
		j := bytes.IndexByte(buf[i:head], '\n')
		if j < 0 {
			return 0
		}
		line := buf[i : i+j] // without LF
		i += j + 1
		if len(line) < 2 || line[len(line)-1] != '\r' {
			return 0 // a bare LF, or an empty field line: strict decides
		}
		switch line[0] {
		case 'c', 'C':
			v, ok := fastFieldValue(line, "content-length")
			if !ok {
				continue
			}
			n, ok := plainDecimal(v)
			if !ok || cl >= 0 && cl != n {
				return 0
			}
			cl = n
		case 't', 'T':
			if _, ok := fastFieldValue(line, "transfer-encoding"); ok {
				return 0
			}
		}
	}
	if cl < 0 {
		return head
	}
	if cl > maxBody || int64(len(buf)-head) < cl {
		return 0
	}
	return head + int(cl)
}

// fastFieldValue returns the value of line, "name:value\r" (it ends in CR),
// trimmed of spaces and tabs, when its name equals name under ASCII case
// folding.
func fastFieldValue(line []byte, name string) ([]byte, bool) {
	if len(line) <= len(name) || line[len(name)] != ':' || !EqualFold(line[:len(name)], name) {
		return nil, false
	}
	return trimOWS(line[len(name)+1 : len(line)-1]), true // without the CR
}

// plainDecimal parses 1 to 18 decimal digits (no sign, no list).
func plainDecimal(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, ch := range v {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	return n, true
}
