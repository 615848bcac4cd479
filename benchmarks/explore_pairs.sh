#!/usr/bin/env bash
# Two explorer builds side by side, in pairs (benchmarks/explore_results.md, session 20): each
# round runs A and B one right after the other (which goes first alternates), 3 members through
# generation 2 with the session, rebalance and stall faults, and the report is the median of the
# rounds' B/A ratios of states a second. On this machine a sitting's medians move by 10-20 %
# from one sitting to the next, more than a change of a few per cent; two runs back to back meet
# the same phase, so their ratio shows it (24-40 rounds resolve about 2-3 %).
#
#     DIR=/tmp/s16 benchmarks/explore_pairs.sh ROUNDS THREADS A B
#
# Expects in $DIR: explore_bench.A and explore_bench.B (cargo build --release --example
# explore_bench, copied), table.json (benchmarks/dump_table_json.py); "pan" as A or B runs
# SPIN's N3 anchor (as benchmarks/explore_sitting.sh), by SPIN's own count (its "pan: rate" line,
# the search alone), or with PAN_CLOCK=process by the process's wall time, ~10 % longer: pan sets
# up the anchor's -m4000000 stack before its clock starts (sessions 16-20 used that one).
set -u
if [ $# -ne 4 ]; then
  echo "usage: benchmarks/explore_pairs.sh ROUNDS THREADS A B (each \$DIR/explore_bench.NAME, or pan)" >&2
  exit 2
fi
DIR=${DIR:-/tmp/s16}
ROUNDS=$1 THREADS=$2 A=$3 B=$4
cd "$DIR" || exit 2
for e in "$A" "$B"; do
  if [ "$e" = pan ]; then [ -x pan ] || { echo "no $DIR/pan" >&2; exit 2; }
  else [ -x "explore_bench.$e" ] || { echo "no $DIR/explore_bench.$e" >&2; exit 2; }; fi
done
rate() {
  if [ "$1" = pan ]; then
    if [ "${PAN_CLOCK:-own}" = own ]; then
      ./pan -m4000000 -w24 | sed -nE 's/^pan: rate +([0-9]+).*/\1/p'
    else
      /usr/bin/time -f "%e" ./pan -m4000000 -w24 2>&1 | tail -1 | awk '{printf "%d\n", 814595 / $1}'
    fi
  else
    ./explore_bench."$1" table.json 3 2 session,rebalance,stall 2 1 "$THREADS" | grep '^states' |
      sed -E 's/.*states\/wall s ([0-9]+).*/\1/'
  fi
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq "$ROUNDS"); do
  if [ $((i % 2)) = 0 ]; then a=$(rate "$A"); b=$(rate "$B"); else b=$(rate "$B"); a=$(rate "$A"); fi
  [ -n "$a" ] && [ -n "$b" ] || { echo "round $i: a run gave no rate" >&2; exit 1; }
  echo "$a $b" >> "$out"
done
python3 - "$out" "$A" "$B" <<'PY'
import statistics, sys
rows = [tuple(map(int, line.split())) for line in open(sys.argv[1])]
ratios = sorted(b / a for a, b in rows)
print(f"{sys.argv[3]}/{sys.argv[2]}: median ratio {statistics.median(ratios):.3f} "
      f"(min {ratios[0]:.3f}, max {ratios[-1]:.3f}) over {len(rows)} pairs; "
      f"medians {statistics.median(a for a, _ in rows):,.0f} and {statistics.median(b for _, b in rows):,.0f} states/s")
PY
