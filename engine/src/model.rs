//! The records of model/state.py, model/messages.py and check/abstract.py, natively.
//!
//! Identifiers are small codes: a member id `c<i>#k` / `s<j>#k` is `client << 4 | k` (client index
//! as in check/abstract.py: dynamic clients first, then static ones), `NOID` is "" (or None where
//! Python has an Optional). Strings only appear when a record is rendered (`repr`), which writes
//! exactly what Python's dataclass `repr` writes, so the differential test compares text.

use smallvec::SmallVec;
use std::fmt::Write;

pub type Members = SmallVec<[Member; 4]>;
pub type Ids = SmallVec<[Mid; 6]>;
pub type JoinTimers = SmallVec<[JoinTimer; 1]>;
pub type SyncTimers = SmallVec<[i32; 1]>;
/// A LeaveGroup request's (member, instance) items.
pub type LeaveItems = SmallVec<[(Mid, Inst); 2]>;
pub type Clients = SmallVec<[Client; 5]>;

pub type Mid = u8;
pub const NOID: Mid = 0xFF;
/// An instance id: a static client's index, `NOINST` (None) or `UNKNOWN_INST` ("unknown").
pub type Inst = u8;
pub const NOINST: Inst = 0xFF;
pub const UNKNOWN_INST: Inst = 0xFE;

pub fn mid(client: u8, k: u8) -> Mid {
    (client << 4) | k
}
pub fn base_of(m: Mid) -> u8 {
    m >> 4
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub enum State {
    Empty = 0,
    PreparingRebalance = 1,
    CompletingRebalance = 2,
    Stable = 3,
    Dead = 4,
    Missing = 5,
}

impl State {
    pub const ALL: [State; 6] = [
        State::Empty,
        State::PreparingRebalance,
        State::CompletingRebalance,
        State::Stable,
        State::Dead,
        State::Missing,
    ];
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
            State::Dead => "Dead",
            State::Missing => "Missing",
        }
    }
    pub fn from_name(s: &str) -> Option<State> {
        State::ALL.iter().copied().find(|x| x.name() == s)
    }
    pub fn from_u8(v: u8) -> State {
        State::ALL[v as usize]
    }
    /// model/vocabulary.py VALID_PREVIOUS_STATES / is_valid_transition.
    pub fn valid_transition(source: State, target: State) -> bool {
        use State::*;
        match target {
            PreparingRebalance => matches!(source, Stable | CompletingRebalance | Empty),
            CompletingRebalance => source == PreparingRebalance,
            Stable => source == CompletingRebalance,
            Empty => source == PreparingRebalance,
            Dead => matches!(source, Stable | PreparingRebalance | CompletingRebalance | Empty | Dead),
            Missing => false,
        }
    }
}

/// Kafka error codes (model/vocabulary.py Error), by code.
pub type ErrCode = i16;
pub const ERRORS: &[(&str, ErrCode)] = &[
    ("UNKNOWN_SERVER_ERROR", -1),
    ("NONE", 0),
    ("UNKNOWN_TOPIC_OR_PARTITION", 3),
    ("NOT_LEADER_OR_FOLLOWER", 6),
    ("REQUEST_TIMED_OUT", 7),
    ("MESSAGE_TOO_LARGE", 10),
    ("OFFSET_METADATA_TOO_LARGE", 12),
    ("NETWORK_EXCEPTION", 13),
    ("COORDINATOR_LOAD_IN_PROGRESS", 14),
    ("COORDINATOR_NOT_AVAILABLE", 15),
    ("NOT_COORDINATOR", 16),
    ("NOT_ENOUGH_REPLICAS", 19),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20),
    ("ILLEGAL_GENERATION", 22),
    ("INCONSISTENT_GROUP_PROTOCOL", 23),
    ("INVALID_GROUP_ID", 24),
    ("UNKNOWN_MEMBER_ID", 25),
    ("INVALID_SESSION_TIMEOUT", 26),
    ("REBALANCE_IN_PROGRESS", 27),
    ("INVALID_COMMIT_OFFSET_SIZE", 28),
    ("GROUP_AUTHORIZATION_FAILED", 30),
    ("UNSUPPORTED_VERSION", 35),
    ("RECORD_LIST_TOO_LARGE", 18),
    ("INVALID_FETCH_SIZE", 4),
    ("KAFKA_STORAGE_ERROR", 56),
    ("NON_EMPTY_GROUP", 68),
    ("GROUP_ID_NOT_FOUND", 69),
    ("MEMBER_ID_REQUIRED", 79),
    ("GROUP_MAX_SIZE_REACHED", 81),
    ("FENCED_INSTANCE_ID", 82),
    ("GROUP_SUBSCRIBED_TO_TOPIC", 86),
    ("UNSTABLE_OFFSET_COMMIT", 88),
];
pub const E_NONE: ErrCode = 0;
pub const E_UNKNOWN_SERVER_ERROR: ErrCode = -1;
pub const E_NOT_LEADER_OR_FOLLOWER: ErrCode = 6;
pub const E_NOT_COORDINATOR: ErrCode = 16;
pub const E_ILLEGAL_GENERATION: ErrCode = 22;
pub const E_INCONSISTENT_GROUP_PROTOCOL: ErrCode = 23;
pub const E_UNKNOWN_MEMBER_ID: ErrCode = 25;
pub const E_REBALANCE_IN_PROGRESS: ErrCode = 27;
pub const E_MEMBER_ID_REQUIRED: ErrCode = 79;
pub const E_GROUP_MAX_SIZE_REACHED: ErrCode = 81;
pub const E_FENCED_INSTANCE_ID: ErrCode = 82;

pub fn error_from_name(s: &str) -> Option<ErrCode> {
    ERRORS.iter().find(|(n, _)| *n == s).map(|(_, c)| *c)
}
pub fn error_name(c: ErrCode) -> &'static str {
    ERRORS.iter().find(|(_, x)| *x == c).map(|(n, _)| *n).unwrap_or("?")
}

/// model/vocabulary.py map_store_group_error.
pub fn map_store_group_error(e: ErrCode) -> ErrCode {
    match e {
        3 | 19 | 20 => 15,
        6 | 56 => 16,
        7 => 27,
        10 | 18 | 4 => -1,
        x => x,
    }
}
/// model/vocabulary.py map_offset_commit_error.
pub fn map_offset_commit_error(e: ErrCode) -> ErrCode {
    match e {
        3 | 19 | 20 => 15,
        6 | 56 => 16,
        10 | 18 | 4 => 28,
        x => x,
    }
}

/// The table's event column.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Ev {
    JoinGroup = 0,
    SyncGroup,
    Heartbeat,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
    DescribeGroups,
    ListGroups,
    DeleteGroups,
    DelayedJoinComplete,
    DelayedJoinExpire,
    InitialDelayedJoinExpire,
    MemberSessionExpire,
    PendingMemberExpire,
    DelayedSyncExpire,
    DelayedSyncComplete,
    PartitionUnload,
    PartitionLoad,
    OffsetsExpire,
}
pub const EVENT_NAMES: [&str; 19] = [
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "OffsetFetch",
    "DescribeGroups",
    "ListGroups",
    "DeleteGroups",
    "DelayedJoinComplete",
    "DelayedJoinExpire",
    "InitialDelayedJoinExpire",
    "MemberSessionExpire",
    "PendingMemberExpire",
    "DelayedSyncExpire",
    "DelayedSyncComplete",
    "PartitionUnload",
    "PartitionLoad",
    "OffsetsExpire",
];
impl Ev {
    pub const ALL: [Ev; 19] = [
        Ev::JoinGroup,
        Ev::SyncGroup,
        Ev::Heartbeat,
        Ev::LeaveGroup,
        Ev::OffsetCommit,
        Ev::OffsetFetch,
        Ev::DescribeGroups,
        Ev::ListGroups,
        Ev::DeleteGroups,
        Ev::DelayedJoinComplete,
        Ev::DelayedJoinExpire,
        Ev::InitialDelayedJoinExpire,
        Ev::MemberSessionExpire,
        Ev::PendingMemberExpire,
        Ev::DelayedSyncExpire,
        Ev::DelayedSyncComplete,
        Ev::PartitionUnload,
        Ev::PartitionLoad,
        Ev::OffsetsExpire,
    ];
    pub fn name(self) -> &'static str {
        EVENT_NAMES[self as usize]
    }
    pub fn from_name(s: &str) -> Option<Ev> {
        Ev::ALL.iter().copied().find(|e| e.name() == s)
    }
    pub fn is_request(self) -> bool {
        (self as u8) <= Ev::DeleteGroups as u8
    }
}

// Protocol types: 0 None, 1 "consumer", 2 "connect", 3 "".
pub const PT_NONE: u8 = 0;
pub const PT_CONSUMER: u8 = 1;
pub const PT_CONNECT: u8 = 2;
pub const PT_EMPTY: u8 = 3;
// Protocol names: 0 None, 1 "range", 2 "roundrobin".
pub const PN_NONE: u8 = 0;
pub const PN_RANGE: u8 = 1;
pub const PN_ROUNDROBIN: u8 = 2;

/// check/abstract.py PROTOCOLS: (name, metadata byte) lists.
pub fn protocol_list(v: u8) -> &'static [(u8, u8)] {
    match v {
        0 => &[(PN_RANGE, 0)],
        1 => &[(PN_RANGE, 1)],
        _ => &[(PN_ROUNDROBIN, 0), (PN_RANGE, 0)],
    }
}
pub fn protocol_names(v: u8) -> Vec<u8> {
    protocol_list(v).iter().map(|p| p.0).collect()
}
/// Member.metadata_for: the metadata byte of the named protocol (None = b"").
pub fn metadata_for(v: u8, name: u8) -> Option<u8> {
    if name == PN_NONE {
        return None;
    }
    protocol_list(v).iter().find(|p| p.0 == name).map(|p| p.1)
}

pub const SESSION_MS: i32 = 10000;
pub const REBALANCE_MS: i32 = 30000;

#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Member {
    pub id: Mid,
    pub instance: Inst,
    pub client: u8,
    pub ptype: u8,
    pub protocols: u8,
    pub session_timeout: i32,
    pub rebalance_timeout: i32,
    pub aj: Option<(u16, bool)>,
    pub a_sync: Option<u16>,
    pub is_new: bool,
    pub assignment: bool,
    pub session: bool,
    pub pending_sync: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct JoinTimer {
    pub initial: bool,
    pub delay: i32,
    pub remaining: i32,
}

#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Persisted {
    pub state: State,
    pub generation: i32,
    pub ptype: u8,
    pub pname: u8,
    pub leader: Mid,
    pub members: Members,
}

#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Group {
    pub state: State,
    pub generation: i32,
    pub ptype: u8,
    pub pname: u8,
    pub leader: Mid,
    pub members: Members,
    pub pending: Ids,
    pub join_timers: JoinTimers,
    pub sync_timers: SyncTimers,
    /// Offsets of partition t-0 (the only partition of the abstract model).
    pub offsets: Option<i32>,
    pub persisted: Option<std::sync::Arc<Persisted>>,
    pub owned: bool,
    pub new_member_added: bool,
}

impl Default for Group {
    fn default() -> Self {
        Group {
            state: State::Missing,
            generation: 0,
            ptype: PT_NONE,
            pname: PN_NONE,
            leader: NOID,
            members: Members::new(),
            pending: Ids::new(),
            join_timers: JoinTimers::new(),
            sync_timers: SyncTimers::new(),
            offsets: None,
            persisted: None,
            owned: true,
            new_member_added: false,
        }
    }
}

impl Group {
    pub fn member(&self, id: Mid) -> Option<&Member> {
        if id == NOID {
            return None;
        }
        self.members.iter().find(|m| m.id == id)
    }
    pub fn has_member(&self, id: Mid) -> bool {
        self.member(id).is_some()
    }
    pub fn has_pending(&self, id: Mid) -> bool {
        id != NOID && self.pending.contains(&id)
    }
    pub fn static_member_id(&self, inst: Inst) -> Mid {
        if inst == NOINST {
            return NOID;
        }
        self.members.iter().find(|m| m.instance == inst).map(|m| m.id).unwrap_or(NOID)
    }
    pub fn num_awaiting_join(&self) -> usize {
        self.members.iter().filter(|m| m.aj.is_some()).count()
    }
    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending.is_empty()
    }
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members.iter().map(|m| m.rebalance_timeout).max().unwrap_or(0)
    }
    pub fn with_member(&mut self, m: Member) {
        if let Some(x) = self.members.iter_mut().find(|x| x.id == m.id) {
            *x = m;
        } else {
            self.members.push(m);
        }
    }
    pub fn without_member(&mut self, id: Mid) {
        self.members.retain(|m| m.id != id);
    }
}

/// A JoinGroupRequest of model/messages.py, as the abstract model sends it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct JoinReq {
    pub member: Mid,
    pub ptype: u8,
    pub protocols: u8,
    pub session_timeout: i32,
    pub rebalance_timeout: i32,
    pub instance: Inst,
    pub require_known: bool,
    pub skip: bool,
    pub client: u8,
}

/// A request of model/messages.py, as the abstract model sends them.
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub enum Req {
    Join(JoinReq),
    Sync {
        member: Mid,
        generation: i32,
        instance: Inst,
        ptype: u8,
        pname: u8,
        assignments: Ids,
    },
    Heartbeat {
        member: Mid,
        generation: i32,
        instance: Inst,
    },
    Leave {
        members: LeaveItems,
    },
    Commit {
        member: Mid,
        generation: i32,
        instance: Inst,
    },
    Fetch,
    Describe,
    /// states filter: 0 none, 1 ("Empty",), 2 ("Stable",)
    List {
        filter: u8,
    },
    Delete,
}

impl Req {
    pub fn event(&self) -> Ev {
        match self {
            Req::Join(_) => Ev::JoinGroup,
            Req::Sync { .. } => Ev::SyncGroup,
            Req::Heartbeat { .. } => Ev::Heartbeat,
            Req::Leave { .. } => Ev::LeaveGroup,
            Req::Commit { .. } => Ev::OffsetCommit,
            Req::Fetch => Ev::OffsetFetch,
            Req::Describe => Ev::DescribeGroups,
            Req::List { .. } => Ev::ListGroups,
            Req::Delete => Ev::DeleteGroups,
        }
    }
    pub fn member_id(&self) -> Mid {
        match self {
            Req::Join(JoinReq { member, .. })
            | Req::Sync { member, .. }
            | Req::Heartbeat { member, .. }
            | Req::Commit { member, .. } => *member,
            _ => NOID,
        }
    }
    pub fn instance(&self) -> Inst {
        match self {
            Req::Join(JoinReq { instance, .. })
            | Req::Sync { instance, .. }
            | Req::Heartbeat { instance, .. }
            | Req::Commit { instance, .. } => *instance,
            _ => NOINST,
        }
    }
    pub fn generation(&self) -> i32 {
        match self {
            Req::Sync { generation, .. }
            | Req::Heartbeat { generation, .. }
            | Req::Commit { generation, .. } => *generation,
            _ => -1,
        }
    }
}

/// model/state.py Input.
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Input {
    pub kind: Ev,
    pub req: Option<Req>,
    /// `member_id` of the input (a timer's or a LeaveGroup item's member); None when absent.
    pub member: Option<Mid>,
    pub instance: Inst,
    pub request_id: u16,
}

#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct JoinMember {
    pub id: Mid,
    pub instance: Inst,
    pub meta: Option<u8>,
}

#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct DescMember {
    pub id: Mid,
    pub instance: Inst,
    pub client: u8,
    pub meta: Option<u8>,
    pub assignment: bool,
}

/// A response of model/messages.py.
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub enum Resp {
    Join {
        error: ErrCode,
        generation: i32,
        ptype: u8,
        pname: u8,
        leader: Mid,
        member: Mid,
        skip: bool,
        members: Vec<JoinMember>,
    },
    Sync {
        error: ErrCode,
        ptype: u8,
        pname: u8,
        assignment: bool,
    },
    Heartbeat {
        error: ErrCode,
    },
    Leave {
        error: ErrCode,
        members: Vec<(Mid, Inst, ErrCode)>,
    },
    Commit {
        error: ErrCode,
    },
    /// partitions: None = (), Some(offset) = ((t-0, offset, NONE),)
    Fetch {
        error: ErrCode,
        partition: Option<i32>,
    },
    /// state "" (error shape), "Dead" (missing group) or a state name; ptype/protocol as strings
    Describe {
        error: ErrCode,
        state: &'static str,
        ptype: u8,
        protocol: u8,
        members: Vec<DescMember>,
    },
    List {
        error: ErrCode,
        listed: Option<(u8, State)>,
    },
    Delete {
        error: ErrCode,
    },
}

impl Resp {
    pub fn join_error(error: ErrCode, member: Mid) -> Resp {
        Resp::Join {
            error,
            generation: -1,
            ptype: PT_NONE,
            pname: PN_NONE,
            leader: NOID,
            member,
            skip: false,
            members: Vec::new(),
        }
    }
    pub fn sync_error(error: ErrCode) -> Resp {
        Resp::Sync { error, ptype: PT_NONE, pname: PN_NONE, assignment: false }
    }
    /// `getattr(r, "error", None)`: responses without a top-level error give None.
    pub fn error(&self) -> Option<ErrCode> {
        match self {
            Resp::Join { error, .. }
            | Resp::Sync { error, .. }
            | Resp::Heartbeat { error }
            | Resp::Leave { error, .. }
            | Resp::Fetch { error, .. }
            | Resp::List { error, .. } => Some(*error),
            Resp::Commit { .. } | Resp::Describe { .. } | Resp::Delete { .. } => None,
        }
    }
}

/// model/dsl.py Output (response None = Superseded()).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Output {
    pub rid: u16,
    pub resp: Option<Resp>,
    pub member: Mid,
}

/// The most member ids a client's roster holds. Inline, so that a client is a plain copy (the
/// explorer copies the clients for every successor); bounds that could make a longer roster are
/// refused (`Bounds::roster_fits`).
pub const ROSTER_IDS: usize = 22;
pub type Roster = tinyvec::ArrayVec<[Mid; ROSTER_IDS]>;

/// check/abstract.py Client.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Client {
    pub phase: Phase,
    pub member: Mid,
    pub generation: i32,
    pub leader: bool,
    pub roster: Roster,
    pub epoch: u8,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Phase {
    #[default]
    Idle = 0,
    Joining,
    ToSync,
    Syncing,
    Stable,
    Stalled,
    Stopped,
}
pub const PHASES: [Phase; 7] = [
    Phase::Idle,
    Phase::Joining,
    Phase::ToSync,
    Phase::Syncing,
    Phase::Stable,
    Phase::Stalled,
    Phase::Stopped,
];
impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Joining => "joining",
            Phase::ToSync => "to-sync",
            Phase::Syncing => "syncing",
            Phase::Stable => "stable",
            Phase::Stalled => "stalled",
            Phase::Stopped => "stopped",
        }
    }
}

impl Client {
    pub fn fresh(epoch: u8) -> Client {
        Client { phase: Phase::Idle, member: NOID, generation: -1, leader: false, roster: Roster::new(), epoch }
    }
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct World {
    pub group: Group,
    pub clients: Clients,
}

// ------------------------------------------------------------------ names and repr

/// Renders ids the way check/abstract.py names clients.
#[derive(Clone, Copy, Debug)]
pub struct Names {
    pub dynamic: u8,
}

impl Names {
    pub fn client(&self, i: u8) -> String {
        if i < self.dynamic {
            format!("c{i}")
        } else {
            format!("s{}", i - self.dynamic)
        }
    }
    pub fn mid(&self, m: Mid) -> String {
        if m == NOID {
            String::new()
        } else {
            format!("{}#{}", self.client(base_of(m)), m & 15)
        }
    }
    pub fn inst(&self, i: Inst) -> Option<String> {
        match i {
            NOINST => None,
            UNKNOWN_INST => Some("unknown".to_string()),
            x => Some(self.client(x)),
        }
    }
}

fn py_str(s: &str) -> String {
    format!("'{s}'")
}
fn py_opt_str(s: Option<String>) -> String {
    s.map(|x| py_str(&x)).unwrap_or_else(|| "None".to_string())
}
fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}
fn py_bytes(b: Option<u8>) -> String {
    match b {
        None => "b''".to_string(),
        Some(x) => format!("b'\\x{x:02x}'"),
    }
}
fn py_assignment(a: bool) -> &'static str {
    if a {
        "b'a'"
    } else {
        "b''"
    }
}
fn py_tuple(items: Vec<String>) -> String {
    match items.len() {
        0 => "()".to_string(),
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}
pub fn ptype_opt(p: u8) -> String {
    match p {
        PT_NONE => "None".to_string(),
        PT_CONSUMER => "'consumer'".to_string(),
        PT_CONNECT => "'connect'".to_string(),
        _ => "''".to_string(),
    }
}
pub fn ptype_text(p: u8) -> &'static str {
    match p {
        PT_CONSUMER => "consumer",
        PT_CONNECT => "connect",
        _ => "",
    }
}
pub fn pname_opt(p: u8) -> String {
    match p {
        PN_RANGE => "'range'".to_string(),
        PN_ROUNDROBIN => "'roundrobin'".to_string(),
        _ => "None".to_string(),
    }
}
pub fn pname_text(p: u8) -> &'static str {
    match p {
        PN_RANGE => "range",
        PN_ROUNDROBIN => "roundrobin",
        _ => "",
    }
}
fn err_repr(e: ErrCode) -> String {
    format!("Error.{}", error_name(e))
}
fn protocols_repr(v: u8) -> String {
    py_tuple(
        protocol_list(v)
            .iter()
            .map(|(n, m)| format!("ProtocolMetadata(name='{}', metadata={})", pname_text(*n), py_bytes(Some(*m))))
            .collect(),
    )
}

impl Names {
    pub fn member_repr(&self, m: &Member) -> String {
        format!(
            "Member(member_id={}, instance_id={}, client_id={}, protocol_type={}, protocols={}, \
             session_timeout_ms={}, rebalance_timeout_ms={}, awaiting_join={}, awaiting_sync={}, \
             is_new={}, assignment={}, session_deadline={}, pending_sync={})",
            py_str(&self.mid(m.id)),
            py_opt_str(self.inst(m.instance)),
            py_str(&self.client(m.client)),
            ptype_opt(m.ptype),
            protocols_repr(m.protocols),
            m.session_timeout,
            m.rebalance_timeout,
            match m.aj {
                None => "None".to_string(),
                Some((r, s)) => format!("ParkedJoin(request_id={r}, supports_skip_assignment={})", py_bool(s)),
            },
            m.a_sync.map(|r| r.to_string()).unwrap_or_else(|| "None".to_string()),
            py_bool(m.is_new),
            py_assignment(m.assignment),
            if m.session { "0" } else { "None" },
            py_bool(m.pending_sync),
        )
    }

    fn leader_opt(&self, l: Mid) -> String {
        if l == NOID {
            "None".to_string()
        } else {
            py_str(&self.mid(l))
        }
    }

    pub fn group_repr(&self, g: &Group) -> String {
        let members = py_tuple(g.members.iter().map(|m| self.member_repr(m)).collect());
        let pending = py_tuple(
            g.pending.iter().map(|p| format!("PendingMember(member_id={}, deadline=0)", py_str(&self.mid(*p)))).collect(),
        );
        let jts = py_tuple(
            g.join_timers
                .iter()
                .map(|t| {
                    format!(
                        "JoinTimer(kind=JoinTimerKind.{}, deadline=0, delay_ms={}, remaining_ms={})",
                        if t.initial { "InitialDelayedJoin" } else { "DelayedJoin" },
                        t.delay,
                        t.remaining
                    )
                })
                .collect(),
        );
        let sts = py_tuple(g.sync_timers.iter().map(|x| format!("SyncTimer(generation={x}, deadline=0)")).collect());
        let offsets = match g.offsets {
            None => "()".to_string(),
            Some(o) => format!("((TopicPartition(topic='t', partition=0), {o}),)"),
        };
        let persisted = match &g.persisted {
            None => "None".to_string(),
            Some(p) => format!(
                "PersistedGroup(state=GroupState.{}, generation={}, protocol_type={}, protocol_name={}, leader={}, members={})",
                p.state.name(),
                p.generation,
                ptype_opt(p.ptype),
                pname_opt(p.pname),
                self.leader_opt(p.leader),
                py_tuple(p.members.iter().map(|m| self.member_repr(m)).collect())
            ),
        };
        format!(
            "Group(group_id='g', state=GroupState.{}, generation={}, protocol_type={}, protocol_name={}, \
             leader={}, members={}, pending={}, join_timers={}, sync_timers={}, offsets={}, persisted={}, \
             owned={}, new_member_added={})",
            g.state.name(),
            g.generation,
            ptype_opt(g.ptype),
            pname_opt(g.pname),
            self.leader_opt(g.leader),
            members,
            pending,
            jts,
            sts,
            offsets,
            persisted,
            py_bool(g.owned),
            py_bool(g.new_member_added)
        )
    }

    pub fn resp_repr(&self, r: &Resp) -> String {
        match r {
            Resp::Join { error, generation, ptype, pname, leader, member, skip, members } => format!(
                "JoinGroupResponse(error={}, generation_id={}, protocol_type={}, protocol_name={}, leader={}, \
                 member_id={}, skip_assignment={}, members={})",
                err_repr(*error),
                generation,
                ptype_opt(*ptype),
                pname_opt(*pname),
                py_str(&self.mid(*leader)),
                py_str(&self.mid(*member)),
                py_bool(*skip),
                py_tuple(
                    members
                        .iter()
                        .map(|m| format!(
                            "JoinGroupMember(member_id={}, group_instance_id={}, metadata={})",
                            py_str(&self.mid(m.id)),
                            py_opt_str(self.inst(m.instance)),
                            py_bytes(m.meta)
                        ))
                        .collect()
                )
            ),
            Resp::Sync { error, ptype, pname, assignment } => format!(
                "SyncGroupResponse(error={}, protocol_type={}, protocol_name={}, assignment={})",
                err_repr(*error),
                ptype_opt(*ptype),
                pname_opt(*pname),
                py_assignment(*assignment)
            ),
            Resp::Heartbeat { error } => format!("HeartbeatResponse(error={})", err_repr(*error)),
            Resp::Leave { error, members } => format!(
                "LeaveGroupResponse(error={}, members={})",
                err_repr(*error),
                py_tuple(
                    members
                        .iter()
                        .map(|(m, i, e)| format!(
                            "MemberLeaveResult(member_id={}, group_instance_id={}, error={})",
                            py_str(&self.mid(*m)),
                            py_opt_str(self.inst(*i)),
                            err_repr(*e)
                        ))
                        .collect()
                )
            ),
            Resp::Commit { error } => format!(
                "OffsetCommitResponse(partitions=((TopicPartition(topic='t', partition=0), {}),))",
                err_repr(*error)
            ),
            Resp::Fetch { error, partition } => format!(
                "OffsetFetchResponse(error={}, partitions={})",
                err_repr(*error),
                match partition {
                    None => "()".to_string(),
                    Some(o) => format!("((TopicPartition(topic='t', partition=0), {o}, Error.NONE),)"),
                }
            ),
            Resp::Describe { error, state, ptype, protocol, members } => format!(
                "DescribeGroupsResponse(groups=(DescribedGroup(error={}, group_id='g', state='{}', protocol_type='{}', \
                 protocol='{}', members={}),))",
                err_repr(*error),
                state,
                ptype_text(*ptype),
                pname_text(*protocol),
                py_tuple(
                    members
                        .iter()
                        .map(|m| format!(
                            "DescribedMember(member_id={}, group_instance_id={}, client_id={}, metadata={}, assignment={})",
                            py_str(&self.mid(m.id)),
                            py_opt_str(self.inst(m.instance)),
                            py_str(&self.client(m.client)),
                            py_bytes(m.meta),
                            py_assignment(m.assignment)
                        ))
                        .collect()
                )
            ),
            Resp::List { error, listed } => format!(
                "ListGroupsResponse(error={}, groups={})",
                err_repr(*error),
                match listed {
                    None => "()".to_string(),
                    Some((p, s)) => format!(
                        "(ListedGroup(group_id='g', protocol_type='{}', state='{}'),)",
                        ptype_text(*p),
                        s.name()
                    ),
                }
            ),
            Resp::Delete { error } => format!("DeleteGroupsResponse(results=(('g', {}),))", err_repr(*error)),
        }
    }

    /// A request as check/abstract.py makes it (model/messages.py's repr, defaults left out).
    pub fn req_repr(&self, r: &Req) -> String {
        let inst = |i: Inst| py_opt_str(self.inst(i));
        match r {
            Req::Join(j) => format!(
                "JoinGroupRequest(group_id='g', member_id={}, protocol_type={}, protocols={}, session_timeout_ms={}, \
                 rebalance_timeout_ms={}, group_instance_id={}, require_known_member_id={}, \
                 supports_skip_assignment={}, client_id={})",
                py_str(&self.mid(j.member)),
                ptype_opt(j.ptype),
                protocols_repr(j.protocols),
                j.session_timeout,
                j.rebalance_timeout,
                inst(j.instance),
                py_bool(j.require_known),
                py_bool(j.skip),
                py_str(&self.client(j.client)),
            ),
            Req::Sync { member, generation, instance, ptype, pname, assignments } => format!(
                "SyncGroupRequest(group_id='g', member_id={}, generation_id={generation}, group_instance_id={}, \
                 protocol_type={}, protocol_name={}, assignments={})",
                py_str(&self.mid(*member)),
                inst(*instance),
                ptype_opt(*ptype),
                pname_opt(*pname),
                py_tuple(assignments.iter().map(|m| format!("({}, b'a')", py_str(&self.mid(*m)))).collect()),
            ),
            Req::Heartbeat { member, generation, instance } => format!(
                "HeartbeatRequest(group_id='g', member_id={}, generation_id={generation}, group_instance_id={})",
                py_str(&self.mid(*member)),
                inst(*instance),
            ),
            Req::Leave { members } => format!(
                "LeaveGroupRequest(group_id='g', members={})",
                py_tuple(
                    members
                        .iter()
                        .map(|(m, i)| format!(
                            "MemberIdentity(member_id={}, group_instance_id={})",
                            py_str(&self.mid(*m)),
                            inst(*i)
                        ))
                        .collect()
                ),
            ),
            Req::Commit { member, generation, instance } => format!(
                "OffsetCommitRequest(group_id='g', member_id={}, generation_id={generation}, \
                 offsets=((TopicPartition(topic='t', partition=0), 1),), group_instance_id={})",
                py_str(&self.mid(*member)),
                inst(*instance),
            ),
            Req::Fetch => "OffsetFetchRequest(group_id='g', partitions=(TopicPartition(topic='t', partition=0),))".to_string(),
            Req::Describe => "DescribeGroupsRequest(group_ids=('g',))".to_string(),
            Req::List { filter } => format!(
                "ListGroupsRequest(states_filter={})",
                match filter {
                    1 => "('Empty',)",
                    2 => "('Stable',)",
                    _ => "()",
                }
            ),
            Req::Delete => "DeleteGroupsRequest(group_ids=('g',))".to_string(),
        }
    }

    /// model/state.py Input's repr.
    pub fn input_repr(&self, x: &Input) -> String {
        format!(
            "Input(kind='{}', request={}, member_id={}, instance_id={}, request_id={})",
            x.kind.name(),
            x.req.as_ref().map(|r| self.req_repr(r)).unwrap_or_else(|| "None".to_string()),
            x.member.map(|m| py_str(&self.mid(m))).unwrap_or_else(|| "None".to_string()),
            py_opt_str(self.inst(x.instance)),
            x.request_id
        )
    }

    pub fn output_repr(&self, o: &Output) -> String {
        let resp = match &o.resp {
            None => "Superseded()".to_string(),
            Some(r) => self.resp_repr(r),
        };
        format!("Output(request_id={}, response={}, member_id={})", o.rid, resp, self.leader_opt(o.member))
    }

    pub fn client_repr(&self, c: &Client) -> String {
        format!(
            "Client(phase='{}', member_id={}, generation={}, leader={}, roster={}, epoch={})",
            c.phase.name(),
            py_str(&self.mid(c.member)),
            c.generation,
            py_bool(c.leader),
            py_tuple(c.roster.iter().map(|m| py_str(&self.mid(*m))).collect()),
            c.epoch
        )
    }

    pub fn world_repr(&self, w: &World) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "World(group={}, clients={})",
            self.group_repr(&w.group),
            py_tuple(w.clients.iter().map(|c| self.client_repr(c)).collect())
        );
        s
    }
}
