"""Sequences are drawn from the model: reproducible from the seed, steered by coverage."""

from __future__ import annotations

from model.coordinator_api import CoordinatorConfig
from model.table import CLASSIC_TABLE
from model.vocabulary import ApiKey

from fuzz.actions import Timing
from fuzz.engine import Generator, Simulation, action_rng
from fuzz.judge import CONTEXT_SEP

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
VERSIONS = {api: (0, hi) for api, hi in ((ApiKey.JoinGroup, 9), (ApiKey.SyncGroup, 5),
                                         (ApiKey.Heartbeat, 4), (ApiKey.LeaveGroup, 5),
                                         (ApiKey.OffsetCommit, 9), (ApiKey.OffsetFetch, 9),
                                         (ApiKey.DescribeGroups, 5), (ApiKey.DeleteGroups, 2))}


def gen(seed: int) -> Generator:
    return Generator(seed, CFG, Timing.for_config(CFG), VERSIONS, commits=True)


def test_same_seed_same_sequences() -> None:
    a = [gen(5).sequence(i, frozenset()) for i in range(20)]
    b = [gen(5).sequence(i, frozenset()) for i in range(20)]
    assert a == b
    assert a != [gen(6).sequence(i, frozenset()) for i in range(20)]


def rows_of(seed: int, covered: frozenset[str]) -> set[str]:
    g = gen(seed)
    out: set[str] = set()
    for i in range(30):
        sim = Simulation("g", CFG, g.timing, VERSIONS)
        for n, a in enumerate(g.sequence(i, covered)):
            sim.do(a, action_rng(str(seed), n))
        out |= {r for r in sim.rows if CONTEXT_SEP not in r}  # rows, not rows in a context
    return out


def test_coverage_steers_generation() -> None:
    """Told that the usual rows are already covered, the generator fires more of the others."""
    plain = rows_of(3, frozenset())
    usual = frozenset(plain)
    steered = rows_of(3, usual)
    assert len(steered - usual) > 0
    assert len(plain) > 40 and all(r in {row.id for row in CLASSIC_TABLE.rows} for r in plain)
