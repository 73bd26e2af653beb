package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
)

// The package's usage sketch: a line echo server. Serve(ctx) runs it until
// ctx ends and then shuts it down gracefully; this example uses Start and
// Shutdown so that it can talk to it in between.
func Example() {
	e, err := server.New(server.Config{
		Addr:  "127.0.0.1:0", // a free loopback port; read it back with Addr
		Codec: protocol.Delimited{},
	}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			if err := c.WriteFrame(frame); err != nil { // echo: the codec adds the '\n'
				return server.Close
			}
			return server.None
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer e.Shutdown(context.Background())

	conn, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(conn, "hello\nworld\n")
	r := bufio.NewReader(conn)
	for range 2 {
		line, _ := r.ReadString('\n')
		fmt.Print(line)
	}
	// Output:
	// hello
	// world
}

// An AdmitFunc is the simple admission seam: one decision per frame. A
// refused frame never reaches the handler; the codec's Rejecter answers it
// with the reason and a retry-after ("-REJECT tenant 250" for the line
// codec), and the connection stays open.
func ExampleAdmitFunc() {
	e, err := server.New(server.Config{
		Codec: protocol.Delimited{},
		Admission: server.AdmitFunc(func(c *server.Conn, frame []byte, now time.Time) server.Verdict {
			if string(frame) == "spam" {
				return server.Verdict{Reject: true, Reason: "tenant", RetryAfter: 250 * time.Millisecond}
			}
			return server.Verdict{}
		}),
	}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			c.Write([]byte("ok\n"))
			return server.None
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range exchange(e, "hi\nspam\nhi\n", 3) {
		fmt.Println(line)
	}
	// Output:
	// ok
	// -REJECT tenant 250
	// ok
}

// An AdmissionPolicy puts an admission.Admitter in front of the handler:
// here a per-tenant quota of 2 requests (keyed by peer address) and CoDel
// on each frame's queueing delay. server.New hands the Admitter what the
// engine owns (its loops, MaxConns, MaxQueuedBytes).
func ExampleAdmissionPolicy() {
	tenants, err := admission.NewTenantLimiter(admission.TenantConfig{
		Quota: admission.Quota{Count: 1, Per: time.Hour, Burst: 2}})
	if err != nil {
		fmt.Println(err)
		return
	}
	adm, err := admission.NewAdmitter(admission.Config{
		Tenants: tenants,
		CoDel:   &admission.CoDelConfig{}, // the loop sheds on queueing delay
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := server.New(server.Config{
		Codec:     protocol.Delimited{},
		MaxConns:  1000,
		Admission: server.AdmissionPolicy{Admitter: adm, MaxQueueDelay: 50 * time.Millisecond},
	}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			c.Write([]byte("ok\n"))
			return server.None
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("conns budget:", adm.Budgets().MaxConns)
	for _, line := range exchange(e, "a\nb\nc\n", 3) {
		if reason, _, refused := protocol.ParseRejectText([]byte(line)); refused {
			fmt.Println("refused:", reason)
		} else {
			fmt.Println(line)
		}
	}
	// Output:
	// conns budget: 1000
	// ok
	// ok
	// refused: tenant
}

// exchange starts e, sends input on one connection, reads n lines back
// (without their '\n') and shuts e down.
func exchange(e *server.Engine, input string, n int) []string {
	if err := e.Start(); err != nil {
		return []string{err.Error()}
	}
	defer e.Shutdown(context.Background())
	conn, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		return []string{err.Error()}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(conn, input)
	r := bufio.NewReader(conn)
	var lines []string
	for range n {
		line, err := r.ReadString('\n')
		if err != nil {
			return append(lines, err.Error())
		}
		lines = append(lines, strings.TrimSuffix(line, "\n"))
	}
	return lines
}
