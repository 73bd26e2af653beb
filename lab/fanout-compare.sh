#!/usr/bin/env bash
# The fan-out issue's delivery test, examples/pubsub (sluice) beside
# lab/cmd/pubsub-gnet (the same protocol on gnet with AsyncWrite), paired
# by round with the order alternating (sluice first in odd rounds, gnet
# first in even ones): 200 subscribers on 10 topics, 10 publishers × M
# messages of 64 B, M in 1000 and 10000, on 2 and 4 loops, default
# settings but -loops.
#
#	bash lab/fanout-compare.sh [OUT.tsv]      (ROUNDS=3, OUT /tmp/fanout-compare.tsv)
#
# One TSV line per run: round, server, loops, M, the server's peak RSS
# (VmHWM, read just before it is stopped), pubsubload's exit status and
# its output (the result line; on a loss, "|first error: ..." after it).
# Each server listens on 127.0.0.1 port 0 (its "listening on" line gives
# the port); every process runs under timeout, and the script stops the
# server it started, by pid, and nothing else.
set -euo pipefail
out=${1:-/tmp/fanout-compare.tsv}
case $out in /*) ;; *) out=$PWD/$out ;; esac
rounds=${ROUNDS:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bin=$(mktemp -d)
tpid= # the timeout process around the running server
spid= # the running server
stop_server() {
  [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null || true
  if [ -n "$tpid" ]; then
    for _ in $(seq 50); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$tpid" 2>/dev/null || true
    [ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null || true
    wait "$tpid" 2>/dev/null || true
  fi
  tpid= spid=
}
trap 'stop_server; rm -rf "$bin"' EXIT
trap 'exit 130' INT TERM

go build -o "$bin/pubsub" ./examples/pubsub
go build -o "$bin/pubsubload" ./examples/pubsub/pubsubload
(cd lab && go build -o "$bin/pubsub-gnet" ./cmd/pubsub-gnet)

dirty=$(git status --porcelain -- '*.go' go.mod go.sum lab/go.mod lab/go.sum lab/fanout-compare.sh | wc -l)
{
  echo "# $(date -u +%Y-%m-%d), $(nproc)-vCPU $(uname -s) ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown CPU)), $(go version | awk '{print $3}'), gnet $(awk '$1 == "github.com/panjf2000/gnet/v2" {print $2}' lab/go.mod), commit $(git rev-parse --short HEAD)$([ "$dirty" = 0 ] || echo " with $dirty uncommitted file(s) among those built"), ROUNDS=$rounds"
  echo "# reproduce from the repository root: bash lab/fanout-compare.sh docs/fanout/compare.tsv"
  echo -e "# round\tserver\tloops\tmsgs\tpeak_rss_kib\texit\tresult"
} > "$out"

one() { # round server loops msgs
  local srv=$bin/pubsub
  [ "$2" = gnet ] && srv=$bin/pubsub-gnet
  : > "$bin/srv.out"
  timeout -s KILL 300 "$srv" -addr 127.0.0.1:0 -loops "$3" > "$bin/srv.out" 2> "$bin/srv.err" &
  tpid=$!
  local addr=
  for _ in $(seq 100); do
    spid=$(pgrep -P "$tpid" || true)
    addr=$(awk '/^listening on / {print $3; exit}' "$bin/srv.out")
    [ -n "$addr" ] && [ -n "$spid" ] && break
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.1
  done
  local rss=- rc=- line
  case $addr in
  127.0.0.1:*)
    rc=0
    line=$(timeout -s KILL 150 "$bin/pubsubload" -addr "$addr" -subs 200 -topics 10 -pubs 10 -msgs "$4" -size 64 -timeout 90s 2>&1) || rc=$?
    line=$(echo "$line" | tr '\t' ' ' | paste -sd'|' -) # its result line, then its "first error" line if any
    rss=$(awk '/^VmHWM/ {print $2}' "/proc/$spid/status" 2>/dev/null) || rss=-
    ;;
  *) line="server did not report a loopback address: $(tail -c 300 "$bin/srv.err" | tr '\t\n' '  ')" ;;
  esac
  stop_server
  echo -e "r$1\t$2\t$3\t$4\t${rss:--}\t$rc\t$line" | tee -a "$out"
}

for r in $(seq 1 "$rounds"); do
  order="sluice gnet"
  [ $((r % 2)) = 0 ] && order="gnet sluice"
  for loops in 2 4; do
    for msgs in 1000 10000; do
      for s in $order; do one "$r" "$s" "$loops" "$msgs"; done
    done
  done
done
