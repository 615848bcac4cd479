"""The state of one group, as the table sees it: immutable records, hashable for exploration.

The same records serve both modes of the model:
- concrete mode: real member ids, timeouts, deadlines on a virtual clock, request ids;
- abstract mode: a bounded set of member ids, every armed timer's deadline collapsed to 0
  (a timer may then fire at any moment while armed), request ids naming the client that sent it.

Kafka keeps this state in `GroupMetadata` and `MemberMetadata` (GM, MM) plus its purgatories
(DelayedJoin, DelayedSync, DelayedHeartbeat). Parked JoinGroup/SyncGroup requests are part of the
state (Kafka's `awaitingJoinCallback`/`awaitingSyncCallback`), so that "every request gets exactly
one response" can be checked.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any, Callable, Final, Optional, TypeVar

from model.messages import ProtocolMetadata, TopicPartition
from model.vocabulary import GroupState, PastableEnum


_T = TypeVar("_T")
_EVOLVERS: dict[type, Callable[..., Any]] = {}
_UNSET: Final = object()


def evolve(record: _T, /, **changes: Any) -> _T:
    """`dataclasses.replace` for the model's frozen records, without its per-call walk over the
    fields: a copy function generated once per class. Same result: these records have no
    `__post_init__` and no `init=False` fields, so the constructor only stores the values, which
    the copy function does directly through the slots; an unknown field name is a TypeError, as
    with `replace`."""
    copy = _EVOLVERS.get(type(record))
    if copy is None:
        copy = _EVOLVERS[type(record)] = _make_evolver(type(record))
    result: _T = copy(record, **changes)
    return result


def _make_evolver(cls: type) -> Callable[..., Any]:
    fs = fields(cls)
    names = [f.name for f in fs]
    if (any(not f.init for f in fs) or any(n.startswith("_dc_") for n in names)
            or hasattr(cls, "__post_init__")):
        raise TypeError(f"evolve does not handle {cls.__name__}")
    params = ", ".join(f"{n}=_dc_unset" for n in names)
    namespace: dict[str, Any] = {"_dc_cls": cls, "_dc_unset": _UNSET, "_dc_new": object.__new__}
    slotted = all(type(cls.__dict__.get(n)).__name__ == "member_descriptor" for n in names)
    if slotted:
        # the slot descriptors store the values without the frozen class's __setattr__ guard
        body = ["    _dc_out = _dc_new(_dc_cls)"]
        for n in names:
            namespace[f"_dc_set_{n}"] = cls.__dict__[n].__set__
            body.append(f"    _dc_set_{n}(_dc_out, _dc_record.{n} if {n} is _dc_unset else {n})")
        body.append("    return _dc_out")
    else:
        args = ", ".join(f"_dc_record.{n} if {n} is _dc_unset else {n}" for n in names)
        body = [f"    return _dc_cls({args})"]
    source = f"def evolve(_dc_record, /, *, {params}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)
    fn: Callable[..., Any] = namespace["evolve"]
    return fn


def record_builder(cls: type[_T]) -> Callable[..., _T]:
    """A constructor for a frozen slotted record without `__post_init__`, `init=False` fields or
    default factories: same parameters and result as `cls(...)`, but the values are stored through
    the slots instead of the frozen class's `__setattr__` guard (for records made once per step)."""
    fs = fields(cls)  # type: ignore[arg-type]
    names = [f.name for f in fs]
    if (any(not f.init or f.default_factory is not MISSING for f in fs)
            or any(n.startswith("_dc_") for n in names) or hasattr(cls, "__post_init__")
            or not all(type(cls.__dict__.get(n)).__name__ == "member_descriptor" for n in names)):
        raise TypeError(f"record_builder does not handle {cls.__name__}")
    namespace: dict[str, Any] = {"_dc_cls": cls, "_dc_new": object.__new__}
    params = []
    body = ["    _dc_out = _dc_new(_dc_cls)"]
    for f in fs:
        if f.default is MISSING:
            params.append(f.name)
        else:
            namespace[f"_dc_default_{f.name}"] = f.default
            params.append(f"{f.name}=_dc_default_{f.name}")
        namespace[f"_dc_set_{f.name}"] = cls.__dict__[f.name].__set__
        body.append(f"    _dc_set_{f.name}(_dc_out, {f.name})")
    body.append("    return _dc_out")
    exec(f"def build({', '.join(params)}):\n" + "\n".join(body) + "\n", namespace)
    fn: Callable[..., _T] = namespace["build"]
    return fn


class JoinTimerKind(PastableEnum):
    """Which delayed operation a JoinTimer is (DJ:34 DelayedJoin, DJ:62 InitialDelayedJoin)."""

    DelayedJoin = "DelayedJoin"
    InitialDelayedJoin = "InitialDelayedJoin"


@dataclass(frozen=True, slots=True)
class ParkedJoin:
    """A JoinGroup whose response is deferred (MM awaitingJoinCallback)."""

    request_id: int
    supports_skip_assignment: bool = True


@dataclass(frozen=True, slots=True)
class Member:
    """MemberMetadata: one member of the group."""

    member_id: str
    instance_id: Optional[str]
    client_id: str
    protocol_type: str
    protocols: tuple[ProtocolMetadata, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    awaiting_join: Optional[ParkedJoin] = None
    awaiting_sync: Optional[int] = None  # request id of a parked SyncGroup
    is_new: bool = False
    assignment: bytes = b""
    # DelayedHeartbeat deadline; None = no timer armed (Kafka: a member parked in JoinGroup or
    # SyncGroup has its heartbeat "satisfied", so it never expires while parked unless it is new).
    session_deadline: Optional[int] = None
    pending_sync: bool = False  # in GroupMetadata.pendingSyncMembers

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.protocols)

    def metadata_for(self, protocol: Optional[str]) -> bytes:
        for p in self.protocols:
            if p.name == protocol:
                return p.metadata
        return b""


@dataclass(frozen=True, slots=True)
class PendingMember:
    """A member id handed out with MEMBER_ID_REQUIRED (KIP-394) that has not joined yet."""

    member_id: str
    deadline: int  # its DelayedHeartbeat (the request's session timeout)


@dataclass(frozen=True, slots=True)
class JoinTimer:
    """A DelayedJoin or InitialDelayedJoin in the rebalance purgatory (DJ:34, DJ:62)."""

    kind: JoinTimerKind
    deadline: int
    delay_ms: int = 0  # InitialDelayedJoin only: this operation's delay
    remaining_ms: int = 0  # InitialDelayedJoin only: what is left of the rebalance timeout


@dataclass(frozen=True, slots=True)
class SyncTimer:
    """A DelayedSync (DS:30, KAFKA-12890), armed when a join phase completes."""

    generation: int
    deadline: int


@dataclass(frozen=True, slots=True)
class PersistedGroup:
    """The last GroupMetadata record appended to __consumer_offsets (what a load resumes from)."""

    state: GroupState  # Stable or Empty
    generation: int
    protocol_type: Optional[str]
    protocol_name: Optional[str]
    leader: Optional[str]
    members: tuple[Member, ...]


@dataclass(frozen=True, slots=True)
class Group:
    """GroupMetadata plus the timers Kafka keeps for it in its purgatories."""

    group_id: str
    state: GroupState = GroupState.Missing
    generation: int = 0
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    leader: Optional[str] = None
    members: tuple[Member, ...] = ()
    pending: tuple[PendingMember, ...] = ()
    # Purgatory contents. Tuples, not options: a defective table that arms a second DelayedJoin
    # must be representable so that `single-delayed-join` can catch it.
    join_timers: tuple[JoinTimer, ...] = ()
    sync_timers: tuple[SyncTimer, ...] = ()
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    persisted: Optional[PersistedGroup] = None
    owned: bool = True  # the coordinator owns the group's __consumer_offsets partition
    # GM newMemberAdded: set by a join during an initial rebalance of a generation-0 group
    # (GC:1329), cleared only when an InitialDelayedJoin extends itself (DJ:62).
    new_member_added: bool = False

    # -- lookups (pure helpers used by atoms, effects and invariants) --

    def member(self, member_id: str) -> Optional[Member]:
        for m in self.members:
            if m.member_id == member_id:
                return m
        return None

    def has_member(self, member_id: str) -> bool:
        return self.member(member_id) is not None

    def has_pending(self, member_id: str) -> bool:
        return any(p.member_id == member_id for p in self.pending)

    def static_member_id(self, instance_id: str) -> Optional[str]:
        """GroupMetadata.getStaticMemberId: the member id an instance id is mapped to."""
        for m in self.members:
            if m.instance_id == instance_id:
                return m.member_id
        return None

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        """GM:392 hasAllMembersJoined."""
        return len(self.members) == self.num_awaiting_join() and not self.pending

    def parked_requests(self) -> frozenset[int]:
        """The request ids of the JoinGroups and SyncGroups parked in the group (not yet answered)."""
        joins = {m.awaiting_join.request_id for m in self.members if m.awaiting_join is not None}
        return frozenset(joins | {m.awaiting_sync for m in self.members if m.awaiting_sync is not None})

    def rebalance_timeout_ms(self) -> int:
        """GM:412: the largest rebalance timeout of the current members."""
        return max((m.rebalance_timeout_ms for m in self.members), default=0)

    def with_member(self, member: Member) -> "Group":
        """Replace the member with the same id (keeping its position), or append it."""
        out = []
        found = False
        for m in self.members:
            if m.member_id == member.member_id:
                out.append(member)
                found = True
            else:
                out.append(m)
        if not found:
            out.append(member)
        return evolve_group(self, members=tuple(out))

    def without_member(self, member_id: str) -> "Group":
        return evolve_group(self, members=tuple(m for m in self.members if m.member_id != member_id))


# `evolve` for one class, without the dispatch on the type (for the step function's hot paths).
evolve_group: Final[Callable[..., Group]] = _EVOLVERS.setdefault(Group, _make_evolver(Group))
evolve_member: Final[Callable[..., Member]] = _EVOLVERS.setdefault(Member, _make_evolver(Member))


@dataclass(frozen=True, slots=True)
class Input:
    """One thing the table reacts to: a request (or one LeaveGroup member) or an internal event.

    `kind` is the table's event column: an ApiKey name ("JoinGroup", ...) or a TimerEvent name.
    """

    kind: str
    request: object = None  # a model.messages request record for API kinds
    member_id: Optional[str] = None  # the member a timer or LeaveGroup item is about
    instance_id: Optional[str] = None  # LeaveGroup item's instance id
    request_id: int = 0


@dataclass(frozen=True, slots=True)
class Settings:
    """What the table's guards may read besides the group and the input (broker configuration)."""

    min_session_timeout_ms: int
    max_session_timeout_ms: int
    group_max_size: int
    initial_rebalance_delay_ms: int
    new_member_join_timeout_ms: int
    append_ok: bool = True
    append_error: object = None  # model.vocabulary.Error when not append_ok
