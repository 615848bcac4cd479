#!/usr/bin/env bash
# Session 16's sitting (benchmarks/explore_results.md, "Session 16"): session 15's engine
# (explore_bench of 6398f3d, "s15") against session 16's ("new"), through the general sitting.
exec "$(dirname "$0")/explore_sitting.sh" s15 new
