"""Profile `kafka-4`: the classic-group table as Apache Kafka 4.x answers (Java GroupMetadataManager).

Kafka 4 serves classic groups from the Java coordinator (group-coordinator module:
GroupMetadataManager, ClassicGroup, OffsetMetadataManager) instead of 3.9's Scala
GroupCoordinator. Where it answers differently on purpose, the row is overridden here, by id, with
the Java source line; every other row is CLASSIC_TABLE's (3.9, the default). Differences found by
running tests/scenarios against Kafka 4.4.0 (`groupspec scenario run --target kafka-4`) are listed
in docs/kafka-fidelity.md, deliberate or not.

Java citations: `OMM` = group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
OffsetMetadataManager.java at apache/kafka 1eb7644 (trunk, Sept 2024, the code 4.0 grew from; the
4.4.0 jars publish no sources) - the behaviour is confirmed against the 4.4.0 broker.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from model.dsl import R, Table
from model.table import CLASSIC_TABLE
from model.vocabulary import Error

# row id -> fields replaced. Keep this small: a profile is a list of deliberate changes.
KAFKA4_OVERRIDES: Final[dict[str, dict[str, Any]]] = {
    # OffsetCommit v9+ (KIP-848) with a generation >= 0 to a group that does not exist:
    # GROUP_ID_NOT_FOUND; v0-8 keep ILLEGAL_GENERATION (OMM:318-326 validateOffsetCommit). The
    # model has no OffsetCommit version: the profile speaks for a v9+ client, as the wire target
    # sends (the highest version both sides speak).
    "Missing/OffsetCommit/illegal-generation": {
        "reply": R(Error.GROUP_ID_NOT_FOUND),
        "cite": "OMM:318 validateOffsetCommit (v9+: GROUP_ID_NOT_FOUND; v0-8: ILLEGAL_GENERATION)",
    },
}


def kafka4_table() -> Table:
    """CLASSIC_TABLE with the kafka-4 rows replaced (by id; an unknown id is an error)."""
    by_id = {r.id: r for r in CLASSIC_TABLE.rows}
    missing = set(KAFKA4_OVERRIDES) - set(by_id)
    if missing:
        raise KeyError(f"kafka-4 profile overrides unknown rows: {sorted(missing)}")
    rows = tuple(replace(r, **KAFKA4_OVERRIDES[r.id]) if r.id in KAFKA4_OVERRIDES else r
                 for r in CLASSIC_TABLE.rows)
    table = Table(name="kafka-4", rows=rows, events=CLASSIC_TABLE.events)
    table.validate()
    return table


# The profile's table, for the registry in check/profiles.py (built once, on first import).
KAFKA4_TABLE: Final[Table] = kafka4_table()
