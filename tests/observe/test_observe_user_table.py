"""`groupspec observe --table MODULE:NAME`: a broker judged by a user's table (docs/observe.md).

`serve --bug heartbeat-empty-accepted` answers a Heartbeat to an Empty group NONE. Judged by a
table of the user's own (a module in observe's working directory, here the mutant that agrees
with the bug) that is no finding; judged by Kafka 3.9's table it is one (the negative control).
And a finding judged by a user's table writes a scenario file that names that table."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error
from wire.target import KafkaTarget

from fuzz.judge import Tolerance
from groupspec.cli import main
from observe.judging import Judging
from render.findings import write_report_html

from observed import start_observe

BUG = "heartbeat-empty-accepted"
OWN_TABLE = textwrap.dedent(f"""
    from check.mutants import MUTANTS

    AGREES = MUTANTS["{BUG}"][0]  # Empty/Heartbeat/unknown-member answers NONE
""")
TP = m.TopicPartition("t", 0)


def _heartbeat_to_an_empty_group(port: int) -> list[m.Response]:
    """A simple commit makes the group (Empty), then a Heartbeat of a member it does not have."""
    got: list[m.Response] = []
    with KafkaTarget("127.0.0.1", port) as t:
        t.handle(m.OffsetCommitRequest("hb", "", -1, ((TP, 10),)), got.append)
        t.advance(100)
        t.handle(m.HeartbeatRequest("hb", "nobody", 0), got.append)
        t.advance(300)
    return got


def test_serve_with_the_bug_is_no_finding_by_a_table_that_agrees_and_one_by_kafka_3_9_s(tmp_path: Path) -> None:
    (tmp_path / "own_table.py").write_text(OWN_TABLE)
    findings = {}
    for table in ("own_table:AGREES", "kafka-3.9"):
        report = str(tmp_path / table.replace(":", "-"))
        o = start_observe(report, "--upstream", "serve", "--bug", BUG, "--table", table, cwd=str(tmp_path))
        try:
            got = _heartbeat_to_an_empty_group(o.port)
        finally:
            code, out = o.stop()
        assert got[-1] == m.HeartbeatResponse(Error.NONE)  # the bug answered
        doc = o.doc()
        assert doc["table"] == table and f"table {table}" in out and doc["judged_requests"] == 2
        findings[table] = (code, [c["class"] for c in doc["classes"]])
    assert findings["own_table:AGREES"] == (0, [])
    assert findings["kafka-3.9"] == (1, ["Heartbeat|Empty/Heartbeat/unknown-member|expected UNKNOWN_MEMBER_ID actual NONE"])


def test_a_finding_by_a_user_table_writes_a_scenario_that_names_it(tmp_path: Path) -> None:
    # a broker that answers as Kafka does departs from the table that agrees with the bug
    table = f"check.mutants:{BUG}"
    j = Judging(CoordinatorConfig(), Tolerance(), target="kafka://127.0.0.1:1", started=0.0, table=table,
                report=str(tmp_path))
    j.answer(j.request(1, ApiKey.OffsetCommit, 8, m.OffsetCommitRequest("hb", "", -1, ((TP, 10),)), 0.0),
             m.OffsetCommitResponse(((TP, Error.NONE),)), 0.002)
    j.answer(j.request(1, ApiKey.Heartbeat, 4, m.HeartbeatRequest("hb", "nobody", 0), 0.1),
             m.HeartbeatResponse(Error.UNKNOWN_MEMBER_ID), 0.102)
    (c,) = j.classes.values()
    assert c.key == "Heartbeat|Empty/Heartbeat/unknown-member|expected NONE actual UNKNOWN_MEMBER_ID"
    assert c.scenario is not None
    doc = json.loads(Path(c.scenario).read_text())
    assert doc["conventions"]["judged_with_table"] == table
    # the file replays on the model of the table it names, and fails on Kafka 3.9's (the control)
    assert main(["scenario", "run", c.scenario, "--target", "model", "--table", table]) == 0
    assert main(["scenario", "run", c.scenario, "--target", "model"]) == 1
    # the report page draws the finding on the table that judged it (its scenario runs clean there);
    # drawn on Kafka 3.9's, the scenario fails on the model (the control)
    for judged_by, fails in ((table, False), ("kafka-3.9", True)):
        report = {"target": "kafka://127.0.0.1:1", "findings": 1, "table": judged_by,
                  "classes": [{"class": c.key, "scenario": c.scenario, "api": "Heartbeat", "count": 1,
                               "expected": list(c.finding.expected), "actual": c.finding.actual}]}
        (tmp_path / "report.json").write_text(json.dumps(report))
        page = Path(write_report_html(str(tmp_path))).read_text()
        assert ("on the model the scenario fails" in page) is fails
        assert (f"Judged by table {table}; the diagrams run it." in page) is not fails


def test_clients_checks_observe_s_table_before_anything_starts(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    base = ["clients", "--target", "serve", "--client", "kafka-python", "--report", str(tmp_path / "r")]
    assert main([*base, "--observe-table", "check.mutants:no-such-mutant"]) == 2
    assert capsys.readouterr().err.strip() == (
        "groupspec clients: --observe-table: 'check.mutants:no-such-mutant': module check.mutants has no "
        "'no-such-mutant' (a transition table)")
    assert main([*base, "--observe-table", "kafka-4", "--no-observe"]) == 2
    assert "--observe-table: the members are not observed (--no-observe)" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
