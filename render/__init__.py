"""Pictures of the spec for people: drawn from the table and from traces, never written by hand.

Layout:
- `links`: where a row is shown on the site (one link for pages and diagrams);
- trace pictures (one renderer for counterexamples, differences, findings and scenario files):
  a trace in, a self-contained HTML page with an SVG sequence diagram out; the same trace as ITF;
- the site (`groupspec render --out DIR`): the table, its states, rows, invariants, profiles and
  coverage as static pages that open from file:// and work offline; `docs/table.md` beside it.

render/ may import model, check and conformance (to read scenario files); fuzz and groupspec use it.
"""
