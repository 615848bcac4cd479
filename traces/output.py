"""Atomic output directories: everything is written under a temporary sibling, then renamed.

A reader can trust an output directory iff it holds `_SUCCESS` (and `summary.json`): both are
written last, inside the temporary directory, before the single rename that publishes it. A job
that fails or is interrupted leaves at most a `.NAME.tmp-PID-*` sibling, never a directory named NAME;
one that is killed outright leaves it behind, and the next run to the same output deletes it (old-style
`.NAME.tmp-HEX` leftovers without a pid too).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any, Optional

from model.errors import BadInput


class OutputError(BadInput, ValueError):
    """The output path cannot be used (exists, not writable): exit 2."""


class AtomicOutput:
    def __init__(self, final: Path, overwrite: bool = False) -> None:
        self.final = final.resolve()
        self.overwrite = overwrite
        # The pid in the name lets a later run tell a killed run's leftovers from a live one's.
        self.tmp = self.final.parent / f".{self.final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._committed = False

    def __enter__(self) -> "AtomicOutput":
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
        return self.tmp / name

    def commit(self, summary: dict[str, Any]) -> None:
        (self.tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        (self.tmp / "_SUCCESS").write_text("")
        if self.final.exists():
            trash = self.final.parent / f".{self.final.name}.old-{os.getpid()}-{uuid.uuid4().hex[:12]}"
            os.rename(self.final, trash)
            os.rename(self.tmp, self.final)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(self.tmp, self.final)
        self._committed = True

    def __exit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if not self._committed:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers(final: Path) -> list[Path]:
    """Delete `.NAME.tmp-PID-*` / `.NAME.old-PID-*` siblings of `final` left by runs that were killed
    (their PID is gone); those of a run still alive are kept. Returns what was deleted."""
    removed = []
    for kind in ("tmp", "old"):
        for path in final.parent.glob(f".{final.name}.{kind}-*"):
            pid_text = path.name[len(f".{final.name}.{kind}-"):].partition("-")[0]
            live = pid_text.isdigit() and len(pid_text) <= 7 and _alive(int(pid_text))
            if live or not path.is_dir():
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def is_complete(directory: Path) -> bool:
    return (directory / "_SUCCESS").exists() and (directory / "summary.json").exists()
