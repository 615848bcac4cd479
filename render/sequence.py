"""A trace as a sequence diagram: SVG inside one self-contained HTML page.

Clients, the admin (when it speaks) and the coordinator are lifelines; requests, responses,
timer firings and faults are arrows; beside each step stand the table rows it fired (linked to
their pages on the site when `site_root` is given) and the group state after it. A counterexample
names its violated invariant at the top of the page and marks the step where it breaks. The page
loads nothing: no script, font or style from anywhere else, so it works from file:// offline.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass
from typing import Callable, Final, Optional, Sequence, Union

from model.atomic import write_text_atomic
from model.invariants import INVARIANTS

from render.links import row_url
from render.trace import ADMIN, COORDINATOR, GroupSnapshot, Message, Trace, TraceStep, lifelines

RowLink = Callable[[str], str]

# Geometry (px).
GUTTER: Final = 92  # step number and time, left of the first lifeline
SPACING: Final = 178  # between lifelines
HEAD: Final = 46  # lifeline boxes
ARROW: Final = 26  # vertical room per arrow
LINE: Final = 15  # one line of the notes column
NOTES_GAP: Final = 70  # from the coordinator to the notes column
NOTES_WIDTH: Final = 470
CHARS: Final = 68  # characters per notes line (12 px sans)
PAD: Final = 10

COLORS: Final = {"request": "#1f5fae", "response": "#2c7a3f", "error": "#b3541e", "timer": "#8a5a00",
                 "fault": "#c0262d", "setup": "#6b6b6b", "lost": "#c0262d"}


def page(trace: Union[Trace, Sequence[Trace]], site_root: Optional[str] = None, *,
         title: Optional[str] = None, row_link: Optional[RowLink] = None,
         intro: Sequence[str] = (), empty: str = "No trace to draw.") -> str:
    """One HTML page with the sequence diagram of each trace (several: one section each, with a
    table of contents; none: `empty` says why). Rows link to `row_link(row_id)`, or with
    `site_root` to `row_url`. `intro`: paragraphs above the traces."""
    traces = [trace] if isinstance(trace, Trace) else list(trace)
    link = row_link or ((lambda r: row_url(r, site_root)) if site_root is not None else None)
    head = title or (traces[0].title if len(traces) == 1 else f"{len(traces)} traces")
    one = len(traces) == 1 and not intro
    body = [f'<p class="note">{_e(p)}</p>' for p in intro]
    if not traces:
        body.append(f'<p class="none">{_e(empty)}</p>')
    if len(traces) > 1:
        items = "".join(f'<li><a href="#trace-{i}">{_e(t.title)}</a>{_badge(t)}</li>'
                        for i, t in enumerate(traces, 1))
        body.append(f'<nav class="toc"><h2>Contents</h2><ol>{items}</ol></nav>')
    for i, t in enumerate(traces, 1):
        body.append(section(t, f"trace-{i}", link, level=1 if one else 2))
    home = (f'<p class="home"><a href="{_e(site_root.rstrip("/"))}/index.html">the spec</a></p>'
            if site_root is not None else "")
    heading = "" if one else f"<h1>{_e(head)}</h1>"
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_e(head)} · groupspec</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f"{home}{heading}{''.join(body)}\n{legend(link is not None)}\n</body>\n</html>\n")


def write_page(trace: Union[Trace, Sequence[Trace]], path: str, site_root: Optional[str] = None, *,
               title: Optional[str] = None, row_link: Optional[RowLink] = None,
               intro: Sequence[str] = (), empty: str = "No trace to draw.") -> None:
    """`page` written atomically to `path`."""
    write_text_atomic(path, page(trace, site_root, title=title, row_link=row_link, intro=intro, empty=empty))


def section(t: Trace, anchor: str, link: Optional[RowLink], level: int = 2) -> str:
    """A trace's heading, what it shows, its violation and its diagram."""
    h = f"h{level}"
    meta = (f'<p class="meta">{_e(_KIND_WORDS.get(t.kind, t.kind))} · table <code>{_e(t.table)}</code> · '
            f'{len(t.steps)} step(s) · from <code>{_e(t.source)}</code></p>')
    parts = [f'<section class="trace {t.kind}" id="{_e(anchor)}"><{h}>{_e(t.title)}</{h}>', meta]
    if t.violation is not None:
        v = t.violation
        where = f" at step {v.step}" if v.step else ""
        parts.append(
            f'<div class="violation" role="alert"><p class="vhead">{_verdict(t)}: '
            f'<strong class="invariant">{_e(v.name)}</strong>{_e(where)}</p>'
            f'<p class="statement">{_e(v.statement)}</p>'
            f'<p class="message">{_e(v.message)}</p></div>')
    for n in t.notes:
        parts.append(f'<p class="note">{_e(n)}</p>')
    if t.steps:
        parts.append(f'<div class="diagram">{svg(t, link)}</div>')
    else:
        parts.append('<p class="note">The trace has no steps.</p>')
    parts.append("</section>")
    return "\n".join(parts)


@dataclass(frozen=True)
class _Band:
    step: TraceStep
    top: int
    height: int
    notes: list[tuple[str, str, Optional[str]]]  # (css class, text, row id to link)


def svg(t: Trace, link: Optional[RowLink]) -> str:
    """The sequence diagram of a trace."""
    names = lifelines(t)
    x = _positions(t, names)
    notes_x = x[COORDINATOR] + NOTES_GAP
    width = notes_x + NOTES_WIDTH + PAD
    bands: list[_Band] = []
    y = HEAD + 18
    previous = t.initial
    for s in t.steps:
        notes = _notes(s, previous)
        if t.violation is not None and (t.violation.step or len(t.steps)) == s.index:
            notes.insert(0, ("badmark", f"✗ {t.violation.name}: breaks at this step", None))
        arrows = 1 + len(s.answers)
        height = max(arrows * ARROW + 12, len(notes) * LINE + 14)
        bands.append(_Band(s, y, height, notes))
        y += height
        previous = s.group or previous
    bottom = y + 8
    total = bottom + HEAD
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" '
           f'viewBox="0 0 {width} {total}" role="img" aria-label="sequence diagram of {_e(t.title)}">',
           _DEFS]
    for i, b in enumerate(bands):
        bad = t.violation is not None and (t.violation.step or len(t.steps)) == b.step.index
        cls = "band bad" if bad else ("band odd" if i % 2 else "band")
        out.append(f'<rect class="{cls}" x="0" y="{b.top}" width="{width}" height="{b.height}"/>')
    for n in names:
        out.append(f'<line class="life{" coord" if n == COORDINATOR else ""}" x1="{x[n]}" y1="{HEAD}" '
                   f'x2="{x[n]}" y2="{bottom}"/>')
    for top in (6, bottom + 4):
        for n in names:
            cls = "coord" if n == COORDINATOR else "admin" if n == ADMIN else "client"
            w = SPACING - 34
            out.append(f'<g class="head {cls}"><rect x="{x[n] - w // 2}" y="{top}" width="{w}" height="30" '
                       f'rx="6"/><text x="{x[n]}" y="{top + 20}">{_e(_fit(n, 20))}</text></g>')
    out.append(f'<text class="colhead" x="{notes_x}" y="{HEAD + 10}">rows fired → group state after</text>')
    for b in bands:
        out.append(_band(t, b, x, notes_x, link))
    out.append("</svg>")
    return "\n".join(out)


def _label_width(text: str) -> int:
    """A generous estimate of a 12 px label's width (DejaVu Sans averages about 7 px a glyph)."""
    return int(len(text) * 7.0) + 24


def _positions(t: Trace, names: tuple[str, ...]) -> dict[str, int]:
    """Each lifeline's x: evenly spaced, with the coordinator far enough right that every label,
    which ends near it, fits between the gutter and it."""
    first = GUTTER + 60
    widest = max((_label_width(_arrow_text(m)) for s in t.steps for m in (s.cause, *s.answers)
                  if m.source == COORDINATOR or m.target == COORDINATOR), default=0)
    coord = max(first + (len(names) - 1) * SPACING, GUTTER + 12 + widest)
    if len(names) == 1:
        return {names[0]: coord}
    gap = (coord - first) / (len(names) - 1)
    return {n: int(first + i * gap) for i, n in enumerate(names)}


def _arrow_text(m: Message) -> str:
    return m.label + (" (to the parked request)" if m.late and m.kind == "response" else "") + \
        (" — lost" if m.lost else "")


def _band(t: Trace, b: _Band, x: dict[str, int], notes_x: int, link: Optional[RowLink]) -> str:
    s = b.step
    out = [f'<g class="step" id="{_e(t.title)}-step-{s.index}">']
    out.append(f'<text class="num" x="8" y="{b.top + 18}">{s.index}</text>')
    if s.time_ms is not None:
        out.append(f'<text class="time" x="8" y="{b.top + 33}">t={s.time_ms} ms</text>')
    ay = b.top + 20
    out.append(_arrow(s.cause, x, ay))
    for a in s.answers:
        ay += ARROW
        out.append(_arrow(a, x, ay))
    ny = b.top + 16
    for cls, text, row in b.notes:
        content = _e(text)
        if row is not None and link is not None:
            content = f'<a href="{_e(link(row))}"><title>row {_e(row)} on the site</title>{content}</a>'
        out.append(f'<text class="{cls}" x="{notes_x}" y="{ny}">{content}</text>')
        ny += LINE
    out.append("</g>")
    return "\n".join(out)


def _arrow(m: Message, x: dict[str, int], y: int) -> str:
    color = "lost" if m.lost else ("error" if m.error not in (None, "NONE") and m.kind == "response" else m.kind)
    title = f"<title>{_e(m.detail or m.label)}</title>"
    if m.source == m.target or m.kind == "fault" and m.source != COORDINATOR and m.target == m.source:
        cx = x.get(m.source, x[COORDINATOR])
        if m.kind == "fault" and m.source != COORDINATOR:
            return (f'<g class="msg {color}">{title}<text class="cross" x="{cx}" y="{y + 5}">✕</text>'
                    f'<text class="label" x="{cx + 12}" y="{y + 4}">{_e(m.label)}</text></g>')
        return (f'<g class="msg {color}">{title}<path d="M{cx},{y - 6} h26 v12 h-24" '
                f'marker-end="url(#head-{color})"/>'
                f'<text class="label" x="{cx - 8}" y="{y + 4}" text-anchor="end">{_e(m.label)}</text></g>')
    x1, x2 = x.get(m.source, x[COORDINATOR]), x.get(m.target, x[COORDINATOR])
    direction = 1 if x2 > x1 else -1
    end = x2 - direction * (24 if m.lost else 3)
    dash = ' stroke-dasharray="5 3"' if m.kind == "response" else ""
    # The label ends near the coordinator: a long one runs left over the other lifelines (on a
    # white halo), never into the notes column.
    lx = max(x1, x2) - 12
    lost = (f'<text class="cross" x="{end}" y="{y + 5}">✕</text>' if m.lost else "")
    marker = "" if m.lost else f' marker-end="url(#head-{color})"'
    return (f'<g class="msg {color}">{title}<line x1="{x1}" y1="{y}" x2="{end}" y2="{y}"{dash}{marker}/>'
            f'{lost}<text class="label" x="{lx}" y="{y - 5}" text-anchor="end">{_e(_arrow_text(m))}'
            f'</text></g>')


def _notes(s: TraceStep, previous: Optional[GroupSnapshot]) -> list[tuple[str, str, Optional[str]]]:
    """The notes column of a step: rows fired (each linked), the state after, timers, the note."""
    out: list[tuple[str, str, Optional[str]]] = []
    for r in s.rows:
        out.append(("row", r, r))
    if not s.rows:
        out.append(("norow", "no table row (outside the coordinator)" if s.cause.kind in ("fault", "setup")
                    and s.cause.source != COORDINATOR else "no table row", None))
    g = s.group
    if g is not None:
        changed = previous is None or previous.state != g.state or previous.generation != g.generation
        head = f"→ {g.state}, generation {g.generation}" + (f", {g.protocol}" if g.protocol else "")
        out.append(("state changed" if changed else "state", head, None))
        if g.members:
            for line in textwrap.wrap("members: " + "; ".join(m.describe() for m in g.members), CHARS):
                out.append(("members", line, None))
        if g.pending:
            out.append(("members", _fit("pending: " + ", ".join(g.pending), CHARS), None))
        if g.timers:
            for line in textwrap.wrap("timers: " + ", ".join(g.timers), CHARS):
                out.append(("timers", line, None))
    if s.note:
        out.append(("stepnote", _fit(s.note, CHARS), None))
    return out


def _fit(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _badge(t: Trace) -> str:
    """A contents entry's mark: the violated property of a counterexample (the others' titles
    say what they show)."""
    if t.violation is None or t.kind != "counterexample" or t.violation.name in t.title:
        return ""
    return f' <span class="vbadge">{_e(t.violation.name)}</span>'


def _verdict(t: Trace) -> str:
    if t.kind == "counterexample":
        invariant = t.violation is not None and t.violation.name in INVARIANTS
        return "Violated invariant" if invariant else "Violated property"
    return _VERDICT.get(t.kind, "Fails")


_VERDICT: Final = {"counterexample": "Violated invariant", "difference": "Difference",
                    "finding": "Finding", "scenario": "Fails"}
_KIND_WORDS: Final = {"scenario": "scenario file run on the model",
                      "counterexample": "counterexample found by groupspec check",
                      "difference": "difference found by groupspec diff",
                      "finding": "finding by groupspec fuzz or observe"}

_DEFS: Final = "<defs>" + "".join(
    f'<marker id="head-{k}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
    f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
    for k, c in COLORS.items()) + "</defs>"

CSS: Final = """
:root { color-scheme: light; }
body { font-family: system-ui, "DejaVu Sans", "Liberation Sans", sans-serif; margin: 0 auto;
  padding: 1.2rem 1.6rem 3rem; max-width: 1500px; color: #1d1d1f; background: #fbfbfa; line-height: 1.4; }
h1 { font-size: 1.55rem; margin: .4rem 0; } h2 { font-size: 1.3rem; margin: 1.6rem 0 .3rem; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: .9em; background: #eee; padding: 0 .25em;
  border-radius: 3px; }
.meta { color: #555; margin: .2rem 0 .8rem; }
.home { margin: 0; font-size: .9rem; }
.note { max-width: 62rem; color: #333; margin: .4rem 0; }
.violation { border: 2px solid #c0262d; background: #fdecec; border-radius: 8px; padding: .6rem 1rem;
  margin: .6rem 0 1rem; max-width: 62rem; }
.violation p { margin: .2rem 0; }
.vhead { font-size: 1.25rem; color: #8f1016; }
.invariant { font-family: "DejaVu Sans Mono", monospace; }
.statement { color: #333; } .message { font-family: "DejaVu Sans Mono", monospace; font-size: .9rem; }
.vbadge { background: #c0262d; color: #fff; border-radius: 4px; padding: 0 .35em; font-size: .85em; }
.diagram { overflow-x: auto; background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 4px; }
svg { font-family: system-ui, "DejaVu Sans", sans-serif; font-size: 12px; }
svg .band { fill: #fff; } svg .band.odd { fill: #f4f6f9; } svg .band.bad { fill: #fde3e3; }
svg .life { stroke: #9aa4b1; stroke-width: 1.2; stroke-dasharray: 4 4; }
svg .life.coord { stroke: #333; stroke-width: 2; stroke-dasharray: none; }
svg .head rect { fill: #e6eef8; stroke: #1f5fae; } svg .head text { text-anchor: middle; font-weight: 600; }
svg .head.coord rect { fill: #2d3440; stroke: #2d3440; } svg .head.coord text { fill: #fff; }
svg .head.admin rect { fill: #eee; stroke: #888; }
svg .num { font-weight: 700; font-size: 14px; fill: #333; } svg .time { fill: #666; font-size: 11px; }
svg .msg line, svg .msg path { stroke-width: 1.6; fill: none; }
svg .label { paint-order: stroke; stroke: #fff; stroke-width: 4px; stroke-linejoin: round; }
""" + "".join(f"svg .msg.{k} line, svg .msg.{k} path {{ stroke: {c}; }} svg .msg.{k} text {{ fill: {c}; }}\n"
              for k, c in COLORS.items()) + """
svg .cross { font-weight: 700; font-size: 15px; text-anchor: middle; fill: #c0262d; }
svg .colhead { fill: #666; font-style: italic; }
svg .row { font-family: "DejaVu Sans Mono", monospace; font-size: 11.5px; fill: #1f3f6e; }
svg a .row, svg a text { fill: #1f5fae; text-decoration: underline; }
svg .norow { fill: #888; font-style: italic; }
svg .state { font-weight: 600; fill: #333; } svg .state.changed { fill: #6a1b9a; font-weight: 700; }
svg .members { fill: #333; } svg .timers { fill: #7a6a3a; font-size: 11px; }
svg .stepnote { fill: #888; font-size: 11px; }
svg .badmark { fill: #c0262d; font-weight: 700; font-size: 13px; }
.legend { color: #555; font-size: .9rem; margin-top: 1rem; }
.legend span { display: inline-block; margin-right: 1.2rem; }
.toc ol { padding-left: 2.2rem; } .toc li { margin: .15rem 0; }
.none { font-size: 1.1rem; color: #2c7a3f; }
"""

def legend(linked: bool) -> str:
    """What the arrows' colours mean (and, when rows are links, where they lead)."""
    where = "; a row id links to its page on the site" if linked else ""
    return ('<p class="legend"><span style="color:#1f5fae">── request →</span>'
            '<span style="color:#2c7a3f">- - response (OK) →</span>'
            '<span style="color:#b3541e">- - response (error) →</span>'
            '<span style="color:#8a5a00">↻ timer firing in the coordinator</span>'
            '<span style="color:#c0262d">✕ fault (crash, stall, lost response)</span>'
            f'<span>hover an arrow for every field{where}</span></p>')


__all__ = ["page", "row_url", "section", "svg", "write_page"]
