"""`groupspec check`: explore the transition table's state space and check every invariant.

Without bound options it runs the default plan (check/plan.py); with them, exactly those bounds.
Exit 0 iff no invariant is violated in a complete exploration; 1 on a violation (or, with
--refines, a client-visible difference; with --prove, a refuted obligation); 3 if a run was cut
short (--max-states, or the plan's budget); 130 on Ctrl-C (nothing is reported).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Final, Optional, Union

from check.abstract import Bounds
from check.explore import LIVENESS, PATH_PROPERTIES, WELL_FORMED, Report
from check.plan import DEFAULT_PLAN, PLAN_MAX_STATES, PYTHON_PLAN
from model.atomic import write_text_atomic
from model.dsl import Table
from model.errors import EXIT_INTERRUPTED, BadInput
from model.invariants import INVARIANTS

from check.diff import PlanReport
from conformance.diff import DiffReport

from groupspec import junit
from groupspec.commands.diff import refinement_cases, refines
from check.profiles import Urgent
from groupspec.options import (
    add_bound_options, add_quiet, at_least, bounds_of, load_table, load_table_or_profile,
    output_file,
)

HELP: Final = "model-check the table: explore its state space and check every invariant"
DESCRIPTION: Final = (
    "Explore the transition table's state space and check every invariant. With no bound option "
    "(--members, --static, --max-generation, --faults, --mode, --max-ids-per-client) it runs the default plan "
    "(check/plan.py: several explorations whose row coverage is merged); with any, it runs exactly "
    "those bounds, the defaults below filling in the rest.")

# The bounds of one exploration when some bound options are given (the others take these).
DEFAULT_BOUNDS: Final = Bounds(dynamic=3, static=0, max_generation=1,
                               faults=frozenset({"session", "rebalance", "stall"}), mode="closed")
DEFAULT_ENGINE: Final = "native"
MOST_MEMBERS: Final = 6


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bound_options(p, DEFAULT_BOUNDS, given=True)
    p.add_argument("--no-symmetry", action="store_true", help="turn member-symmetry reduction off")
    p.add_argument("--no-liveness", action="store_true",
                   help=f"skip the liveness and path properties ({', '.join(sorted(PATH_PROPERTIES))})")
    p.add_argument("--invariant", action="append", default=None, metavar="NAME",
                   help="check only these invariants (repeatable)")
    p.add_argument("--max-states", type=int, default=None, metavar="N",
                   help=f"stop each exploration after N states (the default plan: {PLAN_MAX_STATES:,} per "
                        f"run); a run cut short exits 3, never 0")
    p.add_argument("--table", default=None, metavar="MODULE:NAME",
                   help="check another table, e.g. check.mutants:SECOND_DELAYED_JOIN")
    p.add_argument("--profile", choices=("kafka-3.9", "kafka-4"), default=None,
                   help="check a version profile's table (default kafka-3.9 = the classic table)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    p.add_argument("--prove", action="store_true", help="also run the Z3 proofs")
    add_quiet(p)
    p.add_argument("--stop-at-first-violation", action="store_true",
                   help="stop at the first violation: the run that finds it stops there and the "
                        "plan's later runs are skipped (the fast negative control)")
    p.add_argument("--junit", default=None, metavar="FILE",
                   help="write a JUnit XML report: one testcase per property, the counterexample "
                        "as the failure text")
    p.add_argument("--all-counterexamples", action="store_true",
                   help="explore every run fully and report a counterexample per property and run "
                        "(default: stop checking a property once it has one)")
    p.add_argument("--refines", default=None, metavar="TABLE",
                   help="also fail (exit 1) if the table answers a client in a way TABLE (a profile "
                        "such as kafka-3.9, or module:NAME) cannot; without bound options the "
                        "refinement plan's lockstep searches (check/plan.py), else those bounds; "
                        "see groupspec diff")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="write every counterexample as a sequence diagram (clients, coordinator, "
                        "the rows fired and the group state at each step, the violated property "
                        "named at the top) to one self-contained HTML page; with none, the page "
                        "says so")
    p.add_argument("--itf", default=None, metavar="FILE",
                   help="write each counterexample as an ITF trace (the Apalache/Quint JSON trace "
                        "format): the first to FILE, the others beside it numbered (cex.itf.json, "
                        "cex-2.itf.json, ...); with none, nothing is written")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="threads of the native explorer (default: one per core; 1: a single "
                        "thread); the results are the same for any N")
    p.add_argument("--engine", choices=("python", "native"), default=DEFAULT_ENGINE,
                   help=f"explorer (and --refines' lockstep search): the Rust engine built from "
                        f"the table, or the networkx one and the Python lockstep "
                        f"(default {DEFAULT_ENGINE})")


@dataclass(frozen=True)
class _Setup:
    table: Table
    urgent: Urgent
    bounds: Bounds
    given: bool  # bound options were given: explore exactly those bounds, not the plan
    names: Optional[frozenset[str]]  # --invariant (None: all)
    liveness: bool
    engine: str
    plan: list[tuple[str, Bounds]]
    max_states: Optional[int]


def run(a: argparse.Namespace) -> int:
    s = _setup(a)
    from check.native import engine_header
    print(f"groupspec check: table {s.table.name} ({len(s.table.rows)} rows), "
          f"{engine_header(s.engine, s.table, s.urgent, s.names)}, "
          f"{len(s.plan)} exploration(s), symmetry {'off' if a.no_symmetry else 'on'}", flush=True)
    checked = checked_properties(s.names, s.liveness)
    reports = _explore(a, s, checked)
    if reports is None:
        return EXIT_INTERRUPTED  # run_explorer said what was explored; nothing is reported
    merged = merge(s.table, [r for _, r in reports])
    status = _summarize(a, merged, reports)
    doc = merged.to_json()
    doc["engine"] = s.engine
    doc["runs"] = [{"label": label, "engine": s.engine, **{k: v for k, v in r.to_json().items()
                                                           if k not in ("uncovered_rows",)}}
                   for label, r in reports]
    refinement = None
    if a.refines is not None:
        print(f"\n== refinement: {s.table.name} against {a.refines}", flush=True)
        refinement = refines(a.table, a.refines, s.bounds if s.given else None,
                             max_states=a.max_states, quiet=a.quiet, engine=a.engine)
        doc["refines"] = {"against": a.refines, "exit_status": refinement[0]}
        status = 1 if 1 in (status, refinement[0]) else max(status, refinement[0])
    if a.prove:
        from groupspec.commands.prove import prove_status
        proof_status = prove_status(a.table)
        doc["proofs_exit_status"] = proof_status
        status = status or proof_status
    doc["complete"] = not any(r.cut_short for _, r in reports)
    if a.junit:
        _write_junit(a, s, checked, merged, reports, refinement)
    if a.json:
        write_text_atomic(a.json, json.dumps(doc, indent=2))
    if a.html or a.itf:
        write_counterexamples(a, s, reports)
    return status


def write_counterexamples(a: argparse.Namespace, s: _Setup, reports: list[tuple[str, Report]]) -> None:
    """--html and --itf: each counterexample (once, as merged) re-executed into a trace."""
    from render.counterexample import trace_of_counterexample
    from render.itf import write_itfs
    from render.sequence import write_page
    traces, seen = [], set()
    for label, r in reports:
        for v in r.violations:
            if (v.invariant, v.trace) not in seen:
                seen.add((v.invariant, v.trace))
                traces.append(trace_of_counterexample(
                    s.table, s.urgent, r.bounds, v, title=f"{v.invariant} violated ({label})",
                    source=f"groupspec check, table {s.table.name}"))
    if a.html:
        write_page(traces, a.html, title=None if len(traces) == 1 else
                   f"groupspec check {s.table.name}: {len(traces)} counterexample(s)",
                   empty=f"No counterexample: no checked property was violated on table {s.table.name}.")
        print(f"counterexample page: {a.html} ({len(traces)} counterexample(s))")
    if a.itf:
        written = write_itfs(traces, a.itf)
        print(f"ITF: {', '.join(written)}" if written else "ITF: no counterexample, nothing written")


def _setup(a: argparse.Namespace) -> _Setup:
    """Every argument checked, before anything runs or is written."""
    bounds, given = bounds_of(a, DEFAULT_BOUNDS, most=MOST_MEMBERS, beyond="this explorer")
    given = given or a.v3_joins
    if a.max_states is not None:
        at_least("--max-states", a.max_states, 1)
    if a.jobs is not None:
        at_least("--jobs", a.jobs, 1)
    output_file(a.json, "--json")
    output_file(a.junit, "--junit")
    output_file(a.html, "--html")
    output_file(a.itf, "--itf")
    from model.table import CLASSIC_TABLE, URGENT
    table, urgent = (CLASSIC_TABLE, URGENT) if a.table is None else load_table(a.table)
    if a.profile == "kafka-4":
        if a.table is not None:
            raise BadInput("--profile and --table are exclusive")
        from check.profile_kafka4 import kafka4_table
        table = kafka4_table()
    # after the table: its module may register invariants of its own (--invariant may name them)
    names = _invariant_names(a)
    if a.refines is not None:
        load_table_or_profile(a.refines, "--refines")  # bad input exits 2 before any exploration
    from check.native import NativeEngineUnavailable, choose_engine
    try:
        engine = choose_engine(a.engine, names)
    except NativeEngineUnavailable as e:
        raise BadInput(f"--engine native: {e}") from e
    default = DEFAULT_PLAN if engine == "native" else PYTHON_PLAN
    plan = [("bounds from the command line", bounds)] if given else list(default)
    max_states = a.max_states
    if max_states is None and len(plan) > 1:
        max_states = PLAN_MAX_STATES  # a table whose state space outgrows the plan's bounds
    liveness = not a.no_liveness and (names is None or bool(names & set(PATH_PROPERTIES)))
    return _Setup(table, urgent, bounds, given, names, liveness, engine, plan, max_states)


def _invariant_names(a: argparse.Namespace) -> Optional[frozenset[str]]:
    if not a.invariant:
        return None
    unknown = set(a.invariant) - set(INVARIANTS) - set(PATH_PROPERTIES) - {WELL_FORMED}
    if unknown:
        raise BadInput(f"--invariant: unknown {sorted(unknown)}; known: "
                       f"{', '.join(sorted(INVARIANTS) + sorted(PATH_PROPERTIES) + [WELL_FORMED])}")
    names = frozenset(a.invariant)
    if names <= set(PATH_PROPERTIES) and a.no_liveness:
        raise BadInput(f"--invariant {', '.join(sorted(names))} with --no-liveness: nothing to check")
    return names


def _explore(a: argparse.Namespace, s: _Setup, checked: set[str]) -> Optional[list[tuple[str, Report]]]:
    """Each exploration of the plan, printed as it finishes; None if Ctrl-C stopped one."""
    from check.native import NativeEngineUnavailable, run_explorer
    reports = []
    found: set[str] = set()
    for label, b in s.plan:
        print(f"\n== {label}: {b.describe()}", flush=True)
        if (a.stop_at_first_violation and found) or (not a.all_counterexamples and checked <= found):
            why = ("stopped at the first violation" if a.stop_at_first_violation and found
                   else "every checked property already has a counterexample")
            r = Report(b, not a.no_symmetry, rows_total=len(s.table.rows), cut_short=f"not run: {why}")
            print(f"skipped: {r.cut_short}")
        else:
            try:
                run = run_explorer(s.engine, s.table, s.urgent, b, symmetry=not a.no_symmetry,
                                   invariants=s.names, liveness=s.liveness, max_states=s.max_states,
                                   progress=None if a.quiet else sys.stderr,
                                   stop_at_first_violation=a.stop_at_first_violation,
                                   all_counterexamples=a.all_counterexamples,
                                   skip=frozenset() if a.all_counterexamples else frozenset(found),
                                   threads=a.jobs)
            except NativeEngineUnavailable as e:
                raise BadInput(f"--engine native: {e}") from e
            if run is None:
                return None
            r = run
            print_run(r)
        found |= {v.invariant for v in r.violations}
        reports.append((label, r))
    return reports


def _summarize(a: argparse.Namespace, merged: Report, reports: list[tuple[str, Report]]) -> int:
    """Coverage, violations and what was cut short, printed; the exit status of the explorations."""
    print_coverage(merged)
    cut = [f"{label}: {r.cut_short}" for label, r in reports if r.cut_short]
    for why in cut:
        print(f"INCOMPLETE: {why}")
    if cut and not merged.violations:
        print("not a pass: the exploration was cut short (exit 3)")
    if any(r.cut_short.startswith("--max-states") for _, r in reports) and a.max_states is None:
        print(f"(the default plan explores at most {PLAN_MAX_STATES:,} states per run; "
              f"--max-states N sets another budget)")
    return 1 if merged.violations else 3 if cut else 0


def _write_junit(a: argparse.Namespace, s: _Setup, checked: set[str], merged: Report,
                 reports: list[tuple[str, Report]], refinement: Optional[tuple[int, Union[DiffReport, PlanReport]]]) -> None:
    incomplete = next((r.cut_short for _, r in reports if r.cut_short and not (
        r.cut_short.startswith("not run") or r.cut_short.startswith("every checked"))), "")
    gap = next((label for label, r in reports if s.liveness and not r.liveness_checked
                and not r.cut_short.startswith("not run")), None)
    unchecked = {LIVENESS: f"run '{gap}' had safety violations, and liveness is only checked "
                           f"on runs without them"} if gap else {}
    cases = junit.check_cases(s.table.name, checked, merged.violations, incomplete, unchecked)
    if refinement is not None:
        cases.extend(refinement_cases(s.table.name, a.refines, *refinement))
    junit.write(a.junit, f"groupspec check {s.table.name}", cases, merged.seconds)


def checked_properties(names: Optional[frozenset[str]], liveness: bool) -> set[str]:
    """Every property a check run looks at: the named invariants, well-formedness, liveness."""
    out = set(INVARIANTS) if names is None else set(names) & set(INVARIANTS)
    if names is None or WELL_FORMED in names:
        out.add(WELL_FORMED)
    if liveness:
        out.add(LIVENESS)
    return out


def merge(table: Table, reports: list[Report]) -> Report:
    """One report for a plan: summed sizes, the union of row coverage, every violation."""
    out = Report(reports[0].bounds, reports[0].symmetry, rows_total=len(table.rows))
    for r in reports:
        out.states += r.states
        out.edges += r.edges
        out.depth = max(out.depth, r.depth)
        out.seconds += r.seconds
        out.frontier += r.frontier
        for rid, n in r.rows_fired.items():
            out.rows_fired[rid] = out.rows_fired.get(rid, 0) + n
        for v in r.violations:  # the same counterexample found by two runs is reported once
            if all((v.invariant, v.trace) != (w.invariant, w.trace) for w in out.violations):
                out.violations.append(v)
        if r.cut_short and not out.cut_short:
            out.cut_short = r.cut_short
    for row in table.rows:
        if row.id not in out.rows_fired:
            out.uncovered[row.id] = row.unreachable or "not reached at these bounds"
    return out


def print_run(r: Report) -> None:
    if r.cut_short:
        print(f"cut short: {r.cut_short}")
    print(f"states {r.states:,}  edges {r.edges:,}  depth {r.depth}  "
          f"{r.seconds:.1f} s  ({r.states_per_second:,.0f} states/s)  "
          f"beyond bounds {r.frontier:,}  rows fired {len(r.rows_fired)}")
    for v in r.violations:
        print(f"\nVIOLATION {v.invariant}: {v.message}")
        for line in v.trace:
            print("  " + line)


def print_coverage(r: Report) -> None:
    print(f"\nall runs: states {r.states:,}  edges {r.edges:,}  {r.seconds:.1f} s")
    partial = (f" (PARTIAL: a run was cut short, {r.cut_short}; coverage is a lower bound)"
               if r.cut_short else "")
    print(f"rows covered {len(r.rows_fired)}/{r.rows_total}{partial}")
    unreach = sum(1 for why in r.uncovered.values() if why != "not reached at these bounds")
    notreached = [rid for rid, why in r.uncovered.items() if why == "not reached at these bounds"]
    print(f"  {unreach} rows marked unreachable (with the reason in the table), "
          f"{len(notreached)} not reached at these bounds")
    for rid in sorted(notreached):
        print(f"    not reached: {rid}")
    if not r.violations:
        print("no invariant violated" + (" in the states explored" if r.cut_short else ""))
    else:
        print(f"{len(r.violations)} violation(s): {sorted({v.invariant for v in r.violations})}")
