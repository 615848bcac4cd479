"""A remote broker as a `model.coordinator_api.Coordinator`: the scenario runner's wire target.

Members and connections. A Kafka broker handles one request per connection at a time (the
channel is muted until the response is sent), and JoinGroup / SyncGroup park on the broker side,
so every simulated client needs its own socket:

- a JoinGroup with member id "" is a new client: it gets a fresh connection; when its response
  names a member id (including a MEMBER_ID_REQUIRED response), that connection becomes the first
  connection of the member `(group, member id)`;
- a request naming a member (JoinGroup with a known id, SyncGroup, Heartbeat, OffsetCommit, a
  LeaveGroup of exactly one member) goes to an idle connection of that member, and a new
  connection is added to the member when all of its connections are waiting (a heartbeat while
  the member's JoinGroup is parked must not queue behind it);
- other requests (DescribeGroups, ListGroups, DeleteGroups, OffsetFetch, batch LeaveGroup) use an
  idle "admin" connection.

Time. Requests go out at once; `handle` waits up to `immediate_wait_s` of real time for the
response (a parked request does not answer and is left pending), then `settle_s` more for
responses it released on other connections. `advance(ms)` sleeps `ms * time_scale` seconds while
delivering whatever arrives; the broker's own timers run in real time, so `time_scale` must be 1.0
for scenarios that depend on broker timeouts to line up with the scenario's clock. Callbacks run
on the caller's thread, inside `handle` or `advance`.

Group ids are renamed `groupspec-<8 hex>-<name>` (fresh per target) on the way out and back;
ListGroups answers are cut to this target's groups. A transport failure is raised from
`handle`/`advance` as the typed error.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import queue
import time
import uuid
from types import TracebackType
from typing import Callable, Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig, ResponseCallback
from model.vocabulary import ApiKey, Error
from wire import convert
from wire.errors import TimeBudgetExceeded, TransportError, WireError
from wire.transport import (
    Connection, CoordinatorAddress, Outcome, api_versions, check_loopback, find_coordinator,
    negotiate,
)

_MemberKey = Optional[tuple[str, str]]


def unsupported_config(config: CoordinatorConfig) -> Optional[str]:
    """Why a scenario config cannot be honoured by a remote broker (None: it can be run)."""
    if config.not_owned_groups:
        return "config not_owned_groups needs a coordinator that can be told not to own a group"
    if config.append_result is not Error.NONE:
        return f"config append_result={config.append_result.name} needs control over log appends"
    return None


@dataclasses.dataclass(slots=True)
class _InFlight:
    api: ApiKey
    version: int
    callback: ResponseCallback
    connection: Connection
    request: m.Request  # as sent (renamed group ids)


class KafkaTarget:
    """Drives a real broker at host:port through the Coordinator interface."""

    real_clock = True  # the broker's timers run on the real clock: scenario step tolerances apply

    def __init__(
        self,
        host: str,
        port: int,
        config: CoordinatorConfig = CoordinatorConfig(),
        time_scale: float = 1.0,
        *,
        allow_remote: bool = False,
        pinned_versions: Optional[dict[ApiKey, int]] = None,
        client_id: str = "groupspec",
        request_timeout_s: float = 10.0,
        immediate_wait_s: float = 0.5,
        settle_s: float = 0.05,
        max_requests: int = 10_000,
        max_real_wait_s: float = 120.0,
        max_connections: int = 64,
        align_clock: bool = False,
    ) -> None:
        check_loopback(host, port, allow_remote)
        if time_scale < 0:
            raise ValueError(f"time_scale must be >= 0, got {time_scale}")
        self.host, self.port, self.config, self.time_scale = host, port, config, time_scale
        self.allow_remote = allow_remote
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.immediate_wait_s = immediate_wait_s
        self.settle_s = settle_s
        self.max_requests = max_requests
        self.max_real_wait_s = max_real_wait_s
        self.max_connections = max_connections
        self.group_prefix = f"groupspec-{uuid.uuid4().hex[:8]}-"
        self._clock_ms = 0
        self._real_waited_s = 0.0
        self.align_clock = align_clock
        self._t0 = time.monotonic()  # real time of virtual 0 (set again by the first request)
        self._started = False
        self._requests = 0
        self._tokens = itertools.count(1)
        self._inflight: dict[int, _InFlight] = {}
        self._inbox: queue.Queue[tuple[int, Outcome, float]] = queue.Queue()
        # while a callback runs: the time.monotonic() at which its answer was read off the socket
        # (the callback itself runs later, inside handle/advance/wait_real)
        self.arrived_at: Optional[float] = None
        # the last request handed to the broker, as sent (SyncGroup protocol filled in; scenario
        # group ids), and the API version it went at
        self.last_sent: Optional[tuple[m.Request, int]] = None
        self._pools: dict[_MemberKey, list[Connection]] = {}
        self._all: list[Connection] = []
        self._coordinators: dict[str, CoordinatorAddress] = {}
        # (broker group id, generation) -> (protocol type, protocol name) seen in JoinGroup responses
        self._protocols: dict[tuple[str, int], tuple[Optional[str], Optional[str]]] = {}
        self._bootstrap = Connection(host, port, client_id=client_id,
                                     connect_timeout_s=request_timeout_s, allow_remote=allow_remote)
        self._all.append(self._bootstrap)
        self.broker_versions = api_versions(self._bootstrap, request_timeout_s)
        self.versions = negotiate(self.broker_versions, pinned_versions)

    # ------------------------------------------------------------ Coordinator

    def handle(self, request: m.Request, callback: ResponseCallback) -> None:
        self._requests += 1
        if not self._started:
            self._started = True
            self._t0 = time.monotonic() - self._clock_ms / 1000.0 * self.time_scale
        if self._requests > self.max_requests:
            raise TimeBudgetExceeded(f"more than {self.max_requests} requests")
        sent = self._fill_sync_protocol(self._rename(request))
        api = sent.api_key
        if api not in self.versions:
            raise TransportError(f"the broker does not support {api.name} in this codec's range")
        version = self.versions[api]
        if isinstance(sent, m.JoinGroupRequest):
            version = convert.join_group_version(sent, version)
        elif isinstance(sent, m.SyncGroupRequest):
            version = convert.sync_group_version(sent, version)
        _, body = convert.request_body(sent, version)
        conn = self._connection_for(sent)
        token = next(self._tokens)
        self.last_sent = (_as_asked(request, sent), version)
        self._inflight[token] = _InFlight(api, version, callback, conn, sent)
        try:
            header_client = sent.client_id if isinstance(sent, m.JoinGroupRequest) else None
            conn.send(api, version, body, functools.partial(self._enqueue, token), header_client)
        except WireError:
            del self._inflight[token]
            raise
        self._pump(time.monotonic() + self.immediate_wait_s, until_token=token)

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"advance by a negative time: {ms}")
        real = ms / 1000.0 * self.time_scale
        if self._real_waited_s + real > self.max_real_wait_s:
            raise TimeBudgetExceeded(
                f"advance({ms}) at time_scale {self.time_scale} would wait {real:.1f}s; "
                f"{self._real_waited_s:.1f}s of {self.max_real_wait_s}s already used")
        self._real_waited_s += real
        self._clock_ms += ms
        if self.align_clock:
            # Sleep until real time catches up with the virtual clock (time spent waiting for
            # parked requests already counts): real time stays as close to virtual time as it can
            # (the lockstep vs Kafka, which waits with tolerances both ways).
            self._pump(max(self._t0 + self._clock_ms / 1000.0 * self.time_scale, time.monotonic()))
        else:
            # Sleep the whole `ms`: real time only runs ahead of virtual time (by what requests
            # took), never behind it, so a timer the scenario says has fired has fired on the
            # broker too; a step just before a deadline needs a tolerance (scenario tolerance_ms).
            self._pump(time.monotonic() + real)
        self._pump(time.monotonic() + self.settle_s)

    def wait_real(self, seconds: float, until: Callable[[], bool]) -> None:
        """Deliver responses for up to `seconds` of real time, without moving the virtual clock,
        until `until()` holds (a scenario step's tolerance for a real-clock deadline)."""
        deadline = time.monotonic() + seconds
        while not until() and time.monotonic() < deadline:
            self._pump(min(deadline, time.monotonic() + 0.01))

    def now_ms(self) -> int:
        return self._clock_ms

    # ------------------------------------------------------------ extras

    def skip_reason(self) -> Optional[str]:
        """Why scenarios with this target's config cannot run against a remote broker, if so."""
        return unsupported_config(self.config)

    def broker_group_id(self, group_id: str) -> str:
        return self.group_prefix + group_id

    def pending_count(self) -> int:
        return len(self._inflight)

    def connection_count(self) -> int:
        return len(self._all)

    def connections_of(self, group_id: str, member_id: str) -> tuple[Connection, ...]:
        """The connections the member `member_id` of scenario group `group_id` has used."""
        return tuple(self._pools.get((self.broker_group_id(group_id), member_id), ()))

    def close(self) -> None:
        for conn in self._all:
            conn.close()
        self._all.clear()
        self._pools.clear()

    def __enter__(self) -> "KafkaTarget":
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # ------------------------------------------------------------ internals

    def _pump(self, deadline: float, until_token: Optional[int] = None) -> None:
        """Deliver responses until `deadline`, or until `until_token` was delivered plus settle_s."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                token, outcome, at = self._inbox.get(timeout=remaining)
            except queue.Empty:
                return
            self.arrived_at = at
            try:
                self._deliver(token, outcome)
            finally:
                self.arrived_at = None
            if until_token is not None and token == until_token:
                deadline = min(deadline, time.monotonic() + self.settle_s)
                until_token = None

    def _enqueue(self, token: int, outcome: Outcome) -> None:
        self._inbox.put((token, outcome, time.monotonic()))  # on a reader thread; delivered by _pump

    def _deliver(self, token: int, outcome: Outcome) -> None:
        flight = self._inflight.pop(token)
        if outcome.error is not None:
            raise outcome.error
        assert outcome.body is not None
        record = convert.response_record(outcome.api, outcome.version, outcome.body)
        sent = flight.request
        if isinstance(sent, m.JoinGroupRequest) and isinstance(record, m.JoinGroupResponse):
            if flight.version < 7 and record.error is Error.NONE and record.protocol_type is None:
                # JoinGroup v0-6 answers carry no protocol type; a successful join's is the
                # request's (the coordinator refuses a different one: INCONSISTENT_GROUP_PROTOCOL).
                record = dataclasses.replace(record, protocol_type=sent.protocol_type)
            if record.error is Error.NONE and record.protocol_name is not None:
                self._protocols[(sent.group_id, record.generation_id)] = (
                    record.protocol_type, record.protocol_name)
            if sent.member_id == "" and record.member_id:
                self._pools.setdefault((sent.group_id, record.member_id), []).insert(
                    0, flight.connection)
        flight.callback(self._unrename(record))

    def _fill_sync_protocol(self, r: m.Request) -> m.Request:
        """A SyncGroup without protocol type/name gets those of its generation's JoinGroup
        responses, as a Java client sends them (SyncGroup v5+ requires both: KafkaApis answers
        INCONSISTENT_GROUP_PROTOCOL without them); unknown ones leave it to be sent as v4."""
        if not isinstance(r, m.SyncGroupRequest) or (
                r.protocol_type is not None and r.protocol_name is not None):
            return r
        known = self._protocols.get((r.group_id, r.generation_id))
        if known is None:
            return r
        return dataclasses.replace(
            r, protocol_type=known[0] if r.protocol_type is None else r.protocol_type,
            protocol_name=known[1] if r.protocol_name is None else r.protocol_name)

    def _member_key(self, r: m.Request) -> _MemberKey:
        if isinstance(r, (m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest,
                          m.OffsetCommitRequest)):
            return (r.group_id, r.member_id)
        if isinstance(r, m.LeaveGroupRequest) and len(r.members) == 1:
            return (r.group_id, r.members[0].member_id)
        return None

    def _connection_for(self, r: m.Request) -> Connection:
        if isinstance(r, m.JoinGroupRequest) and r.member_id == "":
            return self._open(r.group_id)
        key = self._member_key(r)
        pool = self._pools.setdefault(key, [])
        for conn in pool:
            if not conn.closed and not conn.busy:
                return conn
        conn = self._open(self._group_of(r))
        pool.append(conn)
        return conn

    def _group_of(self, r: m.Request) -> Optional[str]:
        if isinstance(r, (m.DescribeGroupsRequest, m.DeleteGroupsRequest)):
            return r.group_ids[0] if r.group_ids else None
        return getattr(r, "group_id", None)

    def _open(self, group_id: Optional[str]) -> Connection:
        if len(self._all) >= self.max_connections:
            raise TimeBudgetExceeded(f"more than {self.max_connections} connections")
        host, port = self.host, self.port
        if group_id is not None:
            address = self._coordinators.get(group_id)
            if address is None:
                address = find_coordinator(self._bootstrap, group_id,
                                           self.versions[ApiKey.FindCoordinator],
                                           self.request_timeout_s)
                self._coordinators[group_id] = address
            host, port = address.host, address.port
        conn = Connection(host, port, client_id=self.client_id,
                          connect_timeout_s=self.request_timeout_s, allow_remote=self.allow_remote)
        self._all.append(conn)
        return conn

    def _rename(self, r: m.Request) -> m.Request:
        p = self.group_prefix
        if isinstance(r, (m.DescribeGroupsRequest, m.DeleteGroupsRequest)):
            return dataclasses.replace(r, group_ids=tuple(p + g for g in r.group_ids))
        if isinstance(r, m.ListGroupsRequest):
            return r
        return dataclasses.replace(r, group_id=p + r.group_id)

    def _strip(self, group_id: str) -> str:
        return group_id[len(self.group_prefix):] if group_id.startswith(self.group_prefix) else group_id

    def _unrename(self, r: m.Response) -> m.Response:
        if isinstance(r, m.DescribeGroupsResponse):
            return m.DescribeGroupsResponse(tuple(
                dataclasses.replace(g, group_id=self._strip(g.group_id)) for g in r.groups))
        if isinstance(r, m.ListGroupsResponse):
            return m.ListGroupsResponse(r.error, tuple(
                dataclasses.replace(g, group_id=self._strip(g.group_id)) for g in r.groups
                if g.group_id.startswith(self.group_prefix)))
        if isinstance(r, m.DeleteGroupsResponse):
            return m.DeleteGroupsResponse(tuple((self._strip(g), e) for g, e in r.results))
        return r


def _as_asked(asked: m.Request, sent: m.Request) -> m.Request:
    """The request as sent, with the scenario's group ids: what the broker got, in the caller's names."""
    if isinstance(asked, m.SyncGroupRequest) and isinstance(sent, m.SyncGroupRequest):
        return dataclasses.replace(asked, protocol_type=sent.protocol_type, protocol_name=sent.protocol_name)
    return asked
