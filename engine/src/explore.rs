//! check/explore.py natively: breadth-first exploration with canonical keys, invariants on every
//! state and transition, row coverage, and the liveness property `quiescence-reachable` on the
//! explored graph. States are stored packed: a hash table of state indices over arenas of
//! canonical keys, BFS parent links and successor positions; full world encodings only while a
//! state waits in the BFS queue. With `Options::threads` > 1, worker threads expand slices of the
//! queue (`search_in_slices`: successors, invariants, canonical keys, encodings) while the
//! calling thread stores the slice before, in the order one thread stores them
//! (`Search::absorb`), so no result depends on the thread count.
//! Each thread makes successors through its cache (`expand_cached`, explore_cache.rs): a world's
//! group is looked up once, each step once per (group, input, settings).

use crate::abstract_model::*;
use crate::invariants::*;
use crate::model::*;
use crate::explore_cache::{client_step_key, client_word, outcomes_in, quiescent, Cache, GroupFacts, GroupKeys, Out, NO_RESP};
use crate::step::{Callbacks, StepError};
use crate::varint::{get_var, get_zz, put_var, put_zz};
use hashbrown::HashTable;
use smallvec::SmallVec;
use rustc_hash::FxHashMap;
use std::hash::BuildHasher;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

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
    /// number. With more than one, N - 1 workers expand while the calling thread stores, then
    /// expands too. A table that calls back into Python and Python invariants run on the calling
    /// thread alone.
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

/// The visited states: a hash table of state indices over arenas of canonical keys. The keys
/// are packed one after the other in chunks of at most `chunk_limit` bytes (u32 offsets: 4 GiB;
/// session 14's 4-member crash run stopped at that limit with a single arena); state i's key
/// ends at `key_end[i]` in its chunk and starts where the one before it ends (0 for a chunk's
/// first state, `firsts`). Full worlds are kept only while a state waits in the BFS queue
/// (`Queue`). The table starts with room for `FIRST_ROOM` states (1.3 MB): below that each
/// doubling hashed every key again from its bytes, a miss or two a key (session 26: ~6 ms of
/// the storing thread's ~55 in a 184,306-state search, gone).
pub(crate) struct Store {
    chunks: Vec<Vec<u8>>,
    key_end: Vec<u32>,
    /// The first state of each chunk.
    firsts: Vec<u32>,
    chunk_limit: usize,
    table: HashTable<u32>,
}

impl Store {
    pub(crate) fn new() -> Store {
        Store::with_chunks(u32::MAX as usize)
    }
    /// A store whose key chunks hold at most `chunk_limit` bytes (at most 4 GiB).
    pub(crate) fn with_chunks(chunk_limit: usize) -> Store {
        let chunk_limit = chunk_limit.min(u32::MAX as usize);
        Store {
            chunks: vec![Vec::new()],
            key_end: Vec::new(),
            firsts: vec![0],
            chunk_limit,
            table: HashTable::with_capacity(FIRST_ROOM),
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.key_end.len()
    }
    pub(crate) fn hash(key: &[u8]) -> u64 {
        rustc_hash::FxBuildHasher.hash_one(key)
    }
    /// State i's key.
    pub(crate) fn key(&self, i: u32) -> &[u8] {
        key_in(&self.chunks, &self.key_end, &self.firsts, i)
    }
    /// The state with this key (`hash` its hash), if stored.
    pub(crate) fn find(&self, hash: u64, key: &[u8]) -> Option<u32> {
        self.table.find(hash, |&i| self.key(i) == key).copied()
    }
    /// The state with this key (`hash` its hash), or a new one: (index, is new).
    pub(crate) fn intern(&mut self, hash: u64, key: &[u8]) -> Result<(u32, bool), String> {
        if let Some(i) = self.find(hash, key) {
            return Ok((i, false));
        }
        let id = u32::try_from(self.len()).map_err(|_| "more than 4,294,967,295 states".to_string())?;
        if key.len() > self.chunk_limit {
            return Err(format!("a state's key of {} bytes exceeds the store's chunks", key.len()));
        }
        let last = self.chunks.len() - 1;
        if self.chunks[last].len() + key.len() > self.chunk_limit {
            self.chunks.push(Vec::new());
            self.firsts.push(id);
        }
        let chunk = self.chunks.last_mut().expect("a store has a chunk");
        chunk.extend_from_slice(key);
        self.key_end.push(chunk.len() as u32);
        let (chunks, key_end, firsts) = (&self.chunks, &self.key_end, &self.firsts);
        self.table.insert_unique(hash, id, |&i| Store::hash(key_in(chunks, key_end, firsts, i)));
        Ok((id, true))
    }
    /// Bytes in use (a vector's capacity beyond its length is never touched, so never resident).
    pub(crate) fn bytes(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum::<usize>() + 4 * self.key_end.len() + self.table.capacity() * 5
    }
}

/// The states the store's table has room for from the start (`Store`): 2^18 slots of 5 bytes.
const FIRST_ROOM: usize = 1 << 17;

/// State i's key in `Store`'s arenas (a free function: the table's rehash borrows the arenas
/// while the table itself is borrowed mutably).
fn key_in<'a>(chunks: &'a [Vec<u8>], key_end: &[u32], firsts: &[u32], i: u32) -> &'a [u8] {
    // almost always one chunk; a handful past 4 GiB of keys
    let c = if firsts.len() == 1 { 0 } else { firsts.partition_point(|&f| f <= i) - 1 };
    let start = if i == firsts[c] { 0 } else { key_end[i as usize - 1] as usize };
    &chunks[c][start..key_end[i as usize] as usize]
}

/// The packed worlds of the states waiting in the BFS queue, oldest first, each after a tag
/// byte: the low byte of its group's hash when the search shares slices out by group
/// (`Taken::take`), else 0.
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
    /// Queues a world after its tag.
    fn push(&mut self, tag: u8, world: &[u8]) -> Result<(), String> {
        if self.bytes.len() + 1 + world.len() > u32::MAX as usize {
            return Err("the BFS queue exceeds 4 GiB".into());
        }
        self.starts.push_back(self.bytes.len() as u32);
        self.bytes.push(tag);
        self.bytes.extend_from_slice(world);
        self.peak = self.peak.max(self.bytes.len() + 4 * self.starts.len());
        Ok(())
    }
    /// The oldest world, appended to `out`: its tag.
    fn pop(&mut self, out: &mut Vec<u8>) -> u8 {
        let a = self.starts.pop_front().unwrap_or(0) as usize;
        let b = self.starts.front().map(|x| *x as usize).unwrap_or(self.bytes.len());
        let tag = self.bytes.get(a).copied().unwrap_or(0);
        out.extend_from_slice(&self.bytes[(a + 1).min(b)..b]);
        // drop the consumed prefix once it is most of the buffer
        if b > (1 << 16) && b > self.bytes.len() / 2 {
            self.bytes.drain(..b);
            for s in self.starts.iter_mut() {
                *s -= b as u32;
            }
        }
        tag
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

/// The non-fault edges of every processed state, in state order, for the liveness pass: per
/// state a varint count, then its targets ascending (the first as a zigzag delta from the state,
/// the others as gaps).
struct Edges {
    stream: Vec<u8>,
    /// Every MARK_EVERY-th state: (the state, where its edges start in `stream`), where the
    /// liveness pass can cut the stream into pieces read on several threads.
    marks: Vec<(u32, usize)>,
}

/// States between two marks of the edge stream.
const MARK_EVERY: u32 = 4096;

impl Edges {
    fn push(&mut self, node: u32, targets: &[u32]) {
        if node.is_multiple_of(MARK_EVERY) {
            self.marks.push((node, self.stream.len()));
        }
        put_var(&mut self.stream, targets.len() as u64);
        let mut prev = node as i64;
        for (k, t) in targets.iter().enumerate() {
            let d = *t as i64 - prev;
            if k == 0 {
                put_zz(&mut self.stream, d);
            } else {
                put_var(&mut self.stream, (d - 1) as u64);
            }
            prev = *t as i64;
        }
    }
    /// Calls `f(source, target)` for every edge of the states from `from` (a state and where
    /// its edges start) to the stream's byte `end`, in the order pushed.
    fn each_between(&self, from: (u32, usize), end: usize, mut f: impl FnMut(u32, u32)) {
        let (b, mut i, mut node) = (&self.stream[..end], from.1, from.0);
        while i < b.len() {
            let n = get_var(b, &mut i);
            let mut prev = node as i64;
            for k in 0..n {
                let t = if k == 0 { prev + get_zz(b, &mut i) } else { prev + get_var(b, &mut i) as i64 + 1 };
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
/// before any of them is stored, and IN_FLIGHT slices are held at once, so their buffers are
/// the memory this costs: every successor's key and packed world, about 2.5 KB a state (1.1
/// bytes a state a slice at 184,306 states). One thread takes one state at a time: no successor
/// is made twice (a state that two states of a slice reach is new to both), and it is 3 %
/// faster than 1,024.
const SLICE: usize = 128;
/// States a worker takes at a time from a slice.
const CHUNK: usize = 32;

/// What the explorer needs to make a state's successors: read only, shared by the workers.
struct Job<'a> {
    model: &'a Model,
    /// The states stored so far, when the thread expanding is the one that stores (one thread,
    /// or the storing thread's own unit of a slice), or None: every successor not the state
    /// itself is handed on as new, and the storing thread looks it up (the workers, which expand
    /// a slice while one before it is stored).
    store: Option<&'a Store>,
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
    /// The state itself, this many times in a row (without violations when more than once).
    Same(u32),
    /// A state already stored when the slice was made.
    Known(u32),
    /// Not stored then: its canonical key (its hash and `Made::bytes[key.0..key.1]`), its queue
    /// tag and packed world (`bytes[enc.0..enc.1]`, the tag first: `Queue`) and the native state
    /// invariants it violates (`Made::viols`; the Python ones are asked when it is stored, once a
    /// state).
    New { hash: u64, key: (u32, u32), enc: (u32, u32), viols: (u32, u32) },
    /// The target of an earlier successor made by the same thread for the same slice
    /// (`Made::succs[j]`, a `New` one): a state's successors repeat, and so do those of the
    /// states expanded one after the other; the storing thread looks each up once.
    Again(u32),
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

/// A worker's output for the states it took, in the order it made them. Aligned as `Cache`:
/// the units' outputs are side by side in a slice (`Taken::made`), each written by its thread.
#[derive(Default)]
#[repr(align(128))]
struct Made {
    states: Vec<StateMade>,
    succs: Vec<SuccMade>,
    rows: Vec<u16>,
    viols: Vec<u16>,
    bytes: Vec<u8>,
    /// The slice's states it took (`states[k]` was made of slice state `took[k]`).
    took: Vec<u32>,
    /// The successors in `succs` whose target is `New`, by their key's hash (`Target::Again`).
    news: HashTable<u32>,
}

impl Made {
    fn clear(&mut self) {
        self.states.clear();
        self.succs.clear();
        self.rows.clear();
        self.viols.clear();
        self.bytes.clear();
        self.took.clear();
        self.news.clear();
    }
    /// Writes every line of the buffers' room in one pass, before a worker makes a slice's
    /// output there. The storing thread read them last (the slice before, in this `Taken`), so
    /// each line's first write waits for the other core to let go of it; written one state at
    /// a time those waits stall the worker one after the other, written at once they overlap
    /// (session 25: 1.05-1.075x two threads over 24-30 pairs, more in the phases when a line
    /// takes ~400 ns between the vCPUs).
    fn pretouch(&mut self) {
        write_room(&mut self.succs, SuccMade { target: Target::Same(0), fault: false, viols: (0, 0) });
        write_room(&mut self.bytes, 0);
        write_room(&mut self.rows, 0);
        write_room(&mut self.states, StateMade { status: Status::Beyond, succs: (0, 0), rows: (0, 0) });
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
                self.news.retain(|j| (*j as usize) < at.succs);
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
            + 9 * self.news.capacity()
    }
}

/// Empties `v` after writing `blank` over all its room, every line at once (`Made::pretouch`).
fn write_room<T: Clone>(v: &mut Vec<T>, blank: T) {
    v.resize(v.capacity(), blank);
    v.clear();
}

/// Lengths of a worker's buffers before a state's output (`Made::mark`).
#[derive(Clone, Copy)]
struct Mark {
    succs: usize,
    rows: usize,
    viols: usize,
    bytes: usize,
}

/// The target of a successor whose canonical key is `key`: a state in `store`, the target of an
/// earlier successor in `made`, or a new one (to it): its key, its packed world (`pack` appends
/// it) and the state invariants it violates (`viols`) noted in `made`. The caller pushes the
/// successor next.
fn target_of(
    store: Option<&Store>,
    key: &[u8],
    made: &mut Made,
    viols: impl Iterator<Item = u16>,
    pack: impl FnOnce(&mut Vec<u8>) -> Result<(), String>,
) -> Result<Target, String> {
    let hash = Store::hash(key);
    if let Some(i) = store.and_then(|s| s.find(hash, key)) {
        return Ok(Target::Known(i));
    }
    let Made { succs, bytes, news, .. } = &*made;
    let earlier = news.find(hash, |&j| match succs[j as usize].target {
        Target::New { key: k, .. } => bytes[at(k)] == *key,
        _ => false,
    });
    if let Some(&j) = earlier {
        return Ok(Target::Again(j));
    }
    let k0 = pos32(made.bytes.len())?;
    made.bytes.extend_from_slice(key);
    let e0 = pos32(made.bytes.len())?;
    pack(&mut made.bytes)?;
    let end = pos32(made.bytes.len())?;
    let sv = pos32(made.viols.len())?;
    made.viols.extend(viols);
    // the successor the caller pushes next
    let j = pos32(made.succs.len())?;
    let Made { succs, news, .. } = made;
    news.insert_unique(hash, j, |&j| match succs[j as usize].target {
        Target::New { hash, .. } => hash,
        _ => 0,
    });
    Ok(Target::New { hash, key: (k0, e0), enc: (e0, end), viols: (sv, pos32(made.viols.len())?) })
}

/// A thread's reusable buffers.
struct Hands {
    canon: Canon,
    scratch: Scratch,
    key: Vec<u8>,
    enc: Vec<u8>,
    world: World,
    /// The world after a client's own move.
    moved: World,
    actions: Vec<Action>,
    /// The group's own actions (`Model::group_actions_into`).
    own: Vec<Action>,
    /// One step's successors: (the clients after it, whether it is a fault, the clients that
    /// may differ from the state's: `Model::deliver_over`).
    succs: Vec<(Clients, bool, u32)>,
    /// One step's outcomes, the bytes of their record (`outcomes_in`).
    outcomes: Vec<u8>,
}

impl Hands {
    fn new(rns: &[Renamer]) -> Hands {
        Hands {
            canon: Canon::new(rns),
            scratch: Scratch::default(),
            key: Vec::with_capacity(128),
            enc: Vec::with_capacity(128),
            world: World { group: Group::default(), clients: Clients::new() },
            moved: World { group: Group::default(), clients: Clients::new() },
            actions: Vec::new(),
            own: Vec::new(),
            succs: Vec::new(),
            outcomes: Vec::new(),
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
fn expand(job: &Job, hands: &mut Hands, cache: &mut Cache, here: &[u8], made: &mut Made) -> Result<(), String> {
    if job.cached {
        return expand_cached(job, hands, cache, here, made);
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
            Target::Same(1)
        } else {
            canon.key(s.world, key);
            let group = &s.world.group;
            let violated = job.state_invs.iter().enumerate().filter(|(_, inv)| state_violated(**inv, group));
            target_of(job.store, key, made, violated.map(|(i, _)| i as u16), |bytes| {
                encode_world(s.world, enc)?;
                // (slices are shared out by position without the cache)
                bytes.push(0);
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

/// The set bits of `bits`, ascending.
fn set_bits(mut bits: u64) -> impl Iterator<Item = u16> {
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let i = bits.trailing_zeros() as u16;
            bits &= bits - 1;
            i
        })
    })
}

/// `expand_cached`'s group number of a successor known to be the world itself.
const SAME: u32 = u32::MAX;

/// `expand` through the worker's cache: the world's group is looked up by its packed bytes, each
/// step by (group, input, settings), and a successor is its group's index and its clients until
/// it is new (then packed). The same successors, in the same order, with the same verdicts.
fn expand_cached(job: &Job, hands: &mut Hands, cache: &mut Cache, here: &[u8], made: &mut Made) -> Result<(), String> {
    let model = job.model;
    let facts = GroupFacts { model, state_invs: job.state_invs, symmetry: job.symmetry };
    let Hands { canon, key, enc, world: w, moved, actions, own, succs, outcomes, .. } = hands;
    cache.trim();
    let glen = group_len(here);
    let gid = cache.intern_bytes(&here[..glen], &facts);
    let mark = made.mark();
    let (in_bounds, quiet) = (cache.group(gid).in_bounds, cache.group(gid).quiet);
    if !in_bounds {
        return made.beyond(mark);
    }
    decode_group_into(&here[..glen], &mut w.group);
    decode_clients_into(&here[glen..], model.n as usize, &mut w.clients);
    // the successors' buffers hold another world's clients
    for (_, _, stale) in succs.iter_mut() {
        *stale = ALL_CLIENTS;
    }
    let mut moved_stale = ALL_CLIENTS;
    actions.clear();
    model.client_actions_into(w, actions);
    // one successor: the world of group `g` and `clients` (bit i of `moved`: client i may
    // differ from the state's), after outcome `step` (read from the bytes with it)
    // (`cache` None: `g` is SAME, and the outcome's bytes are read from the cache itself)
    // (`times`: that many such successors at once, all of them loops, as `Cache::own_loops`)
    let mut visit = |cache: Option<&mut Cache>, g: u32, clients: &Clients, moved: u32, step: Option<(&Out, &[u8])>, fault: bool, times: u32| -> Result<(), StepError> {
        let tv = pos32(made.viols.len())?;
        if let Some((o, rec)) = step {
            made.rows.extend(o.rows_of(rec));
            // the violated ones, ascending (mostly none)
            made.viols.extend(set_bits(o.verdicts));
        }
        let viols = (tv, pos32(made.viols.len())?);
        let same_clients = || (0..clients.len()).all(|i| moved & 1 << i == 0 || clients[i] == w.clients[i]);
        let target = if g == SAME || (g == gid && same_clients()) {
            // one more of a run of them, when neither violates anything
            if let (true, Some(SuccMade { target: Target::Same(n), viols: (a, b), .. })) =
                (viols.0 == viols.1 && made.succs.len() > mark.succs, made.succs.last_mut())
            {
                if a == b {
                    *n += times;
                    return Ok(());
                }
            }
            Target::Same(times)
        } else {
            let cache = cache.ok_or_else(|| StepError::Internal("a successor made without the cache".into()))?;
            cache.canonical_key(canon, g, clients, job.group_keys, key);
            let bits = cache.group(g).state_viols;
            target_of(job.store, key, made, set_bits(bits), |bytes| {
                bytes.push(cache.group(g).hash_low);
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
    // the successors of action `a` (a fault when `fault`) from the outcomes of its step
    // (`outcomes`: the bytes of their record)
    type Visit<'v> = dyn FnMut(Option<&mut Cache>, u32, &Clients, u32, Option<(&Out, &[u8])>, bool, u32) -> Result<(), StepError> + 'v;
    let mut outcomes_of = |visit: &mut Visit, cache: &mut Cache, a: &Action, fault: bool, outcomes: &[u8]| -> Result<(), StepError> {
        let sends = matches!(a.kind, ActKind::Send | ActKind::Impersonate);
        for o in outcomes_in(outcomes) {
            let o = &o;
            // what the step delivers to whom (responses of the cache), as abstract.py's emit
            let mut to: SmallVec<[(usize, u32); 4]> = SmallVec::new();
            if sends && o.reply != NO_RESP {
                to.push((a.client as usize, o.reply));
            }
            for &(rid, r) in cache.outs(o.outs) {
                let i = ((rid - 1) % model.n as u16) as u8;
                if rid == model.request_id(w, i) {
                    to.push((i as usize, r));
                }
            }
            let nd = to.len();
            let clients_stay = nd == 0 && (model.b.open || !sends);
            if clients_stay && o.unchanged {
                visit(Some(&mut *cache), gid, &w.clients, 0, Some((o, outcomes)), fault, 1)?;
                continue;
            }
            let deliveries: SmallVec<[(usize, &Resp); 4]> = to.iter().map(|(i, r)| (*i, cache.resp(*r))).collect();
            let lost = model.b.has(F_LOST) && !model.b.open && nd > 0;
            let variants: u32 = if lost { 1 << nd } else { 1 };
            if succs.len() < variants as usize {
                succs.resize_with(variants as usize, || (Clients::new(), false, ALL_CLIENTS));
            }
            for bits in 0..variants {
                let (cs, f, stale) = &mut succs[bits as usize];
                *stale = model.deliver_over(w, a, &deliveries, |k| bits & (1 << (nd - 1 - k)) != 0, cs, *stale);
                *f = fault || bits != 0;
            }
            drop(deliveries);
            for (cs, f, moved) in succs[..variants as usize].iter() {
                visit(Some(&mut *cache), o.after, cs, *moved, Some((o, outcomes)), *f, 1)?;
            }
        }
        Ok(())
    };
    let mut each = || -> Result<(), StepError> {
        // the group's own steps first, so that they are its first records (made once a group:
        // then the actions of its leading loops, `Cache::own_loops`, are not asked again)
        own.clear();
        let skipped = match cache.own_made(gid) {
            true => model.group_actions_from(&w.group, cache.own_loops(gid).0, own),
            false => {
                model.group_actions_into(&w.group, own);
                0
            }
        };
        let same = cache.group_steps(model, gid, &w.group, own, job.transition_invs, &facts)?;
        // the clients' actions, in `Model::actions_into`'s order (a client's, one after the
        // other: `which` counts them)
        let mut words = [None; MAX_CLIENTS];
        for (x, c) in words.iter_mut().zip(&w.clients) {
            *x = client_word(c);
        }
        let (mut last, mut which) = (-1, 0u8);
        for a in actions.iter_mut() {
            (last, which) = if a.client == last { (last, which.wrapping_add(1)) } else { (a.client, 0) };
            let variants = if model.append_variant(a) { 2 } else { 1 };
            for variant in 0..variants {
                a.append_fails = variant == 1;
                let fault = model.fault_of(w, a);
                // the step of this action of this client lately met (its input not made)
                let word = usize::try_from(a.client).ok().and_then(|i| words.get(i).copied().flatten());
                let key = word.map(|x| client_step_key(gid, a.client as u8, which, variant as u8, x));
                let slot = match key.as_ref().map(|k| cache.client_step(k)) {
                    Some(Ok(r)) => {
                        copy_outcomes(cache, gid, r, outcomes);
                        outcomes_of(&mut visit, cache, a, fault, outcomes)?;
                        continue;
                    }
                    Some(Err(slot)) => Some(slot),
                    None => None,
                };
                let Some(view) = model.input_view(w, a)? else {
                    moved_stale = model.client_move_over(w, a, &mut moved.clients, moved_stale);
                    visit(Some(&mut *cache), gid, &moved.clients, moved_stale, None, a.kind != ActKind::RequestTimeout, 1)?;
                    continue;
                };
                let settings = if a.append_fails { &model.failing } else { &model.settings };
                // a step met before is found by its key alone (no input made)
                let r = match cache.find(gid, variant as u8, &view) {
                    Some(r) => r,
                    None => cache.step_new(&model.table, gid, &w.group, &view.to_input(), settings, job.transition_invs, &facts)?,
                };
                if let (Some(slot), Some(key)) = (slot, key) {
                    cache.put_client_step(slot, &key, r);
                }
                // copied out of the cache, which making the successors changes
                copy_outcomes(cache, gid, r, outcomes);
                outcomes_of(&mut visit, cache, a, fault, outcomes)?;
            }
        }
        // then the group's own (admin requests, timers): the leading loops at once
        let (looping, loops, mut pos, rows) = cache.own_loops(gid);
        if loops > 0 {
            visit(None, SAME, &w.clients, 0, Some((&rows, cache.record(gid))), false, loops)?;
        }
        for (k, a) in own.iter().enumerate().map(|(j, a)| (j + skipped, a)).skip_while(|(k, _)| *k < looping) {
            let r = cache.own_outcomes(gid, &mut pos)?;
            if same & (1 << k.min(63)) == 0 || k >= 64 {
                copy_outcomes(cache, gid, r, outcomes);
                outcomes_of(&mut visit, cache, a, model.fault_of(w, a), outcomes)?;
                continue;
            }
            // the world itself after each outcome (what `visit` finds, without looking), read
            // where the cache holds it (nothing of the cache is asked); whether it is a fault
            // is not asked either: a loop is no edge of the liveness pass (`Search::absorb`)
            let rec = &cache.record(gid)[at(r)];
            for o in outcomes_in(rec) {
                visit(None, SAME, &w.clients, 0, Some((&o, rec)), false, 1)?;
            }
        }
        Ok(())
    };
    let found = each();
    made.finish(mark, found, quiet)
}

/// The bytes of group `gid`'s step outcomes at `r` in its record, into `out`.
fn copy_outcomes(cache: &Cache, gid: u32, r: (u32, u32), out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&cache.record(gid)[at(r)]);
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
    /// The expanded state's successors found in the store: each its number times two, plus one
    /// when it is a fault (so that sorting them sorts by number).
    targets: Vec<u64>,
    calm_targets: Vec<u32>,
    since_tick: usize,
    /// The most bytes a slice's buffers held.
    slice_peak: usize,
    /// Each unit's numbers of the states its `New` successors were stored as (by position in
    /// its `Made::succs`; for its `Target::Again`): kept here, not written into the unit's
    /// output, whose lines its thread writes again for a later slice.
    known: Vec<Vec<u32>>,
}

impl Search<'_> {
    /// Stores what was made of the next state in BFS order: Ok(true) when the search stops
    /// there.
    fn absorb(&mut self, m: &Made, st: StateMade, known: &mut [u32]) -> Result<bool, String> {
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
        // a successor that is the state itself is a loop, an edge and nothing more
        let mut looped = false;
        // a successor's position among the state's successors
        let mut pos = 0usize;
        for si in at(st.succs) {
            let s = m.succs[si];
            for v in &m.viols[at(s.viols)] {
                self.report.add(self.transition_names[*v as usize], node, Some(pos as u32));
            }
            let nxt = match s.target {
                Target::Same(n) => {
                    looped = true;
                    pos += n as usize;
                    continue;
                }
                Target::Known(i) => i,
                Target::New { hash, key, enc, viols } => {
                    let (nxt, new) = self.store.intern(hash, &m.bytes[at(key)])?;
                    if new {
                        self.new_state(m, node, pos, nxt, enc, viols)?;
                    }
                    // for the successors made again of it (`Target::Again`)
                    known[si] = nxt;
                    nxt
                }
                Target::Again(j) => match known.get(j as usize) {
                    Some(&i) if i != u32::MAX => i,
                    _ => return Err("a successor made again of one not stored".to_string()),
                },
            };
            self.targets.push(u64::from(nxt) << 1 | u64::from(s.fault));
            pos += 1;
        }
        for r in &m.rows[at(st.rows)] {
            self.rows_fired[*r as usize] += 1;
        }
        sort_unbranched(&mut self.targets);
        self.calm_targets.clear();
        let targets = &self.targets;
        let mut i = 0;
        while i < targets.len() {
            let t = (targets[i] >> 1) as u32;
            let mut all_fault = true;
            while i < targets.len() && (targets[i] >> 1) as u32 == t {
                all_fault &= targets[i] & 1 == 1;
                i += 1;
            }
            self.edges += 1;
            // a loop reaches nothing new: the liveness pass needs none (a byte a state)
            if t == node {
                looped = false;
            } else if !all_fault {
                self.calm_targets.push(t);
            }
        }
        // the loop, when no successor found in the store was the state itself
        self.edges += looped as u64;
        if opts.liveness {
            self.calm.push(node, &self.calm_targets);
        }
        self.stops()
    }

    /// A state stored for the first time: its packed world queued, its BFS links, the
    /// invariants it violates.
    fn new_state(&mut self, m: &Made, node: u32, pos: usize, nxt: u32, enc: (u32, u32), viols: (u32, u32)) -> Result<(), String> {
        // `enc` starts with the tag (`target_of`'s packing)
        let (tag, world) = (m.bytes[enc.0 as usize], &m.bytes[enc.0 as usize + 1..enc.1 as usize]);
        self.queue.push(tag, world)?;
        self.parent.push(node);
        self.ord.push(u16::try_from(pos).map_err(|_| "more than 65,535 successors of one state".to_string())?);
        if self.levels.0.len() == self.node_depth as usize + 1 {
            self.levels.0.push(nxt);
        }
        for v in &m.viols[at(viols)] {
            self.report.add(self.state_names[*v as usize], nxt, None);
        }
        if !self.py_state.is_empty() {
            let w = decode_world(world, self.model.n as usize);
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
                    + 16 * self.calm.marks.capacity()
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

/// A slice of the BFS queue handed to the threads: its states' packed worlds (`ends[i]` closes
/// world i; stored already, so making their successors needs nothing the slice itself adds),
/// split into units (`units[u]`: its states, in order), one a thread: thread u expands unit u
/// into `made[u]`. Through the cache a state's unit is named by its group's hash, and each
/// thread has a cache of its own, so each group is met (and its steps cached) in one cache.
struct Taken {
    bytes: Vec<u8>,
    ends: Vec<u32>,
    units: Vec<Vec<u32>>,
    /// Units not expanded yet.
    left: AtomicUsize,
    /// Bytes of the units' output made so far (`Made::bytes`).
    made_bytes: AtomicUsize,
    made: Vec<Mutex<Made>>,
    /// The first error a unit met.
    failed: Mutex<Option<String>>,
}

impl Taken {
    fn new(units: usize) -> Taken {
        Taken {
            bytes: Vec::new(),
            ends: Vec::new(),
            units: vec![Vec::new(); units],
            left: AtomicUsize::new(units),
            made_bytes: AtomicUsize::new(0),
            made: (0..units).map(|_| Mutex::new(Made::default())).collect(),
            failed: Mutex::new(None),
        }
    }
    fn world(&self, i: usize) -> &[u8] {
        &self.bytes[if i == 0 { 0 } else { self.ends[i - 1] as usize }..self.ends[i] as usize]
    }
    /// The next `n` states of the queue, each put in its unit: the one `owner` names for its
    /// bucket (its group's hash when `cached`, as its queue tag carries it, else its position,
    /// modulo BUCKETS).
    fn take(&mut self, queue: &mut Queue, n: usize, cached: bool, owner: &[u8; BUCKETS]) -> Result<(), String> {
        // the worlds go where a worker read the last slice's: every line written at once, as
        // `Made::pretouch`
        write_room(&mut self.bytes, 0);
        self.ends.clear();
        for u in self.units.iter_mut() {
            u.clear();
        }
        for m in self.made.iter_mut() {
            lock(m).clear();
        }
        *lock(&self.failed) = None;
        self.left.store(self.units.len(), Ordering::SeqCst);
        self.made_bytes.store(0, Ordering::SeqCst);
        for i in 0..n {
            let tag = queue.pop(&mut self.bytes);
            self.ends.push(pos32(self.bytes.len())?);
            let b = if cached { tag as usize % BUCKETS } else { i % BUCKETS };
            self.units[owner[b] as usize].push(i as u32);
        }
        Ok(())
    }
    /// Expands unit `u` through `cache` (nothing of it when `skip`: the search stopped), then
    /// counts it done.
    fn expand_unit(&self, u: usize, job: &Job, hands: &mut Hands, cache: &mut Cache, skip: bool) {
        let mut made = lock(&self.made[u]);
        // a worker's (no store): its output is read by the storing thread
        if job.store.is_none() {
            made.pretouch();
        }
        for &i in &self.units[u] {
            if skip {
                break;
            }
            made.took.push(i);
            if let Err(e) = expand(job, hands, cache, self.world(i as usize), &mut made) {
                lock(&self.failed).get_or_insert(e);
                break;
            }
        }
        self.made_bytes.fetch_add(made.bytes(), Ordering::SeqCst);
        drop(made);
        self.left.fetch_sub(1, Ordering::SeqCst);
    }
    /// Stores the slice in the order a sequential search makes it (`made_at[i]`: state i's
    /// unit and its entry in that unit's `Made::states`): Ok(true) when the search stops there.
    fn store(&self, search: &mut Search, made_at: &[(u32, u32)]) -> Result<bool, String> {
        let made: Vec<_> = self.made.iter().map(lock).collect();
        let mut known = std::mem::take(&mut search.known);
        known.resize_with(made.len(), Vec::new);
        for (k, m) in known.iter_mut().zip(&made) {
            k.clear();
            k.resize(m.succs.len(), u32::MAX);
        }
        let mut stopped = Ok(false);
        for &(u, k) in made_at {
            let m = &*made[u as usize];
            let st = m.states[k as usize];
            stopped = search.absorb(m, st, &mut known[u as usize]);
            if !matches!(stopped, Ok(false)) {
                break;
            }
        }
        search.known = known;
        stopped
    }
    fn bytes(&self) -> usize {
        self.bytes.len() + 4 * self.ends.len() + 4 * self.ends.len() + self.made_bytes.load(Ordering::SeqCst)
    }
}

/// A mutex's value: a thread that panicked holding it ends the search anyway (its join fails).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A slice's states are split into units (one a thread, `Taken`) by buckets: BUCKETS of them,
/// each owned by a unit. The last unit is this thread's, which also stores every slice, so it
/// owns fewer buckets, as many as keeps every thread busy (`Balance`). More units than threads
/// cost more than they balance: a unit's cache interns the groups its steps lead to, and each
/// more unit interns them again (session 15: 4 units on 2 threads, 12 % more CPU).
const BUCKETS: usize = 64;

/// Which unit owns each bucket: the last owns `last` buckets, the others share the rest evenly.
/// `last` moves a bucket at a time towards the point where no thread waits for another.
struct Balance {
    units: usize,
    last: usize,
    owner: [u8; BUCKETS],
        /// Waits of this thread less those of the workers since the last move.
    score: i32,
}

/// Waits one way (`Balance::score`) before a bucket moves: a bucket moved is a bucket whose
/// groups the other cache meets afresh (each move back and forth costs memory and time). 2, not
/// 4 (session 20): the threads' speeds on this machine move within a run, and a share that
/// follows them sooner wins 1.5-4.8 % (median of 24-40 pairs of two-thread runs, three times).
const HYSTERESIS: i32 = 2;

impl Balance {
    fn new(units: usize) -> Balance {
        let mut b = Balance { units, last: BUCKETS / units, owner: [0; BUCKETS], score: 0 };
        b.assign();
        b
    }
    fn assign(&mut self) {
        let (others, rest) = (self.units - 1, BUCKETS - self.last);
        for (k, o) in self.owner.iter_mut().enumerate() {
            *o = if k >= rest { others } else { k * others / rest.max(1) } as u8;
        }
    }
    /// This thread waited for the workers (`more`: it takes a bucket more) or they for it.
    fn waited(&mut self, more: bool) {
        self.score += if more { 1 } else { -1 };
        if self.score.abs() < HYSTERESIS {
            return;
        }
        self.score = 0;
        let last = if more { (self.last + 1).min(BUCKETS - self.units + 1) } else { self.last.saturating_sub(1).max(1) };
        if last != self.last {
            self.last = last;
            self.assign();
        }
    }
}

/// The search on one thread: each state expanded, its successors looked up in the store as it
/// is then, and stored, one state at a time (no successor is made twice).
fn search_alone(search: &mut Search, job: &Job, hands: &mut Hands, cache: &mut Cache) -> Result<(), String> {
    let (mut world, mut made) = (Vec::new(), Made::default());
    while search.head < search.store.len() {
        if step_alone(search, job, hands, cache, &mut world, &mut made)? {
            break;
        }
    }
    Ok(())
}

/// The next state of the queue expanded, its successors looked up in the store as it is and
/// stored: whether the search stopped.
fn step_alone(
    search: &mut Search,
    job: &Job,
    hands: &mut Hands,
    cache: &mut Cache,
    world: &mut Vec<u8>,
    made: &mut Made,
) -> Result<bool, String> {
    world.clear();
    search.queue.pop(world);
    made.clear();
    made.took.push(0);
    expand(&Job { store: Some(&search.store), ..*job }, hands, cache, world, made)?;
    search.slice_peak = search.slice_peak.max(world.len() + made.bytes());
    let st = made.states[0];
    // (grown, not filled: a `Target::Again` names a successor of this state stored before it)
    let mut known = std::mem::take(&mut search.known);
    known.resize_with(1, Vec::new);
    if known[0].len() < made.succs.len() {
        known[0].resize(made.succs.len(), u32::MAX);
    }
    let stopped = search.absorb(made, st, &mut known[0]);
    search.known = known;
    stopped
}

/// States stored and not yet taken below which the calling thread expands alone (`pipeline`):
/// about what it expands in the time a sleeping worker takes to wake.
const ALONE_BELOW: usize = 2 * SLICE;

/// Slices in flight at once (taken, not yet stored): a thread runs up to this many slices ahead
/// of the slice being stored, so no thread waits for another at the end of every slice.
const IN_FLIGHT: usize = 4;

/// The search on `hands.len()` threads, this one and workers that live as long as the search.
/// Slices are taken from the BFS queue (states stored already, so no one reads the store while
/// it changes) up to IN_FLIGHT at a time; worker u expands unit u of each in turn, this thread
/// its own (the last) unit, and stores each slice, in order, once all its units are made.
/// Threads are started once: on this machine a thread costs up to a millisecond to start, as
/// much as expanding a slice (session 15).
fn search_in_slices(search: &mut Search, job: &Job, mut hands: Vec<Hands>, caches: &[Mutex<Cache>]) -> Result<(), String> {
    let mine = hands.pop().ok_or("no explorer thread")?;
    let hub = Hub {
        flight: Mutex::new((0, VecDeque::new())),
        posted: Signal::default(),
        done: Signal::default(),
        end: AtomicBool::new(false),
        skip: AtomicBool::new(false),
        hungry: AtomicBool::new(false),
        gone: AtomicBool::new(false),
    };
    std::thread::scope(|s| {
        let mut workers = Vec::new();
        for (u, mut h) in hands.into_iter().enumerate() {
            let hub = &hub;
            workers.push(s.spawn(move || {
                // says so however the thread ends (a panic included), so no one waits for it
                let _leaving = Leaving(hub);
                let mut cache = lock(&caches[u]);
                let mut k = 0u64;
                loop {
                    if hub.posted.get() <= k {
                        hub.hungry.store(true, Ordering::Relaxed);
                    }
                    hub.posted.wait_past(k);
                    if hub.end.load(Ordering::SeqCst) {
                        return;
                    }
                    let t = {
                        let f = lock(&hub.flight);
                        f.1[(k - f.0) as usize].clone()
                    };
                    t.expand_unit(u, job, &mut h, &mut cache, hub.skip.load(Ordering::Relaxed));
                    drop(t);
                    hub.done.bump();
                    k += 1;
                }
            }));
        }
        let ran = pipeline(search, job, mine, caches, &hub);
        // the workers end when they see the end
        hub.end.store(true, Ordering::SeqCst);
        hub.posted.bump();
        let joined: Result<(), String> =
            workers.into_iter().try_for_each(|w| w.join().map_err(|_| "an explorer thread panicked".to_string()));
        ran.and(joined)
    })
}

/// What the calling thread and the workers share: the slices in flight (the number of the
/// first, and the slices in order), a signal each time one is posted and each time a worker is
/// done with one, the end of the search, whether what is left is skipped (the search stopped),
/// whether a worker waited for a slice, and whether a worker has ended.
struct Hub {
    flight: Mutex<(u64, VecDeque<Arc<Taken>>)>,
    posted: Signal,
    done: Signal,
    end: AtomicBool,
    skip: AtomicBool,
    hungry: AtomicBool,
    gone: AtomicBool,
}

struct Leaving<'a>(&'a Hub);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.gone.store(true, Ordering::SeqCst);
        self.0.done.bump();
    }
}

/// A counter threads wait on to pass a value: a waiter spins a little first (a thread woken
/// from sleep here takes tens of microseconds to run again, and a slice takes a few hundred to
/// expand; session 15), then sleeps.
#[derive(Default)]
struct Signal {
    n: AtomicU64,
    sleepers: AtomicUsize,
    m: Mutex<()>,
    cv: Condvar,
}

/// Spins of a waiter before it sleeps (about 50 microseconds).
const SPINS: usize = 20_000;

impl Signal {
    fn bump(&self) {
        self.n.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.m);
            self.cv.notify_all();
        }
    }
    fn get(&self) -> u64 {
        self.n.load(Ordering::SeqCst)
    }
    /// Waits until the count passes `seen`: the count.
    fn wait_past(&self, seen: u64) -> u64 {
        for _ in 0..SPINS {
            let v = self.get();
            if v > seen {
                return v;
            }
            std::hint::spin_loop();
        }
        let mut g = lock(&self.m);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        loop {
            let v = self.get();
            if v > seen {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return v;
            }
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// `search_in_slices`' loop on the calling thread: slices posted while fewer than IN_FLIGHT are
/// in flight, the oldest stored once all its units are made, else this thread's unit of the
/// next slice expanded here, else a wait for the workers.
fn pipeline(search: &mut Search, job: &Job, mut hands: Hands, caches: &[Mutex<Cache>], hub: &Hub) -> Result<(), String> {
    let units = caches.len();
    let mine = units - 1;
    let mut cache = lock(&caches[mine]);
    let mut spare: Vec<Taken> = Vec::new();
    let mut balance = Balance::new(units);
    let mut made_at = Vec::new();
    let (mut posted, mut stored, mut expanded) = (0u64, 0u64, 0u64);
    let mut taken_up_to = search.head;
    let mut was_full = false;
    let (mut world, mut alone) = (Vec::new(), Made::default());
    loop {
        // A narrow frontier (the first levels, a narrow point of the search, its end): with
        // nothing in flight, this thread goes on alone, a state at a time, until there are
        // states enough to share. A slice handed to a worker asleep costs about a millisecond
        // to wake it, and the first levels are a chain of slices of a few states each (session
        // 18: 676 states stored in the first 13 ms, against about 5,500 each 10 ms after).
        if posted == stored && search.store.len() > taken_up_to && search.store.len() - taken_up_to < ALONE_BELOW {
            taken_up_to += 1;
            if step_alone(search, job, &mut hands, &mut cache, &mut world, &mut alone)? {
                hub.skip.store(true, Ordering::SeqCst);
                return Ok(());
            }
            continue;
        }
        while posted - stored < IN_FLIGHT as u64 && search.store.len() > taken_up_to {
            let n = SLICE.min(search.store.len() - taken_up_to);
            // a worker that waited for a slice while the window was full waited for this
            // thread's storing (not for a BFS level too narrow to fill the window)
            if hub.hungry.swap(false, Ordering::Relaxed) && was_full {
                balance.waited(false);
            }
            let mut t = spare.pop().unwrap_or_else(|| Taken::new(units));
            t.take(&mut search.queue, n, job.cached, &balance.owner)?;
            taken_up_to += n;
            lock(&hub.flight).1.push_back(Arc::new(t));
            posted += 1;
            hub.posted.bump();
        }
        if posted == stored {
            return Ok(());
        }
        let done_seen = hub.done.get();
        let oldest = lock(&hub.flight).1[0].clone();
        if oldest.left.load(Ordering::SeqCst) == 0 {
            if let Some(e) = lock(&oldest.failed).take() {
                return Err(e);
            }
            made_at.clear();
            made_at.resize(oldest.ends.len(), (0u32, 0u32));
            for (u, m) in oldest.made.iter().enumerate() {
                for (k, i) in lock(m).took.iter().enumerate() {
                    made_at[*i as usize] = (u as u32, k as u32);
                }
            }
            let held: usize = lock(&hub.flight).1.iter().map(|t| t.bytes()).sum();
            search.slice_peak = search.slice_peak.max(held);
            was_full = posted - stored == IN_FLIGHT as u64;
            let stopped = oldest.store(search, &made_at)?;
            {
                let mut f = lock(&hub.flight);
                f.1.pop_front();
                f.0 += 1;
            }
            stored += 1;
            // every worker has let go of it (each drops its handle before it says done)
            if let Ok(t) = Arc::try_unwrap(oldest) {
                spare.push(t);
            }
            if stopped {
                // what is in flight is made of nothing (the workers skip it), then dropped
                hub.skip.store(true, Ordering::SeqCst);
                return Ok(());
            }
            continue;
        }
        if expanded < posted {
            let t = {
                let f = lock(&hub.flight);
                f.1[(expanded - f.0) as usize].clone()
            };
            // this thread alone changes the store, and not while it expands: its own unit looks
            // its successors up there (those stored by earlier slices, as storing it would find
            // them), so they are neither packed nor looked up again when the slice is stored
            t.expand_unit(mine, &Job { store: Some(&search.store), ..*job }, &mut hands, &mut cache, false);
            expanded += 1;
            continue;
        }
        // this thread's part is made as far as it is posted: the workers' is behind (when the
        // window is full: else the BFS level is too narrow to keep everyone busy)
        drop(oldest);
        if posted - stored == IN_FLIGHT as u64 {
            balance.waited(true);
        }
        if hub.gone.load(Ordering::SeqCst) {
            return Err("an explorer thread ended early".to_string());
        }
        hub.done.wait_past(done_seen);
    }
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
    let mut hands: Vec<Hands> = (0..threads).map(|_| Hands::new(&rns)).collect();
    // one cache on one thread; with more, one a unit of a slice (`Taken`), sharing the same bytes
    let units = threads;
    let unit_bytes = (opts.cache_bytes.saturating_mul(threads) / units).max(1);
    let caches: Vec<Mutex<Cache>> = (0..units).map(|_| Mutex::new(Cache::new(unit_bytes))).collect();
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
        calm: Edges { stream: Vec::new(), marks: Vec::new() },
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
        known: Vec::new(),
    };

    let init = model.initial();
    let (mut key, mut enc, mut tag) = (Vec::new(), Vec::new(), 0u8);
    let group_keys = GroupKeys::default();
    encode_world(&init, &mut enc)?;
    if cached {
        // the key as `expand_cached` makes them
        let (h, mut cache) = (&mut hands[0], lock(&caches[0]));
        let facts = GroupFacts { model, state_invs: &state_invs, symmetry: opts.symmetry };
        let gid = cache.intern_bytes(&enc[..group_len(&enc)], &facts);
        tag = cache.group(gid).hash_low;
        cache.canonical_key(&mut h.canon, gid, &init.clients, &group_keys, &mut key);
    } else {
        hands[0].canon.key(&init, &mut key);
    }
    search.store.intern(Store::hash(&key), &key)?;
    search.queue.push(tag, &enc)?;
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
    let job = Job {
        model,
        store: None,
        state_invs: &state_invs,
        transition_invs: &transition_checks,
        py_transition: &py_transition,
        cb: if sequential { cb } else { None },
        cached,
        symmetry: opts.symmetry,
        group_keys: &group_keys,
    };
    if threads == 1 {
        search_alone(&mut search, &job, &mut hands[0], &mut lock(&caches[0]))?;
    } else {
        search_in_slices(&mut search, &job, hands, &caches)?;
    }
    let caches: Vec<Cache> = caches.into_iter().map(|c| c.into_inner().unwrap_or_else(|p| p.into_inner())).collect();
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
        + 16 * calm.marks.capacity()
        + caches.iter().map(Cache::peak).sum::<usize>()
        + group_keys.bytes()
        + slice_peak;
    // the keys and the queue are not needed past the search
    drop(queue);
    drop(store);
    let liveness_checked = opts.liveness && violations.is_empty() && !interrupted;
    if liveness_checked {
        // Reverse reachability over non-fault edges from the quiescent (or unexpanded) states.
        let preds = Preds::of(&calm, states, threads)?;
        drop(calm);
        let targets: Vec<u32> =
            (0..states as u32).filter(|i| !expanded.get(*i as usize) || quiet.get(*i as usize)).collect();
        let good = backward_closure(&preds, targets);
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
                let can = backward_closure(&preds, answered);
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
        memo_hits: caches.iter().map(|c| c.hits).sum(),
        memo_misses: caches.iter().map(|c| c.misses).sum(),
        memo_clears: caches.iter().map(|c| c.clears).sum(),
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
    queue.push(0, &enc)?;
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
                queue.push(0, &enc)?;
                child += 1;
            }
        }
    }
    Ok(())
}

/// The predecessor lists over the non-fault edges, a piece of the edge stream each: state v's
/// predecessors are `preds[start[v]..start[v + 1]]` of every piece.
struct Preds {
    states: usize,
    pieces: Vec<(Vec<u32>, Vec<u32>)>,
}

impl Preds {
    /// From `calm`, cut at its marks into up to `parts` pieces of about equal bytes, each read on
    /// a thread of its own (the pass after the search: 11 ms of a 0.34 s run on one thread,
    /// session 18).
    fn of(calm: &Edges, states: usize, parts: usize) -> Result<Preds, String> {
        let mut cuts: Vec<(u32, usize)> = vec![(0, 0)];
        for k in 1..parts {
            let want = calm.stream.len() * k / parts;
            let near = calm.marks.iter().min_by_key(|m| m.1.abs_diff(want));
            if let (Some(&m), Some(last)) = (near, cuts.last()) {
                if m.1 > last.1 {
                    cuts.push(m);
                }
            }
        }
        let ends: Vec<usize> = cuts.iter().skip(1).map(|c| c.1).chain([calm.stream.len()]).collect();
        // count, sum, then fill from each end
        let piece = |from: (u32, usize), end: usize| -> (Vec<u32>, Vec<u32>) {
            let (mut start, mut count) = (vec![0u32; states + 1], 0usize);
            calm.each_between(from, end, |_, v| {
                start[v as usize + 1] += 1;
                count += 1;
            });
            for i in 0..states {
                start[i + 1] += start[i];
            }
            let mut preds = vec![0u32; count];
            calm.each_between(from, end, |u, v| {
                start[v as usize + 1] -= 1;
                preds[start[v as usize + 1] as usize] = u;
            });
            // start[v + 1] now holds the start of v's list: shift back
            for i in 0..states {
                start[i] = start[i + 1];
            }
            start[states] = count as u32;
            (start, preds)
        };
        if cuts.len() == 1 {
            return Ok(Preds { states, pieces: vec![piece(cuts[0], ends[0])] });
        }
        // the last piece on this thread, the others each on a thread started for it
        let (piece, last) = (&piece, cuts.len() - 1);
        let pieces = std::thread::scope(|s| {
            let started: Vec<_> = (0..last)
                .map(|k| {
                    let (c, e) = (cuts[k], ends[k]);
                    s.spawn(move || piece(c, e))
                })
                .collect();
            let mine = piece(cuts[last], ends[last]);
            let mut pieces = started
                .into_iter()
                .map(|h| h.join().map_err(|_| "a liveness thread panicked".to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            pieces.push(mine);
            Ok::<_, String>(pieces)
        })?;
        Ok(Preds { states, pieces })
    }
}

/// Every node from which one of `targets` is reachable (targets included), over the predecessor
/// lists of every piece of `preds`.
fn backward_closure(preds: &Preds, targets: Vec<u32>) -> Vec<bool> {
    let mut good = vec![false; preds.states];
    for t in &targets {
        good[*t as usize] = true;
    }
    let mut queue = targets;
    let mut qi = 0;
    while qi < queue.len() {
        let n = queue[qi] as usize;
        qi += 1;
        for (start, preds) in &preds.pieces {
            for p in &preds[start[n] as usize..start[n + 1] as usize] {
                if !good[*p as usize] {
                    good[*p as usize] = true;
                    queue.push(*p);
                }
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
