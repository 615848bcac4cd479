"""The search index: one record per row, atom, effect, error code, Kafka citation, property,
historical bug and scenario, each with the page it lives on.

Written twice: search-index.json (for tools) and search-index.js, the same JSON assigned to
`window.GROUPSPEC_INDEX`, which the page loads with a <script> tag: a browser refuses fetch() of a
file:// URL, and the site must open from disk.
"""

from __future__ import annotations

import json
from typing import Final

from model.dsl import vocabulary

from render.links import row_href
from render.site_model import Site
from render.site_pages import citation_anchor, citations_used, error_anchor, errors_used
from render.site_text import citations, first_sentence, next_state_text, reply_short

Entry = dict[str, str]
JS_PREFIX: Final = "window.GROUPSPEC_INDEX = "


def entries(site: Site) -> list[Entry]:
    out: list[Entry] = []
    for r in site.table.rows:
        keys = [r.event, *(lit.atom for lit in r.guard.literals), *r.effects, r.cite,
                *(c.text for c in citations(r.cite))]
        if r.reply.form not in ("park", "none", "continue"):
            keys += [r.reply.error.name, str(r.reply.error.value)]
        detail = f"{r.guard} → {reply_short(r.reply)}, next {next_state_text(r)}"
        if r.unreachable:
            detail += " (cannot fire)"
        out.append({"title": r.id, "kind": "row", "url": row_href(r.id), "detail": detail,
                    "keys": " ".join(keys)})
    atoms, effects, _ = vocabulary(site.table)
    for name, a in atoms.items():
        out.append({"title": name, "kind": "atom", "url": f"glossary.html#atom-{name}",
                    "detail": first_sentence(a.doc), "keys": a.doc})
    for name, e in effects.items():
        out.append({"title": name, "kind": "effect", "url": f"glossary.html#effect-{name}",
                    "detail": first_sentence(e.doc), "keys": e.doc})
    for name, rows in errors_used(site).items():
        code = str(rows[0].reply.error.value)
        out.append({"title": f"{name} ({code})", "kind": "error code",
                    "url": f"glossary.html#{error_anchor(name)}",
                    "detail": f"answered by {len(rows)} row(s)", "keys": f"{name} {code} error"})
    for text, (url, rows) in citations_used(site).items():
        out.append({"title": text, "kind": "Kafka citation", "url": f"glossary.html#{citation_anchor(text)}",
                    "detail": f"cited by {len(rows)} row(s); {url}", "keys": url})
    for p in site.properties:
        out.append({"title": p.name, "kind": p.kind, "url": f"invariants.html#{p.name}",
                    "detail": first_sentence(p.statement), "keys": p.statement})
    for b in site.historical:
        out.append({"title": b.name, "kind": "historical bug", "url": f"historical.html#{b.name}",
                    "detail": first_sentence(b.summary), "keys": f"{b.source} {b.summary}"})
    for o in site.overrides:
        out.append({"title": f"{o.base.id} ({o.profile})", "kind": "profile override",
                    "url": f"profiles.html#{o.profile}--{o.base.id}",
                    "detail": f"{o.profile}: {reply_short(o.row.reply)}", "keys": o.row.cite})
    for s in site.all_scenarios:
        out.append({"title": s.name, "kind": "scenario", "url": s.page, "detail": s.path, "keys": s.path})
    return out


def index_json(site: Site) -> str:
    return json.dumps(entries(site), indent=0, ensure_ascii=False)


def index_js(json_text: str) -> str:
    # `</` cannot close a script in a .js file, but keep the JSON verbatim and valid JavaScript.
    return JS_PREFIX + json_text + ";\n"
