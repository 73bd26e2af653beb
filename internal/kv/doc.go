// Package kv is the logic of the sluice key-value example server (cmd/kv):
// a sharded in-memory store, the RESP2 command set redis-cli and
// redis-benchmark need, the envelope methods with deadlines, idempotency
// keys and a simulated dependency behind resilience tools, and the
// server.Handler, codec and admission policy that put them on the
// sluice engine.
//
// It owns:
//   - Store: keys and values with expiry, bounded by keys, bytes and value
//     size, time passed in; the steady GET/SET paths do not allocate.
//   - RESPHandler: PING, ECHO, GET, SET (NX, XX, EX, PX, EXAT, PXAT,
//     KEEPTTL), DEL, INCR, EXISTS, MGET, MSET, COMMAND (COUNT, LIST, INFO,
//     DOCS), INFO (with a "# sluice" section of engine Stats), QUIT, CONFIG
//     GET, SELECT 0; redis's error texts; Exec is transport-free.
//   - EnvelopeHandler: GET, PUT, DELETE, INCR, PING over the envelope;
//     reads inline on the loop, blocking work (dependency calls, a Redis
//     idempotency store) in a bounded worker pool that answers through
//     Conn.Write; deadlines checked before work starts; idempotent replay,
//     conflicts and mismatches through an admission.Store.
//   - The engine's codecs are the public resp.ServerCodec (framing errors
//     passed through to the handler, which answers them as redis does) and
//     envelope.Codec; admission refusals reach the client through their
//     rejecters as "-ERR/-BUSY ... retry in N ms" or an envelope reject
//     with status and retry-after.
//   - TenantPolicy: the engine's admission policy over an
//     admission.TenantLimiter.
//   - Start/Server: the wiring cmd/kv runs, reused by the tests.
//
// It refuses to own framing and reply encoding (protocol/resp,
// protocol/envelope), the event loop (server), policy (admission,
// resilience) and persistence: nothing is written to disk, and CONFIG GET
// says so (save "", appendonly "no").
//
// The envelope payloads: GET, DELETE and INCR carry the key; PUT carries
// uvarint(len(key)) key value (AppendPut). GET answers the value, or
// StatusBadRequest "no such key"; DELETE "1" or "0"; INCR the new value in
// decimal; PUT an empty payload.
//
// Usage sketch (what cmd/kv does):
//
//	s, err := kv.Start(kv.Options{Proto: kv.ProtoRESP, Engine: server.Config{Addr: "127.0.0.1:6380"}})
//	if err != nil { ... }
//	fmt.Println("listening on", s.Addr())
//	<-ctx.Done()
//	err = s.Shutdown(shutdownCtx)
//
// or, with a custom engine:
//
//	store, _ := kv.NewStore(kv.Config{})
//	codec := resp.Codec{}
//	h := kv.NewRESPHandler(store, codec, nil)
//	e, _ := server.New(server.Config{Codec: resp.ServerCodec{Codec: codec}}, h)
//	h.SetEngine(e)
package kv
