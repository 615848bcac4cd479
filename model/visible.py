"""What a client sees of a response: the fields a scenario's `expect` keys name.

`actuals_of(response, group_id)` is the one projection of a response record onto the values a
client can check (error codes, generations, member ids, leaders, assignments, counts). The
scenario runner compares scenarios with it (conformance/expect.py) and `groupspec diff` compares
two tables' answers with it (check/diff.py).
"""

from __future__ import annotations

from typing import Optional, Union

from model.messages import (
    DeleteGroupsResponse,
    DescribedGroup,
    DescribeGroupsResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    Response,
    SyncGroupResponse,
)

Actual = Union[None, bool, int, str, list["Actual"], dict[str, "Actual"]]


def opt_sorted(values: list[Optional[str]]) -> list[Actual]:
    return list(sorted(values, key=lambda v: (v is not None, v or "")))


def actuals_of(response: Response, group_id: str) -> dict[str, Actual]:
    """The actual values of every expect key of the response's op (describe: group `group_id`)."""
    if isinstance(response, JoinGroupResponse):
        return {
            "error": response.error.name,
            "generation": response.generation_id,
            "member_id": response.member_id,
            "leader": response.leader,
            "members_count": len(response.members),
            "member_instance_ids": opt_sorted([m.group_instance_id for m in response.members]),
            "protocol_type": response.protocol_type,
            "protocol_name": response.protocol_name,
            "skip_assignment": response.skip_assignment,
        }
    if isinstance(response, SyncGroupResponse):
        return {
            "error": response.error.name,
            "assignment": response.assignment.hex(),
            "protocol_type": response.protocol_type,
            "protocol_name": response.protocol_name,
        }
    if isinstance(response, HeartbeatResponse):
        return {"error": response.error.name}
    if isinstance(response, LeaveGroupResponse):
        return {
            "error": response.error.name,
            "member_errors": [m.error.name for m in response.members],
        }
    if isinstance(response, OffsetCommitResponse):
        return {"errors": {str(tp): e.name for tp, e in response.partitions}}
    if isinstance(response, OffsetFetchResponse):
        return {
            "error": response.error.name,
            "offsets": {str(tp): off for tp, off, _ in response.partitions},
        }
    if isinstance(response, DescribeGroupsResponse):
        described = _described(response, group_id)
        if described is None:
            return {"error": None, "state": None, "members_count": None}
        return actuals_of_described(described)
    if isinstance(response, ListGroupsResponse):
        return {"error": response.error.name, "count": len(response.groups)}
    if isinstance(response, DeleteGroupsResponse):
        return {"errors": {g: e.name for g, e in response.results}}
    raise TypeError(f"not a response record: {response!r}")


def _described(response: DescribeGroupsResponse, group_id: str) -> Optional[DescribedGroup]:
    for g in response.groups:
        if g.group_id == group_id:
            return g
    return response.groups[0] if len(response.groups) == 1 else None


def actuals_of_described(g: DescribedGroup) -> dict[str, Actual]:
    ids: list[Actual] = [m.member_id for m in g.members]
    return {
        "error": g.error.name,
        "state": g.state,
        "protocol_type": g.protocol_type,
        "protocol": g.protocol,
        "members_count": len(g.members),
        "member_ids": ids,
        "first_member_id": g.members[0].member_id if g.members else None,
        "member_instance_ids": opt_sorted([m.group_instance_id for m in g.members]),
        "members_empty": all(not m.metadata and not m.assignment for m in g.members),
    }
