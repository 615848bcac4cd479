"""Broker `server.log` lines of the group coordinator -> per-group `kind=log` trace rows.

Formats (docs: ../shared/reference/kafka-classic-semantics.md §4): log4j's default layout
`[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)`, with the message prefixed by
`[GroupCoordinator <broker>]: ` (Scala GroupCoordinator, 2.x and 3.x), `[GroupMetadataManager
brokerId=<broker>] ` (Scala GroupMetadataManager, 1.0+; 0.11's logIdent, package kafka.coordinator.group
already, was `[Group Metadata Manager on Broker <broker>]: `), nothing (Scala GroupMetadata), or
`[GroupCoordinator id=<node> topic=__consumer_offsets partition=<p>] ` (the Java port, logger
org.apache.kafka.coordinator.group.GroupMetadataManager).

The record may follow any prefix ending in a space or `|#*>:` (docker compose, `kubectl logs
--timestamps`, comments, `grep -n`'s `NNN:`), with the timestamp bracketed or bare, and Strimzi's
`[thread]` after the logger; a line quoted in Markdown may be wrapped in `**` (bold). Real examples: tests/data/broker-logs (SOURCES there).

`parse_line` returns a TraceEvent, `None` for a line of another logger (or a continuation line of a
multi-line entry), and raises `LogLineError` for a coordinator line it cannot read, including a
coordinator record cut mid-message and numbers beyond Kafka's int32. Timestamps are read as UTC.
Group ids are taken to contain no whitespace.
"""

from __future__ import annotations

import calendar
import json
import re
from typing import Any, Callable, Final, Optional

from model.vocabulary import GroupState
from traces.schema import EventKind, LogEvent, TraceEvent

SOURCE: Final = "broker-log"
CLUSTER: Final = "*"  # group id of coordinator lines about no single group

COORDINATOR_LOGGERS: Final = frozenset(
    {
        "kafka.coordinator.group.GroupCoordinator",
        "kafka.coordinator.group.GroupMetadataManager",
        "kafka.coordinator.group.GroupMetadata",
        "org.apache.kafka.coordinator.group.GroupMetadataManager",
        "org.apache.kafka.coordinator.group.classic.ClassicGroup",
    }
)


class LogLineError(ValueError):
    """A coordinator line that cannot be parsed; the message is the rejects reason."""


_STAMP: Final = r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)[,.](\d{3})"
_LEVEL: Final = r"(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)"
# One log4j record: `[stamp] LEVEL message (logger)` (Kafka's default layout) or `stamp LEVEL message
# (logger) [thread]` (Strimzi's layout, and a bare timestamp), anywhere after a prefix that ends in a
# space or `|#*>:` (docker compose `kafka-1  | `, `kubectl logs --timestamps`, a comment, indentation,
# `grep -n`'s `20591:`).
_ENVELOPE: Final = re.compile(
    rf"(?:^|(?<=[\s|#*>:]))\[?{_STAMP}\]? {_LEVEL} (.*) \(([\w.$]+)\)(?: \[[^\]]*\])?\**\s*$"
)
_LOGGER_ONLY: Final = re.compile(r"\(([\w.$]+)\)(?: \[[^\]]*\])?\**\s*$")
# The start of a record (its end may be missing: a line cut mid-message, or a multi-line message).
_START: Final = re.compile(rf"(?:^|(?<=[\s|#*>:]))\[?{_STAMP}\]? {_LEVEL} (?P<rest>.*)$")
_COORDINATOR_PREFIXES: Final = ("[GroupCoordinator ", "[GroupMetadataManager brokerId=", "[Group Metadata Manager on Broker ")
_COORDINATOR_PACKAGE: Final = re.compile(r"\((?:org\.apache\.)?kafka\.coordinator\.group\.")


def _cut_coordinator_record(line: str) -> bool:
    """A coordinator record that lost its end: its message starts with (a part of) a coordinator
    prefix, or it names a coordinator logger that is not at the end of the line."""
    start = _START.search(line)
    if start is None:
        return False
    rest = start.group("rest")
    if len(rest) >= 2 and any(rest.startswith(p) or p.startswith(rest) for p in _COORDINATOR_PREFIXES):
        return True
    return _COORDINATOR_PACKAGE.search(rest) is not None


_PREFIX: Final = re.compile(
    r"^(?:\[GroupCoordinator (?P<b1>\d+)\]: |\[GroupMetadataManager brokerId=(?P<b2>\d+)\] |"
    r"\[GroupCoordinator id=(?P<b3>\d+)(?: topic=__consumer_offsets partition=\d+)?\] |"
    r"\[Group Metadata Manager on Broker (?P<b4>\d+)\]: )"
)
INT32_MAX: Final = 2**31 - 1
_STATES: Final = frozenset(GroupState.__members__) - {"Missing"}

G = r"(?P<g>\S+)"
M = r"(?P<m>\S+)"
GB = r"(?P<g>[^\s\]]+)"  # a group id inside brackets
GEN = r"(?P<gen>-?\d+)"
ST = r"(?P<s>\w+)"
PART = r"(?: \(__consumer_offsets-\d+\))?"

Fields = dict[str, Any]
_Handler = Optional[Callable[[re.Match[str]], Any]]


def _state(name: str) -> str:
    if name not in _STATES:
        raise LogLineError(f"unknown group state {name!r}")
    return name


def _members(text: str) -> list[str]:
    """`Set(a, b)`, `HashSet(a, b)`, `[a, b]` or `a, b` -> ['a', 'b']."""
    inner = re.sub(r"^(?:Hash)?Set\((.*)\)$|^\[(.*)\]$", lambda m: m.group(1) or m.group(2) or "", text.strip())
    return [s.strip() for s in inner.split(",") if s.strip()]


def _reason_state(reason: str) -> Optional[str]:
    """The state the coordinator's own reason names ("... re-joining group during Stable", "Updating
    metadata for member m during CompletingRebalance"). Reasons are free text: the client's part (after
    "; client reason:") is ignored, and so is "during <word>" where the word is no state ("during SyncGroup")."""
    own = reason.split("; client reason:", 1)[0]
    states = [w for w in re.findall(r"\bduring (\w+)", own) if w in _STATES]
    return states[-1] if states else None


def _prepare(m: re.Match[str]) -> Fields:
    if m.group("s") is not None:
        _state(m.group("s"))
    details: Fields = {}
    reason = m.group("reason")
    from_state = None
    if reason is not None:
        details["reason"] = reason
        from_state = _reason_state(reason)
    return dict(
        log_event=LogEvent.PrepareRebalance, to_state="PreparingRebalance", from_state=from_state,
        generation=int(m.group("gen")), details=details,
    )


def _join_state(m: re.Match[str]) -> str:
    return _state(m.group("s"))


def _member_metadata_id(text: str) -> str:
    found = re.search(r"memberId=([^,)]+)", text)
    if not found:
        raise LogLineError(f"no memberId in {text[:80]!r}")
    return found.group(1)


_PATTERNS: Final[tuple[tuple[re.Pattern[str], _Handler], ...]] = tuple(
    (re.compile(p), h)
    for p, h in (
        # GC:1498 prepareRebalance (2.0: no state and reason; Java: no partition, trailing '.')
        (rf"^Preparing to rebalance group {G}(?: in state {ST})? with old generation {GEN}{PART}(?: \(reason: (?P<reason>.*)\))?\.?$", _prepare),
        # GC:1573 onCompleteJoin -> CompletingRebalance (2.8+: member count)
        (rf"^Stabilized group {G} generation {GEN}{PART}(?: with (?P<n>\d+) members)?\.?$",
         lambda m: dict(log_event=LogEvent.Stabilized, from_state="PreparingRebalance", to_state="CompletingRebalance",
                        generation=int(m.group("gen")), member_count=_int(m.group("n")))),
        # GC:1561 onCompleteJoin -> Empty
        (rf"^Group {G} with generation {GEN} is now empty{PART}\.?$",
         lambda m: dict(log_event=LogEvent.NowEmpty, from_state="PreparingRebalance", to_state="Empty",
                        generation=int(m.group("gen")), member_count=0)),
        # GC:606 doSyncGroup, leader's assignment (leader id since 3.0, counts since 2.8)
        (rf"^Assignment received from leader (?:(?P<leader>\S+) )?for group {G} for generation {GEN}(?:\. The group has (?P<n>\d+) members, (?P<static>\d+) of which are static\.)?$",
         lambda m: dict(log_event=LogEvent.AssignmentReceived, from_state="CompletingRebalance", generation=int(m.group("gen")),
                        member_id=m.group("leader"), member_count=_int(m.group("n")))),
        # GC:660 handleLeaveGroup (3.x) / 2.4-2.8 / 2.0-2.3 / Java port
        (rf"^Member (?P<meta>MemberMetadata\(.*\)) has left group {G} through explicit `LeaveGroup`(?: request)?(?:; client reason: .*)?$",
         lambda m: dict(log_event=LogEvent.MemberLeft, member_id=_member_metadata_id(m.group("meta")),
                        details={"after_removal": True})),
        (rf"^Member\[group\.instance\.id (?P<i>\S+), member\.id {M}\] in group {G} has left, removing it from the group\.?$",
         lambda m: dict(log_event=LogEvent.MemberLeft, member_id=m.group("m"), instance_id=_opt(m.group("i")))),
        (rf"^Member {M} in group {G} has left, removing it from the group\.?$",
         lambda m: dict(log_event=LogEvent.MemberLeft, member_id=m.group("m"))),
        (rf"^\[Group {G}\] (?:Dynamic |Static )?Member {M}(?: with instance id \S+)? has left group through explicit `LeaveGroup` request(?:; client reason: .*)?$",
         lambda m: dict(log_event=LogEvent.MemberLeft, member_id=m.group("m"))),
        # pending (MEMBER_ID_REQUIRED) ids leaving or expiring
        (rf"^Pending member with memberId={M} has left group {G} through explicit `LeaveGroup` request$",
         lambda m: dict(log_event=LogEvent.PendingMemberRemoved, member_id=m.group("m"))),
        (rf"^Pending member {M} is leaving group {G}\.$",
         lambda m: dict(log_event=LogEvent.PendingMemberRemoved, member_id=m.group("m"))),
        (rf"^\[Group {G}\] Pending member {M} has left group through explicit `LeaveGroup` request(?:; client reason: .*)?$",
         lambda m: dict(log_event=LogEvent.PendingMemberRemoved, member_id=m.group("m"))),
        (rf"^Pending member {M} in group {G} has been removed after session timeout expiration\.$",
         lambda m: dict(log_event=LogEvent.PendingMemberRemoved, member_id=m.group("m"))),
        # GC:1730 onExpireHeartbeat
        (rf"^Member {M} in group {G} has failed, removing it from the group\.?$",
         lambda m: dict(log_event=LogEvent.MemberFailed, member_id=m.group("m"))),
        # GC:1539 onCompleteJoin (2.7: "remove"); DelayedSync expiry (DEBUG)
        (rf"^Group {G} removed? dynamic members who haven't joined: (?P<set>.*)$",
         lambda m: dict(log_event=LogEvent.DynamicMembersRemoved, details={"members": _members(m.group("set"))})),
        (rf"^Group {G} removed members who haven't sent their sync requests?: (?P<set>.*)$",
         lambda m: dict(log_event=LogEvent.DynamicMembersRemoved, details={"members": _members(m.group("set"))})),
        (rf"^Group {G} could not complete rebalance because no members rejoined\.?$",
         lambda m: dict(log_event=LogEvent.RebalanceStuck, to_state="PreparingRebalance")),
        # joins (3.x, 2.5-2.8, Java port); "in X state" is an observation of the current state
        (rf"^Dynamic member with unknown member id joins group {G} in {ST} state\. Created a new member id {M} and request(?:ing)? the member to rejoin with this id\.$",
         lambda m: dict(log_event=LogEvent.MemberIdRequired, member_id=m.group("m"), to_state=_join_state(m))),
        (rf"^Dynamic member with unknown member id rejoins group {G} in {ST} state\. Created a new member id {M} and request the member to rejoin with this id\.$",
         lambda m: dict(log_event=LogEvent.MemberIdRequired, member_id=m.group("m"), to_state=_join_state(m))),
        (rf"^(?:Static|Dynamic) [Mm]ember with unknown member id (?:joins|rejoins) group {G} in {ST} state\. Created a new member id {M} for this member and add to the group\.$",
         lambda m: dict(log_event=LogEvent.MemberJoined, member_id=m.group("m"), to_state=_join_state(m))),
        (rf"^Static member with groupInstanceId=(?P<i>\S+) and unknown member id joins group {G} in {ST} state\. Created a new member id {M} for this member and add to the group\.$",
         lambda m: dict(log_event=LogEvent.MemberJoined, member_id=m.group("m"), instance_id=m.group("i"), to_state=_join_state(m))),
        (rf"^Dynamic member with unknown member id joins group {G} in state {ST}\. Created a new member id {M} and added the member to the group\.$",
         lambda m: dict(log_event=LogEvent.MemberJoined, member_id=m.group("m"), to_state=_join_state(m))),
        (rf"^(?:Pending dynamic member with id|Dynamic Member with specific member id) {M} joins group {G} in {ST} state\. Adding to the group now\.$",
         lambda m: dict(log_event=LogEvent.MemberJoined, member_id=m.group("m"), to_state=_join_state(m))),
        (rf"^Adding new static member (?P<i>\S+) to group {G} with member id {M}\.$",
         lambda m: dict(log_event=LogEvent.MemberJoined, member_id=m.group("m"), instance_id=_opt(m.group("i")))),
        (rf"^Static member with groupInstanceId=(?P<i>\S+) and unknown member id joins group {G} in {ST} state\. Replacing previously mapped member (?P<old>\S+) with this groupInstanceId\.$",
         lambda m: dict(log_event=LogEvent.StaticMemberReplaced, instance_id=m.group("i"), to_state=_join_state(m),
                        details={"old_member_id": m.group("old")})),
        (rf"^Static member (?P<i>\S+) of group {G} with unknown member id rejoins, assigning new member id {M}, while old member id (?P<old>\S+) will be removed\.$",
         lambda m: dict(log_event=LogEvent.StaticMemberReplaced, instance_id=_opt(m.group("i")), member_id=m.group("m"),
                        details={"old_member_id": m.group("old")})),
        # partition immigration / emigration, expiry and deletion (GC:1215/1189, GMM:872)
        (rf"^Loading group metadata for {G} with generation {GEN}$",
         lambda m: dict(log_event=LogEvent.Loaded, generation=int(m.group("gen")))),
        (rf"^Unloading group metadata for {G} with generation {GEN}$",
         lambda m: dict(log_event=LogEvent.Unloaded, to_state="Dead", generation=int(m.group("gen")))),
        (rf"^Group {G} transitioned to Dead in generation {GEN}\.?$",
         lambda m: dict(log_event=LogEvent.Dead, to_state="Dead", generation=int(m.group("gen")))),
        # known messages about one group that change nothing the checker follows
        (rf"^Loaded member .* in group {G} with generation {GEN}\.$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Group {G} is dead, skipping rebalance stage\.?$", lambda m: dict(log_event=LogEvent.Info, to_state="Dead")),
        (rf"^Setting empty assignments for members .* of {G} for generation {GEN}$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Sending empty assignment to member {M} of {G} for generation {GEN} with no errors$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Request memberId=\S+ for static member with groupInstanceId=\S+ is fenced by (?:current|existing) memberId=\S+ during operation [\w-]+$", None),
        (rf"^Attempt to add rejoining member {M} of group {G} in unexpected group state {ST}$",
         lambda m: dict(log_event=LogEvent.Info, member_id=m.group("m"), to_state=_join_state(m))),
        (rf"^Failed to (?:write empty metadata|persist metadata) for group {G}(?::| static member) .*$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Static member (?:which )?joins during \w+ stage(?: and doesn't affect selectProtocol)? will not trigger rebalance\.$", None),
        (rf"^Received notification of heartbeat expiration for member {M} after group {G} had already been unloaded or deleted\.$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Received unexpected notification of sync expiration .*for {G} .*$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Received unexpected notification of sync expiration after group {G} already transitioned to the {ST} state\.$",
         lambda m: dict(log_event=LogEvent.Info, to_state=_join_state(m))),
        (rf"^Member {M} has already been removed from the group\.$", None),
        (rf"^Member id {M} was not found in {G} during heartbeat completion check$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Group leader \[.*\] failed to join before (?:the )?rebalance timeout.*$", None),
        (rf"^The following offsets of the group {G} were deleted: .*$", lambda m: dict(log_event=LogEvent.Info)),
        # the Java coordinator (4.x): unloading, loading, and lines about consumer (KIP-848) groups
        (rf"^\[GroupId={GB}\] Unloading group metadata for generation {GEN}\.$",
         lambda m: dict(log_event=LogEvent.Unloaded, to_state="Dead", generation=int(m.group("gen")))),
        (rf"^Loaded classic group {G} with \d+ members\.$", lambda m: dict(log_event=LogEvent.Loaded)),
        (rf"^Loaded (?:consumer|share) group {G} with \d+ members\.$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Loaded member \S+ in (?:classic |consumer )?group {G}\.$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Cannot (?:upgrade|downgrade) (?:the )?(?:classic|consumer) group {G} .*$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^Failed to parse Consumer Protocol \S+ of group {G}\. .*$", lambda m: dict(log_event=LogEvent.Info)),
        (rf"^\[GroupId[ =]{GB}\] .*$", lambda m: dict(log_event=LogEvent.Info, details={"protocol": "not classic"})),
        # coordinator lines about no single group
        (r"^(?:Elected as the group coordinator|Resigned as the group coordinator|The following groups were deleted|"
         r"Removed \d+ expired offsets|Scheduling (?:un)?loading|Finished (?:un)?loading|Static member \S+ with unknown member id rejoins).*$", None),
    )
)


def _int(text: Optional[str]) -> Optional[int]:
    return None if text is None else int(text)


def _opt(text: Optional[str]) -> Optional[str]:
    """Scala's Option rendering: `Some(x)` -> x, `None` -> None; Java's `null` -> None."""
    if text is None or text in ("None", "null", "Optional.empty"):
        return None
    found = re.fullmatch(r"(?:Some|Optional)\[?\(?(.*?)\)?\]?", text)
    return found.group(1) if found else text


def _epoch_ms(m: re.Match[str]) -> int:
    y, mo, d, h, mi, s, ms = (int(m.group(i)) for i in range(1, 8))
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        raise LogLineError("invalid timestamp")
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) * 1000 + ms


def logger_of(line: str) -> Optional[str]:
    """The `(logger)` a line ends with (before a Strimzi `[thread]`), if any."""
    found = _LOGGER_ONLY.search(line)
    return found.group(1) if found else None


def line_text(event: TraceEvent) -> str:
    """The record text of a parsed line (level, prefix, message), without timestamp, line prefix or file."""
    try:
        details = json.loads(event.payload or "{}")
    except ValueError:
        details = {}
    text = details.get("line") if isinstance(details, dict) else None
    return f"{event.log_event}:{text}" if isinstance(text, str) else f"{event.log_event}:{event.payload}"


def _checked_ints(fields: Fields) -> None:
    """Generations and member counts are int32 in Kafka (and in the trace schema)."""
    for name in ("generation", "member_count"):
        value = fields.get(name)
        if value is not None and not -INT32_MAX - 1 <= value <= INT32_MAX:
            shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:20]}..."
            raise LogLineError(f"{name.replace('_', ' ')} {shown} out of range (Kafka's is a 32-bit int)")


def parse_line(line: str, origin: str, seq: int) -> Optional[TraceEvent]:
    """One server.log line -> a kind=log row, None (other logger / continuation), or LogLineError."""
    envelope = _ENVELOPE.search(line)
    if envelope is None:
        if logger_of(line) in COORDINATOR_LOGGERS:
            raise LogLineError("malformed log4j line (timestamp or level)")
        if _cut_coordinator_record(line):
            raise LogLineError("coordinator line cut short: no '(logger)' at its end")
        return None
    logger = envelope.group(10)
    if logger not in COORDINATOR_LOGGERS:
        return None
    ts_ms = _epoch_ms(envelope)
    text = envelope.group(9)
    prefix = _PREFIX.match(text)
    message = text[prefix.end():] if prefix else text
    for pattern, handler in _PATTERNS:
        found = pattern.match(message)
        if found is None:
            continue
        fields: Fields = handler(found) if handler is not None else {"log_event": LogEvent.Info}
        _checked_ints(fields)
        group_id = found.groupdict().get("g") or CLUSTER
        details = fields.pop("details", {})
        details["level"] = envelope.group(8)
        if prefix is not None:
            details["broker"] = int(next(b for b in prefix.groups() if b is not None))
        # what an exact duplicate (the same line written twice by two appenders) repeats
        details["line"] = text
        log_event: LogEvent = fields.pop("log_event")
        return TraceEvent(
            group_id=group_id,
            seq=seq,
            ts_ms=ts_ms,
            source=SOURCE,
            kind=EventKind.log,
            log_event=log_event.name,
            payload=json.dumps(details, separators=(",", ":")),
            origin=origin,
            **fields,
        )
    raise LogLineError(f"unrecognised {logger.rsplit('.', 1)[-1]} message: {message[:120]!r}")
