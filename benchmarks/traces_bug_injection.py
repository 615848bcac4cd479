"""Bug injection: does the replay flag exactly the bugged groups whose traces the bug changed?

    .venv/bin/python benchmarks/traces_bug_injection.py [--work DIR] [--groups 300] [--seed 11]
        [--all-groups 60] [--all-seed 5] [--all-fraction 0.3] [--spark]

Runs the commands of docs/traces-bug-injection.md through the same entry points as the CLI
(`groupspec traces generate` with the reference coordinator, `groupspec replay --local`):
1. a clean set (no bug) -> the baseline violations;
2. three bugs at fraction 0.2 on the same seed;
3. every seeded bug of reference.bugs on a smaller set.
For each set it prints bugged / observable / flagged and whether flagged == observable, plus the
first divergence (seq, rows, expected vs actual) of every flagged group that is not observable and
of every observable group that is not flagged. `--spark` replays the three-bug sets on Spark
local[2] too and checks the verdicts equal the local runner's. Exit 1 if any set mismatches.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

THREE_BUGS = ("no-generation-bump", "heartbeat-completing-rebalance-in-progress", "leave-no-rebalance")


def _generate(out: Path, groups: int, seed: int, bug: str | None, fraction: float) -> dict[str, Any]:
    from groupspec.cli import main

    if not (out / "manifest.json").exists():
        argv = ["traces", "generate", "--groups", str(groups), "--seed", str(seed), "--out", str(out)]
        if bug is not None:
            argv += ["--bug", bug, "--bug-fraction", str(fraction)]
        rc = main(argv)
        assert rc == 0, f"generate {argv} exited {rc}"
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return manifest


def _replay(data: Path, out: Path, spark: bool = False) -> list[dict[str, Any]]:
    from groupspec.cli import main

    argv = ["replay", "--input", str(data), "--output", str(out), "--overwrite"]
    argv += ["--master", "local[2]", "--partitions", "4", "--no-progress"] if spark else ["--local"]
    rc = main(argv)
    assert rc in (0, 1), f"replay {argv} exited {rc}"
    if spark:
        import pyarrow.parquet as pq

        return list(pq.read_table(str(out / "verdicts")).to_pylist())
    return [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]


def _describe(v: dict[str, Any]) -> str:
    return (f"{v['group_id']} seq {v['divergent_seq']} ({v['divergent_kind']}) rows [{v['row_id']}]: "
            f"expected {v['expected']!r}, actual {v['actual']!r}")


def _judge(name: str, manifest: dict[str, Any], verdicts: list[dict[str, Any]]) -> bool:
    flagged = {v["group_id"] for v in verdicts if v["status"] != "ok"}
    observable = set(manifest["bug_observable_groups"])
    bugged = set(manifest["bugged_groups"])
    exact = flagged == observable
    print(f"{name:45s} bugged {len(bugged):3d}  observable {len(observable):3d}  flagged {len(flagged):3d}  "
          f"flagged==observable {'yes' if exact else 'NO'}  flagged-but-unbugged {len(flagged - bugged)}")
    by_group = {v["group_id"]: v for v in verdicts}
    for gid in sorted(flagged - observable):
        print(f"    flagged, not observable: {_describe(by_group[gid])}")
    for gid in sorted(observable - flagged):
        print(f"    observable, not flagged: {gid}")
    rows: dict[str, int] = {}
    for gid in sorted(flagged & observable):
        rows[by_group[gid]["row_id"]] = rows.get(by_group[gid]["row_id"], 0) + 1
    for row_id, n in sorted(rows.items(), key=lambda kv: -kv[1]):
        example = next(by_group[g] for g in sorted(flagged & observable) if by_group[g]["row_id"] == row_id)
        print(f"    {n:3d} x rows [{row_id}]  e.g. {_describe(example)}")
    return exact


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--work", default=None)
    p.add_argument("--groups", type=int, default=300)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--fraction", type=float, default=0.2)
    p.add_argument("--all-groups", type=int, default=60)
    p.add_argument("--all-seed", type=int, default=5)
    p.add_argument("--all-fraction", type=float, default=0.3)
    p.add_argument("--spark", action="store_true", help="also replay the three-bug sets on Spark local[2]")
    args = p.parse_args()
    from reference.bugs import BUGS

    work = Path(args.work or tempfile.mkdtemp(prefix="traces-bugs-"))
    ok = True
    clean = _generate(work / "clean", args.groups, args.seed, None, 0.0)
    ok &= _judge(f"clean ({args.groups} groups, seed {args.seed})", clean, _replay(work / "clean", work / "clean-out"))
    sets = [(b, args.groups, args.seed, args.fraction) for b in THREE_BUGS]
    sets += [(b, args.all_groups, args.all_seed, args.all_fraction) for b in sorted(BUGS)]
    for bug, groups, seed, fraction in sets:
        data = work / f"{bug}-{groups}-{seed}"
        manifest = _generate(data, groups, seed, bug, fraction)
        verdicts = _replay(data, work / f"{bug}-{groups}-{seed}-out")
        ok &= _judge(f"{bug} ({groups} groups, seed {seed}, {fraction})", manifest, verdicts)
        if args.spark and bug in THREE_BUGS and groups == args.groups:
            on_spark = _replay(data, work / f"{bug}-{groups}-{seed}-spark")
            same = sorted(verdicts, key=lambda v: v["group_id"]) == sorted(on_spark, key=lambda v: v["group_id"])
            print(f"    Spark local[2] verdicts identical to the local runner: {'yes' if same else 'NO'}")
            ok &= same
    print("ALL EXACT" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
