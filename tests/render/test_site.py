"""The site (`groupspec render --out DIR`): everything the table holds appears on it, every link
resolves inside the site, nothing is fetched from elsewhere, and the command's bad input is one line.

What must appear is read from the sources (the table, model.invariants, check.explore's path
properties, check.historical, the registered profiles compared row by row), never from a hand list;
each checker has a negative control (a page with something removed, a broken link, a fetch from
the web).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote

import pytest

from check.explore import PATH_PROPERTIES
from check.historical import HISTORICAL
from check.profiles import PROFILES, profile_table
from groupspec.cli import main
from model.dsl import vocabulary
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE
from render.site import build_site
from render.site_model import gather
from render.site_text import unknown_abbreviations

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(out)
    return out


class _Ids(HTMLParser):
    """Every id and every href/src of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (tag, url)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for k, v in attrs:
            if v is None:
                continue
            if k == "id":
                self.ids.add(v)
            elif k in ("href", "src", "xlink:href"):
                self.links.append((tag, v))


def parse(path: Path) -> _Ids:
    p = _Ids()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def expected_items() -> Iterator[tuple[str, str]]:
    """(page, element id) of everything the site must show, read from the sources."""
    for r in CLASSIC_TABLE.rows:
        yield f"state-{r.id.split('/', 1)[0]}.html", r.id
    for name in [*INVARIANTS, *PATH_PROPERTIES]:
        yield "invariants.html", name
    for name in HISTORICAL:
        yield "historical.html", name
    for name in PROFILES:
        if name == "kafka-3.9":
            continue
        base = {r.id: r for r in CLASSIC_TABLE.rows}
        for r in profile_table(name).rows:
            if r != base[r.id]:
                yield "profiles.html", f"{name}--{r.id}"
    atoms, effects, _ = vocabulary(CLASSIC_TABLE)  # the spec's own, not what another table registered
    for name in atoms:
        yield "glossary.html", f"atom-{name}"
    for name in effects:
        yield "glossary.html", f"effect-{name}"


def missing_from(site_dir: Path) -> list[tuple[str, str]]:
    ids: dict[str, set[str]] = {}
    out = []
    for page, element in expected_items():
        if page not in ids:
            ids[page] = parse(site_dir / page).ids if (site_dir / page).exists() else set()
        if element not in ids[page]:
            out.append((page, element))
    return out


def test_every_row_invariant_property_override_and_bug_appears(site: Path) -> None:
    items = list(expected_items())
    assert len(items) > len(CLASSIC_TABLE.rows) + len(INVARIANTS) + len(HISTORICAL)
    assert any(page == "profiles.html" for page, _ in items), "no profile override to look for"
    assert missing_from(site) == []


def test_a_missing_row_or_bug_is_reported(site: Path, tmp_path: Path) -> None:
    """Negative control: the same site with one row card and one historical bug cut out."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    stable = copy / "state-Stable.html"
    text = stable.read_text()
    cut = re.sub(r'<article class="row" id="Stable/JoinGroup/leader-rejoin">.*?</article>', "", text,
                 count=1, flags=re.S)
    assert cut != text
    stable.write_text(cut)
    hist = copy / "historical.html"
    hist.write_text(hist.read_text().replace('id="KAFKA_9801"', 'id="gone"'))
    assert missing_from(copy) == [("state-Stable.html", "Stable/JoinGroup/leader-rejoin"),
                                  ("historical.html", "KAFKA_9801")]


def broken_links(site_dir: Path) -> list[str]:
    """Links to a file of the site that does not exist, or to an anchor that page lacks; and any
    resource (script, stylesheet, image) loaded from anywhere but the site."""
    pages = {p: parse(p) for p in site_dir.rglob("*.html")}
    out = []
    for page, parsed in pages.items():
        for tag, url in parsed.links:
            if re.match(r"[a-z]+:", url):
                if tag != "a" or not url.startswith("https://"):
                    out.append(f"{page.name}: {tag} loads {url}")
                continue
            target, _, anchor = url.partition("#")
            dest = (page.parent / target).resolve() if target else page
            if not dest.exists():
                out.append(f"{page.name}: {url} (no file)")
            elif anchor and dest.suffix == ".html":
                ids = pages[dest].ids if dest in pages else parse(dest).ids
                if unquote(anchor) not in ids:
                    out.append(f"{page.name}: {url} (no such anchor)")
    return out


def test_every_link_resolves_and_nothing_is_loaded_from_elsewhere(site: Path) -> None:
    assert broken_links(site) == []
    css = (site / "site.css").read_text()
    assert "@import" not in css and "url(" not in css
    assert "fetch(" not in (site / "search.js").read_text()  # file:// forbids it; the index is a script


def test_a_broken_link_and_a_remote_script_are_reported(site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    index = copy / "index.html"
    index.write_text(index.read_text().replace(
        "</main>", '<a href="state-Nowhere.html">x</a><a href="state-Stable.html#no-such-row">y</a>'
                   '<script src="https://cdn.example.com/x.js"></script></main>'))
    assert broken_links(copy) == ["index.html: state-Nowhere.html (no file)",
                                  "index.html: state-Stable.html#no-such-row (no such anchor)",
                                  "index.html: script loads https://cdn.example.com/x.js"]


def test_each_row_says_its_citation_reply_and_reachability(site: Path) -> None:
    page = (site / "state-Missing.html").read_text()
    card = re.search(r'<article class="row" id="Missing/JoinGroup/not-coordinator">(.*?)</article>', page, re.S)
    assert card is not None
    text = card.group(1)
    assert ('href="https://github.com/apache/kafka/blob/3.9.0/core/src/main/scala/kafka/coordinator/'
            'group/GroupCoordinator.scala#L1174"') in text
    assert "NOT_COORDINATOR (16)" in text and "owned" in text
    dead = re.search(r'<article class="row is-unreachable" id="Dead/JoinGroup/dead">(.*?)</article>',
                     (site / "state-Dead.html").read_text(), re.S)
    assert dead is not None and "induction" in dead.group(1) and "the explorer" in dead.group(1)
    assert "cannot fire" in dead.group(1)


def test_the_search_index_covers_rows_atoms_errors_and_citations(site: Path) -> None:
    import json
    entries = json.loads((site / "search-index.json").read_text())
    titles = {e["title"] for e in entries}
    assert {r.id for r in CLASSIC_TABLE.rows} <= titles
    assert set(vocabulary(CLASSIC_TABLE)[0]) <= titles and "GC:1174" in titles and "REBALANCE_IN_PROGRESS (27)" in titles
    js = (site / "search-index.js").read_text()
    assert js.startswith("window.GROUPSPEC_INDEX = ") and json.loads(js[25:].rstrip().rstrip(";")) == entries


def test_every_citation_of_the_table_names_a_known_file() -> None:
    texts = [r.cite for r in CLASSIC_TABLE.rows] + [
        r.cite for name in PROFILES for r in profile_table(name).rows]
    assert [u for t in texts for u in unknown_abbreviations(t)] == []
    assert unknown_abbreviations("GC:12, XY:34") == ["XY:34"]  # negative control


def test_stale_facts_are_left_out_and_said(tmp_path: Path) -> None:
    """A table the committed facts were not computed for: no coverage or proof claims, a note."""
    from render.site_facts import load
    facts = replace(load(), fingerprint="0" * 64)
    site = gather(facts=facts)
    assert site.facts is None and "--update-facts" in site.facts_note
    assert gather().facts is not None  # the committed facts match the table


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_render_command_writes_the_site_and_refuses_bad_input(tmp_path: Path) -> None:
    code, _, err = run(["render"])
    assert code == 2 and err.startswith("groupspec render: nothing to do"), err
    out = tmp_path / "site"
    code, text, err = run(["render", "--out", str(out)])
    assert code == 0 and (out / "index.html").exists() and "pages" in text, err
    code, _, err = run(["render", "--out", str(out)])
    assert code == 2 and "--overwrite" in err and "Traceback" not in err
    code, _, err = run(["render", "--out", str(out), "--overwrite"])
    assert code == 0, err
    code, _, err = run(["render", "--table-md", str(tmp_path / "no" / "such" / "dir" / "t.md")])
    assert code == 2 and "--table-md" in err, err
