"""`replay --local` streams: an external sort by group through spill buckets, so memory does not
grow with the input (input clustered by group skips it: test_traces_local_clustered.py; the traces
here end with rows that break the order, so they are sorted); and the Spark job brings nothing but
counts to its driver.

The streamed run is compared with itself at one bucket (everything in memory, as before the
spill); a bucket size of a few kilobytes forces many buckets, each read back alone.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from traces_helpers import model_trace, row_json, write_jsonl
from groupspec.cli import main
from check.native_replay import make_replayer
from traces import local
from traces.inputs import classify
from traces.local import LocalResult, Spill, bucket_count, run_local

JOB = Path(__file__).resolve().parents[2] / "traces" / "job.py"


def _trace(tmp: Path, groups: int = 12) -> Path:
    lines: list[str] = []
    for k in range(groups):
        lines += [row_json(e) for e in model_trace(f"g{k}", str(k), steps=25)]
    # a reject, a duplicate and a cut line, so every kind of output row passes through the spill
    lines.append(json.dumps({"group_id": "g1", "ts_ms": 0, "source": "t", "kind": "advance"}))
    lines.append(lines[3])
    lines.append(lines[40][:50])
    return write_jsonl(tmp / "t.jsonl", lines)


def _key(result: LocalResult) -> tuple[Any, ...]:
    verdicts = sorted(json.dumps(v, sort_keys=True) for v in result.verdicts)
    rejects = sorted(json.dumps(r, sort_keys=True) for r in result.rejects)
    return result.counts, verdicts, rejects, result.coverage


def test_many_small_buckets_give_the_same_output_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = classify([str(_trace(tmp_path))])
    assert bucket_count(inputs) == 1
    whole = run_local(inputs)
    assert whole.path == local.SORTED  # the duplicate at the end breaks the order
    assert whole.counts.groups == 12 and whole.counts.rejected >= 2

    read_back: list[int] = []
    original = Spill.sorted_batches

    def spy(self: Spill, fmt: str) -> Iterator[Any]:
        for batch in original(self, fmt):
            read_back.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(local, "SPILL_BUCKET_BYTES", 4096)
    monkeypatch.setattr(Spill, "sorted_batches", spy)
    assert bucket_count(inputs) > 8
    split = run_local(inputs)
    assert _key(split) == _key(whole)
    assert sum(read_back) == split.counts.replayed + sum(1 for r in split.rejects if r["reason"].startswith(
        ("duplicate", "conflicting", "out of order")))


def test_a_bucket_holds_its_share_of_the_input_not_all_of_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The largest table in memory in stage 2 is one bucket: with 16 buckets, well under half the rows."""
    inputs = classify([str(_trace(tmp_path, groups=24))])
    sizes: list[int] = []
    real_sort = local.Spill.sorted_batches

    def spy(self: Spill, fmt: str) -> Iterator[Any]:
        import pyarrow as pa

        for bucket in range(self.buckets):
            if self.path(bucket).exists():
                with pa.memory_map(str(self.path(bucket))) as source:
                    sizes.append(pa.ipc.open_stream(source).read_all().num_rows)
        yield from real_sort(self, fmt)

    monkeypatch.setattr(local, "SPILL_BUCKET_BYTES", 1)
    monkeypatch.setattr(local, "MAX_BUCKETS", 16)
    monkeypatch.setattr(Spill, "sorted_batches", spy)
    result = run_local(inputs)
    assert result.path == local.SORTED and result.counts.groups == 24 and len(sizes) > 8
    assert max(sizes) < sum(sizes) / 2


def test_the_cli_streams_into_its_output_and_leaves_no_spill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace(tmp_path)
    monkeypatch.setattr(local, "SPILL_BUCKET_BYTES", 4096)
    assert main(["replay", "--local", "--input", str(path), "--output", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "_SUCCESS", "coverage.jsonl", "rejects.jsonl", "summary.json", "verdicts.jsonl"]
    verdicts = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert sorted(v["group_id"] for v in verdicts) == sorted(f"g{k}" for k in range(12))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"] == summary["replayed"] + summary["rejected"]
    assert not list(tmp_path.glob(".out.tmp-*"))


# --- the Spark job: only counts reach the driver ------------------------------------------------

_TO_DRIVER = frozenset({"collect", "collectAsList", "toPandas", "toLocalIterator", "take", "head", "tail",
                        "toArrow", "toJSON"})


def calls_to_driver(source: str) -> list[str]:
    """Calls in `source` that bring a DataFrame's rows to the driver (`first()` is allowed only on an
    aggregate, `count()` always: both are counts)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            target = node.func.value
            if name in _TO_DRIVER:
                found.append(f"line {node.lineno}: .{name}()")
            elif name == "first" and not (isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute)
                                          and target.func.attr == "agg"):
                found.append(f"line {node.lineno}: .first() not on an aggregate")
    return found


def test_the_spark_job_brings_only_counts_to_the_driver() -> None:
    assert calls_to_driver(JOB.read_text()) == []


def test_the_driver_check_sees_a_collect() -> None:
    """Negative control: a job that collects verdicts, or takes the first of a plain frame, is caught."""
    bad = "def run(v):\n    rows = v.collect()\n    one = v.where('x').first()\n    n = v.agg(1).first()\n"
    assert calls_to_driver(bad) == ["line 2: .collect()", "line 3: .first() not on an aggregate"]


def _keys(rows: list[tuple[Any, ...]]) -> Any:
    import pyarrow as pa

    return pa.table({"group_id": [r[0] for r in rows], "seq": pa.array([r[1] for r in rows], pa.int64()),
                     "ts_ms": pa.array([r[2] for r in rows], pa.int64())})


@pytest.mark.parametrize("rows, fmt, expected", [
    ([("b", 0, 5), ("b", 1, 5), ("a", 0, 1), ("a", 2, 0)], "trace", True),  # groups in any order
    ([("b", 0, 5), ("b", 0, 5)], "trace", True),  # ties keep their order either way
    ([("b", 0, 5), ("a", 0, 1), ("b", 1, 5)], "trace", False),  # a group in two places
    ([("a", 1, 0), ("a", 0, 0)], "trace", False),  # seq decreasing
    ([("a", 1, 0), ("a", 0, 1)], "log", True),  # logs: by ts_ms first
    ([("a", 0, 1), ("a", 1, 0)], "log", False),
    ([("a", 0, 1), ("a", 0, 1), ("a", 1, 1), ("a", 0, 2)], "log", True),
    ([("a", 0, 0), (None, 1, 0)], "trace", False),  # a null key is sorted
])
def test_in_group_order_says_when_the_sort_can_be_skipped(rows: list[tuple[Any, ...]], fmt: str,
                                                          expected: bool) -> None:
    assert local.in_group_order(_keys(rows), fmt) is expected


def test_interleaved_groups_are_sorted_and_clustered_ones_need_not_be(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _trace(tmp_path).read_text().splitlines()[:-3]  # the model traces, group after group
    path = write_jsonl(tmp_path / "c.jsonl", lines)
    interleaved = write_jsonl(tmp_path / "i.jsonl", lines[0::2] + lines[1::2])
    sorts: list[bool] = []
    real = local.in_group_order

    def spy(table: Any, fmt: str) -> bool:
        sorts.append(real(table, fmt))
        return sorts[-1]

    monkeypatch.setattr(local, "in_group_order", spy)
    clustered = run_local(classify([str(path)]), native=make_replayer())
    assert clustered.path == local.CLUSTERED and sorts == []  # straight through, no spill
    mixed = run_local(classify([str(interleaved)]), native=make_replayer())
    assert mixed.path == local.SORTED and sorts == [False]
    assert _key(mixed) == _key(clustered) and clustered.counts.groups == 12
