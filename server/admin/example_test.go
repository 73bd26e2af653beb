package admin_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sluicenet/sluice/server"
	"github.com/sluicenet/sluice/server/admin"
	"github.com/sluicenet/sluice/server/metrics"
)

// An admin server over a stats source (an *server.Engine in a command),
// with /readyz failing once draining begins.
func ExampleNew() {
	src := metrics.SourceFunc(func() server.Stats { return server.Stats{GateOpen: true} })
	adm, err := admin.New("127.0.0.1:0", admin.Config{Stats: src})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer adm.Shutdown(context.Background())

	readyz := "http://" + adm.Addr().String() + "/readyz"
	for _, draining := range []bool{false, true} {
		adm.SetDraining(draining)
		resp, err := client.Get(readyz)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println("draining", draining, "->", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	// Output:
	// draining false -> 200 OK
	// draining true -> 503 Service Unavailable
}
