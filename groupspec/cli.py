"""The `groupspec` command. Bad arguments: a clear message on stderr and exit status 2."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Optional, Sequence

from check.abstract import FAULTS, Bounds
from model.dsl import Guard, Table
from model.errors import EXIT_DEFECT, EXIT_INTERRUPTED, BadInput, BoundaryError, Incomplete
from check.explore import LIVENESS, PATH_PROPERTIES, WELL_FORMED, Report, explore
from model.invariants import INVARIANTS
from check.plan import DEFAULT_PLAN, PLAN_MAX_STATES, PYTHON_PLAN
from model.atomic import check_writable, write_text_atomic


class UsageError(BadInput):
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
    p.add_argument("--mode", choices=("closed", "open"), default=None,
                   help="closed: consumers that follow the protocol; open: clients that send any "
                        "request at any time (default closed)")
    p.add_argument("--v3-joins", action="store_true",
                   help="dynamic members use JoinGroup v0-3 (no MEMBER_ID_REQUIRED)")
    p.add_argument("--group-max-size", type=int, default=1 << 30, metavar="N",
                   help="the broker's group.max.size (default unlimited)")
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
    p.add_argument("--quiet", action="store_true", help="no progress lines")
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
                        "such as kafka-3.9, or module:NAME) cannot; see groupspec diff")
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
    if a.max_states is not None:
        _positive("--max-states", a.max_states, 1)
    if a.members + a.static < 1:
        raise UsageError("need at least one member (--members/--static)")
    if a.members + a.static > 6:
        raise UsageError("more than 6 members is beyond what this explorer can finish")
    names: Optional[frozenset[str]] = None
    if a.invariant:
        unknown = set(a.invariant) - set(INVARIANTS) - set(PATH_PROPERTIES) - {WELL_FORMED}
        if unknown:
            raise UsageError(f"--invariant: unknown {sorted(unknown)}; known: "
                             f"{', '.join(sorted(INVARIANTS) + sorted(PATH_PROPERTIES) + [WELL_FORMED])}")
        names = frozenset(a.invariant)
        if names <= set(PATH_PROPERTIES) and a.no_liveness:
            raise UsageError(f"--invariant {', '.join(sorted(names))} with --no-liveness: "
                             "nothing to check")
    for flag, path in (("--json", a.json), ("--junit", a.junit)):
        if path:
            check_writable(path, flag)
    from model.table import CLASSIC_TABLE, URGENT
    table, urgent = (CLASSIC_TABLE, URGENT) if a.table is None else load_table(a.table)
    if a.profile == "kafka-4":
        if a.table is not None:
            raise UsageError("--profile and --table are exclusive")
        from check.profile_kafka4 import kafka4_table
        table = kafka4_table()
    if a.refines is not None:
        from groupspec.diff_cli import resolve_side
        resolve_side(a.refines, "--refines")  # bad input exits 2 before any exploration
    bounds = Bounds(dynamic=a.members, static=a.static, max_generation=a.max_generation,
                    faults=parse_faults(a.faults), mode=a.mode,
                    require_known_member_id=not a.v3_joins, group_max_size=a.group_max_size)
    from check.native import NativeEngineUnavailable, choose_engine, run_explorer
    try:
        a.engine = choose_engine(a.engine, names)
    except NativeEngineUnavailable as e:
        raise UsageError(f"--engine native: {e}") from e
    default = DEFAULT_PLAN if a.engine == "native" else PYTHON_PLAN
    plan = [("bounds from the command line", bounds)] if single or a.v3_joins else list(default)
    max_states = a.max_states
    if max_states is None and len(plan) > 1:
        max_states = PLAN_MAX_STATES  # a table whose state space outgrows the plan's bounds
    print(f"groupspec check: table {table.name} ({len(table.rows)} rows), "
          f"{len(plan)} exploration(s), symmetry {'off' if a.no_symmetry else 'on'}", flush=True)
    liveness = not a.no_liveness and (names is None or bool(names & set(PATH_PROPERTIES)))
    reports = []
    checked = checked_properties(names, liveness)
    found: set[str] = set()
    from check.native import NativeEngineUnavailable, run_explorer
    for label, b in plan:
        print(f"\n== {label}: {b.describe()}", flush=True)
        if (a.stop_at_first_violation and found) or (not a.all_counterexamples and checked <= found):
            why = ("stopped at the first violation" if a.stop_at_first_violation and found
                   else "every checked property already has a counterexample")
            r = Report(b, not a.no_symmetry, rows_total=len(table.rows), cut_short=f"not run: {why}")
            print(f"skipped: {r.cut_short}")
        else:
            try:
                run = run_explorer(a.engine, table, urgent, b, symmetry=not a.no_symmetry,
                                   invariants=names, liveness=liveness, max_states=max_states,
                                   progress=None if a.quiet else sys.stderr,
                                   stop_at_first_violation=a.stop_at_first_violation,
                                   all_counterexamples=a.all_counterexamples,
                                   skip=frozenset() if a.all_counterexamples else frozenset(found))
            except NativeEngineUnavailable as e:
                raise UsageError(f"--engine native: {e}") from e
            if run is None:
                return 130  # run_explorer said what was explored; nothing is reported
            r = run
            print_run(r)
        found |= {v.invariant for v in r.violations}
        reports.append((label, r))
    merged = merge(table, [r for _, r in reports])
    print_coverage(merged)
    cut = [f"{label}: {r.cut_short}" for label, r in reports if r.cut_short]
    status = 1 if merged.violations else 3 if cut else 0
    for why in cut:
        print(f"INCOMPLETE: {why}")
    if cut and not merged.violations:
        print("not a pass: the exploration was cut short (exit 3)")
    if any(r.cut_short.startswith("--max-states") for _, r in reports) and a.max_states is None:
        print(f"(the default plan explores at most {PLAN_MAX_STATES:,} states per run; "
              f"--max-states N sets another budget)")
    doc = merged.to_json()
    doc["engine"] = a.engine
    doc["runs"] = [{"label": label, "engine": a.engine, **{k: v for k, v in r.to_json().items()
                                       if k not in ("uncovered_rows",)}}
                   for label, r in reports]
    if a.refines is not None:
        from groupspec.diff_cli import refines
        print(f"\n== refinement: {table.name} against {a.refines}", flush=True)
        refined, refinement = refines(a.table, a.refines, bounds if single or a.v3_joins else None,
                                      max_states=a.max_states, quiet=a.quiet)
        doc["refines"] = {"against": a.refines, "exit_status": refined}
        status = 1 if 1 in (status, refined) else max(status, refined)
    if a.prove:
        proof_status = _prove([] if a.table is None else ["--table", a.table])
        doc["proofs_exit_status"] = proof_status
        status = status or proof_status
    doc["complete"] = not cut
    if a.junit:
        from groupspec import junit
        incomplete = next((r.cut_short for _, r in reports if r.cut_short and not (
            r.cut_short.startswith("not run") or r.cut_short.startswith("every checked"))), "")
        gap = next((label for label, r in reports if liveness and not r.liveness_checked
                    and not r.cut_short.startswith("not run")), None)
        unchecked = {LIVENESS: f"run '{gap}' had safety violations, and liveness is only checked "
                               f"on runs without them"} if gap else {}
        cases = junit.check_cases(table.name, checked, merged.violations, incomplete, unchecked)
        if a.refines is not None:
            from groupspec.diff_cli import difference_text
            name = f"refines {a.refines}"
            cls = f"groupspec.check.{table.name}"
            cases.append(junit.Case(cls, name, junit.PASSED, seconds=refinement.seconds)
                         if refined == 0 else
                         junit.Case(cls, name, junit.FAILURE,
                                    f"shows a client something {a.refines} would not",
                                    difference_text(refinement), refinement.seconds)
                         if refined == 1 else
                         junit.Case(cls, name, junit.ERROR, "incomplete: the lockstep search was "
                                    "cut short", "", refinement.seconds))
        junit.write(a.junit, f"groupspec check {table.name}", cases, merged.seconds)
    if a.json:
        write_text_atomic(a.json, json.dumps(doc, indent=2))
    return status


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


def _prove(argv: list[str]) -> int:
    try:
        mod = importlib.import_module("proofs.cli")
    except ImportError as e:
        raise UsageError(f"groupspec prove is not available in this build: {e}") from e
    return int(mod.prove_main(argv))


USAGE = ("usage: groupspec {check,prove,prove states,scenario run,traces generate,diff,replay,soak,serve,fuzz} ...\n"
         "  groupspec check [--members N] [--json FILE] ...   model-check the table\n"
         "  groupspec check --engine native|python ...       choose the explorer\n"
         "  groupspec prove [--invariant NAME] [--depth K]    Z3 proofs over the table\n"
         "  groupspec prove states [--ids N] ...              explorer and solver reach the same states\n"
         "  groupspec diff --table T --against kafka-3.9      client-visible differences\n"
         "  groupspec scenario run FILE... --target T        run scenario files\n"
         "  groupspec traces generate --groups N --out DIR   make traces with the reference\n"
         "  groupspec replay --input PATH... --output DIR     check traces/logs on Spark\n"
         "  groupspec soak --minutes M [--out DIR] [--seed S] reference vs model, long run\n"
         "  groupspec serve [--port N] [--config K=V] [--bug B] the reference as a Kafka broker\n"
         "  groupspec fuzz --target T [--minutes M] [--report DIR]  fuzz a broker's coordinator\n"
         "exit codes: 0 passed, 1 finding, 2 bad input or usage, 3 incomplete, 130 interrupted\n"
         "(README, \"Exit codes\"); COMMAND --help for a command's options\n")


def _prove_junit(argv: list[str]) -> int:
    """`groupspec prove ... --junit FILE`: the proofs' JSON report turned into JUnit XML."""
    import tempfile

    from groupspec import junit
    rest: list[str] = []
    path = json_path = None
    it = iter(argv)
    for x in it:
        if x == "--junit" or x == "--json":
            v = next(it, None)
            if v is None:
                raise UsageError(f"groupspec prove: {x} expects a FILE")
            path, json_path = (v, json_path) if x == "--junit" else (path, v)
        elif x.startswith("--junit="):
            path = x.split("=", 1)[1]
        else:
            rest.append(x)
    assert path is not None
    check_writable(path, "--junit")
    parent = os.path.dirname(os.path.abspath(path))
    tmp = None
    if json_path is None:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=".prove-", suffix=".json")
        os.close(fd)
        json_path = tmp
    try:
        status = _prove(rest + ["--json", json_path])
        if status in (0, 1):
            with open(json_path) as f:
                report = json.load(f)
            junit.write(path, f"groupspec prove {report.get('table', '')}",
                        junit.prove_cases(report), float(report.get("seconds", 0.0)))
        return status
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The one top-level handler: every boundary error becomes one line on stderr and its exit
    code (model/errors.py); Ctrl-C exits 130; anything else is a defect, reported as one."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = USAGE
    cmd = args[0] if args and not args[0].startswith("-") else ""
    if cmd in ("scenario", "traces", "prove") and len(args) > 1 and not args[1].startswith("-"):
        cmd = f"{cmd} {args[1]}"
    try:
        if not args:
            print(f"groupspec: a command is needed\n{usage}", file=sys.stderr)
            return 2
        if args[0] in ("-h", "--help"):
            print(usage)
            return 0
        name, rest = args[0], args[1:]
        if name == "check":
            return cmd_check(rest)
        if name == "prove":
            if "--junit" in rest or any(x.startswith("--junit=") for x in rest):
                return _prove_junit(rest)
            return _prove(rest)
        if name == "diff":
            from groupspec.diff_cli import diff_main
            return diff_main(rest)
        if name == "scenario":
            if rest[:1] in (["-h"], ["--help"]):
                print("usage: groupspec scenario run FILE... --target T [--json FILE] [--allow-remote]\n"
                      "  (groupspec scenario run --help for the options)")
                return 0
            if not rest or rest[0] != "run":
                raise UsageError("groupspec scenario: expected 'scenario run FILE... --target T'")
            from conformance.cli import run_scenarios
            return int(run_scenarios(rest[1:]))
        if name == "traces":
            if rest[:1] in (["-h"], ["--help"]):
                print("usage: groupspec traces generate --groups N --out DIR [options]\n"
                      "  (groupspec traces generate --help for the options)")
                return 0
            if not rest or rest[0] != "generate":
                raise UsageError("groupspec traces: expected 'traces generate ...'")
            from reference.coordinator import ReferenceCoordinator
            from traces.cli import generate_main
            return int(generate_main(rest[1:], ReferenceCoordinator))
        if name == "replay":
            from traces.cli import replay_main
            return int(replay_main(rest))
        if name == "serve":
            from server.run import serve_main
            return int(serve_main(rest))
        if name == "fuzz":
            from fuzz.cli import fuzz_main
            return int(fuzz_main(rest))
        if name == "soak":
            from conformance.soak import soak_main
            return int(soak_main(rest))
        raise UsageError(f"groupspec: unknown command {name!r}\n{usage}")
    except BoundaryError as e:
        return _report_boundary(cmd, e)
    except KeyboardInterrupt:
        _flush_quietly()
        print(f"\ngroupspec{' ' + cmd if cmd else ''}: interrupted (Ctrl-C); nothing reported is complete",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `groupspec ... | head`: the reader left; not an error of ours
        _silence_stdout()
        return 0
    except Exception:
        import traceback

        _flush_quietly()
        traceback.print_exc()
        print(f"groupspec {cmd}: internal error (a defect in groupspec, not in your input): please "
              "report it with the command line and the traceback above", file=sys.stderr)
        return EXIT_DEFECT


def _report_boundary(cmd: str, e: BoundaryError) -> int:
    message = str(e) or type(e).__name__
    if not message.startswith("groupspec"):
        message = f"groupspec {cmd}: {message}" if cmd else f"groupspec: {message}"
    if isinstance(e, Incomplete):
        message += " (incomplete: nothing was passed)"
    _flush_quietly()
    print(message, file=sys.stderr)
    return e.exit_code


def _flush_quietly() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush does not fail too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
