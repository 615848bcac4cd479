"""docs/guide.md cannot drift from the table: its six cases are scenario files that pass on the
model and the reference, its pictures are what the trace renderer draws from the table now, and
every row a case's section names is a row that case's run fires.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from check.mutants import MUTANTS
from conformance.dump import dump
from conformance.parse import load, parse_text
from conformance.runner import Outcome, run_scenario
from conformance.targets import resolve_target
from model.table import CLASSIC_TABLE
from render.site_guide import guide_files, guide_svg
from render.trace import trace_of_scenario

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"
FILES = guide_files()
ROW_ID = re.compile(r"`((?:Empty|PreparingRebalance|CompletingRebalance|Stable|Dead|Missing)/[A-Za-z]+/[a-z0-9-]+)`")
CASES = ("three consumers", "a Stable group", "follower syncs", "never sends SyncGroup",
         "static member restarts", "leader leaves")


def test_there_is_a_scenario_file_for_each_case() -> None:
    assert len(FILES) == len(CASES) == 6
    assert all(len(load(p).scenarios) == 1 for p in FILES)


@pytest.mark.parametrize("target", ["model", "reference"])
@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_guide_scenario_passes(path: str, target: str) -> None:
    scenario = load(path).scenarios[0]
    result = run_scenario(path, scenario, resolve_target(target, allow_remote=False))
    assert result.outcome is Outcome.PASS, result.describe()


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_guide_scenario_survives_parse_dump_parse(path: str) -> None:
    f = load(path)
    assert parse_text(dump(f), path) == f


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_committed_picture_is_what_the_table_draws(path: str) -> None:
    name = os.path.splitext(os.path.basename(path))[0] + ".svg"
    committed = (ROOT / "docs" / "guide" / name).read_text(encoding="utf-8")
    assert committed == guide_svg(path), (
        f"docs/guide/{name} drifted from the table: run groupspec render --guide-svg docs/guide")


def test_a_changed_table_draws_another_picture() -> None:
    """Negative control of the drift test: a follower answered at once changes case 3's picture."""
    path = next(p for p in FILES if "follower" in p)
    mutant = MUTANTS["follower-sync-answered-early"][0]
    assert guide_svg(path, mutant) != guide_svg(path)


def sections(text: str) -> dict[str, str]:
    """Scenario file name -> the text of the guide section that links it."""
    out = {}
    for part in re.split(r"\n## ", text)[1:]:
        m = re.search(r"tests/scenarios/guide/([\w.-]+\.json)", part)
        if m:
            out[m.group(1)] = part
    return out


def misnamed_rows(text: str) -> list[str]:
    """Rows a section names that its scenario does not fire (and rows that do not exist at all)."""
    ids = {r.id for r in CLASSIC_TABLE.rows}
    out = [f"no such row {r}" for r in ROW_ID.findall(text) if r not in ids]
    for name, section in sections(text).items():
        fired = {r for s in trace_of_scenario(str(ROOT / "tests" / "scenarios" / "guide" / name)).steps
                 for r in s.rows}
        for rid in ROW_ID.findall(section):
            row = CLASSIC_TABLE.row(rid) if rid in ids else None
            if row is not None and rid not in fired and not _mentioned_as_contrast(section, rid):
                out.append(f"{name}: {rid} is not fired")
    return out


def _mentioned_as_contrast(section: str, rid: str) -> bool:
    """A row named to contrast with the case ("In CompletingRebalance the same restart ..."), in a
    paragraph that says so: the paragraph starts with "This works only" or names a mutant."""
    para = next(p for p in section.split("\n\n") if f"`{rid}`" in p)
    return para.startswith("This works only") or "mutant" in para or "historical bug" in para


def test_each_section_names_the_rows_its_case_fires() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    found = sections(text)
    assert sorted(found) == sorted(os.path.basename(p) for p in FILES)
    for name in found:
        assert f"](guide/{name[:-5]}.svg)" in found[name], f"{name}: picture not embedded"
    assert len(ROW_ID.findall(text)) >= 30
    assert misnamed_rows(text) == []


def test_a_section_naming_a_row_its_case_does_not_fire_is_caught() -> None:
    """Negative control: case 3 claiming the leader's SyncGroup in PreparingRebalance, and a typo."""
    text = GUIDE.read_text(encoding="utf-8")
    bad = text.replace("`CompletingRebalance/Heartbeat/ok`", "`PreparingRebalance/SyncGroup/rebalance-in-progress`", 1)
    bad = bad.replace("`Stable/Heartbeat/fenced`", "`Stable/Heartbeat/fence`", 1)
    assert misnamed_rows(bad) == [
        "no such row Stable/Heartbeat/fence",
        "3-follower-syncs-before-leader.json: PreparingRebalance/SyncGroup/rebalance-in-progress is not fired"]
