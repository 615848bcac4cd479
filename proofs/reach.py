"""Row reachability: a witness trace (found by BMC, replayed through model.step) for every row
that can fire, a proof of unreachability (the row's selector contradicts the proved inductive
invariant and the scheduler) for the rest, `unknown` where neither was found.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import z3

from model.dsl import Guard, Table
from proofs.bmc import Trace, Unrolling
from proofs.decode import ReplayError, replay
from proofs.encode import enabled, paths
from proofs.induction import prove
from proofs.invariants import all_state_invariants
from proofs.symbolic import make_input, make_state


@dataclass
class RowVerdict:
    row: str
    status: str  # reachable / unreachable / unknown
    marked_unreachable: str  # the table's own `unreachable=` reason
    depth: Optional[int] = None
    trace: Optional[Trace] = None

    @property
    def disagrees_with_table(self) -> bool:
        return (self.status == "reachable" and bool(self.marked_unreachable)) or (
            self.status == "unreachable" and not self.marked_unreachable)


@dataclass
class ReachReport:
    verdicts: dict[str, RowVerdict] = field(default_factory=dict)
    seconds: float = 0.0
    depth: int = 0
    n_ids: int = 0

    def by_status(self, status: str) -> list[str]:
        return sorted(r for r, v in self.verdicts.items() if v.status == status)


def unreachable_rows(table: Table, urgent: Sequence[tuple[str, Guard]], lemmas: Sequence[str],
                     rows: Sequence[str], timeout_ms: int = 10000) -> set[str]:
    """Rows whose path selector is unsatisfiable in any state satisfying the proved lemmas, with
    any input the scheduler allows."""
    s, x = make_state("u"), make_input("u")
    invs = all_state_invariants()
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    for n in lemmas:
        solver.add(invs[n].holds(s.v, None))
    solver.add(enabled(table.events, urgent, s.v, x))
    by_row: dict[str, list[z3.BoolRef]] = {}
    for p in paths(table, s.v, x):
        for r in p.rows:
            by_row.setdefault(r.id, []).append(p.sel)
    out: set[str] = set()
    for rid in rows:
        solver.push()
        solver.add(z3.Or(by_row.get(rid, [z3.BoolVal(False)])))
        if solver.check() == z3.unsat:
            out.add(rid)
        solver.pop()
    return out


def reachability(table: Table, urgent: Sequence[tuple[str, Guard]], depth: int = 6, n_ids: int = 2,
                 timeout_ms: int = 30000, lemmas: Optional[Sequence[str]] = None) -> ReachReport:
    start = time.perf_counter()
    rep = ReachReport(depth=depth, n_ids=n_ids)
    if lemmas is None:
        lemmas = prove(table, urgent).inductive_set
    all_rows = [r.id for r in table.rows]
    marks = {r.id: r.unreachable for r in table.rows}
    dead = unreachable_rows(table, urgent, lemmas, all_rows)
    for rid in dead:
        rep.verdicts[rid] = RowVerdict(rid, "unreachable", marks[rid])
    todo = {rid for rid in all_rows if rid not in dead}
    u = Unrolling(table, urgent, n_ids)
    u.solver.set("timeout", timeout_ms)
    domain = list(range(n_ids))
    for k in range(1, depth + 1):
        u.extend()
        while todo:
            fires = [p.sel for i in range(k) for p in u.paths[i] if any(r.id in todo for r in p.rows)]
            if not fires:
                break
            u.solver.push()
            u.solver.add(u.quiescent(k), z3.Or(fires))
            verdict = u.solver.check()
            model = u.solver.model() if verdict == z3.sat else None
            u.solver.pop()
            if model is None:
                break
            tr = u.trace(model, k, domain)
            try:
                tr.replayed = replay(table, urgent, tr.states, tr.steps, domain).steps
            except ReplayError:
                raise
            for st in tr.steps:
                for rid in st.rows:
                    if rid in todo:
                        todo.discard(rid)
                        rep.verdicts[rid] = RowVerdict(rid, "reachable", marks[rid], k, tr)
    for rid in todo:
        rep.verdicts[rid] = RowVerdict(rid, "unknown", marks[rid], depth)
    rep.verdicts = {rid: rep.verdicts[rid] for rid in all_rows}
    rep.seconds = time.perf_counter() - start
    return rep
