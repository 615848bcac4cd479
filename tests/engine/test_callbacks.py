"""The native engine runs a user's table: whatever atom, effect, reply form or invariant it has no
native version of is called back into the registered Python function (check/callbacks.py), counted,
and named in the run header. Both engines agree on such a table, counterexamples included; a value
the engine cannot hold makes the run use the Python explorer, saying why in one line; the CLI never
exits 70 on it. The slow path is itself checked against the fast one: with every one of the model's
names forced through Python, the native engine explores exactly what it does natively."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Iterator

import pytest
import user_table

from check.abstract import Bounds
from check.explore import Report, explore
from check.native import LAST_RUN, engine_header, explore_native, run_explorer
from check.plan import PYTHON_PLAN
from groupspec.cli import main
from model.dsl import ATOMS, EFFECTS, REPLY_FORMS, Ctx, Effect
from model.invariants import INVARIANTS
from model.state import evolve_member
from model.table import CLASSIC_TABLE, URGENT

SMALL = Bounds(dynamic=2, max_generation=1, faults=frozenset({"session", "rebalance"}))


def _summary(r: Report) -> tuple[object, ...]:
    return (r.states, r.edges, r.depth, r.frontier, r.rows_fired,
            [(v.invariant, v.message, v.trace) for v in r.violations], r.uncovered, r.cut_short,
            r.liveness_checked)


@pytest.fixture
def user_invariants(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, inv in user_table.INVARIANTS.items():
        monkeypatch.setitem(INVARIANTS, name, inv)
    yield


def test_the_header_names_what_goes_through_python(user_invariants: None) -> None:
    assert engine_header("native", user_table.TABLE, URGENT) == (
        "native engine, 1 atom, 1 effect, 1 reply form, 2 invariants through Python")
    assert engine_header("native", user_table.FIXED, URGENT) == (
        "native engine, 1 atom, 1 reply form, 2 invariants through Python")
    assert engine_header("native", CLASSIC_TABLE, URGENT, frozenset({"leader-is-member"})) == \
        "native engine"
    assert engine_header("python", user_table.TABLE, URGENT) == "Python engine"


@pytest.mark.parametrize("table", [user_table.TABLE, user_table.FIXED], ids=lambda t: t.name)
def test_both_engines_agree_on_a_user_table(user_invariants: None, table: object) -> None:
    from model.dsl import Table
    assert isinstance(table, Table)
    native = explore_native(table, URGENT, SMALL, progress=None)
    calls = LAST_RUN[0].through_python
    python = explore(table, URGENT, SMALL, progress=None)
    assert _summary(native) == _summary(python)
    found = {v.invariant for v in native.violations}
    if table is user_table.TABLE:  # the user's effect keeps a departed leader: both say so
        assert {"leader-known", "leader-is-member"} <= found
        assert "leave-always-answered" not in found
        assert calls["row PreparingRebalance/LeaveGroup/member-leaves-leader"] > 0
    else:
        assert found == set()
    assert calls["atom leaver-is-leader"] > 0
    assert calls["row Stable/Heartbeat/ok"] > 0  # the user's reply form
    assert calls["invariant leader-known"] == native.states
    assert calls["invariant leave-always-answered"] > 0


OPEN_SMALL = Bounds(dynamic=1, max_generation=1, mode="open", max_ids_per_client=1,
                    faults=frozenset({"session", "append"}))
FORCED = [PYTHON_PLAN[i] for i in (2, 4, 5, 6)] + [("open: a dynamic client, append failures",
                                                   OPEN_SMALL)]


@pytest.mark.parametrize("label,bounds", FORCED, ids=[label for label, _ in FORCED])
def test_every_name_forced_through_python_explores_what_the_engine_does(
        label: str, bounds: Bounds) -> None:
    """The slow path is exact: conversions both ways, choices, frame checks, replies."""
    force = list(ATOMS) + list(EFFECTS) + list(REPLY_FORMS) + list(INVARIANTS)
    cap = None if bounds.mode == "closed" else 300  # open mode: many inputs per state, slow here
    fast = explore_native(CLASSIC_TABLE, URGENT, bounds, progress=None, max_states=cap)
    slow = explore_native(CLASSIC_TABLE, URGENT, bounds, progress=None, force=force, max_states=cap)
    assert _summary(slow) == _summary(fast)
    assert sum(LAST_RUN[0].through_python.values()) > slow.edges


def test_a_forced_invariant_finds_the_same_counterexample() -> None:
    from check.mutants import MUTANTS
    table, invariant, _ = MUTANTS["no-generation-bump"]
    b = Bounds(dynamic=2, max_generation=2, faults=frozenset({"session", "rebalance", "crash", "stall"}))
    kw = dict(progress=None, stop_at_first_violation=True, max_states=60000)
    fast = explore_native(table, URGENT, b, **kw)  # type: ignore[arg-type]
    slow = explore_native(table, URGENT, b, force=[invariant], **kw)  # type: ignore[arg-type]
    assert fast.violations and _summary(slow) == _summary(fast)


def test_a_value_the_engine_cannot_hold_falls_back_to_python(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def assign_garbage(ctx: Ctx) -> None:
        m = ctx.group.members[0]
        ctx.group = ctx.group.with_member(evolve_member(m, assignment=b"xyz"))

    monkeypatch.setitem(EFFECTS, "assign-garbage", Effect(
        "assign-garbage", assign_garbage, frozenset({"members"}), False, "a test's effect"))
    from check.mutants import mutate
    row = CLASSIC_TABLE.row("Stable/Heartbeat/ok")
    table = mutate(CLASSIC_TABLE, "garbage", {row.id: {"effects": row.effects + ("assign-garbage",)}})
    b = Bounds(dynamic=1, max_generation=1, faults=frozenset({"session"}))
    got = run_explorer("native", table, URGENT, b, symmetry=True, invariants=None, liveness=True,
                       max_states=None, progress=io.StringIO(), stop_at_first_violation=False)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot run this table" in err and "b'xyz'" in err
    assert "using the Python explorer" in err
    assert got is not None
    assert _summary(got) == _summary(explore(table, URGENT, b, progress=None))


def test_the_cli_checks_a_user_table_natively(user_invariants: None,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bounds = ["--members", "2", "--max-generation", "1", "--faults", "session,rebalance", "--quiet"]
    assert main(["check", "--table", "user_table:TABLE", *bounds]) == 1
    out = capsys.readouterr().out
    assert "native engine, 1 atom, 1 effect, 1 reply form, 2 invariants through Python" in out
    assert "VIOLATION leader-known" in out
    assert main(["check", "--table", "user_table:FIXED", "--refines", "kafka-3.9", *bounds]) == 0


def test_an_exception_in_a_users_definition_is_raised_as_in_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: Ctx) -> None:
        raise KeyError("the user's bug")

    monkeypatch.setitem(EFFECTS, "broken", Effect("broken", broken, frozenset({"members"}), False,
                                                  "a test's effect"))
    from check.mutants import mutate
    row = CLASSIC_TABLE.row("Stable/Heartbeat/ok")
    table = mutate(CLASSIC_TABLE, "broken", {row.id: {"effects": row.effects + ("broken",)}})
    b = Bounds(dynamic=1, max_generation=1, faults=frozenset({"session"}))
    with pytest.raises(KeyError, match="the user's bug"):
        explore(table, URGENT, b, progress=None)
    with pytest.raises(KeyError, match="the user's bug"):
        explore_native(table, URGENT, b, progress=None)


def test_a_table_naming_what_nothing_defines_is_bad_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "moon_table.py").write_text(
        "from dataclasses import replace\n"
        "from model.dsl import Guard, Table\n"
        "from model.table import CLASSIC_TABLE\n"
        "TABLE = Table('moon', (replace(CLASSIC_TABLE.rows[0], guard=Guard.parse('owned & moon-is-full')),)"
        " + CLASSIC_TABLE.rows[1:], CLASSIC_TABLE.events)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "--table", "moon_table:TABLE", "--members", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "moon-is-full" in err and err.count("\n") == 1
