"""The fuzzer's own stalls are never the target's lateness (fuzz/engine.py `Stalls`): an answer read
right after this process's event loop was stalled may have come at the stall's start. Negative
controls: a stall that ended well before the read, or none, leaves the read time as it is, so a
target answering late is still judged late."""

from __future__ import annotations

from fuzz.engine import Stalls


def test_an_answer_read_after_a_stall_may_have_come_at_its_start() -> None:
    s = Stalls()
    assert s.earliest(10.0, 9.0) == 10.0  # no stall
    s.note(6.0, 9.9)  # the loop could not run from 6.0 to 9.9
    assert s.earliest(10.0, 9.0) == 9.0  # came after its send, and may have come at once
    assert s.earliest(10.0, 5.0) == 6.0  # no earlier than the stall's start
    assert s.earliest(12.0, 5.0) == 12.0  # the loop ran from 9.9 on: read at 12.0, came at 12.0
    assert s.earliest(5.5, 5.0) == 5.5  # a stall after the read changes nothing
