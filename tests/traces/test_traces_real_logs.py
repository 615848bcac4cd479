"""Real broker logs (tests/data/broker-logs, sources in its SOURCES file) replay with no false finding
and nothing lost; the kinds of real-world mess each have a test; doctored copies are flagged."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from groupspec.cli import main
from traces.inputs import classify
from traces.local import LocalResult, run_local
from traces.logparse import LogLineError, parse_line
from traces.summary import parse_last_line

DATA = Path(__file__).parents[1] / "data" / "broker-logs"
LOGS = sorted(DATA.glob("*.log"))
# Every coordinator record names its logger, kafka.coordinator.group.* (Scala) or
# org.apache.kafka.coordinator.group.* (Java): counted here independently of the parser.
COORDINATOR = re.compile(r"\((?:org\.apache\.)?kafka\.coordinator\.group\.\w+\)")


def coordinator_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if COORDINATOR.search(line))


def known_duplicates() -> dict[str, int]:
    """`duplicates: N` of a SOURCES block: lines the broker itself wrote twice (two appenders)."""
    blocks = [b for b in (DATA / "SOURCES").read_text().split("\n\n") if b.startswith("file: ")]
    found = {b.splitlines()[0].removeprefix("file: "): re.search(r"^duplicates: (\d+)$", b, re.M) for b in blocks}
    return {name: int(m.group(1)) if m else 0 for name, m in found.items()}


def replay(tmp_path: Path, name: str, lines: list[str]) -> LocalResult:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    result = run_local(classify([str(path)]))
    result.counts.check()
    return result


def lines_of(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def verdict(result: LocalResult, group: str) -> dict[str, Any]:
    return next(v for v in result.verdicts if v["group_id"] == group)


# --- the collection ---------------------------------------------------------------------------


def test_sources_name_every_log_and_cover_2x_3x_4x() -> None:
    sources = (DATA / "SOURCES").read_text()
    blocks = [b for b in sources.split("\n\n") if b.startswith("file: ")]
    named = {b.splitlines()[0].removeprefix("file: ") for b in blocks}
    assert named == {p.name for p in LOGS} and len(LOGS) >= 20
    for b in blocks:
        assert re.search(r"^url: \S", b, re.M) and re.search(r"^kafka: \S", b, re.M), b
    versions = " ".join(re.findall(r"^kafka: (.*)$", sources, re.M))
    for major in ("2.", "3.", "4."):
        assert major in versions
    assert any("org.apache.kafka.coordinator.group.GroupMetadataManager" in p.read_text() for p in LOGS)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_collected_log_replays_clean_and_nothing_is_lost(path: Path) -> None:
    result = run_local(classify([str(path)]))
    counts = result.counts
    counts.check()  # rows = replayed + rejected + ignored + duplicates
    text = path.read_text()
    assert counts.rows == len(text.splitlines())
    duplicates = known_duplicates()[path.name]
    assert (counts.violations, counts.rejected, counts.duplicates) == (0, 0, duplicates), result.rejects or result.verdicts
    # every coordinator line parsed and judged (or counted as a repeat); everything else is a line of another logger
    assert counts.replayed + duplicates == coordinator_lines(text) > duplicates
    assert counts.ignored == counts.rows - counts.replayed - duplicates


def test_all_collected_logs_in_one_cli_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["replay", "--input", *map(str, LOGS), "--output", str(out), "--local"]) == 0
    last = parse_last_line(capsys.readouterr().out.strip().splitlines()[-1])
    texts = [p.read_text() for p in LOGS]
    assert last["rows"] == sum(len(t.splitlines()) for t in texts)
    assert last["replayed"] + last["duplicates"] == sum(coordinator_lines(t) for t in texts)
    assert last["duplicates"] == sum(known_duplicates().values()) > 0
    assert last["rows"] == last["replayed"] + last["rejected"] + last["ignored"] + last["duplicates"]
    assert (last["violations"], last["rejected"]) == (0, 0) and last["groups"] >= 20


# --- kinds of real-world mess -------------------------------------------------------------------


SYNC_REASON = (
    "[2024-05-01 10:00:00,000] INFO [GroupCoordinator 2]: Preparing to rebalance group billing in state "
    "PreparingRebalance with old generation 7 (__consumer_offsets-3) (reason: Error NOT_COORDINATOR when storing "
    "group assignment during SyncGroup (member: consumer-billing-1-9d2e)) (kafka.coordinator.group.GroupCoordinator)"
)


def test_rebalance_reasons_are_free_text() -> None:
    e = parse_line(SYNC_REASON, "x:1", 1)
    assert e is not None and (e.log_event, e.generation, e.from_state) == ("PrepareRebalance", 7, None)
    assert "during SyncGroup (member: consumer-billing-1-9d2e)" in (e.payload or "")
    # the coordinator's own "during <State>" is the state the group left
    line = next(x for x in lines_of("clickhouse-33433-kafka-2.8.log") if "re-joining group during Stable" in x)
    e = parse_line(line, "x:1", 1)
    assert e is not None and (e.from_state, e.generation) == ("Stable", 138896)
    # a client's reason is the client's text: "during Stable" there says nothing about the group
    java = lines_of("see-quick-kafka-4.x-java-coordinator.log")[2]
    doctored = java.replace("client reason: need to re-join", "client reason: (left during Stable) need to re-join")
    e = parse_line(doctored, "x:1", 1)
    assert e is not None and e.from_state is None and e.generation == 0


def test_two_appenders_write_every_line_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_of("metersphere-34650-kafka-3.x-kraft.log") + lines_of("see-quick-kafka-4.x-java-coordinator.log")
    twice = [x for line in lines for x in (line, line)]
    result = replay(tmp_path, "server.log", twice)
    once = replay(tmp_path, "once.log", lines)
    assert result.counts.duplicates == once.counts.replayed == 16
    assert result.counts.replayed == once.counts.replayed and result.counts.violations == 0
    assert result.counts.ignored == 2 * once.counts.ignored  # lines of other loggers are not judged at all
    assert [v["events"] for v in result.verdicts] == [v["events"] for v in once.verdicts]
    assert main(["replay", "--input", str(tmp_path / "server.log"), "--output", str(tmp_path / "o"), "--local"]) == 0
    assert ", duplicates 16, " in capsys.readouterr().out.splitlines()[-1]
    # the same text at another time is no duplicate: a second Stabilized in generation 3 is a violation
    stabilized = next(x for x in lines if "Stabilized group demo-group generation 3" in x)
    again = stabilized.replace("16:12:29,935", "16:12:29,937")
    result = replay(tmp_path, "again.log", twice + [again])
    assert result.counts.duplicates == 16 and result.counts.violations == 1


def test_grep_excerpt_with_gaps_is_consistent_assuming_missing_lines(tmp_path: Path) -> None:
    lines = lines_of("see-quick-kafka-4.x-java-coordinator.log")
    excerpt = [x for x in lines if "generation 1" not in x and "generation 2" not in x]  # e.g. grep -v
    assert len(excerpt) < len(lines)
    v = verdict(replay(tmp_path, "excerpt.log", excerpt), "demo-group")
    assert v["status"] == "ok"
    assert v["note"].startswith("consistent with Kafka, assuming") and "lines are missing" in v["note"]
    assert v["events"] == len(excerpt)


def test_a_rebalance_whose_first_line_is_missing_is_an_assumption(tmp_path: Path) -> None:
    # Stable -> CompletingRebalance is no edge of the table: the "Preparing to rebalance" line is not in
    # the excerpt. Its generations agree (1690 -> 1691), so the line is assumed missing.
    lines = [x for x in lines_of("jaeger-1774-kafka-2.3.log") if "old generation 1690" not in x]
    v = verdict(replay(tmp_path, "excerpt.log", lines), "jaeger-ingester-20190906")
    assert v["status"] == "ok" and "lines are missing before" in v["note"] and "PreparingRebalance" in v["note"]


def test_rotated_log_starting_mid_rebalance(tmp_path: Path) -> None:
    lines = lines_of("see-quick-kafka-4.x-java-coordinator.log")
    start = next(i for i, x in enumerate(lines) if "Stabilized group demo-group generation 2" in x)
    v = verdict(replay(tmp_path, "server.log.1", lines[start:]), "demo-group")
    assert v["status"] == "ok" and "existed before its first line" in v["note"]
    # the full excerpt starts at a new group (joins into Empty, old generation 0): nothing to assume
    assert verdict(replay(tmp_path, "new.log", lines[:5]), "demo-group")["note"] is None


def test_several_brokers_interleaved_in_one_file(tmp_path: Path) -> None:
    names = ["jaeger-1774-kafka-2.3.log", "clickhouse-33433-kafka-2.8.log", "see-quick-kafka-4.x-java-coordinator.log"]
    alone = {}
    for name in names:
        for v in replay(tmp_path, name, lines_of(name)).verdicts:
            alone[v["group_id"]] = (v["status"], v["events"])
    files = [lines_of(n) for n in names]
    mixed = [f[i] for i in range(max(map(len, files))) for f in files if i < len(f)]  # round robin
    together = replay(tmp_path, "mixed.log", mixed)
    assert {v["group_id"]: (v["status"], v["events"]) for v in together.verdicts} == alone
    # the group's coordinator moves from broker 1 to broker 2: each broker's run is judged afresh
    lines = lines_of("see-quick-kafka-4.x-java-coordinator.log")
    moved = lines[:5] + [x.replace("[GroupCoordinator id=1 ", "[GroupCoordinator id=2 ") for x in lines[5:]]
    v = verdict(replay(tmp_path, "moved.log", moved), "demo-group")
    assert v["status"] == "ok" and "the coordinator moved from broker 1 to broker 2" in v["note"]


@pytest.mark.parametrize(
    "name, layout, ts, group",
    [
        ("confluent-kafka-go-638-kafka-2.x-bare.log", "bare timestamp", "2021-04-22 01:45:31,127", "kale_scheduler_local"),
        ("strimzi-4893-kafka-2.x-strimzi.log", "Strimzi layout after kubectl timestamps", "2021-05-04 16:41:31,006",
         "agentsGroup-tpc-nca-two"),
        ("see-quick-kafka-4.x-java-coordinator.log", "Java coordinator's logger", "2025-10-23 15:58:44,544", "demo-group"),
        ("kaffe-92-kafka-2.3.log", "docker compose prefix", "2019-07-23 09:12:56,387", "test_consumer"),
        ("librdkafka-2944-kafka-2.x-grep-n.log", "grep -n line number", "2020-06-29 19:49:04,211",
         "infrastructure.postmerge_tests.kafka.testconsumer"),
        ("librdkafka-4457-kafka-3.x-strimzi-thread.log", "Strimzi-like layout with [thread]", "2023-10-05 15:07:20,881", "***"),
        ("librdkafka-4312-kafka-2.8-3.1-karafka.log", "docker compose prefix", "2023-06-09 07:35:08,887",
         "node.rb-e4ef35230e0d_app"),
        ("spring-cloud-stream-664-kafka-2.x-markdown.log", "Markdown quote '>'", "2019-06-03 11:47:30,495", "rbgh664"),
    ],
)
def test_timestamp_and_logger_layouts(name: str, layout: str, ts: str, group: str) -> None:
    import calendar
    import time

    line = next(x for x in lines_of(name) if COORDINATOR.search(x))
    e = parse_line(line, "x:1", 1)
    assert e is not None, layout
    expected = calendar.timegm(time.strptime(ts[:19], "%Y-%m-%d %H:%M:%S")) * 1000 + int(ts[20:])
    assert (e.ts_ms, e.group_id) == (expected, group), layout


# --- damaged lines: rejected with a reason, never another logger's line, never a traceback ------


@pytest.mark.parametrize("name", ["see-quick-kafka-4.x-java-coordinator.log", "kaffe-92-kafka-2.3.log",
                                  "strimzi-4893-kafka-2.x-strimzi.log", "thingsboard-9342-kafka-3.x.log"])
def test_a_coordinator_line_cut_mid_message_is_rejected(name: str, tmp_path: Path) -> None:
    lines = lines_of(name)
    i = next(n for n, x in enumerate(lines) if COORDINATOR.search(x))
    line = lines[i]
    start, end = line.index("[Group") + 2, line.rindex(" (")  # from the coordinator prefix to the logger
    for cut in range(start, end, max(1, (end - start) // 12)):
        with pytest.raises(LogLineError, match="cut short"):
            parse_line(line[:cut], "x:1", 1)
    result = replay(tmp_path, "cut.log", lines[:i] + [line[: len(line) // 2]] + lines[i + 1:])
    assert result.counts.rejected == 1 and "cut short" in result.rejects[0]["reason"]
    assert result.counts.ignored == len(lines) - coordinator_lines("\n".join(lines))
    assert result.counts.violations == 0


def test_a_generation_beyond_int32_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_of("jaeger-1774-kafka-2.3.log")
    huge = lines[2].replace("generation 1690 ", f"generation {10**23} ")
    assert huge != lines[2]
    with pytest.raises(LogLineError, match="generation 100000000000000000000000 out of range"):
        parse_line(huge, "x:1", 1)
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines[:2] + [huge] + lines[3:]) + "\n")
    assert main(["replay", "--input", str(path), "--output", str(tmp_path / "o"), "--local"]) == 0
    last = parse_last_line(capsys.readouterr().out.strip().splitlines()[-1])
    assert (last["rejected"], last["replayed"], last["violations"]) == (1, 4, 0)


def test_non_utf8_bytes_in_a_log_are_rejected_lines(tmp_path: Path) -> None:
    lines = lines_of("kaffe-92-kafka-2.3.log")
    raw = "\n".join(lines).encode()
    bad = raw.replace(b"group test_consumer generation 15", b"group test_\xff\xfeconsumer generation 15", 1)
    path = tmp_path / "server.log"
    path.write_bytes(bad + b"\n")
    result = run_local(classify([str(path)]))
    result.counts.check()
    assert result.counts.rejected == 1 and "UTF-8" in result.rejects[0]["reason"]
    assert result.counts.replayed == len(lines) - 1


# --- negative controls: doctored copies of real excerpts are flagged -----------------------------


def _doctored(name: str, old: str, new: str) -> list[str]:
    lines = lines_of(name)
    text = "\n".join(lines)
    assert text.count(old) == 1, old
    return text.replace(old, new).splitlines()


@pytest.mark.parametrize(
    "name, lines, group, expected",
    [
        # a generation that goes backwards
        ("see-quick-kafka-4.x-java-coordinator.log",
         lambda: _doctored("see-quick-kafka-4.x-java-coordinator.log",
                           "Stabilized group demo-group generation 3", "Stabilized group demo-group generation 2"),
         "demo-group", "generation 3"),
        # a member removed twice (its session expired again right after it was removed)
        ("kafkajs-633-kafka-2.x-kibana.log",
         lambda: (lambda ls: ls[:4] + [ls[3].replace("10:24:24,876", "10:24:24,877")] + ls[4:])(
             lines_of("kafkajs-633-kafka-2.x-kibana.log")),
         "plus1connect-group-authenticator-256297f8-4159-4d2b-b2cb-487028b3fa5b", "removed again"),
        # a group stabilized twice in one generation (the second time after its assignment)
        ("see-quick-kafka-4.x-java-coordinator.log",
         lambda: (lambda ls: ls + [ls[13].replace("16:12:29,935", "16:12:29,940")])(
             lines_of("see-quick-kafka-4.x-java-coordinator.log")),
         "demo-group", "generation above 3"),
        # the leader's assignment for a generation the group never reached
        ("snuba-6585-kafka-3.x.log",
         lambda: _doctored("snuba-6585-kafka-3.x.log", "for group spans_group for generation 234.",
                           "for group spans_group for generation 233."),
         "spans_group", "generation 234"),
        # an "Assignment received" whose member count differs from its generation's Stabilized line
        ("clickhouse-33433-kafka-2.8.log",
         lambda: _doctored("clickhouse-33433-kafka-2.8.log", "generation 138897. The group has 1 members",
                           "generation 138897. The group has 2 members"),
         "stl-jss-product-event-reader-group", "1 members (Stabilized)"),
    ],
)
def test_doctored_real_logs_are_flagged(name: str, lines: Any, group: str, expected: str, tmp_path: Path) -> None:
    assert verdict(replay(tmp_path, "real.log", lines_of(name)), group)["status"] == "ok"
    result = replay(tmp_path, "doctored.log", lines())
    v = verdict(result, group)
    assert v["status"] == "violation", v
    assert expected in v["expected"] + v["actual"]
    assert result.counts.violations == 1


def test_kafka_0_11_group_metadata_manager_log_ident() -> None:
    """0.11's GroupMetadataManager.scala set `this.logIdent = "[Group Metadata Manager on Broker " + brokerId
    + "]: "` (1.0 changed it to `[GroupMetadataManager brokerId=N] `); the package was already
    kafka.coordinator.group. Real lines: openwhisk-deploy-kube-531-kafka-0.11.log."""
    line = lines_of("openwhisk-deploy-kube-531-kafka-0.11.log")[0]
    e = parse_line(line, "x:1", 1)
    assert e is not None and e.group_id == "*" and e.log_event == "Info"
    assert '"broker":0' in (e.payload or "")
    # an unknown ident on a coordinator logger is still a reject, not silently accepted
    with pytest.raises(LogLineError, match="unrecognised GroupMetadataManager message"):
        parse_line(line.replace("[Group Metadata Manager on Broker 0]: ", "[Group Metadata Mgr 0]: "), "x:1", 1)


def test_grep_n_prefix_and_lines_the_broker_wrote_twice(tmp_path: Path) -> None:
    """`grep -n` puts `NNN:` before each record; the broker of librdkafka#2944 wrote two records twice
    (consecutive grep line numbers, same timestamp and text): counted as duplicates, judged once."""
    lines = lines_of("librdkafka-2944-kafka-2.x-grep-n.log")
    result = replay(tmp_path, "grep.log", lines)
    assert (result.counts.replayed, result.counts.duplicates, result.counts.rejected) == (3, 2, 0)
    assert verdict(result, "infrastructure.postmerge_tests.kafka.testconsumer")["status"] == "ok"
    # without the line numbers nothing changes; a prefix glued to the timestamp by a letter is not a layout
    bare = [x.split(":", 1)[1] if x[:1].isdigit() else x for x in lines]
    assert replay(tmp_path, "bare.log", bare).counts == result.counts
    with pytest.raises(LogLineError, match="malformed"):
        parse_line("x" + lines[1].split(":", 1)[1], "x:1", 1)


def test_a_line_in_markdown_bold_is_read() -> None:
    """spring-cloud-stream-binder-kafka#664 quotes the broker log in Markdown with one line in bold."""
    bold = next(x for x in lines_of("spring-cloud-stream-664-kafka-2.x-markdown.log") if x.startswith("**"))
    e = parse_line(bold, "x:1", 1)
    assert e is not None and (e.group_id, e.log_event, e.member_id) == (
        "rbgh664", "MemberFailed", "source-2cb8abb3-20e9-498f-9512-4f961a3e65b5")
    # cut inside the logger it is still a cut line
    with pytest.raises(LogLineError, match="cut short"):
        parse_line(bold[: bold.index("GroupCoordinator)**")], "x:1", 1)
