"""Benchmark of proofs/: all invariants unbounded (induction), then BMC to depth K with N ids.

Run: .venv/bin/python benchmarks/proofs_bench.py [--depth 10] [--ids 3] [--timeout-ms 20000]
Results are recorded by hand in benchmarks/proofs_results.md.
"""

from __future__ import annotations

import argparse
import platform
import time

from model.table import CLASSIC_TABLE, URGENT
from proofs.bmc import bmc
from proofs.induction import prove
from proofs.invariants import STEP_INVARIANTS, all_state_invariants
from proofs.wellformed import check_wellformed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--ids", type=int, default=3)
    ap.add_argument("--timeout-ms", type=int, default=20000)
    args = ap.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}")
    t0 = time.perf_counter()
    wf = check_wellformed(CLASSIC_TABLE)
    print(f"well-formedness: {wf.pairs} pairs, {wf.checks} checks, ok={wf.ok}, {wf.seconds:.2f}s")
    t1 = time.perf_counter()
    rep = prove(CLASSIC_TABLE, URGENT)
    print(f"induction: {time.perf_counter() - t1:.2f}s total")
    for r in rep.results:
        print(f"  {r.invariant:<40} {r.status:<8} {r.seconds:.2f}s")
    t2 = time.perf_counter()
    names = list(all_state_invariants()) + list(STEP_INVARIANTS)
    def progress(msg: str) -> None:
        print(f"  [{time.perf_counter() - t2:6.1f}s] {msg}", flush=True)

    for b in bmc(CLASSIC_TABLE, URGENT, names, args.depth, args.ids, args.timeout_ms, progress=progress):
        print(f"  bmc {b.invariant:<40} {b.status:<8} depth {b.depth:<3} {b.seconds:.2f}s {b.message}")
    print(f"bmc depth {args.depth}, {args.ids} ids: {time.perf_counter() - t2:.2f}s total")
    print(f"all: {time.perf_counter() - t0:.2f}s")


if __name__ == "__main__":
    main()
