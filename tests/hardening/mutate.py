"""Hypothesis strategies that damage valid inputs the way real files and peers get damaged.

Text/byte level: truncate, flip a byte, insert bytes that are not UTF-8, delete, duplicate or swap
lines. JSON level: replace one value anywhere in a document by a wrong type, a huge or negative
number, a lone surrogate, a very long string or a value nested 2,000 deep; duplicate a key.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from hypothesis import strategies as st

# Values that break a boundary: wrong types, numbers beyond int32/int64, unicode that UTF-8 refuses.
NASTY_VALUES: list[Any] = [
    None, True, False, 0, -1, -2 ** 31 - 1, 2 ** 31, 2 ** 63, -2 ** 63 - 1, 10 ** 23, 1.5, float("inf"),
    "", "\udcff", "\x00", "\U0010ffff", "x" * 5000, "$", "$undefined", [], {}, [1, "a", None], {"": None},
]
NASTY_BYTES: list[bytes] = [b"\xff", b"\xed\xa0\x80", b"\xc3", b"\x00", b"\r", b"\n", b"\\u", b'"', b"{", b"]"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(value)]


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=True, ensure_ascii=True)


@st.composite
def mutated_json_text(draw: st.DrawFn, document: Any) -> str:
    """`document` (parsed JSON) with one value replaced, or one key duplicated, as JSON text."""
    kind = draw(st.sampled_from(["value", "value", "deep", "duplicate-key"]))
    paths = _paths(document)
    path = draw(st.sampled_from(paths))
    if kind == "deep":
        return _dumps(_replace(document, path, "@DEEP@")).replace('"@DEEP@"', "[" * 2000 + "]" * 2000)
    if kind == "duplicate-key":
        objects = [p for p in paths if isinstance(_get(document, p), dict) and _get(document, p)]
        if objects:
            p = draw(st.sampled_from(objects))
            obj = _get(document, p)
            key = draw(st.sampled_from(sorted(obj)))
            marker = {"@DUP@": None, **obj}
            text = _dumps(_replace(document, p, marker))
            return text.replace('"@DUP@": null', f'{json.dumps(key)}: {_dumps(draw(st.sampled_from(NASTY_VALUES)))}')
    return _dumps(_replace(document, path, draw(st.sampled_from(NASTY_VALUES))))


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        value = value[p]
    return value


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """One byte-level damage: truncate, flip a byte, insert bytes that are not UTF-8, delete a span."""
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
    n = len(data)
    at = draw(st.integers(0, max(n - 1, 0)))
    if kind == "truncate":
        return data[:at]
    if kind == "flip" and n:
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    if kind == "insert":
        return data[:at] + draw(st.sampled_from(NASTY_BYTES)) + data[at:]
    span = draw(st.integers(1, 64))
    return data[:at] + data[at + span:]


@st.composite
def mutated_lines(draw: st.DrawFn, lines: list[str], row_json: bool) -> bytes:
    """A line-oriented file damaged 1-3 times: line-level (delete, duplicate, swap, one JSON value
    replaced when the lines are JSON) or byte-level anywhere in the file."""
    lines = list(lines)
    data: bytes | None = None
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["bytes", "delete", "duplicate", "swap", "json"] if row_json
                                    else ["bytes", "delete", "duplicate", "swap"]))
        if data is not None or kind == "bytes":
            data = data if data is not None else "".join(x + "\n" for x in lines).encode("utf-8")
            data = draw(mutated_bytes(data))
            continue
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        if kind == "delete" and len(lines) > 1:
            del lines[i]
        elif kind == "duplicate":
            lines.insert(j, lines[i])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "json":
            lines[i] = draw(mutated_json_text(json.loads(lines[i])))
    if data is None:
        data = "".join(x + "\n" for x in lines).encode("utf-8", "surrogatepass")
    return data


Mutation = Callable[[bytes], bytes]
