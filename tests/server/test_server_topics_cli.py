"""`groupspec serve --topic NAME:PARTITIONS`, `--num-partitions`, `--no-auto-create-topics` as a
process: topics exist from the start, auto-creation follows the flags, bad values exit 2."""

from __future__ import annotations

import signal

import pytest

from served import raw_connect
from test_server_cli import _run, serving
from test_server_data import call

from wire.data_apis import DataApi
from wire.schema import Struct


def _metadata(port: int, *names: str) -> dict[str, tuple[int, int]]:
    """name -> (error code, partitions) for a Metadata v12 that allows auto-creation."""
    body: Struct = {"topics": [{"name": n, "topic_id": bytes(16)} for n in names], "allow_auto_topic_creation": True,
                    "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}
    with raw_connect(port) as sock:
        got = call(sock, DataApi.Metadata, 12, body)
    return {t["name"]: (t["error_code"], len(t["partitions"])) for t in got["topics"]}


def test_topics_given_exist_and_auto_creation_can_be_off() -> None:
    with serving("--topic", "orders:3", "--topic", "a.b-c_d:1", "--no-auto-create-topics") as (proc, port):
        assert _metadata(port, "orders", "a.b-c_d", "missing") == {
            "orders": (0, 3), "a.b-c_d": (0, 1), "missing": (3, 0)}
        assert _metadata(port, "missing") == {"missing": (3, 0)}  # still not created
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_auto_created_topics_get_num_partitions() -> None:
    with serving("--num-partitions", "4") as (proc, port):
        assert _metadata(port, "fresh") == {"fresh": (5, 0)}  # LEADER_NOT_AVAILABLE while created
        assert _metadata(port, "fresh") == {"fresh": (0, 4)}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--topic", "orders"], "expected NAME:PARTITIONS"),
    (["--topic", "orders:0"], "expected NAME:PARTITIONS"),
    (["--topic", "bad/name:2"], "has characters outside"),
    (["--topic", "t:1", "--topic", "t:2"], "--topic given twice for t"),
    (["--num-partitions", "0"], "--num-partitions must be >= 1"),
])
def test_bad_topic_arguments_exit_2_with_one_message(args: list[str], message: str) -> None:
    done = _run("serve", *args)
    assert done.returncode == 2, done
    assert done.stdout == "" and message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
