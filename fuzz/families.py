"""Families of classes: one departure of a target, seen under many rows.

A class is (API, deciding row, shape). A broker that fills `protocol_name` in every error answer
shows one class per row that answers an error; they have one cause. A family groups the classes of
one API by what differs: the same fields (`... differing in protocol_name`, whatever the error), or
the same expected -> actual error pair. Classes whose differing fields are not the same set, or
whose error pairs differ, are never merged.
"""

from __future__ import annotations

from typing import Any

from fuzz.judge import differing_fields


def _pairs(api: str, shape: str) -> tuple[str, frozenset[str]]:
    """A class's family handles: for a field difference its one key; for an error difference one
    key per expected -> actual error pair (`expected A/B actual C`: A -> C and B -> C)."""
    fields = differing_fields(shape)
    if fields:
        return "fields", frozenset({f"{api}|fields:{','.join(sorted(fields))}"})
    head = shape.partition(" differing in ")[0]
    expected, _, actual = head.removeprefix("expected ").partition(" actual ")
    return "errors", frozenset(f"{api}|errors:{e}->{actual}" for e in expected.split("/"))


def families(classes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's classes (dicts with `class`, `api`, `count`, `steps`, `scenario`, ...) grouped
    into families, the family with the most findings first; each names its rows and one example:
    the class of the family with the shortest shrunk sequence. Classes of one API with the same
    differing fields are one family; classes of one API that share an expected -> actual error
    pair are one family (transitively)."""
    parent = list(range(len(classes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    handles: list[frozenset[str]] = []
    for i, c in enumerate(classes):
        api, _, rest = str(c["class"]).partition("|")
        _, keys = _pairs(api, rest.partition("|")[2])
        handles.append(keys)
        for k in keys:
            if k in owner:
                parent[root(i)] = root(owner[k])
            else:
                owner[k] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(classes)):
        groups.setdefault(root(i), []).append(i)
    out: list[dict[str, Any]] = []
    for members in groups.values():
        mine = [classes[i] for i in members]
        common = frozenset.intersection(*(handles[i] for i in members))
        names = sorted(common or frozenset.union(*(handles[i] for i in members)))
        api = names[0].split("|")[0]
        what = "; ".join(k.split("|", 1)[1].replace("fields:", "field ").replace("errors:", "error ")
                         .replace("->", " -> ") for k in names)
        example = min(mine, key=lambda c: (len(c.get("steps", [])), -int(c.get("count", 0))))
        out.append({
            "family": " ; ".join(names), "keys": names, "api": api, "differs": what,
            "classes": [c["class"] for c in mine],
            "rows": sorted({str(c["class"]).split("|")[1] for c in mine}),
            "count": sum(int(c.get("count", 0)) for c in mine),
            "example": {"class": example["class"], "steps": example.get("steps", []),
                        "scenario": example.get("scenario"),
                        "scenario_check": example.get("scenario_check", ""),
                        "expected": example.get("expected", []), "actual": example.get("actual")},
        })
    out.sort(key=lambda f: (-int(f["count"]), str(f["family"])))
    return out


__all__ = ["families"]
