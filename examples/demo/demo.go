// Package demo holds the lines every example program shares and none is
// about: the -duration flag, stopping on SIGINT or SIGTERM, and the
// "listening on HOST:PORT" line that tells a script or test where the
// example listens.
//
// It refuses to own anything an example demonstrates: codecs, handlers
// and engine configuration stay in the example's own main.go. It is not
// internal, so a program copied out of examples/ builds in its own module
// as it is (or with these few lines pasted in).
package demo

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicenet/sluice/server"
)

// duration is the -duration flag, registered with the command line of
// every example that imports this package.
var duration = flag.Duration("duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")

// Context returns a context that ends at SIGINT, SIGTERM, or when
// -duration has passed (if set). Call it after flag.Parse.
func Context() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if *duration <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, *duration)
	return ctx, func() { cancel(); stop() }
}

// Serve takes server.New's results: it starts e, prints "listening on
// HOST:PORT" on stdout, serves until Context ends and shuts e down
// gracefully. On any error it logs it and exits with status 1.
func Serve(e *server.Engine, err error) {
	ctx, stop := Context() // before the "listening on" line: a signal after it stops e gracefully
	defer stop()
	if err == nil {
		err = e.Start()
	}
	if err == nil {
		fmt.Println("listening on", e.Addr())
		err = e.Serve(ctx)
	}
	if err != nil {
		stop()
		log.Fatal(err)
	}
}
