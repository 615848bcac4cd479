"""The broker side of the wire protocol, sans-IO: one request frame in, its response frame(s) out.

`Dispatcher.handle_frame(payload, reply)` decodes one request (header + body, no size prefix),
answers ApiVersions and FindCoordinator itself, and hands the nine group APIs to the coordinator.
`reply(payload)` is called exactly once per request that has an answer, maybe later (a parked
JoinGroup or SyncGroup is answered during another request or a clock advance). A frame that
cannot be served raises `FrameError` (the connection is then closed, as Kafka's SocketServer
closes a connection whose request does not parse).

What Kafka's KafkaApis does around the coordinator, and this module therefore does too:

- ApiVersions with a version above the highest supported: a v0 response with UNSUPPORTED_VERSION
  and the ApiVersions range only (KIP-511, ApiVersionsRequest.getErrorResponse); v3+ with an
  invalid client software name or version: INVALID_REQUEST.
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
from wire.errors import DecodeError, EncodeError
from wire.schema import Struct

NODE_ID: Final = 0
UNSUPPORTED_VERSION: Final = Error.UNSUPPORTED_VERSION.code
INVALID_REQUEST: Final = 42  # Errors.INVALID_REQUEST (not a group-API error, so not in model.vocabulary)
_SOFTWARE: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?\Z")  # ApiVersionsRequest.isValid
GROUP_APIS: Final = frozenset(apis.SCHEMAS) - {ApiKey.ApiVersions, ApiKey.FindCoordinator}

Reply = Callable[[bytes], None]
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


def supported_api_versions() -> list[Struct]:
    """ApiVersions' ApiKeys: exactly the APIs and versions the codec speaks."""
    return [{"api_key": api.value, "min_version": v.lo, "max_version": v.hi}
            for api, v in sorted(apis.SUPPORTED_VERSIONS.items(), key=lambda kv: kv[0].value)]


class Dispatcher:
    """Serves request frames for one coordinator; every call happens on one thread."""

    def __init__(self, coordinator: Coordinator, host: str, port: int, stats: Optional[Stats] = None) -> None:
        self.coordinator = coordinator
        self.host, self.port = host, port
        self.stats = stats if stats is not None else Stats()

    def handle_frame(self, payload: bytes, reply: Reply, fail: Fail) -> None:
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
            self._handle_group(api, version, cid, body, record, reply, fail)

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
                      record: m.Request, reply: Reply, fail: Fail) -> None:

        def respond(response: m.Response) -> None:
            # Runs inside the coordinator (maybe during another connection's request): never raise.
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


def describe_peer(peer: Any) -> str:
    """`('127.0.0.1', 5123)` -> `127.0.0.1:5123` (anything else as text)."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)
