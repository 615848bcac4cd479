"""Client-visible differences between two transition tables: the lockstep search.

Both tables run in lockstep in the abstract mode on the same inputs (client requests, faults and
timers) within the same bounds. A node of the search is a pair of *sets* of worlds: every world
table A can be in, and every world table B can be in, after the same inputs with the same
responses. The model's nondeterministic choices (Kafka's hash-map order) branch inside the sets, so
a difference exists only when, after some input, one side can give a response that no branch of
the other side gives. A timer armed on one side only fires there; the other side sees time pass.

What a client sees of a response is `model.visible.actuals_of`: error codes, generations, member
ids, leaders, assignments, counts. The search is breadth-first, so the differences it reports are
the shortest input sequences. Making a difference into a scenario file and verifying it is the
conformance layer's business (conformance/diff.py); the search takes it as the `verify` callback.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Optional, Sequence, TextIO

from check.abstract import AbstractModel, Action, Bounds, Successor, World
from model.dsl import Guard, SpecDefect, Superseded, Table
from model.messages import DescribeGroupsResponse, JoinGroupRequest, Response
from model.step import Transition
from model.visible import Actual, actuals_of
from model.vocabulary import TimerEvent

GROUP = "g"
_TIMERS = frozenset(e.value for e in TimerEvent)
_CLIENT = re.compile(r"\b[cs]\d+(#\d+)?|rid:\d+")

Obs = tuple[tuple[str, str], ...]  # (who, visible response as JSON), sorted; who = "reply" or "rid:<n>"
Node = tuple[frozenset[World], frozenset[World]]
Outcomes = dict[Obs, list[tuple[World, Successor]]]  # per visible answer, the worlds after it


@dataclass(frozen=True, slots=True)
class Side:
    name: str
    table: Table
    urgent: tuple[tuple[str, Guard], ...]


def visible(response: Response) -> dict[str, Actual]:
    """The fields of a response a scenario checks, with member ids as the table made them."""
    a = actuals_of(response, GROUP)
    if isinstance(response, DescribeGroupsResponse):
        # member order is not a promise (abstract worlds keep members sorted, Kafka keeps a map)
        a.pop("first_member_id", None)
        ids = a.get("member_ids")
        if isinstance(ids, list):
            a["member_ids"] = list[Actual](sorted(str(x) for x in ids))
    return a


def _obs(t: Transition, lost: tuple[bool, ...]) -> Obs:
    items: list[tuple[str, str]] = []
    if t.reply is not None:
        items.append(("reply", json.dumps(visible(t.reply), sort_keys=True)))
    for o in t.outputs:
        if isinstance(o.response, Superseded):
            items.append((f"rid:{o.request_id}", "dropped without a response"))
        else:
            items.append((f"rid:{o.request_id}", json.dumps(visible(o.response), sort_keys=True)))
    if any(lost):
        items.append(("lost", str(lost)))
    return tuple(sorted(items))


def timer_like(a: Action) -> bool:
    return a.client < 0 and a.kind in _TIMERS


@dataclass
class Difference:
    """After `inputs`, side `shown_by` can answer `shown` and the other side cannot."""

    depth: int
    inputs: tuple[tuple[Action, Obs], ...]  # the common prefix: inputs and the responses seen
    action: Action
    shown_by: str  # "A" or "B"
    shown: Obs
    a_answers: tuple[Obs, ...]  # every answer side A can give to this input
    b_answers: tuple[Obs, ...]
    alternatives: tuple[tuple[str, Obs], ...] = ()  # every (side, answer) the other side lacks
    labels: tuple[str, ...] = ()
    scenario: Optional[dict[str, Any]] = None  # verified scenario document
    scenario_passes_on: str = ""
    scenario_fails_on: str = ""
    unrendered: str = ""  # why no scenario could be made

    @property
    def other(self) -> tuple[Obs, ...]:
        """Every answer the other side can give to the same input."""
        return self.b_answers if self.shown_by == "A" else self.a_answers

    def signature(self) -> tuple[object, ...]:
        """Equal for the same difference shown by another client (names do not matter)."""
        def anon(x: str) -> str:
            return _CLIENT.sub("X", x)
        return (self.action.kind, type(self.action.request).__name__,
                tuple((side, anon(str(o))) for side, o in self.alternatives))


@dataclass
class DiffReport:
    a: str
    b: str
    bounds: Bounds
    one_sided: bool
    nodes: int = 0
    edges: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True  # False: cut short by max_nodes
    frontier: int = 0  # lockstep states beyond the bounds (not expanded)
    total_differences: int = 0
    differences: list[Difference] = field(default_factory=list)
    rows_fired: dict[str, int] = field(default_factory=dict)  # rows of A the search fired


Verify = Callable[["Lockstep", "Difference"], None]


class Lockstep:
    def __init__(self, a: Side, b: Side, bounds: Bounds) -> None:
        self.sides = (a, b)
        self.models = (AbstractModel(a.table, a.urgent, bounds), AbstractModel(b.table, b.urgent, bounds))
        self.bounds = bounds

    def initial(self) -> Node:
        return (frozenset([self.models[0].initial()]), frozenset([self.models[1].initial()]))

    def actions(self, node: Node) -> list[Action]:
        seen: dict[Action, None] = {}
        for side, worlds in enumerate(node):
            for w in worlds:
                for a in self.models[side].actions(w):
                    for v in self.models[side].variants(a):
                        seen.setdefault(v, None)
        return list(seen)

    def outcomes(self, side: int, worlds: frozenset[World],
                 a: Action) -> Outcomes:
        """Per visible answer, the worlds the side can be in afterwards (with the step taken)."""
        m = self.models[side]
        out: Outcomes = {}
        for w in worlds:
            if timer_like(a) and a not in set(m.actions(w)):
                # the timer is not armed on this side: time passes, nothing happens
                out.setdefault((), []).append((w, Successor(a, w, None, False)))
                continue
            try:
                succ = m.apply(w, a)
            except SpecDefect as e:
                out.setdefault((("spec-defect", str(e)),), []).append((w, Successor(a, w, None, False)))
                continue
            for s in succ:
                o = () if s.transition is None else _obs(s.transition, s.action.variant)
                out.setdefault(o, []).append((w, s))
        return out


class _Search:
    """One breadth-first lockstep search in progress: the lockstep states found, numbered in the
    order found (node 0 is the initial pair), how each was first reached, and the differences:
    `found` those of the depths finished, `level` those of the depth being expanded."""

    def __init__(self, ls: Lockstep, report: DiffReport, verify: Optional[Verify],
                 max_differences: int, extra_depth: int) -> None:
        self.ls, self.report, self.verify = ls, report, verify
        self.max_differences, self.extra_depth = max_differences, extra_depth
        init = ls.initial()
        self.ids: dict[Node, int] = {init: 0}
        self.nodes: list[Node] = [init]
        self.parent: list[tuple[int, Optional[Action], Obs]] = [(-1, None, ())]
        self.depth: list[int] = [0]
        self.queue: deque[int] = deque([0])
        self.first_depth: Optional[int] = None
        self.signatures: set[tuple[object, ...]] = set()
        self.level: list[Difference] = []  # differences found while expanding the current depth
        self.found: list[Difference] = []
        self.verified = 0
        self.current = 0

    def close_level(self) -> bool:
        """Handle the differences of the level just finished; True: stop searching."""
        if not self.level:
            return False
        level, self.level = self.level, []
        self.found.extend(level)
        if self.verify is None:
            return True
        for d in sorted(level, key=lambda x: (_unrenderable_steps(x), x.shown_by)):
            if self.verified >= self.max_differences:
                break
            self.verify(self.ls, d)
            self.verified += d.scenario is not None
        return self.verified > 0 or (self.first_depth is not None
                                     and self.current + 1 - self.first_depth >= self.extra_depth)

    def close_unfinished_level(self) -> None:
        """The search was cut short with differences of an unfinished level: keep them too."""
        if not self.level:
            return
        self.found.extend(self.level)
        if self.verify is not None:
            for d in self.level:
                if self.verified < self.max_differences:
                    self.verify(self.ls, d)
                    self.verified += d.scenario is not None

    def expand(self, n: int, one_sided: bool) -> bool:
        """Try every input on lockstep state `n`; False (nothing tried) beyond the bounds."""
        node = self.nodes[n]
        if not all(self.ls.models[s].within_bounds(w) for s in (0, 1) for w in node[s]):
            self.report.frontier += 1
            return False
        fired = self.report.rows_fired
        for act in self.ls.actions(node):
            oa = self.ls.outcomes(0, node[0], act)
            ob = self.ls.outcomes(1, node[1], act)
            for outcomes in oa.values():
                for _, succ in outcomes:
                    if succ.transition is not None:
                        for rid in succ.transition.rows:
                            fired[rid] = fired.get(rid, 0) + 1
            extra = [("A", o) for o in sorted(oa) if o not in ob]
            if not one_sided:
                extra += [("B", o) for o in sorted(ob) if o not in oa]
            if extra:
                self.note_difference(n, act, oa, ob, extra)
            for o in oa:
                if o in ob:
                    self.report.edges += 1
                    self.add((frozenset(s.world for _, s in oa[o]),
                              frozenset(s.world for _, s in ob[o])), n, act, o)
        return True

    def note_difference(self, n: int, act: Action, oa: Outcomes, ob: Outcomes,
                        extra: list[tuple[str, Obs]]) -> None:
        """After the inputs to `n` and `act`, one side can answer `extra`; keep it unless another
        client has already shown the same difference."""
        self.first_depth = self.depth[n] + 1 if self.first_depth is None else self.first_depth
        shown_by, o = extra[0]
        d = Difference(self.depth[n] + 1, _inputs(self.nodes, self.parent, n), act, shown_by, o,
                       tuple(sorted(oa)), tuple(sorted(ob)), alternatives=tuple(extra))
        if d.signature() not in self.signatures:
            self.signatures.add(d.signature())
            self.level.append(d)

    def add(self, nxt: Node, n: int, act: Action, o: Obs) -> None:
        """The lockstep state `nxt`, reached from `n` by `act` answered `o`, queued if new."""
        if nxt in self.ids:
            return
        k = len(self.nodes)
        self.ids[nxt] = k
        self.nodes.append(nxt)
        self.parent.append((n, act, o))
        self.depth.append(self.depth[n] + 1)
        self.queue.append(k)


def explore_diff(a: Side, b: Side, bounds: Bounds, *, engine: str = "native",
                 **options: Any) -> DiffReport:
    """The lockstep search (`explore_diff_python`'s options and report) on the chosen engine:
    "native" (check/native_diff.py: the same search on the Rust engine, both tables as data; a
    table it cannot take falls back to the Python lockstep with one line) or "python"."""
    from check.native_diff import run_diff
    return run_diff(engine, a, b, bounds, **options)


def explore_diff_python(a: Side, b: Side, bounds: Bounds, *, one_sided: bool = False,
                        max_differences: int = 3, max_nodes: Optional[int] = None,
                        progress: Optional[TextIO] = sys.stderr, verify: Optional[Verify] = None,
                        extra_depth: int = 4) -> DiffReport:
    """Breadth-first lockstep search for the shortest differences (the reference lockstep).

    With `verify`, each depth's differences are handed to it (it sets `scenario` on those it can
    show with a verified scenario); the search stops at the first depth that yields one, or
    `extra_depth` levels after the first difference (reporting the unverified ones). Without
    `verify` it stops at the first depth with a difference.
    one_sided: only report answers of A that B cannot give (A refines B when there are none).
    """
    ls = Lockstep(a, b, bounds)
    report = DiffReport(a.name, b.name, bounds, one_sided)
    start = time.perf_counter()
    search = _Search(ls, report, verify, max_differences, extra_depth)
    queue = search.queue
    last = start
    while queue:
        n = queue[0]
        if search.depth[n] > search.current:
            if search.close_level():
                break
            search.current = search.depth[n]
        queue.popleft()
        if not search.expand(n, one_sided):
            continue
        if progress is not None and time.perf_counter() - last > 2.0:
            last = time.perf_counter()
            print(f"  diff: {len(search.nodes):,} lockstep states, depth {search.depth[n]}, "
                  f"queue {len(queue):,}, {len(search.found) + len(search.level)} difference(s)",
                  file=progress, flush=True)
        if max_nodes is not None and len(search.nodes) >= max_nodes:
            report.complete = False
            break
    else:
        search.close_level()
    search.close_unfinished_level()
    found = search.found
    report.nodes = len(search.nodes)
    report.depth = max(search.depth)
    ok = [d for d in found if d.scenario is not None]
    report.differences = ok if ok else found[:max_differences]
    report.total_differences = len(found)
    report.seconds = time.perf_counter() - start
    return report


@dataclass
class PlanReport:
    """A lockstep plan (check/plan.py REFINEMENT_PLAN): each run's report, and the rows of table
    A that no run fired (they were never compared: a difference there would go unseen)."""

    a: str
    b: str
    one_sided: bool
    runs: list[tuple[str, DiffReport]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # runs not made: a difference was found
    rows_fired: dict[str, int] = field(default_factory=dict)
    unfired: dict[str, str] = field(default_factory=dict)  # row id -> why it was not fired

    @property
    def differences(self) -> list[Difference]:
        """Every run's differences, those with a verified scenario first."""
        found = [d for _, r in self.runs for d in r.differences]
        return [d for d in found if d.scenario is not None] + [d for d in found if d.scenario is None]

    @property
    def complete(self) -> bool:
        return all(r.complete for _, r in self.runs)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for _, r in self.runs)

    @property
    def nodes(self) -> int:
        return sum(r.nodes for _, r in self.runs)


NOT_FIRED = "no lockstep run fired it"


def explore_diff_plan(a: Side, b: Side, plan: Sequence[tuple[str, Bounds]], *,
                      one_sided: bool = False, stop_at_first: bool = True,
                      on_run: Optional[Callable[[str, Bounds], None]] = None,
                      on_done: Optional[Callable[[str, DiffReport], None]] = None,
                      search: Callable[..., DiffReport] = explore_diff,
                      **options: Any) -> PlanReport:
    """Each run of the plan through `search` (explore_diff, or one that renders and verifies each
    difference), its row coverage of table A merged; with `stop_at_first` the runs after the
    first one that finds a difference are skipped (with `verify` among the options: a difference
    with a verified scenario; a run whose differences none could be verified for goes on)."""
    out = PlanReport(a.name, b.name, one_sided)
    verifying = options.get("verify") is not None or isinstance(search, partial) and \
        search.keywords.get("verify") is not None
    for label, bounds in plan:
        found = out.differences
        if stop_at_first and found and (not verifying or found[0].scenario is not None):
            out.skipped.append(label)
            continue
        if on_run is not None:
            on_run(label, bounds)
        r = search(a, b, bounds, one_sided=one_sided, **options)
        out.runs.append((label, r))
        for rid, n in r.rows_fired.items():
            out.rows_fired[rid] = out.rows_fired.get(rid, 0) + n
        if on_done is not None:
            on_done(label, r)
    for row in a.table.rows:
        if row.id not in out.rows_fired:
            out.unfired[row.id] = row.unreachable or NOT_FIRED
    return out


def _unrenderable_steps(d: Difference) -> int:
    """Inputs no scenario step can express (tried last when rendering)."""
    steps = [a for a, _ in d.inputs] + [d.action]
    return sum((a.append_fails and not isinstance(a.request, JoinGroupRequest))
               or a.kind == TimerEvent.OffsetsExpire.value for a in steps)


def _inputs(nodes: list[Node], parent: list[tuple[int, Optional[Action], Obs]],
            n: int) -> tuple[tuple[Action, Obs], ...]:
    out: list[tuple[Action, Obs]] = []
    while parent[n][0] >= 0:
        p, a, o = parent[n]
        assert a is not None
        out.append((a, o))
        n = p
    return tuple(reversed(out))


def side_path(ls: Lockstep, side: int, d: Difference, final: Obs) -> list[Successor]:
    """One run of `side` through the difference's inputs with exactly those responses."""
    m = ls.models[side]
    layer: dict[World, Optional[tuple[World, Successor]]] = {m.initial(): None}
    history: list[dict[World, Optional[tuple[World, Successor]]]] = [layer]
    steps = list(d.inputs) + [(d.action, final)]
    for a, o in steps:
        nxt: dict[World, Optional[tuple[World, Successor]]] = {}
        outs = ls.outcomes(side, frozenset(layer), a)
        for w, s in outs.get(o, []):
            nxt.setdefault(s.world, (w, s))
        layer = nxt
        history.append(layer)
        if not layer:
            return []
    path: list[Successor] = []
    w = next(iter(layer))
    for k in range(len(history) - 1, 0, -1):
        entry = history[k][w]
        assert entry is not None
        path.append(entry[1])
        w = entry[0]
    return list(reversed(path))


def labels(ls: Lockstep, d: Difference) -> tuple[str, ...]:
    side = 0 if d.shown_by == "A" else 1
    path = side_path(ls, side, d, d.shown)
    out = []
    for k, s in enumerate(path, 1):
        line = f"{k:>3}. {s.action.label(ls.bounds)}"
        if s.transition is not None:
            line += f"   [rows: {', '.join(s.transition.rows)}]"
        out.append(line)
    return tuple(out)


def describe_obs(o: Obs) -> str:
    if not o:
        return "(no response)"
    return "; ".join(f"{who} <= {what}" for who, what in o)
