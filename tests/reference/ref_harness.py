"""A small driver for the reference coordinator: deterministic member ids, captured responses."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Generic, Optional, TypeVar

from model.coordinator_api import CoordinatorConfig, Recorder
from model.messages import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribedGroup, DescribeGroupsRequest,
    DescribeGroupsResponse, GroupView, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse,
    MemberIdentity, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, ProtocolMetadata, Request, Response, SyncGroupRequest, SyncGroupResponse,
    TopicPartition
)
from model.vocabulary import Error, GroupState, TimerEvent

from reference import ReferenceCoordinator

RANGE = (ProtocolMetadata("range", b"\x01"),)
TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


_R = TypeVar("_R")


class _One(Generic[_R]):
    """A Call attribute that is the call's one response, checked to be a `kind`."""

    def __init__(self, kind: type[_R]) -> None:
        self.kind = kind

    def __get__(self, call: Call, owner: object) -> _R:
        return call.one_of(self.kind)


@dataclass
class Call:
    """Collects the responses of one request (Kafka answers each at most once)."""

    responses: list[Response] = field(default_factory=list)

    def __call__(self, response: Response) -> None:
        self.responses.append(response)

    @property
    def done(self) -> bool:
        return len(self.responses) > 0

    def one(self) -> Response:
        assert len(self.responses) == 1, f"expected exactly one response, got {self.responses}"
        return self.responses[0]

    def one_of(self, kind: type[_R]) -> _R:
        r = self.one()
        assert isinstance(r, kind), f"expected a {kind.__name__}, got {r!r}"
        return r

    # `call.join` is the call's one response, checked to be a JoinGroupResponse; and so on.
    join = _One(JoinGroupResponse)
    sync = _One(SyncGroupResponse)
    heartbeat = _One(HeartbeatResponse)
    leave = _One(LeaveGroupResponse)
    commit = _One(OffsetCommitResponse)


class EventLog:
    """A Recorder that keeps every call as a tuple."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_request(self, now_ms: int, request_id: int, request: Any) -> None:
        self.events.append(("request", now_ms, request_id, type(request).__name__))

    def on_response(self, now_ms: int, request_id: int, group_id: str, response: Any) -> None:
        self.events.append(("response", now_ms, request_id, group_id, response))

    def on_timer(self, now_ms: int, group_id: str, event: TimerEvent, member_id: Optional[str]) -> None:
        self.events.append(("timer", now_ms, group_id, event, member_id))

    def on_transition(
        self, now_ms: int, group_id: str, source: GroupState, target: GroupState, generation_id: int
    ) -> None:
        self.events.append(("transition", now_ms, group_id, source, target, generation_id))

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [e for e in self.events if e[0] == kind]


class H:
    """Harness: `H(group_initial_rebalance_delay_ms=0)` etc. take CoordinatorConfig fields."""

    def __init__(
        self, *, bugs: frozenset[str] = frozenset(), recorder: Optional[Recorder] = None, **config: Any
    ) -> None:
        counter = itertools.count(1)
        self.config = CoordinatorConfig(**config)
        self.c = ReferenceCoordinator(self.config, recorder, bugs, uuid_source=lambda: f"u{next(counter)}")

    # --- requests ---------------------------------------------------------------------

    def send(self, request: Request) -> Call:
        call = Call()
        self.c.handle(request, call)
        return call

    def join(
        self,
        member: str = "",
        group: str = "g",
        instance: Optional[str] = None,
        protocols: tuple[ProtocolMetadata, ...] = RANGE,
        protocol_type: str = "consumer",
        session: int = 10000,
        rebalance: int = 300000,
        require_known: bool = True,
        skip: bool = True,
        client_id: str = "c",
    ) -> Call:
        return self.send(
            JoinGroupRequest(
                group,
                member,
                protocol_type,
                protocols,
                session_timeout_ms=session,
                rebalance_timeout_ms=rebalance,
                group_instance_id=instance,
                require_known_member_id=require_known,
                supports_skip_assignment=skip,
                client_id=client_id,
            )
        )

    def sync(
        self,
        member: str,
        generation: int,
        group: str = "g",
        assignments: tuple[tuple[str, bytes], ...] = (),
        instance: Optional[str] = None,
        protocol_type: Optional[str] = None,
        protocol_name: Optional[str] = None,
    ) -> Call:
        return self.send(SyncGroupRequest(group, member, generation, instance, protocol_type, protocol_name, assignments))

    def heartbeat(self, member: str, generation: int, group: str = "g", instance: Optional[str] = None) -> Call:
        return self.send(HeartbeatRequest(group, member, generation, instance))

    def leave(self, *members: MemberIdentity, group: str = "g") -> Call:
        return self.send(LeaveGroupRequest(group, tuple(members)))

    def commit(
        self,
        member: str,
        generation: int,
        offsets: tuple[tuple[TopicPartition, int], ...] = ((TP0, 5),),
        group: str = "g",
        instance: Optional[str] = None,
    ) -> Call:
        return self.send(OffsetCommitRequest(group, member, generation, offsets, instance))

    def fetch(self, partitions: Optional[tuple[TopicPartition, ...]] = (TP0,), group: str = "g") -> OffsetFetchResponse:
        return self.send(OffsetFetchRequest(group, partitions)).one_of(OffsetFetchResponse)

    def describe(self, group: str = "g") -> DescribedGroup:
        return self.send(DescribeGroupsRequest((group,))).one_of(DescribeGroupsResponse).groups[0]

    def list_groups(self, *states: str) -> ListGroupsResponse:
        return self.send(ListGroupsRequest(tuple(states))).one_of(ListGroupsResponse)

    def delete(self, *groups: str) -> DeleteGroupsResponse:
        return self.send(DeleteGroupsRequest(tuple(groups))).one_of(DeleteGroupsResponse)

    # --- state --------------------------------------------------------------------------

    def view(self, group: str = "g") -> GroupView:
        v = self.c.group_view(group)
        assert v is not None, f"group {group} does not exist"
        return v

    def state(self, group: str = "g") -> GroupState:
        return self.view(group).state

    def rebalances_without(self, member: str, group: str = "g") -> bool:
        """The member is gone and the group is rebalancing (what an expiry that removes it leaves)."""
        v = self.view(group)
        return v.member(member) is None and v.state == GroupState.PreparingRebalance

    def advance(self, ms: int) -> None:
        self.c.advance(ms)

    # --- composite steps --------------------------------------------------------------

    def new_member(self, group: str = "g", **kw: Any) -> tuple[str, Call]:
        """KIP-394 two-phase join: returns the member id and the (parked) second JoinGroup."""
        first = self.join(group=group, **kw).join
        assert first.error == Error.MEMBER_ID_REQUIRED, first
        return first.member_id, self.join(first.member_id, group=group, **kw)

    def joined(self, calls: list[Call]) -> list[JoinGroupResponse]:
        """The JoinGroup answers of `calls`, once the join phase completes (the initial rebalance
        delay waited out); each must be a success."""
        for _ in range(10):
            if all(c.done for c in calls):
                break
            self.advance(self.config.group_initial_rebalance_delay_ms + 1)
        responses = [c.join for c in calls]
        assert all(r.error == Error.NONE for r in responses), responses
        return responses

    def stable(self, n: int = 2, group: str = "g", **kw: Any) -> list[str]:
        """Bring a fresh group to Stable generation 1 with n dynamic members; returns ids (leader first)."""
        ids: list[str] = []
        calls: list[Call] = []
        for _ in range(n):
            mid, call = self.new_member(group=group, **kw)
            ids.append(mid)
            calls.append(call)
        responses = self.joined(calls)
        generation = responses[0].generation_id
        leader = responses[0].leader
        ids.sort(key=lambda m: m != leader)
        syncs = [self.sync(m, generation, group=group, assignments=tuple((x, x.encode()) for x in ids)) for m in ids]
        assert all(s.sync.error == Error.NONE for s in syncs), [s.responses for s in syncs]
        assert self.state(group) == GroupState.Stable
        return ids

    def static_stable(self, instances: tuple[str, ...] = ("i1", "i2"), group: str = "g", **kw: Any) -> list[str]:
        calls = [self.join(group=group, instance=i, **kw) for i in instances]
        responses = self.joined(calls)
        ids = [r.member_id for r in responses]
        generation = responses[0].generation_id
        for m in ids:
            self.sync(m, generation, group=group, assignments=tuple((x, x.encode()) for x in ids))
        assert self.state(group) == GroupState.Stable
        return ids
