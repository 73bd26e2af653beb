package http1

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
)

// Parsing stages, to choose between 414 and 431 when the head does not fit.
const (
	inRequestLine = iota
	inHeaders
)

// parser is the state of one pass over a request head. It lives on the
// stack; req is nil when Decode only frames.
type parser struct {
	buf   []byte // the head window: at most MaxHeaderBytes of the input
	pos   int
	stage int
	req   *Request

	minor      int
	count      int   // header fields seen
	cl         int64 // Content-Length, -1 when absent
	hosts      int
	te         bool // a Transfer-Encoding field was seen
	teChunked  bool // the last Transfer-Encoding coding is chunked
	expect     bool
	connClose  bool
	connKeep   bool
	maxHeaders int
}

// errMore means the head window ended before the head did; it never
// leaves the package.
var errMore = errors.New("sluice: http1: need more input")

// parseHead parses the request line and header fields in p.buf and returns
// the head length (through the empty line), errMore, or an *Error.
func (p *parser) parseHead() (int, error) {
	b := p.buf
	// RFC 9112 section 2.2: a server SHOULD ignore at least one empty line
	// received before the request line.
	for p.pos < len(b) && b[p.pos] == '\r' {
		if p.pos+1 == len(b) {
			return 0, errMore
		}
		if b[p.pos+1] != '\n' {
			return 0, ErrBadRequestLine
		}
		p.pos += 2
	}
	if err := p.requestLine(); err != nil {
		return 0, err
	}
	p.stage = inHeaders
	for {
		i := p.pos
		if i == len(b) {
			return 0, errMore
		}
		switch b[i] {
		case '\r':
			if i+1 == len(b) {
				return 0, errMore
			}
			if b[i+1] != '\n' {
				return 0, ErrBadHeader
			}
			return i + 2, nil
		case ' ', '\t':
			return 0, ErrObsFold
		}
		if err := p.headerLine(); err != nil {
			return 0, err
		}
	}
}

// requestLine parses "method SP target SP HTTP/d.d CRLF" at p.pos.
func (p *parser) requestLine() error {
	b := p.buf
	i := p.pos
	start := i
	i = scanToken(b, i)
	if i == len(b) {
		return errMore
	}
	if b[i] != ' ' || i == start {
		return ErrBadRequestLine
	}
	method := b[start:i:i]
	i++
	tstart := i
	i = scanTarget(b, i)
	if i == len(b) {
		return errMore
	}
	if b[i] != ' ' || i == tstart {
		return ErrBadRequestLine
	}
	target := b[tstart:i:i]
	i++
	const proto = "HTTP/1.1\r\n" // digits at 5 and 7 vary
	if i+len(proto) <= len(b) && b[i+8] == '\r' && b[i+9] == '\n' {
		// The common versions, compared as one word.
		switch binary.LittleEndian.Uint64(b[i:]) {
		case http11:
			p.minor = 1
			return p.requestTarget(i+len(proto), method, target)
		case http10:
			p.minor = 0
			return p.requestTarget(i+len(proto), method, target)
		}
	}
	for k := 0; k < len(proto); k++ {
		if i+k == len(b) {
			return errMore
		}
		c := b[i+k]
		switch k {
		case 5:
			if c < '0' || c > '9' {
				return ErrBadRequestLine
			}
			if c != '1' {
				return ErrVersion
			}
		case 7:
			if c < '0' || c > '9' {
				return ErrBadRequestLine
			}
			p.minor = int(c - '0')
		default:
			if c != proto[k] {
				return ErrBadRequestLine
			}
		}
	}
	return p.requestTarget(i+len(proto), method, target)
}

// "HTTP/1.1" and "HTTP/1.0" as little-endian words.
var (
	http11 = binary.LittleEndian.Uint64([]byte("HTTP/1.1"))
	http10 = binary.LittleEndian.Uint64([]byte("HTTP/1.0"))
)

// requestTarget ends the request line, whose version was read, at end:
// it checks the target's form and records the line's parts.
func (p *parser) requestTarget(end int, method, target []byte) error {
	p.pos = end
	path, query, ok := splitTarget(method, target)
	if !ok {
		return ErrBadRequestLine
	}
	if r := p.req; r != nil {
		r.Method, r.Target, r.Path, r.Query = method, target, path, query
		r.ProtoMinor = p.minor
	}
	return nil
}

// slash is the Path of an absolute-form target without a path.
var slash = []byte("/")

// splitTarget checks the form of a request-target (RFC 9112 section 3.2)
// and returns its path and query.
func splitTarget(method, target []byte) (path, query []byte, ok bool) {
	if target[0] == '/' { // origin-form
		if i := bytes.IndexByte(target, '?'); i >= 0 {
			return target[:i:i], target[i+1:], true
		}
		return target, nil, true
	}
	if len(target) == 1 && target[0] == '*' { // asterisk-form
		return target, nil, string(method) == "OPTIONS"
	}
	if string(method) == "CONNECT" { // authority-form
		return target, nil, true
	}
	// absolute-form: scheme "://" authority [path] ["?" query]
	i := 0
	for i < len(target) && (lower(target[i]) >= 'a' && lower(target[i]) <= 'z' ||
		i > 0 && (target[i] >= '0' && target[i] <= '9' || target[i] == '+' || target[i] == '-' || target[i] == '.')) {
		i++
	}
	if i == 0 || len(target)-i < 3 || string(target[i:i+3]) != "://" {
		return nil, nil, false
	}
	rest := target[i+3:]
	j := 0
	for j < len(rest) && rest[j] != '/' && rest[j] != '?' {
		j++
	}
	path, query = rest[j:], nil
	for k, c := range path {
		if c == '?' {
			path, query = path[:k:k], path[k+1:]
			break
		}
	}
	if len(path) == 0 {
		path = slash
	}
	return path, query, true
}

// headerLine parses "name: value CRLF" at p.pos, which is neither CR nor
// white space.
func (p *parser) headerLine() error {
	b := p.buf
	i := p.pos
	start := i
	i = scanToken(b, i)
	if i == len(b) {
		return errMore
	}
	if b[i] != ':' || i == start {
		return ErrBadHeader
	}
	name := b[start:i:i]
	i++
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	vstart := i
	i = scanField(b, i)
	if i == len(b) {
		return errMore
	}
	if b[i] != '\r' {
		return ErrBadHeader
	}
	if i+1 == len(b) {
		return errMore
	}
	if b[i+1] != '\n' {
		return ErrBadHeader
	}
	vend := i
	for vend > vstart && (b[vend-1] == ' ' || b[vend-1] == '\t') {
		vend--
	}
	value := b[vstart:vend:vend]
	p.pos = i + 2
	if p.count == p.maxHeaders {
		return ErrTooManyHeaders
	}
	if r := p.req; r != nil {
		// Field by field: a composite literal is built on the stack and
		// copied in 16-byte moves that stall on the 8-byte stores.
		h := &r.Headers[p.count]
		h.Name = name
		h.Value = value
	}
	p.count++
	return p.field(name, value)
}

// field records what the framing and connection rules need from one
// header field.
func (p *parser) field(name, value []byte) error {
	switch len(name) {
	case 4:
		if equalLower(name, "host") {
			p.hosts++
			if p.req != nil {
				p.req.Host = value
			}
		}
	case 6:
		if equalLower(name, "expect") {
			p.expect = true
		}
	case 10:
		if equalLower(name, "connection") {
			p.connection(value)
		}
	case 14:
		if equalLower(name, "content-length") {
			return p.contentLength(value)
		}
	case 17:
		if equalLower(name, "transfer-encoding") {
			p.te = true
			p.teChunked = equalLower(trimOWS(lastElement(value)), "chunked")
		}
	}
	return nil
}

// lastElement returns the part of a comma-separated list after its last
// comma.
func lastElement(v []byte) []byte {
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] == ',' {
			return v[i+1:]
		}
	}
	return v
}

// connection reads the Connection options close and keep-alive.
func (p *parser) connection(v []byte) {
	for len(v) > 0 {
		end := 0
		for end < len(v) && v[end] != ',' {
			end++
		}
		opt := trimOWS(v[:end])
		switch {
		case equalLower(opt, "close"):
			p.connClose = true
		case equalLower(opt, "keep-alive"):
			p.connKeep = true
		}
		if end == len(v) {
			break
		}
		v = v[end+1:]
	}
}

// contentLength reads a Content-Length value: 1*DIGIT, or a list of equal
// values (RFC 9110 section 8.6 lets a recipient accept "5, 5"). Values too
// large for int64 saturate, so they fail the body limit, not the syntax.
func (p *parser) contentLength(v []byte) error {
	for {
		end := 0
		for end < len(v) && v[end] != ',' {
			end++
		}
		digits := trimOWS(v[:end])
		if len(digits) == 0 {
			return ErrBadContentLength
		}
		var n int64
		for _, c := range digits {
			if c < '0' || c > '9' {
				return ErrBadContentLength
			}
			if n > (math.MaxInt64-9)/10 {
				n = math.MaxInt64
			} else {
				n = n*10 + int64(c-'0')
			}
		}
		if p.cl >= 0 && p.cl != n {
			return ErrBadContentLength
		}
		p.cl = n
		if end == len(v) {
			return nil
		}
		v = v[end+1:]
	}
}

// finish applies the rules that need the whole head: framing, Expect,
// Host and keep-alive. It returns the body length.
func (p *parser) finish(maxBody int64) (int64, error) {
	if p.te {
		if p.minor == 0 || p.cl >= 0 || !p.teChunked {
			return 0, ErrBadTransferEncoding
		}
		return 0, ErrChunked
	}
	if p.expect {
		return 0, ErrExpectation
	}
	if p.hosts > 1 || p.minor >= 1 && p.hosts == 0 {
		return 0, ErrBadHost
	}
	cl := max(p.cl, 0)
	if cl > maxBody {
		return 0, ErrBodyTooLarge
	}
	if r := p.req; r != nil {
		r.ContentLength = cl
		if p.minor >= 1 {
			r.KeepAlive = !p.connClose
		} else {
			r.KeepAlive = p.connKeep && !p.connClose
		}
	}
	return cl, nil
}
