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


def family_of(api: str, shape: str) -> tuple[str, str]:
    """(family key, what differs, in words) of a class of `api` with this shape."""
    fields = differing_fields(shape)
    if fields:
        what = "field " + ", ".join(sorted(fields)) if fields != {"member ids"} else "member ids"
        return f"{api}|fields:{','.join(sorted(fields))}", what
    head = shape.partition(" differing in ")[0]
    expected, _, actual = head.removeprefix("expected ").partition(" actual ")
    return f"{api}|errors:{expected}->{actual}", f"error {expected} -> {actual}"


def families(classes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's classes (dicts with `class`, `api`, `count`, `steps`, `scenario`, ...) grouped
    into families, the family with the most findings first; each names its rows and one example:
    the class of the family with the shortest shrunk sequence."""
    groups: dict[str, list[dict[str, Any]]] = {}
    whats: dict[str, str] = {}
    for c in classes:
        api, _, rest = str(c["class"]).partition("|")
        _, _, shape = rest.partition("|")
        key, what = family_of(api, shape)
        groups.setdefault(key, []).append(c)
        whats[key] = what
    out: list[dict[str, Any]] = []
    for key, members in groups.items():
        example = min(members, key=lambda c: (len(c.get("steps", [])), -int(c.get("count", 0))))
        rows = sorted({str(c["class"]).split("|")[1] for c in members})
        out.append({
            "family": key, "api": key.split("|")[0], "differs": whats[key],
            "classes": [c["class"] for c in members], "rows": rows,
            "count": sum(int(c.get("count", 0)) for c in members),
            "example": {"class": example["class"], "steps": example.get("steps", []),
                        "scenario": example.get("scenario"),
                        "scenario_check": example.get("scenario_check", ""),
                        "expected": example.get("expected", []), "actual": example.get("actual")},
        })
    out.sort(key=lambda f: (-int(f["count"]), str(f["family"])))
    return out


__all__ = ["families", "family_of"]
