"""Lockstep throughput: actions per second of `conformance.lockstep` (reference + model + compare).

Run: .venv/bin/python benchmarks/lockstep_bench.py [--runs N] [--steps S] [--seed K]
Each run is the soak's random run (conformance.soak.run_one): a random configuration and prologue,
then S random actions on two groups; one action = one request (or one clock advance, or one
`Everyone` batch) applied to both coordinators, every response and group compared, the model's
invariants checked on every transition. Results: benchmarks/lockstep_results.md.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

from conformance.soak import run_one


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", action="store_true", help="print the top functions by cumulative time")
    args = p.parse_args(argv)
    prof = cProfile.Profile() if args.profile else None
    steps = requests = failures = 0
    start = time.perf_counter()
    if prof is not None:
        prof.enable()
    for seed in range(args.seed, args.seed + args.runs):
        ls, divergence = run_one(seed, args.steps)
        steps += ls.steps
        requests += ls._number
        failures += divergence is not None
    if prof is not None:
        prof.disable()
    seconds = time.perf_counter() - start
    print(f"runs {args.runs}  actions {steps}  requests {requests}  seconds {seconds:.2f}  "
          f"actions/s {steps / seconds:,.0f}  requests/s {requests / seconds:,.0f}  divergences {failures}")
    if prof is not None:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
