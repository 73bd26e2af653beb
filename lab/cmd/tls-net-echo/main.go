// Command tls-net-echo is cmd/echo's "-codec length" echo over TLS written
// the way a Go programmer would write it with the standard library:
// net.Listen wrapped by tls.NewListener, one goroutine per connection, a
// bufio.Reader that reads frames (a 4-byte big-endian length, then that
// many bytes, at most 1 MiB as protocol.DefaultMaxFrameBytes) and a
// bufio.Writer that writes each frame back and is flushed when no more
// input is buffered. It exists for docs/TLS.md's comparison
// (lab/tls-compare.sh runs cmd/sluiceload against it and cmd/echo).
//
// TLS: TLS 1.3 only (-tls13-only=false also accepts 1.2), X25519 preferred
// over P-256 (CurvePreferences, no post-quantum hybrid), the standard
// library's session tickets (on by default), and a 10-second handshake
// deadline like the engine's default TLSHandshakeTimeout.
//
//	go run ./cmd/tls-net-echo -addr 127.0.0.1:0 -cert cert.pem -key key.pem
//
// It prints "listening on HOST:PORT" once it listens (port 0 picks a free
// port) and exits 0 after SIGINT or SIGTERM, having closed every
// connection; it then prints on stderr how many handshakes were full and
// how many resumed, and the negotiated version, cipher suite and key
// exchange of each kind, so a comparison can check what it measured.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxFrameBytes is the largest payload accepted, as the engine's default.
const maxFrameBytes = 1 << 20

// handshakeTimeout bounds a handshake, as the engine's default.
const handshakeTimeout = 10 * time.Second

// headerBytes is the size of the big-endian length prefix.
const headerBytes = 4

// tlsConfig returns the server's TLS configuration for the PEM pair.
func tlsConfig(certFile, keyFile string, tls13Only bool) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		Certificates:     []tls.Certificate{pair},
		MinVersion:       tls.VersionTLS12,
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
	}
	if tls13Only {
		cfg.MinVersion = tls.VersionTLS13
	}
	return cfg, nil
}

// server is the listener, its live connections and the handshake tally.
type server struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	tally  map[string]int // "full|resumed version cipher group" → handshakes
}

// track adds c to the live set; it reports false once the server is closing.
func (s *server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// count records one completed handshake's negotiated parameters.
func (s *server) count(st tls.ConnectionState) {
	kind := "full"
	if st.DidResume {
		kind = "resumed"
	}
	key := fmt.Sprintf("%s %s %s %s", kind, tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), st.CurveID)
	s.mu.Lock()
	s.tally[key]++
	s.mu.Unlock()
}

// summary is the tally as one line, keys sorted.
func (s *server) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tally) == 0 {
		return "handshakes: none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.tally)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, s.tally[k]))
	}
	return "handshakes: " + strings.Join(parts, "; ")
}

// handle runs one connection until the peer closes it or a frame is bad.
func (s *server) handle(c *tls.Conn) {
	defer s.wg.Done()
	defer s.untrack(c)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := c.Handshake(); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	s.count(c.ConnectionState())
	_ = echo(bufio.NewReader(c), bufio.NewWriter(c))
}

// errFrameTooLarge closes a connection whose header declares more than
// maxFrameBytes.
var errFrameTooLarge = errors.New("frame too large")

// echo writes every length-prefixed frame read from r back to w, flushing
// when r has nothing buffered (crypto/tls may still hold decrypted bytes
// that bufio cannot see; then the flush is merely early). It returns the
// error that ended the stream (io.EOF after a clean end).
func echo(r *bufio.Reader, w *bufio.Writer) error {
	var hdr [headerBytes]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrameBytes {
			return errFrameTooLarge
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		body := buf[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(body); err != nil {
			return err
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// serve listens on addr with cfg and serves until ctx ends (it returns nil
// then, after every connection has closed) or Accept fails; ready gets the
// listening address. The tally line goes to logf when it returns.
func serve(ctx context.Context, addr string, cfg *tls.Config, ready func(string), logf func(string, ...any)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s := &server{ln: tls.NewListener(ln, cfg), conns: map[net.Conn]struct{}{}, tally: map[string]int{}}
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.closed = true
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		_ = s.ln.Close()
	})
	defer stop()
	ready(ln.Addr().String())
	for {
		c, err := s.ln.Accept()
		if err != nil {
			_ = s.ln.Close()
			s.wg.Wait()
			if logf != nil {
				logf("%s", s.summary())
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !s.track(c) {
			_ = c.Close()
			continue
		}
		s.wg.Add(1)
		go s.handle(c.(*tls.Conn))
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0: any free port)")
	cert := flag.String("cert", "", "PEM certificate (chain) file")
	key := flag.String("key", "", "PEM private key file of -cert")
	tls13Only := flag.Bool("tls13-only", true, "accept TLS 1.3 only (false: 1.2 too)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("tls-net-echo: ")
	if *cert == "" || *key == "" {
		log.Fatal("-cert and -key are required")
	}
	cfg, err := tlsConfig(*cert, *key, *tls13Only)
	if err != nil {
		log.Fatal(err)
	}
	// Catch the signals before announcing the address: a supervisor may
	// send SIGTERM as soon as it reads the line.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, cfg, func(a string) { fmt.Println("listening on", a) }, log.Printf); err != nil {
		stop()
		log.Fatal(err)
	}
}
