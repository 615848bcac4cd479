"""An exception inside a user's own definition (a table written outside groupspec registering its
atom) is reported as the user's defect: one line naming the definition, its file and line and the
exception, exit 2, no traceback, on both engines; an exception in groupspec's own code stays an
internal error (the negative control)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from groupspec.user_code import PRODUCT, user_fault
from model.dsl import ATOMS

ROOT = Path(__file__).resolve().parents[2]

TABLE = '''
from dataclasses import replace

from model.dsl import Guard, Table, atom
from model.table import CLASSIC_TABLE


def _generation(inp):
    return inp.generation  # Input has no such field: the user's bug


@atom("users-generation-ok")
def _users_generation_ok(group, inp, settings):
    """The heartbeat's generation is the group's."""
    return _generation(inp) == group.generation


def _renamed(r):
    text = " & ".join(("" if l.positive else "!")
                      + ("users-generation-ok" if l.atom == "generation-matches" else l.atom)
                      for l in r.guard.literals)
    return replace(r, guard=Guard.parse(text))


TABLE = Table(name="users", events=CLASSIC_TABLE.events, rows=tuple(
    _renamed(r) if r.id in ("Stable/Heartbeat/ok", "Stable/Heartbeat/illegal-generation") else r
    for r in CLASSIC_TABLE.rows))
'''


@pytest.mark.parametrize("engine", ["native", "python"])
def test_a_users_atom_that_raises_is_named_in_one_line(tmp_path: Path, engine: str) -> None:
    (tmp_path / "users_table.py").write_text(TABLE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "groupspec.cli", "check", "--table", "users_table:TABLE",
                           "--members", "2", "--max-generation", "1", "--engine", engine],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    # the line of the helper that raised, inside the definition's file
    line = TABLE.splitlines().index("    return inp.generation  # Input has no such field: the user's bug") + 1
    assert last == (f"groupspec check: atom 'users-generation-ok' raised AttributeError: 'Input' object has "
                    f"no attribute 'generation' at {tmp_path / 'users_table.py'}:{line} "
                    "(a defect in that definition, not in groupspec)")


def test_groupspecs_own_atom_raising_is_not_the_users() -> None:  # negative control
    try:
        ATOMS["generation-matches"].fn(None, None, None)  # type: ignore[arg-type]
    except Exception as e:
        assert user_fault(e) is None
    else:
        raise AssertionError("the atom took None for a group")


def test_the_product_packages_are_pyprojects() -> None:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert sorted(PRODUCT) == sorted(doc["tool"]["mypy"]["packages"])
