#!/bin/bash
# prio.sh BIN W CAP [extra echo flags] (PRIOFLAGS: the classify flags; CF: every class's connections times CF, default 1): three generators (critical 0.3x, normal 1x, best-effort 3.7x of CAP) against BIN -shed -critical-below 32 -best-effort-above 128
BIN=$1; W=$2; CAP=$3; shift 3
cd /tmp/pk
(GOMAXPROCS=1 taskset -c 0 $BIN -addr 127.0.0.1:17200 -codec length -loops 1 -shed -work $W ${PRIOFLAGS:--critical-below 32 -best-effort-above 128} -admin-addr 127.0.0.1:9119 "$@" >/dev/null 2>&1) &
sleep 0.5
SP=$(pgrep -f "$BIN -addr 127.0.0.1:17200")
r() { taskset -c 1 ./load -json -addr 127.0.0.1:17200 -conns $1 -size $2 -rate $3 -duration 3s -warmup 1s > prio-$4.json 2>&1; }
r $((8*${CF:-1})) 16 $(python3 -c "print(round(0.3*$CAP))") crit & r $((16*${CF:-1})) 64 $CAP norm & r $((16*${CF:-1})) 256 $(python3 -c "print(round(3.7*$CAP))") be &
sleep 2.5; curl -s 127.0.0.1:9119/debug/sluice > prio-dbg.json
wait %2 %3 %4 2>/dev/null; sleep 0.2
kill $SP; wait
for c in crit norm be; do python3 -c "
import json;b=json.load(open('/tmp/pk/prio-$c.json'));print('$c', 'served %.1f%%'%(100*b['msgs']/b['intended']), 'msgs/s %.0f'%b['msgs_per_sec'], 'rej', b.get('rejects'), 'p99 %.0f'%b['latency']['p99_us'])"; done
python3 -c "
import json;d=json.load(open('/tmp/pk/prio-dbg.json'));print(json.dumps(d.get('admission', d)['stats'] if 'stats' in d.get('admission',{}) else {k:v for k,v in d.items() if k!='conns'}, indent=None)[:1500])"
