"""Spec text: the atoms the table's guards are made of.

Each atom is one yes/no question Kafka's GroupCoordinator asks while handling an input, evaluated
on the group *before* the row's effects. Citations: GC = GroupCoordinator.scala, GM =
GroupMetadata.scala, MM = MemberMetadata.scala (Kafka 3.9).
"""

from __future__ import annotations

from typing import Optional

from model.dsl import atom
from model.messages import (
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from model.protocol_selection import select_protocol
from model.state import Group, Input, JoinTimerKind, Settings
from model.vocabulary import GroupState


# -- how the atoms read an input ---------------------------------------------------------------

def member_id_of(x: Input) -> str:
    """The member id an input is about (request field, LeaveGroup item, or timer target)."""
    if x.member_id is not None:
        return x.member_id
    return str(getattr(x.request, "member_id", ""))


def instance_id_of(x: Input) -> Optional[str]:
    if x.kind == "LeaveGroup":
        return x.instance_id
    value = getattr(x.request, "group_instance_id", None)
    return None if value is None else str(value)


def generation_of(x: Input) -> int:
    return int(getattr(x.request, "generation_id", -1))


def join_request(x: Input) -> JoinGroupRequest:
    assert isinstance(x.request, JoinGroupRequest), x
    return x.request


# -- partition ownership (GC:1174 validateGroupStatus) -----------------------------------------

@atom("owned")
def owned(g: Group, x: Input, s: Settings) -> bool:
    """The coordinator owns the group's __consumer_offsets partition (else NOT_COORDINATOR)."""
    return g.owned


# -- the group id (GC:1159 isValidGroupId, checked first by GC:1174 validateGroupStatus) ----------

@atom("group-id-empty")
def group_id_empty(g: Group, x: Input, s: Settings) -> bool:
    """The group id is "" (the request's id: the coordinator keeps one group per id). GC:1159
    isValidGroupId: JoinGroup, SyncGroup, Heartbeat and LeaveGroup need a non-empty id, else
    INVALID_GROUP_ID before anything else; OffsetCommit, OffsetFetch, DescribeGroups and
    DeleteGroups accept "" (KAFKA-6773)."""
    return g.group_id == ""


# -- JoinGroup request fields ------------------------------------------------------------------

@atom("session-timeout-valid")
def session_timeout_valid(g: Group, x: Input, s: Settings) -> bool:
    """GC:180: group.min.session.timeout.ms <= sessionTimeoutMs <= group.max.session.timeout.ms."""
    t = join_request(x).session_timeout_ms
    return s.min_session_timeout_ms <= t <= s.max_session_timeout_ms


@atom("member-id-empty")
def member_id_empty(g: Group, x: Input, s: Settings) -> bool:
    """The request carries UNKNOWN_MEMBER_ID ("")."""
    return member_id_of(x) == ""


@atom("has-instance-id")
def has_instance_id(g: Group, x: Input, s: Settings) -> bool:
    """The request names a group.instance.id (a static member, KIP-345)."""
    return instance_id_of(x) is not None


@atom("requires-known-member-id")
def requires_known_member_id(g: Group, x: Input, s: Settings) -> bool:
    """JoinGroup v4+ from a dynamic member (GroupCoordinatorAdapter: apiVersion >= 4 && no instance
    id): the coordinator first hands out a member id with MEMBER_ID_REQUIRED (KIP-394)."""
    j = join_request(x)
    return j.require_known_member_id and j.group_instance_id is None


@atom("protocols-supported")
def protocols_supported(g: Group, x: Input, s: Settings) -> bool:
    """GM:464 supportsProtocols: in an Empty group, a non-empty protocol type and at least one
    protocol; otherwise the same protocol type and some protocol every current member supports."""
    j = join_request(x)
    names = {p.name for p in j.protocols}
    if g.state in (GroupState.Empty, GroupState.Missing) and not g.members:
        return j.protocol_type != "" and len(names) > 0
    if j.protocol_type != g.protocol_type:
        return False
    common: Optional[set[str]] = None
    for m in g.members:
        mine = set(m.protocol_names())
        common = mine if common is None else common & mine
    return bool(names & (common if common is not None else names))


@atom("within-max-size")
def within_max_size(g: Group, x: Input, s: Settings) -> bool:
    """GC:136 acceptJoiningMember (KIP-389, KAFKA-9885): Empty/Dead accept; PreparingRebalance
    accepts a member already parked, or while fewer than group.max.size members are parked;
    CompletingRebalance/Stable accept a known member, or while the group is below the limit.
    MEMBER_ID_REQUIRED ids do not count."""
    mid = member_id_of(x)
    member = g.member(mid)
    if g.state in (GroupState.Empty, GroupState.Dead, GroupState.Missing):
        return True
    if g.state == GroupState.PreparingRebalance:
        parked = member is not None and member.awaiting_join is not None
        return parked or g.num_awaiting_join() < s.group_max_size
    return member is not None or len(g.members) < s.group_max_size


# -- member identity (GC:373 validateCurrentMember) --------------------------------------------

@atom("member-pending")
def member_pending(g: Group, x: Input, s: Settings) -> bool:
    """The member id is a MEMBER_ID_REQUIRED id that has not joined yet (GM pendingMembers)."""
    return g.has_pending(member_id_of(x))


@atom("member-known")
def member_known(g: Group, x: Input, s: Settings) -> bool:
    """The member id belongs to a member of the group."""
    return g.has_member(member_id_of(x))


@atom("instance-mapped")
def instance_mapped(g: Group, x: Input, s: Settings) -> bool:
    """The request's group.instance.id is mapped to some member (GM staticMembers)."""
    iid = instance_id_of(x)
    return iid is not None and g.static_member_id(iid) is not None


@atom("fenced")
def fenced(g: Group, x: Input, s: Settings) -> bool:
    """GC:373: the instance id is mapped to a *different* member id -> FENCED_INSTANCE_ID."""
    iid = instance_id_of(x)
    if iid is None:
        return False
    current = g.static_member_id(iid)
    return current is not None and current != member_id_of(x)


@atom("member-valid")
def member_valid(g: Group, x: Input, s: Settings) -> bool:
    """GC:373 validateCurrentMember passes: an instance id, if given, is mapped to this member id,
    and the member id belongs to the group. (Not fenced and not UNKNOWN_MEMBER_ID.)"""
    iid = instance_id_of(x)
    mid = member_id_of(x)
    if iid is not None and g.static_member_id(iid) != mid:
        return False
    return g.has_member(mid)


@atom("is-leader")
def is_leader(g: Group, x: Input, s: Settings) -> bool:
    """The member is the group's leader (GM leaderId)."""
    return g.leader is not None and g.leader == member_id_of(x)


@atom("metadata-matches")
def metadata_matches(g: Group, x: Input, s: Settings) -> bool:
    """MM:109 matches: the same protocols with the same metadata bytes, in the same order."""
    m = g.member(member_id_of(x))
    return m is not None and m.protocols == join_request(x).protocols


@atom("selected-protocol-unchanged")
def selected_protocol_unchanged(g: Group, x: Input, s: Settings) -> bool:
    """GC:1345 updateStaticMemberAndRebalance (Stable): with the rejoining static member's new
    protocols, selectProtocol still picks the group's current protocol (KAFKA-10284)."""
    j = join_request(x)
    iid = j.group_instance_id
    old = g.static_member_id(iid) if iid is not None else None
    prefs = tuple(
        tuple(p.name for p in j.protocols) if m.member_id == old else m.protocol_names()
        for m in g.members
    )
    return select_protocol(prefs) == g.protocol_name


# -- generations and protocols -----------------------------------------------------------------

@atom("generation-matches")
def generation_matches(g: Group, x: Input, s: Settings) -> bool:
    """The request's generation id equals the group's (else ILLEGAL_GENERATION)."""
    return generation_of(x) == g.generation


@atom("generation-negative")
def generation_negative(g: Group, x: Input, s: Settings) -> bool:
    """An OffsetCommit with generation < 0 (a "simple consumer" / admin commit)."""
    return generation_of(x) < 0


@atom("commit-has-member-info")
def commit_has_member_info(g: Group, x: Input, s: Settings) -> bool:
    """GC:1018 validateOffsetCommit: generation >= 0, or a member id, or an instance id given."""
    assert isinstance(x.request, OffsetCommitRequest)
    r = x.request
    return r.generation_id >= 0 or r.member_id != "" or r.group_instance_id is not None


@atom("sync-protocol-consistent")
def sync_protocol_consistent(g: Group, x: Input, s: Settings) -> bool:
    """GC:537 (KIP-559): a protocolType / protocolName given in SyncGroup equals the group's."""
    assert isinstance(x.request, SyncGroupRequest)
    r = x.request
    if r.protocol_type is not None and r.protocol_type != g.protocol_type:
        return False
    return r.protocol_name is None or r.protocol_name == g.protocol_name


@atom("append-ok")
def append_ok(g: Group, x: Input, s: Settings) -> bool:
    """The log append (group metadata or offsets) succeeds (scenario config `append_result`)."""
    return s.append_ok


# -- the join phase (DelayedJoin / InitialDelayedJoin, GC:1527, GC:1535) ------------------------

@atom("all-joined")
def all_joined(g: Group, x: Input, s: Settings) -> bool:
    """GM:392 hasAllMembersJoined: every member is parked in JoinGroup and no pending id is left."""
    return g.has_all_members_joined()


@atom("join-timer-armed")
def join_timer_armed(g: Group, x: Input, s: Settings) -> bool:
    """A DelayedJoin or InitialDelayedJoin is in the rebalance purgatory."""
    return len(g.join_timers) > 0


@atom("join-timer-initial")
def join_timer_initial(g: Group, x: Input, s: Settings) -> bool:
    """The armed join operation is an InitialDelayedJoin (DJ:62; never completes early, DJ:74)."""
    return bool(g.join_timers) and g.join_timers[0].kind == JoinTimerKind.InitialDelayedJoin


@atom("initial-delay-extends")
def initial_delay_extends(g: Group, x: Input, s: Settings) -> bool:
    """DJ:62 InitialDelayedJoin.onComplete: a new member was added during the delay and some of
    the rebalance timeout remains -> arm another InitialDelayedJoin instead of completing."""
    t = g.join_timers[0] if g.join_timers else None
    return t is not None and g.new_member_added and t.remaining_ms != 0


@atom("any-rejoined")
def any_rejoined(g: Group, x: Input, s: Settings) -> bool:
    """Some member is parked in JoinGroup (has rejoined in this rebalance)."""
    return g.num_awaiting_join() > 0


@atom("static-absentee")
def static_absentee(g: Group, x: Input, s: Settings) -> bool:
    """Some static member has not rejoined (KAFKA-8220: static members are kept at the timeout)."""
    return any(m.instance_id is not None and m.awaiting_join is None for m in g.members)


# -- the sync phase (DelayedSync, GC:1635, GC:1656) ---------------------------------------------

@atom("sync-timer-armed")
def sync_timer_armed(g: Group, x: Input, s: Settings) -> bool:
    """A DelayedSync is in the purgatory."""
    return len(g.sync_timers) > 0


@atom("sync-timer-done")
def sync_timer_done(g: Group, x: Input, s: Settings) -> bool:
    """GC:1635 tryCompletePendingSync: the DelayedSync can complete as a no-op — its generation is
    gone, the group left CompletingRebalance/Stable, or every member has synced."""
    if not g.sync_timers:
        return False
    t = g.sync_timers[0]
    return (
        t.generation != g.generation
        or g.state not in (GroupState.CompletingRebalance, GroupState.Stable)
        or not any(m.pending_sync for m in g.members)
    )


# -- timers about one member -------------------------------------------------------------------

@atom("session-armed")
def session_armed(g: Group, x: Input, s: Settings) -> bool:
    """The timer's member is in the group and its DelayedHeartbeat is armed (not satisfied)."""
    m = g.member(member_id_of(x))
    return m is not None and m.session_deadline is not None


@atom("member-satisfied")
def member_satisfied(g: Group, x: Input, s: Settings) -> bool:
    """MM:93 hasSatisfiedHeartbeat: a member that is not new and is parked in JoinGroup or
    SyncGroup cannot fail its session; its expiring DelayedHeartbeat does nothing."""
    m = g.member(member_id_of(x))
    return m is not None and not m.is_new and (
        m.awaiting_join is not None or m.awaiting_sync is not None
    )


@atom("pending-armed")
def pending_armed(g: Group, x: Input, s: Settings) -> bool:
    """The timer's id is still a pending MEMBER_ID_REQUIRED id."""
    return g.has_pending(member_id_of(x))


# -- offsets, persistence, listing -------------------------------------------------------------

@atom("has-offsets")
def has_offsets(g: Group, x: Input, s: Settings) -> bool:
    """The group has committed offsets."""
    return len(g.offsets) > 0


@atom("persisted-stable")
def persisted_stable(g: Group, x: Input, s: Settings) -> bool:
    """The last GroupMetadata record has members (a load resumes in Stable, GMM:1211)."""
    return g.persisted is not None and g.persisted.state == GroupState.Stable


@atom("persisted-empty")
def persisted_empty(g: Group, x: Input, s: Settings) -> bool:
    """The last GroupMetadata record has no members (a load resumes in Empty)."""
    return g.persisted is not None and g.persisted.state == GroupState.Empty


@atom("state-filter-matches")
def state_filter_matches(g: Group, x: Input, s: Settings) -> bool:
    """ListGroups (KIP-518): no state filter, or the group's state is in it (case-insensitive)."""
    assert isinstance(x.request, ListGroupsRequest)
    wanted = {w.lower() for w in x.request.states_filter}
    return not wanted or g.state.value.lower() in wanted
