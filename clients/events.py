"""The event lines a member program prints on stdout, one JSON object a line, flushed at once.

Every line has `ev` (the kind), `t` (wall-clock seconds, float: members run on one machine) and
`name` (the member's name given by the driver). Per kind:

| ev | fields | printed when |
|---|---|---|
| `started` | `client` (library and version) | the program runs |
| `produced` | `key`, `partition`, `offset` | the broker acknowledged a produced record |
| `assigned` | `generation`, `member_id`, `instance_id`, `partitions` | the rebalance listener got an assignment (`instance_id`: group.instance.id or null) |
| `revoked` | `generation`, `partitions` | the rebalance listener gave partitions up |
| `consumed` | `key`, `partition`, `offset`, `generation`, `ts` | a record was returned by poll (`ts`: its timestamp, ms: the producer's send time) |
| `committed` | `partition`, `offset`, `generation` | a synchronous commit of that offset succeeded |
| `commit_failed` | `error` | a commit failed (a rebalance, a fenced generation, ...) |
| `error` | `error` | anything else the client reported as an error |
| `client_log` | `level`, `message` | the client library logged a warning or an error (kafka-python's log, librdkafka's log callback; the Java consumer's slf4j-simple lines on stderr, turned into events by the driver) |
| `closed` | | the consumer and producer were closed after SIGTERM |

Partitions are integers (one topic per run). The Java member (clients/java) prints the same lines.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Final, Optional

KINDS: Final = frozenset({"started", "produced", "assigned", "revoked", "consumed", "committed",
                          "commit_failed", "error", "client_log", "closed"})


@dataclass(frozen=True, slots=True)
class Event:
    ev: str
    t: float
    name: str
    fields: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


class BadEvent(ValueError):
    """A line a member printed that is not an event (named by member and line number)."""


def parse_line(line: str, where: str) -> Event:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BadEvent(f"{where}: not JSON: {exc.msg}") from None
    if not isinstance(raw, dict) or raw.get("ev") not in KINDS:
        raise BadEvent(f"{where}: not an event line: {line[:120]!r}")
    ev, t, name = raw.pop("ev"), raw.pop("t", None), raw.pop("name", None)
    if not isinstance(t, (int, float)) or not isinstance(name, str):
        raise BadEvent(f"{where}: `t` must be a number and `name` a string: {line[:120]!r}")
    return Event(str(ev), float(t), name, raw)


class Emitter:
    """What a Python member uses to print its events."""

    def __init__(self, name: str, out: Optional[IO[str]] = None) -> None:
        self.name = name
        self.out = out if out is not None else sys.stdout
        self._lock = threading.Lock()  # producers' delivery callbacks run on the client's I/O thread

    def __call__(self, ev: str, **fields: Any) -> None:
        assert ev in KINDS, ev
        line = json.dumps({"ev": ev, "t": round(time.time(), 6), "name": self.name, **fields}) + "\n"
        with self._lock:
            self.out.write(line)
            self.out.flush()
