"""Generation that reaches the rows one-step guidance missed, and that steers away from the actions
where a target's sequences stop being judged (`Hazards`)."""

from __future__ import annotations

from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey

from fuzz.actions import Commit, Join, Sync, Timing
from fuzz.engine import Generator, Hazards, Simulation, action_rng, signature
from fuzz.judge import CONTEXT_SEP

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
VERSIONS = {ApiKey.JoinGroup: (0, 9), ApiKey.SyncGroup: (0, 5), ApiKey.Heartbeat: (0, 4),
            ApiKey.LeaveGroup: (0, 5), ApiKey.OffsetCommit: (0, 9), ApiKey.OffsetFetch: (0, 9),
            ApiKey.DescribeGroups: (0, 5), ApiKey.DeleteGroups: (0, 2)}


def gen(seed: int) -> Generator:
    return Generator(seed, CFG, Timing.for_config(CFG), VERSIONS, commits=True)

# rows no single random action fires from where the previous one left the group: a pending member
# (KIP-394) rejoining, a SyncGroup naming a protocol the group does not use, a commit without
# member info in a live group
DEEP = {"Stable/JoinGroup/pending-member-joins", "Stable/SyncGroup/inconsistent-protocol",
        "Stable/OffsetCommit/no-member-info", "CompletingRebalance/SyncGroup/inconsistent-protocol"}


def rows(seed: int, n: int, guided: bool = True) -> set[str]:
    g = gen(seed)
    g.guided = guided
    covered: set[str] = set()
    for i in range(n):
        sim = Simulation("g", CFG, g.timing, VERSIONS)
        for k, a in enumerate(g.sequence(i, frozenset(covered))):
            sim.do(a, action_rng(str(seed), k))
        covered |= sim.rows
    return {r for r in covered if CONTEXT_SEP not in r}


def test_two_step_rows_are_reached() -> None:
    fired = rows(0, 150)
    assert len(DEEP & fired) >= 3, sorted(DEEP - fired)
    # negative control: without guidance (one action at a time, no two-action candidates) the same
    # budget reaches fewer rows
    assert len(rows(0, 150, guided=False)) < len(fired)


def test_hazards_steer_away_from_actions_that_end_sequences() -> None:
    static, dynamic = Join(inst=2), Join(inst=0)
    h = Hazards()
    for _ in range(30):
        h.observe([dynamic, Join(who=3), static, Sync()], 2)  # judging ended at the static join
    assert h.keep(static) == 0.25  # ended every time it was sent: drawn a quarter as often
    assert h.keep(dynamic) == 1.0 and h.keep(Sync()) == 1.0  # (Sync, after the end, never counted)
    assert signature(Join(inst=3)) == signature(static) != signature(dynamic)

    def statics(hz: Hazards | None) -> int:
        g = gen(4)
        return sum(1 for i in range(60) for a in g.sequence(i, frozenset(), hz)
                   if isinstance(a, Join) and a.inst >= 2)

    # negative control: with no hazard (a target that matches the model) nothing changes
    assert statics(None) == statics(Hazards())
    assert statics(h) < 0.7 * statics(None)  # (static joins at the lowest version: not hazarded)


def test_new_choices_resolve() -> None:
    """The choices added for depth mean what the dialect says (a bogus SyncGroup protocol name;
    OffsetCommit with generation -1)."""
    from fuzz.actions import Knowledge, resolve
    from model import messages as m
    import random

    k = Knowledge("g", ids=["a"], instance_of={"a": None}, generation=3, leader="a", last_members=("a",))
    t = Timing.for_config(CFG)
    (sync, v), = resolve(Sync(proto=3, ver=0), k, t, VERSIONS, random.Random(0))
    assert isinstance(sync, m.SyncGroupRequest) and v == 5 and sync.protocol_name not in (None, "range")
    (commit, _), = resolve(Commit(who=6, gen=5), k, t, VERSIONS, random.Random(0))
    assert isinstance(commit, m.OffsetCommitRequest)
    assert (commit.member_id, commit.generation_id) == ("", -1)
