"""The encoding's response accounting (which parked requests each path answers) is checked
against the model's own outputs whenever a solver trace is replayed; an encoder that forgets a
response is caught there, loudly."""

from __future__ import annotations

import pytest

from model.table import CLASSIC_TABLE, URGENT
from proofs.bmc import bmc
from proofs.decode import MicroStep, Responses, ReplayError, expected_outputs
from proofs.effects import EFFECT_ENCODINGS, EffCtx, Update


def _step(settled: dict[str, frozenset[int]], own_parked: dict[str, frozenset[int]],
          own_answered: bool) -> MicroStep:
    return MicroStep({}, (), False, Responses(settled, own_parked, own_answered))


def test_expected_outputs_follow_the_chain() -> None:
    # a SyncGroup parks at member 1, then an urgent completion answers member 0's and its own
    chain = [_step({}, {"asy": frozenset({1})}, False),
             _step({"asy": frozenset({0, 1})}, {}, False)]
    assert expected_outputs(chain) == {2000, 500}
    # answered at once by an output (the leader's SyncGroup) and a superseded JoinGroup
    assert expected_outputs([_step({"aj": frozenset({1})}, {}, True)]) == {1001, 500}
    assert expected_outputs([MicroStep({}, (), False)]) is None


def test_an_encoder_that_forgets_its_responses_fails_the_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    real = EFFECT_ENCODINGS["answer-joins"]

    def forgetful(ctx: EffCtx) -> Update:
        upd = real(ctx)
        ctx.settled.pop("aj", None)  # as if the joins answered here got no output
        ctx.bad.clear()
        return upd

    monkeypatch.setitem(EFFECT_ENCODINGS, "answer-joins", forgetful)
    with pytest.raises(ReplayError, match="different outputs"):
        bmc(CLASSIC_TABLE, URGENT, ["one-response-per-request"], depth=5, n_ids=1)
