"""ListGroups in the fuzz dialect, judged: the entry of the judge's own group (other groups a
target lists are ignored) must be the model's, with the states filter (v4+, KIP-518).

Negative controls: a listing that omits the group, reports a wrong state, or lists a group the
filter excludes is a finding; over real sockets, a table mutant that hides Stable groups from
ListGroups is found against the correct reference, which its own table passes.
"""

from __future__ import annotations

import asyncio
import random

from check.mutants import mutate
from model import messages as m
from model.dsl import R, Table
from model.table import CLASSIC_TABLE
from model.vocabulary import ApiKey, Error

from fuzz.actions import Action, Everyone, Join, Knowledge, ListGroups, Timing, random_action, resolve
from fuzz.engine import RunSettings, run_sequence
from fuzz.judge import GroupJudge
from server.run import start_in_thread

from test_judge import CFG, one_member

OTHER = m.ListedGroup("someone-else", "consumer", "Stable")


def listing(states: tuple[str, ...], answer: tuple[m.ListedGroup, ...], version: int = 5) -> object:
    """One member joined (CompletingRebalance), then ListGroups answered `answer`."""
    j = GroupJudge("g", CFG)
    one_member(j)
    j.send(3, ApiKey.ListGroups, version, m.ListGroupsRequest(states), 10)
    return j.receive(3, 11, m.ListGroupsResponse(Error.NONE, answer))


def test_own_entry_is_judged_and_others_ignored() -> None:
    mine = m.ListedGroup("g", "consumer", "CompletingRebalance")
    assert listing((), (OTHER, mine)) is None
    assert listing(("Stable",), (OTHER,)) is None  # filtered out
    assert listing((), (mine,), version=3) is None
    assert listing((), (m.ListedGroup("g", "consumer", ""),), version=3) is None  # no state below v4
    # negative controls
    f = listing((), (OTHER,))  # the group is missing
    assert f is not None and "CompletingRebalance/ListGroups/listed" in getattr(f, "rows")
    assert listing((), (m.ListedGroup("g", "consumer", "Stable"),)) is not None  # wrong state
    assert listing(("Stable",), (mine,)) is not None  # listed though the filter excludes it


def test_the_dialect_draws_and_resolves_list_groups() -> None:
    rng = random.Random(3)
    drawn = [random_action(rng, True) for _ in range(2000)]
    assert {a.states for a in drawn if isinstance(a, ListGroups)} == {0, 1, 2}
    timing = Timing.for_config(CFG)

    def resolved(a: ListGroups, top: int) -> list[tuple[m.Request, int]]:
        return resolve(a, Knowledge("g"), timing, {ApiKey.ListGroups: (0, top)}, random.Random(0))

    assert resolved(ListGroups(states=1), 5) == [(m.ListGroupsRequest(("Stable",)), 5)]
    assert resolved(ListGroups(states=1, ver=1), 5) == [(m.ListGroupsRequest(("Stable",)), 4)]  # the filter needs v4
    assert resolved(ListGroups(states=2), 3) == [(m.ListGroupsRequest(()), 3)]  # a v3 target: no filter


HIDES_STABLE: Table = mutate(CLASSIC_TABLE, "list-hides-stable", {
    "Stable/ListGroups/listed": {"reply": R(Error.NONE, "not-listed")}})


def test_engine_finds_a_wrong_listing_over_sockets() -> None:
    from fuzz.client import Broker

    acts: list[Action] = [Join(), Join(who=3), Everyone(what=1), ListGroups()]  # Stable, then listed

    async def play(port: int, table: Table) -> object:
        b = Broker("127.0.0.1", port)
        await b.start()
        r = await run_sequence(b, "listed", 0, acts, RunSettings(CFG, Timing.for_config(CFG), table=table))
        b.close()
        return r

    with start_in_thread(CFG) as good:
        right = asyncio.run(play(good.port, CLASSIC_TABLE))
        wrong = asyncio.run(play(good.port, HIDES_STABLE))
    assert getattr(right, "finding") is None
    assert "Stable/ListGroups/listed" in getattr(right, "covered")
    f = getattr(wrong, "finding")
    assert f is not None and f.api == "ListGroups" and "Stable/ListGroups/listed" in f.rows
