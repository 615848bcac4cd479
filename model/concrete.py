"""The model's concrete mode as a coordinator: many groups, a virtual clock, callbacks.

`ModelCoordinator` runs the table through `step` for every request and timer, so scenario files,
the Hypothesis oracle and trace replay can drive the model exactly like any other target.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Final, Iterable, Optional, Sequence, TypeVar

from model.coordinator_api import CoordinatorConfig, MemberSpec, Recorder, ResponseCallback
from model.dsl import Chooser, Guard, Output, Superseded, Table
from model.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    GroupView,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberView,
    ProtocolMetadata,
    Request,
    Response,
)
from model.modes import ConcreteMode
from model.protocol_selection import select_protocol
from model.state import Group, Input, JoinTimerKind, Member, Settings, record_builder
from model.step import Transition, step
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import Error, GroupState, TimerEvent, is_valid_transition


def settings_from(config: CoordinatorConfig, append_result: Error) -> Settings:
    return Settings(
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        group_max_size=config.group_max_size,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        new_member_join_timeout_ms=config.new_member_join_timeout_ms,
        append_ok=append_result == Error.NONE,
        append_error=None if append_result == Error.NONE else append_result,
    )


_new_input: Final = record_builder(Input)
_R = TypeVar("_R")
_INITIAL_JOIN_EXPIRE: Final = TimerEvent.InitialDelayedJoinExpire.value
_JOIN_EXPIRE: Final = TimerEvent.DelayedJoinExpire.value
_SYNC_EXPIRE: Final = TimerEvent.DelayedSyncExpire.value
_SESSION_EXPIRE: Final = TimerEvent.MemberSessionExpire.value
_PENDING_EXPIRE: Final = TimerEvent.PendingMemberExpire.value


def armed_timers(g: Group) -> list[tuple[int, int, str, Optional[str]]]:
    """(deadline, tie-break order, event, member) of every timer armed for the group."""
    out: list[tuple[int, int, str, Optional[str]]] = []
    for t in g.join_timers[:1]:
        kind = _INITIAL_JOIN_EXPIRE if t.kind is JoinTimerKind.InitialDelayedJoin else _JOIN_EXPIRE
        out.append((t.deadline, 0, kind, None))
    for st in g.sync_timers[:1]:
        out.append((st.deadline, 1, _SYNC_EXPIRE, None))
    for i, m in enumerate(g.members):
        if m.session_deadline is not None:
            out.append((m.session_deadline, 2 + i, _SESSION_EXPIRE, m.member_id))
    for i, p in enumerate(g.pending):
        out.append((p.deadline, 1000 + i, _PENDING_EXPIRE, p.member_id))
    return out


class ModelCoordinator:
    """The transition table driven by real requests and a virtual clock."""

    def __init__(self, config: CoordinatorConfig = CoordinatorConfig(), *,
                 table: Table = CLASSIC_TABLE, seed: int = 0,
                 recorder: Optional[Recorder] = None,
                 chooser: Optional[Chooser] = None,
                 urgent: Sequence[tuple[str, Guard]] = URGENT) -> None:
        self.config = config
        self.table, self.urgent = table, tuple(urgent)
        self.mode = ConcreteMode(seed)
        self.recorder = recorder
        self.chooser = chooser
        self._append = config.append_result
        self._settings_cache: Optional[tuple[CoordinatorConfig, Error, Settings]] = None
        self._now = 0
        self._next_request_id = 1
        self._groups: dict[str, Group] = {}
        self._callbacks: dict[int, tuple[str, ResponseCallback]] = {}
        self.transitions: list[Transition] = []  # every step taken, for traces and coverage
        self.listeners: list[Callable[[Transition], None]] = []

    # -- Coordinator -----------------------------------------------------------------------

    def now_ms(self) -> int:
        return self._now

    def handle(self, request: Request, callback: ResponseCallback) -> None:
        rid = self._next_request_id
        self._next_request_id += 1
        if self.recorder is not None:
            self.recorder.on_request(self._now, rid, request)
        if isinstance(request, DescribeGroupsRequest):
            described = self._each_group(request.group_ids, request, rid, DescribeGroupsResponse)
            self._answer(rid, "", DescribeGroupsResponse(tuple(g for r in described for g in r.groups)), callback)
        elif isinstance(request, DeleteGroupsRequest):
            deleted = self._each_group(request.group_ids, request, rid, DeleteGroupsResponse)
            self._answer(rid, "", DeleteGroupsResponse(tuple(x for r in deleted for x in r.results)), callback)
        elif isinstance(request, ListGroupsRequest):
            listed = self._each_group(sorted(self._groups), request, rid, ListGroupsResponse)
            self._answer(rid, "", ListGroupsResponse(Error.NONE, tuple(g for r in listed for g in r.groups)),
                         callback)
        else:
            gid = request.group_id
            self._callbacks[rid] = (gid, callback)
            t = self._step(gid, _new_input(request.api_key._name_, request, request_id=rid))
            if t.reply is not None:
                self._deliver(rid, t.reply)

    def _each_group(self, group_ids: Iterable[str], request: Request, rid: int, kind: type[_R]) -> list[_R]:
        """A multi-group request stepped on each group in turn (one input each): the replies."""
        replies = []
        for gid in group_ids:
            t = self._step(gid, Input(request.api_key.name, request, request_id=rid))
            assert isinstance(t.reply, kind)
            replies.append(t.reply)
        return replies

    def advance(self, ms: int, reverse_ties: bool = False) -> None:
        """Kafka leaves the order of equal deadlines unspecified; `reverse_ties` fires them in
        the opposite of the default order (the lockstep comparison tries both)."""
        if ms < 0:
            raise ValueError(f"advance needs ms >= 0, got {ms}")
        self._now += ms
        sign = -1 if reverse_ties else 1
        while True:
            due = self._next_due(sign)
            if due is None:
                return
            _, _, gid, ev, mid = due
            if self.recorder is not None:
                self.recorder.on_timer(self._now, gid, TimerEvent(ev), mid)
            self._step(gid, Input(ev, member_id=mid))

    def _next_due(self, sign: int) -> Optional[tuple[int, int, str, str, Optional[str]]]:
        """The first timer to fire before now: the least (deadline, order, group, event, member)."""
        now = self._now
        best: Optional[tuple[int, int, str, str, Optional[str]]] = None
        for gid, g in self._groups.items():
            if not (g.join_timers or g.sync_timers or g.members or g.pending):
                continue
            for d, order, ev, mid in armed_timers(g):
                if d < now:
                    cand = (d, sign * order, gid, ev, mid)
                    if best is None or cand < best:
                        best = cand
        return best

    def snapshot(self) -> tuple[object, ...]:
        """Everything `restore` needs to rewind the coordinator (group records are immutable)."""
        return (dict(self._groups), self._now, dict(self._callbacks), len(self.transitions),
                self._next_request_id)

    def restore(self, snap: tuple[object, ...]) -> None:
        groups, now, callbacks, n, next_id = snap
        assert isinstance(groups, dict) and isinstance(callbacks, dict)
        assert isinstance(now, int) and isinstance(n, int) and isinstance(next_id, int)
        self._groups, self._now, self._callbacks = dict(groups), now, dict(callbacks)
        self._next_request_id = next_id
        del self.transitions[n:]

    # -- WhiteBoxCoordinator ---------------------------------------------------------------

    def group(self, group_id: str) -> Group:
        """The raw model state of a group (Missing when none exists)."""
        g = self._groups.get(group_id)
        if g is None:
            g = Group(group_id=group_id, owned=group_id not in self.config.not_owned_groups)
        return g

    def group_view(self, group_id: str) -> Optional[GroupView]:
        g = self._groups.get(group_id)
        if g is None or g.state in (GroupState.Missing, GroupState.Dead):
            return None
        return GroupView(
            group_id=g.group_id, state=g.state, generation_id=g.generation,
            protocol_type=g.protocol_type, protocol_name=g.protocol_name, leader=g.leader,
            members=tuple(MemberView(m.member_id, m.instance_id, m.session_timeout_ms,
                                     m.rebalance_timeout_ms, m.awaiting_join is not None,
                                     m.awaiting_sync is not None, m.is_new, m.assignment)
                          for m in g.members),
            pending_members=tuple(p.member_id for p in g.pending))

    def set_append_result(self, error: Error) -> None:
        self._append = error

    def unload(self, group_id: str) -> None:
        self._step(group_id, Input(TimerEvent.PartitionUnload.value))

    def load(self, group_id: str) -> None:
        self._step(group_id, Input(TimerEvent.PartitionLoad.value))

    def expire_offsets(self, group_id: str) -> None:
        self._step(group_id, Input(TimerEvent.OffsetsExpire.value))

    # -- BackdoorCoordinator ---------------------------------------------------------------

    def setup_add_group(self, group_id: str, state: GroupState, members: tuple[MemberSpec, ...],
                        protocol_type: str) -> None:
        ms = tuple(Member(
            member_id=s.member_id, instance_id=s.group_instance_id, client_id="consumer",
            protocol_type=protocol_type,
            protocols=tuple(ProtocolMetadata(n, md) for n, md in s.protocols),
            session_timeout_ms=s.session_timeout_ms, rebalance_timeout_ms=s.rebalance_timeout_ms,
            session_deadline=self._now + s.session_timeout_ms) for s in members)
        prefs = tuple(m.protocol_names() for m in ms)
        self._groups[group_id] = Group(
            group_id=group_id, state=state, generation=0,  # as Kafka's fixtures: new GroupMetadata + add
            protocol_type=protocol_type if ms else None,
            protocol_name=select_protocol(prefs) if ms else None,
            leader=ms[0].member_id if ms else None, members=ms)

    def setup_prepare_rebalance(self, group_id: str) -> None:
        from model.dsl import Ctx
        from model.effects import rebalance
        g = self.group(group_id)
        ctx = Ctx(group=g, inp=Input("setup"), settings=self._settings(), now_ms=self._now,
                  mode=self.mode, chooser=self.chooser or _First())
        rebalance(ctx)
        self._groups[group_id] = replace(ctx.group, state=GroupState.PreparingRebalance)
        self._deliver_outputs(ctx.outputs)

    def setup_force_transition(self, group_id: str, state: GroupState) -> None:
        g = self.group(group_id)
        if not is_valid_transition(g.state, state):
            raise ValueError(f"illegal transition {g.state.name} -> {state.name}")
        self._groups[group_id] = replace(g, state=state)

    def can_transition(self, start: GroupState, path: tuple[GroupState, ...]) -> bool:
        cur = start
        for nxt in path:
            if not is_valid_transition(cur, nxt):
                return False
            cur = nxt
        return True

    def select_protocol(self, members_protocols: tuple[tuple[str, ...], ...],
                        group_protocol_type: str) -> Optional[str]:
        return select_protocol(members_protocols)

    # -- internals -------------------------------------------------------------------------

    def _settings(self) -> Settings:
        cached = self._settings_cache
        if cached is not None and cached[0] is self.config and cached[1] is self._append:
            return cached[2]
        settings = settings_from(self.config, self._append)
        self._settings_cache = (self.config, self._append, settings)
        return settings

    def _step(self, group_id: str, inp: Input) -> Transition:
        g = self.group(group_id)
        t = step(self.table, self.urgent, g, inp, self._settings(), self._now, self.mode, self.chooser)
        self._groups[group_id] = t.after
        self.transitions.append(t)
        for listener in self.listeners:
            listener(t)
        if self.recorder is not None and t.before.state != t.after.state:
            self.recorder.on_transition(self._now, group_id, t.before.state, t.after.state,
                                        t.after.generation)
        self._deliver_outputs(t.outputs)
        return t

    def _deliver_outputs(self, outputs: Sequence[Output]) -> None:
        for o in outputs:
            if isinstance(o.response, Superseded):
                self._callbacks.pop(o.request_id, None)
            else:
                self._deliver(o.request_id, o.response)

    def _deliver(self, rid: int, response: Response) -> None:
        entry = self._callbacks.pop(rid, None)
        if entry is None:
            raise AssertionError(f"response to request {rid}, which has none pending: {response}")
        gid, cb = entry
        if self.recorder is not None:
            self.recorder.on_response(self._now, rid, gid, response)
        cb(response)

    def _answer(self, rid: int, gid: str, response: Response, cb: ResponseCallback) -> None:
        if self.recorder is not None:
            self.recorder.on_response(self._now, rid, gid, response)
        cb(response)


class _First:
    def choose(self, what: str, options: int) -> int:
        return 0
