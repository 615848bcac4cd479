"""Replaying a finding's scenario: does it fail *as found*?

A finding's scenario (fuzz/shrink.py `scenario_document`) names, in its `conventions`, the step at
which the target departed (`departs_at_step`, the check of the diverging request, and
`departs_request_step`, the request itself), the API version and the class shape. Replayed with
the scenario runner against the target, it fails as found when it fails at that step and the
target's answer there makes the same class: the same shape against the answers the model allows.
Failing at another step, or at that step with another answer, is reported as such.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional, Union

from model import messages as m
from model.errors import BoundaryError
from model.vocabulary import ApiKey

from conformance.parse import load
from conformance.runner import Outcome, run_scenario
from conformance.scenario import Scenario
from conformance.targets import close_factory, resolve_target
from fuzz.judge import NO_RESPONSE, render, shape

AS_FOUND = "fails on the target, as found"


@dataclass(frozen=True, slots=True)
class Replay:
    as_found: bool
    text: str  # what happened, for the report
    failed_step: Optional[int] = None
    shape: str = ""


def departure(path: str) -> dict[str, Any]:
    """The departure a finding's scenario file records (its `conventions`)."""
    with open(path, encoding="utf-8") as f:
        conv = json.load(f).get("conventions", {})
    if not isinstance(conv, dict) or "departs_at_step" not in conv:
        raise ValueError(f"{path}: no departs_at_step in conventions (not a fuzz finding's scenario)")
    return conv


def judge_replay(conv: dict[str, Any], outcome: Outcome, failed_step: Optional[int],
                 answer: Union[m.Response, str, None]) -> Replay:
    """Whether a replay that ended with `outcome` (failing at `failed_step`, the target's answer
    to the diverging request `answer`; None: none arrived) fails as the finding `conv` was found."""
    step = int(conv["departs_at_step"])
    if outcome is Outcome.PASS:
        return Replay(False, "passes on the target when replayed (the divergence depends on timing)")
    if outcome is not Outcome.FAIL:
        return Replay(False, f"replay {outcome.value.lower()}")
    if failed_step != step:
        return Replay(False, f"fails at step {failed_step}, not at step {step} where it was found",
                      failed_step)
    actual: Union[dict[str, Any], str]
    if answer is None:
        actual = NO_RESPONSE
    elif isinstance(answer, str):
        actual = answer
    else:
        actual = render(ApiKey[str(conv["api"])], int(conv["api_version"]), answer, None)
    now = shape(list(conv["expected"]), actual)
    if now != conv["shape"]:
        return Replay(False, f"fails at step {step} with another class ({now})", failed_step, now)
    return Replay(True, f"{AS_FOUND} (step {step})", failed_step, now)


def replay(path: str, target: str) -> Replay:
    """Run the scenario at `path` on `target` (a `--target` of `groupspec scenario run`) and
    judge the replay (a scenario the runner could not run at all is not as found)."""
    conv = departure(path)
    request_step = int(conv.get("departs_request_step", -1))
    answers: dict[int, m.Response] = {}
    reached = [-1]  # the last step the runner began

    def hook(_s: Scenario, index: int, _request: Optional[m.Request], response: Optional[m.Response]) -> None:
        reached[0] = max(reached[0], index)
        if response is not None and index not in answers:
            answers[index] = response

    try:
        factory = resolve_target(target, False)
        try:
            scenario = load(path).scenarios[0]
            result = run_scenario(path, scenario, factory, hook)
        finally:
            close_factory(factory)
    except BoundaryError as e:
        # the wire target raises when the broker closes a connection (from `handle`, before the
        # hook sees the step): the finding's own class if it was sending the diverging request
        sending = f"{conv['api']} v{conv['api_version']} "
        if ("closed" in str(e) and str(e).startswith(sending) and request_step not in answers
                and request_step <= reached[0] + 1):
            return judge_replay(conv, Outcome.FAIL, int(conv["departs_at_step"]), "connection-error")
        return Replay(False, f"replay incomplete: {e}")
    failed = result.failure.step_index if result.failure is not None else None
    return judge_replay(conv, result.outcome, failed, answers.get(request_step))


__all__ = ["AS_FOUND", "Replay", "departure", "judge_replay", "replay"]
