"""The native explorer (the Rust crate in engine/, module `groupspec_engine`), driven from Python.

The engine is built at run time from the table as plain data (`table_data`): row ids, states,
events, guards as atoms and negations, reply forms and errors, next states, effects in order,
the fields each effect may modify, the urgent events, and the Group's fields (GROUP_FIELDS, the
frame). It implements the model's atoms, effects, reply forms, invariants and Group fields natively
under their Python names. For anything else a table names (a user's registered atom, effect, reply
form or invariant, or a redefinition of one of the model's) it calls back into the registered
Python function (check/callbacks.py: a counted slow path; `slow_path` says which). What cannot be
called back (a value the abstract world cannot hold, an event the engine lacks) makes the run use
the Python explorer instead, saying why in one line (`NativeCannotRun`).

The engine reports where each violation is (a path of successor positions from the initial
world, plus the position of the offending step for a transition invariant). Python replays the
path through `AbstractModel.successors` (so through `model.step`), asks the Python invariant for
its sentence, and renders the counterexample exactly as check/explore.py does. A native verdict
that Python does not confirm on replay is an `EngineDisagreement`, never a silent pass.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence, TextIO

from check.abstract import AbstractModel, Bounds, World
from check.callbacks import Callbacks, describe_slow, slow_names
from model.dsl import EFFECTS, GROUP_FIELDS, Guard, SpecDefect, Table
from check.explore import (LIVENESS, PARKED_ANSWERED, PATH_PROPERTIES, WELL_FORMED, Report, Violation,
                           describe_group, parked_requests, properties_to_check, render_trace)
from model.invariants import INVARIANTS, check_state, check_transition

if TYPE_CHECKING:  # the extension's own stub (engine/groupspec_engine.pyi) types what it returns
    from groupspec_engine import Engine, RowData


class NativeEngineUnavailable(Exception):
    """The groupspec_engine extension is not installed (scripts/setup.sh builds it)."""


class EngineDisagreement(Exception):
    """The native engine reported something the Python model does not confirm on replay."""


class NativeCannotRun(ValueError):
    """The native engine cannot run this table (the message says why); the Python explorer can."""


class ExplorationInterrupted(Exception):
    """Ctrl-C stopped a native exploration; `report` holds what was explored (incomplete)."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(f"interrupted after {report.states:,} states")


def engine_module() -> Any:
    """The extension module, imported on first use (the Python engine never needs it)."""
    try:
        import groupspec_engine
    except ImportError as e:
        raise NativeEngineUnavailable(
            f"the native engine is not installed ({e}); run scripts/setup.sh, or use "
            f"--engine python") from e
    return groupspec_engine


def implemented() -> dict[str, list[str]]:
    """What the native engine implements, by kind (atoms, effects, reply_forms, invariants)."""
    out: dict[str, list[str]] = engine_module().implemented()
    return out


def _literals(guard: Guard) -> list[tuple[str, bool]]:
    return [(lit.atom, lit.positive) for lit in guard.literals]


def table_data(table: Table, urgent: tuple[tuple[str, Guard], ...]) -> tuple[
        list[RowData], list[tuple[str, list[tuple[str, bool]]]], list[tuple[str, list[str]]]]:
    """The table as plain data: rows, urgent events, and each used effect's declared fields."""
    rows = [(r.id, sorted(s.name for s in r.states), r.event, _literals(r.guard), r.reply.form,
             r.reply.error.name, None if r.next_state is None else r.next_state.name,
             list(r.effects), r.new_incarnation) for r in table.rows]
    used = sorted({e for r in table.rows for e in r.effects})
    missing = [e for e in used if e not in EFFECTS]
    if missing:
        raise ValueError(f"the table names effects that are not defined: {missing}")
    fields = [(e, sorted(EFFECTS[e].modifies)) for e in used]
    return rows, [(event, _literals(g)) for event, g in urgent], fields


def bounds_data(b: Bounds) -> dict[str, object]:
    return {"dynamic": b.dynamic, "static": b.static, "max_generation": b.max_generation,
            "faults": sorted(b.faults), "mode": b.mode,
            "require_known_member_id": b.require_known_member_id,
            "max_ids_per_client": b.max_ids_per_client, "group_max_size": b.group_max_size,
            "metadata_changes": b.metadata_changes, "group_id": b.group_id}


def slow_path(table: Table, urgent: tuple[tuple[str, Guard], ...],
              invariants: Sequence[str] = ()) -> dict[str, list[str]]:
    """What a native run of this table sends through Python, by kind (atoms, effects,
    reply_forms, invariants): what the engine lacks or the model's name now means otherwise."""
    return slow_names(table, urgent, invariants, implemented())


def make_engine(table: Table, urgent: tuple[tuple[str, Guard], ...], bounds: Bounds,
                invariants: Sequence[str] = (), force: Sequence[str] = ()) -> tuple[Engine, Callbacks]:
    """A native engine for this table and these bounds, and the callbacks it asks for what it
    has no native version of (`force`: names to send through Python anyway, for the tests and
    benchmarks of the slow path). NativeCannotRun says what it cannot take."""
    rows, urg, fields = table_data(table, urgent)
    slow = slow_path(table, urgent, invariants)
    for kind in ("atoms", "effects", "reply_forms"):
        used = {lit.atom for r in table.rows for lit in r.guard.literals} if kind == "atoms" else \
            {e for r in table.rows for e in r.effects} if kind == "effects" else \
            {r.reply.form for r in table.rows}
        slow[kind] = sorted(set(slow[kind]) | (set(force) & used))
    slow["invariants"] += [n for n in force if n in invariants and n not in slow["invariants"]]
    callbacks = Callbacks(table, bounds, slow["atoms"],
                          [(INVARIANTS[n].kind == "transition", n) for n in slow["invariants"]])
    try:
        engine: Engine = engine_module().Engine(
            rows, urg, fields, sorted(GROUP_FIELDS), bounds_data(bounds),
            (slow["atoms"], slow["effects"], slow["reply_forms"]), callbacks)
    except ValueError as e:
        raise NativeCannotRun(str(e)) from e
    return engine, callbacks


@dataclass
class NativeRun:
    """What a native run measured besides the Report."""

    store_bytes: int
    peak_rss_bytes: int
    interrupted: bool
    through_python: dict[str, int] = field(default_factory=dict)  # calls per atom/row/invariant
    threads: int = 1  # the threads that made successors (1 when the table calls back into Python)


def machine_cores() -> int:
    """The cores this process may run on: the explorer's default thread count."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


LAST_RUN: list[NativeRun] = []  # the most recent run's measurements (benchmarks read it)


def explore_native(table: Table, urgent: tuple[tuple[str, Guard], ...], bounds: Bounds, *,
                   symmetry: bool = True, invariants: Optional[frozenset[str]] = None,
                   liveness: bool = True, max_states: Optional[int] = None,
                   progress: Optional[TextIO] = sys.stderr, first_violation_only: bool = True,
                   stop_at_first_violation: bool = False, all_counterexamples: bool = True,
                   skip: frozenset[str] = frozenset(), force: Sequence[str] = (),
                   memo: bool = True, threads: Optional[int] = None) -> Report:
    """check.explore.explore, natively: the same Report (counts, coverage, violations with the
    same rendered counterexamples, cut_short, liveness_checked), with the same fast first
    counterexample (`all_counterexamples`, `skip`). Raises ExplorationInterrupted on Ctrl-C,
    NativeCannotRun when a construct cannot be called back. `memo` (the default) makes successors
    through a cache per thread (engine/src/explore_cache.rs: groups interned, the table's steps
    and their transition-invariant verdicts kept by (group, input, settings)); `memo=False` steps
    the table afresh for every successor: the same results, 1.7x slower a thread on the classic
    table (benchmarks/explore_results.md). `threads` make the successors (None: one per core,
    `machine_cores`; 1: all on this thread); the results are the same for any number (a table
    that calls back into Python runs on this thread alone, without the cache)."""
    active, liveness, pending = properties_to_check(invariants, liveness, skip)
    names = [n for n in INVARIANTS if n in active]
    engine, callbacks = make_engine(table, urgent, bounds, names, force)
    slow = {n for _, n in callbacks.invariants}
    paths = [p for p in PATH_PROPERTIES if invariants is None or p in invariants]
    settle = None if all_counterexamples else sorted(pending)  # the same stop as check.explore
    try:
        raw = engine.explore(symmetry, [n for n in names if n not in slow], liveness, max_states,
                             first_violation_only, stop_at_first_violation, progress is not None,
                             paths, sorted(skip), settle, callbacks.invariants, memo=memo,
                             threads=machine_cores() if threads is None else threads)
    except RuntimeError as e:
        if callbacks.cannot:
            raise NativeCannotRun(f"a Python definition made a value the native engine cannot "
                                  f"hold: {callbacks.cannot}") from e
        if callbacks.failure is not None:  # what the Python explorer would have raised (Ctrl-C too)
            raise callbacks.failure from e
        raise
    LAST_RUN[:] = [NativeRun(int(raw["store_bytes"]), int(raw["peak_rss_bytes"]),
                             bool(raw["interrupted"]), dict(callbacks.calls), int(raw["threads"]))]
    report = Report(bounds, symmetry, rows_total=len(table.rows))
    report.states = int(raw["states"])
    report.edges = int(raw["edges"])
    report.depth = int(raw["depth"])
    report.frontier = int(raw["frontier"])
    report.seconds = float(raw["seconds"])
    report.cut_short = str(raw["cut_short"])
    report.liveness_checked = bool(raw["liveness_checked"])
    fired: dict[str, int] = raw["rows_fired"]
    report.rows_fired = {r.id: fired[r.id] for r in table.rows if r.id in fired}
    model = AbstractModel(table, urgent, bounds)
    for name, path, extra, stuck, request in raw["violations"]:
        report.violations.append(_confirm(model, table, name, path, extra, stuck, request))
    for r in table.rows:
        if r.id not in report.rows_fired:
            report.uncovered[r.id] = r.unreachable or "not reached at these bounds"
    if raw["interrupted"]:
        raise ExplorationInterrupted(report)
    return report


def replay(model: AbstractModel, path: list[int]) -> tuple[list[World], list[tuple[int, Any, int]]]:
    """The worlds along a path of successor positions, re-executed through model.step."""
    worlds = [model.initial()]
    parent: list[tuple[int, Any, int]] = [(-1, None, 0)]
    for k, pos in enumerate(path):
        succs = model.successors(worlds[-1])
        if pos >= len(succs):
            raise EngineDisagreement(f"step {k + 1}: successor {pos} of {len(succs)} does not exist")
        s = succs[pos]
        worlds.append(s.world)
        parent.append((k, s.action, s.index))
    return worlds, parent


def _confirm(model: AbstractModel, table: Table, name: str, path: list[int],
             extra: Optional[int], stuck: Optional[int], request: Optional[int] = None) -> Violation:
    worlds, parent = replay(model, path)
    node = len(worlds) - 1
    here = worlds[node]
    if name == PARKED_ANSWERED:
        if request is None or request not in parked_requests(here):
            raise EngineDisagreement(f"native {PARKED_ANSWERED}: request {request} is not parked in "
                                     f"{describe_group(here.group)}")
        msg = (f"{stuck} (state, parked request) pairs never get an answer without faults; e.g. "
               f"request {request} in {describe_group(here.group)}")
        return Violation(name, msg, render_trace(model, worlds, parent, node, None))
    if name == LIVENESS:
        msg = (f"{stuck} states cannot reach a quiescent state without faults; e.g. "
               f"{describe_group(here.group)}")
        return Violation(name, msg, render_trace(model, worlds, parent, node, None))
    if name == WELL_FORMED:
        try:
            model.successors(here)
        except SpecDefect as e:
            return Violation(name, str(e), render_trace(model, worlds, parent, node, None))
        raise EngineDisagreement(f"native {WELL_FORMED} at a world Python steps without a defect")
    if extra is not None:
        s = model.successors(here)[extra]
        assert s.transition is not None
        found = dict(check_transition(table, s.transition, frozenset({name})))
        if name not in found:
            raise EngineDisagreement(f"native {name} on a step Python finds correct: {s.action}")
        return Violation(name, found[name],
                         render_trace(model, worlds, parent, node, (s.action, s.index)))
    found = dict(check_state(here.group, frozenset({name})))
    if name not in found:
        raise EngineDisagreement(f"native {name} on a state Python finds correct: "
                                 f"{describe_group(here.group)}")
    return Violation(name, found[name], render_trace(model, worlds, parent, node, None))


def run_explorer(engine: str, table: Table, urgent: tuple[tuple[str, Guard], ...], bounds: Bounds,
                 *, symmetry: bool, invariants: Optional[frozenset[str]], liveness: bool,
                 max_states: Optional[int], progress: Optional[TextIO],
                 stop_at_first_violation: bool, all_counterexamples: bool = True,
                 skip: frozenset[str] = frozenset(), threads: Optional[int] = None) -> Optional[Report]:
    """One exploration with the chosen engine ("python" or "native"). Ctrl-C: a one-line note of
    what was explored goes to stderr and the result is None (the run is incomplete: never a
    pass, and no report is written). `threads`: the native explorer's (explore_native)."""
    from check.explore import explore
    try:
        if engine == "native":
            try:
                report = explore_native(table, urgent, bounds, symmetry=symmetry,
                                        invariants=invariants, liveness=liveness,
                                        max_states=max_states, progress=progress,
                                        stop_at_first_violation=stop_at_first_violation,
                                        all_counterexamples=all_counterexamples, skip=skip,
                                        threads=threads)
                calls = LAST_RUN[0].through_python if LAST_RUN else {}
                if calls and progress is not None:
                    top = ", ".join(f"{k}: {n:,}" for k, n in Counter(calls).most_common(3))
                    print(f"  through Python: {sum(calls.values()):,} calls ({top})", file=progress)
                return report
            except NativeCannotRun as e:
                print(f"note: the native engine cannot run this table at these bounds ({e}); using the "
                      f"Python explorer (--engine python)", file=sys.stderr)
        return explore(table, urgent, bounds, symmetry=symmetry, invariants=invariants,
                       liveness=liveness, max_states=max_states, progress=progress,
                       stop_at_first_violation=stop_at_first_violation,
                       all_counterexamples=all_counterexamples, skip=skip)
    except ExplorationInterrupted as e:
        print(f"interrupted: explored {e.report.states:,} states, {e.report.edges:,} edges, "
              f"depth {e.report.depth} before Ctrl-C; the check is incomplete", file=sys.stderr)
        return None
    except KeyboardInterrupt:
        print("interrupted by Ctrl-C; the check is incomplete", file=sys.stderr)
        return None


def native_gaps(invariants: Optional[frozenset[str]] = None) -> list[str]:
    """The path properties (or those of `invariants`) the native engine lacks; [] when it has
    them all (an invariant it lacks is called back into Python, never a gap). Raises
    NativeEngineUnavailable when it is not installed."""
    from check.explore import LIVENESS, PATH_PROPERTIES
    have = set(implemented().get("path_properties", [LIVENESS]))
    return [n for n in PATH_PROPERTIES if (invariants is None or n in invariants) and n not in have]


def engine_header(engine: str, table: Table, urgent: tuple[tuple[str, Guard], ...],
                  invariants: Optional[frozenset[str]] = None) -> str:
    """`native engine`, `native engine, 2 effects through Python` or `Python engine`."""
    if engine != "native":
        return "Python engine"
    names = [n for n in INVARIANTS if invariants is None or n in invariants]
    try:
        slow = describe_slow(slow_path(table, urgent, names))
    except ValueError as e:  # a name nothing registered: the run itself reports it
        return f"native engine ({e})"
    return "native engine" + (f", {slow}" if slow else "")


def choose_engine(requested: str, invariants: Optional[frozenset[str]],
                  note: Optional[TextIO] = None, quiet: bool = False) -> str:
    """The engine to run: the requested one, except that a native run falls back to the Python
    explorer (saying so) when the native engine lacks an invariant that must be checked, so that
    nothing is ever skipped silently."""
    if requested != "native":
        return requested
    gaps = native_gaps(invariants)
    if note is None and not quiet:
        note = sys.stderr  # looked up now: a default bound at import would outlive a redirected stderr
    if gaps and note is not None:
        print(f"note: the native engine does not implement {', '.join(gaps)}; using the Python "
              f"explorer (--engine python)", file=note)
    return "python" if gaps else "native"
