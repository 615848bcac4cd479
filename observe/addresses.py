"""The two answers observe rewrites: Metadata and FindCoordinator name brokers by host and port, and
a client that followed them would talk to the upstream directly. Each broker address they name is
replaced by the proxy listener that forwards to it (`Listeners.port_for`, a listener per upstream
broker, opened on first sight), so clients keep talking through the proxy.

Decoded and re-encoded with the wire codec's own schemas (wire.apis, wire.data_apis). Kafka's
FindCoordinator v5 (TRANSACTION_ABORTABLE) and v6 (share groups) only add error codes and key
types, not fields: their answers are read and written with the v4 layout. Anything else the codec
cannot read (a version it does not speak, a malformed frame) raises a WireError: the caller then
forwards the answer unchanged and counts it.
"""

from __future__ import annotations

import dataclasses
from typing import Awaitable, Callable, Final

from model.vocabulary import ApiKey
from wire import apis, codec
from wire.data_apis import METADATA_RESPONSE, DataApi
from wire.errors import DecodeError
from wire.schema import MessageSchema, Struct, Versions

# upstream (host, port) -> the port of the proxy listener that forwards to it
PortFor = Callable[[str, int], Awaitable[int]]

METADATA: Final = DataApi.Metadata.value
FIND_COORDINATOR: Final = ApiKey.FindCoordinator.value
_FIND_COORDINATOR_RESPONSE: Final[MessageSchema] = dataclasses.replace(
    apis.FIND_COORDINATOR_RESPONSE, valid=Versions(0, 6))


async def rewrite(api_key: int, version: int, data: bytes, listen_host: str, port_for: PortFor) -> bytes:
    """The answer `data` (a frame's payload, correlation id first) to a Metadata or FindCoordinator
    request of `version`, with every broker address replaced by its proxy listener."""
    if api_key == METADATA:
        schema = METADATA_RESPONSE
    elif api_key == FIND_COORDINATOR:
        schema = _FIND_COORDINATOR_RESPONSE
    else:
        raise DecodeError(None, version, 0, f"api key {api_key} names no broker")
    cid, body = codec.decode_response_with(schema, version, data)
    if api_key == METADATA:
        for b in body["brokers"]:
            b["host"], b["port"] = listen_host, await port_for(b["host"], b["port"])
    elif version >= 4:
        for c in body["coordinators"]:
            await _coordinator(c, listen_host, port_for)
    else:
        await _coordinator(body, listen_host, port_for)
    return codec.encode_response_with(schema, version, cid, body)


async def _coordinator(c: Struct, listen_host: str, port_for: PortFor) -> None:
    if c["error_code"] == 0 and c["port"] >= 0:
        c["host"], c["port"] = listen_host, await port_for(c["host"], c["port"])


__all__ = ["FIND_COORDINATOR", "METADATA", "PortFor", "rewrite"]
