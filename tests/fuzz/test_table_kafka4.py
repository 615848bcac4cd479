"""A real Apache Kafka 4.4 judged by the table of its profile (slow: a JVM).

Negative control: Kafka 4's answer to an OffsetCommit with a generation to a missing group
(GROUP_ID_NOT_FOUND) is a finding under the 3.9 table and none under the kafka-4 table, which
`--target kafka-4` judges with (fuzz/allowances.py `judged_table`).
"""

from __future__ import annotations

import asyncio
import os

import pytest

from check.profile_kafka4 import KAFKA4_TABLE
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.table import CLASSIC_TABLE

from fuzz.actions import PARTITIONS, Action, Commit, Timing
from fuzz.allowances import judged_table
from fuzz.engine import RunSettings, SequenceResult, run_sequence
from wire.kafka_broker import KafkaBroker, kafka_available

WHY_NOT = kafka_available("4")
pytestmark = [pytest.mark.kafka] + (
    [pytest.mark.skip(reason=WHY_NOT)] if WHY_NOT is not None and not os.environ.get("CI") else [])

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
ROW = "Missing/OffsetCommit/illegal-generation"


def test_kafka4_is_judged_by_the_kafka4_table() -> None:
    from fuzz.client import Broker

    acts: list[Action] = [Commit(who=7, gen=4)]  # a ghost member, generation 0, to a missing group

    async def play(address: str, group: str, table: Table) -> SequenceResult:
        host, _, port = address.rpartition(":")
        b = Broker(host, int(port))
        await b.start()
        r = await run_sequence(b, group, 0, acts, RunSettings(CFG, Timing.for_config(CFG), table=table))
        b.close()
        return r

    assert judged_table("kafka-4")[1] is KAFKA4_TABLE
    with KafkaBroker("4", CFG, topics={PARTITIONS[0].topic: len(PARTITIONS)}) as kb:
        under_39 = asyncio.run(play(kb.address(), "k4-a", CLASSIC_TABLE))
        under_4 = asyncio.run(play(kb.address(), "k4-b", KAFKA4_TABLE))
    f = under_39.finding
    assert f is not None and ROW in f.rows and "GROUP_ID_NOT_FOUND" in str(f.actual), f
    assert under_4.finding is None and ROW in under_4.covered
