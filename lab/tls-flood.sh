#!/usr/bin/env bash
# A handshake flood beside established TLS echo traffic: 16 connections
# echo a 64-byte frame each (lab/cmd/tls-load -conns 16), alone ("quiet")
# and while 64 goroutines replay a ClientHello on fresh connections as
# fast as they can ("flood", -flood-conns 64), against sluice's echo
# (cmd/echo -codec length -loops 1 -tls-cert/-tls-key) with its defaults,
# the same with the handshakes' share off (-handshake-share 1), and
# lab/cmd/tls-net-echo (net + crypto/tls, GOMAXPROCS=1). Each server alone
# on CPU 0, the generator on CPU 1; paired rounds (quiet then flood, the
# servers' order alternating).
#
#	bash lab/tls-flood.sh [OUTDIR]     (default docs/tls, relative to the repository root)
#
# It writes OUTDIR/flood.tsv (a header with the machine, the commit and the
# commands, then one line per run) and prints, per server, the median of
# the paired ratios flood ÷ quiet (echoes per second, echo p99) with their
# range, and the ClientHellos answered per second. ROUNDS (5) and DURATION
# (4s) may be set; SHARES (e.g. "0.05 0.1") adds sluice with each of those
# -handshake-share values (server sluice-VALUE). Processes stay on 127.0.0.1; the generator runs under
# timeout, the servers are stopped by pid after each run and on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-docs/tls}
case $out in /*) ;; *) out=$root/$out ;; esac
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-4s}
SHARES=${SHARES:-}
# shellcheck source=lab/tls-lib.sh
. "$root/lab/tls-lib.sh"
mkdir -p "$out"
tsv=$out/flood.tsv
{
  echo "# lab/tls-flood.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(cd "$root" && git rev-parse --short HEAD) $(go version | cut -d' ' -f3) kernel $(uname -r) cpus $ncpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "# sluice:     taskset -c 0 echo -addr 127.0.0.1:0 -codec length -loops 1 -tls-cert CERT -tls-key KEY"
  echo "# sluice-off: the same with -handshake-share 1; sluice-X (SHARES): with -handshake-share X"
  echo "# net:        GOMAXPROCS=1 taskset -c 0 tls-net-echo -addr 127.0.0.1:0 -cert CERT -key KEY"
  echo "# load:       GODEBUG=tlsmlkem=0 taskset -c $gen_cpu tls-load -addr ADDR -conns 16 -duration $DURATION [-flood-conns 64]"
  printf 'round\tserver\tload\techo_per_sec\tp50_us\tp99_us\thellos_answered_per_sec\terrors\n'
} > "$tsv"
one() { # server load round
  local server=$1 load=$2 round=$3 log=$bin/server.out args=
  [ "$load" = flood ] && args="-flood-conns 64"
  case $server in
  sluice) taskset -c 0 "$bin/echo" -addr 127.0.0.1:0 -codec length -loops 1 -tls-cert "$bin/cert.pem" -tls-key "$bin/key.pem" >"$log" 2>/dev/null & ;;
  sluice-off) taskset -c 0 "$bin/echo" -addr 127.0.0.1:0 -codec length -loops 1 -handshake-share 1 -tls-cert "$bin/cert.pem" -tls-key "$bin/key.pem" >"$log" 2>/dev/null & ;;
  sluice-*) taskset -c 0 "$bin/echo" -addr 127.0.0.1:0 -codec length -loops 1 -handshake-share "${server#sluice-}" -tls-cert "$bin/cert.pem" -tls-key "$bin/key.pem" >"$log" 2>/dev/null & ;;
  net) GOMAXPROCS=1 taskset -c 0 "$bin/tls-net-echo" -addr 127.0.0.1:0 -cert "$bin/cert.pem" -key "$bin/key.pem" >"$log" 2>/dev/null & ;;
  esac
  pid=$!
  local addr; addr=$(tls_lab_listening "$log")
  # shellcheck disable=SC2086
  local json; json=$(tls_lab_load -addr "$addr" -conns 16 -duration "$DURATION" $args)
  tls_lab_stop
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("\t".join(str(x) for x in (sys.argv[2], sys.argv[3], sys.argv[4], round(d["per_sec"],1), d["p50_us"], d["p99_us"], round(d["hellos_answered_per_sec"],1), d["errors"])))' \
    "$json" "$round" "$server" "$load" >> "$tsv"
}
for r in $(seq "$ROUNDS"); do
  servers="sluice"
  for x in $SHARES; do servers="$servers sluice-$x"; done
  servers="$servers sluice-off net"
  if [ $((r % 2)) -eq 1 ]; then order=$servers; else order=$(echo "$servers" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for server in $order; do
    one "$server" quiet "$r"
    one "$server" flood "$r"
  done
done
python3 - "$tsv" <<'PY'
import sys, statistics
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if not l.startswith("#")][1:]
by = {}
for r in rows:
    by.setdefault(r[1], {}).setdefault(r[0], {})[r[2]] = r
def span(xs, f="{:.2f}"):
    return f"{f.format(statistics.median(xs))} ({f.format(min(xs))}-{f.format(max(xs))})"
for server, rounds in by.items():
    pairs = [v for v in rounds.values() if "quiet" in v and "flood" in v]
    good = [float(v["flood"][3]) / float(v["quiet"][3]) for v in pairs]
    p99 = [float(v["flood"][5]) / float(v["quiet"][5]) for v in pairs]
    hellos = [float(v["flood"][6]) for v in pairs]
    print(f"{server}: echo flood/quiet {span(good)}; p99 flood/quiet {span(p99)}; "
          f"ClientHellos answered/s {span(hellos, '{:.0f}')}; {len(pairs)} rounds")
PY
