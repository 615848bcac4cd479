"""Per-partition processing, pure Python, shared by the Spark job and the single-process runner.

Stage 1 (`traces.batch` over Arrow batches; `validate_*` here for the rows it flags, and for log
lines): each input line or record becomes a *staged row*: the trace columns plus `reject_reason`
(None when the row is valid), `raw` (the input text, for rejects) and `ignored` (a count of log lines
of other loggers, on a row of its own).
Stage 2 (`PartitionJudge.judge`): staged Arrow batches sorted by (group, order) become output rows,
tagged by `table`: one `verdict` per group, `reject` rows (stage-1 rejects passed through, plus
payloads that do not decode or disagree with their columns, duplicated and out-of-order events, all
found here), and `coverage` rows (counts per table row or log edge).
Every input row ends up in exactly one of: a verdict's `events`, a reject, or `ignored` (log lines
of other loggers, counted by stage 1 and never staged).
With the native replay (check/native_replay.py), stage 2 hands each whole trace group to the engine
as a range of an Arrow batch; the engine calls it clean or hands it back to `judge_group` (Python).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Iterable, Iterator, Optional, Sequence

from model.state import record_builder
from traces import logparse
from traces.logcheck import Edges, check_group
from traces.replay import OK, ModelFactory, replay_group
from traces.batch import STAGED_EXTRA
from traces.schema import COLUMN_NAMES, EventKind, TraceEvent
from traces.validate import RowError, decode_payload, encodable, parse_json_line, validate_row

TRACE: Final = "trace"  # input format names
LOG: Final = "log"

RAW_LIMIT: Final = 4000  # characters of a rejected input kept in the rejects output

# Output rows of stage 2 (one schema, the `table` column says which output a row belongs to).
OUTPUT_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("table", "string"),
    ("group_id", "string"),
    ("status", "string"),
    ("events", "int64"),
    ("divergent_seq", "int64"),
    ("divergent_kind", "string"),
    ("row_id", "string"),
    ("expected", "string"),
    ("actual", "string"),
    ("origin", "string"),
    ("seq", "int64"),
    ("reason", "string"),
    ("raw", "string"),
    ("key", "string"),
    ("count", "int64"),
    ("note", "string"),
)
VERDICT_COLUMNS: Final = (
    "group_id", "status", "events", "divergent_seq", "divergent_kind", "row_id", "expected", "actual", "origin",
    "note",
)
REJECT_COLUMNS: Final = ("group_id", "seq", "origin", "reason", "raw")
COVERAGE_COLUMNS: Final = ("key", "count")
_OUTPUT_NAMES: Final = tuple(name for name, _ in OUTPUT_COLUMNS)

Row = dict[str, Any]
INT64_LIMIT: Final = 1 << 63


def _printable(text: str) -> str:
    """Text for an output column: lone surrogates (from undecodable input bytes) become "?"."""
    return text if encodable(text) else text.encode("utf-8", "replace").decode("utf-8")


def _staged(event: TraceEvent) -> Row:
    row = event.to_row()
    row["reject_reason"] = None
    row["raw"] = None
    return row


def _staged_reject(reason: str, raw: str, origin: str, group_id: Optional[str] = None, seq: Optional[int] = None) -> Row:
    row: Row = {name: None for name in COLUMN_NAMES}
    # The key of a reject is best effort: a group id that is not valid Unicode, or a seq beyond int64,
    # cannot be stored in the output columns (the reason says what was wrong; `raw` keeps the text).
    if group_id is not None and not encodable(group_id):
        group_id = None
    if seq is not None and not -INT64_LIMIT <= seq < INT64_LIMIT:
        seq = None
    row.update(group_id=group_id, seq=seq, origin=_printable(origin), reject_reason=_printable(reason),
               raw=_printable(raw[:RAW_LIMIT]))
    return row


def validate_json_line(text: str, origin: str) -> Row:
    try:
        event = parse_json_line(text)
    except RowError as e:
        return _staged_reject(str(e), text, origin, *_best_effort_key(text))
    if event.origin is None:
        event = _with_origin(event, origin)
    return _staged(event)


def validate_record(record: Row, origin: str) -> Row:
    try:
        event = validate_row(record)
    except RowError as e:
        raw = json.dumps(record, default=str, separators=(",", ":"))
        gid, seq = record.get("group_id"), record.get("seq")
        return _staged_reject(
            str(e), raw, origin, gid if isinstance(gid, str) else None, seq if type(seq) is int else None
        )
    if event.origin is None:
        event = _with_origin(event, origin)
    return _staged(event)


def validate_log_line(text: str, origin: str, position: int) -> Optional[Row]:
    """None = a line of another logger (ignored, counted by the caller)."""
    if not encodable(text):
        return _staged_reject("line is not valid UTF-8", text, origin, None, position)
    try:
        event = logparse.parse_line(text, origin, position)
    except logparse.LogLineError as e:
        return _staged_reject(str(e), text, origin, None, position)
    return None if event is None else _staged(event)


def _with_origin(event: TraceEvent, origin: str) -> TraceEvent:
    row = event.to_row()
    row["kind"] = event.kind
    row["origin"] = origin
    return TraceEvent(**row)


def _best_effort_key(text: str) -> tuple[Optional[str], Optional[int]]:
    """Group and seq of a row that failed validation, when they can still be read."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _key_of_cut_line(text)
    if not isinstance(value, dict):
        return None, None
    gid, seq = value.get("group_id"), value.get("seq")
    return (gid if isinstance(gid, str) else None, seq if type(seq) is int else None)


_GROUP_FIELD: Final = re.compile(r'"group_id"\s*:\s*("(?:[^"\\]|\\.)*")')
_SEQ_FIELD: Final = re.compile(r'"seq"\s*:\s*(\d{1,19})[\s,}]')


def _key_of_cut_line(text: str) -> tuple[Optional[str], Optional[int]]:
    """Group and seq read from the complete fields of a line that is not JSON (a writer that died
    mid-line): the reject then belongs to its group, whose replay is then known to be cut short."""
    gid: Optional[str] = None
    seq: Optional[int] = None
    m = _GROUP_FIELD.search(text)
    if m is not None:
        try:
            value = json.loads(m.group(1))
        except ValueError:
            value = None
        gid = value if isinstance(value, str) and value else None
    m = _SEQ_FIELD.search(text)
    if m is not None:
        seq = int(m.group(1))
    return gid, seq


_KINDS: Final = {k.value: k for k in EventKind}


_new_event: Final = record_builder(TraceEvent)  # one per staged row
_PAYLOAD_KINDS: Final = (EventKind.request, EventKind.response)
_STAGED_NAMES: Final = COLUMN_NAMES + tuple(n for n, _ in STAGED_EXTRA)


@dataclass(slots=True)
class PartitionJudge:
    """Stage 2 for one partition: staged rows in (group, order) order -> output rows."""

    fmt: str
    factory: Optional[ModelFactory] = None
    edges: Optional[Edges] = None
    coverage: Counter[str] = field(default_factory=Counter)
    ignored: int = 0  # log lines of other loggers, counted by stage 1
    # group -> highest seq among its stage-1 rejects (-1: a reject whose seq could not be read).
    # Rejects reach `judge` before their group's rows (local) or sorted among them (Spark).
    rejected: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0  # log lines repeated exactly (two appenders, overlapping files): judged once
    # The native replay (check/native_replay.py make_replayer), trace format only: it judges each
    # group first and hands back to `judge_group` every group it does not call clean.
    native: Optional[Any] = None

    def judge_group(self, group_id: str, events: Sequence[TraceEvent]) -> Iterator[Row]:
        kept: list[TraceEvent] = []
        records: list[Any] = []
        previous: Optional[TraceEvent] = None
        trace = self.fmt == TRACE
        if not trace:
            events = self._without_duplicates(events)
        for event in events:
            record = None
            if trace and event.kind in _PAYLOAD_KINDS:
                try:
                    record = decode_payload(event)
                except RowError as e:
                    yield _reject_out(str(e), event)
                    continue
            if (previous is not None and trace
                    and (event.seq == previous.seq or event.ts_ms < previous.ts_ms)):
                reason = _order_problem(previous, event)
                if reason is not None:
                    yield _reject_out(reason, event)
                    continue
            kept.append(event)
            records.append(record)
            previous = event
        if trace:
            assert self.factory is not None
            last = self.rejected.get(group_id)
            cut = last is not None and (last < 0 or not kept or last > kept[-1].seq)
            verdict = replay_group(group_id, kept, self.factory, records, cut=cut)
        else:
            assert self.edges is not None
            verdict = check_group(group_id, kept, self.edges)
        self.coverage.update(verdict.coverage)
        out: Row = dict.fromkeys(_OUTPUT_NAMES)
        out.update(verdict.to_row(), table="verdict")
        yield out

    def _without_duplicates(self, events: Sequence[TraceEvent]) -> list[TraceEvent]:
        """Log rows of one group minus exact repeats (same timestamp, same text), which are counted."""
        seen: set[tuple[int, str]] = set()
        kept: list[TraceEvent] = []
        for event in events:
            key = (event.ts_ms, logparse.line_text(event))
            if key in seen:
                self.duplicates += 1
                continue
            seen.add(key)
            kept.append(event)
        return kept

    def judge(self, batches: Iterable[Any]) -> Iterator[Row]:
        """Staged Arrow batches, good rows sorted by group; rejects (reject_reason set) may come anywhere."""
        if self.native is not None and self.fmt == TRACE:
            yield from self._judge_native(batches)
        else:
            yield from self._judge_rows(batches)

    def _judge_native(self, batches: Iterable[Any]) -> Iterator[Row]:
        """`judge` with the native replay: each batch's rejects first (as `_judge_rows` takes
        them), then its groups, found by where group_id changes; a group that runs on into the
        next batch is carried until it ends. Each whole group goes to the engine as a range of one
        batch; a group it does not call clean, or one with rejects, is judged by `judge_group`."""
        import pyarrow as pa
        import pyarrow.compute as pc

        carry: list[Any] = []  # the open group's slices
        for batch in batches:
            if batch.num_rows == 0:
                continue
            direct = pc.or_(pc.is_valid(batch.column("reject_reason")), pc.is_valid(batch.column("ignored")))
            if pc.any(direct).as_py():
                yield from self._judge_rows([batch.filter(direct)])
                batch = batch.filter(pc.invert(direct))
                if batch.num_rows == 0:
                    continue
            gids = batch.column("group_id")
            n = batch.num_rows
            starts = [0]
            if n > 1:
                change = pc.not_equal(gids.slice(1), gids.slice(0, n - 1))
                starts += [i + 1 for i in pc.indices_nonzero(change).to_pylist()]
            bounds = list(zip(starts, starts[1:] + [n]))
            if carry:
                if gids[0].as_py() == carry[0].column("group_id")[0].as_py():
                    first = bounds.pop(0)
                    carry.append(batch.slice(first[0], first[1] - first[0]))
                if not bounds:
                    continue
                whole = pa.Table.from_batches(carry).combine_chunks().to_batches()[0]
                yield from self._judge_ranges(whole, [(0, whole.num_rows)])
            last = bounds.pop()
            carry = [batch.slice(last[0], last[1] - last[0])]
            if bounds:
                yield from self._judge_ranges(batch, bounds)
        if carry:
            whole = pa.Table.from_batches(carry).combine_chunks().to_batches()[0]
            yield from self._judge_ranges(whole, [(0, whole.num_rows)])
        assert self.native is not None
        self.coverage.update(dict(self.native.take_coverage()))

    def _judge_ranges(self, batch: Any, ranges: list[tuple[int, int]]) -> Iterator[Row]:
        gids = batch.column("group_id")
        ids = [gids[a].as_py() for a, _ in ranges]
        native = [r for r, gid in zip(ranges, ids) if gid not in self.rejected]
        assert self.native is not None
        clean = iter(self.native.judge(batch, native) if native else [])
        for (a, b), gid in zip(ranges, ids):
            if gid not in self.rejected and next(clean):
                out: Row = dict.fromkeys(_OUTPUT_NAMES)
                out.update(table="verdict", group_id=gid, status=OK, events=b - a)
                yield out
            else:
                yield from self.judge_group(gid, _events_of(batch.slice(a, b - a)))

    def _judge_rows(self, batches: Iterable[Any]) -> Iterator[Row]:
        current: Optional[str] = None
        bucket: list[TraceEvent] = []
        kinds = _KINDS
        new_event = _new_event
        for batch in batches:
            cols = batch.to_pydict()
            for values in zip(*[cols[n] for n in _STAGED_NAMES]):
                reason, raw, ignored = values[18:21]
                if ignored is not None:
                    self.ignored += ignored
                    continue
                if reason is not None:
                    if values[0] is not None:
                        seq = -1 if values[1] is None else values[1]
                        self.rejected[values[0]] = max(seq, self.rejected.get(values[0], seq))
                    yield _staged_reject_out(values[0], values[1], values[17], reason, raw)
                    continue
                event = new_event(values[0], values[1], values[2], values[3], kinds[values[4]], *values[5:18])
                gid = event.group_id
                if gid != current:
                    if bucket:
                        yield from self.judge_group(current or "", bucket)
                    current, bucket = gid, []
                bucket.append(event)
        if bucket:
            yield from self.judge_group(current or "", bucket)

    def coverage_rows(self) -> Iterator[Row]:
        for key, count in sorted(self.coverage.items()):
            out: Row = dict.fromkeys(_OUTPUT_NAMES)
            out.update(table="coverage", key=key, count=count)
            yield out


def _events_of(batch: Any) -> list[TraceEvent]:
    """The events of staged rows that passed stage 1."""
    cols = batch.to_pydict()
    return [_new_event(values[0], values[1], values[2], values[3], _KINDS[values[4]], *values[5:18])
            for values in zip(*[cols[n] for n in COLUMN_NAMES])]


def _order_problem(previous: TraceEvent, event: TraceEvent) -> Optional[str]:
    if event.seq == previous.seq:
        same = event.to_row() | {"origin": None} == previous.to_row() | {"origin": None}
        what = "duplicate of" if same else "conflicting duplicate of"
        return f"{what} seq {event.seq} (kept the first, at {previous.origin})"
    if event.ts_ms < previous.ts_ms:
        return (
            f"out of order: ts_ms {event.ts_ms} is before ts_ms {previous.ts_ms} of seq {previous.seq}"
        )
    return None


def _reject_out(reason: str, event: TraceEvent) -> Row:
    out: Row = dict.fromkeys(_OUTPUT_NAMES)
    raw = json.dumps({k: v for k, v in event.to_row().items() if v is not None}, separators=(",", ":"))
    out.update(table="reject", group_id=event.group_id, seq=event.seq, origin=event.origin, reason=reason, raw=raw[:RAW_LIMIT])
    return out


def _staged_reject_out(group_id: Optional[str], seq: Optional[int], origin: Optional[str], reason: str,
                       raw: Optional[str]) -> Row:
    out: Row = dict.fromkeys(_OUTPUT_NAMES)
    out.update(table="reject", group_id=group_id, seq=seq, origin=origin, reason=reason, raw=raw)
    return out


def sort_columns(fmt: str) -> list[tuple[str, str]]:
    """The order stage 2 needs inside a group (the Spark job sorts by the same columns)."""
    names = ("group_id", "seq") if fmt == TRACE else ("group_id", "ts_ms", "seq")
    return [(n, "ascending") for n in names]


__all__ = ["PartitionJudge", "validate_json_line", "validate_record", "validate_log_line", "sort_columns"]
