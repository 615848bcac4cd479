"""The explorer and the solver reach the same states (issue 3, item 5: proofs/agreement.py).

At 2 member ids and generation <= 1 (one dynamic client), every state the explorer reaches is
reached by the solver and the other way round; the projection of explorer groups onto the
symbolic variables agrees with decode's way back; and the check fails when the two engines
differ: a state dropped from the explorer's set, a projection that loses a variable, and a
mutant table given to one engine only.
"""

from __future__ import annotations

import pytest

from check.mutants import MUTANTS
from model.state import Group, Member, PendingMember, PersistedGroup
from model.table import CLASSIC_TABLE, URGENT
from proofs.agreement import (
    AgreementBounds,
    ExplorerStates,
    Key,
    check_agreement,
    explore_states,
    group_values,
    live_ids,
    persisted_ids,
    state_key,
)
from proofs.decode import Hidden, Values, iname, mname, project_group, project_values, to_group

# The pinned bound (explorer ~40 s, solver ~6 s on this machine when quiet; docs/proofs.md).
BOUNDS = AgreementBounds(ids=2, instances=0, dynamic=1, max_generation=1)
# A smaller one for the negative controls, each of which explores again.
SMALL = AgreementBounds(ids=1, instances=0, dynamic=1, max_generation=1)


@pytest.fixture(scope="module")
def explored() -> ExplorerStates:
    return explore_states(CLASSIC_TABLE, URGENT, BOUNDS)


@pytest.fixture(scope="module")
def small() -> ExplorerStates:
    return explore_states(CLASSIC_TABLE, URGENT, SMALL)


def test_explorer_and_solver_reach_the_same_states(explored: ExplorerStates) -> None:
    report = check_agreement(CLASSIC_TABLE, URGENT, BOUNDS, states=explored)
    assert report.ok, report.summary()


def test_explored_states_are_pinned(explored: ExplorerStates) -> None:
    """An accidental change of the explorer or of the projection shows here."""
    assert (len(explored.keys), len(explored.inside)) == (497, 391)


def _renamed(g: Group) -> Group:
    """g with the ids group_values numbers k named as decode names them (m<k>, i<k>)."""
    lm, li = live_ids(g)
    pm, pi = persisted_ids(g)

    def members(ms: tuple[Member, ...], mids: list[str], iids: list[str]) -> tuple[Member, ...]:
        return tuple(
            Member(mname(mids.index(m.member_id)),
                   None if m.instance_id is None else iname(iids.index(m.instance_id)),
                   m.client_id, m.protocol_type, m.protocols, m.session_timeout_ms,
                   m.rebalance_timeout_ms, m.awaiting_join, m.awaiting_sync, m.is_new, m.assignment,
                   m.session_deadline, m.pending_sync)
            for m in ms)

    p = g.persisted
    return Group(
        g.group_id, g.state, g.generation, g.protocol_type, g.protocol_name,
        None if g.leader is None else mname(lm.index(g.leader)), members(g.members, lm, li),
        tuple(PendingMember(mname(lm.index(x.member_id)), x.deadline) for x in g.pending),
        g.join_timers, g.sync_timers, g.offsets,
        None if p is None else PersistedGroup(
            p.state, p.generation, p.protocol_type, p.protocol_name,
            None if p.leader is None else mname(pm.index(p.leader)), members(p.members, pm, pi)),
        g.owned, g.new_member_added)


def test_projection_agrees_with_decode(explored: ExplorerStates) -> None:
    """group_values is decode.to_group's inverse: decode's projection of the values is the
    projection of the renamed group, and values -> group -> values keeps the key."""
    n, ni = BOUNDS.ids, BOUNDS.instances
    assert explored.groups
    for k, g in explored.groups.items():
        v = group_values(g, n, ni)
        assert state_key(v, n, ni) == k
        assert project_values(v, range(ni)) == project_group(_renamed(g), None), g
        assert state_key(group_values(to_group(v, Hidden()), n, ni), n, ni) == k


def test_a_state_missing_from_the_explorer_is_found(small: ExplorerStates) -> None:
    dropped: Key = next(k for k in sorted(small.parent, key=repr) if small.parent[k][0] == small.initial)
    cut = ExplorerStates(small.initial, small.keys - {dropped}, small.inside - {dropped},
                         small.values, {k: p for k, p in small.parent.items() if k != dropped})
    report = check_agreement(CLASSIC_TABLE, URGENT, SMALL, states=cut, max_findings=50)
    got = [state_key(f.state, SMALL.ids, SMALL.instances) for f in report.findings
           if f.check == "solver-only" and f.state is not None]
    assert dropped in got, report.summary()


def test_a_projection_that_loses_a_variable_is_found() -> None:
    def no_offsets(g: Group, n: int, ni: int) -> Values:
        return {**group_values(g, n, ni), "offs": False}
    report = check_agreement(CLASSIC_TABLE, URGENT, SMALL, project=no_offsets, max_findings=50)
    assert any(f.check == "solver-only" and f.state is not None and f.state["offs"]
               for f in report.findings), report.summary()


@pytest.mark.parametrize("mutated", ["explorer", "solver"])
def test_a_mutant_given_to_one_engine_is_found(mutated: str, small: ExplorerStates) -> None:
    """no-generation-bump completes a join phase without a new generation: the engine with the
    mutant reaches CompletingRebalance at generation 0, the other one never does."""
    mutant = MUTANTS["no-generation-bump"][0]
    if mutated == "explorer":
        report = check_agreement(CLASSIC_TABLE, URGENT, SMALL, explorer_table=mutant, max_findings=50)
        side = "explorer-only"
    else:
        report = check_agreement(mutant, URGENT, SMALL, states=small, max_findings=50)
        side = "solver-only"
    assert any(f.check == side and f.state is not None and f.state["st"] == "CompletingRebalance"
               and f.state["gen"] == 0 for f in report.findings), report.summary()


@pytest.mark.parametrize("argv", [["--ids", "0"], ["--ids", "x"], ["--static", "3"], ["--bogus"]])
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from groupspec.cli import main

    assert main(["prove", "states", *argv]) == 2
    assert capsys.readouterr().err.startswith("groupspec prove states: ")


def test_groupspec_prove_states_runs_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    from groupspec.cli import main

    assert main(["prove", "states", "--ids", "1", "--dynamic", "1", "--generation", "0"]) == 0
    assert "agree: the same 44 states" in capsys.readouterr().out
    assert main(["prove", "states", "--ids", "0"]) == 2
    assert capsys.readouterr().err.startswith("groupspec prove states: ")
