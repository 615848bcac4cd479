//! model/invariants.py natively: the named state and transition invariants, each under its
//! Python name. A check answers whether the invariant is violated; the sentence describing the
//! violation is made by the Python invariant when the counterexample is replayed.

use crate::model::*;
use crate::properties;
use crate::step::{RowSpec, Transition};
use smallvec::SmallVec;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Inv {
    SingleDelayedJoin,
    SingleDelayedSync,
    EmptyHasNoMembers,
    LeaderIsMember,
    StableMembersAssigned,
    AwaitingJoinOnlyInPreparing,
    AwaitingSyncOnlyInCompleting,
    PendingAndMembersDisjoint,
    StaticMappingBijective,
    PendingSyncOnlyMembers,
    LeaderSyncRejectedInPreparing,
    GenerationMonotonic,
    ValidStateEdges,
    DeadIsAbsorbing,
    OneResponsePerRequest,
    CommitFencing,
    OnlyMembersServed,
    SyncAnswerIsStoredAssignment,
    OnlyLeaderAssigns,
    SelectedProtocolSupported,
    StaticOldIdFenced,
    ParkedMemberNotExpired,
    JoinCompletesWhenAllRejoined,
    CompletingMembershipFrozen,
}

/// Every invariant the engine implements: (name, is a transition invariant, id).
pub const INVARIANTS: &[(&str, bool, Inv)] = &[
    ("single-delayed-join", false, Inv::SingleDelayedJoin),
    ("single-delayed-sync", false, Inv::SingleDelayedSync),
    ("empty-has-no-members", false, Inv::EmptyHasNoMembers),
    ("leader-is-member", false, Inv::LeaderIsMember),
    ("stable-members-assigned", false, Inv::StableMembersAssigned),
    ("awaiting-join-only-in-preparing", false, Inv::AwaitingJoinOnlyInPreparing),
    ("awaiting-sync-only-in-completing", false, Inv::AwaitingSyncOnlyInCompleting),
    ("pending-and-members-disjoint", false, Inv::PendingAndMembersDisjoint),
    ("static-mapping-bijective", false, Inv::StaticMappingBijective),
    ("pending-sync-only-members", false, Inv::PendingSyncOnlyMembers),
    ("leader-sync-rejected-in-preparing", true, Inv::LeaderSyncRejectedInPreparing),
    ("generation-monotonic", true, Inv::GenerationMonotonic),
    ("valid-state-edges", true, Inv::ValidStateEdges),
    ("dead-is-absorbing", true, Inv::DeadIsAbsorbing),
    ("one-response-per-request", true, Inv::OneResponsePerRequest),
    ("commit-fencing", true, Inv::CommitFencing),
    ("only-members-served", true, Inv::OnlyMembersServed),
    ("sync-answer-is-stored-assignment", true, Inv::SyncAnswerIsStoredAssignment),
    ("only-leader-assigns", true, Inv::OnlyLeaderAssigns),
    ("selected-protocol-supported", true, Inv::SelectedProtocolSupported),
    ("static-old-id-fenced", true, Inv::StaticOldIdFenced),
    ("parked-member-not-expired", true, Inv::ParkedMemberNotExpired),
    ("join-completes-when-all-rejoined", true, Inv::JoinCompletesWhenAllRejoined),
    ("completing-membership-frozen", true, Inv::CompletingMembershipFrozen),
];

pub fn invariant_by_name(name: &str) -> Option<(bool, Inv)> {
    INVARIANTS.iter().find(|(n, _, _)| *n == name).map(|(_, t, i)| (*t, *i))
}

pub fn inv_name(i: Inv) -> &'static str {
    INVARIANTS.iter().find(|(_, _, x)| *x == i).map(|(n, _, _)| *n).unwrap_or("?")
}

/// True when the state invariant is violated.
pub fn state_violated(i: Inv, g: &Group) -> bool {
    use State::*;
    match i {
        Inv::SingleDelayedJoin => {
            let n = g.join_timers.len();
            n > 1 || ((n == 1) != (g.state == PreparingRebalance))
        }
        Inv::SingleDelayedSync => {
            let n = g.sync_timers.len();
            n > 1 || (n == 1 && !matches!(g.state, CompletingRebalance | Stable))
        }
        Inv::EmptyHasNoMembers => matches!(g.state, Empty | Dead | Missing) && !g.members.is_empty(),
        Inv::LeaderIsMember => {
            (g.leader != NOID && !g.has_member(g.leader)) || (!g.members.is_empty() && g.leader == NOID)
        }
        Inv::StableMembersAssigned => {
            g.state == Stable && g.members.iter().any(|m| m.a_sync.is_some() || m.aj.is_some())
        }
        Inv::AwaitingJoinOnlyInPreparing => {
            g.state != PreparingRebalance && g.members.iter().any(|m| m.aj.is_some())
        }
        Inv::AwaitingSyncOnlyInCompleting => {
            g.state != CompletingRebalance && g.members.iter().any(|m| m.a_sync.is_some())
        }
        Inv::PendingAndMembersDisjoint => {
            let mut ids: SmallVec<[Mid; 8]> = g.members.iter().map(|m| m.id).collect();
            ids.sort_unstable();
            let dup = ids.windows(2).any(|w| w[0] == w[1]);
            dup || ids.iter().any(|m| g.pending.contains(m))
        }
        Inv::StaticMappingBijective => {
            let mut iids: SmallVec<[Inst; 8]> = g.members.iter().map(|m| m.instance).filter(|i| *i != NOINST).collect();
            iids.sort_unstable();
            iids.windows(2).any(|w| w[0] == w[1])
        }
        Inv::PendingSyncOnlyMembers => {
            !matches!(g.state, CompletingRebalance | Stable) && g.members.iter().any(|m| m.pending_sync)
        }
        _ => false,
    }
}

fn new_incarnation(rows: &[RowSpec], t: &Transition) -> bool {
    t.rows.iter().any(|r| rows[*r as usize].new_incarnation)
}

/// A transition invariant's check: whether `t` (from `before` on input `inp`) violates it.
pub type TransitionCheck = fn(rows: &[RowSpec], before: &Group, inp: &Input, t: &Transition) -> bool;

/// The check of transition invariant `i` (one small function each: the explorer calls them per
/// successor through these pointers, so a check that does not apply returns at once instead of
/// entering one large function of all of them).
pub fn transition_check(i: Inv) -> TransitionCheck {
    match i {
        Inv::LeaderSyncRejectedInPreparing => leader_sync_rejected_in_preparing,
        Inv::GenerationMonotonic => generation_monotonic,
        Inv::ValidStateEdges => valid_state_edges,
        Inv::DeadIsAbsorbing => dead_is_absorbing,
        Inv::OneResponsePerRequest => |_, before, inp, t| one_response_violated(before, inp, t),
        Inv::CommitFencing => commit_fencing,
        Inv::OnlyMembersServed => only_members_served,
        Inv::SyncAnswerIsStoredAssignment => |_, _, inp, t| properties::sync_answer_is_stored_assignment(inp, t),
        Inv::OnlyLeaderAssigns => properties::only_leader_assigns,
        Inv::SelectedProtocolSupported => |_, _, _, t| properties::selected_protocol_supported(t),
        Inv::StaticOldIdFenced => |_, before, inp, t| properties::static_old_id_fenced(before, inp, t),
        Inv::ParkedMemberNotExpired => |_, before, inp, t| properties::parked_member_not_expired(before, inp, t),
        Inv::JoinCompletesWhenAllRejoined => |rows, _, _, t| properties::join_completes_when_all_rejoined(rows, t),
        Inv::CompletingMembershipFrozen => |_, before, _, t| properties::completing_membership_frozen(before, t),
        _ => |_, _, _, _| false,
    }
}

/// True when the transition invariant is violated by `t` (from `before` on input `inp`).
pub fn transition_violated(i: Inv, rows: &[RowSpec], before: &Group, inp: &Input, t: &Transition) -> bool {
    transition_check(i)(rows, before, inp, t)
}

fn leader_sync_rejected_in_preparing(_: &[RowSpec], before: &Group, inp: &Input, t: &Transition) -> bool {
    if inp.kind != Ev::SyncGroup || before.state != State::PreparingRebalance {
        return false;
    }
    match &t.reply {
        Some(Resp::Sync { error, assignment, .. }) => {
            if *error == E_NONE || *assignment {
                return true;
            }
        }
        _ => return true,
    }
    t.after.members.iter().any(|m| match before.member(m.id) {
        Some(b) => b.assignment != m.assignment,
        None => false,
    })
}

fn generation_monotonic(rows: &[RowSpec], before: &Group, _: &Input, t: &Transition) -> bool {
    use State::*;
    if new_incarnation(rows, t) || t.after.state == Missing {
        return false;
    }
    let completions = t
        .rows
        .iter()
        .filter(|r| {
            let row = &rows[**r as usize];
            row.source == PreparingRebalance && matches!(row.next_state, Some(CompletingRebalance) | Some(Empty))
        })
        .count() as i32;
    t.after.generation - before.generation != completions
}

fn valid_state_edges(rows: &[RowSpec], _: &Group, _: &Input, t: &Transition) -> bool {
    use State::*;
    for r in &t.rows {
        let row = &rows[*r as usize];
        let dst = match row.next_state {
            None => continue,
            Some(d) => d,
        };
        if row.new_incarnation {
            continue;
        }
        if row.source == Missing {
            if dst != Missing {
                return true;
            }
            continue;
        }
        let target = if dst == Missing { Dead } else { dst };
        if !State::valid_transition(row.source, target) {
            return true;
        }
    }
    false
}

fn dead_is_absorbing(rows: &[RowSpec], before: &Group, _: &Input, t: &Transition) -> bool {
    use State::*;
    before.state == Dead && t.after.state != Dead && !new_incarnation(rows, t) && t.after.state != Missing
}

fn commit_fencing(_: &[RowSpec], before: &Group, inp: &Input, t: &Transition) -> bool {
    use State::*;
    match &inp.req {
        Some(Req::Commit { generation, .. }) if *generation >= 0 => {
            let live = matches!(before.state, Empty | PreparingRebalance | CompletingRebalance | Stable);
            if *generation != before.generation || !live {
                matches!(t.reply, Some(Resp::Commit { error: E_NONE }))
            } else {
                false
            }
        }
        _ => false,
    }
}

fn only_members_served(_: &[RowSpec], before: &Group, inp: &Input, t: &Transition) -> bool {
    if !matches!(inp.kind, Ev::Heartbeat | Ev::SyncGroup) {
        return false;
    }
    let m = inp.req.as_ref().map(|r| r.member_id()).unwrap_or(NOID);
    let err = t.reply.as_ref().and_then(|r| r.error());
    err == Some(E_NONE) && !before.has_member(m)
}

pub fn parked(g: &Group) -> SmallVec<[u16; 8]> {
    let mut out = SmallVec::new();
    for m in &g.members {
        if let Some((r, _)) = m.aj {
            out.push(r);
        }
        if let Some(r) = m.a_sync {
            out.push(r);
        }
    }
    out
}

fn one_response_violated(before: &Group, inp: &Input, t: &Transition) -> bool {
    let parked_before = parked(before);
    let parked_after = parked(&t.after);
    let own: Option<u16> = if inp.kind.is_request() { Some(inp.request_id) } else { None };
    let mut answered: SmallVec<[(u16, u32); 8]> = SmallVec::new();
    let mut settled: SmallVec<[u16; 8]> = SmallVec::new();
    let bump = |answered: &mut SmallVec<[(u16, u32); 8]>, r: u16| match answered.iter_mut().find(|x| x.0 == r) {
        Some(x) => x.1 += 1,
        None => answered.push((r, 1)),
    };
    for o in &t.outputs {
        if !parked_before.contains(&o.rid) && Some(o.rid) != own {
            return true;
        }
        if o.resp.is_none() {
            settled.push(o.rid);
            continue;
        }
        bump(&mut answered, o.rid);
        settled.push(o.rid);
    }
    if let (Some(_), Some(o)) = (&t.reply, own) {
        bump(&mut answered, o);
        settled.push(o);
    }
    if answered.iter().any(|x| x.1 > 1) {
        return true;
    }
    for r in &parked_before {
        if !parked_after.contains(r) && !settled.contains(r) && Some(*r) != own {
            return true;
        }
    }
    if let Some(o) = own {
        if !settled.contains(&o) && !parked_after.contains(&o) {
            return true;
        }
        if parked_after.contains(&o) && answered.iter().any(|x| x.0 == o) {
            return true;
        }
    }
    false
}
