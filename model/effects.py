"""Spec text: the effects a table row may have, each a change Kafka's coordinator makes.

Every effect declares the Group fields it modifies (`modifies=`); the step function checks that
nothing else changed, and the Z3 frame condition is generated from the same declaration.
Effects run in the order the row lists them and see the group *before* the row's next-state.
Citations: GC = GroupCoordinator.scala, GM = GroupMetadata.scala (Kafka 3.9).
"""

from __future__ import annotations

from typing import Optional

from model.atoms import instance_id_of, join_request, member_id_of
from model.dsl import Ctx, Output, Superseded, effect
from model.messages import (
    JoinGroupMember, JoinGroupResponse, OffsetCommitRequest, SyncGroupRequest, SyncGroupResponse
)
from model.protocol_selection import select_protocol
from model.state import (
    Group, JoinTimer, JoinTimerKind, Member, ParkedJoin, PendingMember, PersistedGroup, SyncTimer,
    evolve_group, evolve_member
)
from model.vocabulary import Error, GroupState, map_store_group_error


# -- helpers ---------------------------------------------------------------------------------

def armed_session(ctx: Ctx, m: Member, timeout_ms: Optional[int] = None) -> Member:
    """GC:1281 completeAndScheduleNextHeartbeatExpiration: a fresh DelayedHeartbeat, which
    completes at once (no timer) when the member is satisfied (parked and not new, MM:93)."""
    if not m.is_new and (m.awaiting_join is not None or m.awaiting_sync is not None):
        return evolve_member(m, session_deadline=None)
    t = m.session_timeout_ms if timeout_ms is None else timeout_ms
    return evolve_member(m, session_deadline=ctx.mode.deadline(ctx.now_ms, t))


def _target_id(ctx: Ctx) -> str:
    """The member an effect acts on: one named by an earlier effect of the row, else the input's."""
    named = ctx.scratch.get("member_id")
    return named if isinstance(named, str) else member_id_of(ctx.inp)


def _choose_member(ctx: Ctx, what: str, candidates: list[Member]) -> Optional[str]:
    """Kafka picks by hash-map iteration order: the model makes it a nondeterministic choice."""
    if not candidates:
        return None
    return candidates[ctx.chooser.choose(what, len(candidates))].member_id


def _remove(ctx: Ctx, member_id: str, parked_join_error: Optional[Error]) -> None:
    """GM:268 remove (+ GC:1505): drop the member, move leadership, answer its parked JoinGroup."""
    g = ctx.group
    m = g.member(member_id)
    if m is None:
        return
    if m.awaiting_join is not None and parked_join_error is not None:
        ctx.respond(m.awaiting_join.request_id, JoinGroupResponse(parked_join_error, member_id=""), m.member_id)
    if m.awaiting_sync is not None:
        # A member removed while its SyncGroup is parked: Kafka never answers that request
        # (GC:1505 removes the member; propagateAssignment only walks current members).
        ctx.outputs.append(Output(m.awaiting_sync, Superseded(), m.member_id))
    g = g.without_member(member_id)
    if g.leader == member_id:
        g = evolve_group(g, leader=None)
        ctx.group = g
        g = evolve_group(g, leader=_choose_member(ctx, "leader-after-removal", list(g.members)))
    ctx.group = g


def _answer_sync(ctx: Ctx, m: Member, response: SyncGroupResponse) -> Member:
    """GC:1262 propagateAssignment: a parked SyncGroup is answered (assignment or error) and the
    member's session re-armed, because an expiry while it was parked was ignored."""
    assert m.awaiting_sync is not None
    ctx.respond(m.awaiting_sync, response, m.member_id)
    return armed_session(ctx, evolve_member(m, awaiting_sync=None))


def _new_member(ctx: Ctx, member_id: str) -> Member:
    j = join_request(ctx.inp)
    return Member(
        member_id=member_id,
        instance_id=j.group_instance_id,
        client_id=j.client_id,
        protocol_type=j.protocol_type,
        protocols=j.protocols,
        session_timeout_ms=j.session_timeout_ms,
        rebalance_timeout_ms=j.rebalance_timeout_ms,
        awaiting_join=ParkedJoin(ctx.inp.request_id, j.supports_skip_assignment),
        is_new=True,
    )


def _fresh_id(ctx: Ctx) -> str:
    """GM:416 generateMemberId: clientId-UUID, or groupInstanceId-UUID for a static member."""
    j = join_request(ctx.inp)
    base = j.group_instance_id if j.group_instance_id is not None else j.client_id
    return ctx.mode.new_member_id(ctx.group, base)


# -- group objects ----------------------------------------------------------------------------

@effect("create-group", modifies={"state", "generation", "protocol_type", "protocol_name",
                                  "leader", "members", "pending", "join_timers", "sync_timers",
                                  "new_member_added"})
def create_group(ctx: Ctx) -> None:
    """GMM:231 getOrMaybeCreateGroup: a new group object, Empty, generation 0."""
    g = ctx.group
    ctx.group = Group(group_id=g.group_id, state=GroupState.Empty, offsets=g.offsets,
                      persisted=g.persisted, owned=g.owned)


@effect("remove-group", modifies={"generation", "protocol_type", "protocol_name", "leader",
                                  "members", "pending", "join_timers", "sync_timers",
                                  "offsets", "persisted", "new_member_added"})
def remove_group(ctx: Ctx) -> None:
    """GC:718 DeleteGroups / GMM:847 offset expiry: Dead, offsets and metadata tombstoned, the
    object removed from the cache (a later JoinGroup creates a new incarnation)."""
    g = ctx.group
    ctx.group = Group(group_id=g.group_id, state=g.state, owned=g.owned)


@effect("unload-group", modifies={"members", "pending", "join_timers", "sync_timers", "leader",
                                  "owned", "new_member_added"}, responds=True)
def unload_group(ctx: Ctx) -> None:
    """GC:1187 onGroupUnloaded: parked JoinGroups and SyncGroups answered NOT_COORDINATOR, the
    group goes Dead and leaves the cache; offsets and the last GroupMetadata stay in the log."""
    g = ctx.group
    for m in g.members:
        if m.awaiting_join is not None:
            ctx.respond(m.awaiting_join.request_id,
                        JoinGroupResponse(Error.NOT_COORDINATOR, member_id=m.member_id), m.member_id)
        if m.awaiting_sync is not None:
            ctx.respond(m.awaiting_sync, SyncGroupResponse(Error.NOT_COORDINATOR), m.member_id)
    ctx.group = Group(group_id=g.group_id, state=g.state, generation=g.generation,
                      protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                      offsets=g.offsets, persisted=g.persisted, owned=False)


@effect("load-group", modifies={"generation", "protocol_type", "protocol_name", "leader",
                                "members", "owned"})
def load_group(ctx: Ctx) -> None:
    """GC:1213 onGroupLoaded: the group resumes from its last GroupMetadata record (Stable with
    its members and their assignment, or Empty); every member's session timer is armed."""
    g = ctx.group
    p = g.persisted
    if p is None:
        ctx.group = evolve_group(g, owned=True)
        return
    members = tuple(
        evolve_member(m, awaiting_join=None, awaiting_sync=None, is_new=False, pending_sync=False,
                session_deadline=ctx.mode.deadline(ctx.now_ms, m.session_timeout_ms))
        for m in p.members
    )
    ctx.group = evolve_group(g, generation=p.generation, protocol_type=p.protocol_type,
                        protocol_name=p.protocol_name, leader=p.leader, members=members,
                        owned=True)


@effect("claim-partition", modifies={"owned"})
def claim_partition(ctx: Ctx) -> None:
    """Partition immigration with nothing to load: the coordinator now owns the partition."""
    ctx.group = evolve_group(ctx.group, owned=True)


@effect("release-partition", modifies={"owned"})
def release_partition(ctx: Ctx) -> None:
    """Partition emigration of a group that has no object in the cache."""
    ctx.group = evolve_group(ctx.group, owned=False)


@effect("persist-group", modifies={"persisted"})
def persist_group(ctx: Ctx) -> None:
    """GMM:250 storeGroup succeeded: the GroupMetadata record a later load resumes from."""
    g = ctx.group
    record = tuple(evolve_member(m, awaiting_join=None, awaiting_sync=None, is_new=False,
                           session_deadline=None, pending_sync=False) for m in g.members)
    ctx.group = evolve_group(g, persisted=PersistedGroup(
        state=GroupState.Stable if g.members else GroupState.Empty,
        generation=g.generation, protocol_type=g.protocol_type, protocol_name=g.protocol_name,
        leader=g.leader, members=record))


# -- JoinGroup --------------------------------------------------------------------------------

@effect("add-pending-member", modifies={"pending"})
def add_pending_member(ctx: Ctx) -> None:
    """GC:342 doDynamicNewMemberJoinGroup (KIP-394): a fresh member id, remembered as pending
    with a DelayedHeartbeat of the request's session timeout (GC:1301)."""
    new_id = _fresh_id(ctx)
    ctx.scratch["member_id"] = new_id
    deadline = ctx.mode.deadline(ctx.now_ms, join_request(ctx.inp).session_timeout_ms)
    ctx.group = evolve_group(ctx.group, pending=ctx.group.pending + (PendingMember(new_id, deadline),))


@effect("add-member", modifies={"members", "pending", "leader", "protocol_type"})
def add_member(ctx: Ctx) -> None:
    """GC:1312 addMemberAndRebalance + GM:241 add: a new member (a fresh id for an empty member
    id, else the pending id it was given), parked in JoinGroup, `isNew`, its session bounded by
    the new-member join timeout; the first member fixes the protocol type and leads."""
    mid = member_id_of(ctx.inp)
    if mid == "":
        mid = _fresh_id(ctx)
    ctx.scratch["member_id"] = mid
    m = _new_member(ctx, mid)
    m = armed_session(ctx, m, ctx.settings.new_member_join_timeout_ms)
    g = ctx.group
    g = evolve_group(g, pending=tuple(p for p in g.pending if p.member_id != mid),
                members=g.members + (m,))
    if g.leader is None:
        g = evolve_group(g, leader=mid)
    if g.protocol_type is None or not ctx.group.members:
        g = evolve_group(g, protocol_type=m.protocol_type)
    ctx.group = g


@effect("mark-new-member-added", modifies={"new_member_added"})
def mark_new_member_added(ctx: Ctx) -> None:
    """GC:1329: a member added while an initial rebalance of a generation-0 group is running
    extends the InitialDelayedJoin (only generation 0: a re-used Empty group is not extended)."""
    if ctx.group.generation == 0:
        ctx.group = evolve_group(ctx.group, new_member_added=True)


@effect("update-and-park-join", modifies={"members"}, responds=True)
def update_and_park_join(ctx: Ctx) -> None:
    """GM:518 updateMember: new protocols and timeouts, the JoinGroup parked. A JoinGroup that
    was already parked for this member is replaced without a response (Kafka never answers it)."""
    j = join_request(ctx.inp)
    m = ctx.group.member(_target_id(ctx))
    assert m is not None
    if m.awaiting_join is not None:
        ctx.outputs.append(Output(m.awaiting_join.request_id, Superseded(), m.member_id))
    m = evolve_member(m, protocols=j.protocols, session_timeout_ms=j.session_timeout_ms,
                rebalance_timeout_ms=j.rebalance_timeout_ms,
                awaiting_join=ParkedJoin(ctx.inp.request_id, j.supports_skip_assignment))
    ctx.group = ctx.group.with_member(m)


@effect("replace-static-member", modifies={"members", "leader"}, responds=True)
def replace_static_member(ctx: Ctx) -> None:
    """GM:319 replaceStaticMember + GC:1345: the instance's old member id is re-keyed to a fresh
    id; the old id's parked JoinGroup / SyncGroup is answered FENCED_INSTANCE_ID; leadership
    follows; the session is re-armed with the *old* timeouts (before updateMember)."""
    j = join_request(ctx.inp)
    assert j.group_instance_id is not None
    old_id = ctx.group.static_member_id(j.group_instance_id)
    assert old_id is not None
    old = ctx.group.member(old_id)
    assert old is not None
    new_id = _fresh_id(ctx)
    ctx.scratch["member_id"] = new_id
    ctx.scratch["old_member_id"] = old_id
    ctx.scratch["old_member"] = old
    ctx.scratch["old_leader"] = ctx.group.leader
    if old.awaiting_join is not None:
        ctx.respond(old.awaiting_join.request_id,
                    JoinGroupResponse(Error.FENCED_INSTANCE_ID, member_id=old_id), old_id)
    if old.awaiting_sync is not None:
        ctx.respond(old.awaiting_sync, SyncGroupResponse(Error.FENCED_INSTANCE_ID), old_id)
    m = evolve_member(old, member_id=new_id, awaiting_join=None, awaiting_sync=None)
    m = armed_session(ctx, m)
    members = tuple(m if x.member_id == old_id else x for x in ctx.group.members)
    leader = new_id if ctx.group.leader == old_id else ctx.group.leader
    ctx.group = evolve_group(ctx.group, members=members, leader=leader)


@effect("revert-static-replacement", modifies={"members", "leader"})
def revert_static_replacement(ctx: Ctx) -> None:
    """GC:1368 (persistence failed): the old member id and timeouts come back; the protocol list
    stays the new one, as in Scala (oldProtocols is read after updateMember; the Java port
    differs, semantics §8.14). The parked new request is answered by the reply column."""
    new_id = ctx.scratch["member_id"]
    old = ctx.scratch["old_member"]
    assert isinstance(new_id, str) and isinstance(old, Member)
    cur = ctx.group.member(new_id)
    assert cur is not None
    back = armed_session(ctx, evolve_member(old, protocols=cur.protocols, awaiting_join=None,
                                      awaiting_sync=None))
    members = tuple(back if x.member_id == new_id else x for x in ctx.group.members)
    leader = old.member_id if ctx.group.leader == new_id else ctx.group.leader
    ctx.group = evolve_group(ctx.group, members=members, leader=leader)


@effect("unpark-join", modifies={"members"})
def unpark_join(ctx: Ctx) -> None:
    """The JoinGroup parked by updateMember is answered now (by the reply column)."""
    m = ctx.group.member(_target_id(ctx))
    assert m is not None
    ctx.group = ctx.group.with_member(evolve_member(m, awaiting_join=None))


@effect("rebalance", modifies={"members", "join_timers", "sync_timers"}, responds=True)
def rebalance(ctx: Ctx) -> None:
    """GC:1478 prepareRebalance: from CompletingRebalance every parked SyncGroup is answered
    REBALANCE_IN_PROGRESS (its session re-armed) and assignments cleared (GC:1252); the DelayedSync
    and the pending-sync
    set are dropped (GC:1613); an InitialDelayedJoin is armed if the group is Empty, else a
    DelayedJoin for the largest rebalance timeout of the members at this moment (GM:412)."""
    g = ctx.group
    members = []
    for m in g.members:
        if g.state == GroupState.CompletingRebalance:
            if m.awaiting_sync is not None:
                m = _answer_sync(ctx, m, SyncGroupResponse(Error.REBALANCE_IN_PROGRESS))
            m = evolve_member(m, assignment=b"")
        members.append(evolve_member(m, pending_sync=False))
    timeout = max((m.rebalance_timeout_ms for m in members), default=0)
    if g.state == GroupState.Empty:
        delay = ctx.settings.initial_rebalance_delay_ms
        timer = JoinTimer(JoinTimerKind.InitialDelayedJoin, ctx.mode.deadline(ctx.now_ms, delay),
                          delay_ms=delay, remaining_ms=max(timeout - delay, 0))
    else:
        timer = JoinTimer(JoinTimerKind.DelayedJoin, ctx.mode.deadline(ctx.now_ms, timeout))
    ctx.group = evolve_group(g, members=tuple(members), sync_timers=(),
                        join_timers=g.join_timers + (timer,))


# -- the join phase completes (GC:1535 onCompleteJoin) ----------------------------------------

@effect("remove-unjoined-dynamic", modifies={"members", "leader"})
def remove_unjoined_dynamic(ctx: Ctx) -> None:
    """GC:1537: every dynamic member that has not rejoined is removed (static ones stay,
    KAFKA-8220); they have no parked request, so nobody is answered."""
    for m in list(ctx.group.members):
        if m.instance_id is None and m.awaiting_join is None:
            _remove(ctx, m.member_id, None)


@effect("elect-joined-leader", modifies={"leader"})
def elect_joined_leader(ctx: Ctx) -> None:
    """GM:290 maybeElectNewJoinedLeader: a leader that has not rejoined is replaced by some
    rejoined member (hash-map order in Kafka: a nondeterministic choice here)."""
    g = ctx.group
    leader = g.member(g.leader) if g.leader is not None else None
    if leader is not None and leader.awaiting_join is not None:
        return
    joined = [m for m in g.members if m.awaiting_join is not None]
    ctx.group = evolve_group(g, leader=_choose_member(ctx, "leader-at-join-completion", joined))


@effect("bump-generation", modifies={"generation"})
def bump_generation(ctx: Ctx) -> None:
    """GM:574 initNextGeneration: generationId += 1, always (also when the group ends Empty)."""
    ctx.group = evolve_group(ctx.group, generation=ctx.group.generation + 1)


@effect("select-protocol", modifies={"protocol_name"})
def select_group_protocol(ctx: Ctx) -> None:
    """GM:434 selectProtocol over the members' preference lists."""
    prefs = tuple(m.protocol_names() for m in ctx.group.members)
    ctx.group = evolve_group(ctx.group, protocol_name=select_protocol(prefs))


@effect("clear-protocol", modifies={"protocol_name"})
def clear_protocol(ctx: Ctx) -> None:
    """GM:574: a group that ends a join phase Empty has no protocol."""
    ctx.group = evolve_group(ctx.group, protocol_name=None)


@effect("disarm-join-timer", modifies={"join_timers"})
def disarm_join_timer(ctx: Ctx) -> None:
    """The completed DelayedJoin / InitialDelayedJoin leaves the purgatory."""
    ctx.group = evolve_group(ctx.group, join_timers=ctx.group.join_timers[1:])


@effect("answer-joins", modifies={"members"}, responds=True)
def answer_joins(ctx: Ctx) -> None:
    """GC:1580: every parked JoinGroup is answered with the new generation, protocol and leader;
    the leader also gets every member's id, instance id and metadata for the selected protocol
    (absent static members included). Every member's session is re-armed, `isNew` cleared, and
    the member added to the pending-sync set (GM addPendingSyncMember)."""
    g = ctx.group
    roster = tuple(JoinGroupMember(m.member_id, m.instance_id, m.metadata_for(g.protocol_name))
                   for m in g.members)
    members = []
    for m in g.members:
        if m.awaiting_join is not None:
            ctx.respond(m.awaiting_join.request_id, JoinGroupResponse(
                Error.NONE, generation_id=g.generation, protocol_type=g.protocol_type,
                protocol_name=g.protocol_name, leader=g.leader or "", member_id=m.member_id,
                skip_assignment=False, members=roster if m.member_id == g.leader else ()),
                m.member_id)
            m = evolve_member(m, awaiting_join=None)
        m = armed_session(ctx, evolve_member(m, is_new=False))
        members.append(evolve_member(m, pending_sync=True))
    ctx.group = evolve_group(g, members=tuple(members))


@effect("arm-delayed-sync", modifies={"sync_timers"})
def arm_delayed_sync(ctx: Ctx) -> None:
    """GC:1627 schedulePendingSync (KAFKA-12890): a DelayedSync for this generation, with the
    group's rebalance timeout."""
    g = ctx.group
    t = SyncTimer(g.generation, ctx.mode.deadline(ctx.now_ms, g.rebalance_timeout_ms()))
    ctx.group = evolve_group(g, sync_timers=g.sync_timers + (t,))


@effect("rearm-delayed-join", modifies={"join_timers"})
def rearm_delayed_join(ctx: Ctx) -> None:
    """GC:1554: nobody rejoined but absent static members remain: a new DelayedJoin instead of a
    new generation (the group may sit in PreparingRebalance until their sessions expire)."""
    g = ctx.group
    t = JoinTimer(JoinTimerKind.DelayedJoin, ctx.mode.deadline(ctx.now_ms, g.rebalance_timeout_ms()))
    ctx.group = evolve_group(g, join_timers=g.join_timers[1:] + (t,))


@effect("extend-initial-delay", modifies={"join_timers", "new_member_added"})
def extend_initial_delay(ctx: Ctx) -> None:
    """DJ:62: another InitialDelayedJoin with delay min(configured, remaining) and remaining
    max(remaining - this delay, 0); the newMemberAdded flag is cleared."""
    g = ctx.group
    t = g.join_timers[0]
    delay = min(ctx.settings.initial_rebalance_delay_ms, t.remaining_ms)
    nxt = JoinTimer(JoinTimerKind.InitialDelayedJoin, ctx.mode.deadline(ctx.now_ms, delay),
                    delay_ms=delay, remaining_ms=max(t.remaining_ms - t.delay_ms, 0))
    ctx.group = evolve_group(g, join_timers=g.join_timers[1:] + (nxt,), new_member_added=False)


# -- SyncGroup --------------------------------------------------------------------------------

@effect("park-sync", modifies={"members"}, responds=True)
def park_sync(ctx: Ctx) -> None:
    """GC:600: the SyncGroup waits for the leader's assignment (MM awaitingSyncCallback). A
    SyncGroup already parked for the member is overwritten and never answered, as in Kafka."""
    m = ctx.group.member(member_id_of(ctx.inp))
    assert m is not None
    if m.awaiting_sync is not None:
        ctx.outputs.append(Output(m.awaiting_sync, Superseded(), m.member_id))
    ctx.group = ctx.group.with_member(evolve_member(m, awaiting_sync=ctx.inp.request_id))


@effect("unpend-sync", modifies={"members"})
def unpend_sync(ctx: Ctx) -> None:
    """GM:360 removePendingSyncMember: this member has sent its SyncGroup."""
    m = ctx.group.member(member_id_of(ctx.inp))
    assert m is not None
    ctx.group = ctx.group.with_member(evolve_member(m, pending_sync=False))


@effect("store-assignment", modifies={"members"})
def store_assignment(ctx: Ctx) -> None:
    """GC:612-617 + GC:1246 setAndPropagateAssignment: every member's assignment from the
    leader's SyncGroup; members the leader left out get an empty one."""
    assert isinstance(ctx.inp.request, SyncGroupRequest)
    given = dict(ctx.inp.request.assignments)
    ctx.group = evolve_group(ctx.group, members=tuple(
        evolve_member(m, assignment=given.get(m.member_id, b"")) for m in ctx.group.members))


@effect("answer-syncs", modifies={"members"}, responds=True)
def answer_syncs(ctx: Ctx) -> None:
    """GC:1262 propagateAssignment: every parked SyncGroup gets its member's assignment and the
    group's protocol type and name; each answered member's session is re-armed."""
    g = ctx.group
    members = []
    for m in g.members:
        if m.awaiting_sync is not None:
            m = _answer_sync(ctx, m, SyncGroupResponse(
                Error.NONE, protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                assignment=m.assignment))
        members.append(m)
    ctx.group = evolve_group(g, members=tuple(members))


@effect("fail-syncs", modifies={"members"}, responds=True)
def fail_syncs(ctx: Ctx) -> None:
    """GC:629 resetAndPropagateAssignmentError: the group-metadata append failed; assignments are
    cleared and every parked SyncGroup gets the mapped append error (GMM:250), its session
    re-armed."""
    err = ctx.settings.append_error
    assert isinstance(err, Error)
    mapped = map_store_group_error(err)
    members = []
    for m in ctx.group.members:
        if m.awaiting_sync is not None:
            m = _answer_sync(ctx, m, SyncGroupResponse(mapped))
        members.append(evolve_member(m, assignment=b""))
    ctx.group = evolve_group(ctx.group, members=tuple(members))


@effect("rearm-session", modifies={"members"})
def rearm_session(ctx: Ctx) -> None:
    """GC:1281 completeAndScheduleNextHeartbeatExpiration for the requesting member."""
    m = ctx.group.member(_target_id(ctx))
    assert m is not None
    ctx.group = ctx.group.with_member(armed_session(ctx, m))


# -- LeaveGroup, expiry -----------------------------------------------------------------------

@effect("remove-member", modifies={"members", "leader"}, responds=True)
def remove_member(ctx: Ctx) -> None:
    """GC:1505 removeMemberAndUpdateGroup: the member (by id, or by instance id for an
    administrative LeaveGroup) leaves; its parked JoinGroup is answered UNKNOWN_MEMBER_ID with
    member id ""; leadership moves to an arbitrary remaining member (GM:277)."""
    mid = member_id_of(ctx.inp)
    iid = instance_id_of(ctx.inp)
    if mid == "" and iid is not None:
        mapped = ctx.group.static_member_id(iid)
        assert mapped is not None
        mid = mapped
    ctx.scratch["removed_member_id"] = mid
    _remove(ctx, mid, Error.UNKNOWN_MEMBER_ID)


@effect("max-size-reject", modifies={"members", "pending", "leader"})
def max_size_reject(ctx: Ctx) -> None:
    """GC:136 (KIP-389): a rejected joiner is dropped with GM.remove: a pending id is forgotten,
    and an existing member that had not rejoined is removed silently (no rebalance, no answer)."""
    mid = member_id_of(ctx.inp)
    ctx.group = evolve_group(ctx.group, pending=tuple(p for p in ctx.group.pending if p.member_id != mid))
    if ctx.group.has_member(mid):
        _remove(ctx, mid, Error.UNKNOWN_MEMBER_ID)


@effect("remove-pending", modifies={"pending"})
def remove_pending(ctx: Ctx) -> None:
    """GC:1519 removePendingMemberAndUpdateGroup: a MEMBER_ID_REQUIRED id is forgotten."""
    mid = member_id_of(ctx.inp)
    ctx.group = evolve_group(ctx.group, pending=tuple(p for p in ctx.group.pending if p.member_id != mid))


@effect("disarm-session", modifies={"members"})
def disarm_session(ctx: Ctx) -> None:
    """The member's DelayedHeartbeat expired while it was satisfied: it completes, nothing else."""
    m = ctx.group.member(member_id_of(ctx.inp))
    assert m is not None
    ctx.group = ctx.group.with_member(evolve_member(m, session_deadline=None))


@effect("remove-unsynced", modifies={"members", "leader"}, responds=True)
def remove_unsynced(ctx: Ctx) -> None:
    """GC:1656 onExpirePendingSync: members that never sent SyncGroup for this generation are
    removed (they have no parked request, so nobody is answered)."""
    for m in list(ctx.group.members):
        if m.pending_sync:
            _remove(ctx, m.member_id, Error.UNKNOWN_MEMBER_ID)


@effect("disarm-delayed-sync", modifies={"sync_timers"})
def disarm_delayed_sync(ctx: Ctx) -> None:
    """The DelayedSync completes or expires and leaves the purgatory."""
    ctx.group = evolve_group(ctx.group, sync_timers=ctx.group.sync_timers[1:])


# -- offsets ------------------------------------------------------------------------------------

@effect("store-offsets", modifies={"offsets"})
def store_offsets(ctx: Ctx) -> None:
    """GC:1056 doCommitOffsets: the offsets are appended and become visible to OffsetFetch."""
    assert isinstance(ctx.inp.request, OffsetCommitRequest)
    current = dict(ctx.group.offsets)
    for tp, off in ctx.inp.request.offsets:
        current[tp] = off
    ctx.group = evolve_group(ctx.group, offsets=tuple(sorted(current.items())))
