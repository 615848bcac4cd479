"""What a consumer group promises end to end, checked on the events its members printed.

Three checks, each a list of violations (counted and listed in reports):

- `unconsumed`: a record the broker acknowledged to a producer (a `produced` event) that no member
  of the group ever consumed (no `consumed` event with its key). At-least-once delivery.
- `double-ownership`: two members were assigned the same partition in the same generation
  (`assigned` events). A static member is one member across its restarts (its `instance_id`):
  a static member that comes back takes its assignment over in the same generation (KIP-345). The coordinator hands out one assignment per generation, chosen by one
  leader, so this means a broken generation (one that was not bumped, or two leaders in one).
- `commit-backwards`: a successful commit of a partition (`committed` events, in time order across
  members) to an offset below one committed before. Commits of a fenced generation must be
  rejected, so a correct group only moves its committed offsets forward.

Duplicates (a record consumed more than once) are counted, not violations: at-least-once allows them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Final, Iterable

from clients.events import Event

KINDS: Final = ("unconsumed", "double-ownership", "commit-backwards")


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class Verdict:
    produced: int  # records acknowledged to producers
    consumed: int  # distinct records consumed
    deliveries: int  # consumed events (duplicates included)
    generations: tuple[int, ...]  # generations in which some member got an assignment
    commits: int
    violations: tuple[Violation, ...]

    @property
    def duplicates(self) -> int:
        return self.deliveries - self.consumed

    def count(self, kind: str) -> int:
        return sum(1 for v in self.violations if v.kind == kind)


def check(events: Iterable[Event]) -> Verdict:
    ordered = sorted(events, key=lambda e: e.t)
    produced = {e["key"]: e for e in ordered if e.ev == "produced"}
    consumed = Counter(e["key"] for e in ordered if e.ev == "consumed")
    violations: list[Violation] = []
    for key, e in produced.items():
        if key not in consumed:
            violations.append(Violation("unconsumed", f"record {key} (partition {e['partition']}, offset "
                                                      f"{e['offset']}, produced by {e.name}) was never consumed"))
    owners: dict[tuple[int, int], set[str]] = defaultdict(set)
    for e in ordered:
        if e.ev == "assigned":
            for p in e["partitions"]:
                instance = e.fields.get("instance_id")
                who = f"static member {instance}" if instance else f"{e.name} ({e['member_id']})"
                owners[(int(e["generation"]), int(p))].add(who)
    for (generation, partition), members in sorted(owners.items()):
        if len(members) > 1:
            violations.append(Violation("double-ownership", f"partition {partition} in generation {generation} "
                                                            f"was assigned to {', '.join(sorted(members))}"))
    last: dict[int, tuple[int, Event]] = {}
    commits = 0
    for e in ordered:
        if e.ev != "committed":
            continue
        commits += 1
        partition, offset = int(e["partition"]), int(e["offset"])
        before = last.get(partition)
        if before is not None and offset < before[0]:
            violations.append(Violation("commit-backwards", f"partition {partition}: {e.name} committed {offset} "
                                                            f"(generation {e['generation']}) after {before[1].name} "
                                                            f"committed {before[0]} (generation "
                                                            f"{before[1]['generation']})"))
        if before is None or offset >= before[0]:
            last[partition] = (offset, e)
    generations = tuple(sorted({g for g, _ in owners}))
    return Verdict(len(produced), len(consumed), sum(consumed.values()), generations, commits, tuple(violations))
