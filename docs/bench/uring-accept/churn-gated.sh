#!/bin/bash
BIN=$1; BK=$2; shift 2
GOMAXPROCS=1 taskset -c 0 $BIN -addr 127.0.0.1:17100 -codec length -loops 1 -backend $BK "$@" >/dev/null 2>/tmp/pk/churn2-err.txt &
SP=$!
sleep 0.5
taskset -c 1 /tmp/pk/churnbin -addr 127.0.0.1:17100 -n ${N:-20000} -k ${K:-16} -pid $SP
kill $SP; wait $SP 2>/dev/null
