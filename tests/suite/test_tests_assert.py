"""Every test asserts: each `test_*` function in tests/**/test_*.py contains an `assert`, a
`pytest.raises`/`pytest.warns`/`pytest.fail`, or a call to a helper whose name says it asserts.

Helper names believed:
- `assert...` (leading underscores allowed): `self.assertEqual`, pyspark's `assertDataFrameEqual`,
  `_assert_replays`; no product function is called so;
- `check_...` and `expect_...` only when the helper is defined under tests/ and keeps its word: it
  asserts, raises or calls another such helper itself. Product code has many `check_*` functions
  that return a verdict (`check_state`, `check_wellformed`, ...); calling one without looking at the
  verdict asserts nothing, so those names do not count.
Every function under tests/ whose name says it asserts must keep its word (second test below).
A nested function's asserts count for the test that defines it (the test is expected to call it).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
# `check_...`/`expect_...` need the underscore: a bare `check` or `expect` is as often a noun here (a
# validator callback, a scenario step's expectations) as a promise to assert.
ASSERTING_NAME = re.compile(r"_*(assert(_|[A-Z]|$)|check_|expect_)")
ASSERT_NAME = re.compile(r"_*assert(_|[A-Z]|$)")
PYTEST_ASSERTIONS = frozenset({"raises", "warns", "fail"})

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _asserts(node: ast.AST, helpers: frozenset[str], raising_counts: bool = False) -> bool:
    """Whether the node holds an assert, a pytest assertion, or a call of an asserting helper."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert) or (raising_counts and isinstance(sub, ast.Raise)):
            return True
        if not isinstance(sub, ast.Call):
            continue
        name = _called_name(sub)
        if name is None:
            continue
        if ASSERT_NAME.match(name) or name in helpers:
            return True
        func = sub.func
        if (isinstance(func, ast.Attribute) and name in PYTEST_ASSERTIONS
                and isinstance(func.value, ast.Name) and func.value.id == "pytest"):
            return True
    return False


def _functions(source: str, filename: str) -> list[Function]:
    tree = ast.parse(source, filename)
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return sorted(found, key=lambda n: n.lineno)


def asserting_helpers(functions: Iterable[Function]) -> tuple[frozenset[str], list[Function]]:
    """The helpers whose name says they assert and that do (to a fixed point, since helpers call
    helpers), and those whose name says so but that do not."""
    named = [f for f in functions if ASSERTING_NAME.match(f.name) and not f.name.startswith("test")]
    kept: frozenset[str] = frozenset()
    while True:
        now = frozenset(f.name for f in named if _asserts(f, kept, raising_counts=True))
        if now == kept:
            break
        kept = now
    return kept, [f for f in named if f.name not in kept]


def unasserted_tests(source: str, filename: str = "<snippet>",
                          helpers: frozenset[str] = frozenset()) -> list[str]:
    """`file:line name` of every test function in the source that asserts nothing. `helpers`: the
    asserting helpers defined elsewhere; those defined in the source itself are found here."""
    functions = _functions(source, filename)
    known = helpers | asserting_helpers(functions)[0]
    return [f"{filename}:{f.lineno} {f.name}" for f in functions
            if f.name.startswith("test") and not _asserts(f, known)]


def helpers_that_do_not_assert(source: str, filename: str = "<snippet>") -> list[str]:
    """`file:line name` of every function named as asserting (`check_...`) that neither asserts nor raises."""
    return [f"{filename}:{f.lineno} {f.name}" for f in asserting_helpers(_functions(source, filename))[1]]


def _sources(pattern: str) -> list[tuple[str, str]]:
    return [(os.path.relpath(p, TESTS), p.read_text(encoding="utf-8")) for p in sorted(TESTS.rglob(pattern))]


def test_every_test_asserts() -> None:
    files = _sources("test_*.py")
    assert len(files) > 50, [name for name, _ in files]  # the scan sees the suite
    helpers, _ = asserting_helpers(f for name, text in _sources("*.py") for f in _functions(text, name))
    flagged = [entry for name, text in files for entry in unasserted_tests(text, name, helpers)]
    assert not flagged, "tests that assert nothing:\n" + "\n".join(flagged)


def test_helpers_named_to_assert_do_assert() -> None:
    flagged = [entry for name, text in _sources("*.py") for entry in helpers_that_do_not_assert(text, name)]
    assert not flagged, "helpers whose name says they assert, that do not:\n" + "\n".join(flagged)


ASSERT_FREE = '''
import pytest
from model.invariants import check_state

def helper(x):
    return x

def check_total(xs):
    return sum(xs)

def test_runs_only():
    helper(1)

class TestGroup:
    def test_method_runs_only(self):
        self.helper(2)

def test_skip_is_not_an_assertion():
    pytest.skip("later")

def test_a_product_check_whose_verdict_is_dropped(g):
    check_state(g)

def test_a_helper_that_only_claims_to_check():
    check_total([1, 2])
'''

ASSERTING = '''
import pytest

def check_round_trip(x):
    assert x == x

def _expect_error(x):
    if x is None:
        raise AssertionError("no error")

def expect_closed(x):
    check_round_trip(x)

def test_plain_assert():
    assert 1 + 1 == 2

def test_raises():
    with pytest.raises(ValueError):
        int("x")

def test_fail():
    pytest.fail("always")

def test_helper_names():
    check_round_trip(1)
    _assert_report_ok(2)

def test_a_helper_that_raises():
    _expect_error(3)

def test_a_helper_that_calls_a_helper():
    expect_closed(3)

class TestGroup:
    def test_unittest_style(self):
        self.assertEqual(1, 1)

def test_nested_helper():
    def check(x):
        assert x
    check(1)
'''


def test_the_scan_flags_tests_that_assert_nothing() -> None:
    # Negative control: code that only runs, a method, a skip, a product check whose verdict is
    # dropped, and a helper named `check_` that does not assert are each flagged.
    assert [e.split(" ")[1] for e in unasserted_tests(ASSERT_FREE)] == [
        "test_runs_only", "test_method_runs_only", "test_skip_is_not_an_assertion",
        "test_a_product_check_whose_verdict_is_dropped", "test_a_helper_that_only_claims_to_check",
    ]


def test_the_scan_flags_helpers_that_only_claim_to_assert() -> None:
    assert [e.split(" ")[1] for e in helpers_that_do_not_assert(ASSERT_FREE)] == ["check_total"]
    assert helpers_that_do_not_assert(ASSERTING) == []


def test_the_scan_accepts_each_kind_of_assertion() -> None:
    assert unasserted_tests(ASSERTING) == []


@pytest.mark.parametrize("name", ["checkpoint", "expected", "asserted_value", "check", "_expect", "run"])
def test_names_that_do_not_say_they_assert(name: str) -> None:
    assert unasserted_tests(f"def {name}(x):\n    assert x\n\ndef test_x():\n    {name}(1)\n") != []
