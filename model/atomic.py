"""Atomic file writes for every report a command writes: a reader sees the old file or the whole new
one, never a part. The temporary file is a hidden sibling named `.NAME.tmp-PID-*`, deleted when the
write fails or is interrupted (only a SIGKILL can leave it, and its name says it is not output)."""

from __future__ import annotations

import os
import tempfile

from model.errors import BadInput


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
    """Write `text` to `path` through a temporary sibling and os.replace."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = _temp_sibling(directory, path)
    except OSError as e:
        raise BadInput(f"cannot write {path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        _unlink(tmp)
        raise BadInput(f"cannot write {path}: {e.strerror}") from None
    except BaseException:
        _unlink(tmp)
        raise


def _temp_sibling(directory: str, path: str) -> tuple[int, str]:
    return tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.tmp-{os.getpid()}-")


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
