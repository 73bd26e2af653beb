#!/bin/bash
# three builds alternate in every cell of every round; one line per run
cd /tmp/pk
CELLS=(
"S 200us inline 43000 64"
"S 50us inline 85000 64"
"S 200us inline 20500 1000"
"S 200us pool 41000 64"
"N 200us inline 43000 64"
"N 50us inline 34000 64"
"N 50us inline 73000 1000"
"N 200us inline 20500 1000"
"N 2ms inline 2150 64"
"N 200us pool 20500 1000"
"U 200us inline 3870 64"
"U 50us inline 13000 1000"
"U 2ms inline 430 1000"
)
for r in 1 2 3; do
 for c in "${CELLS[@]}"; do
  set -- $c
  for b in base bp bpvar; do
   case $b in base) B=./echo-s26base;; bp) B=./echo-bp;; bpvar) B=./echo-bpvar;; esac
   if [ $1 = S ]; then STALLS=3; else STALLS=0; fi
   STALLS=$STALLS ./cellstall.sh $B $2 $3 $4 $5
   echo "r$r | $c | $b | $(./cellsum.sh)"
  done
 done
done
