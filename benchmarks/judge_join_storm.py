"""How far the judge follows a join storm: N new members' first JoinGroups sent GAP ms apart, each
answered (MEMBER_ID_REQUIRED) LATENCY ms later, judged by one `fuzz.judge.GroupJudge` as observe
judges it (benchmarks/clients_results.md, "50 consumers").

    PYTHONPATH=$PWD .venv/bin/python benchmarks/judge_join_storm.py [N ...] [--gap 5] [--latency 300]

Every subset of the joins that the broker may have read by an answer is a distinct broker state
(another set of pending members), so the hypotheses grow as 2^k in the joins within the overtaking
window (the broker's recent latency). Prints, per N, the hypotheses after the last answer, or where
the judge gave up, and its CPU time.
"""

from __future__ import annotations

import argparse
import sys
import time

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

from fuzz.judge import GroupJudge, Inconclusive, Tolerance
from observe.judging import MAX_HYPOTHESES, OBSERVATION_MS, PROXY_OVERTAKE_MS

PROTOCOLS = (m.ProtocolMetadata("range", b"\x00"),)


def storm(n: int, gap: int, latency: int) -> str:
    judge = GroupJudge("g", CoordinatorConfig(), Tolerance(min_overtake_ms=PROXY_OVERTAKE_MS,
                                                           max_hypotheses=MAX_HYPOTHESES,
                                                           max_observation_ms=OBSERVATION_MS))
    cpu = time.process_time()
    # a DescribeGroups answered after `latency`: the broker's recent latency opens the window
    judge.send(0, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 0)
    judge.receive(0, latency, m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Dead", "", ""),)))
    for i in range(n):
        join = m.JoinGroupRequest("g", "", "consumer", PROTOCOLS, 10000, 30000, client_id=f"c{i}")
        judge.send(i + 1, ApiKey.JoinGroup, 5, join, latency + 1 + i * gap)
    for i in range(n):
        try:
            finding = judge.receive(i + 1, 2 * latency + 1 + i * gap,
                                    m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, member_id=f"c{i}-1"))
        except Inconclusive as e:
            return f"gave up at answer {i + 1} ({e}); {time.process_time() - cpu:.2f} s CPU"
        assert finding is None, finding
    return f"{len(judge.hyps)} hypotheses after the last answer; {time.process_time() - cpu:.2f} s CPU"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", type=int, nargs="*", default=[2, 4, 6, 8, 10], help="members joining at once")
    ap.add_argument("--gap", type=int, default=5, help="ms between two joins")
    ap.add_argument("--latency", type=int, default=300, help="ms the broker takes to answer")
    a = ap.parse_args()
    for n in a.n:
        print(f"{n} joins {a.gap} ms apart, answered after {a.latency} ms: {storm(n, a.gap, a.latency)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
