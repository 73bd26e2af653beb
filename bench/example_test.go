package bench_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluicenet/sluice/bench"
)

// ExampleLoad drives a server that echoes length-prefixed frames with 64
// connections of 16 requests in flight each, and prints the summary. (It is
// compiled, not run: it needs a server on 127.0.0.1:7000, such as
// "go run ./cmd/echo".)
func ExampleLoad() {
	res, err := bench.Load(context.Background(), bench.LoadConfig{
		Addr: "127.0.0.1:7000", Codec: bench.CodecLength,
		Conns: 64, InFlight: 16, Size: bench.FixedSize(64),
		Warmup: time.Second, Duration: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(bench.FormatLoadResult(res))
	fmt.Printf("p99 %.0f µs at %.0f msg/s\n", res.Latency.P99Micros, res.MsgsPerSec)
}

// ExampleLoad_openLoop offers 20,000 requests a second over 8 RESP
// connections, whatever the server does, and reports how many sends the
// generator issued late or could not issue. (Compiled, not run: it needs
// redis-server or "go run ./cmd/kv" on 127.0.0.1:6380.)
func ExampleLoad_openLoop() {
	res, err := bench.Load(context.Background(), bench.LoadConfig{
		Addr: "127.0.0.1:6380", Codec: bench.CodecRESP,
		Conns: 8, Size: bench.FixedSize(32), RatePerSec: 20_000,
		Warmup: time.Second, Duration: 10 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("p99.9 %.0f µs, late %d, missed %d, rejected %d\n",
		res.Latency.P999Micros, res.Late, res.Missed, res.Rejected)
}
