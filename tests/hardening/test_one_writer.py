"""Every file a command writes goes through the one atomic writer (model/atomic.py).

A static scan of the product packages: outside model/atomic.py, no `open`/`os.fdopen` for writing,
no `os.open` with write flags, no `os.replace`/`os.rename`/`shutil.move`, no
`tempfile.mkstemp`/`NamedTemporaryFile`, no `.write_text`/`.write_bytes`. The few writes that are not
command output are listed in ALLOWED, each with its reason. The scan sees calls as written: a mode
passed in a variable counts as writing; an `.open(...)` method of an unknown object counts only
with a literal write mode (`Path.open("w")`).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from model.atomic import AtomicDirectory, open_staged, remove_leftovers, write_text_atomic
from model.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("model", "check", "proofs", "reference", "wire", "traces", "conformance", "fuzz", "server",
           "render", "clients", "observe", "groupspec")
THE_WRITER = "model/atomic.py"

# (file, the call as written) -> why it is not command output
ALLOWED: dict[tuple[str, str], str] = {
    ("wire/kafka_broker.py", 'open(props, "w")'):
        "a test broker's server.properties, in the broker's own temporary directory: its input",
    ("wire/kafka_broker.py", 'open(self._log_path, "ab")'):
        "a test broker's stdout and stderr, appended while it runs, in its temporary directory",
}

_WRITE_FLAGS = frozenset({"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"})
_MOVES = frozenset({"os.replace", "os.rename", "os.renames", "shutil.move"})
_TEMPS = frozenset({"tempfile.mkstemp", "tempfile.NamedTemporaryFile", "mkstemp", "NamedTemporaryFile"})
_MODULE_OPENS = frozenset({"io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open"})


@dataclass(frozen=True)
class Write:
    path: str
    line: int
    call: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.call}"


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _writes_by_mode(mode: Optional[ast.expr], literal_only: bool) -> bool:
    if mode is None:
        return False  # the default mode reads
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(set(mode.value) & set("wax+"))
    return not literal_only


def _mode(call: ast.Call, position: int) -> Optional[ast.expr]:
    for k in call.keywords:
        if k.arg == "mode":
            return k.value
    return call.args[position] if len(call.args) > position else None


def _what(call: ast.Call) -> Optional[str]:
    """Why `call` writes a file, or None."""
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1]
    if name in ("open", "os.fdopen", "fdopen") or name in _MODULE_OPENS:
        return "opens a file for writing" if _writes_by_mode(_mode(call, 1), False) else None
    if name == "os.open":
        target = call.args[0] if call.args else None
        if target is not None and _dotted(target) == "os.devnull":
            return None
        flags = {n.attr for a in call.args[1:2] for n in ast.walk(a) if isinstance(n, ast.Attribute)}
        return "opens a file for writing" if flags & _WRITE_FLAGS else None
    if last == "open" and isinstance(call.func, ast.Attribute):  # Path.open(mode)
        return "opens a file for writing" if _writes_by_mode(_mode(call, 0), True) else None
    if name in _MOVES:
        return "renames a file into place"
    if name in _TEMPS:
        return "makes its own temporary file"
    if last in ("write_text", "write_bytes") and isinstance(call.func, ast.Attribute):
        return "writes a file in place"
    return None


def writes(source: str, path: str) -> list[Write]:
    """Every call in `source` that writes a file by itself."""
    out = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Call):
            what = _what(node)
            if what is not None:
                call = ast.get_source_segment(source, node) or _dotted(node.func)
                out.append(Write(path, node.lineno, call, what))
    return sorted(out, key=lambda w: w.line)


def product_writes() -> list[Write]:
    out: list[Write] = []
    for package in PRODUCT:
        for file in sorted((ROOT / package).rglob("*.py")):
            rel = file.relative_to(ROOT).as_posix()
            if rel != THE_WRITER:
                out += writes(file.read_text(encoding="utf-8"), rel)
    return out


def test_every_write_goes_through_the_one_writer() -> None:
    found = product_writes()
    stray = [str(w) for w in found if (w.path, w.call) not in ALLOWED]
    assert not stray, "write through model.atomic instead:\n" + "\n".join(stray)
    used = {(w.path, w.call) for w in found}
    assert set(ALLOWED) <= used, f"stale ALLOWED entries: {sorted(set(ALLOWED) - used)}"


def test_the_scan_flags_a_direct_write() -> None:
    # negative control: each way of writing a file directly is caught ...
    snippet = '''
import os, shutil, tempfile
from pathlib import Path
with open(report, "w") as f: f.write(text)
open(report, mode)
Path(report).write_text(text)
out.path("x").write_bytes(b"")
Path(report).open("a")
os.fdopen(fd, "wb")
os.open(report, os.O_WRONLY | os.O_CREAT)
os.replace(tmp, report)
os.rename(tmp, report)
shutil.move(tmp, report)
fd, tmp = tempfile.mkstemp(dir=".")
tempfile.NamedTemporaryFile("w", delete=False)
'''
    found = writes(snippet, "snippet.py")
    assert [w.line for w in found] == list(range(4, 16)), "\n".join(map(str, found))
    # ... and reading is not
    reads = '''
import os
open(path)
open(path, "rb")
open(path, encoding="utf-8", errors="replace")
await AsyncConnection.open(host, port, timeout_s)
os.open(os.devnull, os.O_WRONLY)
Path(path).read_text()
'''
    assert writes(reads, "reads.py") == []


def test_the_one_writer_replaces_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    write_text_atomic(str(target), "old\n")
    with pytest.raises(BadInput):
        write_text_atomic(str(tmp_path / "missing" / "report.json"), "x")
    assert target.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["report.json"]


def test_the_next_write_deletes_a_killed_writers_temporary_file(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".r.json.tmp-{dead.pid}-abc123"
    live = tmp_path / f".r.json.tmp-{os.getpid()}-def456"  # a write in progress: kept
    for p in (stale, live):
        p.write_text("partial")
    write_text_atomic(str(tmp_path / "r.json"), "{}\n")
    assert not stale.exists() and live.exists() and (tmp_path / "r.json").read_text() == "{}\n"
    assert remove_leftovers(tmp_path / "r.json") == []  # the live one stays


def test_staged_files_only_inside_a_directory_being_built(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        open_staged(tmp_path / "part-0.jsonl")
    with AtomicDirectory(tmp_path / "out") as out:
        with out.create("part-0.jsonl") as f:
            f.write("{}\n")
        with open_staged(out.path("part-1.parquet"), binary=True) as b:
            b.write(b"PAR1")
        assert not (tmp_path / "out").exists()
        out.publish()
    assert sorted(os.listdir(tmp_path / "out")) == ["part-0.jsonl", "part-1.parquet"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
