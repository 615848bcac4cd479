"""The broker side of the wire protocol, sans-IO: one request frame in, its response frame(s) out.

`Dispatcher.handle_frame(payload, reply, fail, peer_host)` decodes one request (header + body, no
size prefix), answers ApiVersions and FindCoordinator itself, hands the nine group APIs to the
coordinator and the data-plane APIs (Metadata, Produce, Fetch, ListOffsets, CreateTopics,
DeleteTopics) to server/data.py. `reply(payload)` is called exactly once per request, maybe later (a
parked JoinGroup, SyncGroup or Fetch is answered during another request, a clock advance or a
timer); `reply(None)` means the request has no response (Produce with acks=0). A frame that cannot
be served raises `FrameError` (the connection is then closed, as Kafka's SocketServer closes a
connection whose request does not parse).

What Kafka's KafkaApis does around the coordinator, and this module therefore does too:

- ApiVersions with a version above the highest supported: a v0 response with UNSUPPORTED_VERSION
  and the ApiVersions range only (KIP-511, ApiVersionsRequest.getErrorResponse); v3+ with an
  invalid client software name or version: INVALID_REQUEST.
- An API key or version that is not served (not in the ApiVersions answer): the correlation id and
  UNSUPPORTED_VERSION (35) as an int16, the shape of ApiVersions' own error answer, which is the
  only answer the protocol lets a broker frame for a request it has no schema for; the connection
  stays open (Kafka closes it). One log line names the peer, the API key and the version.
- DescribeGroups: `client_host` is the address of the connection whose JoinGroup was answered with
  that member id, as Kafka formats an InetAddress without a host name: `/127.0.0.1`. (The
  coordinator's records carry no host; the dispatcher remembers it per member id.)
- FindCoordinator: this broker (node 0) coordinates every group; key type 1 (transactions) is
  COORDINATOR_NOT_AVAILABLE, any other key type INVALID_REQUEST.
- JoinGroup: member ids are `<header client id>-<uuid>`, so the header's client id is the one used.
- LeaveGroup v0-2: one error only: the top-level error if any, else the first member error
  (LeaveGroupResponse's constructor for version <= 2).
- OffsetFetch v1: no top-level error field; a group error is set on every requested partition
  (OffsetFetchRequest.getErrorResponse for version < 2). v8+: a batch of groups, answered one by one.
- ListGroups v5: every group is of type "classic"; a types filter without "classic" lists nothing.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable, Final, Optional

from model import messages as m
from model.coordinator_api import Coordinator
from model.vocabulary import ApiKey, Error
from wire import apis, codec, convert
from wire.data_apis import DATA_SCHEMAS, DATA_VERSIONS, DataApi
from wire.errors import DecodeError, EncodeError
from wire.schema import MessageSchema, Struct

from server.data import Broker, DataPlane

NODE_ID: Final = 0
MAX_MEMBER_HOSTS: Final = 100_000  # member ids whose peer host DescribeGroups can still name
UNSUPPORTED_VERSION: Final = Error.UNSUPPORTED_VERSION.code
INVALID_REQUEST: Final = 42  # Errors.INVALID_REQUEST (not a group-API error, so not in model.vocabulary)
_SOFTWARE: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?\Z")  # ApiVersionsRequest.isValid
GROUP_APIS: Final = frozenset(apis.SCHEMAS) - {ApiKey.ApiVersions, ApiKey.FindCoordinator}

_DATA_BY_CODE: Final = {api.value: api for api in DataApi}

Reply = Callable[[Optional[bytes]], None]
Fail = Callable[[str], None]


class FrameError(Exception):
    """A request frame that cannot be served; the message is the reason logged for the peer."""


@dataclass(slots=True)
class Stats:
    """Counters (read by tests and the fuzzer; written on the server's event-loop thread only)."""

    frames: int = 0
    group_requests: int = 0  # group-API requests handled (counted after the coordinator returned)
    group_responses: int = 0  # their responses written back (a parked one counts when answered)
    closed_bad_frames: int = 0
    data_requests: int = 0  # data-plane requests (Metadata, Produce, Fetch, ...) received
    unsupported_requests: int = 0  # answered UNSUPPORTED_VERSION: an API key or version not served


def supported_api_versions() -> list[Struct]:
    """ApiVersions' ApiKeys: exactly the APIs and versions served (group and data plane)."""
    keys = [{"api_key": api.value, "min_version": v.lo, "max_version": v.hi}
            for api, v in [*apis.SUPPORTED_VERSIONS.items(), *DATA_VERSIONS.items()]]
    return sorted(keys, key=lambda k: int(k["api_key"]))


def served_schema(code: int, version: int) -> Optional[MessageSchema]:
    """The request schema of API key `code` if that key and version are served, else None."""
    group = codec.api_key_of(code)
    if group is not None:
        schema = codec.request_schema(group)
    elif code in _DATA_BY_CODE:
        schema = DATA_SCHEMAS[_DATA_BY_CODE[code]][0]
    else:
        return None
    return schema if version in schema.valid else None


class Dispatcher:
    """Serves request frames for one coordinator; every call happens on one thread."""

    def __init__(self, coordinator: Coordinator, host: str, port: int, stats: Optional[Stats] = None,
                 data: Optional[DataPlane] = None, log: Callable[[str], None] = lambda line: None) -> None:
        self.coordinator = coordinator
        self.host, self.port = host, port
        self.stats = stats if stats is not None else Stats()
        self.data = data
        self.log = log
        self.member_hosts: dict[str, str] = {}  # member id -> the peer host of its JoinGroup

    def handle_frame(self, payload: bytes, reply: Reply, fail: Fail, peer_host: str = "") -> None:
        """Serve one request; `fail(reason)` is called instead of `reply` if a later answer cannot be
        encoded (a FrameError raised here is the same for an answer given during this call)."""
        self.stats.frames += 1
        if len(payload) >= 8:
            code, version, correlation_id = struct.unpack_from(">hhi", payload)
            if code == ApiKey.ApiVersions.value and version > apis.SUPPORTED_VERSIONS[ApiKey.ApiVersions].hi:
                body = {"error_code": UNSUPPORTED_VERSION, "api_keys": [
                    e for e in supported_api_versions() if e["api_key"] == ApiKey.ApiVersions.value]}
                reply(codec.encode_response(ApiKey.ApiVersions, 0, correlation_id, body))
                return
            if served_schema(code, version) is None:
                self.stats.unsupported_requests += 1
                self.log(f"groupspec serve: {peer_host or '?'}: API key {code} v{version} is not served; "
                         "answered UNSUPPORTED_VERSION")
                reply(struct.pack(">ih", correlation_id, UNSUPPORTED_VERSION))
                return
            if code in _DATA_BY_CODE:
                self._handle_data(_DATA_BY_CODE[code], payload, reply, fail)
                return
        try:
            header, body = codec.decode_request(payload)
        except DecodeError as exc:
            raise FrameError(f"malformed request: {exc}") from None
        api = ApiKey(header.api_key)
        version, cid = header.api_version, header.correlation_id
        if api is ApiKey.ApiVersions:
            reply(self._encode(api, version, cid, self._api_versions(version, body)))
        elif api is ApiKey.FindCoordinator:
            reply(self._encode(api, version, cid, self._find_coordinator(version, body)))
        elif api is ApiKey.OffsetFetch and version >= 8:
            self._offset_fetch_batch(version, cid, body, reply)
        else:
            record = convert.request_record(api, version, body)
            if isinstance(record, m.JoinGroupRequest):
                record = dataclasses.replace(record, client_id=header.client_id or "")
            self._handle_group(api, version, cid, body, record, reply, fail, peer_host)

    # ------------------------------------------------------------------ data plane

    def _handle_data(self, api: DataApi, payload: bytes, reply: Reply, fail: Fail) -> None:
        if self.data is None:
            raise FrameError(f"internal: no data plane to serve {api.name}")
        request_schema, response_schema = DATA_SCHEMAS[api]
        try:
            header, body = codec.decode_request_with(payload, lambda code: request_schema)
        except DecodeError as exc:
            raise FrameError(f"malformed request: {exc}") from None
        self.stats.data_requests += 1
        version, cid = header.api_version, header.correlation_id

        def answer(response: Optional[Struct]) -> None:
            if response is None:
                reply(None)
                return
            try:
                encoded = codec.encode_response_with(response_schema, version, cid, response)
            except EncodeError as exc:  # an encoding bug closes this connection only
                fail(f"internal: cannot encode the {api.name} v{version} response: {exc}")
                return
            reply(encoded)

        self.data.handle(api, version, body, Broker(NODE_ID, self.host, self.port), answer)

    # ------------------------------------------------------------------ ApiVersions, FindCoordinator

    def _api_versions(self, version: int, body: Struct) -> Struct:
        if version >= 3 and not (_SOFTWARE.match(body["client_software_name"] or "")
                                 and _SOFTWARE.match(body["client_software_version"] or "")):
            return {"error_code": INVALID_REQUEST, "api_keys": []}
        return {"error_code": 0, "api_keys": supported_api_versions()}

    def _coordinator_entry(self, key_type: int) -> tuple[int, Optional[str], int, str, int]:
        """(error code, error message, node id, host, port) for one FindCoordinator key."""
        if key_type == 0:
            return 0, None, NODE_ID, self.host, self.port
        if key_type == 1:
            return Error.COORDINATOR_NOT_AVAILABLE.code, "this broker runs no transaction coordinator", -1, "", -1
        return INVALID_REQUEST, f"unknown coordinator key type {key_type}", -1, "", -1

    def _find_coordinator(self, version: int, body: Struct) -> Struct:
        if version >= 4:
            out = []
            for key in body["coordinator_keys"]:
                code, message, node, host, port = self._coordinator_entry(body["key_type"])
                out.append({"key": key, "node_id": node, "host": host, "port": port,
                            "error_code": code, "error_message": message})
            return {"coordinators": out}
        code, message, node, host, port = self._coordinator_entry(body["key_type"])
        return {"error_code": code, "error_message": message, "node_id": node, "host": host, "port": port}

    # ------------------------------------------------------------------ group APIs

    def _handle_group(self, api: ApiKey, version: int, cid: int, request_body: Struct,
                      record: m.Request, reply: Reply, fail: Fail, peer_host: str = "") -> None:

        def respond(response: m.Response) -> None:
            # Runs inside the coordinator (maybe during another connection's request): never raise.
            if isinstance(response, m.JoinGroupResponse) and response.member_id:
                self.member_hosts[response.member_id] = peer_host
                if len(self.member_hosts) > MAX_MEMBER_HOSTS:  # bounded: forget the oldest member ids
                    del self.member_hosts[next(iter(self.member_hosts))]
            try:
                payload = self._encode(api, version, cid, self._response_body(api, version, request_body, response))
            except FrameError as exc:
                fail(str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - an encoding bug closes this connection only
                fail(f"internal: cannot encode the {api.name} v{version} response: {type(exc).__name__}: {exc}")
                return
            self.stats.group_responses += 1
            reply(payload)

        self.coordinator.handle(record, respond)
        self.stats.group_requests += 1  # after: an immediate answer is already counted in group_responses

    def _response_body(self, api: ApiKey, version: int, request_body: Struct, response: m.Response) -> Struct:
        if isinstance(response, m.LeaveGroupResponse) and version < 3:
            error = response.error
            if error is Error.NONE:
                error = next((x.error for x in response.members if x.error is not Error.NONE), Error.NONE)
            return {"error_code": error.code, "members": []}
        if isinstance(response, m.OffsetFetchResponse) and version < 2 and response.error is not Error.NONE:
            wanted = [m.TopicPartition(t["name"], p) for t in request_body["topics"] or []
                      for p in t["partition_indexes"]]
            response = m.OffsetFetchResponse(Error.NONE, tuple((tp, -1, response.error) for tp in wanted))
        if isinstance(response, m.ListGroupsResponse) and version >= 5:
            types = {t.lower() for t in request_body["types_filter"]}
            groups = response.groups if not types or "classic" in types else ()
            _, body = convert.response_body(m.ListGroupsResponse(response.error, groups), version)
            for g in body["groups"]:
                g["group_type"] = "classic"
            return body
        _, body = convert.response_body(response, version)
        if isinstance(response, m.DescribeGroupsResponse):
            for group in body["groups"]:
                for member in group["members"]:
                    member["client_host"] = kafka_host(self.member_hosts.get(member["member_id"], ""))
        return body

    def _offset_fetch_batch(self, version: int, cid: int, body: Struct, reply: Reply) -> None:
        """OffsetFetch v8+: each group of the batch is one coordinator request, answered at once."""
        groups: list[Struct] = []
        for wanted in body["groups"]:
            topics = wanted["topics"]
            parts = None if topics is None else tuple(
                m.TopicPartition(t["name"], p) for t in topics for p in t["partition_indexes"])
            answers: list[m.Response] = []
            self.coordinator.handle(m.OffsetFetchRequest(wanted["group_id"], parts), answers.append)
            self.stats.group_requests += 1
            if len(answers) != 1 or not isinstance(answers[0], m.OffsetFetchResponse):
                raise FrameError(f"internal: OffsetFetch for {wanted['group_id']!r} was not answered at once")
            self.stats.group_responses += 1
            answer = answers[0]
            _, v7 = convert.response_body(answer, 7)
            groups.append({"group_id": wanted["group_id"], "error_code": answer.error.code,
                           "topics": v7["topics"]})
        reply(self._encode(ApiKey.OffsetFetch, version, cid, {"groups": groups}))

    def _encode(self, api: ApiKey, version: int, cid: int, body: Struct) -> bytes:
        try:
            return codec.encode_response(api, version, cid, body)
        except EncodeError as exc:
            raise FrameError(f"internal: cannot encode the {api.name} v{version} response: {exc}") from None


def kafka_host(host: str) -> str:
    """A peer address as Kafka's DescribeGroups gives it (InetAddress.toString, no host name):
    `/127.0.0.1`; "" when unknown."""
    return f"/{host}" if host else ""


def describe_peer(peer: Any) -> str:
    """`('127.0.0.1', 5123)` -> `127.0.0.1:5123` (anything else as text)."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)
