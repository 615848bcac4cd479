"""The one writer of every file a command outputs: a reader sees the old output or the whole new one,
never a part.

A file (`write_text_atomic`, `write_bytes_atomic`) is written to a hidden sibling `.NAME.tmp-PID-*`
and renamed over NAME. A directory (`AtomicDirectory`) is built inside a hidden sibling directory
`.NAME.tmp-PID-*` and renamed to NAME in one step when it is complete; the files in it are created
with `AtomicDirectory.create` or, in a worker process that was handed a path inside it,
`open_staged`. Either temporary is deleted when the write fails or is interrupted; only a SIGKILL
can leave one behind, its name says it is not output, and the next write of the same NAME deletes
those whose PID is gone (`remove_leftovers`).

tests/hardening/test_one_writer.py scans the product packages: nothing else writes a file.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Optional, TypeVar, Union

from model.errors import BadInput

PathLike = Union[str, "os.PathLike[str]"]
_Directory = TypeVar("_Directory", bound="AtomicDirectory")

# .NAME.tmp-PID-SUFFIX (NAME may contain dots and dashes; SUFFIX is mkstemp's or a uuid's)
_STAGING = re.compile(r"\.(?P<name>.+)\.tmp-(?P<pid>\d+)-[A-Za-z0-9_]+\Z")


class OutputError(BadInput, ValueError):
    """The output path cannot be used (exists, not writable): exit 2."""


def check_writable(path: str, flag: str) -> None:
    """Before a long run: the report path can be written (else BadInput naming `flag`)."""
    if os.path.isdir(path):
        raise BadInput(f"{flag} {path}: is a directory, expected a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise BadInput(f"{flag} {path}: directory {parent} does not exist")
    try:  # a real probe: os.access says yes to root for /proc and read-only mounts
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(path)}.probe-{os.getpid()}-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BadInput(f"{flag} {path}: cannot write in {parent} ({e.strerror})") from None


def write_text_atomic(path: str, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary sibling and os.replace."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary sibling and os.replace."""
    final = Path(os.path.abspath(path))
    try:
        remove_leftovers(final)
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.tmp-{os.getpid()}-")
    except OSError as e:
        raise BadInput(f"cannot write {path}: {e.strerror}") from None
    try:
        os.fchmod(fd, _default_mode())  # mkstemp's 0600 would make reports and pages owner-only
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, final)
    except OSError as e:
        _unlink(tmp)
        raise BadInput(f"cannot write {path}: {e.strerror}") from None
    except BaseException:
        _unlink(tmp)
        raise


def _default_mode() -> int:
    """The mode open() gives a new file: 0666 less the process umask (read without changing it
    for good; os.umask has no read-only form)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class AtomicDirectory:
    """An output directory published whole: `with AtomicDirectory(final) as out:` builds it in a
    temporary sibling (`out.tmp`), `out.publish()` renames it to `final` (replacing an older one
    only with `overwrite`); leaving the block without publishing deletes the temporary."""

    def __init__(self, final: Path, overwrite: bool = False) -> None:
        self.final = final.resolve()
        self.overwrite = overwrite
        # The pid in the name lets a later run tell a killed run's leftovers from a live one's.
        self.tmp = self.final.parent / f".{self.final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._published = False

    def __enter__(self: _Directory) -> _Directory:
        if self.final.exists() and not self.overwrite:
            raise OutputError(f"{self.final}: output already exists (pass --overwrite to replace it)")
        try:
            self.final.parent.mkdir(parents=True, exist_ok=True)
            remove_leftovers(self.final)
            self.tmp.mkdir()
        except OSError as e:
            raise OutputError(f"{self.final}: cannot create output ({e.strerror})") from None
        return self

    def path(self, name: str) -> Path:
        """Where `name` goes inside the directory being built (for writers that take a path)."""
        return self.tmp / name

    def create(self, name: str, binary: bool = False) -> IO[Any]:
        """A new file `name` inside the directory being built, open for writing."""
        return open_staged(self.path(name), binary)

    def write(self, name: str, text: str) -> None:
        with self.create(name) as f:
            f.write(text)

    def publish(self) -> None:
        if self.final.exists():
            trash = self.final.parent / f".{self.final.name}.old-{os.getpid()}-{uuid.uuid4().hex[:12]}"
            os.rename(self.final, trash)
            os.rename(self.tmp, self.final)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(self.tmp, self.final)
        self._published = True

    def __exit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if not self._published:
            shutil.rmtree(self.tmp, ignore_errors=True)


def open_staged(path: PathLike, binary: bool = False) -> IO[Any]:
    """Create the file `path` for writing; it must lie inside an AtomicDirectory's temporary
    directory (a worker process is handed such paths), since a file anywhere else would be visible
    before it is complete."""
    p = Path(path)
    if not any(_STAGING.match(parent.name) for parent in p.parents):
        raise ValueError(f"{path}: not inside an atomic output directory being built")
    if binary:
        return open(p, "xb")
    return open(p, "x", encoding="utf-8")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers(final: Path) -> list[Path]:
    """Delete `.NAME.tmp-PID-*` / `.NAME.old-PID-*` siblings of `final` (files or directories) left
    by runs that were killed (their PID is gone, or an old-style name without one); those of a run
    still alive are kept. Returns what was deleted."""
    removed = []
    for kind in ("tmp", "old"):
        for path in final.parent.glob(f".{final.name}.{kind}-*"):
            pid_text = path.name[len(f".{final.name}.{kind}-"):].partition("-")[0]
            if pid_text.isdigit() and len(pid_text) <= 7 and _alive(int(pid_text)):
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                _unlink(str(path))
            removed.append(path)
    return removed


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
