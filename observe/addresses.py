"""The two answers observe rewrites: Metadata and FindCoordinator name brokers by host and port, and
a client that followed them would talk to the upstream directly. Each broker address they name is
replaced by the proxy listener that forwards to it (`Listeners.port_for`, a listener per upstream
broker, opened on first sight), so clients keep talking through the proxy.

Decoded and re-encoded with the wire codec's own schemas, at every version a Kafka 4 broker answers
(wire.apis.FIND_COORDINATOR_RESPONSE_KAFKA_4, 0-6; wire.data_apis.METADATA_RESPONSE_KAFKA_4, 0-13:
kafka-clients 4.4 asks a Kafka 4 broker for Metadata v13; an answer left unread would hand it the
broker's own address, and its fetches and produces would bypass the proxy).
Anything else the codec cannot read (a version it does not speak, a malformed frame) raises a
WireError: the caller then forwards the answer unchanged and counts it.
"""

from __future__ import annotations

from typing import Awaitable, Callable, Final

from model.vocabulary import ApiKey
from wire import codec
from wire.apis import FIND_COORDINATOR_RESPONSE_KAFKA_4
from wire.data_apis import METADATA_RESPONSE_KAFKA_4, DataApi
from wire.errors import DecodeError
from wire.schema import MessageSchema, Struct

# upstream (host, port) -> the port of the proxy listener that forwards to it
PortFor = Callable[[str, int], Awaitable[int]]

METADATA: Final = DataApi.Metadata.value
FIND_COORDINATOR: Final = ApiKey.FindCoordinator.value
SCHEMAS: Final[dict[int, MessageSchema]] = {METADATA: METADATA_RESPONSE_KAFKA_4,
                                            FIND_COORDINATOR: FIND_COORDINATOR_RESPONSE_KAFKA_4}


async def rewrite(api_key: int, version: int, data: bytes, listen_host: str, port_for: PortFor) -> bytes:
    """The answer `data` (a frame's payload, correlation id first) to a Metadata or FindCoordinator
    request of `version`, with every broker address replaced by its proxy listener."""
    schema = SCHEMAS.get(api_key)
    if schema is None:
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


__all__ = ["FIND_COORDINATOR", "METADATA", "SCHEMAS", "PortFor", "rewrite"]
