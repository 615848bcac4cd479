"""`groupspec diff` and `groupspec check --refines`: client-visible differences between two tables.

Exit status: 0 no difference within the bounds; 1 a difference (each printed with its input
sequence and, when one could be made and verified, a scenario file); 2 bad input; 3 the search
was cut short (--max-states) before it found anything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, Optional, Sequence

from conformance.diff import DiffReport, Side, describe_obs, explore_diff, render_report
from check.abstract import FAULTS, Bounds
from check.profiles import PROFILES, UnknownProfile, profile_table
from model.table import URGENT

from groupspec.cli import UsageError, load_table, parse_faults

# The bounds `diff` and `--refines` use when none are given: two consumers that time out and
# stall, generations up to 2 (the group returns to Empty at generation 2 when its last member
# is removed).
DEFAULT_DIFF_BOUNDS = Bounds(dynamic=2, max_generation=2, faults=frozenset({"session", "rebalance", "stall"}))
DEFAULT_DIFF_FAULTS = "session,rebalance,stall"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def resolve_side(spec: str, option: str) -> Side:
    """A profile name (kafka-3.9), package.module:NAME, or a mutant (check.mutants:no-delayed-sync)."""
    if spec in PROFILES:
        try:
            return Side(spec, profile_table(spec), URGENT)
        except (ImportError, TypeError, UnknownProfile) as e:
            raise UsageError(f"{option}: profile {spec!r} cannot be loaded: {e}") from e
    if ":" not in spec:
        raise UsageError(f"{option}: {spec!r} is neither a profile ({', '.join(sorted(PROFILES))}) "
                         f"nor package.module:NAME")
    try:
        table, urgent = load_table(spec)
    except UsageError as e:
        raise UsageError(f"{option}: {str(e).removeprefix('--table: ')}") from e
    return Side(spec, table, urgent)


def add_bound_options(p: argparse.ArgumentParser) -> None:
    d = DEFAULT_DIFF_BOUNDS
    p.add_argument("--members", type=int, default=d.dynamic, help=f"dynamic members (default {d.dynamic})")
    p.add_argument("--static", type=int, default=d.static, help=f"static members (default {d.static})")
    p.add_argument("--max-generation", type=int, default=d.max_generation,
                   help=f"generation cap (default {d.max_generation})")
    p.add_argument("--faults", default=DEFAULT_DIFF_FAULTS,
                   help=f"comma-separated from {','.join(FAULTS)}, or none (default {DEFAULT_DIFF_FAULTS})")
    p.add_argument("--mode", choices=("closed", "open"), default="closed")
    p.add_argument("--v3-joins", action="store_true",
                   help="dynamic members use JoinGroup v0-3 (no MEMBER_ID_REQUIRED)")
    p.add_argument("--group-max-size", type=int, default=1 << 30)


def bounds_of(a: argparse.Namespace) -> Bounds:
    for name, v, least in (("--members", a.members, 0), ("--static", a.static, 0),
                           ("--max-generation", a.max_generation, 0),
                           ("--group-max-size", a.group_max_size, 1)):
        if v < least:
            raise UsageError(f"{name} must be >= {least}, got {v}")
    if a.members + a.static < 1:
        raise UsageError("need at least one member (--members/--static)")
    if a.members + a.static > 4:
        raise UsageError("more than 4 members is beyond what the lockstep search can finish")
    return Bounds(dynamic=a.members, static=a.static, max_generation=a.max_generation,
                  faults=parse_faults(a.faults), mode=a.mode,
                  require_known_member_id=not a.v3_joins, group_max_size=a.group_max_size)


def _atomic_write(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def difference_text(r: DiffReport) -> str:
    """The differences of a report as plain text (a JUnit failure's text)."""
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


def run(a_side: Side, b_side: Side, bounds: Bounds, *, one_sided: bool, max_differences: int,
        max_states: Optional[int], out_dir: Optional[str], json_path: Optional[str],
        quiet: bool) -> tuple[int, DiffReport]:
    verb = "refines" if one_sided else "against"
    print(f"groupspec diff: {a_side.name} {verb} {b_side.name}: {bounds.describe()}", flush=True)
    r = explore_diff(a_side, b_side, bounds, one_sided=one_sided, max_differences=max_differences,
                     max_nodes=max_states, progress=None if quiet else sys.stderr)

    def write(k: int, doc: dict[str, Any]) -> Optional[str]:
        if out_dir is None:
            return None
        path = os.path.join(out_dir, f"difference-{k}.json")
        _atomic_write(path, json.dumps(doc, indent=2) + "\n")
        return path

    render_report(r, sys.stdout, write)
    if json_path:
        _atomic_write(json_path, json.dumps(report_json(r), indent=2) + "\n")
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


def diff_main(argv: Sequence[str]) -> int:
    p = _Parser(prog="groupspec diff",
                description="Client-visible differences between two transition tables.")
    p.add_argument("--table", required=True, metavar="TABLE",
                   help="a profile (" + ", ".join(sorted(PROFILES)) + "), package.module:NAME, "
                        "or a mutant such as check.mutants:no-delayed-sync")
    p.add_argument("--against", required=True, metavar="TABLE", help="the table to compare with")
    add_bound_options(p)
    p.add_argument("--max-differences", type=int, default=3,
                   help="how many differences to render as scenarios (default 3)")
    p.add_argument("--max-states", type=int, default=None, help="stop after this many lockstep states")
    p.add_argument("--out", default=None, metavar="DIR", help="write each scenario to DIR/difference-K.json")
    p.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    a = p.parse_args(list(argv))
    bounds = bounds_of(a)
    if a.max_differences < 1:
        raise UsageError(f"--max-differences must be >= 1, got {a.max_differences}")
    if a.max_states is not None and a.max_states < 1:
        raise UsageError(f"--max-states must be >= 1, got {a.max_states}")
    if a.out is not None and not os.path.isdir(a.out):
        raise UsageError(f"--out: directory {a.out} does not exist")
    if a.json is not None and not os.path.isdir(os.path.dirname(os.path.abspath(a.json))):
        raise UsageError(f"--json: directory {os.path.dirname(os.path.abspath(a.json))} does not exist")
    mine, theirs = resolve_side(a.table, "--table"), resolve_side(a.against, "--against")
    return run(mine, theirs, bounds, one_sided=False, max_differences=a.max_differences,
               max_states=a.max_states, out_dir=a.out, json_path=a.json, quiet=a.quiet)[0]


def refines(table_spec: Optional[str], against: str, bounds: Optional[Bounds], *,
            max_states: Optional[int], quiet: bool) -> tuple[int, DiffReport]:
    """`groupspec check --table T --refines P`: exit 1 when T answers a client in a way P cannot."""
    mine = resolve_side(table_spec or "kafka-3.9", "--table")
    theirs = resolve_side(against, "--refines")
    return run(mine, theirs, bounds or DEFAULT_DIFF_BOUNDS, one_sided=True, max_differences=1,
               max_states=max_states, out_dir=None, json_path=None, quiet=quiet)
