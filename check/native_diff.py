"""check/diff.py's lockstep search on the native engine (engine/src/lockstep.rs).

Both tables go to the engine as data (check.native.make_engine; what the engine lacks goes through
the Python callbacks, as for the explorer). The engine searches the lockstep product breadth-first
and compares what a client sees with check/diff.py's observation (model/visible.py). Each depth's
differences come back as the inputs (actions) and the answers seen on the way; they are replayed
here through the Python lockstep (`check.diff.Lockstep`), which makes the same `Difference`
records `check.diff.explore_diff` makes, so `verify` (conformance/diff.py) and scenario rendering
work unchanged. A native difference the Python lockstep does not confirm on replay is an
`EngineDisagreement`, never a silent pass. The Python lockstep stays the reference
(`explore_diff_python`, `engine="python"`); the test tests/engine/test_native_lockstep.py checks that both find the same
differences on every mutant and historical bug.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Optional, TextIO

from check.abstract import Action, Bounds
from check.callbacks import parse
from check.diff import (DiffReport, Difference, Lockstep, Node, Obs, Side, Verify, _Search,
                        explore_diff_python)
from check.native import (EngineDisagreement, NativeCannotRun, NativeEngineUnavailable,
                          engine_module, make_engine)

ActionData = tuple[str, int, Optional[str], Optional[str], bool]
ShownData = list[tuple[str, str, str]]
FoundData = tuple[int, list[tuple[ActionData, ShownData]], ActionData, str, ShownData]


def observed(shown: ShownData) -> Obs:
    """check/diff.py `_obs` of what the engine showed: responses (as their repr) projected by
    `visible`, other items as their text."""
    from check.diff import visible
    items = [(who, json.dumps(visible(parse(text)), sort_keys=True) if kind == "response" else text)
             for who, kind, text in shown]
    return tuple(sorted(items))


class _Replay:
    """Native differences made into check/diff.py `Difference` records by replaying their
    inputs through the Python lockstep (the nodes of the prefixes seen are kept)."""

    def __init__(self, ls: Lockstep, one_sided: bool) -> None:
        self.ls, self.one_sided = ls, one_sided
        self.nodes: dict[tuple[object, ...], Node] = {(): ls.initial()}

    def action(self, node: Node, data: ActionData) -> Action:
        kind, client, request, member, fails = data
        req = None if request is None else parse(request)
        found = [a for a in self.ls.actions(node) if a.kind == kind and a.client == client
                 and a.member_id == member and a.append_fails == fails and a.request == req]
        if len(found) != 1:
            raise EngineDisagreement(f"native lockstep input {data} matches {len(found)} Python "
                                     f"inputs")
        return found[0]

    def difference(self, item: FoundData) -> Difference:
        depth, path, act_data, shown_by, shown = item
        key: tuple[object, ...] = ()
        node = self.nodes[()]
        inputs: list[tuple[Action, Obs]] = []
        for data, seen in path:
            act, o = self.action(node, data), observed(seen)
            key += ((data, o),)
            inputs.append((act, o))
            if key not in self.nodes:
                oa = self.ls.outcomes(0, node[0], act)
                ob = self.ls.outcomes(1, node[1], act)
                if o not in oa or o not in ob:
                    raise EngineDisagreement(f"native lockstep step {len(inputs)} ({act}): answer "
                                             f"{o} is not one both tables give in Python")
                self.nodes[key] = (frozenset(s.world for _, s in oa[o]),
                                   frozenset(s.world for _, s in ob[o]))
            node = self.nodes[key]
        act = self.action(node, act_data)
        oa = self.ls.outcomes(0, node[0], act)
        ob = self.ls.outcomes(1, node[1], act)
        extra = [("A", o) for o in sorted(oa) if o not in ob]
        if not self.one_sided:
            extra += [("B", o) for o in sorted(ob) if o not in oa]
        if (shown_by, observed(shown)) not in extra or depth != len(inputs) + 1:
            raise EngineDisagreement(f"native lockstep difference at depth {depth} ({act}, side "
                                     f"{shown_by}) is not one in Python")
        side, o = extra[0]
        return Difference(depth, tuple(inputs), act, side, o, tuple(sorted(oa)),
                          tuple(sorted(ob)), alternatives=tuple(extra))


def explore_diff_native(a: Side, b: Side, bounds: Bounds, *, one_sided: bool = False,
                        max_differences: int = 3, max_nodes: Optional[int] = None,
                        progress: Optional[TextIO] = sys.stderr, verify: Optional[Verify] = None,
                        extra_depth: int = 4) -> DiffReport:
    """check.diff.explore_diff on the native engine: the same DiffReport (the differences of the
    same depths, each a check/diff.py Difference, verified through `verify` level by level).
    Raises NativeCannotRun when a table cannot go to the engine."""
    ea, ca = make_engine(a.table, a.urgent, bounds)
    eb, cb = make_engine(b.table, b.urgent, bounds)
    ls = Lockstep(a, b, bounds)
    report = DiffReport(a.name, b.name, bounds, one_sided)
    search = _Search(ls, report, verify, max_differences, extra_depth)  # the level bookkeeping
    replay = _Replay(ls, one_sided)

    def on_level(items: list[FoundData], finished: bool) -> bool:
        for item in items:
            d = replay.difference(item)
            search.first_depth = d.depth if search.first_depth is None else search.first_depth
            search.current = d.depth - 1
            if d.signature() not in search.signatures:
                search.signatures.add(d.signature())
                search.level.append(d)
        if not finished:
            search.close_unfinished_level()
            return False
        return search.close_level()

    start = time.perf_counter()
    try:
        raw: dict[str, Any] = engine_module().lockstep(ea, eb, one_sided, max_nodes, on_level,
                                                       progress is not None)
    except RuntimeError as e:
        cannot = ca.cannot or cb.cannot
        if cannot:
            raise NativeCannotRun(f"a Python definition made a value the native engine cannot "
                                  f"hold: {cannot}") from e
        failure = ca.failure or cb.failure
        if failure is not None:
            raise failure from e
        raise
    report.nodes = int(raw["nodes"])
    report.edges = int(raw["edges"])
    report.depth = int(raw["depth"])
    report.frontier = int(raw["frontier"])
    report.complete = bool(raw["complete"])
    fired: dict[str, int] = raw["rows_fired"]
    report.rows_fired = {r.id: fired[r.id] for r in a.table.rows if r.id in fired}
    found = search.found
    ok = [d for d in found if d.scenario is not None]
    report.differences = ok if ok else found[:max_differences]
    report.total_differences = len(found)
    report.seconds = time.perf_counter() - start
    return report


def run_diff(engine: str, a: Side, b: Side, bounds: Bounds, **options: Any) -> DiffReport:
    """The lockstep search with the chosen engine ("native" or "python"); a native run that
    cannot take a table falls back to the Python lockstep, saying why in one line."""
    if engine == "native":
        try:
            return explore_diff_native(a, b, bounds, **options)
        except (NativeCannotRun, NativeEngineUnavailable) as e:
            print(f"note: the native engine cannot run this diff ({e}); using the Python "
                  f"lockstep (--engine python)", file=sys.stderr)
    return explore_diff_python(a, b, bounds, **options)
