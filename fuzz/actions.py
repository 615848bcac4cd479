"""What a fuzzed client does: the fuzzer's dialect of the action vocabulary (conformance.actions).

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
from typing import Final, Optional, Sequence

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

from conformance.actions import (Action, Assign, Commit, Count, Delete, Describe, Dialect, Everyone, Fetch, Gen,
                                 Heartbeat, Hold, Inst, Join, Leave, ListGroups, Pick, Sync, SyncProtocol, Wait, picks)
from conformance.actions import resolve as resolve_action

GHOST: Final = "ghost-member"
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

    def hold_ms(self, hold: Hold) -> int:
        """How long a `Hold` lasts: 0 = one session timeout, 1-3 = longer than the rebalance
        timeout plus the judge's tolerance (so that rebalance and sync timeouts expire while
        sessions stay alive)."""
        s = self.session_ms[0]
        return (s, self.rebalance_ms[1] + 1700, self.rebalance_ms[1] + 2500, 2 * self.rebalance_ms[1] + 2500)[hold.ms]


# The fuzzer's dialect of the action vocabulary (conformance.actions). Its client knows only the
# answers it was given. `who` (JoinGroup): 0-2 = new member (""), 3 = the id handed out last, 4-6 = a
# known id, 7 = a ghost id; `who` (others): 0-5 = a known id, 6 = "", 7 = ghost. `inst` (JoinGroup):
# 0-1 = its own (dynamic for a new member), 2 = i1, 3 = i2; (others): 0-2 = its own, 3 = another one,
# LeaveGroup by that instance id alone. `gen`: 0-2 = the last generation, 3 = one less, 4 = one more,
# 5 = -1 (OffsetCommit only: with member "" a commit without member info). Sync `proto`: 0-2 = the
# group's protocol (v5+), 3 = a protocol name the group does not use. ListGroups `states`: no
# filter, Stable, the other states (v4+; the entry of the client's own group is judged).
# `assign`: 0-1 = every member of the last join, 2 = none. Leave `count`: 0-1 = one member, 2 = every
# known member. `ver`: 0 = the highest version, 1 = the lowest, 2 = a random one (KIP-394 below v4).
# Wait `ms` and Hold `ms` are `Timing`'s.
FUZZ: Final = Dialect(
    kinds={
        Join: {"who": 8, "inst": 4, "proto": len(PROTOCOLS), "session": 5, "rebalance": 2, "ver": 3},
        Sync: {"who": 8, "gen": 5, "assign": 3, "inst": 4, "ver": 3, "proto": 4},
        Heartbeat: {"who": 8, "gen": 5, "inst": 4, "ver": 3},
        Leave: {"who": 8, "inst": 4, "count": 3, "ver": 3},
        Commit: {"who": 8, "gen": 6, "offset": 3, "ver": 3},
        Fetch: {"all": 2, "ver": 3},
        Describe: {"ver": 3},
        Delete: {"ver": 3},
        ListGroups: {"states": 3, "ver": 3},
        Everyone: {"what": 3},
        Wait: {"ms": 4},
        Hold: {"ms": 4},
    },
    weights=(8, 4, 3, 3, 2, 1, 2, 1, 1, 6, 3, 5),
    join_who=picks(Pick.NEW, Pick.NEW, Pick.NEW, Pick.LAST, (Pick.KNOWN, 1), (Pick.KNOWN, 2), (Pick.KNOWN, 3),
                   Pick.GHOST),
    who=picks(*[(Pick.KNOWN, i) for i in range(6)], Pick.NEW, Pick.GHOST),
    join_inst=(Inst.OWN, Inst.OWN, Inst.I1, Inst.I2),
    inst=(Inst.OWN, Inst.OWN, Inst.OWN, Inst.OTHER),
    leave_inst=(Inst.OWN, Inst.OWN, Inst.OWN, Inst.OTHER_ALONE),
    gen=(Gen.SAME, Gen.SAME, Gen.SAME, Gen.OLDER, Gen.NEWER, Gen.MINUS_ONE),  # -1: OffsetCommit only
    assign=(Assign.LAST_JOIN, Assign.LAST_JOIN, Assign.NONE),
    # as far as the version carries it (v5+): the group's, or a protocol name it does not use
    sync_protocol=(SyncProtocol.GROUP, SyncProtocol.GROUP, SyncProtocol.GROUP, SyncProtocol.BOGUS),
    count=(Count.ONE, Count.ONE, Count.ALL),
    protocols=PROTOCOLS,
    partitions=PARTITIONS,
    ghost=GHOST,
    versions=True,
    # Everyone: JoinGroup with its own id, SyncGroup (the leader assigning to every member of the
    # last join), Heartbeat
    everyone=lambda a, leads, instance: (Join(), Sync(assign=0 if leads else 2), Heartbeat())[a.what],
    # ListGroups: every group, the Stable ones, the ones not Stable (Kafka's state names, KIP-518)
    list_states=((), ("Stable",), ("Empty", "PreparingRebalance", "CompletingRebalance")),
)


def random_action(rng: random.Random, commits: bool) -> Action:
    """One action drawn from `rng` (OffsetCommit and OffsetFetch only with `commits`)."""
    return FUZZ.draw(rng, allowed=None if commits else [t for t in FUZZ.types if t not in (Commit, Fetch)])


def action_to_json(a: Action) -> list[object]:
    return FUZZ.to_json(a)


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


Versions = dict[ApiKey, tuple[int, int]]


def _version(versions: Versions, api: ApiKey, choice: int, rng: random.Random, lo: int = 0) -> Optional[int]:
    have = versions.get(api)
    if have is None:
        return None
    a, b = max(have[0], lo), have[1]
    if a > b:
        a, b = have
    return (b, a, rng.randint(a, b))[choice]


@dataclass(frozen=True)
class _Client:
    """The fuzzer's client side of one group (conformance.actions.Client): what it was told, the
    run's timeouts, the target's versions, and the generator that picks among them."""

    k: Knowledge
    timing: Timing
    versions: Versions
    rng: random.Random

    @property
    def dialect(self) -> Dialect:
        return FUZZ

    @property
    def group_id(self) -> str:
        return self.k.group_id

    def known(self) -> list[str]:
        return self.k.ids

    def current(self) -> list[str]:
        return self.k.ids  # a client sees no more of the group than it was told

    def members(self) -> list[str]:
        return self.k.ids[-4:]

    def leader(self) -> str:
        return self.k.leader

    def instance_of(self, member_id: str) -> Optional[str]:
        return self.k.instance_of.get(member_id)

    def generation(self) -> int:
        return self.k.generation

    def last_join(self) -> tuple[str, ...]:
        return self.k.last_members

    def protocol(self) -> tuple[Optional[str], Optional[str]]:
        return self.k.protocol

    def version(self, api: ApiKey, choice: int, lo: int = 0) -> Optional[int]:
        return _version(self.versions, api, choice, self.rng, lo)

    def timeouts(self, session: int, rebalance: int) -> tuple[int, int]:
        return self.timing.session_ms[session], self.timing.rebalance_ms[rebalance]

    def assignments(self, targets: Sequence[str]) -> tuple[tuple[str, bytes], ...]:
        return tuple((x, bytes([i + 1])) for i, x in enumerate(targets))

    def offsets(self, choice: int) -> tuple[tuple[m.TopicPartition, int], ...]:
        return tuple((tp, 10 * (choice + 1) + i) for i, tp in enumerate(PARTITIONS))


def resolve(action: Action, k: Knowledge, timing: Timing, versions: Versions,
            rng: random.Random) -> list[tuple[m.Request, int]]:
    """The requests (and API versions) an action stands for, given what the client knows.
    `rng` only picks among versions; it is seeded per action so resolution is reproducible."""
    return list(resolve_action(action, _Client(k, timing, versions, rng)))


_NO_TIMEOUTS: Final = Timing((), (), ())  # what a heartbeat needs of the run's timing


def hold_heartbeats(k: Knowledge, versions: Versions, rng: random.Random
                    ) -> list[tuple[m.Request, int]]:
    """The heartbeats of a `Hold` round: every known member that is not waiting in JoinGroup (as
    a Java consumer, which pauses its heartbeat thread while it rejoins: a member parked past its
    session timeout must not be expired, since the join keeps it alive)."""
    client = _Client(k, _NO_TIMEOUTS, versions, rng)
    return [r for mid in k.ids[-4:] if mid not in k.joining for r in resolve_action(Heartbeat(), client, mid)]


__all__ = ["Action", "Commit", "Delete", "Describe", "Everyone", "FUZZ", "Fetch", "Heartbeat", "Hold", "Join",
           "Knowledge", "Leave", "ListGroups", "PARTITIONS", "PROTOCOLS", "Sync", "Timing", "Versions", "Wait", "action_to_json",
           "hold_heartbeats", "random_action", "resolve"]
