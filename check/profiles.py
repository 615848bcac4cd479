"""Named tables ("profiles"): the coordinator versions `groupspec diff` and `check --refines` compare.

A profile is registered with one line, `register(NAME, "package.module:ATTRIBUTE", WHAT)`; its
module is imported only when the profile is used, so a profile module may itself build on
CLASSIC_TABLE (row overrides) without an import cycle.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Final

from model.dsl import Table


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    spec: str  # package.module:ATTRIBUTE of a Table
    description: str


PROFILES: Final[dict[str, Profile]] = {}


def register(name: str, spec: str, description: str) -> None:
    """Register a named table; `spec` is `package.module:ATTRIBUTE`."""
    if name in PROFILES and PROFILES[name].spec != spec:
        raise ValueError(f"profile {name!r} is already registered as {PROFILES[name].spec}")
    PROFILES[name] = Profile(name, spec, description)


class UnknownProfile(LookupError):
    pass


def profile_table(name: str) -> Table:
    """The table of a registered profile (imports its module on first use)."""
    p = PROFILES.get(name)
    if p is None:
        raise UnknownProfile(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}")
    mod_name, _, attr = p.spec.partition(":")
    table = getattr(importlib.import_module(mod_name), attr)
    if not isinstance(table, Table):
        raise TypeError(f"profile {name!r}: {p.spec} is not a transition table")
    return table


register("kafka-3.9", "model.table:CLASSIC_TABLE",
         "Kafka 3.9 GroupCoordinator.scala (the classic group coordinator)")
register("kafka-4", "check.profile_kafka4:KAFKA4_TABLE",
         "Kafka 4.x Java GroupMetadataManager/ClassicGroup: kafka-3.9 with row overrides")
