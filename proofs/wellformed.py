"""Well-formedness: for every (state, event) the guards are pairwise disjoint and jointly
exhaustive, over all symbolic groups and inputs (unbounded generations and member ids), with
the atoms' semantics. A finding names the state, event and rows, with a witness."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import z3

from model.dsl import Table
from model.vocabulary import GroupState
from proofs.atoms import ATOM_ENCODINGS
from proofs.encode import guard_formula
from proofs.symbolic import EVENT, GSTATE, make_input, make_state


@dataclass(frozen=True)
class Finding:
    kind: str  # "overlap" or "gap"
    state: GroupState
    event: str
    rows: tuple[str, ...]
    witness: str

    def __str__(self) -> str:
        return (f"{self.kind}: state {self.state.name}, event {self.event}, rows "
                f"{list(self.rows)}; e.g. {self.witness}")


@dataclass
class WellFormedness:
    pairs: int = 0
    checks: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def _witness(m: z3.ModelRef, atoms: list[tuple[str, z3.BoolRef]]) -> str:
    vals = [f"{name}={z3.is_true(m.eval(f, model_completion=True))}" for name, f in atoms]
    return ", ".join(vals) or "any input"


def check_wellformed(table: Table, only_state: Optional[GroupState] = None) -> WellFormedness:
    start = time.perf_counter()
    out = WellFormedness()
    g = make_state("wf")
    x = make_input("wf")
    solver = z3.Solver()
    for state in GroupState:
        if only_state is not None and state != only_state:
            continue
        for event in table.events:
            rows = table.rows_for(state, event)
            out.pairs += 1
            guards = [guard_formula(r.guard, g.v, x) for r in rows]
            atoms = sorted({lit.atom for r in rows for lit in r.guard.literals})
            atom_terms = [(a, ATOM_ENCODINGS[a](g.v, x)) for a in atoms]
            solver.push()
            solver.add(g["st"] == GSTATE[state], x["kind"] == EVENT[event])
            for i in range(len(rows)):
                for j in range(i + 1, len(rows)):
                    out.checks += 1
                    solver.push()
                    solver.add(guards[i], guards[j])
                    if solver.check() == z3.sat:
                        out.findings.append(Finding("overlap", state, event, (rows[i].id, rows[j].id),
                                                    _witness(solver.model(), atom_terms)))
                    solver.pop()
            out.checks += 1
            solver.push()
            solver.add(z3.And([z3.Not(gd) for gd in guards]))
            if solver.check() == z3.sat:
                out.findings.append(Finding("gap", state, event, tuple(r.id for r in rows),
                                            _witness(solver.model(), atom_terms)))
            solver.pop()
            solver.pop()
    out.seconds = time.perf_counter() - start
    return out
