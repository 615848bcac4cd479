//! check/diff.py's lockstep search, natively: two tables (two `Model`s at the same bounds) run on
//! the same inputs. A node is a pair of sets of worlds (every world each side can be in after the
//! same inputs with the same answers); a difference is an answer one side can give to an input
//! and the other cannot. A timer armed on one side only fires there; the other sees time pass.
//! Breadth-first, so the first differences found are the shortest.
//!
//! What a client sees of a step is check/diff.py's `_obs` of model/visible.py's projection: `Seen`
//! compares as diff.py's Obs compares, and `Shown` carries what Python makes its Obs from (a
//! response's repr). A difference goes back as its inputs and the answers seen on the way; Python
//! replays it through its own lockstep to make diff.py's `Difference` records.

use crate::abstract_model::*;
use crate::model::*;
use crate::step::{StepError, Transition};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

pub const DROPPED: &str = "dropped without a response";

/// One thing a client sees in a step: who ("reply", "rid:N", "lost", "spec-defect") and a key
/// equal exactly when check/diff.py's visible JSON is equal.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seen {
    pub who: String,
    pub key: String,
}

/// What a client sees of a step (sorted); empty: nothing answered.
pub type Obs = Vec<Seen>;

/// One item of an answer as Python rebuilds it: `kind` "response" (text: the response's repr)
/// or "text" (text: the Obs text itself).
#[derive(Clone, Debug)]
pub struct Shown {
    pub who: String,
    pub kind: &'static str,
    pub text: String,
}

/// One input of a path and the answer seen.
#[derive(Clone, Debug)]
pub struct Step {
    pub action: Action,
    pub shown: Vec<Shown>,
}

/// A difference: after `path`, side `shown_by` (0: A, 1: B) can answer `action` with `shown` and
/// the other side cannot.
#[derive(Clone, Debug)]
pub struct Found {
    pub depth: usize,
    pub path: Vec<Step>,
    pub action: Action,
    pub shown_by: u8,
    pub shown: Vec<Shown>,
}

#[derive(Debug, Default)]
pub struct DiffOutcome {
    pub nodes: usize,
    pub edges: usize,
    pub depth: usize,
    pub frontier: usize,
    pub complete: bool,
    /// row index of table A -> times fired
    pub rows_fired: FxHashMap<u16, u64>,
    pub seconds: f64,
}

/// What the search asks its caller: at the end of each depth with differences (`finished`), or
/// with the differences of a depth cut short (`!finished`), whether to stop; and now and then
/// (`tick`: nodes, depth, queue, differences) whether to go on.
pub trait Listener {
    fn level(&mut self, found: &[Found], finished: bool) -> Result<bool, String>;
    fn tick(&mut self, nodes: usize, depth: usize, queue: usize, differences: usize) -> Result<(), String>;
}

/// model/visible.py actuals_of (as check/diff.py `visible` narrows it) as a key.
pub fn visible(n: &Names, r: &Resp) -> String {
    let sorted_insts = |it: &mut dyn Iterator<Item = Inst>| {
        let mut v: Vec<Option<String>> = it.map(|i| n.inst(i)).collect();
        v.sort();
        format!("{v:?}")
    };
    match r {
        Resp::Join { error, generation, ptype, pname, leader, member, skip, members } => format!(
            "join|{}|{generation}|{}|{}|{}|{}|{}|{}|{skip}",
            error_name(*error),
            n.mid(*member),
            n.mid(*leader),
            members.len(),
            sorted_insts(&mut members.iter().map(|m| m.instance)),
            ptype_opt(*ptype),
            pname_opt(*pname)
        ),
        Resp::Sync { error, ptype, pname, assignment } => {
            format!("sync|{}|{}|{}|{assignment}", error_name(*error), ptype_opt(*ptype), pname_opt(*pname))
        }
        Resp::Heartbeat { error } => format!("heartbeat|{}", error_name(*error)),
        Resp::Leave { error, members } => format!(
            "leave|{}|{}",
            error_name(*error),
            members.iter().map(|(_, _, e)| error_name(*e)).collect::<Vec<_>>().join(",")
        ),
        Resp::Commit { error } => format!("commit|{}", error_name(*error)),
        Resp::Fetch { error, partition } => format!("fetch|{}|{partition:?}", error_name(*error)),
        Resp::Describe { error, state, ptype, protocol, members } => {
            let mut ids: Vec<String> = members.iter().map(|m| n.mid(m.id)).collect();
            ids.sort();
            format!(
                "describe|{}|{state}|{}|{}|{}|{ids:?}|{}|{}",
                error_name(*error),
                ptype_text(*ptype),
                pname_text(*protocol),
                members.len(),
                sorted_insts(&mut members.iter().map(|m| m.instance)),
                members.iter().all(|m| m.meta.is_none() && !m.assignment)
            )
        }
        Resp::List { error, listed } => format!("list|{}|{}", error_name(*error), listed.is_some() as u8),
        Resp::Delete { error } => format!("delete|{}", error_name(*error)),
    }
}

/// check/diff.py `_obs`: the transition's reply and outputs (and lost deliveries) as seen.
pub fn seen(n: &Names, t: &Transition, lost: (u32, u8)) -> (Obs, Vec<Shown>) {
    let mut obs = Vec::new();
    let mut shown = Vec::new();
    let mut push = |who: String, key: String, kind: &'static str, text: String| {
        obs.push(Seen { who: who.clone(), key });
        shown.push(Shown { who, kind, text });
    };
    if let Some(r) = &t.reply {
        push("reply".to_string(), visible(n, r), "response", n.resp_repr(r));
    }
    for o in &t.outputs {
        let who = format!("rid:{}", o.rid);
        match &o.resp {
            None => push(who, DROPPED.to_string(), "text", DROPPED.to_string()),
            Some(r) => push(who, visible(n, r), "response", n.resp_repr(r)),
        }
    }
    let (bits, nd) = lost;
    if bits != 0 {
        let items: Vec<&str> =
            (0..nd).map(|k| if bits & (1 << (nd - 1 - k)) != 0 { "True" } else { "False" }).collect();
        let text = if items.len() == 1 { format!("({},)", items[0]) } else { format!("({})", items.join(", ")) };
        push("lost".to_string(), text.clone(), "text", text);
    }
    obs.sort();
    (obs, shown)
}

/// check/diff.py Difference.signature's anonymisation: client names and request ids become X.
pub fn anon(s: &str) -> String {
    let b = s.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !word(b[i - 1]);
        if boundary && (b[i] == b'c' || b[i] == b's') && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j + 1 < b.len() && b[j] == b'#' && b[j + 1].is_ascii_digit() {
                j += 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            out.push('X');
            i = j;
            continue;
        }
        if s[i..].starts_with("rid:") && i + 4 < b.len() && b[i + 4].is_ascii_digit() {
            let mut j = i + 4;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            out.push('X');
            i = j;
            continue;
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

/// The name check/abstract.py gives the action's kind.
pub fn kind_name(k: &ActKind) -> &'static str {
    match k {
        ActKind::Send => "send",
        ActKind::Admin => "admin",
        ActKind::Impersonate => "impersonate",
        ActKind::Crash => "crash",
        ActKind::Stall => "stall",
        ActKind::RequestTimeout => "request-timeout",
        ActKind::Timer(ev) => ev.name(),
    }
}

struct Answer {
    shown: Vec<Shown>,
    worlds: Vec<World>,
}

type Outcomes = BTreeMap<Obs, Answer>;
type Node = (Vec<World>, Vec<World>);
type NodeKey = (Vec<Vec<u8>>, Vec<Vec<u8>>);

fn step_err(e: StepError) -> String {
    match e {
        StepError::Defect(d) => d.message,
        StepError::Internal(s) => s,
    }
}

/// Per visible answer, the worlds the side can be in after `a` (diff.py Lockstep.outcomes);
/// `fired` counts the rows taken (None: not counted).
fn outcomes(
    m: &Model,
    worlds: &[World],
    a: &Action,
    mut fired: Option<&mut FxHashMap<u16, u64>>,
) -> Result<Outcomes, String> {
    let mut out: Outcomes = BTreeMap::new();
    let mut succ = Vec::new();
    for w in worlds {
        if matches!(a.kind, ActKind::Timer(_)) && !m.actions(w).contains(a) {
            // the timer is not armed on this side: time passes, nothing happens
            out.entry(Vec::new()).or_insert_with(|| Answer { shown: Vec::new(), worlds: Vec::new() }).worlds.push(w.clone());
            continue;
        }
        succ.clear();
        match m.apply(w, a, &mut succ) {
            Err(StepError::Defect(d)) => {
                let key = vec![Seen { who: "spec-defect".to_string(), key: d.message.clone() }];
                let shown = vec![Shown { who: "spec-defect".to_string(), kind: "text", text: d.message }];
                out.entry(key).or_insert_with(|| Answer { shown, worlds: Vec::new() }).worlds.push(w.clone());
                continue;
            }
            Err(e) => return Err(step_err(e)),
            Ok(()) => {}
        }
        for s in succ.drain(..) {
            let (obs, shown) = match &s.transition {
                None => (Vec::new(), Vec::new()),
                Some(t) => {
                    if let Some(f) = fired.as_deref_mut() {
                        for r in &t.rows {
                            *f.entry(*r).or_insert(0) += 1;
                        }
                    }
                    seen(&m.names, t, s.lost)
                }
            };
            out.entry(obs).or_insert_with(|| Answer { shown, worlds: Vec::new() }).worlds.push(s.world);
        }
    }
    Ok(out)
}

/// The worlds without repeats, in the order of their encodings, and those encodings.
fn canonical(worlds: Vec<World>) -> Result<(Vec<World>, Vec<Vec<u8>>), String> {
    let mut keyed: Vec<(Vec<u8>, World)> = Vec::with_capacity(worlds.len());
    for w in worlds {
        let mut k = Vec::new();
        encode_world(&w, &mut k)?;
        keyed.push((k, w));
    }
    keyed.sort_by(|x, y| x.0.cmp(&y.0));
    keyed.dedup_by(|x, y| x.0 == y.0);
    Ok(keyed.into_iter().map(|(k, w)| (w, k)).unzip())
}

struct Search<'m> {
    models: [&'m Model; 2],
    one_sided: bool,
    ids: FxHashMap<NodeKey, usize>,
    nodes: Vec<Node>,
    parent: Vec<(usize, Option<Step>)>,
    depth: Vec<usize>,
    queue: VecDeque<usize>,
    signatures: FxHashSet<String>,
    level: Vec<Found>,
    out: DiffOutcome,
}

impl Search<'_> {
    fn actions(&self, node: &Node) -> Vec<Action> {
        let mut acts: Vec<Action> = Vec::new();
        for (m, ws) in [(self.models[0], &node.0), (self.models[1], &node.1)] {
            for w in ws {
                for a in m.actions(w) {
                    let variant = m.append_variant(&a).then(|| Action { append_fails: true, ..a.clone() });
                    for v in std::iter::once(a).chain(variant) {
                        if !acts.contains(&v) {
                            acts.push(v);
                        }
                    }
                }
            }
        }
        acts
    }

    fn add(&mut self, worlds: (Vec<World>, Vec<World>), n: usize, step: Step) -> Result<(), String> {
        let (a, ka) = canonical(worlds.0)?;
        let (b, kb) = canonical(worlds.1)?;
        let key = (ka, kb);
        if self.ids.contains_key(&key) {
            return Ok(());
        }
        let k = self.nodes.len();
        self.ids.insert(key, k);
        self.nodes.push((a, b));
        self.parent.push((n, Some(step)));
        self.depth.push(self.depth[n] + 1);
        self.queue.push_back(k);
        Ok(())
    }

    fn path(&self, mut n: usize) -> Vec<Step> {
        let mut out = Vec::new();
        while let (p, Some(step)) = &self.parent[n] {
            out.push(step.clone());
            n = *p;
        }
        out.reverse();
        out
    }

    /// Every input on node `n`; false (nothing tried) beyond the bounds.
    fn expand(&mut self, n: usize) -> Result<bool, String> {
        let node = &self.nodes[n];
        let inside = |m: &Model, ws: &Vec<World>| ws.iter().all(|w| m.within_bounds(w));
        if !(inside(self.models[0], &node.0) && inside(self.models[1], &node.1)) {
            self.out.frontier += 1;
            return Ok(false);
        }
        let acts = self.actions(node);
        for act in acts {
            let node = &self.nodes[n];
            let oa = outcomes(self.models[0], &node.0, &act, Some(&mut self.out.rows_fired))?;
            let ob = outcomes(self.models[1], &node.1, &act, None)?;
            let mut extra: Vec<(u8, &Obs, &Answer)> =
                oa.iter().filter(|(o, _)| !ob.contains_key(*o)).map(|(o, x)| (0, o, x)).collect();
            if !self.one_sided {
                extra.extend(ob.iter().filter(|(o, _)| !oa.contains_key(*o)).map(|(o, x)| (1, o, x)));
            }
            if !extra.is_empty() {
                let req = act.req.as_ref().map(|r| r.event().name()).unwrap_or("");
                let mut sig = format!("{}|{req}", kind_name(&act.kind));
                for (side, o, _) in &extra {
                    sig.push_str(&format!("|{side}:{}", anon(&format!("{o:?}"))));
                }
                if self.signatures.insert(sig) {
                    let (side, _, x) = extra[0];
                    self.level.push(Found {
                        depth: self.depth[n] + 1,
                        path: self.path(n),
                        action: act.clone(),
                        shown_by: side,
                        shown: x.shown.clone(),
                    });
                }
            }
            let mut next = Vec::new();
            for (o, x) in oa {
                if let Some(y) = ob.get(&o) {
                    next.push(((x.worlds, y.worlds.clone()), Step { action: act.clone(), shown: x.shown }));
                }
            }
            for (worlds, step) in next {
                self.out.edges += 1;
                self.add(worlds, n, step)?;
            }
        }
        Ok(true)
    }
}

/// check/diff.py explore_diff's search: breadth-first over the lockstep product of `a` and `b`
/// (same bounds), the differences of each depth handed to `listener`.
pub fn lockstep(
    a: &Model,
    b: &Model,
    one_sided: bool,
    max_nodes: Option<usize>,
    listener: &mut dyn Listener,
) -> Result<DiffOutcome, String> {
    let start = Instant::now();
    let mut s = Search {
        models: [a, b],
        one_sided,
        ids: FxHashMap::default(),
        nodes: Vec::new(),
        parent: Vec::new(),
        depth: Vec::new(),
        queue: VecDeque::new(),
        signatures: FxHashSet::default(),
        level: Vec::new(),
        out: DiffOutcome { complete: true, ..DiffOutcome::default() },
    };
    let (wa, ka) = canonical(vec![a.initial()])?;
    let (wb, kb) = canonical(vec![b.initial()])?;
    s.ids.insert((ka, kb), 0);
    s.nodes.push((wa, wb));
    s.parent.push((0, None));
    s.depth.push(0);
    s.queue.push_back(0);
    let mut current = 0;
    let mut stopped = false;
    let mut expanded = 0usize;
    while let Some(&n) = s.queue.front() {
        if s.depth[n] > current {
            if !s.level.is_empty() {
                let level = std::mem::take(&mut s.level);
                if listener.level(&level, true)? {
                    stopped = true;
                    break;
                }
            }
            current = s.depth[n];
        }
        s.queue.pop_front();
        if !s.expand(n)? {
            continue;
        }
        expanded += 1;
        if expanded.is_multiple_of(512) {
            listener.tick(s.nodes.len(), s.depth[n], s.queue.len(), s.signatures.len())?;
        }
        if max_nodes.is_some_and(|m| s.nodes.len() >= m) {
            s.out.complete = false;
            stopped = true;
            break;
        }
    }
    if !stopped && !s.level.is_empty() {
        let level = std::mem::take(&mut s.level);
        listener.level(&level, true)?;
    }
    if !s.level.is_empty() {
        let level = std::mem::take(&mut s.level);
        listener.level(&level, false)?;
    }
    s.out.nodes = s.nodes.len();
    s.out.depth = s.depth.iter().copied().max().unwrap_or(0);
    s.out.seconds = start.elapsed().as_secs_f64();
    Ok(s.out)
}
