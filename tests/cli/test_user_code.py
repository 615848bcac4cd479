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
from typing import Any

import pytest

from check.user_code import PRODUCT, user_fault
from model.dsl import ATOMS, Atom
from model.errors import BadInput

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


def groupspec(args: list[str], where: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "groupspec.cli", *args], capture_output=True, text=True,
                          env=env, cwd=where, timeout=900)


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the user's table module and a trace of 10 groups (heartbeats in Stable)."""
    where = tmp_path_factory.mktemp("users")
    (where / "users_table.py").write_text(TABLE)
    made = groupspec(["traces", "generate", "--groups", "10", "--seed", "3", "--out", "trace"], where)
    assert made.returncode == 0, made.stderr
    return where


@pytest.mark.parametrize("command", [
    ["check", "--members", "2", "--max-generation", "1", "--engine", "native"],
    ["check", "--members", "2", "--max-generation", "1", "--engine", "python"],
    ["replay", "--input", "trace/part-00000.jsonl", "--output", "out", "--local"],
    ["replay", "--input", "trace/part-00000.jsonl", "--output", "out", "--no-progress"],  # on Spark
], ids=["check-native", "check-python", "replay-local", "replay-spark"])
def test_a_users_atom_that_raises_is_named_in_one_line(users: Path, command: list[str]) -> None:
    done = groupspec([*command, "--table", "users_table:TABLE"], users)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert not (users / "out").exists()  # nothing published
    last = done.stderr.strip().splitlines()[-1]
    # the line of the helper that raised, inside the definition's file
    line = TABLE.splitlines().index("    return inp.generation  # Input has no such field: the user's bug") + 1
    assert last == (f"groupspec {command[0]}: atom 'users-generation-ok' raised AttributeError: 'Input' object "
                    f"has no attribute 'generation' at {users / 'users_table.py'}:{line} "
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


def test_prove_names_the_users_atom_it_cannot_encode(users: Path) -> None:
    done = groupspec(["prove", "--table", "users_table:TABLE"], users)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "groupspec prove: table users: the Z3 encoding cannot stand for atom 'users-generation-ok' (no Z3 "
        "encoding); groupspec prove covers tables built from groupspec's own atoms and effects (groupspec "
        "check explores any table)")


def _always(group: Any, inp: Any, settings: Any) -> bool:
    return True


def test_prove_refuses_an_atom_redefined_by_a_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoding of 'generation-matches' is of groupspec's definition: a user's redefinition under
    the same name is refused; groupspec's own table is not (the negative control)."""
    from model.table import CLASSIC_TABLE, URGENT
    from proofs.cli import refuse_unencoded

    refuse_unencoded(CLASSIC_TABLE, URGENT)
    monkeypatch.setitem(ATOMS, "generation-matches", Atom("generation-matches", _always, ""))
    with pytest.raises(BadInput, match=r"atom 'generation-matches' \(redefined in test_user_code; "):
        refuse_unencoded(CLASSIC_TABLE, URGENT)
