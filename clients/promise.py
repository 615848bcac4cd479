"""What a consumer group promises end to end, checked on the events its members printed.

Three checks, each a list of violations (counted and listed in reports):

- `unconsumed`: a record the broker acknowledged to a producer (a `produced` event) that no member
  of the group ever consumed (no `consumed` event with its key). At-least-once delivery.
- `double-ownership`: two members were assigned the same partition in the same generation
  (`assigned` events). A static member is one member across its restarts (its `instance_id`):
  a static member that comes back takes its assignment over in the same generation (KIP-345). The coordinator hands out one assignment per generation, chosen by one
  leader, so this means a broken generation (one that was not bumped, or two leaders in one).
- `commit-backwards`: a successful commit of a partition (`committed` events, across members) to an
  offset below one whose answer had come back before this commit was sent (`sent`, `t`). Commits of a fenced generation must be
  rejected, so a correct group only moves its committed offsets forward.

Duplicates (a record consumed more than once) are counted, not violations: at-least-once allows them.
"""

from __future__ import annotations

import bisect
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
        if e.ev == "assigned" and int(e["generation"]) >= 0:  # -1: the client did not say
            for p in e["partitions"]:
                instance = e.fields.get("instance_id")
                who = f"static member {instance}" if instance else f"{e.name} ({e['member_id']})"
                owners[(int(e["generation"]), int(p))].add(who)
    for (generation, partition), members in sorted(owners.items()):
        if len(members) > 1:
            violations.append(Violation("double-ownership", f"partition {partition} in generation {generation} "
                                                            f"was assigned to {', '.join(sorted(members))}"))
    commits = [e for e in ordered if e.ev == "committed"]
    violations += _backwards(commits)
    generations = tuple(sorted({g for g, _ in owners}))
    return Verdict(len(produced), len(consumed), sum(consumed.values()), generations, len(commits),
                   tuple(violations))


def _backwards(commits: list[Event]) -> list[Violation]:
    """Commits below a commit of the same partition that had succeeded before they were sent.

    A `committed` event is printed when the commit's answer came back (`t`); `sent` is when it was
    sent (events without it: `t`). Only a commit sent after another one's answer surely reached the
    broker after it, so only such pairs are compared (a member paused between the answer and its
    line must not make two commits look reordered)."""
    out: list[Violation] = []
    by_partition: dict[int, list[Event]] = defaultdict(list)
    for e in commits:  # in answer order
        by_partition[int(e["partition"])].append(e)
    for partition, cs in sorted(by_partition.items()):
        answered = [e.t for e in cs]
        best: list[Event] = []  # best[i]: the highest commit among cs[:i + 1]
        for e in cs:
            best.append(e if not best or int(e["offset"]) > int(best[-1]["offset"]) else best[-1])
        for e in cs:
            before = bisect.bisect_left(answered, float(e.fields.get("sent", e.t)))  # answered before e was sent
            if before == 0:
                continue
            top = best[before - 1]
            if int(e["offset"]) < int(top["offset"]):
                out.append(Violation("commit-backwards", f"partition {partition}: {e.name} committed {e['offset']} "
                                                         f"(generation {e['generation']}) after {top.name} had "
                                                         f"committed {top['offset']} (generation "
                                                         f"{top['generation']})"))
    return out
