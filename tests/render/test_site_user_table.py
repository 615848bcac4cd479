"""`groupspec render --table`: a user's own table drawn as a site, as a broker team runs it (a real
process, their module on PYTHONPATH): the pages say which table they draw and set its rows against
kafka-3.9's, its own atom is in the glossary, the scenario diagrams run on it (not on the classic
table), the classic table's committed facts are left out with a note that says why, and the
options that only make sense for the classic table are refused in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_PAGE = "scenarios/backdoor-and-unit--backdoor-stable-group-then-forced-rebalance.html"

USER_TABLE = textwrap.dedent('''
    """A broker team's variant: its own generation atom, and a heartbeat answered differently."""
    from dataclasses import replace

    from model.dsl import Guard, Reply, Table, atom
    from model.table import CLASSIC_TABLE
    from model.vocabulary import Error


    @atom("team-generation-ok")
    def _team_generation_ok(group, inp, settings) -> bool:
        """The team's own check that the request's generation is the group's."""
        return int(getattr(inp.request, "generation_id", -1)) == group.generation


    def _ours(r):
        guard = Guard.parse(" & ".join(("" if l.positive else "!") + (
            "team-generation-ok" if l.atom == "generation-matches" else l.atom) for l in r.guard.literals))
        if r.id == "Stable/Heartbeat/ok":
            return replace(r, guard=guard, reply=Reply("ok", Error.REBALANCE_IN_PROGRESS))
        return replace(r, guard=guard) if r.id == "Stable/Heartbeat/illegal-generation" else r


    TABLE = Table(name="team", rows=tuple(_ours(r) for r in CLASSIC_TABLE.rows), events=CLASSIC_TABLE.events)
''')


def render(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "teamtab.py").write_text(USER_TABLE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "groupspec.cli", "render", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The user's table's site and the classic one's (the negative control of each check)."""
    tmp = tmp_path_factory.mktemp("user-site")
    ran = render(tmp, "--table", "teamtab:TABLE", "--out", str(tmp / "team"), "--table-md", str(tmp / "team.md"))
    assert ran.returncode == 0, ran.stderr
    assert "the committed coverage and proof facts are the classic table's, not teamtab:TABLE's" in ran.stderr
    assert "Traceback" not in ran.stderr
    ran = render(tmp, "--out", str(tmp / "classic"))
    assert ran.returncode == 0, ran.stderr
    return tmp / "team", tmp / "classic"


def test_the_pages_name_the_table_and_its_source(sites: tuple[Path, Path]) -> None:
    team, classic = sites
    index = (team / "index.html").read_text()
    assert "<h1>Table team</h1>" in index and "teamtab:TABLE" in index
    assert "changes 2 row(s), adds 0 and drops 0" in index
    assert "not the classic table" not in (classic / "index.html").read_text()
    for page in ("index.html", "state-Stable.html", "glossary.html", "profiles.html"):
        assert "from the transition table (teamtab:TABLE)" in (team / page).read_text(), page
        assert "from the transition table (model/table.py)" in (classic / page).read_text(), page


def test_proof_status_says_it_was_not_computed_for_it(sites: tuple[Path, Path]) -> None:
    team, classic = sites
    invariants = (team / "invariants.html").read_text()
    assert "not computed for teamtab:TABLE (groupspec prove --table teamtab:TABLE)" in invariants
    assert "facts stale" not in invariants and "not computed for" not in (classic / "invariants.html").read_text()
    assert "unknown: the committed facts are the classic table&#x27;s" in (team / "state-Dead.html").read_text() or \
        "unknown: the committed facts are the classic table's" in (team / "state-Dead.html").read_text()


def test_its_rows_are_set_against_kafka_39s(sites: tuple[Path, Path]) -> None:
    team, classic = sites
    profiles = (team / "profiles.html").read_text()
    assert 'id="against"' in profiles and 'id="against"' not in (classic / "profiles.html").read_text()
    for row in ("Stable/Heartbeat/ok", "Stable/Heartbeat/illegal-generation"):
        assert f'id="teamtab:TABLE--{row}"' in profiles, row
    assert "REBALANCE_IN_PROGRESS (27)" in profiles and "team-generation-ok" in profiles
    # Kafka's version profiles are still kafka-4 against kafka-3.9, as on the classic site
    assert profiles.count('id="kafka-4--') == (classic / "profiles.html").read_text().count('id="kafka-4--') > 0


def test_its_own_atom_is_in_the_glossary_with_its_docstring(sites: tuple[Path, Path]) -> None:
    team, classic = sites
    assert "The team&#x27;s own check" in (team / "glossary.html").read_text() or \
        "The team's own check" in (team / "glossary.html").read_text()
    assert "team-generation-ok" not in (classic / "glossary.html").read_text()


def test_the_scenario_diagrams_run_on_its_table(sites: tuple[Path, Path]) -> None:
    team, classic = sites
    # the same conversation: its Stable heartbeats are answered REBALANCE_IN_PROGRESS by the team's table
    ours, theirs = (team / SCENARIO_PAGE).read_text(), (classic / SCENARIO_PAGE).read_text()
    assert "Stable/Heartbeat/ok" in ours and "Stable/Heartbeat/ok" in theirs
    assert ours.count("REBALANCE_IN_PROGRESS") > theirs.count("REBALANCE_IN_PROGRESS")


def test_the_markdown_table_names_its_source(sites: tuple[Path, Path]) -> None:
    md = (sites[0].parent / "team.md").read_text()
    assert md.startswith("# The transition table (`team`)") and "from teamtab:TABLE" in md
    assert "team-generation-ok" in md


@pytest.mark.parametrize("args, says", [
    (["--update-facts"], "--update-facts recomputes the classic table's committed facts"),
    (["--guide-svg", "g"], "--guide-svg draws the classic table's guide"),
])
def test_classic_only_options_are_refused_with_a_table(args: list[str], says: str, tmp_path: Path) -> None:
    ran = render(tmp_path, "--table", "teamtab:TABLE", *args)
    assert ran.returncode == 2 and ran.stderr.startswith(f"groupspec render: {says}"), ran.stderr
    assert len(ran.stderr.splitlines()) == 1 and not (tmp_path / "g").exists()


def test_a_table_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    ran = render(tmp_path, "--table", "no_such_module:T", "--out", str(tmp_path / "s"))
    assert ran.returncode == 2 and "--table: cannot import 'no_such_module'" in ran.stderr, ran.stderr
    assert len(ran.stderr.splitlines()) == 1 and not (tmp_path / "s").exists()


def test_kafka_39_by_name_is_the_classic_table(tmp_path: Path) -> None:
    ran = render(tmp_path, "--table", "kafka-3.9", "--table-md", str(tmp_path / "t.md"))
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "t.md").read_text() == (ROOT / "docs" / "table.md").read_text()
