"""The finite (bit-vector) representation used by BMC means the same as the unbounded (array)
one: every set and map operation agrees on random values, and BMC gives the same verdicts and
depths in both."""

from __future__ import annotations

from typing import Callable

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from check.mutants import MUTANTS
from model.table import URGENT
from proofs.bmc import bmc
from proofs.symbolic import (
    compl,
    diff,
    drop_mapped_to,
    id_val,
    inter,
    is_empty,
    mget,
    mput,
    put,
    sel,
    union,
)


def _set_terms(bits: frozenset[int], n: int) -> tuple[z3.ExprRef, z3.ExprRef]:
    """The same set in both representations."""
    arr: z3.ExprRef = z3.K(z3.IntSort(), z3.BoolVal(False))
    for k in bits:
        arr = z3.Store(arr, k, True)
    return z3.BitVecVal(sum(1 << k for k in bits), n), arr


def _map_terms(values: list[int], n: int) -> tuple[z3.ExprRef, z3.ExprRef]:
    arr: z3.ExprRef = z3.K(z3.IntSort(), z3.IntVal(0))
    for k, v in enumerate(values):
        arr = z3.Store(arr, k, v)
    return z3.BitVecVal(sum(v << (k * n) for k, v in enumerate(values)), n * n), arr


def _members(fin: z3.ExprRef, arr: z3.ExprRef, n: int) -> tuple[list[bool], list[bool]]:
    def ev(t: z3.ExprRef) -> bool:
        return bool(z3.is_true(z3.simplify(t)))
    return ([ev(sel(fin, id_val(k, n))) for k in range(n)],
            [ev(sel(arr, id_val(k, None))) for k in range(n)])


@st.composite
def _case(draw: st.DrawFn) -> tuple[int, frozenset[int], frozenset[int], list[int], int, int, bool]:
    n = draw(st.integers(1, 4))
    ids = st.integers(0, n - 1)
    a = draw(st.frozensets(ids))
    b = draw(st.frozensets(ids))
    m = draw(st.lists(ids, min_size=n, max_size=n))
    return n, a, b, m, draw(ids), draw(ids), draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(_case())
def test_set_and_map_operations_agree(case: tuple[int, frozenset[int], frozenset[int], list[int],
                                                  int, int, bool]) -> None:
    n, a, b, m, i, v, flag = case
    fa, aa = _set_terms(a, n)
    fb, ab = _set_terms(b, n)
    fm, am = _map_terms(m, n)
    fi, ai = id_val(i, n), id_val(i, None)
    ops: list[Callable[[z3.ExprRef, z3.ExprRef, z3.ExprRef, z3.ExprRef], z3.ExprRef]] = [
        lambda s, t, mp, j: union(s, t),
        lambda s, t, mp, j: inter(s, t),
        lambda s, t, mp, j: diff(s, t),
        lambda s, t, mp, j: inter(compl(s), t),
        lambda s, t, mp, j: put(s, j, flag),
        lambda s, t, mp, j: put(s, j, z3.BoolVal(flag)),
        lambda s, t, mp, j: drop_mapped_to(s, mp, t),
    ]
    for op in ops:
        got_f, got_a = _members(op(fa, fb, fm, fi), op(aa, ab, am, ai), n)
        assert got_f == got_a
    for sa, sb in ((fa, fb), (aa, ab)):
        solver = z3.Solver()  # array equality needs extensionality: ask a solver, not simplify
        solver.add(is_empty(inter(sa, sb)) != z3.BoolVal(not (a & b)))
        assert solver.check() == z3.unsat
    stored_f, stored_a = mput(fm, fi, id_val(v, n)), mput(am, ai, id_val(v, None))
    for k in range(n):
        want = v if k == i else m[k]
        assert z3.simplify(mget(stored_f, id_val(k, n))).as_long() == want
        assert z3.simplify(mget(stored_a, id_val(k, None))).as_long() == want


@pytest.mark.parametrize("mutant", ["second-delayed-join", "heartbeat-empty-accepted"])
def test_bmc_verdicts_agree_between_representations(mutant: str) -> None:
    table, invariant, _ = MUTANTS[mutant]
    (fin,) = bmc(table, URGENT, [invariant], depth=4, n_ids=2, finite=True)
    (arr,) = bmc(table, URGENT, [invariant], depth=4, n_ids=2, finite=False)
    assert fin.status == arr.status == "violated"
    assert fin.depth == arr.depth
