"""The Java consumer of kafka-clients 4.4.0 through `groupspec observe` in front of Apache Kafka 4.

Such a client asks a Kafka 4 broker for Metadata v13 (KIP-1102's top-level error code). observe
rewrites the broker addresses of that answer, so the member's Produce and Fetch requests, not only
its group requests (FindCoordinator's answer points at the proxy), go through the proxy. Negative
control: the same member through an observe whose codec stops at Metadata v12 (the codec before
v13 was added) gets the broker's own address, and not one Produce or Fetch passes the proxy. Slow
(marked kafka: a Kafka 4 broker and two JVM members, about 40 s)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from clients import java
from model.coordinator_api import CoordinatorConfig
from wire.kafka_broker import KafkaBroker, kafka_available

from observed import start_observe

WHY_NOT = kafka_available("4") or java.unavailable("4.4.0")
pytestmark = [pytest.mark.kafka, *([pytest.mark.skip(reason=WHY_NOT)] if WHY_NOT and not os.environ.get("CI") else [])]

RECORDS = 20
# observe as before Metadata v13 was added to the codec: its Metadata schema read up to v12 only
BEFORE_V13 = ("-c", "import dataclasses, sys; from observe import addresses; from wire.schema import Versions; "
              "s = addresses.SCHEMAS; s[addresses.METADATA] = dataclasses.replace(s[addresses.METADATA], "
              "valid=Versions(0, 12)); from groupspec.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.fixture(scope="module")
def kafka4() -> Iterator[KafkaBroker]:
    with KafkaBroker("4", CoordinatorConfig(group_initial_rebalance_delay_ms=0), topics={"orders": 3}) as kb:
        yield kb


def java_member(bootstrap: str, group: str, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """One Java 4.4.0 member that produces RECORDS records and consumes them in `group`; its events,
    once it consumed them all (or `timeout_s` passed) and closed on SIGTERM."""
    args = ["--bootstrap", bootstrap, "--topic", "orders", "--partitions", "3", "--group", group, "--name", "m1",
            "--produce", str(RECORDS), "--rate", "100", "--session-timeout-ms", "10000",
            "--heartbeat-interval-ms", "500"]
    proc = subprocess.Popen([*java.command("4.4.0"), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    assert proc.stdout is not None
    events: list[dict[str, Any]] = []
    end = time.monotonic() + timeout_s
    try:
        consumed: set[str] = set()
        for line in proc.stdout:
            events.append(json.loads(line))
            if events[-1]["ev"] == "consumed":
                consumed.add(events[-1]["key"])
            if len(consumed) >= RECORDS or time.monotonic() > end:
                break
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
        events += [json.loads(line) for line in rest.splitlines() if line.strip()]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return events


def run_through(kafka4: KafkaBroker, report: str, group: str, launcher: tuple[str, ...]) -> dict[str, Any]:
    obs = start_observe(report, "--upstream", f"kafka://{kafka4.address()}", "--profile", "kafka-4",
                        launcher=launcher)
    try:
        events = java_member(f"127.0.0.1:{obs.port}", group)
    finally:
        obs.stop()
    consumed = {e["key"] for e in events if e["ev"] == "consumed"}
    assert len(consumed) == RECORDS, [e for e in events if e["ev"] in ("error", "commit_failed")]
    assert events[0]["ev"] == "started" and events[0]["client"] == "java kafka-clients 4.4.0", events[0]
    return obs.doc()


def test_a_kafka_4_client_stays_on_the_proxy(kafka4: KafkaBroker, tmp_path: str) -> None:
    doc = run_through(kafka4, os.path.join(str(tmp_path), "report"), "stays", ("-m", "groupspec.cli"))
    t = doc["traffic"]
    # every frame read: Metadata v13, FindCoordinator v6 and the group APIs at the versions it sends
    assert doc["unparsed"]["answers"] == 0 and doc["unparsed"]["requests"] == 0, doc["unparsed"]["examples"]
    assert t["rewritten"]["Metadata"] > 0 and t["rewritten"]["FindCoordinator"] > 0
    assert t["requests_by_api"].get("Produce", 0) > 0 and t["requests_by_api"].get("Fetch", 0) > 0, t
    group = next(g for g in doc["groups"] if g["group"] == "stays")
    assert group["judged"] > 0 and t["requests_by_api"]["JoinGroup"] > 0


def test_negative_control_without_metadata_v13_the_client_bypasses_the_proxy(kafka4: KafkaBroker,
                                                                              tmp_path: str) -> None:
    doc = run_through(kafka4, os.path.join(str(tmp_path), "report"), "bypasses", BEFORE_V13)
    t = doc["traffic"]
    assert t["rewritten"]["Metadata"] == 0 and doc["unparsed"]["answers"] > 0
    assert any(x.startswith("Metadata v13 answer (not rewritten)") for x in doc["unparsed"]["examples"])
    # its records went to the broker's own address: produced and consumed, none through the proxy
    assert t["requests_by_api"].get("Produce", 0) == 0 and t["requests_by_api"].get("Fetch", 0) == 0, t
    assert t["requests_by_api"]["JoinGroup"] > 0  # (FindCoordinator's answer still points at the proxy)
