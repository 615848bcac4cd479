"""The site's one stylesheet and one script, written beside the pages (no CDN, no web font: the site
opens from file:// with no network). The script is the search box: it reads the index the renderer
writes (search-index.js, the same records as search-index.json) and filters it as the reader types.
"""

from __future__ import annotations

from typing import Final

CSS: Final = """\
:root {
  --ink: #1d2330; --muted: #5b6476; --line: #dfe3ea; --soft: #f6f7f9; --accent: #2f5d9e;
  --ok: #1f7a4d; --warn: #9a5b00; --bad: #a33a3a; --code: #f1f3f6;
}
* { box-sizing: border-box; }
html { font-size: 16px; }
body { margin: 0; color: var(--ink); background: #fff;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif;
  line-height: 1.55; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 0.88em; }
code { background: var(--code); padding: 0.05em 0.3em; border-radius: 3px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
header.top { background: #1f2a3d; color: #fff; padding: 0.7rem 1.5rem; display: flex; gap: 1.5rem;
  align-items: center; flex-wrap: wrap; }
header.top a { color: #dce6f5; }
header.top .brand { font-weight: 650; font-size: 1.1rem; color: #fff; }
header.top nav { display: flex; gap: 1.1rem; flex-wrap: wrap; font-size: 0.95rem; }
main { max-width: 1180px; margin: 0 auto; padding: 1.2rem 1.5rem 4rem; }
h1 { font-size: 1.75rem; margin: 0.6rem 0 0.3rem; letter-spacing: -0.01em; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 0.6rem; padding-bottom: 0.25rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.08rem; margin: 1.4rem 0 0.4rem; }
p.lead { color: var(--muted); font-size: 1.05rem; max-width: 52rem; margin-top: 0.2rem; }
.note { background: #fff8e6; border: 1px solid #f0d9a0; padding: 0.6rem 0.9rem; border-radius: 6px; }
table { border-collapse: collapse; }
table.matrix { width: 100%; font-size: 0.9rem; }
table.matrix th, table.matrix td { border: 1px solid var(--line); padding: 0.35rem 0.5rem; vertical-align: top; text-align: left; }
table.matrix thead th { background: var(--soft); position: sticky; top: 0; z-index: 1; }
table.matrix th.ev { white-space: nowrap; background: var(--soft); font-weight: 600; }
table.matrix td.none { color: #b0b6c2; text-align: center; }
.case { display: block; margin: 0.1rem 0; white-space: nowrap; }
.case .to { color: var(--muted); }
.case.unreachable a { color: #8b93a3; text-decoration: line-through; text-decoration-color: #c5cad3; }
.count { display: inline-block; min-width: 1.6rem; text-align: center; padding: 0 0.35rem;
  border-radius: 999px; background: #e7eefa; color: var(--accent); font-weight: 600; font-size: 0.85em; }
.count.zero { background: #f1f1f1; color: #a0a6b1; }
.badge { display: inline-block; font-size: 0.75rem; font-weight: 600; padding: 0.05rem 0.5rem;
  border-radius: 999px; vertical-align: middle; letter-spacing: 0.01em; }
.badge.reach { background: #e3f3ea; color: var(--ok); }
.badge.unreach { background: #f2f2f2; color: #6d7280; }
.badge.override { background: #fff1dc; color: var(--warn); }
.badge.proved { background: #e3f3ea; color: var(--ok); }
.badge.open { background: #fbe9e9; color: var(--bad); }
.badge.kind { background: #eef1f7; color: #475069; }
article.row, article.prop, article.bug { scroll-margin-top: 1.2rem; }
article.row { border: 1px solid var(--line); border-radius: 8px; padding: 0.9rem 1.1rem 0.7rem;
  margin: 1rem 0; background: #fff; }
article.row:target, article.prop:target, article.bug:target { border-color: var(--accent);
  box-shadow: 0 0 0 3px #d6e3f7; }
article.row.is-unreachable { background: #fbfbfc; }
article.row h3 { margin: 0 0 0.5rem; font-size: 1.02rem; display: flex; gap: 0.6rem; align-items: center; flex-wrap: wrap; }
article.row h3 code { background: none; padding: 0; font-size: 0.98rem; font-weight: 650; }
dl.fields { display: grid; grid-template-columns: 9.5rem 1fr; gap: 0.35rem 1rem; margin: 0; }
dl.fields dt { color: var(--muted); font-size: 0.9rem; padding-top: 0.1rem; }
dl.fields dd { margin: 0; }
ul.atoms, ul.effects { margin: 0; padding-left: 1.1rem; }
ul.atoms li, ul.effects li { margin: 0.1rem 0; }
.neg { color: var(--bad); font-weight: 650; font-size: 0.85em; }
.pos { color: var(--ok); font-weight: 650; font-size: 0.85em; }
.reply { font-weight: 600; }
.muted { color: var(--muted); }
.diagram { border: 1px solid var(--line); border-radius: 8px; padding: 0.6rem; overflow-x: auto; background: #fcfcfd; }
.diagram svg { max-width: 100%; height: auto; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); gap: 0.8rem; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 0.7rem 0.9rem; }
.card h3 { margin: 0 0 0.2rem; font-size: 1rem; }
.card p { margin: 0.2rem 0; font-size: 0.92rem; color: var(--muted); }
.search { position: relative; max-width: 44rem; margin: 1rem 0 0.5rem; }
.search input { width: 100%; font-size: 1.05rem; padding: 0.6rem 0.8rem; border: 1px solid #c7cfdb;
  border-radius: 8px; outline: none; }
.search input:focus { border-color: var(--accent); box-shadow: 0 0 0 3px #d6e3f7; }
#results { list-style: none; padding: 0; margin: 0.4rem 0 0; max-width: 44rem; }
#results li { padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); }
#results li .kind { color: var(--muted); font-size: 0.8rem; margin-left: 0.5rem; }
#results li .detail { display: block; color: var(--muted); font-size: 0.85rem; }
table.side { width: 100%; font-size: 0.92rem; margin: 0.5rem 0 1.5rem; table-layout: fixed; }
table.side th, table.side td { border: 1px solid var(--line); padding: 0.4rem 0.6rem; vertical-align: top; text-align: left; }
table.side th { background: var(--soft); }
table.side td.changed { background: #fff6e5; }
table.list { width: 100%; font-size: 0.92rem; }
table.list th, table.list td { border-bottom: 1px solid var(--line); padding: 0.4rem 0.5rem; text-align: left; vertical-align: top; }
table.list th { background: var(--soft); }
article.prop, article.bug { border: 1px solid var(--line); border-radius: 8px; padding: 0.8rem 1.1rem; margin: 0.9rem 0; }
article.prop h3, article.bug h3 { margin: 0 0 0.4rem; display: flex; gap: 0.6rem; align-items: center; flex-wrap: wrap; }
footer { color: var(--muted); font-size: 0.85rem; border-top: 1px solid var(--line); margin-top: 3rem; padding-top: 1rem; }
"""

SEARCH_JS: Final = """\
"use strict";
(function () {
  var input = document.getElementById("search");
  var list = document.getElementById("results");
  if (!input || !list) { return; }
  var root = document.body.getAttribute("data-root") || "";
  var index = window.GROUPSPEC_INDEX || [];
  function score(entry, terms) {
    var hay = entry.haystack;
    var total = 0;
    for (var i = 0; i < terms.length; i++) {
      var at = hay.indexOf(terms[i]);
      if (at < 0) { return -1; }
      total += at === 0 ? 3 : 1;
    }
    if (entry.title.toLowerCase() === terms.join(" ")) { total += 10; }
    return total;
  }
  function show(query) {
    while (list.firstChild) { list.removeChild(list.firstChild); }
    var terms = query.toLowerCase().split(/\\s+/).filter(function (t) { return t.length > 0; });
    if (terms.length === 0) { return; }
    var hits = [];
    for (var i = 0; i < index.length; i++) {
      var s = score(index[i], terms);
      if (s >= 0) { hits.push([s, i]); }
    }
    hits.sort(function (a, b) { return b[0] - a[0] || a[1] - b[1]; });
    if (hits.length === 0) {
      var none = document.createElement("li");
      none.className = "muted";
      none.textContent = "nothing matches";
      list.appendChild(none);
      return;
    }
    hits.slice(0, 40).forEach(function (hit) {
      var e = index[hit[1]];
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = root + e.url;
      a.textContent = e.title;
      a.className = "result";
      li.appendChild(a);
      var kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = e.kind;
      li.appendChild(kind);
      if (e.detail) {
        var d = document.createElement("span");
        d.className = "detail";
        d.textContent = e.detail;
        li.appendChild(d);
      }
      list.appendChild(li);
    });
  }
  index.forEach(function (e) { e.haystack = (e.title + " " + e.keys).toLowerCase(); });
  input.addEventListener("input", function () { show(input.value); });
  input.addEventListener("keydown", function (ev) {
    var first = list.querySelector("a.result");
    if (ev.key === "Enter" && first) { window.location.href = first.href; }
  });
  if (input.value) { show(input.value); }
})();
"""
