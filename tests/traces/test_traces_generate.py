"""`groupspec traces generate`: files, manifest, parallel writers, progress, failures."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Optional

import pytest

from model.coordinator_api import Coordinator, CoordinatorConfig, Recorder
from reference.coordinator import ReferenceCoordinator
from groupspec.cli import main
from traces.generate import GenerateError, GeneratorOptions, generate, model_factory


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def test_parallel_writers_write_the_files_one_process_writes(tmp_path: Path) -> None:
    options = GeneratorOptions(groups=40, steps=20, files=4)
    one = generate(options, model_factory, tmp_path / "one", source="model")
    three = generate(options, model_factory, tmp_path / "three", source="model", jobs=3)
    assert one == three
    assert one["events"] > 40 * 5
    a, b = _files(tmp_path / "one"), _files(tmp_path / "three")
    assert [n for n in a if n.startswith("part-")] == [f"part-{i:05d}.jsonl" for i in range(4)]
    assert a == b  # the model's member ids are deterministic, so byte for byte
    # group i is in file i % 4, in order
    first = [json.loads(line)["group_id"] for line in a["part-00001.jsonl"].decode().splitlines()]
    assert list(dict.fromkeys(first)) == [f"g{i:07d}" for i in range(1, 40, 4)]


def test_parallel_writers_keep_the_bug_manifest(tmp_path: Path) -> None:
    options = GeneratorOptions(groups=30, steps=20, files=3, bugs=("no-generation-bump",), bug_fraction=0.5)
    one = generate(options, ReferenceCoordinator, tmp_path / "one")
    two = generate(options, ReferenceCoordinator, tmp_path / "two", jobs=2)
    assert one["bugged_groups"] and one["bugged_groups"] == two["bugged_groups"]
    assert one["bugged_groups"] == sorted(one["bugged_groups"])
    assert one["events"] == two["events"]


def test_progress_lines_count_the_groups(tmp_path: Path) -> None:
    for jobs in (1, 2):
        stream = io.StringIO()
        generate(GeneratorOptions(groups=12, steps=10, files=2), model_factory, tmp_path / f"p{jobs}",
                 source="model", jobs=jobs, progress=stream)
        assert "generated 12/12 groups" in stream.getvalue().splitlines()[-1]


def _failing_factory(config: CoordinatorConfig, recorder: Optional[Recorder] = None,
                     bugs: frozenset[str] = frozenset()) -> Coordinator:
    raise RuntimeError("factory exploded")


def test_a_failing_writer_process_stops_the_run_and_publishes_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="a generator process failed: RuntimeError: factory exploded"):
        generate(GeneratorOptions(groups=6, files=2), _failing_factory, tmp_path / "out", jobs=2)
    assert not (tmp_path / "out").exists()


def test_bad_jobs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["traces", "generate", "--groups", "3", "--jobs", "0", "--out", str(tmp_path / "out")])
    assert rc == 2
    assert "--jobs must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_unknown_bug_name_is_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # bug fraction 0: no group would ever construct a bugged coordinator, the name is still checked
    with pytest.raises(GenerateError, match="unknown seeded bug"):
        generate(GeneratorOptions(groups=3, bugs=("no-such-bug",), bug_fraction=0.0), ReferenceCoordinator,
                 tmp_path / "out")
    rc = main(["traces", "generate", "--groups", "3", "--bug", "no-such-bug", "--out", str(tmp_path / "cli")])
    assert rc == 2
    assert "unknown seeded bug(s) ['no-such-bug']" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "cli").exists()
