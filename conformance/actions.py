"""What a client does to a coordinator: the one action vocabulary of every driver that makes up
client behaviour (the lockstep of reference and model with `groupspec soak`, and `groupspec fuzz`).

An action is a small record of integer choices, so that Hypothesis can draw and shrink it (towards
0, the usual valid choice) and a seeded random.Random can draw it. A driver speaks the vocabulary
in its `Dialect`: which actions it draws and how often, which choices of each and how many values
(`kinds`), and what each value means, in the words below: `who` picks a member id (`Pick`), `inst`
an instance id (`Inst`), `gen` a generation (`Gen`), `assign` the members a SyncGroup assigns to.

`resolve` turns an action into the requests it stands for, against what the client side of one
group knows (`Client`): the lockstep's client sees the reference coordinator's groups (and the ids
it has bound), the fuzzer's knows only the answers it was given. Time passing (`Wait`, `Hold`) is
the driver's business: it has no request.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Final, Iterator, Optional, Protocol, Sequence, Union

from model.messages import (DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest,
                            LeaveGroupRequest, ListGroupsRequest, MemberIdentity, OffsetCommitRequest,
                            OffsetFetchRequest, ProtocolMetadata, Request, SyncGroupRequest, TopicPartition)
from model.vocabulary import ApiKey

INSTANCES: Final = ("i1", "i2")
# The version a client without wire versions sends at: the in-process coordinators take every field
# of a record (JoinGroup's version-dependent behaviour is then chosen by `known_id` and `skip`).
IN_PROCESS: Final = 99

# ------------------------------------------------------------------------------------ the actions
#
# One record per kind of action, every field a choice. Every request names one of the driver's
# `group`s and is sent at one of the API versions the target offers (`ver`: 0 the highest, 1 the
# lowest, 2 a random one), where a driver speaks wire versions; a member's request names `who`
# sends it and with which instance id (`inst`), and most a generation (`gen`). A JoinGroup's
# version-dependent behaviour is `known_id` (0: JoinGroup v0-3, no MEMBER_ID_REQUIRED) and `skip`
# (JoinGroup v9, KIP-814) where the driver speaks no versions. A driver's groups never have the
# empty id: on a broker that group is shared by every run (wire/target.py cannot prefix it), and
# what it does (INVALID_GROUP_ID, the */invalid-group-id rows) is small enough for a scenario
# (limits-and-validation.json) and one run of check/plan.py.


@dataclass(frozen=True, slots=True)
class _Request:
    group: int = 0
    ver: int = 0


@dataclass(frozen=True, slots=True)
class _MemberRequest(_Request):
    who: int = 0
    inst: int = 0


@dataclass(frozen=True, slots=True)
class _GenerationRequest(_MemberRequest):
    gen: int = 0


@dataclass(frozen=True, slots=True)
class Join(_MemberRequest):
    proto: int = 0  # the driver's protocol list: type and protocols offered
    session: int = 0  # the client's session timeouts
    rebalance: int = 0  # the client's rebalance timeouts
    known_id: int = 1
    skip: int = 1


@dataclass(frozen=True, slots=True)
class Sync(_GenerationRequest):
    assign: int = 0
    proto: int = 0  # the protocol type and name it names (SyncGroup v5+)


@dataclass(frozen=True, slots=True)
class Heartbeat(_GenerationRequest):
    pass


@dataclass(frozen=True, slots=True)
class Leave(_MemberRequest):
    count: int = 0  # how many members leave
    who2: int = 1  # the second member, when two leave
    inst2: int = 0


@dataclass(frozen=True, slots=True)
class Commit(_GenerationRequest):
    offset: int = 0  # which offsets (the client's `offsets`)


@dataclass(frozen=True, slots=True)
class Fetch(_Request):
    all: int = 0  # 0: every committed partition, 1: the driver's partitions


@dataclass(frozen=True, slots=True)
class Describe(_Request):
    pass


@dataclass(frozen=True, slots=True)
class Delete(_Request):
    pass


@dataclass(frozen=True, slots=True)
class ListGroups(_Request):
    """ListGroups (every group the coordinator has; a driver judges the entry of its own)."""

    states: int = 0  # the states filter (the dialect's `list_states`; v4+, KIP-518)


@dataclass(frozen=True, slots=True)
class Everyone:
    """Every member the client knows does the same valid thing, in member order: 0 = JoinGroup
    (its own id and instance id), 1 = SyncGroup at the current generation, 2 = Heartbeat. This makes
    the cooperative paths (to Stable and back) as likely as the odd requests."""

    group: int = 0
    what: int = 0
    proto: int = 0  # the JoinGroup's protocols


@dataclass(frozen=True, slots=True)
class Wait:
    """Time passes: one of the driver's waits."""

    ms: int = 0


@dataclass(frozen=True, slots=True)
class Hold:
    """Time passes while every known member heartbeats, as live consumers do (the fuzzer's)."""

    ms: int = 0


Action = Union[Join, Sync, Heartbeat, Leave, Commit, Fetch, Describe, Delete, ListGroups, Everyone, Wait, Hold]

# ------------------------------------------------------------------------------ what choices mean


class Pick(enum.Enum):
    """Which member id a request names."""

    NEW = "new"  # "": a member the coordinator does not know yet
    GHOST = "ghost"  # an id no coordinator ever made
    LAST = "last"  # the id the client was told last (the second half of a KIP-394 join)
    KNOWN = "known"  # an id the client was told, by position (choice modulo their number)
    CURRENT = "current"  # one that is in the group now, by position (a client that can see it)


class Inst(enum.Enum):
    """Which group instance id a request names."""

    OWN = "own"  # the member's own (None for a dynamic member)
    NONE = "none"
    I1 = "i1"
    I2 = "i2"
    OTHER = "other"  # an instance id that is not its own
    OTHER_ALONE = "other-alone"  # LeaveGroup v3+ by another instance id alone, no member id


class Gen(enum.Enum):
    """Which generation a request names."""

    SAME = "same"  # the generation the client knows
    OLDER = "older"
    NEWER = "newer"
    MINUS_ONE = "minus-one"


class Assign(enum.Enum):
    """The members a SyncGroup hands assignments to."""

    MEMBERS = "members"  # the client's members (those of an `Everyone`)
    LAST_JOIN = "last-join"  # the members of the last JoinGroup it led
    SELF = "self"
    NONE = "none"


class SyncProtocol(enum.Enum):
    """The protocol type and name a SyncGroup names (v5+)."""

    NONE = "none"
    GROUP = "group"  # the group's protocol type and name, as the client knows them
    BOGUS = "bogus"  # a protocol name the group does not use


class Count(enum.Enum):
    """How many members a LeaveGroup names."""

    ONE = "one"
    TWO = "two"  # `who`/`inst` and `who2`/`inst2`
    ALL = "all"  # every member the client knows (at most four)


Choice = tuple[Pick, int]  # a member pick with its position (for KNOWN and CURRENT)


@dataclass(frozen=True)
class Dialect:
    """How one driver speaks the vocabulary (see the module docstring)."""

    kinds: dict[type, dict[str, int]]  # action -> the choices it draws and how many values, in order
    weights: tuple[int, ...]  # relative frequency of each kind in random runs
    join_who: tuple[Choice, ...]
    who: tuple[Choice, ...]
    join_inst: tuple[Inst, ...]
    inst: tuple[Inst, ...]
    leave_inst: tuple[Inst, ...]
    gen: tuple[Gen, ...]
    assign: tuple[Assign, ...]
    sync_protocol: tuple[SyncProtocol, ...]
    count: tuple[Count, ...]
    protocols: tuple[tuple[str, tuple[ProtocolMetadata, ...]], ...]  # protocol type, protocols offered
    partitions: tuple[TopicPartition, ...]
    ghost: str
    versions: bool  # speaks wire versions (`ver`), else JoinGroup's behaviour is `known_id`/`skip`
    # what one member does in an Everyone: (the action, whether it leads, its instance id at the start)
    everyone: Callable[[Everyone, bool, Optional[str]], Action]
    # ListGroups `states`: the states filter of each value (() lists every group)
    list_states: tuple[tuple[str, ...], ...] = ((),)

    def __post_init__(self) -> None:
        """Every choice value the dialect draws, and every default it leaves, has a meaning."""
        if len(self.weights) != len(self.kinds):
            raise ValueError(f"{len(self.weights)} weights for {len(self.kinds)} kinds of action")
        for kind, drawn in self.kinds.items():
            default = kind()
            for f in fields(kind):
                have = self.meanings(kind, f.name)
                values = drawn.get(f.name, getattr(default, f.name) + 1)  # an undrawn choice keeps its default
                if have is not None and values > have:
                    raise ValueError(f"{kind.__name__}.{f.name}: {values} values, {have} with a meaning")

    def meanings(self, kind: type, choice: str) -> Optional[int]:
        """How many values of `choice` (of actions of `kind`) mean something in this dialect's
        tables (None: the client's own, such as timeouts and versions)."""
        tables: dict[str, Sequence[object]] = {
            "who": self.join_who if kind is Join else self.who, "who2": self.who,
            "inst": self.join_inst if kind is Join else self.leave_inst if kind is Leave else self.inst,
            "inst2": self.leave_inst, "gen": self.gen, "assign": self.assign, "count": self.count,
            "proto": self.protocols if kind in (Join, Everyone) else self.sync_protocol, "what": (0, 1, 2),
            "states": self.list_states,
        }
        table = tables.get(choice)
        return None if table is None else len(table)

    @property
    def types(self) -> tuple[type, ...]:
        return tuple(self.kinds)

    def draw(self, rng: random.Random, groups: int = 1, allowed: Optional[Sequence[type]] = None) -> Action:
        """One action with every choice drawn from `rng` (kinds outside `allowed` are drawn again)."""
        while True:
            cls = rng.choices(self.types, self.weights)[0]
            if allowed is None or cls in allowed:
                break
        return self.build(cls, lambda name, n: rng.randrange(groups if name == "group" else n))

    def build(self, cls: type, choose: Callable[[str, int], int]) -> Action:
        """An action of kind `cls` with each of the dialect's choices made by `choose(name, values)`."""
        action: Action = cls(**{name: choose(name, n) for name, n in self.kinds[cls].items()})
        return action

    def strategy(self, cls: type, groups: int) -> Any:
        """A Hypothesis strategy for actions of kind `cls` (uniform choices, shrinking to 0)."""
        from hypothesis import strategies as st

        kw = {name: st.sampled_from(range(groups if name == "group" else n)) for name, n in self.kinds[cls].items()}
        return st.builds(cls, **kw)

    def text(self, a: Action) -> str:
        """`Join(who=0, ...)`: the action as Python, with the dialect's choices."""
        return f"{type(a).__name__}({', '.join(f'{k}={getattr(a, k)}' for k in self.kinds[type(a)])})"

    def to_json(self, a: Action) -> list[object]:
        """`["Join", 0, ...]`: the kind and the dialect's choices, in order."""
        return [type(a).__name__, *[getattr(a, k) for k in self.kinds[type(a)]]]


def picks(*entries: Union[Pick, tuple[Pick, int]]) -> tuple[Choice, ...]:
    """A `who` table: each entry a Pick (position 0) or (Pick, position)."""
    return tuple(e if isinstance(e, tuple) else (e, 0) for e in entries)


# --------------------------------------------------------------------------- resolving an action


class Client(Protocol):
    """What the client side of one group knows, as a driver sees it."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def group_id(self) -> str: ...

    def known(self) -> list[str]:
        """The member ids it was told, in the order it learnt them."""

    def current(self) -> list[str]:
        """The known ids in the group now, as far as it can see."""

    def members(self) -> list[str]:
        """The members that act in an `Everyone`."""

    def leader(self) -> str: ...

    def instance_of(self, member_id: str) -> Optional[str]: ...

    def generation(self) -> int: ...

    def last_join(self) -> tuple[str, ...]:
        """The members of the last JoinGroup it led."""

    def protocol(self) -> tuple[Optional[str], Optional[str]]:
        """The group's protocol type and name, as it knows them."""

    def version(self, api: ApiKey, choice: int, lo: int = 0) -> Optional[int]:
        """The version to send at (at least `lo` if the target has one); None: the target lacks the API."""

    def timeouts(self, session: int, rebalance: int) -> tuple[int, int]:
        """The session and rebalance timeouts of a JoinGroup's choices."""

    def assignments(self, targets: Sequence[str]) -> tuple[tuple[str, bytes], ...]: ...

    def offsets(self, choice: int) -> tuple[tuple[TopicPartition, int], ...]: ...


Resolved = list[tuple[Request, int]]  # requests with the API version each is sent at


def member_of(c: Client, choice: Choice) -> str:
    pick, position = choice
    if pick is Pick.NEW:
        return ""
    if pick is Pick.GHOST:
        return c.dialect.ghost
    pool = c.current() if pick is Pick.CURRENT else c.known()
    if not pool:
        return ""
    return pool[-1] if pick is Pick.LAST else pool[position % len(pool)]


def instance_of(c: Client, member_id: str, inst: Inst) -> Optional[str]:
    if inst in (Inst.OWN, Inst.OTHER, Inst.OTHER_ALONE):
        own = c.instance_of(member_id)
        if inst is Inst.OWN:
            return own
        return INSTANCES[1] if own == INSTANCES[0] else INSTANCES[0]
    return None if inst is Inst.NONE else INSTANCES[0] if inst is Inst.I1 else INSTANCES[1]


def generation_of(c: Client, gen: Gen) -> int:
    g = c.generation()
    return {Gen.SAME: g, Gen.OLDER: g - 1, Gen.NEWER: g + 1, Gen.MINUS_ONE: -1}[gen]


def _join(a: Join, c: Client, member: Optional[str]) -> Resolved:
    d = c.dialect
    mid = member if member is not None else member_of(c, d.join_who[a.who])
    inst = instance_of(c, mid, d.join_inst[a.inst])
    ptype, protocols = d.protocols[a.proto]
    v = c.version(ApiKey.JoinGroup, a.ver, 5 if inst is not None else 0)
    if v is None:
        return []
    known, skip = (v >= 4, v >= 9) if d.versions else (a.known_id != 0, a.skip == 1)
    session, rebalance = c.timeouts(a.session, a.rebalance)
    return [(JoinGroupRequest(c.group_id, mid, ptype, protocols, session, rebalance, inst,
                              require_known_member_id=known, supports_skip_assignment=skip), v)]


def _sync(a: Sync, c: Client, member: Optional[str]) -> Resolved:
    d = c.dialect
    mid = member if member is not None else member_of(c, d.who[a.who])
    inst = instance_of(c, mid, d.inst[a.inst])
    assign = d.assign[a.assign]
    targets = (c.members() if assign is Assign.MEMBERS else c.last_join() if assign is Assign.LAST_JOIN
               else [mid] if assign is Assign.SELF and mid else [])
    assignments = c.assignments(targets)
    protocol = d.sync_protocol[a.proto]
    v = c.version(ApiKey.SyncGroup, a.ver, 3 if inst else 0)
    if v is None:
        return []
    ptype, pname = (None, None) if protocol is SyncProtocol.NONE or v < 5 else (
        c.protocol() if protocol is SyncProtocol.GROUP else ("consumer", "bogus"))
    return [(SyncGroupRequest(c.group_id, mid, generation_of(c, d.gen[a.gen]), inst, ptype, pname, assignments), v)]


def _heartbeat(a: Heartbeat, c: Client, member: Optional[str]) -> Resolved:
    d = c.dialect
    mid = member if member is not None else member_of(c, d.who[a.who])
    inst = instance_of(c, mid, d.inst[a.inst])
    v = c.version(ApiKey.Heartbeat, a.ver, 3 if inst else 0)
    return [] if v is None else [(HeartbeatRequest(c.group_id, mid, generation_of(c, d.gen[a.gen]), inst), v)]


def _leave(a: Leave, c: Client, member: Optional[str]) -> Resolved:
    d = c.dialect
    count = d.count[a.count]
    if count is Count.ALL:
        members = [MemberIdentity(x, c.instance_of(x)) for x in c.known()[-4:]]
    else:
        members = []
        for who, inst in [(a.who, a.inst)] + ([(a.who2, a.inst2)] if count is Count.TWO else []):
            mid = member_of(c, d.who[who])
            how = d.leave_inst[inst]
            members.append(MemberIdentity("" if how is Inst.OTHER_ALONE else mid, instance_of(c, mid, how)))
    leaving = tuple(members) or (MemberIdentity(d.ghost),)
    batch = len(leaving) > 1 or leaving[0].group_instance_id is not None
    v = c.version(ApiKey.LeaveGroup, a.ver, 3 if batch else 0)
    return [] if v is None else [(LeaveGroupRequest(c.group_id, leaving), v)]


def _commit(a: Commit, c: Client, member: Optional[str]) -> Resolved:
    d = c.dialect
    mid = member if member is not None else member_of(c, d.who[a.who])
    v = c.version(ApiKey.OffsetCommit, a.ver, 2)
    if v is None:
        return []
    inst = instance_of(c, mid, d.inst[a.inst]) if v >= 7 else None
    request = OffsetCommitRequest(c.group_id, mid, generation_of(c, d.gen[a.gen]), c.offsets(a.offset), inst)
    return [(request, v)]


def _fetch(a: Fetch, c: Client, member: Optional[str]) -> Resolved:
    v = c.version(ApiKey.OffsetFetch, a.ver, 2 if a.all == 0 else 1)
    return [] if v is None else [(OffsetFetchRequest(c.group_id, None if a.all == 0 else c.dialect.partitions), v)]


def _describe(a: Describe, c: Client, member: Optional[str]) -> Resolved:
    v = c.version(ApiKey.DescribeGroups, a.ver)
    return [] if v is None else [(DescribeGroupsRequest((c.group_id,)), v)]


def _delete(a: Delete, c: Client, member: Optional[str]) -> Resolved:
    v = c.version(ApiKey.DeleteGroups, a.ver)
    return [] if v is None else [(DeleteGroupsRequest((c.group_id,)), v)]


def _list(a: ListGroups, c: Client, member: Optional[str]) -> Resolved:
    states = c.dialect.list_states[a.states]
    v = c.version(ApiKey.ListGroups, a.ver, 4 if states else 0)  # the filter needs v4+
    return [] if v is None else [(ListGroupsRequest(states if v >= 4 else ()), v)]


_RESOLVE: Final[dict[type, Callable[[Any, Client, Optional[str]], Resolved]]] = {
    Join: _join, Sync: _sync, Heartbeat: _heartbeat, Leave: _leave, Commit: _commit, Fetch: _fetch,
    Describe: _describe, Delete: _delete, ListGroups: _list,
}


def resolve(action: Action, c: Client, member: Optional[str] = None) -> Iterator[tuple[Request, int]]:
    """The requests (each with its API version) an action stands for, given what the client knows
    when each is resolved (an `Everyone`'s requests one member at a time, so a driver may send each
    before the next is made); `member` is the member id to use instead of the action's `who`."""
    if not isinstance(action, Everyone):
        if not isinstance(action, (Wait, Hold)):  # time passing is no request
            yield from _RESOLVE[type(action)](action, c, member)
        return
    members = [(mid, c.instance_of(mid)) for mid in c.members()]
    for mid, instance in members:
        yield from resolve(c.dialect.everyone(action, mid == c.leader(), instance), c, mid)


# ------------------------------------------------------------------------------------- requests

# The scenario op of each request (scenario-format.md, "Steps").
_OPS: dict[type, str] = {
    JoinGroupRequest: "join", SyncGroupRequest: "sync", HeartbeatRequest: "heartbeat", LeaveGroupRequest: "leave",
    OffsetCommitRequest: "commit", OffsetFetchRequest: "fetch_offsets", DescribeGroupsRequest: "describe",
    ListGroupsRequest: "list_groups", DeleteGroupsRequest: "delete_groups",
}


def op_of(request: Request) -> str:
    return _OPS[type(request)]


def group_of(request: Request) -> str:
    """The group a request is about ("" for ListGroups)."""
    if isinstance(request, (DescribeGroupsRequest, DeleteGroupsRequest)):
        return request.group_ids[0] if request.group_ids else ""
    return str(getattr(request, "group_id", ""))


def rename_members(request: Request, rename: Callable[[str], str]) -> Request:
    """`request` with every member id it names passed through `rename` (the same request as
    another coordinator knows its members)."""
    if isinstance(request, SyncGroupRequest):
        return replace(request, member_id=rename(request.member_id),
                       assignments=tuple((rename(i), b) for i, b in request.assignments))
    if isinstance(request, (JoinGroupRequest, HeartbeatRequest, OffsetCommitRequest)):
        return replace(request, member_id=rename(request.member_id))
    if isinstance(request, LeaveGroupRequest):
        return replace(request, members=tuple(MemberIdentity(rename(x.member_id), x.group_instance_id)
                                              for x in request.members))
    return request


__all__ = ["Action", "Assign", "Client", "Commit", "Count", "Delete", "Describe", "Dialect", "Everyone", "Fetch",
           "Gen", "Heartbeat", "Hold", "IN_PROCESS", "INSTANCES", "Inst", "Join", "Leave", "ListGroups", "Pick", "Sync",
           "SyncProtocol", "Wait", "generation_of", "group_of", "instance_of", "member_of", "op_of",
           "picks", "rename_members", "resolve"]
