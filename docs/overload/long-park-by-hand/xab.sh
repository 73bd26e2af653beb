#!/bin/bash
# xab.sh ROUNDS OUT: CELLS (W:RATE:CONNS[:MODE]) x BINS (name=path), alternating in every cell of every round; statcell lines
R=$1; OUT=$2
for r in $(seq 1 $R); do for cell in $CELLS; do set -- ${cell//:/ }; M=${4:-inline}; for nb in $BINS; do n=${nb%%=*}; b=${nb#*=}; echo "r$r | $1 $2 c$3 $M | $n | $(STALLS=0 /tmp/pk/statcell.sh $b $1 $M $2 $3 2>&1 | tail -1)"; done; done; done | tee $OUT
