"""`groupspec diff` and `groupspec check --refines`: client-visible differences between two tables.

Without bound options both run the refinement plan (check/plan.py REFINEMENT_PLAN: several
lockstep searches, stopping at the first that finds a difference) and report the rows of the table
under test that no lockstep run fired; with any, exactly those bounds.

Exit status: 0 no difference within the bounds; 1 a difference (each printed with its input
sequence and, when one could be made and verified, a scenario file); 2 bad input; 3 the search
was cut short (--max-states) before it found anything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import partial
from typing import Any, Final, Optional, Sequence, Union

from check.abstract import Bounds
from check.diff import NOT_FIRED, Difference, Lockstep, PlanReport, explore_diff_plan
from check.diff import explore_diff as lockstep
from check.plan import REFINEMENT_PLAN
from check.profiles import PROFILES
from conformance.diff import (
    DiffReport, Side, describe_obs, explore_diff, render_and_verify, render_report,
)
from model.atomic import write_text_atomic

from groupspec import junit
from groupspec.options import (
    add_bound_options, add_quiet, at_least, bounds_of, load_table_or_profile, output_dir, output_file,
)

HELP: Final = "client-visible differences between two tables, as verified scenario files"
DESCRIPTION: Final = ("Client-visible differences between two transition tables. Without bound "
                      "options: the refinement plan (check/plan.py REFINEMENT_PLAN), stopping at "
                      "the first difference, then the rows no lockstep run fired; with any, "
                      "exactly those bounds.")

# The bounds `diff` and `--refines` use when none are given: two consumers that time out and
# stall, generations up to 2 (the group returns to Empty at generation 2 when its last member
# is removed).
DEFAULT_DIFF_BOUNDS: Final = Bounds(dynamic=2, max_generation=2,
                                    faults=frozenset({"session", "rebalance", "stall"}))
MOST_MEMBERS: Final = 4


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--table", required=True, metavar="TABLE",
                   help="a profile (" + ", ".join(sorted(PROFILES)) + "), package.module:NAME, "
                        "or a mutant such as check.mutants:no-delayed-sync")
    p.add_argument("--against", required=True, metavar="TABLE", help="the table to compare with")
    add_bound_options(p, DEFAULT_DIFF_BOUNDS, given=True)
    p.add_argument("--max-differences", type=int, default=3,
                   help="how many differences to render as scenarios (default 3)")
    p.add_argument("--max-states", type=int, default=None, help="stop after this many lockstep states")
    p.add_argument("--out", default=None, metavar="DIR", help="write each scenario to DIR/difference-K.json (DIR is made if missing)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="write each difference's verified scenario as sequence diagrams, run on "
                        "both tables (the one it fails on names the difference), to one "
                        "self-contained HTML page")
    p.add_argument("--itf", default=None, metavar="FILE",
                   help="write the same traces as ITF (Apalache/Quint JSON): the first to FILE, the "
                        "others beside it numbered (d.itf.json, d-2.itf.json, ...), in the page's "
                        "order: difference 1 on the table it passes on, then on the one it fails on")
    add_lockstep_engine(p)
    add_quiet(p)


def add_lockstep_engine(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=("native", "python"), default="native",
                   help="lockstep search: the Rust engine with both tables as data (default; a "
                        "table it cannot take falls back to Python, saying so), or the Python "
                        "lockstep (the reference)")


def run(a: argparse.Namespace) -> int:
    bounds, given = bounds_of(a, DEFAULT_DIFF_BOUNDS, most=MOST_MEMBERS, beyond="the lockstep search")
    given = given or a.v3_joins or a.group_max_size != DEFAULT_DIFF_BOUNDS.group_max_size
    at_least("--max-differences", a.max_differences, 1)
    if a.max_states is not None:
        at_least("--max-states", a.max_states, 1)
    output_dir(a.out, "--out", "difference-1.json", create=True)
    output_file(a.json, "--json")
    output_file(a.html, "--html")
    output_file(a.itf, "--itf")
    mine, theirs = side(a.table, "--table"), side(a.against, "--against")
    if not given:
        status, plan = search_plan(mine, theirs, one_sided=False, max_differences=a.max_differences,
                                   max_states=a.max_states, out_dir=a.out, json_path=a.json,
                                   quiet=a.quiet, engine=a.engine)
        differences, where = plan.differences, f"the refinement plan ({len(plan.runs)} lockstep searches run)"
    else:
        status, r = search(mine, theirs, bounds, one_sided=False, max_differences=a.max_differences,
                           max_states=a.max_states, out_dir=a.out, json_path=a.json, quiet=a.quiet,
                           engine=a.engine)
        differences, where = r.differences, bounds.describe()
    if a.html or a.itf:
        write_differences(a.html, a.itf, differences, mine.name, theirs.name, where,
                          {mine.name: mine.table, theirs.name: theirs.table})
    return status


def write_differences(html: Optional[str], itf: Optional[str], differences: Sequence[Difference],
                      a_name: str, b_name: str, where: str, tables: dict[str, Any]) -> None:
    """--html and --itf: each verified difference's scenario drawn on both tables."""
    from render.difference import traces_of_difference
    from render.itf import write_itfs
    from render.sequence import write_page
    traces = []
    undrawn = []
    for k, d in enumerate(differences, 1):
        if d.scenario is None:
            undrawn.append(f"Difference {k} has no verified scenario and is not drawn: {d.unrendered}")
            continue
        traces += traces_of_difference(d.scenario, k, tables, passes_on=d.scenario_passes_on,
                                       fails_on=d.scenario_fails_on)
    if html:
        write_page(traces, html, title=f"groupspec diff: {a_name} against {b_name}",
                   intro=[f"Searched: {where}."] + undrawn,
                   empty=f"No client-visible difference between {a_name} and {b_name} was drawn.")
        print(f"difference page: {html} ({len(traces)} trace(s))")
    if itf:
        written = write_itfs(traces, itf)
        print(f"ITF: {', '.join(written)}" if written else "ITF: no difference drawn, nothing written")


def side(spec: str, flag: str) -> Side:
    """A profile name (kafka-3.9), package.module:NAME, or a mutant (check.mutants:no-delayed-sync)."""
    table, urgent = load_table_or_profile(spec, flag)
    return Side(spec, table, urgent)


def search(a_side: Side, b_side: Side, bounds: Bounds, *, one_sided: bool, max_differences: int,
           max_states: Optional[int], out_dir: Optional[str], json_path: Optional[str],
           quiet: bool, engine: str = "native") -> tuple[int, DiffReport]:
    """The lockstep search, its differences printed (and written to `out_dir` as scenario files):
    (exit status, report)."""
    verb = "refines" if one_sided else "against"
    print(f"groupspec diff: {a_side.name} {verb} {b_side.name}: {bounds.describe()}", flush=True)
    r = explore_diff(a_side, b_side, bounds, one_sided=one_sided, max_differences=max_differences,
                     max_nodes=max_states, progress=None if quiet else sys.stderr, engine=engine)

    def write(k: int, doc: dict[str, Any]) -> Optional[str]:
        if out_dir is None:
            return None
        path = os.path.join(out_dir, f"difference-{k}.json")
        write_text_atomic(path, json.dumps(doc, indent=2) + "\n")
        return path

    render_report(r, sys.stdout, write)
    if json_path:
        write_text_atomic(json_path, json.dumps(report_json(r), indent=2) + "\n")
    if r.differences:
        what = ("shows a client something " + r.b + " would not" if one_sided
                else "and " + r.b + " answer a client differently")
        print(f"\n{r.a} {what}: {r.total_differences} difference(s) at the shortest depth "
              f"{r.differences[0].depth}; {sum(d.scenario is not None for d in r.differences)} "
              f"verified scenario(s)")
        return 1, r
    if not r.complete:
        print(f"\nINCOMPLETE: cut short at {r.nodes:,} lockstep states (--max-states) with no "
              f"difference found so far", file=sys.stderr)
        return 3, r
    print(f"\nno client-visible difference within these bounds ({r.nodes:,} lockstep states, "
          f"{r.frontier:,} beyond the bounds)")
    return 0, r


def search_plan(a_side: Side, b_side: Side, *, one_sided: bool, max_differences: int,
                max_states: Optional[int], out_dir: Optional[str], json_path: Optional[str],
                quiet: bool, plan: Optional[Sequence[tuple[str, Bounds]]] = None,
                engine: str = "native") -> tuple[int, PlanReport]:
    """The refinement plan's lockstep searches (`plan`, default REFINEMENT_PLAN), each printed as
    it finishes, stopping at the first that finds a difference; then the rows of A no run fired:
    (exit status, report)."""
    plan = REFINEMENT_PLAN if plan is None else plan
    verb = "refines" if one_sided else "against"
    print(f"groupspec diff: {a_side.name} {verb} {b_side.name}: the refinement plan "
          f"({len(plan)} lockstep searches, stopping at the first difference)", flush=True)
    written = [0]

    def write(k: int, doc: dict[str, Any]) -> Optional[str]:
        if out_dir is None:
            return None
        written[0] += 1
        path = os.path.join(out_dir, f"difference-{written[0]}.json")
        write_text_atomic(path, json.dumps(doc, indent=2) + "\n")
        return path

    def started(label: str, bounds: Bounds) -> None:
        print(f"\n== {label}: {bounds.describe()}", flush=True)

    def done(label: str, r: DiffReport) -> None:
        render_report(r, sys.stdout, write)
        if not r.complete:
            print(f"cut short at {r.nodes:,} lockstep states (--max-states)")

    p = explore_diff_plan(a_side, b_side, plan, one_sided=one_sided, on_run=started, on_done=done,
                          search=partial(lockstep, verify=verify_from_reference if one_sided
                                         else render_and_verify, engine=engine),
                          max_differences=max_differences,
                          max_nodes=max_states, progress=None if quiet else sys.stderr)
    for label in p.skipped:
        print(f"\n== {label}: not run (stopped at the first difference)")
    print_plan_coverage(p, len(a_side.table.rows))
    if json_path:
        write_text_atomic(json_path, json.dumps(plan_json(p), indent=2) + "\n")
    if p.differences:
        first = p.differences[0]
        what = ("shows a client something " + p.b + " would not" if one_sided
                else "and " + p.b + " answer a client differently")
        print(f"\n{p.a} {what}: first difference after {first.depth} inputs; "
              f"{sum(d.scenario is not None for d in p.differences)} verified scenario(s)")
        return 1, p
    if not p.complete:
        print("\nINCOMPLETE: a lockstep search was cut short (--max-states) with no difference "
              "found so far", file=sys.stderr)
        return 3, p
    print(f"\nno client-visible difference in the refinement plan ({p.nodes:,} lockstep states, "
          f"{p.seconds:.1f} s)")
    return 0, p


def verify_from_reference(ls: Lockstep, d: Difference) -> None:
    """A refinement's difference as a scenario that passes on the reference table (B) and fails
    on the table under test, when one of B's answers to the input is one A cannot give; else
    one that passes on A and fails on B (render_and_verify tries them in that order)."""
    reference = tuple(("B", o) for o in d.b_answers if o not in d.a_answers)
    d.alternatives = reference + tuple(x for x in d.alternatives if x not in reference)
    render_and_verify(ls, d)


def print_plan_coverage(p: PlanReport, rows_total: int) -> None:
    """The rows of the table under test the lockstep fired, and those it never compared."""
    never = sorted(rid for rid, why in p.unfired.items() if why == NOT_FIRED)
    marked = len(p.unfired) - len(never)
    partial = " (the plan stopped early: a lower bound)" if p.skipped else ""
    print(f"\nrows of {p.a} fired by the lockstep: {len(p.rows_fired)}/{rows_total}{partial}; "
          f"{marked} marked unreachable in the table, {len(never)} never compared")
    if p.skipped:
        return  # not what the plan compares: it stopped at the first difference
    for rid in never:
        print(f"    never compared: {rid}")


def plan_json(p: PlanReport) -> dict[str, Any]:
    return {"a": p.a, "b": p.b, "one_sided": p.one_sided, "complete": p.complete,
            "seconds": round(p.seconds, 3), "runs": [{"label": label, **report_json(r)}
                                                     for label, r in p.runs],
            "skipped": p.skipped, "rows_fired": len(p.rows_fired),
            "never_compared": sorted(rid for rid, why in p.unfired.items() if why == NOT_FIRED)}


def refines(table_spec: Optional[str], against: str, bounds: Optional[Bounds], *,
            max_states: Optional[int], quiet: bool,
            engine: str = "native") -> tuple[int, Union[DiffReport, PlanReport]]:
    """`groupspec check --table T --refines P`: exit 1 when T answers a client in a way P cannot.
    Without bounds: the refinement plan."""
    mine = side(table_spec or "kafka-3.9", "--table")
    theirs = side(against, "--refines")
    if bounds is None:
        return search_plan(mine, theirs, one_sided=True, max_differences=1, max_states=max_states,
                           out_dir=None, json_path=None, quiet=quiet, engine=engine)
    return search(mine, theirs, bounds, one_sided=True, max_differences=1,
                  max_states=max_states, out_dir=None, json_path=None, quiet=quiet, engine=engine)


def refinement_cases(table: str, against: str, status: int,
                     r: Union[DiffReport, PlanReport]) -> list[junit.Case]:
    """The JUnit testcases of `check --refines`: the verdict, and (a plan) the rows never compared
    (skipped, listing them, when some are)."""
    name, cls = f"refines {against}", f"groupspec.check.{table}"
    if status == 0:
        out = [junit.Case(cls, name, junit.PASSED, seconds=r.seconds)]
    elif status == 1:
        out = [junit.Case(cls, name, junit.FAILURE, f"shows a client something {against} would not",
                          difference_text(r), r.seconds)]
    else:
        out = [junit.Case(cls, name, junit.ERROR, "incomplete: the lockstep search was cut short",
                          "", r.seconds)]
    if isinstance(r, PlanReport):
        never = sorted(rid for rid, why in r.unfired.items() if why == NOT_FIRED)
        rows = f"{name}: rows compared"
        out.append(junit.Case(cls, rows, junit.SKIPPED, f"{len(never)} rows no lockstep run fired "
                              f"(never compared)", "\n".join(never)) if never
                   else junit.Case(cls, rows, junit.PASSED))
    return out


def difference_text(r: Union[DiffReport, PlanReport]) -> str:
    """The differences of a report as plain text (a JUnit failure's text)."""
    if isinstance(r, PlanReport):
        return "\n".join(f"{label}:\n{difference_text(x)}" for label, x in r.runs if x.differences)
    lines = []
    for d in r.differences:
        shown = r.a if d.shown_by == "A" else r.b
        other = r.b if d.shown_by == "A" else r.a
        lines += list(d.labels) or [a.label(r.bounds) for a, _ in d.inputs] + [d.action.label(r.bounds)]
        lines.append(f"{shown}: {describe_obs(d.shown)}")
        lines += [f"{other}: {describe_obs(o)}" for o in d.other]
        if d.scenario is not None:
            lines.append(json.dumps(d.scenario, indent=2))
        lines.append("")
    return "\n".join(lines)


def report_json(r: DiffReport) -> dict[str, Any]:
    return {
        "a": r.a, "b": r.b, "bounds": r.bounds.describe(), "one_sided": r.one_sided,
        "complete": r.complete, "lockstep_states": r.nodes, "edges": r.edges,
        "seconds": round(r.seconds, 3), "differences_found": r.total_differences,
        "differences": [{
            "inputs": d.depth, "shown_by": r.a if d.shown_by == "A" else r.b,
            "trace": list(d.labels) or [a.label(r.bounds) for a, _ in d.inputs] + [d.action.label(r.bounds)],
            "shown": describe_obs(d.shown), "other_can_answer": [describe_obs(o) for o in d.other],
            "scenario": d.scenario, "scenario_passes_on": d.scenario_passes_on or None,
            "scenario_fails_on": d.scenario_fails_on or None,
            "no_scenario_because": d.unrendered or None,
        } for d in r.differences],
    }

