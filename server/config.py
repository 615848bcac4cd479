"""Kafka broker properties for the served coordinator, by Kafka's own names, with their bounds.

Every `CoordinatorConfig` field that is a Kafka broker property is settable; the others
(`new_member_join_timeout_ms` is a constant in GroupCoordinator.scala, `not_owned_groups` and
`append_result` are test hooks) are not. Bounds follow Kafka 3.9's config definitions
(GroupCoordinatorConfig: `group.max.size` is atLeast(1); all four are INT properties).
`--config KEY=VALUE` is parsed against this table by `groupspec.options.parse_config`, for
`groupspec serve` and `groupspec fuzz` alike.
"""

from __future__ import annotations

from typing import Final

from model.coordinator_api import CoordinatorConfig

# Kafka property -> (CoordinatorConfig field, smallest value Kafka accepts)
KAFKA_PROPERTIES: Final[dict[str, tuple[str, int]]] = {
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", 0),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", 0),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", 0),
    "group.max.size": ("group_max_size", 1),
}
INT_MAX: Final = 2**31 - 1  # the largest value of an INT property


def kafka_properties(config: CoordinatorConfig) -> dict[str, int]:
    """The Kafka broker properties of a configuration, by Kafka's names."""
    return {key: int(getattr(config, name)) for key, (name, _) in KAFKA_PROPERTIES.items()}
