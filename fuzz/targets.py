"""Targets a run starts and stops itself: `groupspec serve` (with seeded bugs), Apache Kafka, Tansu,
or an address (`kafka://HOST:PORT`). Used by `groupspec fuzz`, `groupspec observe` (observe/) and
`groupspec clients` (clients/)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from typing import Iterator

from model.coordinator_api import CoordinatorConfig
from model.errors import BadInput
from server.config import kafka_properties
from wire.errors import WireError


def _create_topic(tansu: str, url: str) -> None:
    """The topic the fuzzer commits offsets to, created with Tansu's own CLI (Tansu, like Kafka,
    answers UNKNOWN_TOPIC_OR_PARTITION to a commit for a topic that does not exist, and the wire
    codec has no CreateTopics)."""
    from fuzz.actions import PARTITIONS
    done = subprocess.run([tansu, "topic", "create", PARTITIONS[0].topic, "--broker", url,
                           "--partitions", str(len(PARTITIONS))],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise WireError(f"tansu topic create {PARTITIONS[0].topic}: {done.stderr.strip()[-300:]}")


@contextlib.contextmanager
def start_target(spec: str, config: CoordinatorConfig, bugs: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
    """The broker `spec` names, started for the `with` block and stopped after it (or, for
    `kafka://HOST:PORT`, only parsed): yields its (host, port). `serve` (with `bugs`, seeded bugs of
    reference/bugs.py) runs `groupspec serve` configured with `config` in its own process;
    `kafka-3.9`, `kafka-4...` start Apache Kafka (KRaft, one node), `tansu` the Tansu binary, each
    with the topic the fuzzer commits offsets to. A bad name or bug is a BadInput; a broker that
    does not start raises a WireError (or BrokerStartError)."""
    if bugs and spec not in ("reference", "serve"):
        raise BadInput("--bug needs --target serve (or run `groupspec serve --bug`)")
    if spec in ("reference", "serve"):
        from reference.bugs import BUGS
        unknown = sorted(set(bugs) - set(BUGS))
        if unknown:
            raise BadInput(f"unknown --bug {unknown}; known: {', '.join(sorted(BUGS))}")
        # `groupspec serve` in its own process (its timers must not wait for this one's GIL)
        cmd = [sys.executable, "-m", "groupspec.cli", "serve", "--port", "0"]
        for k, v in kafka_properties(config).items():
            cmd += ["--config", f"{k}={v}"]
        for b in bugs:
            cmd += ["--bug", b]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("groupspec serve: listening on "):
                raise WireError(f"groupspec serve did not start: {line.strip() or proc.wait(10)}")
            host, _, port = line.rsplit(" ", 1)[1].strip().rpartition(":")
            yield host, int(port)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    elif spec == "tansu":
        from wire.tansu import TansuBroker
        with TansuBroker() as tb:
            _create_topic(tb.binary, f"tcp://{tb.host}:{tb.port}")
            yield tb.host, tb.port
    elif spec.startswith("kafka-"):
        from wire.kafka_broker import KafkaBroker
        from fuzz.actions import PARTITIONS
        topics = {PARTITIONS[0].topic: len(PARTITIONS)}  # Kafka checks that committed topics exist
        with KafkaBroker(spec[len("kafka-"):], config, topics=topics) as kb:
            host, _, port = kb.address().rpartition(":")
            yield host, int(port)
    else:
        from wire import parse_address
        try:
            yield parse_address(spec)
        except ValueError as e:
            raise BadInput(f"--target: {e}") from None


__all__ = ["start_target"]
