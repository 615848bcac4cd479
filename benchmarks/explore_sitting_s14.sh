#!/usr/bin/env bash
# Session 14's sitting for the explorer (benchmarks/explore_results.md, "Session 14"): SPIN's N3
# anchor on one core, main's engine before the cache ("old", explore_bench of 1b33a0b) and this
# one ("new", with and without its cache), three rounds in turn; then 4 members, generation <= 2,
# crashes, one id per client, 90 s of each engine on two threads (how far they get; the cache
# past its limit). Expects in $DIR: pan (gcc -O2 -DSAFETY -DNOREDUCE -DMEMLIM=20000 of
# ../shared/anchors/kafka_N3_flat.pml), explore_bench.old, explore_bench.new, table.json
# (benchmarks/dump_table_json.py).
set -u
DIR=${DIR:-/tmp/s14}
cd "$DIR"
B="table.json 3 2 session,rebalance,stall 2 1"
echo "== explorer $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do
  /usr/bin/time -f "SPIN cpu %U+%S wall %e" ./pan -m4000000 -w24 2>&1 | grep -E "states, stored|SPIN"
  ./explore_bench.old $B 1 2>&1 | tail -1 | sed 's/^/old 1 thread: /'
  ./explore_bench.old $B 2 2>&1 | tail -1 | sed 's/^/old 2 threads: /'
  ./explore_bench.new $B 1 1 2>&1 | tail -1 | sed 's/^/new 1 thread: /'
  ./explore_bench.new $B 2 1 2>&1 | tail -1 | sed 's/^/new 2 threads: /'
  ./explore_bench.new $B 2 0 2>&1 | tail -1 | sed 's/^/new 2 threads, no cache: /'
done
echo "== crash, one id per client $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for e in old new; do
  echo "-- $e"
  timeout -s INT 90 ./explore_bench.$e table.json 4 2 session,rebalance,stall,crash 1 1 2 2>&1 | grep -E "states,|^states"
done
echo "== end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
