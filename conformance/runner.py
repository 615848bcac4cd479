"""Run scenarios against a target: one fresh coordinator per scenario, steps in order.

The first step whose expectation does not hold makes the scenario FAIL (with that step's index,
expected and actual values); a step the target cannot perform makes it SKIP (with the reason),
never PASS. A target that raises, answers twice, or leaves an `immediate` request unanswered fails
at that step. `StepHook` is called for every step, and again when a parked request is answered
later, so that traces can be recorded.

On a real-clock target with `RealClockOptions` (conformance/realclock.py): the scenario's topics are
created first, its timers and advances run at a time scale, a scenario whose advances exceed the
budget is SKIP with the reason, and an answer that differs from the virtual-clock expectation is
asked of the judge: it FAILs only when the model allows no such answer on the real clock (a
divergence the judge allows is noted in the PASS line, and the scenario goes on).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from check.user_code import user_fault
from model.coordinator_api import (
    BackdoorCoordinator,
    Coordinator,
    CoordinatorConfig,
    WhiteBoxCoordinator,
)
from model.errors import Incomplete
from model.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, ListGroupsRequest, MemberIdentity,
    OffsetCommitRequest, OffsetFetchRequest, Request, Response, SyncGroupRequest
)
from model.vocabulary import GroupState

from model.visible import Actual, actuals_of
from wire.errors import TimeBudgetExceeded, WireError

from conformance.expect import (
    DESCRIBE_MAPPABLE_GROUP_KEYS,
    Mismatch,
    actuals_of_view,
    evaluate,
    group_actuals_from_describe,
)
from conformance.probes import is_probe, with_probes
from conformance.realclock import (
    AnswerJudge, RealClockOptions, TimeScale, Verdict, budget_skip, choose_scale, scaled_config, scaled_ms,
    scenario_topics, smallest_timer_ms,
)
from conformance.scenario import (
    BACKDOOR_STEPS, REQUEST_STEP_TYPES, WHITE_BOX_STEPS, AdvanceStep, CheckErrorCountsStep,
    CheckGroupStep, CheckOneOfStep, CheckPendingStep, CheckResponseStep, CheckSameErrorsStep,
    CommitStep, DeleteGroupsStep, DescribeStep, Expect, FetchOffsetsStep, GenerationRef,
    HeartbeatStep, JoinStep, LeaveStep, ListGroupsStep, MemberRef, RequestMeta, RequestStep,
    Scenario, ScenarioFile, SetupAddGroupStep, SetupForceTransitionStep, SetupLoadStep,
    SetupPrepareRebalanceStep, SetupUnloadStep, Step, SyncStep, UnitSelectProtocolStep,
    UnitTransitionsStep, step_index, step_op
)

TargetFactory = Callable[[CoordinatorConfig], Coordinator]
StepHook = Callable[[Scenario, int, Optional[Request], Optional[Response]], None]


class Outcome(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True)
class Failure:
    """The first failing step: what was expected and what the target did."""

    step_index: int
    op: str
    message: str
    mismatches: tuple[Mismatch, ...] = ()

    def describe(self) -> str:
        details = "; ".join(m.describe() for m in self.mismatches)
        text = f"step {self.step_index} ({self.op}): {self.message}"
        return f"{text}: {details}" if details else text


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    path: str
    scenario: Scenario
    outcome: Outcome
    failure: Optional[Failure] = None
    reason: str = ""  # why it was skipped; for a PASS on a real clock: the divergences judged allowed
    clock: str = ""  # the time scale a real-clock run used, and why

    def describe(self) -> str:
        head = f"{self.outcome.value}  {self.path} :: {self.scenario.name}"
        if self.clock:
            head += f" [{self.clock}]"
        if self.failure is not None:
            return f"{head}: {self.failure.describe()}"
        if self.reason:
            return f"{head}: {self.reason}"
        return head


class _Skipped(Exception):
    """The target cannot go on within its budget (requests, connections, real waiting): SKIP."""


class _StepFailed(Exception):
    def __init__(self, message: str, mismatches: tuple[Mismatch, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.mismatches = mismatches


@dataclass
class _Slot:
    """Where a request's response lands; more than one arrival is a target bug."""

    step: int
    request: Request
    number: int = 0  # the request's number in this run (the judge's)
    responses: list[Response] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)  # time.monotonic() of each response


def _needs(scenario: Scenario, target: Coordinator) -> Optional[str]:
    """Why the target cannot run this scenario at all (None: it can)."""
    if not isinstance(target, BackdoorCoordinator):
        steps = [s for s in scenario.steps if isinstance(s, BACKDOOR_STEPS)]
        if steps:
            listed = ", ".join(f"{step_index(s)} ({step_op(s)})" for s in steps)
            return f"target has no backdoor/unit test hooks (BackdoorCoordinator), needed by steps {listed}"
    if not isinstance(target, WhiteBoxCoordinator):
        steps = [s for s in scenario.steps if isinstance(s, WHITE_BOX_STEPS)]
        steps += [s for s in scenario.steps if isinstance(s, JoinStep) and s.append_error is not None]
        if steps:
            listed = ", ".join(f"{step_index(s)} ({step_op(s)})" for s in steps)
            return f"target cannot unload/load or inject append errors (WhiteBoxCoordinator), needed by steps {listed}"
    return None


class _Run:
    def __init__(self, scenario: Scenario, target: Coordinator, hook: Optional[StepHook],
                 scale: float = 1.0, judge: Optional[AnswerJudge] = None) -> None:
        self.scenario = scenario
        self.target = target
        self.hook = hook
        self.scale = scale  # a real-clock run's time scale: join timeouts are sent scaled
        self.judge = judge
        self.step_numbers: list[int] = []  # the requests the current step sent or refers to
        self.divergences: list[str] = []  # answers off the virtual clock that the judge allowed
        self.bindings: dict[str, str] = {}
        self.slots: dict[str, _Slot] = {}
        self.all_slots: list[_Slot] = []
        self.unperformed: list[str] = []
        self.owed_ms = 0  # real-clock targets: the part of an advance deferred past check_groups
        self.owed_after = -1  # ... until after the step with this index

    # ---- Resolver (for expect.evaluate)

    def member(self, ref: MemberRef) -> str:
        name = ref.binding
        if name is None:
            return ref.text
        if name not in self.bindings:
            raise _StepFailed(f"${name} is not bound (the binding step did not run or had no response)")
        return self.bindings[name]

    def generation(self, ref: GenerationRef) -> int:
        if ref.join_id is None:
            assert ref.value is not None
            return ref.value
        response = self._response(ref.join_id)
        if not isinstance(response, JoinGroupResponse):
            raise _StepFailed(f"$gen:{ref.join_id} does not name a JoinGroup response")
        return response.generation_id

    def _response(self, rid: str) -> Response:
        slot = self.slots[rid]
        if not slot.responses:
            raise _StepFailed(f"request {rid!r} (step {slot.step}) has no response yet")
        return slot.responses[0]

    # ---- requests

    def build(self, step: RequestStep) -> Request:
        g = step.meta.group
        if isinstance(step, JoinStep):
            return JoinGroupRequest(
                group_id=g,
                member_id=self.member(step.member),
                protocol_type=step.protocol_type,
                protocols=step.protocols,
                session_timeout_ms=scaled_ms(step.session_timeout_ms, self.scale),
                rebalance_timeout_ms=scaled_ms(step.rebalance_timeout_ms, self.scale),
                group_instance_id=step.instance_id,
                require_known_member_id=step.require_known_member_id,
                supports_skip_assignment=step.supports_skip_assignment,
                client_id=step.client_id,
            )
        if isinstance(step, SyncStep):
            return SyncGroupRequest(
                group_id=g,
                member_id=self.member(step.member),
                generation_id=self.generation(step.generation),
                group_instance_id=step.instance_id,
                protocol_type=step.protocol_type,
                protocol_name=step.protocol_name,
                assignments=tuple((self.member(m), a) for m, a in step.assignments),
            )
        if isinstance(step, HeartbeatStep):
            return HeartbeatRequest(g, self.member(step.member), self.generation(step.generation), step.instance_id)
        if isinstance(step, LeaveStep):
            return LeaveGroupRequest(g, tuple(MemberIdentity(self.member(m), i) for m, i in step.members))
        if isinstance(step, CommitStep):
            return OffsetCommitRequest(
                g, self.member(step.member), self.generation(step.generation), step.offsets, step.instance_id
            )
        if isinstance(step, FetchOffsetsStep):
            return OffsetFetchRequest(g, step.partitions)
        if isinstance(step, DescribeStep):
            return DescribeGroupsRequest((g,))
        if isinstance(step, ListGroupsStep):
            return ListGroupsRequest(step.states)
        assert isinstance(step, DeleteGroupsStep)
        return DeleteGroupsRequest(step.groups)

    def send(self, index: int, request: Request) -> _Slot:
        slot = _Slot(index, request, len(self.all_slots) + 1)
        self.all_slots.append(slot)
        self.step_numbers.append(slot.number)
        judge = self.judge

        def callback(response: Response) -> None:
            at = getattr(self.target, "arrived_at", None)  # read off the socket (a wire target)
            slot.responses.append(response)
            slot.arrived.append(at if isinstance(at, float) else time.monotonic())
            if judge is not None:
                judge.received(slot.number, response, slot.arrived[-1])
            if self.hook is not None:
                self.hook(self.scenario, index, request, response)

        sent_at = time.monotonic()
        try:
            self.target.handle(request, callback)
        except Exception as e:  # a target bug, reported as this step's failure
            raise _target_raised(e) from e
        last = getattr(self.target, "last_sent", None)
        if judge is not None and isinstance(last, tuple):
            judge.sent(slot.number, last[0], last[1], sent_at)
        return slot

    def request_step(self, step: RequestStep) -> None:
        meta: RequestMeta = step.meta
        request = self.build(step)
        append_error = step.append_error if isinstance(step, JoinStep) else None
        if append_error is not None:
            assert isinstance(self.target, WhiteBoxCoordinator)
            self.target.set_append_result(append_error)
        try:
            with _at_version(self.target, request, meta.api_version), _brief_wait(self, meta.await_later):
                slot = self.send(meta.index, request)
        finally:
            if append_error is not None:
                assert isinstance(self.target, WhiteBoxCoordinator)
                self.target.set_append_result(self.scenario.config.append_result)
        if meta.id is not None:
            self.slots[meta.id] = slot
        if meta.await_later:
            if self.hook is not None and not slot.responses:
                self.hook(self.scenario, meta.index, request, None)
            return
        if not slot.responses:
            raise _StepFailed("expected an immediate response, but the request is parked (no response)")
        self.examine(step_op(step), slot.responses[0], meta.group, meta.expect, meta.bind)

    def examine(
        self, op: str, response: Response, group: str, expect: tuple[Expect, ...], bind: Optional[str]
    ) -> None:
        actual = actuals_of(response, group)
        if bind is not None:
            self.bindings[bind] = str(actual.get("member_id", ""))
        mismatches = evaluate(op, expect, actual, self)
        if mismatches:
            raise _StepFailed("response differs", tuple(mismatches))

    # ---- checks

    def _advance(self, ms: int) -> None:
        try:
            self.target.advance(ms)
        except Exception as e:
            raise _target_raised(e) from e

    def real_clock(self) -> bool:
        """A target whose timers run on the real clock (a broker): step tolerances apply."""
        return bool(getattr(self.target, "real_clock", False))

    def refer(self, *rids: str) -> None:
        """The current step checks the answers to requests `rids` (what the judge is asked about)."""
        self.step_numbers.extend(self.slots[r].number for r in rids if r in self.slots)

    def check_response(self, step: CheckResponseStep) -> None:
        self.refer(step.id)
        slot = self.slots[step.id]
        if step.tolerance_ms and self.real_clock() and not slot.responses:
            wait: Callable[[float, Callable[[], bool]], None] = getattr(self.target, "wait_real")
            wait(step.tolerance_ms / 1000.0, lambda: bool(slot.responses))
        response = self._response(step.id)
        group = self._request_group(step.id)
        if not step.expect_any:
            self.examine(step.op, response, group, step.expect, step.bind)
            return
        # one of the answers the model allows: the first that fits (its mismatches if none does)
        first: Optional[_StepFailed] = None
        for expect in step.expect_any:
            try:
                self.examine(step.op, response, group, expect, step.bind)
                return
            except _StepFailed as e:
                first = first or e
        assert first is not None
        raise _StepFailed(f"response differs from each of the {len(step.expect_any)} answers allowed",
                          first.mismatches)

    def _request_group(self, rid: str) -> str:
        request = self.slots[rid].request
        return request.group_ids[0] if isinstance(request, DescribeGroupsRequest) else getattr(request, "group_id", "")

    def check_group(self, step: CheckGroupStep) -> None:
        if isinstance(self.target, WhiteBoxCoordinator):
            try:
                view = self.target.group_view(step.group)
            except Exception as e:
                raise _target_raised(e) from e
            actual = actuals_of_view(view)
            performable = step.expect
        else:
            slot = self.send(step.index, DescribeGroupsRequest((step.group,)))
            response = slot.responses[0] if slot.responses else None
            if not isinstance(response, DescribeGroupsResponse) or not response.groups:
                raise _StepFailed(f"check_group via DescribeGroups: no usable response ({response!r})")
            actual = group_actuals_from_describe(response.groups[0])
            performable = tuple(e for e in step.expect if e.key in DESCRIBE_MAPPABLE_GROUP_KEYS)
            for exp in step.expect:
                if exp.key not in DESCRIBE_MAPPABLE_GROUP_KEYS:
                    self.unperformed.append(f"step {step.index} check_group.{exp.key}")
        mismatches = evaluate("check_group", performable, actual, self)
        if mismatches:
            raise _StepFailed("group differs", tuple(mismatches))

    def _error_of(self, rid: str) -> str:
        error = actuals_of(self._response(rid), self._request_group(rid)).get("error")
        return str(error)

    def check_error_counts(self, step: CheckErrorCountsStep) -> None:
        self.refer(*step.ids)
        got = Counter(self._error_of(r) for r in step.ids)
        want = Counter({e.name: n for e, n in step.counts if n > 0})
        if got != want:
            raise _StepFailed(f"error counts of {list(step.ids)}: expected {dict(want)}, actual {dict(got)}")

    def check_same_errors(self, step: CheckSameErrorsStep) -> None:
        self.refer(*(r for pair in step.pairs for r in pair))
        for a, b in step.pairs:
            ea, eb = self._error_of(a), self._error_of(b)
            if ea != eb:
                raise _StepFailed(f"expected {a!r} and {b!r} to carry the same error, actual {ea} and {eb}")

    def check_one_of(self, step: CheckOneOfStep) -> None:
        self.refer(*step.ids)
        answers = [(rid, actuals_of(self._response(rid), self._request_group(rid))) for rid in step.ids]
        leaders = [(rid, a) for rid, a in answers if not evaluate(step.op, step.leader_expect, a, self)]
        if len(leaders) != 1:
            names = [rid for rid, _ in leaders]
            raise _StepFailed(f"expected exactly one of {list(step.ids)} to satisfy leader_expect, actual {names}")
        leader_id, leader_actual = leaders[0]
        for rid, a in answers:
            if rid == leader_id:
                continue
            mismatches = evaluate(step.op, step.follower_expect, a, self)
            if step.leader_is_other and a.get("leader") != leader_actual.get("member_id"):
                raise _StepFailed(
                    f"{rid!r}: expected leader {leader_actual.get('member_id')!r} (member id of {leader_id!r}), "
                    f"actual {a.get('leader')!r}"
                )
            if mismatches:
                raise _StepFailed(f"{rid!r} does not satisfy follower_expect", tuple(mismatches))

    # ---- backdoor and unit steps

    def backdoor(self, step: Step) -> None:
        t = self.target
        assert isinstance(t, BackdoorCoordinator)
        if isinstance(step, SetupAddGroupStep):
            t.setup_add_group(step.group, step.state, step.members, step.protocol_type)
        elif isinstance(step, SetupPrepareRebalanceStep):
            t.setup_prepare_rebalance(step.group)
        elif isinstance(step, SetupForceTransitionStep):
            t.setup_force_transition(step.group, step.state)
        elif isinstance(step, UnitTransitionsStep):
            self.unit_transitions(t, step)
        elif isinstance(step, UnitSelectProtocolStep):
            self.unit_select_protocol(t, step)

    def unit_transitions(self, t: BackdoorCoordinator, step: UnitTransitionsStep) -> None:
        for case in step.cases:
            got = t.can_transition(step.start, case.path)
            if got != case.ok:
                path = " -> ".join(s.name for s in (step.start, *case.path))
                raise _StepFailed(f"transition path {path}: expected ok={case.ok}, actual ok={got}")
        if step.can_rebalance is not None:
            got = t.can_transition(step.start, (GroupState.PreparingRebalance,))
            if got != step.can_rebalance:
                raise _StepFailed(f"canRebalance in {step.start.name}: expected {step.can_rebalance}, actual {got}")

    def unit_select_protocol(self, t: BackdoorCoordinator, step: UnitSelectProtocolStep) -> None:
        for case in step.cases:
            got = t.select_protocol(case.members, case.protocol_type)
            if got not in case.expect:
                raise _StepFailed(
                    f"selectProtocol({[list(m) for m in case.members]}): expected one of {list(case.expect)}, "
                    f"actual {got!r}"
                )
        if step.supports_protocols:
            self.unperformed.append(
                f"step {step.index} unit_select_protocol.supports_protocols (no supportsProtocols hook)"
            )

    # ---- driver

    def step(self, step: Step, rest: tuple[Step, ...] = ()) -> None:
        """Perform one step; `rest` are the steps after it (an advance looks at the checks that
        follow it: on a real-clock target, check_group tolerances run them before its end).
        With a judge, a step that differs from its expectation is judged (`_judge`)."""
        self.step_numbers = []
        try:
            self._step(step, rest)
        except _StepFailed as e:
            if self.judge is None:
                raise
            if not self.step_numbers:  # (no answer to judge: e.g. a member the run never bound)
                self._cannot_go_on(step, e)
            self._judge(step, e)
        if self.owed_ms and step_index(step) == self.owed_after:
            owed, self.owed_ms = self.owed_ms, 0
            self._advance(owed)

    def _step(self, step: Step, rest: tuple[Step, ...]) -> None:
        if isinstance(step, REQUEST_STEP_TYPES):
            self.request_step(step)
            return
        if self.hook is not None:
            self.hook(self.scenario, step_index(step), None, None)
        if isinstance(step, AdvanceStep):
            ms = step.ms
            checks: list[Step] = []
            for later in rest:
                if not isinstance(later, (CheckGroupStep, CheckPendingStep, CheckResponseStep)):
                    break
                checks.append(later)
            early = max((c.tolerance_ms for c in checks if isinstance(c, CheckGroupStep)), default=0)
            if self.real_clock() and 0 < early <= ms:
                ms -= early  # the rest of the advance after those checks
                self.owed_ms, self.owed_after = early, step_index(checks[-1])
            self._advance(ms)
        elif isinstance(step, CheckResponseStep):
            self.check_response(step)
        elif isinstance(step, CheckPendingStep):
            self.refer(step.id)
            slot = self.slots[step.id]
            late_ok = (step.tolerance_ms and self.real_clock() and slot.arrived
                       and time.monotonic() - slot.arrived[0] <= step.tolerance_ms / 1000.0)
            if slot.responses and not late_ok:
                actual = actuals_of(slot.responses[0], self._request_group(step.id))
                raise _StepFailed(f"expected {step.id!r} to be still parked, actual response {thaw_json(actual)}")
        elif isinstance(step, CheckGroupStep):
            self.check_group(step)
        elif isinstance(step, CheckErrorCountsStep):
            self.check_error_counts(step)
        elif isinstance(step, CheckSameErrorsStep):
            self.check_same_errors(step)
        elif isinstance(step, CheckOneOfStep):
            self.check_one_of(step)
        elif isinstance(step, (SetupUnloadStep, SetupLoadStep)):
            t = self.target
            assert isinstance(t, WhiteBoxCoordinator)
            try:
                (t.unload if isinstance(step, SetupUnloadStep) else t.load)(step.group)
            except Exception as e:
                raise _target_raised(e) from e
        else:
            try:
                self.backdoor(step)
            except _StepFailed:
                raise
            except Exception as e:
                raise _target_raised(e) from e

    def _judge(self, step: Step, failure: _StepFailed) -> None:
        """The step's answers differ from the virtual clock's: allowed if the judge finds some model
        state on the real clock that explains them (noted), else this step's failure."""
        assert self.judge is not None
        wait = getattr(self.target, "wait_real", None)
        if wait is not None:
            wait(0.02, lambda: False)  # deliver what has arrived: the judge sees every answer so far
        verdict, text = self.judge.verdict(tuple(self.step_numbers), time.monotonic())
        if verdict is Verdict.ALLOWED:
            self.divergences.append(f"step {step_index(step)} ({step_op(step)}): {failure.message}"
                                    + "".join(f"; {m.describe()}" for m in failure.mismatches))
            return
        if verdict is Verdict.FINDING:
            raise _StepFailed(f"{failure.message}; the model allows no such answer on the real clock "
                              f"either: {text}", failure.mismatches)
        raise _StepFailed(f"{failure.message} (not judged on the real clock: {text})", failure.mismatches)

    def _cannot_go_on(self, step: Step, failure: _StepFailed) -> None:
        """A step that cannot run (a binding missing, a response absent) after answers the judge
        allowed took the run off the virtual clock's path: SKIP, unless the judge now finds a
        difference in what the target did so far."""
        if not self.divergences:
            raise failure
        finding = self.final_verdict()
        if finding is not None:
            raise _StepFailed(f"{failure.message}; the model allows no such run on the real clock: {finding}")
        raise _Skipped(f"{failure.message}: the run left the virtual clock's path at answers the judge allowed ("
                       + " | ".join(self.divergences) + "), and this step needs that path")

    def final_verdict(self) -> Optional[str]:
        """After a divergence the expectations no longer hold the answers: the judge's word on
        every answer of the run (a finding text, or None)."""
        if self.judge is None or not self.divergences:
            return None
        verdict, text = self.judge.verdict(tuple(s.number for s in self.all_slots), time.monotonic())
        return text if verdict is Verdict.FINDING else None

    def answered_twice(self) -> Optional[str]:
        for slot in self.all_slots:
            if len(slot.responses) > 1:
                return f"the response callback of step {slot.step} ran {len(slot.responses)} times"
        return None


@contextlib.contextmanager
def _at_version(target: Coordinator, request: Request, version: Optional[int]) -> Iterator[None]:
    """Send `request` at `version` on a target that speaks several (a broker: its negotiated
    `versions`, one per API); a target without versions (the model, the reference) ignores it."""
    versions = getattr(target, "versions", None)
    if version is None or not isinstance(versions, dict) or request.api_key not in versions:
        yield
        return
    before = versions[request.api_key]
    versions[request.api_key] = version
    try:
        yield
    finally:
        versions[request.api_key] = before


@contextlib.contextmanager
def _brief_wait(run: "_Run", await_later: bool) -> Iterator[None]:
    """On a real-clock run, a request the scenario expects to park is not waited for (a wire
    target's `immediate_wait_s`): requests the scenario sends at one moment go out together."""
    before = getattr(run.target, "immediate_wait_s", None)
    if not (await_later and run.judge is not None and isinstance(before, float)):
        yield
        return
    setattr(run.target, "immediate_wait_s", min(before, BRIEF_WAIT_S))
    try:
        yield
    finally:
        setattr(run.target, "immediate_wait_s", before)


BRIEF_WAIT_S = 0.02


def _target_raised(e: Exception) -> _StepFailed:
    """An exception from the target is this step's failure, except a target that could not be
    reached or did not answer in time: that run is incomplete (exit 3), not a failed scenario;
    nor is a user's own table whose definition raised (--target model --table): that is the
    table's defect, reported as one (check.user_code, exit 2)."""
    if isinstance(e, Incomplete) or user_fault(e) is not None:
        raise e
    if isinstance(e, TimeBudgetExceeded):
        raise _Skipped(f"the target's budget: {e}") from e
    return _StepFailed(f"target raised {type(e).__name__}: {e}")


def thaw_json(actual: dict[str, Actual]) -> str:
    import json

    return json.dumps(actual, sort_keys=True)


def time_scale_for(scenario: Scenario, clock: RealClockOptions) -> TimeScale:
    """The scale a scenario runs at: the one given, or chosen from its timers and the latency."""
    if clock.scale is not None:
        return TimeScale(clock.scale, False, smallest_timer_ms(scenario), clock.latency_ms)
    return choose_scale(scenario, clock.latency_ms, clock.budget_s)


def run_scenario(
    path: str, scenario: Scenario, factory: TargetFactory, hook: Optional[StepHook] = None,
    clock: Optional[RealClockOptions] = None,
) -> ScenarioResult:
    """Run one scenario against a fresh target built from its config (on a real-clock target with
    `clock`: at a time scale, topics created, answers judged)."""
    scale = time_scale_for(scenario, clock) if clock is not None else None
    config = _unused_groups_dropped(scenario)
    config = scaled_config(config, scale.scale) if scale is not None else config
    try:
        target = factory(config)
    except NotImplementedError as e:  # the factory cannot honour this config
        return ScenarioResult(path, scenario, Outcome.SKIP, reason=f"target cannot run this config: {e}")
    try:
        result = _run_on(path, scenario, target, hook, config, scale, clock)
        return dataclasses.replace(result, clock=scale.describe()) if scale is not None else result
    finally:
        close: Optional[Callable[[], None]] = getattr(target, "close", None)
        if close is not None:
            close()


def _run_on(path: str, scenario: Scenario, target: Coordinator, hook: Optional[StepHook],
            config: CoordinatorConfig, scale: Optional[TimeScale], clock: Optional[RealClockOptions]
            ) -> ScenarioResult:
    reason = _needs(scenario, target)
    skip_reason: Optional[Callable[[], Optional[str]]] = getattr(target, "skip_reason", None)
    if reason is None and skip_reason is not None:
        reason = skip_reason()  # a remote broker cannot honour e.g. not_owned_groups
    if reason is None and scale is not None and clock is not None:
        reason = budget_skip(scenario, scale.scale, clock.budget_s)
    if reason is not None:
        return ScenarioResult(path, scenario, Outcome.SKIP, reason=reason)
    judge: Optional[AnswerJudge] = None
    probed: list[str] = []
    steps = scenario.steps
    if scale is not None and clock is not None:
        try:
            _prepare(target, scenario, scale.scale, clock.budget_s)
        except WireError as e:  # (a broker that cannot make the topics: not a verdict on the scenario)
            return ScenarioResult(path, scenario, Outcome.SKIP, reason=f"cannot prepare the broker: {e}")
        judge = clock.judge(scenario, config, clock.latency_ms) if clock.judge is not None else None
        if clock.probes and not isinstance(target, WhiteBoxCoordinator):
            steps = with_probes(scenario)[0].steps if any(
                isinstance(s, CheckGroupStep) for s in steps) else steps
            probed = [f"{step_index(s)} {s.meta.id}" for s in steps
                      if isinstance(s, REQUEST_STEP_TYPES) and is_probe(s.meta.id)]
    run = _Run(scenario, target, hook, scale.scale if scale is not None else 1.0, judge)
    for i, step in enumerate(steps):
        try:
            run.step(step, steps[i + 1:])
            twice = run.answered_twice()
            if twice is not None:
                raise _StepFailed(twice)
        except _StepFailed as e:
            probe = isinstance(step, REQUEST_STEP_TYPES) and is_probe(step.meta.id)
            message = (f"probe {step.meta.id} for check_group (inserted before it): " if probe
                       and isinstance(step, REQUEST_STEP_TYPES) else "") + e.message
            failure = Failure(step_index(step), step_op(step), message, e.mismatches)
            return ScenarioResult(path, scenario, Outcome.FAIL, failure=failure)
        except _Skipped as e:
            return ScenarioResult(path, scenario, Outcome.SKIP, reason=f"step {step_index(step)}: {e}")
    finding = run.final_verdict()
    if finding is not None:
        last = steps[-1]
        failure = Failure(step_index(last), step_op(last), "after the divergences "
                          + "; ".join(run.divergences) + f", the model allows no such run on the real clock: {finding}")
        return ScenarioResult(path, scenario, Outcome.FAIL, failure=failure)
    notes = []
    if probed:
        notes.append("checked over the wire by probes: " + ", ".join(probed))
    if run.divergences:
        notes.append("judged on the real clock (answers the virtual clock does not give, which the model "
                     "allows there): " + " | ".join(run.divergences))
    if run.unperformed:
        return ScenarioResult(path, scenario, Outcome.SKIP, reason="; ".join(
            ["checks the target cannot perform: " + ", ".join(run.unperformed)] + notes))
    return ScenarioResult(path, scenario, Outcome.PASS, reason="; ".join(notes))


def groups_named(scenario: Scenario) -> frozenset[str]:
    """Every group id a step of the scenario sends to or checks."""
    out: set[str] = set()
    for s in scenario.steps:
        if isinstance(s, REQUEST_STEP_TYPES):
            out.add(s.meta.group)
        group = getattr(s, "group", None)
        if isinstance(group, str):
            out.add(group)
        out.update(getattr(s, "groups", ()) or ())
    return frozenset(out)


def _unused_groups_dropped(scenario: Scenario) -> CoordinatorConfig:
    """The scenario's config without the `not_owned_groups` no step names: they change nothing,
    and a target that cannot disown a group (a broker) can then run it."""
    config = scenario.config
    if not config.not_owned_groups:
        return config
    return dataclasses.replace(config, not_owned_groups=config.not_owned_groups & groups_named(scenario))


def _prepare(target: Coordinator, scenario: Scenario, scale: float, budget_s: float) -> None:
    """A real-clock target before the first step: its time scale and budget; the scenario's topics."""
    if hasattr(target, "time_scale"):
        setattr(target, "time_scale", scale)
    if hasattr(target, "max_real_wait_s"):
        setattr(target, "max_real_wait_s", budget_s + 1.0)  # (budget_skip has checked the advances)
    topics = scenario_topics(scenario)
    ensure: Optional[Callable[[dict[str, int]], None]] = getattr(target, "ensure_topics", None)
    if topics and ensure is not None:
        ensure(topics)


def run_file(file: ScenarioFile, factory: TargetFactory, hook: Optional[StepHook] = None) -> list[ScenarioResult]:
    return [run_scenario(file.path, s, factory, hook) for s in file.scenarios]


__all__ = [
    "Failure",
    "Outcome",
    "ScenarioResult",
    "StepHook",
    "TargetFactory",
    "run_file",
    "run_scenario",
]
