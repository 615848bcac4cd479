"""The lockstep diff on the native engine (engine/src/lockstep.rs, check/native_diff.py) finds the
same differences as the Python lockstep (check/diff.py, the reference): on every mutant and every
historical bug (those with their own effects through the Python callbacks) against Kafka's table,
at a closed-mode and an open-mode bound, both agree on whether there is a difference, on the depth
of the first one, on the differences' signatures, and on the lockstep states, edges and rows fired.
Kafka's table against itself shows nothing on both; a native difference the Python lockstep does
not confirm is an EngineDisagreement (the negative control of the replay)."""

from __future__ import annotations

from typing import Optional

import pytest

from check.abstract import Bounds
from check.diff import DiffReport, Lockstep, Side, explore_diff, explore_diff_python
from check.historical import HISTORICAL
from check.mutants import MUTANTS
from check.native import EngineDisagreement
from check.native_diff import FoundData, _Replay, explore_diff_native, run_diff
from model.dsl import Table
from model.table import CLASSIC_TABLE, URGENT

F = frozenset
BOUNDS = {
    "closed": Bounds(dynamic=2, max_generation=1, faults=F({"session", "rebalance"})),
    "open": Bounds(dynamic=1, max_generation=1, mode="open", max_ids_per_client=1,
                   faults=F({"session", "rebalance"})),
}
KAFKA = Side("kafka-3.9", CLASSIC_TABLE, URGENT)
TABLES: dict[str, Table] = {**{n: t for n, (t, _, _) in MUTANTS.items()},
                            **{n: b.table for n, b in HISTORICAL.items()}}


def _summary(r: DiffReport) -> tuple[object, ...]:
    first: Optional[int] = min((d.depth for d in r.differences), default=None)
    return (first, r.total_differences, sorted(str(d.signature()) for d in r.differences),
            r.nodes, r.edges, r.depth, r.frontier, r.complete, r.rows_fired)


def _both(a: Side, b: Side, bounds: Bounds) -> tuple[DiffReport, DiffReport]:
    options = dict(progress=None, max_differences=100)
    return (explore_diff_python(a, b, bounds, **options),  # type: ignore[arg-type]
            explore_diff_native(a, b, bounds, **options))  # type: ignore[arg-type]


def _assert_agreement(name: str, bound: str) -> None:
    py, native = _both(Side(name, TABLES[name], URGENT), KAFKA, BOUNDS[bound])
    assert _summary(native) == _summary(py)
    for d in native.differences:  # each is a check/diff.py Difference Python confirmed
        assert len(d.inputs) + 1 == d.depth and (d.shown_by, d.shown) in d.alternatives


@pytest.mark.parametrize("bound", sorted(BOUNDS))
@pytest.mark.parametrize("name", sorted(TABLES))
def test_native_and_python_lockstep_find_the_same_differences(name: str, bound: str) -> None:
    _assert_agreement(name, bound)


@pytest.mark.parametrize("name", ["no-generation-bump", "second-delayed-join", "KAFKA_8500",
                                  "KAFKA_8220"])
def test_agreement_on_a_sample(name: str) -> None:
    """The fast loop's share of the sweep above (two historical bugs with their own effects)."""
    _assert_agreement(name, "closed")


@pytest.mark.parametrize("bound", sorted(BOUNDS))
def test_kafka_against_itself_shows_no_difference_on_both(bound: str) -> None:
    py, native = _both(KAFKA, Side("kafka-again", CLASSIC_TABLE, URGENT), BOUNDS[bound])
    assert py.total_differences == native.total_differences == 0
    assert native.complete and native.nodes == py.nodes > 1


def test_a_mutant_is_found_natively_in_both_directions_and_one_sided() -> None:
    """The negative control of the comparison: a different answer must be reported."""
    mutant = Side("no-generation-bump", MUTANTS["no-generation-bump"][0], URGENT)
    bounds = BOUNDS["closed"]
    for a, b in ((mutant, KAFKA), (KAFKA, mutant)):
        r = explore_diff_native(a, b, bounds, progress=None)
        assert r.differences and r.differences[0].depth == 3
    one = explore_diff_native(mutant, KAFKA, bounds, progress=None, one_sided=True)
    assert one.differences and all(d.shown_by == "A" for d in one.differences)
    assert run_diff("python", mutant, KAFKA, bounds, progress=None).total_differences == \
        run_diff("native", mutant, KAFKA, bounds, progress=None).total_differences > 0
    assert explore_diff(mutant, KAFKA, bounds, progress=None).total_differences == \
        explore_diff(mutant, KAFKA, bounds, engine="python", progress=None).total_differences


def test_a_difference_python_does_not_confirm_is_an_engine_disagreement() -> None:
    """Replay is the check of the native answer: a doctored observation fails loudly."""
    mutant = Side("no-generation-bump", MUTANTS["no-generation-bump"][0], URGENT)
    bounds = BOUNDS["closed"]
    items: list[FoundData] = []
    from check.native import engine_module, make_engine
    ea, _ = make_engine(mutant.table, mutant.urgent, bounds)
    eb, _ = make_engine(KAFKA.table, KAFKA.urgent, bounds)

    def keep(found: list[FoundData], finished: bool) -> bool:
        items.extend(found)
        return True

    engine_module().lockstep(ea, eb, False, None, keep, False)
    assert items
    replay = _Replay(Lockstep(mutant, KAFKA, bounds), False)
    replay.difference(items[0])  # the genuine one is confirmed
    depth, path, action, side, shown = items[0]
    doctored = [(who, "text", "an answer no table gives") for who, _, _ in shown]
    with pytest.raises(EngineDisagreement):
        replay.difference((depth, path, action, side, doctored))
    with pytest.raises(EngineDisagreement):  # an input Python never offers there
        replay.difference((depth, path, ("crash", 7, None, None, False), side, shown))


def test_a_diff_the_engine_cannot_take_falls_back_to_python_with_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    too_many = Bounds(dynamic=10, max_generation=1, faults=F({"session"}))  # the engine holds 9
    r = explore_diff(KAFKA, Side("again", CLASSIC_TABLE, URGENT), too_many, max_nodes=5,
                     progress=None)
    assert r.nodes >= 5 and not r.complete
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "using the Python lockstep (--engine python)" in err[0]
