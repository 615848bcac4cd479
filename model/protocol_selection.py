"""GM:434 selectProtocol, as a pure function over the members' preference lists.

Candidates are the protocols every member supports; each member votes for the first candidate
in its own preference order; the most votes wins. Kafka breaks ties by hash-map order, which is
arbitrary; the model breaks them by the candidate's first appearance in the first member's list
(an abstraction: a tie can only arise when members order their common protocols differently).
"""

from __future__ import annotations

from typing import Optional


def select_protocol(preferences: tuple[tuple[str, ...], ...]) -> Optional[str]:
    if not preferences:
        return None
    common = set(preferences[0])
    for prefs in preferences[1:]:
        common &= set(prefs)
    if not common:
        return None
    votes: dict[str, int] = {}
    for prefs in preferences:
        vote = next(p for p in prefs if p in common)
        votes[vote] = votes.get(vote, 0) + 1
    order = [p for p in preferences[0] if p in common]
    best = max(votes.values())
    return next(p for p in order if votes.get(p, 0) == best)
