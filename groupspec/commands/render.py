"""`groupspec render`: the spec for people, drawn from the table.

`--out DIR` builds the static site (render/site.py): it opens from file:// and fetches nothing.
`--table-md FILE` rewrites the Markdown rendering of the table (docs/table.md); `--table` draws
another table (a profile or a user's package.module:NAME) instead of the classic one; `--guide-svg DIR`
the guide's sequence diagrams (docs/guide). `--update-facts`
recomputes the committed coverage and proof facts (render/site_facts.json: the default plan on the
native engine and the induction proofs, about half a minute). At least one of the four is needed.
Exit 0 when everything asked for is written; 2 on bad input (an existing --out without --overwrite,
an unwritable path, no Graphviz).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Final

from model.atomic import write_text_atomic
from model.errors import BadInput

from groupspec.options import add_quiet, load_table_or_profile, output_dir, output_file

HELP: Final = "draw the spec for people: a static site of the table, and docs/table.md"
DESCRIPTION: Final = (
    "Draw the spec for people from the transition table: a static site (--out DIR; the state "
    "diagram, a page per state with every row in words, invariants, profiles, historical bugs, "
    "scenario sequence diagrams and a search box; it opens from file:// with no network), the "
    "Markdown table (--table-md FILE), and the committed coverage/proof facts the site shows "
    "(--update-facts).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None, metavar="DIR",
                   help="build the site in DIR (published whole when complete)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out DIR")
    p.add_argument("--table-md", default=None, metavar="FILE",
                   help="write the Markdown rendering of the table to FILE (the repository keeps "
                        "docs/table.md)")
    p.add_argument("--guide-svg", default=None, metavar="DIR",
                   help="write the sequence diagram of each guide scenario (tests/scenarios/guide) "
                        "to DIR/NAME.svg (the repository keeps docs/guide)")
    p.add_argument("--table", default=None, metavar="PROFILE|MODULE:NAME",
                   help="draw this table instead of the classic one: a profile (kafka-3.9, kafka-4) or "
                        "package.module:NAME (the site and --table-md; the site sets its rows against "
                        "kafka-3.9's and runs the scenario diagrams on it)")
    p.add_argument("--update-facts", action="store_true",
                   help="recompute render/site_facts.json (default plan coverage, induction proofs) "
                        "before rendering")
    add_quiet(p)


def run(a: argparse.Namespace) -> int:
    if a.out is None and a.table_md is None and a.guide_svg is None and not a.update_facts:
        raise BadInput("nothing to do: give --out DIR, --table-md FILE, --guide-svg DIR or --update-facts")
    if a.out is not None:
        out = Path(a.out)
        if out.exists() and not a.overwrite:
            raise BadInput(f"--out {a.out}: already exists (pass --overwrite to replace it)")
        if out.exists() and not out.is_dir():
            raise BadInput(f"--out {a.out}: exists and is not a directory")
    if a.table is not None and a.update_facts:  # (checked before the table is loaded)
        raise BadInput("--update-facts recomputes the classic table's committed facts "
                       "(render/site_facts.json), not --table's: give one of them")
    if a.table is not None and a.guide_svg is not None:
        raise BadInput("--guide-svg draws the classic table's guide (docs/guide), not --table's: give one of them")
    output_file(a.table_md, "--table-md")
    from model.table import CLASSIC_TABLE, URGENT

    table, urgent = load_table_or_profile(a.table, "--table") if a.table is not None else (CLASSIC_TABLE, URGENT)
    spec = None if (table, urgent) == (CLASSIC_TABLE, URGENT) else a.table  # (kafka-3.9 names the classic table)
    output_dir(a.guide_svg, "--guide-svg", "1.svg", create=True)

    if a.update_facts:
        from render import site_facts
        print("groupspec render: computing the site's facts (default plan, induction proofs)", flush=True)
        facts = site_facts.compute(CLASSIC_TABLE, URGENT, None if a.quiet else sys.stderr)
        site_facts.save(facts)
        print(f"wrote {os.path.relpath(site_facts.FACTS_PATH)}: {len(facts.fired_by)} rows fired, "
              f"{len(facts.proved_unreachable)} proved unreachable, {sum(facts.states):,} states "
              f"({facts.seconds['explore']} s exploring, {facts.seconds['prove']} s proving)")
    if a.table_md is not None:
        from render.table_md import render_table_md
        write_text_atomic(a.table_md, render_table_md(table, spec))
        print(f"wrote {a.table_md}: {len(table.rows)} rows of table {table.name}")
    if a.guide_svg is not None:
        from render.site_guide import write_guide_svgs
        written = write_guide_svgs(a.guide_svg)
        print(f"wrote {len(written)} guide diagrams to {a.guide_svg}")
    if a.out is not None:
        from render.site import build_site
        from render.site_model import gather
        site = gather(table, urgent, spec=spec) if spec is not None else None
        built = build_site(Path(a.out), overwrite=a.overwrite, site=site)
        if built.note:
            print(f"groupspec render: note: {built.note}", file=sys.stderr)
        print(f"wrote {a.out}: {built.pages} pages in {built.seconds:.1f} s; open "
              f"{Path(a.out).resolve() / 'index.html'}")
    return 0
