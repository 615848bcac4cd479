"""The figures of `groupspec clients` runs, one Markdown table row per report directory.

    PYTHONPATH=. .venv/bin/python benchmarks/clients_summary.py docs/clients/*/

Reads each DIR/report.json (clients/report.py) and prints: target, client, static slots, churn done
by kind, records acknowledged / consumed / duplicate deliveries, generations, commits and commit
failures, client errors and logged warnings, members that exited by themselves, drained, the
promise's violations by kind, and observe's findings (or "not observed"). Pasted into
benchmarks/clients_results.md.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

HEADER = ("| target | client | churn done | acknowledged | consumed | dup. | generations | commits (failed) "
          "| errors / warnings | exits | drained | violations | observe |")


def row(doc: dict[str, Any]) -> str:
    churn = ", ".join(f"{k} {n}" for k, n in doc["churn"]["actions_by_kind"].items()) or "none"
    violations = sum(doc["violations_by_kind"].values())
    by_kind = ", ".join(f"{k} {n}" for k, n in doc["violations_by_kind"].items() if n)
    observe = doc.get("observe")
    closed = observe.get("closed_unanswered") if observe else None
    judged = (f"{observe['findings']} findings; judged {observe.get('judged_requests')} of "
              f"{observe.get('group_requests')} group requests"
              + (f" ({closed} never answered: connection closed)" if closed else "")
              + (", then inconclusive" if observe.get("inconclusive_groups") else
                 ", to the end" if observe.get("judged_to_the_end") else "") if observe else "not observed")
    return (f"| {doc['target']} | {doc['client']} | {churn} | {doc['produced']:,} | {doc['consumed']:,} | "
            f"{doc['duplicates']:,} | {len(doc['generations'])} | {doc['commits']:,} ({doc['commit_failures']}) | "
            f"{doc['client_errors']} / {doc.get('client_logs', 0)} | {len(doc.get('exits', []))} | "
            f"{'yes' if doc['drained'] else '**no**'} | "
            f"{'**' + str(violations) + '** (' + by_kind + ')' if violations else '0'} | {judged} |")


def main(dirs: list[str]) -> int:
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|")
    for d in dirs:
        path = os.path.join(d, "report.json")
        if not os.path.exists(path):
            print(f"| {d} | no report.json | | | | | | | | | | | |")
            continue
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        observed = os.path.join(d, "observe", "report.json")
        if doc.get("observe") and os.path.exists(observed):  # (observe's own report says more)
            with open(observed, encoding="utf-8") as f:
                obs = json.load(f)
            doc["observe"].setdefault("closed_unanswered", obs.get("closed_unanswered"))
            doc["observe"]["judged_to_the_end"] = all(g.get("judging") == "to the end" for g in obs.get("groups", []))
        print(row(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
