"""Hypothesis differential test of single steps: from random reachable worlds (random walks under
random bounds), every successor the native engine computes (fault flag, rows fired, the input's
reply, every output, the next group and clients, compared as Python reprs) equals the one
check.abstract computes through model.step, in the same order."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_helpers import first_difference, make
from check.abstract import FAULTS, Bounds
from model.table import CLASSIC_TABLE, URGENT


@st.composite
def bounds(draw: st.DrawFn) -> Bounds:
    mode = draw(st.sampled_from(["closed", "open"]))
    static = draw(st.integers(0, 2))
    dynamic = draw(st.integers(0 if static else 1, 3 if mode == "closed" else 2))
    faults = frozenset(draw(st.sets(st.sampled_from(FAULTS))))
    return Bounds(dynamic=dynamic, static=static, max_generation=draw(st.integers(0, 3)),
                  faults=faults, mode=mode,
                  require_known_member_id=draw(st.booleans()),
                  max_ids_per_client=draw(st.integers(1, 2)),
                  group_max_size=draw(st.sampled_from([1, 2, 1 << 30])),
                  metadata_changes=draw(st.booleans()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b=bounds(), picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=40))
def test_native_successors_equal_model_step(b: Bounds, picks: list[int]) -> None:
    model, engine = make(CLASSIC_TABLE, URGENT, b)
    world, packed = model.initial(), engine.initial()
    for pick in picks:
        diff, py, native = first_difference(model, engine, world, packed)
        assert diff is None, f"{b.describe()}: {diff}"
        if not py:
            return
        k = pick % len(py)
        world, packed = py[k].world, native[k]
