#!/bin/bash
# summarise /tmp/pk/cell-load.txt in one line
f=/tmp/pk/cell-load.txt
tp=$(grep -oP 'throughput\s+\K[0-9.]+k?' $f)
p99=$(grep -P '^latency' $f | grep -oP 'p99\s+\K[0-9.]+[mµ]?s' | head -1)
p50=$(grep -P '^latency' $f | grep -oP 'p50\s+\K[0-9.]+[mµ]?s' | head -1)
rej=$(grep -P '^rejected' $f | sed 's/  */ /g' | cut -c1-90)
miss=$(grep -oP 'missed \K[0-9]+' $f)
unf=$(grep -oP 'unfinished \K[0-9]+' $f)
echo "tp $tp p50 $p50 p99 $p99 missed $miss unfin $unf | $rej"
