#!/bin/bash
# cellio.sh BIN W MODE RATE CONNS [flags] -> cell line + server syscalls (whole run incl warmup)
BIN=$1; W=$2; M=$3; RATE=$4; CONNS=$5; shift 5
GOMAXPROCS=1 taskset -c 0 $BIN -addr 127.0.0.1:17100 -codec length -loops 1 -shed -work $W -work-mode $M -backend ${BK:-epoll} "$@" >/dev/null 2>/tmp/pk/cell-err.txt &
SP=$!
sleep 0.5
taskset -c 1 /tmp/pk/load -addr 127.0.0.1:17100 -conns $CONNS -rate $RATE -duration ${DUR:-4s} -warmup 1s > /tmp/pk/cell-load.txt 2>&1
IO=$(grep -E 'syscr|syscw' /proc/$SP/io | tr '\n' ' ')
T=$(awk '{print $14+$15}' /proc/$SP/stat)
kill $SP; wait $SP 2>/dev/null
L=$(grep -E "throughput|latency|rejected|open loop|conns " /tmp/pk/cell-load.txt | awk '{printf "%s ", $0} END {print ""}' | sed 's/  */ /g')
echo "$L | $IO cpu_ticks $T"
