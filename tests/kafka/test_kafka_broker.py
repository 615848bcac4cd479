"""wire.kafka_broker: Apache Kafka 3.9 started from Maven's jars, ready, answering, stopped cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from kafka_testkit import require_kafka

from model.coordinator_api import CoordinatorConfig
from wire import BrokerStartError, KafkaBroker, kafka_broker_target_factory
from wire.kafka_broker import NO_PERIODIC_CLEANUP_MS, KafkaBrokerPool, kafka_unsupported_config
from wire.transport import Connection, api_versions

pytestmark = require_kafka()

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead
        return f.read().split(") ")[1][0] != "Z"


def test_broker_starts_answers_and_stops() -> None:
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0, group_max_size=7)
    broker = KafkaBroker("3.9", config, startup_timeout_s=120)
    with broker:
        assert broker.address() == f"127.0.0.1:{broker.port}"
        assert broker.running
        proc = broker._proc
        assert proc is not None
        conn = Connection(broker.host, broker.port)
        try:
            assert api_versions(conn, 10.0)
        finally:
            conn.close()
        pid = proc.pid
        props = open(os.path.join(broker._dir.name, "server.properties")).read()  # type: ignore[union-attr]
        assert "group.max.size=7\n" in props and "group.initial.rebalance.delay.ms=0\n" in props
        assert "offsets.retention.check.interval.ms" not in props  # Kafka's default (the fuzzer's)
    assert not broker.running
    assert not _alive(pid)


def test_pooled_brokers_never_run_the_periodic_offsets_cleanup_within_a_run() -> None:
    """Brokers compared step by step with the model (scenario runs, the lockstep) push Kafka's
    cleanupGroupMetadata out to a day: it removed an Empty group mid-run in a 32-minute lockstep
    (a LeaveGroup of its pending member answered UNKNOWN_MEMBER_ID, the model NONE)."""
    pool = KafkaBrokerPool("3.9", max_brokers=1)
    try:
        broker = pool.broker_for(CoordinatorConfig())
        assert broker._dir is not None
        props = open(os.path.join(broker._dir.name, "server.properties")).read()
        assert f"offsets.retention.check.interval.ms={NO_PERIODIC_CLEANUP_MS}\n" in props
        assert NO_PERIODIC_CLEANUP_MS >= 24 * 3600 * 1000
    finally:
        pool.close()


def test_failed_start_names_log_tail_and_java_version() -> None:
    # group.max.size has a validator (at least 1): Kafka refuses to start with 0.
    broker = KafkaBroker("3.9", CoordinatorConfig(group_max_size=0), startup_timeout_s=60)
    with pytest.raises(BrokerStartError) as info:
        broker.start()
    message = str(info.value)
    assert "java: openjdk version" in message or "java: java version" in message
    assert "group.max.size" in message  # Kafka's own ConfigException, from the log tail
    assert not broker.running


def test_no_jars_is_a_clear_start_error(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSPEC_KAFKA_JARS", str(tmp_path))
    with pytest.raises(BrokerStartError, match="no Kafka 3.9.2 jars"):
        KafkaBroker("3.9").start()


def test_sigterm_to_python_stops_the_jvm() -> None:
    """A Python process killed by SIGTERM (and one by SIGKILL) leaves no Kafka JVM behind."""
    script = textwrap.dedent("""
        import sys, time
        from wire import KafkaBroker
        b = KafkaBroker("3.9")
        b.start()
        print(b._proc.pid, flush=True)
        time.sleep(600)
    """)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE,
                                 text=True)
        assert child.stdout is not None
        jvm = int(child.stdout.readline())
        assert _alive(jvm)
        child.send_signal(sig)
        child.wait(60)
        deadline = time.monotonic() + 30
        while _alive(jvm) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(jvm), f"JVM {jvm} outlived its Python parent killed by {sig.name}"


def test_factory_shares_a_broker_per_config_and_skips_what_kafka_cannot_honour() -> None:
    factory = kafka_broker_target_factory("3.9")
    try:
        a = factory(CoordinatorConfig())
        port_a = a.port
        b = factory(CoordinatorConfig())
        assert b.port == port_a  # same broker config: same broker
        c = factory(CoordinatorConfig(group_max_size=3))
        assert c.port != port_a
        with pytest.raises(NotImplementedError, match="new_member_join_timeout_ms"):
            factory(CoordinatorConfig(new_member_join_timeout_ms=1000))
        assert kafka_unsupported_config(CoordinatorConfig()) is None
    finally:
        factory.close()


def test_commit_to_the_created_topic_succeeds_and_to_another_is_refused() -> None:
    """Topic "t" exists (KafkaApis checks a committed partition exists before the coordinator)."""
    from model import messages as m
    from model.vocabulary import Error
    from wire import kafka_target

    with KafkaBroker("3.9") as broker:
        got: list[m.Response] = []
        with kafka_target(broker.address()) as target:
            offsets = ((m.TopicPartition("t", 3), 5), (m.TopicPartition("absent", 0), 5))
            target.handle(m.OffsetCommitRequest("g", "", -1, offsets=offsets), got.append)
        assert len(got) == 1 and isinstance(got[0], m.OffsetCommitResponse)
        assert dict(got[0].partitions) == {m.TopicPartition("t", 3): Error.NONE,
                                       m.TopicPartition("absent", 0): Error.UNKNOWN_TOPIC_OR_PARTITION}
