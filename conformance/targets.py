"""Target names -> factories `(CoordinatorConfig) -> Coordinator`; engines are imported lazily.

`model`      model.concrete.ModelCoordinator (the transition table, run concretely)
`reference`  reference.coordinator.ReferenceCoordinator (the independent coordinator)
`kafka://HOST:PORT`  a broker over the Kafka wire protocol (a non-loopback host needs allow_remote)
`tansu`      a local Tansu broker started by wire/ (Kafka-compatible peer)
`kafka-3.9`, `kafka-4`  Apache Kafka itself (jars fetched by scripts/setup.sh), started by
             wire.kafka_broker: one broker per distinct broker config, shared by the scenarios
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Callable, Optional, Sequence, cast

from model.coordinator_api import Coordinator, CoordinatorConfig
from model.dsl import Guard, Table
from model.errors import BadInput

from conformance.runner import TargetFactory

TARGET_HELP = "model, reference, kafka://HOST:PORT, tansu, kafka-3.9 or kafka-4"

_KAFKA = re.compile(r"kafka://(?P<host>[^:/\s]+):(?P<port>\d{1,5})\Z")


class TargetError(BadInput, ValueError):
    """An unknown or unavailable target; the message says which and why."""


def _attribute(module: str, name: str, target: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise TargetError(f"target {target!r} is not available: cannot import {module} ({e})") from None
    if not hasattr(mod, name):
        raise TargetError(f"target {target!r} is not available: {module} has no {name}")
    return getattr(mod, name)


def _class_factory(module: str, name: str, target: str) -> TargetFactory:
    cls = _attribute(module, name, target)

    def factory(config: CoordinatorConfig) -> Coordinator:
        return cast(Coordinator, cls(config))

    return factory


_LOOPBACK = ("localhost", "::1")


def _is_loopback(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.")


class _TansuFactory:
    """One Tansu broker for the whole run, started on first use; `close()` stops it."""

    def __init__(self) -> None:
        self.broker: Any = None

    def __call__(self, config: CoordinatorConfig) -> Coordinator:
        import wire

        if self.broker is None:
            self.broker = wire.TansuBroker().__enter__()
        return cast(Coordinator, wire.tansu_target(config, broker=self.broker))

    def close(self) -> None:
        if self.broker is not None:
            self.broker.__exit__(None, None, None)
            self.broker = None


def resolve_target(spec: str, allow_remote: bool) -> TargetFactory:
    """The factory for a target name; raises TargetError for an unknown or unavailable one.

    A factory may also have `close()` (call it when the run is over). Targets built by wire/ may
    have `close()` and `skip_reason()`; the runner uses both.
    """
    if spec == "model":
        return _class_factory("model.concrete", "ModelCoordinator", spec)
    if spec == "reference":
        return _class_factory("reference.coordinator", "ReferenceCoordinator", spec)
    if spec == "tansu":
        _attribute("wire", "tansu_target", spec)
        return _TansuFactory()
    if spec in ("kafka-3.9", "kafka-4"):
        make_factory = _attribute("wire", "kafka_broker_target_factory", spec)
        why = _attribute("wire.kafka_broker", "kafka_available", spec)(spec[len("kafka-"):])
        if why is not None:
            raise TargetError(f"target {spec!r} is not available: {why}")
        return cast(TargetFactory, make_factory(spec[len("kafka-"):]))
    if spec.startswith("kafka://"):
        m = _KAFKA.match(spec)
        if m is None or not 0 < int(m.group("port")) < 65536:
            raise TargetError(f"bad target {spec!r}: expected kafka://HOST:PORT")
        if not allow_remote and not _is_loopback(m.group("host")):
            raise TargetError(f"target {spec!r} is not on this machine: pass --allow-remote to talk to it")
        make = _attribute("wire", "kafka_target", spec)

        def factory(config: CoordinatorConfig) -> Coordinator:
            return cast(Coordinator, make(spec, config, allow_remote=allow_remote))

        return factory
    raise TargetError(f"unknown target {spec!r}: expected {TARGET_HELP}")


def is_real_clock(spec: str) -> bool:
    """Whether the target runs its timers on the real clock (a broker), not the scenario's virtual one."""
    return spec not in ("model", "reference")


PROFILES = ("kafka-3.9", "kafka-4")  # --profile for --target model (kafka-3.9 = the default table)


def profile_model_factory(profile: str) -> TargetFactory:
    """The model running the table of a version profile (check/profile_kafka4.py)."""
    if profile not in PROFILES:
        raise TargetError(f"unknown profile {profile!r}: expected one of {', '.join(PROFILES)}")
    from model.concrete import ModelCoordinator
    from check.profile_kafka4 import kafka4_table
    from model.table import CLASSIC_TABLE

    table = CLASSIC_TABLE if profile == "kafka-3.9" else kafka4_table()

    def factory(config: CoordinatorConfig) -> Coordinator:
        return ModelCoordinator(config, table=table)

    return factory


def table_model_factory(table: Table, urgent: Sequence[tuple[str, Guard]]) -> TargetFactory:
    """The model running `table` with its `urgent` events (scenario run --table: a profile or a
    user's package.module:NAME, resolved by the command)."""
    from model.concrete import ModelCoordinator

    def factory(config: CoordinatorConfig) -> Coordinator:
        return ModelCoordinator(config, table=table, urgent=urgent)

    return factory


def close_factory(factory: TargetFactory) -> None:
    """Release what a factory holds (a shared broker), if anything."""
    close: Optional[Callable[[], None]] = getattr(factory, "close", None)
    if close is not None:
        close()
