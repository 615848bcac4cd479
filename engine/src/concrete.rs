//! The model's concrete mode natively: model/state.py's records with real member ids, timeouts
//! and deadlines on a virtual clock, the atoms, effects and reply forms the table names (under
//! model/atoms.py, model/effects.py and model/replies.py's names, as step.rs has them for the
//! abstract mode), model/step.py's step, and model/concrete.py's ModelCoordinator for one group
//! (request ids, parked callbacks, timers fired in deadline order).
//!
//! No row lives here: the rows are step.rs's `Table`, built from the table handed over as data.
//! What this mode lacks (a row through Python, an atom or form it has no concrete version of, a
//! step error) is an `Err`: the caller hands the group back to the Python replay.

use crate::model::{
    map_offset_commit_error, map_store_group_error, ErrCode, Ev, State, E_FENCED_INSTANCE_ID, E_NONE,
    E_NOT_COORDINATOR, E_REBALANCE_IN_PROGRESS, E_UNKNOWN_MEMBER_ID,
};
use crate::pyrandom::PyRandom;
use crate::step::{urgent_loop, Atom, Effect, Field, Form, Lit, ReplyKind, Table, UrgentStep, FIELDS};
use std::rc::Rc;

pub type Str = Rc<str>;
pub type Bytes = Rc<[u8]>;

/// Why the native step cannot go on; the Python replay takes the group over.
pub type Lacks = String;

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Proto {
    pub name: Str,
    pub metadata: Bytes,
}
pub type Protos = Rc<[Proto]>;

/// model/messages.py TopicPartition (ordered by topic, then partition).
#[derive(Clone, PartialEq, Eq, Debug, PartialOrd, Ord, Hash)]
pub struct Tp {
    pub topic: Str,
    pub partition: i64,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Member {
    pub id: Str,
    pub instance: Option<Str>,
    pub client: Str,
    pub ptype: Str,
    pub protocols: Protos,
    pub session_timeout: i64,
    pub rebalance_timeout: i64,
    /// ParkedJoin(request_id, supports_skip_assignment)
    pub awaiting_join: Option<(i64, bool)>,
    pub awaiting_sync: Option<i64>,
    pub is_new: bool,
    pub assignment: Bytes,
    pub session_deadline: Option<i64>,
    pub pending_sync: bool,
}

impl Member {
    pub fn metadata_for(&self, protocol: Option<&Str>) -> Bytes {
        if let Some(p) = protocol {
            if let Some(x) = self.protocols.iter().find(|x| x.name == *p) {
                return x.metadata.clone();
            }
        }
        empty_bytes()
    }
    fn protocol_names(&self) -> Vec<Str> {
        self.protocols.iter().map(|p| p.name.clone()).collect()
    }
}

pub fn empty_bytes() -> Bytes {
    Rc::from(&[][..])
}
pub fn empty_str() -> Str {
    Rc::from("")
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JoinTimer {
    pub initial: bool,
    pub deadline: i64,
    pub delay: i64,
    pub remaining: i64,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SyncTimer {
    pub generation: i64,
    pub deadline: i64,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Persisted {
    pub state: State,
    pub generation: i64,
    pub ptype: Option<Str>,
    pub pname: Option<Str>,
    pub leader: Option<Str>,
    pub members: Vec<Member>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Group {
    pub state: State,
    pub generation: i64,
    pub ptype: Option<Str>,
    pub pname: Option<Str>,
    pub leader: Option<Str>,
    pub members: Vec<Member>,
    pub pending: Vec<(Str, i64)>,
    pub join_timers: Vec<JoinTimer>,
    pub sync_timers: Vec<SyncTimer>,
    pub offsets: Vec<(Tp, i64)>,
    pub persisted: Option<Rc<Persisted>>,
    pub owned: bool,
    pub new_member_added: bool,
}

impl Group {
    pub fn new(owned: bool) -> Group {
        Group {
            state: State::Missing,
            generation: 0,
            ptype: None,
            pname: None,
            leader: None,
            members: Vec::new(),
            pending: Vec::new(),
            join_timers: Vec::new(),
            sync_timers: Vec::new(),
            offsets: Vec::new(),
            persisted: None,
            owned,
            new_member_added: false,
        }
    }
    pub fn member(&self, id: &str) -> Option<&Member> {
        self.members.iter().find(|m| &*m.id == id)
    }
    fn has_member(&self, id: &str) -> bool {
        self.member(id).is_some()
    }
    fn has_pending(&self, id: &str) -> bool {
        self.pending.iter().any(|p| &*p.0 == id)
    }
    fn static_member_id(&self, inst: &str) -> Option<Str> {
        self.members.iter().find(|m| m.instance.as_deref() == Some(inst)).map(|m| m.id.clone())
    }
    fn num_awaiting_join(&self) -> usize {
        self.members.iter().filter(|m| m.awaiting_join.is_some()).count()
    }
    fn rebalance_timeout_ms(&self) -> i64 {
        self.members.iter().map(|m| m.rebalance_timeout).max().unwrap_or(0)
    }
    fn with_member(&mut self, m: Member) {
        match self.members.iter_mut().find(|x| x.id == m.id) {
            Some(x) => *x = m,
            None => self.members.push(m),
        }
    }
    fn field_differs(&self, f: Field, b: &Group) -> bool {
        match f {
            Field::State => self.state != b.state,
            Field::Generation => self.generation != b.generation,
            Field::ProtocolType => self.ptype != b.ptype,
            Field::ProtocolName => self.pname != b.pname,
            Field::Leader => self.leader != b.leader,
            Field::Members => self.members != b.members,
            Field::Pending => self.pending != b.pending,
            Field::JoinTimers => self.join_timers != b.join_timers,
            Field::SyncTimers => self.sync_timers != b.sync_timers,
            Field::Offsets => self.offsets != b.offsets,
            Field::Persisted => self.persisted != b.persisted,
            Field::Owned => self.owned != b.owned,
            Field::NewMemberAdded => self.new_member_added != b.new_member_added,
        }
    }
}

// ------------------------------------------------------------------ requests, responses

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JoinReq {
    pub member: Str,
    pub ptype: Str,
    pub protocols: Protos,
    pub session_timeout: i64,
    pub rebalance_timeout: i64,
    pub instance: Option<Str>,
    pub require_known: bool,
    pub skip: bool,
    pub client: Str,
}

/// The requests of model/messages.py this mode takes (one group each).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Req {
    Join(JoinReq),
    Sync { member: Str, generation: i64, instance: Option<Str>, ptype: Option<Str>, pname: Option<Str>, assignments: Vec<(Str, Bytes)> },
    Heartbeat { member: Str, generation: i64, instance: Option<Str> },
    Leave { members: Vec<(Str, Option<Str>)> },
    Commit { member: Str, generation: i64, offsets: Vec<(Tp, i64)>, instance: Option<Str> },
    Fetch { partitions: Option<Vec<Tp>> },
}

impl Req {
    pub fn event(&self) -> Ev {
        match self {
            Req::Join(_) => Ev::JoinGroup,
            Req::Sync { .. } => Ev::SyncGroup,
            Req::Heartbeat { .. } => Ev::Heartbeat,
            Req::Leave { .. } => Ev::LeaveGroup,
            Req::Commit { .. } => Ev::OffsetCommit,
            Req::Fetch { .. } => Ev::OffsetFetch,
        }
    }
    fn member_id(&self) -> Option<&Str> {
        match self {
            Req::Join(j) => Some(&j.member),
            Req::Sync { member, .. } | Req::Heartbeat { member, .. } | Req::Commit { member, .. } => Some(member),
            _ => None,
        }
    }
    fn instance(&self) -> Option<&Str> {
        match self {
            Req::Join(j) => j.instance.as_ref(),
            Req::Sync { instance, .. } | Req::Heartbeat { instance, .. } | Req::Commit { instance, .. } => {
                instance.as_ref()
            }
            _ => None,
        }
    }
    fn generation(&self) -> i64 {
        match self {
            Req::Sync { generation, .. } | Req::Heartbeat { generation, .. } | Req::Commit { generation, .. } => {
                *generation
            }
            _ => -1,
        }
    }
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JoinMember {
    pub id: Str,
    pub instance: Option<Str>,
    pub metadata: Bytes,
}

/// The responses of model/messages.py this mode makes.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Resp {
    Join {
        error: ErrCode,
        generation: i64,
        ptype: Option<Str>,
        pname: Option<Str>,
        leader: Str,
        member: Str,
        skip: bool,
        members: Vec<JoinMember>,
    },
    Sync { error: ErrCode, ptype: Option<Str>, pname: Option<Str>, assignment: Bytes },
    Heartbeat { error: ErrCode },
    Leave { error: ErrCode, members: Vec<(Str, Option<Str>, ErrCode)> },
    Commit { partitions: Vec<(Tp, ErrCode)> },
    Fetch { error: ErrCode, partitions: Vec<(Tp, i64, ErrCode)> },
}

impl Resp {
    fn join_error(error: ErrCode, member: Str) -> Resp {
        Resp::Join {
            error,
            generation: -1,
            ptype: None,
            pname: None,
            leader: empty_str(),
            member,
            skip: false,
            members: Vec::new(),
        }
    }
    fn sync_error(error: ErrCode) -> Resp {
        Resp::Sync { error, ptype: None, pname: None, assignment: empty_bytes() }
    }
}

/// model/state.py Input.
#[derive(Clone, Debug)]
pub struct Input {
    pub kind: Ev,
    pub req: Option<Rc<Req>>,
    pub member: Option<Str>,
    pub instance: Option<Str>,
    pub rid: i64,
}

/// model/dsl.py Output (None: Superseded, never answered).
#[derive(Clone, Debug)]
pub struct Output {
    pub rid: i64,
    pub resp: Option<Resp>,
}

/// model/state.py Settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub min_session_timeout_ms: i64,
    pub max_session_timeout_ms: i64,
    pub group_max_size: i64,
    pub initial_rebalance_delay_ms: i64,
    pub new_member_join_timeout_ms: i64,
    pub append_ok: bool,
    pub append_error: ErrCode,
    /// The group's id is "" (model/state.py Group.group_id; one group per replay).
    pub group_id_empty: bool,
}

fn member_id_of(x: &Input) -> Str {
    if let Some(m) = &x.member {
        return m.clone();
    }
    x.req.as_ref().and_then(|r| r.member_id().cloned()).unwrap_or_else(empty_str)
}
fn instance_id_of(x: &Input) -> Option<Str> {
    if x.kind == Ev::LeaveGroup {
        return x.instance.clone();
    }
    x.req.as_ref().and_then(|r| r.instance().cloned())
}
fn generation_of(x: &Input) -> i64 {
    x.req.as_ref().map(|r| r.generation()).unwrap_or(-1)
}
fn join_request(x: &Input) -> Result<&JoinReq, Lacks> {
    match x.req.as_deref() {
        Some(Req::Join(j)) => Ok(j),
        _ => Err(format!("a JoinGroup atom, effect or reply on a {} input", x.kind.name())),
    }
}

/// model/protocol_selection.py select_protocol.
fn select_protocol(prefs: &[Vec<Str>]) -> Option<Str> {
    let first = prefs.first()?;
    let common: Vec<&Str> = first.iter().filter(|p| prefs[1..].iter().all(|q| q.contains(p))).collect();
    if common.is_empty() {
        return None;
    }
    let mut votes: Vec<(&Str, usize)> = Vec::new();
    for p in prefs {
        let vote = p.iter().find(|x| common.contains(x))?;
        match votes.iter_mut().find(|v| v.0 == vote) {
            Some(v) => v.1 += 1,
            None => votes.push((vote, 1)),
        }
    }
    let best = votes.iter().map(|v| v.1).max().unwrap_or(0);
    first.iter().filter(|x| common.contains(x)).find(|p| votes.iter().any(|v| v.0 == *p && v.1 == best)).cloned()
}

// ------------------------------------------------------------------ atoms

fn eval_atom(a: Atom, g: &Group, x: &Input, s: &Settings) -> Result<bool, Lacks> {
    use Atom::*;
    Ok(match a {
        Owned => g.owned,
        GroupIdEmpty => s.group_id_empty,
        SessionTimeoutValid => {
            let t = join_request(x)?.session_timeout;
            s.min_session_timeout_ms <= t && t <= s.max_session_timeout_ms
        }
        MemberIdEmpty => member_id_of(x).is_empty(),
        HasInstanceId => instance_id_of(x).is_some(),
        RequiresKnownMemberId => {
            let j = join_request(x)?;
            j.require_known && j.instance.is_none()
        }
        ProtocolsSupported => {
            let j = join_request(x)?;
            let names: Vec<&Str> = j.protocols.iter().map(|p| &p.name).collect();
            if matches!(g.state, State::Empty | State::Missing) && g.members.is_empty() {
                !j.ptype.is_empty() && !names.is_empty()
            } else if g.ptype.as_deref() != Some(&*j.ptype) {
                false
            } else {
                let mut common: Option<Vec<Str>> = None;
                for m in &g.members {
                    let mine = m.protocol_names();
                    common = Some(match common {
                        None => mine,
                        Some(c) => c.into_iter().filter(|p| mine.contains(p)).collect(),
                    });
                }
                match common {
                    None => !names.is_empty(),
                    Some(c) => names.iter().any(|n| c.contains(n)),
                }
            }
        }
        WithinMaxSize => {
            let member = g.member(&member_id_of(x));
            match g.state {
                State::Empty | State::Dead | State::Missing => true,
                State::PreparingRebalance => {
                    member.is_some_and(|m| m.awaiting_join.is_some())
                        || (g.num_awaiting_join() as i64) < s.group_max_size
                }
                _ => member.is_some() || (g.members.len() as i64) < s.group_max_size,
            }
        }
        MemberPending | PendingArmed => g.has_pending(&member_id_of(x)),
        MemberKnown => g.has_member(&member_id_of(x)),
        InstanceMapped => instance_id_of(x).is_some_and(|i| g.static_member_id(&i).is_some()),
        Fenced => match instance_id_of(x) {
            None => false,
            Some(i) => g.static_member_id(&i).is_some_and(|cur| cur != member_id_of(x)),
        },
        MemberValid => {
            let mid = member_id_of(x);
            match instance_id_of(x) {
                Some(i) if g.static_member_id(&i).as_ref() != Some(&mid) => false,
                _ => g.has_member(&mid),
            }
        }
        IsLeader => g.leader.as_ref().is_some_and(|l| *l == member_id_of(x)),
        MetadataMatches => {
            let j = join_request(x)?;
            g.member(&member_id_of(x)).is_some_and(|m| m.protocols == j.protocols)
        }
        SelectedProtocolUnchanged => {
            let j = join_request(x)?;
            let old = j.instance.as_ref().and_then(|i| g.static_member_id(i));
            let prefs: Vec<Vec<Str>> = g
                .members
                .iter()
                .map(|m| {
                    if Some(&m.id) == old.as_ref() {
                        j.protocols.iter().map(|p| p.name.clone()).collect()
                    } else {
                        m.protocol_names()
                    }
                })
                .collect();
            select_protocol(&prefs) == g.pname
        }
        GenerationMatches => generation_of(x) == g.generation,
        GenerationNegative => generation_of(x) < 0,
        CommitHasMemberInfo => match x.req.as_deref() {
            Some(Req::Commit { member, generation, instance, .. }) => {
                *generation >= 0 || !member.is_empty() || instance.is_some()
            }
            _ => return Err("commit-has-member-info on a non-OffsetCommit input".into()),
        },
        SyncProtocolConsistent => match x.req.as_deref() {
            Some(Req::Sync { ptype, pname, .. }) => {
                (ptype.is_none() || *ptype == g.ptype) && (pname.is_none() || *pname == g.pname)
            }
            _ => return Err("sync-protocol-consistent on a non-SyncGroup input".into()),
        },
        AppendOk => s.append_ok,
        AllJoined => g.members.len() == g.num_awaiting_join() && g.pending.is_empty(),
        JoinTimerArmed => !g.join_timers.is_empty(),
        JoinTimerInitial => g.join_timers.first().is_some_and(|t| t.initial),
        InitialDelayExtends => g.join_timers.first().is_some_and(|t| g.new_member_added && t.remaining != 0),
        AnyRejoined => g.num_awaiting_join() > 0,
        StaticAbsentee => g.members.iter().any(|m| m.instance.is_some() && m.awaiting_join.is_none()),
        SyncTimerArmed => !g.sync_timers.is_empty(),
        SyncTimerDone => match g.sync_timers.first() {
            None => false,
            Some(t) => {
                t.generation != g.generation
                    || !matches!(g.state, State::CompletingRebalance | State::Stable)
                    || !g.members.iter().any(|m| m.pending_sync)
            }
        },
        SessionArmed => g.member(&member_id_of(x)).is_some_and(|m| m.session_deadline.is_some()),
        MemberSatisfied => g
            .member(&member_id_of(x))
            .is_some_and(|m| !m.is_new && (m.awaiting_join.is_some() || m.awaiting_sync.is_some())),
        HasOffsets => !g.offsets.is_empty(),
        PersistedStable => g.persisted.as_ref().is_some_and(|p| p.state == State::Stable),
        PersistedEmpty => g.persisted.as_ref().is_some_and(|p| p.state == State::Empty),
        StateFilterMatches => return Err("ListGroups is not replayed natively".into()),
    })
}

// ------------------------------------------------------------------ effects

#[derive(Default)]
struct Scratch {
    member_id: Option<Str>,
    old_member_id: Option<Str>,
    old_member: Option<Member>,
    /// Some(the leader before a static replacement), which may itself be None
    old_leader: Option<Option<Str>>,
}

struct Ctx<'a> {
    g: Group,
    inp: Input,
    s: &'a Settings,
    now: i64,
    outputs: Vec<Output>,
    scratch: Scratch,
    ids: &'a mut PyRandom,
}

impl Ctx<'_> {
    fn respond(&mut self, rid: i64, resp: Resp) {
        self.outputs.push(Output { rid, resp: Some(resp) });
    }
    fn supersede(&mut self, rid: i64) {
        self.outputs.push(Output { rid, resp: None });
    }
    fn target_id(&self) -> Str {
        self.scratch.member_id.clone().unwrap_or_else(|| member_id_of(&self.inp))
    }
    /// GM:416 generateMemberId through modes.py ConcreteMode: `base-UUID`.
    fn fresh_id(&mut self) -> Result<Str, Lacks> {
        let j = join_request(&self.inp)?;
        let base = j.instance.clone().unwrap_or_else(|| j.client.clone());
        Ok(Rc::from(format!("{base}-{}", self.ids.uuid4())))
    }
    fn member(&self, id: &str, what: &str) -> Result<Member, Lacks> {
        self.g.member(id).cloned().ok_or_else(|| format!("{what}: no member {id}"))
    }
    fn armed_session(&self, mut m: Member, timeout: Option<i64>) -> Member {
        if !m.is_new && (m.awaiting_join.is_some() || m.awaiting_sync.is_some()) {
            m.session_deadline = None;
        } else {
            m.session_deadline = Some(self.now + timeout.unwrap_or(m.session_timeout));
        }
        m
    }
    fn remove(&mut self, id: &Str, parked_join_error: Option<ErrCode>) {
        let Some(m) = self.g.member(id).cloned() else { return };
        if let (Some((rid, _)), Some(e)) = (m.awaiting_join, parked_join_error) {
            self.respond(rid, Resp::join_error(e, empty_str()));
        }
        if let Some(rid) = m.awaiting_sync {
            self.supersede(rid);
        }
        self.g.members.retain(|x| x.id != *id);
        if self.g.leader.as_ref() == Some(id) {
            // the first member: model.step's FirstChoice of a hash-map iteration order
            self.g.leader = self.g.members.first().map(|x| x.id.clone());
        }
    }
    fn answer_sync(&mut self, mut m: Member, resp: Resp) -> Member {
        if let Some(rid) = m.awaiting_sync {
            self.respond(rid, resp);
        }
        m.awaiting_sync = None;
        self.armed_session(m, None)
    }
    fn roster(&self) -> Vec<JoinMember> {
        let p = self.g.pname.as_ref();
        self.g
            .members
            .iter()
            .map(|m| JoinMember { id: m.id.clone(), instance: m.instance.clone(), metadata: m.metadata_for(p) })
            .collect()
    }
}

fn apply_effect(e: Effect, ctx: &mut Ctx) -> Result<(), Lacks> {
    use Effect::*;
    match e {
        CreateGroup => {
            let g = &ctx.g;
            let mut n = Group::new(g.owned);
            n.state = State::Empty;
            n.offsets = g.offsets.clone();
            n.persisted = g.persisted.clone();
            ctx.g = n;
        }
        RemoveGroup => {
            let mut n = Group::new(ctx.g.owned);
            n.state = ctx.g.state;
            ctx.g = n;
        }
        UnloadGroup => {
            for m in ctx.g.members.clone() {
                if let Some((rid, _)) = m.awaiting_join {
                    ctx.respond(rid, Resp::join_error(E_NOT_COORDINATOR, m.id.clone()));
                }
                if let Some(rid) = m.awaiting_sync {
                    ctx.respond(rid, Resp::sync_error(E_NOT_COORDINATOR));
                }
            }
            let g = &ctx.g;
            let mut n = Group::new(false);
            n.state = g.state;
            n.generation = g.generation;
            n.ptype = g.ptype.clone();
            n.pname = g.pname.clone();
            n.offsets = g.offsets.clone();
            n.persisted = g.persisted.clone();
            ctx.g = n;
        }
        LoadGroup => {
            match ctx.g.persisted.clone() {
                None => ctx.g.owned = true,
                Some(p) => {
                    let now = ctx.now;
                    ctx.g.members = p
                        .members
                        .iter()
                        .map(|m| Member {
                            awaiting_join: None,
                            awaiting_sync: None,
                            is_new: false,
                            pending_sync: false,
                            session_deadline: Some(now + m.session_timeout),
                            ..m.clone()
                        })
                        .collect();
                    ctx.g.generation = p.generation;
                    ctx.g.ptype = p.ptype.clone();
                    ctx.g.pname = p.pname.clone();
                    ctx.g.leader = p.leader.clone();
                    ctx.g.owned = true;
                }
            }
        }
        ClaimPartition => ctx.g.owned = true,
        ReleasePartition => ctx.g.owned = false,
        PersistGroup => {
            let g = &ctx.g;
            let record = g
                .members
                .iter()
                .map(|m| Member {
                    awaiting_join: None,
                    awaiting_sync: None,
                    is_new: false,
                    session_deadline: None,
                    pending_sync: false,
                    ..m.clone()
                })
                .collect();
            let p = Persisted {
                state: if g.members.is_empty() { State::Empty } else { State::Stable },
                generation: g.generation,
                ptype: g.ptype.clone(),
                pname: g.pname.clone(),
                leader: g.leader.clone(),
                members: record,
            };
            ctx.g.persisted = Some(Rc::new(p));
        }
        AddPendingMember => {
            let id = ctx.fresh_id()?;
            ctx.scratch.member_id = Some(id.clone());
            let deadline = ctx.now + join_request(&ctx.inp)?.session_timeout;
            ctx.g.pending.push((id, deadline));
        }
        AddMember => {
            let mut id = member_id_of(&ctx.inp);
            if id.is_empty() {
                id = ctx.fresh_id()?;
            }
            ctx.scratch.member_id = Some(id.clone());
            let j = join_request(&ctx.inp)?;
            let m = Member {
                id: id.clone(),
                instance: j.instance.clone(),
                client: j.client.clone(),
                ptype: j.ptype.clone(),
                protocols: j.protocols.clone(),
                session_timeout: j.session_timeout,
                rebalance_timeout: j.rebalance_timeout,
                awaiting_join: Some((ctx.inp.rid, j.skip)),
                awaiting_sync: None,
                is_new: true,
                assignment: empty_bytes(),
                session_deadline: None,
                pending_sync: false,
            };
            let m = ctx.armed_session(m, Some(ctx.s.new_member_join_timeout_ms));
            let had_members = !ctx.g.members.is_empty();
            let ptype = m.ptype.clone();
            ctx.g.pending.retain(|p| p.0 != id);
            ctx.g.members.push(m);
            if ctx.g.leader.is_none() {
                ctx.g.leader = Some(id);
            }
            if ctx.g.ptype.is_none() || !had_members {
                ctx.g.ptype = Some(ptype);
            }
        }
        MarkNewMemberAdded => {
            if ctx.g.generation == 0 {
                ctx.g.new_member_added = true;
            }
        }
        UpdateAndParkJoin => {
            let mut m = ctx.member(&ctx.target_id(), "update-and-park-join")?;
            if let Some((rid, _)) = m.awaiting_join {
                ctx.supersede(rid);
            }
            let j = join_request(&ctx.inp)?;
            m.protocols = j.protocols.clone();
            m.session_timeout = j.session_timeout;
            m.rebalance_timeout = j.rebalance_timeout;
            m.awaiting_join = Some((ctx.inp.rid, j.skip));
            ctx.g.with_member(m);
        }
        ReplaceStaticMember => {
            let inst = join_request(&ctx.inp)?.instance.clone().ok_or("replace-static-member: no instance id")?;
            let old_id = ctx.g.static_member_id(&inst).ok_or("replace-static-member: instance not mapped")?;
            let old = ctx.member(&old_id, "replace-static-member")?;
            let new_id = ctx.fresh_id()?;
            ctx.scratch.member_id = Some(new_id.clone());
            ctx.scratch.old_member_id = Some(old_id.clone());
            ctx.scratch.old_member = Some(old.clone());
            ctx.scratch.old_leader = Some(ctx.g.leader.clone());
            if let Some((rid, _)) = old.awaiting_join {
                ctx.respond(rid, Resp::join_error(E_FENCED_INSTANCE_ID, old_id.clone()));
            }
            if let Some(rid) = old.awaiting_sync {
                ctx.respond(rid, Resp::sync_error(E_FENCED_INSTANCE_ID));
            }
            let m = Member { id: new_id.clone(), awaiting_join: None, awaiting_sync: None, ..old };
            let m = ctx.armed_session(m, None);
            for x in ctx.g.members.iter_mut() {
                if x.id == old_id {
                    *x = m.clone();
                }
            }
            if ctx.g.leader.as_ref() == Some(&old_id) {
                ctx.g.leader = Some(new_id);
            }
        }
        RevertStaticReplacement => {
            let new_id = ctx.scratch.member_id.clone().ok_or("revert-static-replacement: no member id")?;
            let old = ctx.scratch.old_member.clone().ok_or("revert-static-replacement: no old member")?;
            let cur = ctx.member(&new_id, "revert-static-replacement")?;
            let back = Member { protocols: cur.protocols.clone(), awaiting_join: None, awaiting_sync: None, ..old.clone() };
            let back = ctx.armed_session(back, None);
            for x in ctx.g.members.iter_mut() {
                if x.id == new_id {
                    *x = back.clone();
                }
            }
            if ctx.g.leader.as_ref() == Some(&new_id) {
                ctx.g.leader = Some(old.id.clone());
            }
        }
        UnparkJoin => {
            let mut m = ctx.member(&ctx.target_id(), "unpark-join")?;
            m.awaiting_join = None;
            ctx.g.with_member(m);
        }
        Rebalance => {
            let completing = ctx.g.state == State::CompletingRebalance;
            let mut members = Vec::with_capacity(ctx.g.members.len());
            for mut m in ctx.g.members.clone() {
                if completing {
                    if m.awaiting_sync.is_some() {
                        m = ctx.answer_sync(m, Resp::sync_error(E_REBALANCE_IN_PROGRESS));
                    }
                    m.assignment = empty_bytes();
                }
                m.pending_sync = false;
                members.push(m);
            }
            let timeout = members.iter().map(|m| m.rebalance_timeout).max().unwrap_or(0);
            let timer = if ctx.g.state == State::Empty {
                let delay = ctx.s.initial_rebalance_delay_ms;
                JoinTimer { initial: true, deadline: ctx.now + delay, delay, remaining: (timeout - delay).max(0) }
            } else {
                JoinTimer { initial: false, deadline: ctx.now + timeout, delay: 0, remaining: 0 }
            };
            ctx.g.members = members;
            ctx.g.sync_timers.clear();
            ctx.g.join_timers.push(timer);
        }
        RemoveUnjoinedDynamic => {
            for m in ctx.g.members.clone() {
                if m.instance.is_none() && m.awaiting_join.is_none() {
                    ctx.remove(&m.id, None);
                }
            }
        }
        ElectJoinedLeader => {
            let g = &ctx.g;
            let leader_joined =
                g.leader.as_ref().and_then(|l| g.member(l)).is_some_and(|m| m.awaiting_join.is_some());
            if !leader_joined {
                ctx.g.leader = g.members.iter().find(|m| m.awaiting_join.is_some()).map(|m| m.id.clone());
            }
        }
        BumpGeneration => ctx.g.generation += 1,
        SelectProtocol => {
            let prefs: Vec<Vec<Str>> = ctx.g.members.iter().map(|m| m.protocol_names()).collect();
            ctx.g.pname = select_protocol(&prefs);
        }
        ClearProtocol => ctx.g.pname = None,
        DisarmJoinTimer => {
            if !ctx.g.join_timers.is_empty() {
                ctx.g.join_timers.remove(0);
            }
        }
        AnswerJoins => {
            let roster = ctx.roster();
            let g = ctx.g.clone();
            let mut members = Vec::with_capacity(g.members.len());
            for mut m in g.members {
                if let Some((rid, _)) = m.awaiting_join {
                    let leads = g.leader.as_ref() == Some(&m.id);
                    ctx.respond(
                        rid,
                        Resp::Join {
                            error: E_NONE,
                            generation: g.generation,
                            ptype: g.ptype.clone(),
                            pname: g.pname.clone(),
                            leader: g.leader.clone().unwrap_or_else(empty_str),
                            member: m.id.clone(),
                            skip: false,
                            members: if leads { roster.clone() } else { Vec::new() },
                        },
                    );
                    m.awaiting_join = None;
                }
                m.is_new = false;
                let mut m = ctx.armed_session(m, None);
                m.pending_sync = true;
                members.push(m);
            }
            ctx.g.members = members;
        }
        ArmDelayedSync => {
            let t = SyncTimer { generation: ctx.g.generation, deadline: ctx.now + ctx.g.rebalance_timeout_ms() };
            ctx.g.sync_timers.push(t);
        }
        RearmDelayedJoin => {
            let t = JoinTimer { initial: false, deadline: ctx.now + ctx.g.rebalance_timeout_ms(), delay: 0, remaining: 0 };
            if !ctx.g.join_timers.is_empty() {
                ctx.g.join_timers.remove(0);
            }
            ctx.g.join_timers.push(t);
        }
        ExtendInitialDelay => {
            let t = ctx.g.join_timers.first().cloned().ok_or("extend-initial-delay: no join timer")?;
            let delay = ctx.s.initial_rebalance_delay_ms.min(t.remaining);
            let next =
                JoinTimer { initial: true, deadline: ctx.now + delay, delay, remaining: (t.remaining - t.delay).max(0) };
            ctx.g.join_timers.remove(0);
            ctx.g.join_timers.push(next);
            ctx.g.new_member_added = false;
        }
        ParkSync => {
            let mut m = ctx.member(&member_id_of(&ctx.inp), "park-sync")?;
            if let Some(rid) = m.awaiting_sync {
                ctx.supersede(rid);
            }
            m.awaiting_sync = Some(ctx.inp.rid);
            ctx.g.with_member(m);
        }
        UnpendSync => {
            let mut m = ctx.member(&member_id_of(&ctx.inp), "unpend-sync")?;
            m.pending_sync = false;
            ctx.g.with_member(m);
        }
        StoreAssignment => {
            let Some(Req::Sync { assignments, .. }) = ctx.inp.req.as_deref() else {
                return Err("store-assignment on a non-SyncGroup input".into());
            };
            for m in ctx.g.members.iter_mut() {
                // dict(assignments): the last entry of an id wins
                m.assignment =
                    assignments.iter().rev().find(|(id, _)| *id == m.id).map(|(_, a)| a.clone()).unwrap_or_else(empty_bytes);
            }
        }
        AnswerSyncs => {
            let (ptype, pname) = (ctx.g.ptype.clone(), ctx.g.pname.clone());
            let mut members = Vec::with_capacity(ctx.g.members.len());
            for m in ctx.g.members.clone() {
                let m = if m.awaiting_sync.is_some() {
                    let resp = Resp::Sync { error: E_NONE, ptype: ptype.clone(), pname: pname.clone(), assignment: m.assignment.clone() };
                    ctx.answer_sync(m, resp)
                } else {
                    m
                };
                members.push(m);
            }
            ctx.g.members = members;
        }
        FailSyncs => {
            let mapped = map_store_group_error(ctx.s.append_error);
            let mut members = Vec::with_capacity(ctx.g.members.len());
            for m in ctx.g.members.clone() {
                let mut m = if m.awaiting_sync.is_some() { ctx.answer_sync(m, Resp::sync_error(mapped)) } else { m };
                m.assignment = empty_bytes();
                members.push(m);
            }
            ctx.g.members = members;
        }
        RearmSession => {
            let m = ctx.member(&ctx.target_id(), "rearm-session")?;
            let m = ctx.armed_session(m, None);
            ctx.g.with_member(m);
        }
        RemoveMember => {
            let mut mid = member_id_of(&ctx.inp);
            if mid.is_empty() {
                if let Some(i) = instance_id_of(&ctx.inp) {
                    mid = ctx.g.static_member_id(&i).ok_or("remove-member: instance not mapped")?;
                }
            }
            ctx.remove(&mid, Some(E_UNKNOWN_MEMBER_ID));
        }
        MaxSizeReject => {
            let mid = member_id_of(&ctx.inp);
            ctx.g.pending.retain(|p| p.0 != mid);
            if ctx.g.has_member(&mid) {
                ctx.remove(&mid, Some(E_UNKNOWN_MEMBER_ID));
            }
        }
        RemovePending => {
            let mid = member_id_of(&ctx.inp);
            ctx.g.pending.retain(|p| p.0 != mid);
        }
        DisarmSession => {
            let mut m = ctx.member(&member_id_of(&ctx.inp), "disarm-session")?;
            m.session_deadline = None;
            ctx.g.with_member(m);
        }
        RemoveUnsynced => {
            for m in ctx.g.members.clone() {
                if m.pending_sync {
                    ctx.remove(&m.id, Some(E_UNKNOWN_MEMBER_ID));
                }
            }
        }
        DisarmDelayedSync => {
            if !ctx.g.sync_timers.is_empty() {
                ctx.g.sync_timers.remove(0);
            }
        }
        StoreOffsets => {
            let Some(Req::Commit { offsets, .. }) = ctx.inp.req.as_deref() else {
                return Err("store-offsets on a non-OffsetCommit input".into());
            };
            let mut current = ctx.g.offsets.clone();
            for (tp, off) in offsets {
                match current.iter_mut().find(|x| x.0 == *tp) {
                    Some(x) => x.1 = *off,
                    None => current.push((tp.clone(), *off)),
                }
            }
            current.sort();
            ctx.g.offsets = current;
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ reply forms

fn reply(form: Form, error: ErrCode, ctx: &Ctx) -> Result<Resp, Lacks> {
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
            Ev::OffsetCommit => match ctx.inp.req.as_deref() {
                Some(Req::Commit { offsets, .. }) => {
                    Resp::Commit { partitions: offsets.iter().map(|(tp, _)| (tp.clone(), error)).collect() }
                }
                _ => return Err("an OffsetCommit reply without its request".into()),
            },
            Ev::OffsetFetch => Resp::Fetch { error, partitions: Vec::new() },
            k => return Err(format!("no native error shape for {}", k.name())),
        },
        Form::ErrorNoMemberId => Resp::join_error(error, empty_str()),
        Form::TopLevel => Resp::Leave { error, members: Vec::new() },
        Form::WithNewMemberId => {
            Resp::join_error(error, ctx.scratch.member_id.clone().ok_or("with-new-member-id: no member id")?)
        }
        Form::JoinCurrent => {
            let id = member_id_of(&ctx.inp);
            let leads = g.leader.as_ref() == Some(&id);
            Resp::Join {
                error,
                generation: g.generation,
                ptype: g.ptype.clone(),
                pname: g.pname.clone(),
                leader: g.leader.clone().unwrap_or_else(empty_str),
                member: id,
                skip: false,
                members: if leads { ctx.roster() } else { Vec::new() },
            }
        }
        Form::StaticRestart => {
            let new_id = ctx.scratch.member_id.clone().ok_or("static-restart: no member id")?;
            let old_id = ctx.scratch.old_member_id.clone().ok_or("static-restart: no old member id")?;
            let old_leader = ctx.scratch.old_leader.clone().ok_or("static-restart: no old leader")?;
            if old_leader.as_ref() == Some(&old_id) && join_request(&ctx.inp)?.skip {
                Resp::Join {
                    error,
                    generation: g.generation,
                    ptype: g.ptype.clone(),
                    pname: g.pname.clone(),
                    leader: new_id.clone(),
                    member: new_id,
                    skip: true,
                    members: ctx.roster(),
                }
            } else {
                Resp::Join {
                    error,
                    generation: g.generation,
                    ptype: g.ptype.clone(),
                    pname: g.pname.clone(),
                    leader: old_leader.unwrap_or_else(empty_str),
                    member: new_id,
                    skip: false,
                    members: Vec::new(),
                }
            }
        }
        Form::StaticRestartFailed => Resp::Join {
            error: map_store_group_error(ctx.s.append_error),
            generation: g.generation,
            ptype: g.ptype.clone(),
            pname: g.pname.clone(),
            leader: ctx.scratch.old_leader.clone().flatten().unwrap_or_else(empty_str),
            member: empty_str(),
            skip: false,
            members: Vec::new(),
        },
        Form::StoredAssignment => {
            let m = g.member(&member_id_of(&ctx.inp)).ok_or("stored-assignment: not a member")?;
            Resp::Sync { error, ptype: g.ptype.clone(), pname: g.pname.clone(), assignment: m.assignment.clone() }
        }
        Form::CommitResult => {
            let code = if ctx.s.append_ok { error } else { map_offset_commit_error(ctx.s.append_error) };
            match ctx.inp.req.as_deref() {
                Some(Req::Commit { offsets, .. }) => {
                    Resp::Commit { partitions: offsets.iter().map(|(tp, _)| (tp.clone(), code)).collect() }
                }
                _ => return Err("commit-result without an OffsetCommit request".into()),
            }
        }
        Form::Offsets => match ctx.inp.req.as_deref() {
            Some(Req::Fetch { partitions: None }) => {
                Resp::Fetch { error, partitions: g.offsets.iter().map(|(tp, o)| (tp.clone(), *o, E_NONE)).collect() }
            }
            Some(Req::Fetch { partitions: Some(wanted) }) => Resp::Fetch {
                error,
                partitions: wanted
                    .iter()
                    .map(|tp| (tp.clone(), g.offsets.iter().find(|x| x.0 == *tp).map(|x| x.1).unwrap_or(-1), E_NONE))
                    .collect(),
            },
            _ => return Err("offsets without an OffsetFetch request".into()),
        },
        Form::Summary | Form::Listed | Form::NotListed => {
            return Err("DescribeGroups and ListGroups are not replayed natively".into())
        }
    })
}

// ------------------------------------------------------------------ step

/// What one input did: the rows fired (indices into the table's rows), the responses made, and
/// the input's own reply.
pub struct Transition {
    pub rows: Vec<u16>,
    pub outputs: Vec<Output>,
    pub reply: Option<Resp>,
}

fn fire(t: &Table, ctx: &mut Ctx) -> Result<(usize, Option<Resp>), Lacks> {
    let cands = t.candidates(ctx.g.state, ctx.inp.kind);
    let mut memo = [2u8; 64];
    let mut matched: Option<usize> = None;
    for &ri in cands {
        let mut ok = true;
        for (lit, pos) in &t.rows[ri].guard {
            let Lit::Native(a) = lit else { return Err("an atom through Python".into()) };
            let slot = *a as usize;
            let v = if memo[slot] == 2 {
                let v = eval_atom(*a, &ctx.g, &ctx.inp, ctx.s)?;
                memo[slot] = v as u8;
                v
            } else {
                memo[slot] == 1
            };
            if v != *pos {
                ok = false;
                break;
            }
        }
        if ok {
            if matched.is_some() {
                return Err(format!("more than one row matches ({} on {})", ctx.g.state.name(), ctx.inp.kind.name()));
            }
            matched = Some(ri);
        }
    }
    let ri = matched.ok_or_else(|| format!("no row matches ({} on {})", ctx.g.state.name(), ctx.inp.kind.name()))?;
    let row = &t.rows[ri];
    if row.py {
        return Err(format!("row {} goes through Python", row.id));
    }
    ctx.scratch = Scratch::default();
    if !row.effects.is_empty() {
        let before = ctx.g.clone();
        for e in &row.effects {
            apply_effect(*e, ctx)?;
        }
        for (f, field) in FIELDS {
            if row.modifies & field.bit() == 0 && before.field_differs(*field, &ctx.g) {
                return Err(format!("row {}: effects changed undeclared field '{f}'", row.id));
            }
        }
    }
    if let Some(ns) = row.next_state {
        ctx.g.state = ns;
    }
    let resp = match row.reply {
        ReplyKind::Form(f) => Some(reply(f, row.error, ctx)?),
        ReplyKind::PyForm => return Err(format!("row {}: a reply form only Python has", row.id)),
        _ => None,
    };
    Ok((ri, resp))
}

impl UrgentStep for Ctx<'_> {
    type Error = Lacks;
    type Group = Group;
    type Input = Input;
    fn urgent_holds(&self, _: &Table, ev: Ev, lits: &[(Lit, bool)]) -> Result<bool, Lacks> {
        let probe = Self::urgent_probe(ev);
        for (lit, pos) in lits {
            let Lit::Native(a) = lit else { return Err("an urgent atom through Python".into()) };
            if eval_atom(*a, &self.g, &probe, self.s)? != *pos {
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
        Input { kind: ev, req: None, member: None, instance: None, rid: 0 }
    }
    fn fire_row(&mut self, t: &Table) -> Result<usize, Lacks> {
        fire(t, self).map(|(ri, _)| ri)
    }
}

fn run_urgent(t: &Table, ctx: &mut Ctx, fired: &mut Vec<u16>) -> Result<(), Lacks> {
    urgent_loop(t, ctx, fired, |_, _| "urgent events loop".into())
}

/// model/step.py step (FirstChoice: the first option of every choice).
pub fn step(t: &Table, g: Group, inp: Input, s: &Settings, now: i64, ids: &mut PyRandom) -> Result<(Group, Transition), Lacks> {
    let mut ctx = Ctx { g, inp: inp.clone(), s, now, outputs: Vec::new(), scratch: Scratch::default(), ids };
    let mut fired = Vec::new();
    let reply_out = if let (Ev::LeaveGroup, Some(Req::Leave { members })) = (inp.kind, inp.req.as_deref()) {
        let mut results = Vec::new();
        let mut top = None;
        for (m, i) in members {
            ctx.inp = Input { member: Some(m.clone()), instance: i.clone(), ..inp.clone() };
            let (ri, r) = fire(t, &mut ctx)?;
            fired.push(ri as u16);
            let r = r.ok_or("a LeaveGroup row without a response")?;
            if t.rows[ri].reply == ReplyKind::Form(Form::TopLevel) {
                top = Some(r);
                break;
            }
            match r {
                Resp::Leave { members, .. } => results.extend(members),
                _ => return Err("a LeaveGroup row answered with another response".into()),
            }
            run_urgent(t, &mut ctx, &mut fired)?;
        }
        Some(top.unwrap_or(Resp::Leave { error: E_NONE, members: results }))
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
        run_urgent(t, &mut ctx, &mut fired)?;
        r
    };
    Ok((ctx.g, Transition { rows: fired, outputs: ctx.outputs, reply: reply_out }))
}

// ------------------------------------------------------------------ the coordinator of one group

/// model/concrete.py ModelCoordinator restricted to one group: request ids of its own, parked
/// callbacks (model request id -> the caller's tag), a virtual clock and the group's timers.
pub struct Coordinator<'t> {
    table: &'t Table,
    pub settings: Settings,
    now: i64,
    next_rid: i64,
    pub group: Group,
    callbacks: rustc_hash::FxHashMap<i64, i64>,
    ids: PyRandom,
    /// Every row fired, in order.
    pub fired: Vec<u16>,
}

/// A response delivered to the caller's tag.
pub type Delivered = (i64, Resp);

impl<'t> Coordinator<'t> {
    pub fn new(table: &'t Table, settings: Settings, owned: bool) -> Coordinator<'t> {
        Coordinator {
            table,
            settings,
            now: 0,
            next_rid: 1,
            group: Group::new(owned),
            callbacks: Default::default(),
            ids: PyRandom::new(0),
            fired: Vec::new(),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.now
    }

    fn step_input(&mut self, inp: Input, out: &mut Vec<Delivered>) -> Result<Option<Resp>, Lacks> {
        let g = std::mem::replace(&mut self.group, Group::new(true));
        let (after, t) = step(self.table, g, inp, &self.settings, self.now, &mut self.ids)?;
        self.group = after;
        self.fired.extend_from_slice(&t.rows);
        for o in t.outputs {
            let tag = self.callbacks.remove(&o.rid);
            match (o.resp, tag) {
                (None, _) => {}
                (Some(r), Some(tag)) => out.push((tag, r)),
                (Some(_), None) => return Err(format!("a response to request {}, which has none pending", o.rid)),
            }
        }
        Ok(t.reply)
    }

    /// `handle(request, callback)`: `tag` names the callback; responses go to `out`.
    pub fn handle(&mut self, req: Rc<Req>, tag: i64, out: &mut Vec<Delivered>) -> Result<(), Lacks> {
        let rid = self.next_rid;
        self.next_rid += 1;
        self.callbacks.insert(rid, tag);
        let inp = Input { kind: req.event(), req: Some(req), member: None, instance: None, rid };
        if let Some(r) = self.step_input(inp, out)? {
            let tag = self.callbacks.remove(&rid).ok_or_else(|| format!("a reply to request {rid}, already answered"))?;
            out.push((tag, r));
        }
        Ok(())
    }

    /// `advance(ms)`: the clock moves on and every timer due before now fires, earliest first.
    pub fn advance(&mut self, ms: i64, out: &mut Vec<Delivered>) -> Result<(), Lacks> {
        self.now += ms;
        while let Some((ev, member)) = self.next_due() {
            let inp = Input { kind: ev, req: None, member, instance: None, rid: 0 };
            self.step_input(inp, out)?;
        }
        Ok(())
    }

    /// concrete.py armed_timers / _next_due: the least (deadline, order) armed before now.
    fn next_due(&self) -> Option<(Ev, Option<Str>)> {
        let g = &self.group;
        let mut best: Option<(i64, usize, Ev, Option<Str>)> = None;
        let mut consider = |d: i64, order: usize, ev: Ev, m: Option<&Str>| {
            if d < self.now && best.as_ref().is_none_or(|b| (d, order) < (b.0, b.1)) {
                best = Some((d, order, ev, m.cloned()));
            }
        };
        if let Some(t) = g.join_timers.first() {
            consider(t.deadline, 0, if t.initial { Ev::InitialDelayedJoinExpire } else { Ev::DelayedJoinExpire }, None);
        }
        if let Some(t) = g.sync_timers.first() {
            consider(t.deadline, 1, Ev::DelayedSyncExpire, None);
        }
        for (i, m) in g.members.iter().enumerate() {
            if let Some(d) = m.session_deadline {
                consider(d, 2 + i, Ev::MemberSessionExpire, Some(&m.id));
            }
        }
        for (i, p) in g.pending.iter().enumerate() {
            consider(p.1, 1000 + i, Ev::PendingMemberExpire, Some(&p.0));
        }
        best.map(|b| (b.2, b.3))
    }
}
