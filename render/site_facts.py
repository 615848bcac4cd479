"""What the site says about coverage and proofs, computed once and committed (render/site_facts.json).

Running the default plan with the native engine (about 20 s) and the induction proofs (about 10 s)
at every render would take most of the minute a fresh clone has to build the site, so the results
are a generated file: `groupspec render --update-facts` recomputes it, and
tests/render/test_site_facts.py fails when it drifts (its fingerprint, fast; and a full recompute,
slow). The facts are:

- per row, the runs of the default plan (check/plan.py DEFAULT_PLAN) that fire it;
- the rows the induction proof shows unreachable (proofs/reach.py, from the inductive invariant
  proofs/induction.py finds), and the explorer's view of the same rows (no run fires them);
- per named invariant and client-contract property, the induction verdict.

The fingerprint covers what the facts depend on: every row's behaviour columns, the urgent events,
the invariants, and the plan's bounds. Scenario coverage is not here: running every scenario file on
the model takes a fraction of a second, so the site computes it at render time (render/site_model.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Optional, TextIO

from check.plan import DEFAULT_PLAN, PLAN_MAX_STATES
from model.atomic import write_text_atomic
from model.dsl import Guard, Table
from model.invariants import INVARIANTS

FACTS_PATH: Final = Path(__file__).with_name("site_facts.json")
FACTS_FORMAT: Final = "groupspec-site-facts/1"


def fingerprint(table: Table, urgent: tuple[tuple[str, Guard], ...]) -> str:
    """A hash of everything the facts depend on (not notes or citations: they change no fact)."""
    rows = [[r.id, r.event, str(r.guard), str(r.reply), r.next_state.name if r.next_state else "",
             list(r.effects), r.unreachable, r.new_incarnation, r.fault] for r in table.rows]
    doc = {
        "rows": rows,
        "urgent": [[ev, str(g)] for ev, g in urgent],
        "invariants": sorted([name, inv.kind] for name, inv in INVARIANTS.items()),
        "plan": [[label, _bounds(b)] for label, b in DEFAULT_PLAN],
        "plan_max_states": PLAN_MAX_STATES,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _bounds(b: object) -> dict[str, Any]:
    """A plan entry's bounds as plain data in a stable order (sets sorted: their iteration order
    changes from one process to the next)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(b):  # type: ignore[arg-type]
        v = getattr(b, f.name)
        out[f.name] = sorted(v) if isinstance(v, (set, frozenset)) else v
    return out


@dataclass
class Facts:
    fingerprint: str
    plan: list[str]  # run labels of DEFAULT_PLAN, in order
    fired_by: dict[str, list[int]]  # row id -> indexes into `plan` of the runs that fire it
    states: list[int]  # states explored per run
    proved_unreachable: list[str]  # rows induction proves can never fire
    invariant_proofs: dict[str, str]  # invariant -> induction status (proved / cti / unknown)
    auxiliary: list[str] = field(default_factory=list)  # the aux-* lemmas of the inductive set
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": FACTS_FORMAT, "fingerprint": self.fingerprint, "plan": self.plan,
                "states": self.states, "fired_by": dict(sorted(self.fired_by.items())),
                "proved_unreachable": sorted(self.proved_unreachable),
                "invariant_proofs": dict(sorted(self.invariant_proofs.items())),
                "auxiliary": sorted(self.auxiliary), "seconds": self.seconds}

    @staticmethod
    def from_json(doc: dict[str, Any]) -> "Facts":
        if doc.get("format") != FACTS_FORMAT:
            raise ValueError(f"{FACTS_PATH}: format {doc.get('format')!r}, expected {FACTS_FORMAT}")
        return Facts(doc["fingerprint"], list(doc["plan"]),
                     {k: list(v) for k, v in doc["fired_by"].items()}, list(doc["states"]),
                     list(doc["proved_unreachable"]), dict(doc["invariant_proofs"]),
                     list(doc.get("auxiliary", [])), dict(doc.get("seconds", {})))


def compute(table: Table, urgent: tuple[tuple[str, Guard], ...],
            progress: Optional[TextIO] = None) -> Facts:
    """Run the default plan (native engine) and the induction proofs on `table`."""
    import time

    from check.native import run_explorer
    from proofs.induction import prove
    from proofs.reach import unreachable_rows

    fired: dict[str, list[int]] = {}
    states: list[int] = []
    start = time.perf_counter()
    for i, (label, bounds) in enumerate(DEFAULT_PLAN):
        if progress is not None:
            print(f"  explore {i + 1}/{len(DEFAULT_PLAN)}: {label}", file=progress, flush=True)
        rep = run_explorer("native", table, urgent, bounds, symmetry=True, invariants=None,
                           liveness=False, max_states=PLAN_MAX_STATES, progress=None,
                           stop_at_first_violation=False)
        if rep is None:
            raise KeyboardInterrupt
        states.append(rep.states)
        for rid in rep.rows_fired:
            fired.setdefault(rid, []).append(i)
    explored = time.perf_counter() - start
    if progress is not None:
        print("  induction proofs and row unreachability (Z3)", file=progress, flush=True)
    start = time.perf_counter()
    ind = prove(table, urgent)
    dead = unreachable_rows(table, urgent, ind.inductive_set, [r.id for r in table.rows])
    proved = time.perf_counter() - start
    return Facts(
        fingerprint(table, urgent), [label for label, _ in DEFAULT_PLAN], fired, states,
        sorted(dead), {r.invariant: r.status for r in ind.results if not r.auxiliary},
        sorted(r.invariant for r in ind.results if r.auxiliary and r.status == "proved"),
        {"explore": round(explored, 1), "prove": round(proved, 1)})


def load(path: Path = FACTS_PATH) -> Facts:
    with open(path, encoding="utf-8") as f:
        return Facts.from_json(json.load(f))


def save(facts: Facts, path: Path = FACTS_PATH) -> None:
    write_text_atomic(os.fspath(path), json.dumps(facts.to_json(), indent=1) + "\n")
