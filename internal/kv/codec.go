package kv

import "github.com/sluicenet/sluice/protocol/resp"

// RESPCodec is resp.Codec for the engine (whose AppendReject answers
// admission refusals in RESP), with one change: it passes a framing error
// through as a frame holding all the buffered input, instead of failing
// Decode (which would make the engine close the connection without a
// word): RESPHandler.OnFrame finds that Parse rejects it, replies redis's
// "-ERR Protocol error: <reason>" and closes the connection, as
// redis-server does. An admitter in front of RESPHandler should therefore
// admit frames resp.Parse rejects (TenantPolicy does). A RESPCodec has no
// per-connection state and is safe for concurrent use.
type RESPCodec struct{ resp.Codec }

// Decode is resp.Codec.Decode, except that a framing error yields all of
// buf as one frame and no error (see the type's documentation).
func (c RESPCodec) Decode(buf []byte) (frame []byte, n int, err error) {
	frame, n, err = c.Codec.Decode(buf)
	if err != nil {
		return buf[:len(buf):len(buf)], len(buf), nil
	}
	return frame, n, nil
}
