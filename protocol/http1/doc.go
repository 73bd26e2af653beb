// Package http1 is a minimal, strict HTTP/1.1 server-side codec for sluice
// servers that load generators (wrk, hey, ab) and HTTP clients can drive.
//
// It owns the wire format of one direction each way: framing requests
// (Codec: request line, header fields, Content-Length bodies, bounded by
// MaxHeaderBytes, MaxHeaderCount and MaxBodyBytes), parsing a frame into a
// Request whose fields alias the frame (Parse, or DecodeRequest for both in
// one pass), and writing responses into a caller's buffer (AppendResponse,
// Request.AppendResponse, AppendError, AppendDecodeError, AppendRetryAfter)
// with a once-per-second Date value (DateCache). Pipelined requests decode
// one per call. For a server engine it owns the serving side too:
// ServerCodec (the strict parse, left for Server so that each request is
// scanned once, framing errors passed through so the client gets a
// status, refusals answered with 429 or 503 and Retry-After) and Server (one response per request through a
// Route, the close rules, Date with the clock read once per read batch),
// which a server.Handler calls from OnFrame (see Server). Nothing on the
// steady path allocates.
//
// It refuses to own routing (a Route is the caller's), connections,
// timeouts, TLS and policy, and it
// deliberately leaves out chunked request bodies (refused with 411),
// Expect: 100-continue (refused with 417, because a stateless codec cannot
// send the interim response), trailers, upgrades, HTTP/2 and the client
// side. Every refusal is an *Error naming the status to send; after it the
// server answers and closes, since the stream cannot be re-synchronised.
//
// Keep-alive follows RFC 9112 section 9.3: HTTP/1.1 stays open unless the
// request says "Connection: close", HTTP/1.0 closes unless it says
// "Connection: keep-alive". Request.KeepAlive carries the answer.
//
// Usage sketch, in an event loop that owns in (unparsed input), out, a
// Request and a DateCache, with now read once per turn:
//
//	var codec http1.Codec // zero value: default limits
//	for {
//		frame, n, err := codec.Decode(in)
//		if err != nil {
//			out = http1.AppendDecodeError(out, err, dates.Value(now))
//			return closeAfterFlush
//		}
//		if n == 0 {
//			break // keep in, read more
//		}
//		in = in[n:]
//		if err := http1.Parse(frame, &req); err != nil {
//			... // as above; cannot happen for a frame Decode returned
//		}
//		out = req.AppendResponse(out, 200, "text/plain", hello, dates.Value(now))
//		if !req.KeepAlive {
//			return closeAfterFlush
//		}
//	}
package http1
