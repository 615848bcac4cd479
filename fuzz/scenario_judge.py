"""The fuzz judge behind the scenario runner: a scenario's answers on a real clock, every timer order.

`conformance.realclock.AnswerJudge` for `groupspec scenario run` on a real-clock target. The runner
reports every request it sends (as the broker got it, at the API version it went at) and every
answer (when it was read off the socket); this keeps them and, only when the runner asks (an answer
differs from the scenario's virtual-clock expectation), feeds them in time order to one
`fuzz.judge.GroupJudge` per group: the set of model states consistent with everything the broker
did, timers firing in any order the real clock allows. No hypothesis left is a finding: a real
difference.

A scenario is judged by the table it was written for: the profile its tags name (`kafka-4`:
check/profile_kafka4.py), else Kafka 3.9's (model.table.CLASSIC_TABLE). What a per-group judge
cannot follow is UNJUDGED, never ALLOWED: ListGroups (no group), a DeleteGroups of several groups
(its groups are no longer followed), a group whose hypotheses grew past the bound (Inconclusive)
and a target with no version to judge the fields by.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

from check.profiles import PROFILES, Urgent, profile_table
from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import ApiKey
from wire.errors import EncodeError

from conformance.realclock import AnswerJudge, JudgeFactory, Verdict
from conformance.scenario import Scenario

from fuzz.allowances import allowances_in_force
from fuzz.client import wire_request
from fuzz.judge import Finding, GroupJudge, Inconclusive, Tolerance

JUDGE_CPU_MS = 10_000  # CPU time one observation may take before the group is inconclusive


@dataclass
class _Sent:
    number: int
    group: Optional[str]  # None: a request no group judge follows
    api: ApiKey
    version: int
    request: m.Request
    at_s: float


@dataclass
class ScenarioJudge:
    """One scenario's requests and answers, judged per group on demand."""

    config: CoordinatorConfig
    tolerance: Tolerance = Tolerance()
    table: Table = CLASSIC_TABLE  # what the broker is judged by
    urgent: Urgent = URGENT
    sends: dict[int, _Sent] = field(default_factory=dict)
    answers: list[tuple[float, int, m.Response]] = field(default_factory=list)
    judges: dict[str, GroupJudge] = field(default_factory=dict)
    unjudged: dict[str, str] = field(default_factory=dict)  # group -> why it is no longer followed
    fed_sends: set[int] = field(default_factory=set)
    fed_answers: int = 0
    t0: Optional[float] = None

    # ---------------------------------------------------------------- AnswerJudge

    def sent(self, number: int, request: m.Request, version: int, at_s: float, probe: bool = False) -> None:
        if self.t0 is None:
            self.t0 = at_s
        try:
            api, _, decoded = wire_request(request, version)  # what the broker decoded
        except EncodeError:
            api, decoded = request.api_key, request
        if isinstance(request, m.JoinGroupRequest) and isinstance(decoded, m.JoinGroupRequest):
            # the client id travels in the request header: the wire target sends the join's own
            # (DescribeGroups shows it per member), not the codec's
            decoded = dataclasses.replace(decoded, client_id=request.client_id)
        group = _group_of(decoded)
        if isinstance(decoded, m.DeleteGroupsRequest) and len(decoded.group_ids) > 1:
            for g in decoded.group_ids:
                self.unjudged.setdefault(g, f"request {number} deletes several groups at once")
        self.sends[number] = _Sent(number, group, api, version, decoded, at_s)

    def received(self, number: int, response: m.Response, at_s: float) -> None:
        self.answers.append((at_s, number, response))

    def verdict(self, numbers: Sequence[int], now_s: float) -> tuple[Verdict, str]:
        """FINDING if some group's judge finds a difference; else UNJUDGED if some request cannot
        be judged (no one group, or its group no longer followed); else ALLOWED."""
        self._feed(now_s)
        groups: list[str] = []
        unjudged: list[str] = []
        for n in numbers:
            s = self.sends.get(n)
            if s is None or s.group is None:
                unjudged.append(f"request {n} ({s.api.name if s else '?'}) names no one group")
            elif s.group not in groups:
                groups.append(s.group)
        answered = {n for _, n, _ in self.answers}
        for g in groups:
            if g in self.unjudged:
                unjudged.append(f"group {g!r}: {self.unjudged[g]}")
                continue
            judge = self._judge(g)
            finding = judge.finding
            if finding is None and any(n not in answered for n in numbers if self.sends[n].group == g):
                finding = self._call(g, lambda j: j.silence(self._ms(now_s)))
                if g in self.unjudged:
                    unjudged.append(f"group {g!r}: {self.unjudged[g]}")
                    continue
            if finding is not None:
                return Verdict.FINDING, describe(finding)
        if unjudged:
            return Verdict.UNJUDGED, "; ".join(unjudged)
        return Verdict.ALLOWED, ""

    # ---------------------------------------------------------------- internals

    def _ms(self, at_s: float) -> int:
        return max(0, int((at_s - (self.t0 or at_s)) * 1000))

    def _judge(self, group: str) -> GroupJudge:
        judge = self.judges.get(group)
        if judge is None:
            judge = self.judges[group] = GroupJudge(group, self.config, self.tolerance,
                                                    table=self.table, urgent=self.urgent)
        return judge

    def _call(self, group: str, what: Callable[[GroupJudge], Optional[Finding]]) -> Optional[Finding]:
        try:
            return what(self._judge(group))
        except Inconclusive as e:
            self.unjudged[group] = f"inconclusive ({e})"
            return None

    def _feed(self, now_s: float) -> None:
        """Every send and answer not yet fed, up to `now_s`, in time order (a send before the
        answers read at the same moment)."""
        events: list[tuple[float, int, int, Union[_Sent, m.Response]]] = []
        for n, s in self.sends.items():
            if n not in self.fed_sends and s.at_s <= now_s:
                events.append((s.at_s, 0, n, s))
        for at, n, r in self.answers[self.fed_answers:]:
            events.append((at, 1, n, r))
        self.fed_answers = len(self.answers)
        for at, _, n, what in sorted(events, key=lambda e: (e[0], e[1], e[2])):
            if isinstance(what, _Sent):
                self.fed_sends.add(n)
                sent, ms = what, self._ms(at)
                if sent.group is not None and sent.group not in self.unjudged:
                    self._call(sent.group, lambda j: j.send(sent.number, sent.api, sent.version, sent.request, ms))
                continue
            asked = self.sends.get(n)
            if asked is None or asked.group is None or asked.group in self.unjudged:
                continue
            response, number, ms = what, n, self._ms(at)
            self._call(asked.group, lambda j: j.receive(number, ms, response))


def _group_of(r: m.Request) -> Optional[str]:
    if isinstance(r, m.ListGroupsRequest):
        return None
    if isinstance(r, (m.DescribeGroupsRequest, m.DeleteGroupsRequest)):
        return r.group_ids[0] if len(r.group_ids) == 1 else None
    return getattr(r, "group_id", None)


def describe(f: Finding) -> str:
    """A finding in one line: the request, what the model allows, what the broker did."""
    expected = " or ".join(str(e) for e in f.expected) or "nothing"
    return (f"request {f.number} ({f.api} v{f.api_version}) in state {'/'.join(f.state) or '?'}: the model "
            f"allows {expected}; the broker answered {f.actual} at {f.at_ms} ms ({f.shape})")


def scenario_table(scenario: Scenario) -> Table:
    """The table a scenario was written for: the profile its tags name (the first), else Kafka
    3.9's."""
    for tag in scenario.tags:
        if tag in PROFILES:
            return profile_table(tag, f"scenario {scenario.name!r}: profile")
    return CLASSIC_TABLE


def judge_factory(target: str, table: Optional[tuple[Table, Urgent]] = None) -> JudgeFactory:
    """Judges for `groupspec scenario run --target TARGET`, with that target's timing allowances;
    each scenario judged by `table` (--table) when given, else by its own (`scenario_table`)."""
    # (judged after the fact, not on an event loop that other groups wait on: seconds of CPU per
    # observation are affordable where the fuzzer allows 500 ms)
    tolerance = Tolerance(allowances=allowances_in_force(target), max_observation_ms=JUDGE_CPU_MS)

    def make(scenario: Scenario, config: CoordinatorConfig, request_cost_ms: float) -> Optional[AnswerJudge]:
        # two requests sent within one request cost of each other (on two connections) may be read
        # by the broker in either order, however quickly it answered the requests before them
        overtake = min(tolerance.overtake_ms, math.ceil(request_cost_ms))
        judged, urgent = table if table is not None else (scenario_table(scenario), URGENT)
        return ScenarioJudge(config, dataclasses.replace(tolerance, min_overtake_ms=overtake),
                             table=judged, urgent=urgent)

    return make


__all__ = ["ScenarioJudge", "describe", "judge_factory", "scenario_table"]
