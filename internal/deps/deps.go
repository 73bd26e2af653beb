//go:build tools

// Package deps pins the modules the packages under construction will use, so
// that go mod tidy keeps them while those packages are written. It is removed
// once every module is imported by real code.
package deps

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/panjf2000/gnet/v2"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/valyala/bytebufferpool"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sys/unix"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/plotutil"
	_ "gonum.org/v1/plot/vg"
)
