"""The trace a person reads: what each client sent, what the coordinator answered, which timers
fired and which faults struck, the table row fired at each step and the group state after it.

One record for every source: a scenario file run on the model's concrete mode (here), a
`groupspec check` counterexample (render/counterexample.py), a `groupspec diff` difference and a
fuzz finding (both scenario files). The pictures (render/sequence.py) and the ITF export
(render/itf.py) read only this record, never an explorer or a coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Mapping, Optional

from model.concrete import ModelCoordinator, armed_timers
from model.coordinator_api import CoordinatorConfig, MemberSpec, Recorder, ResponseCallback
from model.dsl import Table
from model.errors import BadInput
from model.messages import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, Request, Response, SyncGroupRequest, SyncGroupResponse,
)
from model.state import Group
from model.step import Transition
from model.vocabulary import Error, GroupState, TimerEvent

COORDINATOR: Final = "coordinator"
ADMIN: Final = "admin"
# What a step's cause is: a client's request, a timer firing in the coordinator, a fault (a client
# crashes or stalls, a response is lost, a log append fails), or a test hook setting a group up.
KINDS: Final = ("request", "timer", "fault", "setup")


@dataclass(frozen=True, slots=True)
class MemberState:
    """One member of the group after a step, as a reader needs it."""

    member_id: str  # as the reader knows it (a scenario's binding name when it has one)
    instance_id: Optional[str]
    leader: bool
    join_parked: bool
    sync_parked: bool
    is_new: bool

    def describe(self) -> str:
        flags = [f for f, on in (("leader", self.leader), ("JoinGroup parked", self.join_parked),
                                 ("SyncGroup parked", self.sync_parked), ("new", self.is_new)) if on]
        inst = f" (instance {self.instance_id})" if self.instance_id else ""
        return self.member_id + inst + (f" [{', '.join(flags)}]" if flags else "")


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """The group state after a step: Kafka's state name, generation, members, timers."""

    group_id: str
    state: str  # GroupState name ("Missing" = no group object)
    generation: int
    protocol: Optional[str]
    leader: Optional[str]
    members: tuple[MemberState, ...]
    pending: tuple[str, ...]  # member ids handed out with MEMBER_ID_REQUIRED, not joined yet
    timers: tuple[str, ...]  # armed timers, e.g. "DelayedJoinExpire at 30000 ms"

    def describe(self) -> str:
        parts = [self.state, f"generation {self.generation}"]
        if self.protocol:
            parts.append(f"protocol {self.protocol}")
        if self.members:
            parts.append("members " + ", ".join(m.describe() for m in self.members))
        if self.pending:
            parts.append("pending " + ", ".join(self.pending))
        return " · ".join(parts)


@dataclass(frozen=True, slots=True)
class Message:
    """One arrow: a request, a response, a timer firing, a fault, a setup hook."""

    kind: str  # "request" | "response" | "timer" | "fault" | "setup"
    source: str  # lifeline names (COORDINATOR, ADMIN or a client)
    target: str
    label: str  # short text on the arrow
    detail: str = ""  # every field, for a tooltip and the ITF export
    error: Optional[str] = None  # a response's error name (NONE for success)
    late: bool = False  # a response to a request parked by an earlier step
    lost: bool = False  # a response the network lost: it never reaches the client (a fault)


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One thing that happened and everything it caused."""

    index: int  # 1-based position in the trace
    time_ms: Optional[int]  # the virtual clock (None: untimed, as in the abstract model)
    cause: Message
    answers: tuple[Message, ...]  # responses made while the step was processed (parked ones too)
    rows: tuple[str, ...]  # the table rows fired, in order (urgent rows included)
    group: Optional[GroupSnapshot]  # the group's state after the step
    note: str = ""  # where it comes from (e.g. "scenario step 4"), what went wrong


@dataclass(frozen=True, slots=True)
class Violation:
    """What the trace shows to be wrong: a violated invariant, or a scenario expectation."""

    name: str  # the invariant's kebab-case name, or e.g. "scenario expectation"
    statement: str  # what should hold, in words
    message: str  # what broke
    step: Optional[int] = None  # the trace step at which it breaks (None: the last state)


@dataclass(frozen=True, slots=True)
class Trace:
    """A run for people to read, from any source."""

    title: str
    kind: str  # "scenario" | "counterexample" | "difference" | "finding"
    source: str  # where it came from: a file path, "groupspec check", ...
    table: str  # the table it ran on
    clients: tuple[str, ...]  # lifelines other than the coordinator, in order of appearance
    initial: Optional[GroupSnapshot]
    steps: tuple[TraceStep, ...]
    violation: Optional[Violation] = None
    notes: tuple[str, ...] = ()  # paragraphs shown above the diagram
    aliases: tuple[tuple[str, str], ...] = field(default=())  # (member id, name shown)

    @property
    def states(self) -> int:
        """The number of states: the initial one and one after each step (ITF's `states`)."""
        return 1 + len(self.steps)


# -- describing requests and responses ------------------------------------------------------------


def short_id(member_id: str, aliases: Mapping[str, str]) -> str:
    """A member id as a reader knows it: its alias, or the id (a long one shortened)."""
    if member_id in aliases:
        return aliases[member_id]
    if member_id == "":
        return '""'
    return member_id if len(member_id) <= 18 else member_id[:14] + "…"


def describe_request(r: Request, aliases: Mapping[str, str]) -> tuple[str, str]:
    """(arrow label, every field) of a request."""
    def n(member_id: str) -> str:
        return short_id(member_id, aliases)
    if isinstance(r, JoinGroupRequest):
        inst = f", instance {r.group_instance_id}" if r.group_instance_id else ""
        protos = ",".join(p.name for p in r.protocols)
        return (f"JoinGroup({n(r.member_id)}{inst})",
                f"JoinGroup member={r.member_id!r} instance={r.group_instance_id} "
                f"protocol_type={r.protocol_type} protocols={protos} "
                f"session={r.session_timeout_ms}ms rebalance={r.rebalance_timeout_ms}ms")
    if isinstance(r, SyncGroupRequest):
        assigned = f", assigns {len(r.assignments)}" if r.assignments else ""
        return (f"SyncGroup({n(r.member_id)}, gen {r.generation_id}{assigned})",
                f"SyncGroup member={r.member_id!r} generation={r.generation_id} "
                f"instance={r.group_instance_id} assignments={[n(m) for m, _ in r.assignments]}")
    if isinstance(r, HeartbeatRequest):
        return (f"Heartbeat({n(r.member_id)}, gen {r.generation_id})",
                f"Heartbeat member={r.member_id!r} generation={r.generation_id} "
                f"instance={r.group_instance_id}")
    if isinstance(r, OffsetCommitRequest):
        return (f"OffsetCommit({n(r.member_id)}, gen {r.generation_id})",
                f"OffsetCommit member={r.member_id!r} generation={r.generation_id} "
                f"offsets={[(str(tp.topic) + '-' + str(tp.partition), o) for tp, o in r.offsets]}")
    if isinstance(r, LeaveGroupRequest):
        who = ", ".join(n(m.member_id) if m.member_id else f"instance {m.group_instance_id}"
                        for m in r.members)
        return f"LeaveGroup({who})", f"LeaveGroup members={[(m.member_id, m.group_instance_id) for m in r.members]}"
    if isinstance(r, OffsetFetchRequest):
        return "OffsetFetch", f"OffsetFetch group={r.group_id} partitions={r.partitions}"
    if isinstance(r, DescribeGroupsRequest):
        return "DescribeGroups", f"DescribeGroups groups={list(r.group_ids)}"
    if isinstance(r, ListGroupsRequest):
        states = f"({', '.join(r.states_filter)})" if r.states_filter else ""
        return f"ListGroups{states}", f"ListGroups states={list(r.states_filter)}"
    if isinstance(r, DeleteGroupsRequest):
        return "DeleteGroups", f"DeleteGroups groups={list(r.group_ids)}"
    return type(r).__name__, repr(r)


def describe_response(r: Response, aliases: Mapping[str, str]) -> tuple[str, str, str]:
    """(arrow label, every field, error name) of a response."""
    def n(member_id: str) -> str:
        return short_id(member_id, aliases)
    if isinstance(r, JoinGroupResponse):
        if r.error == Error.NONE:
            leader = "leader" if r.leader == r.member_id else f"leader {n(r.leader)}"
            skip = ", skip assignment" if r.skip_assignment else ""
            return (f"JoinGroup OK: {n(r.member_id)}, gen {r.generation_id}, {leader}{skip}",
                    f"JoinGroup NONE member={r.member_id} generation={r.generation_id} "
                    f"leader={r.leader} protocol={r.protocol_name} "
                    f"members={[n(m.member_id) for m in r.members]}", "NONE")
        mid = f" ({n(r.member_id)})" if r.member_id else ""
        return (f"JoinGroup {r.error.name}{mid}", f"JoinGroup {r.error.name} member={r.member_id!r}",
                r.error.name)
    if isinstance(r, SyncGroupResponse):
        if r.error == Error.NONE:
            got = f": assignment {r.assignment.hex()}" if r.assignment else ": empty assignment"
            return f"SyncGroup OK{got}", f"SyncGroup NONE protocol={r.protocol_name} assignment={r.assignment.hex()}", "NONE"
        return f"SyncGroup {r.error.name}", f"SyncGroup {r.error.name}", r.error.name
    if isinstance(r, HeartbeatResponse):
        return f"Heartbeat {_ok(r.error)}", f"Heartbeat {r.error.name}", r.error.name
    if isinstance(r, LeaveGroupResponse):
        each = ", ".join(m.error.name for m in r.members)
        worst = r.error if r.error != Error.NONE else next(
            (m.error for m in r.members if m.error != Error.NONE), Error.NONE)
        return (f"LeaveGroup {_ok(r.error)}" + (f" [{each}]" if each and each != "NONE" else ""),
                f"LeaveGroup {r.error.name} members={[(m.member_id, m.error.name) for m in r.members]}",
                worst.name)
    if isinstance(r, OffsetCommitResponse):
        errors = sorted({e.name for _, e in r.partitions}) or ["NONE"]
        return (f"OffsetCommit {'/'.join(_ok(Error[e]) for e in errors)}",
                f"OffsetCommit {[(tp.topic + '-' + str(tp.partition), e.name) for tp, e in r.partitions]}",
                next((e for e in errors if e != "NONE"), "NONE"))
    if isinstance(r, OffsetFetchResponse):
        return (f"OffsetFetch {_ok(r.error)}",
                f"OffsetFetch {r.error.name} {[(tp.topic + '-' + str(tp.partition), o) for tp, o, _ in r.partitions]}",
                r.error.name)
    if isinstance(r, DescribeGroupsResponse):
        g = r.groups[0] if r.groups else None
        text = f"DescribeGroups: {g.state or g.error.name}, {len(g.members)} member(s)" if g else "DescribeGroups"
        return text, repr(r), g.error.name if g else "NONE"
    if isinstance(r, ListGroupsResponse):
        return (f"ListGroups {_ok(r.error)}: {len(r.groups)} group(s)",
                f"ListGroups {r.error.name} {[(g.group_id, g.state) for g in r.groups]}", r.error.name)
    if isinstance(r, DeleteGroupsResponse):
        names = ", ".join(e.name for _, e in r.results)
        return f"DeleteGroups {names}", f"DeleteGroups {list(r.results)}", next(
            (e.name for _, e in r.results if e != Error.NONE), "NONE")
    return type(r).__name__, repr(r), "NONE"


def _ok(e: Error) -> str:
    return "OK" if e == Error.NONE else e.name


def snapshot(g: Group, aliases: Mapping[str, str], timed: bool = True) -> GroupSnapshot:
    """The reader's view of a model group record."""
    def n(member_id: str) -> str:
        return short_id(member_id, aliases)
    timers = []
    for deadline, _, event, member in sorted(armed_timers(g), key=lambda t: (t[0], t[1])):
        about = f"({n(member)})" if member else ""
        timers.append(f"{event}{about}" + (f" at {deadline} ms" if timed else ""))
    return GroupSnapshot(
        group_id=g.group_id, state=g.state.name, generation=g.generation,
        protocol=g.protocol_name, leader=n(g.leader) if g.leader else None,
        members=tuple(MemberState(n(m.member_id), m.instance_id, m.member_id == g.leader,
                                  m.awaiting_join is not None, m.awaiting_sync is not None, m.is_new)
                      for m in g.members),
        pending=tuple(n(p.member_id) for p in g.pending), timers=tuple(timers))


# -- a scenario file run on the model -------------------------------------------------------------


@dataclass
class _Open:
    """The step being recorded."""

    time_ms: int
    cause: Message
    group_id: Optional[str]
    note: str
    answers: list[Message] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)


class _Builder:
    """Collects a trace from a ModelCoordinator's recorder calls and its transitions."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.steps: list[TraceStep] = []
        self.clients: list[str] = []
        self.lifeline_of_request: dict[int, str] = {}
        self.late: set[int] = set()  # request ids whose step is over (their answers come late)
        self.model: Optional[ModelCoordinator] = None
        self.current: Optional[_Open] = None
        self.next_lifeline = "client"
        self.next_note = ""
        self.pending_binds: dict[int, str] = {}  # request id -> binding name of its member id

    def lifeline(self, name: str) -> str:
        if name not in self.clients:
            self.clients.append(name)
        return name

    def open(self, time_ms: int, cause: Message, group_id: Optional[str]) -> None:
        self.close()
        self.current = _Open(time_ms, cause, group_id, self.next_note)

    def close(self) -> None:
        c = self.current
        if c is None:
            return
        self.current = None
        assert self.model is not None
        group = snapshot(self.model.group(c.group_id), self.aliases) if c.group_id is not None else None
        self.steps.append(TraceStep(len(self.steps) + 1, c.time_ms, c.cause, tuple(c.answers),
                                    tuple(c.rows), group, c.note))
        self.late.update(self.lifeline_of_request)

    # -- Recorder

    def on_request(self, now_ms: int, request_id: int, request: Request) -> None:
        who = self.lifeline(self.next_lifeline)
        label, detail = describe_request(request, self.aliases)
        gid = request.group_ids[0] if isinstance(request, (DescribeGroupsRequest, DeleteGroupsRequest)) \
            else getattr(request, "group_id", None)
        self.open(now_ms, Message("request", who, COORDINATOR, label, detail), gid)
        self.lifeline_of_request[request_id] = who  # after open: its answers in this step are not late

    def on_response(self, now_ms: int, request_id: int, group_id: str, response: Response) -> None:
        bind = self.pending_binds.pop(request_id, None)
        member_id = getattr(response, "member_id", "")
        if bind is not None and isinstance(member_id, str) and member_id:
            self.aliases.setdefault(member_id, bind)
        label, detail, error = describe_response(response, self.aliases)
        who = self.lifeline_of_request.get(request_id, ADMIN)
        if self.current is not None:
            self.current.answers.append(
                Message("response", COORDINATOR, who, label, detail, error, late=request_id in self.late))

    def on_timer(self, now_ms: int, group_id: str, event: TimerEvent, member_id: Optional[str]) -> None:
        about = f"({short_id(member_id, self.aliases)})" if member_id else ""
        self.open(now_ms, Message("timer", COORDINATOR, COORDINATOR, f"{event.value}{about}",
                                  f"{event.value} member={member_id} group={group_id}"), group_id)

    def on_transition(self, now_ms: int, group_id: str, source: GroupState, target: GroupState,
                      generation_id: int) -> None:
        pass

    # -- ModelCoordinator listener

    def on_step(self, t: Transition) -> None:
        if self.current is not None:
            self.current.rows.extend(t.rows)

    def setup(self, time_ms: int, group_id: str, label: str, detail: str) -> None:
        self.lifeline(ADMIN)
        self.open(time_ms, Message("setup", ADMIN, COORDINATOR, label, detail), group_id)


def _recording_model(builder: _Builder, table: Optional[Table]) -> type[ModelCoordinator]:
    """A ModelCoordinator class whose every request, timer, transition and test hook lands in
    `builder` (the runner builds one per scenario from its config)."""

    class RecordingModel(ModelCoordinator):
        def __init__(self, config: CoordinatorConfig = CoordinatorConfig()) -> None:
            recorder: Recorder = builder
            if table is None:
                super().__init__(config, recorder=recorder)
            else:
                super().__init__(config, table=table, recorder=recorder)
            self.listeners.append(builder.on_step)
            builder.model = self

        def setup_add_group(self, group_id: str, state: GroupState, members: tuple[MemberSpec, ...],
                            protocol_type: str) -> None:
            ids = ", ".join(m.member_id for m in members) or "no members"
            builder.setup(self.now_ms(), group_id, f"setup: {state.name} with {ids}",
                          f"setup_add_group state={state.name} members={[m.member_id for m in members]}")
            super().setup_add_group(group_id, state, members, protocol_type)

        def setup_prepare_rebalance(self, group_id: str) -> None:
            builder.setup(self.now_ms(), group_id, "setup: prepare rebalance", "setup_prepare_rebalance")
            super().setup_prepare_rebalance(group_id)

        def setup_force_transition(self, group_id: str, state: GroupState) -> None:
            builder.setup(self.now_ms(), group_id, f"setup: force {state.name}",
                          f"setup_force_transition state={state.name}")
            super().setup_force_transition(group_id, state)

        def unload(self, group_id: str) -> None:
            builder.open(self.now_ms(), Message("fault", COORDINATOR, COORDINATOR, "partition unloaded",
                                                "PartitionUnload: the coordinator loses the group's partition"),
                         group_id)
            super().unload(group_id)

        def load(self, group_id: str) -> None:
            builder.open(self.now_ms(), Message("fault", COORDINATOR, COORDINATOR, "partition loaded",
                                                "PartitionLoad: the coordinator loads the group's partition"),
                         group_id)
            super().load(group_id)

    return RecordingModel


def _lifeline_of(step: object, later_binds: Mapping[str, str]) -> tuple[str, Optional[str]]:
    """(the lifeline a scenario request step is drawn from, the binding its response makes: the
    step's own `bind`, or that of the check_response step that examines it later)."""
    from conformance.scenario import LeaveStep, MemberRef, RequestMeta

    meta = getattr(step, "meta")
    assert isinstance(meta, RequestMeta)
    bind = meta.bind or (later_binds.get(meta.id) if meta.id is not None else None)
    ref: Optional[MemberRef] = getattr(step, "member", None)
    if ref is None and isinstance(step, LeaveStep) and len(step.members) == 1:
        ref = step.members[0][0]
    if ref is None:
        return ADMIN, bind
    if ref.binding is not None:
        return ref.binding, bind
    if ref.text == "":  # a new process: named by the member id it will be bound to
        instance = getattr(step, "instance_id", None)
        return bind or instance or "new client", bind
    return ref.text, bind


def traces_of_scenarios(path: str, *, table: Optional[Table] = None,
                        kind: str = "scenario") -> list[Trace]:
    """Every scenario of a scenario file, run on the model's concrete mode (the classic table, or
    `table`), as traces. A scenario that fails on the model carries the failing expectation as its
    violation. Bad input (no such file, a malformed one) raises BadInput."""
    from conformance.parse import load

    file = load(path)
    return [_trace_of(path, s, table, kind) for s in file.scenarios]


def traces_of_scenario_text(text: str, path: str, *, table: Optional[Table] = None,
                            kind: str = "scenario") -> list[Trace]:
    """`traces_of_scenarios` of a scenario document held in memory (`path` names it in messages
    and on the page), e.g. a difference `groupspec diff` has just verified."""
    from conformance.parse import parse_text

    return [_trace_of(path, s, table, kind) for s in parse_text(text, path).scenarios]


def trace_of_scenario(path: str, name: Optional[str] = None, *, table: Optional[Table] = None,
                      kind: str = "scenario") -> Trace:
    """One scenario of a file as a trace: the one called `name`, or the file's only (or first)
    one."""
    from conformance.parse import load

    file = load(path)
    if not file.scenarios:
        raise BadInput(f"{path}: the file holds no scenario")
    if name is None:
        return _trace_of(path, file.scenarios[0], table, kind)
    for s in file.scenarios:
        if s.name == name:
            return _trace_of(path, s, table, kind)
    raise BadInput(f"{path}: no scenario named {name!r}; it has {', '.join(s.name for s in file.scenarios)}")


def _trace_of(path: str, scenario: object, table: Optional[Table], kind: str) -> Trace:
    from conformance.runner import Outcome, run_scenario
    from conformance.scenario import (
        REQUEST_STEP_TYPES, AdvanceStep, CheckResponseStep, Scenario, step_index, step_op,
    )

    assert isinstance(scenario, Scenario)
    builder = _Builder()
    requests = [s for s in scenario.steps if isinstance(s, REQUEST_STEP_TYPES)]
    later_binds = {s.id: s.bind for s in scenario.steps if isinstance(s, CheckResponseStep) and s.bind}
    sent = 0

    class Tracking(_recording_model(builder, table)):  # type: ignore[misc]
        def handle(self, request: Request, callback: ResponseCallback) -> None:
            nonlocal sent
            if sent < len(requests):
                step = requests[sent]
                builder.next_lifeline, bind = _lifeline_of(step, later_binds)
                builder.next_note = f"scenario step {step_index(step)} ({step_op(step)})"
                rid = self._next_request_id
                if bind is not None:
                    builder.pending_binds[rid] = bind
            else:  # not a step of the scenario (cannot happen on the white-box model)
                builder.next_lifeline, builder.next_note = ADMIN, ""
            sent += 1
            super().handle(request, callback)

    def hook(sc: Scenario, index: int, request: Optional[Request], response: Optional[Response]) -> None:
        if request is None:  # a step that is not a request, about to run
            step = sc.steps[index] if 0 <= index < len(sc.steps) else None
            if step is not None:
                extra = f" +{step.ms} ms" if isinstance(step, AdvanceStep) else ""
                builder.next_note = f"scenario step {index} ({step_op(step)}{extra})"

    result = run_scenario(path, scenario, Tracking, hook)
    builder.close()
    violation = None
    notes = [n for n in (scenario.source and f"Source: {scenario.source}", scenario.notes) if n]
    if result.outcome is Outcome.FAIL and result.failure is not None:
        f = result.failure
        violation = Violation("scenario expectation", f"scenario step {f.step_index} ({f.op}) holds on the model",
                              f.describe(), step=len(builder.steps) or None)
    elif result.outcome is Outcome.SKIP:
        notes.append(f"The model skipped this scenario: {result.reason}")
    table_name = table.name if table is not None else "classic"
    initial = snapshot(Group(group_id=_first_group(scenario)), builder.aliases)
    return Trace(title=scenario.name, kind=kind, source=path, table=table_name,
                 clients=tuple(builder.clients), initial=initial, steps=tuple(builder.steps),
                 violation=violation, notes=tuple(notes), aliases=tuple(sorted(builder.aliases.items())))


def _first_group(scenario: object) -> str:
    from conformance.scenario import Scenario

    assert isinstance(scenario, Scenario)
    for s in scenario.steps:
        meta = getattr(s, "meta", None)
        g = getattr(meta, "group", None) or getattr(s, "group", None)
        if isinstance(g, str):
            return g
    return "g"


def lifelines(trace: Trace) -> tuple[str, ...]:
    """The diagram's lifelines, left to right: the clients, the admin, the coordinator."""
    clients = tuple(c for c in trace.clients if c != ADMIN)
    return clients + ((ADMIN,) if ADMIN in trace.clients else ()) + (COORDINATOR,)


__all__ = [
    "ADMIN", "COORDINATOR", "GroupSnapshot", "MemberState", "Message", "Trace", "TraceStep",
    "Violation", "describe_request", "describe_response", "lifelines", "snapshot",
    "trace_of_scenario", "traces_of_scenario_text", "traces_of_scenarios",
]

