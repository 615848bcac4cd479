"""`groupspec clients`: bad input is one line and exit 2 before anything starts; a short churn run
against serve, through observe, keeps the promise and observe finds nothing (exit 0, a report), and
the same run against a seeded bug breaks the promise and is observe's finding (exit 1): the run's
negative control. The two runs are slow (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from clients.group import unavailable
from groupspec.cli import main


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


BASE = ["clients", "--target", "serve", "--client", "kafka-python"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--churn", "stop,nap"], "unknown kind(s) nap"),
    (["--churn", "static-restart"], "needs --static"),
    (["--consumers", "0"], "must be positive"),
    (["--target", "kafka://10.1.2.3:9092"], "not on loopback"),
    (["--client", "rust"], "invalid choice"),
    (["--static", "4"], "between 0 and --consumers"),
    (["--observe-accept", "/nonexistent/accept.json"], "no such file"),
    (["--config", "group.max.size=0"], "group.max.size"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, extra: list[str], message: str) -> None:
    code, out, err = run([*BASE, "--report", str(tmp_path / "r"), *extra])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r" / "report.json").exists()


def test_a_report_path_that_is_a_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    code, _, err = run([*BASE, "--report", str(tmp_path / "file")])
    assert code == 2 and "not a directory" in err


SHORT = ["--minutes", "0.3", "--seed", "3", "--session-timeout-ms", "6000", "--churn", "stop,kill,pause,restart"]
# a mixed group (the first member static) and every churn kind; seed 12 draws a static restart (7.8 s), then a
# stop (12.9 s): a rebalance
# no initial rebalance delay: a busy machine's late reads cannot make observe judge its end early
EVERY_KIND = ["--minutes", "0.3", "--seed", "12", "--session-timeout-ms", "6000", "--static", "1",
              "--config", "group.initial.rebalance.delay.ms=0",
              "--churn", "stop,kill,pause,restart,static-restart"]


@pytest.mark.parametrize("client", ["kafka-python", "librdkafka"])
def test_a_short_churn_run_against_serve_keeps_the_promise(tmp_path: Path, client: str) -> None:
    if unavailable(client):
        pytest.skip(f"{client} is not installed")
    code, out, err = run(["clients", "--target", "serve", "--client", client, *EVERY_KIND, "--report", str(tmp_path)])
    doc = json.loads((tmp_path / "report.json").read_text())
    assert code == 0, (out, err, (tmp_path / "report.md").read_text())
    # consumed >= acknowledged: a killed member's last records may be stored without its acknowledgement printed
    assert doc["violations"] == [] and doc["drained"] and doc["consumed"] >= doc["produced"] > 0
    assert doc["static"] == 1 and doc["churn"]["actions"][0]["kind"] == "static-restart"
    assert len(doc["generations"]) >= 2 and doc["commits"] > 0
    # every request went through observe, which judged the group and found nothing
    assert doc["observe"]["exit_code"] == 0 and doc["observe"]["findings"] == 0, doc["observe"]
    assert doc["observe"]["judged_requests"] > 0 and doc["observe"]["unparsed"] == 0
    # ... to the end: every group request's answer judged, but for those whose connection closed first
    o = doc["observe"]
    assert o["inconclusive_groups"] == 0 and o["judged_to_the_end"], o
    assert o["judged_requests"] + o["closed_unanswered"] == o["group_requests"], o
    assert (tmp_path / "report.md").read_text().startswith(f"# groupspec clients: {client} against serve")
    assert len((tmp_path / "events.jsonl").read_text().splitlines()) > doc["produced"]


def test_the_same_run_against_a_seeded_bug_breaks_the_promise(tmp_path: Path) -> None:
    """no-generation-bump: every rebalance hands out assignments in the same generation."""
    if unavailable("kafka-python"):
        pytest.skip("kafka-python is not installed")
    code, out, err = run([*BASE, *SHORT, "--bug", "no-generation-bump", "--report", str(tmp_path)])
    doc = json.loads((tmp_path / "report.json").read_text())
    assert code == 1, (out, err)
    assert doc["violations_by_kind"]["double-ownership"] >= 1
    assert doc["observe"]["findings"] >= 1 and "generation" in doc["observe"]["classes"][0]["class"]
