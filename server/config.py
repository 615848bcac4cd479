"""Kafka broker properties for the served coordinator: `--config KEY=VALUE`, Kafka's own names.

Every `CoordinatorConfig` field that is a Kafka broker property is settable; the others
(`new_member_join_timeout_ms` is a constant in GroupCoordinator.scala, `not_owned_groups` and
`append_result` are test hooks) are not. Bounds follow Kafka 3.9's config definitions
(GroupCoordinatorConfig: `group.max.size` is atLeast(1); all four are INT properties).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, Iterable

from model.coordinator_api import CoordinatorConfig

# Kafka property -> (CoordinatorConfig field, smallest value Kafka accepts)
KAFKA_PROPERTIES: Final[dict[str, tuple[str, int]]] = {
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", 0),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", 0),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", 0),
    "group.max.size": ("group_max_size", 1),
}
_INT_MAX: Final = 2**31 - 1


class ConfigError(ValueError):
    """A bad `KEY=VALUE` setting; the message names the setting and what was expected."""


def parse_properties(settings: Iterable[str], base: CoordinatorConfig = CoordinatorConfig()) -> CoordinatorConfig:
    """`["group.max.size=3", ...]` -> `base` with those fields replaced; ConfigError if any is bad."""
    changes: dict[str, Any] = {}
    for text in settings:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ConfigError(f"--config {text!r}: expected KEY=VALUE")
        if key not in KAFKA_PROPERTIES:
            raise ConfigError(f"--config {key}: unknown property; known: {', '.join(sorted(KAFKA_PROPERTIES))}")
        field, minimum = KAFKA_PROPERTIES[key]
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"--config {key}={value}: expected an integer") from None
        if not minimum <= number <= _INT_MAX:
            raise ConfigError(f"--config {key}={value}: expected an integer in {minimum}..{_INT_MAX}")
        changes[field] = number
    config = dataclasses.replace(base, **changes)
    if config.group_min_session_timeout_ms > config.group_max_session_timeout_ms:
        raise ConfigError(
            f"--config: group.min.session.timeout.ms ({config.group_min_session_timeout_ms}) is greater "
            f"than group.max.session.timeout.ms ({config.group_max_session_timeout_ms})")
    return config
