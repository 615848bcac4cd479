"""The `groupspec` command. Bad arguments: a clear message on stderr and exit status 2."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Optional, Sequence

from model.abstract import FAULTS, Bounds
from model.dsl import Guard, Table
from model.explore import LIVENESS, WELL_FORMED, Report
from model.invariants import INVARIANTS
from model.plan import DEFAULT_PLAN, PYTHON_PLAN


class UsageError(Exception):
    """A bad command-line argument."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


DEFAULT_FAULTS = "session,rebalance,stall"
DEFAULT_ENGINE = "native"


def load_table(spec: str) -> tuple[Table, tuple[tuple[str, Guard], ...]]:
    """`package.module:NAME` -> the Table object NAME (and the module's URGENT, if it has one)."""
    from model.table import URGENT
    mod_name, sep, attr = spec.partition(":")
    if not sep or not mod_name or not attr:
        raise UsageError(f"--table expects package.module:NAME, got {spec!r}")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise UsageError(f"--table: cannot import {mod_name!r}: {e}") from e
    obj = getattr(mod, attr, None)
    if obj is None and "." not in attr and hasattr(mod, "MUTANTS"):
        entry = getattr(mod, "MUTANTS").get(attr)
        obj = entry[0] if entry else None
    if not isinstance(obj, Table):
        raise UsageError(f"--table: {spec!r} is not a transition table")
    urgent = getattr(mod, "URGENT", URGENT)
    return obj, urgent


def parse_faults(text: str) -> frozenset[str]:
    items = frozenset(x.strip() for x in text.split(",") if x.strip())
    if text.strip() == "none":
        return frozenset()
    unknown = items - set(FAULTS)
    if unknown:
        raise UsageError(f"--faults: unknown fault(s) {sorted(unknown)}; choose from "
                         f"{', '.join(FAULTS)} (or 'none')")
    return items


def _positive(name: str, value: int, minimum: int = 0) -> int:
    if value < minimum:
        raise UsageError(f"{name} must be >= {minimum}, got {value}")
    return value


def cmd_check(argv: Sequence[str]) -> int:
    p = _Parser(prog="groupspec check",
                description="Explore the transition table's state space and check every invariant.")
    p.add_argument("--members", type=int, default=None, help="dynamic members (default 3)")
    p.add_argument("--static", type=int, default=None, help="static members (default 0)")
    p.add_argument("--max-generation", type=int, default=None, help="generation cap (default 1)")
    p.add_argument("--faults", default=None,
                   help=f"comma-separated from {','.join(FAULTS)}, or none (default {DEFAULT_FAULTS})")
    p.add_argument("--mode", choices=("closed", "open"), default=None)
    p.add_argument("--v3-joins", action="store_true",
                   help="dynamic members use JoinGroup v0-3 (no MEMBER_ID_REQUIRED)")
    p.add_argument("--group-max-size", type=int, default=1 << 30)
    p.add_argument("--no-symmetry", action="store_true", help="turn member-symmetry reduction off")
    p.add_argument("--no-liveness", action="store_true")
    p.add_argument("--invariant", action="append", default=None, metavar="NAME",
                   help="check only these invariants (repeatable)")
    p.add_argument("--max-states", type=int, default=None)
    p.add_argument("--table", default=None, metavar="MODULE:NAME",
                   help="check another table, e.g. model.mutants:SECOND_DELAYED_JOIN")
    p.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    p.add_argument("--prove", action="store_true", help="also run the Z3 proofs")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--stop-at-first-violation", action="store_true")
    p.add_argument("--engine", choices=("python", "native"), default=DEFAULT_ENGINE,
                   help=f"explorer: the Rust engine built from the table, or the networkx one "
                        f"(default {DEFAULT_ENGINE})")
    a = p.parse_args(list(argv))
    single = any(v is not None for v in (a.members, a.static, a.max_generation, a.faults, a.mode))
    a.members = 3 if a.members is None else a.members
    a.static = 0 if a.static is None else a.static
    a.max_generation = 1 if a.max_generation is None else a.max_generation
    a.faults = DEFAULT_FAULTS if a.faults is None else a.faults
    a.mode = "closed" if a.mode is None else a.mode
    _positive("--members", a.members)
    _positive("--static", a.static)
    _positive("--max-generation", a.max_generation)
    _positive("--group-max-size", a.group_max_size, 1)
    if a.members + a.static < 1:
        raise UsageError("need at least one member (--members/--static)")
    if a.members + a.static > 6:
        raise UsageError("more than 6 members is beyond what this explorer can finish")
    names: Optional[frozenset[str]] = None
    if a.invariant:
        unknown = set(a.invariant) - set(INVARIANTS) - {LIVENESS, WELL_FORMED}
        if unknown:
            raise UsageError(f"--invariant: unknown {sorted(unknown)}; known: "
                             f"{', '.join(sorted(INVARIANTS) + [LIVENESS, WELL_FORMED])}")
        names = frozenset(a.invariant)
    if a.json:
        parent = os.path.dirname(os.path.abspath(a.json))
        if not os.path.isdir(parent):
            raise UsageError(f"--json: directory {parent} does not exist")
    from model.table import CLASSIC_TABLE, URGENT
    table, urgent = (CLASSIC_TABLE, URGENT) if a.table is None else load_table(a.table)
    bounds = Bounds(dynamic=a.members, static=a.static, max_generation=a.max_generation,
                    faults=parse_faults(a.faults), mode=a.mode,
                    require_known_member_id=not a.v3_joins, group_max_size=a.group_max_size)
    from model.native import NativeEngineUnavailable, choose_engine, run_explorer
    try:
        a.engine = choose_engine(a.engine, names)
    except NativeEngineUnavailable as e:
        raise UsageError(f"--engine native: {e}") from e
    default = DEFAULT_PLAN if a.engine == "native" else PYTHON_PLAN
    plan = [("bounds from the command line", bounds)] if single or a.v3_joins else list(default)
    print(f"groupspec check: table {table.name} ({len(table.rows)} rows), "
          f"{len(plan)} exploration(s), symmetry {'off' if a.no_symmetry else 'on'}", flush=True)
    liveness = not a.no_liveness and (names is None or LIVENESS in names)
    reports = []
    for label, b in plan:
        print(f"\n== {label}: {b.describe()}", flush=True)
        try:
            r = run_explorer(a.engine, table, urgent, b, symmetry=not a.no_symmetry,
                             invariants=names, liveness=liveness, max_states=a.max_states,
                             progress=None if a.quiet else sys.stderr,
                             stop_at_first_violation=a.stop_at_first_violation)
        except NativeEngineUnavailable as e:
            raise UsageError(f"--engine native: {e}") from e
        if r is None:
            return 130
        print_run(r)
        reports.append((label, r))
    merged = merge(table, [r for _, r in reports])
    print_coverage(merged)
    status = 0 if not merged.violations else 1
    doc = merged.to_json()
    doc["engine"] = a.engine
    doc["runs"] = [{"label": label, "engine": a.engine, **{k: v for k, v in r.to_json().items()
                                       if k not in ("uncovered_rows",)}}
                   for label, r in reports]
    if a.prove:
        proof_status = _prove([] if a.table is None else ["--table", a.table])
        doc["proofs_exit_status"] = proof_status
        status = status or proof_status
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, a.json)
    return status


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
        out.violations.extend(r.violations)
    for row in table.rows:
        if row.id not in out.rows_fired:
            out.uncovered[row.id] = row.unreachable or "not reached at these bounds"
    return out


def print_run(r: Report) -> None:
    print(f"states {r.states:,}  edges {r.edges:,}  depth {r.depth}  "
          f"{r.seconds:.1f} s  ({r.states_per_second:,.0f} states/s)  "
          f"beyond bounds {r.frontier:,}  rows fired {len(r.rows_fired)}")
    for v in r.violations:
        print(f"\nVIOLATION {v.invariant}: {v.message}")
        for line in v.trace:
            print("  " + line)


def print_coverage(r: Report) -> None:
    print(f"\nall runs: states {r.states:,}  edges {r.edges:,}  {r.seconds:.1f} s")
    print(f"rows covered {len(r.rows_fired)}/{r.rows_total}")
    unreach = sum(1 for why in r.uncovered.values() if why != "not reached at these bounds")
    notreached = [rid for rid, why in r.uncovered.items() if why == "not reached at these bounds"]
    print(f"  {unreach} rows marked unreachable (with the reason in the table), "
          f"{len(notreached)} not reached at these bounds")
    for rid in sorted(notreached):
        print(f"    not reached: {rid}")
    if not r.violations:
        print("no invariant violated")
    else:
        print(f"{len(r.violations)} violation(s): {sorted({v.invariant for v in r.violations})}")


def _prove(argv: list[str]) -> int:
    try:
        mod = importlib.import_module("proofs.cli")
    except ImportError as e:
        raise UsageError(f"groupspec prove is not available in this build: {e}") from e
    return int(mod.prove_main(argv))


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: groupspec {check,prove,scenario run,traces generate,replay,soak} ...\n"
             "  groupspec check [--members N] [--json FILE] ...   model-check the table\n"
             "  groupspec check --engine native|python ...       choose the explorer\n"
             "  groupspec prove [--invariant NAME] [--depth K]    Z3 proofs over the table\n"
             "  groupspec scenario run FILE... --target T        run scenario files\n"
             "  groupspec traces generate --groups N --out DIR   make traces with the reference\n"
             "  groupspec replay --input PATH... --output DIR     check traces/logs on Spark\n"
             "  groupspec soak --minutes M [--out DIR] [--seed S] reference vs model, long run\n"
             )
    try:
        if not args or args[0] in ("-h", "--help"):
            print(usage)
            return 0 if args else 2
        cmd, rest = args[0], args[1:]
        if cmd == "check":
            return cmd_check(rest)
        if cmd == "prove":
            return _prove(rest)
        if cmd == "scenario":
            if not rest or rest[0] != "run":
                raise UsageError("groupspec scenario: expected 'scenario run FILE... --target T'")
            from conformance.cli import run_scenarios
            return int(run_scenarios(rest[1:]))
        if cmd == "traces":
            if not rest or rest[0] != "generate":
                raise UsageError("groupspec traces: expected 'traces generate ...'")
            from reference.coordinator import ReferenceCoordinator
            from traces.cli import generate_main
            return int(generate_main(rest[1:], ReferenceCoordinator))
        if cmd == "replay":
            from traces.cli import replay_main
            return int(replay_main(rest))
        if cmd == "soak":
            from conformance.soak import soak_main
            return int(soak_main(rest))
        raise UsageError(f"groupspec: unknown command {cmd!r}\n{usage}")
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
