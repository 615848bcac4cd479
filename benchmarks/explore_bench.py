"""Explorer benchmark: unique states per second and total time, closed mode with faults on,
with and without member-symmetry reduction. Not a test; results go to explore_results.md.

    .venv/bin/python benchmarks/explore_bench.py [--max-states N] [--members 2,3,4]
"""

from __future__ import annotations

import argparse
import platform
import time

from check.abstract import Bounds
from check.explore import explore
from model.table import CLASSIC_TABLE, URGENT

FAULTS = frozenset({"session", "rebalance", "stall"})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--max-states", type=int, default=300000)
    p.add_argument("--members", default="2,3,4")
    p.add_argument("--max-generation", type=int, default=1)
    a = p.parse_args()
    print(f"# explorer benchmark, {time.strftime('%Y-%m-%d %H:%M')} {platform.processor() or platform.machine()}")
    print(f"closed mode, faults {sorted(FAULTS)}, generation <= {a.max_generation}, "
          f"cap {a.max_states:,} states\n")
    print("| members | symmetry | states | edges | depth | seconds | states/s | finished |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in a.members.split(",")):
        for sym in (True, False):
            b = Bounds(dynamic=n, max_generation=a.max_generation, faults=FAULTS)
            r = explore(CLASSIC_TABLE, URGENT, b, symmetry=sym, max_states=a.max_states,
                        progress=None, liveness=False)
            done = r.states < a.max_states
            print(f"| {n} | {'on' if sym else 'off'} | {r.states:,} | {r.edges:,} | {r.depth} | "
                  f"{r.seconds:.1f} | {r.states_per_second:,.0f} | {'yes' if done else 'no (cap)'} |",
                  flush=True)


if __name__ == "__main__":
    main()
