"""Timing allowances: departures from the model's atomic timers that a target is known to make.

The judge (fuzz/judge.py) holds every target to the model's timers with a slack measured on the
target itself (the latency of the request being judged and of its neighbours). Some real brokers
do more than run late: Kafka 3.9 evaluates a session expiry after the request that re-armed the
member (two races of its purgatory, `benchmarks/fuzz_results.md`), and every Kafka removes an
Empty group without offsets at its periodic cleanup. Such a behaviour is an *allowance*: the judge
accepts it only when the target's profile holds it, or `--allow NAME` adds it, and the report names
every allowance in force.

A profile is chosen by the target: `kafka-3.9` and `kafka-4` (the brokers the fuzzer starts)
have their own; every other target (`serve`, `tansu`, `kafka://HOST:PORT`) is judged `strict`.
A profile also names the transition table the target is judged by (`judged_table`: kafka-4's,
check/profile_kafka4.py, for Kafka 4; kafka-3.9's for every other); `groupspec fuzz --table`
overrides it, and the judge, the generation, the shrinking and the scenario files all follow it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Iterable

from check.profiles import Urgent, profile_table
from model.dsl import Table
from model.errors import BadInput

# Kafka 3.9's onExpireHeartbeat runs after the DelayedHeartbeat was force-completed: a request
# holding the group lock in between re-arms the member, and the member is removed right after it.
LATE_SESSION_EXPIRY: Final = "late-session-expiry"
# The same race for a MEMBER_ID_REQUIRED id: the JoinGroup that made it a member is never answered.
LATE_PENDING_EXPIRY: Final = "late-pending-expiry"
# cleanupGroupMetadata every offsets.retention.check.interval.ms (phase unknown) removes an Empty
# group without offsets: it may vanish at any moment.
GROUP_CLEANUP: Final = "group-cleanup"

ALLOWANCES: Final[dict[str, str]] = {
    LATE_SESSION_EXPIRY: "a session expiry committed before a request that re-arms the member is "
                         "evaluated after it (Kafka 3.9 purgatory race; the deadline within the "
                         "request's own processing window)",
    LATE_PENDING_EXPIRY: "a MEMBER_ID_REQUIRED id expiring while its JoinGroup is processed removes "
                         "the new member, its JoinGroup never answered (Kafka 3.9 purgatory race)",
    GROUP_CLEANUP: "an Empty group without offsets may be removed at any moment (Kafka's periodic "
                   "cleanupGroupMetadata, offsets.retention.check.interval.ms), passing through Dead "
                   "(COORDINATOR_NOT_AVAILABLE) for a moment before it leaves the cache",
}


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    allowances: frozenset[str]
    why: str
    table: str = "kafka-3.9"  # the transition table it is judged by (check.profiles)


PROFILES: Final[dict[str, Profile]] = {
    "kafka-3.9": Profile("kafka-3.9", frozenset({LATE_SESSION_EXPIRY, LATE_PENDING_EXPIRY, GROUP_CLEANUP}),
                         "Kafka 3.9's GroupCoordinator: purgatory races seen on 3.9.2, periodic cleanup"),
    "kafka-4": Profile("kafka-4", frozenset({GROUP_CLEANUP}),
                       "Kafka 4's group coordinator: timers on its event loop (no race seen on 4.4.0), "
                       "periodic cleanup", table="kafka-4"),
    "strict": Profile("strict", frozenset(), "the model's timers, late only by the measured slack"),
}


def profile_for(target: str) -> Profile:
    """The profile a target is judged by: its own for the Kafka brokers the fuzzer starts
    (`kafka-3.9`, `kafka-4...`), `strict` for every other (serve, tansu, kafka://HOST:PORT)."""
    if target == "kafka-3.9" or target.startswith("kafka-3."):
        return PROFILES["kafka-3.9"]
    if target.startswith("kafka-4"):
        return PROFILES["kafka-4"]
    return PROFILES["strict"]


def allowances_in_force(target: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The target's profile's allowances plus `extra` (each an allowance or a profile name: a
    profile adds all of its own); an unknown name is a BadInput naming the known ones."""
    out = set(profile_for(target).allowances)
    for name in extra:
        if name in ALLOWANCES:
            out.add(name)
        elif name in PROFILES:
            out |= PROFILES[name].allowances
        else:
            raise BadInput(f"--allow {name}: unknown allowance; known: {', '.join(sorted(ALLOWANCES))} "
                           f"(or a profile: {', '.join(sorted(PROFILES))})")
    return frozenset(out)


def judged_table(target: str) -> tuple[str, Table, Urgent]:
    """The table a target is judged by, with its name: its profile's (check.profiles: kafka-4's
    for a Kafka 4 broker, kafka-3.9's for every other target). `groupspec fuzz --table` overrides
    it (groupspec.options.load_table_or_profile)."""
    from model.table import URGENT
    name = profile_for(target).table
    return name, profile_table(name, "profile"), URGENT


__all__ = ["ALLOWANCES", "GROUP_CLEANUP", "LATE_PENDING_EXPIRY", "LATE_SESSION_EXPIRY", "PROFILES",
           "Profile", "allowances_in_force", "judged_table", "profile_for"]
