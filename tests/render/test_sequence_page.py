"""The sequence-diagram page: self-contained, every step drawn with its rows and state, rows
linked to the site when a site root is given, a violation named at the top."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from render.sequence import page, row_url, write_page
from render.trace import Violation, trace_of_scenario

SEEDS = "tests/scenarios/seeds.json"


def test_the_page_draws_every_step_and_links_rows_to_the_site(tmp_path: Path) -> None:
    t = trace_of_scenario(SEEDS)
    text = page(t, site_root="../site")
    assert text.count("<svg") == 1 and text.count('class="step"') == len(t.steps)
    for s in t.steps:
        for r in s.rows:
            assert f'href="{row_url(r, "../site")}"' in text
            assert r in text
        assert s.cause.label.replace('"', "&quot;") in text
    assert row_url("Empty/JoinGroup/member-id-required", "../site/") == \
        "../site/state-Empty.html#Empty/JoinGroup/member-id-required"
    assert "<script" not in text
    out = tmp_path / "t.html"
    write_page(t, str(out))
    assert 'href="' not in out.read_text().split("<svg", 1)[1].split("</svg>")[0]  # no site: no links


def test_the_page_loads_nothing_from_elsewhere() -> None:
    text = page(trace_of_scenario(SEEDS), site_root="../site")
    urls = re.findall(r"""(?:href|src)=["']([^"']+)""", text) + re.findall(r"url\(([^)#][^)]*)\)", text)
    assert urls and all(not re.match(r"[a-z]+:", u) for u in urls), urls  # relative links only
    assert "@import" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_a_violation_is_named_at_the_top_and_marked_at_its_step() -> None:
    t = trace_of_scenario(SEEDS)
    bad = replace(t, kind="counterexample", violation=Violation(
        "generation-monotonic", "the generation never decreases", "generation 2 -> 1", step=3))
    text = page(bad)
    head = text.split("<svg", 1)[0]
    assert 'class="violation"' in head and "generation-monotonic" in head
    assert text.count('class="band bad"') == 1 and "✗ generation-monotonic: breaks at this step" in text
    clean = page(t)  # negative control: no violation, nothing named
    assert 'class="violation"' not in clean and "band bad" not in clean


def test_several_traces_make_one_page_with_contents() -> None:
    from render.trace import traces_of_scenarios
    ts = traces_of_scenarios(SEEDS)[:3]
    text = page(ts, title="three")
    assert text.count("<svg") == 3 and text.count('href="#trace-') == 3
