// Command admission puts admission control in front of a line server:
// each tenant (here the peer's address) gets a quota of -rate lines a
// second with bursts of -burst, and CoDel sheds lines that queued longer
// than the target while the loop is overloaded. A refused line never
// reaches the handler; the codec answers it in the protocol, with the
// reason and when to retry ("-REJECT tenant 98": come back in 98 ms), and
// the connection stays open.
//
//	go run ./examples/admission -addr 127.0.0.1:7103 -rate 5 -burst 5
//	yes hello | head -20 | nc 127.0.0.1 7103   # 5 "ok", then refusals
package main

import (
	"flag"
	"log"
	"time"

	"github.com/sluicenet/sluice/admission"
	"github.com/sluicenet/sluice/examples/demo"
	"github.com/sluicenet/sluice/protocol"
	"github.com/sluicenet/sluice/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7103", "listen address (port 0: any free port)")
	rate := flag.Int64("rate", 5, "lines per second per tenant")
	burst := flag.Int64("burst", 5, "lines a tenant may send at once")
	flag.Parse()
	tenants, err := admission.NewTenantLimiter(admission.TenantConfig{
		Quota:      admission.Quota{Count: *rate, Per: time.Second, Burst: *burst},
		MaxTenants: 10000, // memory stays bounded however many peers come
	})
	if err != nil {
		log.Fatal(err)
	}
	adm, err := admission.NewAdmitter(admission.Config{
		Tenants: tenants,
		CoDel:   &admission.CoDelConfig{}, // shed on queueing delay (default target)
	})
	if err != nil {
		log.Fatal(err)
	}
	demo.Serve(server.New(server.Config{
		Addr:      *addr,
		Codec:     protocol.Delimited{MaxFrameBytes: 1024}, // its Rejecter writes "-REJECT <reason> <ms>"
		MaxConns:  1000,
		Admission: server.AdmissionPolicy{Admitter: adm, MaxQueueDelay: 50 * time.Millisecond},
	}, server.HandlerFuncs{
		Frame: func(c *server.Conn, frame []byte) server.Action {
			if err := c.Write([]byte("ok\n")); err != nil {
				return server.Close
			}
			return server.None
		},
	}))
}
