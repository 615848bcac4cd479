//! The table's language natively: atoms, effects and reply forms (each under the kebab-case name
//! model/atoms.py, model/effects.py and model/replies.py register it with), and the step semantics
//! of model/step.py (one matching row, effects in order, frame check, next state, reply, urgent
//! events, LeaveGroup batches, every resolution of the nondeterministic choices).
//!
//! No row lives here: the rows come from Python as data (`TableSpec`).

use crate::model::*;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// The rows one step fired, in order.
pub type Fired = SmallVec<[u16; 4]>;

// ------------------------------------------------------------------ atoms

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Atom {
    Owned,
    GroupIdEmpty,
    SessionTimeoutValid,
    MemberIdEmpty,
    HasInstanceId,
    RequiresKnownMemberId,
    ProtocolsSupported,
    WithinMaxSize,
    MemberPending,
    MemberKnown,
    InstanceMapped,
    Fenced,
    MemberValid,
    IsLeader,
    MetadataMatches,
    SelectedProtocolUnchanged,
    GenerationMatches,
    GenerationNegative,
    CommitHasMemberInfo,
    SyncProtocolConsistent,
    AppendOk,
    AllJoined,
    JoinTimerArmed,
    JoinTimerInitial,
    InitialDelayExtends,
    AnyRejoined,
    StaticAbsentee,
    SyncTimerArmed,
    SyncTimerDone,
    SessionArmed,
    MemberSatisfied,
    PendingArmed,
    HasOffsets,
    PersistedStable,
    PersistedEmpty,
    StateFilterMatches,
}

/// Every atom the engine implements, under model/atoms.py's names.
pub const ATOMS: &[(&str, Atom)] = &[
    ("owned", Atom::Owned),
    ("group-id-empty", Atom::GroupIdEmpty),
    ("session-timeout-valid", Atom::SessionTimeoutValid),
    ("member-id-empty", Atom::MemberIdEmpty),
    ("has-instance-id", Atom::HasInstanceId),
    ("requires-known-member-id", Atom::RequiresKnownMemberId),
    ("protocols-supported", Atom::ProtocolsSupported),
    ("within-max-size", Atom::WithinMaxSize),
    ("member-pending", Atom::MemberPending),
    ("member-known", Atom::MemberKnown),
    ("instance-mapped", Atom::InstanceMapped),
    ("fenced", Atom::Fenced),
    ("member-valid", Atom::MemberValid),
    ("is-leader", Atom::IsLeader),
    ("metadata-matches", Atom::MetadataMatches),
    ("selected-protocol-unchanged", Atom::SelectedProtocolUnchanged),
    ("generation-matches", Atom::GenerationMatches),
    ("generation-negative", Atom::GenerationNegative),
    ("commit-has-member-info", Atom::CommitHasMemberInfo),
    ("sync-protocol-consistent", Atom::SyncProtocolConsistent),
    ("append-ok", Atom::AppendOk),
    ("all-joined", Atom::AllJoined),
    ("join-timer-armed", Atom::JoinTimerArmed),
    ("join-timer-initial", Atom::JoinTimerInitial),
    ("initial-delay-extends", Atom::InitialDelayExtends),
    ("any-rejoined", Atom::AnyRejoined),
    ("static-absentee", Atom::StaticAbsentee),
    ("sync-timer-armed", Atom::SyncTimerArmed),
    ("sync-timer-done", Atom::SyncTimerDone),
    ("session-armed", Atom::SessionArmed),
    ("member-satisfied", Atom::MemberSatisfied),
    ("pending-armed", Atom::PendingArmed),
    ("has-offsets", Atom::HasOffsets),
    ("persisted-stable", Atom::PersistedStable),
    ("persisted-empty", Atom::PersistedEmpty),
    ("state-filter-matches", Atom::StateFilterMatches),
];

#[derive(Clone, Debug)]
pub struct Settings {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub group_max_size: i64,
    pub initial_rebalance_delay_ms: i32,
    pub new_member_join_timeout_ms: i32,
    pub append_ok: bool,
    pub append_error: ErrCode,
    /// The group's id is "" (atoms.py group_id_empty reads model/state.py Group.group_id; the
    /// engine steps one group per run, so its id is a setting of the run, not a Group field).
    pub group_id_empty: bool,
}

/// atoms.py member_id_of
pub fn member_id_of(x: &Input) -> Mid {
    if let Some(m) = x.member {
        return m;
    }
    x.req.as_ref().map(|r| r.member_id()).unwrap_or(NOID)
}
/// atoms.py instance_id_of
pub fn instance_id_of(x: &Input) -> Inst {
    if x.kind == Ev::LeaveGroup {
        return x.instance;
    }
    x.req.as_ref().map(|r| r.instance()).unwrap_or(NOINST)
}
fn generation_of(x: &Input) -> i32 {
    x.req.as_ref().map(|r| r.generation()).unwrap_or(-1)
}

fn join_request(x: &Input) -> Result<JoinReq, String> {
    match &x.req {
        Some(Req::Join(j)) => Ok(*j),
        _ => Err(format!("a JoinGroup atom, effect or reply on a {} input", x.kind.name())),
    }
}

/// protocol_selection.py select_protocol
pub fn select_protocol(prefs: &[Vec<u8>]) -> u8 {
    if prefs.is_empty() {
        return PN_NONE;
    }
    let mut common: Vec<u8> = prefs[0].clone();
    for p in &prefs[1..] {
        common.retain(|x| p.contains(x));
    }
    if common.is_empty() {
        return PN_NONE;
    }
    let mut votes: Vec<(u8, usize)> = Vec::new();
    for p in prefs {
        let vote = *p.iter().find(|x| common.contains(x)).unwrap_or(&PN_NONE);
        match votes.iter_mut().find(|v| v.0 == vote) {
            Some(v) => v.1 += 1,
            None => votes.push((vote, 1)),
        }
    }
    let best = votes.iter().map(|v| v.1).max().unwrap_or(0);
    for p in prefs[0].iter().filter(|x| common.contains(x)) {
        if votes.iter().any(|v| v.0 == *p && v.1 == best) {
            return *p;
        }
    }
    PN_NONE
}

/// A guard literal's atom: one the engine implements, or one Python registered that it calls
/// back into (the slow path; its index into `Table::py_atoms`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lit {
    Native(Atom),
    Py(u16),
}

impl Lit {
    /// Its slot in a step's memo of atom values.
    fn slot(self) -> usize {
        match self {
            Lit::Native(a) => a as usize,
            Lit::Py(i) => ATOMS.len() + i as usize,
        }
    }
}

/// What a row applied by Python made: the group after it, the responses, its reply.
pub type RowOutcome = (Group, Vec<Output>, Option<Resp>);

/// What the engine asks Python for when the table names an atom, effect, reply form or
/// invariant it has no native version of (a counted slow path, per call). The `python` feature
/// implements it; a table without such names never calls it.
pub trait Callbacks {
    /// The value of `Table::py_atoms[atom]`.
    fn atom(&self, atom: u16, g: &Group, x: &Input, s: &Settings) -> Result<bool, StepError>;
    /// Row `row` applied by model.step (its effects, frame check, next state and reply):
    /// the group after it, the responses it made and its reply.
    fn fire_row(
        &self,
        row: &str,
        g: &Group,
        x: &Input,
        s: &Settings,
        ch: &mut Chooser,
    ) -> Result<RowOutcome, StepError>;
    /// Whether the state invariant `inv` (an index into the explorer's Python invariants) is violated.
    fn state_violated(&self, inv: u16, g: &Group) -> Result<bool, String>;
    /// Whether the transition invariant `inv` is violated by the step `before --x--> t`.
    fn transition_violated(
        &self,
        inv: u16,
        rows: &[String],
        before: &Group,
        x: &Input,
        t: &Transition,
    ) -> Result<bool, String>;
}

/// The names a table sends through Python, and who answers for them.
pub struct SlowPath {
    pub atoms: Vec<String>,
    pub effects: Vec<String>,
    pub reply_forms: Vec<String>,
    pub callbacks: Box<dyn Callbacks + Send + Sync>,
}

pub fn eval_atom(a: Atom, g: &Group, x: &Input, s: &Settings) -> Result<bool, String> {
    use Atom::*;
    Ok(match a {
        Owned => g.owned,
        GroupIdEmpty => s.group_id_empty,
        SessionTimeoutValid => {
            let t = join_request(x)?.session_timeout;
            s.min_session_timeout_ms <= t && t <= s.max_session_timeout_ms
        }
        MemberIdEmpty => member_id_of(x) == NOID,
        HasInstanceId => instance_id_of(x) != NOINST,
        RequiresKnownMemberId => {
            let j = join_request(x)?;
            j.require_known && j.instance == NOINST
        }
        ProtocolsSupported => {
            let j = join_request(x)?;
            let names = protocol_names(j.protocols);
            if matches!(g.state, State::Empty | State::Missing) && g.members.is_empty() {
                j.ptype != PT_EMPTY && !names.is_empty()
            } else if j.ptype != g.ptype {
                false
            } else {
                let mut common: Option<Vec<u8>> = None;
                for m in &g.members {
                    let mine = protocol_names(m.protocols);
                    common = Some(match common {
                        None => mine,
                        Some(c) => c.into_iter().filter(|p| mine.contains(p)).collect(),
                    });
                }
                let common = common.unwrap_or_else(|| names.clone());
                names.iter().any(|n| common.contains(n))
            }
        }
        WithinMaxSize => {
            let member = g.member(member_id_of(x));
            match g.state {
                State::Empty | State::Dead | State::Missing => true,
                State::PreparingRebalance => {
                    let parked = member.map(|m| m.aj.is_some()).unwrap_or(false);
                    parked || (g.num_awaiting_join() as i64) < s.group_max_size
                }
                _ => member.is_some() || (g.members.len() as i64) < s.group_max_size,
            }
        }
        MemberPending => g.has_pending(member_id_of(x)),
        MemberKnown => g.has_member(member_id_of(x)),
        InstanceMapped => {
            let i = instance_id_of(x);
            i != NOINST && g.static_member_id(i) != NOID
        }
        Fenced => {
            let i = instance_id_of(x);
            if i == NOINST {
                false
            } else {
                let cur = g.static_member_id(i);
                cur != NOID && cur != member_id_of(x)
            }
        }
        MemberValid => {
            let i = instance_id_of(x);
            let m = member_id_of(x);
            if i != NOINST && g.static_member_id(i) != m {
                false
            } else {
                g.has_member(m)
            }
        }
        IsLeader => g.leader != NOID && g.leader == member_id_of(x),
        MetadataMatches => {
            let j = join_request(x)?;
            g.member(member_id_of(x)).map(|m| m.protocols == j.protocols).unwrap_or(false)
        }
        SelectedProtocolUnchanged => {
            let j = join_request(x)?;
            let old = g.static_member_id(j.instance);
            let prefs: Vec<Vec<u8>> = g
                .members
                .iter()
                .map(|m| if m.id == old { protocol_names(j.protocols) } else { protocol_names(m.protocols) })
                .collect();
            select_protocol(&prefs) == g.pname
        }
        GenerationMatches => generation_of(x) == g.generation,
        GenerationNegative => generation_of(x) < 0,
        CommitHasMemberInfo => match &x.req {
            Some(Req::Commit { member, generation, instance }) => {
                *generation >= 0 || *member != NOID || *instance != NOINST
            }
            _ => return Err("commit-has-member-info on a non-OffsetCommit input".into()),
        },
        SyncProtocolConsistent => match &x.req {
            Some(Req::Sync { ptype, pname, .. }) => {
                (*ptype == PT_NONE || *ptype == g.ptype) && (*pname == PN_NONE || *pname == g.pname)
            }
            _ => return Err("sync-protocol-consistent on a non-SyncGroup input".into()),
        },
        AppendOk => s.append_ok,
        AllJoined => g.has_all_members_joined(),
        JoinTimerArmed => !g.join_timers.is_empty(),
        JoinTimerInitial => g.join_timers.first().map(|t| t.initial).unwrap_or(false),
        InitialDelayExtends => {
            g.join_timers.first().map(|t| g.new_member_added && t.remaining != 0).unwrap_or(false)
        }
        AnyRejoined => g.num_awaiting_join() > 0,
        StaticAbsentee => g.members.iter().any(|m| m.instance != NOINST && m.aj.is_none()),
        SyncTimerArmed => !g.sync_timers.is_empty(),
        SyncTimerDone => match g.sync_timers.first() {
            None => false,
            Some(t) => {
                *t != g.generation
                    || !matches!(g.state, State::CompletingRebalance | State::Stable)
                    || !g.members.iter().any(|m| m.pending_sync)
            }
        },
        SessionArmed => g.member(member_id_of(x)).map(|m| m.session).unwrap_or(false),
        MemberSatisfied => g
            .member(member_id_of(x))
            .map(|m| !m.is_new && (m.aj.is_some() || m.a_sync.is_some()))
            .unwrap_or(false),
        PendingArmed => g.has_pending(member_id_of(x)),
        HasOffsets => g.offsets.is_some(),
        PersistedStable => g.persisted.as_ref().map(|p| p.state == State::Stable).unwrap_or(false),
        PersistedEmpty => g.persisted.as_ref().map(|p| p.state == State::Empty).unwrap_or(false),
        StateFilterMatches => match &x.req {
            Some(Req::List { filter }) => match filter {
                0 => true,
                1 => g.state == State::Empty,
                _ => g.state == State::Stable,
            },
            _ => return Err("state-filter-matches on a non-ListGroups input".into()),
        },
    })
}

// ------------------------------------------------------------------ effects

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Effect {
    CreateGroup,
    RemoveGroup,
    UnloadGroup,
    LoadGroup,
    ClaimPartition,
    ReleasePartition,
    PersistGroup,
    AddPendingMember,
    AddMember,
    MarkNewMemberAdded,
    UpdateAndParkJoin,
    ReplaceStaticMember,
    RevertStaticReplacement,
    UnparkJoin,
    Rebalance,
    RemoveUnjoinedDynamic,
    ElectJoinedLeader,
    BumpGeneration,
    SelectProtocol,
    ClearProtocol,
    DisarmJoinTimer,
    AnswerJoins,
    ArmDelayedSync,
    RearmDelayedJoin,
    ExtendInitialDelay,
    ParkSync,
    UnpendSync,
    StoreAssignment,
    AnswerSyncs,
    FailSyncs,
    RearmSession,
    RemoveMember,
    MaxSizeReject,
    RemovePending,
    DisarmSession,
    RemoveUnsynced,
    DisarmDelayedSync,
    StoreOffsets,
}

/// Every effect the engine implements, under model/effects.py's names.
pub const EFFECTS: &[(&str, Effect)] = &[
    ("create-group", Effect::CreateGroup),
    ("remove-group", Effect::RemoveGroup),
    ("unload-group", Effect::UnloadGroup),
    ("load-group", Effect::LoadGroup),
    ("claim-partition", Effect::ClaimPartition),
    ("release-partition", Effect::ReleasePartition),
    ("persist-group", Effect::PersistGroup),
    ("add-pending-member", Effect::AddPendingMember),
    ("add-member", Effect::AddMember),
    ("mark-new-member-added", Effect::MarkNewMemberAdded),
    ("update-and-park-join", Effect::UpdateAndParkJoin),
    ("replace-static-member", Effect::ReplaceStaticMember),
    ("revert-static-replacement", Effect::RevertStaticReplacement),
    ("unpark-join", Effect::UnparkJoin),
    ("rebalance", Effect::Rebalance),
    ("remove-unjoined-dynamic", Effect::RemoveUnjoinedDynamic),
    ("elect-joined-leader", Effect::ElectJoinedLeader),
    ("bump-generation", Effect::BumpGeneration),
    ("select-protocol", Effect::SelectProtocol),
    ("clear-protocol", Effect::ClearProtocol),
    ("disarm-join-timer", Effect::DisarmJoinTimer),
    ("answer-joins", Effect::AnswerJoins),
    ("arm-delayed-sync", Effect::ArmDelayedSync),
    ("rearm-delayed-join", Effect::RearmDelayedJoin),
    ("extend-initial-delay", Effect::ExtendInitialDelay),
    ("park-sync", Effect::ParkSync),
    ("unpend-sync", Effect::UnpendSync),
    ("store-assignment", Effect::StoreAssignment),
    ("answer-syncs", Effect::AnswerSyncs),
    ("fail-syncs", Effect::FailSyncs),
    ("rearm-session", Effect::RearmSession),
    ("remove-member", Effect::RemoveMember),
    ("max-size-reject", Effect::MaxSizeReject),
    ("remove-pending", Effect::RemovePending),
    ("disarm-session", Effect::DisarmSession),
    ("remove-unsynced", Effect::RemoveUnsynced),
    ("disarm-delayed-sync", Effect::DisarmDelayedSync),
    ("store-offsets", Effect::StoreOffsets),
];

/// A field of model/state.py's Group (group_id excluded), as the frame check compares it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Field {
    State,
    Generation,
    ProtocolType,
    ProtocolName,
    Leader,
    Members,
    Pending,
    JoinTimers,
    SyncTimers,
    Offsets,
    Persisted,
    Owned,
    NewMemberAdded,
}

impl Field {
    /// This field's bit in a frame mask.
    pub fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// The Group fields the engine compares, under model/dsl.py's names: Python hands its GROUP_FIELDS
/// over, and a field one side lacks is refused when the engine is made.
pub const FIELDS: &[(&str, Field)] = &[
    ("state", Field::State),
    ("generation", Field::Generation),
    ("protocol_type", Field::ProtocolType),
    ("protocol_name", Field::ProtocolName),
    ("leader", Field::Leader),
    ("members", Field::Members),
    ("pending", Field::Pending),
    ("join_timers", Field::JoinTimers),
    ("sync_timers", Field::SyncTimers),
    ("offsets", Field::Offsets),
    ("persisted", Field::Persisted),
    ("owned", Field::Owned),
    ("new_member_added", Field::NewMemberAdded),
];

fn field_differs(f: Field, a: &Group, b: &Group) -> bool {
    match f {
        Field::State => a.state != b.state,
        Field::Generation => a.generation != b.generation,
        Field::ProtocolType => a.ptype != b.ptype,
        Field::ProtocolName => a.pname != b.pname,
        Field::Leader => a.leader != b.leader,
        Field::Members => a.members != b.members,
        Field::Pending => a.pending != b.pending,
        Field::JoinTimers => a.join_timers != b.join_timers,
        Field::SyncTimers => a.sync_timers != b.sync_timers,
        Field::Offsets => a.offsets != b.offsets,
        Field::Persisted => a.persisted != b.persisted,
        Field::Owned => a.owned != b.owned,
        Field::NewMemberAdded => a.new_member_added != b.new_member_added,
    }
}

/// The group's fields outside `modifies` (the others left at their defaults, never compared).
fn frame_snapshot(g: &Group, modifies: u16) -> Group {
    let keep = |f: Field| modifies & f.bit() == 0;
    Group {
        state: g.state,
        generation: g.generation,
        ptype: g.ptype,
        pname: g.pname,
        leader: g.leader,
        members: if keep(Field::Members) { g.members.clone() } else { Members::new() },
        pending: if keep(Field::Pending) { g.pending.clone() } else { Ids::new() },
        join_timers: if keep(Field::JoinTimers) { g.join_timers.clone() } else { JoinTimers::new() },
        sync_timers: if keep(Field::SyncTimers) { g.sync_timers.clone() } else { SyncTimers::new() },
        offsets: g.offsets,
        persisted: if keep(Field::Persisted) { g.persisted.clone() } else { None },
        owned: g.owned,
        new_member_added: g.new_member_added,
    }
}

/// Resolves the model's nondeterministic choices (step.py ReplayChooser).
#[derive(Default, Debug)]
pub struct Chooser {
    pub prefix: Choices,
    pub made: Choices,
    pub counts: Choices,
}

pub type Choices = SmallVec<[u32; 4]>;

impl Chooser {
    fn choose(&mut self, options: usize) -> usize {
        let i = self.made.len();
        let pick = if i < self.prefix.len() { self.prefix[i] } else { 0 };
        self.made.push(pick);
        self.counts.push(options as u32);
        pick as usize
    }
}

#[derive(Default, Clone)]
struct Scratch {
    member_id: Option<Mid>,
    old_member_id: Option<Mid>,
    old_member: Option<Member>,
    old_leader: Option<Mid>,
}

struct Ctx<'a> {
    g: Group,
    inp: Input,
    s: &'a Settings,
    outputs: Vec<Output>,
    scratch: Scratch,
    ch: &'a mut Chooser,
}

impl Ctx<'_> {
    fn respond(&mut self, rid: u16, resp: Resp, member: Mid) {
        self.outputs.push(Output { rid, resp: Some(resp), member });
    }
    fn supersede(&mut self, rid: u16, member: Mid) {
        self.outputs.push(Output { rid, resp: None, member });
    }
    fn target_id(&self) -> Mid {
        self.scratch.member_id.unwrap_or_else(|| member_id_of(&self.inp))
    }
    fn fresh_id(&self) -> Result<Mid, String> {
        let j = join_request(&self.inp)?;
        let base = if j.instance != NOINST { j.instance } else { j.client };
        Ok(new_member_id(&self.g, base))
    }
    fn choose_member(&mut self, candidates: &[Mid]) -> Mid {
        if candidates.is_empty() {
            return NOID;
        }
        let i = self.ch.choose(candidates.len());
        candidates[i]
    }
    fn member_clone(&self, id: Mid, what: &str) -> Result<Member, String> {
        self.g.member(id).cloned().ok_or_else(|| format!("{what}: no member {id}"))
    }
}

/// modes.py AbstractMode.new_member_id: `base#k` with the smallest k not in use.
pub fn new_member_id(g: &Group, base: u8) -> Mid {
    let mut k = 0u8;
    loop {
        let id = mid(base, k);
        if !g.members.iter().any(|m| m.id == id) && !g.pending.contains(&id) {
            return id;
        }
        k += 1;
    }
}

/// effects.py armed_session (abstract mode: every deadline is 0, i.e. armed).
fn armed_session(mut m: Member) -> Member {
    m.session = m.is_new || (m.aj.is_none() && m.a_sync.is_none());
    m
}

fn remove(ctx: &mut Ctx, id: Mid, parked_join_error: Option<ErrCode>) {
    let m = match ctx.g.member(id) {
        None => return,
        Some(m) => m.clone(),
    };
    if let (Some((rid, _)), Some(e)) = (m.aj, parked_join_error) {
        ctx.respond(rid, Resp::join_error(e, NOID), m.id);
    }
    if let Some(rid) = m.a_sync {
        ctx.supersede(rid, m.id);
    }
    ctx.g.without_member(id);
    if ctx.g.leader == id {
        ctx.g.leader = NOID;
        let ids: Vec<Mid> = ctx.g.members.iter().map(|m| m.id).collect();
        ctx.g.leader = ctx.choose_member(&ids);
    }
}

fn answer_sync(ctx: &mut Ctx, mut m: Member, resp: Resp) -> Member {
    if let Some(rid) = m.a_sync {
        ctx.respond(rid, resp, m.id);
    }
    m.a_sync = None;
    armed_session(m)
}

fn roster(g: &Group) -> Vec<JoinMember> {
    g.members.iter().map(|m| JoinMember { id: m.id, instance: m.instance, meta: metadata_for(m.protocols, g.pname) }).collect()
}

fn apply_effect(e: Effect, ctx: &mut Ctx) -> Result<(), String> {
    use Effect::*;
    match e {
        CreateGroup => {
            let g = &ctx.g;
            ctx.g = Group {
                state: State::Empty,
                offsets: g.offsets,
                persisted: g.persisted.clone(),
                owned: g.owned,
                ..Group::default()
            };
        }
        RemoveGroup => {
            let g = &ctx.g;
            ctx.g = Group { state: g.state, owned: g.owned, ..Group::default() };
        }
        UnloadGroup => {
            let members = ctx.g.members.clone();
            for m in &members {
                if let Some((rid, _)) = m.aj {
                    ctx.respond(rid, Resp::join_error(E_NOT_COORDINATOR, m.id), m.id);
                }
                if let Some(rid) = m.a_sync {
                    ctx.respond(rid, Resp::sync_error(E_NOT_COORDINATOR), m.id);
                }
            }
            let g = &ctx.g;
            ctx.g = Group {
                state: g.state,
                generation: g.generation,
                ptype: g.ptype,
                pname: g.pname,
                offsets: g.offsets,
                persisted: g.persisted.clone(),
                owned: false,
                ..Group::default()
            };
        }
        LoadGroup => match ctx.g.persisted.clone() {
            None => ctx.g.owned = true,
            Some(p) => {
                ctx.g.members = p
                    .members
                    .iter()
                    .map(|m| Member {
                        aj: None,
                        a_sync: None,
                        is_new: false,
                        pending_sync: false,
                        session: true,
                        ..m.clone()
                    })
                    .collect();
                ctx.g.generation = p.generation;
                ctx.g.ptype = p.ptype;
                ctx.g.pname = p.pname;
                ctx.g.leader = p.leader;
                ctx.g.owned = true;
            }
        },
        ClaimPartition => ctx.g.owned = true,
        ReleasePartition => ctx.g.owned = false,
        PersistGroup => {
            let g = &ctx.g;
            let record: Members = g
                .members
                .iter()
                .map(|m| Member { aj: None, a_sync: None, is_new: false, session: false, pending_sync: false, ..m.clone() })
                .collect();
            let p = Persisted {
                state: if g.members.is_empty() { State::Empty } else { State::Stable },
                generation: g.generation,
                ptype: g.ptype,
                pname: g.pname,
                leader: g.leader,
                members: record,
            };
            ctx.g.persisted = Some(std::sync::Arc::new(p));
        }
        AddPendingMember => {
            let id = ctx.fresh_id()?;
            ctx.scratch.member_id = Some(id);
            ctx.g.pending.push(id);
        }
        AddMember => {
            let j = join_request(&ctx.inp)?;
            let mut id = member_id_of(&ctx.inp);
            if id == NOID {
                id = ctx.fresh_id()?;
            }
            ctx.scratch.member_id = Some(id);
            let m = armed_session(Member {
                id,
                instance: j.instance,
                client: j.client,
                ptype: j.ptype,
                protocols: j.protocols,
                session_timeout: j.session_timeout,
                rebalance_timeout: j.rebalance_timeout,
                aj: Some((ctx.inp.request_id, j.skip)),
                a_sync: None,
                is_new: true,
                assignment: false,
                session: false,
                pending_sync: false,
            });
            let was_empty = ctx.g.members.is_empty();
            let ptype = m.ptype;
            ctx.g.pending.retain(|p| *p != id);
            ctx.g.members.push(m);
            if ctx.g.leader == NOID {
                ctx.g.leader = id;
            }
            if ctx.g.ptype == PT_NONE || was_empty {
                ctx.g.ptype = ptype;
            }
        }
        MarkNewMemberAdded => {
            if ctx.g.generation == 0 {
                ctx.g.new_member_added = true;
            }
        }
        UpdateAndParkJoin => {
            let j = join_request(&ctx.inp)?;
            let mut m = ctx.member_clone(ctx.target_id(), "update-and-park-join")?;
            if let Some((rid, _)) = m.aj {
                ctx.supersede(rid, m.id);
            }
            m.protocols = j.protocols;
            m.session_timeout = j.session_timeout;
            m.rebalance_timeout = j.rebalance_timeout;
            m.aj = Some((ctx.inp.request_id, j.skip));
            ctx.g.with_member(m);
        }
        ReplaceStaticMember => {
            let j = join_request(&ctx.inp)?;
            let old_id = ctx.g.static_member_id(j.instance);
            let old = ctx.member_clone(old_id, "replace-static-member")?;
            let new_id = ctx.fresh_id()?;
            ctx.scratch.member_id = Some(new_id);
            ctx.scratch.old_member_id = Some(old_id);
            ctx.scratch.old_member = Some(old.clone());
            ctx.scratch.old_leader = Some(ctx.g.leader);
            if let Some((rid, _)) = old.aj {
                ctx.respond(rid, Resp::join_error(E_FENCED_INSTANCE_ID, old_id), old_id);
            }
            if let Some(rid) = old.a_sync {
                ctx.respond(rid, Resp::sync_error(E_FENCED_INSTANCE_ID), old_id);
            }
            let m = armed_session(Member { id: new_id, aj: None, a_sync: None, ..old });
            for x in ctx.g.members.iter_mut() {
                if x.id == old_id {
                    *x = m.clone();
                }
            }
            if ctx.g.leader == old_id {
                ctx.g.leader = new_id;
            }
        }
        RevertStaticReplacement => {
            let new_id = ctx.scratch.member_id.ok_or("revert-static-replacement: no new id")?;
            let old = ctx.scratch.old_member.clone().ok_or("revert-static-replacement: no old member")?;
            let cur = ctx.member_clone(new_id, "revert-static-replacement")?;
            let back = armed_session(Member { protocols: cur.protocols, aj: None, a_sync: None, ..old.clone() });
            for x in ctx.g.members.iter_mut() {
                if x.id == new_id {
                    *x = back.clone();
                }
            }
            if ctx.g.leader == new_id {
                ctx.g.leader = old.id;
            }
        }
        UnparkJoin => {
            let mut m = ctx.member_clone(ctx.target_id(), "unpark-join")?;
            m.aj = None;
            ctx.g.with_member(m);
        }
        Rebalance => {
            let state = ctx.g.state;
            let old = std::mem::take(&mut ctx.g.members);
            let mut members = Members::with_capacity(old.len());
            for mut m in old {
                if state == State::CompletingRebalance {
                    if m.a_sync.is_some() {
                        m = answer_sync(ctx, m, Resp::sync_error(E_REBALANCE_IN_PROGRESS));
                    }
                    m.assignment = false;
                }
                m.pending_sync = false;
                members.push(m);
            }
            let timeout = members.iter().map(|m| m.rebalance_timeout).max().unwrap_or(0);
            let timer = if state == State::Empty {
                let delay = ctx.s.initial_rebalance_delay_ms;
                JoinTimer { initial: true, delay, remaining: (timeout - delay).max(0) }
            } else {
                JoinTimer { initial: false, delay: 0, remaining: 0 }
            };
            ctx.g.members = members;
            ctx.g.sync_timers.clear();
            ctx.g.join_timers.push(timer);
        }
        RemoveUnjoinedDynamic => {
            let snapshot = ctx.g.members.clone();
            for m in snapshot {
                if m.instance == NOINST && m.aj.is_none() {
                    remove(ctx, m.id, None);
                }
            }
        }
        ElectJoinedLeader => {
            if let Some(l) = ctx.g.member(ctx.g.leader) {
                if l.aj.is_some() {
                    return Ok(());
                }
            }
            let joined: Vec<Mid> = ctx.g.members.iter().filter(|m| m.aj.is_some()).map(|m| m.id).collect();
            ctx.g.leader = ctx.choose_member(&joined);
        }
        BumpGeneration => ctx.g.generation += 1,
        SelectProtocol => {
            let prefs: Vec<Vec<u8>> = ctx.g.members.iter().map(|m| protocol_names(m.protocols)).collect();
            ctx.g.pname = select_protocol(&prefs);
        }
        ClearProtocol => ctx.g.pname = PN_NONE,
        DisarmJoinTimer => {
            if !ctx.g.join_timers.is_empty() {
                ctx.g.join_timers.remove(0);
            }
        }
        AnswerJoins => {
            let r = roster(&ctx.g);
            let (generation, ptype, pname, leader) = (ctx.g.generation, ctx.g.ptype, ctx.g.pname, ctx.g.leader);
            let old = std::mem::take(&mut ctx.g.members);
            let mut members = Members::with_capacity(old.len());
            for mut m in old {
                if let Some((rid, _)) = m.aj {
                    let resp = Resp::Join {
                        error: E_NONE,
                        generation,
                        ptype,
                        pname,
                        leader,
                        member: m.id,
                        skip: false,
                        members: if m.id == leader { r.clone() } else { Vec::new() },
                    };
                    ctx.respond(rid, resp, m.id);
                    m.aj = None;
                }
                m.is_new = false;
                let mut m = armed_session(m);
                m.pending_sync = true;
                members.push(m);
            }
            ctx.g.members = members;
        }
        ArmDelayedSync => {
            let gen = ctx.g.generation;
            ctx.g.sync_timers.push(gen);
        }
        RearmDelayedJoin => {
            if !ctx.g.join_timers.is_empty() {
                ctx.g.join_timers.remove(0);
            }
            ctx.g.join_timers.push(JoinTimer { initial: false, delay: 0, remaining: 0 });
        }
        ExtendInitialDelay => {
            let t = *ctx.g.join_timers.first().ok_or("extend-initial-delay: no timer")?;
            let delay = ctx.s.initial_rebalance_delay_ms.min(t.remaining);
            let nxt = JoinTimer { initial: true, delay, remaining: (t.remaining - t.delay).max(0) };
            ctx.g.join_timers.remove(0);
            ctx.g.join_timers.push(nxt);
            ctx.g.new_member_added = false;
        }
        ParkSync => {
            let mut m = ctx.member_clone(member_id_of(&ctx.inp), "park-sync")?;
            if let Some(rid) = m.a_sync {
                ctx.supersede(rid, m.id);
            }
            m.a_sync = Some(ctx.inp.request_id);
            ctx.g.with_member(m);
        }
        UnpendSync => {
            let mut m = ctx.member_clone(member_id_of(&ctx.inp), "unpend-sync")?;
            m.pending_sync = false;
            ctx.g.with_member(m);
        }
        StoreAssignment => {
            let given = match &ctx.inp.req {
                Some(Req::Sync { assignments, .. }) => assignments.clone(),
                _ => return Err("store-assignment on a non-SyncGroup input".into()),
            };
            for m in ctx.g.members.iter_mut() {
                m.assignment = given.contains(&m.id);
            }
        }
        AnswerSyncs => {
            let (ptype, pname) = (ctx.g.ptype, ctx.g.pname);
            let old = std::mem::take(&mut ctx.g.members);
            let mut members = Members::with_capacity(old.len());
            for m in old {
                if m.a_sync.is_some() {
                    let resp = Resp::Sync { error: E_NONE, ptype, pname, assignment: m.assignment };
                    members.push(answer_sync(ctx, m, resp));
                } else {
                    members.push(m);
                }
            }
            ctx.g.members = members;
        }
        FailSyncs => {
            let mapped = map_store_group_error(ctx.s.append_error);
            let old = std::mem::take(&mut ctx.g.members);
            let mut members = Members::with_capacity(old.len());
            for mut m in old {
                if m.a_sync.is_some() {
                    m = answer_sync(ctx, m, Resp::sync_error(mapped));
                }
                m.assignment = false;
                members.push(m);
            }
            ctx.g.members = members;
        }
        RearmSession => {
            let m = ctx.member_clone(ctx.target_id(), "rearm-session")?;
            ctx.g.with_member(armed_session(m));
        }
        RemoveMember => {
            let mut id = member_id_of(&ctx.inp);
            let iid = instance_id_of(&ctx.inp);
            if id == NOID && iid != NOINST {
                id = ctx.g.static_member_id(iid);
            }
            remove(ctx, id, Some(E_UNKNOWN_MEMBER_ID));
        }
        MaxSizeReject => {
            let id = member_id_of(&ctx.inp);
            ctx.g.pending.retain(|p| *p != id);
            if ctx.g.has_member(id) {
                remove(ctx, id, Some(E_UNKNOWN_MEMBER_ID));
            }
        }
        RemovePending => {
            let id = member_id_of(&ctx.inp);
            ctx.g.pending.retain(|p| *p != id);
        }
        DisarmSession => {
            let mut m = ctx.member_clone(member_id_of(&ctx.inp), "disarm-session")?;
            m.session = false;
            ctx.g.with_member(m);
        }
        RemoveUnsynced => {
            let snapshot = ctx.g.members.clone();
            for m in snapshot {
                if m.pending_sync {
                    remove(ctx, m.id, Some(E_UNKNOWN_MEMBER_ID));
                }
            }
        }
        DisarmDelayedSync => {
            if !ctx.g.sync_timers.is_empty() {
                ctx.g.sync_timers.remove(0);
            }
        }
        StoreOffsets => match &ctx.inp.req {
            Some(Req::Commit { .. }) => ctx.g.offsets = Some(1),
            _ => return Err("store-offsets on a non-OffsetCommit input".into()),
        },
    }
    Ok(())
}

// ------------------------------------------------------------------ reply forms

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Form {
    Error,
    ErrorNoMemberId,
    TopLevel,
    WithNewMemberId,
    JoinCurrent,
    StaticRestart,
    StaticRestartFailed,
    StoredAssignment,
    Ok,
    CommitResult,
    Offsets,
    Summary,
    Listed,
    NotListed,
}

/// Every reply form the engine implements, under model/replies.py's names.
pub const REPLY_FORMS: &[(&str, Form)] = &[
    ("error", Form::Error),
    ("error-no-member-id", Form::ErrorNoMemberId),
    ("top-level", Form::TopLevel),
    ("with-new-member-id", Form::WithNewMemberId),
    ("join-current", Form::JoinCurrent),
    ("static-restart", Form::StaticRestart),
    ("static-restart-failed", Form::StaticRestartFailed),
    ("stored-assignment", Form::StoredAssignment),
    ("ok", Form::Ok),
    ("commit-result", Form::CommitResult),
    ("offsets", Form::Offsets),
    ("summary", Form::Summary),
    ("listed", Form::Listed),
    ("not-listed", Form::NotListed),
];

fn reply(form: Form, error: ErrCode, ctx: &Ctx) -> Result<Resp, String> {
    let g = &ctx.g;
    Ok(match form {
        Form::Error | Form::Ok => match ctx.inp.kind {
            Ev::JoinGroup => Resp::join_error(error, member_id_of(&ctx.inp)),
            Ev::SyncGroup => Resp::sync_error(error),
            Ev::Heartbeat => Resp::Heartbeat { error },
            Ev::LeaveGroup => Resp::Leave {
                error: E_NONE,
                members: vec![(member_id_of(&ctx.inp), instance_id_of(&ctx.inp), error)],
            },
            Ev::OffsetCommit => Resp::Commit { error },
            Ev::OffsetFetch => Resp::Fetch { error, partition: None },
            Ev::DescribeGroups => {
                Resp::Describe { error, state: "", ptype: PT_EMPTY, protocol: PN_NONE, members: Vec::new() }
            }
            Ev::DeleteGroups => Resp::Delete { error },
            Ev::ListGroups => Resp::List { error, listed: None },
            k => return Err(format!("no error shape for {}", k.name())),
        },
        Form::ErrorNoMemberId => Resp::join_error(error, NOID),
        Form::TopLevel => Resp::Leave { error, members: Vec::new() },
        Form::WithNewMemberId => {
            Resp::join_error(error, ctx.scratch.member_id.ok_or("with-new-member-id: no member id")?)
        }
        Form::JoinCurrent => {
            let id = member_id_of(&ctx.inp);
            Resp::Join {
                error,
                generation: g.generation,
                ptype: g.ptype,
                pname: g.pname,
                leader: g.leader,
                member: id,
                skip: false,
                members: if id == g.leader { roster(g) } else { Vec::new() },
            }
        }
        Form::StaticRestart => {
            let new_id = ctx.scratch.member_id.ok_or("static-restart: no member id")?;
            let old_id = ctx.scratch.old_member_id.ok_or("static-restart: no old member id")?;
            let old_leader = ctx.scratch.old_leader.unwrap_or(NOID);
            let was_leader = old_leader == old_id;
            if was_leader && join_request(&ctx.inp)?.skip {
                Resp::Join {
                    error,
                    generation: g.generation,
                    ptype: g.ptype,
                    pname: g.pname,
                    leader: new_id,
                    member: new_id,
                    skip: true,
                    members: roster(g),
                }
            } else {
                Resp::Join {
                    error,
                    generation: g.generation,
                    ptype: g.ptype,
                    pname: g.pname,
                    leader: old_leader,
                    member: new_id,
                    skip: false,
                    members: Vec::new(),
                }
            }
        }
        Form::StaticRestartFailed => Resp::Join {
            error: map_store_group_error(ctx.s.append_error),
            generation: g.generation,
            ptype: g.ptype,
            pname: g.pname,
            leader: ctx.scratch.old_leader.unwrap_or(NOID),
            member: NOID,
            skip: false,
            members: Vec::new(),
        },
        Form::StoredAssignment => {
            let m = g.member(member_id_of(&ctx.inp)).ok_or("stored-assignment: not a member")?;
            Resp::Sync { error, ptype: g.ptype, pname: g.pname, assignment: m.assignment }
        }
        Form::CommitResult => {
            let code = if ctx.s.append_ok { error } else { map_offset_commit_error(ctx.s.append_error) };
            Resp::Commit { error: code }
        }
        Form::Offsets => Resp::Fetch { error, partition: Some(g.offsets.unwrap_or(-1)) },
        Form::Summary => {
            if g.state == State::Missing {
                Resp::Describe { error, state: "Dead", ptype: PT_EMPTY, protocol: PN_NONE, members: Vec::new() }
            } else {
                let stable = g.state == State::Stable;
                Resp::Describe {
                    error,
                    state: g.state.name(),
                    ptype: g.ptype,
                    protocol: if stable { g.pname } else { PN_NONE },
                    members: g
                        .members
                        .iter()
                        .map(|m| DescMember {
                            id: m.id,
                            instance: m.instance,
                            client: m.client,
                            meta: if stable { metadata_for(m.protocols, g.pname) } else { None },
                            assignment: stable && m.assignment,
                        })
                        .collect(),
                }
            }
        }
        Form::Listed => Resp::List { error, listed: Some((g.ptype, g.state)) },
        Form::NotListed => Resp::List { error, listed: None },
    })
}

// ------------------------------------------------------------------ the table as data

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReplyKind {
    Park,
    NoReply,
    Continue,
    Form(Form),
    /// A reply form only Python has.
    PyForm,
}

#[derive(Clone, Debug)]
pub struct RowSpec {
    pub id: String,
    pub source: State,
    pub event: Ev,
    pub guard: Vec<(Lit, bool)>,
    pub reply: ReplyKind,
    pub error: ErrCode,
    pub next_state: Option<State>,
    pub effects: Vec<Effect>,
    /// Group fields the row may change (Field::bit).
    pub modifies: u16,
    pub new_incarnation: bool,
    /// An effect or the reply form is Python's only: model.step applies the whole row.
    pub py: bool,
}

/// The plain data handed over from Python for one row.
#[derive(Clone, Debug)]
pub struct RowData {
    pub id: String,
    pub states: Vec<String>,
    pub event: String,
    pub guard: Vec<(String, bool)>,
    pub form: String,
    pub error: String,
    pub next_state: Option<String>,
    pub effects: Vec<String>,
    pub new_incarnation: bool,
}

pub struct Table {
    pub rows: Vec<RowSpec>,
    /// The rows of each (state, event), at `slot(state, event)`.
    index: Vec<Vec<usize>>,
    pub urgent: Vec<(Ev, Vec<(Lit, bool)>)>,
    /// The atoms evaluated through Python (`Lit::Py` indexes them).
    pub py_atoms: Vec<String>,
    pub callbacks: Option<Box<dyn Callbacks + Send + Sync>>,
}

/// The position of (state, event) in `Table::index`.
fn slot(state: State, event: Ev) -> usize {
    state as usize * Ev::ALL.len() + event as usize
}

fn lookup<T: Copy>(table: &[(&str, T)], name: &str, what: &str) -> Result<T, String> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("the native engine has no {what} named {name:?}"))
}

pub fn atom_by_name(name: &str) -> Result<Atom, String> {
    lookup(ATOMS, name, "atom")
}

impl Table {
    /// Builds the engine's table from the rows as data. Anything the engine lacks (an atom, an
    /// effect, a reply form, an event, a state, an error) fails here, naming it.
    pub fn new(
        rows: Vec<RowData>,
        urgent: Vec<(String, Vec<(String, bool)>)>,
        effect_modifies: Vec<(String, Vec<String>)>,
        group_fields: Vec<String>,
    ) -> Result<Table, String> {
        Table::with_slow_path(rows, urgent, effect_modifies, group_fields, None)
    }

    /// `new`, sending the names `slow` lists through its callbacks instead of failing on them.
    pub fn with_slow_path(
        rows: Vec<RowData>,
        urgent: Vec<(String, Vec<(String, bool)>)>,
        effect_modifies: Vec<(String, Vec<String>)>,
        group_fields: Vec<String>,
        slow: Option<SlowPath>,
    ) -> Result<Table, String> {
        let (py_atom_names, py_effects, py_forms, callbacks): (Vec<String>, Vec<String>, Vec<String>, _) = match slow {
            None => (Vec::new(), Vec::new(), Vec::new(), None),
            Some(sp) => (sp.atoms, sp.effects, sp.reply_forms, Some(sp.callbacks)),
        };
        // `Lit::Py(i)` is the callbacks' atom i: the position in the list they gave
        let py_atoms = py_atom_names;
        let lit = |a: &str| -> Result<Lit, String> {
            match py_atoms.iter().position(|n| n == a) {
                Some(i) => Ok(Lit::Py(u16::try_from(i).map_err(|_| "too many atoms through Python")?)),
                None => atom_by_name(a).map(Lit::Native),
            }
        };
        let mut given = 0u16;
        for f in &group_fields {
            given |= lookup(FIELDS, f, "Group field")?.bit();
        }
        if let Some((name, _)) = FIELDS.iter().find(|(_, f)| given & f.bit() == 0) {
            return Err(format!("the Group fields handed over lack {name:?}, which the native engine compares"));
        }
        let mut mods: FxHashMap<String, u16> = FxHashMap::default();
        for (name, fields) in effect_modifies {
            let mut mask = 0u16;
            for f in fields {
                mask |= lookup(FIELDS, &f, "Group field").map_err(|e| format!("effect {name:?}: {e}"))?.bit();
            }
            mods.insert(name, mask);
        }
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for r in rows {
            if !seen.insert(r.id.clone()) {
                return Err(format!("duplicate row id {}", r.id));
            }
            let prefix = r.id.split('/').next().unwrap_or("");
            let source = State::from_name(prefix)
                .ok_or_else(|| format!("row {}: id does not start with a state name", r.id))?;
            let event = Ev::from_name(&r.event)
                .ok_or_else(|| format!("row {}: the native engine has no event named {:?}", r.id, r.event))?;
            let mut guard = Vec::new();
            for (a, pos) in &r.guard {
                guard.push((lit(a).map_err(|e| format!("row {}: {e}", r.id))?, *pos));
            }
            let py_form = py_forms.contains(&r.form);
            let reply = match r.form.as_str() {
                "park" => ReplyKind::Park,
                "none" => ReplyKind::NoReply,
                "continue" => ReplyKind::Continue,
                f => match lookup(REPLY_FORMS, f, "reply form") {
                    Ok(form) => ReplyKind::Form(form),
                    Err(_) if py_form => ReplyKind::PyForm,
                    Err(e) => return Err(format!("row {}: {e}", r.id)),
                },
            };
            let error = error_from_name(&r.error)
                .ok_or_else(|| format!("row {}: the native engine has no error named {:?}", r.id, r.error))?;
            let next_state = match &r.next_state {
                None => None,
                Some(s) => Some(State::from_name(s).ok_or_else(|| format!("row {}: unknown state {s:?}", r.id))?),
            };
            let mut effects = Vec::new();
            let mut modifies = 0u16;
            let mut py = py_form;
            for e in &r.effects {
                if py_effects.iter().any(|x| x == e) {
                    py = true;
                } else {
                    effects.push(lookup(EFFECTS, e, "effect").map_err(|x| format!("row {}: {x}", r.id))?);
                }
                modifies |= *mods.get(e).ok_or_else(|| format!("row {}: no field declaration for effect {e:?}", r.id))?;
            }
            if next_state.is_some() {
                modifies |= Field::State.bit();
            }
            for s in &r.states {
                let st = State::from_name(s).ok_or_else(|| format!("row {}: unknown state {s:?}", r.id))?;
                out.push((
                    st,
                    RowSpec {
                        id: r.id.clone(),
                        source,
                        event,
                        guard: guard.clone(),
                        reply,
                        error,
                        next_state,
                        effects: effects.clone(),
                        modifies,
                        new_incarnation: r.new_incarnation,
                        py,
                    },
                ));
            }
        }
        // One RowSpec per row id (rows listing several states share it), indexed per state.
        let mut rows: Vec<RowSpec> = Vec::new();
        let mut by_id: FxHashMap<String, usize> = FxHashMap::default();
        let mut index: Vec<Vec<usize>> = vec![Vec::new(); State::ALL.len() * Ev::ALL.len()];
        for (st, spec) in out {
            let i = match by_id.get(&spec.id) {
                Some(i) => *i,
                None => {
                    rows.push(spec.clone());
                    by_id.insert(spec.id.clone(), rows.len() - 1);
                    rows.len() - 1
                }
            };
            index[slot(st, rows[i].event)].push(i);
        }
        let mut urg = Vec::new();
        for (ev, lits) in urgent {
            let e = Ev::from_name(&ev).ok_or_else(|| format!("urgent event {ev:?} unknown to the native engine"))?;
            let mut g = Vec::new();
            for (a, p) in lits {
                g.push((lit(&a)?, p));
            }
            urg.push((e, g));
        }
        if callbacks.is_none() && !py_atoms.is_empty() {
            return Err("atoms through Python without callbacks".into());
        }
        Ok(Table { rows, index, urgent: urg, py_atoms, callbacks })
    }

    /// The rows of (state, event), in table order (the concrete replay matches them itself).
    pub fn candidates(&self, state: State, event: Ev) -> &[usize] {
        &self.index[slot(state, event)]
    }

    /// A literal's atom, natively or through Python.
    /// Whether a step can call back into Python (an atom or a row through the callbacks).
    pub fn calls_back(&self) -> bool {
        !self.py_atoms.is_empty() || self.rows.iter().any(|r| r.py)
    }

    pub fn eval(&self, a: Lit, g: &Group, x: &Input, s: &Settings) -> Result<bool, StepError> {
        match a {
            Lit::Native(a) => Ok(eval_atom(a, g, x, s)?),
            Lit::Py(i) => match &self.callbacks {
                Some(cb) => cb.atom(i, g, x, s),
                None => Err("an atom through Python without callbacks".into()),
            },
        }
    }
}

/// model/dsl.py SpecDefect.
#[derive(Debug, Clone)]
pub struct Defect {
    pub message: String,
}

pub enum StepError {
    Defect(Defect),
    Internal(String),
}

impl From<String> for StepError {
    fn from(s: String) -> Self {
        StepError::Internal(s)
    }
}
impl From<&str> for StepError {
    fn from(s: &str) -> Self {
        StepError::Internal(s.to_string())
    }
}

fn defect(state: State, event: &str, rows: Vec<String>, detail: &str) -> StepError {
    let list: Vec<String> = rows.iter().map(|r| format!("'{r}'")).collect();
    StepError::Defect(Defect {
        message: format!("{detail}: state {}, event {event}, rows [{}]", state.name(), list.join(", ")),
    })
}

/// model/step.py Transition (before/after are the caller's).
#[derive(Clone, Debug)]
pub struct Transition {
    pub after: Group,
    pub rows: Fired,
    pub outputs: Vec<Output>,
    pub reply: Option<Resp>,
}

/// step.py fire: the single matching row applied to ctx.g.
fn fire(t: &Table, ctx: &mut Ctx) -> Result<(usize, Option<Resp>), StepError> {
    let before_state = ctx.g.state;
    let kind = ctx.inp.kind;
    let cands = t.candidates(before_state, kind);
    let mut memo: SmallVec<[u8; 64]> = smallvec::smallvec![2; ATOMS.len() + t.py_atoms.len()];
    let mut matched: SmallVec<[usize; 2]> = SmallVec::new();
    for &ri in cands {
        let mut ok = true;
        for (a, pos) in &t.rows[ri].guard {
            let idx = a.slot();
            let v = if memo[idx] == 2 {
                let v = t.eval(*a, &ctx.g, &ctx.inp, ctx.s)?;
                memo[idx] = v as u8;
                v
            } else {
                memo[idx] == 1
            };
            if v != *pos {
                ok = false;
                break;
            }
        }
        if ok {
            matched.push(ri);
        }
    }
    if matched.len() != 1 {
        let ids: Vec<String> = if matched.is_empty() {
            cands.iter().map(|i| t.rows[*i].id.clone()).collect()
        } else {
            matched.iter().map(|i| t.rows[*i].id.clone()).collect()
        };
        let detail = if matched.is_empty() { "no row matches" } else { "more than one row matches" };
        return Err(defect(before_state, kind.name(), ids, detail));
    }
    let ri = matched[0];
    let row = &t.rows[ri];
    ctx.scratch = Scratch::default();
    if row.py {
        let cb = t.callbacks.as_ref().ok_or("a row through Python without callbacks")?;
        let (g, outputs, resp) = cb.fire_row(&row.id, &ctx.g, &ctx.inp, ctx.s, ctx.ch)?;
        ctx.g = g;
        ctx.outputs.extend(outputs);
        return Ok((ri, resp));
    }
    if !row.effects.is_empty() {
        // the frame: a copy of the fields the row's effects must leave alone (only those)
        let before = frame_snapshot(&ctx.g, row.modifies);
        for e in &row.effects {
            apply_effect(*e, ctx)?;
        }
        for (f, field) in FIELDS {
            if row.modifies & field.bit() == 0 && field_differs(*field, &before, &ctx.g) {
                return Err(defect(
                    before_state,
                    kind.name(),
                    vec![row.id.clone()],
                    &format!("effects changed undeclared field '{f}'"),
                ));
            }
        }
    }
    if let Some(ns) = row.next_state {
        ctx.g.state = ns;
    }
    let resp = match row.reply {
        ReplyKind::Form(f) => Some(reply(f, row.error, ctx)?),
        _ => None,
    };
    Ok((ri, resp))
}

/// How many urgent events may fire in a row before the loop counts as one that never settles.
pub const MAX_URGENT_STEPS: usize = 16;

/// What step.py's urgent-events loop needs of a step in progress; the explorer's step (here) and
/// the concrete replay's (concrete.rs) both run the loop through `urgent_loop`.
pub trait UrgentStep {
    type Error;
    type Group: Clone + PartialEq;
    type Input;
    /// Whether the urgent event's guard literals hold on the group as it is now.
    fn urgent_holds(&self, t: &Table, ev: Ev, lits: &[(Lit, bool)]) -> Result<bool, Self::Error>;
    /// The group as the step has it now.
    fn group(&self) -> &Self::Group;
    /// Makes `inp` the step's input: the one it replaces.
    fn swap_input(&mut self, inp: Self::Input) -> Self::Input;
    /// The input of the urgent event `ev` (no request, no member).
    fn urgent_probe(ev: Ev) -> Self::Input;
    /// step.py fire on the current input: the row fired.
    fn fire_row(&mut self, t: &Table) -> Result<usize, Self::Error>;
    /// Fires the urgent event (its input restored afterwards): the row fired, and whether the
    /// group changed.
    fn fire_urgent(&mut self, t: &Table, ev: Ev) -> Result<(usize, bool), Self::Error> {
        let saved = self.swap_input(Self::urgent_probe(ev));
        let before = self.group().clone();
        let r = self.fire_row(t);
        self.swap_input(saved);
        let ri = r?;
        Ok((ri, *self.group() != before))
    }
}

/// step.py's urgent loop: the first urgent event (in the table's order) whose guard holds fires,
/// again and again, until none holds or one changes nothing; `looped` makes the error when it has
/// not settled after MAX_URGENT_STEPS. Each fired row is appended to `fired`.
pub fn urgent_loop<C: UrgentStep, F: Extend<u16>>(
    t: &Table,
    c: &mut C,
    fired: &mut F,
    looped: impl FnOnce(&C, &F) -> C::Error,
) -> Result<(), C::Error> {
    for _ in 0..MAX_URGENT_STEPS {
        let mut any = false;
        for (ev, lits) in &t.urgent {
            if c.urgent_holds(t, *ev, lits)? {
                let (ri, changed) = c.fire_urgent(t, *ev)?;
                fired.extend([ri as u16]);
                if !changed {
                    return Ok(());
                }
                any = true;
                break;
            }
        }
        if !any {
            return Ok(());
        }
    }
    Err(looped(c, fired))
}

impl UrgentStep for Ctx<'_> {
    type Error = StepError;
    type Group = Group;
    type Input = Input;
    fn urgent_holds(&self, t: &Table, ev: Ev, lits: &[(Lit, bool)]) -> Result<bool, StepError> {
        let probe = Self::urgent_probe(ev);
        for (a, pos) in lits {
            if t.eval(*a, &self.g, &probe, self.s)? != *pos {
                return Ok(false);
            }
        }
        Ok(true)
    }
    fn group(&self) -> &Group {
        &self.g
    }
    fn swap_input(&mut self, inp: Input) -> Input {
        std::mem::replace(&mut self.inp, inp)
    }
    fn urgent_probe(ev: Ev) -> Input {
        Input { kind: ev, req: None, member: None, instance: NOINST, request_id: 0 }
    }
    fn fire_row(&mut self, t: &Table) -> Result<usize, StepError> {
        fire(t, self).map(|(ri, _)| ri)
    }
}

fn run_urgent(t: &Table, ctx: &mut Ctx, fired: &mut Fired) -> Result<(), StepError> {
    urgent_loop(t, ctx, fired, |ctx, fired| {
        let tail: Vec<String> = fired[fired.len().saturating_sub(MAX_URGENT_STEPS)..]
            .iter()
            .map(|i| t.rows[*i as usize].id.clone())
            .collect();
        defect(ctx.g.state, "urgent", tail, "urgent events loop")
    })
}

/// step.py step: one input applied to one group, with the chooser's choices.
pub fn step(t: &Table, g: &Group, inp: &Input, s: &Settings, ch: &mut Chooser) -> Result<Transition, StepError> {
    let mut ctx = Ctx { g: g.clone(), inp: inp.clone(), s, outputs: Vec::new(), scratch: Scratch::default(), ch };
    let mut fired = Fired::new();
    let reply_out: Option<Resp>;
    if let (Ev::LeaveGroup, Some(Req::Leave { members })) = (inp.kind, &inp.req) {
        let mut results: Vec<(Mid, Inst, ErrCode)> = Vec::new();
        let mut top: Option<Resp> = None;
        for (m, i) in members {
            ctx.inp = Input { member: Some(*m), instance: *i, ..inp.clone() };
            let (ri, r) = fire(t, &mut ctx)?;
            fired.push(ri as u16);
            let r = r.ok_or("a LeaveGroup row without a response")?;
            if t.rows[ri].reply == ReplyKind::Form(Form::TopLevel) {
                top = Some(r);
                break;
            }
            if let Resp::Leave { members, .. } = r {
                results.extend(members);
            } else {
                return Err("a LeaveGroup row answered with another response".into());
            }
            run_urgent(t, &mut ctx, &mut fired)?;
        }
        ctx.inp = inp.clone();
        reply_out = Some(top.unwrap_or(Resp::Leave { error: E_NONE, members: results }));
    } else {
        let mut r = None;
        for _ in 0..2 {
            let (ri, resp) = fire(t, &mut ctx)?;
            fired.push(ri as u16);
            r = resp;
            if t.rows[ri].reply != ReplyKind::Continue {
                break;
            }
        }
        reply_out = r;
        run_urgent(t, &mut ctx, &mut fired)?;
    }
    Ok(Transition { after: ctx.g, rows: fired, outputs: ctx.outputs, reply: reply_out })
}

/// step.py step_all: every outcome, one per resolution of the choices, in step_all's order.
pub fn step_all(t: &Table, g: &Group, inp: &Input, s: &Settings) -> Result<Vec<Transition>, StepError> {
    let mut out = Vec::new();
    step_each(t, g, inp, s, |tr| {
        out.push(tr);
        Ok(())
    })?;
    Ok(out)
}

/// `step_all` handing each outcome to `f` as it is made (nothing collected).
pub fn step_each(
    t: &Table,
    g: &Group,
    inp: &Input,
    s: &Settings,
    mut f: impl FnMut(Transition) -> Result<(), StepError>,
) -> Result<(), StepError> {
    let mut stack: SmallVec<[Choices; 2]> = smallvec::smallvec![Choices::new()];
    while let Some(prefix) = stack.pop() {
        let plen = prefix.len();
        let mut ch = Chooser { prefix, made: Choices::new(), counts: Choices::new() };
        let tr = step(t, g, inp, s, &mut ch)?;
        for i in plen..ch.made.len() {
            for alt in 1..ch.counts[i] {
                let mut p: Choices = ch.made[..i].iter().copied().collect();
                p.push(alt);
                stack.push(p);
            }
        }
        f(tr)?;
    }
    Ok(())
}
