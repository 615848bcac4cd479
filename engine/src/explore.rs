//! check/explore.py natively: breadth-first exploration with canonical keys, invariants on every
//! state and transition, row coverage, and the liveness property `quiescence-reachable` on the
//! explored graph. States are stored packed: a hash table of state indices over an arena of
//! canonical keys, BFS parent links and successor positions; full world encodings only while a
//! state waits in the BFS queue. With `Options::threads` > 1, slices of the queue are expanded in
//! parallel (`expand_slice`: successors, invariants, canonical keys, encodings) and stored in the
//! order one thread stores them (`Search::absorb`), so no result depends on the thread count.
//! Each thread makes successors through its cache (`expand_cached`, explore_cache.rs): a world's
//! group is looked up once, each step once per (group, input, settings).

use crate::abstract_model::*;
use crate::invariants::*;
use crate::model::*;
use crate::explore_cache::{quiescent, Cache, GroupFacts, GroupKeys, StepOut, NO_RESP};
use crate::step::{Callbacks, StepError};
use hashbrown::HashTable;
use smallvec::SmallVec;
use rustc_hash::FxHashMap;
use std::hash::BuildHasher;

pub const LIVENESS: &str = "quiescence-reachable";
pub const WELL_FORMED: &str = "table-well-formed";
pub const PARKED_ANSWERED: &str = "parked-requests-answered";

pub struct Options {
    pub symmetry: bool,
    /// Invariants to check, in model/invariants.py's order.
    pub invariants: Vec<(bool, Inv)>,
    /// Invariants only Python has (is a transition invariant, name), asked through the table's
    /// callbacks (their index here is the callback's `inv`).
    pub py_invariants: Vec<(bool, String)>,
    pub liveness: bool,
    pub max_states: Option<usize>,
    pub first_violation_only: bool,
    pub stop_at_first_violation: bool,
    /// Which path properties the liveness pass reports (it runs when `liveness`).
    pub report_liveness: bool,
    pub report_parked: bool,
    /// Properties not checked at all (a plan's earlier runs found them).
    pub skip: Vec<String>,
    /// Fast first counterexample: stop once each of these has a counterexample (a safety
    /// violation settles LIVENESS, which is only checked on runs without one). None: explore all.
    pub settle: Option<Vec<String>>,
    /// Make successors through a cache per thread (`explore_cache::Cache`: the groups met,
    /// interned, and the table's steps by (group, input, settings) with their
    /// transition-invariant verdicts; never for a table that calls back into Python or Python
    /// transition invariants). Off: every successor steps the table afresh. The results are the
    /// same; on the classic table the cache makes a thread 1.7x as fast, for up to CACHE_BYTES
    /// of memory a thread (benchmarks/explore_results.md, session 14).
    pub memo: bool,
    /// The bytes a worker's cache may hold before it is emptied (CACHE_BYTES by default).
    pub cache_bytes: usize,
    /// Threads that make successors (1: all on the calling thread). The states are stored, and
    /// numbered, in the order one thread makes them, so every result is the same for any
    /// number. A table that calls back into Python, Python invariants and the memo run on the
    /// calling thread alone.
    pub threads: usize,
}

/// The bytes a worker's cache (`explore_cache::Cache`) may hold before it is emptied.
pub const CACHE_BYTES: usize = 64 << 20;

#[derive(Clone, Debug)]
pub struct Found {
    pub name: String,
    pub node: u32,
    /// The successor position of a transition violation (from `node`).
    pub extra: Option<u32>,
    /// The number of stuck states (quiescence-reachable) or of (state, parked request) pairs
    /// never answered (parked-requests-answered).
    pub stuck: Option<u64>,
    /// parked-requests-answered: the request id never answered from `node`.
    pub request: Option<u16>,
}

pub struct Progress {
    pub states: usize,
    pub edges: u64,
    pub depth: u16,
    pub queue: usize,
    pub bytes: usize,
}

pub struct Outcome {
    pub states: usize,
    pub edges: u64,
    pub depth: u16,
    pub frontier: u64,
    pub rows_fired: Vec<u64>,
    pub violations: Vec<Found>,
    pub interrupted: bool,
    pub store_bytes: usize,
    pub parent: Vec<u32>,
    pub ord: Vec<u16>,
    /// Why the run stopped before exploring everything within the bounds ("" = it did not).
    pub cut_short: String,
    pub liveness_checked: bool,
    /// The step memo's lookups answered from it and made afresh.
    pub memo_hits: u64,
    pub memo_misses: u64,
    /// Times a worker's cache was emptied (past `Options::cache_bytes`).
    pub memo_clears: u64,
    /// The threads that made successors (`Options::threads`, or 1 when the run must be sequential).
    pub threads: usize,
}

/// The visited states: a hash table of state indices over an arena of canonical keys (state i's
/// key is keys[key_off[i]..key_off[i + 1]]). Full worlds are kept only while a state waits in
/// the BFS queue (`Queue`).
struct Store {
    keys: Vec<u8>,
    key_off: Vec<u32>,
    table: HashTable<u32>,
    hasher: rustc_hash::FxBuildHasher,
}

impl Store {
    fn new() -> Store {
        Store { keys: Vec::new(), key_off: vec![0], table: HashTable::new(), hasher: rustc_hash::FxBuildHasher }
    }
    fn len(&self) -> usize {
        self.key_off.len() - 1
    }
    fn hash(key: &[u8]) -> u64 {
        rustc_hash::FxBuildHasher.hash_one(key)
    }
    /// The state with this key (`hash` its hash), if stored.
    fn find(&self, hash: u64, key: &[u8]) -> Option<u32> {
        let (keys, key_off) = (&self.keys, &self.key_off);
        let get = |i: u32| &keys[key_off[i as usize] as usize..key_off[i as usize + 1] as usize];
        self.table.find(hash, |&i| get(i) == key).copied()
    }
    /// The state with this key (`hash` its hash), or a new one: (index, is new).
    fn intern(&mut self, hash: u64, key: &[u8]) -> Result<(u32, bool), String> {
        if let Some(i) = self.find(hash, key) {
            return Ok((i, false));
        }
        let id = self.len() as u32;
        if self.keys.len() + key.len() > u32::MAX as usize {
            return Err("the packed state store exceeds 4 GiB".into());
        }
        self.keys.extend_from_slice(key);
        self.key_off.push(self.keys.len() as u32);
        let (keys, key_off, hasher) = (&self.keys, &self.key_off, &self.hasher);
        self.table.insert_unique(hash, id, |&i| {
            hasher.hash_one(&keys[key_off[i as usize] as usize..key_off[i as usize + 1] as usize])
        });
        Ok((id, true))
    }
    /// Bytes in use (a vector's capacity beyond its length is never touched, so never resident).
    fn bytes(&self) -> usize {
        self.keys.len() + 4 * self.key_off.len() + self.table.capacity() * 5
    }
}

/// The packed worlds of the states waiting in the BFS queue, oldest first.
struct Queue {
    bytes: Vec<u8>,
    /// Start of each queued world in `bytes` (the next one's start, or the end, closes it).
    starts: std::collections::VecDeque<u32>,
    /// The most bytes the queue held.
    peak: usize,
}

impl Queue {
    fn new() -> Queue {
        Queue { bytes: Vec::new(), starts: std::collections::VecDeque::new(), peak: 0 }
    }
    fn push(&mut self, world: &[u8]) -> Result<(), String> {
        if self.bytes.len() + world.len() > u32::MAX as usize {
            return Err("the BFS queue exceeds 4 GiB".into());
        }
        self.starts.push_back(self.bytes.len() as u32);
        self.bytes.extend_from_slice(world);
        self.peak = self.peak.max(self.bytes.len() + 4 * self.starts.len());
        Ok(())
    }
    /// The oldest world, appended to `out`.
    fn pop(&mut self, out: &mut Vec<u8>) {
        let a = self.starts.pop_front().unwrap_or(0) as usize;
        let b = self.starts.front().map(|x| *x as usize).unwrap_or(self.bytes.len());
        out.extend_from_slice(&self.bytes[a..b]);
        // drop the consumed prefix once it is most of the buffer
        if b > (1 << 16) && b > self.bytes.len() / 2 {
            self.bytes.drain(..b);
            for s in self.starts.iter_mut() {
                *s -= b as u32;
            }
        }
    }
    /// The most bytes in use at once.
    fn bytes(&self) -> usize {
        self.peak
    }
}

/// The violations found, each property once when `first_only`, none of those in `skip`.
struct Report<'a> {
    found: Vec<Found>,
    seen: Vec<String>,
    skip: &'a [String],
    first_only: bool,
}

impl Report<'_> {
    fn add(&mut self, name: &str, node: u32, extra: Option<u32>) {
        if self.skip.iter().any(|s| s == name) || (self.first_only && self.seen.iter().any(|s| s == name)) {
            return;
        }
        self.seen.push(name.to_string());
        self.found.push(Found { name: name.to_string(), node, extra, stuck: None, request: None });
    }
}

/// One bit per state.
#[derive(Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn set(&mut self, i: usize) {
        if i / 64 >= self.0.len() {
            self.0.resize(i / 64 + 1, 0);
        }
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn bytes(&self) -> usize {
        8 * self.0.len()
    }
}

fn put_var(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_var(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let x = b[*i];
        *i += 1;
        v |= ((x & 0x7F) as u64) << shift;
        if x < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// The non-fault edges of every processed state, in state order, for the liveness pass: per
/// state a varint count, then its targets ascending (the first as a zigzag delta from the state,
/// the others as gaps).
struct Edges {
    stream: Vec<u8>,
    count: usize,
}

impl Edges {
    fn push(&mut self, node: u32, targets: &[u32]) {
        put_var(&mut self.stream, targets.len() as u64);
        let mut prev = node as i64;
        for (k, t) in targets.iter().enumerate() {
            let d = *t as i64 - prev;
            put_var(&mut self.stream, if k == 0 { ((d << 1) ^ (d >> 63)) as u64 } else { (d - 1) as u64 });
            prev = *t as i64;
        }
        self.count += targets.len();
    }
    /// Calls `f(source, target)` for every edge, in the order pushed.
    fn each(&self, mut f: impl FnMut(u32, u32)) {
        let (b, mut i, mut node) = (&self.stream, 0usize, 0u32);
        while i < b.len() {
            let n = get_var(b, &mut i);
            let mut prev = node as i64;
            for k in 0..n {
                let v = get_var(b, &mut i) as i64;
                let t = if k == 0 { prev + ((v >> 1) ^ -(v & 1)) } else { prev + v + 1 };
                f(node, t as u32);
                prev = t;
            }
            node += 1;
        }
    }
}

/// The BFS depth of each state, as the first state of each depth (states are numbered in BFS
/// order, so depth never decreases with the index).
struct Levels(Vec<u32>);

impl Levels {
    fn depth(&self, i: u32) -> u16 {
        (self.0.partition_point(|s| *s <= i) - 1) as u16
    }
}

/// States expanded per slice with more than one thread: a slice's successors are all made
/// before any of them is stored, so its buffers (`Made`) are the memory this costs, about 1 KB a
/// state (3 bytes a state at 184,306 states; 1,024 a slice: 6, and no faster through the cache,
/// session 14; 4,096: 20 more; 256: 7 % slower in session 13). One thread takes one state at a
/// time: no successor is made twice (a state that two states of a slice reach is new to both),
/// and it is 3 % faster than 1,024.
const SLICE: usize = 512;
/// States a worker takes at a time from a slice.
const CHUNK: usize = 32;

/// What the explorer needs to make a state's successors: read only, shared by the workers.
struct Job<'a> {
    model: &'a Model,
    store: &'a Store,
    state_invs: &'a [Inv],
    transition_invs: &'a [TransitionCheck],
    py_transition: &'a [(u16, &'a str)],
    /// Only when the run is sequential (the callbacks run Python on the calling thread).
    cb: Option<&'a (dyn Callbacks + Send + Sync)>,
    /// Successors made through the cache (`expand_cached`), or by stepping the table each time
    /// (`expand`).
    cached: bool,
    symmetry: bool,
    /// The run's group keys (the states' keys through the cache name them by number).
    group_keys: &'a GroupKeys,
}

/// One successor as a worker made it.
#[derive(Clone, Copy)]
enum Target {
    /// The state itself.
    Same,
    /// A state already stored when the slice was made.
    Known(u32),
    /// Not stored then: its canonical key (its hash and `Made::bytes[key.0..key.1]`), its packed
    /// world (`bytes[enc.0..enc.1]`) and the native state invariants it violates (`Made::viols`;
    /// the Python ones are asked when it is stored, once a state).
    New { hash: u64, key: (u32, u32), enc: (u32, u32), viols: (u32, u32) },
}

#[derive(Clone, Copy)]
struct SuccMade {
    target: Target,
    fault: bool,
    /// The transition invariants violated (`Made::viols`: indices into the native ones, then
    /// the Python ones after them).
    viols: (u32, u32),
}

#[derive(Clone, Copy)]
enum Status {
    /// Beyond the bounds: not expanded.
    Beyond,
    /// The table's step is ill-formed in it: no successor is kept.
    IllFormed { quiet: bool },
    Expanded { quiet: bool },
}

#[derive(Clone, Copy)]
struct StateMade {
    status: Status,
    succs: (u32, u32),
    /// The rows its successors fired (`Made::rows`).
    rows: (u32, u32),
}

/// A worker's output for the states it took, in the order it made them.
#[derive(Default)]
struct Made {
    states: Vec<StateMade>,
    succs: Vec<SuccMade>,
    rows: Vec<u16>,
    viols: Vec<u16>,
    bytes: Vec<u8>,
    /// The slice's states it took (`states[k]` was made of slice state `took[k]`).
    took: Vec<u32>,
}

impl Made {
    fn clear(&mut self) {
        self.states.clear();
        self.succs.clear();
        self.rows.clear();
        self.viols.clear();
        self.bytes.clear();
        self.took.clear();
    }
    /// Where the next state's output starts.
    fn mark(&self) -> Mark {
        Mark { succs: self.succs.len(), rows: self.rows.len(), viols: self.viols.len(), bytes: self.bytes.len() }
    }

    /// A state beyond the bounds (nothing made of it).
    fn beyond(&mut self, at: Mark) -> Result<(), String> {
        let (p, q) = (pos32(at.succs)?, pos32(at.rows)?);
        self.states.push(StateMade { status: Status::Beyond, succs: (p, p), rows: (q, q) });
        Ok(())
    }

    /// The state whose successors were made since `at`, as `found` ended: expanded, or ill-formed
    /// (Python's explorer records no successor of a state whose step is ill-formed: dropped).
    fn finish(&mut self, at: Mark, found: Result<(), StepError>, quiet: bool) -> Result<(), String> {
        let status = match found {
            Ok(()) => Status::Expanded { quiet },
            Err(StepError::Defect(_)) => {
                self.succs.truncate(at.succs);
                self.rows.truncate(at.rows);
                self.viols.truncate(at.viols);
                self.bytes.truncate(at.bytes);
                Status::IllFormed { quiet }
            }
            Err(StepError::Internal(e)) => return Err(e),
        };
        let succs = (pos32(at.succs)?, pos32(self.succs.len())?);
        self.states.push(StateMade { status, succs, rows: (pos32(at.rows)?, pos32(self.rows.len())?) });
        Ok(())
    }

    /// Bytes in use.
    fn bytes(&self) -> usize {
        self.states.len() * std::mem::size_of::<StateMade>()
            + self.succs.len() * std::mem::size_of::<SuccMade>()
            + 2 * (self.rows.len() + self.viols.len())
            + self.bytes.len()
    }
}

/// Lengths of a worker's buffers before a state's output (`Made::mark`).
#[derive(Clone, Copy)]
struct Mark {
    succs: usize,
    rows: usize,
    viols: usize,
    bytes: usize,
}

/// The target of a successor whose canonical key is `key`: a state stored already, or a new one:
/// its key, its packed world (`pack` appends it) and the state invariants it violates (`viols`)
/// noted in `made`.
fn target_of(
    store: &Store,
    key: &[u8],
    made: &mut Made,
    viols: impl Iterator<Item = u16>,
    pack: impl FnOnce(&mut Vec<u8>) -> Result<(), String>,
) -> Result<Target, String> {
    let hash = Store::hash(key);
    if let Some(i) = store.find(hash, key) {
        return Ok(Target::Known(i));
    }
    let k0 = pos32(made.bytes.len())?;
    made.bytes.extend_from_slice(key);
    let e0 = pos32(made.bytes.len())?;
    pack(&mut made.bytes)?;
    let end = pos32(made.bytes.len())?;
    let sv = pos32(made.viols.len())?;
    made.viols.extend(viols);
    Ok(Target::New { hash, key: (k0, e0), enc: (e0, end), viols: (sv, pos32(made.viols.len())?) })
}

/// A worker's reusable buffers, and its cache (kept from one slice to the next).
struct Hands {
    canon: Canon,
    scratch: Scratch,
    key: Vec<u8>,
    enc: Vec<u8>,
    cache: Cache,
    world: World,
    /// The world after a client's own move.
    moved: World,
    actions: Vec<Action>,
    /// One step's successors: (the clients after it, whether it is a fault).
    succs: Vec<(Clients, bool)>,
}

impl Hands {
    fn new(rns: &[Renamer], cache_limit: usize) -> Hands {
        Hands {
            canon: Canon::new(rns),
            scratch: Scratch::default(),
            key: Vec::with_capacity(128),
            enc: Vec::with_capacity(128),
            cache: Cache::new(cache_limit),
            world: World { group: Group::default(), clients: Clients::new() },
            moved: World { group: Group::default(), clients: Clients::new() },
            actions: Vec::new(),
            succs: Vec::new(),
        }
    }
}

fn at(range: (u32, u32)) -> std::ops::Range<usize> {
    range.0 as usize..range.1 as usize
}

fn pos32(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| "a slice's buffers exceed 4 GiB".to_string())
}

/// Makes the successors of the packed world `here` into `made`: their keys, whether each is
/// stored already (as `job.store` is now), the invariants they violate and the rows they fire.
fn expand(job: &Job, hands: &mut Hands, here: &[u8], made: &mut Made) -> Result<(), String> {
    if job.cached {
        return expand_cached(job, hands, here, made);
    }
    let model = job.model;
    let w = decode_world(here, model.n as usize);
    let mark = made.mark();
    if !model.within_bounds(&w) {
        return made.beyond(mark);
    }
    let quiet = quiescent(&w.group);
    let Hands { canon, scratch, key, enc, .. } = hands;
    let ntrans = job.transition_invs.len() as u16;
    let mut visit = |s: &SuccView| -> Result<(), StepError> {
        let tv = pos32(made.viols.len())?;
        if let (Some(t), Some(inp)) = (s.transition, s.input) {
            made.rows.extend_from_slice(&t.rows);
            for (i, check) in job.transition_invs.iter().enumerate() {
                if check(&model.table.rows, &w.group, inp, t) {
                    made.viols.push(i as u16);
                }
            }
            if !job.py_transition.is_empty() {
                let cb = job.cb.ok_or_else(no_callbacks)?;
                let ids: Vec<String> = t.rows.iter().map(|r| model.table.rows[*r as usize].id.clone()).collect();
                for (j, (i, _)) in job.py_transition.iter().enumerate() {
                    if cb.transition_violated(*i, &ids, &w.group, inp, t)? {
                        made.viols.push(ntrans + j as u16);
                    }
                }
            }
        }
        let viols = (tv, pos32(made.viols.len())?);
        let target = if std::ptr::eq(s.world, &w) || *s.world == w {
            Target::Same
        } else {
            canon.key(s.world, key);
            let group = &s.world.group;
            let violated = job.state_invs.iter().enumerate().filter(|(_, inv)| state_violated(**inv, group));
            target_of(job.store, key, made, violated.map(|(i, _)| i as u16), |bytes| {
                encode_world(s.world, enc)?;
                bytes.extend_from_slice(enc);
                Ok(())
            })?
        };
        made.succs.push(SuccMade { target, fault: s.fault, viols });
        Ok(())
    };
    let found = model.each_successor(&w, scratch, &mut visit);
    made.finish(mark, found, quiet)
}

/// `expand` through the worker's cache: the world's group is looked up by its packed bytes, each
/// step by (group, input, settings), and a successor is its group's index and its clients until
/// it is new (then packed). The same successors, in the same order, with the same verdicts.
fn expand_cached(job: &Job, hands: &mut Hands, here: &[u8], made: &mut Made) -> Result<(), String> {
    let model = job.model;
    let facts = GroupFacts { model, state_invs: job.state_invs, symmetry: job.symmetry };
    let Hands { canon, key, enc, cache, world: w, moved, actions, succs, .. } = hands;
    cache.trim();
    let glen = group_len(here);
    let gid = cache.intern_bytes(&here[..glen], &facts);
    let mark = made.mark();
    let (in_bounds, quiet) = (cache.group(gid).in_bounds, cache.group(gid).quiet);
    if !in_bounds {
        return made.beyond(mark);
    }
    w.group = decode_group(&here[..glen]).0;
    w.clients = decode_clients(&here[glen..], model.n as usize);
    actions.clear();
    model.actions_into(w, actions);
    // one successor: the world of group `g` and `clients`, after `step` (its outcome index)
    let mut visit = |cache: &mut Cache, g: u32, clients: &Clients, step: Option<&StepOut>, fault: bool| -> Result<(), StepError> {
        let tv = pos32(made.viols.len())?;
        if let Some(o) = step {
            made.rows.extend_from_slice(&o.rows);
            for i in 0..job.transition_invs.len() {
                if o.verdicts & (1 << i) != 0 {
                    made.viols.push(i as u16);
                }
            }
        }
        let viols = (tv, pos32(made.viols.len())?);
        let target = if g == gid && *clients == w.clients {
            Target::Same
        } else {
            cache.canonical_key(canon, g, clients, job.group_keys, key);
            let bits = cache.group(g).state_viols;
            target_of(job.store, key, made, (0..64u16).filter(|i| bits & (1 << i) != 0), |bytes| {
                bytes.extend_from_slice(cache.group_bytes(g));
                enc.clear();
                encode_clients(clients, enc)?;
                bytes.extend_from_slice(enc);
                Ok(())
            })?
        };
        made.succs.push(SuccMade { target, fault, viols });
        Ok(())
    };
    let mut each = || -> Result<(), StepError> {
        for a in actions.iter_mut() {
            let variants = if model.append_variant(a) { 2 } else { 1 };
            for variant in 0..variants {
                a.append_fails = variant == 1;
                let Some(inp) = model.input_of(w, a)? else {
                    model.client_move(w, a, moved);
                    visit(cache, gid, &moved.clients, None, a.kind != ActKind::RequestTimeout)?;
                    continue;
                };
                let settings = if a.append_fails { &model.failing } else { &model.settings };
                let fault = model.fault_of(w, a);
                let outcomes =
                    cache.step(&model.table, gid, &w.group, &inp, settings, variant as u8, job.transition_invs, &facts)?;
                let sends = matches!(a.kind, ActKind::Send | ActKind::Impersonate);
                for o in &outcomes {
                    // what the step delivers to whom (responses of the cache), as abstract.py's emit
                    let mut to: SmallVec<[(usize, u32); 4]> = SmallVec::new();
                    if sends && o.reply != NO_RESP {
                        to.push((a.client as usize, o.reply));
                    }
                    for &(rid, r) in cache.outs(o) {
                        let i = ((rid - 1) % model.n as u16) as u8;
                        if rid == model.request_id(w, i) {
                            to.push((i as usize, r));
                        }
                    }
                    let nd = to.len();
                    let clients_stay = nd == 0 && (model.b.open || !sends);
                    if clients_stay && o.unchanged {
                        visit(cache, gid, &w.clients, Some(o), fault)?;
                        continue;
                    }
                    let deliveries: SmallVec<[(usize, &Resp); 4]> = to.iter().map(|(i, r)| (*i, cache.resp(*r))).collect();
                    let lost = model.b.has(F_LOST) && !model.b.open && nd > 0;
                    let variants: u32 = if lost { 1 << nd } else { 1 };
                    succs.resize_with(variants as usize, || (Clients::new(), false));
                    for bits in 0..variants {
                        let (cs, f) = &mut succs[bits as usize];
                        model.deliver(w, a, &deliveries, |k| bits & (1 << (nd - 1 - k)) != 0, cs);
                        *f = fault || bits != 0;
                    }
                    drop(deliveries);
                    for (cs, f) in succs[..variants as usize].iter() {
                        visit(cache, o.after, cs, Some(o), *f)?;
                    }
                }
            }
        }
        Ok(())
    };
    let found = each();
    made.finish(mark, found, quiet)
}

fn no_callbacks() -> String {
    "invariants through Python without callbacks".to_string()
}

/// Everything the search keeps, and its storing of one expanded state (`absorb`): states are
/// numbered, and violations found, in the order this is called, one state after the other.
struct Search<'a> {
    model: &'a Model,
    opts: &'a Options,
    tick: &'a mut dyn FnMut(&Progress) -> bool,
    cb: Option<&'a (dyn Callbacks + Send + Sync)>,
    py_state: &'a [(u16, &'a str)],
    state_names: Vec<&'a str>,
    transition_names: Vec<&'a str>,
    store: Store,
    queue: Queue,
    parent: Vec<u32>,
    ord: Vec<u16>,
    levels: Levels,
    expanded: Bits,
    quiet: Bits,
    calm: Edges,
    rows_fired: Vec<u64>,
    report: Report<'a>,
    frontier: u64,
    edges: u64,
    interrupted: bool,
    settle: Option<Vec<String>>,
    cut_short: String,
    head: usize,
    node_depth: u16,
    targets: Vec<(u32, bool)>,
    calm_targets: Vec<u32>,
    since_tick: usize,
    /// The most bytes a slice's buffers held.
    slice_peak: usize,
}

impl Search<'_> {
    /// Stores what was made of the next state in BFS order: Ok(true) when the search stops
    /// there.
    fn absorb(&mut self, m: &Made, st: &StateMade) -> Result<bool, String> {
        let opts = self.opts;
        let node = self.head as u32;
        self.head += 1;
        let levels = &self.levels.0;
        while levels.len() > self.node_depth as usize + 1 && levels[self.node_depth as usize + 1] <= node {
            self.node_depth += 1;
        }
        let quiet_here = match st.status {
            Status::Beyond => {
                self.frontier += 1;
                if opts.liveness {
                    self.calm.push(node, &[]);
                }
                return Ok(false);
            }
            Status::IllFormed { quiet: q } | Status::Expanded { quiet: q } => q,
        };
        self.expanded.set(node as usize);
        if quiet_here {
            self.quiet.set(node as usize);
        }
        if let Status::IllFormed { .. } = st.status {
            self.report.add(WELL_FORMED, node, None);
            if opts.liveness {
                self.calm.push(node, &[]);
            }
            return Ok(false);
        }
        self.targets.clear();
        for (pos, s) in m.succs[at(st.succs)].iter().enumerate() {
            for v in &m.viols[at(s.viols)] {
                self.report.add(self.transition_names[*v as usize], node, Some(pos as u32));
            }
            let nxt = match s.target {
                Target::Same => node,
                Target::Known(i) => i,
                Target::New { hash, key, enc, viols } => {
                    let (nxt, new) = self.store.intern(hash, &m.bytes[at(key)])?;
                    if new {
                        self.new_state(m, node, pos, nxt, enc, viols)?;
                    }
                    nxt
                }
            };
            self.targets.push((nxt, s.fault));
        }
        for r in &m.rows[at(st.rows)] {
            self.rows_fired[*r as usize] += 1;
        }
        self.targets.sort_unstable();
        self.calm_targets.clear();
        let targets = &self.targets;
        let mut i = 0;
        while i < targets.len() {
            let t = targets[i].0;
            let mut all_fault = true;
            while i < targets.len() && targets[i].0 == t {
                all_fault &= targets[i].1;
                i += 1;
            }
            self.edges += 1;
            if !all_fault {
                self.calm_targets.push(t);
            }
        }
        if opts.liveness {
            self.calm.push(node, &self.calm_targets);
        }
        self.stops()
    }

    /// A state stored for the first time: its packed world queued, its BFS links, the
    /// invariants it violates.
    fn new_state(&mut self, m: &Made, node: u32, pos: usize, nxt: u32, enc: (u32, u32), viols: (u32, u32)) -> Result<(), String> {
        self.queue.push(&m.bytes[at(enc)])?;
        self.parent.push(node);
        self.ord.push(u16::try_from(pos).map_err(|_| "more than 65,535 successors of one state".to_string())?);
        if self.levels.0.len() == self.node_depth as usize + 1 {
            self.levels.0.push(nxt);
        }
        for v in &m.viols[at(viols)] {
            self.report.add(self.state_names[*v as usize], nxt, None);
        }
        if !self.py_state.is_empty() {
            let w = decode_world(&m.bytes[at(enc)], self.model.n as usize);
            for (i, name) in self.py_state {
                if self.cb.ok_or_else(no_callbacks)?.state_violated(*i, &w.group)? {
                    self.report.add(name, nxt, None);
                }
            }
        }
        Ok(())
    }

    /// After an expanded state: progress (Ctrl-C), --max-states, the stop at the first
    /// violation, every property settled. Ok(true): stop.
    fn stops(&mut self) -> Result<bool, String> {
        let opts = self.opts;
        let store_len = self.store.len();
        self.since_tick += 1;
        if self.since_tick >= 64 {
            self.since_tick = 0;
            let p = Progress {
                states: store_len,
                edges: self.edges,
                depth: self.node_depth,
                queue: store_len - self.head,
                bytes: self.store.bytes()
                    + self.queue.bytes()
                    + self.parent.len() * 4
                    + self.ord.len() * 2
                    + self.calm.stream.len()
                    + self.slice_peak,
            };
            if !(self.tick)(&p) {
                self.interrupted = true;
                return Ok(true);
            }
        }
        if let Some(m) = opts.max_states {
            if store_len >= m {
                let left = store_len - self.head;
                if left > 0 {
                    self.cut_short = format!("--max-states {m} reached with {} states unexplored", thousands(left));
                }
                return Ok(true);
            }
        }
        let found = &self.report.found;
        if opts.stop_at_first_violation && !found.is_empty() {
            self.cut_short = "stopped at the first violation".to_string();
            return Ok(true);
        }
        if let Some(pending) = self.settle.as_mut() {
            if found.iter().any(|v| v.name != LIVENESS) {
                pending.retain(|p| p != LIVENESS);
            }
            if !pending.is_empty() && pending.iter().all(|p| found.iter().any(|v| &v.name == p)) {
                self.cut_short = "every checked property has a counterexample".to_string();
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Expands the states of `slice` (packed worlds, `ends[i]` closing world i) into `made`, one
/// per thread, each noting the states it took in `Made::took`. Through the cache, a state goes to
/// the thread its group's hash names, so each group is met (and its steps cached) by one thread
/// alone; otherwise the threads take chunks of CHUNK states in turn.
fn expand_slice(job: &Job, hands: &mut [Hands], slice: &[u8], ends: &[u32], made: &mut [Made]) -> Result<(), String> {
    let world = |i: usize| &slice[if i == 0 { 0 } else { ends[i - 1] as usize }..ends[i] as usize];
    for m in made.iter_mut() {
        m.clear();
    }
    if made.len() == 1 {
        for i in 0..ends.len() {
            made[0].took.push(i as u32);
            expand(job, &mut hands[0], world(i), &mut made[0])?;
        }
        return Ok(());
    }
    let threads = made.len() as u64;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = |t: usize, hands: &mut Hands, made: &mut Made| -> Result<(), String> {
        if job.cached {
            for i in 0..ends.len() {
                let w = world(i);
                if Store::hash(&w[..group_len(w)]) % threads == t as u64 {
                    made.took.push(i as u32);
                    expand(job, hands, w, made)?;
                }
            }
            return Ok(());
        }
        loop {
            let c = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if c * CHUNK >= ends.len() {
                return Ok(());
            }
            for i in c * CHUNK..((c + 1) * CHUNK).min(ends.len()) {
                made.took.push(i as u32);
                expand(job, hands, world(i), made)?;
            }
        }
    };
    let (mine, theirs) = made.split_at_mut(1);
    let (my_hands, their_hands) = hands.split_at_mut(1);
    std::thread::scope(|s| {
        let others: Vec<_> = theirs
            .iter_mut()
            .zip(their_hands.iter_mut())
            .enumerate()
            .map(|(t, (m, h))| {
                let work = &work;
                s.spawn(move || work(t + 1, h, m))
            })
            .collect();
        let here = work(0, &mut my_hands[0], &mut mine[0]);
        others.into_iter().try_for_each(|h| h.join().map_err(|_| "an explorer thread panicked".to_string())?).and(here)
    })
}

pub fn explore(
    model: &Model,
    opts: &Options,
    tick: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Outcome, String> {
    let rns = renamers(&model.b, opts.symmetry);
    let state_invs: Vec<Inv> = opts.invariants.iter().filter(|(t, _)| !*t).map(|(_, i)| *i).collect();
    let transition_invs: Vec<Inv> = opts.invariants.iter().filter(|(t, _)| *t).map(|(_, i)| *i).collect();
    let transition_checks: Vec<TransitionCheck> = transition_invs.iter().map(|i| transition_check(*i)).collect();
    let py_state: Vec<(u16, &str)> = py_invariants(opts, false);
    let py_transition: Vec<(u16, &str)> = py_invariants(opts, true);
    let cb = model.table.callbacks.as_deref();
    if cb.is_none() && !opts.py_invariants.is_empty() {
        return Err(no_callbacks());
    }
    // a table that calls back into Python is stepped afresh (the cache would skip its calls)
    let cached = opts.memo
        && !model.table.calls_back()
        && py_transition.is_empty()
        && transition_invs.len() <= 64
        && state_invs.len() <= 64;
    // Python runs on this thread only
    let sequential = model.table.calls_back() || !opts.py_invariants.is_empty();
    // more threads than a slice has chunks would have nothing to do
    let threads = if sequential { 1 } else { opts.threads.clamp(1, SLICE / CHUNK) };
    let mut hands: Vec<Hands> = (0..threads).map(|_| Hands::new(&rns, opts.cache_bytes)).collect();
    let mut search = Search {
        model,
        opts,
        tick,
        cb,
        py_state: &py_state,
        // the names of the violation indices `expand` notes
        state_names: state_invs.iter().map(|i| inv_name(*i)).collect(),
        transition_names: transition_invs.iter().map(|i| inv_name(*i)).chain(py_transition.iter().map(|p| p.1)).collect(),
        store: Store::new(),
        queue: Queue::new(),
        parent: Vec::new(),
        ord: Vec::new(),
        levels: Levels(vec![0]),
        expanded: Bits::default(),
        quiet: Bits::default(),
        calm: Edges { stream: Vec::new(), count: 0 },
        rows_fired: vec![0u64; model.table.rows.len()],
        report: Report { found: Vec::new(), seen: Vec::new(), skip: &opts.skip, first_only: opts.first_violation_only },
        frontier: 0,
        edges: 0,
        interrupted: false,
        settle: opts.settle.clone(),
        cut_short: String::new(),
        head: 0,
        node_depth: 0,
        targets: Vec::new(),
        calm_targets: Vec::new(),
        since_tick: 0,
        slice_peak: 0,
    };

    let init = model.initial();
    let (mut key, mut enc) = (Vec::new(), Vec::new());
    let group_keys = GroupKeys::default();
    encode_world(&init, &mut enc)?;
    if cached {
        // the key as `expand_cached` makes them
        let h = &mut hands[0];
        let facts = GroupFacts { model, state_invs: &state_invs, symmetry: opts.symmetry };
        let gid = h.cache.intern_bytes(&enc[..group_len(&enc)], &facts);
        h.cache.canonical_key(&mut h.canon, gid, &init.clients, &group_keys, &mut key);
    } else {
        hands[0].canon.key(&init, &mut key);
    }
    search.store.intern(Store::hash(&key), &key)?;
    search.queue.push(&enc)?;
    search.parent.push(u32::MAX);
    search.ord.push(0);
    for inv in &state_invs {
        if state_violated(*inv, &init.group) {
            search.report.add(inv_name(*inv), 0, None);
        }
    }
    for (i, name) in &py_state {
        if cb.ok_or_else(no_callbacks)?.state_violated(*i, &init.group)? {
            search.report.add(name, 0, None);
        }
    }
    let mut made: Vec<Made> = (0..threads).map(|_| Made::default()).collect();
    let (mut slice, mut ends) = (Vec::new(), Vec::new());
    // where each state of a slice was made: (worker, its entry in `Made::states`)
    let mut made_at: Vec<(u32, u32)> = Vec::new();
    'search: while search.head < search.store.len() {
        // the next slice of the queue: states stored already, so making their successors needs
        // nothing the slice itself adds
        let n = (if threads == 1 { 1 } else { SLICE }).min(search.store.len() - search.head);
        slice.clear();
        ends.clear();
        for _ in 0..n {
            search.queue.pop(&mut slice);
            ends.push(pos32(slice.len())?);
        }
        let job = Job {
            model,
            store: &search.store,
            state_invs: &state_invs,
            transition_invs: &transition_checks,
            py_transition: &py_transition,
            cb: if sequential { cb } else { None },
            cached,
            symmetry: opts.symmetry,
            group_keys: &group_keys,
        };
        expand_slice(&job, &mut hands, &slice, &ends, &mut made)?;
        let bytes = slice.len() + 4 * ends.len() + made.iter().map(Made::bytes).sum::<usize>();
        search.slice_peak = search.slice_peak.max(bytes);
        made_at.clear();
        made_at.resize(n, (0, 0));
        for (t, m) in made.iter().enumerate() {
            for (k, i) in m.took.iter().enumerate() {
                made_at[*i as usize] = (t as u32, k as u32);
            }
        }
        // store them in the order a sequential search makes them
        for &(t, k) in &made_at {
            let m = &made[t as usize];
            if search.absorb(m, &m.states[k as usize])? {
                break 'search;
            }
        }
    }
    let Search {
        store,
        queue,
        parent,
        ord,
        levels,
        expanded,
        quiet,
        calm,
        rows_fired,
        report,
        frontier,
        edges,
        interrupted,
        cut_short,
        slice_peak,
        ..
    } = search;
    let mut violations = report.found;
    let states = store.len();
    let max_depth = levels.depth(states as u32 - 1);
    // every per-state structure, in use at the end of the search (the queue at its fullest)
    let store_bytes = store.bytes()
        + queue.bytes()
        + parent.len() * 4
        + ord.len() * 2
        + 4 * levels.0.len()
        + expanded.bytes()
        + quiet.bytes()
        + calm.stream.len()
        + hands.iter().map(|h| h.cache.peak()).sum::<usize>()
        + group_keys.bytes()
        + slice_peak;
    // the keys and the queue are not needed past the search
    drop(queue);
    drop(store);
    let liveness_checked = opts.liveness && violations.is_empty() && !interrupted;
    if liveness_checked {
        // Reverse reachability over non-fault edges from the quiescent (or unexpanded) states.
        // predecessor lists preds[start[v]..start[v + 1]]: count, sum, then fill from each end
        let mut start = vec![0u32; states + 1];
        calm.each(|_, v| start[v as usize + 1] += 1);
        for i in 0..states {
            start[i + 1] += start[i];
        }
        let mut preds = vec![0u32; calm.count];
        calm.each(|u, v| {
            start[v as usize + 1] -= 1;
            preds[start[v as usize + 1] as usize] = u;
        });
        // start[v + 1] now holds the start of v's list: shift back
        for i in 0..states {
            start[i] = start[i + 1];
        }
        start[states] = calm.count as u32;
        drop(calm);
        let targets: Vec<u32> =
            (0..states as u32).filter(|i| !expanded.get(*i as usize) || quiet.get(*i as usize)).collect();
        let good = backward_closure(&start, &preds, targets);
        let stuck: Vec<u32> = (0..states as u32).filter(|i| !good[*i as usize]).collect();
        if !stuck.is_empty() && opts.report_liveness {
            // BFS numbering: the shallowest stuck state is the first
            violations.push(Found {
                name: LIVENESS.to_string(),
                node: stuck[0],
                extra: None,
                stuck: Some(stuck.len() as u64),
                request: None,
            });
        }
        if !stuck.is_empty() && opts.report_parked {
            // For each request parked in a stuck state: can a state where it is no longer parked
            // (or that was never expanded) be reached along non-fault edges? The worlds are
            // derived again from the BFS tree (parent, successor position).
            let mut waiting: std::collections::BTreeMap<u16, Vec<u32>> = std::collections::BTreeMap::new();
            let mut parked_in: FxHashMap<u16, Bits> = FxHashMap::default();
            each_world(model, &parent, &ord, states, |i, w| {
                let mut rids = parked(&w.group);
                rids.sort_unstable();
                rids.dedup();
                for r in &rids {
                    if !good[i as usize] {
                        waiting.entry(*r).or_default().push(i);
                    }
                    if expanded.get(i as usize) {
                        parked_in.entry(*r).or_default().set(i as usize);
                    }
                }
            })?;
            let mut forever: Vec<(u32, u16)> = Vec::new();
            for (rid, nodes) in &waiting {
                let here = parked_in.get(rid);
                let answered: Vec<u32> =
                    (0..states as u32).filter(|i| !here.is_some_and(|b| b.get(*i as usize))).collect();
                let can = backward_closure(&start, &preds, answered);
                forever.extend(nodes.iter().filter(|n| !can[**n as usize]).map(|n| (*n, *rid)));
            }
            if let Some(&(n, rid)) = forever.iter().min_by_key(|(n, r)| (levels.depth(*n), *r, *n)) {
                violations.push(Found {
                    name: PARKED_ANSWERED.to_string(),
                    node: n,
                    extra: None,
                    stuck: Some(forever.len() as u64),
                    request: Some(rid),
                });
            }
        }
    }
    Ok(Outcome {
        states,
        edges,
        depth: max_depth,
        frontier,
        rows_fired,
        violations,
        interrupted,
        store_bytes,
        parent,
        ord,
        cut_short,
        liveness_checked,
        memo_hits: hands.iter().map(|h| h.cache.hits).sum(),
        memo_misses: hands.iter().map(|h| h.cache.misses).sum(),
        memo_clears: hands.iter().map(|h| h.cache.clears).sum(),
        threads,
    })
}

/// Calls `f(i, world)` for states 0..states in order, deriving each world again from its BFS
/// parent's successors (the children of a state are numbered consecutively when it is expanded).
fn each_world(
    model: &Model,
    parent: &[u32],
    ord: &[u16],
    states: usize,
    mut f: impl FnMut(u32, &World),
) -> Result<(), String> {
    let mut queue = Queue::new();
    let (mut enc, mut here) = (Vec::new(), Vec::new());
    encode_world(&model.initial(), &mut enc)?;
    queue.push(&enc)?;
    let mut succs = Vec::new();
    let mut child = 1usize;
    for i in 0..states as u32 {
        here.clear();
        queue.pop(&mut here);
        let w = decode_world(&here, model.n as usize);
        f(i, &w);
        if child < states && parent[child] == i {
            model.successors_into(&w, &mut succs).map_err(|e| match e {
                StepError::Defect(d) => d.message,
                StepError::Internal(s) => s,
            })?;
            while child < states && parent[child] == i {
                encode_world(&succs[ord[child] as usize].world, &mut enc)?;
                queue.push(&enc)?;
                child += 1;
            }
        }
    }
    Ok(())
}

/// Every node from which one of `targets` is reachable (targets included), over the predecessor
/// lists `preds[start[n]..start[n + 1]]`.
fn backward_closure(start: &[u32], preds: &[u32], targets: Vec<u32>) -> Vec<bool> {
    let mut good = vec![false; start.len() - 1];
    for t in &targets {
        good[*t as usize] = true;
    }
    let mut queue = targets;
    let mut qi = 0;
    while qi < queue.len() {
        let n = queue[qi] as usize;
        qi += 1;
        for p in &preds[start[n] as usize..start[n + 1] as usize] {
            if !good[*p as usize] {
                good[*p as usize] = true;
                queue.push(*p);
            }
        }
    }
    good
}

/// `f"{n:,}"`: digits grouped by commas, as Python prints counts.
fn thousands(n: usize) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The successor positions from the initial state to `node` (BFS parent links).
/// The Python invariants of one kind, with their callback index.
fn py_invariants(opts: &Options, transition: bool) -> Vec<(u16, &str)> {
    opts.py_invariants
        .iter()
        .enumerate()
        .filter(|(_, (t, _))| *t == transition)
        .map(|(i, (_, n))| (i as u16, n.as_str()))
        .collect()
}

pub fn path_to(parent: &[u32], ord: &[u16], node: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut n = node;
    while parent[n as usize] != u32::MAX {
        out.push(ord[n as usize] as u32);
        n = parent[n as usize];
    }
    out.reverse();
    out
}
