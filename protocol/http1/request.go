package http1

// MaxHeaders is the number of header fields a Request can hold, and the
// largest valid Codec.MaxHeaderCount. 64 fields cover browsers (about 20)
// and proxies that add forwarding fields, while keeping a Request about
// 3 KiB, small enough to keep one per event loop or per in-flight request.
const MaxHeaders = 64

// Header is one header field. Name is as received (compare it with
// EqualFold); Value has its surrounding white space removed. Both alias the
// frame.
type Header struct {
	Name, Value []byte
}

// Request is a parsed request head and body. Parse fills it; every slice
// aliases the frame passed to Parse and is valid as long as the frame is.
// The zero value is ready for Parse; reuse one Request per connection or
// event loop. A Request is not safe for concurrent use.
type Request struct {
	// Method is the request method, a token, case-sensitive ("GET").
	Method []byte
	// Target is the request-target exactly as sent ("/p?q=1",
	// "http://h/p", "*", "h:443").
	Target []byte
	// Path is the path of an origin-form or absolute-form target, up to
	// '?' ("/" for an absolute-form target without a path); for the
	// asterisk and authority forms it is the whole Target. It is not
	// percent-decoded.
	Path []byte
	// Query is the part of Target after the first '?', without the '?';
	// nil when there is none.
	Query []byte
	// ProtoMinor is the minor version of HTTP/1.x: 0 or 1 (a later minor
	// version is kept as sent and treated as 1.1).
	ProtoMinor int
	// KeepAlive reports whether the connection stays open after the
	// response: HTTP/1.1 unless "Connection: close", HTTP/1.0 only with
	// "Connection: keep-alive".
	KeepAlive bool
	// ContentLength is the body length in bytes; 0 without Content-Length.
	ContentLength int64
	// Host is the Host field value (nil when absent, only possible in
	// HTTP/1.0).
	Host []byte
	// Body is the request body (len(Body) == ContentLength).
	Body []byte
	// NumHeaders is the number of valid entries in Headers.
	NumHeaders int
	// Headers holds the header fields in arrival order; entries from
	// NumHeaders on are zero.
	Headers [MaxHeaders]Header
}

// Fields returns the header fields, r.Headers[:r.NumHeaders].
func (r *Request) Fields() []Header {
	return r.Headers[:r.NumHeaders]
}

// Header returns the value of the first header field named name (compared
// without case), or nil when there is none. It does not allocate.
func (r *Request) Header(name string) []byte {
	for i := 0; i < r.NumHeaders; i++ {
		if equalFold(r.Headers[i].Name, name) {
			return r.Headers[i].Value
		}
	}
	return nil
}

// MethodIs reports whether the method is m (case-sensitive, as RFC 9110
// defines methods).
func (r *Request) MethodIs(m string) bool {
	return string(r.Method) == m
}

// Reset zeroes r, dropping its references to the last frame.
func (r *Request) Reset() {
	clear(r.Headers[:r.NumHeaders])
	r.Method, r.Target, r.Path, r.Query, r.Host, r.Body = nil, nil, nil, nil, nil, nil
	r.ProtoMinor, r.KeepAlive, r.ContentLength, r.NumHeaders = 0, false, 0, 0
}

// EqualFold reports whether b equals s under ASCII case folding, for
// comparing header names and tokens. It does not allocate.
func EqualFold(b []byte, s string) bool {
	return equalFold(b, s)
}
