// Package resp is the RESP2 (Redis serialization protocol) codec for sluice
// servers that speak to redis-cli, redis-benchmark and Redis client
// libraries.
//
// It owns the server side of the wire format: framing requests (Codec, with
// named limits on arguments, bulk bytes, inline bytes and command bytes),
// splitting a frame into arguments (Parse, DecodeCommand), encoding replies
// (AppendSimpleString, AppendError, AppendInt, AppendBulk, AppendNullBulk,
// AppendArrayHeader, AppendNullArray, AppendProtocolError) and the small
// helpers a command table needs (EqualFold, ParseInt). For a server engine,
// ServerCodec passes framing errors through to the handler so that it can
// answer "-ERR Protocol error" as redis-server does, and its Parse names
// the framing error. Frames and arguments
// alias the caller's read buffer and replies are appended to the caller's
// write buffer, so the steady path allocates nothing.
//
// It refuses to own commands, storage, connections or policy: which
// commands exist, what an overloaded server answers ("-BUSY ..." or
// "-ERR ..."), and whether a protocol error closes the connection are the
// server's decisions. It does not decode replies (RESP as a client reads
// it), nor RESP3.
//
// Usage sketch, in an event loop that owns in (unparsed input) and out:
//
//	var codec resp.Codec // zero value: default limits
//	args := make([][]byte, 0, 16)
//	for {
//		frame, n, err := codec.Decode(in)
//		if err != nil {
//			out = resp.AppendProtocolError(out, err)
//			return closeAfterFlush
//		}
//		if n == 0 {
//			break // keep in, read more
//		}
//		in = in[n:]
//		args, _ = resp.Parse(frame, args[:0])
//		switch {
//		case len(args) == 0:
//			// empty command: no reply, like redis-server
//		case resp.EqualFold(args[0], "PING"):
//			out = resp.AppendSimpleString(out, "PONG")
//		default:
//			out = resp.AppendError(out, "ERR unknown command")
//		}
//	}
package resp
