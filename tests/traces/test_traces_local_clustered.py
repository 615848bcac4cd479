"""`replay --local` on input clustered by group: straight from stage 1 to stage 2, no spill.

The clustered path gives the same verdicts, rejects (as multisets), counts and row coverage as the
sorted path (the external sort, forced here) and as `--engine python`, on generated traces with
every seeded bug and malformed rows inside groups. Input that is not clustered (a group split
across two files, a group's rows out of order, a reject of a group already judged) takes the
sorted path and gives the right verdicts; the negative controls run the clustered path with its
order check switched off on the same input and see it go wrong. The input rows are counted while
they are read, and a lost row still fails the count check.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from traces_helpers import model_trace, row_json, write_jsonl
from check.native_replay import make_replayer
from groupspec.cli import main
from reference.bugs import BUGS
from reference.coordinator import ReferenceCoordinator
from traces import local
from traces.batch import native_stager
from traces.generate import GeneratorOptions, run_group
from traces.inputs import Inputs, classify
from traces.local import CLUSTERED, SORTED, LocalResult, ReadCount, Unclustered, run_local

BUGGY = sorted(BUGS)


def _bugged_lines() -> list[str]:
    """One group per seeded bug and two clean ones, group after group (as `traces generate` writes)."""
    options = GeneratorOptions(groups=len(BUGGY) + 2, steps=30)
    lines: list[str] = []
    for k, bug in enumerate([None, *BUGGY, None]):
        bugs = frozenset({bug}) if bug is not None else frozenset()
        lines += [row_json(e) for e in run_group(f"g{k:02d}", f"13:{k}", options, ReferenceCoordinator, bugs,
                                                 "reference")]
    return lines


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return _bugged_lines()


def _with_malformed(lines: list[str]) -> list[str]:
    """Rejects inside groups that keep the input clustered: a row without seq in the middle of
    its group, a line cut short, a duplicate and a payload that disagrees with its columns."""
    out = list(lines)
    gid = json.loads(out[40])["group_id"]
    out.insert(41, json.dumps({"group_id": gid, "ts_ms": 0, "source": "t", "kind": "advance"}))
    out.insert(90, out[89][:70])
    out.insert(130, out[129])
    k = next(i for i in range(200, len(out)) if '"error":"NONE"' in out[i])
    out[k] = out[k].replace('"error":"NONE"', '"error":"REBALANCE_IN_PROGRESS"')
    # a key given twice: the engine's parser refuses the line, the Python validator takes it (the
    # last value wins); staged in its place, it keeps the input clustered
    out[300] = out[300].replace('"source":"reference"', '"source":"x","source":"reference"', 1)
    return out


def _key(result: LocalResult) -> tuple[Any, ...]:
    def multiset(rows: list[dict[str, Any]]) -> Counter[str]:
        return Counter(json.dumps(r, sort_keys=True) for r in rows)

    return result.counts, multiset(result.verdicts), multiset(result.rejects), result.coverage


def _sorted_run(inputs: Inputs, native: Optional[Any], monkeypatch: pytest.MonkeyPatch) -> LocalResult:
    """The run through the external sort, however the input is ordered."""
    def unclustered(*_: Any) -> Iterator[Any]:
        raise Unclustered("forced by the test")
        yield

    with monkeypatch.context() as m:
        m.setattr(local, "_clustered_rows", unclustered)
        result = run_local(inputs, native=native)
    assert result.path == SORTED
    return result


def _blind(inputs: Inputs, monkeypatch: pytest.MonkeyPatch) -> LocalResult:
    """The clustered path with its order check switched off (what the check prevents)."""
    with monkeypatch.context() as m:
        m.setattr(local.GroupOrder, "good", lambda self, table: None)
        m.setattr(local.GroupOrder, "rejects", lambda self, table: None)
        result = run_local(inputs, native=make_replayer())
    assert result.path == CLUSTERED
    return result


def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage 1 in many small tables (groups run on from one into the next)."""
    monkeypatch.setattr(local, "NATIVE_CHUNK_BYTES", 4096)
    monkeypatch.setattr(local, "BATCH_ROWS", 50)


@pytest.mark.parametrize("small", [False, True])
def test_the_clustered_path_agrees_with_the_sorted_path_and_the_python_replay(
        tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        small: bool) -> None:
    if small:
        _small_chunks(monkeypatch)
    inputs = classify([str(write_jsonl(tmp_path / "t.jsonl", _with_malformed(lines)))])
    clustered = run_local(inputs, native=make_replayer())
    assert clustered.path == CLUSTERED and "not clustered" not in capsys.readouterr().err
    python = run_local(inputs)  # the pyarrow stage 1 keeps the lines' order too
    assert python.path == CLUSTERED
    assert _key(clustered) == _key(python) == _key(_sorted_run(inputs, make_replayer(), monkeypatch))
    # not vacuous: every seeded bug was found, and the rejects inside groups are there
    statuses = Counter(v["status"] for v in clustered.verdicts)
    assert clustered.counts.groups == len(BUGGY) + 2 and statuses["ok"] < len(BUGGY)
    assert clustered.counts.rejected >= 3 and clustered.counts.rows == len(_with_malformed(lines))


def test_parquet_input_takes_the_clustered_path(tmp_path: Path, lines: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from traces.schema import arrow_schema

    rows = [json.loads(line) for line in lines]
    pq.write_table(pa.Table.from_pylist(rows, schema=arrow_schema()), tmp_path / "t.parquet", row_group_size=300)
    inputs = classify([str(tmp_path / "t.parquet")])
    clustered = run_local(inputs, native=make_replayer())
    assert clustered.path == CLUSTERED and clustered.counts.rows == len(rows)
    assert _key(clustered) == _key(_sorted_run(inputs, make_replayer(), monkeypatch))


def test_a_group_may_run_on_from_one_file_into_the_next(tmp_path: Path, lines: list[str]) -> None:
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", lines[:45])
    write_jsonl(tmp_path / "in" / "b.jsonl", lines[45:])
    whole = run_local(classify([str(write_jsonl(tmp_path / "t.jsonl", lines))]), native=make_replayer())
    split = run_local(classify([str(tmp_path / "in")]), native=make_replayer())
    assert split.path == CLUSTERED
    assert _statuses(split) == _statuses(whole) and split.counts == whole.counts


def _statuses(result: LocalResult) -> dict[str, tuple[str, int]]:
    out = {v["group_id"]: (v["status"], v["events"]) for v in result.verdicts}
    assert len(out) == len(result.verdicts)  # one verdict per group
    return out


def _group_rows(lines: list[str], gid: str) -> list[int]:
    return [i for i, line in enumerate(lines) if json.loads(line)["group_id"] == gid]


def test_a_group_split_across_two_files_is_sorted(tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Group g01 (a bugged one) begins in a.jsonl, other groups follow, and it ends in b.jsonl."""
    rows = _group_rows(lines, "g01")
    half = rows[len(rows) // 2]
    first = lines[:half] + lines[rows[-1] + 1:]
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", first)
    write_jsonl(tmp_path / "in" / "b.jsonl", lines[half:rows[-1] + 1])
    inputs = classify([str(tmp_path / "in")])
    right = run_local(classify([str(write_jsonl(tmp_path / "t.jsonl", lines))]))
    split = run_local(inputs, native=make_replayer())
    assert split.path == SORTED
    assert f"in/b.jsonl:1: group 'g01' again" in capsys.readouterr().err
    assert _statuses(split) == _statuses(right) and split.counts == right.counts
    assert _key(split) == _key(run_local(inputs))  # and the Python replay agrees
    # negative control: blindly clustered, g01 is judged as two groups
    blind = _blind(inputs, monkeypatch)
    assert [v["group_id"] for v in blind.verdicts].count("g01") == 2


def test_rows_out_of_order_inside_a_group_are_sorted(tmp_path: Path, lines: list[str],
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rows = _group_rows(lines, "g00")
    swapped = list(lines)
    a, b = rows[10], rows[20]
    swapped[a], swapped[b] = swapped[b], swapped[a]
    inputs = classify([str(write_jsonl(tmp_path / "s.jsonl", swapped))])
    right = run_local(classify([str(write_jsonl(tmp_path / "t.jsonl", lines))]), native=make_replayer())
    result = run_local(inputs, native=make_replayer())
    assert result.path == SORTED and "s.jsonl:" in capsys.readouterr().err
    assert _statuses(result) == _statuses(right) and not result.rejects
    # negative control: blindly clustered, the swapped rows are out of order
    blind = _blind(inputs, monkeypatch)
    assert blind.rejects or _statuses(blind) != _statuses(right)


def test_a_reject_of_a_group_already_judged_is_sorted(tmp_path: Path, lines: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A line of the first group, cut short, at the end of the input: the group's replay is cut
    short (incomplete), which stage 2 knows only if it sees the reject before judging the group."""
    _small_chunks(monkeypatch)
    last = json.loads(lines[_group_rows(lines, "g00")[-1]])
    cut = lines + [json.dumps(last | {"seq": last["seq"] + 1}, separators=(",", ":"))[:60]]
    inputs = classify([str(write_jsonl(tmp_path / "c.jsonl", cut))])
    result = run_local(inputs, native=make_replayer())
    assert result.path == SORTED
    assert _key(result) == _key(run_local(inputs)) and result.counts.rejected == 1
    assert _statuses(result)["g00"][0] == "incomplete"
    blind = _blind(inputs, monkeypatch)
    assert _statuses(blind)["g00"][0] == "ok"


def test_the_cli_discards_what_the_clustered_path_wrote(tmp_path: Path, lines: list[str],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The order breaks in the last line: the output holds each verdict once, and says so."""
    rows = _group_rows(lines, "g00")
    path = write_jsonl(tmp_path / "c.jsonl", lines + [lines[rows[5]]])  # a duplicate of g00, at the end
    assert main(["replay", "--local", "--input", str(path), "--output", str(tmp_path / "out")]) in (0, 1)
    err = capsys.readouterr().err
    assert err.count("not clustered") == 1 and f"c.jsonl:{len(lines) + 1}: group 'g00' again" in err
    verdicts = [json.loads(x) for x in (tmp_path / "out" / "verdicts.jsonl").read_text().splitlines()]
    assert sorted(v["group_id"] for v in verdicts) == sorted({json.loads(x)["group_id"] for x in lines})
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["local_path"] == SORTED and summary["rejected"] == 1
    assert main(["replay", "--local", "--input", str(tmp_path / "c.jsonl"), "--output", str(tmp_path / "o2"),
                 "--engine", "python"]) in (0, 1)
    assert json.loads((tmp_path / "o2" / "summary.json").read_text())["rejected"] == 1
    assert main(["replay", "--local", "--input", str(write_jsonl(tmp_path / "ok.jsonl", lines)),
                 "--output", str(tmp_path / "o3")]) in (0, 1)
    assert json.loads((tmp_path / "o3" / "summary.json").read_text())["local_path"] == CLUSTERED


def test_an_interrupted_run_leaves_no_output(tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", lines)
    real = local._pick
    made: list[int] = []

    def interrupt(row: dict[str, Any], table: str) -> dict[str, Any]:
        made.append(1)
        if len(made) == 5:  # Ctrl-C in the middle of the run, verdicts already written
            raise KeyboardInterrupt
        return real(row, table)

    monkeypatch.setattr(local, "_pick", interrupt)
    assert main(["replay", "--local", "--input", str(path), "--output", str(tmp_path / "out")]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]  # no output, no leftovers


def test_the_rows_are_counted_as_they_are_read(tmp_path: Path, lines: list[str]) -> None:
    text = "\n".join(lines[:30]) + "\n\n" + lines[30]  # a blank line, and a last line without a newline
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    for stager in (native_stager(), None):
        count = ReadCount()
        assert sum(t.num_rows for t in local.staged_batches(classify([str(path)]), stager, count)) == 32
        assert count.rows == 32


def test_a_row_lost_in_stage_1_fails_the_count(tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Negative control: the count comes from the bytes read, not from stage 1's rows."""
    real = local._split_direct

    def lossy(table: Any) -> tuple[Any, Any]:
        direct, good = real(table)
        return direct, good.slice(1)

    monkeypatch.setattr(local, "_split_direct", lossy)
    path = write_jsonl(tmp_path / "t.jsonl", lines)
    assert main(["replay", "--local", "--input", str(path), "--output", str(tmp_path / "out")]) == 3
    assert "counts do not add up" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_broker_logs_take_the_sorted_path() -> None:
    """Broker logs interleave groups by nature: they are always sorted."""
    data = Path(__file__).parents[1] / "data" / "broker-logs"
    result = run_local(classify([str(p) for p in sorted(data.glob("*.log"))[:1]]))
    assert result.path == SORTED and result.counts.groups >= 1
