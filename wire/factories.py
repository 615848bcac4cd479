"""Factories of Kafka wire targets: one per scenario (`--target kafka://HOST:PORT`, `--target tansu`).

The package docstring (wire/__init__.py) describes each; they are re-exported there.
"""

from __future__ import annotations

import atexit
from typing import Any, Callable, Optional

from model.coordinator_api import CoordinatorConfig
from wire.tansu import TansuBroker
from wire.target import KafkaTarget, unsupported_config


def parse_address(address: str) -> tuple[str, int]:
    """"kafka://HOST:PORT" or "HOST:PORT" (IPv6 as [::1]:PORT) -> (host, port); ValueError if not."""
    rest = address[len("kafka://"):] if address.startswith("kafka://") else address
    host, sep, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected kafka://HOST:PORT, got {address!r}")
    return host, int(port)


def kafka_target(address: str, config: CoordinatorConfig = CoordinatorConfig(), *,
                 time_scale: float = 1.0, allow_remote: bool = False, **options: Any) -> KafkaTarget:
    host, port = parse_address(address)
    return KafkaTarget(host, port, config, time_scale, allow_remote=allow_remote, **options)


class _TansuTarget(KafkaTarget):
    """A KafkaTarget that owns the Tansu broker it talks to and stops it on close()."""

    owned_broker: Optional[TansuBroker] = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.owned_broker is not None:
                self.owned_broker.__exit__(None, None, None)
                self.owned_broker = None


def tansu_target(config: CoordinatorConfig = CoordinatorConfig(), *, time_scale: float = 1.0,
                 broker: Optional[TansuBroker] = None, **options: Any) -> KafkaTarget:
    if broker is not None:
        return KafkaTarget(broker.host, broker.port, config, time_scale, **options)
    owned = TansuBroker().__enter__()
    try:
        target = _TansuTarget(owned.host, owned.port, config, time_scale, **options)
    except BaseException:
        owned.__exit__(None, None, None)
        raise
    target.owned_broker = owned
    return target


class TargetFactory:
    """`factory(config)` -> a fresh target for one scenario; closes the one it made before."""

    def __init__(self, make: Callable[[CoordinatorConfig], KafkaTarget]) -> None:
        self._make = make
        self._last: Optional[KafkaTarget] = None
        atexit.register(self.close)

    def __call__(self, config: CoordinatorConfig) -> KafkaTarget:
        self.close_last()
        reason = unsupported_config(config)
        if reason is not None:
            raise NotImplementedError(reason)
        self._last = self._make(config)
        return self._last

    def close_last(self) -> None:
        """Close the target the last call made (subclasses' close() may release more)."""
        last, self._last = self._last, None
        if last is not None:
            last.close()

    def close(self) -> None:
        self.close_last()


def kafka_target_factory(host: str, port: int, *, allow_remote: bool = False,
                         time_scale: float = 1.0, **options: Any) -> TargetFactory:
    return TargetFactory(lambda config: KafkaTarget(
        host, port, config, time_scale, allow_remote=allow_remote, **options))


def tansu_target_factory(*, time_scale: float = 1.0, **options: Any) -> TargetFactory:
    return TargetFactory(lambda config: tansu_target(config, time_scale=time_scale, **options))
