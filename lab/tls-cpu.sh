#!/usr/bin/env bash
# Server CPU per echoed 64-byte message and per handshake over TLS 1.3:
# sluice's echo (cmd/echo -codec length -loops 1 -tls-cert/-tls-key) beside
# lab/cmd/tls-net-echo (net + crypto/tls, a goroutine per connection,
# GOMAXPROCS=1), each alone on CPU 0, driven by lab/cmd/tls-load on CPU 1,
# which reads the server's CPU time over its measured window
# (-server-pid). Paired rounds, the order alternating; the client offers
# X25519 first (GODEBUG=tlsmlkem=0), so both servers do the same key
# exchange.
#
#	bash lab/tls-cpu.sh [OUTDIR]     (default docs/tls, relative to the repository root)
#
# It writes OUTDIR/cpu.tsv (a header with the machine, the commit and the
# commands, then one line per run) and prints, per scenario, the median of
# the paired ratios sluice ÷ net (server CPU per operation, and operations
# per second) with their range. ROUNDS (3) and DURATION (4s) may be set.
# Processes stay on 127.0.0.1; the generator runs under timeout, the
# servers (whose pid must be the server's own, for its CPU time) are
# stopped by pid after each run and on exit or interrupt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-docs/tls}
case $out in /*) ;; *) out=$root/$out ;; esac
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4s}
# shellcheck source=lab/tls-lib.sh
. "$root/lab/tls-lib.sh"
mkdir -p "$out"
tsv=$out/cpu.tsv
{
  echo "# lab/tls-cpu.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(cd "$root" && git rev-parse --short HEAD) $(go version | cut -d' ' -f3) kernel $(uname -r) cpus $ncpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "# sluice: taskset -c 0 echo -addr 127.0.0.1:0 -codec length -loops 1 -tls-cert CERT -tls-key KEY"
  echo "# net:    GOMAXPROCS=1 taskset -c 0 tls-net-echo -addr 127.0.0.1:0 -cert CERT -key KEY"
  echo "# load:   GODEBUG=tlsmlkem=0 taskset -c $gen_cpu tls-load -addr ADDR -server-pid PID -duration $DURATION ARGS"
  printf 'round\tscenario\tserver\tper_sec\tserver_cpu_us_per_op\tp50_us\tp99_us\terrors\targs\n'
} > "$tsv"
scenarios=(
  "echo-1x1|-conns 1 -inflight 1"
  "echo-64x8|-conns 64 -inflight 8"
  "echo-1000x1|-conns 1000 -inflight 1"
  "handshakes-full|-handshakes -conns 16"
  "handshakes-resumed|-handshakes -resume -conns 16"
)
one() { # server scenario-name args round
  local server=$1 name=$2 args=$3 round=$4 log=$bin/server.out
  if [ "$server" = sluice ]; then
    taskset -c 0 "$bin/echo" -addr 127.0.0.1:0 -codec length -loops 1 -tls-cert "$bin/cert.pem" -tls-key "$bin/key.pem" >"$log" 2>/dev/null &
  else
    GOMAXPROCS=1 taskset -c 0 "$bin/tls-net-echo" -addr 127.0.0.1:0 -cert "$bin/cert.pem" -key "$bin/key.pem" >"$log" 2>/dev/null &
  fi
  pid=$!
  local addr; addr=$(tls_lab_listening "$log")
  # shellcheck disable=SC2086
  local json; json=$(tls_lab_load -addr "$addr" -server-pid "$pid" -duration "$DURATION" $args)
  tls_lab_stop
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("\t".join(str(x) for x in (sys.argv[2], sys.argv[3], sys.argv[4], round(d["per_sec"],1), round(d.get("server_cpu_us_per_op",0),2), d["p50_us"], d["p99_us"], d["errors"], sys.argv[5])))' \
    "$json" "$round" "$name" "$server" "$args" >> "$tsv"
}
for r in $(seq "$ROUNDS"); do
  for s in "${scenarios[@]}"; do
    name=${s%%|*} args=${s#*|}
    if [ $((r % 2)) -eq 1 ]; then order="sluice net"; else order="net sluice"; fi
    for server in $order; do one "$server" "$name" "$args" "$r"; done
  done
done
python3 - "$tsv" <<'PY'
import sys, statistics
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if not l.startswith("#")][1:]
by = {}
for r in rows:
    by.setdefault(r[1], {}).setdefault(r[0], {})[r[2]] = r
for name, rounds in by.items():
    cpu = [float(v["sluice"][4]) / float(v["net"][4]) for v in rounds.values() if "sluice" in v and "net" in v]
    rate = [float(v["sluice"][3]) / float(v["net"][3]) for v in rounds.values() if "sluice" in v and "net" in v]
    print(f"{name}: server CPU per op sluice/net {statistics.median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f}); "
          f"ops/s sluice/net {statistics.median(rate):.2f} ({min(rate):.2f}-{max(rate):.2f}); {len(cpu)} rounds")
PY
