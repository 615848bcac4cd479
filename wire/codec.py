"""Frames, headers and bodies (sans-IO): bytes in, dicts out, and back.

A frame is `int32 size` + header + body. Request header v1 (`api_key, api_version, correlation_id,
client_id`) is used by non-flexible versions, v2 (v1 + tagged fields) by flexible ones; v0 (no client
id) only by ControlledShutdown v0 and is offered for completeness. Response header v0 is the
correlation id; v1 adds tagged fields and is used by flexible versions, except ApiVersions,
whose response header is always v0 (a client must be able to read it before knowing versions).
The client id is a classic (int16-length, nullable) string even in header v2.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Final, Optional

from model.vocabulary import ApiKey
from wire import apis
from wire.errors import DecodeError, EncodeError
from wire.primitives import Reader, Writer
from wire.schema import MessageSchema, Struct, decode, encode

MAX_FRAME_BYTES: Final = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
_API_BY_KEY: Final = {k.value: k for k in apis.SCHEMAS}


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: Optional[str]


def api_key_of(code: int) -> Optional[ApiKey]:
    return _API_BY_KEY.get(code)


def request_schema(api: ApiKey) -> MessageSchema:
    return apis.SCHEMAS[api][0]


def response_schema(api: ApiKey) -> MessageSchema:
    return apis.SCHEMAS[api][1]


def request_header_version(api: ApiKey, version: int) -> int:
    return 2 if request_schema(api).is_flexible(version) else 1


def response_header_version(api: ApiKey, version: int) -> int:
    if api is ApiKey.ApiVersions:
        return 0
    return 1 if response_schema(api).is_flexible(version) else 0


def _write_tagged_none(w: Writer) -> None:
    w.uvarint(0)


def _skip_tagged(r: Reader, what: str) -> None:
    for _ in range(r.uvarint(f"tagged field count of {what}")):
        tag = r.uvarint(f"tag in {what}")
        r.take(r.uvarint(f"size of tag {tag} in {what}"), f"tagged field {tag} of {what}")


def encode_request(
    api: ApiKey, version: int, correlation_id: int, client_id: Optional[str], body: Struct,
    header_version: Optional[int] = None,
) -> bytes:
    """Header + body of a request, without the size prefix."""
    hv = request_header_version(api, version) if header_version is None else header_version
    return encode_request_with(request_schema(api), version, correlation_id, client_id, body, hv)


def encode_request_with(schema: MessageSchema, version: int, correlation_id: int, client_id: Optional[str],
                        body: Struct, header_version: Optional[int] = None) -> bytes:
    """`encode_request` for any request schema (header v2 for flexible versions, else v1 unless given)."""
    hv = (2 if schema.is_flexible(version) else 1) if header_version is None else header_version
    w = Writer()
    w.int16(schema.api_key)
    w.int16(version)
    w.int32(correlation_id)
    if hv >= 1:
        if client_id is None:
            w.int16(-1)
        else:
            raw = client_id.encode("utf-8")
            if len(raw) > 0x7FFF:
                raise EncodeError("RequestHeader", hv, "ClientId", "longer than 32767 bytes")
            w.int16(len(raw))
            w.raw(raw)
    if hv >= 2:
        _write_tagged_none(w)
    encode(schema, version, body, w)
    return bytes(w.buf)


def decode_request(data: bytes) -> tuple[RequestHeader, Struct]:
    """Header and body of one request (without size prefix); every fault is a DecodeError."""
    return decode_request_with(data, lambda code: request_schema(_API_BY_KEY[code]) if code in _API_BY_KEY else None)


def decode_request_with(data: bytes, schema_of: Callable[[int], Optional[MessageSchema]]
                        ) -> tuple[RequestHeader, Struct]:
    """`decode_request` for the request schemas `schema_of(api key)` names (None: unknown key)."""
    r = Reader(data, "RequestHeader", None)
    code = r.int16("request_api_key")
    version = r.int16("request_api_version")
    correlation_id = r.int32("correlation_id")
    schema = schema_of(code)
    if schema is None:
        raise DecodeError(None, version, 0, f"unknown API key {code}")
    r.api, r.version = schema.name, version
    if version not in schema.valid:
        raise DecodeError(schema.name, version, 2, f"unsupported version (supported: {schema.valid})")
    n = r.length(False, False, "RequestHeader.ClientId")
    client_id = None if n == -1 else r.text(n, "RequestHeader.ClientId")
    if schema.is_flexible(version):
        _skip_tagged(r, "RequestHeader")
    body = decode(schema, version, r)
    _no_trailing(r)
    return RequestHeader(code, version, correlation_id, client_id), body


def encode_response(api: ApiKey, version: int, correlation_id: int, body: Struct) -> bytes:
    if api is ApiKey.ApiVersions:  # response header v0 at every version
        w = Writer()
        w.int32(correlation_id)
        encode(response_schema(api), version, body, w)
        return bytes(w.buf)
    return encode_response_with(response_schema(api), version, correlation_id, body)


def encode_response_with(schema: MessageSchema, version: int, correlation_id: int, body: Struct) -> bytes:
    """Header (v1 for flexible versions, else v0) + body of a response of `schema`, no size prefix."""
    w = Writer()
    w.int32(correlation_id)
    if schema.is_flexible(version):
        _write_tagged_none(w)
    encode(schema, version, body, w)
    return bytes(w.buf)


def decode_response(api: ApiKey, version: int, data: bytes) -> tuple[int, Struct]:
    """(correlation id, body) of one response (without size prefix) to a request of `api`/`version`."""
    return _decode_response(response_schema(api), version, data, response_header_version(api, version) >= 1)


def decode_response_with(schema: MessageSchema, version: int, data: bytes) -> tuple[int, Struct]:
    """`decode_response` for a response of `schema` (header v1 for flexible versions, else v0): the
    inverse of `encode_response_with`."""
    return _decode_response(schema, version, data, schema.is_flexible(version))


def _decode_response(schema: MessageSchema, version: int, data: bytes, tagged_header: bool) -> tuple[int, Struct]:
    r = Reader(data, schema.name, version)
    correlation_id = r.int32("correlation_id")
    if tagged_header:
        _skip_tagged(r, "ResponseHeader")
    body = decode(schema, version, r)
    _no_trailing(r)
    return correlation_id, body


def peek_correlation_id(data: bytes) -> int:
    if len(data) < 4:
        raise DecodeError(None, None, 0, f"response of {len(data)} bytes has no correlation id")
    return int(struct.unpack_from(">i", data)[0])


def _no_trailing(r: Reader) -> None:
    if r.remaining():
        raise r.fail(f"{r.remaining()} trailing bytes after the message")


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class FrameBuffer:
    """Reassembles size-prefixed frames from arbitrary chunks of a byte stream."""

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._consumed = 0  # stream offset of _buf[0], for error messages
        self.max_frame_bytes = max_frame_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buf += chunk
        frames: list[bytes] = []
        while len(self._buf) >= 4:
            (size,) = struct.unpack_from(">i", self._buf)
            if size < 0 or size > self.max_frame_bytes:
                raise DecodeError(None, None, self._consumed,
                                  f"frame size {size} outside 0..{self.max_frame_bytes}")
            if len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[4 : 4 + size]))
            del self._buf[: 4 + size]
            self._consumed += 4 + size
        return frames

    def pending(self) -> int:
        return len(self._buf)
