//! check/abstract.py natively: the bounded world of one group and its clients, the enabled
//! actions (closed and open mode, faults, admin requests, timers), their successors through the
//! table, and the canonical keys with member symmetry. The successor order is check/abstract.py's
//! order, so a successor's position identifies it on both sides (counterexamples are replayed in
//! Python by position).

use crate::model::*;
use crate::step::*;
use crate::varint::{put_var, put_zz};
use smallvec::SmallVec;
use std::rc::Rc;


pub const FAULTS: [&str; 9] =
    ["session", "rebalance", "unload", "lost", "crash", "offsets", "stall", "append", "impersonate"];

#[derive(Clone, Debug)]
pub struct Bounds {
    pub dynamic: u8,
    pub stat: u8,
    pub max_generation: i32,
    pub faults: u16,
    pub open: bool,
    pub require_known_member_id: bool,
    pub max_ids_per_client: usize,
    pub group_max_size: i64,
    pub metadata_changes: bool,
    /// check/abstract.py Bounds.group_id is "" (the empty group id).
    pub group_id_empty: bool,
}

impl Bounds {
    /// Whether every client's roster fits in `ROSTER_IDS`: a JoinGroup response lists the
    /// members of a group within the bounds (at most `max_ids_per_client` of each client's, a
    /// member's id naming its client) and the one its step adds.
    pub fn roster_fits(&self) -> Result<(), String> {
        let clients = self.dynamic as usize + self.stat as usize;
        let most = clients.saturating_mul(self.max_ids_per_client).saturating_add(1);
        if most > ROSTER_IDS {
            return Err(format!(
                "the native engine holds at most {ROSTER_IDS} member ids in a client's roster: {clients} clients with \
                 up to {} ids each could be listed {most}",
                self.max_ids_per_client
            ));
        }
        Ok(())
    }
}

pub fn fault_bit(name: &str) -> Option<u16> {
    FAULTS.iter().position(|f| *f == name).map(|i| 1u16 << i)
}

// The bits of FAULTS, in its order.
const F_SESSION: u16 = 1;
const F_REBALANCE: u16 = 1 << 1;
const F_UNLOAD: u16 = 1 << 2;
pub(crate) const F_LOST: u16 = 1 << 3;
const F_CRASH: u16 = 1 << 4;
const F_OFFSETS: u16 = 1 << 5;
const F_STALL: u16 = 1 << 6;
const F_APPEND: u16 = 1 << 7;
const F_IMPERSONATE: u16 = 1 << 8;

impl Bounds {
    pub(crate) fn has(&self, bit: u16) -> bool {
        self.faults & bit != 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActKind {
    Send,
    Admin,
    Impersonate,
    Crash,
    Stall,
    RequestTimeout,
    Timer(Ev),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub kind: ActKind,
    pub client: i32,
    pub req: Option<Req>,
    pub member: Option<Mid>,
    pub append_fails: bool,
}

/// The admin requests among a group's own actions (`Model::group_actions_into`), first.
const ADMIN_ACTIONS: usize = 6;

/// An `Input` whose request is borrowed (from its action): `to_input` copies it.
#[derive(Clone, Copy)]
pub struct InputView<'a> {
    pub kind: Ev,
    pub req: Option<&'a Req>,
    pub member: Option<Mid>,
    pub instance: Inst,
    pub request_id: u16,
}

impl Input {
    /// This input with its request borrowed.
    pub fn view(&self) -> InputView<'_> {
        InputView { kind: self.kind, req: self.req.as_ref(), member: self.member, instance: self.instance, request_id: self.request_id }
    }
}

impl InputView<'_> {
    pub fn to_input(self) -> Input {
        Input { kind: self.kind, req: self.req.cloned(), member: self.member, instance: self.instance, request_id: self.request_id }
    }
}

impl Action {
    fn send(client: u8, req: Req) -> Action {
        Action { kind: ActKind::Send, client: client as i32, req: Some(req), member: None, append_fails: false }
    }
    fn admin(req: Req) -> Action {
        Action { kind: ActKind::Admin, client: -1, req: Some(req), member: None, append_fails: false }
    }
    fn timer(ev: Ev, member: Option<Mid>) -> Action {
        Action { kind: ActKind::Timer(ev), client: -1, req: None, member, append_fails: false }
    }
    fn client_move(kind: ActKind, client: u8) -> Action {
        Action { kind, client: client as i32, req: None, member: None, append_fails: false }
    }
}

pub struct Successor {
    pub world: World,
    pub input: Option<Input>,
    pub transition: Option<Rc<Transition>>,
    pub fault: bool,
    /// Which delivered responses are lost (fault "lost"): bit nd-1-k for delivery k, of nd
    /// (abstract.py's `Action.variant`; the lockstep shows it to the client).
    pub lost: (u32, u8),
}

/// A successor as `Model::each_successor` hands it over: borrowed, valid for the call only.
pub struct SuccView<'a> {
    pub world: &'a World,
    pub input: Option<&'a Input>,
    pub transition: Option<&'a Transition>,
    pub fault: bool,
    pub lost: (u32, u8),
}

impl SuccView<'_> {
    /// An owned copy.
    pub fn to_successor(&self) -> Successor {
        Successor {
            world: self.world.clone(),
            input: self.input.cloned(),
            transition: self.transition.map(|t| Rc::new(t.clone())),
            fault: self.fault,
            lost: self.lost,
        }
    }
}

/// The buffers `Model::each_successor` reuses from one world to the next.
pub struct Scratch {
    world: World,
    actions: Vec<Action>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch { world: World { group: Group::default(), clients: Clients::new() }, actions: Vec::new() }
    }
}

/// What every successor of one action shares (`Model::emit`).
struct Emit<'a> {
    a: &'a Action,
    inp: &'a Input,
    /// A fault whatever is lost: the action is a fault, or the append fails, or it expires a
    /// live member.
    fault: bool,
}

pub struct Model {
    pub table: Table,
    pub b: Bounds,
    pub n: u8,
    pub settings: Settings,
    pub failing: Settings,
    pub names: Names,
}

impl Model {
    /// The model of `table` within bounds `b`; Err names what the engine cannot hold at them
    /// (`Bounds::roster_fits`).
    pub fn new(table: Table, b: Bounds) -> Result<Model, String> {
        b.roster_fits()?;
        let settings = Settings {
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1800000,
            group_max_size: b.group_max_size,
            initial_rebalance_delay_ms: 3000,
            new_member_join_timeout_ms: 300000,
            append_ok: true,
            append_error: E_NONE,
            group_id_empty: b.group_id_empty,
        };
        let failing = Settings { append_ok: false, append_error: E_NOT_LEADER_OR_FOLLOWER, ..settings.clone() };
        let n = b.dynamic + b.stat;
        let names = Names { dynamic: b.dynamic };
        Ok(Model { table, b, n, settings, failing, names })
    }

    pub fn initial(&self) -> World {
        World { group: Group::default(), clients: (0..self.n).map(|_| Client::fresh(0)).collect() }
    }

    fn is_static(&self, i: u8) -> bool {
        i >= self.b.dynamic
    }
    fn instance(&self, i: u8) -> Inst {
        if self.is_static(i) {
            i
        } else {
            NOINST
        }
    }

    fn join(&self, i: u8, member: Mid, variant: u8) -> Req {
        let st = self.is_static(i);
        Req::Join(JoinReq {
            member,
            ptype: PT_CONSUMER,
            protocols: variant,
            session_timeout: SESSION_MS,
            rebalance_timeout: REBALANCE_MS,
            instance: if st { i } else { NOINST },
            require_known: self.b.require_known_member_id && !st,
            skip: true,
            client: i,
        })
    }

    /// AbstractModel.actions, in its order.
    pub fn actions(&self, w: &World) -> Vec<Action> {
        let mut out = Vec::new();
        self.actions_into(w, &mut out);
        out
    }

    /// `actions`, appended to `out`: the clients' (`client_actions_into`), then the group's own
    /// (`group_actions_into`).
    pub fn actions_into(&self, w: &World, out: &mut Vec<Action>) {
        self.client_actions_into(w, out);
        self.group_actions_into(&w.group, out);
    }

    /// The actions of the clients (their requests and own moves), appended to `out`.
    pub(crate) fn client_actions_into(&self, w: &World, out: &mut Vec<Action>) {
        if !self.b.open {
            for (i, c) in w.clients.iter().enumerate() {
                self.client_actions(w, i as u8, c, out);
            }
        } else {
            for i in 0..self.n {
                self.open_actions(w, i, out);
            }
        }
    }

    /// The actions that the group alone decides: the admin requests and the timers (their
    /// inputs are functions of the group alone, `group_input`), appended to `out`.
    pub(crate) fn group_actions_into(&self, g: &Group, out: &mut Vec<Action>) {
        self.group_actions_from(g, 0, out);
    }

    /// `group_actions_into` without its first `skip` actions, or some of them: appends them
    /// and answers how many it left out (`skip` or fewer).
    pub(crate) fn group_actions_from(&self, g: &Group, skip: usize, out: &mut Vec<Action>) -> usize {
        if skip >= ADMIN_ACTIONS {
            self.timer_actions(g, out);
            return ADMIN_ACTIONS;
        }
        out.push(Action::admin(Req::Describe));
        out.push(Action::admin(Req::List { filter: 0 }));
        out.push(Action::admin(Req::List { filter: 1 }));
        out.push(Action::admin(Req::List { filter: 2 }));
        out.push(Action::admin(Req::Fetch));
        out.push(Action::admin(Req::Delete));
        self.timer_actions(g, out);
        0
    }

    fn client_actions(&self, w: &World, i: u8, c: &Client, out: &mut Vec<Action>) {
        let inst = self.instance(i);
        match c.phase {
            Phase::Idle => {
                out.push(Action::send(i, self.join(i, c.member, 0)));
                if c.member != NOID && !self.is_static(i) {
                    out.push(Action::send(i, Req::Leave { members: smallvec::smallvec![(c.member, NOINST)] }));
                }
            }
            Phase::ToSync => {
                let assigns = if c.leader { Ids::from_slice(&c.roster) } else { Ids::new() };
                out.push(Action::send(
                    i,
                    Req::Sync {
                        member: c.member,
                        generation: c.generation,
                        instance: inst,
                        ptype: PT_CONSUMER,
                        pname: PN_RANGE,
                        assignments: assigns,
                    },
                ));
            }
            Phase::Stalled => {
                out.push(Action::send(i, Req::Heartbeat { member: c.member, generation: c.generation, instance: inst }));
            }
            Phase::Stable => {
                out.push(Action::send(i, Req::Heartbeat { member: c.member, generation: c.generation, instance: inst }));
                if self.b.metadata_changes {
                    out.push(Action::send(i, self.join(i, c.member, 1)));
                }
                out.push(Action::send(i, Req::Commit { member: c.member, generation: c.generation, instance: inst }));
                if !self.is_static(i) {
                    out.push(Action::send(i, Req::Leave { members: smallvec::smallvec![(c.member, NOINST)] }));
                }
            }
            Phase::Joining | Phase::Syncing => {
                if !self.parked(w, i) {
                    out.push(Action::client_move(ActKind::RequestTimeout, i));
                }
            }
            Phase::Stopped => {}
        }
        if self.b.has(F_IMPERSONATE) && c.phase == Phase::Idle && self.is_static(i) {
            if let Some(p) = w.group.pending.first() {
                let mut a = Action::send(i, self.join(i, *p, 0));
                a.kind = ActKind::Impersonate;
                out.push(a);
            }
        }
        if self.b.has(F_STALL) && c.phase == Phase::ToSync {
            out.push(Action::client_move(ActKind::Stall, i));
        }
        if (self.b.has(F_CRASH) && !matches!(c.phase, Phase::Idle | Phase::Stopped))
            || (self.b.has(F_CRASH) && c.phase == Phase::Idle && c.member != NOID)
        {
            out.push(Action::client_move(ActKind::Crash, i));
        }
    }

    fn open_actions(&self, w: &World, i: u8, out: &mut Vec<Action>) {
        let g = &w.group;
        let inst = self.instance(i);
        let mut own: Vec<Mid> = g.members.iter().map(|m| m.id).filter(|m| base_of(*m) == i).collect();
        own.extend(g.pending.iter().copied().filter(|m| base_of(*m) == i));
        let mut foreign: Vec<Mid> = Vec::new();
        if inst != NOINST {
            // abstract.py: `{members} | {pending} - set(own)`, i.e. members | (pending - own)
            // (Python's `-` binds tighter than `|`), sorted, the first.
            let mut all: Vec<Mid> = g.members.iter().map(|m| m.id).collect();
            all.extend(g.pending.iter().copied().filter(|m| !own.contains(m)));
            all.sort_unstable();
            if let Some(f) = all.first() {
                foreign.push(*f);
            }
        }
        foreign.push(mid(i, 9));
        let mut gens = vec![g.generation, g.generation - 1, -1];
        gens.sort_unstable();
        gens.dedup();
        let mut j = self.join(i, NOID, 0);
        if let Req::Join(join) = &mut j {
            join.session_timeout = 1;
        }
        out.push(Action::send(i, j));
        let mut ids = vec![NOID];
        ids.extend(own);
        ids.extend(foreign);
        for m in ids {
            for v in 0..3u8 {
                out.push(Action::send(i, self.join(i, m, v)));
            }
            for pt in [PT_CONNECT, PT_EMPTY] {
                let mut j = self.join(i, m, 0);
                if let Req::Join(join) = &mut j {
                    join.ptype = pt;
                }
                out.push(Action::send(i, j));
            }
            if m == NOID {
                continue;
            }
            for gen in &gens {
                out.push(Action::send(
                    i,
                    Req::Sync {
                        member: m,
                        generation: *gen,
                        instance: inst,
                        ptype: PT_CONSUMER,
                        pname: PN_RANGE,
                        assignments: g.members.iter().map(|x| x.id).collect(),
                    },
                ));
                out.push(Action::send(i, Req::Heartbeat { member: m, generation: *gen, instance: inst }));
                out.push(Action::send(i, Req::Commit { member: m, generation: *gen, instance: inst }));
            }
            out.push(Action::send(
                i,
                Req::Sync {
                    member: m,
                    generation: g.generation,
                    instance: inst,
                    ptype: PT_CONSUMER,
                    pname: PN_ROUNDROBIN,
                    assignments: Ids::new(),
                },
            ));
            out.push(Action::send(i, Req::Leave { members: smallvec::smallvec![(m, inst)] }));
        }
        if inst != NOINST {
            out.push(Action::send(i, Req::Leave { members: smallvec::smallvec![(NOID, inst)] }));
        } else if i == 0 {
            out.push(Action::send(i, Req::Commit { member: NOID, generation: -1, instance: NOINST }));
            out.push(Action::send(i, Req::Leave { members: smallvec::smallvec![(NOID, UNKNOWN_INST)] }));
        }
    }

    fn timer_actions(&self, g: &Group, out: &mut Vec<Action>) {
        if let Some(t) = g.join_timers.first() {
            if t.initial {
                out.push(Action::timer(Ev::InitialDelayedJoinExpire, None));
            } else if self.b.has(F_REBALANCE) {
                out.push(Action::timer(Ev::DelayedJoinExpire, None));
            }
        }
        if !g.sync_timers.is_empty() && self.b.has(F_REBALANCE) {
            out.push(Action::timer(Ev::DelayedSyncExpire, None));
        }
        if self.b.has(F_SESSION) {
            for m in &g.members {
                if m.session {
                    out.push(Action::timer(Ev::MemberSessionExpire, Some(m.id)));
                }
            }
            for p in &g.pending {
                out.push(Action::timer(Ev::PendingMemberExpire, Some(*p)));
            }
        }
        if self.b.has(F_UNLOAD) {
            if g.owned {
                out.push(Action::timer(Ev::PartitionUnload, None));
            } else {
                out.push(Action::timer(Ev::PartitionLoad, None));
            }
        }
        if self.b.has(F_OFFSETS) && g.state == State::Empty {
            out.push(Action::timer(Ev::OffsetsExpire, None));
        }
    }

    fn parked_rids(g: &Group) -> SmallVec<[u16; 8]> {
        let mut used: SmallVec<[u16; 8]> = g.members.iter().filter_map(|m| m.aj.map(|x| x.0)).collect();
        used.extend(g.members.iter().filter_map(|m| m.a_sync));
        used
    }

    pub fn request_id(&self, w: &World, i: u8) -> u16 {
        if self.b.open {
            let used = Self::parked_rids(&w.group);
            let mut rid = 1u16;
            while used.contains(&rid) {
                rid += 1;
            }
            return rid;
        }
        1 + i as u16 + self.n as u16 * w.clients[i as usize].epoch as u16
    }

    fn parked(&self, w: &World, i: u8) -> bool {
        let rid = self.request_id(w, i);
        w.group.members.iter().any(|m| m.aj.map(|x| x.0 == rid).unwrap_or(false) || m.a_sync == Some(rid))
    }

    /// AbstractModel.variants: whether the action has a second variant, the same request failing
    /// to append (with the append fault).
    pub(crate) fn append_variant(&self, a: &Action) -> bool {
        let appends = matches!(a.req, Some(Req::Join(_)) | Some(Req::Sync { .. }) | Some(Req::Commit { .. }));
        self.b.has(F_APPEND) && a.kind == ActKind::Send && appends
    }

    /// AbstractModel.successors, in its order.
    pub fn successors(&self, w: &World) -> Result<Vec<Successor>, StepError> {
        let mut out = Vec::new();
        self.successors_into(w, &mut out)?;
        Ok(out)
    }

    /// AbstractModel.successors, in its order, into `out` (cleared first).
    pub fn successors_into(&self, w: &World, out: &mut Vec<Successor>) -> Result<(), StepError> {
        out.clear();
        let mut scratch = Scratch::default();
        self.each_successor(w, &mut scratch, &mut |v| {
            out.push(v.to_successor());
            Ok(())
        })
    }

    /// AbstractModel.successors, in its order, each handed to `f` as a view of `scratch`'s world
    /// (valid for the call only): no successor is allocated, the caller copies what it keeps.
    pub fn each_successor(
        &self,
        w: &World,
        scratch: &mut Scratch,
        f: &mut dyn FnMut(&SuccView) -> Result<(), StepError>,
    ) -> Result<(), StepError> {
        let mut actions = std::mem::take(&mut scratch.actions);
        actions.clear();
        self.actions_into(w, &mut actions);
        let mut r = Ok(());
        for a in actions.iter_mut() {
            r = self.apply_each(w, a, &mut scratch.world, f);
            if r.is_ok() && self.append_variant(a) {
                a.append_fails = true;
                r = self.apply_each(w, a, &mut scratch.world, f);
            }
            if r.is_err() {
                break;
            }
        }
        scratch.actions = actions;
        r
    }

    pub(crate) fn apply(&self, w: &World, a: &Action, out: &mut Vec<Successor>) -> Result<(), StepError> {
        let mut scratch = World { group: Group::default(), clients: Clients::new() };
        self.apply_each(w, a, &mut scratch, &mut |v| {
            out.push(v.to_successor());
            Ok(())
        })
    }

    /// The table's input of a request or timer action (None: a client's own move).
    pub(crate) fn input_of(&self, w: &World, a: &Action) -> Result<Option<Input>, StepError> {
        Ok(self.input_view(w, a)?.map(|v| v.to_input()))
    }

    /// `input_of` without copying the action's request (what a step cache's key is made of).
    pub(crate) fn input_view<'a>(&self, w: &World, a: &'a Action) -> Result<Option<InputView<'a>>, StepError> {
        Ok(Some(match (&a.kind, &a.req) {
            (ActKind::Crash | ActKind::Stall | ActKind::RequestTimeout, _) => return Ok(None),
            (ActKind::Send | ActKind::Impersonate, Some(r)) => InputView {
                kind: r.event(),
                req: Some(r),
                member: None,
                instance: NOINST,
                request_id: self.request_id(w, a.client as u8),
            },
            (ActKind::Admin | ActKind::Timer(_), _) => return self.group_input_view(a).map(Some),
            _ => return Err("an action without its request".into()),
        }))
    }

    /// The table's input of one of the group's own actions (`group_actions_into`).
    pub(crate) fn group_input(&self, a: &Action) -> Result<Input, StepError> {
        self.group_input_view(a).map(|v| v.to_input())
    }

    fn group_input_view<'a>(&self, a: &'a Action) -> Result<InputView<'a>, StepError> {
        Ok(match (&a.kind, &a.req) {
            (ActKind::Admin, Some(r)) => InputView { kind: r.event(), req: Some(r), member: None, instance: NOINST, request_id: 0 },
            (ActKind::Timer(ev), _) => InputView { kind: *ev, req: None, member: a.member, instance: NOINST, request_id: 0 },
            _ => return Err("not one of the group's own actions".into()),
        })
    }

    /// A client's own move (crash, stall, request timeout): the world after it, into `out`.
    pub(crate) fn client_move(&self, w: &World, a: &Action, out: &mut World) {
        out.group.clone_from(&w.group);
        self.client_move_clients(w, a, &mut out.clients);
    }

    /// `client_move`'s clients (a client's own move leaves the group as it is), into `out`.
    pub(crate) fn client_move_clients(&self, w: &World, a: &Action, out: &mut Clients) {
        self.client_move_over(w, a, out, ALL_CLIENTS);
    }

    /// `client_move_clients` into `out`, which holds `w`'s clients but for those in `stale` (as
    /// `deliver_over`): the clients it changed (the `stale` of the next call with the same `w`).
    pub(crate) fn client_move_over(&self, w: &World, a: &Action, out: &mut Clients, stale: u32) -> u32 {
        restore_clients(&w.clients, out, stale);
        let c = &mut out[a.client as usize];
        match a.kind {
            ActKind::Crash => {
                let used = Self::parked_rids(&w.group);
                let mut epoch = 0u8;
                while used.contains(&(1 + a.client as u16 + self.n as u16 * epoch as u16)) {
                    epoch += 1;
                }
                *c = Client::fresh(epoch);
            }
            ActKind::Stall => c.phase = Phase::Stalled,
            _ => c.phase = Phase::Idle,
        }
        1u32 << a.client
    }

    pub(crate) fn fault_of(&self, w: &World, a: &Action) -> bool {
        let fault_kind = matches!(
            a.kind,
            ActKind::Impersonate | ActKind::Timer(Ev::PartitionUnload) | ActKind::Timer(Ev::OffsetsExpire)
        );
        fault_kind || a.append_fails || self.expires_live_member(w, a)
    }

    /// The successors of one action, each handed to `f` as a view of `scratch`.
    fn apply_each(
        &self,
        w: &World,
        a: &Action,
        scratch: &mut World,
        f: &mut dyn FnMut(&SuccView) -> Result<(), StepError>,
    ) -> Result<(), StepError> {
        let Some(inp) = self.input_of(w, a)? else {
            self.client_move(w, a, scratch);
            let fault = a.kind != ActKind::RequestTimeout;
            return f(&SuccView { world: scratch, input: None, transition: None, fault, lost: (0, 0) });
        };
        let settings = if a.append_fails { &self.failing } else { &self.settings };
        let ctx = Emit { a, inp: &inp, fault: self.fault_of(w, a) };
        step_each(&self.table, &w.group, &inp, settings, |t| self.emit(w, &ctx, &t, scratch, f))
    }

    /// The successors of one step: one per subset of its deliveries lost (fault "lost"), in
    /// abstract.py's order, each with the group after the step (normalised), handed to `f` as
    /// views of `scratch`.
    fn emit(
        &self,
        w: &World,
        ctx: &Emit,
        t: &Transition,
        scratch: &mut World,
        f: &mut dyn FnMut(&SuccView) -> Result<(), StepError>,
    ) -> Result<(), StepError> {
        let deliveries = self.deliveries(w, t, ctx.a);
        let nd = deliveries.len();
        // every subset of the deliveries lost (bit nd-1-k: delivery k), in abstract.py's order
        let variants: u32 = if !self.b.has(F_LOST) || self.b.open || nd == 0 { 1 } else { 1 << nd };
        // a step that changes neither the group nor a client (an admin request, a timer that
        // finds nothing to do) leads back to `w` itself: nothing to copy
        let clients_stay = nd == 0 && (self.b.open || !matches!(ctx.a.kind, ActKind::Send | ActKind::Impersonate));
        if clients_stay && t.after == w.group {
            return f(&SuccView {
                world: w,
                input: Some(ctx.inp),
                transition: Some(t),
                fault: ctx.fault,
                lost: (0, 0),
            });
        }
        for bits in 0..variants {
            self.deliver(w, ctx.a, &deliveries, |k| bits & (1 << (nd - 1 - k)) != 0, &mut scratch.clients);
            scratch.group.clone_from(&t.after);
            normalize(&mut scratch.group);
            f(&SuccView {
                world: scratch,
                input: Some(ctx.inp),
                transition: Some(t),
                fault: ctx.fault || bits != 0,
                lost: (bits, nd as u8),
            })?;
        }
        Ok(())
    }

    fn expires_live_member(&self, w: &World, a: &Action) -> bool {
        if a.kind != ActKind::Timer(Ev::MemberSessionExpire) || self.b.open {
            return false;
        }
        w.clients.iter().any(|c| {
            Some(c.member) == a.member && matches!(c.phase, Phase::Stable | Phase::Stalled | Phase::ToSync)
        })
    }

    fn deliveries<'t>(&self, w: &World, t: &'t Transition, a: &Action) -> SmallVec<[(usize, &'t Resp); 4]> {
        let mut out = SmallVec::new();
        if matches!(a.kind, ActKind::Send | ActKind::Impersonate) {
            if let Some(r) = &t.reply {
                out.push((a.client as usize, r));
            }
        }
        for o in &t.outputs {
            let r = match &o.resp {
                None => continue,
                Some(r) => r,
            };
            if o.rid < 1 {
                continue;
            }
            let i = ((o.rid - 1) % self.n as u16) as u8;
            if o.rid == self.request_id(w, i) {
                out.push((i as usize, r));
            }
        }
        out
    }

    pub(crate) fn deliver(&self, w: &World, a: &Action, deliveries: &[(usize, &Resp)], lost: impl Fn(usize) -> bool, cs: &mut Clients) {
        self.deliver_over(w, a, deliveries, lost, cs, ALL_CLIENTS);
    }

    /// `deliver` into `cs`, which holds `w`'s clients but for those in `stale` (bit i: client i;
    /// ALL_CLIENTS: anything): only those are copied from `w`. Answers the clients it changed,
    /// the `stale` of the next call with the same `w`.
    pub(crate) fn deliver_over(
        &self,
        w: &World,
        a: &Action,
        deliveries: &[(usize, &Resp)],
        lost: impl Fn(usize) -> bool,
        cs: &mut Clients,
        stale: u32,
    ) -> u32 {
        restore_clients(&w.clients, cs, stale);
        if self.b.open {
            return 0;
        }
        let mut changed = 0u32;
        if matches!(a.kind, ActKind::Send | ActKind::Impersonate) {
            let ci = a.client as usize;
            match &a.req {
                Some(Req::Join(_)) => cs[ci].phase = Phase::Joining,
                Some(Req::Sync { .. }) => cs[ci].phase = Phase::Syncing,
                Some(Req::Leave { .. }) => cs[ci] = Client::fresh(cs[ci].epoch),
                _ => {}
            }
            changed |= 1 << ci;
        }
        for (k, (i, resp)) in deliveries.iter().enumerate() {
            let c = std::mem::take(&mut cs[*i]);
            cs[*i] = react(c, resp, lost(k));
            changed |= 1 << *i;
        }
        changed
    }

    /// AbstractModel.within_bounds
    pub fn within_bounds(&self, w: &World) -> bool {
        self.group_within_bounds(&w.group)
    }

    /// `within_bounds`, which asks only the group.
    pub fn group_within_bounds(&self, g: &Group) -> bool {
        if g.generation > self.b.max_generation {
            return false;
        }
        let mut counts = [0usize; 16];
        for id in g.members.iter().map(|m| m.id).chain(g.pending.iter().copied()) {
            counts[base_of(id) as usize & 15] += 1;
        }
        counts.iter().all(|c| *c <= self.b.max_ids_per_client)
    }
}

/// AbstractModel._react: the Java consumer's reaction to a response.
fn react(c: Client, r: &Resp, lost: bool) -> Client {
    if c.phase == Phase::Idle {
        return c;
    }
    if lost {
        return if matches!(c.phase, Phase::Joining | Phase::Syncing) { Client { phase: Phase::Idle, ..c } } else { c };
    }
    let err = r.error().unwrap_or(E_NONE);
    if let Resp::Join { error, generation, leader, member, skip, members, .. } = r {
        if *error == E_NONE {
            return Client {
                phase: Phase::ToSync,
                member: *member,
                generation: *generation,
                leader: *leader == *member && !*skip,
                roster: members.iter().map(|m| m.id).collect(),
                epoch: c.epoch,
            };
        }
        if *error == E_MEMBER_ID_REQUIRED {
            return Client { member: *member, ..Client::fresh(c.epoch) };
        }
    }
    if err == E_NONE {
        return if c.phase == Phase::Syncing { Client { phase: Phase::Stable, ..c } } else { c };
    }
    if c.phase == Phase::Stalled && err == E_REBALANCE_IN_PROGRESS {
        return c;
    }
    if matches!(err, E_FENCED_INSTANCE_ID | E_GROUP_MAX_SIZE_REACHED | E_INCONSISTENT_GROUP_PROTOCOL) {
        return Client { phase: Phase::Stopped, ..Client::fresh(c.epoch) };
    }
    if matches!(err, E_UNKNOWN_MEMBER_ID | E_ILLEGAL_GENERATION) {
        return Client::fresh(c.epoch);
    }
    if err == E_REBALANCE_IN_PROGRESS || matches!(c.phase, Phase::Joining | Phase::Syncing) {
        return Client { phase: Phase::Idle, ..c };
    }
    c
}

/// abstract.py _normalize: members (and persisted members) sorted by id.
pub fn normalize(g: &mut Group) {
    g.members.sort_by_key(|m| m.id);
    if let Some(p) = g.persisted.as_mut() {
        if !p.members.windows(2).all(|w| w[0].id < w[1].id) {
            std::sync::Arc::make_mut(p).members.sort_by_key(|m| m.id);
        }
    }
}

// ------------------------------------------------------------------ encodings

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Two small counts in one byte (a nibble each), or an escape byte and both in full.
fn put_counts(out: &mut Vec<u8>, a: usize, b: usize) {
    if a < 15 && b < 15 {
        out.push(a as u8 | (b as u8) << 4);
    } else {
        out.push(0xFF);
        out.push(a as u8);
        out.push(b as u8);
    }
}

pub const MAX_CLIENTS: usize = 16;
/// Every client, as a set of clients (bit i: client i).
pub const ALL_CLIENTS: u32 = u32::MAX;

/// Makes `out`, which holds `clients` but for those in `stale` (bit i: client i; ALL_CLIENTS:
/// anything), equal to `clients`, copying only those (`deliver_over`, `client_move_over`).
fn restore_clients(clients: &Clients, out: &mut Clients, stale: u32) {
    if stale == ALL_CLIENTS || out.len() != clients.len() {
        out.clone_from(clients);
    } else {
        for i in (0..out.len()).filter(|i| stale & 1 << i != 0) {
            out[i] = clients[i];
        }
    }
}

/// A permutation of client indices (abstract.py Renamer): client i is renamed perm[i].
#[derive(Clone, Debug)]
pub struct Renamer {
    pub perm: [u8; MAX_CLIENTS],
    pub n: u8,
    pub dynamic: u8,
}

impl Renamer {
    fn mid(&self, m: Mid) -> Mid {
        if m == NOID {
            return m;
        }
        let b = base_of(m);
        if b < self.n {
            mid(self.perm[b as usize], m & 15)
        } else {
            m
        }
    }
    fn inst(&self, i: Inst) -> Inst {
        if i == NOINST || i == UNKNOWN_INST || i >= self.n {
            i
        } else {
            self.perm[i as usize]
        }
    }
    fn rid(&self, r: u16) -> u16 {
        if r < 1 {
            return r;
        }
        let n = self.n as u16;
        let (epoch, i) = ((r - 1) / n, (r - 1) % n);
        1 + self.perm[i as usize] as u16 + n * epoch
    }
}

pub fn renamers(b: &Bounds, symmetry: bool) -> Vec<Renamer> {
    let n = b.dynamic + b.stat;
    let make = |p: &[u8]| {
        let mut perm = [0u8; MAX_CLIENTS];
        perm[..p.len()].copy_from_slice(p);
        Renamer { perm, n, dynamic: b.dynamic }
    };
    let ident: Vec<u8> = (0..n).collect();
    if !symmetry {
        return vec![make(&ident)];
    }
    let mut out = Vec::new();
    for pd in permutations(&(0..b.dynamic).collect::<Vec<u8>>()) {
        for ps in permutations(&(b.dynamic..n).collect::<Vec<u8>>()) {
            let mut p = pd.clone();
            p.extend(ps);
            out.push(make(&p));
        }
    }
    out
}

fn permutations(items: &[u8]) -> Vec<Vec<u8>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

/// abstract.py _member_key under a renaming, as a fixed-width sort key: id, instance id,
/// protocols, parked join and sync request ids (0: none), flags.
fn member_sort_key(m: &Member, rn: &Renamer) -> [u8; 8] {
    let aj = m.aj.map(|(r, _)| rn.rid(r)).unwrap_or(0);
    let sy = m.a_sync.map(|r| rn.rid(r)).unwrap_or(0);
    let flags = (m.is_new as u8) | (m.assignment as u8) << 1 | (m.session as u8) << 2 | (m.pending_sync as u8) << 3;
    let [a0, a1] = aj.to_be_bytes();
    let [s0, s1] = sy.to_be_bytes();
    [rn.mid(m.id), rn.inst(m.instance), m.protocols, a0, a1, s0, s1, flags]
}

/// The members' keys, sorted, each written compactly: id, instance id, a byte of protocols
/// (2 bits, 3 = escaped to a byte of its own), flags and which request ids follow, then those
/// request ids as varints.
fn sorted_members_key(ms: &[Member], rn: &Renamer, out: &mut Vec<u8>) {
    let mut keys: SmallVec<[[u8; 8]; 8]> = ms.iter().map(|m| member_sort_key(m, rn)).collect();
    keys.sort_unstable();
    for [id, inst, protocols, a0, a1, s0, s1, flags] in keys {
        let (aj, sy) = (u16::from_be_bytes([a0, a1]), u16::from_be_bytes([s0, s1]));
        out.push(id);
        out.push(inst);
        out.push(protocols.min(3) | flags << 2 | ((aj != 0) as u8) << 6 | ((sy != 0) as u8) << 7);
        if protocols >= 3 {
            out.push(protocols);
        }
        if aj != 0 {
            put_var(out, aj as u64);
        }
        if sy != 0 {
            put_var(out, sy as u64);
        }
    }
}

/// abstract.py world_key under one renaming, encoded (the same fields, the same projections),
/// compactly: an injective encoding of the projection, so equal keys mean equal projections.
/// The group's part (`group_key`) comes first, then the clients' (`clients_key`).
pub fn world_key(w: &World, rn: &Renamer, out: &mut Vec<u8>) {
    group_key(&w.group, rn, out);
    clients_key(&w.clients, rn, out);
}

/// The group's part of `world_key`, appended to `out`.
pub fn group_key(g: &Group, rn: &Renamer, out: &mut Vec<u8>) {
    out.push(
        g.state as u8
            | (g.owned as u8) << 3
            | (g.new_member_added as u8) << 4
            | (g.offsets.is_some() as u8) << 5
            | (g.persisted.is_some() as u8) << 6,
    );
    out.push(small(g.generation));
    out.push(g.ptype << 4 | g.pname);
    out.push(rn.mid(g.leader));
    put_counts(out, g.members.len(), g.pending.len());
    put_counts(out, g.join_timers.len(), g.sync_timers.len());
    sorted_members_key(&g.members, rn, out);
    let mut pend: SmallVec<[Mid; 8]> = g.pending.iter().map(|p| rn.mid(*p)).collect();
    pend.sort_unstable();
    out.extend_from_slice(&pend);
    for t in &g.join_timers {
        out.push(t.initial as u8);
        put_zz(out, i64::from(t.remaining));
        put_zz(out, i64::from(t.delay));
    }
    for s in &g.sync_timers {
        out.push(small(*s));
    }
    if let Some(o) = g.offsets {
        put_zz(out, i64::from(o));
    }
    if let Some(p) = &g.persisted {
        out.push(p.state as u8);
        out.push(small(p.generation));
        out.push(p.pname);
        out.push(rn.mid(p.leader));
        put_counts(out, p.members.len(), 0);
        sorted_members_key(&p.members, rn, out);
    }
}

/// The clients' part of `world_key` (the clients in their renamed order), appended to `out`.
pub fn clients_key(clients: &[Client], rn: &Renamer, out: &mut Vec<u8>) {
    let mut at = [0u8; MAX_CLIENTS];
    for i in 0..clients.len() {
        at[rn.perm[i] as usize] = i as u8;
    }
    clients_key_in(clients, &at[..clients.len()], rn, out);
}

/// `clients_key` with its order given: `order[pos]` is the client `rn` renames to pos.
fn clients_key_in(clients: &[Client], order: &[u8], rn: &Renamer, out: &mut Vec<u8>) {
    for &i in order {
        let c = &clients[i as usize];
        let head = c.phase as u8 | (c.leader as u8) << 3 | c.epoch.min(15) << 4;
        if c.epoch >= 15 {
            out.extend_from_slice(&[head, c.epoch]);
        } else {
            out.push(head);
        }
        let (m, g, r) = (rn.mid(c.member), small(c.generation), &c.roster);
        match r.len() {
            0 => out.extend_from_slice(&[m, g, 0]),
            1 => out.extend_from_slice(&[m, g, 1, rn.mid(r[0])]),
            n => {
                out.extend_from_slice(&[m, g, n as u8]);
                // the roster renamed and sorted, in place at the end of `out`
                let r0 = out.len();
                out.extend(r.iter().map(|m| rn.mid(*m)));
                sort_few(&mut out[r0..]);
            }
        }
    }
}

/// Sorts `v` ascending: a handful of items (a roster's ids) by insertion in place (the
/// library's sort, called for two or three, costs more than it sorts), more by the library's.
pub(crate) fn sort_few<T: Ord + Copy>(v: &mut [T]) {
    if v.len() > 16 {
        v.sort_unstable();
        return;
    }
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Sorts `v` ascending as `sort_few`, for items in no particular order (a state's successors'
/// numbers): up to 8 of them through a fixed network of compare-exchanges (Batcher's, 19 for 8,
/// 5 for 4; each a min and a max without a branch), more by insertion. Insertion's shifts
/// mispredicted about once an item there, 18 % of the storing thread's `absorb`'s own samples
/// (session 26). A roster's ids come almost sorted: insertion is cheaper for them.
pub(crate) fn sort_unbranched(v: &mut [u64]) {
    const FOUR: [(usize, usize); 5] = [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)];
    const EIGHT: [(usize, usize); 19] = [
        (0, 1), (2, 3), (4, 5), (6, 7),
        (0, 2), (1, 3), (4, 6), (5, 7),
        (1, 2), (5, 6),
        (0, 4), (1, 5), (2, 6), (3, 7),
        (2, 4), (3, 5),
        (1, 2), (3, 4), (5, 6),
    ];
    let net: &[(usize, usize)] = match v.len() {
        0 | 1 => return,
        2..=4 => &FOUR,
        5..=8 => &EIGHT,
        _ => return sort_few(v),
    };
    // the missing items sort last
    let mut w = [u64::MAX; 8];
    w[..v.len()].copy_from_slice(v);
    for &(i, j) in net {
        let (a, b) = (w[i], w[j]);
        w[i] = a.min(b);
        w[j] = a.max(b);
    }
    let n = v.len();
    v.copy_from_slice(&w[..n]);
}

/// A generation-like value in one key byte (the packed world refuses values beyond -1..=254).
fn small(g: i32) -> u8 {
    (g + 1) as u8
}

/// abstract.py canonical_key: one key per orbit. Python takes the key of the renaming with the
/// smallest hash over every renaming; here it is the smallest encoding over the renamings that
/// order the clients by a renaming-invariant signature (clients with equal signatures in every
/// order). That set of renamings is itself defined up to renaming, so two worlds get the same key
/// exactly when some renaming maps one onto the other: the same partition into orbits as
/// Python's, with far fewer renamings to try (one, when no two clients look alike).
pub struct Canon {
    symmetry: bool,
    ident: Renamer,
    tmp: Vec<u8>,
}

impl Canon {
    pub fn new(rns: &[Renamer]) -> Canon {
        let r = &rns[0];
        let mut ident = Renamer { perm: [0; MAX_CLIENTS], n: r.n, dynamic: r.dynamic };
        for i in 0..r.n {
            ident.perm[i as usize] = i;
        }
        Canon { symmetry: rns.len() > 1, ident, tmp: Vec::with_capacity(128) }
    }

    /// The canonical key of `w` into `out`.
    pub fn key(&mut self, w: &World, out: &mut Vec<u8>) {
        let mut gsig = [0u64; MAX_CLIENTS];
        if self.symmetry {
            for (i, s) in gsig.iter_mut().enumerate().take(w.clients.len()) {
                *s = group_signature(&w.group, i as u8);
            }
        }
        self.key_parts(&w.clients, &gsig, &mut |rn, out| group_key(&w.group, rn, out), out);
    }

    /// The canonical key of the world of a group and `clients` into `out`, from what it needs
    /// of the group: `gsig[i]`, `group_signature(group, i)` for each client i (unused without
    /// symmetry), and `gkey`, which appends `group_key(group, rn)` (a cache may keep both).
    pub fn key_parts<F: FnMut(&Renamer, &mut Vec<u8>)>(
        &mut self,
        clients: &[Client],
        gsig: &[u64; MAX_CLIENTS],
        gkey: &mut F,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        if !self.symmetry {
            gkey(&self.ident, out);
            clients_key(clients, &self.ident, out);
            return;
        }
        let (n, dynamic) = (self.ident.n as usize, self.ident.dynamic as usize);
        let mut sigs = [0u64; MAX_CLIENTS];
        for (i, s) in sigs.iter_mut().enumerate().take(n) {
            *s = client_signature(&clients[i], i as u8, gsig[i]);
        }
        // order[pos]: the client renamed to pos; ties: position ranges of equal signatures
        let mut order = [0u8; MAX_CLIENTS];
        let mut ties: SmallVec<[(usize, usize); 4]> = SmallVec::new();
        for (lo, hi) in [(0, dynamic), (dynamic, n)] {
            for (k, o) in order[lo..hi].iter_mut().enumerate() {
                *o = (lo + k) as u8;
            }
            // by signature, ties in client order (insertion: a handful of clients)
            for a in lo + 1..hi {
                let x = order[a];
                let mut b = a;
                while b > lo && sigs[order[b - 1] as usize] > sigs[x as usize] {
                    order[b] = order[b - 1];
                    b -= 1;
                }
                order[b] = x;
            }
            // most worlds tell their clients apart: no two neighbours alike, no ranges to find
            if !(lo + 1..hi).any(|p| sigs[order[p] as usize] == sigs[order[p - 1] as usize]) {
                continue;
            }
            let mut k = lo;
            while k < hi {
                let mut j = k;
                while j < hi && sigs[order[j] as usize] == sigs[order[k] as usize] {
                    j += 1;
                }
                if j - k > 1 {
                    ties.push((k, j));
                }
                k = j;
            }
        }
        let mut rn = self.ident.clone();
        if ties.is_empty() {
            for (pos, c) in order[..n].iter().enumerate() {
                rn.perm[*c as usize] = pos as u8;
            }
            gkey(&rn, out);
            clients_key_in(clients, &order[..n], &rn, out);
            return;
        }
        let mut first = true;
        let tmp = &mut self.tmp;
        let mut visit = |order: &[u8; MAX_CLIENTS]| {
            for (pos, c) in order[..n].iter().enumerate() {
                rn.perm[*c as usize] = pos as u8;
            }
            tmp.clear();
            gkey(&rn, tmp);
            clients_key_in(clients, &order[..n], &rn, tmp);
            if first || *tmp < *out {
                std::mem::swap(out, tmp);
                first = false;
            }
        };
        let start = ties[0].0;
        permute(&mut order, &ties, 0, start, &mut visit);
    }
}

/// Calls `visit` with `order` under every combination of permutations of its tie ranges
/// (ranges[gi..], the range ranges[gi] permuted from position k on).
fn permute(order: &mut [u8; MAX_CLIENTS], ranges: &[(usize, usize)], gi: usize, k: usize, visit: &mut impl FnMut(&[u8; MAX_CLIENTS])) {
    if gi == ranges.len() {
        visit(order);
        return;
    }
    let end = ranges[gi].1;
    if k + 1 >= end {
        let next = ranges.get(gi + 1).map(|r| r.0).unwrap_or(0);
        permute(order, ranges, gi + 1, next, visit);
        return;
    }
    for j in k..end {
        order.swap(k, j);
        permute(order, ranges, gi, k + 1, visit);
        order.swap(k, j);
    }
}

/// canonical_key with a scratch of its own (the explorer keeps one Canon).
pub fn canonical_key(w: &World, rns: &[Renamer], out: &mut Vec<u8>) {
    Canon::new(rns).key(w, out);
}

/// What client `i` looks like with every id forgotten (the same for a client and its image under
/// any renaming): its own fields exactly in the low 34 bits, and `gsig`, its group's part
/// (`group_signature`, a hash), above them; equal signatures may merely collide, which only
/// costs renamings.
fn client_signature(c: &Client, i: u8, gsig: u64) -> u64 {
    // which of its members the client knows itself as (ids forgotten)
    let own = if c.member != NOID && base_of(c.member) == i { 0x10 | (c.member & 15) as u64 } else { 0 };
    let local = c.phase as u64
        | (c.leader as u64) << 3
        | ((c.member == NOID) as u64) << 4
        | own << 5
        | (c.roster.len().min(255) as u64) << 10
        | (small(c.generation) as u64) << 18
        | (c.epoch as u64) << 26;
    gsig << 34 | local
}

/// The group's part of client `i`'s signature: its members, pending ids and leadership, ids
/// forgotten.
pub fn group_signature(g: &Group, i: u8) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    let mine = |m: Mid| m != NOID && base_of(m) == i;
    for m in g.members.iter().filter(|m| mine(m.id)) {
        (m.id & 15, m.protocols, m.aj.is_some(), m.a_sync.is_some(), m.is_new, m.assignment, m.session, m.pending_sync)
            .hash(&mut h);
    }
    (g.pending.iter().filter(|p| mine(**p)).count(), mine(g.leader)).hash(&mut h);
    if let Some(p) = &g.persisted {
        (p.members.iter().filter(|m| mine(m.id)).count(), mine(p.leader)).hash(&mut h);
    }
    h.finish()
}

// Full world encoding (every field, so a stored world decodes to exactly the world found).

fn enc_member(m: &Member, out: &mut Vec<u8>) {
    out.push(m.id);
    out.push(m.instance);
    out.push(m.client);
    out.push(m.ptype << 4 | m.protocols);
    if m.session_timeout == SESSION_MS && m.rebalance_timeout == REBALANCE_MS {
        out.push(0);
    } else {
        out.push(1);
        put_i32(out, m.session_timeout);
        put_i32(out, m.rebalance_timeout);
    }
    let flags = (m.aj.is_some() as u8)
        | (m.aj.map(|x| x.1).unwrap_or(false) as u8) << 1
        | (m.a_sync.is_some() as u8) << 2
        | (m.is_new as u8) << 3
        | (m.assignment as u8) << 4
        | (m.session as u8) << 5
        | (m.pending_sync as u8) << 6;
    out.push(flags);
    if let Some((r, _)) = m.aj {
        out.extend_from_slice(&r.to_le_bytes());
    }
    if let Some(r) = m.a_sync {
        out.extend_from_slice(&r.to_le_bytes());
    }
}

struct Rd<'a> {
    b: &'a [u8],
    i: usize,
}
impl Rd<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.b[self.i];
        self.i += 1;
        v
    }
    fn u16(&mut self) -> u16 {
        let v = u16::from_le_bytes([self.b[self.i], self.b[self.i + 1]]);
        self.i += 2;
        v
    }
    fn i32(&mut self) -> i32 {
        let v = i32::from_le_bytes([self.b[self.i], self.b[self.i + 1], self.b[self.i + 2], self.b[self.i + 3]]);
        self.i += 4;
        v
    }
    /// generation-like values stored in one byte (offset by 1: -1..=254)
    fn gen(&mut self) -> i32 {
        self.u8() as i32 - 1
    }
}

fn dec_member(r: &mut Rd) -> Member {
    let id = r.u8();
    let instance = r.u8();
    let client = r.u8();
    let pp = r.u8();
    let (session_timeout, rebalance_timeout) = if r.u8() == 0 { (SESSION_MS, REBALANCE_MS) } else { (r.i32(), r.i32()) };
    let flags = r.u8();
    let aj = if flags & 1 != 0 { Some((r.u16(), flags & 2 != 0)) } else { None };
    let a_sync = if flags & 4 != 0 { Some(r.u16()) } else { None };
    Member {
        id,
        instance,
        client,
        ptype: pp >> 4,
        protocols: pp & 15,
        session_timeout,
        rebalance_timeout,
        aj,
        a_sync,
        is_new: flags & 8 != 0,
        assignment: flags & 16 != 0,
        session: flags & 32 != 0,
        pending_sync: flags & 64 != 0,
    }
}

fn put_gen(out: &mut Vec<u8>, g: i32) -> Result<(), String> {
    out.push(packed_gen(g)?);
    Ok(())
}

/// A generation-like value as the packed world holds it (one byte: -1..=254).
fn packed_gen(g: i32) -> Result<u8, String> {
    if !(-1..=254).contains(&g) {
        return Err(format!("generation {g} is beyond the packed encoding"));
    }
    Ok((g + 1) as u8)
}

pub fn encode_world(w: &World, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    encode_group(&w.group, out)?;
    encode_clients(&w.clients, out)
}

/// The group's part of a packed world (its first bytes), appended to `out`.
pub fn encode_group(g: &Group, out: &mut Vec<u8>) -> Result<(), String> {
    out.push(g.state as u8 | (g.owned as u8) << 3 | (g.new_member_added as u8) << 4);
    put_gen(out, g.generation)?;
    out.push(g.ptype << 4 | g.pname);
    out.push(g.leader);
    out.push(g.members.len() as u8);
    for m in &g.members {
        enc_member(m, out);
    }
    out.push(g.pending.len() as u8);
    out.extend_from_slice(&g.pending);
    out.push(g.join_timers.len() as u8);
    for t in &g.join_timers {
        out.push(t.initial as u8);
        put_i32(out, t.delay);
        put_i32(out, t.remaining);
    }
    out.push(g.sync_timers.len() as u8);
    for s in &g.sync_timers {
        put_gen(out, *s)?;
    }
    match g.offsets {
        None => out.push(0),
        Some(o) => {
            out.push(1);
            put_i32(out, o);
        }
    }
    match &g.persisted {
        None => out.push(0),
        Some(p) => {
            out.push(1 | (p.state as u8) << 1);
            put_gen(out, p.generation)?;
            out.push(p.ptype << 4 | p.pname);
            out.push(p.leader);
            out.push(p.members.len() as u8);
            for m in &p.members {
                enc_member(m, out);
            }
        }
    }
    Ok(())
}

/// The clients' part of a packed world (after the group's), appended to `out`.
pub fn encode_clients(clients: &[Client], out: &mut Vec<u8>) -> Result<(), String> {
    for c in clients {
        out.extend_from_slice(&[c.phase as u8 | (c.leader as u8) << 3, c.member, packed_gen(c.generation)?, c.roster.len() as u8]);
        out.extend_from_slice(&c.roster);
        out.push(c.epoch);
    }
    Ok(())
}

pub fn decode_world(b: &[u8], nclients: usize) -> World {
    let (group, at) = decode_group(b);
    World { group, clients: decode_clients(&b[at..], nclients) }
}

/// The group of a packed world, and where its clients' part starts.
pub fn decode_group(b: &[u8]) -> (Group, usize) {
    let mut g = Group::default();
    let n = decode_group_into(b, &mut g);
    (g, n)
}

/// `decode_group` into `g` (its lists' room kept): the bytes read.
pub fn decode_group_into(b: &[u8], g: &mut Group) -> usize {
    let mut r = Rd { b, i: 0 };
    let s0 = r.u8();
    g.state = State::from_u8(s0 & 7);
    g.owned = s0 & 8 != 0;
    g.new_member_added = s0 & 16 != 0;
    g.generation = r.gen();
    let pp = r.u8();
    (g.ptype, g.pname) = (pp >> 4, pp & 15);
    g.leader = r.u8();
    let nm = r.u8() as usize;
    g.members.clear();
    g.members.extend((0..nm).map(|_| dec_member(&mut r)));
    let np = r.u8() as usize;
    g.pending.clear();
    g.pending.extend((0..np).map(|_| r.u8()));
    let nj = r.u8() as usize;
    g.join_timers.clear();
    g.join_timers.extend((0..nj).map(|_| {
        let initial = r.u8() != 0;
        let delay = r.i32();
        let remaining = r.i32();
        JoinTimer { initial, delay, remaining }
    }));
    let ns = r.u8() as usize;
    g.sync_timers.clear();
    g.sync_timers.extend((0..ns).map(|_| r.gen()));
    g.offsets = if r.u8() == 1 { Some(r.i32()) } else { None };
    let p0 = r.u8();
    if p0 & 1 == 1 {
        let state = State::from_u8(p0 >> 1);
        let generation = r.gen();
        let pp = r.u8();
        let leader = r.u8();
        let nm = r.u8() as usize;
        // the group's own record is written over when no one else holds it (the last state's,
        // whose steps are gone): no allocation a state
        match g.persisted.as_mut().and_then(std::sync::Arc::get_mut) {
            Some(p) => {
                (p.state, p.generation, p.ptype, p.pname, p.leader) = (state, generation, pp >> 4, pp & 15, leader);
                p.members.clear();
                p.members.extend((0..nm).map(|_| dec_member(&mut r)));
            }
            None => {
                let members = (0..nm).map(|_| dec_member(&mut r)).collect();
                g.persisted =
                    Some(std::sync::Arc::new(Persisted { state, generation, ptype: pp >> 4, pname: pp & 15, leader, members }));
            }
        }
    } else {
        g.persisted = None;
    }
    r.i
}

fn skip_member(r: &mut Rd) {
    r.i += 4;
    if r.u8() != 0 {
        r.i += 8;
    }
    let flags = r.u8();
    r.i += 2 * ((flags & 1) + ((flags >> 2) & 1)) as usize;
}

/// How long the group's part of a packed world is (where `decode_group` stops).
pub fn group_len(b: &[u8]) -> usize {
    let mut r = Rd { b, i: 4 };
    for _ in 0..r.u8() {
        skip_member(&mut r);
    }
    let np = r.u8() as usize;
    r.i += np;
    let nj = r.u8() as usize;
    r.i += 9 * nj;
    let ns = r.u8() as usize;
    r.i += ns;
    if r.u8() == 1 {
        r.i += 4;
    }
    if r.u8() & 1 == 1 {
        r.i += 3;
        for _ in 0..r.u8() {
            skip_member(&mut r);
        }
    }
    r.i
}

/// The clients' part of a packed world.
pub fn decode_clients(b: &[u8], nclients: usize) -> Clients {
    let mut cs = Clients::new();
    decode_clients_into(b, nclients, &mut cs);
    cs
}

/// `decode_clients` into `cs` (its rosters' room kept).
pub fn decode_clients_into(b: &[u8], nclients: usize, cs: &mut Clients) {
    let mut r = Rd { b, i: 0 };
    cs.resize_with(nclients, Client::default);
    for c in cs.iter_mut() {
        let p = r.u8();
        (c.phase, c.leader) = (PHASES[(p & 7) as usize], p & 8 != 0);
        c.member = r.u8();
        c.generation = r.gen();
        let nr = r.u8() as usize;
        c.roster.clear();
        c.roster.extend_from_slice(&b[r.i..r.i + nr]);
        r.i += nr;
        c.epoch = r.u8();
    }
}
