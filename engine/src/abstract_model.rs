//! model/abstract.py natively: the bounded world of one group and its clients, the enabled
//! actions (closed and open mode, faults, admin requests, timers), their successors through the
//! table, and the canonical keys with member symmetry. The successor order is model/abstract.py's
//! order, so a successor's position identifies it on both sides (counterexamples are replayed in
//! Python by position).

use crate::model::*;
use crate::step::*;
use smallvec::SmallVec;

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
}

pub fn fault_bit(name: &str) -> Option<u16> {
    FAULTS.iter().position(|f| *f == name).map(|i| 1u16 << i)
}

impl Bounds {
    fn has(&self, f: &str) -> bool {
        fault_bit(f).map(|b| self.faults & b != 0).unwrap_or(false)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActKind {
    Send,
    Admin,
    Impersonate,
    Crash,
    Stall,
    RequestTimeout,
    Timer(Ev),
}

#[derive(Clone, Debug)]
pub struct Action {
    pub kind: ActKind,
    pub client: i32,
    pub req: Option<Req>,
    pub member: Option<Mid>,
    pub append_fails: bool,
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
    pub transition: Option<Transition>,
    pub fault: bool,
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
    pub fn new(table: Table, b: Bounds) -> Model {
        let settings = Settings {
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1800000,
            group_max_size: b.group_max_size,
            initial_rebalance_delay_ms: 3000,
            new_member_join_timeout_ms: 300000,
            append_ok: true,
            append_error: E_NONE,
        };
        let failing = Settings { append_ok: false, append_error: E_NOT_LEADER_OR_FOLLOWER, ..settings.clone() };
        let n = b.dynamic + b.stat;
        let names = Names { dynamic: b.dynamic };
        Model { table, b, n, settings, failing, names }
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
        Req::Join {
            member,
            ptype: PT_CONSUMER,
            protocols: variant,
            session_timeout: SESSION_MS,
            rebalance_timeout: REBALANCE_MS,
            instance: if st { i } else { NOINST },
            require_known: self.b.require_known_member_id && !st,
            skip: true,
            client: i,
        }
    }

    /// AbstractModel.actions, in its order.
    pub fn actions(&self, w: &World) -> Vec<Action> {
        let mut out = Vec::new();
        if !self.b.open {
            for (i, c) in w.clients.iter().enumerate() {
                self.client_actions(w, i as u8, c, &mut out);
            }
        } else {
            for i in 0..self.n {
                self.open_actions(w, i, &mut out);
            }
        }
        out.push(Action::admin(Req::Describe));
        out.push(Action::admin(Req::List { filter: 0 }));
        out.push(Action::admin(Req::List { filter: 1 }));
        out.push(Action::admin(Req::List { filter: 2 }));
        out.push(Action::admin(Req::Fetch));
        out.push(Action::admin(Req::Delete));
        self.timer_actions(w, &mut out);
        out
    }

    fn client_actions(&self, w: &World, i: u8, c: &Client, out: &mut Vec<Action>) {
        let inst = self.instance(i);
        match c.phase {
            Phase::Idle => {
                out.push(Action::send(i, self.join(i, c.member, 0)));
                if c.member != NOID && !self.is_static(i) {
                    out.push(Action::send(i, Req::Leave { members: vec![(c.member, NOINST)] }));
                }
            }
            Phase::ToSync => {
                let assigns = if c.leader { c.roster.to_vec() } else { Vec::new() };
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
                    out.push(Action::send(i, Req::Leave { members: vec![(c.member, NOINST)] }));
                }
            }
            Phase::Joining | Phase::Syncing => {
                if !self.parked(w, i) {
                    out.push(Action::client_move(ActKind::RequestTimeout, i));
                }
            }
            Phase::Stopped => {}
        }
        if self.b.has("impersonate") && c.phase == Phase::Idle && self.is_static(i) {
            if let Some(p) = w.group.pending.first() {
                let mut a = Action::send(i, self.join(i, *p, 0));
                a.kind = ActKind::Impersonate;
                out.push(a);
            }
        }
        if self.b.has("stall") && c.phase == Phase::ToSync {
            out.push(Action::client_move(ActKind::Stall, i));
        }
        if (self.b.has("crash") && !matches!(c.phase, Phase::Idle | Phase::Stopped))
            || (self.b.has("crash") && c.phase == Phase::Idle && c.member != NOID)
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
        if let Req::Join { session_timeout, .. } = &mut j {
            *session_timeout = 1;
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
                if let Req::Join { ptype, .. } = &mut j {
                    *ptype = pt;
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
                    assignments: Vec::new(),
                },
            ));
            out.push(Action::send(i, Req::Leave { members: vec![(m, inst)] }));
        }
        if inst != NOINST {
            out.push(Action::send(i, Req::Leave { members: vec![(NOID, inst)] }));
        } else if i == 0 {
            out.push(Action::send(i, Req::Commit { member: NOID, generation: -1, instance: NOINST }));
            out.push(Action::send(i, Req::Leave { members: vec![(NOID, UNKNOWN_INST)] }));
        }
    }

    fn timer_actions(&self, w: &World, out: &mut Vec<Action>) {
        let g = &w.group;
        if let Some(t) = g.join_timers.first() {
            if t.initial {
                out.push(Action::timer(Ev::InitialDelayedJoinExpire, None));
            } else if self.b.has("rebalance") {
                out.push(Action::timer(Ev::DelayedJoinExpire, None));
            }
        }
        if !g.sync_timers.is_empty() && self.b.has("rebalance") {
            out.push(Action::timer(Ev::DelayedSyncExpire, None));
        }
        if self.b.has("session") {
            for m in &g.members {
                if m.session {
                    out.push(Action::timer(Ev::MemberSessionExpire, Some(m.id)));
                }
            }
            for p in &g.pending {
                out.push(Action::timer(Ev::PendingMemberExpire, Some(*p)));
            }
        }
        if self.b.has("unload") {
            if g.owned {
                out.push(Action::timer(Ev::PartitionUnload, None));
            } else {
                out.push(Action::timer(Ev::PartitionLoad, None));
            }
        }
        if self.b.has("offsets") && g.state == State::Empty {
            out.push(Action::timer(Ev::OffsetsExpire, None));
        }
    }

    fn parked_rids(g: &Group) -> Vec<u16> {
        let mut used: Vec<u16> = g.members.iter().filter_map(|m| m.aj.map(|x| x.0)).collect();
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

    /// AbstractModel.variants: the action, and with the append fault the same request failing.
    pub fn variants(&self, a: Action) -> Vec<Action> {
        let appends = matches!(a.req, Some(Req::Join { .. }) | Some(Req::Sync { .. }) | Some(Req::Commit { .. }));
        if self.b.has("append") && a.kind == ActKind::Send && appends {
            let mut f = a.clone();
            f.append_fails = true;
            vec![a, f]
        } else {
            vec![a]
        }
    }

    /// AbstractModel.successors, in its order.
    pub fn successors(&self, w: &World) -> Result<Vec<Successor>, StepError> {
        let mut out = Vec::new();
        for a in self.actions(w) {
            for v in self.variants(a) {
                self.apply(w, &v, &mut out)?;
            }
        }
        Ok(out)
    }

    fn apply(&self, w: &World, a: &Action, out: &mut Vec<Successor>) -> Result<(), StepError> {
        match a.kind {
            ActKind::Crash => {
                let used = Self::parked_rids(&w.group);
                let mut epoch = 0u8;
                while used.contains(&(1 + a.client as u16 + self.n as u16 * epoch as u16)) {
                    epoch += 1;
                }
                let mut clients = w.clients.clone();
                clients[a.client as usize] = Client::fresh(epoch);
                out.push(Successor { world: World { group: w.group.clone(), clients }, input: None, transition: None, fault: true });
                return Ok(());
            }
            ActKind::Stall => {
                let mut clients = w.clients.clone();
                clients[a.client as usize].phase = Phase::Stalled;
                out.push(Successor { world: World { group: w.group.clone(), clients }, input: None, transition: None, fault: true });
                return Ok(());
            }
            ActKind::RequestTimeout => {
                let mut clients = w.clients.clone();
                clients[a.client as usize].phase = Phase::Idle;
                out.push(Successor { world: World { group: w.group.clone(), clients }, input: None, transition: None, fault: false });
                return Ok(());
            }
            _ => {}
        }
        let inp = match (&a.kind, &a.req) {
            (ActKind::Send | ActKind::Impersonate, Some(r)) => Input {
                kind: r.event(),
                req: Some(r.clone()),
                member: None,
                instance: NOINST,
                request_id: self.request_id(w, a.client as u8),
            },
            (ActKind::Admin, Some(r)) => {
                Input { kind: r.event(), req: Some(r.clone()), member: None, instance: NOINST, request_id: 0 }
            }
            (ActKind::Timer(ev), _) => Input { kind: *ev, req: None, member: a.member, instance: NOINST, request_id: 0 },
            _ => return Err("an action without its request".into()),
        };
        let settings = if a.append_fails { &self.failing } else { &self.settings };
        let fault_kind = matches!(
            a.kind,
            ActKind::Impersonate | ActKind::Timer(Ev::PartitionUnload) | ActKind::Timer(Ev::OffsetsExpire)
        );
        let expires_live = self.expires_live_member(w, a);
        for t in step_all(&self.table, &w.group, &inp, settings)? {
            let mut group = t.after.clone();
            let t = t;
            normalize(&mut group);
            let deliveries = self.deliveries(w, &t, a);
            let nd = deliveries.len();
            let losses: Vec<Vec<bool>> = if !self.b.has("lost") || self.b.open || nd == 0 {
                vec![vec![false; nd]]
            } else {
                (0..(1u32 << nd))
                    .map(|bits| (0..nd).map(|k| bits & (1 << (nd - 1 - k)) != 0).collect())
                    .collect()
            };
            let mut pending: Vec<(Vec<Client>, bool)> = Vec::with_capacity(losses.len());
            for lost in &losses {
                let clients = self.deliver(w, a, &deliveries, lost);
                let fault = fault_kind || lost.iter().any(|x| *x) || a.append_fails || expires_live;
                pending.push((clients, fault));
            }
            drop(deliveries);
            let last = pending.len() - 1;
            let mut t = Some(t);
            for (k, (clients, fault)) in pending.into_iter().enumerate() {
                let transition = if k == last { t.take() } else { t.clone() };
                out.push(Successor {
                    world: World { group: group.clone(), clients },
                    input: Some(inp.clone()),
                    transition,
                    fault,
                });
            }
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

    fn deliveries<'t>(&self, w: &World, t: &'t Transition, a: &Action) -> Vec<(usize, &'t Resp)> {
        let mut out = Vec::new();
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

    fn deliver(&self, w: &World, a: &Action, deliveries: &[(usize, &Resp)], lost: &[bool]) -> Vec<Client> {
        if self.b.open {
            return w.clients.clone();
        }
        let mut cs = w.clients.clone();
        if matches!(a.kind, ActKind::Send | ActKind::Impersonate) {
            let ci = a.client as usize;
            match &a.req {
                Some(Req::Join { .. }) => cs[ci].phase = Phase::Joining,
                Some(Req::Sync { .. }) => cs[ci].phase = Phase::Syncing,
                Some(Req::Leave { .. }) => cs[ci] = Client::fresh(cs[ci].epoch),
                _ => {}
            }
        }
        for ((i, resp), is_lost) in deliveries.iter().zip(lost.iter()) {
            let c = std::mem::take(&mut cs[*i]);
            cs[*i] = react(c, resp, *is_lost);
        }
        cs
    }

    /// AbstractModel.within_bounds
    pub fn within_bounds(&self, w: &World) -> bool {
        let g = &w.group;
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
            std::rc::Rc::make_mut(p).members.sort_by_key(|m| m.id);
        }
    }
}

// ------------------------------------------------------------------ encodings

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A permutation of client indices (abstract.py Renamer).
pub struct Renamer {
    pub perm: Vec<u8>,
    pub n: u8,
    pub dynamic: u8,
}

impl Renamer {
    fn mid(&self, m: Mid) -> Mid {
        if m == NOID {
            return m;
        }
        let b = base_of(m);
        if (b as usize) < self.perm.len() {
            mid(self.perm[b as usize], m & 15)
        } else {
            m
        }
    }
    fn inst(&self, i: Inst) -> Inst {
        if i == NOINST || i == UNKNOWN_INST || i as usize >= self.perm.len() {
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
    let ident: Vec<u8> = (0..n).collect();
    if !symmetry {
        return vec![Renamer { perm: ident, n, dynamic: b.dynamic }];
    }
    let mut out = Vec::new();
    for pd in permutations(&(0..b.dynamic).collect::<Vec<u8>>()) {
        for ps in permutations(&(b.dynamic..n).collect::<Vec<u8>>()) {
            let mut p = pd.clone();
            p.extend(ps);
            out.push(Renamer { perm: p, n, dynamic: b.dynamic });
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

/// abstract.py _member_key, encoded.
fn member_key(m: &Member, rn: &Renamer, out: &mut SmallVec<[u8; 8]>) {
    out.push(rn.mid(m.id));
    out.push(rn.inst(m.instance));
    out.push(m.protocols);
    match m.aj {
        None => out.extend_from_slice(&[0, 0]),
        Some((r, _)) => out.extend_from_slice(&rn.rid(r).to_le_bytes()),
    }
    match m.a_sync {
        None => out.extend_from_slice(&[0, 0]),
        Some(r) => out.extend_from_slice(&rn.rid(r).to_le_bytes()),
    }
    out.push((m.is_new as u8) | (m.assignment as u8) << 1 | (m.session as u8) << 2 | (m.pending_sync as u8) << 3);
}

fn sorted_members_key(ms: &[Member], rn: &Renamer, out: &mut Vec<u8>) {
    out.push(ms.len() as u8);
    let mut keys: SmallVec<[[u8; 8]; 8]> = ms
        .iter()
        .map(|m| {
            let mut v: SmallVec<[u8; 8]> = SmallVec::new();
            member_key(m, rn, &mut v);
            let mut a = [0u8; 8];
            a.copy_from_slice(&v);
            a
        })
        .collect();
    keys.sort_unstable();
    for k in keys {
        out.extend_from_slice(&k);
    }
}

/// abstract.py world_key under one renaming, encoded (the same fields, the same projections).
pub fn world_key(w: &World, rn: &Renamer, out: &mut Vec<u8>) {
    let g = &w.group;
    out.push(g.state as u8);
    out.push(small(g.generation));
    out.push(g.ptype);
    out.push(g.pname);
    out.push(rn.mid(g.leader));
    sorted_members_key(&g.members, rn, out);
    let mut pend: SmallVec<[Mid; 8]> = g.pending.iter().map(|p| rn.mid(*p)).collect();
    pend.sort_unstable();
    out.push(pend.len() as u8);
    out.extend_from_slice(&pend);
    out.push(g.join_timers.len() as u8);
    for t in &g.join_timers {
        out.push(t.initial as u8);
        put_i32(out, t.remaining);
        put_i32(out, t.delay);
    }
    out.push(g.sync_timers.len() as u8);
    for s in &g.sync_timers {
        out.push(small(*s));
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
            out.push(1);
            out.push(p.state as u8);
            out.push(small(p.generation));
            out.push(p.pname);
            out.push(rn.mid(p.leader));
            sorted_members_key(&p.members, rn, out);
        }
    }
    out.push((g.owned as u8) | (g.new_member_added as u8) << 1);
    let mut clients: SmallVec<[SmallVec<[u8; 16]>; 8]> = (0..w.clients.len()).map(|_| SmallVec::new()).collect();
    for (i, c) in w.clients.iter().enumerate() {
        let v = &mut clients[rn.perm[i] as usize];
        v.push(c.phase as u8);
        v.push(rn.mid(c.member));
        v.push(small(c.generation));
        v.push(c.leader as u8);
        let mut r: SmallVec<[Mid; 8]> = c.roster.iter().map(|m| rn.mid(*m)).collect();
        r.sort_unstable();
        v.push(r.len() as u8);
        v.extend_from_slice(&r);
        v.push(c.epoch);
    }
    for c in clients {
        out.extend_from_slice(&c);
    }
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
pub fn canonical_key(w: &World, rns: &[Renamer], out: &mut Vec<u8>) {
    out.clear();
    if rns.len() == 1 {
        world_key(w, &rns[0], out);
        return;
    }
    let n = rns[0].n;
    let dynamic = rns[0].dynamic;
    let sigs: SmallVec<[u64; 8]> = (0..n).map(|i| client_signature(w, i)).collect();
    // clients of each block in signature order, and the tie groups within it
    let mut groups: SmallVec<[(u8, SmallVec<[u8; 8]>); 8]> = SmallVec::new(); // (first position, clients)
    for (lo, hi) in [(0u8, dynamic), (dynamic, n)] {
        let mut order: SmallVec<[u8; 8]> = (lo..hi).collect();
        order.sort_by_key(|i| (sigs[*i as usize], *i));
        let mut k = 0usize;
        while k < order.len() {
            let mut j = k;
            while j < order.len() && sigs[order[j] as usize] == sigs[order[k] as usize] {
                j += 1;
            }
            groups.push((lo + k as u8, order[k..j].iter().copied().collect()));
            k = j;
        }
    }
    let mut perm = vec![0u8; n as usize];
    let mut tmp = Vec::with_capacity(128);
    let mut first = true;
    search(w, &groups, 0, &mut perm, n, dynamic, out, &mut tmp, &mut first);
}

#[allow(clippy::too_many_arguments)]
fn search(
    w: &World,
    groups: &[(u8, SmallVec<[u8; 8]>)],
    gi: usize,
    perm: &mut Vec<u8>,
    n: u8,
    dynamic: u8,
    out: &mut Vec<u8>,
    tmp: &mut Vec<u8>,
    first: &mut bool,
) {
    if gi == groups.len() {
        let rn = Renamer { perm: perm.clone(), n, dynamic };
        tmp.clear();
        world_key(w, &rn, tmp);
        if *first || *tmp < *out {
            std::mem::swap(out, tmp);
            *first = false;
        }
        return;
    }
    let (start, members) = &groups[gi];
    for order in permutations(members) {
        for (k, c) in order.iter().enumerate() {
            perm[*c as usize] = start + k as u8;
        }
        search(w, groups, gi + 1, perm, n, dynamic, out, tmp, first);
    }
}

/// What a client looks like with every id forgotten (the same for a client and its image under
/// any renaming); a hash, so equal signatures may merely collide, which only costs renamings.
fn client_signature(w: &World, i: u8) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    let c = &w.clients[i as usize];
    let g = &w.group;
    (c.phase as u8, c.generation, c.leader, c.epoch, c.roster.len(), c.member == NOID).hash(&mut h);
    let mine = |m: Mid| m != NOID && base_of(m) == i;
    for m in g.members.iter().filter(|m| mine(m.id)) {
        (m.id & 15, m.protocols, m.aj.is_some(), m.a_sync.is_some(), m.is_new, m.assignment, m.session, m.pending_sync)
            .hash(&mut h);
        (c.member == m.id).hash(&mut h);
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
    if !(-1..=254).contains(&g) {
        return Err(format!("generation {g} is beyond the packed encoding"));
    }
    out.push((g + 1) as u8);
    Ok(())
}

pub fn encode_world(w: &World, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let g = &w.group;
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
    for c in &w.clients {
        out.push(c.phase as u8 | (c.leader as u8) << 3);
        out.push(c.member);
        put_gen(out, c.generation)?;
        out.push(c.roster.len() as u8);
        out.extend_from_slice(&c.roster);
        out.push(c.epoch);
    }
    Ok(())
}

pub fn decode_world(b: &[u8], nclients: usize) -> World {
    let mut r = Rd { b, i: 0 };
    let s0 = r.u8();
    let generation = r.gen();
    let pp = r.u8();
    let leader = r.u8();
    let nm = r.u8() as usize;
    let members = (0..nm).map(|_| dec_member(&mut r)).collect();
    let np = r.u8() as usize;
    let pending = (0..np).map(|_| r.u8()).collect();
    let nj = r.u8() as usize;
    let join_timers = (0..nj)
        .map(|_| {
            let initial = r.u8() != 0;
            let delay = r.i32();
            let remaining = r.i32();
            JoinTimer { initial, delay, remaining }
        })
        .collect();
    let ns = r.u8() as usize;
    let sync_timers = (0..ns).map(|_| r.gen()).collect();
    let offsets = if r.u8() == 1 { Some(r.i32()) } else { None };
    let p0 = r.u8();
    let persisted = if p0 & 1 == 1 {
        let state = State::from_u8(p0 >> 1);
        let generation = r.gen();
        let pp = r.u8();
        let leader = r.u8();
        let nm = r.u8() as usize;
        let members = (0..nm).map(|_| dec_member(&mut r)).collect();
        Some(std::rc::Rc::new(Persisted { state, generation, ptype: pp >> 4, pname: pp & 15, leader, members }))
    } else {
        None
    };
    let group = Group {
        state: State::from_u8(s0 & 7),
        generation,
        ptype: pp >> 4,
        pname: pp & 15,
        leader,
        members,
        pending,
        join_timers,
        sync_timers,
        offsets,
        persisted,
        owned: s0 & 8 != 0,
        new_member_added: s0 & 16 != 0,
    };
    let clients = (0..nclients)
        .map(|_| {
            let p = r.u8();
            let member = r.u8();
            let generation = r.gen();
            let nr = r.u8() as usize;
            let roster = (0..nr).map(|_| r.u8()).collect();
            let epoch = r.u8();
            Client { phase: PHASES[(p & 7) as usize], member, generation, leader: p & 8 != 0, roster, epoch }
        })
        .collect();
    World { group, clients }
}
