"""The generated fast payload decoders (traces.codec) against the decoders that define the format:
same records for valid payloads, a failure wherever the defining decoder fails (so that
`record_from_json` falls back to it and reports its error)."""

from __future__ import annotations

import copy
import json
from typing import Any, Iterator

import pytest

from traces import codec
from traces_helpers import model_trace


def _payloads() -> list[dict[str, Any]]:
    out = []
    for seed in ("1", "2", "3"):
        for e in model_trace(f"g{seed}", seed, steps=60):
            if e.payload is not None and e.kind.value in ("request", "response"):
                out.append(json.loads(e.payload))
    return out


def _mutations(value: Any) -> Iterator[Any]:
    """Each value with one thing broken or changed somewhere inside it."""
    wrong: list[Any] = [None, True, 0, -1, "", "zz", "x-1", [], {}, [1, 2], 1.5]
    if isinstance(value, dict):
        for key in list(value):
            dropped = dict(value)
            del dropped[key]
            yield dropped
            for inner in list(_mutations(value[key])) + wrong:
                yield {**value, key: inner}
        yield {**value, "no_such_field": 1}
    elif isinstance(value, list):
        if value:
            yield value[:-1]
            yield value + value[-1:]
            for inner in list(_mutations(value[0])) + wrong:
                yield [inner] + value[1:]


def _outcome(decode: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", decode(value)
    except Exception as e:  # the fast decoders may fail with any exception
        return "fail", type(e).__name__


def test_fast_decoders_agree_on_recorded_payloads() -> None:
    payloads = _payloads()
    assert len({p["type"] for p in payloads}) >= 6
    for p in payloads:
        cls = codec.RECORD_TYPES[p["type"]]
        slow = codec._decoder_for(cls)(p)
        fast = codec._fast_for(cls)(p)
        assert fast == slow and type(fast) is type(slow) and hash(fast) == hash(slow)


def test_fast_decoders_fail_wherever_the_defining_decoders_fail() -> None:
    seen: set[str] = set()
    checked = 0
    for p in _payloads():
        if p["type"] in seen:
            continue
        seen.add(p["type"])
        cls = codec.RECORD_TYPES[p["type"]]
        for m in _mutations(copy.deepcopy(p)):
            slow = _outcome(codec._decoder_for(cls), m)
            fast = _outcome(codec._fast_for(cls), m)
            if slow[0] == "fail":
                assert fast[0] == "fail", (cls.__name__, m)
            else:
                assert fast == slow, (cls.__name__, m)
            checked += 1
    assert checked > 500


def test_record_from_json_reports_the_defining_decoders_error() -> None:
    value = {"type": "HeartbeatRequest", "group_id": "g", "member_id": "m", "generation_id": True}
    with pytest.raises(codec.PayloadError, match=r"payload\.generation_id: expected int, got bool"):
        codec.record_from_json(value)
