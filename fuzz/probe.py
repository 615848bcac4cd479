"""Know the target before judging it: its group settings, read or probed before a fuzz run.

A judge that assumes the wrong settings floods the report (a broker with Kafka's default minimum
session of 6 s, fuzzed as if it were 100 ms, answers INVALID_SESSION_TIMEOUT to every join). So
before fuzzing:

- where the broker serves DescribeConfigs (Kafka), its BROKER configs are read
  (`wire.configs.describe_broker_configs`): group.min/max.session.timeout.ms,
  group.initial.rebalance.delay.ms, group.max.size, and, for the report, the offsets cleanup
  interval that the `group-cleanup` allowance stands for;
- otherwise (serve, Tansu) they are probed: the session-timeout bounds by binary search on
  JoinGroup's INVALID_SESSION_TIMEOUT (each probe a fresh group, answered at once), the initial
  rebalance delay from how long a lone member's join into an Empty group is parked. group.max.size
  is not probed (it would take that many members).

`reconcile` then makes the run's configuration: a property given with `--config` must agree with
what was found (else a BadInput naming the setting: exit 2, before any request is judged); one not
given takes the value found. The report states every setting with where it came from.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from dataclasses import dataclass
from typing import Any, Final, Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.errors import BadInput
from model.vocabulary import ApiKey, Error
from server.config import INT_MAX, KAFKA_PROPERTIES
from wire import convert
from wire.configs import describe_broker_configs
from wire.errors import WireError

from fuzz.client import Broker, wire_request

CLEANUP_INTERVAL: Final = "offsets.retention.check.interval.ms"  # reported, not judged with
MIN_SESSION: Final = "group.min.session.timeout.ms"
MAX_SESSION: Final = "group.max.session.timeout.ms"
INITIAL_DELAY: Final = "group.initial.rebalance.delay.ms"
# a timed initial delay is known to within this: the join waited at least the delay, and at most
# the delay plus the broker's answer time and scheduling
DELAY_TOLERANCE_MS: Final = 250
DELAY_PROBE_CAP_S: Final = 30.0  # a longer initial delay is reported unknown
_PROTOCOLS: Final = (m.ProtocolMetadata("range", b"\x00"),)


@dataclass(frozen=True, slots=True)
class Setting:
    key: str  # Kafka's property name
    value: Optional[int]  # None: not known
    source: str  # "DescribeConfigs", "probed: ...", "not probed: ..."
    tolerance_ms: int = 0  # how far a --config value may be from a timed value and still agree

    def agrees(self, given: int) -> bool:
        return self.value is None or abs(given - self.value) <= self.tolerance_ms


@dataclass(frozen=True, slots=True)
class TargetSettings:
    settings: tuple[Setting, ...]

    def get(self, key: str) -> Optional[Setting]:
        return next((s for s in self.settings if s.key == key), None)

    def as_json(self) -> dict[str, Any]:
        return {s.key: {"value": s.value, "source": s.source} for s in self.settings}

    def line(self) -> str:
        return ", ".join(f"{s.key}={'?' if s.value is None else s.value} ({s.source})" for s in self.settings)


def reconcile(found: TargetSettings, given: dict[str, int], config: CoordinatorConfig) -> CoordinatorConfig:
    """`config` with every property not given by `--config` replaced by the value found; a given
    one that the target contradicts is a BadInput naming the setting (the run stops, exit 2)."""
    changes: dict[str, Any] = {}
    for key, (field, _) in KAFKA_PROPERTIES.items():
        s = found.get(key)
        if s is None or s.value is None:
            continue
        if key in given:
            if not s.agrees(given[key]):
                near = f" (within {s.tolerance_ms} ms)" if s.tolerance_ms else ""
                raise BadInput(f"--config {key}={given[key]} contradicts the target: it has "
                               f"{key}={s.value}{near}, {s.source}")
        else:
            changes[field] = s.value
    out = dataclasses.replace(config, **changes)
    if out.group_min_session_timeout_ms > out.group_max_session_timeout_ms:
        raise BadInput(f"--config: the session bounds given and found cross ({MIN_SESSION}="
                       f"{out.group_min_session_timeout_ms}, {MAX_SESSION}={out.group_max_session_timeout_ms})")
    return out


def read_settings(host: str, port: int, *, allow_remote: bool = False, timeout_s: float = 10.0) -> TargetSettings:
    """The target's group settings: by DescribeConfigs where it is served, else probed."""
    keys = [*KAFKA_PROPERTIES, CLEANUP_INTERVAL]
    try:
        described = describe_broker_configs(host, port, keys, timeout_s=timeout_s, allow_remote=allow_remote)
    except WireError:  # listed, but not answered (Tansu closes the connection): probe instead
        described, why = None, "DescribeConfigs not answered"
    else:
        why = "no DescribeConfigs"
    if described is not None:
        out = []
        for key in keys:
            raw = described.get(key)
            value = int(raw) if raw is not None and raw.lstrip("-").isdigit() else None
            out.append(Setting(key, value, "DescribeConfigs" if value is not None else "not in DescribeConfigs"))
        return TargetSettings(tuple(out))
    return asyncio.run(_probe(host, port, allow_remote, timeout_s, why))


async def _probe(host: str, port: int, allow_remote: bool, timeout_s: float, why: str) -> TargetSettings:
    broker = Broker(host, port, allow_remote=allow_remote, timeout_s=timeout_s)
    await broker.start()
    try:
        prober = _Prober(broker, timeout_s)
        lo, hi = await prober.session_bounds()
        delay = await prober.initial_delay(lo, hi)
        await prober.delete_groups()
    finally:
        broker.close()
    how = f"probed ({why}): "
    bound = "INVALID_SESSION_TIMEOUT, binary search"
    return TargetSettings((
        Setting(MIN_SESSION, lo, how + bound if lo is not None else how + "no session timeout accepted"),
        Setting(MAX_SESSION, hi, how + bound if hi is not None else how + "no session timeout accepted"),
        Setting(INITIAL_DELAY, delay, how + "a lone member's join into an Empty group, timed"
                if delay is not None else how + f"no answer within {DELAY_PROBE_CAP_S:g} s",
                DELAY_TOLERANCE_MS),
        Setting("group.max.size", None, "not probed (it would take that many members)"),
    ))


class _Prober:
    def __init__(self, broker: Broker, timeout_s: float) -> None:
        self.broker, self.timeout_s = broker, timeout_s
        self.prefix = f"groupspec-probe-{uuid.uuid4().hex[:8]}-"
        self.groups: list[str] = []
        lo, hi = broker.versions.get(ApiKey.JoinGroup, (0, -1))
        if hi < lo:
            raise WireError("the target does not serve JoinGroup")
        self.version = hi

    def _group(self) -> str:
        g = f"{self.prefix}{len(self.groups)}"
        self.groups.append(g)
        return g

    async def _join(self, group: str, session: int, member_id: str = "",
                    wait_s: Optional[float] = None) -> tuple[Optional[m.JoinGroupResponse], float]:
        """(the answer, or None if none came within `wait_s`; its latency in seconds)."""
        conn = await self.broker.connect(group)
        try:
            request = m.JoinGroupRequest(group, member_id, "consumer", _PROTOCOLS, session,
                                         max(session, 300_000) if session < INT_MAX else session, None)
            api, body, _ = wire_request(request, self.version)
            t = time.monotonic()
            try:
                reply = await conn.call(api, self.version, body, wait_s if wait_s is not None else self.timeout_s)
            except WireError:
                if wait_s is None:
                    raise
                return None, time.monotonic() - t
            response = convert.response_record(api, self.version, reply)
            assert isinstance(response, m.JoinGroupResponse)
            return response, time.monotonic() - t
        finally:
            conn.close()

    async def _accepted(self, session: int) -> bool:
        """Whether the target takes `session` (an answer other than INVALID_SESSION_TIMEOUT: a
        MEMBER_ID_REQUIRED, or a join parked past a short wait)."""
        answer, _ = await self._join(self._group(), session, wait_s=1.0)
        return answer is None or answer.error is not Error.INVALID_SESSION_TIMEOUT

    async def session_bounds(self) -> tuple[Optional[int], Optional[int]]:
        ok = None
        for s in (10_000, 30_000, 6_000, 1_000, 100, 60_000, 300_000, 1_800_000):
            if await self._accepted(s):
                ok = s
                break
        if ok is None:
            return None, None
        lo, hi = 0, ok  # smallest accepted in [0, ok]
        while lo < hi:
            mid = (lo + hi) // 2
            if await self._accepted(mid):
                hi = mid
            else:
                lo = mid + 1
        smallest = lo
        lo, hi = ok, INT_MAX  # largest accepted in [ok, INT_MAX]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if await self._accepted(mid):
                lo = mid
            else:
                hi = mid - 1
        return smallest, lo

    async def initial_delay(self, lo: Optional[int], hi: Optional[int]) -> Optional[int]:
        """How long a lone member's join into an Empty group is parked (Kafka's
        InitialDelayedJoin; its rebalance timeout, 300 s, is far longer), less the answer time of
        an unparked request."""
        if lo is None or hi is None:
            return None
        session = min(hi, max(lo, 10_000))
        group = self._group()
        first, rtt = await self._join(group, session)
        member = ""
        if first is not None and first.error is Error.MEMBER_ID_REQUIRED:
            member = first.member_id
        else:
            rtt = 0.0  # (an old version parks the first join already: it is the timed one)
            group = self._group()
        answer, took = await self._join(group, session, member, wait_s=DELAY_PROBE_CAP_S)
        if answer is None:
            return None
        return max(0, int((took - rtt) * 1000) // 10 * 10)

    async def delete_groups(self) -> None:
        """Best effort: the probe's groups (pending members or one member each) are left to expire
        where the target refuses DeleteGroups for them."""
        lo, hi = self.broker.versions.get(ApiKey.DeleteGroups, (0, -1))
        if hi < lo or not self.groups:
            return
        for i in range(0, len(self.groups), 50):
            request = m.DeleteGroupsRequest(tuple(self.groups[i:i + 50]))
            api, body, _ = wire_request(request, hi)
            conn = await self.broker.connect(self.groups[i])
            try:
                await conn.call(api, hi, body, self.timeout_s)
            except WireError:
                pass
            finally:
                conn.close()


__all__ = ["CLEANUP_INTERVAL", "Setting", "TargetSettings", "read_settings", "reconcile"]
