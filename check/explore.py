"""Explicit-state exploration of the abstract model with networkx.

Breadth-first from the initial world, deduplicating worlds by their canonical key (optionally
up to permutations of interchangeable clients), checking every named invariant on every state and
transition, recording which table rows fire, and finally checking the liveness property on the
explored graph. Each violation comes with its shortest counterexample, re-executed and printed as
a Kafka request/response sequence.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional, TextIO

import networkx as nx

from check.abstract import (
    AbstractModel,
    Action,
    Bounds,
    Renamer,
    Successor,
    World,
    canonical_key,
    render_response,
    renamers,
    world_key,
)
from check.user_code import ours
from model.dsl import Guard, SpecDefect, Superseded, Table
from model.invariants import INVARIANTS, check_state, check_transition
from model.state import Group
from model.vocabulary import GroupState

LIVENESS = "quiescence-reachable"
PARKED_ANSWERED = "parked-requests-answered"
# Path properties: checked on the explored graph after the exploration (see check_liveness).
PATH_PROPERTIES: dict[str, str] = {
    LIVENESS: "from every explored state, a quiescent state (Stable with nothing parked, Empty, "
              "or no group) is reachable along non-fault edges: every rebalance can complete "
              "under well-behaved clients (KAFKA-12890)",
    PARKED_ANSWERED: "from every explored state and every JoinGroup/SyncGroup parked in it, a "
                     "state in which that request has been answered (or superseded, as Kafka "
                     "leaves it) is reachable along non-fault edges: no member waits forever "
                     "(AC joinGroupIfNeeded / SyncGroup futures complete only on a response)",
}
WELL_FORMED = "table-well-formed"  # exactly one row matches every input that occurs


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    message: str
    trace: tuple[str, ...]


@dataclass
class Report:
    bounds: Bounds
    symmetry: bool
    states: int = 0
    edges: int = 0
    depth: int = 0
    seconds: float = 0.0
    frontier: int = 0  # worlds beyond the bounds (not expanded)
    rows_fired: dict[str, int] = field(default_factory=dict)
    rows_total: int = 0
    uncovered: dict[str, str] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    # Why the run stopped before exploring everything within the bounds ("" = it did not):
    # every checked property already had a counterexample, or max_states was reached.
    cut_short: str = ""
    liveness_checked: bool = False  # liveness is checked only on runs without safety violations

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "bounds": self.bounds.describe(), "symmetry": self.symmetry,
            "states": self.states, "edges": self.edges, "depth": self.depth,
            "seconds": round(self.seconds, 3), "states_per_second": round(self.states_per_second, 1),
            "frontier": self.frontier, "rows_total": self.rows_total,
            "cut_short": self.cut_short or None,
            "rows_covered": len(self.rows_fired),
            "uncovered_rows": [{"row": r, "reason": why} for r, why in sorted(self.uncovered.items())],
            "violations": [{"invariant": v.invariant, "message": v.message, "trace": list(v.trace)}
                           for v in self.violations],
            "complete": not self.cut_short,
        }


def quiescent(w: World) -> bool:
    """Stable with no parked request, or Empty (or no group object at all)."""
    g = w.group
    if g.state in (GroupState.Empty, GroupState.Missing):
        return True
    return g.state == GroupState.Stable and all(
        m.awaiting_join is None and m.awaiting_sync is None for m in g.members)


def properties_to_check(invariants: Optional[frozenset[str]], liveness: bool,
                        skip: frozenset[str]) -> tuple[frozenset[str], bool, set[str]]:
    """What one exploration checks: the active invariants, whether liveness runs, and the pending
    set whose every member must have a counterexample before the run may stop early (both
    explorers use it, so that their fast first counterexample stops at the same state)."""
    active = (frozenset(INVARIANTS) if invariants is None else invariants) - skip
    liveness = liveness and LIVENESS not in skip
    pending = set(active) | ({LIVENESS} if liveness else set())
    if invariants is None or WELL_FORMED in invariants:
        pending.add(WELL_FORMED)
    return active, liveness, pending - skip


class _Search:
    """One breadth-first exploration in progress: the worlds found, numbered in the order found
    (node 0 is the initial world), how each was first reached, the graph of their edges, and the
    properties still checked."""

    def __init__(self, table: Table, model: AbstractModel, rns: list[Renamer], report: Report, *,
                 active: frozenset[str], pending: set[str], skip: frozenset[str],
                 first_violation_only: bool, all_counterexamples: bool, start: float) -> None:
        self.table, self.model, self.rns, self.report = table, model, rns, report
        self.active, self.pending, self.skip = active, pending, skip
        self.first_violation_only = first_violation_only
        self.all_counterexamples = all_counterexamples
        self.graph = nx.DiGraph()
        init = model.initial()
        self.ids: dict[tuple[object, ...], int] = {canonical_key(init, rns): 0}
        self.worlds: list[World] = [init]
        self.parent: list[tuple[int, Optional[Action], int]] = [(-1, None, 0)]
        self.depth: list[int] = [0]
        self.graph.add_node(0)
        self.seen_violation: set[str] = set()
        # A user's invariant no longer checked (it has its counterexample) is still evaluated, its
        # verdict ignored: one that raises on a later state is a defect in it, as the native
        # engine (which evaluates every invariant on every group) finds it.
        self.watched: frozenset[str] = frozenset()
        self.queue: deque[int] = deque([0])
        self.expanded: set[int] = set()
        # World key (identity renaming) -> orbit key: revisits skip the other permutations.
        self.canon_cache: dict[tuple[object, ...], tuple[object, ...]] = {}
        self.start = self.last_print = start

    def violate(self, name: str, msg: str, node: int, extra: Optional[tuple[Action, int]] = None) -> None:
        if name in self.skip or (name in self.seen_violation and self.first_violation_only):
            return
        self.seen_violation.add(name)
        self.report.violations.append(
            Violation(name, msg, render_trace(self.model, self.worlds, self.parent, node, extra)))
        if not self.all_counterexamples:
            self.active = self.active - {name}
            inv = INVARIANTS.get(name)
            if inv is not None and not ours(inv.check):
                self.watched = self.watched | {name}
        if name != LIVENESS:
            self.pending.discard(LIVENESS)  # liveness is checked only on runs without safety violations

    def expand(self, node: int) -> bool:
        """Add the successors of a world and check its steps; False (nothing added) for a world
        beyond the bounds or one where the table is not well formed."""
        w = self.worlds[node]
        if not self.model.within_bounds(w):
            self.report.frontier += 1
            return False
        self.expanded.add(node)
        try:
            successors = self.model.successors(w)
        except SpecDefect as e:
            self.violate(WELL_FORMED, str(e), node)
            return False
        for s in successors:
            t = s.transition
            if t is not None:
                for rid in t.rows:
                    self.report.rows_fired[rid] = self.report.rows_fired.get(rid, 0) + 1
                for name, msg in check_transition(self.table, t, self.active):
                    self.violate(name, msg, node, (s.action, s.index))
                if self.watched:
                    check_transition(self.table, t, self.watched)
            if s.world == w:  # a self-loop: nothing to look up
                if not self.graph.has_edge(node, node):
                    self.graph.add_edge(node, node, fault=s.fault)
                continue
            self.link(node, self.number(node, s), s.fault)
        return True

    def number(self, node: int, s: Successor) -> int:
        """The node of a successor's world, added (and its state checked) if it is new."""
        raw = world_key(s.world, self.rns[0])
        key = self.canon_cache.get(raw)
        if key is None:
            key = canonical_key(s.world, self.rns)
            self.canon_cache[raw] = key
        nxt = self.ids.get(key)
        if nxt is None:
            nxt = len(self.worlds)
            self.ids[key] = nxt
            self.worlds.append(s.world)
            self.parent.append((node, s.action, s.index))
            self.depth.append(self.depth[node] + 1)
            self.graph.add_node(nxt)
            self.queue.append(nxt)
            for name, msg in check_state(s.world.group, self.active):
                self.violate(name, msg, nxt)
            if self.watched:
                check_state(s.world.group, self.watched)
        return nxt

    def link(self, node: int, nxt: int, fault: bool) -> None:
        """An edge node -> nxt; a fault edge stops being one when a non-fault step also makes it."""
        if self.graph.has_edge(node, nxt):
            if not fault:
                self.graph[node][nxt]["fault"] = False
        else:
            self.graph.add_edge(node, nxt, fault=fault)

    def print_progress(self, node: int, progress: Optional[TextIO]) -> None:
        if progress is not None and time.perf_counter() - self.last_print > 2.0:
            self.last_print = time.perf_counter()
            print(f"  explored {len(self.worlds):,} states, {self.graph.number_of_edges():,} edges, "
                  f"depth {self.depth[node]}, queue {len(self.queue):,} "
                  f"({len(self.worlds) / (self.last_print - self.start):,.0f} states/s)",
                  file=progress, flush=True)


def explore(table: Table, urgent: tuple[tuple[str, Guard], ...], bounds: Bounds, *,
            symmetry: bool = True, invariants: Optional[frozenset[str]] = None,
            liveness: bool = True, max_states: Optional[int] = None,
            progress: Optional[TextIO] = sys.stderr, first_violation_only: bool = True,
            stop_at_first_violation: bool = False,
            on_state: Optional[Callable[[World], None]] = None,
            all_counterexamples: bool = True, skip: frozenset[str] = frozenset()) -> Report:
    """Explore within the bounds. Unless `all_counterexamples`, a property stops being checked
    once it has a counterexample, and the run stops when every checked property has one.
    `skip`: properties not to check at all (a plan's earlier runs found them already)."""
    model = AbstractModel(table, urgent, bounds)
    rns = renamers(bounds, symmetry)
    report = Report(bounds, symmetry, rows_total=len(table.rows))
    start = time.perf_counter()
    # The properties still checked: every named invariant asked for, minus those found.
    active, liveness, pending = properties_to_check(invariants, liveness, skip)
    search = _Search(table, model, rns, report, active=active, pending=pending, skip=skip,
                     first_violation_only=first_violation_only,
                     all_counterexamples=all_counterexamples, start=start)
    for name, msg in check_state(search.worlds[0].group, search.active):
        search.violate(name, msg, 0)
    queue = search.queue
    while queue:
        node = queue.popleft()
        if on_state is not None:
            on_state(search.worlds[node])
        if not search.expand(node):
            continue
        search.print_progress(node, progress)
        if max_states is not None and len(search.worlds) >= max_states:
            if queue:
                report.cut_short = f"--max-states {max_states} reached with {len(queue):,} states unexplored"
            break
        if stop_at_first_violation and report.violations:
            report.cut_short = "stopped at the first violation"
            break
        if not all_counterexamples and pending and pending <= search.seen_violation:
            report.cut_short = "every checked property has a counterexample"
            break
    report.states = len(search.worlds)
    report.edges = search.graph.number_of_edges()
    report.depth = max(search.depth)
    if liveness and not report.violations:
        check_liveness(search.graph, search.worlds, model, search.parent, report, search.expanded,
                       None if invariants is None else frozenset(invariants) & set(PATH_PROPERTIES))
        report.liveness_checked = True
    report.seconds = time.perf_counter() - start
    for r in table.rows:
        if r.id not in report.rows_fired:
            report.uncovered[r.id] = r.unreachable or "not reached at these bounds"
    return report


def check_liveness(graph: "nx.DiGraph", worlds: list[World], model: AbstractModel,
                   parent: list[tuple[int, Optional[Action], int]], report: Report,
                   expanded: set[int], names: Optional[frozenset[str]] = None) -> None:
    """The path properties (PATH_PROPERTIES) over the explored graph; `names` selects some.

    quiescence-reachable: from every explored world inside the bounds, a quiescent world is
    reachable along non-fault edges (well-behaved clients, timers, partition loads; no crash,
    lost response, unload or offsets expiry).
    parked-requests-answered: from every explored world and every request parked in it, a world
    where that request is no longer parked is reachable along non-fault edges. A quiescent world
    has nothing parked, so only worlds that cannot reach quiescence need the per-request search.
    Worlds beyond the bounds or never expanded (a --max-states cut) count as good: unknown."""
    calm = nx.DiGraph()
    calm.add_nodes_from(graph.nodes)
    calm.add_edges_from((u, v) for u, v, f in graph.edges(data="fault") if not f)
    rev = calm.reverse(copy=False)
    targets = [n for n in calm.nodes if quiescent(worlds[n]) or n not in expanded]
    good = _backward_closure(rev, targets)
    stuck = [n for n in calm.nodes if n not in good]
    if stuck and (names is None or LIVENESS in names):
        n = min(stuck, key=lambda x: _depth(parent, x))
        report.violations.append(Violation(
            LIVENESS, f"{len(stuck)} states cannot reach a quiescent state without faults; e.g. "
                      f"{describe_group(worlds[n].group)}",
            render_trace(model, worlds, parent, n, None)))
    if stuck and (names is None or PARKED_ANSWERED in names):
        waiting: dict[int, list[int]] = {}
        for n in stuck:
            for rid in parked_requests(worlds[n]):
                waiting.setdefault(rid, []).append(n)
        forever: list[tuple[int, int]] = []
        for rid, nodes in sorted(waiting.items()):
            answered = [n for n in calm.nodes
                        if rid not in parked_requests(worlds[n]) or n not in expanded]
            can = _backward_closure(rev, answered)
            forever.extend((n, rid) for n in nodes if n not in can)
        if forever:
            n, rid = min(forever, key=lambda x: (_depth(parent, x[0]), x[1]))
            report.violations.append(Violation(
                PARKED_ANSWERED, f"{len(forever)} (state, parked request) pairs never get an answer "
                                 f"without faults; e.g. request {rid} in "
                                 f"{describe_group(worlds[n].group)}",
                render_trace(model, worlds, parent, n, None)))


def parked_requests(w: World) -> frozenset[int]:
    """The request ids of the JoinGroups and SyncGroups parked in a world."""
    return w.group.parked_requests()


def _backward_closure(rev: "nx.DiGraph", targets: list[int]) -> set[int]:
    """Every node from which some target is reachable (targets included)."""
    good: set[int] = set(targets)
    frontier = deque(targets)
    while frontier:
        n = frontier.popleft()
        for p in rev.successors(n):
            if p not in good:
                good.add(p)
                frontier.append(p)
    return good


def _depth(parent: list[tuple[int, Optional[Action], int]], n: int) -> int:
    d = 0
    while parent[n][0] >= 0:
        n = parent[n][0]
        d += 1
    return d


def describe_group(g: Group) -> str:
    members = ", ".join(
        m.member_id + ("*" if m.member_id == g.leader else "")
        + (" [join parked]" if m.awaiting_join else "") + (" [sync parked]" if m.awaiting_sync else "")
        for m in g.members)
    pend = f" pending {[p.member_id for p in g.pending]}" if g.pending else ""
    return f"{g.state.name} gen {g.generation} members [{members}]{pend}"


def render_trace(model: AbstractModel, worlds: list[World],
                 parent: list[tuple[int, Optional[Action], int]], node: int,
                 extra: Optional[tuple[Action, int]]) -> tuple[str, ...]:
    """The path from the initial world to `node` (plus an optional last step), re-executed."""
    path: list[tuple[int, Action, int]] = []
    n = node
    while parent[n][0] >= 0:
        p, a, idx = parent[n]
        assert a is not None
        path.append((p, a, idx))
        n = p
    path.reverse()
    steps = [(worlds[p], a, idx) for p, a, idx in path]
    if extra is not None:
        steps.append((worlds[node], extra[0], extra[1]))
    lines = [f"initial: {describe_group(worlds[0].group)}"]
    for i, (w, a, idx) in enumerate(steps, 1):
        lines.append(f"{i:>3}. {a.label(model.bounds)}")
        match = _rerun(model, w, a, idx)
        if match is None:
            lines.append("      (could not re-execute this step)")
            continue
        t = match.transition
        if t is not None:
            if t.reply is not None:
                lines.append(f"      <= {render_response(t.reply)}")
            for o in t.outputs:
                who = f"request of {o.member_id}" if o.member_id else f"request {o.request_id}"
                if isinstance(o.response, Superseded):
                    lines.append(f"      (parked {who} dropped without a response)")
                else:
                    lines.append(f"      <= (parked {who}) {render_response(o.response)}")
            lines.append(f"      rows: {', '.join(t.rows)}")
        if any(a.variant):
            lines.append("      (a response to the client is lost)")
        lines.append(f"      group: {describe_group(match.world.group)}")
    return tuple(lines)


def _rerun(model: AbstractModel, w: World, a: Action, idx: int) -> Optional[Successor]:
    for s in model.apply(w, Action(a.kind, a.client, a.request, a.member_id,
                                   append_fails=a.append_fails)):
        if s.index == idx and s.action.variant == a.variant:
            return s
    return None


