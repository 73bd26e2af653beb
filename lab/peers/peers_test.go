package peers

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"net"
	"runtime"
	"testing"
	"time"
)

// startPeer runs a peer in this process and returns its address; the peer is
// stopped (and Serve must have returned nil) when the test ends.
func startPeer(t *testing.T, kind Kind, codec string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrCh := make(chan string, 1)
	errCh := make(chan error, 1)
	go func() {
		errCh <- Serve(ctx, Config{Kind: kind, Codec: codec, Addr: "127.0.0.1:0", Loops: 2}, func(a net.Addr) { addrCh <- a.String() })
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case err := <-errCh:
		cancel()
		t.Fatalf("%s/%s: %v", kind, codec, err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("%s/%s: not ready", kind, codec)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errCh:
			if err != nil {
				t.Errorf("%s/%s: Serve returned %v", kind, codec, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s/%s: Serve did not return after cancel", kind, codec)
		}
	})
	return addr
}

// frame encodes payload for codec.
func frame(codec string, payload []byte) []byte {
	switch codec {
	case "length":
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
	case "line":
		return append(append([]byte(nil), payload...), '\n')
	}
	return payload
}

func TestPeersEchoEveryCodecAcrossSplits(t *testing.T) {
	kinds := []Kind{KindGnet, KindNet}
	if runtime.GOOS == "linux" {
		kinds = append(kinds, KindTrivial)
	}
	rng := rand.New(rand.NewSource(1))
	for _, kind := range kinds {
		for _, codec := range []string{"raw", "length", "line"} {
			addr := startPeer(t, kind, codec)
			// Three connections, each sending frames of 1 B to 20 KiB in random
			// pieces; the echo must be the exact byte stream.
			for c := 0; c < 3; c++ {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				var stream []byte
				for i := 0; i < 40; i++ {
					n := 1 + rng.Intn(20<<10)
					if i%4 != 0 {
						n = 1 + rng.Intn(100)
					}
					p := bytes.Repeat([]byte{byte('a' + i%26)}, n)
					stream = append(stream, frame(codec, p)...)
				}
				got := make([]byte, len(stream))
				done := make(chan error, 1)
				go func() { _, err := io.ReadFull(conn, got); done <- err }()
				for rest := stream; len(rest) > 0; {
					k := min(len(rest), 1+rng.Intn(3000))
					if _, err := conn.Write(rest[:k]); err != nil {
						t.Fatalf("%s/%s: write: %v", kind, codec, err)
					}
					rest = rest[k:]
				}
				if err := <-done; err != nil {
					t.Fatalf("%s/%s: read echo: %v", kind, codec, err)
				}
				if !bytes.Equal(got, stream) {
					t.Fatalf("%s/%s: echo differs from what was sent", kind, codec)
				}
				conn.Close()
			}
		}
	}
}

func TestPeersCloseOnMalformedFrame(t *testing.T) {
	for _, kind := range []Kind{KindGnet, KindNet} {
		addr := startPeer(t, kind, "length")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		// A length above the 1 MiB default maximum: the codec rejects it and
		// the peer closes the connection.
		if _, err := conn.Write([]byte{0x7f, 0, 0, 0, 'x'}); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if _, err := conn.Read(buf); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			var ne *net.OpError
			if !errors.As(err, &ne) {
				t.Fatalf("%s: read after a malformed frame: %v, want the connection closed", kind, err)
			}
		}
		conn.Close()
	}
}

func TestServeRejectsUnknown(t *testing.T) {
	err := Serve(context.Background(), Config{Kind: "nginx", Codec: "raw", Addr: "127.0.0.1:0"}, func(net.Addr) {})
	if !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("unknown kind: %v", err)
	}
	if err := Serve(context.Background(), Config{Kind: KindNet, Codec: "morse", Addr: "127.0.0.1:0"}, func(net.Addr) {}); err == nil {
		t.Fatal("unknown codec accepted")
	}
}
