"""`groupspec render --out DIR`: the static site drawn from the table.

One directory, published whole (model.atomic.AtomicDirectory): index.html (search box, state
diagram, states x events), state-STATE.html (the state's matrix and every row in words),
invariants.html, profiles.html, historical.html, glossary.html (atoms, effects, replies, error codes,
citations), scenarios.html and scenarios/*.html (each scenario file's conversation as a sequence
diagram, by the trace renderer), site.css, search.js and the search index. It opens from file://
and fetches nothing.

The pieces: render/site_text.py (columns in words, citations), site_model.py (what is shown),
site_facts.py (committed coverage and proof facts), site_diagram.py (Graphviz), site_pages.py
(HTML), site_search.py (the index), site_assets.py (CSS, the search script).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from model.atomic import AtomicDirectory
from model.dsl import Table

from render.site_assets import CSS, SEARCH_JS
from render.site_diagram import ORDER, render_svg
from render.site_model import ROOT, ScenarioRef, Site, gather
from render.site_pages import (
    glossary_page, historical_page, index_page, invariants_page, profiles_page, scenarios_page,
    state_page,
)
from render.site_search import index_js, index_json

# Draws one scenario's sequence diagram page at `path` (site_root: the site's root directory, for
# the links from each step to its row) on the site's table; returns None, or why it could not draw it.
ScenarioDrawer = Callable[[ScenarioRef, Path, Path, Table], Optional[str]]


@dataclass(frozen=True)
class Built:
    out: Path
    pages: int
    seconds: float
    note: str  # the facts' staleness note ("" when they match the table)


def build_site(out: Path, *, overwrite: bool = False, site: Optional[Site] = None,
               draw: Optional[ScenarioDrawer] = None) -> Built:
    start = time.perf_counter()
    site = gather() if site is None else site
    svg = render_svg(site.table)
    json_text = index_json(site)
    draw = draw_scenario if draw is None else draw
    with AtomicDirectory(out, overwrite=overwrite) as d:
        files: dict[str, str] = {
            "index.html": index_page(site, svg),
            "invariants.html": invariants_page(site),
            "profiles.html": profiles_page(site),
            "historical.html": historical_page(site),
            "glossary.html": glossary_page(site),
            "site.css": CSS,
            "search.js": SEARCH_JS,
            "search-index.json": json_text,
            "search-index.js": index_js(json_text),
            "state-diagram.svg": svg,
        }
        for s in ORDER:
            files[f"state-{s}.html"] = state_page(site, s)
        drawn: dict[str, Optional[str]] = {}
        os.makedirs(d.path("scenarios"), exist_ok=True)
        for ref in site.all_scenarios:
            drawn[ref.page] = draw(ref, d.path(ref.page), d.tmp, site.table)
        files["scenarios.html"] = scenarios_page(site, drawn)
        for name, text in files.items():
            d.write(name, text)
        d.publish()
    pages = sum(1 for n in files if n.endswith(".html")) + sum(1 for v in drawn.values() if v is None)
    return Built(out, pages, time.perf_counter() - start, site.facts_note)


def draw_scenario(ref: ScenarioRef, path: Path, site_root: Path, table: Table) -> Optional[str]:
    """A scenario's sequence diagram page on `table`, by the trace renderer (render/trace.py,
    render/sequence.py)."""
    from render.sequence import write_page
    from render.trace import trace_of_scenario

    # The repository-relative path when run from the repository's root (what the page shows).
    source = ref.path if os.path.samefile(os.getcwd(), ROOT) else os.path.join(ROOT, ref.path)
    trace = trace_of_scenario(source, ref.name, table=table)
    up = "../" * ref.page.count("/")  # from the scenario's page back to the site's root
    write_page(trace, str(path), site_root=up.rstrip("/") or ".")
    return None
