"""Generation that reaches the rows one-step guidance missed, and that steers away from the actions
where a target's sequences stop being judged (`Hazards`)."""

from __future__ import annotations

from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey

from fuzz.actions import Commit, Join, Leave, Sync, Timing
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
    assert h.keep(static) == Hazards.FLOOR  # ended every time it was sent: hardly drawn any more
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


def test_hazards_learn_the_state_an_action_ends_in() -> None:
    """A static join that ends judging when it creates the group (Missing) but not in a live group
    is hardly drawn there any more, and drawn as before elsewhere; a state not seen often enough
    falls back to the action's record in every state."""
    static = Join(inst=2)
    h = Hazards()
    for _ in range(30):
        h.observe([static, Sync()], 0, ["Missing", "Empty"])  # ended at the static join in Missing
        h.observe([Join(), Join(who=3), static, Sync()], -1, ["Missing", "Missing", "Stable", "Stable"])
    assert h.keep(static, "Missing") == Hazards.FLOOR
    assert h.keep(static, "Stable") == 1.0
    assert h.keep(static, "Empty") == h.keep(static) == 0.5  # unseen in Empty: the overall share
    # negative control: without contexts the state is not known, only the overall share
    flat = Hazards()
    for _ in range(30):
        flat.observe([static, Sync()], 0)
        flat.observe([Join(), Join(who=3), static, Sync()], -1)
    assert flat.keep(static, "Missing") == flat.keep(static, "Stable") == 0.5

    def first_static(hz: Hazards | None) -> tuple[int, int]:
        """(sequences opening with a static join, static joins later in a live group)."""
        g = gen(5)
        opening = later = 0
        for i in range(80):
            seq = g.sequence(i, frozenset(), hz)
            ctx = g.contexts.pop(i)
            opening += isinstance(seq[0], Join) and seq[0].inst >= 2 and ctx[0] == "Missing"
            later += sum(1 for a, c in zip(seq[1:], ctx[1:]) if isinstance(a, Join) and a.inst >= 2 and c != "Missing")
        return opening, later

    base, learned = first_static(None), first_static(h)
    assert learned[0] < 0.3 * base[0]  # the opening static join in a missing group: learned away
    assert learned[1] > 0.5 * base[1]  # static joins into live groups: still drawn


def test_candidates_prefer_moves_that_keep_judging() -> None:
    """Among candidates that fire as much, the one the hazards say ends judging less is chosen."""
    g = gen(2)
    leaves = Hazards()
    for _ in range(40):  # every LeaveGroup ended judging, in every state
        for state in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable"):
            leaves.observe([Leave()], 0, [state])

    def count(hz: Hazards | None) -> int:
        return sum(1 for i in range(60) for a in g.sequence(i, frozenset(), hz) if isinstance(a, Leave))

    assert count(leaves) < 0.2 * count(None)
