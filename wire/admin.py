"""Topic administration a broker needs before a scenario can commit offsets: CreateTopics.

Kafka's KafkaApis answers an OffsetCommit for a partition it does not have
UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees it (the model, which is the coordinator, has
no topics), so every topic a scenario names must exist first. CreateTopics v4 is encoded here: the
codec in wire/apis speaks only the group APIs.
"""

from __future__ import annotations

import socket
import struct

from wire.errors import TransportError
from wire.primitives import Reader, Writer

TOPIC_ALREADY_EXISTS = 36


def _string(w: Writer, text: str) -> None:
    data = text.encode()
    w.int16(len(data))
    w.raw(data)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise TransportError("the broker closed the connection during CreateTopics")
        buf += chunk
    return bytes(buf)


def create_topics(host: str, port: int, topics: dict[str, int], timeout_s: float = 30.0) -> None:
    """CreateTopics v4 (name -> partitions, replication 1) at host:port; TOPIC_ALREADY_EXISTS (36)
    counts as success. Raises TransportError naming each topic the broker refused."""
    if not topics:
        return
    w = Writer()
    w.int16(19)  # CreateTopics
    w.int16(4)
    w.int32(1)  # correlation id
    _string(w, "groupspec")
    w.int32(len(topics))
    for name, partitions in topics.items():
        _string(w, name)
        w.int32(partitions)
        w.int16(1)   # replication factor
        w.int32(0)   # assignments
        w.int32(0)   # configs
    w.int32(int(timeout_s * 1000))
    w.boolean(False)  # validate only
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(w.buf)) + bytes(w.buf))
            size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
            r = Reader(_recv_exactly(sock, size), "CreateTopics", 4)
    except OSError as e:
        raise TransportError(f"CreateTopics at {host}:{port}: {e}") from e
    r.int32()  # correlation id
    r.int32()  # throttle time
    errors: list[str] = []
    for _ in range(r.int32()):
        name = r.text(r.int16(), "name")
        code = r.int16()
        n = r.int16()
        message = r.text(n, "error_message") if n >= 0 else ""
        if code not in (0, TOPIC_ALREADY_EXISTS):
            errors.append(f"{name}: error {code} {message}")
    if errors:
        raise TransportError("CreateTopics failed: " + "; ".join(errors))
