"""Target names -> factories `(CoordinatorConfig) -> Coordinator`; engines are imported lazily.

`model`      model.concrete.ModelCoordinator (the transition table, run concretely)
`reference`  reference.coordinator.ReferenceCoordinator (the independent coordinator)
`kafka://HOST:PORT`  a remote broker over the Kafka wire protocol (needs allow_remote)
`tansu`      a local Tansu broker started by wire/ (Kafka-compatible peer)
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Callable, cast

from model.coordinator_api import Coordinator, CoordinatorConfig

from conformance.runner import TargetFactory

TARGET_HELP = "model, reference, kafka://HOST:PORT or tansu"

_KAFKA = re.compile(r"kafka://(?P<host>[^:/\s]+):(?P<port>\d{1,5})\Z")


class TargetError(ValueError):
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


def resolve_target(spec: str, allow_remote: bool) -> TargetFactory:
    """The factory for a target name; raises TargetError for an unknown or unavailable one."""
    if spec == "model":
        return _class_factory("model.concrete", "ModelCoordinator", spec)
    if spec == "reference":
        return _class_factory("reference.coordinator", "ReferenceCoordinator", spec)
    if spec == "tansu":
        make = _attribute("wire", "tansu_target_factory", spec)
        return cast(TargetFactory, make())
    if spec.startswith("kafka://"):
        m = _KAFKA.match(spec)
        if m is None or not 0 < int(m.group("port")) < 65536:
            raise TargetError(f"bad target {spec!r}: expected kafka://HOST:PORT")
        if not allow_remote:
            raise TargetError(f"target {spec!r} talks to a broker over the network: pass --allow-remote")
        make = _attribute("wire", "kafka_target_factory", spec)
        return cast(Callable[[CoordinatorConfig], Coordinator], make(m.group("host"), int(m.group("port"))))
    raise TargetError(f"unknown target {spec!r}: expected {TARGET_HELP}")
