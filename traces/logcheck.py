"""Check that some run of the table explains one group's observed broker log lines.

A log shows only some of a group's steps, and may start and end anywhere. The checker keeps the set
of states the group may be in (every state before the first line: a group first seen mid-life is
judged from its first line on), its generation once a line reveals it, and the members seen removed.
Each line must be explained from some possible state:

- a transition line (`Preparing to rebalance`, `Stabilized`, `is now empty`, `Unloading`,
  `transitioned to Dead`) needs a table row with that edge (state -> next state), leaving the state;
- generations: `Preparing` names the current generation, `Stabilized`/`now empty` the next one
  (+1), `Assignment received` and `Unloading`/`Dead` the current one; `Loading` starts a new
  incarnation at the logged generation;
- a line that reports the current state ("joins group g in Stable state") must name a possible state;
- a member cannot be removed twice without joining again; `Assignment received` must report the
  member count of its generation's `Stabilized` line.

Steps no line shows: a Dead/removed group may be re-created Empty at generation 0 (the table's
Missing -> Empty rows), and a persisted leader assignment moves CompletingRebalance -> Stable.

Lines may be missing (grep excerpts, rotated logs, several brokers in one file): a line ahead of the
generation seen, or a line the possible states cannot explain, restarts the check from that line
(any state; removed members and the generation as a floor kept) and the verdict stays `ok` with a
note "consistent with Kafka, assuming ..." (`check_group`). A generation that goes back, a member
removed twice and a member count that disagrees with its generation's Stabilized line are violations
whatever lines are missing.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Mapping, Optional, Sequence

from model.vocabulary import GroupState
from traces.logparse import CLUSTER
from traces.replay import CLUSTER_STATUS, OK, VIOLATION, Divergence, Verdict
from traces.schema import LogEvent, TraceEvent

S = GroupState
Edge = tuple[GroupState, GroupState]
ALL_STATES: Final = frozenset(GroupState)
GONE: Final = frozenset({S.Dead, S.Missing})
WITH_MEMBERS: Final = frozenset({S.PreparingRebalance, S.CompletingRebalance, S.Stable})


@dataclass(frozen=True, slots=True)
class Edges:
    """The table's state edges, each with the ids of the rows that make it."""

    rows: Mapping[Edge, tuple[str, ...]]

    def sources(self, target: GroupState, among: frozenset[GroupState]) -> frozenset[GroupState]:
        return frozenset(s for s in among if s != target and (s, target) in self.rows)

    def label(self, sources: Iterable[GroupState], target: GroupState) -> str:
        ids: list[str] = []
        for s in sorted(sources, key=lambda x: x.name):
            ids.extend(self.rows.get((s, target), ()))
        return ",".join(ids)


def table_edges(table: Any) -> Edges:
    """Edges of a model table: rows with `.id`, `.states` (or `.state`) and `.next_state`."""
    rows: dict[Edge, list[str]] = {}
    for row in table.rows:
        states = getattr(row, "states", None)
        if states is None:
            states = (row.state,)
        for s in states:
            target = row.next_state if row.next_state is not None else s
            if getattr(row, "unreachable", ""):
                continue
            rows.setdefault((s, target), []).append(row.id)
    return Edges({k: tuple(v) for k, v in rows.items()})


def default_edges(table: Optional[Any] = None) -> Edges:
    """The edges of `table` (replay --table; None: the classic table)."""
    if table is None:
        from model.table import CLASSIC_TABLE

        table = CLASSIC_TABLE
    return table_edges(table)


# Lines that show a transition, and the states they lead to (the table removes a Dead group from the
# cache: its rows may go to Missing where Kafka logs "Dead").
_TRANSITIONS: Final[dict[str, frozenset[GroupState]]] = {
    LogEvent.PrepareRebalance.name: frozenset({S.PreparingRebalance}),
    LogEvent.Stabilized.name: frozenset({S.CompletingRebalance}),
    LogEvent.NowEmpty.name: frozenset({S.Empty}),
    LogEvent.Unloaded.name: GONE,
    LogEvent.Dead.name: GONE,
}
_NEXT_GENERATION: Final = frozenset({LogEvent.Stabilized.name, LogEvent.NowEmpty.name})
_REMOVALS: Final = frozenset({LogEvent.MemberLeft.name, LogEvent.MemberFailed.name})


class _Gap(Exception):
    """A line ahead of the generation the log has shown: lines are missing (a grep excerpt, a cut)."""

    def __init__(self, what: str, expected: int, logged: int) -> None:
        super().__init__(what)
        self.text = f"{what} {expected} .. {logged - 1} not in the log"


def _details(e: TraceEvent) -> dict[str, Any]:
    try:
        value = json.loads(e.payload or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# The generation a line names, relative to the group's current one (None: the line names none).
_SAME_GENERATION: Final = frozenset(
    {LogEvent.PrepareRebalance.name, LogEvent.AssignmentReceived.name, LogEvent.Unloaded.name, LogEvent.Dead.name}
)


class _Violation(Exception):
    """kind: "state" (a line the possible states cannot explain: lines may be missing), or "generation",
    "member", "count" (what no missing line can explain)."""

    def __init__(self, expected: str, actual: str, rows: str = "", kind: str = "state") -> None:
        super().__init__(expected)
        self.expected = expected
        self.actual = actual
        self.rows = rows
        self.kind = kind


@dataclass(slots=True)
class LogChecker:
    edges: Edges
    possible: frozenset[GroupState] = ALL_STATES
    generation: Optional[int] = None
    stabilized_count: dict[int, int] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    coverage: Counter[str] = field(default_factory=Counter)
    # After lines went missing the generation is unknown, but it cannot be below the last one seen.
    floor: Optional[int] = None

    def _unlogged(self) -> frozenset[GroupState]:
        """States reachable by steps no line shows (see module docstring)."""
        possible = set(self.possible)
        if possible & GONE and self.edges.sources(S.Empty, frozenset({S.Missing})):
            possible.add(S.Empty)
        return frozenset(possible)

    def _remove(self, member: Optional[str]) -> None:
        if member is None:
            return
        if member in self.removed:
            raise _Violation(f"{member} to be a member", f"{member} removed again", kind="member")
        self.removed.add(member)

    def restart(self) -> None:
        """Lines are missing: forget the state and the generation. Kept: the members seen removed (their
        ids never come back) and the generation as a floor (generations never go back, unless the
        group was deleted and re-created at 0)."""
        if self.generation is not None:
            self.floor = self.generation if self.floor is None else max(self.floor, self.generation)
        self.possible, self.generation = ALL_STATES, None
        self.stabilized_count.clear()

    def _above_floor(self, e: TraceEvent) -> None:
        if e.generation is None or self.floor is None or self.generation is not None:
            return
        name = e.log_event
        if name in _NEXT_GENERATION and e.generation <= self.floor:
            raise _Violation(f"generation above {self.floor}", f"generation {e.generation}", kind="generation")
        if (name in _SAME_GENERATION and e.generation < self.floor
                and not (name == LogEvent.PrepareRebalance.name and e.generation == 0)):
            raise _Violation(f"generation {self.floor} or later", f"generation {e.generation}", kind="generation")

    def _gen(self, logged: Optional[int], expected: Optional[int], what: str) -> None:
        if logged is not None and expected is not None and logged != expected:
            raise _Violation(f"{what} {expected}", f"{what} {logged}", kind="generation")

    def gap(self, e: TraceEvent) -> None:
        """Raise _Gap if the line is ahead of the generation the log has shown so far."""
        if e.generation is None or self.generation is None:
            return
        if e.log_event in _NEXT_GENERATION:
            expected, what = self.generation + 1, "generations"
        elif e.log_event in _SAME_GENERATION:
            expected, what = self.generation, "generations"
        else:
            return
        if e.generation > expected and not (bool(self.possible & GONE) and e.generation == 0):
            raise _Gap(what, expected, e.generation)

    def check(self, e: TraceEvent) -> None:
        name = e.log_event
        if name == LogEvent.MemberLeft.name and _details(e).get("after_removal"):
            # Kafka 3.x logs "Member MemberMetadata(...) has left group" after the removal and the
            # transitions it caused (GroupCoordinator.scala:657-659): the state is not checked here.
            self._remove(e.member_id)
            return
        self.gap(e)
        self._above_floor(e)
        possible = self._unlogged()
        # A re-created group restarts at generation 0 (only if it may have been re-created).
        recreated = bool(self.possible & GONE) and S.Empty in possible
        targets = _TRANSITIONS.get(name or "")
        if name == LogEvent.Loaded.name:
            self.possible, self.generation, self.floor = frozenset({S.Stable, S.Empty}), e.generation, None
            self.stabilized_count.clear()
        elif targets is not None:
            self._check_transition(e, targets, possible, recreated)
        elif name == LogEvent.AssignmentReceived.name:
            self._check_assignment(e, possible)
        elif name == LogEvent.RebalanceStuck.name:
            if S.PreparingRebalance not in possible:
                raise _Violation("PreparingRebalance", "/".join(sorted(s.name for s in possible)))
            self.possible = frozenset({S.PreparingRebalance})
        elif name in _REMOVALS or name == LogEvent.DynamicMembersRemoved.name:
            live = possible & WITH_MEMBERS
            if not live:
                raise _Violation("a state with members", f"{name} in {'/'.join(sorted(s.name for s in possible))}")
            self.possible = live
            self._remove(e.member_id)
        else:
            if name in (LogEvent.MemberJoined.name, LogEvent.StaticMemberReplaced.name) and e.member_id:
                self.removed.discard(e.member_id)
            if e.to_state is not None:  # a line that reports the current state
                self._check_reported_state(name, GroupState[e.to_state], possible, recreated)

    def _check_transition(self, e: TraceEvent, targets: frozenset[GroupState],
                          possible: frozenset[GroupState], recreated: bool) -> None:
        """A line that shows a transition: some possible state has a row to one of `targets`."""
        name = e.log_event
        generation = self.generation
        reached = {t: self.edges.sources(t, _leaving(e, possible) - targets) for t in targets}
        sources = frozenset().union(*reached.values())
        if not sources:
            wanted = "/".join(sorted(t.name for t in targets))
            need = frozenset().union(*(self.edges.sources(t, _leaving(e, ALL_STATES) - targets)
                                       for t in targets))
            raise _Violation(
                f"group in {'/'.join(sorted(s.name for s in need))} (a row -> {wanted})",
                f"{name} from possible states {'/'.join(sorted(s.name for s in possible))}",
                ",".join(self.edges.label(possible, t) for t in sorted(targets, key=lambda x: x.name)),
            )
        if name == LogEvent.PrepareRebalance.name:
            if recreated and S.Empty in sources and e.generation == 0:
                generation = 0  # re-created after Dead: a new group starts at generation 0
            self._gen(e.generation, generation, "old generation")
        elif name in _NEXT_GENERATION:
            self._gen(e.generation, None if generation is None else generation + 1, "generation")
        else:
            self._gen(e.generation, generation, "generation")
        for t, srcs in reached.items():
            if srcs:
                self.coverage[f"{'/'.join(sorted(s.name for s in srcs))}->{t.name}"] += 1
        self.possible = frozenset(t for t, srcs in reached.items() if srcs)
        if e.generation is not None:
            self.generation = e.generation
        if name == LogEvent.Stabilized.name and e.member_count is not None and e.generation is not None:
            self.stabilized_count[e.generation] = e.member_count

    def _check_assignment(self, e: TraceEvent, possible: frozenset[GroupState]) -> None:
        """`Assignment received`: in CompletingRebalance, with its generation's member count."""
        if S.CompletingRebalance not in possible:
            raise _Violation("CompletingRebalance", f"assignment in {'/'.join(sorted(s.name for s in possible))}")
        self._gen(e.generation, self.generation, "generation")
        if e.generation is not None and e.member_count is not None:
            counted = self.stabilized_count.get(e.generation)
            if counted is not None and counted != e.member_count:
                raise _Violation(f"{counted} members (Stabilized)", f"{e.member_count} members", kind="count")
        self.possible = frozenset({S.CompletingRebalance, S.Stable})
        if e.generation is not None:
            self.generation = e.generation

    def _check_reported_state(self, name: Optional[str], observed: GroupState,
                              possible: frozenset[GroupState], recreated: bool) -> None:
        """A line that reports the current state must name a possible one."""
        if observed not in possible:
            raise _Violation(
                "/".join(sorted(s.name for s in possible)), f"{name} reports state {observed.name}"
            )
        self.possible = frozenset({observed})
        if recreated and observed == S.Empty:
            self.generation = 0


def _leaving(e: TraceEvent, states: frozenset[GroupState]) -> frozenset[GroupState]:
    """The states among `states` a transition line can leave: the one it names, if it names one;
    PreparingRebalance for a line that names the next generation; Empty for Dead (offset expiry and
    DeleteGroups act on Empty groups only)."""
    if e.from_state is not None:
        states = states & {GroupState[e.from_state]}
    if e.log_event in _NEXT_GENERATION:
        states = states & {S.PreparingRebalance}
    if e.log_event == LogEvent.Dead.name:
        states = states & {S.Empty}
    return states


def _fresh_start(events: Sequence[TraceEvent]) -> bool:
    """The log shows the group from its creation (joins into an Empty group, then the rebalance from
    generation 0) or from its loading: nothing to assume about its past."""
    for e in events:
        if e.log_event == LogEvent.Loaded.name:
            return True
        if e.generation is not None:
            return e.log_event == LogEvent.PrepareRebalance.name and e.generation == 0
        if e.to_state != S.Empty.name:
            return False
    return False


def check_group(group_id: str, events: Sequence[TraceEvent], edges: Edges) -> Verdict:
    """Judge one group's log rows (ordered by time and line).

    Where the log cannot tell what happened, the verdict is `ok` with a note "consistent with Kafka,
    assuming ...": a log that starts after the group's creation (a rotated log, an excerpt), lines
    missing where a generation jumps ahead (grep excerpts with gaps), and the coordinator moving to
    another broker (several brokers' lines in one file: each broker's run is judged afresh).
    """
    if group_id == CLUSTER:
        return Verdict(group_id, CLUSTER_STATUS, len(events))
    checker = LogChecker(edges)
    assumptions: list[str] = []
    if events and not _fresh_start(events):
        assumptions.append(f"the group existed before its first line ({events[0].origin})")
    broker: Optional[int] = None
    for e in events:
        logged_by = _details(e).get("broker")
        if isinstance(logged_by, int):
            if broker is not None and logged_by != broker:
                assumptions.append(f"the coordinator moved from broker {broker} to broker {logged_by} ({e.origin})")
                checker.restart()
            broker = logged_by
        try:
            try:
                checker.check(e)
            except _Gap as gap:
                assumptions.append(f"lines are missing before {e.origin} ({gap.text})")
                checker.restart()
                checker.check(e)
            except _Violation as v:
                if v.kind != "state":
                    raise
                # Explained if lines are missing (a grep excerpt): judged afresh, generations kept.
                checker.restart()
                checker.check(e)
                assumptions.append(f"lines are missing before {e.origin} (it needs {v.expected}; before it: {v.actual})")
        except _Violation as v:
            return Verdict(
                group_id, VIOLATION, len(events),
                Divergence(e.seq, e.log_event or "", v.rows, v.expected, v.actual, e.origin or ""),
                checker.coverage,
            )
    note = f"consistent with Kafka, assuming {'; '.join(assumptions)}" if assumptions else None
    return Verdict(group_id, OK, len(events), None, checker.coverage, note)
