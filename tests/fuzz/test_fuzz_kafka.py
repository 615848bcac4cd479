"""A short seeded fuzz run against real Apache Kafka 3.9 (KRaft, loopback): no findings."""

from __future__ import annotations

import json
import os

import pytest

from groupspec.cli import main
from wire.kafka_broker import kafka_available

WHY_NOT = kafka_available("3.9")
pytestmark = [pytest.mark.kafka] + (
    [pytest.mark.skip(reason=WHY_NOT)] if WHY_NOT is not None and not os.environ.get("CI") else [])


def test_kafka_39_has_no_findings(tmp_path: str) -> None:
    out = os.path.join(str(tmp_path), "k")
    rc = main(["fuzz", "--target", "kafka-3.9", "--minutes", "0.3", "--parallel", "24", "--seed", "9",
                    "--report", out, "--quiet"])
    doc = json.load(open(os.path.join(out, "report.json")))
    assert rc == 0, doc["classes"]
    assert doc["findings"] == 0 and doc["sequences"] >= 24 and doc["requests"] > 100
