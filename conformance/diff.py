"""A difference between two tables as a verified scenario file (`groupspec diff`, `check --refines`).

The lockstep search is check/diff.py. Each difference it finds is rendered here as a scenario file
(`kafka-classic-group-conformance/1`): it is replayed on the concrete model (real member ids, a
virtual clock; abstract timers become `advance` steps, with keep-alive heartbeats so that only the
intended timer fires), and then run by the conformance runner on both tables: it must pass on the
table whose response it expects and fail on the other.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any, Callable, Optional, TextIO, cast

from check.abstract import SESSION_MS, Action, Bounds, Successor, World, client_name
from check.diff import (GROUP, DiffReport, Difference, Lockstep, Side, describe_obs, labels,
                        side_path, timer_like, visible)
from check.diff import explore_diff as search
from model.concrete import ModelCoordinator, armed_timers
from model.coordinator_api import CoordinatorConfig
from model.dsl import Superseded, Table
from model.messages import (DescribeGroupsResponse, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
                            ProtocolMetadata, Request, Response)
from model.visible import Actual
from model.vocabulary import Error, TimerEvent

from conformance.actions import rename_members
from conformance.dump import Script, document, expects
from conformance.parse import parse_text
from conformance.runner import Outcome, run_file
from conformance.scenario import (AdvanceStep, CheckPendingStep, CheckResponseStep, Defaults, JoinDefaults,
                                  JoinStep, ScenarioFile, SetupLoadStep, SetupUnloadStep, step_op)


def explore_diff(a: Side, b: Side, bounds: Bounds, *, render: bool = True,
                 **options: Any) -> DiffReport:
    """check.diff.explore_diff, with each difference made into a verified scenario (`render`)."""
    return search(a, b, bounds, verify=render_and_verify if render else None, **options)


# -- rendering a difference as a scenario, on the concrete model ------------------------------


# actual-value names whose expect key is spelled differently
_EXPECT_KEY = {"members_empty": "members_metadata_and_assignment_empty"}


class Untranslatable(Exception):
    pass


_CONFIG = CoordinatorConfig(group_min_session_timeout_ms=6000, group_max_session_timeout_ms=1800000,
                            group_initial_rebalance_delay_ms=3000, new_member_join_timeout_ms=300000)
# The configurations a difference is rendered with, tried in order. The abstract mode lets any
# armed timer fire first; with Kafka's defaults a new member's join timeout (300 s) never fires
# before the join phase's InitialDelayedJoin (3 s), so a run where it does (a new member's session
# expiring in PreparingRebalance) is rendered with a join timeout shorter than the initial delay.
# Kafka's join timeout is a constant, not a broker setting, so a real broker SKIPs such a scenario
# (as it does the lockstep regressions, docs/kafka-fidelity.md); the model and reference run it.
_CONFIGS: tuple[CoordinatorConfig, ...] = (_CONFIG, replace(_CONFIG, new_member_join_timeout_ms=1000))
# the join fields the rendered scenarios leave to their defaults
_JOIN = JoinDefaults(client_id="c", protocols=(ProtocolMetadata("range", b"\x00"),),
                     session_timeout_ms=SESSION_MS, rebalance_timeout_ms=30000)


class _Render:
    """Replays one abstract run on the concrete model and writes it down as scenario steps."""

    def __init__(self, ls: Lockstep, side: int, config: CoordinatorConfig) -> None:
        self.ls = ls
        self.model = ls.models[side]
        self.config = replace(config, group_max_size=ls.bounds.group_max_size)
        self.cc = ModelCoordinator(self.config, table=ls.sides[side].table)
        self.script = Script()
        self.names: dict[str, tuple[str, str]] = {}  # abstract id -> (binding, concrete id)
        self.literal: set[str] = set()
        self.rid_step: dict[int, str] = {}  # abstract request id -> scenario step id
        self.outstanding: dict[str, str] = {}  # step id -> op, not yet answered
        self.ops: dict[str, str] = {}  # step id -> op
        self.index_of: dict[str, int] = {}  # step id -> step index
        self.got: dict[str, list[Response]] = {}  # step id -> concrete responses
        self.counter = 0
        self.nbind = 0

    # ids
    def member(self, aid: str) -> str:
        if aid == "" or aid in self.literal:
            return aid
        if aid in self.names:
            return "$" + self.names[aid][0]
        self.literal.add(aid)
        return aid

    def concrete(self, aid: str) -> str:
        return self.names[aid][1] if aid in self.names else aid

    def target(self, w: World, aid: str) -> str:
        """The concrete id of the member a timer acts on. A static member parked since its first
        JoinGroup was never told its id: it is found by its instance id."""
        if aid in self.names:
            return self.names[aid][1]
        m = w.group.member(aid)
        if m is not None and m.instance_id is not None:
            return self.cc.group(GROUP).static_member_id(m.instance_id) or aid
        return aid

    def shown(self, aid: str) -> str:
        """An abstract id as an expect value; raises if it was never bound."""
        if aid == "" or aid in self.literal:
            return aid
        if aid in self.names:
            return "$" + self.names[aid][0]
        raise Untranslatable(f"member id {aid} is checked before any response told it")

    # requests
    def _send(self, req: Request, abstract_rid: int, append_error: Optional[Error] = None) -> str:
        self.counter += 1
        sid = f"r{self.counter}"
        try:
            step = self.script.request(req, self.member, id=sid)
        except ValueError as e:
            raise Untranslatable(str(e)) from None
        if append_error is not None:
            assert isinstance(step, JoinStep)
            self.script.steps[-1] = step = replace(step, append_error=append_error)
        self.outstanding[sid] = self.ops[sid] = step_op(step)
        self.index_of[sid] = step.meta.index
        if abstract_rid > 0:
            self.rid_step[abstract_rid] = sid

        def callback(r: Response, sid: str = sid) -> None:
            self.got.setdefault(sid, []).append(r)

        concrete = rename_members(req, self.concrete)
        if append_error is None:
            self.cc.handle(concrete, callback)
            return sid
        self.cc.set_append_result(append_error)
        try:
            self.cc.handle(concrete, callback)
        finally:
            self.cc.set_append_result(Error.NONE)
        return sid

    def request(self, w: World, a: Action) -> Optional[str]:
        rid = self.model.request_id(w, a.client) if a.kind != "admin" else 0
        if a.append_fails and not isinstance(a.request, JoinGroupRequest):
            raise Untranslatable("a failing log append on SyncGroup/OffsetCommit has no scenario step")
        request = cast(Request, a.request)  # a step for it, or Untranslatable
        return self._send(request, rid, Error.NOT_LEADER_OR_FOLLOWER if a.append_fails else None)

    # timers
    def fire(self, w: World, a: Action) -> None:
        """Make the timer of `a` fire alone (`w`: the abstract world it fires in)."""
        if a.kind == TimerEvent.PartitionUnload.value:
            self.script.add(SetupUnloadStep, GROUP)
            self.cc.unload(GROUP)
            return
        if a.kind == TimerEvent.PartitionLoad.value:
            self.script.add(SetupLoadStep, GROUP)
            self.cc.load(GROUP)
            return
        if a.kind == TimerEvent.OffsetsExpire.value:
            raise Untranslatable("offsets expiry has no scenario step")
        target_member = None if a.member_id is None else self.target(w, a.member_id)
        for _ in range(64):
            g = self.cc.group(GROUP)
            timers = armed_timers(g)
            mine = [t for t in timers if t[2] == a.kind and t[3] == target_member]
            if not mine:
                raise Untranslatable(f"{a.kind} is not armed on the concrete model")
            deadline = mine[0][0]
            now = self.cc.now_ms()
            before = [t for t in timers if t is not mine[0] and t[0] <= deadline]
            if not before:
                self.advance(deadline + 1 - now)
                return
            blocking = [t for t in before if t[2] != TimerEvent.MemberSessionExpire.value]
            if blocking:
                raise Untranslatable(f"{blocking[0][2]} would fire before {a.kind}")
            # keep the other members alive with a heartbeat just before their sessions end
            first = min(t[0] for t in before)
            if first > now:
                self.advance(first - now)
            for t in before:
                if t[0] <= self.cc.now_ms():
                    self.keep_alive(t[3] or "", g.generation)
        raise Untranslatable(f"could not make {a.kind} fire alone")

    def advance(self, ms: int) -> None:
        if ms > 0:
            self.script.add(AdvanceStep, ms)
            self.cc.advance(ms)

    def keep_alive(self, concrete_id: str, generation: int) -> None:
        name = next((n for n, c in self.names.values() if c == concrete_id), None)
        if name is None:
            raise Untranslatable("a member to keep alive was never named")
        m = next(m for m in self.cc.group(GROUP).members if m.member_id == concrete_id)
        req = HeartbeatRequest(GROUP, concrete_id, generation, m.instance_id)
        self.counter += 1
        self.script.request(req, lambda _: "$" + name, id=f"keepalive{self.counter}")
        self.cc.handle(req, lambda r: None)

    # responses
    def expect_of(self, aresp: Response, cresp: Response, binder: dict[str, Any]) -> dict[str, Any]:
        """The abstract response as expect keys (ids through bindings); binds a new member id."""
        va = visible(aresp)
        exp: dict[str, Any] = {}
        for k, v in va.items():
            if k in ("member_id", "leader", "member_ids") or v is None:
                continue
            exp[_EXPECT_KEY.get(k, k)] = v
        if isinstance(aresp, JoinGroupResponse):
            assert isinstance(cresp, JoinGroupResponse)
            aid, cid = aresp.member_id, cresp.member_id
            if aid and aid not in self.literal and (aid not in self.names or self.names[aid][1] != cid):
                self.nbind += 1
                name = f"{aid.replace('#', '_')}_{self.nbind}"
                self.names[aid] = (name, cid)
                binder["member_id"] = name
                exp["member_id_not"] = sorted({"$" + n for n, _ in self.names.values() if n != name})
                if not exp["member_id_not"]:
                    del exp["member_id_not"]
            else:
                exp["member_id"] = self.shown(aid)
            if aresp.leader:
                exp["leader"] = "self" if aresp.leader == aresp.member_id else self.shown(aresp.leader)
        ids = va.get("member_ids")
        if isinstance(aresp, DescribeGroupsResponse) and isinstance(ids, list):
            exp["member_ids"] = [self.shown(str(x)) for x in ids]
        return exp

    def check(self, s: Successor, sid: Optional[str], final: bool) -> None:
        """Write the checks of one step's responses; the concrete run must have given the same."""
        t = s.transition
        req_index = self.index_of[sid] if sid is not None else -1
        answers: list[tuple[str, Optional[Response], bool]] = []
        if t is not None:
            if t.reply is not None:
                if sid is None:
                    raise Untranslatable("a reply to no request")
                answers.append((sid, t.reply, True))
            for o in t.outputs:
                psid = self.rid_step.get(o.request_id)
                if psid is None:
                    if o.request_id < 1:
                        continue
                    raise Untranslatable(f"an answer to unknown request {o.request_id}")
                answers.append((psid, None if isinstance(o.response, Superseded) else o.response, False))
        if sid is not None and not (t is not None and t.reply is not None):
            self.script.amend(req_index, await_later=True)
        # leaders first: a follower's JoinGroup response names the leader bound by the leader's
        answers.sort(key=lambda x: 0 if isinstance(x[1], JoinGroupResponse)
                     and x[1].leader == x[1].member_id else 1)
        answered = {x for x, r, _ in answers if r is not None}
        for x in self.got:
            if not x.startswith("keepalive") and x not in answered:
                raise Untranslatable(f"the concrete model answered {x} where the run did not")
        for x, aresp, is_reply in answers:
            if aresp is None:
                continue
            got = self.got.pop(x, [])
            if len(got) != 1:
                raise Untranslatable(f"the concrete model gave {len(got)} answers to {x}")
            binder: dict[str, str] = {}
            exp = self.expect_of(aresp, got[0], binder)
            concrete, abstract = self._ids(visible(got[0]), True), self._ids(visible(aresp), False)
            if concrete != abstract:
                raise Untranslatable(f"the concrete model took another branch at {x}: "
                                     f"{concrete} where the run has {abstract}")
            bind = binder.get("member_id")
            if is_reply:
                self.script.amend(req_index, expect=expects(exp), bind=bind)
            else:
                self.script.add(CheckResponseStep, x, self.ops[x], expects(exp), bind)
            self.outstanding.pop(x, None)
        self.got.clear()
        for x, aresp, _ in answers:
            if aresp is None:  # dropped: never answered
                self.script.add(CheckPendingStep, x)
        if final:
            for x in sorted(self.outstanding):
                self.script.add(CheckPendingStep, x)

    def _ids(self, v: dict[str, Actual], concrete: bool) -> str:
        """A visible response with member ids replaced by their bindings (for comparison)."""
        table = ({c: "$" + n for n, c in self.names.values()} if concrete
                 else {a: "$" + n for a, (n, _) in self.names.items()})
        out: dict[str, Actual] = {}
        for k, x in v.items():
            if k in ("member_id", "leader") and isinstance(x, str):
                out[k] = table.get(x, x)
            elif k == "member_ids" and isinstance(x, list):
                out[k] = list[Actual](sorted(table.get(str(y), str(y)) for y in x))
            else:
                out[k] = x
        return json.dumps(out, sort_keys=True)

    def document(self, title: str, source: str) -> dict[str, Any]:
        scenario = self.script.scenario(title, source=source, config=self.config)
        return document(ScenarioFile("", (scenario,), Defaults(GROUP, self.config, _JOIN)))


def render(ls: Lockstep, d: Difference, config: CoordinatorConfig = _CONFIG) -> dict[str, Any]:
    """The scenario document of a difference, from the side that shows the response."""
    side = 0 if d.shown_by == "A" else 1
    path = side_path(ls, side, d, d.shown)
    if not path:
        raise Untranslatable("the run could not be replayed")
    r = _Render(ls, side, config)
    for k, s in enumerate(path):
        a = s.action
        before = ls.models[side].initial() if k == 0 else path[k - 1].world
        sid: Optional[str] = None
        if a.kind in ("send", "impersonate", "admin"):
            sid = r.request(before, a)
        elif timer_like(a):
            if s.transition is None:
                r.advance(0)  # not armed on this side: nothing to do
            else:
                r.fire(before, a)
        # crash, stall, request-timeout, lost responses: the client's business, no request
        r.check(s, sid, final=k == len(path) - 1)
    other = "B" if d.shown_by == "A" else "A"
    names = {"A": ls.sides[0].name, "B": ls.sides[1].name}
    title = (f"{names[d.shown_by]} answers {d.action.label(ls.bounds)} in a way "
             f"{names[other]} cannot (after {d.depth - 1} earlier inputs)")
    return r.document(title, f"groupspec diff {names['A']} vs {names['B']}, {ls.bounds.describe()}")


def run_document(doc: dict[str, Any], table: Table) -> Outcome:
    """Run a scenario document on the concrete model with `table` (the conformance runner)."""
    f = parse_text(json.dumps(doc), "<diff>")

    def factory(config: CoordinatorConfig) -> ModelCoordinator:
        return ModelCoordinator(config, table=table)

    results = run_file(f, factory)
    if any(x.outcome is Outcome.FAIL for x in results):
        return Outcome.FAIL
    if any(x.outcome is Outcome.SKIP for x in results):
        return Outcome.SKIP
    return Outcome.PASS


def render_and_verify(ls: Lockstep, d: Difference) -> None:
    """Find a scenario that passes on the side that shows an answer and fails on the other."""
    reasons: dict[str, None] = {}  # in order, each once
    d.labels = labels(ls, d)
    for config in _CONFIGS:
        changed = ", ".join(f"{f.name} {getattr(config, f.name)}" for f in fields(CoordinatorConfig)
                            if getattr(_CONFIG, f.name) != getattr(config, f.name))
        for shown_by, o in d.alternatives or ((d.shown_by, d.shown),):
            who = f"{shown_by} ({changed})" if changed else shown_by
            cand = replace(d, shown_by=shown_by, shown=o)
            try:
                doc = render(ls, cand, config)
            except Untranslatable as e:
                reasons[f"{who}: {e}"] = None
                continue
            except AssertionError as e:  # the concrete model refuses the run (e.g. a double answer)
                reasons[f"{who}: the concrete model stopped: {e}"] = None
                continue
            side = 0 if shown_by == "A" else 1
            mine, theirs = ls.sides[side], ls.sides[1 - side]
            on_mine, on_theirs = run_document(doc, mine.table), run_document(doc, theirs.table)
            if on_mine is Outcome.PASS and on_theirs is Outcome.FAIL:
                d.shown_by, d.shown = shown_by, o
                d.scenario, d.scenario_passes_on, d.scenario_fails_on = doc, mine.name, theirs.name
                d.labels = labels(ls, d)
                return
            reasons[f"{who}: the scenario gives {on_mine.name} on {mine.name} and "
                    f"{on_theirs.name} on {theirs.name}"] = None
    d.unrendered = "; ".join(reasons)


def render_report(r: DiffReport, out: TextIO, write_scenario: Callable[[int, dict[str, Any]], Optional[str]]) -> None:
    print(f"{r.nodes:,} lockstep states, {r.edges:,} edges, depth {r.depth}, {r.seconds:.1f} s", file=out)
    for k, d in enumerate(r.differences, 1):
        shown = r.a if d.shown_by == "A" else r.b
        other = r.b if d.shown_by == "A" else r.a
        print(f"\nDIFFERENCE {k} (after {d.depth} inputs): {shown} can answer what {other} cannot", file=out)
        for line in d.labels or tuple(f"{i:>3}. {a.label(r.bounds)}" for i, (a, _) in enumerate(d.inputs, 1)):
            print("  " + line, file=out)
        if not d.labels:
            print(f"  {d.depth:>3}. {d.action.label(r.bounds)}", file=out)
        print(f"  {shown}: {describe_obs(d.shown)}", file=out)
        for o in d.other or ((),):
            print(f"  {other}: {describe_obs(o)}", file=out)
        if d.scenario is not None:
            where = write_scenario(k, d.scenario)
            print(f"  scenario (passes on {d.scenario_passes_on}, fails on {d.scenario_fails_on})"
                  + (f": {where}" if where else ":"), file=out)
            if where is None:
                print(json.dumps(d.scenario, indent=2), file=out)
        elif d.labels:
            print(f"  no scenario: {d.unrendered}", file=out)


__all__ = ["Side", "Difference", "DiffReport", "explore_diff", "render_report", "run_document",
           "client_name", "describe_obs"]
