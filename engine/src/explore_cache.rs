//! The explorer's caches, one per thread: the groups it meets, interned by their packed bytes,
//! with what every world of a group shares (the bounds, quiescence, the state invariants, the
//! group's part of canonical keys); and the table's steps by (group, input, settings), with their
//! transition-invariant verdicts. A group recurs in many worlds, under every configuration of the
//! clients (3 members, generation <= 2: 184,306 states, 10,117 groups), so most successors are
//! made without stepping the table or copying a group.
//!
//! Both are caches: emptied together (between two states, never during one) once they hold more
//! than their limit, so memory stays bounded whatever the run's size.

use crate::abstract_model::*;
use crate::invariants::{state_violated, Inv, TransitionCheck};
use crate::model::*;
use crate::step::{step_each, Settings, StepError, Table, Transition};
use hashbrown::HashTable;
use smallvec::SmallVec;
use std::hash::BuildHasher;

/// No response (`StepOut::reply`).
pub const NO_RESP: u32 = u32::MAX;

/// A group and what every world of it shares.
pub struct GroupInfo {
    pub group: Group,
    /// Its packed bytes (`encode_group`): `Cache::group_bytes`.
    bytes: (u32, u32),
    pub in_bounds: bool,
    pub quiet: bool,
    /// The native state invariants it violates (their indices).
    pub state_viols: SmallVec<[u16; 2]>,
    /// `group_signature(group, i)` for each client i.
    pub gsig: [u64; MAX_CLIENTS],
    /// `group_key(group, rn)` for the renamings met so far: (the renaming's code, its bytes in
    /// `Cache::key_bytes`).
    keys: SmallVec<[(u64, u32, u32); 2]>,
}

/// One outcome of a step (one resolution of its choices).
#[derive(Clone, Copy)]
pub struct StepOut {
    /// The group after it, normalised (a group of the cache).
    pub after: u32,
    /// Whether the group after it (before normalising) equals the group before.
    pub unchanged: bool,
    /// The rows fired: `Cache::rows`.
    pub rows: (u32, u32),
    /// The response to the request (`Cache::resp`), or NO_RESP.
    pub reply: u32,
    /// The responses to parked requests, (request id, response): `Cache::outs`.
    pub outs: (u32, u32),
    /// Bit i: transition invariant i is violated.
    pub verdicts: u64,
}

struct StepEntry {
    key: (u32, u32),
    outs: (u32, u32),
}

/// The caches of one thread's explorer.
pub struct Cache {
    hasher: rustc_hash::FxBuildHasher,
    groups: Vec<GroupInfo>,
    group_table: HashTable<u32>,
    group_bytes: Vec<u8>,
    key_bytes: Vec<u8>,
    steps: Vec<StepEntry>,
    step_table: HashTable<u32>,
    step_keys: Vec<u8>,
    outcomes: Vec<StepOut>,
    rows: Vec<u16>,
    outs: Vec<(u16, u32)>,
    resps: Vec<Resp>,
    resp_table: HashTable<u32>,
    /// Bytes held beyond which the cache is emptied (between states).
    limit: usize,
    key: Vec<u8>,
    enc: Vec<u8>,
    pub hits: u64,
    pub misses: u64,
    /// Times the cache was emptied.
    pub clears: u64,
    /// The most bytes it held.
    peak: usize,
}

/// A renaming's code (its permutation, 4 bits a client).
fn perm_code(rn: &Renamer) -> u64 {
    rn.perm[..rn.n as usize].iter().fold(0u64, |c, p| c << 4 | *p as u64)
}

fn at(r: (u32, u32)) -> std::ops::Range<usize> {
    r.0 as usize..r.1 as usize
}

/// An injective encoding of an input (its fields, each in full), appended to `out`.
fn input_key(x: &Input, out: &mut Vec<u8>) {
    out.push(x.kind as u8);
    out.extend_from_slice(&x.request_id.to_le_bytes());
    match x.member {
        None => out.push(0),
        Some(m) => out.extend_from_slice(&[1, m]),
    }
    out.push(x.instance);
    let Some(r) = &x.req else {
        out.push(0);
        return;
    };
    match r {
        Req::Join(j) => {
            out.extend_from_slice(&[1, j.member, j.ptype, j.protocols, j.instance, j.client]);
            out.push(j.require_known as u8 | (j.skip as u8) << 1);
            out.extend_from_slice(&j.session_timeout.to_le_bytes());
            out.extend_from_slice(&j.rebalance_timeout.to_le_bytes());
        }
        Req::Sync { member, generation, instance, ptype, pname, assignments } => {
            out.extend_from_slice(&[2, *member, *instance, *ptype, *pname, assignments.len() as u8]);
            out.extend_from_slice(assignments);
            out.extend_from_slice(&generation.to_le_bytes());
        }
        Req::Heartbeat { member, generation, instance } => {
            out.extend_from_slice(&[3, *member, *instance]);
            out.extend_from_slice(&generation.to_le_bytes());
        }
        Req::Leave { members } => {
            out.extend_from_slice(&[4, members.len() as u8]);
            for (m, i) in members {
                out.extend_from_slice(&[*m, *i]);
            }
        }
        Req::Commit { member, generation, instance } => {
            out.extend_from_slice(&[5, *member, *instance]);
            out.extend_from_slice(&generation.to_le_bytes());
        }
        Req::Fetch => out.push(6),
        Req::Describe => out.push(7),
        Req::List { filter } => out.extend_from_slice(&[8, *filter]),
        Req::Delete => out.push(9),
    }
}

/// What a group's facts are computed from.
pub struct GroupFacts<'a> {
    pub model: &'a Model,
    pub state_invs: &'a [Inv],
    pub symmetry: bool,
}

impl Cache {
    pub fn new(limit: usize) -> Cache {
        Cache {
            hasher: rustc_hash::FxBuildHasher,
            groups: Vec::new(),
            group_table: HashTable::new(),
            group_bytes: Vec::new(),
            key_bytes: Vec::new(),
            steps: Vec::new(),
            step_table: HashTable::new(),
            step_keys: Vec::new(),
            outcomes: Vec::new(),
            rows: Vec::new(),
            outs: Vec::new(),
            resps: Vec::new(),
            resp_table: HashTable::new(),
            limit,
            key: Vec::new(),
            enc: Vec::new(),
            hits: 0,
            misses: 0,
            clears: 0,
            peak: 0,
        }
    }

    /// Bytes held (an estimate that counts every buffer's capacity and each entry's size).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.groups.capacity() * size_of::<GroupInfo>()
            + self.group_table.capacity() * 8
            + self.group_bytes.capacity()
            + self.key_bytes.capacity()
            + self.steps.capacity() * size_of::<StepEntry>()
            + self.step_table.capacity() * 8
            + self.step_keys.capacity()
            + self.outcomes.capacity() * size_of::<StepOut>()
            + self.rows.capacity() * 2
            + self.outs.capacity() * size_of::<(u16, u32)>()
            + self.resps.capacity() * size_of::<Resp>()
            + self.resp_table.capacity() * 8
    }

    /// The most bytes it held.
    pub fn peak(&self) -> usize {
        self.peak.max(self.bytes())
    }

    /// Empties the cache when it holds more than its limit: call between states only (the
    /// indices handed out before are void afterwards).
    pub fn trim(&mut self) {
        let bytes = self.bytes();
        self.peak = self.peak.max(bytes);
        if bytes <= self.limit {
            return;
        }
        self.clears += 1;
        self.groups.clear();
        self.group_table.clear();
        self.group_bytes.clear();
        self.key_bytes.clear();
        self.steps.clear();
        self.step_table.clear();
        self.step_keys.clear();
        self.outcomes.clear();
        self.rows.clear();
        self.outs.clear();
        self.resps.clear();
        self.resp_table.clear();
    }

    pub fn group(&self, gid: u32) -> &GroupInfo {
        &self.groups[gid as usize]
    }

    /// A group's packed bytes.
    pub fn group_bytes(&self, gid: u32) -> &[u8] {
        &self.group_bytes[at(self.groups[gid as usize].bytes)]
    }

    pub fn resp(&self, r: u32) -> &Resp {
        &self.resps[r as usize]
    }

    pub fn rows(&self, o: &StepOut) -> &[u16] {
        &self.rows[at(o.rows)]
    }

    pub fn outs(&self, o: &StepOut) -> &[(u16, u32)] {
        &self.outs[at(o.outs)]
    }

    /// The group packed as `bytes` (`encode_group`), interned.
    pub fn intern_bytes(&mut self, bytes: &[u8], f: &GroupFacts) -> u32 {
        let hash = self.hasher.hash_one(bytes);
        let (groups, gb) = (&self.groups, &self.group_bytes);
        if let Some(&i) = self.group_table.find(hash, |&i| &gb[at(groups[i as usize].bytes)] == bytes) {
            return i;
        }
        let (group, _) = decode_group(bytes);
        self.add_group(hash, bytes, group, f)
    }

    /// A group (normalised), interned.
    fn intern_group(&mut self, g: &Group, f: &GroupFacts) -> Result<u32, String> {
        let mut enc = std::mem::take(&mut self.enc);
        enc.clear();
        encode_group(g, &mut enc)?;
        let hash = self.hasher.hash_one(&enc[..]);
        let (groups, gb) = (&self.groups, &self.group_bytes);
        let found = self.group_table.find(hash, |&i| gb[at(groups[i as usize].bytes)] == enc[..]).copied();
        let id = match found {
            Some(i) => i,
            None => self.add_group(hash, &enc, g.clone(), f),
        };
        self.enc = enc;
        Ok(id)
    }

    fn add_group(&mut self, hash: u64, bytes: &[u8], group: Group, f: &GroupFacts) -> u32 {
        let id = self.groups.len() as u32;
        let b0 = self.group_bytes.len() as u32;
        self.group_bytes.extend_from_slice(bytes);
        let mut gsig = [0u64; MAX_CLIENTS];
        if f.symmetry {
            for (i, s) in gsig.iter_mut().enumerate().take(f.model.n as usize) {
                *s = group_signature(&group, i as u8);
            }
        }
        let state_viols = (0..f.state_invs.len())
            .filter(|i| state_violated(f.state_invs[*i], &group))
            .map(|i| i as u16)
            .collect();
        self.groups.push(GroupInfo {
            in_bounds: f.model.group_within_bounds(&group),
            quiet: quiescent(&group),
            state_viols,
            gsig,
            keys: SmallVec::new(),
            bytes: (b0, self.group_bytes.len() as u32),
            group,
        });
        let (groups, hasher) = (&self.groups, &self.hasher);
        let gb = &self.group_bytes;
        self.group_table.insert_unique(hash, id, |&i| hasher.hash_one(&gb[at(groups[i as usize].bytes)]));
        id
    }

    fn intern_resp(&mut self, r: &Resp) -> u32 {
        let hash = self.hasher.hash_one(r);
        let resps = &self.resps;
        if let Some(&i) = self.resp_table.find(hash, |&i| resps[i as usize] == *r) {
            return i;
        }
        let id = self.resps.len() as u32;
        self.resps.push(r.clone());
        let (resps, hasher) = (&self.resps, &self.hasher);
        self.resp_table.insert_unique(hash, id, |&i| hasher.hash_one(&resps[i as usize]));
        id
    }

    /// The outcomes of stepping group `gid` with `inp` under `settings` (`variant` names the
    /// settings: 0 normal, 1 the append failing), in `step_all`'s order: from the cache, or
    /// stepped now. An ill-formed step is not kept.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        table: &Table,
        gid: u32,
        inp: &Input,
        settings: &Settings,
        variant: u8,
        checks: &[TransitionCheck],
        f: &GroupFacts,
    ) -> Result<(u32, u32), StepError> {
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.extend_from_slice(&gid.to_le_bytes());
        key.push(variant);
        input_key(inp, &mut key);
        let hash = self.hasher.hash_one(&key[..]);
        let (steps, sk) = (&self.steps, &self.step_keys);
        if let Some(&i) = self.step_table.find(hash, |&i| sk[at(steps[i as usize].key)] == key[..]) {
            self.hits += 1;
            self.key = key;
            return Ok(self.steps[i as usize].outs);
        }
        self.misses += 1;
        let o0 = self.outcomes.len();
        let (r0, q0) = (self.rows.len(), self.outs.len());
        let before = self.groups[gid as usize].group.clone();
        let made = step_each(table, &before, inp, settings, |t: Transition| {
            let verdicts = checks
                .iter()
                .enumerate()
                .fold(0u64, |v, (i, check)| if check(&table.rows, &before, inp, &t) { v | 1 << i } else { v });
            let unchanged = t.after == before;
            let mut after = t.after;
            normalize(&mut after);
            let after = self.intern_group(&after, f)?;
            let rows = (self.rows.len() as u32, (self.rows.len() + t.rows.len()) as u32);
            self.rows.extend_from_slice(&t.rows);
            let reply = match &t.reply {
                Some(r) => self.intern_resp(r),
                None => NO_RESP,
            };
            let q = self.outs.len() as u32;
            for o in &t.outputs {
                if let (Some(r), true) = (&o.resp, o.rid >= 1) {
                    let r = self.intern_resp(r);
                    self.outs.push((o.rid, r));
                }
            }
            self.outcomes.push(StepOut { after, unchanged, rows, reply, outs: (q, self.outs.len() as u32), verdicts });
            Ok(())
        });
        if let Err(e) = made {
            self.outcomes.truncate(o0);
            self.rows.truncate(r0);
            self.outs.truncate(q0);
            self.key = key;
            return Err(e);
        }
        let id = self.steps.len() as u32;
        let k0 = self.step_keys.len() as u32;
        self.step_keys.extend_from_slice(&key);
        let outs = (o0 as u32, self.outcomes.len() as u32);
        self.steps.push(StepEntry { key: (k0, self.step_keys.len() as u32), outs });
        let (steps, sk, hasher) = (&self.steps, &self.step_keys, &self.hasher);
        self.step_table.insert_unique(hash, id, |&i| hasher.hash_one(&sk[at(steps[i as usize].key)]));
        self.key = key;
        Ok(outs)
    }

    pub fn outcome(&self, i: u32) -> StepOut {
        self.outcomes[i as usize]
    }

    /// The canonical key of the world of group `gid` and `clients` into `out` (as
    /// `Canon::key` makes it), the group's part from the cache.
    pub fn canonical_key(&mut self, canon: &mut Canon, gid: u32, clients: &[Client], out: &mut Vec<u8>) {
        let info = &mut self.groups[gid as usize];
        let kb = &mut self.key_bytes;
        let gsig = info.gsig;
        let mut gkey = |rn: &Renamer, out: &mut Vec<u8>| {
            let code = perm_code(rn);
            if let Some(&(_, a, b)) = info.keys.iter().find(|k| k.0 == code) {
                out.extend_from_slice(&kb[a as usize..b as usize]);
                return;
            }
            let a = kb.len() as u32;
            group_key(&info.group, rn, kb);
            let b = kb.len() as u32;
            info.keys.push((code, a, b));
            out.extend_from_slice(&kb[a as usize..b as usize]);
        };
        canon.key_parts(clients, &gsig, &mut gkey, out);
    }
}

/// Whether no request is parked and no rebalance is under way (the liveness pass's targets).
pub fn quiescent(g: &Group) -> bool {
    match g.state {
        State::Empty | State::Missing => true,
        State::Stable => g.members.iter().all(|m| m.aj.is_none() && m.a_sync.is_none()),
        _ => false,
    }
}
