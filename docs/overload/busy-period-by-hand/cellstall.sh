#!/bin/bash
# cellstall.sh BIN W MODE RATE CONNS [flags]: like cellio.sh, but the generator is stopped
# (SIGSTOP) for STALL_MS (default 25) ms at 1.5 s, 2.5 s and 3.5 s of its run (env STALLS=0: none)
BIN=$1; W=$2; M=$3; RATE=$4; CONNS=$5; shift 5
GOMAXPROCS=1 taskset -c 0 $BIN -addr 127.0.0.1:17100 -codec length -loops 1 -shed -work $W -work-mode $M -backend ${BK:-epoll} "$@" >/dev/null 2>/tmp/pk/cell-err.txt &
SP=$!
sleep 0.5
taskset -c 1 /tmp/pk/load -addr 127.0.0.1:17100 -conns $CONNS -rate $RATE -duration ${DUR:-4s} -warmup 1s > /tmp/pk/cell-load.txt 2>&1 &
LP=$!
if [ "${STALLS:-3}" != 0 ]; then
  S=$(awk "BEGIN{print ${STALL_MS:-25}/1000}")
  sleep 1.5; kill -STOP $LP; sleep $S; kill -CONT $LP
  sleep 1;   kill -STOP $LP; sleep $S; kill -CONT $LP
  sleep 1;   kill -STOP $LP; sleep $S; kill -CONT $LP
fi
wait $LP
kill $SP; wait $SP 2>/dev/null
