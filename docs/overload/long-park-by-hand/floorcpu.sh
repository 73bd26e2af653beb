#!/bin/bash
# floorcpu.sh NAME RATE CONNS -- CMD...: server CPU per answered message at an open-loop rate
NAME=$1; RATE=$2; CONNS=$3; shift 4
taskset -c 0 "$@" >/dev/null 2>&1 &
SP=$!
sleep 0.5
T0=$(awk '{print $14+$15}' /proc/$SP/stat)
taskset -c 1 /tmp/pk/load -addr 127.0.0.1:17100 -conns $CONNS -rate $RATE -duration 4s -warmup 1s > /tmp/pk/floor-load.txt 2>&1
T1=$(awk '{print $14+$15}' /proc/$SP/stat)
kill $SP; wait $SP 2>/dev/null
TOT=$(grep -oP '\(\K[0-9]+(?= msgs\))' /tmp/pk/floor-load.txt)
python3 -c "
t=($T1-$T0)/100; n=$TOT*5/4
print(f'$NAME rate $RATE conns $CONNS: server cpu {t:.2f}s for ~{n:.0f} msgs (incl warmup) = {t/n*1e6:.2f} us/msg')"
