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
use crate::step::{step_each, Fired, Settings, StepError, Table, Transition};
use hashbrown::HashTable;
use smallvec::SmallVec;
use crate::recent::{self, Recent};
use crate::varint::{put_var, put_zz};
use std::hash::BuildHasher;

/// The slots of a cache's `Recent` table of canonical keys, and the room for a key in each.
const RECENT_SLOTS: usize = 4096;
const RECENT_ANSWER: usize = 32;

/// The slots of a cache's `Recent` table of steps by client (`Cache::client_step`), and the
/// room for an answer (where a step's outcomes are: two u32).
const CLIENT_STEP_SLOTS: usize = 16384;
const CLIENT_STEP_ANSWER: usize = 9;

/// About the bytes of a step record of a group's own action (`Cache::group_steps`).
const OWN_RECORD_BYTES: usize = 32;

/// No response (`StepOut::reply`).
pub const NO_RESP: u32 = u32::MAX;

/// The group after an outcome of `Cache::own_loops` (the state's own: it is a loop).
pub const SAME_GROUP: u32 = u32::MAX;

/// What every world of a group shares (the group itself is its packed bytes).
pub struct GroupInfo {
    /// Its packed bytes (`encode_group`): `Cache::group_bytes`.
    bytes: (u32, u32),
    pub in_bounds: bool,
    pub quiet: bool,
    /// The low byte of the hash of its packed bytes (`Store::hash`): what the storing thread
    /// shares a slice out by, carried in the BFS queue with each world of it (so the world's
    /// group is not read and hashed again to share it out).
    pub hash_low: u8,
    /// Bit i: native state invariant i is violated.
    pub state_viols: u64,
    /// The number (`GroupKeys`) of `group_key(group, rn)` for the renamings met so far: (the
    /// renaming's code, the number).
    keys: SmallVec<[(u64, u32); 2]>,
    /// Whether its own actions' steps are made (`Cache::group_steps`: the first records of
    /// `steps`, one an action in order), and bit k: every outcome of the k-th leaves the world as
    /// it is.
    own_made: bool,
    own_same: u64,
    /// Where the records of its own actions end (the others' lookups start there).
    own_end: u32,

    /// The steps of this group met so far, one record each: the key's length (u8) and the
    /// outcomes' (u16, little endian), the key (the settings' variant, then `input_key`), the outcomes
    /// (`put_outcome`). A group has a few dozen, read together: kept here, they are read from
    /// one place in memory instead of a table's random slots.
    steps: Vec<u8>,
}

/// One outcome of a step (one resolution of its choices).
#[derive(Clone)]
pub struct StepOut {
    /// The group after it, normalised (a group of the cache).
    pub after: u32,
    /// Whether the group after it (before normalising) equals the group before.
    pub unchanged: bool,
    /// The rows fired.
    pub rows: Fired,
    /// The response to the request (`Cache::resp`), or NO_RESP.
    pub reply: u32,
    /// The responses to parked requests, (request id, response): `Cache::outs`.
    pub outs: (u32, u32),
    /// Bit i: transition invariant i is violated.
    pub verdicts: u64,
}

/// The caches of one thread's explorer. Aligned to 128 bytes (two cache lines, as the
/// hardware prefetches them), so that two threads' caches, side by side in a vector, share no
/// line: each changes its fields at every step.
#[repr(align(128))]
pub struct Cache {
    hasher: rustc_hash::FxBuildHasher,
    groups: Vec<GroupInfo>,
    group_table: HashTable<u32>,
    group_bytes: Vec<u8>,
    /// With symmetry, `group_signature(group, i)` of each group for each client i, group after
    /// group in their order (a group's at its number times the clients').
    sigs: Vec<u32>,
    /// Bytes of the groups' step records (`GroupInfo::steps`), capacity counted.
    step_bytes: usize,
    /// The outcomes of the step being made.
    made: Vec<StepOut>,
    outs: Vec<(u16, u32)>,
    resps: Vec<Resp>,
    resp_table: HashTable<u32>,
    /// Bytes held beyond which the cache is emptied (between states).
    limit: usize,
    key: Vec<u8>,
    enc: Vec<u8>,
    /// A step record's outcomes while it is made (`step`).
    rec_tmp: Vec<u8>,
    /// The canonical keys of worlds met lately, by the world (its group's number here and its
    /// clients packed).
    recent_keys: Recent<RECENT_ANSWER>,
    /// Where the outcomes of a client's action are in its group's record, by (the group, the
    /// client, which of its actions, the settings' variant, the client packed: `client_step_key`)
    /// lately met: its input, a function of these, is then neither made nor looked up.
    client_steps: Recent<CLIENT_STEP_ANSWER, 2>,
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

/// An injective encoding of an input (its fields, each in full; numbers as varints, most are
/// small: a step record holds one), appended to `out`.
fn input_key(x: &InputView, out: &mut Vec<u8>) {
    out.push(x.kind as u8);
    put_var(out, x.request_id as u64);
    match x.member {
        None => out.push(0),
        Some(m) => out.extend_from_slice(&[1, m]),
    }
    out.push(x.instance);
    let Some(r) = x.req else {
        out.push(0);
        return;
    };
    match r {
        Req::Join(j) => {
            out.extend_from_slice(&[1, j.member, j.ptype, j.protocols, j.instance, j.client]);
            out.push(j.require_known as u8 | (j.skip as u8) << 1);
            put_zz(out, i64::from(j.session_timeout));
            put_zz(out, i64::from(j.rebalance_timeout));
        }
        Req::Sync { member, generation, instance, ptype, pname, assignments } => {
            out.extend_from_slice(&[2, *member, *instance, *ptype, *pname, assignments.len() as u8]);
            out.extend_from_slice(assignments);
            put_zz(out, i64::from(*generation));
        }
        Req::Heartbeat { member, generation, instance } => {
            out.extend_from_slice(&[3, *member, *instance]);
            put_zz(out, i64::from(*generation));
        }
        Req::Leave { members } => {
            out.extend_from_slice(&[4, members.len() as u8]);
            for (m, i) in members {
                out.extend_from_slice(&[*m, *i]);
            }
        }
        Req::Commit { member, generation, instance } => {
            out.extend_from_slice(&[5, *member, *instance]);
            put_zz(out, i64::from(*generation));
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
            sigs: Vec::new(),
            step_bytes: 0,
            made: Vec::new(),
            outs: Vec::new(),
            resps: Vec::new(),
            resp_table: HashTable::new(),
            limit,
            key: Vec::new(),
            enc: Vec::new(),
            rec_tmp: Vec::new(),
            recent_keys: Recent::new(RECENT_SLOTS),
            client_steps: Recent::new(CLIENT_STEP_SLOTS),
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
            + self.sigs.capacity() * 4
            + self.step_bytes
            + self.made.capacity() * size_of::<StepOut>()
            + self.outs.capacity() * size_of::<(u16, u32)>()
            + self.resps.capacity() * size_of::<Resp>()
            + self.resp_table.capacity() * 8
            + self.recent_keys.bytes()
            + self.client_steps.bytes()
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
        self.sigs.clear();
        self.step_bytes = 0;
        self.outs.clear();
        self.resps.clear();
        self.resp_table.clear();
        // they name groups by number
        self.recent_keys.clear();
        self.client_steps.clear();
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

    /// The responses to parked requests of an outcome (`Out::outs`).
    pub fn outs(&self, outs: (u32, u32)) -> &[(u16, u32)] {
        &self.outs[at(outs)]
    }

    /// The group packed as `bytes` (`encode_group`), interned.
    pub fn intern_bytes(&mut self, bytes: &[u8], f: &GroupFacts) -> u32 {
        let hash = self.hasher.hash_one(bytes);
        let (groups, gb) = (&self.groups, &self.group_bytes);
        if let Some(&i) = self.group_table.find(hash, |&i| &gb[at(groups[i as usize].bytes)] == bytes) {
            return i;
        }
        let (group, _) = decode_group(bytes);
        self.add_group(hash, bytes, &group, f)
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
            None => self.add_group(hash, &enc, g, f),
        };
        self.enc = enc;
        Ok(id)
    }

    fn add_group(&mut self, hash: u64, bytes: &[u8], group: &Group, f: &GroupFacts) -> u32 {
        let id = self.groups.len() as u32;
        let b0 = self.group_bytes.len() as u32;
        // grow by a quarter, not double (as the step records)
        grow(&mut self.groups, 1);
        grow(&mut self.group_bytes, bytes.len());
        grow(&mut self.sigs, MAX_CLIENTS);
        self.group_bytes.extend_from_slice(bytes);
        if f.symmetry {
            self.sigs.extend((0..f.model.n).map(|i| group_signature(group, i) as u32));
        }
        let state_viols = (0..f.state_invs.len())
            .filter(|i| state_violated(f.state_invs[*i], group))
            .fold(0u64, |v, i| v | 1 << i);
        self.groups.push(GroupInfo {
            in_bounds: f.model.group_within_bounds(group),
            quiet: quiescent(group),
            hash_low: hash as u8,
            state_viols,
            keys: SmallVec::new(),
            own_made: false,
            own_same: 0,
            own_end: 0,
            steps: Vec::new(),
            bytes: (b0, self.group_bytes.len() as u32),
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

    /// Group `gid`'s step records (`step`, `own_outcomes`).
    pub fn record(&self, gid: u32) -> &[u8] {
        &self.groups[gid as usize].steps
    }

    /// Where the outcomes of the step `key` (`client_step_key`) are in its group's record, when
    /// it was met lately (a hit of the step cache), or the slot to keep them in once known
    /// (`put_client_step`).
    pub fn client_step(&mut self, key: &[u64; 2]) -> Result<(u32, u32), usize> {
        let found = self.client_steps.find(key).map(|a| {
            let (x, y) = a.split_at(4);
            (u32::from_le_bytes(x.try_into().expect("four bytes")), u32::from_le_bytes(y.try_into().expect("four bytes")))
        });
        self.hits += found.is_ok() as u64;
        found
    }

    /// Keeps where the outcomes of the step `key` are (`r`), in the slot `client_step` named.
    pub fn put_client_step(&mut self, slot: usize, key: &[u64; 2], r: (u32, u32)) {
        let mut a = [0u8; 8];
        a[..4].copy_from_slice(&r.0.to_le_bytes());
        a[4..].copy_from_slice(&r.1.to_le_bytes());
        self.client_steps.put(slot, key, &a);
    }

    /// Where the outcomes of group `gid`'s step with `inp` under the settings `variant` names
    /// are in its record, if it was stepped so before (a hit); `self.key` holds the step's key
    /// afterwards either way.
    pub fn find(&mut self, gid: u32, variant: u8, inp: &InputView) -> Option<(u32, u32)> {
        let key = &mut self.key;
        key.clear();
        key.push(variant);
        input_key(inp, key);
        let info = &self.groups[gid as usize];
        let found = find_step(&info.steps, info.own_end as usize, key);
        self.hits += found.is_some() as u64;
        found
    }

    /// The outcomes of stepping group `gid` (`before`) with `inp` under `settings` (`variant`
    /// names the settings: 0 normal, 1 the append failing), in `step_all`'s order: from the
    /// cache, or stepped now; where they are in the group's record (`record`, `outcomes_in`).
    /// An ill-formed step is not kept.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        table: &Table,
        gid: u32,
        before: &Group,
        inp: &Input,
        settings: &Settings,
        variant: u8,
        checks: &[TransitionCheck],
        f: &GroupFacts,
    ) -> Result<(u32, u32), StepError> {
        if let Some(at) = self.find(gid, variant, &inp.view()) {
            return Ok(at);
        }
        self.step_new(table, gid, before, inp, settings, checks, f)
    }

    /// `step` after `find` missed it (its key in `self.key`): stepped now and kept.
    #[allow(clippy::too_many_arguments)]
    pub fn step_new(
        &mut self,
        table: &Table,
        gid: u32,
        before: &Group,
        inp: &Input,
        settings: &Settings,
        checks: &[TransitionCheck],
        f: &GroupFacts,
    ) -> Result<(u32, u32), StepError> {
        let key = std::mem::take(&mut self.key);
        self.misses += 1;
        self.made.clear();
        let q0 = self.outs.len();
        let made = step_each(table, before, inp, settings, |t: Transition| {
            let verdicts = checks
                .iter()
                .enumerate()
                .fold(0u64, |v, (i, check)| if check(&table.rows, before, inp, &t) { v | 1 << i } else { v });
            let unchanged = t.after == *before;
            // a group of the cache is normalised: unchanged, it is itself
            let after = if unchanged {
                gid
            } else {
                let mut after = t.after;
                normalize(&mut after);
                self.intern_group(&after, f)?
            };
            let rows = t.rows.clone();
            let reply = match &t.reply {
                Some(r) => self.intern_resp(r),
                None => NO_RESP,
            };
            let q = self.outs.len() as u32;
            for o in &t.outputs {
                if let (Some(r), true) = (&o.resp, o.rid >= 1) {
                    let r = self.intern_resp(r);
                    // grown by a quarter, as the step records
                    grow(&mut self.outs, 1);
                    self.outs.push((o.rid, r));
                }
            }
            self.made.push(StepOut { after, unchanged, rows, reply, outs: (q, self.outs.len() as u32), verdicts });
            Ok(())
        });
        if let Err(e) = made {
            self.outs.truncate(q0);
            self.key = key;
            return Err(e);
        }
        let beyond = |_| StepError::Internal("a step beyond the step cache's records".into());
        // the outcomes first, so that the record is made room for once, whole
        let mut outs = std::mem::take(&mut self.rec_tmp);
        outs.clear();
        for o in &self.made {
            put_outcome(&mut outs, o).map_err(beyond)?;
        }
        let (klen, olen) = (u8::try_from(key.len()).map_err(beyond)?, u16::try_from(outs.len()).map_err(beyond)?);
        let rec = &mut self.groups[gid as usize].steps;
        let cap = rec.capacity();
        // grow by a quarter, not double: a cache of many groups holds many of these
        grow(rec, 3 + key.len() + outs.len());
        rec.push(klen);
        rec.extend_from_slice(&olen.to_le_bytes());
        rec.extend_from_slice(&key);
        let o0 = rec.len();
        rec.extend_from_slice(&outs);
        self.step_bytes += rec.capacity() - cap;
        self.rec_tmp = outs;
        self.key = key;
        self.made.clear();
        Ok((o0 as u32, rec.len() as u32))
    }

    /// The group's own actions (`Model::group_actions_into`: admin requests, timers, `acts`)
    /// stepped, in order, as the first records of the group (call before any other step of
    /// it): bit k of the answer says every outcome of the k-th leaves the world as it is (the
    /// group unchanged, no response to a parked request; the action's own response goes to no
    /// client). Made once a group, then read (`own_outcomes`): their inputs are functions of the
    /// group alone.
    pub fn group_steps(
        &mut self,
        model: &Model,
        gid: u32,
        before: &Group,
        acts: &[Action],
        checks: &[TransitionCheck],
        f: &GroupFacts,
    ) -> Result<u64, StepError> {
        let info = &self.groups[gid as usize];
        if info.own_made {
            return Ok(info.own_same);
        }
        let mut same = 0u64;
        // room for the records of all of them at once (one allocation, not one every record or
        // two; OWN_RECORD_BYTES is about what one takes)
        let rec = &mut self.groups[gid as usize].steps;
        let cap = rec.capacity();
        rec.reserve_exact(acts.len() * OWN_RECORD_BYTES);
        self.step_bytes += rec.capacity() - cap;
        for (k, a) in acts.iter().enumerate() {
            // its record goes where the one before it ended (two own actions with one input
            // would share a record, and the records read back would be out of step)
            let here = self.groups[gid as usize].steps.len();
            let found = model
                .group_input(a)
                .and_then(|inp| self.step(&model.table, gid, before, &inp, &model.settings, 0, checks, f))
                .and_then(|at| {
                    if (at.0 as usize) < here {
                        Err(StepError::Internal("two of a group's own actions with one input".into()))
                    } else {
                        Ok(at)
                    }
                });
            let at = match found {
                Ok(at) => at,
                Err(e) => {
                    // an ill-formed step: none of this group's own kept, so they stay first
                    self.groups[gid as usize].steps.clear();
                    return Err(e);
                }
            };
            let rec = &self.groups[gid as usize].steps[at.0 as usize..at.1 as usize];
            if k < 64 && outcomes_in(rec).all(|o| o.unchanged && o.outs.0 == o.outs.1) {
                same |= 1 << k;
            }
        }
        let info = &mut self.groups[gid as usize];
        // the leading loops' records are read no more: their summary takes their place
        let c0 = info.steps.capacity();
        let mut steps = std::mem::take(&mut info.steps);
        let (mut loops, rest) = loops_summary(&steps, acts.len().min(64), same)
            .map_err(|_| StepError::Internal("a group's own loops beyond their summary".into()))?;
        loops.extend_from_slice(&steps[rest..]);
        steps.clear();
        steps.extend_from_slice(&loops);
        self.step_bytes += steps.capacity() - c0;
        (info.own_made, info.own_same, info.own_end, info.steps) = (true, same, steps.len() as u32, steps);
        Ok(same)
    }

    /// Whether group `gid`'s own actions are stepped (`group_steps`).
    pub fn own_made(&self, gid: u32) -> bool {
        self.groups[gid as usize].own_made
    }

    /// The leading run of group `gid`'s own actions (`group_steps`) each of whose outcomes
    /// leaves the world as it is and violates nothing: (how many actions, how many outcomes,
    /// where the next action's record starts for `own_outcomes`, the rows their outcomes fire,
    /// in order, as an outcome's rows: `Out::rows_of` of the record). A state's successors
    /// by them are that many loops, made at once.
    pub fn own_loops(&self, gid: u32) -> (usize, u32, usize, Out) {
        let rec = &self.groups[gid as usize].steps;
        let h: [u8; 7] = rec[..7].try_into().expect("seven bytes");
        let next = u32::from_le_bytes([h[3], h[4], h[5], h[6]]);
        let out = Out { after: SAME_GROUP, unchanged: true, rows: (7, next), reply: NO_RESP, outs: (0, 0), verdicts: 0 };
        (h[0] as usize, u16::from_le_bytes([h[1], h[2]]) as u32, next as usize, out)
    }

    /// Where the outcomes of the next of group `gid`'s own steps (`group_steps`) are in its
    /// record: `pos` is where its record is (0 for the first), moved past it.
    pub fn own_outcomes(&self, gid: u32, pos: &mut usize) -> Result<(u32, u32), StepError> {
        let rec = &self.groups[gid as usize].steps;
        if *pos + 3 > rec.len() {
            return Err(StepError::Internal("a group's own action beyond its records".into()));
        }
        let klen = rec[*pos] as usize;
        let olen = u16::from_le_bytes([rec[*pos + 1], rec[*pos + 2]]) as usize;
        let o0 = *pos + 3 + klen;
        *pos = o0 + olen;
        Ok((o0 as u32, *pos as u32))
    }

    /// The canonical key of the world of group `gid` and `clients` into `out`: `Canon`'s, with
    /// the group's part (`group_key`) replaced by its number in `keys` (a varint).
    pub fn canonical_key(&mut self, canon: &mut Canon, gid: u32, clients: &[Client], keys: &GroupKeys, out: &mut Vec<u8>) {
        // a world met lately (a successor of one state is often another's, or the same state's
        // by another action) has its key remembered
        let world = world_words(gid, clients);
        let slot = match world.as_ref().map(|w| self.recent_keys.find(w)) {
            Some(Ok(k)) => {
                out.clear();
                out.extend_from_slice(k);
                return;
            }
            Some(Err(slot)) => Some(slot),
            None => None,
        };
        self.canonical_key_made(canon, gid, clients, keys, out);
        if let (Some(slot), Some(w)) = (slot, world) {
            self.recent_keys.put(slot, &w, out);
        }
    }

    fn canonical_key_made(&mut self, canon: &mut Canon, gid: u32, clients: &[Client], keys: &GroupKeys, out: &mut Vec<u8>) {
        let info = &mut self.groups[gid as usize];
        let tmp = &mut self.enc;
        let mut gsig = [0u64; MAX_CLIENTS];
        if !self.sigs.is_empty() {
            // each group's, one a client, in the order of the groups
            let first = gid as usize * clients.len();
            for (g, s) in gsig.iter_mut().zip(&self.sigs[first..first + clients.len()]) {
                *g = *s as u64;
            }
        }
        let packed = &self.group_bytes[at(info.bytes)];
        let mut group: Option<Group> = None;
        let mut gkey = |rn: &Renamer, out: &mut Vec<u8>| {
            let code = perm_code(rn);
            let id = match info.keys.iter().find(|k| k.0 == code) {
                Some(&(_, id)) => id,
                None => {
                    tmp.clear();
                    let g = group.get_or_insert_with(|| decode_group(packed).0);
                    group_key(g, rn, tmp);
                    let id = keys.number(tmp);
                    info.keys.push((code, id));
                    id
                }
            };
            put_var(out, id as u64);
        };
        canon.key_parts(clients, &gsig, &mut gkey, out);
    }
}

/// The world of group `gid` and `clients` as a `Recent` key, exactly: the group's number and
/// the clients' count, then a word a client (`client_word`); None for a world that does not fit.
fn world_words(gid: u32, clients: &[Client]) -> Option<recent::Key> {
    let mut w = [0u64; recent::KEY_WORDS];
    *w.get_mut(clients.len())? = 1 << 63 | (clients.len() as u64) << 32 | gid as u64;
    for (x, c) in w.iter_mut().zip(clients) {
        *x = client_word(c)?;
    }
    Some(w)
}

/// A client packed exactly into a word (its fields and up to four roster ids); None for one
/// that does not fit.
pub fn client_word(c: &Client) -> Option<u64> {
    let r = &c.roster;
    if r.len() > 4 || !(-1..=254).contains(&c.generation) {
        return None;
    }
    let ids = r.iter().fold(0u64, |a, m| a << 8 | *m as u64);
    Some(
        c.phase as u64
            | (c.leader as u64) << 3
            | (r.len() as u64) << 4
            | (c.member as u64) << 7
            | ((c.generation + 1) as u64) << 15
            | (c.epoch as u64) << 23
            | ids << 31,
    )
}

/// The key of a client's action in `Cache::client_step`: the group's number, the client, which
/// of its actions (`Model::client_actions_into` makes a client's actions from the group and the
/// client alone, so these name its input), the settings' variant, and the client packed.
pub fn client_step_key(gid: u32, client: u8, which: u8, variant: u8, word: u64) -> [u64; 2] {
    [1 << 63 | (variant as u64) << 48 | (which as u64) << 40 | (client as u64) << 32 | gid as u64, word]
}

/// The group keys (`group_key` of a group under a renaming) of a whole run, numbered in the
/// order met and shared by its threads, so that a state's key names its group's part by number.
/// Never emptied: a number stands for its group key as long as the states stored with it. The
/// threads' caches remember the numbers they asked for, so the lock is taken about once per
/// (group, renaming) and thread.
pub struct GroupKeys {
    inner: std::sync::Mutex<KeysInner>,
}

#[derive(Default)]
struct KeysInner {
    table: HashTable<u32>,
    bytes: Vec<u8>,
    /// Key i is bytes[off[i]..off[i + 1]].
    off: Vec<u32>,
}

impl Default for GroupKeys {
    fn default() -> Self {
        GroupKeys { inner: std::sync::Mutex::new(KeysInner { off: vec![0], ..KeysInner::default() }) }
    }
}

impl GroupKeys {
    /// The number of group key `key` (a new one if it is new).
    pub fn number(&self, key: &[u8]) -> u32 {
        let hasher = rustc_hash::FxBuildHasher;
        let hash = hasher.hash_one(key);
        // a thread that panicked while holding the lock left it consistent (each insertion is
        // complete before the next); take it over
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let k = &mut *guard;
        let get = |off: &[u32], i: u32| off[i as usize] as usize..off[i as usize + 1] as usize;
        if let Some(&i) = k.table.find(hash, |&i| k.bytes[get(&k.off, i)] == *key) {
            return i;
        }
        let id = (k.off.len() - 1) as u32;
        k.bytes.extend_from_slice(key);
        k.off.push(k.bytes.len() as u32);
        let (bytes, off) = (&k.bytes, &k.off);
        k.table.insert_unique(hash, id, |&i| hasher.hash_one(&bytes[get(off, i)]));
        id
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        let k = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        k.bytes.capacity() + 4 * k.off.capacity() + 5 * k.table.capacity()
    }
}

/// Appends an outcome to a step record: the group after (u32), flags (unchanged, verdicts,
/// responses to parked requests, a reply), the rows' count and the rows (u16 each), then what the
/// flags say follows: the reply (u16), the responses' start (u32) and count (u8), the verdicts
/// (u64).
fn put_outcome(rec: &mut Vec<u8>, o: &StepOut) -> Result<(), std::num::TryFromIntError> {
    let (reply, outs, verdicts) = (o.reply != NO_RESP, o.outs.1 > o.outs.0, o.verdicts != 0);
    rec.extend_from_slice(&o.after.to_le_bytes());
    rec.push(o.unchanged as u8 | (verdicts as u8) << 1 | (outs as u8) << 2 | (reply as u8) << 3);
    rec.push(u8::try_from(o.rows.len())?);
    for r in &o.rows {
        rec.extend_from_slice(&r.to_le_bytes());
    }
    if reply {
        rec.extend_from_slice(&u16::try_from(o.reply)?.to_le_bytes());
    }
    if outs {
        rec.extend_from_slice(&o.outs.0.to_le_bytes());
        rec.push(u8::try_from(o.outs.1 - o.outs.0)?);
    }
    if verdicts {
        rec.extend_from_slice(&o.verdicts.to_le_bytes());
    }
    Ok(())
}

/// The summary of a group's own actions' leading loops (`Cache::own_loops`), to take the place
/// of their records in `rec`, which starts with the records of its `n` own actions (bit k of
/// `same`: the k-th's outcomes are loops): the run's actions (u8), outcomes (u16) and where
/// the next action's record will start (u32: the summary's length), then the rows of its
/// outcomes (u16 each), all little endian; and where that record starts in `rec`. A loop that
/// violates a transition invariant ends the run (its position is reported).
fn loops_summary(rec: &[u8], n: usize, same: u64) -> Result<(Vec<u8>, usize), std::num::TryFromIntError> {
    let (mut pos, mut k, mut count) = (0usize, 0usize, 0u32);
    let mut rows: Vec<u8> = Vec::new();
    while k < n && same & (1 << k) != 0 {
        let klen = rec[pos] as usize;
        let olen = u16::from_le_bytes([rec[pos + 1], rec[pos + 2]]) as usize;
        let o0 = pos + 3 + klen;
        let outs = &rec[o0..o0 + olen];
        if outcomes_in(outs).any(|o| o.verdicts != 0) {
            break;
        }
        for o in outcomes_in(outs) {
            count += 1;
            rows.extend_from_slice(&outs[at(o.rows)]);
        }
        pos = o0 + olen;
        k += 1;
    }
    let mut sum = Vec::with_capacity(7 + rows.len() + rec.len() - pos);
    sum.push(u8::try_from(k)?);
    sum.extend_from_slice(&u16::try_from(count)?.to_le_bytes());
    sum.extend_from_slice(&u32::try_from(7 + rows.len())?.to_le_bytes());
    sum.extend_from_slice(&rows);
    Ok((sum, pos))
}

/// Makes room for `more` items in `v`, growing it by a quarter (not doubling, as `Vec` does):
/// the cache's buffers are its memory.
fn grow<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() < more {
        v.reserve_exact(more.max(v.len() / 4));
    }
}

/// One outcome of a step as its record holds it (`outcomes_in`): `StepOut` with its rows left
/// in the record (`rows`: where, two bytes each, `Out::rows_of`).
#[derive(Clone, Copy)]
pub struct Out {
    pub after: u32,
    pub unchanged: bool,
    rows: (u32, u32),
    pub reply: u32,
    pub outs: (u32, u32),
    pub verdicts: u64,
}

impl Out {
    /// Its rows, from the bytes it was read from.
    pub fn rows_of<'a>(&self, rec: &'a [u8]) -> impl Iterator<Item = u16> + 'a {
        rec[at(self.rows)].chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }
}

/// The outcomes `put_outcome` wrote one after the other in `rec`, in order.
pub fn outcomes_in(rec: &[u8]) -> impl Iterator<Item = Out> + '_ {
    let mut j = 0;
    std::iter::from_fn(move || (j < rec.len()).then(|| read_outcome(rec, &mut j)))
}

/// The outcome `put_outcome` wrote at `rec[*j..]`; `*j` moved past it. Read through slices
/// of the lengths the flags say (one bounds check a part, not one a byte: a successor reads one).
fn read_outcome(rec: &[u8], j: &mut usize) -> Out {
    let head: [u8; 6] = rec[*j..*j + 6].try_into().expect("six bytes");
    let after = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let (flags, n) = (head[4], head[5] as usize);
    let mut i = *j + 6;
    let rows = (i as u32, (i + 2 * n) as u32);
    i += 2 * n;
    let mut reply = NO_RESP;
    if flags & 8 != 0 {
        let r: [u8; 2] = rec[i..i + 2].try_into().expect("two bytes");
        reply = u16::from_le_bytes(r) as u32;
        i += 2;
    }
    let mut outs = (0, 0);
    if flags & 4 != 0 {
        let o: [u8; 5] = rec[i..i + 5].try_into().expect("five bytes");
        let a = u32::from_le_bytes([o[0], o[1], o[2], o[3]]);
        outs = (a, a + o[4] as u32);
        i += 5;
    }
    let mut verdicts = 0;
    if flags & 2 != 0 {
        let v: [u8; 8] = rec[i..i + 8].try_into().expect("eight bytes");
        verdicts = u64::from_le_bytes(v);
        i += 8;
    }
    *j = i;
    Out { after, unchanged: flags & 1 != 0, rows, reply, outs, verdicts }
}

/// The outcomes of the step keyed `key` in a group's step records from `i` on, if there.
fn find_step(rec: &[u8], mut i: usize, key: &[u8]) -> Option<(u32, u32)> {
    while i < rec.len() {
        let klen = rec[i] as usize;
        let olen = u16::from_le_bytes([rec[i + 1], rec[i + 2]]) as usize;
        let next = i + 3 + klen + olen;
        if same_key(&rec[i + 3..i + 3 + klen], key) {
            return Some(((i + 3 + klen) as u32, next as u32));
        }
        i = next;
    }
    None
}

/// Whether two step keys are equal: most keys of a group's records differ in their first eight
/// bytes, compared as one word before the rest.
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && match (a.split_first_chunk::<8>(), b.split_first_chunk::<8>()) {
            (Some((x, xs)), Some((y, ys))) => x == y && xs == ys,
            _ => a == b,
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
