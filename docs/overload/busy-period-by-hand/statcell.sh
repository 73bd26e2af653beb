#!/bin/bash
# statcell.sh BIN W MODE RATE CONNS: cellsum line + the loop's counters (BACKEND=io_uring: that backend, default epoll; EXTRA: more echo flags)
BIN=$1; W=$2; M=$3; RATE=$4; CONNS=$5
cd /tmp/pk
(GOMAXPROCS=1 taskset -c 0 $BIN -addr 127.0.0.1:17100 -codec length -loops 1 -shed -work $W -work-mode $M -backend ${BACKEND:-epoll} -admin-addr 127.0.0.1:9109 $EXTRA >/dev/null 2>&1) &
sleep 0.5
SP=$(pgrep -f "$BIN -addr 127.0.0.1:17100")
taskset -c 1 ./load -addr 127.0.0.1:17100 -conns $CONNS -rate $RATE -duration ${DUR:-4s} -warmup 1s > cell-load.txt 2>&1
curl -s 127.0.0.1:9109/debug/sluice > /tmp/pk/dbg1.json
kill $SP; wait
echo "$(./cellsum.sh | cut -c1-120) || $(python3 -c "
import json;d=json.load(open('/tmp/pk/dbg1.json'))['stats']
print(' '.join(f'{k} {d[k]}' for k in ['Reads','Frames','Flushes','SlowReads','Turns','BlockingWaits']))")"
