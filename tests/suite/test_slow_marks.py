"""The slow list in tests/conftest.py stays true: every entry names an existing test file, and a test
function defined there (a renamed or deleted test would otherwise silently become fast again, or the
entry would rot). Also: the rule marks what it should, and only that."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent.parent


def _conftest() -> ModuleType:
    """tests/conftest.py, loaded by path (its folder is not on sys.path: see the conftest)."""
    spec = importlib.util.spec_from_file_location("groupspec_tests_conftest", ROOT / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CONFTEST = _conftest()
SLOW: dict[str, str] = _CONFTEST.SLOW
SLOW_MARKERS: dict[str, str] = _CONFTEST.SLOW_MARKERS
slow_reason: Callable[[str, set[str]], Optional[str]] = _CONFTEST.slow_reason


def stale_entries(entries: list[str], root: Path) -> list[str]:
    """The entries whose file does not exist or does not define the named test function."""
    stale = []
    for entry in entries:
        path, _, rest = entry.partition("::")
        file = root / path
        if not file.is_file() or not file.name.startswith("test_"):
            stale.append(entry)
            continue
        if not rest:
            continue
        function = rest.split("[")[0]
        names = {n.name for n in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if function not in names:
            stale.append(entry)
    return stale


def test_every_slow_entry_names_an_existing_test() -> None:
    assert SLOW and SLOW_MARKERS
    assert stale_entries(list(SLOW), ROOT) == []
    assert all(len(why) > 10 for why in SLOW.values())


def test_a_stale_entry_is_found() -> None:
    # Negative control: a missing file, a missing function and a non-test file are each reported.
    entries = ["tests/proofs/test_no_such_file.py",
               "tests/check/test_explore.py::test_no_such_function[x]",
               "tests/conftest.py",
               "tests/check/test_explore.py::test_default_plan_covers_every_row_or_says_why_not"]
    assert stale_entries(entries, ROOT) == entries[:3]


def test_the_rule_marks_files_functions_cases_and_markers_only() -> None:
    explore = "tests/check/test_explore.py::"
    assert slow_reason("tests/proofs/test_proofs_bmc.py::test_anything[p]", set()) is not None
    assert slow_reason("tests/diff/test_diff.py::test_every_mutant_differs_with_a_verified_scenario[a-b]",
                       set()) is not None
    assert slow_reason(explore + "test_each_mutant_table_is_caught_with_a_counterexample[no-delayed-sync]",
                       set()) is not None
    assert slow_reason(explore + "test_each_mutant_table_is_caught_with_a_counterexample[stable-sync-stores]",
                       set()) is None
    assert slow_reason("tests/proofs/test_proofs_bmc_extra.py::test_x", set()) is None  # a prefix is not a file
    assert slow_reason("tests/model/test_table.py::test_x", {"spark"}) is not None
    assert slow_reason("tests/model/test_table.py::test_x", {"parametrize"}) is None
