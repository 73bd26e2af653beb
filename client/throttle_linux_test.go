package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicenet/sluice/protocol/envelope"
	"github.com/sluicenet/sluice/resilience"
	"github.com/sluicenet/sluice/server"
)

// startSluice starts a real sluice engine on loopback with the envelope
// codec; handle answers each request frame. It counts the frames it got.
func startSluice(t *testing.T, handle func(c *server.Conn, frame []byte, m *envelope.Message)) (addr string, frames *atomic.Int64) {
	t.Helper()
	frames = new(atomic.Int64)
	e, err := server.New(server.Config{Addr: "127.0.0.1:0", Codec: envelope.Codec{}, Loops: 1}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			frames.Add(1)
			var m envelope.Message
			if err := envelope.Parse(frame, &m); err != nil {
				t.Errorf("server: bad frame: %v", err)
				return server.Close
			}
			handle(c, frame, &m)
			return server.None
		},
	})
	if err == nil {
		err = e.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	return e.Addr().String(), frames
}

// refuseAll answers every request with the codec's reject for a global
// budget at its cap (envelope status unavailable), as an overloaded sluice
// server sheds.
func refuseAll(c *server.Conn, frame []byte, _ *envelope.Message) {
	_ = c.Reject(frame, "global", time.Millisecond)
}

func acceptAll(c *server.Conn, _ []byte, m *envelope.Message) {
	_ = c.Write(envelope.AppendResponse(nil, m.RequestID, envelope.StatusOK, m.Payload))
}

// TestThrottleAgainstRefusingSluice: N one-attempt calls to a sluice server
// that refuses everything. Once the window holds 20 requests the client
// refuses locally with probability requests/(requests+1) (no accepts),
// capped at 0.9, so the server sees the first 20 and then about one call
// in ten; every other call fails with ErrThrottled and never reaches it.
// Counted, not timed.
func TestThrottleAgainstRefusingSluice(t *testing.T) {
	addr, frames := startSluice(t, refuseAll)
	th, _ := resilience.NewThrottle(resilience.ThrottleConfig{Rand: rand.NewPCG(7, 8)})
	c := newClient(t, Config{Addr: addr, Conns: 1, Throttle: th, Retry: resilience.RetryPolicy{MaxAttempts: 1}})
	const n = 400
	refused, throttled := 0, 0
	for i := range n {
		_, err := c.Do(context.Background(), &Request{Method: "GET", Idempotent: true})
		var se *StatusError
		switch {
		case errors.Is(err, ErrThrottled):
			throttled++
			if resilience.Classify(err) != resilience.ClassOverloaded || !errors.Is(err, resilience.ErrOverloaded) {
				t.Fatalf("call %d: %v classifies as %v, want overloaded", i, err, resilience.Classify(err))
			}
		case errors.As(err, &se) && se.Rejected && se.Status == envelope.StatusUnavailable:
			refused++
		default:
			t.Fatalf("call %d: %v, want the server's reject or ErrThrottled", i, err)
		}
	}
	seen := int(frames.Load())
	st := c.ThrottleStats()
	t.Logf("%d calls: the server saw %d (refused them all), %d were refused locally; %+v", n, seen, throttled, st)
	if seen != refused || refused+throttled != n {
		t.Fatalf("server saw %d, %d refused by it, %d throttled: want every call accounted for once", seen, refused, throttled)
	}
	if seen >= n/2 {
		t.Fatalf("the server saw %d of %d calls: the throttle did not hold the client back", seen, n)
	}
	// Past the floor, a request reaches the server with probability
	// 1 − MaxProbability = 0.1: about 20 + 38 (σ ≈ 6); 35 to 90 is far
	// outside any seed's draw.
	if seen < 35 || seen > 90 {
		t.Fatalf("server saw %d, want the 20-request floor and about a tenth of the rest", seen)
	}
	if st.Requests != n || st.Accepts != 0 || st.LocalRefusals != int64(throttled) {
		t.Fatalf("ThrottleStats %+v", st)
	}
}

// TestThrottleNeverAgainstAcceptingSluice: a server that accepts every
// request is never throttled, under concurrency too.
func TestThrottleNeverAgainstAcceptingSluice(t *testing.T) {
	addr, frames := startSluice(t, acceptAll)
	c := newClient(t, Config{Addr: addr})
	const workers, per = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*per)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if _, err := c.Call(context.Background(), "GET", []byte("x")); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("call failed: %v", err)
	}
	st := c.ThrottleStats()
	if n := int64(workers * per); st.Requests != n || st.Accepts != n || st.LocalRefusals != 0 || st.Probability != 0 || frames.Load() != n {
		t.Fatalf("ThrottleStats %+v, server saw %d: want %d requests, all accepted", st, frames.Load(), n)
	}
}
