"""Spec text: how a row's reply column becomes a response record.

The reply column names a *form* and an error code; the form decides the response's shape
(Kafka's `JoinGroupResult(memberId, error)` for errors, GC:1835, and so on).
"""

from __future__ import annotations

from model.atoms import instance_id_of, join_request, member_id_of
from model.dsl import Ctx, reply_form
from model.messages import (
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsResponse,
    MemberLeaveResult,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Response,
    SyncGroupResponse,
)
from model.vocabulary import Error, GroupState, map_offset_commit_error, map_store_group_error


@reply_form("error")
def error_reply(ctx: Ctx, error: Error) -> Response:
    """The API's error shape. JoinGroup echoes the request's member id (GC:1835)."""
    kind = ctx.inp.kind
    if kind == "JoinGroup":
        return JoinGroupResponse(error, member_id=member_id_of(ctx.inp))
    if kind == "SyncGroup":
        return SyncGroupResponse(error)
    if kind == "Heartbeat":
        return HeartbeatResponse(error)
    if kind == "LeaveGroup":
        return LeaveGroupResponse(Error.NONE, (MemberLeaveResult(
            member_id_of(ctx.inp), instance_id_of(ctx.inp), error),))
    if kind == "OffsetCommit":
        assert isinstance(ctx.inp.request, OffsetCommitRequest)
        return OffsetCommitResponse(tuple((tp, error) for tp, _ in ctx.inp.request.offsets))
    if kind == "OffsetFetch":
        return OffsetFetchResponse(error)
    if kind == "DescribeGroups":
        return DescribeGroupsResponse((DescribedGroup(error, ctx.group.group_id, "", "", ""),))
    if kind == "DeleteGroups":
        return DeleteGroupsResponse(((ctx.group.group_id, error),))
    if kind == "ListGroups":
        return ListGroupsResponse(error)
    raise ValueError(f"no error shape for {kind}")


@reply_form("error-no-member-id")
def error_no_member_id(ctx: Ctx, error: Error) -> Response:
    """JoinGroup errors that carry member id "" (new-member errors, GROUP_MAX_SIZE_REACHED)."""
    return JoinGroupResponse(error, member_id="")


@reply_form("top-level")
def leave_top_level(ctx: Ctx, error: Error) -> Response:
    """LeaveGroup answered with a top-level error and no member list (GC:651)."""
    return LeaveGroupResponse(error)


@reply_form("with-new-member-id")
def with_new_member_id(ctx: Ctx, error: Error) -> Response:
    """MEMBER_ID_REQUIRED carries the member id the client must rejoin with (KIP-394)."""
    new_id = ctx.scratch["member_id"]
    assert isinstance(new_id, str)
    return JoinGroupResponse(error, member_id=new_id)


@reply_form("join-current")
def join_current(ctx: Ctx, error: Error) -> Response:
    """GC:451-496: a known member answered at once with the current generation, protocol and
    leader; the leader also gets the member list (CompletingRebalance), followers get none."""
    g = ctx.group
    mid = member_id_of(ctx.inp)
    roster = tuple(JoinGroupMember(m.member_id, m.instance_id, m.metadata_for(g.protocol_name))
                   for m in g.members)
    return JoinGroupResponse(error, generation_id=g.generation, protocol_type=g.protocol_type,
                             protocol_name=g.protocol_name, leader=g.leader or "", member_id=mid,
                             members=roster if mid == g.leader else ())


@reply_form("static-restart")
def static_restart(ctx: Ctx, error: Error) -> Response:
    """GC:1380-1410 (Stable, selected protocol unchanged, metadata persisted): the new member id
    with the current generation. A v9+ leader (KIP-814) is told it leads and to skip the
    assignment, with the member list; anyone else gets the *previous* leader id and no members,
    so an old client never believes it is the leader."""
    g = ctx.group
    new_id = ctx.scratch["member_id"]
    old_id = ctx.scratch["old_member_id"]
    old_leader = ctx.scratch["old_leader"]
    assert isinstance(new_id, str) and isinstance(old_id, str)
    was_leader = old_leader == old_id
    if was_leader and join_request(ctx.inp).supports_skip_assignment:
        roster = tuple(JoinGroupMember(m.member_id, m.instance_id, m.metadata_for(g.protocol_name))
                       for m in g.members)
        return JoinGroupResponse(error, generation_id=g.generation, protocol_type=g.protocol_type,
                                 protocol_name=g.protocol_name, leader=new_id, member_id=new_id,
                                 skip_assignment=True, members=roster)
    return JoinGroupResponse(error, generation_id=g.generation, protocol_type=g.protocol_type,
                             protocol_name=g.protocol_name,
                             leader=old_leader if isinstance(old_leader, str) else "",
                             member_id=new_id)


@reply_form("static-restart-failed")
def static_restart_failed(ctx: Ctx, error: Error) -> Response:
    """GC:1368: the append failed: the mapped error with member id "", the current generation and
    protocol, and the leader as it was before the replacement."""
    err = ctx.settings.append_error
    assert isinstance(err, Error)
    g = ctx.group
    old_leader = ctx.scratch.get("old_leader")
    return JoinGroupResponse(map_store_group_error(err), generation_id=g.generation,
                             protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                             leader=old_leader if isinstance(old_leader, str) else "",
                             member_id="")


@reply_form("stored-assignment")
def stored_assignment(ctx: Ctx, error: Error) -> Response:
    """GC:636 (Stable): the member's stored assignment; the request's assignment is ignored."""
    g = ctx.group
    m = g.member(member_id_of(ctx.inp))
    assert m is not None
    return SyncGroupResponse(error, protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                             assignment=m.assignment)


@reply_form("ok")
def ok(ctx: Ctx, error: Error) -> Response:
    """Success shape of Heartbeat / LeaveGroup item / DeleteGroups entry."""
    return error_reply(ctx, error)


@reply_form("commit-result")
def commit_result(ctx: Ctx, error: Error) -> Response:
    """GC:1056: every partition NONE when the append succeeds, else the mapped append error."""
    assert isinstance(ctx.inp.request, OffsetCommitRequest)
    if ctx.settings.append_ok:
        code = error
    else:
        assert isinstance(ctx.settings.append_error, Error)
        code = map_offset_commit_error(ctx.settings.append_error)
    return OffsetCommitResponse(tuple((tp, code) for tp, _ in ctx.inp.request.offsets))


@reply_form("offsets")
def offsets(ctx: Ctx, error: Error) -> Response:
    """GC:1102: committed offsets, read "blindly" in any state; -1 where nothing is committed."""
    assert isinstance(ctx.inp.request, OffsetFetchRequest)
    stored = dict(ctx.group.offsets)
    wanted = ctx.inp.request.partitions
    if wanted is None:
        return OffsetFetchResponse(error, tuple((tp, off, Error.NONE) for tp, off in sorted(stored.items())))
    return OffsetFetchResponse(error, tuple((tp, stored.get(tp, -1), Error.NONE) for tp in wanted))


@reply_form("summary")
def summary(ctx: Ctx, error: Error) -> Response:
    """GM:601 summary: Stable reports its protocol and each member's metadata and assignment;
    every other state reports protocol "" and members with empty metadata and assignment; a
    missing group is reported as state "Dead" (GC:1139)."""
    g = ctx.group
    if g.state == GroupState.Missing:
        return DescribeGroupsResponse((DescribedGroup(error, g.group_id, "Dead", "", ""),))
    stable = g.state == GroupState.Stable
    members = tuple(DescribedMember(
        m.member_id, m.instance_id, m.client_id,
        m.metadata_for(g.protocol_name) if stable else b"",
        m.assignment if stable else b"") for m in g.members)
    return DescribeGroupsResponse((DescribedGroup(
        error, g.group_id, g.state.value, g.protocol_type or "",
        (g.protocol_name or "") if stable else "", members),))


@reply_form("listed")
def listed(ctx: Ctx, error: Error) -> Response:
    """GC:1117: the group appears in ListGroups with its protocol type and state."""
    g = ctx.group
    return ListGroupsResponse(error, (ListedGroup(g.group_id, g.protocol_type or "", g.state.value),))


@reply_form("not-listed")
def not_listed(ctx: Ctx, error: Error) -> Response:
    """The group does not appear in ListGroups (not in the cache, or filtered out)."""
    return ListGroupsResponse(error)
