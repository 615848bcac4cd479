"""`groupspec serve` as a process: the first stdout line, the exit codes, --config and --bug."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from model import messages as m
from model.vocabulary import Error
from wire import KafkaTarget, kafka_target

LISTENING = re.compile(r"groupspec serve: listening on 127\.0\.0\.1:(\d+)\n\Z")
GROUPSPEC = [sys.executable, "-c", "import sys; from groupspec.cli import main; sys.exit(main())"]


@contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    proc = subprocess.Popen([*GROUPSPEC, "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = LISTENING.match(line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield proc, int(match.group(1))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GROUPSPEC, *args], capture_output=True, text=True, timeout=60)


def _join(t: KafkaTarget, session_ms: int) -> m.JoinGroupResponse:
    got: list[m.Response] = []
    t.handle(m.JoinGroupRequest("g", "", "consumer", (m.ProtocolMetadata("range"),),
                                session_timeout_ms=session_ms), got.append)
    assert len(got) == 1 and isinstance(got[0], m.JoinGroupResponse)
    return got[0]


def test_sigterm_stops_with_0_and_one_line() -> None:
    with serving("--port", "0") as (proc, port):
        with kafka_target(f"kafka://127.0.0.1:{port}") as t:
            assert _join(t, 10000).error is Error.MEMBER_ID_REQUIRED
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert out == "" and err.splitlines() == ["groupspec serve: stopped (SIGTERM)"]


def test_ctrl_c_stops_with_130_and_one_line() -> None:
    with serving() as (proc, _):
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        assert err.splitlines() == ["groupspec serve: interrupted, stopped"] and "Traceback" not in err


def test_config_properties_reach_the_coordinator() -> None:
    with serving("--config", "group.min.session.timeout.ms=10000",
                 "--config", "group.max.session.timeout.ms=20000") as (proc, port):
        with kafka_target(f"kafka://127.0.0.1:{port}") as t:
            assert _join(t, 9999).error is Error.INVALID_SESSION_TIMEOUT
            assert _join(t, 20001).error is Error.INVALID_SESSION_TIMEOUT
            assert _join(t, 15000).error is Error.MEMBER_ID_REQUIRED
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_seeded_bug_changes_an_answer() -> None:
    """Negative control: Heartbeat to an Empty group is UNKNOWN_MEMBER_ID, NONE with the bug."""
    answers = {}
    for args in ((), ("--bug", "heartbeat-empty-accepted")):
        with serving(*args) as (proc, port):
            with kafka_target(f"kafka://127.0.0.1:{port}") as t:
                got: list[m.Response] = []
                commit = m.OffsetCommitRequest("g", "", -1, ((m.TopicPartition("t", 0), 1),))
                t.handle(commit, got.append)  # creates the group, Empty
                member = _join(t, 10000).member_id
                t.handle(m.HeartbeatRequest("g", member, 0), got.append)
                answers[args] = got[-1]
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
            if args:
                assert "seeded bug(s) on: heartbeat-empty-accepted" in err
    assert answers[()] == m.HeartbeatResponse(Error.UNKNOWN_MEMBER_ID)
    assert answers[("--bug", "heartbeat-empty-accepted")] == m.HeartbeatResponse(Error.NONE)


@pytest.mark.parametrize(("args", "message"), [
    (["--config", "group.unknown=1"], "unknown property"),
    (["--config", "group.max.size=0"], "expected an integer in 1.."),
    (["--config", "group.max.size=lots"], "expected an integer"),
    (["--config", "group.max.size"], "expected KEY=VALUE"),
    (["--config", "group.max.session.timeout.ms=1000"], "greater than group.max.session.timeout.ms"),
    (["--bug", "no-such-bug"], "known: commit-in-completing-accepted"),
    (["--port", "70000"], "--port must be in 0..65535"),
    (["--frobnicate"], "unrecognized arguments"),
])
def test_bad_arguments_exit_2_with_one_message(args: list[str], message: str) -> None:
    done = _run("serve", *args)
    assert done.returncode == 2, done
    assert done.stdout == "" and message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_port_in_use_exits_2() -> None:
    with serving() as (proc, port):
        done = _run("serve", "--port", str(port))
        assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_help_lists_serve() -> None:
    assert "groupspec serve" in _run("--help").stdout
    done = _run("serve", "--help")
    assert done.returncode == 0 and "group.initial.rebalance.delay.ms" in done.stdout
