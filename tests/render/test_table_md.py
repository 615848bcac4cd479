"""docs/table.md is the table: a test fails when it drifts, `groupspec render --table-md` rewrites it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from check.mutants import MUTANTS
from groupspec.cli import main
from model.table import CLASSIC_TABLE
from render.table_md import DEFAULT_PATH, render_table_md

ROOT = Path(__file__).resolve().parents[2]


def test_docs_table_md_is_the_table() -> None:
    committed = (ROOT / DEFAULT_PATH).read_text(encoding="utf-8")
    assert committed == render_table_md(CLASSIC_TABLE), (
        "docs/table.md drifted from model/table.py: run groupspec render --table-md docs/table.md")


def test_every_row_is_in_the_markdown_with_its_citation_linked() -> None:
    text = render_table_md(CLASSIC_TABLE)
    for r in CLASSIC_TABLE.rows:
        state, event, label = r.id.split("/")
        section = text.split(f"### {state} · {event}\n", 1)[1].split("\n### ", 1)[0]
        assert f"| `{label}` |" in section, r.id
    assert ("[GC:1174](https://github.com/apache/kafka/blob/3.9.0/core/src/main/scala/kafka/"
            "coordinator/group/GroupCoordinator.scala#L1174)") in text


def test_a_changed_table_renders_differently() -> None:
    """Negative control of the drift test: a mutant's table is not the committed file."""
    committed = (ROOT / DEFAULT_PATH).read_text(encoding="utf-8")
    mutant = MUTANTS["sync-accepted-in-preparing"][0]
    assert render_table_md(mutant) != committed


def test_render_table_md_rewrites_the_file(tmp_path: Path) -> None:
    out = tmp_path / "table.md"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["render", "--table-md", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render_table_md(CLASSIC_TABLE)


def test_what_other_tables_register_stays_out() -> None:
    """The registries are global: importing check.historical registers its bugs' own effects, and
    the rendering of Kafka's table must not list them (it did, so the drift test failed by order)."""
    import check.historical  # noqa: F401  (registers remove-unjoined-members and friends)
    from model.dsl import EFFECTS, vocabulary
    extra = {n for n, e in EFFECTS.items() if e.fn.__module__.startswith("check.")}
    assert extra, "negative control: the historical bugs register effects of their own"
    assert not extra & set(vocabulary(CLASSIC_TABLE)[1])
    text = render_table_md(CLASSIC_TABLE)
    assert not [n for n in extra if f"`{n}`" in text]
