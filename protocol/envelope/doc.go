// Package envelope implements the sluice envelope, a compact binary framing
// for request/response protocols: a length, a version, a type (request,
// response, reject), flags, a request id so responses may come back out of
// order, a status with HTTP meanings, a retry-after hint, an absolute or
// relative deadline, a priority class, a tenant, an idempotency key, a
// method and a payload. docs/ENVELOPE.md describes the wire format byte by
// byte.
//
// The package owns the wire format: framing (Codec, a protocol.Codec),
// parsing (Parse, zero allocations, fields alias the frame), writing
// (Append, AppendMessage, AppendReject, AppendResponse) and validation, with
// a bound on every variable field. It refuses to own what a message means:
// admission, idempotency, retries and deadlines are enforced by the server,
// the admission package and the client, which read these fields.
//
// Usage sketch, on the server:
//
//	frame, n, err := envelope.Codec{}.Decode(buf) // framing; err closes the connection
//	var m envelope.Message
//	if err := envelope.Parse(frame, &m); err != nil {
//		id, _ := envelope.PeekRequestID(frame)
//		out = envelope.AppendReject(out, id, envelope.StatusBadRequest, 0, err.Error())
//	} else {
//		out = envelope.AppendResponse(out, m.RequestID, envelope.StatusOK, reply)
//	}
//
// and on the client:
//
//	m := envelope.Message{Type: envelope.TypeRequest, RequestID: id,
//		Method: []byte("PUT"), Tenant: tenant, IdempotencyKey: key, Payload: body}
//	m.SetTimeout(250 * time.Millisecond)
//	out, err := m.Append(out)
package envelope
