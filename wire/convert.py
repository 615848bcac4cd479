"""Between the project's records (`model.messages`) and wire bodies, per API version.

Outgoing: `request_body(request, version)` -> (api, body dict); `response_body` for the other side.
Incoming: `response_record(api, version, body)` and `request_record(api, version, body)`.
Version-dependent meaning is decided here and nowhere else:

- JoinGroup below v4 has no MEMBER_ID_REQUIRED round trip, below v9 no skip-assignment:
  `join_group_version` picks the version a request's `require_known_member_id` /
  `supports_skip_assignment` flags ask for.
- JoinGroupResponse.ProtocolName is not nullable below v7; Kafka writes "" there for "none", which
  is read back as None.
- LeaveGroup below v3 carries one member id and no per-member results.
- OffsetFetch below v2 cannot ask for "all partitions" (null topics) and has no top-level error.
An unknown error code from a broker is a DecodeError (it cannot be represented as `Error`).
"""

from __future__ import annotations

from itertools import groupby
from typing import Any, Optional

from model import messages as m
from model.vocabulary import ApiKey, Error
from wire.errors import DecodeError, EncodeError
from wire.schema import Struct


def join_group_version(request: m.JoinGroupRequest, highest: int) -> int:
    """The JoinGroup version that makes the broker behave as the request's flags say."""
    version = highest
    if not request.supports_skip_assignment:
        version = min(version, 8)
    if not request.require_known_member_id and request.group_instance_id is None:
        version = min(version, 3)
    return version


def sync_group_version(request: m.SyncGroupRequest, highest: int) -> int:
    """SyncGroup v5+ must carry protocol type and name (Kafka's KafkaApis answers a v5+ request
    without them INCONSISTENT_GROUP_PROTOCOL before the coordinator sees it,
    SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent); a request without them is sent
    as v4, the newest version where they are absent, as a client of that version would."""
    if request.protocol_type is None or request.protocol_name is None:
        return min(highest, 4)
    return highest


def _error(code: int, api: ApiKey, version: int) -> Error:
    try:
        return Error.from_code(code)
    except KeyError:
        raise DecodeError(f"{api.name}Response", version, 0, f"unknown error code {code}") from None


def _fail(api: ApiKey, version: int, field: str, reason: str) -> EncodeError:
    return EncodeError(f"{api.name}Request", version, field, reason)


# ------------------------------------------------------------------ requests


def _same_named(record: object, *names: str) -> Struct:
    """The wire fields that carry a record's attributes of the same (snake_case) name."""
    return {name: getattr(record, name) for name in names}


def request_body(request: m.Request, version: int) -> tuple[ApiKey, Struct]:
    if isinstance(request, m.JoinGroupRequest):
        return ApiKey.JoinGroup, {
            **_same_named(request, "group_id", "session_timeout_ms", "rebalance_timeout_ms", "member_id",
                          "group_instance_id", "protocol_type"),
            "protocols": [{"name": p.name, "metadata": p.metadata} for p in request.protocols],
            "reason": request.reason,
        }
    if isinstance(request, m.SyncGroupRequest):
        return ApiKey.SyncGroup, {
            **_same_named(request, "group_id", "generation_id", "member_id", "group_instance_id",
                          "protocol_type", "protocol_name"),
            "assignments": [{"member_id": k, "assignment": v} for k, v in request.assignments],
        }
    if isinstance(request, m.HeartbeatRequest):
        return ApiKey.Heartbeat, _same_named(request, "group_id", "generation_id", "member_id", "group_instance_id")
    if isinstance(request, m.LeaveGroupRequest):
        if version < 3:
            if len(request.members) != 1 or request.members[0].group_instance_id is not None:
                raise _fail(ApiKey.LeaveGroup, version, "Members",
                            "versions below 3 carry exactly one dynamic member id")
            return ApiKey.LeaveGroup, {"group_id": request.group_id,
                                       "member_id": request.members[0].member_id}
        return ApiKey.LeaveGroup, {
            "group_id": request.group_id,
            "members": [{"member_id": x.member_id, "group_instance_id": x.group_instance_id}
                        for x in request.members],
        }
    if isinstance(request, m.OffsetCommitRequest):
        return ApiKey.OffsetCommit, {
            **_same_named(request, "group_id", "member_id", "group_instance_id"),
            "generation_id_or_member_epoch": request.generation_id,
            "topics": [
                {"name": topic, "partitions": [
                    {"partition_index": tp.partition, "committed_offset": off,
                     "committed_metadata": ""} for tp, off in items]}
                for topic, items in _by_topic(request.offsets)
            ],
        }
    if isinstance(request, m.OffsetFetchRequest):
        topics: Optional[list[Struct]] = None
        if request.partitions is not None:
            topics = [{"name": topic, "partition_indexes": [tp.partition for tp in tps]}
                      for topic, tps in groupby(sorted(request.partitions), key=lambda tp: tp.topic)]
        elif version < 2:
            raise _fail(ApiKey.OffsetFetch, version, "Topics", "null (all partitions) needs version 2+")
        if version >= 8:
            return ApiKey.OffsetFetch, {"groups": [{"group_id": request.group_id, "topics": topics}]}
        return ApiKey.OffsetFetch, {"group_id": request.group_id, "topics": topics}
    if isinstance(request, m.DescribeGroupsRequest):
        return ApiKey.DescribeGroups, {"groups": list(request.group_ids)}
    if isinstance(request, m.ListGroupsRequest):
        return ApiKey.ListGroups, {"states_filter": list(request.states_filter)}
    if isinstance(request, m.DeleteGroupsRequest):
        return ApiKey.DeleteGroups, {"groups_names": list(request.group_ids)}
    raise TypeError(f"not a request record: {request!r}")


def _by_topic(offsets: tuple[tuple[m.TopicPartition, int], ...]) -> list[tuple[str, list[Any]]]:
    ordered: dict[str, list[tuple[m.TopicPartition, int]]] = {}
    for tp, off in offsets:
        ordered.setdefault(tp.topic, []).append((tp, off))
    return list(ordered.items())


def request_record(api: ApiKey, version: int, b: Struct) -> m.Request:
    """The record a wire request body stands for (the broker side of `request_body`)."""
    if api is ApiKey.JoinGroup:
        return m.JoinGroupRequest(
            group_id=b["group_id"], member_id=b["member_id"], protocol_type=b["protocol_type"],
            protocols=tuple(m.ProtocolMetadata(p["name"], p["metadata"]) for p in b["protocols"]),
            session_timeout_ms=b["session_timeout_ms"],
            rebalance_timeout_ms=b["rebalance_timeout_ms"] if version >= 1 else b["session_timeout_ms"],
            group_instance_id=b["group_instance_id"], require_known_member_id=version >= 4,
            supports_skip_assignment=version >= 9, reason=b["reason"])
    if api is ApiKey.SyncGroup:
        return m.SyncGroupRequest(
            group_id=b["group_id"], member_id=b["member_id"], generation_id=b["generation_id"],
            group_instance_id=b["group_instance_id"], protocol_type=b["protocol_type"],
            protocol_name=b["protocol_name"],
            assignments=tuple((a["member_id"], a["assignment"]) for a in b["assignments"]))
    if api is ApiKey.Heartbeat:
        return m.HeartbeatRequest(b["group_id"], b["member_id"], b["generation_id"],
                                  b["group_instance_id"])
    if api is ApiKey.LeaveGroup:
        if version < 3:
            return m.LeaveGroupRequest(b["group_id"], (m.MemberIdentity(b["member_id"]),))
        return m.LeaveGroupRequest(b["group_id"], tuple(
            m.MemberIdentity(x["member_id"], x["group_instance_id"]) for x in b["members"]))
    if api is ApiKey.OffsetCommit:
        return m.OffsetCommitRequest(
            group_id=b["group_id"], member_id=b["member_id"],
            generation_id=b["generation_id_or_member_epoch"],
            offsets=tuple((m.TopicPartition(t["name"], p["partition_index"]), p["committed_offset"])
                          for t in b["topics"] for p in t["partitions"]),
            group_instance_id=b["group_instance_id"])
    if api is ApiKey.OffsetFetch:
        group, topics = (b["group_id"], b["topics"]) if version < 8 else (
            b["groups"][0]["group_id"] if b["groups"] else "", b["groups"][0]["topics"] if b["groups"] else [])
        parts = None if topics is None else tuple(
            m.TopicPartition(t["name"], p) for t in topics for p in t["partition_indexes"])
        return m.OffsetFetchRequest(group, parts)
    if api is ApiKey.DescribeGroups:
        return m.DescribeGroupsRequest(tuple(b["groups"]))
    if api is ApiKey.ListGroups:
        return m.ListGroupsRequest(tuple(b["states_filter"]))
    if api is ApiKey.DeleteGroups:
        return m.DeleteGroupsRequest(tuple(b["groups_names"]))
    raise TypeError(f"no record for {api!r}")


# ------------------------------------------------------------------ responses


def response_record(api: ApiKey, version: int, b: Struct) -> m.Response:
    def err(code: int) -> Error:
        return _error(code, api, version)

    if api is ApiKey.JoinGroup:
        name = b["protocol_name"]
        return m.JoinGroupResponse(
            error=err(b["error_code"]), generation_id=b["generation_id"],
            protocol_type=b["protocol_type"],
            protocol_name=None if (version < 7 and name == "") else name,
            leader=b["leader"], member_id=b["member_id"], skip_assignment=b["skip_assignment"],
            members=tuple(m.JoinGroupMember(x["member_id"], x["group_instance_id"], x["metadata"])
                          for x in b["members"]))
    if api is ApiKey.SyncGroup:
        return m.SyncGroupResponse(err(b["error_code"]), b["protocol_type"], b["protocol_name"],
                                   b["assignment"])
    if api is ApiKey.Heartbeat:
        return m.HeartbeatResponse(err(b["error_code"]))
    if api is ApiKey.LeaveGroup:
        return m.LeaveGroupResponse(err(b["error_code"]), tuple(
            m.MemberLeaveResult(x["member_id"], x["group_instance_id"], err(x["error_code"]))
            for x in b["members"]))
    if api is ApiKey.OffsetCommit:
        return m.OffsetCommitResponse(tuple(
            (m.TopicPartition(t["name"], p["partition_index"]), err(p["error_code"]))
            for t in b["topics"] for p in t["partitions"]))
    if api is ApiKey.OffsetFetch:
        if version >= 8:
            if len(b["groups"]) != 1:
                raise DecodeError("OffsetFetchResponse", version, 0,
                                  f"expected one group, got {len(b['groups'])}")
            g = b["groups"][0]
            top, topics = err(g["error_code"]), g["topics"]
        else:
            top, topics = err(b["error_code"]), b["topics"]
        return m.OffsetFetchResponse(top, tuple(
            (m.TopicPartition(t["name"], p["partition_index"]), p["committed_offset"],
             err(p["error_code"])) for t in topics for p in t["partitions"]))
    if api is ApiKey.DescribeGroups:
        return m.DescribeGroupsResponse(tuple(
            m.DescribedGroup(
                err(g["error_code"]), g["group_id"], g["group_state"], g["protocol_type"],
                g["protocol_data"], tuple(
                    m.DescribedMember(x["member_id"], x["group_instance_id"], x["client_id"],
                                      x["member_metadata"], x["member_assignment"])
                    for x in g["members"]))
            for g in b["groups"]))
    if api is ApiKey.ListGroups:
        return m.ListGroupsResponse(err(b["error_code"]), tuple(
            m.ListedGroup(g["group_id"], g["protocol_type"], g["group_state"]) for g in b["groups"]))
    if api is ApiKey.DeleteGroups:
        return m.DeleteGroupsResponse(tuple((r["group_id"], err(r["error_code"])) for r in b["results"]))
    raise TypeError(f"no record for {api!r}")


def response_body(response: m.Response, version: int) -> tuple[ApiKey, Struct]:
    """The wire body of a response record (the broker side of `response_record`)."""
    r = response
    if isinstance(r, m.JoinGroupResponse):
        name = r.protocol_name if (r.protocol_name is not None or version >= 7) else ""
        return ApiKey.JoinGroup, {
            "error_code": r.error.code, "generation_id": r.generation_id,
            "protocol_type": r.protocol_type, "protocol_name": name, "leader": r.leader,
            "skip_assignment": r.skip_assignment, "member_id": r.member_id,
            "members": [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                         "metadata": x.metadata} for x in r.members]}
    if isinstance(r, m.SyncGroupResponse):
        return ApiKey.SyncGroup, {"error_code": r.error.code, "protocol_type": r.protocol_type,
                                  "protocol_name": r.protocol_name, "assignment": r.assignment}
    if isinstance(r, m.HeartbeatResponse):
        return ApiKey.Heartbeat, {"error_code": r.error.code}
    if isinstance(r, m.LeaveGroupResponse):
        return ApiKey.LeaveGroup, {"error_code": r.error.code, "members": [
            {"member_id": x.member_id, "group_instance_id": x.group_instance_id,
             "error_code": x.error.code} for x in r.members]}
    if isinstance(r, m.OffsetCommitResponse):
        commits: dict[str, list[Struct]] = {}
        for tp, e in r.partitions:
            commits.setdefault(tp.topic, []).append({"partition_index": tp.partition, "error_code": e.code})
        return ApiKey.OffsetCommit, {"topics": [{"name": t, "partitions": ps} for t, ps in commits.items()]}
    if isinstance(r, m.OffsetFetchResponse):
        fetched: dict[str, list[Struct]] = {}
        for tp, off, e in r.partitions:
            fetched.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "committed_offset": off, "metadata": "",
                 "error_code": e.code})
        topics = [{"name": t, "partitions": ps} for t, ps in fetched.items()]
        if version >= 8:
            raise EncodeError("OffsetFetchResponse", version, "Groups",
                              "the record does not name its group; use a version below 8")
        return ApiKey.OffsetFetch, {"topics": topics, "error_code": r.error.code}
    if isinstance(r, m.DescribeGroupsResponse):
        return ApiKey.DescribeGroups, {"groups": [
            {"error_code": g.error.code, "group_id": g.group_id, "group_state": g.state,
             "protocol_type": g.protocol_type, "protocol_data": g.protocol, "members": [
                 {"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                  "client_id": x.client_id, "client_host": "", "member_metadata": x.metadata,
                  "member_assignment": x.assignment} for x in g.members]} for g in r.groups]}
    if isinstance(r, m.ListGroupsResponse):
        return ApiKey.ListGroups, {"error_code": r.error.code, "groups": [
            {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state}
            for g in r.groups]}
    if isinstance(r, m.DeleteGroupsResponse):
        return ApiKey.DeleteGroups, {"results": [{"group_id": g, "error_code": e.code}
                                                 for g, e in r.results]}
    raise TypeError(f"not a response record: {response!r}")
