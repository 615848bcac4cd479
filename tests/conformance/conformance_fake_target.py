"""A tiny fake coordinator for runner-mechanics tests ONLY (no group semantics).

JoinGroup with member id "" answers at once (generation 1, member "m-1", leader itself); any other
JoinGroup is parked and answered (generation 2) by the next advance. Heartbeat answers
`heartbeat_error`. Knobs make it misbehave (answer twice, raise) for negative controls.
"""

from __future__ import annotations

from typing import Optional

from model.coordinator_api import CoordinatorConfig, ResponseCallback
from model.messages import (
    DescribedGroup, DescribedMember, DescribeGroupsRequest, DescribeGroupsResponse, GroupView,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, MemberView, Request
)
from model.vocabulary import Error, GroupState


class FakeCoordinator:
    def __init__(self, config: CoordinatorConfig, heartbeat_error: Error = Error.NONE) -> None:
        self.config = config
        self.heartbeat_error = heartbeat_error
        self.answer_twice = False
        self.raise_on_heartbeat = False
        self.now = 0
        self.parked: list[tuple[JoinGroupRequest, ResponseCallback]] = []
        self.members: list[str] = []

    def handle(self, request: Request, callback: ResponseCallback) -> None:
        if isinstance(request, JoinGroupRequest):
            if request.member_id == "":
                self.members.append("m-1")
                response = JoinGroupResponse(Error.NONE, 1, "consumer", "range", "m-1", "m-1")
                callback(response)
                if self.answer_twice:
                    callback(response)
            else:
                self.parked.append((request, callback))
        elif isinstance(request, HeartbeatRequest):
            if self.raise_on_heartbeat:
                raise RuntimeError("boom")
            callback(HeartbeatResponse(self.heartbeat_error))
        elif isinstance(request, DescribeGroupsRequest):
            members = tuple(DescribedMember(m, None, "c", b"", b"") for m in self.members)
            state = "Stable" if self.members else "Dead"
            callback(DescribeGroupsResponse((DescribedGroup(Error.NONE, request.group_ids[0], state, "consumer", "", members),)))
        else:
            raise NotImplementedError(type(request).__name__)

    def advance(self, ms: int) -> None:
        self.now += ms
        parked, self.parked = self.parked, []
        for req, cb in parked:
            cb(JoinGroupResponse(Error.NONE, 2, "consumer", "range", req.member_id, req.member_id))

    def now_ms(self) -> int:
        return self.now


class WhiteBoxFake(FakeCoordinator):
    """Adds the white-box hooks (group_view, append result, unload/load)."""

    def __init__(self, config: CoordinatorConfig) -> None:
        super().__init__(config)
        self.append_results: list[Error] = []

    def group_view(self, group_id: str) -> Optional[GroupView]:
        if not self.members:
            return None
        views = tuple(MemberView(m, None, 10000, 300000, False, False, False, b"") for m in self.members)
        return GroupView(group_id, GroupState.Stable, 1, "consumer", "range", self.members[0], views, ())

    def set_append_result(self, error: Error) -> None:
        self.append_results.append(error)

    def unload(self, group_id: str) -> None:
        self.members = []

    def load(self, group_id: str) -> None:
        pass
