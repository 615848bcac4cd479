"""`groupspec observe` in front of `groupspec serve` with a real kafka-python group (3 members,
producing, consuming, committing) going through it: every answer the group needs passes, the judge
finds nothing, the report is written on SIGTERM and the exit status is 0; negative control: the
same group in front of `serve --bug no-generation-bump` is a finding (JoinGroup's generation), with
its scenario file, and exit 1. Slow (tests/conftest.py)."""

from __future__ import annotations

import json
import os

from model.errors import EXIT_FINDING, EXIT_OK

from observed import kafka_python_group, start_observe

FAST_SERVE = ("--no-probe", "--config", "group.initial.rebalance.delay.ms=0")


def test_a_kafka_python_group_through_observe_is_judged_clean(tmp_path: str) -> None:
    report = os.path.join(str(tmp_path), "report")
    obs = start_observe(report, "--upstream", "serve", *FAST_SERVE)
    try:
        acked, consumed, errors = kafka_python_group(f"127.0.0.1:{obs.port}")
    finally:
        rc, out = obs.stop()
    # a commit refused while the group rebalances is the protocol's answer (REBALANCE_IN_PROGRESS;
    # a member slowed by a loaded machine rejoins late), not an error of the path judged here
    unexpected = [e for e in errors if "commit: RebalanceInProgressError" not in e]
    assert acked == 30 and consumed == {f"r{i}".encode() for i in range(30)} and unexpected == []
    doc = obs.doc()
    assert rc == EXIT_OK, (out, doc["groups"], doc["classes"])
    assert doc["findings"] == 0 and doc["stopped_by"] == "SIGTERM"
    # the group was judged, through the proxy: its answers and the rewritten broker addresses
    group = next(g for g in doc["groups"] if g["group"] == "observed")
    assert group["judging"] == "to the end" and group["judged"] >= 20
    assert doc["traffic"]["rewritten"]["Metadata"] > 0 and doc["traffic"]["rewritten"]["FindCoordinator"] > 0
    assert doc["unparsed"] == {"requests": 0, "answers": 0, "unframed_streams": 0, "examples": []}
    assert len(doc["rows_covered"]) >= 10  # joins, syncs, heartbeats, commits, fetches, leaves
    assert "0 findings" in out.strip().splitlines()[-1]
    assert os.path.exists(os.path.join(report, "report.md"))


def test_negative_control_a_seeded_bug_is_a_finding_with_its_scenario(tmp_path: str) -> None:
    report = os.path.join(str(tmp_path), "report")
    obs = start_observe(report, "--upstream", "serve", "--bug", "no-generation-bump", *FAST_SERVE)
    try:
        kafka_python_group(f"127.0.0.1:{obs.port}", seconds=3.0)
    finally:
        rc, out = obs.stop()
    doc = obs.doc()
    assert rc == EXIT_FINDING, out
    assert doc["findings"] >= 1
    c = doc["classes"][0]
    assert c["api"] == "JoinGroup" and "generation" in c["class"] and c["group"] == "observed"
    assert c["scenario"] == "scenarios/observe-class-01.json"  # relative to the report's directory
    with open(os.path.join(report, c["scenario"]), encoding="utf-8") as f:
        scenario = json.load(f)
    assert scenario["conventions"]["class"] == c["class"]
    assert [s for s in scenario["scenarios"][0]["steps"] if s.get("op") == "join"]
    assert os.path.exists(os.path.join(report, "report.html"))
    assert f"CLASS x{c['count']}: {c['class']}  scenario {os.path.join(report, c['scenario'])}" in out
