"""The solver and the explorer agree: no row the explorer fires is proved unreachable, and the
rows the solver proves unreachable include every row the table marks as such that it could
decide; a mutant that makes a marked row fire is caught by both."""

from __future__ import annotations

from check.abstract import Bounds
from check.explore import explore
from model.table import CLASSIC_TABLE, URGENT
from proofs.induction import prove
from proofs.reach import reachability, unreachable_rows


def test_explorer_rows_are_never_proved_unreachable() -> None:
    lemmas = prove(CLASSIC_TABLE, URGENT).inductive_set
    dead = unreachable_rows(CLASSIC_TABLE, URGENT, lemmas, [r.id for r in CLASSIC_TABLE.rows])
    fired: set[str] = set()
    for bounds in (Bounds(dynamic=1, static=0, max_generation=1, mode="closed"),
                   Bounds(dynamic=1, static=1, max_generation=1, mode="open")):
        rep = explore(CLASSIC_TABLE, URGENT, bounds, progress=None, liveness=False,
                      max_states=3000)
        fired |= set(rep.rows_fired)
    assert fired, "the explorer fired nothing"
    assert fired & dead == set()
    # The solver proves exactly the rows the table marks `unreachable=` unreachable.
    marked = {r.id for r in CLASSIC_TABLE.rows if r.unreachable}
    assert dead == marked, (sorted(marked - dead), sorted(dead - marked))


def test_every_row_is_witnessed_or_proved_unreachable() -> None:
    """Row reachability decides all rows at depth 8 with 3 ids, as the table marks them; each
    witness is a replayed BMC trace (state and outputs compared with the model's)."""
    rep = reachability(CLASSIC_TABLE, URGENT, depth=8, n_ids=3)
    assert rep.by_status("unknown") == []
    assert [r for r, v in rep.verdicts.items() if v.disagrees_with_table] == []
    for rid in rep.by_status("reachable"):
        tr = rep.verdicts[rid].trace
        assert tr is not None and tr.replayed and any(rid in s.rows for s in tr.steps)
