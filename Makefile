# sluice — see README.md. Every target works from a clean clone on Linux with Go.
SHELL := /bin/bash
GO ?= go
export GOFLAGS := -buildvcs=false

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 3s
PKGS := ./...

.PHONY: run run-kv test vet crossbuild lint staticcheck unit unit-uring allocs allocs-uring fuzz fuzz-smoke bench bench-micro bench-external fmt
.PHONY: examples

## run: start the echo server on 127.0.0.1:7000 (Ctrl-C stops it).
run:
	$(GO) run ./cmd/echo $(ARGS)

## run-kv: start the key-value example server.
run-kv:
	$(GO) run ./cmd/kv $(ARGS)

## test: vet, a build for another OS, staticcheck, the race-enabled test suite, the allocation tests without -race, and every fuzz target briefly from its corpus.
test: vet crossbuild staticcheck unit unit-uring allocs allocs-uring fuzz-smoke
test: examples

vet:
	$(GO) vet $(PKGS)

## crossbuild: everything compiles off Linux (the engine returns ErrUnsupported there).
crossbuild:
	GOOS=darwin $(GO) build $(PKGS)

staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)

lint: fmt vet crossbuild staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## unit: every package's tests under the race detector (TestExamples, which builds and runs the example programs, runs once, in examples).
unit:
	$(GO) test -race -count=1 -timeout 10m -skip '^TestExamples$$' $(PKGS)

## unit-uring: the engine's suite once more with every engine on the io_uring backend (where the kernel refuses io_uring the engines fall back to epoll and this repeats unit's run).
unit-uring:
	SLUICE_TEST_BACKEND=io_uring $(GO) test -race -count=1 -timeout 10m ./server/...

## allocs: the zero-allocation tests, which skip under -race (its bookkeeping allocates): this pass is the one that runs them.
allocs:
	$(GO) test -count=1 -timeout 5m -run 'Alloc' $(PKGS)

## allocs-uring: the engine's zero-allocation tests on the io_uring backend.
allocs-uring:
	SLUICE_TEST_BACKEND=io_uring $(GO) test -count=1 -timeout 5m -run 'Alloc' ./server/

## examples: build every program under examples/, run each on loopback, check one exchange, stop it by its pid.
examples:
	$(GO) test -count=1 -timeout 2m -run '^TestExamples$$' ./examples

## fuzz-smoke: each fuzz target for FUZZTIME (default 3s), starting from its committed corpus.
fuzz-smoke:
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz

## fuzz: each fuzz target for longer (FUZZTIME=2m make fuzz).
fuzz:
	FUZZTIME=$${FUZZTIME:-60s} bash .ci/fuzz

## bench-micro: package benchmarks with allocation counts.
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./ringq ./ioflush ./protocol/... ./server ./admission/... ./resilience ./internal/...

## bench: the default comparison matrix (sluice, gnet, net) and the report in docs/.
bench:
	$(GO) run ./cmd/bench compare $(ARGS)

## bench-external: redis-benchmark and wrk against sluice and the peers.
bench-external:
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && command -v wrk >/dev/null || (apt-get update && apt-get install -y redis-server redis-tools wrk)
	$(GO) run ./cmd/bench external $(ARGS)
