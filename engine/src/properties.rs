//! The client's contract (model/invariants.py, "the client's contract"), natively: transition
//! properties over the request, every response made in the step and the group before and after.
//! Each function is the Python property of the same name; the sentence describing a violation is
//! made by the Python property when the counterexample is replayed (check/native.py _confirm).

use crate::model::*;
use crate::step::{instance_id_of, member_id_of, RowSpec, Transition};
use smallvec::{smallvec, SmallVec};

fn gone(s: State) -> bool {
    matches!(s, State::Dead | State::Missing)
}

fn new_incarnation(rows: &[RowSpec], t: &Transition) -> bool {
    t.rows.iter().any(|r| rows[*r as usize].new_incarnation)
}

/// sync-answer-is-stored-assignment
pub fn sync_answer_is_stored_assignment(inp: &Input, t: &Transition) -> bool {
    let mut answers: SmallVec<[(Mid, &Resp); 4]> = SmallVec::new();
    if let (Some(r @ Resp::Sync { .. }), Some(Req::Sync { member, .. })) = (&t.reply, &inp.req) {
        answers.push((*member, r));
    }
    for o in &t.outputs {
        if let Some(r @ Resp::Sync { .. }) = &o.resp {
            answers.push((o.member, r));
        }
    }
    for (mid, resp) in answers {
        if let Resp::Sync { error, pname, assignment, .. } = resp {
            if *error != E_NONE {
                continue;
            }
            if t.after.state != State::Stable {
                return true;
            }
            match t.after.member(mid) {
                None => return true,
                Some(m) => {
                    if *assignment != m.assignment || *pname != t.after.pname {
                        return true;
                    }
                }
            }
        }
    }
    if let (Some(Req::Sync { generation, .. }), Some(Resp::Sync { error: E_NONE, .. })) = (&inp.req, &t.reply) {
        if *generation != t.after.generation {
            return true;
        }
    }
    false
}

/// only-leader-assigns
pub fn only_leader_assigns(rows: &[RowSpec], before: &Group, inp: &Input, t: &Transition) -> bool {
    if new_incarnation(rows, t) || gone(t.after.state) {
        return false;
    }
    let changed = t
        .after
        .members
        .iter()
        .any(|m| before.member(m.id).is_some_and(|b| b.assignment != m.assignment));
    if !changed {
        return false;
    }
    if let Some(Req::Sync { member, generation, .. }) = &inp.req {
        if before.state == State::CompletingRebalance && *member == before.leader && *generation == before.generation {
            return false;
        }
    }
    let began_rebalance = t.after.state == State::PreparingRebalance
        || t.rows.iter().any(|r| rows[*r as usize].next_state == Some(State::PreparingRebalance));
    !(began_rebalance && t.after.members.iter().all(|m| !m.assignment))
}

/// selected-protocol-supported
pub fn selected_protocol_supported(t: &Transition) -> bool {
    let g = &t.after;
    if !matches!(g.state, State::CompletingRebalance | State::Stable) || g.members.is_empty() {
        return false;
    }
    if g.pname == PN_NONE {
        return true;
    }
    g.members.iter().any(|m| !protocol_list(m.protocols).iter().any(|p| p.0 == g.pname))
}

/// _fenced_items: (member id, instance id, item index) of each request item whose instance id is
/// mapped, before the step, to another member id (restarts, removals by instance id only and
/// pending ids excepted).
fn fenced_items(before: &Group, inp: &Input) -> SmallVec<[(Mid, Inst, usize); 2]> {
    let items: LeaveItems = match &inp.req {
        Some(Req::Leave { members }) => members.clone(),
        Some(Req::Join(_)) => {
            let m = member_id_of(inp);
            if m == NOID {
                LeaveItems::new()
            } else {
                smallvec![(m, instance_id_of(inp))]
            }
        }
        Some(Req::Sync { .. }) | Some(Req::Heartbeat { .. }) | Some(Req::Commit { .. }) => {
            smallvec![(member_id_of(inp), instance_id_of(inp))]
        }
        _ => LeaveItems::new(),
    };
    let leave = matches!(inp.req, Some(Req::Leave { .. }));
    let mut out = SmallVec::new();
    for (i, (m, iid)) in items.into_iter().enumerate() {
        if iid == NOINST || (leave && m == NOID) {
            continue;
        }
        let current = before.static_member_id(iid);
        if current != NOID && current != m && !before.has_pending(m) {
            out.push((m, iid, i));
        }
    }
    out
}

/// _leaves_owner_too: a batched LeaveGroup whose other items remove the instance's owner
/// legitimately (by its member id, or by instance id only).
fn leaves_owner_too(inp: &Input, iid: Inst, owner: Mid) -> bool {
    match &inp.req {
        Some(Req::Leave { members }) => members.iter().any(|(m, i)| {
            (*i == iid || *i == NOINST) && (*m == owner || *m == NOID) && !(*m == NOID && *i == NOINST)
        }),
        _ => false,
    }
}

/// static-old-id-fenced
pub fn static_old_id_fenced(before: &Group, inp: &Input, t: &Transition) -> bool {
    for (_, iid, i) in fenced_items(before, inp) {
        let owner = before.static_member_id(iid);
        let answered_none = match &t.reply {
            Some(Resp::Leave { error, members }) => *error == E_NONE && i < members.len() && members[i].2 == E_NONE,
            Some(r) => r.error() == Some(E_NONE),
            None => false,
        };
        if answered_none {
            return true;
        }
        if !gone(t.after.state)
            && owner != NOID
            && t.after.static_member_id(iid) != owner
            && !leaves_owner_too(inp, iid, owner)
        {
            return true;
        }
    }
    false
}

/// parked-member-not-expired
pub fn parked_member_not_expired(before: &Group, inp: &Input, t: &Transition) -> bool {
    if inp.kind != Ev::MemberSessionExpire {
        return false;
    }
    let id = match inp.member {
        Some(id) => id,
        None => return false,
    };
    match before.member(id) {
        Some(m) if !m.is_new && (m.aj.is_some() || m.a_sync.is_some()) => {
            !gone(t.after.state) && !t.after.has_member(id)
        }
        _ => false,
    }
}

/// join-completes-when-all-rejoined
pub fn join_completes_when_all_rejoined(rows: &[RowSpec], t: &Transition) -> bool {
    let stalled = t.rows.iter().any(|r| {
        let row = &rows[*r as usize];
        row.event == Ev::DelayedJoinComplete && row.source == State::PreparingRebalance && row.next_state.is_none()
    });
    if stalled {
        return true;
    }
    let g = &t.after;
    g.state == State::PreparingRebalance
        && g.join_timers.first().is_some_and(|j| !j.initial)
        && g.has_all_members_joined()
}

/// completing-membership-frozen
pub fn completing_membership_frozen(before: &Group, t: &Transition) -> bool {
    let a = &t.after;
    if before.state != State::CompletingRebalance || a.state != State::CompletingRebalance || before.generation != a.generation {
        return false;
    }
    before.members.len() != a.members.len() || before.members.iter().any(|m| !a.has_member(m.id))
}
