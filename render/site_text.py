"""The table's columns in words, for the site and docs/table.md: guards atom by atom with each atom's
own description, replies, effects, and Kafka citations with the line of the source they name.

Nothing here restates a row: every sentence comes from the table, the atoms' and effects' docstrings
(model/atoms.py, model/effects.py) or the reply forms' (model/replies.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from model.dsl import ATOMS, REPLY_FORMS, Reply, Row

# Kafka 3.9's classic coordinator, as the table's citations abbreviate it (model/table.py's
# docstring; ../shared/reference/kafka-classic-semantics.md §0 gives the same files).
KAFKA_39: Final = "https://github.com/apache/kafka/blob/3.9.0/"
SCALA_GROUP: Final = "core/src/main/scala/kafka/coordinator/group/"
# The Java coordinator the kafka-4 profile cites (check/profile_kafka4.py: trunk 1eb7644, Sept 2024).
KAFKA_TRUNK: Final = "https://github.com/apache/kafka/blob/1eb7644349cb/"
JAVA_GROUP: Final = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/"

CITATION_FILES: Final[dict[str, tuple[str, str]]] = {
    "GC": (KAFKA_39, SCALA_GROUP + "GroupCoordinator.scala"),
    "GM": (KAFKA_39, SCALA_GROUP + "GroupMetadata.scala"),
    "MM": (KAFKA_39, SCALA_GROUP + "MemberMetadata.scala"),
    "DJ": (KAFKA_39, SCALA_GROUP + "DelayedJoin.scala"),
    "DS": (KAFKA_39, SCALA_GROUP + "DelayedSync.scala"),
    "DH": (KAFKA_39, SCALA_GROUP + "DelayedHeartbeat.scala"),
    "GMM": (KAFKA_39, SCALA_GROUP + "GroupMetadataManager.scala"),
    "DO": (KAFKA_39, "core/src/main/scala/kafka/server/DelayedOperation.scala"),
    "OMM": (KAFKA_TRUNK, JAVA_GROUP + "OffsetMetadataManager.java"),
}

# `GC:1345`, `GC:1345-1410`; a bare `GMM` (no line) is linked to the file.
_CITATION: Final = re.compile(r"\b(?P<abbr>[A-Z]{2,3})(?::(?P<first>\d+)(?:-(?P<last>\d+))?)?\b")
_JIRA: Final = re.compile(r"\bKAFKA-\d+\b")


@dataclass(frozen=True, slots=True)
class Citation:
    """One reference inside a citation text: `GC:1345-1410` -> GroupCoordinator.scala#L1345-L1410."""

    text: str
    start: int  # offset in the citation text
    end: int
    url: str


def citations(text: str) -> list[Citation]:
    """Every Kafka source reference (abbreviation, line or line range) and JIRA id in `text`."""
    found: list[Citation] = []
    for m in _CITATION.finditer(text):
        abbr = m.group("abbr")
        if abbr not in CITATION_FILES:
            continue
        base, path = CITATION_FILES[abbr]
        anchor = ""
        if m.group("first"):
            anchor = f"#L{m.group('first')}" + (f"-L{m.group('last')}" if m.group("last") else "")
        found.append(Citation(m.group(0), m.start(), m.end(), base + path + anchor))
    for m in _JIRA.finditer(text):
        found.append(Citation(m.group(0), m.start(), m.end(),
                              f"https://issues.apache.org/jira/browse/{m.group(0)}"))
    return sorted(found, key=lambda c: c.start)


def unknown_abbreviations(text: str) -> list[str]:
    """`XY:123` references whose abbreviation has no file (a test keeps the table free of them)."""
    return [m.group(0) for m in _CITATION.finditer(text)
            if m.group("first") and m.group("abbr") not in CITATION_FILES]


# ---------------------------------------------------------------- guards, replies, effects

@dataclass(frozen=True, slots=True)
class GuardPart:
    atom: str
    positive: bool
    doc: str


def guard_parts(row: Row) -> list[GuardPart]:
    """The guard's literals with each atom's own description (an empty guard: no parts)."""
    return [GuardPart(lit.atom, lit.positive, ATOMS[lit.atom].doc) for lit in row.guard.literals]


REPLY_WORDS: Final[dict[str, str]] = {
    "park": "no answer yet: the request is parked and answered later (by the row an event fires then)",
    "none": "nothing to answer: an internal event (a timer, a completion, a partition move)",
    "continue": "the group object is created; the same request is then handled by the new group",
}


def reply_short(reply: Reply) -> str:
    """`REBALANCE_IN_PROGRESS (27)`, `NONE (0)`, `park`, `none`, `continue`."""
    if reply.form in REPLY_WORDS:
        return reply.form
    return f"{reply.error.name} ({reply.error.value})"


def reply_words(reply: Reply) -> str:
    """What the reply column means: the error code and the shape of the response."""
    if reply.form in REPLY_WORDS:
        return REPLY_WORDS[reply.form]
    doc = (REPLY_FORMS[reply.form].__doc__ or "").strip()
    return f"answered {reply.error.name} (error code {reply.error.value}), form `{reply.form}`: {doc}"


def next_state_text(row: Row) -> str:
    return "same" if row.next_state is None else row.next_state.name


def row_state(row: Row) -> str:
    """A row's one state (the table gives every state its own row id)."""
    return row.id.split("/", 1)[0]


def row_label(row: Row) -> str:
    return row.id.rsplit("/", 1)[1]


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring (for compact listings), whitespace collapsed."""
    text = " ".join(doc.split())
    m = re.search(r"(?<=[.;:])\s", text)
    return text if m is None else text[: m.start()]
