"""Trace output directories, published whole by the one atomic writer (model.atomic.AtomicDirectory).

A reader can trust an output directory iff it holds `_SUCCESS` (and `summary.json`): both are
written last, inside the temporary directory, before the single rename that publishes it. A job
that fails or is interrupted leaves at most a `.NAME.tmp-PID-*` sibling, never a directory named NAME;
one that is killed outright leaves it behind, and the next run to the same output deletes it (old-style
`.NAME.tmp-HEX` leftovers without a pid too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from model.atomic import AtomicDirectory, OutputError, remove_leftovers


class AtomicOutput(AtomicDirectory):
    def commit(self, summary: dict[str, Any]) -> None:
        """Write `summary.json` and the `_SUCCESS` marker, then publish the directory."""
        self.write("summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
        self.write("_SUCCESS", "")
        self.publish()


def is_complete(directory: Path) -> bool:
    return (directory / "_SUCCESS").exists() and (directory / "summary.json").exists()


__all__ = ["AtomicOutput", "OutputError", "is_complete", "remove_leftovers"]
