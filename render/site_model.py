"""Everything the site shows, gathered from its sources: the table and its rows, the scenario files
that exercise each row (run on the model now), the committed coverage and proof facts, the named
invariants and client-contract properties with their negative-control mutants and the historical
bugs they kill, and the version profiles' overrides. The pages (render/site_pages.py) only format
this; nothing here is written by hand.
"""

from __future__ import annotations

import glob
import inspect
import os
from dataclasses import dataclass, field
from typing import Final, Optional

from check.explore import LIVENESS, PATH_PROPERTIES
from check.historical import HISTORICAL, HistoricalBug
from check.mutants import MUTANTS
from check.profiles import PROFILES, profile_table
from model import invariants as invariants_module
from model.dsl import Guard, Row, Table
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import GroupState

from render.site_facts import Facts, fingerprint, load
from render.site_text import row_state

ROOT: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO_DIR: Final = os.path.join(ROOT, "tests", "scenarios")
STATES: Final = tuple(s.name for s in GroupState)
BASE_PROFILE: Final = "kafka-3.9"
CONTRACT_MARKER: Final = "# -------------------------------------------------------------------------- the client's contract"


@dataclass(frozen=True)
class ScenarioRef:
    path: str  # relative to the repository root
    name: str
    steps: int
    backdoor: bool = False  # sets the group up through a test hook (not only real requests)

    @property
    def page(self) -> str:
        """The scenario's sequence-diagram page, relative to the site root."""
        stem = os.path.splitext(self.path.replace("tests/scenarios/", "", 1))[0]
        return f"scenarios/{stem.replace('/', '--')}--{self.name}.html"


@dataclass(frozen=True)
class Property:
    """A named invariant, client-contract property or path property, with what checks it."""

    name: str
    kind: str  # "state invariant", "transition invariant", "client contract", "path property"
    statement: str
    source: str  # where it is defined
    proof: str  # how it is decided, in words
    mutants: tuple[tuple[str, str], ...]  # (mutant name, description) that must break it
    historical: tuple[str, ...]  # historical bugs it kills


@dataclass(frozen=True)
class Override:
    profile: str
    base: Row
    row: Row
    changed: tuple[str, ...]  # the fields that differ


@dataclass(frozen=True)
class AgainstBase:
    """A table other than the classic one (`groupspec render --table`) against kafka-3.9's rows."""

    spec: str  # as given: a profile or package.module:NAME
    differ: tuple[Override, ...]  # rows of both, changed (Override.profile is `spec`)
    added: tuple[Row, ...]  # rows the classic table does not have
    removed: tuple[Row, ...]  # classic rows it does not have


@dataclass
class Site:
    table: Table
    facts: Optional[Facts]  # None when the committed facts do not match the table
    facts_note: str
    # row id -> scenarios that fire it: real requests only first, then fewest steps
    scenarios: dict[str, list[ScenarioRef]]
    all_scenarios: list[ScenarioRef]
    properties: list[Property]
    historical: list[HistoricalBug]
    overrides: list[Override]
    profiles: dict[str, str] = field(default_factory=dict)  # name -> description
    against: Optional[AgainstBase] = None  # the table drawn is not the classic one

    @property
    def source(self) -> str:
        """Where the table drawn is defined, in words for the pages."""
        return "model/table.py" if self.against is None else self.against.spec

    def rows_of(self, state: str) -> list[Row]:
        return [r for r in self.table.rows if row_state(r) == state]

    def events_of(self, state: str) -> list[str]:
        seen = {r.event for r in self.rows_of(state)}
        return [e for e in self.table.events if e in seen]

    def overrides_of(self, row_id: str) -> list[Override]:
        return [o for o in self.overrides if o.base.id == row_id]


# ---------------------------------------------------------------- scenarios on the model

def scenario_files() -> list[str]:
    """Every scenario file under tests/scenarios/, subfolders included, in a stable order."""
    return sorted(glob.glob(os.path.join(SCENARIO_DIR, "**", "*.json"), recursive=True))


def scenario_coverage(table: Table = CLASSIC_TABLE) -> tuple[dict[str, list[ScenarioRef]], list[ScenarioRef]]:
    """Run every scenario on the model (the table itself) and record the rows each one fires."""
    from conformance.parse import load as load_scenarios
    from conformance.runner import run_scenario
    from conformance.scenario import BACKDOOR_STEPS
    from model.concrete import ModelCoordinator
    from model.coordinator_api import Coordinator, CoordinatorConfig

    by_row: dict[str, list[ScenarioRef]] = {}
    refs: list[ScenarioRef] = []
    for path in scenario_files():
        rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
        for scenario in load_scenarios(path).scenarios:
            made: list[ModelCoordinator] = []

            def factory(config: CoordinatorConfig) -> Coordinator:
                made.append(ModelCoordinator(config, table=table))
                return made[-1]

            run_scenario(path, scenario, factory)
            ref = ScenarioRef(rel, scenario.name, len(scenario.steps),
                              any(isinstance(st, BACKDOOR_STEPS) for st in scenario.steps))
            refs.append(ref)
            fired = {rid for c in made for t in c.transitions for rid in t.rows}
            for rid in fired:
                by_row.setdefault(rid, []).append(ref)
    for lst in by_row.values():
        lst.sort(key=lambda r: (r.backdoor, r.steps, r.path, r.name))
    return by_row, refs


# ---------------------------------------------------------------- properties

def _contract_names() -> set[str]:
    """Invariants defined below the client-contract marker of model/invariants.py (not those a
    user's table module registers, whatever their line)."""
    lines, _ = inspect.getsourcelines(invariants_module)
    marker = next(i + 1 for i, line in enumerate(lines) if line.startswith(CONTRACT_MARKER))
    here = inspect.getsourcefile(invariants_module)
    return {name for name, inv in INVARIANTS.items()
            if inspect.getsourcefile(inv.check) == here and inspect.getsourcelines(inv.check)[1] > marker}


def _definition(obj: object) -> str:
    path = os.path.relpath(inspect.getsourcefile(obj) or "", ROOT)  # type: ignore[arg-type]
    return f"{path}:{inspect.getsourcelines(obj)[1]}"  # type: ignore[arg-type]


def properties(facts: Optional[Facts], unknown: str = "unknown (facts stale)") -> list[Property]:
    """`unknown`: the proof status said when there are no facts for the table."""
    contract = _contract_names()
    mutants: dict[str, list[tuple[str, str]]] = {}
    for mname, (_, broken, description) in MUTANTS.items():
        mutants.setdefault(broken, []).append((mname, description))
    killed: dict[str, list[str]] = {}
    for bug in HISTORICAL.values():
        if bug.killed_by is not None:
            killed.setdefault(bug.killed_by, []).append(bug.name)
    out: list[Property] = []
    for name, inv in INVARIANTS.items():
        kind = "client contract" if name in contract else f"{inv.kind} invariant"
        status = facts.invariant_proofs.get(name, "not run") if facts else unknown
        proof = (f"induction (Z3, unbounded: proofs/induction.py): {status}; checked on every state "
                 f"and step of the default plan's explorations")
        out.append(Property(name, kind, inv.doc, _definition(inv.check), proof,
                            tuple(mutants.get(name, ())), tuple(killed.get(name, ()))))
    for name, text in PATH_PROPERTIES.items():
        proof = ("the explorer, on the whole explored graph of each run (a path property: no "
                 "induction); proofs/ checks the safety half through aux-delayed-sync-armed-in-completing"
                 if name == LIVENESS else
                 "the explorer, on the whole explored graph of each run (a path property: no induction)")
        out.append(Property(name, "path property", text, "check/explore.py (PATH_PROPERTIES)", proof,
                            tuple(mutants.get(name, ())), tuple(killed.get(name, ()))))
    return out


# ---------------------------------------------------------------- profiles

ROW_FIELDS: Final = ("guard", "reply", "next_state", "effects", "cite", "note", "unreachable")


def changed_rows(name: str, table: Table, base: Table = CLASSIC_TABLE) -> list[Override]:
    """`table`'s rows (named `name`) that differ from `base`'s row of the same id, field by field."""
    by_id = {r.id: r for r in base.rows}
    out: list[Override] = []
    for r in table.rows:
        b = by_id.get(r.id)
        changed = () if b is None else tuple(f for f in ROW_FIELDS if getattr(b, f) != getattr(r, f))
        if b is not None and changed:
            out.append(Override(name, b, r, changed))
    return out


def against_base(spec: str, table: Table, base: Table = CLASSIC_TABLE) -> AgainstBase:
    """`table`'s rows against the classic table's, by id: changed, added, removed."""
    base_ids, ids = {r.id for r in base.rows}, {r.id for r in table.rows}
    return AgainstBase(spec, tuple(changed_rows(spec, table, base)),
                       tuple(r for r in table.rows if r.id not in base_ids),
                       tuple(r for r in base.rows if r.id not in ids))


def overrides(base: Table = CLASSIC_TABLE) -> list[Override]:
    """Every row of every registered profile that differs from the base table's row of the same id."""
    return [o for name in PROFILES if name != BASE_PROFILE for o in changed_rows(name, profile_table(name), base)]


# ---------------------------------------------------------------- the whole site

def gather(table: Table = CLASSIC_TABLE, urgent: tuple[tuple[str, Guard], ...] = URGENT,
           facts: Optional[Facts] = None, spec: Optional[str] = None) -> Site:
    """The site of `table`; `spec`: how the user named a table other than the classic one
    (`groupspec render --table`): the pages then say so, set it against kafka-3.9's rows, and
    leave out the committed coverage and proof facts (they are the classic table's). Version
    profiles are always shown against the classic table (they are Kafka's versions)."""
    note = ""
    if facts is None:
        try:
            facts = load()
        except FileNotFoundError:
            note = "render/site_facts.json is missing: run groupspec render --update-facts"
    if facts is not None and facts.fingerprint != fingerprint(table, urgent):
        note = ("render/site_facts.json was computed for another table: run groupspec render "
                "--update-facts (coverage and proof status are left out)") if spec is None else (
                f"the committed coverage and proof facts are the classic table's, not {spec}'s: they "
                f"are left out (groupspec check --table {spec} and groupspec prove --table {spec} "
                "compute them)")
        facts = None
    by_row, refs = scenario_coverage(table)
    against = against_base(spec, table) if spec is not None else None
    unknown = "unknown (facts stale)" if spec is None else f"not computed for {spec} (groupspec prove --table {spec})"
    return Site(table, facts, note, by_row, refs, properties(facts, unknown), list(HISTORICAL.values()),
                overrides(), {n: p.description for n, p in PROFILES.items()}, against)
