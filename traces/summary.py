"""The job's counts, their check (nothing lost), and its last line of output."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Final


class CountMismatch(RuntimeError):
    """Input rows != replayed + rejected + ignored + duplicates: some rows were lost or counted twice."""


@dataclass(frozen=True, slots=True)
class Counts:
    rows: int  # input rows (lines or records), counted independently of the pipeline
    replayed: int  # events judged (sum of the verdicts' events)
    rejected: int
    ignored: int  # log lines of other loggers
    groups: int  # verdicts, not counting the cluster pseudo-group
    violations: int
    incomplete: int
    duplicates: int = 0  # log lines repeated exactly (same timestamp and text): counted once, judged once

    def check(self) -> None:
        if self.rows != self.replayed + self.rejected + self.ignored + self.duplicates:
            raise CountMismatch(
                f"rows {self.rows} != replayed {self.replayed} + rejected {self.rejected} + ignored {self.ignored}"
                f" + duplicates {self.duplicates}"
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def detail_line(self) -> str:
        return f"ignored {self.ignored} (lines of other loggers), incomplete groups {self.incomplete}"

    def last_line(self) -> str:
        return (
            f"rows {self.rows}, replayed {self.replayed}, rejected {self.rejected}, ignored {self.ignored}, "
            f"duplicates {self.duplicates}, groups {self.groups}, violations {self.violations}"
        )


LAST_LINE: Final = re.compile(
    r"^rows (?P<rows>\d+), replayed (?P<replayed>\d+), rejected (?P<rejected>\d+), ignored (?P<ignored>\d+), "
    r"duplicates (?P<duplicates>\d+), groups (?P<groups>\d+), violations (?P<violations>\d+)$"
)


def parse_last_line(line: str) -> dict[str, int]:
    """The numbers of a printed last line (for tools and tests that read the output); ValueError if it is not one."""
    found = LAST_LINE.match(line.strip())
    if found is None:
        raise ValueError(f"not a replay summary line: {line!r}")
    return {k: int(v) for k, v in found.groupdict().items()}
