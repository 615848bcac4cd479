"""BMC: every mutant of check/mutants.py yields a counterexample that replays through
model.step and that model.invariants flags; the classic table has none at a small depth."""

from __future__ import annotations

import pytest

from check.mutants import MUTANTS
from model.table import CLASSIC_TABLE, URGENT
from proofs.bmc import bmc
from proofs.invariants import STEP_INVARIANTS, all_state_invariants

# The explorer's liveness check (quiescence-reachable) has no safety encoding; the same defect
# breaks the auxiliary invariant that CompletingRebalance always has its DelayedSync.
SAFETY_STAND_IN = {"quiescence-reachable": "aux-delayed-sync-armed-in-completing",
                   # assignment-never-propagated leaves CompletingRebalance without its DelayedSync
                   "parked-requests-answered": "aux-delayed-sync-armed-in-completing"}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_has_a_replayed_counterexample(mutant: str) -> None:
    table, invariant, _ = MUTANTS[mutant]
    invariant = SAFETY_STAND_IN.get(invariant, invariant)
    (r,) = bmc(table, URGENT, [invariant], depth=5, n_ids=2)
    assert r.status == "violated", r
    assert r.trace is not None and r.trace.replayed
    assert r.message  # model.invariants' own message (or the auxiliary note)


def test_classic_table_has_no_counterexample_to_depth_3() -> None:
    names = list(all_state_invariants()) + list(STEP_INVARIANTS)
    results = bmc(CLASSIC_TABLE, URGENT, names, depth=3, n_ids=2)
    assert {r.invariant: r.status for r in results if r.status != "holds"} == {}


def test_a_query_that_times_out_is_reported_unknown_never_holds() -> None:
    names = ["single-delayed-join", "leader-is-member", "generation-monotonic"]
    results = bmc(CLASSIC_TABLE, URGENT, names, depth=4, n_ids=3, timeout_ms=1)
    assert [r.invariant for r in results] == names
    for r in results:
        assert r.status == "unknown", r
        assert r.depth < 4 and r.message.startswith(f"depth {r.depth + 1}:")
