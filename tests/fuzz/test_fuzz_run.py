"""Short seeded fuzz runs over real loopback sockets against the in-process reference broker:
nothing on the correct reference, findings on a seeded bug; the report's schema; the shrinker's
scenario fails on the buggy target (and, for some class, passes on the correct one)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from model.coordinator_api import CoordinatorConfig

from conformance.cli import run_files
from groupspec.cli import main
from server.run import start_in_thread

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
CLASS_FIELDS = {"class", "api", "api_version", "state", "rows", "expected", "actual", "count",
                "first_seen_s", "scenario", "steps"}


def test_correct_reference_has_no_findings(tmp_path: str) -> None:
    """`groupspec serve` as a separate process, fuzzed through kafka://HOST:PORT."""
    out = os.path.join(str(tmp_path), "r")
    proc = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "groupspec"), "serve", "--port", "0",
         "--config", "group.min.session.timeout.ms=100", "--config", "group.max.session.timeout.ms=60000",
         "--config", "group.initial.rebalance.delay.ms=0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("groupspec serve: listening on 127.0.0.1:"), line
        address = "kafka://" + line.rsplit(" ", 1)[1].strip()
        rc = main(["fuzz", "--target", address, "--minutes", "0.2", "--parallel", "24", "--seed", "7",
                        "--report", out, "--quiet", "--stop-after-classes", "1"])
    finally:
        proc.terminate()
        proc.wait(10)
    doc = json.load(open(os.path.join(out, "report.json")))
    assert rc == 0, doc["classes"]
    assert doc["findings"] == 0 and doc["sequences"] >= 24 and doc["requests"] > 100
    # --stop-after-classes stops only on findings: without any, the run takes its whole time
    assert doc["stopped_early"] == "" and doc["seconds"] >= 11.5, (doc["stopped_early"], doc["seconds"])
    assert len(doc["rows_covered"]) > 40
    assert 0 < doc["read_barriers"]["held"] <= doc["read_barriers"]["tried"]
    assert os.path.exists(os.path.join(out, "report.md"))


def test_seeded_bug_is_found_shrunk_and_replayable(tmp_path: str) -> None:
    out = os.path.join(str(tmp_path), "b")
    rc = main(["fuzz", "--target", "serve", "--bug", "heartbeat-empty-accepted", "--minutes", "0.2",
                    "--parallel", "24", "--seed", "7", "--report", out, "--quiet",
                    "--shrink-seconds", "15"])
    assert rc == 1
    doc = json.load(open(os.path.join(out, "report.json")))
    assert doc["findings"] >= 1 and doc["classes"]
    for c in doc["classes"]:
        assert CLASS_FIELDS <= set(c), set(c) ^ CLASS_FIELDS
        assert isinstance(c["rows"], list) and isinstance(c["expected"], list) and c["count"] >= 1
        assert len(c["steps"]) <= c["original_steps"]
    assert any(c["api"] == "Heartbeat" and c["actual"] == {"error": "NONE"} for c in doc["classes"])
    files = sorted(glob.glob(os.path.join(out, "scenarios", "*.json")))
    assert len(files) == len(doc["classes"])
    heartbeat = [c["scenario"] for c in doc["classes"] if c["api"] == "Heartbeat"]
    # every minimal scenario fails on the buggy target ...
    with start_in_thread(CFG, "heartbeat-empty-accepted") as buggy:
        assert run_files(heartbeat, f"kafka://127.0.0.1:{buggy.port}") == 1
    # ... and at least one passes on the correct one, one by one (the first that passes ends it)
    passed = 0
    for f in heartbeat:
        with start_in_thread(CFG) as good:
            passed += run_files([f], f"kafka://127.0.0.1:{good.port}") == 0
        if passed:
            break
    assert passed >= 1


def test_bad_usage_and_unreachable_target(tmp_path: str) -> None:
    assert main(["fuzz", "--target", "serve", "--config", "nonsense=1"]) == 2
    assert main(["fuzz", "--target", "tansu", "--bug", "no-generation-bump"]) == 2
    assert main(["fuzz", "--target", "serve", "--bug", "no-such-bug"]) == 2
    assert main(["fuzz", "--target", "kafka://10.1.2.3:9092", "--minutes", "0.05"]) == 2  # not loopback
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    assert main(["fuzz", "--target", f"kafka://127.0.0.1:{port}", "--minutes", "0.05", "--quiet"]) == 3


def test_request_order_is_kept_for_a_responsive_target() -> None:
    """A leader's SyncGroup sent while a follower's rejoin is parked: Kafka answers
    REBALANCE_IN_PROGRESS. The judge may consider the two requests in the other order only when
    the target answers slowly, so the seeded bug that answers NONE is found, and the correct
    reference is not a finding."""
    import asyncio

    from fuzz.actions import Action, Everyone, Join, Sync, Timing
    from fuzz.client import Broker
    from fuzz.engine import RunSettings, run_sequence

    acts: list[Action] = [Join(), Join(who=3), Join(), Join(who=4), Everyone(what=0), Everyone(what=1),
            Join(who=4, proto=1), Sync(who=0)]

    async def play(port: int) -> object:
        b = Broker("127.0.0.1", port)
        await b.start()
        r = await run_sequence(b, "order", 0, acts, RunSettings(CFG, Timing.for_config(CFG)))
        b.close()
        return r.finding

    with start_in_thread(CFG, "sync-accepted-in-preparing") as buggy:
        f = asyncio.run(play(buggy.port))
    assert f is not None and getattr(f, "api") == "SyncGroup"
    with start_in_thread(CFG) as good:
        assert asyncio.run(play(good.port)) is None


def test_max_requests_bounds_the_run(tmp_path: str) -> None:
    out = os.path.join(str(tmp_path), "m")
    assert main(["fuzz", "--target", "serve", "--max-requests", "150", "--minutes", "1", "--parallel", "8",
                      "--report", out, "--quiet"]) == 0
    doc = json.load(open(os.path.join(out, "report.json")))
    assert doc["requests"] <= 150 and doc["sequences"] >= 1


def test_stop_after_classes_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "--target", "serve", "--stop-after-classes", "0"]) == 2
    err = capsys.readouterr().err
    assert "--stop-after-classes" in err and "Traceback" not in err
