"""The state diagram: the group states and every state change a reachable row makes, drawn by
Graphviz `dot` as SVG. One edge per (from, to) pair, top to bottom, labelled by the events that take it; each event
in the label links to the rows of the source state's page that make that change.
"""

from __future__ import annotations

import html
import shutil
import subprocess
from typing import Final

from model.dsl import Table
from model.errors import BadInput

from render.site_text import row_state

DOT: Final = "dot"
# Kafka's states in the order a rebalance visits them, then the two outside the cache.
ORDER: Final = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Missing")
TIMEOUT_S: Final = 60


def edges(table: Table) -> dict[tuple[str, str], list[str]]:
    """(from, to) -> the events of the rows that can fire and change the state that way."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in table.rows:
        src = row_state(r)
        if r.next_state is None or r.unreachable or r.next_state.name == src:
            continue
        events = out.setdefault((src, r.next_state.name), [])
        if r.event not in events:
            events.append(r.event)
    return out


def anchor_of_change(src: str, dst: str, event: str) -> str:
    """The anchor, on the source state's page, of the rows taking `event` from src to dst."""
    return f"to-{dst}-{event}"


def dot_source(table: Table) -> str:
    lines = [
        "digraph states {",
        '  graph [rankdir=TB, bgcolor="transparent", nodesep=0.45, ranksep=0.6, '
        'fontname="Helvetica", pad=0.2];',
        '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#4a6fa5", '
        'fontname="Helvetica", fontsize=15, margin="0.25,0.12"];',
        '  edge [color="#6b7a90", fontname="Helvetica", fontsize=12, arrowsize=0.8];',
    ]
    for s in ORDER:
        fill = '"#f3f3f3"' if s in ("Dead", "Missing") else '"#eef3fb"'
        lines.append(f'  "{s}" [URL="state-{s}.html", target="_top", fillcolor={fill}, '
                     f'tooltip="{s}: its rows"];')
    for (src, dst), events in sorted(edges(table).items()):
        cells = "".join(
            f'<TR><TD HREF="state-{src}.html#{anchor_of_change(src, dst, e)}" TARGET="_top" '
            f'TITLE="{src} to {dst} on {e}">{html.escape(e)}</TD></TR>' for e in events)
        label = f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">{cells}</TABLE>>'
        lines.append(f'  "{src}" -> "{dst}" [label={label}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(table: Table) -> str:
    """The diagram as an SVG document (needs Graphviz's `dot`: Debian's graphviz package)."""
    if shutil.which(DOT) is None:
        raise BadInput("the state diagram needs Graphviz's `dot` (apt-get install graphviz)")
    done = subprocess.run([DOT, "-Tsvg"], input=dot_source(table), capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed ({done.returncode}): {done.stderr.strip()}")
    svg = done.stdout
    # Inline in the page: drop the XML prologue and doctype.
    return svg[svg.index("<svg"):]
