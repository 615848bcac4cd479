"""The two modes of the model: concrete (real ids, virtual clock) and abstract (bounded, untimed)."""

from __future__ import annotations

import random
import uuid

from model.state import Group


class ConcreteMode:
    """Real deadlines on a virtual clock; member ids `base-UUID` as Kafka makes them (GM:416).

    The UUIDs come from a seeded generator so a run can be replayed exactly.
    """

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def deadline(self, now_ms: int, timeout_ms: int) -> int:
        return now_ms + timeout_ms

    def new_member_id(self, group: Group, base: str) -> str:
        return f"{base}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"


class AbstractMode:
    """Every armed timer may fire at any moment (deadline 0); ids `base#k` with the smallest k
    not in use, so a state's ids are a function of the state (needed for a finite state space)."""

    def deadline(self, now_ms: int, timeout_ms: int) -> int:
        return 0

    def new_member_id(self, group: Group, base: str) -> str:
        used = {m.member_id for m in group.members} | {p.member_id for p in group.pending}
        k = 0
        while f"{base}#{k}" in used:
            k += 1
        return f"{base}#{k}"
