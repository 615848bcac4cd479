"""Atomic output directories: everything is written under a temporary sibling, then renamed.

A reader can trust an output directory iff it holds `_SUCCESS` (and `summary.json`): both are
written last, inside the temporary directory, before the single rename that publishes it. A job
that fails or is interrupted leaves at most a `.NAME.tmp-*` sibling, never a directory named NAME.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any, Optional


class OutputError(ValueError):
    """The output path cannot be used (exists, not writable): exit 2."""


class AtomicOutput:
    def __init__(self, final: Path, overwrite: bool = False) -> None:
        self.final = final.resolve()
        self.overwrite = overwrite
        self.tmp = self.final.parent / f".{self.final.name}.tmp-{uuid.uuid4().hex[:12]}"
        self._committed = False

    def __enter__(self) -> "AtomicOutput":
        if self.final.exists() and not self.overwrite:
            raise OutputError(f"{self.final}: output already exists (pass --overwrite to replace it)")
        try:
            self.final.parent.mkdir(parents=True, exist_ok=True)
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
            trash = self.final.parent / f".{self.final.name}.old-{uuid.uuid4().hex[:12]}"
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


def is_complete(directory: Path) -> bool:
    return (directory / "_SUCCESS").exists() and (directory / "summary.json").exists()
