"""`groupspec prove`: every proof obligation over a table, reported per invariant and per row.

Obligations: well-formed guards for every (state, event); every named invariant proved for all
reachable states (induction) and free of counterexamples to the BMC depth; with --rows, every
row either witnessed (BMC trace, replayed) or proved unreachable. Exit 0 iff all are proved,
1 if one is refuted (a counterexample, a CTI, a well-formedness finding), 3 if the rest are only
undecided (a solver timeout), 2 on bad arguments, 130 on Ctrl-C (the running query is interrupted).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from typing import Optional, Sequence, TextIO

from model.dsl import Table
from model.atomic import check_writable, write_text_atomic
from model.errors import BadInput
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE, URGENT
from proofs.bmc import bmc
from proofs.symbolic import MAX_FINITE_DEPTH
from proofs.induction import prove
from proofs.interrupt import interruptible
from proofs.invariants import NOT_ENCODED, STEP_INVARIANTS, all_state_invariants
from proofs.reach import reachability
from proofs.wellformed import check_wellformed


class UsageError(BadInput):
    """A bad command-line argument (exit code 2)."""


MAX_IDS = 5  # --ids: member/instance ids in BMC and row witnesses (benchmarks/hardening_results.md)
# Measured on 2 busy cores with the default depth 10: 3 ids about 2 minutes, 4 ids 7.5 minutes and
# 5 ids 10.6 minutes, both ending undecided (BMC queries hit the 30 s timeout; exit 3).
IDS_ESTIMATE = {4: "about 8 minutes", 5: "about 11 minutes"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="groupspec prove", exit_on_error=False,
                                description="Z3 proofs over the transition table")
    p.add_argument("--invariant", action="append", default=[], metavar="NAME",
                   help="check only this invariant (repeatable); default: all")
    p.add_argument("--depth", type=int, default=10, metavar="K", help="BMC depth (default 10)")
    p.add_argument("--ids", type=int, default=3, metavar="N",
                   help="member/instance ids in BMC (default 3)")
    p.add_argument("--rows", action="store_true", help="also decide every row's reachability")
    p.add_argument("--reach-depth", type=int, default=8, metavar="D",
                   help="BMC depth for row witnesses (default 8)")
    p.add_argument("--timeout-ms", type=int, default=30000, metavar="MS",
                   help="per-query solver timeout (default 30000)")
    p.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    p.add_argument("--table", metavar="module:NAME", help="the table to prove (default: "
                   "model.table:CLASSIC_TABLE)")
    return p


def load_table(spec: Optional[str]) -> Table:
    if spec is None:
        return CLASSIC_TABLE
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise UsageError(f"--table {spec!r}: expected module:NAME, e.g. check.mutants:NO_GENERATION_BUMP")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise UsageError(f"--table {spec!r}: cannot import module {module!r} ({e})") from e
    table = getattr(mod, name, None)
    if table is None and hasattr(mod, "MUTANTS"):  # a mutant's name, as `groupspec check --table` takes it
        entry = getattr(mod, "MUTANTS").get(name)
        table = entry[0] if entry else None
    if not isinstance(table, Table):
        raise UsageError(f"--table {spec!r}: {module}.{name} is not a model.dsl.Table")
    return table


def _names(selected: Sequence[str]) -> list[str]:
    known = list(INVARIANTS) + [n for n in all_state_invariants() if n not in INVARIANTS]
    known += [n for n in STEP_INVARIANTS if n not in known]
    for n in selected:
        if n not in known:
            raise UsageError(f"--invariant {n!r}: unknown invariant; expected one of {sorted(known)}")
    return list(selected) if selected else known


def run(argv: Sequence[str], out: TextIO) -> int:
    try:
        args, extra = _parser().parse_known_args(list(argv))
    except argparse.ArgumentError as e:
        raise UsageError(str(e)) from e
    if extra:
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}")
    for flag, val, low in (("--depth", args.depth, 0), ("--ids", args.ids, 1),
                           ("--reach-depth", args.reach_depth, 1), ("--timeout-ms", args.timeout_ms, 1)):
        if val < low:
            raise UsageError(f"{flag} {val}: expected an integer >= {low}")
    for flag, val in (("--depth", args.depth), ("--reach-depth", args.reach_depth)):
        if val > MAX_FINITE_DEPTH:
            raise UsageError(f"{flag} {val}: BMC goes to depth {MAX_FINITE_DEPTH} at most")
    if args.ids > MAX_IDS:
        raise UsageError(f"--ids {args.ids}: at most {MAX_IDS}; BMC grows exponentially with the ids "
                         "(3, the default, take about 2 minutes, 5 about 11 and end undecided)")
    if args.ids in IDS_ESTIMATE:
        print(f"groupspec prove: --ids {args.ids} takes {IDS_ESTIMATE[args.ids]} on 2 cores, and BMC queries "
              "may time out (undecided, exit 3); the default is 3", file=sys.stderr, flush=True)
    if args.json is not None:
        check_writable(args.json, "--json")
    table = load_table(args.table)
    names = _names(args.invariant)
    start = time.perf_counter()
    ok = True
    refuted = False  # a definite failure (finding, exit 1); `not ok and not refuted`: undecided, exit 3
    report: dict[str, object] = {"table": table.name}

    wf = check_wellformed(table)
    ok &= wf.ok
    refuted |= bool(wf.findings)
    print(f"well-formedness: {wf.pairs} (state, event) pairs, {wf.checks} checks, "
          f"{'proved' if wf.ok else f'{len(wf.findings)} findings'} ({wf.seconds:.1f}s)", file=out)
    for f in wf.findings:
        print(f"  {f}", file=out)
    report["wellformed"] = {"proved": wf.ok, "pairs": wf.pairs, "seconds": round(wf.seconds, 3),
                            "findings": [str(f) for f in wf.findings]}

    encoded = [n for n in names if n not in NOT_ENCODED]
    ind = prove(table, URGENT, encoded, timeout_ms=args.timeout_ms)
    by_name = {r.invariant: r for r in ind.results}
    bm = {r.invariant: r for r in bmc(table, URGENT, encoded, args.depth, args.ids, args.timeout_ms,
                                      progress=lambda msg: print(msg, file=sys.stderr, flush=True))}
    rows_out: list[dict[str, object]] = []
    print(f"invariants (unbounded induction; BMC depth {args.depth}, {args.ids} ids):", file=out)
    for n in names:
        entry: dict[str, object] = {"invariant": n}
        if n in NOT_ENCODED:
            ok = False
            print(f"  {n:<40} unknown   (not encoded: {NOT_ENCODED[n]})", file=out)
            entry.update(unbounded="unknown", bmc="unknown", reason=NOT_ENCODED[n])
            rows_out.append(entry)
            continue
        r, b = by_name[n], bm[n]
        ok &= r.status == "proved" and b.status == "holds"
        refuted |= r.status == "cti" or b.status == "violated"
        aux = " (auxiliary)" if r.auxiliary else ""
        print(f"  {n:<40} {r.status:<8} {r.seconds:6.2f}s   bmc: {b.status} to depth {b.depth} "
              f"({b.seconds:.1f}s){aux}", file=out)
        if r.cti is not None and r.status != "proved":
            for line in r.cti.render():
                print(f"      cti {line}", file=out)
        if r.message:
            print(f"      {r.message}", file=out)
        if b.trace is not None:
            print(f"      counterexample ({b.message}):", file=out)
            for line in b.trace.render():
                print(f"      {line}", file=out)
        entry.update(unbounded=r.status, seconds=round(r.seconds, 3), auxiliary=r.auxiliary,
                     cti=r.cti.render() if r.cti else None, message=r.message,
                     bmc=b.status, bmc_depth=b.depth, bmc_seconds=round(b.seconds, 3),
                     counterexample=b.trace.render() if b.trace else None, model_check=b.message)
        rows_out.append(entry)
    report["invariants"] = rows_out

    if args.rows:
        rr = reachability(table, URGENT, depth=args.reach_depth, n_ids=args.ids,
                          timeout_ms=args.timeout_ms, lemmas=ind.inductive_set)
        print(f"rows ({len(rr.verdicts)}; witnesses to depth {args.reach_depth}, {rr.seconds:.1f}s):",
              file=out)
        rows_json = []
        for rid, v in rr.verdicts.items():
            ok &= v.status != "unknown"
            mark = ""
            if v.disagrees_with_table:
                mark = "  <- the table says unreachable" if v.status == "reachable" else \
                    "  <- proved unreachable, not marked in the table"
            print(f"  {rid:<62} {v.status}{f' (depth {v.depth})' if v.depth and v.status == 'reachable' else ''}{mark}",
                  file=out)
            rows_json.append({"row": rid, "status": v.status, "marked_unreachable": v.marked_unreachable,
                              "depth": v.depth, "witness": v.trace.render() if v.trace else None})
        report["rows"] = rows_json
    report["ok"] = ok
    report["seconds"] = round(time.perf_counter() - start, 3)
    status = 0 if ok else 1 if refuted else 3
    report["status"] = {0: "proved", 1: "refuted", 3: "undecided"}[status]
    print(f"{'all obligations proved' if ok else 'NOT all obligations proved'}"
          f"{'' if ok or refuted else ' (undecided: a solver timeout, not a counterexample; exit 3)'} "
          f"({time.perf_counter() - start:.1f}s)", file=out)
    if args.json is not None:
        write_text_atomic(args.json, json.dumps(report, indent=2))
    return status


def prove_main(argv: list[str]) -> int:
    """Entry point for `groupspec prove`; returns the exit code. `groupspec prove states ...` is the
    explorer/solver reachable-state agreement check (proofs.agreement)."""
    if argv[:1] == ["states"]:
        from proofs.agreement import agreement_main

        return agreement_main(argv[1:], prog="groupspec prove states")
    try:
        with interruptible():
            return run(argv, sys.stdout)
    except SystemExit as e:  # argparse's own --help / usage errors
        return e.code if isinstance(e.code, int) else 2
    except UsageError as e:
        print(f"groupspec prove: {e}", file=sys.stderr)
        return 2
