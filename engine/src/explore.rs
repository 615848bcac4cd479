//! model/explore.py natively: breadth-first exploration with canonical keys, invariants on every
//! state and transition, row coverage, and the liveness property `quiescence-reachable` on the
//! explored graph. States are stored packed: a hash table of state indices over an arena of
//! canonical keys, an arena of full world encodings, BFS parent links and successor positions.

use crate::abstract_model::*;
use crate::invariants::*;
use crate::model::*;
use crate::step::StepError;
use hashbrown::HashTable;
use std::hash::BuildHasher;

pub const LIVENESS: &str = "quiescence-reachable";
pub const WELL_FORMED: &str = "table-well-formed";
pub const PARKED_ANSWERED: &str = "parked-requests-answered";

pub struct Options {
    pub symmetry: bool,
    /// Invariants to check, in model/invariants.py's order.
    pub invariants: Vec<(bool, Inv)>,
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
}

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
    pub ord: Vec<u32>,
    /// Why the run stopped before exploring everything within the bounds ("" = it did not).
    pub cut_short: String,
    pub liveness_checked: bool,
}

/// Packed storage: state i's canonical key is keys[key_off[i]..key_off[i+1]], its world likewise.
struct Store {
    keys: Vec<u8>,
    key_off: Vec<u32>,
    worlds: Vec<u8>,
    world_off: Vec<u32>,
    table: HashTable<u32>,
    hasher: rustc_hash::FxBuildHasher,
}

impl Store {
    fn new() -> Store {
        Store {
            keys: Vec::new(),
            key_off: vec![0],
            worlds: Vec::new(),
            world_off: vec![0],
            table: HashTable::new(),
            hasher: rustc_hash::FxBuildHasher,
        }
    }
    fn world(&self, i: u32) -> &[u8] {
        &self.worlds[self.world_off[i as usize] as usize..self.world_off[i as usize + 1] as usize]
    }
    fn len(&self) -> usize {
        self.key_off.len() - 1
    }
    /// The state with this key, or a new one holding `world`: (index, is new).
    fn intern(&mut self, key: &[u8], world: &[u8]) -> Result<(u32, bool), String> {
        let h = self.hasher.hash_one(key);
        let (keys, key_off) = (&self.keys, &self.key_off);
        let get = |i: u32| &keys[key_off[i as usize] as usize..key_off[i as usize + 1] as usize];
        if let Some(i) = self.table.find(h, |&i| get(i) == key) {
            return Ok((*i, false));
        }
        let id = self.len() as u32;
        if self.keys.len() + key.len() > u32::MAX as usize || self.worlds.len() + world.len() > u32::MAX as usize {
            return Err("the packed state store exceeds 4 GiB".into());
        }
        self.keys.extend_from_slice(key);
        self.key_off.push(self.keys.len() as u32);
        self.worlds.extend_from_slice(world);
        self.world_off.push(self.worlds.len() as u32);
        let (keys, key_off, hasher) = (&self.keys, &self.key_off, &self.hasher);
        self.table.insert_unique(h, id, |&i| {
            hasher.hash_one(&keys[key_off[i as usize] as usize..key_off[i as usize + 1] as usize])
        });
        Ok((id, true))
    }
    fn bytes(&self) -> usize {
        self.keys.capacity()
            + self.worlds.capacity()
            + 4 * (self.key_off.capacity() + self.world_off.capacity())
            + self.table.capacity() * 5
    }
}

fn quiescent(g: &Group) -> bool {
    match g.state {
        State::Empty | State::Missing => true,
        State::Stable => g.members.iter().all(|m| m.aj.is_none() && m.a_sync.is_none()),
        _ => false,
    }
}

pub fn explore(
    model: &Model,
    opts: &Options,
    tick: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Outcome, String> {
    let rns = renamers(&model.b, opts.symmetry);
    let nclients = model.n as usize;
    let mut store = Store::new();
    let mut parent: Vec<u32> = Vec::new();
    let mut ord: Vec<u32> = Vec::new();
    let mut depth: Vec<u16> = Vec::new();
    let mut expanded: Vec<bool> = Vec::new();
    let mut calm: Vec<(u32, u32)> = Vec::new();
    let mut rows_fired = vec![0u64; model.table.rows.len()];
    let mut violations: Vec<Found> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut frontier = 0u64;
    let mut edges = 0u64;
    let mut interrupted = false;
    let mut key = Vec::with_capacity(128);
    let mut enc = Vec::with_capacity(128);

    let mut settle: Option<Vec<String>> = opts.settle.clone();
    let mut violate = |violations: &mut Vec<Found>, name: &str, node: u32, extra: Option<u32>| {
        if opts.skip.iter().any(|s| s == name) || (opts.first_violation_only && seen.iter().any(|s| s == name)) {
            return;
        }
        seen.push(name.to_string());
        violations.push(Found { name: name.to_string(), node, extra, stuck: None, request: None });
    };
    let mut cut_short = String::new();

    let init = model.initial();
    canonical_key(&init, &rns, &mut key);
    encode_world(&init, &mut enc)?;
    store.intern(&key, &enc)?;
    parent.push(u32::MAX);
    ord.push(0);
    depth.push(0);
    expanded.push(false);
    for (is_t, inv) in &opts.invariants {
        if !*is_t && state_violated(*inv, &init.group) {
            violate(&mut violations, inv_name(*inv), 0, None);
        }
    }
    let mut head = 0usize;
    let mut targets: Vec<(u32, bool)> = Vec::new();
    let mut since_tick = 0usize;
    while head < store.len() {
        let node = head as u32;
        head += 1;
        let here = store.world(node).to_vec();
        let w = decode_world(&here, nclients);
        if !model.within_bounds(&w) {
            frontier += 1;
            continue;
        }
        expanded[node as usize] = true;
        let succs = match model.successors(&w) {
            Ok(s) => s,
            Err(StepError::Defect(_)) => {
                violate(&mut violations, WELL_FORMED, node, None);
                continue;
            }
            Err(StepError::Internal(e)) => return Err(e),
        };
        targets.clear();
        for (k, s) in succs.iter().enumerate() {
            if let (Some(t), Some(inp)) = (&s.transition, &s.input) {
                for r in &t.rows {
                    rows_fired[*r as usize] += 1;
                }
                for (is_t, inv) in &opts.invariants {
                    if *is_t && transition_violated(*inv, &model.table.rows, &w.group, inp, t) {
                        violate(&mut violations, inv_name(*inv), node, Some(k as u32));
                    }
                }
            }
            encode_world(&s.world, &mut enc)?;
            if enc == here {
                targets.push((node, s.fault));
                continue;
            }
            canonical_key(&s.world, &rns, &mut key);
            let (nxt, new) = store.intern(&key, &enc)?;
            if new {
                parent.push(node);
                ord.push(k as u32);
                depth.push(depth[node as usize] + 1);
                expanded.push(false);
                for (is_t, inv) in &opts.invariants {
                    if !*is_t && state_violated(*inv, &s.world.group) {
                        violate(&mut violations, inv_name(*inv), nxt, None);
                    }
                }
            }
            targets.push((nxt, s.fault));
        }
        targets.sort_unstable();
        let mut i = 0;
        while i < targets.len() {
            let t = targets[i].0;
            let mut all_fault = true;
            while i < targets.len() && targets[i].0 == t {
                all_fault &= targets[i].1;
                i += 1;
            }
            edges += 1;
            if opts.liveness && !all_fault {
                calm.push((node, t));
            }
        }
        since_tick += 1;
        if since_tick >= 64 {
            since_tick = 0;
            let p = Progress {
                states: store.len(),
                edges,
                depth: depth[node as usize],
                queue: store.len() - head,
                bytes: store.bytes() + parent.capacity() * 10 + calm.capacity() * 8,
            };
            if !tick(&p) {
                interrupted = true;
                break;
            }
        }
        if let Some(m) = opts.max_states {
            if store.len() >= m {
                let left = store.len() - head;
                if left > 0 {
                    cut_short = format!("--max-states {m} reached with {} states unexplored", thousands(left));
                }
                break;
            }
        }
        if opts.stop_at_first_violation && !violations.is_empty() {
            cut_short = "stopped at the first violation".to_string();
            break;
        }
        if let Some(pending) = settle.as_mut() {
            if violations.iter().any(|v| v.name != LIVENESS) {
                pending.retain(|p| p != LIVENESS);
            }
            if !pending.is_empty() && pending.iter().all(|p| violations.iter().any(|v| &v.name == p)) {
                cut_short = "every checked property has a counterexample".to_string();
                break;
            }
        }
    }
    let states = store.len();
    let max_depth = depth.iter().copied().max().unwrap_or(0);
    let liveness_checked = opts.liveness && violations.is_empty() && !interrupted;
    if liveness_checked {
        // Reverse reachability over non-fault edges from the quiescent (or unexpanded) states.
        let mut start = vec![0u32; states + 1];
        for (_, v) in &calm {
            start[*v as usize + 1] += 1;
        }
        for i in 0..states {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut preds = vec![0u32; calm.len()];
        for (u, v) in &calm {
            preds[fill[*v as usize] as usize] = *u;
            fill[*v as usize] += 1;
        }
        drop(calm);
        let targets: Vec<u32> = (0..states as u32)
            .filter(|i| !expanded[*i as usize] || quiescent(&decode_world(store.world(*i), nclients).group))
            .collect();
        let good = backward_closure(&start, &preds, targets);
        let stuck: Vec<u32> = (0..states as u32).filter(|i| !good[*i as usize]).collect();
        if !stuck.is_empty() && opts.report_liveness {
            let best = *stuck.iter().min_by_key(|i| (depth[**i as usize], **i)).unwrap_or(&stuck[0]);
            violations.push(Found {
                name: LIVENESS.to_string(),
                node: best,
                extra: None,
                stuck: Some(stuck.len() as u64),
                request: None,
            });
        }
        if !stuck.is_empty() && opts.report_parked {
            // For each request parked in a stuck state: can a state where it is no longer parked
            // (or that was never expanded) be reached along non-fault edges?
            let mut waiting: std::collections::BTreeMap<u16, Vec<u32>> = std::collections::BTreeMap::new();
            for n in &stuck {
                let mut rids = parked(&decode_world(store.world(*n), nclients).group);
                rids.sort_unstable();
                rids.dedup();
                for r in rids {
                    waiting.entry(r).or_default().push(*n);
                }
            }
            let parked_at: Vec<Vec<u16>> = if waiting.is_empty() {
                Vec::new()
            } else {
                (0..states as u32).map(|i| parked(&decode_world(store.world(i), nclients).group)).collect()
            };
            let mut forever: Vec<(u32, u16)> = Vec::new();
            for (rid, nodes) in &waiting {
                let answered: Vec<u32> = (0..states as u32)
                    .filter(|i| !expanded[*i as usize] || !parked_at[*i as usize].contains(rid))
                    .collect();
                let can = backward_closure(&start, &preds, answered);
                forever.extend(nodes.iter().filter(|n| !can[**n as usize]).map(|n| (*n, *rid)));
            }
            if let Some(&(n, rid)) = forever.iter().min_by_key(|(n, r)| (depth[*n as usize], *r, *n)) {
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
    let store_bytes = store.bytes();
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
    })
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
pub fn path_to(parent: &[u32], ord: &[u32], node: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut n = node;
    while parent[n as usize] != u32::MAX {
        out.push(ord[n as usize]);
        n = parent[n as usize];
    }
    out.reverse();
    out
}
