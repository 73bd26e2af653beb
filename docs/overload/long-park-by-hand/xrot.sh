#!/bin/bash
# xrot.sh ROUNDS OUT: CELLS x VARS (name=ENV,ENV), binary echo-rot (base = echo-s27)
R=$1; OUT=$2
for r in $(seq 1 $R); do for cell in $CELLS; do set -- ${cell//:/ }; M=${4:-inline}; for nv in $VARS; do n=${nv%%=*}; e=${nv#*=}; b=/tmp/pk/echo-rot; [ "$n" = base ] && b=/tmp/pk/echo-s27; echo "r$r | $1 $2 c$3 $M | $n | $(env ${e//,/ } STALLS=0 /tmp/pk/statcell.sh $b $1 $M $2 $3 2>&1 | tail -1)"; done; done; done | tee $OUT
