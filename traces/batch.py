"""Stage 1 over Arrow batches: JSON Lines parsed by pyarrow, rows checked with pyarrow.compute.

The row-at-a-time validator (`traces.validate.validate_row`) stays the definition of a valid row.
Here a whole batch is parsed with the trace's Arrow schema (strict: wrong JSON types, unknown
columns, int32 overflow and duplicate keys fail the parse) and the column rules are evaluated as
vector expressions. Only the rows that fail either step are run through the Python validator one by
one, which gives their reject reason. Rows that pass are staged without decoding their payload:
request/response payloads are decoded exactly once, in stage 2 (`traces.pipeline`), where a payload
that does not decode or disagrees with its columns is rejected with the same reason
`validate_row` gives. `kind=config` rows (one per group) are checked in Python after pyarrow's
parse; after the engine's parse of JSON Lines (`stage_parsed`) and for Parquet records only their
payload is (`flag_rows_with_configs`, cached by payload text).
"""

from __future__ import annotations

import functools
import io
from typing import Any, Callable, Final, Optional, Sequence

from model.vocabulary import ApiKey, Error, GroupState, TimerEvent
from traces import codec
from traces.schema import ALWAYS_REQUIRED, COLUMN_NAMES, COLUMNS, REQUIRED_BY_KIND, EventKind, LogEvent

STAGED_EXTRA: Final = (("reject_reason", "string"), ("raw", "string"), ("ignored", "int64"))

_API_NAMES: Final = sorted(ApiKey.__members__)
_TIMER_NAMES: Final = sorted(TimerEvent.__members__)
_STATE_NAMES: Final = sorted(GroupState.__members__)
_ERROR_NAMES: Final = sorted(Error.__members__)
_LOG_EVENTS: Final = sorted(LogEvent.__members__)
_KIND_NAMES: Final = [k.value for k in EventKind]

PythonCheck = Callable[[int], dict[str, Any]]  # row index -> staged row (validated in Python)


def _arrow_type(name: str) -> Any:
    import pyarrow as pa

    return {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32()}[name]


def parse_schema() -> Any:
    """The trace columns, all nullable (missing required fields are found by the checks, not the parser)."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, _arrow_type(c.type)) for c in COLUMNS])


def staged_schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field(c.name, _arrow_type(c.type)) for c in COLUMNS]
                     + [pa.field(n, _arrow_type(t)) for n, t in STAGED_EXTRA])


def _parse(texts: Sequence[str]) -> Optional[Any]:
    """One pyarrow parse of the lines; None when it fails or does not give one row per line."""
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        data = ("\n".join(texts) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a line that was not UTF-8: found and rejected one by one
        return None
    try:
        table = pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
            parse_options=pj.ParseOptions(explicit_schema=parse_schema(), unexpected_field_behavior="error"),
        )
    except (pa.ArrowInvalid, UnicodeError):
        return None
    return table if table.num_rows == len(texts) else None


def _parse_spans(texts: Sequence[str], index: list[int], tables: list[tuple[list[int], Any]],
                 failed: list[int]) -> None:
    """Parse `texts[i] for i in index`; on failure halve the span until the failing lines are alone."""
    if not index:
        return
    table = _parse([texts[i] for i in index])
    if table is not None:
        tables.append((index, table))
    elif len(index) == 1:
        failed.append(index[0])
    else:
        mid = len(index) // 2
        _parse_spans(texts, index[:mid], tables, failed)
        _parse_spans(texts, index[mid:], tables, failed)


def flag_rows(table: Any, config_rows: bool = True) -> Any:
    """A boolean array: True where a row breaks a column rule (or, with `config_rows`, is a config row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def true(expr: Any) -> Any:
        return pc.fill_null(expr, False)

    def bad_name(column: str, names: list[str]) -> Any:
        col = table[column]
        return true(pc.and_(pc.is_valid(col), pc.invert(pc.is_in(col, value_set=pa.array(names)))))

    kind = table["kind"]
    flags = [pc.is_null(table[c]) for c in ALWAYS_REQUIRED]
    flags.append(pc.invert(true(pc.is_in(kind, value_set=pa.array(_KIND_NAMES)))))
    flags.append(true(pc.equal(table["group_id"], "")))
    flags.append(true(pc.less(table["seq"], 0)))
    flags.append(true(pc.less(table["ts_ms"], 0)))
    if config_rows:
        flags.append(true(pc.equal(kind, EventKind.config.value)))
    for k, required in REQUIRED_BY_KIND.items():
        if required:
            missing = pc.is_null(table[required[0]])
            for name in required[1:]:
                missing = pc.or_(missing, pc.is_null(table[name]))
            flags.append(true(pc.and_(pc.equal(kind, k.value), missing)))
    api = table["api"]
    is_timer = true(pc.equal(kind, EventKind.timer.value))
    api_ok = pc.if_else(is_timer, pc.is_in(api, value_set=pa.array(_TIMER_NAMES)),
                        pc.is_in(api, value_set=pa.array(_API_NAMES)))
    flags.append(true(pc.and_(pc.is_valid(api), pc.invert(api_ok))))
    flags += [bad_name("from_state", _STATE_NAMES), bad_name("to_state", _STATE_NAMES),
              bad_name("error", _ERROR_NAMES), bad_name("log_event", _LOG_EVENTS)]
    out = flags[0]
    for f in flags[1:]:
        out = pc.or_(out, f)
    return out


def _staged_good(table: Any, origins: Optional[Any]) -> Any:
    """Rows that passed: trace columns, origin filled in where the row has none (from `origins`;
    None: every row has its own), staging columns null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [table[name] for name in COLUMN_NAMES]
    if origins is not None:
        columns[COLUMN_NAMES.index("origin")] = pc.coalesce(table["origin"], origins)
    columns += [pa.nulls(table.num_rows, _arrow_type(t)) for _, t in STAGED_EXTRA]
    return pa.Table.from_arrays(columns, schema=staged_schema())


def stage_table(table: Any, origins: Optional[Any], flagged: Optional[Any] = None) -> tuple[Any, list[int]]:
    """A parsed table -> (the staged rows that pass the vector checks, indices of the flagged rows).
    `origins` has one entry per table row (None: the rows have their own); `flagged`: the flags,
    when the caller has them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if flagged is None:
        flagged = flag_rows(table) if table.num_rows else pa.array([], pa.bool_())
    if not (table.num_rows and pc.any(flagged).as_py()):  # the usual chunk: nothing to take out
        return _staged_good(table, origins), []
    keep = pc.invert(flagged)
    good = _staged_good(table.filter(keep), None if origins is None else pc.filter(origins, keep))
    return good, pc.indices_nonzero(flagged).to_pylist()


def stage_json_lines(texts: Sequence[str], origins: Any, python_check: PythonCheck) -> Any:
    """JSON Lines (one string per line, `origins` an Arrow string array) -> a staged Arrow table,
    one row per line in the lines' order (input clustered by group stays so: traces/local.py).

    `python_check(i)` validates line i in Python and returns its staged row (accepted or rejected).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    # Only lines that look like one JSON object go to pyarrow (blank lines would be skipped by its
    # reader, and pyarrow 21 crashes on a bare `null` line); the rest are the Python check's.
    candidates: list[int] = []
    failed: list[int] = []
    for i, t in enumerate(texts):
        s = t.strip()
        (candidates if s[:1] == "{" and s[-1:] == "}" else failed).append(i)
    tables: list[tuple[list[int], Any]] = []
    _parse_spans(texts, candidates, tables, failed)
    parts = []
    lines: list[int] = []  # the line of each staged row, in `parts` order
    for index, table in tables:
        good, bad_rows = stage_table(table, origins.take(pa.array(index, pa.int64())))
        parts.append(good)
        bad = set(bad_rows)
        lines += [i for r, i in enumerate(index) if r not in bad]
        failed += [index[r] for r in bad_rows]
    if failed:
        failed.sort()
        parts.append(pa.Table.from_pylist([python_check(i) for i in failed], schema=staged_schema()))
        lines += failed
    if not parts:
        return staged_schema().empty_table()
    staged = pa.concat_tables(parts)
    if failed or len(parts) > 1:  # back in the lines' order (config rows are checked in Python)
        staged = staged.take(pc.sort_indices(pa.array(lines, pa.int64())))
    return staged


def stage_records(table: Any, origins: Optional[Any], python_check: PythonCheck) -> Any:
    """Parquet records (already typed by the file's schema) -> a staged Arrow table (`origins`: for
    the rows without an origin of their own; None: every row has one)."""
    import pyarrow as pa

    good, bad_rows = stage_table(table, origins, flag_rows_with_configs(table))
    if not bad_rows:
        return good
    checked = pa.Table.from_pylist([python_check(i) for i in bad_rows], schema=staged_schema())
    return pa.concat_tables([good, checked])


# --- the native stage 1 over JSON Lines (engine/src/jsonl_stage.rs) --------------------------------

NATIVE_EXTRA: Final = ("__line", "__start", "__end")  # a parsed row's line (or batch row) and byte span
LineCheck = Callable[[int, int, int], dict[str, Any]]  # (line, start, end) -> staged row (Python)


def flag_rows_with_configs(table: Any) -> Any:
    """`flag_rows`, but a config row that passes the column rules is flagged only when its payload
    does not load (what traces.validate adds for config rows), instead of always."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not table.num_rows:
        return pa.array([], pa.bool_())
    flagged = flag_rows(table, config_rows=False)
    configs = pc.and_(pc.fill_null(pc.equal(table["kind"], EventKind.config.value), False), pc.invert(flagged))
    if pc.any(configs).as_py():
        index = pc.indices_nonzero(configs)
        payloads = table["payload"].take(index).to_pylist()
        refused = [i for i, p in zip(index.to_pylist(), payloads) if not config_payload_ok(p)]
        if refused:
            mask = pc.is_in(pa.array(range(table.num_rows), pa.int64()), value_set=pa.array(refused, pa.int64()))
            flagged = pc.or_(flagged, mask)
    return flagged


@functools.lru_cache(maxsize=256)
def config_payload_ok(payload: str) -> bool:
    """Whether a config row's payload loads (traces.validate checks the same; the payloads of a
    trace's config rows are few and repeat, hence the cache)."""
    try:
        codec.loads_config(payload)
    except codec.PayloadError:
        return False
    return True


def native_stager() -> Optional[Any]:
    """The engine's JSON Lines parser (`groupspec_engine.JsonlStager` over the trace columns), or
    None when the engine is not built."""
    from check.native import NativeEngineUnavailable, engine_module

    try:
        module = engine_module()
    except NativeEngineUnavailable:
        return None
    return module.JsonlStager([(c.name, c.type) for c in COLUMNS])


def stage_parsed(parsed: Any, failed: Sequence[tuple[int, int, int]], python_check: LineCheck) -> Any:
    """A chunk the native parser read (`JsonlStager.stage`/`stage_batch`) -> a staged Arrow table.

    The parser only parses: the column rules are the same vector checks as for pyarrow's parse
    (`stage_table`, config rows by `flag_rows_with_configs`). The lines it did not parse and the
    rows the checks flag go through `python_check(line, start, end)`, the Python validator, which
    gives their reason.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.Table.from_batches([parsed])
    trace = table.select(list(COLUMN_NAMES))
    good, bad_rows = stage_table(trace, None, flag_rows_with_configs(trace))  # origin: the parser's
    redo = list(failed)
    if bad_rows:
        index = pa.array(bad_rows, pa.int64())
        redo += zip(*(table[n].take(index).to_pylist() for n in NATIVE_EXTRA))
    if not redo:
        return good
    redo.sort()
    checked = pa.Table.from_pylist([python_check(*r) for r in redo], schema=staged_schema())
    staged = pa.concat_tables([good, checked])
    if good.num_rows and checked["reject_reason"].null_count:
        # rows only Python accepts: back in the lines' order (input clustered by group stays so)
        bad = set(bad_rows)
        lines = [n for i, n in enumerate(table["__line"].to_pylist()) if i not in bad] + [r[0] for r in redo]
        staged = staged.take(pc.sort_indices(pa.array(lines, pa.int64())))
    return staged
