"""The refinement plan (check/plan.py REFINEMENT_PLAN) on Kafka's table: how long the Python
lockstep takes per run and in all, the rows of the table it fires (and those it never compares),
and which run kills each mutant (check/mutants.py) and historical bug (check/historical.py) with a
verified scenario. Not a test; results go to refinement_plan_results.md.

    .venv/bin/python benchmarks/refinement_plan_bench.py [--kills-only | --kafka-only]
        [--engine native|python]

`--engine` picks the lockstep (default python, the reference; native: check/native_diff.py);
benchmarks/native_lockstep_bench.py compares the two on the same searches.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from check.diff import NOT_FIRED, explore_diff, explore_diff_plan  # noqa: E402
from check.historical import HISTORICAL  # noqa: E402
from check.mutants import MUTANTS  # noqa: E402
from check.plan import REFINEMENT_PLAN  # noqa: E402
from conformance.diff import Side, run_document  # noqa: E402
from conformance.runner import Outcome  # noqa: E402
from groupspec.commands.diff import verify_from_reference  # noqa: E402
from model.dsl import Table  # noqa: E402
from model.table import CLASSIC_TABLE, URGENT  # noqa: E402

KAFKA = Side("kafka-3.9", CLASSIC_TABLE, URGENT)
SEARCH = partial(explore_diff, verify=verify_from_reference, engine="python")


def kafka_runs() -> None:
    renamed = Table("renamed", tuple(replace(r, id="renamed:" + r.id.replace("/", "|"))
                                     for r in CLASSIC_TABLE.rows), CLASSIC_TABLE.events)
    for side in (KAFKA, Side("renamed", renamed, URGENT)):
        print(f"\n{side.name} refines kafka-3.9 (the whole plan: no difference to stop at)\n")
        print("| run | lockstep states | edges | seconds | differences |")
        print("|---|---:|---:|---:|---:|")
        p = explore_diff_plan(side, KAFKA, REFINEMENT_PLAN, one_sided=True, search=SEARCH,
                              max_differences=1, progress=None,
                              on_done=lambda label, r: print(
                                  f"| {label} | {r.nodes:,} | {r.edges:,} | {r.seconds:.1f} | "
                                  f"{r.total_differences} |", flush=True))
        never = sorted(rid for rid, why in p.unfired.items() if why == NOT_FIRED)
        print(f"\nall runs: {p.nodes:,} lockstep states, {p.seconds:.1f} s; rows fired "
              f"{len(p.rows_fired)}/{len(side.table.rows)}, {len(p.unfired) - len(never)} marked "
              f"unreachable, {len(never)} never compared:")
        for rid in never:
            print(f"- `{rid}`")


def kills() -> None:
    tables = [(n, t) for n, (t, _, _) in sorted(MUTANTS.items())]
    tables += [(n, b.table) for n, b in sorted(HISTORICAL.items())]
    print("\n| table | killed by run | first difference after | verified scenario | seconds |")
    print("|---|---|---:|---|---:|")
    killed = 0
    for name, table in tables:
        start = time.perf_counter()
        p = explore_diff_plan(Side(name, table, URGENT), KAFKA, REFINEMENT_PLAN, one_sided=True,
                              search=SEARCH, max_differences=1, progress=None)
        secs = time.perf_counter() - start
        if not p.differences:
            print(f"| {name} | NOT KILLED | | | {secs:.1f} |", flush=True)
            continue
        killed += 1
        run = next(label for label, r in p.runs if r.differences)
        d = p.differences[0]
        verdict = "none: " + d.unrendered[:60] if d.scenario is None else (
            f"passes on {d.scenario_passes_on}, fails on {d.scenario_fails_on}")
        if d.scenario is not None:  # re-run independently
            passes = CLASSIC_TABLE if d.scenario_passes_on == "kafka-3.9" else table
            fails = table if passes is CLASSIC_TABLE else CLASSIC_TABLE
            assert run_document(d.scenario, passes) is Outcome.PASS, name
            assert run_document(d.scenario, fails) is Outcome.FAIL, name
        print(f"| {name} | {run} | {d.depth} inputs | {verdict} | {secs:.1f} |", flush=True)
    print(f"\nkilled {killed} of {len(tables)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills-only", action="store_true")
    ap.add_argument("--kafka-only", action="store_true")
    ap.add_argument("--engine", choices=("native", "python"), default="python")
    a = ap.parse_args()
    global SEARCH
    SEARCH = partial(explore_diff, verify=verify_from_reference, engine=a.engine)
    print(f"{platform.machine()}, Python {platform.python_version()}; "
          f"{len(REFINEMENT_PLAN)} runs in the plan; {a.engine} lockstep")
    if not a.kafka_only:
        kills()
    if not a.kills_only:
        kafka_runs()


if __name__ == "__main__":
    main()
