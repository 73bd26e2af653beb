package kv

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/sluicenet/sluice/protocol/resp"
	"github.com/sluicenet/sluice/server"
)

// RESP error replies, with redis-server's wording where redis has one.
const (
	errSyntax      = "ERR syntax error"
	errNotInteger  = "ERR value is not an integer or out of range"
	errOverflow    = "ERR increment or decrement would overflow"
	errOOM         = "OOM command not allowed when used memory > 'maxmemory'."
	errTooLarge    = "ERR string exceeds maximum allowed size"
	errExpire      = "ERR invalid expire time in 'set' command"
	errDBRange     = "ERR DB index is out of range"
	maxErrArgBytes = 128 // bytes of each argument quoted in an unknown-command error
	maxErrArgs     = 8   // arguments quoted in an unknown-command error
	keepOutBytes   = 64 << 10
	initOutBytes   = 512
	initArgs       = 16
)

// RESPHandler serves RESP2 commands (PING, ECHO, GET, SET, DEL, INCR,
// EXISTS, MGET, MSET, COMMAND, INFO, QUIT, CONFIG GET, SELECT 0) from a
// Store, so redis-cli and redis-benchmark work unmodified. It implements
// server.Handler: each decoded command runs inline on the loop (every
// command is a bounded in-memory operation) and its reply is queued with
// one Conn.Write. Pipelined commands are answered in order. The steady GET
// and SET paths do not allocate.
//
// Exec is the transport-free core, for tests and other transports. A
// RESPHandler is safe for concurrent use by several loops.
type RESPHandler struct {
	store   *Store
	codec   resp.Codec
	clock   func() time.Time
	started time.Time
	engine  atomic.Pointer[server.Engine]
}

// NewRESPHandler returns a handler over store. codec must be the Codec the
// engine frames with (inside resp.ServerCodec), so a framing error can be named in
// the reply. clock is the wall clock for expiry; nil means time.Now.
func NewRESPHandler(store *Store, codec resp.Codec, clock func() time.Time) *RESPHandler {
	if clock == nil {
		clock = time.Now
	}
	return &RESPHandler{store: store, codec: codec, clock: clock, started: clock()}
}

// SetEngine attaches the engine whose Stats INFO reports; call it after
// server.New and before clients connect (INFO without it reports no
// engine section).
func (h *RESPHandler) SetEngine(e *server.Engine) { h.engine.Store(e) }

// respConn is a connection's scratch space: argument slices and the reply
// buffer, reused for every command.
type respConn struct {
	args [][]byte
	out  []byte
}

// OnOpen gives the connection its scratch space.
func (h *RESPHandler) OnOpen(c *server.Conn) server.Action {
	c.SetContext(&respConn{args: make([][]byte, 0, initArgs), out: make([]byte, 0, initOutBytes)})
	return server.None
}

// OnFrame runs one command and queues its reply. A frame that does not
// parse (resp.ServerCodec passes framing errors through as frames) is answered
// with redis's "-ERR Protocol error: ..." and closes the connection; a
// reply that does not fit the out-queue closes it with ErrQueueFull.
func (h *RESPHandler) OnFrame(c *server.Conn, frame []byte) server.Action {
	st, _ := c.Context().(*respConn)
	if st == nil {
		st = &respConn{}
		c.SetContext(st)
	}
	args, err := resp.ServerCodec{Codec: h.codec}.Parse(frame, st.args[:0])
	if err != nil {
		_ = c.Write(resp.AppendProtocolError(st.out[:0], err))
		_ = c.CloseWithError(err)
		return server.None
	}
	if len(args) == 0 { // an empty command: no reply, like redis-server
		return server.None
	}
	out, act := h.Exec(st.out[:0], args, h.clock().UnixNano())
	clear(args) // drop references into the loop's read buffer
	st.args = args[:0]
	if len(out) > 0 {
		if err := c.Write(out); err != nil {
			_ = c.CloseWithError(err)
			return server.None
		}
	}
	if cap(out) <= keepOutBytes {
		st.out = out[:0]
	} else {
		st.out = make([]byte, 0, initOutBytes) // a big MGET reply does not stay pinned
	}
	return act
}

// OnClose does nothing: the scratch space goes with the connection.
func (h *RESPHandler) OnClose(*server.Conn, error) {}

// Exec runs the command args (name first; at least one argument) at now
// (unix nanoseconds) and appends its RESP reply to dst. The Action is
// server.Close after QUIT, else server.None. It does not allocate for GET,
// SET, INCR, DEL, EXISTS, PING and ECHO when dst has room.
func (h *RESPHandler) Exec(dst []byte, args [][]byte, now int64) ([]byte, server.Action) {
	id := lookup(args[0])
	if id < 0 {
		return appendUnknownCommand(dst, args), server.None
	}
	ci := &commands[id]
	if !ci.arityOK(len(args)) {
		return appendArityError(dst, ci.name), server.None
	}
	switch id {
	case cmdGet:
		if out, ok := h.store.Get(dst, args[1], now, resp.AppendBulk); ok {
			return out, server.None
		}
		return resp.AppendNullBulk(dst), server.None
	case cmdSet:
		return h.set(dst, args, now), server.None
	case cmdPing:
		switch len(args) {
		case 1:
			return resp.AppendSimpleString(dst, "PONG"), server.None
		case 2:
			return resp.AppendBulk(dst, args[1]), server.None
		}
		return appendArityError(dst, ci.name), server.None
	case cmdEcho:
		return resp.AppendBulk(dst, args[1]), server.None
	case cmdIncr:
		return h.incr(dst, args[1], now), server.None
	case cmdDel, cmdExists:
		var n int64
		for _, k := range args[1:] {
			if (id == cmdDel && h.store.Delete(k, now)) || (id == cmdExists && h.store.Exists(k, now)) {
				n++
			}
		}
		return resp.AppendInt(dst, n), server.None
	case cmdMGet:
		dst = resp.AppendArrayHeader(dst, len(args)-1)
		for _, k := range args[1:] {
			var ok bool
			if dst, ok = h.store.Get(dst, k, now, resp.AppendBulk); !ok {
				dst = resp.AppendNullBulk(dst)
			}
		}
		return dst, server.None
	case cmdMSet:
		return h.mset(dst, args, now), server.None
	case cmdCommand:
		return appendCommand(dst, args), server.None
	case cmdInfo:
		return h.info(dst, args, now), server.None
	case cmdQuit:
		return resp.AppendSimpleString(dst, "OK"), server.Close
	case cmdConfig:
		return h.config(dst, args), server.None
	case cmdSelect:
		if v, ok := resp.ParseInt(args[1]); ok && v == 0 {
			return resp.AppendSimpleString(dst, "OK"), server.None
		}
		return resp.AppendError(dst, errDBRange), server.None
	}
	return appendUnknownCommand(dst, args), server.None
}

// set runs SET key value [NX|XX] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
func (h *RESPHandler) set(dst []byte, args [][]byte, now int64) []byte {
	var o SetOptions
	expiry := false
	for i := 3; i < len(args); i++ {
		a := args[i]
		switch {
		case resp.EqualFold(a, "NX") && !o.XX:
			o.NX = true
		case resp.EqualFold(a, "XX") && !o.NX:
			o.XX = true
		case resp.EqualFold(a, "KEEPTTL") && !expiry:
			o.KeepTTL = true
		case (resp.EqualFold(a, "EX") || resp.EqualFold(a, "PX") || resp.EqualFold(a, "EXAT") || resp.EqualFold(a, "PXAT")) &&
			!expiry && !o.KeepTTL && i+1 < len(args):
			i++
			at, ok := expireAt(a, args[i], now)
			if !ok {
				return resp.AppendError(dst, errExpire)
			}
			o.ExpireAt, expiry = at, true
		default:
			return resp.AppendError(dst, errSyntax)
		}
	}
	ok, err := h.store.Set(args[1], args[2], now, o)
	switch {
	case err != nil:
		return appendStoreError(dst, err)
	case !ok:
		return resp.AppendNullBulk(dst)
	}
	return resp.AppendSimpleString(dst, "OK")
}

// expireAt turns SET's expiry option opt with argument arg into unix
// nanoseconds; false for a non-positive or overflowing time.
func expireAt(opt, arg []byte, now int64) (int64, bool) {
	v, ok := resp.ParseInt(arg)
	if !ok || v <= 0 {
		return 0, false
	}
	unit := int64(time.Millisecond)
	if opt[0] == 'e' || opt[0] == 'E' { // EX, EXAT: seconds
		unit = int64(time.Second)
	}
	if v > math.MaxInt64/unit {
		return 0, false
	}
	d := v * unit
	if len(opt) == 4 { // EXAT, PXAT: absolute
		return d, true
	}
	if d > math.MaxInt64-now {
		return 0, false
	}
	return now + d, true
}

// incr runs INCR key.
func (h *RESPHandler) incr(dst, key []byte, now int64) []byte {
	v, err := h.store.Incr(key, 1, now)
	if err != nil {
		return appendStoreError(dst, err)
	}
	return resp.AppendInt(dst, v)
}

// mset runs MSET key value [key value ...]. Sizes are checked before the
// first write so an oversized value changes nothing; a full store can
// still stop it part way (MSET is atomic per key, not across keys).
func (h *RESPHandler) mset(dst []byte, args [][]byte, now int64) []byte {
	if len(args)%2 != 1 {
		return appendArityError(dst, "mset")
	}
	for i := 2; i < len(args); i += 2 {
		if len(args[i]) > h.store.cfg.MaxValueBytes {
			return appendStoreError(dst, ErrValueTooLarge)
		}
	}
	for i := 1; i < len(args); i += 2 {
		if _, err := h.store.Set(args[i], args[i+1], now, SetOptions{}); err != nil {
			return appendStoreError(dst, err)
		}
	}
	return resp.AppendSimpleString(dst, "OK")
}

// appendStoreError appends the RESP error for a Store error.
func appendStoreError(dst []byte, err error) []byte {
	switch {
	case errors.Is(err, ErrNotInteger):
		return resp.AppendError(dst, errNotInteger)
	case errors.Is(err, ErrOverflow):
		return resp.AppendError(dst, errOverflow)
	case errors.Is(err, ErrStoreFull):
		return resp.AppendError(dst, errOOM)
	case errors.Is(err, ErrValueTooLarge):
		return resp.AppendError(dst, errTooLarge)
	}
	return resp.AppendError(dst, "ERR "+err.Error())
}

// appendArityError appends redis's wrong-arity error for command name.
func appendArityError(dst []byte, name string) []byte {
	dst = append(dst, "-ERR wrong number of arguments for '"...)
	dst = append(dst, name...)
	return append(dst, "' command\r\n"...)
}

// appendUnknownCommand appends redis 7's unknown-command error: "-ERR
// unknown command 'foo', with args beginning with: 'a' 'b' ". Quoted
// arguments are cut at maxErrArgBytes, CR and LF become spaces.
func appendUnknownCommand(dst []byte, args [][]byte) []byte {
	dst = append(dst, "-ERR unknown command '"...)
	dst = appendErrText(dst, args[0])
	dst = append(dst, "', with args beginning with: "...)
	for i, a := range args[1:] {
		if i == maxErrArgs {
			break
		}
		dst = append(dst, '\'')
		dst = appendErrText(dst, a)
		dst = append(dst, "' "...)
	}
	return append(dst, "\r\n"...)
}

// appendErrText appends b, cut at maxErrArgBytes, with CR and LF as spaces.
func appendErrText[T string | []byte](dst []byte, b T) []byte {
	n := min(len(b), maxErrArgBytes)
	for i := 0; i < n; i++ {
		c := b[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}
