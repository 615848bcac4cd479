#!/usr/bin/env bash
# Session 15's sitting for the explorer (benchmarks/explore_results.md, "Session 15"): SPIN's N3
# anchor on one core, session 14's engine (explore_bench of 453bef3, "s14") and this one ("new":
# workers that live as long as the search, storing beside expanding, the group's own steps made
# once a group), one and two threads, three rounds in turn. Expects in $DIR: pan (gcc -O2
# -DSAFETY -DNOREDUCE -DMEMLIM=20000 of ../shared/anchors/kafka_N3_flat.pml), explore_bench.s14,
# explore_bench.new, table.json (benchmarks/dump_table_json.py).
set -u
DIR=${DIR:-/tmp/s15}
cd "$DIR"
B="table.json 3 2 session,rebalance,stall 2 1"
echo "== explorer $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do
  /usr/bin/time -f "SPIN cpu %U+%S wall %e" ./pan -m4000000 -w24 2>&1 | grep -E "states, stored|SPIN|rate"
  for e in s14 new; do
    for t in 1 2; do
      ./explore_bench.$e $B $t 1 2>&1 | tail -1 | sed "s/^/$e $t thread(s): /"
    done
  done
done
echo "== end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
