"""Seeded bugs under real clients: which of reference/bugs.py's bugs real-client churn finds, per
client, and what each client then did.

    PYTHONPATH=. .venv/bin/python benchmarks/client_bug_table.py --runs /tmp/bugtable \\
        [--client C]... [--bug NAME]... [--jobs 2] [--minutes 0.75] [--seed 11] \\
        [--markdown benchmarks/client_bug_results.md]

Each cell is one `groupspec clients --target serve --bug NAME` run (a subprocess, its report in
RUNS/CLIENT/NAME/): 3 members, the first static and two dynamic, every churn kind (stop, kill,
pause past the session timeout, restart, static restart) at times drawn from the seed, a short
churn phase and a bounded drain. Every client also runs without a bug (`none`, the baseline) with
the same seed, so the same churn schedule.

A cell is read from its report.json and events.jsonl only (what the member programs printed):

- **found** by: a promise violation (clients/promise.py: unconsumed, double-ownership,
  commit-backwards), the group not draining (no settled generation with every record consumed
  within the drain time), a member that exited by itself (a fatal client error), a kind of group
  error the baseline did not print (`error` and `commit_failed` events, and the `client_log`
  warnings of the clients' coordinator loggers or librdkafka's group facilities, not those about
  connections, metadata or a slow machine such as librdkafka's REQTMOUT; texts with numbers and ids
  blanked), or, when the members went through observe, the judging proxy's findings (`observe` in
  report.json) other than those with the symptom it also shows without any seeded bug under this
  machine's load (`LOAD_ARTEFACT`: a JoinGroup answered while the judge expected it parked; listed
  apart). None of these: not found.
- **what the client did**, each against the baseline: `lost N records` (unconsumed), `stuck`
  (did not drain), `crashed N` (exits by themselves), `rejoined N` (assignments after a member
  process's first, when more than 1.5 x the baseline's + 2), `retried N` (those group
  errors and warnings, when more than 1.5 x the baseline's + 5); otherwise `as without the bug`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final, Optional

ROOT: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from model.atomic import write_text_atomic  # noqa: E402
from reference.bugs import BUGS, TIMING_BUGS  # noqa: E402

CLIENTS: Final = ("kafka-python", "librdkafka", "java")
KINDS: Final = "stop,kill,pause,restart,static-restart"
BASELINE: Final = "none"


@dataclass(slots=True)
class Cell:
    client: str
    bug: str
    exit_code: Optional[int] = None
    seconds: float = 0.0
    doc: dict[str, Any] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)  # normalized error kinds
    rejoins: int = 0
    retries: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.doc)


def normalize(text: str) -> str:
    """An error text with what varies between runs blanked: ids, numbers, member names."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27,}|[\w.-]+-[0-9a-f]{8}-[0-9a-f-]{27,}", "ID", text)
    text = re.sub(r"\b[ms]\d+-\d+\b", "MEMBER", text)
    text = re.sub(r"\d+", "N", text)
    return text[:110]


GROUP_LOG: Final = re.compile(r"\b(CGRP\w*|HEARTBEAT|JOINGROUP|SYNCGROUP|LEAVEGROUP|COMMIT|OFFSET\w*|REBALANCE|"
                              r"ASSIGN\w*)\b|GroupCoordinator")


# observe's finding classes whose symptom is seen without any seeded bug (the 10-minute runs against
# serve, docs/clients/): a JoinGroup answered while the judge still expected it parked, at a join
# phase, under load average 15-35 (the proxy reads requests late, so the judge believes a member
# joined later than the broker saw it, past its 200 ms slack). A cell whose observe findings are all
# of this symptom is not counted as found by observe; they are listed apart.
LOAD_ARTEFACT: Final = re.compile(r"^JoinGroup\|.*\|expected parked \(no answer yet\) actual NONE$")


def about_the_group(e: dict[str, Any]) -> bool:
    """An error the member saw (a raised error, a failed commit), or a warning its library logged about
    the group (kafka-python's and kafka-clients' coordinator loggers, librdkafka's group facilities);
    not the library's complaints about connections, metadata or a slow machine."""
    if e["ev"] in ("error", "commit_failed"):
        return True
    if e["ev"] != "client_log":
        return False
    message = str(e.get("message", ""))
    if message.startswith("REQTMOUT"):  # librdkafka: requests timed out in flight (a slow machine)
        return False
    return "coordinator" in str(e.get("logger", "")).lower() or bool(GROUP_LOG.search(message))


def read_events(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_cell(client: str, bug: str, a: argparse.Namespace) -> Cell:
    cell = Cell(client, bug)
    out = os.path.join(a.runs, client, bug)
    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, "-m", "groupspec.cli", "clients", "--target", "serve", "--client", client,
           "--consumers", "3", "--static", "1", "--churn", KINDS, "--minutes", str(a.minutes),
           "--seed", str(a.seed), "--session-timeout-ms", str(a.session_timeout_ms),
           "--drain-seconds", str(a.drain_seconds), "--report", out]
    if bug != BASELINE:
        cmd += ["--bug", bug]
    if a.direct:
        cmd.append("--no-observe")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    with open(os.path.join(out, "run.log"), "w", encoding="utf-8") as log:
        try:
            cell.exit_code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                            timeout=a.minutes * 60 + a.drain_seconds + 240).returncode
        except subprocess.TimeoutExpired:
            cell.exit_code = None
    seconds = time.monotonic() - t0
    write_text_atomic(os.path.join(out, "run.json"), json.dumps({"exit_code": cell.exit_code,
                                                                  "seconds": round(seconds, 1)}) + "\n")
    print(f"{client:12} {bug:45} exit {cell.exit_code} in {seconds:.0f}s", file=sys.stderr, flush=True)
    return read_cell(client, bug, a)


def observe_classes(doc: dict[str, Any], artefacts: bool) -> list[dict[str, Any]]:
    """observe's finding classes of a run: the load artefacts, or the others."""
    observe = doc.get("observe")
    classes = observe.get("classes", []) if isinstance(observe, dict) else []
    return [c for c in classes if bool(LOAD_ARTEFACT.match(c["class"])) == artefacts]


def found_by(cell: Cell, base: Cell) -> list[str]:
    d = cell.doc
    how = [f"{k} {n}" for k, n in d["violations_by_kind"].items() if n]
    if not d["drained"]:
        how.append("no drain")
    if d.get("exits"):
        how.append(f"{len(d['exits'])} member exits")
    new = sorted(set(cell.errors) - set(base.errors))
    if new:
        how.append(f"{len(new)} new error kinds")
    real = observe_classes(d, artefacts=False)
    if real:
        how.append(f"observe {sum(int(c['count']) for c in real)} findings")
    return how


def did(cell: Cell, base: Cell) -> list[str]:
    d = cell.doc
    out = []
    if d["violations_by_kind"].get("unconsumed"):
        out.append(f"lost {d['violations_by_kind']['unconsumed']} records")
    if not d["drained"]:
        out.append("stuck")
    if d.get("exits"):
        out.append(f"crashed {len(d['exits'])}")
    if cell.rejoins > 1.5 * base.rejoins + 2:
        out.append(f"rejoined {cell.rejoins} (base {base.rejoins})")
    if cell.retries > 1.5 * base.retries + 5:
        out.append(f"retried {cell.retries} (base {base.retries})")
    return out or ["as without the bug"]


def markdown(cells: dict[tuple[str, str], Cell], clients: list[str], bugs: list[str], a: argparse.Namespace) -> str:
    lines = ["| bug | kind | " + " | ".join(clients) + " |", "|---|---|" + "---|" * len(clients)]
    found = Counter[str]()
    for bug in bugs:
        row = [f"`{bug}`", "baseline" if bug == BASELINE else "timing" if bug in TIMING_BUGS else "logic"]
        for client in clients:
            cell, base = cells[(client, bug)], cells[(client, BASELINE)]
            if not cell.ok or not base.ok:
                row.append("not run" if cell.exit_code is None and not cell.seconds else
                           f"no report (exit {cell.exit_code})")
                continue
            if bug == BASELINE:
                how = found_by(cell, cell)
                row.append(("**violations: " + ", ".join(how) + "**; " if how else "clean; ")
                           + f"{cell.doc['produced']} records, {cell.rejoins} rejoins, {cell.retries} retries")
                continue
            how = found_by(cell, base)
            found[client] += bool(how)
            row.append(("**found**: " + ", ".join(how) if how else "not found") + "; did: " + ", ".join(did(cell, base)))
        lines.append("| " + " | ".join(row) + " |")
    total = len([b for b in bugs if b != BASELINE])
    lines += ["", "Found per client: " + ", ".join(f"{c} {found[c]}/{total}" for c in clients), ""]
    lines += ["New error kinds per found cell (first three):", ""]
    for bug in bugs:
        for client in clients:
            cell, base = cells[(client, bug)], cells[(client, BASELINE)]
            if bug == BASELINE or not cell.ok or not base.ok:
                continue
            new = sorted(set(cell.errors) - set(base.errors))
            if new:
                lines.append(f"- `{bug}` / {client}: " + "; ".join(f"`{x}`" for x in new[:3]))
    for artefacts, title in ((False, "observe's finding classes per cell (first two)"),
                             (True, "observe's load artefacts per cell (not counted; see LOAD_ARTEFACT)")):
        listed = [(bug, client, observe_classes(cells[(client, bug)].doc, artefacts)) for bug in bugs
                  for client in clients if cells[(client, bug)].ok]
        listed = [x for x in listed if x[2]]
        if listed:
            lines += ["", title + ":", ""]
            lines += [f"- `{bug}` / {client}: " + "; ".join(f"`{c['class']}`" for c in cs[:2]) for bug, client, cs in listed]
    return "\n".join(lines) + "\n"


def header(a: argparse.Namespace, clients: list[str]) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    method = __doc__.split("\n\n", 2)[2] if __doc__ else ""
    return (f"# Seeded bugs under real clients (issue 25, part 4)\n\n"
            f"Made by `benchmarks/client_bug_table.py --jobs {a.jobs} --minutes {a.minutes:g} --seed {a.seed} "
            f"--session-timeout-ms {a.session_timeout_ms} --drain-seconds {a.drain_seconds:g}` at commit "
            f"{commit.strip()}{' --direct' if a.direct else ''}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"on the shared 2-core machine; clients: {', '.join(clients)}; "
            + ("the members bootstrap at serve directly (no observe)" if a.direct else
               "every member's traffic goes through `groupspec observe` (its findings count)")
            + f".\n\n## Method\n\n{method}\n## The table\n\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", required=True, help="directory for each cell's report (RUNS/CLIENT/BUG/)")
    p.add_argument("--client", action="append", choices=CLIENTS, help="clients (default all)")
    p.add_argument("--bug", action="append", choices=sorted(BUGS), help="bugs (default all)")
    p.add_argument("--jobs", type=int, default=2, help="cells run at once (default 2)")
    p.add_argument("--minutes", type=float, default=0.75, help="churn minutes per cell (default 0.75)")
    p.add_argument("--seed", type=int, default=11, help="churn seed, the same for every cell (default 11)")
    p.add_argument("--session-timeout-ms", type=int, default=6000, help="members' session timeout (default 6000)")
    p.add_argument("--drain-seconds", type=float, default=45.0, help="drain bound per cell (default 45)")
    p.add_argument("--markdown", default=None, help="also write the table to this file")
    p.add_argument("--direct", action="store_true",
                   help="members bootstrap at serve directly (--no-observe): only the promise and the clients judge")
    p.add_argument("--render", action="store_true",
                   help="run nothing: the table of the cells RUNS already has (the others: not run)")
    p.add_argument("--reuse", action="store_true", help="read cells that already have a report instead of running")
    a = p.parse_args()
    clients = a.client or list(CLIENTS)
    bugs = [BASELINE, *(a.bug or list(BUGS))]
    cells: dict[tuple[str, str], Cell] = {}
    todo = [(c, b) for c in clients for b in bugs]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(reuse_or_run, c, b, a): (c, b) for c, b in todo}
        for f in concurrent.futures.as_completed(futures):
            cells[futures[f]] = f.result()
    table = markdown(cells, clients, bugs, a)
    print(table)
    if a.markdown:
        write_text_atomic(a.markdown, header(a, clients) + table)
    return 0


def reuse_or_run(client: str, bug: str, a: argparse.Namespace) -> Cell:
    if a.render:
        return read_cell(client, bug, a)
    if a.reuse and os.path.exists(os.path.join(a.runs, client, bug, "run.json")):
        return read_cell(client, bug, a)
    return run_cell(client, bug, a)


def read_cell(client: str, bug: str, a: argparse.Namespace) -> Cell:
    """A cell from what its run left in RUNS/CLIENT/BUG/: run.json, report.json, events.jsonl."""
    cell = Cell(client, bug)
    out = os.path.join(a.runs, client, bug)
    if os.path.exists(os.path.join(out, "run.json")):
        with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
            run = json.load(f)
        cell.exit_code, cell.seconds = run["exit_code"], run["seconds"]
    if not os.path.exists(os.path.join(out, "report.json")):
        return cell
    with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
        cell.doc = json.load(f)
    for e in read_events(os.path.join(out, "events.jsonl")):
        if about_the_group(e):
            cell.errors[normalize(f"{e['ev']}: {e.get('error') or e.get('message')}")] += 1
            cell.retries += 1
        elif e["ev"] == "assigned":
            cell.rejoins += 1
    cell.rejoins -= len({name for name in cell.doc["members"] if cell.doc["members"][name]["events"].get("assigned")})
    return cell


if __name__ == "__main__":
    sys.exit(main())
