// Package protocol splits byte streams into frames and encodes replies.
//
// It owns the Codec contract and the simple framings: Raw (every read is a
// frame), LengthPrefixed (4-byte big-endian or uvarint length header),
// LengthField (a length field of 1, 2, 4 or 8 bytes at an offset in a
// header, like Netty's LengthFieldBasedFrameDecoder) and Delimited (lines). Richer protocols live in sub-packages: envelope (the
// sluice request/response envelope), resp (RESP2) and http1 (minimal
// HTTP/1.1). Each decoder is allocation-free, never consumes more than its
// input, rejects oversized frames as soon as the bytes prove it, and is
// fuzzed.
//
// The package refuses to own buffering, sockets, connection state or
// policy: a Codec is a stateless value, and the caller (the server engine)
// keeps the unparsed tail and decides what an error means for the connection.
//
// Usage sketch:
//
//	c := protocol.LengthPrefixed{Header: protocol.Fixed32, MaxFrameBytes: 64 << 10}
//	for {
//		frame, n, err := c.Decode(buf)
//		if err != nil {
//			return err // errors.Is(err, protocol.ErrFrameTooLarge) ...
//		}
//		if n == 0 {
//			break // keep buf, read more
//		}
//		out = c.AppendEncode(out, handle(frame))
//		buf = buf[n:]
//	}
package protocol
