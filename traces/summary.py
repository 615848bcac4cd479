"""The job's counts, their check (nothing lost), and its last line of output."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


class CountMismatch(RuntimeError):
    """Input rows != replayed + rejected + ignored: some rows were lost or counted twice."""


@dataclass(frozen=True, slots=True)
class Counts:
    rows: int  # input rows (lines or records), counted independently of the pipeline
    replayed: int  # events judged (sum of the verdicts' events)
    rejected: int
    ignored: int  # log lines of other loggers
    groups: int  # verdicts, not counting the cluster pseudo-group
    violations: int
    incomplete: int

    def check(self) -> None:
        if self.rows != self.replayed + self.rejected + self.ignored:
            raise CountMismatch(
                f"rows {self.rows} != replayed {self.replayed} + rejected {self.rejected} + ignored {self.ignored}"
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def detail_line(self) -> str:
        return f"ignored {self.ignored} (lines of other loggers), incomplete groups {self.incomplete}"

    def last_line(self) -> str:
        return (
            f"rows {self.rows}, replayed {self.replayed}, rejected {self.rejected}, "
            f"groups {self.groups}, violations {self.violations}"
        )
