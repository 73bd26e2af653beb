# sluice — see README.md. Every target works from a clean clone on Linux with Go.
SHELL := /bin/bash
GO ?= go
export GOFLAGS := -buildvcs=false

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 3s
PKGS := ./...
# The comparison lab is a module of its own in lab/ (gnet and gonum stay out of the product's go.mod); vet, crossbuild, staticcheck and unit check it too.
LAB := lab

.PHONY: run run-kv test vet crossbuild lint staticcheck unit unit-uring allocs allocs-uring fuzz fuzz-smoke bench bench-micro bench-external fmt
.PHONY: examples

## run: start the echo server on 127.0.0.1:7000 (Ctrl-C stops it).
run:
	$(GO) run ./cmd/echo $(ARGS)

## run-kv: start the key-value example server.
run-kv:
	$(GO) run ./cmd/kv $(ARGS)

## test: vet, a build for another OS, staticcheck, the race-enabled test suite, the allocation tests without -race, and every fuzz target briefly from its corpus (the product's module and the lab's).
test: vet crossbuild staticcheck unit unit-uring allocs allocs-uring fuzz-smoke examples

vet:
	$(GO) vet $(PKGS)
	cd $(LAB) && $(GO) vet ./...

## crossbuild: everything compiles off Linux (the engine returns ErrUnsupported there).
crossbuild:
	GOOS=darwin $(GO) build $(PKGS)
	cd $(LAB) && GOOS=darwin $(GO) build ./...

staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)
	cd $(LAB) && $(GO) run $(STATICCHECK) ./...

lint: fmt vet crossbuild staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## unit: every package's tests under the race detector, the lab's too (TestExamples, which builds and runs the example programs, runs once, in examples).
unit:
	$(GO) test -race -count=1 -timeout 10m -skip '^TestExamples$$' $(PKGS)
	cd $(LAB) && $(GO) test -race -count=1 -timeout 10m ./...

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

## fuzz-smoke: each fuzz target of both modules for FUZZTIME (default 3s), starting from its committed corpus, FUZZJOBS (default 2) at a time.
fuzz-smoke:
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz

## fuzz: each fuzz target for longer (FUZZTIME=2m make fuzz).
fuzz:
	FUZZTIME=$${FUZZTIME:-60s} bash .ci/fuzz

## bench-micro: package benchmarks with allocation counts.
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./ringq ./ioflush ./protocol/... ./server ./admission/... ./resilience ./internal/...

## bench: the default comparison matrix (sluice, gnet, net) and the report in docs/; the lab runs in lab/, so paths in ARGS are relative to lab/.
bench:
	cd $(LAB) && $(GO) run ./cmd/bench compare $(ARGS)

## bench-external: redis-benchmark and wrk against sluice and the peers.
bench-external:
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && command -v wrk >/dev/null || (apt-get update && apt-get install -y redis-server redis-tools wrk)
	cd $(LAB) && $(GO) run ./cmd/bench external $(ARGS)
