"""A broker team's table, written as a variant of Kafka's: it registers its own atom, effect,
reply form and invariants (the native engine has none of them, so it calls back into these).

- atom `leaver-is-leader`: the LeaveGroup item names the group's leader;
- effect `remove-member-keep-leader`: the member leaves, but the leader id is not moved (the
  bug the issue's broker team had: PreparingRebalance/LeaveGroup/member-leaves);
- reply form `heartbeat-ok`: a Heartbeat answered NONE (the same as Kafka's "ok");
- invariants `leader-known` (state: the leader id is a member or None) and
  `leave-always-answered` (transition: every LeaveGroup gets its response), in `INVARIANTS`
  for the tests to register.

`TABLE` has the bug; `FIXED` is the same variant without it (it still goes through Python).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from model.atoms import member_id_of
from model.dsl import EFFECTS, REPLY_FORMS, Ctx, G, Reply, Table, atom, effect, reply_form
from model.invariants import Invariant
from model.messages import HeartbeatResponse, LeaveGroupResponse, Response
from model.state import Group, Input, Settings, evolve_group
from model.step import Transition
from model.table import CLASSIC_TABLE
from model.vocabulary import Error

MEMBER_LEAVES = "PreparingRebalance/LeaveGroup/member-leaves"


@atom("leaver-is-leader")
def leaver_is_leader(g: Group, inp: Input, s: Settings) -> bool:
    """The member leaving is the group's leader."""
    return g.leader is not None and member_id_of(inp) == g.leader


@effect("remove-member-keep-leader", modifies={"members", "leader"}, responds=True)
def remove_member_keep_leader(ctx: Ctx) -> None:
    """The member leaves (as Kafka's remove-member), but the leader id stays what it was."""
    leader = ctx.group.leader
    EFFECTS["remove-member"].fn(ctx)
    ctx.group = evolve_group(ctx.group, leader=leader)


@reply_form("heartbeat-ok")
def heartbeat_ok(ctx: Ctx, error: Error) -> Response:
    """A Heartbeat's response with the row's error."""
    return HeartbeatResponse(error)


def leader_known(g: Group) -> Optional[str]:
    """The leader id names a member (or there is none)."""
    if g.leader is not None and not g.has_member(g.leader):
        return f"leader {g.leader} is not a member"
    return None


def leave_always_answered(table: Table, t: Transition) -> Optional[str]:
    """A LeaveGroup is answered at once."""
    if t.inp.kind == "LeaveGroup" and not isinstance(t.reply, LeaveGroupResponse):
        return "a LeaveGroup got no response"
    return None


def _variant(name: str, leader_effect: str) -> Table:
    heartbeat = CLASSIC_TABLE.row("Stable/Heartbeat/ok")
    rows = []
    for r in CLASSIC_TABLE.rows:
        if r.id == heartbeat.id:
            rows.append(replace(r, reply=Reply("heartbeat-ok", Error.NONE)))
        elif r.id == MEMBER_LEAVES:
            rest = tuple(e for e in r.effects if e != "remove-member")
            rows.append(replace(r, id=MEMBER_LEAVES + "-leader", guard=r.guard & G("leaver-is-leader"),
                                effects=(leader_effect,) + rest))
            rows.append(replace(r, guard=r.guard & G("!leaver-is-leader")))
        else:
            rows.append(r)
    return Table(name, tuple(rows), CLASSIC_TABLE.events)


# Registered by the tests for their duration (monkeypatch), not at import: model/invariants.py's
# registry is global and every other test's checks would include them.
INVARIANTS = {
    "leader-known": Invariant("leader-known", "state", leader_known, "the leader is a member"),
    "leave-always-answered": Invariant("leave-always-answered", "transition",
                                       leave_always_answered, "a LeaveGroup is answered"),
}

TABLE = _variant("user-keeps-leader", "remove-member-keep-leader")
FIXED = _variant("user-fixed", "remove-member")
assert "heartbeat-ok" in REPLY_FORMS
