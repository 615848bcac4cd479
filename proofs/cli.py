"""What `groupspec prove` runs: every proof obligation over a table, reported per invariant and per
row (groupspec/commands/prove.py parses the arguments).

Obligations: well-formed guards for every (state, event); every named invariant proved for all
reachable states (induction) and free of counterexamples to the BMC depth; with `rows`, every row
either witnessed (BMC trace, replayed) or proved unreachable. `prove_table` returns 0 iff all are
proved, 1 if one is refuted (a counterexample, a CTI, a well-formedness finding), 3 if the rest are
only undecided (a solver timeout), with the report as a JSON-ready dict; `check_options` raises a
BadInput for options out of bounds (exit 2); Ctrl-C interrupts the running query (exit 130).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Final, Sequence, TextIO

from check.user_code import names_used, ours
from model.dsl import ATOMS, EFFECTS, Guard, Table
from model.errors import BadInput
from model.invariants import INVARIANTS
from model.table import URGENT
from proofs.atoms import ATOM_ENCODINGS
from proofs.bmc import bmc
from proofs.effects import EFFECT_ENCODINGS
from proofs.symbolic import MAX_FINITE_DEPTH
from proofs.induction import InductionReport, prove
from proofs.interrupt import interruptible
from proofs.invariants import NOT_ENCODED, STEP_INVARIANTS, all_state_invariants
from proofs.reach import reachability
from proofs.wellformed import check_wellformed

MAX_IDS: Final = 5  # member/instance ids in BMC and row witnesses (benchmarks/hardening_results.md)
# Measured on 2 busy cores with the default depth 10: 3 ids about 2 minutes, 4 ids 7.5 minutes and
# 5 ids 10.6 minutes, both ending undecided (BMC queries hit the 30 s timeout; exit 3).
IDS_ESTIMATE: Final = {4: "about 8 minutes", 5: "about 11 minutes"}


@dataclass(frozen=True, slots=True)
class ProveOptions:
    invariants: tuple[str, ...] = ()  # empty: every invariant
    depth: int = 10  # BMC depth
    ids: int = 3  # member/instance ids in BMC
    rows: bool = False  # also decide every row's reachability
    reach_depth: int = 8  # BMC depth of row witnesses
    timeout_ms: int = 30000  # per solver query


def check_options(o: ProveOptions) -> list[str]:
    """The invariants to prove (BadInput naming the option if any option is out of bounds)."""
    for flag, val, low in (("--depth", o.depth, 0), ("--ids", o.ids, 1),
                           ("--reach-depth", o.reach_depth, 1), ("--timeout-ms", o.timeout_ms, 1)):
        if val < low:
            raise BadInput(f"{flag} {val}: expected an integer >= {low}")
    for flag, val in (("--depth", o.depth), ("--reach-depth", o.reach_depth)):
        if val > MAX_FINITE_DEPTH:
            raise BadInput(f"{flag} {val}: BMC goes to depth {MAX_FINITE_DEPTH} at most")
    if o.ids > MAX_IDS:
        raise BadInput(f"--ids {o.ids}: at most {MAX_IDS}; BMC grows exponentially with the ids "
                       "(3, the default, take about 2 minutes, 5 about 11 and end undecided)")
    return _names(o.invariants)


def refuse_unencoded(table: Table, urgent: Sequence[tuple[str, Guard]]) -> None:
    """BadInput naming the atoms and effects of `table` that the Z3 encoding cannot stand for:
    those it has no encoding of, and a user's own definition under a name it has (the encoding
    is of groupspec's definition, not of the user's)."""
    atoms, effects = names_used(table, urgent)
    lacking = []
    for kind, used, encodings, registry in (("atom", atoms, ATOM_ENCODINGS, {n: a.fn for n, a in ATOMS.items()}),
                                            ("effect", effects, EFFECT_ENCODINGS,
                                             {n: e.fn for n, e in EFFECTS.items()})):
        for name in sorted(used):
            fn = registry.get(name)
            if name not in encodings:
                lacking.append(f"{kind} {name!r} (no Z3 encoding)")
            elif fn is not None and not ours(fn):
                lacking.append(f"{kind} {name!r} (redefined in {fn.__module__}; the encoding is of groupspec's)")
    if lacking:
        raise BadInput(f"table {table.name}: the Z3 encoding cannot stand for {', '.join(lacking)}; groupspec "
                       "prove covers tables built from groupspec's own atoms and effects (groupspec check "
                       "explores any table)")


def not_encoded() -> dict[str, str]:
    """The invariants Z3 cannot decide, and why: NOT_ENCODED's, and every registered one with no
    encoding (a user's table may register its own: groupspec check explores those)."""
    encodings = set(all_state_invariants()) | set(STEP_INVARIANTS)
    users = {n: "an invariant the table's module registers; Z3 has no encoding of it (groupspec check "
                "explores it)" for n in INVARIANTS if n not in encodings and n not in NOT_ENCODED}
    return {**NOT_ENCODED, **users}


def _names(selected: Sequence[str]) -> list[str]:
    known = list(INVARIANTS) + [n for n in all_state_invariants() if n not in INVARIANTS]
    known += [n for n in STEP_INVARIANTS if n not in known]
    for n in selected:
        if n not in known:
            raise BadInput(f"--invariant {n!r}: unknown invariant; expected one of {sorted(known)}")
    return list(selected) if selected else known


def prove_table(table: Table, o: ProveOptions, out: TextIO,
                urgent: tuple[tuple[str, Guard], ...] = URGENT) -> tuple[int, dict[str, Any]]:
    """Every obligation of `table`, printed to `out` as it is decided: (exit status, JSON report)."""
    names = check_options(o)
    refuse_unencoded(table, urgent)
    start = time.perf_counter()
    report: dict[str, Any] = {"table": table.name}
    with interruptible():
        wf_ok, wf_refuted = _wellformed(table, report, out)
        unencoded = not_encoded()
        ind = prove(table, urgent, [n for n in names if n not in unencoded], timeout_ms=o.timeout_ms)
        inv_ok, inv_refuted = _invariants(table, urgent, names, unencoded, ind, o, report, out)
        rows_ok = _rows(table, urgent, ind, o, report, out) if o.rows else True
    ok = wf_ok and inv_ok and rows_ok
    refuted = wf_refuted or inv_refuted  # a definite failure (exit 1); else not ok: undecided, exit 3
    report["ok"] = ok
    report["seconds"] = round(time.perf_counter() - start, 3)
    status = 0 if ok else 1 if refuted else 3
    report["status"] = {0: "proved", 1: "refuted", 3: "undecided"}[status]
    unknown = [n for n in names if n in unencoded]
    why = f"{len(unknown)} invariant(s) without a Z3 encoding, or a solver timeout" if unknown else "a solver timeout"
    print(f"{'all obligations proved' if ok else 'NOT all obligations proved'}"
          f"{'' if ok or refuted else f' (undecided: {why}, not a counterexample; exit 3)'} "
          f"({time.perf_counter() - start:.1f}s)", file=out)
    return status, report


def _wellformed(table: Table, report: dict[str, Any], out: TextIO) -> tuple[bool, bool]:
    """Well-formed guards: (proved, refuted)."""
    wf = check_wellformed(table)
    print(f"well-formedness: {wf.pairs} (state, event) pairs, {wf.checks} checks, "
          f"{'proved' if wf.ok else f'{len(wf.findings)} findings'} ({wf.seconds:.1f}s)", file=out)
    for f in wf.findings:
        print(f"  {f}", file=out)
    report["wellformed"] = {"proved": wf.ok, "pairs": wf.pairs, "seconds": round(wf.seconds, 3),
                            "findings": [str(f) for f in wf.findings]}
    return wf.ok, bool(wf.findings)


def _invariants(table: Table, urgent: tuple[tuple[str, Guard], ...], names: list[str], unencoded: dict[str, str],
                ind: InductionReport, o: ProveOptions, report: dict[str, Any], out: TextIO) -> tuple[bool, bool]:
    """Each invariant by induction and by BMC (`unencoded`: those Z3 cannot decide, and why):
    (all proved, some refuted)."""
    ok, refuted = True, False
    encoded = [n for n in names if n not in unencoded]
    by_name = {r.invariant: r for r in ind.results}
    bm = {r.invariant: r for r in bmc(table, urgent, encoded, o.depth, o.ids, o.timeout_ms,
                                      progress=lambda msg: print(msg, file=sys.stderr, flush=True))}
    entries: list[dict[str, object]] = []
    print(f"invariants (unbounded induction; BMC depth {o.depth}, {o.ids} ids):", file=out)
    for n in names:
        entry: dict[str, object] = {"invariant": n}
        entries.append(entry)
        if n in unencoded:
            ok = False
            print(f"  {n:<40} unknown   (not encoded: {unencoded[n]})", file=out)
            entry.update(unbounded="unknown", bmc="unknown", reason=unencoded[n])
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
    report["invariants"] = entries
    return ok, refuted


def _rows(table: Table, urgent: tuple[tuple[str, Guard], ...], ind: InductionReport, o: ProveOptions,
          report: dict[str, Any], out: TextIO) -> bool:
    """Every row witnessed or proved unreachable: True iff each is decided."""
    rr = reachability(table, urgent, depth=o.reach_depth, n_ids=o.ids, timeout_ms=o.timeout_ms,
                      lemmas=ind.inductive_set)
    print(f"rows ({len(rr.verdicts)}; witnesses to depth {o.reach_depth}, {rr.seconds:.1f}s):", file=out)
    ok = True
    rows_json = []
    for rid, v in rr.verdicts.items():
        ok &= v.status != "unknown"
        mark = ""
        if v.disagrees_with_table:
            mark = "  <- the table says unreachable" if v.status == "reachable" else \
                "  <- proved unreachable, not marked in the table"
        depth = f" (depth {v.depth})" if v.depth and v.status == "reachable" else ""
        print(f"  {rid:<62} {v.status}{depth}{mark}", file=out)
        rows_json.append({"row": rid, "status": v.status, "marked_unreachable": v.marked_unreachable,
                          "depth": v.depth, "witness": v.trace.render() if v.trace else None})
    report["rows"] = rows_json
    return ok
