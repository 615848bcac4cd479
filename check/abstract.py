"""The abstract mode: a bounded world of one group and its clients, for exhaustive exploration.

A *world* is the group plus one record per client. Clients are the actors:
- closed mode: each client follows the Java consumer's protocol (join, MEMBER_ID_REQUIRED rejoin,
  sync, then heartbeat / commit / leave; rejoin on REBALANCE_IN_PROGRESS; reset its member id on
  UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION; stop when fenced), plus crashes;
- open mode: any client sends any request with any member id it could know, any generation near
  the group's, and either metadata variant, at any time.
Timers fire nondeterministically while armed (AbstractMode collapses deadlines to 0).

Dynamic client i is `c<i>` (member ids `c<i>#k`), static client j is `s<j>` (instance id `s<j>`);
a client's request id is 1 + index + clients * epoch, so responses can be routed back to it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional

from model.dsl import Guard, Superseded, Table
from model.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, ListGroupsRequest,
    OffsetFetchRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, MemberIdentity,
    OffsetCommitRequest, ProtocolMetadata, Response, SyncGroupRequest, TopicPartition
)
from model.modes import AbstractMode
from model.state import Group, Input, JoinTimerKind, Member, PersistedGroup, Settings
from model.step import Transition, step_all
from model.vocabulary import Error, GroupState, TimerEvent

FAULTS = ("session", "rebalance", "unload", "lost", "crash", "offsets", "stall", "append",
          "impersonate")
APPEND_KINDS = frozenset({"JoinGroup", "SyncGroup", "OffsetCommit"})
# Edges that count as faults for the liveness property. "stall" is KAFKA-12890's client: it got
# its JoinGroup response and then only heartbeats, never sending SyncGroup.
# "impersonate" is a static client joining with another member's pending id (a client bug).
FAULT_KINDS = frozenset({"crash", "lost", "stall", "impersonate", "PartitionUnload",
                         "OffsetsExpire"})

# Protocol lists a client may send: two metadata variants of "range", and a list that prefers
# "roundrobin" (a static restart with it changes the selected protocol).
PROTOCOLS = ((ProtocolMetadata("range", b"\x00"),), (ProtocolMetadata("range", b"\x01"),),
             (ProtocolMetadata("roundrobin", b"\x00"), ProtocolMetadata("range", b"\x00")))
PARTITION = TopicPartition("t", 0)
SESSION_MS = 10000
REBALANCE_MS = 30000


@dataclass(frozen=True, slots=True)
class Bounds:
    dynamic: int = 3
    static: int = 0
    max_generation: int = 3
    faults: frozenset[str] = frozenset(FAULTS)
    mode: str = "closed"
    require_known_member_id: bool = True
    max_ids_per_client: int = 2
    group_max_size: int = 1 << 30
    # Closed mode: a stable client may rejoin with changed metadata (a subscription change).
    metadata_changes: bool = False
    # The group's id. "" is the empty id (GC:1159 isValidGroupId): JoinGroup, SyncGroup,
    # Heartbeat and LeaveGroup are refused, only OffsetCommit creates the group.
    group_id: str = "g"

    def describe(self) -> str:
        ids = f"{self.max_ids_per_client} member id{'s' if self.max_ids_per_client != 1 else ''}"
        return (f"{self.mode} mode, {self.dynamic} dynamic + {self.static} static members, "
                f"generation <= {self.max_generation}, at most {ids} per client, "
                f"faults {sorted(self.faults) or 'none'}"
                + (f", group id {self.group_id!r}" if self.group_id != "g" else ""))


@dataclass(frozen=True, slots=True)
class Client:
    phase: str = "idle"  # idle | joining | to-sync | syncing | stable | stalled | stopped
    member_id: str = ""
    generation: int = -1
    leader: bool = False
    roster: tuple[str, ...] = ()
    # Chosen at a crash so that requests the client's previous lives left parked at the
    # coordinator keep distinct request ids, and their late answers are not routed to it.
    epoch: int = 0


@dataclass(frozen=True, slots=True)
class World:
    group: Group
    clients: tuple[Client, ...]


@dataclass(frozen=True, slots=True)
class Action:
    """One enabled move: a client request, a timer, a fault; `client` is -1 for coordinator events."""

    kind: str
    client: int = -1
    request: object = None
    member_id: Optional[str] = None
    variant: tuple[bool, ...] = ()  # which delivered responses are lost (fault "lost")
    append_fails: bool = False  # the log append fails while this request is handled

    def label(self, bounds: "Bounds") -> str:
        who = (client_name(bounds, self.client) if self.client >= 0 else
               "admin" if self.kind == "admin" else "coordinator")
        if self.request is not None:
            fails = " [log append fails: NOT_LEADER_OR_FOLLOWER]" if self.append_fails else ""
            return f"{who} -> {render_request(self.request)}{fails}"
        if self.member_id is not None:
            return f"{who}: {self.kind}({self.member_id})"
        return f"{who}: {self.kind}"


@dataclass(slots=True)
class Successor:
    action: Action
    world: World
    transition: Optional[Transition]
    fault: bool
    index: int = 0
    notes: list[str] = field(default_factory=list)


def client_name(b: Bounds, i: int) -> str:
    return f"c{i}" if i < b.dynamic else f"s{i - b.dynamic}"


def render_request(r: object) -> str:
    if isinstance(r, JoinGroupRequest):
        meta = r.protocols[0].metadata.hex() if r.protocols else ""
        inst = f", instance={r.group_instance_id}" if r.group_instance_id else ""
        return f"JoinGroup(member={r.member_id!r}{inst}, metadata={meta})"
    if isinstance(r, SyncGroupRequest):
        return (f"SyncGroup(member={r.member_id!r}, generation={r.generation_id}, "
                f"assignments={len(r.assignments)})")
    if isinstance(r, HeartbeatRequest):
        return f"Heartbeat(member={r.member_id!r}, generation={r.generation_id})"
    if isinstance(r, OffsetCommitRequest):
        return f"OffsetCommit(member={r.member_id!r}, generation={r.generation_id})"
    if isinstance(r, LeaveGroupRequest):
        return f"LeaveGroup(members={[m.member_id or m.group_instance_id for m in r.members]})"
    return repr(r)


def render_response(r: Response) -> str:
    if isinstance(r, JoinGroupResponse):
        if r.error == Error.NONE:
            return (f"JoinGroup {r.error.name} generation={r.generation_id} member={r.member_id} "
                    f"leader={r.leader} members={len(r.members)}"
                    + (" skipAssignment" if r.skip_assignment else ""))
        return f"JoinGroup {r.error.name} member={r.member_id!r}"
    err = getattr(r, "error", None)
    if isinstance(err, Error):
        return f"{type(r).__name__.replace('Response', '')} {err.name}"
    return repr(r)


class AbstractModel:
    """Generates the successors of a world under the bounds, through the table."""

    def __init__(self, table: Table, urgent: tuple[tuple[str, Guard], ...], bounds: Bounds) -> None:
        self.table = table
        self.urgent = urgent
        self.bounds = bounds
        self.mode = AbstractMode()
        self.settings = Settings(
            min_session_timeout_ms=6000, max_session_timeout_ms=1800000,
            group_max_size=bounds.group_max_size, initial_rebalance_delay_ms=3000,
            new_member_join_timeout_ms=300000)
        self.failing_settings = replace(self.settings, append_ok=False,
                                        append_error=Error.NOT_LEADER_OR_FOLLOWER)
        self.n = bounds.dynamic + bounds.static
        self.gid = bounds.group_id

    # -- the initial world ----------------------------------------------------------------

    def initial(self) -> World:
        return World(Group(group_id=self.bounds.group_id), tuple(Client() for _ in range(self.n)))

    def is_static(self, i: int) -> bool:
        return i >= self.bounds.dynamic

    def base(self, i: int) -> str:
        return client_name(self.bounds, i)

    # -- enabled actions --------------------------------------------------------------------

    def actions(self, w: World) -> Iterator[Action]:
        b = self.bounds
        if b.mode == "closed":
            for i, c in enumerate(w.clients):
                yield from self._client_actions(w, i, c)
        else:
            for i in range(self.n):
                yield from self._open_actions(w, i)
        yield from self._admin_actions(w)
        yield from self._timer_actions(w)

    def _admin_actions(self, w: World) -> Iterator[Action]:
        """An administrator's read-only requests, and DeleteGroups (client index -1)."""
        yield Action("admin", -1, DescribeGroupsRequest((self.gid,)))
        yield Action("admin", -1, ListGroupsRequest())
        yield Action("admin", -1, ListGroupsRequest(("Empty",)))
        yield Action("admin", -1, ListGroupsRequest(("Stable",)))
        yield Action("admin", -1, OffsetFetchRequest(self.gid, (PARTITION,)))
        yield Action("admin", -1, DeleteGroupsRequest((self.gid,)))

    def _join(self, i: int, member_id: str, variant: int = 0) -> JoinGroupRequest:
        static = self.is_static(i)
        return JoinGroupRequest(
            group_id=self.gid, member_id=member_id, protocol_type="consumer",
            protocols=PROTOCOLS[variant], session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            group_instance_id=self.base(i) if static else None,
            require_known_member_id=self.bounds.require_known_member_id and not static,
            supports_skip_assignment=True, client_id=self.base(i))

    def _instance(self, i: int) -> Optional[str]:
        return self.base(i) if self.is_static(i) else None

    def _client_actions(self, w: World, i: int, c: Client) -> Iterator[Action]:
        faults = self.bounds.faults
        if c.phase == "idle":
            yield Action("send", i, self._join(i, c.member_id))
            if c.member_id and not self.is_static(i):
                # close() after MEMBER_ID_REQUIRED: the consumer leaves with the id it was given.
                yield Action("send", i, LeaveGroupRequest(self.gid, (MemberIdentity(c.member_id),)))
        elif c.phase == "to-sync":
            assigns = tuple((m, b"a") for m in c.roster) if c.leader else ()
            yield Action("send", i, SyncGroupRequest(self.gid, c.member_id, c.generation,
                                                      self._instance(i), "consumer", "range",
                                                      assigns))
        elif c.phase == "stalled":
            yield Action("send", i, HeartbeatRequest(self.gid, c.member_id, c.generation,
                                                      self._instance(i)))
        elif c.phase == "stable":
            yield Action("send", i, HeartbeatRequest(self.gid, c.member_id, c.generation,
                                                      self._instance(i)))
            if self.bounds.metadata_changes:
                yield Action("send", i, self._join(i, c.member_id, 1))
            yield Action("send", i, OffsetCommitRequest(self.gid, c.member_id, c.generation,
                                                         ((PARTITION, 1),), self._instance(i)))
            if not self.is_static(i):
                yield Action("send", i, LeaveGroupRequest(self.gid, (MemberIdentity(c.member_id),)))
        elif c.phase in ("joining", "syncing") and not self._parked(w, i):
            # The coordinator will never answer (dropped, superseded or lost): request timeout.
            yield Action("request-timeout", i)
        if "impersonate" in faults and c.phase == "idle" and self.is_static(i):
            for p in w.group.pending[:1]:
                yield Action("impersonate", i, self._join(i, p.member_id))
        if "stall" in faults and c.phase == "to-sync":
            yield Action("stall", i)
        if "crash" in faults and c.phase not in ("idle", "stopped") or (
                "crash" in faults and c.phase == "idle" and c.member_id != ""):
            yield Action("crash", i)

    def _open_actions(self, w: World, i: int) -> Iterator[Action]:
        """Anything a misbehaving client could send: its own ids and "", a static client also
        another member's id (fencing, a pending id with an instance id), stale generations, bad
        session timeouts, a foreign protocol type or name, commits without member information."""
        g = w.group
        base = self.base(i)
        inst = self._instance(i)
        own = [m.member_id for m in g.members if m.member_id.split("#")[0] == base] + \
              [p.member_id for p in g.pending if p.member_id.split("#")[0] == base]
        foreign = (sorted({m.member_id for m in g.members} | {p.member_id for p in g.pending}
                          - set(own))[:1] if inst is not None else []) + [f"{base}#9"]
        gens = sorted({g.generation, g.generation - 1, -1})
        yield Action("send", i, replace(self._join(i, ""), session_timeout_ms=1))
        for mid in [""] + own + foreign:
            for v in range(len(PROTOCOLS)):
                yield Action("send", i, self._join(i, mid, v))
            yield Action("send", i, replace(self._join(i, mid), protocol_type="connect"))
            yield Action("send", i, replace(self._join(i, mid), protocol_type=""))
            if mid == "":
                continue
            for gen in gens:
                yield Action("send", i, SyncGroupRequest(
                    self.gid, mid, gen, inst, "consumer", "range",
                    tuple((m.member_id, b"a") for m in g.members)))
                yield Action("send", i, HeartbeatRequest(self.gid, mid, gen, inst))
                yield Action("send", i, OffsetCommitRequest(self.gid, mid, gen, ((PARTITION, 1),), inst))
            yield Action("send", i, SyncGroupRequest(self.gid, mid, g.generation, inst, "consumer",
                                                      "roundrobin"))
            yield Action("send", i, LeaveGroupRequest(self.gid, (MemberIdentity(mid, inst),)))
        if inst is not None:
            yield Action("send", i, LeaveGroupRequest(self.gid, (MemberIdentity("", inst),)))
        elif i == 0:
            yield Action("send", i, OffsetCommitRequest(self.gid, "", -1, ((PARTITION, 1),)))
            yield Action("send", i, LeaveGroupRequest(self.gid, (MemberIdentity("", "unknown"),)))

    def _timer_actions(self, w: World) -> Iterator[Action]:
        g, faults = w.group, self.bounds.faults
        for t in g.join_timers[:1]:
            if t.kind == JoinTimerKind.InitialDelayedJoin:
                yield Action(TimerEvent.InitialDelayedJoinExpire.value)
            elif "rebalance" in faults:
                yield Action(TimerEvent.DelayedJoinExpire.value)
        if g.sync_timers and "rebalance" in faults:
            yield Action(TimerEvent.DelayedSyncExpire.value)
        if "session" in faults:
            for m in g.members:
                if m.session_deadline is not None:
                    yield Action(TimerEvent.MemberSessionExpire.value, member_id=m.member_id)
            for p in g.pending:
                yield Action(TimerEvent.PendingMemberExpire.value, member_id=p.member_id)
        if "unload" in faults:
            if g.owned:
                yield Action(TimerEvent.PartitionUnload.value)
            if not g.owned:
                yield Action(TimerEvent.PartitionLoad.value)
        if "offsets" in faults and g.state == GroupState.Empty:
            yield Action(TimerEvent.OffsetsExpire.value)

    def request_id(self, w: World, i: int) -> int:
        if self.bounds.mode == "open":
            # Requests are not tied to a client's life: the smallest id nothing parked uses.
            used = {m.awaiting_join.request_id for m in w.group.members if m.awaiting_join}
            used |= {m.awaiting_sync for m in w.group.members if m.awaiting_sync is not None}
            rid = 1
            while rid in used:
                rid += 1
            return rid
        return 1 + i + self.n * w.clients[i].epoch

    def _parked(self, w: World, i: int) -> bool:
        g = w.group
        rid = self.request_id(w, i)
        return any((m.awaiting_join is not None and m.awaiting_join.request_id == rid)
                   or m.awaiting_sync == rid for m in g.members)

    # -- successors -------------------------------------------------------------------------

    def successors(self, w: World) -> list[Successor]:
        out: list[Successor] = []
        for a in self.actions(w):
            for v in self.variants(a):
                out.extend(self.apply(w, v))
        return out

    def variants(self, a: Action) -> list[Action]:
        """The action, plus the same request with its __consumer_offsets append failing when the
        `append` fault is on and the request appends (JoinGroup, SyncGroup, OffsetCommit)."""
        if ("append" in self.bounds.faults and a.kind == "send"
                and type(a.request).__name__.replace("Request", "") in APPEND_KINDS):
            return [a, replace(a, append_fails=True)]
        return [a]

    def apply(self, w: World, a: Action) -> list[Successor]:
        if a.kind == "crash":
            used = {m.awaiting_join.request_id for m in w.group.members if m.awaiting_join}
            used |= {m.awaiting_sync for m in w.group.members if m.awaiting_sync is not None}
            epoch = 0
            while 1 + a.client + self.n * epoch in used:
                epoch += 1
            c = Client(epoch=epoch)
            return [Successor(a, World(w.group, _set(w.clients, a.client, c)), None, True)]
        if a.kind == "stall":
            c = replace(w.clients[a.client], phase="stalled")
            return [Successor(a, World(w.group, _set(w.clients, a.client, c)), None, True)]
        if a.kind == "request-timeout":
            c = replace(w.clients[a.client], phase="idle")
            return [Successor(a, World(w.group, _set(w.clients, a.client, c)), None, False)]
        if a.kind in ("send", "impersonate"):
            inp = Input(kind=type(a.request).__name__.replace("Request", ""), request=a.request,
                        request_id=self.request_id(w, a.client))
        elif a.kind == "admin":
            inp = Input(kind=type(a.request).__name__.replace("Request", ""), request=a.request,
                        request_id=0)
        else:
            inp = Input(kind=a.kind, member_id=a.member_id)
        out = []
        settings = self.failing_settings if a.append_fails else self.settings
        for idx, t in enumerate(step_all(self.table, self.urgent, w.group, inp, settings, 0,
                                         self.mode)):
            group = _normalize(t.after)
            for lost in self._loss_variants(w, t, a):
                clients = self._deliver(w, a, t, lost)
                fault = (a.kind in FAULT_KINDS or any(lost) or a.append_fails
                         or self._expires_live_member(w, a))
                act = a if lost == a.variant else replace(a, variant=lost)
                out.append(Successor(act, World(group, clients), t, fault, idx))
        return out

    def _expires_live_member(self, w: World, a: Action) -> bool:
        """A session expiry of a member whose client is alive and heartbeating is a fault (the
        abstract timers fire at any time; in reality a live client's heartbeats keep it in)."""
        if a.kind != TimerEvent.MemberSessionExpire.value or self.bounds.mode == "open":
            return False
        return any(c.member_id == a.member_id and c.phase in ("stable", "stalled", "to-sync")
                   for c in w.clients)

    def _deliveries(self, w: World, t: Transition, a: Action) -> list[tuple[int, Response]]:
        """Responses that reach a live client (answers to a crashed life's requests do not)."""
        out: list[tuple[int, Response]] = []
        if a.kind in ("send", "impersonate") and t.reply is not None:
            out.append((a.client, t.reply))
        for o in t.outputs:
            if isinstance(o.response, Superseded) or o.request_id < 1:
                continue
            i = (o.request_id - 1) % self.n
            if o.request_id == self.request_id(w, i):
                out.append((i, o.response))
        return out

    def _loss_variants(self, w: World, t: Transition, a: Action) -> list[tuple[bool, ...]]:
        n = len(self._deliveries(w, t, a))
        if "lost" not in self.bounds.faults or self.bounds.mode == "open" or n == 0:
            return [tuple(False for _ in range(n))]
        return [tuple(v) for v in itertools.product((False, True), repeat=n)]

    def _deliver(self, w: World, a: Action, t: Transition,
                 lost: tuple[bool, ...]) -> tuple[Client, ...]:
        cs = list(w.clients)
        if self.bounds.mode == "open":
            return w.clients
        if a.kind in ("send", "impersonate"):
            c = cs[a.client]
            r = a.request
            if isinstance(r, JoinGroupRequest):
                cs[a.client] = replace(c, phase="joining")
            elif isinstance(r, SyncGroupRequest):
                cs[a.client] = replace(c, phase="syncing")
            elif isinstance(r, LeaveGroupRequest):
                cs[a.client] = Client(epoch=c.epoch)
        for (i, resp), is_lost in zip(self._deliveries(w, t, a), lost):
            cs[i] = self._react(cs[i], resp, is_lost)
        return tuple(cs)

    def _react(self, c: Client, r: Response, lost: bool) -> Client:
        """The Java consumer's reaction to a response (AbstractCoordinator's handlers)."""
        if c.phase == "idle":
            return c  # a LeaveGroup answer: the client is already gone
        if lost:
            return replace(c, phase="idle") if c.phase in ("joining", "syncing") else c
        err = getattr(r, "error", Error.NONE)
        if isinstance(r, JoinGroupResponse):
            if err == Error.NONE:
                return Client("to-sync", r.member_id, r.generation_id,
                              r.leader == r.member_id and not r.skip_assignment,
                              tuple(m.member_id for m in r.members), c.epoch)
            if err == Error.MEMBER_ID_REQUIRED:
                return Client("idle", r.member_id, epoch=c.epoch)
        if err == Error.NONE:
            return replace(c, phase="stable") if c.phase == "syncing" else c
        if c.phase == "stalled" and err == Error.REBALANCE_IN_PROGRESS:
            return c
        if err in (Error.FENCED_INSTANCE_ID, Error.GROUP_MAX_SIZE_REACHED,
                   Error.INCONSISTENT_GROUP_PROTOCOL):
            return Client("stopped", epoch=c.epoch)
        if err in (Error.UNKNOWN_MEMBER_ID, Error.ILLEGAL_GENERATION):
            return Client("idle", epoch=c.epoch)
        if err == Error.REBALANCE_IN_PROGRESS or c.phase in ("joining", "syncing"):
            return replace(c, phase="idle")
        return c

    # -- bounds -----------------------------------------------------------------------------

    def within_bounds(self, w: World) -> bool:
        g = w.group
        if g.generation > self.bounds.max_generation:
            return False
        counts: dict[str, int] = {}
        for mid in [m.member_id for m in g.members] + [p.member_id for p in g.pending]:
            base = mid.split("#")[0]
            counts[base] = counts.get(base, 0) + 1
        return all(v <= self.bounds.max_ids_per_client for v in counts.values())


def _set(t: tuple[Client, ...], i: int, c: Client) -> tuple[Client, ...]:
    return t[:i] + (c,) + t[i + 1:]


def _normalize(g: Group) -> Group:
    """Member order carries no meaning in the abstract mode (every Kafka order choice is a
    nondeterministic choice there), so members are kept sorted by id."""
    if len(g.members) > 1 and not _sorted(g.members):
        g = replace(g, members=tuple(sorted(g.members, key=lambda m: m.member_id)))
    if g.persisted is not None and len(g.persisted.members) > 1 and not _sorted(g.persisted.members):
        p = g.persisted
        g = replace(g, persisted=replace(p, members=tuple(sorted(p.members, key=lambda m: m.member_id))))
    return g


def _sorted(members: tuple[Member, ...]) -> bool:
    return all(a.member_id < b.member_id for a, b in zip(members, members[1:]))


# -- canonical keys and member symmetry ---------------------------------------------------------

class Renamer:
    """A permutation of client indices applied to ids, request ids and client positions."""

    def __init__(self, bounds: Bounds, perm: tuple[int, ...]) -> None:
        self.perm = perm
        self.identity = perm == tuple(range(len(perm)))
        self.names = {client_name(bounds, i): client_name(bounds, perm[i]) for i in range(len(perm))}

    def mid(self, s: Optional[str]) -> Optional[str]:
        if not s or self.identity:
            return s
        base, sep, k = s.partition("#")
        return self.names.get(base, base) + sep + k

    def rid(self, r: Optional[int]) -> Optional[int]:
        if r is None or r < 1 or self.identity:
            return r
        n = len(self.perm)
        epoch, i = divmod(r - 1, n)
        return 1 + self.perm[i] + n * epoch


def _member_key(m: Member, rn: Renamer) -> tuple[object, ...]:
    # the whole protocol list (names, order, metadata): selectProtocol and metadata-matches read
    # all of it, so members that differ anywhere in it are different states
    return (rn.mid(m.member_id), rn.mid(m.instance_id), m.protocols,
            None if m.awaiting_join is None else rn.rid(m.awaiting_join.request_id),
            rn.rid(m.awaiting_sync), m.is_new, m.assignment, m.session_deadline is not None,
            m.pending_sync)


def _persisted_key(p: Optional[PersistedGroup], rn: Renamer) -> tuple[object, ...]:
    if p is None:
        return ()
    return (p.state.value, p.generation, p.protocol_name, rn.mid(p.leader),
            tuple(sorted((_member_key(m, rn) for m in p.members), key=_first)))


def world_key(w: World, rn: Renamer) -> tuple[object, ...]:
    g = w.group
    clients: list[tuple[object, ...]] = [()] * len(w.clients)
    for i, c in enumerate(w.clients):
        clients[rn.perm[i]] = (c.phase, rn.mid(c.member_id), c.generation, c.leader,
                               tuple(sorted(str(rn.mid(x)) for x in c.roster)), c.epoch)
    return (g.state.value, g.generation, g.protocol_type, g.protocol_name, rn.mid(g.leader),
            tuple(sorted((_member_key(m, rn) for m in g.members), key=_first)),
            tuple(sorted(str(rn.mid(p.member_id)) for p in g.pending)),
            tuple((t.kind.value, t.remaining_ms, t.delay_ms) for t in g.join_timers),
            tuple(t.generation for t in g.sync_timers), g.offsets, _persisted_key(g.persisted, rn),
            g.owned, g.new_member_added, tuple(clients))


def renamers(bounds: Bounds, symmetry: bool) -> list[Renamer]:
    n = bounds.dynamic + bounds.static
    ident = tuple(range(n))
    if not symmetry:
        return [Renamer(bounds, ident)]
    out = []
    for pd in itertools.permutations(range(bounds.dynamic)):
        for ps in itertools.permutations(range(bounds.dynamic, n)):
            out.append(Renamer(bounds, tuple(pd) + tuple(ps)))
    return out


def _first(k: tuple[object, ...]) -> str:
    return str(k[0])


def canonical_key(w: World, rns: list[Renamer]) -> tuple[object, ...]:
    """The key of the world's orbit representative. Picking the representative by hash is sound:
    equal keys always mean equivalent worlds; a (practically impossible) hash tie could only
    leave two keys for one orbit, i.e. less reduction, never a wrong merge."""
    if len(rns) == 1:
        return world_key(w, rns[0])
    return min((world_key(w, rn) for rn in rns), key=hash)
