#!/bin/bash
# fair.sh BIN W CAP [F]: ten tenants (127.0.0.2-11, 8 connections each), the first sending 10x each other, F (5) x CAP in all, against BIN -shed -work W
BIN=$1; W=$2; CAP=$3; F=${4:-5}
cd /tmp/pk
(GOMAXPROCS=1 taskset -c 0 $BIN -addr 127.0.0.1:17300 -codec length -loops 1 -shed -work $W -admin-addr 127.0.0.1:9129 $EXTRA >/dev/null 2>&1) &
sleep 0.5
SP=$(pgrep -f "$BIN -addr 127.0.0.1:17300")
U=$(python3 -c "print($F*$CAP/19)")
for i in 0 1 2 3 4 5 6 7 8 9; do R=$U; [ $i = 0 ] && R=$(python3 -c "print(10*$U)"); taskset -c 1 ./load -json $( [ -z "$SAMEADDR" ] && echo -local-addr 127.0.0.$((2+i)) ) -addr 127.0.0.1:17300 -conns 8 -rate $R -duration 3s -warmup 1s > fair-$i.json 2>&1 & done
sleep 3; S0=$(cat /proc/$SP/stat | awk '{print $14+$15}'); sleep 1; S1=$(cat /proc/$SP/stat | awk '{print $14+$15}')
curl -s 127.0.0.1:9129/debug/sluice > fair-dbg.json
wait $(jobs -p | grep -v "^$SP$") 2>/dev/null
kill $SP 2>/dev/null; wait
python3 - $CAP $S0 $S1 <<'P'
import json,sys
cap=float(sys.argv[1]); tot=0; h=0
for i in range(10):
  b=json.load(open(f'/tmp/pk/fair-{i}.json')); tot+=b['msgs_per_sec']
  if i==0: h=b['msgs_per_sec']
d=json.load(open('/tmp/pk/fair-dbg.json'))['stats']
print('goodput %.1f%%'%(100*tot/cap), 'heavy share %.2f'%(h*10/tot), 'server cpu %.2f'%((int(sys.argv[3])-int(sys.argv[2]))/100), 'reads/frame %.2f'%(d['Reads']/max(1,d['Frames'])), 'slow', d['SlowReads'], 'waits', d['BlockingWaits'])
P
