"""One end-to-end run of the Spark job on a small local session (one session for the module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from traces_helpers import FIXTURES, model_trace, row_json, write_jsonl
from traces.inputs import classify
from traces.local import run_local
from traces.output import is_complete

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from traces import job

    session = job.session("local[2]", 4)
    yield session
    session.stop()


def test_job_matches_the_single_process_replay(spark: Any, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    from traces import job
    from traces.pipeline import REJECT_COLUMNS, VERDICT_COLUMNS

    lines: list[str] = []
    for k in range(6):
        lines += [row_json(e) for e in model_trace(f"g{k}", str(k), steps=30)]
    events = [json.loads(x) for x in lines]
    # one divergent group (a response error changed), and malformed rows
    i = next(n for n, e in enumerate(events) if e["group_id"] == "g2" and e["kind"] == "response"
             and e.get("error") == "NONE" and e["api"] == "Heartbeat")
    payload = json.loads(events[i]["payload"]) | {"error": "REBALANCE_IN_PROGRESS"}
    lines[i] = json.dumps(events[i] | {"payload": json.dumps(payload), "error": "REBALANCE_IN_PROGRESS"})
    lines += [lines[3][:30], json.dumps({"group_id": "g9", "seq": "0"}), lines[10]]
    path = write_jsonl(tmp_path / "t.jsonl", lines)
    inputs = classify([str(path)])

    counts = job.run(spark, inputs, tmp_path / "out", partitions=4)
    local = run_local(inputs)
    assert counts == local.counts
    assert (counts.rows, counts.rejected, counts.groups, counts.violations) == (len(lines), 3, 6, 1)
    assert is_complete(tmp_path / "out")

    verdicts = spark.read.parquet(str(tmp_path / "out" / "verdicts"))
    expected = spark.createDataFrame(local.verdicts, verdicts.schema).select(*VERDICT_COLUMNS)
    # origins differ in form (file#position under Spark, file:line locally)
    assertDataFrameEqual(verdicts.drop("origin"), expected.drop("origin"))
    rejects = spark.read.parquet(str(tmp_path / "out" / "rejects")).select("group_id", "seq", "reason")
    want = spark.createDataFrame(local.rejects, spark.read.parquet(str(tmp_path / "out" / "rejects")).schema)
    assertDataFrameEqual(
        rejects.selectExpr("group_id", "seq", "regexp_replace(reason, ' \\\\(kept the first.*', '') as reason"),
        want.selectExpr("group_id", "seq", "regexp_replace(reason, ' \\\\(kept the first.*', '') as reason"),
    )
    coverage = {r["key"]: r["count"] for r in spark.read.parquet(str(tmp_path / "out" / "coverage")).collect()}
    assert coverage == local.coverage
    assert set(REJECT_COLUMNS) == set(spark.read.parquet(str(tmp_path / "out" / "rejects")).columns)


def test_job_replays_every_collected_broker_log(spark: Any, tmp_path: Path) -> None:
    """All real excerpts (tests/data/broker-logs), one of them written twice by two appenders and one
    with bytes that are not UTF-8: the same counts as the single-process run, nothing lost, 0 violations."""
    from traces import job

    data = Path(__file__).parents[1] / "data" / "broker-logs"
    logs = tmp_path / "logs"
    logs.mkdir()
    for path in sorted(data.glob("*.log")):
        (logs / path.name).write_bytes(path.read_bytes())
    doubled = (data / "see-quick-kafka-4.x-java-coordinator.log").read_text().splitlines()
    (logs / "two-appenders.log").write_text("".join(f"{x}\n{x}\n" for x in doubled))
    raw = (data / "kaffe-92-kafka-2.3.log").read_bytes()
    (logs / "not-utf8.log").write_bytes(raw.replace(b"group test_consumer generation 15", b"group test_\xffconsumer generation 15", 1))
    jaeger = (data / "jaeger-1774-kafka-2.3.log").read_text().splitlines()
    (logs / "huge-generation.log").write_text(jaeger[2].replace("generation 1690 ", f"generation {10**23} ") + "\n")
    inputs = classify([str(logs)])

    counts = job.run(spark, inputs, tmp_path / "out", partitions=4)
    local = run_local(inputs)
    assert counts == local.counts
    # duplicates: the doubled copy repeats each line of see-quick twice more, and not-utf8.log repeats
    # the 4 intact lines of kaffe (the same timestamp and text in two files is an overlap, counted once)
    # plus the 2 records the broker of librdkafka-2944 wrote twice itself (SOURCES: `duplicates: 2`)
    assert (counts.violations, counts.duplicates, counts.rejected) == (0, 2 * len(doubled) + 4 + 2, 2)
    assert counts.rows == counts.replayed + counts.rejected + counts.ignored + counts.duplicates
    assert is_complete(tmp_path / "out")
    reasons = sorted(r["reason"] for r in spark.read.parquet(str(tmp_path / "out" / "rejects")).collect())
    assert "out of range" in reasons[0] and "UTF-8" in reasons[1]
    notes = spark.read.parquet(str(tmp_path / "out" / "verdicts")).where("note is not null").count()
    assert notes == sum(1 for v in local.verdicts if v["note"] is not None) > 0


def test_damaged_input_on_spark_is_rejected_per_row_like_the_single_process_replay(
        spark: Any, tmp_path: Path) -> None:
    """Issue 15: bytes that are not UTF-8 crashed the Spark job (UnicodeDecodeError) while --local
    rejected them; seq >= 2^63 and lone surrogates crashed both; a line cut at the end of the file
    made its group a violation. One job for the trace, one for a broker log, on the module's session."""
    from traces import job

    lines: list[str] = []
    for k in range(3):
        lines += [row_json(e) for e in model_trace(f"g{k}", str(k), steps=20)]
    lines[1] = json.dumps(json.loads(lines[1]) | {"seq": 2 ** 63})
    lines[5] = lines[5].replace('"group_id":"g0"', '"group_id":"g\\udcff"')
    data = "".join(x + "\n" for x in lines).encode("ascii")
    k = data.index(b'"g1"')
    data = data[:k] + b'"g\xff1"' + data[k + 4:]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "t.jsonl").write_bytes(data[:-30])  # the last line cut: g2 incomplete
    log = (FIXTURES / "server-3.9.log").read_bytes().splitlines(keepends=True)
    log[4] = log[4].replace(b"orders", b"ord\xe9rs")  # Latin-1, not UTF-8
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "server.log").write_bytes(b"".join(log))

    traces = classify([str(tmp_path / "in")])
    logs = classify([str(tmp_path / "logs")])
    counts = job.run(spark, traces, tmp_path / "out", partitions=4)
    log_counts = job.run(spark, logs, tmp_path / "out-log", partitions=4)
    reasons = {r["reason"] for r in spark.read.parquet(str(tmp_path / "out" / "rejects")).collect()}
    log_reasons = {r["reason"] for r in spark.read.parquet(str(tmp_path / "out-log" / "rejects")).collect()}
    assert counts == run_local(traces).counts and counts.violations == 0 and counts.incomplete >= 1
    assert "line is not valid UTF-8" in reasons
    assert any("lone surrogate" in r for r in reasons) and any("int64" in r for r in reasons)
    assert log_counts == run_local(logs).counts and "line is not valid UTF-8" in log_reasons


def test_job_judges_by_replay_s_table_on_the_executors(spark: Any, tmp_path: Path) -> None:
    """replay --table on Spark: traces of the reference with heartbeat-empty-accepted in every group
    replay clean against the mutant that agrees with the bug, the table resolved by name on each
    executor; the same traces judged by Kafka 3.9's table (locally: the job matches it, above) are
    flagged, so a job that ignored the table would fail here."""
    from groupspec.cli import main
    from traces import job

    bug = "heartbeat-empty-accepted"
    assert main(["traces", "generate", "--groups", "8", "--seed", "5", "--bug", bug, "--bug-fraction", "1",
                 "--out", str(tmp_path / "in")]) == 0
    inputs = classify([str(tmp_path / "in")])
    assert run_local(inputs).counts.violations > 0  # the control: the classic table flags the bug
    counts = job.run(spark, inputs, tmp_path / "out", partitions=2, judged_by=f"check.mutants:{bug}")
    assert (counts.groups, counts.violations) == (8, 0)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["table"] == f"check.mutants:{bug}"
    coverage = {r["key"]: r["count"] for r in spark.read.parquet(str(tmp_path / "out" / "coverage")).collect()}
    assert coverage.get("Empty/Heartbeat/unknown-member", 0) > 0


def test_an_executor_that_cannot_import_the_table_fails_the_job_saying_how_to_ship_it(
        spark: Any, tmp_path: Path) -> None:
    """(the driver imported it; on a cluster the executors may not: `replay` turns this into exit 3
    with the executor's line, traces/cli.py)"""
    from traces import job

    path = write_jsonl(tmp_path / "t.jsonl", [row_json(e) for e in model_trace("g1", "1", steps=5)])
    with pytest.raises(Exception) as caught:
        job.run(spark, classify([str(path)]), tmp_path / "out", partitions=2, judged_by="not_on_executors_xyz:T")
    assert ("executor: --table: cannot import 'not_on_executors_xyz'" in str(caught.value)
            and "--py-files" in str(caught.value))
    assert not (tmp_path / "out").exists()
