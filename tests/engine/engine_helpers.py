"""Shared helpers of the native-engine tests: successor lists of both engines, side by side."""

from __future__ import annotations

from typing import Optional

from check.abstract import AbstractModel, Bounds, Client, Successor, World
from model.dsl import Guard, SpecDefect, Table
from groupspec_engine import Engine


def python_view(s: Successor) -> tuple[bool, Optional[list[str]], Optional[str], list[str], str,
                                        list[str]]:
    """A Python successor as the engine reports one: fault, rows, reply, outputs, group, clients."""
    t = s.transition
    return (s.fault, None if t is None else list(t.rows),
            None if t is None or t.reply is None else repr(t.reply),
            [] if t is None else [repr(o) for o in t.outputs], repr(s.world.group),
            [repr(c) for c in s.world.clients])


def first_difference(model: AbstractModel, engine: Engine, world: World,
                     packed: bytes) -> tuple[Optional[str], list[Successor], list[bytes]]:
    """Compares both engines' successors of one world: (a description of the first difference
    or None, the Python successors, the native packed successor worlds)."""
    try:
        py = model.successors(world)
    except SpecDefect as e:
        try:
            engine.successors(packed)
        except ValueError as ne:
            return (None if str(ne) == str(e) else f"defects differ: {e} / {ne}"), [], []
        return f"Python raised SpecDefect {e}, native did not", [], []
    native = engine.successors(packed)
    if len(py) != len(native):
        return f"{len(py)} Python successors, {len(native)} native", py, []
    for k, (p, n) in enumerate(zip(py, native)):
        if python_view(p) != tuple(n[1:]):
            for name, a, b in zip(("fault", "rows", "reply", "outputs", "group", "clients"),
                                  python_view(p), n[1:]):
                if a != b:
                    return f"successor {k} ({p.action}): {name}\n python {a}\n native {b}", py, []
    return None, py, [n[0] for n in native]


def clients_repr(clients: tuple[Client, ...]) -> list[str]:
    return [repr(c) for c in clients]


def make(table: Table, urgent: tuple[tuple[str, Guard], ...], bounds: Bounds) -> tuple[
        AbstractModel, Engine]:
    from check.native import make_engine
    return AbstractModel(table, urgent, bounds), make_engine(table, urgent, bounds)[0]
