#!/bin/bash
# Session 13 coordinator's sitting on the merged main; old = 9566940 (/tmp/s13/old + its engine)
R() { # NAME CODE MODE ENGINE INPUT...
  name=$1; code=$2; mode=$3; engine=$4; shift 4
  cd /work/main
  if [ "$code" = old ]; then export PYTHONPATH=/tmp/s13/old:/tmp/s13/old-engine; else export PYTHONPATH=/work/main; fi
  out=/tmp/s13/fin-$name; rm -rf $out
  echo "== $name $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "$mode" = local ]; then
    /usr/bin/time -v .venv/bin/groupspec replay --input "$@" --output $out --engine $engine --no-progress --local > /tmp/s13/finlog-$name 2>&1
  else
    .venv/bin/python benchmarks/cpu_split.py -- .venv/bin/groupspec replay --input "$@" --output $out --engine $engine --no-progress --master 'local[2]' --partitions 32 > /tmp/s13/finlog-$name 2>&1
  fi
  echo "exit $? end $(date -u +%T)"
  grep -E "^rows|Elapsed|User time|System time|Maximum resident|cpu_split" /tmp/s13/finlog-$name
  python3 -c "import json; d=json.load(open('$out/summary.json')); print({k: d.get(k) for k in ('elapsed_s','events_per_s','native_step_s','local_path','engine','table')})" 2>/dev/null
}
T=/tmp/replaynat/t10m; P=/tmp/rf/t10m-parquet; F=/tmp/replaynat/t10m/part-00000.jsonl
R spark-new new spark native $T
R spark-old old spark native $T
R local-new new local native $T
R local-old old local native $T
R local-newpq new local native $P
R spark-newpq new spark native $P
R spark-py-1m new spark python $F
R local-py-1m new local python $F
R local-new-1m new local native $F
R spark-new-1m new spark native $F
echo "== explorer $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
cd /tmp/s13
for i in 1 2 3; do
  /usr/bin/time -f "SPIN cpu %U+%S wall %e" ./pan -m4000000 -w24 2>&1 | grep -E "states, stored|SPIN"
  ./explore_bench.old table.json 3 2 session,rebalance,stall 2>&1 | tail -1 | sed 's/^/old 1 thread: /'
  ./explore_bench.new table.json 3 2 session,rebalance,stall 2 1 1 2>&1 | tail -1 | sed 's/^/new 1 thread: /'
  ./explore_bench.new table.json 3 2 session,rebalance,stall 2 1 2 2>&1 | tail -1 | sed 's/^/new 2 threads: /'
done
echo "== end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
