#!/usr/bin/env bash
# The fan-out issue's delivery test, examples/pubsub (sluice) beside
# lab/cmd/pubsub-gnet (the same protocol on gnet with AsyncWrite), paired
# by round with the order alternating: 200 subscribers on 10 topics, 10
# publishers × M messages of 64 B, default settings but -loops. Run from
# the repository root: bash lab/fanout-compare.sh [OUT.tsv] (ROUNDS=3).
# Every run is bounded by timeout, talks only to 127.0.0.1, and stops the
# server it started, by pid.
set -euo pipefail
out=${1:-/tmp/fanout-compare.tsv}
rounds=${ROUNDS:-3}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/pubsub" ./examples/pubsub
go build -o "$bin/pubsubload" ./examples/pubsub/pubsubload
(cd lab && go build -o "$bin/pubsub-gnet" ./cmd/pubsub-gnet)
echo -e "# round\tserver\tloops\tmsgs\tpeak_rss_kib\tresult" > "$out"
port=$((20000 + RANDOM % 20000))
one() { # round server loops msgs
  local srv=$bin/pubsub
  [ "$2" = gnet ] && srv=$bin/pubsub-gnet
  port=$((port + 1))
  "$srv" -addr 127.0.0.1:$port -loops "$3" > /dev/null 2>&1 &
  local pid=$!
  sleep 0.5
  local line
  line=$(timeout 120 "$bin/pubsubload" -addr 127.0.0.1:$port -subs 200 -topics 10 -pubs 10 -msgs "$4" -size 64 -timeout 90s 2>&1 | head -1) || true
  local rss
  rss=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null || echo -)
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo -e "r$1\t$2\t$3\t$4\t$rss\t$line" >> "$out"
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
cat "$out"
