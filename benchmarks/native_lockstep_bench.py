"""The lockstep diff natively (check/native_diff.py, engine/src/lockstep.rs) beside the Python
lockstep (check/diff.py explore_diff_python): Kafka's table against itself, so that every search
goes to the end, at a few bounds and over the whole refinement plan (one-sided, as
`check --refines` runs it). Both must explore the same number of lockstep states. Not a test;
results go to refinement_plan_results.md.

    .venv/bin/python benchmarks/native_lockstep_bench.py [--no-plan]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from check.abstract import Bounds  # noqa: E402
from check.diff import DiffReport, Side, explore_diff, explore_diff_plan  # noqa: E402
from check.plan import REFINEMENT_PLAN  # noqa: E402
from groupspec.commands.diff import DEFAULT_DIFF_BOUNDS, verify_from_reference  # noqa: E402
from model.table import CLASSIC_TABLE, URGENT  # noqa: E402

F = frozenset
KAFKA = Side("kafka-3.9", CLASSIC_TABLE, URGENT)
AGAIN = Side("kafka-3.9 (again)", CLASSIC_TABLE, URGENT)
BOUNDS = (
    ("diff's default: 2 consumers, generation <= 2, timeouts and stalls", DEFAULT_DIFF_BOUNDS),
    ("3 consumers, generation <= 1, timeouts and stalls",
     Bounds(dynamic=3, max_generation=1, faults=F({"session", "rebalance", "stall"}))),
    ("open mode, one dynamic client, unload/offsets/append",
     Bounds(dynamic=1, max_generation=1, mode="open", max_ids_per_client=1,
            faults=F({"session", "rebalance", "unload", "offsets", "append"}))),
) + tuple(REFINEMENT_PLAN[k] for k in (1, 4))


def timed(engine: str, bounds: Bounds) -> tuple[DiffReport, float]:
    start = time.perf_counter()
    r = explore_diff(KAFKA, AGAIN, bounds, one_sided=True, engine=engine, progress=None)
    return r, time.perf_counter() - start


def bounds_table() -> None:
    print("| search | lockstep states | edges | Python s | native s | speed-up |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, b in BOUNDS:
        rp, tp = timed("python", b)
        rn, tn = timed("native", b)
        assert (rp.nodes, rp.edges, rp.total_differences) == (rn.nodes, rn.edges,
                                                              rn.total_differences), label
        print(f"| {label} | {rn.nodes:,} | {rn.edges:,} | {tp:.2f} | {tn:.2f} | "
              f"{tp / max(tn, 1e-9):.0f}x |", flush=True)


def plan() -> None:
    print("\nthe whole refinement plan, kafka-3.9 refines kafka-3.9 (verify as check --refines):")
    for engine in ("python", "native"):
        search = partial(explore_diff, verify=verify_from_reference, engine=engine)
        start = time.perf_counter()
        p = explore_diff_plan(KAFKA, AGAIN, REFINEMENT_PLAN, one_sided=True, search=search,
                              max_differences=1, progress=None)
        print(f"- {engine}: {time.perf_counter() - start:.1f} s, {p.nodes:,} lockstep states, "
              f"{len(p.differences)} differences, rows fired {len(p.rows_fired)}/"
              f"{len(CLASSIC_TABLE.rows)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-plan", action="store_true")
    a = ap.parse_args()
    print(f"{platform.machine()}, Python {platform.python_version()}, load average "
          f"{os.getloadavg()[0]:.1f}")
    bounds_table()
    if not a.no_plan:
        plan()


if __name__ == "__main__":
    main()
