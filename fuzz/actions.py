"""What a fuzzed client does: actions (small integer choices), resolved into requests.

An action is resolved against what the client side knows about its group (`Knowledge`: the member
ids and generations it was told, the members of the last JoinGroup it led), so the same action
list runs against the model (when generating) and against a target (when fuzzing and shrinking).
Choice 0 is the usual valid one; the others are adversarial: unknown, stale and fenced members,
wrong generations, protocol mismatches, empty protocol lists, out-of-range session timeouts,
duplicate static instance ids, leaves of the leader, and every API version the target offers.

`Timing` holds the session/rebalance timeouts a run uses, derived from the configured bounds so
that session and rebalance timeouts expire within a sequence.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Final, Optional, Union

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

GHOST: Final = "ghost-member"
INSTANCES: Final = ("i1", "i2")
PARTITIONS: Final = (m.TopicPartition("fuzz-topic", 0), m.TopicPartition("fuzz-topic", 1))
PROTOCOLS: Final[tuple[tuple[str, tuple[m.ProtocolMetadata, ...]], ...]] = (
    ("consumer", (m.ProtocolMetadata("range", b"\x01"),)),
    ("consumer", (m.ProtocolMetadata("roundrobin", b"\x02"), m.ProtocolMetadata("range", b"\x01"))),
    ("consumer", (m.ProtocolMetadata("roundrobin", b"\x02"),)),  # no common protocol with range
    ("connect", (m.ProtocolMetadata("range", b"\x01"),)),  # wrong protocol type
    ("consumer", ()),  # empty protocol list
)


@dataclass(frozen=True, slots=True)
class Timing:
    session_ms: tuple[int, ...]
    rebalance_ms: tuple[int, ...]
    waits_ms: tuple[int, ...]

    @classmethod
    def for_config(cls, c: CoordinatorConfig, base_ms: int = 600, settle_ms: int = 8500) -> "Timing":
        """Timeouts from the configured bounds. The last wait (only at the end of a sequence) is
        long enough for every timer to be due and for the judge to expect its answers
        (`settle_ms`: the judge's late + process + response tolerances)."""
        lo, hi = c.group_min_session_timeout_ms, c.group_max_session_timeout_ms
        s = max(lo, base_ms)
        sessions = (s, s, min(hi, 2 * s + 7), lo - 1 if lo > 1 else s, hi + 1)
        return cls(session_ms=sessions, rebalance_ms=(s + 333, 2 * s + 501),
                   waits_ms=(50, s // 2, s + 211, 2 * s + 601, 2 * s + 501 + settle_ms))


@dataclass(frozen=True, slots=True)
class Join:
    who: int = 0  # 0-2: new member (""), 3: the id handed out last, 4-6: a known id, 7: a ghost id
    inst: int = 0  # 0-1: dynamic, 2: i1, 3: i2
    proto: int = 0
    session: int = 0
    rebalance: int = 0
    ver: int = 0  # 0: the highest version, 1: the lowest, 2: a random one (KIP-394 below v4)

    RANGES = {"who": 8, "inst": 4, "proto": len(PROTOCOLS), "session": 5, "rebalance": 2, "ver": 3}


@dataclass(frozen=True, slots=True)
class Sync:
    who: int = 0  # 0-5: a known id, 6: "", 7: ghost
    gen: int = 0  # 0-2: the last generation, 3: one less, 4: one more
    assign: int = 0  # 0-1: every member of the last join, 2: none
    inst: int = 0  # 0-2: its own instance id, 3: another one
    ver: int = 0

    RANGES = {"who": 8, "gen": 5, "assign": 3, "inst": 4, "ver": 3}


@dataclass(frozen=True, slots=True)
class Heartbeat:
    who: int = 0
    gen: int = 0
    inst: int = 0
    ver: int = 0

    RANGES = {"who": 8, "gen": 5, "inst": 4, "ver": 3}


@dataclass(frozen=True, slots=True)
class Leave:
    who: int = 0
    inst: int = 0  # 0-2: its own instance id, 3: by instance id only (v3+)
    count: int = 0  # 0-1: one member, 2: every known member
    ver: int = 0

    RANGES = {"who": 8, "inst": 4, "count": 3, "ver": 3}


@dataclass(frozen=True, slots=True)
class Commit:
    who: int = 0
    gen: int = 0
    offset: int = 0
    ver: int = 0

    RANGES = {"who": 8, "gen": 5, "offset": 3, "ver": 3}


@dataclass(frozen=True, slots=True)
class Fetch:
    all: int = 0
    ver: int = 0

    RANGES = {"all": 2, "ver": 3}


@dataclass(frozen=True, slots=True)
class Describe:
    ver: int = 0

    RANGES = {"ver": 3}


@dataclass(frozen=True, slots=True)
class Delete:
    ver: int = 0

    RANGES = {"ver": 3}


@dataclass(frozen=True, slots=True)
class Everyone:
    """Every known member does the same valid thing: 0 JoinGroup, 1 SyncGroup, 2 Heartbeat."""

    what: int = 0

    RANGES = {"what": 3}


@dataclass(frozen=True, slots=True)
class Wait:
    ms: int = 0

    RANGES = {"ms": 4}


@dataclass(frozen=True, slots=True)
class Hold:
    """Time passes while every known member heartbeats (a third of the session timeout apart),
    as live consumers do: rebalance and sync timeouts then expire while sessions stay alive."""

    ms: int = 0  # 0: one session timeout, 1-3: longer than the rebalance timeout plus tolerance

    RANGES = {"ms": 4}

    def duration_ms(self, t: Timing) -> int:
        s = t.session_ms[0]
        return (s, t.rebalance_ms[1] + 1700, t.rebalance_ms[1] + 2500, 2 * t.rebalance_ms[1] + 2500)[self.ms]


Action = Union[Join, Sync, Heartbeat, Leave, Commit, Fetch, Describe, Delete, Everyone, Wait, Hold]
ACTION_TYPES: Final[tuple[type, ...]] = (Join, Sync, Heartbeat, Leave, Commit, Fetch, Describe,
                                         Delete, Everyone, Wait, Hold)
WEIGHTS: Final[tuple[int, ...]] = (8, 4, 3, 3, 2, 1, 2, 1, 6, 3, 5)
NAMES: Final = {cls.__name__: cls for cls in ACTION_TYPES}


def random_action(rng: random.Random, commits: bool) -> Action:
    types, weights = ACTION_TYPES, WEIGHTS
    while True:
        cls = rng.choices(types, weights)[0]
        if commits or cls not in (Commit, Fetch):
            break
    ranges: dict[str, int] = getattr(cls, "RANGES")
    action: Action = cls(**{k: rng.randrange(n) for k, n in ranges.items()})
    return action


def action_to_json(a: Action) -> list[object]:
    ranges: dict[str, int] = getattr(type(a), "RANGES")
    return [type(a).__name__, *[getattr(a, k) for k in ranges]]


def action_from_json(v: list[object]) -> Action:
    cls = NAMES[str(v[0])]
    ranges: dict[str, int] = getattr(cls, "RANGES")
    action: Action = cls(**{k: int(str(x)) for k, x in zip(ranges, v[1:])})
    return action


# ------------------------------------------------------------------------------ client knowledge


@dataclass(slots=True)
class Knowledge:
    """What the client side of one group has been told (never the coordinator's internals)."""

    group_id: str
    ids: list[str] = field(default_factory=list)  # member ids, in the order they were handed out
    instance_of: dict[str, Optional[str]] = field(default_factory=dict)
    generation: int = -1
    last_members: tuple[str, ...] = ()  # members of the last JoinGroup answered to a leader
    protocol: tuple[str, str] = ("consumer", "range")
    leader: str = ""
    # member id -> its JoinGroup still in flight (a Java consumer does not heartbeat meanwhile)
    joining: dict[str, m.JoinGroupRequest] = field(default_factory=dict)

    def sent(self, request: m.Request) -> None:
        """`request` went out: a JoinGroup of a known member keeps it waiting until answered."""
        if isinstance(request, m.JoinGroupRequest) and request.member_id:
            self.joining[request.member_id] = request

    def answered(self, request: m.Request) -> None:
        """`request` is over (answered or failed): its member no longer waits in JoinGroup."""
        if isinstance(request, m.JoinGroupRequest) and self.joining.get(request.member_id) is request:
            del self.joining[request.member_id]

    def learn(self, request: m.Request, response: m.Response) -> None:
        self.answered(request)
        if isinstance(request, m.JoinGroupRequest) and isinstance(response, m.JoinGroupResponse):
            mid = response.member_id
            if mid and mid not in self.instance_of and mid != GHOST:
                self.ids.append(mid)
                self.instance_of[mid] = request.group_instance_id
            if response.error is Error.NONE:
                self.generation = max(self.generation, response.generation_id)
                self.leader = response.leader
                if response.members:
                    self.last_members = tuple(x.member_id for x in response.members)
                if response.protocol_name:
                    self.protocol = (request.protocol_type, response.protocol_name)

    def pick(self, who: int, known_slots: int) -> str:
        """`who` < known_slots: a known id (by position), `known_slots`: "", above: a ghost id."""
        if who < known_slots:
            return self.ids[who % len(self.ids)] if self.ids else ""
        return "" if who == known_slots else GHOST

    def gen(self, choice: int) -> int:
        g = self.generation
        return (g, g, g, g - 1, g + 1)[choice]


Versions = dict[ApiKey, tuple[int, int]]


def _version(versions: Versions, api: ApiKey, choice: int, rng: random.Random,
             lo: int = 0, hi: int = 99) -> Optional[int]:
    have = versions.get(api)
    if have is None:
        return None
    a, b = max(have[0], lo), min(have[1], hi)
    if a > b:
        a, b = have
    return (b, a, rng.randint(a, b))[choice]


def resolve(action: Action, k: Knowledge, timing: Timing, versions: Versions,
            rng: random.Random) -> list[tuple[m.Request, int]]:
    """The requests (and API versions) an action stands for, given what the client knows.
    `rng` only picks among versions; it is seeded per action so resolution is reproducible."""
    g = k.group_id
    out: list[tuple[m.Request, int]] = []
    if isinstance(action, Join):
        mid = k.pick(action.who - 3, 4) if action.who >= 3 else ""
        if action.who == 3 and k.ids:
            mid = k.ids[-1]  # the id handed out last (the second half of a KIP-394 join)
        if action.who == 7:
            mid = GHOST
        inst = (None, None, INSTANCES[0], INSTANCES[1])[action.inst]
        if action.who >= 3 and action.inst < 2 and mid in k.instance_of:
            inst = k.instance_of[mid]
        ptype, protos = PROTOCOLS[action.proto]
        lo = 5 if inst is not None else 0
        v = _version(versions, ApiKey.JoinGroup, action.ver, rng, lo)
        if v is None:
            return []
        out.append((m.JoinGroupRequest(
            g, mid, ptype, protos, timing.session_ms[action.session],
            timing.rebalance_ms[action.rebalance], inst,
            require_known_member_id=v >= 4, supports_skip_assignment=v >= 9), v))
    elif isinstance(action, Sync):
        mid = k.pick(action.who, 6)
        inst = _inst(k, mid, action.inst)
        assign: tuple[tuple[str, bytes], ...] = ()
        if action.assign < 2:
            assign = tuple((x, bytes([i + 1])) for i, x in enumerate(k.last_members))
        v = _version(versions, ApiKey.SyncGroup, action.ver, rng, 3 if inst else 0)
        if v is None:
            return []
        stype: Optional[str] = k.protocol[0] if v >= 5 else None
        pname: Optional[str] = k.protocol[1] if v >= 5 else None
        out.append((m.SyncGroupRequest(g, mid, k.gen(action.gen), inst, stype, pname, assign), v))
    elif isinstance(action, Heartbeat):
        mid = k.pick(action.who, 6)
        inst = _inst(k, mid, action.inst)
        v = _version(versions, ApiKey.Heartbeat, action.ver, rng, 3 if inst else 0)
        if v is not None:
            out.append((m.HeartbeatRequest(g, mid, k.gen(action.gen), inst), v))
    elif isinstance(action, Leave):
        if action.count == 2:
            members = tuple(m.MemberIdentity(x, k.instance_of.get(x)) for x in k.ids[-4:])
        else:
            mid = k.pick(action.who, 6)
            inst = _inst(k, mid, action.inst)
            members = ((m.MemberIdentity("", inst or INSTANCES[0]),) if action.inst == 3
                       else (m.MemberIdentity(mid, inst),))
        if not members:
            members = (m.MemberIdentity(GHOST),)
        batch = len(members) > 1 or members[0].group_instance_id is not None
        v = _version(versions, ApiKey.LeaveGroup, action.ver, rng, 3 if batch else 0)
        if v is not None:
            out.append((m.LeaveGroupRequest(g, members), v))
    elif isinstance(action, Commit):
        mid = k.pick(action.who, 6)
        v = _version(versions, ApiKey.OffsetCommit, action.ver, rng, 2)
        if v is not None:
            offsets = tuple((tp, 10 * (action.offset + 1) + i) for i, tp in enumerate(PARTITIONS))
            out.append((m.OffsetCommitRequest(g, mid, k.gen(action.gen), offsets,
                                              _inst(k, mid, 0) if v >= 7 else None), v))
    elif isinstance(action, Fetch):
        v = _version(versions, ApiKey.OffsetFetch, action.ver, rng, 2 if action.all == 0 else 1)
        if v is not None:
            out.append((m.OffsetFetchRequest(g, None if action.all == 0 else PARTITIONS), v))
    elif isinstance(action, Describe):
        v = _version(versions, ApiKey.DescribeGroups, action.ver, rng)
        if v is not None:
            out.append((m.DescribeGroupsRequest((g,)), v))
    elif isinstance(action, Delete):
        v = _version(versions, ApiKey.DeleteGroups, action.ver, rng)
        if v is not None:
            out.append((m.DeleteGroupsRequest((g,)), v))
    elif isinstance(action, Everyone):
        for mid in k.ids[-4:]:
            inst = k.instance_of.get(mid)
            if action.what == 0:
                out += resolve(Join(who=3), _only(k, mid), timing, versions, rng)
            elif action.what == 1:
                out += resolve(Sync(who=0, assign=0 if mid == k.leader else 2),
                               _only(k, mid), timing, versions, rng)
            else:
                v = _version(versions, ApiKey.Heartbeat, 0, rng, 3 if inst else 0)
                if v is not None:
                    out.append((m.HeartbeatRequest(g, mid, k.generation, inst), v))
    return out


def hold_heartbeats(k: Knowledge, versions: Versions, rng: random.Random
                    ) -> list[tuple[m.Request, int]]:
    """The heartbeats of a `Hold` round: every known member that is not waiting in JoinGroup (as
    a Java consumer, which pauses its heartbeat thread while it rejoins: a member parked past its
    session timeout must not be expired, since the join keeps it alive)."""
    out: list[tuple[m.Request, int]] = []
    for mid in k.ids[-4:]:
        if mid in k.joining:
            continue
        inst = k.instance_of.get(mid)
        v = _version(versions, ApiKey.Heartbeat, 0, rng, 3 if inst else 0)
        if v is not None:
            out.append((m.HeartbeatRequest(k.group_id, mid, k.generation, inst), v))
    return out


def _inst(k: Knowledge, mid: str, choice: int) -> Optional[str]:
    own = k.instance_of.get(mid)
    if choice < 3:
        return own
    return INSTANCES[1] if own == INSTANCES[0] else INSTANCES[0]


def _only(k: Knowledge, mid: str) -> Knowledge:
    """The knowledge seen from one member: its own id first (`who`=0 / 3 pick it)."""
    return Knowledge(k.group_id, [mid], {mid: k.instance_of.get(mid)}, k.generation,
                     k.last_members, k.protocol, k.leader)
