"""Producers of trace rows: a `Recorder` that turns coordinator calls into rows, and a recording proxy.

`TraceRecorder` implements `model.coordinator_api.Recorder` and numbers each group's rows. A
coordinator given one reports timers and transitions it makes; `RecordingCoordinator` wraps any
`Coordinator` and records what a driver does to it (requests, clock advances) and the responses it
gets, so a trace can be recorded from a coordinator that takes no recorder at all (the model).
"""

from __future__ import annotations

from typing import Callable, Optional

from model.coordinator_api import Coordinator, Recorder, ResponseCallback
from model.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsRequest,
    OffsetCommitResponse,
    Request,
    Response,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
)
from model.vocabulary import Error, GroupState, TimerEvent
from traces import codec
from traces.schema import EventKind, TraceEvent

Sink = Callable[[TraceEvent], None]
NO_GROUP = "*"  # group id of a request that names no single group (ListGroups)


def request_group(request: Request) -> str:
    if isinstance(request, ListGroupsRequest):
        return NO_GROUP
    if isinstance(request, (DescribeGroupsRequest, DeleteGroupsRequest)):
        return request.group_ids[0] if len(request.group_ids) == 1 else NO_GROUP
    return request.group_id


def response_error(response: Response) -> Optional[Error]:
    """The error a response carries: top level, or the first per-item error."""
    if isinstance(response, OffsetCommitResponse):
        return response.partitions[0][1] if response.partitions else None
    if isinstance(response, DeleteGroupsResponse):
        return response.results[0][1] if response.results else None
    if isinstance(response, DescribeGroupsResponse):
        return response.groups[0].error if response.groups else None
    error = getattr(response, "error", None)
    return error if isinstance(error, Error) else None


class TraceRecorder:
    """A Recorder whose calls become TraceEvent rows, numbered per group, handed to `sink`."""

    def __init__(self, sink: Sink, source: str) -> None:
        self._sink = sink
        self._source = source
        self._seq: dict[str, int] = {}
        self._request_meta: dict[int, tuple[str, str]] = {}  # request id -> (group, api)

    def _emit(self, group_id: str, **fields: object) -> None:
        seq = self._seq.get(group_id, 0)
        self._seq[group_id] = seq + 1
        self._sink(TraceEvent(group_id=group_id, seq=seq, source=self._source, **fields))  # type: ignore[arg-type]

    def on_request(self, now_ms: int, request_id: int, request: Request) -> None:
        group_id = request_group(request)
        self._request_meta[request_id] = (group_id, request.api_key.name)
        self._emit(
            group_id,
            ts_ms=now_ms,
            kind=EventKind.request,
            member_id=getattr(request, "member_id", None),
            instance_id=getattr(request, "group_instance_id", None),
            api=request.api_key.name,
            request_id=request_id,
            generation=getattr(request, "generation_id", None),
            payload=codec.dumps_record(request),
        )

    def on_response(self, now_ms: int, request_id: int, group_id: str, response: Response) -> None:
        known = self._request_meta.pop(request_id, None)
        api = known[1] if known else _api_of_response(response)
        error = response_error(response)
        join = response if isinstance(response, JoinGroupResponse) else None
        self._emit(
            known[0] if known else group_id,
            ts_ms=now_ms,
            kind=EventKind.response,
            member_id=join.member_id if join else None,
            api=api,
            request_id=request_id,
            generation=join.generation_id if join else None,
            error=error.name if error else None,
            payload=codec.dumps_record(response),
        )

    def on_timer(self, now_ms: int, group_id: str, event: TimerEvent, member_id: Optional[str]) -> None:
        self._emit(group_id, ts_ms=now_ms, kind=EventKind.timer, api=event.name, member_id=member_id)

    def on_transition(
        self, now_ms: int, group_id: str, source: GroupState, target: GroupState, generation_id: int
    ) -> None:
        self._emit(
            group_id,
            ts_ms=now_ms,
            kind=EventKind.transition,
            from_state=source.name,
            to_state=target.name,
            generation=generation_id,
        )

    def on_advance(self, now_ms: int, group_id: str) -> None:
        """Not part of the Recorder protocol: the driver moved the clock to `now_ms`."""
        self._emit(group_id, ts_ms=now_ms, kind=EventKind.advance)


def _api_of_response(response: Response) -> str:
    for request_type, response_type in codec.RESPONSE_FOR_REQUEST.items():
        if isinstance(response, response_type):
            return str(getattr(request_type, "__dataclass_fields__")["api_key"].default.name)
    raise TypeError(type(response).__name__)


class InternalEventsOnly:
    """The Recorder a recorded coordinator is given: it forwards timers and transitions only
    (the RecordingCoordinator around it already records requests and responses)."""

    def __init__(self, recorder: TraceRecorder) -> None:
        self._recorder = recorder

    def on_request(self, now_ms: int, request_id: int, request: Request) -> None:
        pass

    def on_response(self, now_ms: int, request_id: int, group_id: str, response: Response) -> None:
        pass

    def on_timer(self, now_ms: int, group_id: str, event: TimerEvent, member_id: Optional[str]) -> None:
        self._recorder.on_timer(now_ms, group_id, event, member_id)

    def on_transition(
        self, now_ms: int, group_id: str, source: GroupState, target: GroupState, generation_id: int
    ) -> None:
        self._recorder.on_transition(now_ms, group_id, source, target, generation_id)


class RecordingCoordinator:
    """A Coordinator proxy: what the driver does and what it gets back become rows of one group."""

    def __init__(self, inner: Coordinator, recorder: TraceRecorder, group_id: str) -> None:
        self._inner = inner
        self._recorder = recorder
        self._group_id = group_id
        self._next_request_id = 0

    def handle(self, request: Request, callback: ResponseCallback) -> None:
        request_id = self._next_request_id
        self._next_request_id += 1
        self._recorder.on_request(self._inner.now_ms(), request_id, request)

        def record_and_deliver(response: Response) -> None:
            self._recorder.on_response(self._inner.now_ms(), request_id, self._group_id, response)
            callback(response)

        self._inner.handle(request, record_and_deliver)

    def advance(self, ms: int) -> None:
        self._recorder.on_advance(self._inner.now_ms() + ms, self._group_id)
        self._inner.advance(ms)

    def now_ms(self) -> int:
        return self._inner.now_ms()


def _check_protocols() -> None:  # static check that the classes satisfy the protocols
    _r: Recorder = InternalEventsOnly(TraceRecorder(lambda e: None, "x"))
    _t: Recorder = TraceRecorder(lambda e: None, "x")
