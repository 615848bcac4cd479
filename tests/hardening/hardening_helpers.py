"""Shared helpers of the hardening tests: run `groupspec` in this process and check the contract."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from groupspec.cli import main
from traces.generate import GeneratorOptions, model_factory, run_group

CONTRACT_CODES = frozenset({0, 1, 2, 3})


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run_cli(argv: Sequence[str]) -> Run:
    """`groupspec ARGV` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return Run(code, out.getvalue(), err.getvalue())


def assert_contract(run: Run, codes: frozenset[int] = CONTRACT_CODES) -> None:
    """An exit code of the contract and no traceback (a traceback means exit 70, a defect)."""
    assert "Traceback" not in run.err, run.err
    assert run.code in codes, (run.code, run.err[-2000:])
    if run.code == 2:
        assert run.err.strip(), "exit 2 without a message"


def tree_hash(path: Path) -> str:
    """A hash of every file under `path` (names and bytes): inputs must come out untouched."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        h.update(str(p.relative_to(path.parent)).encode("utf-8", "surrogateescape"))
        h.update(p.read_bytes())
    return h.hexdigest()


def trace_lines(groups: int = 2, steps: int = 25) -> list[str]:
    """A small valid trace (JSON Lines text lines), recorded from the model."""
    lines: list[str] = []
    for k in range(groups):
        for event in run_group(f"g{k}", str(k), GeneratorOptions(groups=1, steps=steps), model_factory,
                               frozenset(), "model"):
            lines.append(json.dumps({n: v for n, v in event.to_row().items() if v is not None},
                                    separators=(",", ":")))
    return lines


def leftovers(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if ".tmp" in n or ".old-" in n or ".probe" in n)
