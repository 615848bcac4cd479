"""DescribeConfigs (API key 32): a broker's own configuration, read before it is fuzzed.

Not a group API, so not in `model.vocabulary.ApiKey` nor in `wire.apis`: its schemas are here,
keyed by Kafka's API key number, transcribed from `DescribeConfigsRequest.json` /
`DescribeConfigsResponse.json` (Kafka 3.9 serves v0-4, Kafka 4 v1-4; flexible from v4; this
codec speaks v1-4). `describe_broker_configs` asks the group coordinator's broker for BROKER
resource configs (resource type 4, the broker's node id as name: static and dynamic values, with
defaults) and returns None when the broker does not list the API in ApiVersions.
"""

from __future__ import annotations

import socket
from typing import Final, Iterable, Optional

from model.vocabulary import ApiKey
from wire import codec
from wire.errors import TransportError
from wire.schema import F, MessageSchema, Prim, Struct, Versions, array, struct
from wire.transport import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, Connection, check_loopback, find_coordinator

DESCRIBE_CONFIGS_KEY: Final = 32
BROKER_RESOURCE: Final = 4  # ConfigResource.Type.BROKER

S, B, I8, I16, I32, BOOL = Prim.STRING, Prim.BYTES, Prim.INT8, Prim.INT16, Prim.INT32, Prim.BOOL


def _msg(name: str, valid: str, flexible: str, *fields: object) -> MessageSchema:
    return MessageSchema(name, DESCRIBE_CONFIGS_KEY, Versions.parse(valid), Versions.parse(flexible),
                         struct(name, *fields))  # type: ignore[arg-type]


# DescribeConfigsRequest.json
DESCRIBE_CONFIGS_REQUEST: Final = _msg(
    "DescribeConfigsRequest", "1-4", "4+",
    F("Resources", array(struct("DescribeConfigsResource",
        F("ResourceType", I8, "0+"),
        F("ResourceName", S, "0+"),
        F("ConfigurationKeys", array(S), "0+", nullable="0+"))), "0+"),
    F("IncludeSynonyms", BOOL, "1+", default=False),
    F("IncludeDocumentation", BOOL, "3+", default=False),
)
# DescribeConfigsResponse.json
DESCRIBE_CONFIGS_RESPONSE: Final = _msg(
    "DescribeConfigsResponse", "1-4", "4+",
    F("ThrottleTimeMs", I32, "0+"),
    F("Results", array(struct("DescribeConfigsResult",
        F("ErrorCode", I16, "0+"),
        F("ErrorMessage", S, "0+", nullable="0+"),
        F("ResourceType", I8, "0+"),
        F("ResourceName", S, "0+"),
        F("Configs", array(struct("DescribeConfigsResourceResult",
            F("Name", S, "0+"),
            F("Value", S, "0+", nullable="0+"),
            F("ReadOnly", BOOL, "0+"),
            F("ConfigSource", I8, "1+", default=-1, ignorable=True),
            F("IsDefault", BOOL, "0"),
            F("IsSensitive", BOOL, "0+"),
            F("Synonyms", array(struct("DescribeConfigsSynonym",
                F("Name", S, "1+"),
                F("Value", S, "1+", nullable="0+"),
                F("Source", I8, "1+"))), "1+", ignorable=True),
            F("ConfigType", I8, "3+", default=0, ignorable=True),
            F("Documentation", S, "3+", nullable="0+", ignorable=True))), "0+"))), "0+"),
)


def encode_describe_configs(version: int, correlation_id: int, client_id: str, resource_type: int,
                            resource_name: str, keys: Optional[Iterable[str]]) -> bytes:
    """A whole DescribeConfigs request frame (size prefix, header v1/v2, body) for one resource."""
    body: Struct = {"resources": [{"resource_type": resource_type, "resource_name": resource_name,
                                   "configuration_keys": None if keys is None else list(keys)}]}
    return codec.frame(codec.encode_request_with(DESCRIBE_CONFIGS_REQUEST, version, correlation_id, client_id, body))


def decode_describe_configs(version: int, data: bytes) -> tuple[int, Struct]:
    """(correlation id, body) of a DescribeConfigs response frame's payload (no size prefix)."""
    return codec.decode_response_with(DESCRIBE_CONFIGS_RESPONSE, version, data)


def describe_broker_configs(host: str, port: int, keys: Iterable[str], *, timeout_s: float = 10.0,
                            allow_remote: bool = False) -> Optional[dict[str, Optional[str]]]:
    """The values of `keys` on the broker that coordinates groups (None: the broker does not serve
    DescribeConfigs; a key it does not know is absent). TransportError when it answers an error."""
    conn = Connection(host, port, allow_remote=allow_remote, connect_timeout_s=timeout_s)
    try:
        reply = conn.call(ApiKey.ApiVersions, 3, {"client_software_name": CLIENT_SOFTWARE_NAME,
                                                  "client_software_version": CLIENT_SOFTWARE_VERSION},
                          timeout_s)
        ranges = {e["api_key"]: (e["min_version"], e["max_version"]) for e in reply["api_keys"]}
        fc = ranges.get(ApiKey.FindCoordinator.value)
        ours = DESCRIBE_CONFIGS_REQUEST.valid
        theirs = ranges.get(DESCRIBE_CONFIGS_KEY)
        if theirs is None or fc is None or max(ours.lo, theirs[0]) > min(ours.hi, theirs[1]):
            return None
        version = min(ours.hi, theirs[1])
        coordinator = find_coordinator(conn, "groupspec-describe-configs", min(fc[1], 3), timeout_s)
    finally:
        conn.close()
    check_loopback(coordinator.host, coordinator.port, allow_remote)
    wanted = list(keys)
    frame = encode_describe_configs(version, 1, "groupspec", BROKER_RESOURCE, str(coordinator.node_id), wanted)
    try:
        with socket.create_connection((coordinator.host, coordinator.port), timeout=timeout_s) as sock:
            sock.sendall(frame)
            frames = codec.FrameBuffer()
            got: list[bytes] = []
            while not got:
                chunk = sock.recv(65536)
                if not chunk:
                    raise TransportError(f"{coordinator.host}:{coordinator.port} closed the connection "
                                         "before answering DescribeConfigs")
                got = frames.feed(chunk)
    except OSError as exc:
        raise TransportError(f"DescribeConfigs to {coordinator.host}:{coordinator.port}: {exc}") from None
    _, body = decode_describe_configs(version, got[0])
    out: dict[str, Optional[str]] = {}
    for result in body["results"]:
        if result["error_code"] != 0:
            raise TransportError(f"DescribeConfigs BROKER {coordinator.node_id}: error code "
                                 f"{result['error_code']} ({result['error_message']})")
        for c in result["configs"]:
            if c["name"] in wanted:
                out[c["name"]] = c["value"]
    return out


__all__ = ["BROKER_RESOURCE", "DESCRIBE_CONFIGS_KEY", "DESCRIBE_CONFIGS_REQUEST", "DESCRIBE_CONFIGS_RESPONSE",
           "decode_describe_configs", "describe_broker_configs", "encode_describe_configs"]
