"""Row validation: a raw row (JSON object or Parquet record) becomes a TraceEvent or a reason.

Every check names the column and what was expected, so the reason in the rejects output is enough
to fix the producer. `check_columns` is the whole-input check (a file that is not a trace at all),
which stops the job instead of rejecting every row.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Final, Iterable, Mapping

from model.errors import BadInput
from model.vocabulary import ApiKey, Error, GroupState, TimerEvent
from traces import codec
from traces.schema import (
    ALWAYS_REQUIRED,
    COLUMN_NAMES,
    COLUMN_TYPES,
    INT32_MAX,
    INT64_MAX,
    REQUIRED_BY_KIND,
    EventKind,
    LogEvent,
    TraceEvent,
)


class RowError(ValueError):
    """A row that cannot be replayed; the message is the reason written to rejects."""


class SchemaError(BadInput, ValueError):
    """An input whose columns are not a trace's: the job stops (exit 2)."""


_KINDS: Final = {k.value: k for k in EventKind}
_API_NAMES: Final = frozenset(ApiKey.__members__)
_TIMER_NAMES: Final = frozenset(TimerEvent.__members__)
_STATE_NAMES: Final = frozenset(GroupState.__members__)
_ERROR_NAMES: Final = frozenset(Error.__members__)
_LOG_EVENTS: Final = frozenset(LogEvent.__members__)
_COLUMN_SET: Final = frozenset(COLUMN_NAMES)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def encodable(text: str) -> bool:
    """False for strings holding a lone surrogate (JSON allows the escape, UTF-8 and Arrow do not)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_type(name: str, value: Any) -> None:
    expected = COLUMN_TYPES[name]
    if expected == "string":
        if not isinstance(value, str):
            raise RowError(f"column {name}: expected string, got {_type_name(value)}")
        if not encodable(value):
            raise RowError(f"column {name}: not valid Unicode (a lone surrogate such as \\udcff)")
        return
    if type(value) is not int:
        raise RowError(f"column {name}: expected integer, got {_type_name(value)}")
    bound = INT32_MAX if expected == "int32" else INT64_MAX
    if not -bound - 1 <= value <= bound:
        raise RowError(f"column {name}: {value} out of {expected} range")


def validate_row(row: Any) -> TraceEvent:
    """Check one row; raise RowError with the reason if it cannot be replayed."""
    if not isinstance(row, Mapping):
        raise RowError(f"expected a JSON object, got {_type_name(row)}")
    unknown = [k for k in row if k not in _COLUMN_SET]
    if unknown:
        raise RowError(f"unknown column(s) {', '.join(sorted(map(str, unknown)))}")
    for name in ALWAYS_REQUIRED:
        if row.get(name) is None:
            raise RowError(f"missing field {name}")
    values: dict[str, Any] = {}
    for name, value in row.items():
        if value is not None:
            _check_type(name, value)
            values[name] = value
    kind = _KINDS.get(values["kind"])
    if kind is None:
        raise RowError(f"column kind: expected one of {', '.join(_KINDS)}, got {values['kind']!r}")
    if values["group_id"] == "":
        raise RowError("column group_id: empty")
    if values["seq"] < 0 or values["ts_ms"] < 0:
        raise RowError("columns seq and ts_ms must be >= 0")
    for name in REQUIRED_BY_KIND[kind]:
        if name not in values:
            raise RowError(f"missing field {name} (required for kind {kind.value})")
    _check_vocabulary(kind, values)
    values["kind"] = kind
    event = TraceEvent(**values)
    if kind in (EventKind.request, EventKind.response):
        _check_payload(event)
    elif kind == EventKind.config:
        try:
            codec.loads_config(values["payload"])
        except codec.PayloadError as e:
            raise RowError(str(e)) from None
    return event


def _check_vocabulary(kind: EventKind, values: dict[str, Any]) -> None:
    api = values.get("api")
    if api is not None:
        names = _TIMER_NAMES if kind == EventKind.timer else _API_NAMES
        if api not in names:
            raise RowError(f"column api: {api!r} is not a {'TimerEvent' if kind == EventKind.timer else 'ApiKey'} name")
    for name in ("from_state", "to_state"):
        state = values.get(name)
        if state is not None and state not in _STATE_NAMES:
            raise RowError(f"column {name}: unknown group state {state!r}")
    error = values.get("error")
    if error is not None and error not in _ERROR_NAMES:
        raise RowError(f"column error: unknown error name {error!r}")
    log_event = values.get("log_event")
    if log_event is not None and log_event not in _LOG_EVENTS:
        raise RowError(f"column log_event: unknown log event {log_event!r}")


def _check_payload(event: TraceEvent) -> None:
    assert event.payload is not None and event.api is not None
    _decode_payload(event.kind, event.api, event.group_id, event.payload)


def decode_payload(event: TraceEvent) -> Any:
    """The request/response record of a validated row, or RowError: the payload does not decode,
    or it disagrees with the columns (api, group_id). The pipeline calls this once per row, in stage 2.

    Decoding is a pure function of (kind, api, group_id, payload) and records are immutable, so
    repeated payloads (heartbeats, their answers) are decoded once: a bounded cache, failures never cached.
    """
    assert event.payload is not None and event.api is not None
    return _decode_cached(event.kind, event.api, event.group_id, event.payload)


@functools.lru_cache(maxsize=4096)
def _decode_cached(kind: EventKind, api_name: str, group_id: str, payload: str) -> Any:
    return _decode_payload(kind, api_name, group_id, payload)


def _decode_payload(kind: EventKind, api_name: str, group_id: str, payload: str) -> Any:
    api = ApiKey[api_name]
    try:
        if kind == EventKind.request:
            record = codec.loads_record(payload, codec.REQUEST_TYPES)
            if record.api_key != api:
                raise RowError(f"payload is a {type(record).__name__}, but column api is {api.name}")
            record_group = getattr(record, "group_id", None)
            if record_group is not None and record_group != group_id:
                raise RowError(f"payload group_id {record_group!r} differs from column group_id {group_id!r}")
            return record
        response_type = _RESPONSE_FOR_API.get(api)
        if response_type is None:
            raise RowError(f"column api: {api.name} has no response record (model.messages)")
        return codec.loads_record(payload, (response_type,))
    except codec.PayloadError as e:
        raise RowError(str(e)) from None


def _api_of(request_type: type) -> ApiKey:
    default = getattr(request_type, "__dataclass_fields__")["api_key"].default
    assert isinstance(default, ApiKey)
    return default


_RESPONSE_FOR_API: Final[dict[ApiKey, type]] = {
    _api_of(request): response for request, response in codec.RESPONSE_FOR_REQUEST.items()
}


def parse_json_line(text: str) -> TraceEvent:
    """One JSON Lines line -> TraceEvent, or RowError (truncated JSON, wrong types, ...)."""
    if not text.strip():
        raise RowError("empty line")
    if not encodable(text):
        raise RowError("line is not valid UTF-8")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise RowError(f"not valid JSON ({e.msg} at char {e.pos}; truncated line?)") from None
    except RecursionError:
        raise RowError("JSON nested too deeply") from None
    return validate_row(value)


def check_columns(where: str, columns: Iterable[str], types: Mapping[str, str] | None = None) -> None:
    """The whole-input check: required columns present, no unknown ones, types as documented."""
    present = list(columns)
    missing = [c for c in ALWAYS_REQUIRED if c not in present]
    unknown = [c for c in present if c not in _COLUMN_SET]
    problems = []
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown column(s) {', '.join(unknown)}")
    for name, found in (types or {}).items():
        if name in _COLUMN_SET and found != COLUMN_TYPES[name]:
            problems.append(f"column {name} has type {found}, expected {COLUMN_TYPES[name]}")
    if problems:
        raise SchemaError(f"{where}: not a groupspec trace ({'; '.join(problems)}); see docs/traces-format.md")


def check_first_json_line(where: str, text: str) -> None:
    """A JSON Lines file's first line decides whether the file is a trace at all."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return  # a broken first row is that row's problem; it goes to rejects
    if not isinstance(value, dict):
        raise SchemaError(f"{where}: line 1 is JSON {_type_name(value)}, expected a trace row object")
    # A row missing one field is that row's problem; a first row with neither key is another format.
    if "group_id" not in value and "kind" not in value:
        found = ", ".join(sorted(map(str, value))[:8])
        raise SchemaError(
            f"{where}: line 1 has no group_id and no kind column (found: {found}); "
            "not a groupspec trace, see docs/traces-format.md"
        )

