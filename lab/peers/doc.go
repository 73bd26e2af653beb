// Package peers holds the echo servers sluice is compared with: an idiomatic
// gnet v2 server, a standard-library net server with one goroutine per
// connection, and a trivial raw-epoll echo used only to measure the load
// generator's own ceiling; and two HTTP/1.1 peers for the wrk comparison
// (cmd/bench external, http.go): gnet-http runs sluice's own HTTP codec and
// responder (package internal/httpecho) on gnet, so that only the engines
// differ, and nethttp is the standard library's net/http server. c/ holds
// the sources of the two C floor servers (epoll_echo.c, uring_echo.c;
// CSource), which the runner compiles with cc.
//
// peers owns those servers and nothing else: the comparison runner (package
// lab) starts each one in its own process through cmd/bench peer, so a
// peer's heap, threads and GC never share a process with the load generator or
// with another server. Every peer speaks the same codecs as cmd/echo (raw,
// length, line; see package protocol), decodes each frame and encodes its echo
// with the same protocol.Codec sluice uses, and batches the replies of one read
// into one write. None of them is handicapped: the gnet server uses gnet's
// recommended options (one event loop per GOMAXPROCS, SO_REUSEPORT), the net
// server is the plain loop a Go programmer would write.
//
// peers refuses to own measurement, process management, building the C
// servers or reporting (package lab) and flag parsing (package lab/cli).
//
// Usage:
//
//	err := peers.Serve(ctx, peers.Config{Kind: peers.KindGnet, Codec: "length", Addr: "127.0.0.1:0"},
//		func(addr net.Addr) { fmt.Println("listening on", addr) })
package peers
