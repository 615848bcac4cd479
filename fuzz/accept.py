"""Accepted divergence classes (`groupspec fuzz --accept FILE`, format in docs/fuzz-accept.md).

A target that differs from Kafka at the first request of every group hides everything behind that
difference. An accept file lists the classes a broker team knows and accepts, each with a reason;
the judge then counts such a finding, adopts the target's answer and goes on judging the sequence
(`GroupJudge` resynchronises its hypotheses, see fuzz/judge.py `_adopt`).

    {"format": "groupspec-fuzz-accept/1", "target": "tansu",
     "accept": [{"api": "DeleteGroups", "row": "Missing/DeleteGroups/not-found",
                 "shape": "expected ['GROUP_ID_NOT_FOUND'] actual ['NONE']",
                 "reason": "Tansu deletes a missing group successfully"}]}

`api` is an API name; `row` and `shape` are matched whole, `*` standing for any text (nothing else
is special: shapes contain brackets). `write_accept_document` turns report classes into entries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final, Iterable, Optional

from model.errors import BadInput
from model.vocabulary import ApiKey

from fuzz.judge import Finding

FORMAT: Final = "groupspec-fuzz-accept/1"
_FIELDS: Final = ("api", "row", "shape", "reason")


def _pattern(text: str) -> "re.Pattern[str]":
    return re.compile("".join(".*" if part == "*" else re.escape(part)
                              for part in re.split(r"(\*)", text)), re.DOTALL)


@dataclass(frozen=True, slots=True)
class AcceptEntry:
    api: str
    row: str
    shape: str
    reason: str

    def matches(self, api: str, row: str, shape: str) -> bool:
        return (self.api in ("*", api) and _pattern(self.row).fullmatch(row) is not None
                and _pattern(self.shape).fullmatch(shape) is not None)

    def key(self) -> str:
        return f"{self.api}|{self.row}|{self.shape}"

    def to_json(self) -> dict[str, str]:
        return {"api": self.api, "row": self.row, "shape": self.shape, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class AcceptList:
    entries: tuple[AcceptEntry, ...]
    target: str = ""
    path: str = ""

    def match(self, finding: Finding) -> Optional[AcceptEntry]:
        """The first entry that accepts `finding` (its API, deciding row and shape)."""
        for e in self.entries:
            if e.matches(finding.api, finding.primary, finding.shape):
                return e
        return None


def parse_accept(text: str, path: str) -> AcceptList:
    """An accept file's text; any defect is a BadInput naming the file, the entry and the field."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON: {e.msg} (line {e.lineno})") from None
    return _entries(doc, path)


def _entries(doc: Any, path: str) -> AcceptList:
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: expected a JSON object with \"format\" and \"accept\"")
    if doc.get("format") != FORMAT:
        raise BadInput(f"{path}: format: expected {FORMAT!r}, got {doc.get('format')!r}")
    unknown = sorted(set(doc) - {"format", "target", "accept", "notes"})
    if unknown:
        raise BadInput(f"{path}: unknown field {unknown[0]!r} (allowed: format, target, accept, notes)")
    target = doc.get("target", "")
    if not isinstance(target, str):
        raise BadInput(f"{path}: target: expected a string")
    raw = doc.get("accept")
    if not isinstance(raw, list):
        raise BadInput(f"{path}: accept: expected a list of entries")
    apis = {a.name for a in ApiKey} | {"*"}
    entries = []
    for i, e in enumerate(raw):
        where = f"{path}: accept[{i}]"
        if not isinstance(e, dict):
            raise BadInput(f"{where}: expected an object with {', '.join(_FIELDS)}")
        extra = sorted(set(e) - set(_FIELDS))
        if extra:
            raise BadInput(f"{where}: unknown field {extra[0]!r} (allowed: {', '.join(_FIELDS)})")
        for f in _FIELDS:
            v = e.get(f)
            if not isinstance(v, str) or not v.strip():
                raise BadInput(f"{where}.{f}: expected a non-empty string")
        if e["api"] not in apis:
            raise BadInput(f"{where}.api: unknown API {e['api']!r}")
        entries.append(AcceptEntry(e["api"], e["row"], e["shape"], e["reason"]))
    return AcceptList(tuple(entries), target, path)


def load_accept(path: str) -> AcceptList:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BadInput(f"--accept {path}: cannot read: {e.strerror}") from None
    return parse_accept(text, path)


def write_accept_document(target: str, classes: Iterable[dict[str, Any]],
                          kept: Iterable[AcceptEntry] = (), source: str = "",
                          families: Optional[Iterable[dict[str, Any]]] = None) -> dict[str, Any]:
    """An accept file accepting every report class (`api`, `class` = API|row|shape), or with
    `families` every family, and keeping the entries `kept` (those in force for the run): the
    reason says where each came from, for a person to replace with why the difference is
    acceptable."""
    out: list[dict[str, str]] = [e.to_json() for e in kept]
    seen = {(e["api"], e["row"], e["shape"]) for e in out}
    if families is not None:
        for e in family_entries(families, source):
            if (e["api"], e["row"], e["shape"]) not in seen:
                seen.add((e["api"], e["row"], e["shape"]))
                out.append(e)
        return {"format": FORMAT, "target": target, "accept": out}
    for c in classes:
        api, row, shape = str(c["class"]).split("|", 2)
        if (api, row, shape) in seen:
            continue
        seen.add((api, row, shape))
        out.append({"api": api, "row": row, "shape": shape,
                    "reason": f"known difference, {c.get('count', 1)} findings in {source or 'a fuzz run'}: "
                              f"model allows {json.dumps(c.get('expected', []))}, "
                              f"target answered {json.dumps(c.get('actual'))}"})
    return {"format": FORMAT, "target": target, "accept": out}


def family_entries(families: Iterable[dict[str, Any]], source: str = "") -> list[dict[str, str]]:
    """One entry per family of a report (fuzz/families.py), for every row (`row` "*"): the shared
    differing fields, or one entry per shared expected -> actual error pair."""
    out: list[dict[str, str]] = []
    for f in families:
        why = (f"family of {len(f['classes'])} classes, {f['count']} findings in {source or 'a fuzz run'}, "
               f"rows {', '.join(f['rows'])}: {f['differs']}")
        for name in f.get("keys") or str(f["family"]).split(" ; "):
            api, _, what = name.partition("|")
            kind, _, text = what.partition(":")
            if kind == "fields":
                shape = f"expected * actual * differing in {text}"
            else:
                expected, _, actual = text.partition("->")
                shape = f"expected *{expected}* actual {actual}"
            out.append({"api": api, "row": "*", "shape": shape, "reason": why})
    return out


__all__ = ["AcceptEntry", "AcceptList", "FORMAT", "family_entries", "load_accept", "parse_accept",
           "write_accept_document"]
