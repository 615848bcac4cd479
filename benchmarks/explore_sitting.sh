#!/usr/bin/env bash
# A sitting for the explorer (benchmarks/explore_results.md): SPIN's N3 anchor on one core and
# the engines named, each on one and two threads, 3 members through generation 2 with the
# session, rebalance and stall faults. This machine's speed moves by a third within minutes
# (sessions 16 and 17), so every run is interleaved with the others, ROUNDS times, and the report
# gives min / median / max.
#
#     DIR=/tmp/s17 ROUNDS=10 benchmarks/explore_sitting.sh s16 s17
#
# SPIN's rows: `pan-own` is SPIN's own count ("pan: rate", the search alone), `pan` the same runs
# by the process's wall time, ~10 % longer (pan sets up the anchor's -m4000000 stack before its
# clock starts); the explorer's own timing is its whole run (session 21: the process adds ~2 ms).
#
# Expects in $DIR: pan (gcc -O2 -DSAFETY -DNOREDUCE -DMEMLIM=20000 of
# ../shared/anchors/kafka_N3_flat.pml), explore_bench.NAME for each engine NAME named (cargo
# build --release --example explore_bench, copied), table.json (benchmarks/dump_table_json.py).
set -u
if [ $# -eq 0 ]; then
  echo "usage: benchmarks/explore_sitting.sh ENGINE... (each \$DIR/explore_bench.ENGINE)" >&2
  exit 2
fi
DIR=${DIR:-/tmp/s16}
ROUNDS=${ROUNDS:-8}
cd "$DIR" || exit 2
for e in "$@"; do
  [ -x "explore_bench.$e" ] || { echo "no $DIR/explore_bench.$e" >&2; exit 2; }
done
B="table.json 3 2 session,rebalance,stall 2 1"
runs="pan"
for e in "$@"; do runs="$runs $e:1 $e:2"; done
for r in $runs pan-own; do : > "sit.$r"; done
echo "== explorer $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds"
for i in $(seq "$ROUNDS"); do
  for r in $runs; do
    if [ "$r" = pan ]; then
      # two readings of one run: the process's wall time (pan's set-up of its -m4000000 stack
      # and its exit included), and SPIN's own count (its "pan: rate" line, the search alone)
      out=$(/usr/bin/time -f "%e" ./pan -m4000000 -w24 2>&1)
      echo "$out" | tail -1 | awk '{printf "%d 0 %s\n", 814595 / $1, $1}' >> sit.pan
      echo "$out" | awk '/^pan: elapsed time/ {e = $4} /^pan: rate/ {printf "%d 0 %s\n", $3, e}' >> sit.pan-own
    else
      ./explore_bench.${r%:*} $B "${r#*:}" 1 2>&1 | grep '^states' |
        sed -E 's/.*wall s ([0-9.]+).*states\/wall s ([0-9]+).*bytes\/state ([0-9.]+).*/\2 \3 \1/' >> "sit.$r"
    fi
  done
  echo "round $i done $(date -u +%T)" >&2
done
echo "| run (threads) | states per wall second: min, median, max | wall s at the median | bytes a state: min-max |"
echo "|---|---|---|---|"
for r in pan-own $runs; do
  sort -n "sit.$r" | awk -v r="$r" '{s[NR]=$1; w[NR]=$3; if (NR == 1 || $2 < lo) lo = $2; if ($2 > hi) hi = $2} END {
    m = int((NR + 1) / 2); printf "| %s | %d k, %d k, %d k | %s | %s |\n", r, s[1] / 1000, s[m] / 1000, s[NR] / 1000, w[m], (hi == 0 ? "(pan)" : lo "-" hi) }'
done
echo "== end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
