"""The table a target is judged by comes from its profile (kafka-4's for Kafka 4) or `--table`,
everywhere: the judge, generation, the engine over real sockets, the report and scenario files.

Negative controls: Kafka 4's answer to an OffsetCommit of generation >= 0 to a missing group
(GROUP_ID_NOT_FOUND, check/profile_kafka4.py) is a finding under the 3.9 table and none under the
kafka-4 table; the reference (`serve`, Kafka 3.9's answer ILLEGAL_GENERATION) is the mirror image.
"""

from __future__ import annotations

import asyncio

import pytest
import random

from check.profile_kafka4 import KAFKA4_TABLE
from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.table import CLASSIC_TABLE
from model.vocabulary import ApiKey, Error

from fuzz.actions import Action, Commit, Knowledge, Timing, resolve
from fuzz.allowances import judged_table
from fuzz.engine import RunSettings, Simulation, run_sequence
from fuzz.judge import GroupJudge
from fuzz.shrink import scenario_document
from server.run import start_in_thread

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
TP = m.TopicPartition("fuzz-topic", 0)
ROW = "Missing/OffsetCommit/illegal-generation"


def commit_to_missing(table: Table, answer: Error) -> object:
    """An OffsetCommit of generation 0 to a group that does not exist, answered `answer`."""
    j = GroupJudge("g", CFG, table=table)
    j.send(1, ApiKey.OffsetCommit, 9, m.OffsetCommitRequest("g", "ghost", 0, ((TP, 10),)), 0)
    return j.receive(1, 2, m.OffsetCommitResponse(((TP, answer),)))


def test_kafka4_answer_is_a_finding_only_under_the_39_table() -> None:
    f = commit_to_missing(CLASSIC_TABLE, Error.GROUP_ID_NOT_FOUND)
    assert f is not None and ROW in getattr(f, "rows")
    assert commit_to_missing(KAFKA4_TABLE, Error.GROUP_ID_NOT_FOUND) is None
    # the mirror image: 3.9's answer under the kafka-4 table
    assert commit_to_missing(KAFKA4_TABLE, Error.ILLEGAL_GENERATION) is not None
    assert commit_to_missing(CLASSIC_TABLE, Error.ILLEGAL_GENERATION) is None
    # the old call (no table) still judges by 3.9's
    assert GroupJudge("g", CFG).table is CLASSIC_TABLE


def test_profile_picks_the_table() -> None:
    assert judged_table("kafka-4")[0] == "kafka-4" and judged_table("kafka-4")[1] is KAFKA4_TABLE
    assert judged_table("kafka-4.4.0")[1] is KAFKA4_TABLE
    for target in ("kafka-3.9", "serve", "tansu", "kafka://127.0.0.1:9092"):
        assert judged_table(target)[0] == "kafka-3.9" and judged_table(target)[1] is CLASSIC_TABLE


def test_generation_simulates_the_judged_table() -> None:
    """The generator's model answers as the table the target is judged by."""
    timing = Timing.for_config(CFG)
    versions = {ApiKey.OffsetCommit: (0, 9)}
    answers: dict[str, m.Response] = {}
    for name, table in (("3.9", CLASSIC_TABLE), ("4", KAFKA4_TABLE)):
        sim = Simulation("g", CFG, timing, versions, table)
        got: list[m.Response] = []
        (req, _v), = resolve(Commit(who=7, gen=4), Knowledge("g"), timing, versions, random.Random(0))
        assert isinstance(req, m.OffsetCommitRequest) and req.generation_id == 0
        sim.model.handle(req, got.append)
        answers[name] = got[0]
        tps = tuple(tp for tp, _ in req.offsets)
    assert answers["3.9"] == m.OffsetCommitResponse(tuple((tp, Error.ILLEGAL_GENERATION) for tp in tps))
    assert answers["4"] == m.OffsetCommitResponse(tuple((tp, Error.GROUP_ID_NOT_FOUND) for tp in tps))


def test_engine_over_sockets_judges_by_the_settings_table() -> None:
    """The reference (3.9) over real sockets: no finding under its own table, one under kafka-4's;
    the scenario written for it names the table it was judged with."""
    from fuzz.client import Broker

    acts: list[Action] = [Commit(who=7, gen=4)]  # a ghost member, generation 0, to a missing group

    async def play(port: int, table: Table) -> object:
        b = Broker("127.0.0.1", port)
        await b.start()
        r = await run_sequence(b, "missing", 0, acts, RunSettings(CFG, Timing.for_config(CFG), table=table))
        b.close()
        return r

    with start_in_thread(CFG) as good:
        assert getattr(asyncio.run(play(good.port, CLASSIC_TABLE)), "finding") is None
        r = asyncio.run(play(good.port, KAFKA4_TABLE))
    f = getattr(r, "finding")
    assert f is not None and f.api == "OffsetCommit" and ROW in f.rows
    doc = scenario_document(r, f, CFG, "k4", "serve", table="kafka-4")  # type: ignore[arg-type]
    assert doc["conventions"]["judged_with_table"] == "kafka-4"


def test_bad_table_or_session_is_bad_input_before_the_target(capsys: pytest.CaptureFixture[str]) -> None:
    from groupspec.cli import main
    assert main(["fuzz", "--target", "tansu", "--table", "kafka-2"]) == 2
    assert "--table" in capsys.readouterr().err
    assert main(["fuzz", "--target", "tansu", "--table", "check.profiles:nothing"]) == 2
    assert main(["fuzz", "--target", "tansu", "--session-ms", "0"]) == 2
    # the session the clients use follows --session-ms (the waits and rebalance timeouts with it)
    t = Timing.for_config(CFG, base_ms=6000)
    assert t.session_ms[0] == 6000 and t.rebalance_ms[0] == 6333 and Timing.for_config(CFG).session_ms[0] == 600
