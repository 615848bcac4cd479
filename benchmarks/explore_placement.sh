#!/usr/bin/env bash
# Whether the explorer's slow two-thread phases are slow cache-line transfers between the two
# vCPUs (benchmarks/explore_results.md, session 21): each round probes a cache line's round trip
# (benchmarks/pingpong.c), runs the explorer on two threads and on one and SPIN's N3 anchor (its
# own count), and probes again. One line a round: time, the two probes (ns), two threads, one
# thread, SPIN (states a second); with APART=1 (session 22) also two one-thread runs at once,
# each its own process (the sum of their states a second): what two threads could reach if
# they shared nothing.
#
#     DIR=/tmp/s16 benchmarks/explore_placement.sh ROUNDS ENGINE
#
# Expects in $DIR what benchmarks/explore_pairs.sh does (explore_bench.ENGINE, table.json, pan).
set -u
if [ $# -ne 2 ]; then
  echo "usage: benchmarks/explore_placement.sh ROUNDS ENGINE (\$DIR/explore_bench.ENGINE)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
DIR=${DIR:-/tmp/s16}
ROUNDS=$1 E=$2
cd "$DIR" || exit 2
[ -x "explore_bench.$E" ] && [ -x pan ] && [ -f table.json ] || { echo "need explore_bench.$E, pan and table.json in $DIR" >&2; exit 2; }
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
gcc -O2 -pthread -o "$probe" "$here/pingpong.c" || exit 2
rate() { ./explore_bench."$E" table.json 3 2 session,rebalance,stall 2 1 "$1" | sed -nE 's/.*states\/wall s ([0-9]+).*/\1/p'; }
for i in $(seq "$ROUNDS"); do
  a=$("$probe"); two=$(rate 2); one=$(rate 1)
  spin=$(./pan -m4000000 -w24 | sed -nE 's/^pan: rate +([0-9]+).*/\1/p')
  apart=""
  if [ "${APART:-0}" = 1 ]; then
    r1=$(mktemp); rate 1 > "$r1" & r2=$(rate 1); wait
    apart=" $(( $(cat "$r1") + r2 ))"; rm -f "$r1"
  fi
  b=$("$probe")
  echo "$(date -u +%T) $a $b $two $one $spin$apart"
done
