"""observe judges a target by its profile's table (kafka-4's for Kafka 4), as `groupspec fuzz` does;
negative control: the same answer judged by Kafka 3.9's table is a finding."""

from __future__ import annotations

import json
import os

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

from fuzz.judge import Tolerance
from observe.judging import Judging


def _judge_commit_to_a_missing_group(table: str, report: str) -> Judging:
    # Kafka 4 answers an OffsetCommit v9+ with a generation to a group that does not exist
    # GROUP_ID_NOT_FOUND; Kafka 3.9 ILLEGAL_GENERATION (check/profile_kafka4.py)
    j = Judging(CoordinatorConfig(), Tolerance(), target="kafka://127.0.0.1:1", started=0.0, table=table,
                report=report)
    tp = m.TopicPartition("t", 0)
    tokens = j.request(1, ApiKey.OffsetCommit, 9, m.OffsetCommitRequest("g", "m-1", 3, ((tp, 10),)), 0.0)
    j.answer(tokens, m.OffsetCommitResponse(((tp, Error.GROUP_ID_NOT_FOUND),)), 0.003)
    return j


def test_a_kafka_4_target_is_judged_by_the_kafka_4_table(tmp_path: str) -> None:
    j = _judge_commit_to_a_missing_group("kafka-4", str(tmp_path))
    assert j.findings == 0 and not j.groups["g"].ended and j.judged() == 1


def test_negative_control_kafka_3_9_s_table_calls_it_a_finding_and_its_scenario_says_so(tmp_path: str) -> None:
    j = _judge_commit_to_a_missing_group("kafka-3.9", str(tmp_path))
    assert j.findings == 1
    (c,) = j.classes.values()
    assert c.scenario is not None
    with open(c.scenario, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["conventions"]["judged_with_table"] == "kafka-3.9"
    assert doc["conventions"]["generated_by"].startswith("groupspec observe against")
    assert os.path.dirname(c.scenario).endswith("scenarios")
