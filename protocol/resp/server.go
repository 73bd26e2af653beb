package resp

import "github.com/sluicenet/sluice/protocol"

var (
	_ protocol.Codec    = ServerCodec{}
	_ protocol.Rejecter = ServerCodec{}
)

// ServerCodec is Codec for a server engine (its AppendReject answers
// admission refusals in RESP), with one change: it passes a framing error
// through as a frame holding all the buffered input, instead of failing
// Decode (which would make the engine close the connection without a
// word). The handler's Parse then reports the framing error, and the
// handler replies redis's "-ERR Protocol error: <reason>"
// (AppendProtocolError) and closes the connection, as redis-server does:
//
//	args, err := codec.Parse(frame, args[:0])
//	if err != nil {
//		_ = c.Write(resp.AppendProtocolError(out[:0], err))
//		_ = c.CloseWithError(err)
//		return server.None
//	}
//
// An admitter in front of such a handler should therefore admit frames
// that are not one whole command (Codec.Decode does not consume all of
// them) uncharged. A ServerCodec has no per-connection state and is safe
// for concurrent use.
type ServerCodec struct{ Codec }

// Decode is Codec.Decode, except that a framing error yields all of buf
// as one frame and no error (see the type's documentation).
func (c ServerCodec) Decode(buf []byte) (frame []byte, n int, err error) {
	frame, n, err = c.Codec.Decode(buf)
	if err != nil {
		return buf[:len(buf):len(buf)], len(buf), nil
	}
	return frame, n, nil
}

// Parse is the package's Parse for a frame Decode returned: it appends
// the command's arguments to args. For a frame Decode passed through, it
// returns the framing error Codec.Decode reports (a limit exceeded, say),
// which names the reason for AppendProtocolError better than Parse's. The
// arguments alias frame. It does not allocate when args has room.
func (c ServerCodec) Parse(frame []byte, args [][]byte) ([][]byte, error) {
	out, err := Parse(frame, args)
	if err != nil {
		if _, _, derr := c.Codec.Decode(frame); derr != nil {
			err = derr
		}
	}
	return out, err
}
