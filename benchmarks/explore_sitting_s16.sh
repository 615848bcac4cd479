#!/usr/bin/env bash
# Session 16's sitting for the explorer (benchmarks/explore_results.md, "Session 16"): SPIN's N3
# anchor on one core, session 15's engine (explore_bench of 6398f3d, "s15") and this one ("new":
# slices in flight without a barrier between them, outcomes read in place, runs of loops), one
# and two threads. This machine's speed moved by a third within minutes in session 16, so every
# run is interleaved with the others, ROUNDS times, and the report gives min / median / max.
# Expects in $DIR: pan (gcc -O2 -DSAFETY -DNOREDUCE -DMEMLIM=20000 of
# ../shared/anchors/kafka_N3_flat.pml), explore_bench.s15, explore_bench.new, table.json
# (benchmarks/dump_table_json.py).
set -u
DIR=${DIR:-/tmp/s16}
ROUNDS=${ROUNDS:-8}
cd "$DIR"
B="table.json 3 2 session,rebalance,stall 2 1"
runs="pan s15:1 s15:2 new:1 new:2"
for r in $runs; do : > "sit.$r"; done
echo "== explorer $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds"
for i in $(seq "$ROUNDS"); do
  for r in $runs; do
    if [ "$r" = pan ]; then
      /usr/bin/time -f "%e" ./pan -m4000000 -w24 2>&1 | tail -1 | awk '{printf "%d 0 %s\n", 814595 / $1, $1}' >> sit.pan
    else
      ./explore_bench.${r%:*} $B "${r#*:}" 1 2>&1 | grep '^states' |
        sed -E 's/.*wall s ([0-9.]+).*states\/wall s ([0-9]+).*bytes\/state ([0-9.]+).*/\2 \3 \1/' >> "sit.$r"
    fi
  done
done
echo "| run (threads) | states per wall second: min, median, max | wall s at the median | bytes a state: min-max |"
echo "|---|---|---|---|"
for r in $runs; do
  sort -n "sit.$r" | awk -v r="$r" '{s[NR]=$1; w[NR]=$3; if (NR == 1 || $2 < lo) lo = $2; if ($2 > hi) hi = $2} END {
    m = int((NR + 1) / 2); printf "| %s | %d k, %d k, %d k | %s | %s |\n", r, s[1] / 1000, s[m] / 1000, s[NR] / 1000, w[m], (hi == 0 ? "(pan)" : lo "-" hi) }'
done
echo "== end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
