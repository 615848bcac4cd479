//! traces/replay.py's GroupReplay natively: one group's events, in order, through the concrete
//! mode (concrete.rs), each recorded response compared with the model's under the bijection of
//! recorded and model member ids, recorded transitions checked at step boundaries.
//!
//! The native replay only ever says "this group replays clean" (the verdict `ok`, with the rows
//! it fired). Anything else (a divergence, a gap, a payload traces/codec.py would reject, an
//! event out of order, a request or value this mode lacks) is a `Stop` with the reason: the
//! Python replay then judges the group and writes the verdict, so every verdict other than `ok`
//! is Python's own. Payloads are decoded at least as strictly as traces/codec.py does.

use crate::concrete::*;
use crate::model::{error_from_name, ErrCode, State, E_NONE};
use crate::step::Table;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};
use std::rc::Rc;

/// Why the native replay hands the group back to Python.
pub type Stop = String;

/// One event (trace row) of a group, as the columns give it.
pub struct Event<'a> {
    pub seq: i64,
    pub ts: i64,
    pub kind: &'a str,
    pub api: Option<&'a str>,
    pub request_id: Option<i64>,
    pub generation: Option<i64>,
    pub to_state: Option<&'a str>,
    pub payload: Option<&'a str>,
}

/// CoordinatorConfig's defaults (handed over from Python).
#[derive(Clone, Debug)]
pub struct Defaults {
    pub min_session_timeout_ms: i64,
    pub max_session_timeout_ms: i64,
    pub group_max_size: i64,
    pub initial_rebalance_delay_ms: i64,
    pub new_member_join_timeout_ms: i64,
}

// ------------------------------------------------------------------ payloads (traces/codec.py)

type Obj = Map<String, Value>;

fn object<'a>(v: &'a Value, fields: &[&str], required: &[&str], what: &str) -> Result<&'a Obj, Stop> {
    let o = v.as_object().ok_or_else(|| format!("{what}: not an object"))?;
    if let Some(k) = o.keys().find(|k| *k != "type" && !fields.contains(&k.as_str())) {
        return Err(format!("{what}: unknown field {k}"));
    }
    if let Some(k) = required.iter().find(|k| !o.contains_key(**k)) {
        return Err(format!("{what}: missing field {k}"));
    }
    Ok(o)
}

fn text(v: &Value) -> Result<Str, Stop> {
    v.as_str().map(Rc::from).ok_or_else(|| "expected a string".to_string())
}
fn opt_text(v: Option<&Value>) -> Result<Option<Str>, Stop> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(x) => text(x).map(Some),
    }
}
fn text_or(v: Option<&Value>, default: &str) -> Result<Str, Stop> {
    v.map(text).unwrap_or_else(|| Ok(Rc::from(default)))
}
fn int(v: &Value) -> Result<i64, Stop> {
    match v {
        Value::Number(n) if !n.is_f64() => n.as_i64().ok_or_else(|| "an integer beyond 64 bits".to_string()),
        _ => Err("expected an integer".to_string()),
    }
}
fn int_or(v: Option<&Value>, default: i64) -> Result<i64, Stop> {
    v.map(int).unwrap_or(Ok(default))
}
fn flag_or(v: Option<&Value>, default: bool) -> Result<bool, Stop> {
    match v {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err("expected a boolean".to_string()),
    }
}
fn bytes_or_empty(v: Option<&Value>) -> Result<Bytes, Stop> {
    match v {
        None => Ok(empty_bytes()),
        Some(x) => hex(x),
    }
}
/// Lower- or upper-case hex digits in pairs (bytes.fromhex also takes spaces: those go to Python).
fn hex(v: &Value) -> Result<Bytes, Stop> {
    let s = v.as_str().ok_or("expected a hex string")?.as_bytes();
    if s.len() % 2 != 0 {
        return Err("odd hex string".into());
    }
    let digit = |c: u8| -> Result<u8, Stop> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err("not a hex digit".into()),
        }
    };
    let mut out = Vec::with_capacity(s.len() / 2);
    for pair in s.chunks(2) {
        out.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Ok(Rc::from(out))
}
fn error(v: &Value) -> Result<ErrCode, Stop> {
    let s = v.as_str().ok_or("expected an error name")?;
    error_from_name(s).ok_or_else(|| format!("no native error {s}"))
}
/// TopicPartition.parse: "topic-3".
fn topic_partition(v: &Value) -> Result<Tp, Stop> {
    let s = v.as_str().ok_or("expected TOPIC-PARTITION")?;
    let (topic, part) = s.rsplit_once('-').ok_or("expected TOPIC-PARTITION")?;
    if topic.is_empty() || part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
        return Err("expected TOPIC-PARTITION".into());
    }
    Ok(Tp { topic: Rc::from(topic), partition: part.parse::<i64>().map_err(|_| "partition beyond 64 bits")? })
}
fn list(v: &Value) -> Result<&Vec<Value>, Stop> {
    v.as_array().ok_or_else(|| "expected a list".to_string())
}
fn pair(v: &Value, n: usize) -> Result<&Vec<Value>, Stop> {
    let l = list(v)?;
    if l.len() != n {
        return Err(format!("expected a list of {n}"));
    }
    Ok(l)
}
fn api_key(o: &Obj, api: &str) -> Result<(), Stop> {
    match o.get("api_key") {
        None => Ok(()),
        Some(v) if v.as_str() == Some(api) => Ok(()),
        Some(_) => Err("api_key differs from column api".into()),
    }
}

fn record_type<'a>(v: &'a Value, expected: &str) -> Result<&'a Value, Stop> {
    match v.get("type").and_then(Value::as_str) {
        Some(t) if t == expected => Ok(v),
        _ => Err(format!("payload is not a {expected}")),
    }
}

/// A request payload of this group (traces/validate.py decode_payload's checks included).
pub fn decode_request(payload: &str, api: &str, group_id: &str) -> Result<Req, Stop> {
    let v: Value = serde_json::from_str(payload).map_err(|e| format!("payload: {e}"))?;
    let group = |o: &Obj| -> Result<(), Stop> {
        match o.get("group_id").and_then(Value::as_str) {
            Some(g) if g == group_id => Ok(()),
            _ => Err("payload group_id differs".into()),
        }
    };
    let req = match api {
        "JoinGroup" => {
            let o = object(
                record_type(&v, "JoinGroupRequest")?,
                &[
                    "group_id", "member_id", "protocol_type", "protocols", "session_timeout_ms", "rebalance_timeout_ms",
                    "group_instance_id", "require_known_member_id", "supports_skip_assignment", "client_id", "reason",
                    "api_key",
                ],
                &["group_id", "member_id", "protocol_type", "protocols"],
                "JoinGroupRequest",
            )?;
            group(o)?;
            api_key(o, api)?;
            opt_text(o.get("reason"))?;
            let mut protocols = Vec::new();
            for p in list(&o["protocols"])? {
                let po = object(p, &["name", "metadata"], &["name"], "ProtocolMetadata")?;
                protocols.push(Proto { name: text(&po["name"])?, metadata: bytes_or_empty(po.get("metadata"))? });
            }
            Req::Join(JoinReq {
                member: text(&o["member_id"])?,
                ptype: text(&o["protocol_type"])?,
                protocols: Rc::from(protocols),
                session_timeout: int_or(o.get("session_timeout_ms"), 10000)?,
                rebalance_timeout: int_or(o.get("rebalance_timeout_ms"), 300000)?,
                instance: opt_text(o.get("group_instance_id"))?,
                require_known: flag_or(o.get("require_known_member_id"), true)?,
                skip: flag_or(o.get("supports_skip_assignment"), true)?,
                client: text_or(o.get("client_id"), "consumer")?,
            })
        }
        "SyncGroup" => {
            let o = object(
                record_type(&v, "SyncGroupRequest")?,
                &[
                    "group_id", "member_id", "generation_id", "group_instance_id", "protocol_type", "protocol_name",
                    "assignments", "api_key",
                ],
                &["group_id", "member_id", "generation_id"],
                "SyncGroupRequest",
            )?;
            group(o)?;
            api_key(o, api)?;
            let mut assignments = Vec::new();
            if let Some(a) = o.get("assignments") {
                for x in list(a)? {
                    let p = pair(x, 2)?;
                    assignments.push((text(&p[0])?, hex(&p[1])?));
                }
            }
            Req::Sync {
                member: text(&o["member_id"])?,
                generation: int(&o["generation_id"])?,
                instance: opt_text(o.get("group_instance_id"))?,
                ptype: opt_text(o.get("protocol_type"))?,
                pname: opt_text(o.get("protocol_name"))?,
                assignments,
            }
        }
        "Heartbeat" => {
            let o = object(
                record_type(&v, "HeartbeatRequest")?,
                &["group_id", "member_id", "generation_id", "group_instance_id", "api_key"],
                &["group_id", "member_id", "generation_id"],
                "HeartbeatRequest",
            )?;
            group(o)?;
            api_key(o, api)?;
            Req::Heartbeat {
                member: text(&o["member_id"])?,
                generation: int(&o["generation_id"])?,
                instance: opt_text(o.get("group_instance_id"))?,
            }
        }
        "LeaveGroup" => {
            let o = object(
                record_type(&v, "LeaveGroupRequest")?,
                &["group_id", "members", "api_key"],
                &["group_id", "members"],
                "LeaveGroupRequest",
            )?;
            group(o)?;
            api_key(o, api)?;
            let mut members = Vec::new();
            for m in list(&o["members"])? {
                let mo = object(m, &["member_id", "group_instance_id"], &["member_id"], "MemberIdentity")?;
                members.push((text(&mo["member_id"])?, opt_text(mo.get("group_instance_id"))?));
            }
            Req::Leave { members }
        }
        "OffsetCommit" => {
            let o = object(
                record_type(&v, "OffsetCommitRequest")?,
                &["group_id", "member_id", "generation_id", "offsets", "group_instance_id", "api_key"],
                &["group_id", "member_id", "generation_id", "offsets"],
                "OffsetCommitRequest",
            )?;
            group(o)?;
            api_key(o, api)?;
            let mut offsets = Vec::new();
            for x in list(&o["offsets"])? {
                let p = pair(x, 2)?;
                offsets.push((topic_partition(&p[0])?, int(&p[1])?));
            }
            Req::Commit {
                member: text(&o["member_id"])?,
                generation: int(&o["generation_id"])?,
                offsets,
                instance: opt_text(o.get("group_instance_id"))?,
            }
        }
        "OffsetFetch" => {
            let o = object(
                record_type(&v, "OffsetFetchRequest")?,
                &["group_id", "partitions", "api_key"],
                &["group_id", "partitions"],
                "OffsetFetchRequest",
            )?;
            group(o)?;
            api_key(o, api)?;
            let partitions = match &o["partitions"] {
                Value::Null => None,
                p => Some(list(p)?.iter().map(topic_partition).collect::<Result<Vec<_>, _>>()?),
            };
            Req::Fetch { partitions }
        }
        other => return Err(format!("{other} requests are not replayed natively")),
    };
    Ok(req)
}

/// A response payload answering `api` (traces/codec.py's response record for it).
pub fn decode_response(payload: &str, api: &str) -> Result<Resp, Stop> {
    let v: Value = serde_json::from_str(payload).map_err(|e| format!("payload: {e}"))?;
    Ok(match api {
        "JoinGroup" => {
            let o = object(
                record_type(&v, "JoinGroupResponse")?,
                &["error", "generation_id", "protocol_type", "protocol_name", "leader", "member_id", "skip_assignment", "members"],
                &["error"],
                "JoinGroupResponse",
            )?;
            let mut members = Vec::new();
            if let Some(ms) = o.get("members") {
                for m in list(ms)? {
                    let mo = object(
                        m,
                        &["member_id", "group_instance_id", "metadata"],
                        &["member_id", "group_instance_id", "metadata"],
                        "JoinGroupMember",
                    )?;
                    members.push(JoinMember {
                        id: text(&mo["member_id"])?,
                        instance: opt_text(mo.get("group_instance_id"))?,
                        metadata: hex(&mo["metadata"])?,
                    });
                }
            }
            Resp::Join {
                error: error(&o["error"])?,
                generation: int_or(o.get("generation_id"), -1)?,
                ptype: opt_text(o.get("protocol_type"))?,
                pname: opt_text(o.get("protocol_name"))?,
                leader: text_or(o.get("leader"), "")?,
                member: text_or(o.get("member_id"), "")?,
                skip: flag_or(o.get("skip_assignment"), false)?,
                members,
            }
        }
        "SyncGroup" => {
            let o = object(
                record_type(&v, "SyncGroupResponse")?,
                &["error", "protocol_type", "protocol_name", "assignment"],
                &["error"],
                "SyncGroupResponse",
            )?;
            Resp::Sync {
                error: error(&o["error"])?,
                ptype: opt_text(o.get("protocol_type"))?,
                pname: opt_text(o.get("protocol_name"))?,
                assignment: bytes_or_empty(o.get("assignment"))?,
            }
        }
        "Heartbeat" => {
            let o = object(record_type(&v, "HeartbeatResponse")?, &["error"], &["error"], "HeartbeatResponse")?;
            Resp::Heartbeat { error: error(&o["error"])? }
        }
        "LeaveGroup" => {
            let o = object(record_type(&v, "LeaveGroupResponse")?, &["error", "members"], &["error"], "LeaveGroupResponse")?;
            let mut members = Vec::new();
            if let Some(ms) = o.get("members") {
                for m in list(ms)? {
                    let mo = object(
                        m,
                        &["member_id", "group_instance_id", "error"],
                        &["member_id", "group_instance_id", "error"],
                        "MemberLeaveResult",
                    )?;
                    members.push((text(&mo["member_id"])?, opt_text(mo.get("group_instance_id"))?, error(&mo["error"])?));
                }
            }
            Resp::Leave { error: error(&o["error"])?, members }
        }
        "OffsetCommit" => {
            let o = object(record_type(&v, "OffsetCommitResponse")?, &["partitions"], &["partitions"], "OffsetCommitResponse")?;
            let mut partitions = Vec::new();
            for x in list(&o["partitions"])? {
                let p = pair(x, 2)?;
                partitions.push((topic_partition(&p[0])?, error(&p[1])?));
            }
            Resp::Commit { partitions }
        }
        "OffsetFetch" => {
            let o = object(record_type(&v, "OffsetFetchResponse")?, &["error", "partitions"], &["error"], "OffsetFetchResponse")?;
            let mut partitions = Vec::new();
            if let Some(ps) = o.get("partitions") {
                for x in list(ps)? {
                    let p = pair(x, 3)?;
                    partitions.push((topic_partition(&p[0])?, int(&p[1])?, error(&p[2])?));
                }
            }
            Resp::Fetch { error: error(&o["error"])?, partitions }
        }
        other => return Err(format!("{other} responses are not replayed natively")),
    })
}

/// A `kind=config` payload (codec.loads_config) as the group's Settings and whether it is owned.
pub fn decode_config(payload: &str, d: &Defaults, group_id: &str) -> Result<(Settings, bool), Stop> {
    let v: Value = serde_json::from_str(payload).map_err(|e| format!("config: {e}"))?;
    let o = v.as_object().ok_or("config: not an object")?;
    let mut s = Settings {
        min_session_timeout_ms: d.min_session_timeout_ms,
        max_session_timeout_ms: d.max_session_timeout_ms,
        group_max_size: d.group_max_size,
        initial_rebalance_delay_ms: d.initial_rebalance_delay_ms,
        new_member_join_timeout_ms: d.new_member_join_timeout_ms,
        append_ok: true,
        append_error: E_NONE,
        group_id_empty: group_id.is_empty(),
    };
    let mut owned = true;
    for (k, x) in o {
        match k.as_str() {
            "group_min_session_timeout_ms" => s.min_session_timeout_ms = int(x)?,
            "group_max_session_timeout_ms" => s.max_session_timeout_ms = int(x)?,
            "group_max_size" => s.group_max_size = int(x)?,
            "group_initial_rebalance_delay_ms" => s.initial_rebalance_delay_ms = int(x)?,
            "new_member_join_timeout_ms" => s.new_member_join_timeout_ms = int(x)?,
            "not_owned_groups" => {
                for g in list(x)? {
                    if &*text(g)? == group_id {
                        owned = false;
                    }
                }
            }
            "append_result" => {
                let e = error(x)?;
                s.append_ok = e == E_NONE;
                s.append_error = e;
            }
            other => return Err(format!("config: unknown field {other}")),
        }
    }
    Ok((s, owned))
}

// ------------------------------------------------------------------ the id bijection

#[derive(Default)]
struct MemberIds {
    to_model: FxHashMap<Str, Str>,
    to_trace: FxHashMap<Str, Str>,
}

impl MemberIds {
    fn unify(&mut self, recorded: &Str, produced: &Str) -> bool {
        match self.to_model.get(recorded) {
            Some(bound) => bound == produced,
            None if self.to_trace.contains_key(produced) => false,
            None => {
                self.to_model.insert(recorded.clone(), produced.clone());
                self.to_trace.insert(produced.clone(), recorded.clone());
                true
            }
        }
    }
    /// An id field: unified when both sides name one, else compared.
    fn id(&mut self, recorded: &Str, produced: &Str) -> bool {
        if recorded.is_empty() || produced.is_empty() {
            recorded == produced
        } else {
            self.unify(recorded, produced)
        }
    }
    fn model_id(&self, recorded: &Str) -> Str {
        if recorded.is_empty() {
            return recorded.clone();
        }
        self.to_model.get(recorded).cloned().unwrap_or_else(|| recorded.clone())
    }
    /// replay.py _translate_request: recorded ids -> the model's (unknown ids pass through).
    fn translate(&self, r: Req) -> Req {
        match r {
            Req::Join(mut j) => {
                j.member = self.model_id(&j.member);
                Req::Join(j)
            }
            Req::Sync { member, generation, instance, ptype, pname, assignments } => Req::Sync {
                member: self.model_id(&member),
                generation,
                instance,
                ptype,
                pname,
                assignments: assignments.into_iter().map(|(m, a)| (self.model_id(&m), a)).collect(),
            },
            Req::Heartbeat { member, generation, instance } => {
                Req::Heartbeat { member: self.model_id(&member), generation, instance }
            }
            Req::Leave { members } => {
                Req::Leave { members: members.into_iter().map(|(m, i)| (self.model_id(&m), i)).collect() }
            }
            Req::Commit { member, generation, offsets, instance } => {
                Req::Commit { member: self.model_id(&member), generation, offsets, instance }
            }
            r @ Req::Fetch { .. } => r,
        }
    }

    /// replay.py _align without the leader's member list: equal field by field, ids unified.
    fn align(&mut self, recorded: &Resp, produced: &Resp) -> bool {
        match (recorded, produced) {
            (
                Resp::Join { error: e1, generation: g1, ptype: t1, pname: n1, leader: l1, member: m1, skip: s1, .. },
                Resp::Join { error: e2, generation: g2, ptype: t2, pname: n2, leader: l2, member: m2, skip: s2, .. },
            ) => e1 == e2 && g1 == g2 && t1 == t2 && n1 == n2 && self.id(l1, l2) && self.id(m1, m2) && s1 == s2,
            (Resp::Leave { error: e1, members: a }, Resp::Leave { error: e2, members: b }) => {
                e1 == e2
                    && a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| self.id(&x.0, &y.0) && x.1 == y.1 && x.2 == y.2)
            }
            (Resp::Sync { .. }, Resp::Sync { .. })
            | (Resp::Heartbeat { .. }, Resp::Heartbeat { .. })
            | (Resp::Commit { .. }, Resp::Commit { .. })
            | (Resp::Fetch { .. }, Resp::Fetch { .. }) => recorded == produced,
            _ => false,
        }
    }

    /// replay.py _align_members: the leader's member list, in any order.
    fn align_members(&mut self, recorded: &[JoinMember], produced: &[JoinMember]) -> bool {
        if recorded.len() != produced.len() {
            return false;
        }
        let key = |m: &JoinMember, to: Option<&FxHashMap<Str, Str>>| {
            let id = to.and_then(|t| t.get(&m.id)).map(|x| x.to_string()).unwrap_or_else(|| format!("~{}", m.id));
            (id, m.instance.clone().unwrap_or_else(empty_str), m.metadata.clone())
        };
        let mut rec: Vec<_> = recorded.iter().map(|m| (key(m, None), m)).collect();
        let mut prod: Vec<_> = produced.iter().map(|m| (key(m, Some(&self.to_trace)), m)).collect();
        rec.sort_by(|a, b| a.0.cmp(&b.0));
        prod.sort_by(|a, b| a.0.cmp(&b.0));
        rec.iter().zip(&prod).all(|((_, r), (_, p))| self.id(&r.id, &p.id) && r.instance == p.instance && r.metadata == p.metadata)
    }
}

// ------------------------------------------------------------------ the replay of one group

pub struct GroupReplay<'t> {
    table: &'t Table,
    defaults: &'t Defaults,
    group_id: &'t str,
    model: Option<Coordinator<'t>>,
    ids: MemberIds,
    produced: FxHashMap<i64, Resp>,
    answered: FxHashSet<i64>,
    unanswered: FxHashSet<i64>,
    sent: FxHashSet<i64>,
    step_transition: Option<(String, i64)>,
    step_members: Vec<(Vec<JoinMember>, Vec<JoinMember>)>,
    trace_state: Option<(String, i64)>,
    next_seq: i64,
    previous: Option<(i64, i64)>,
    last_kind: Option<String>,
    delivered: Vec<(i64, Resp)>,
}

impl<'t> GroupReplay<'t> {
    pub fn new(table: &'t Table, defaults: &'t Defaults, group_id: &'t str) -> GroupReplay<'t> {
        GroupReplay {
            table,
            defaults,
            group_id,
            model: None,
            ids: MemberIds::default(),
            produced: FxHashMap::default(),
            answered: FxHashSet::default(),
            unanswered: FxHashSet::default(),
            sent: FxHashSet::default(),
            step_transition: None,
            step_members: Vec::new(),
            trace_state: None,
            next_seq: 0,
            previous: None,
            last_kind: None,
            delivered: Vec::new(),
        }
    }

    fn default_settings(&self) -> Settings {
        let d = self.defaults;
        Settings {
            min_session_timeout_ms: d.min_session_timeout_ms,
            max_session_timeout_ms: d.max_session_timeout_ms,
            group_max_size: d.group_max_size,
            initial_rebalance_delay_ms: d.initial_rebalance_delay_ms,
            new_member_join_timeout_ms: d.new_member_join_timeout_ms,
            append_ok: true,
            append_error: E_NONE,
            group_id_empty: self.group_id.is_empty(),
        }
    }

    fn coordinator(&mut self) -> &mut Coordinator<'t> {
        if self.model.is_none() {
            self.model = Some(Coordinator::new(self.table, self.default_settings(), true));
        }
        self.model.as_mut().expect("just made")
    }

    fn take_delivered(&mut self) {
        for (rid, resp) in self.delivered.drain(..) {
            if !self.answered.contains(&rid) {
                self.unanswered.insert(rid);
            }
            self.produced.insert(rid, resp);
        }
    }

    fn advance_to(&mut self, ts: i64) -> Result<(), Stop> {
        let mut out = std::mem::take(&mut self.delivered);
        let m = self.coordinator();
        if ts > m.now_ms() {
            let by = ts - m.now_ms();
            m.advance(by, &mut out)?;
        }
        self.delivered = out;
        self.take_delivered();
        Ok(())
    }

    fn model_state(&self) -> (String, Option<i64>) {
        let g = self.model.as_ref().map(|m| &m.group);
        match g {
            Some(g) if !matches!(g.state, State::Dead | State::Missing) => (g.state.name().to_string(), Some(g.generation)),
            _ => ("Missing".to_string(), None),
        }
    }

    fn boundary(&mut self, at_kind: &str) -> Result<(), Stop> {
        for (rec, prod) in std::mem::take(&mut self.step_members) {
            if !self.ids.align_members(&rec, &prod) {
                return Err("the leader's member list differs".into());
            }
        }
        if let Some(t) = self.step_transition.take() {
            self.trace_state = Some(t);
        }
        if let Some((to, generation)) = &self.trace_state {
            let (state, gen) = self.model_state();
            let gone = |s: &str| s == "Dead" || s == "Missing";
            let same = (gone(&state) && gone(to)) || (state == *to && gen == Some(*generation));
            if !same {
                return Err("the model is not where the trace is".into());
            }
        }
        if !self.unanswered.is_empty() && at_kind != "response" {
            return Err("a response the trace does not record".into());
        }
        Ok(())
    }

    pub fn feed(&mut self, e: &Event) -> Result<(), Stop> {
        if let Some((seq, ts)) = self.previous {
            if e.seq == seq || e.ts < ts {
                return Err("a duplicate or out-of-order event".into());
            }
        }
        self.previous = Some((e.seq, e.ts));
        if e.seq != self.next_seq {
            return Err("a gap in the trace".into());
        }
        self.next_seq += 1;
        self.last_kind = Some(e.kind.to_string());
        match e.kind {
            "request" | "advance" => {
                if self.model.is_some() {
                    self.boundary(e.kind)?;
                }
                if e.kind == "advance" {
                    self.advance_to(e.ts)?;
                } else {
                    self.request(e)?;
                }
            }
            "response" => self.response(e)?,
            "transition" => {
                let to = e.to_state.ok_or("a transition without to_state")?;
                let g = e.generation.ok_or("a transition without generation")?;
                self.step_transition = Some((to.to_string(), g));
            }
            "config" => {
                if self.model.is_some() {
                    return Err("config in mid-trace".into());
                }
                let (s, owned) = decode_config(e.payload.ok_or("config without payload")?, self.defaults, self.group_id)?;
                self.model = Some(Coordinator::new(self.table, s, owned));
            }
            _ => {}
        }
        Ok(())
    }

    fn request(&mut self, e: &Event) -> Result<(), Stop> {
        let api = e.api.ok_or("a request without api")?;
        let rid = e.request_id.ok_or("a request without request_id")?;
        let req = decode_request(e.payload.ok_or("a request without payload")?, api, self.group_id)?;
        self.advance_to(e.ts)?;
        if !self.sent.insert(rid) {
            return Err("request id reused".into());
        }
        let req = Rc::new(self.ids.translate(req));
        let mut out = std::mem::take(&mut self.delivered);
        self.coordinator().handle(req, rid, &mut out)?;
        self.delivered = out;
        self.take_delivered();
        Ok(())
    }

    fn response(&mut self, e: &Event) -> Result<(), Stop> {
        let api = e.api.ok_or("a response without api")?;
        let rid = e.request_id.ok_or("a response without request_id")?;
        let recorded = decode_response(e.payload.ok_or("a response without payload")?, api)?;
        if self.answered.contains(&rid) {
            return Err("a second response".into());
        }
        let produced = self.produced.get(&rid).cloned().ok_or("no response from the model yet")?;
        self.answered.insert(rid);
        self.unanswered.remove(&rid);
        if !self.ids.align(&recorded, &produced) {
            return Err("the response differs".into());
        }
        if let (Resp::Join { members: a, .. }, Resp::Join { members: b, .. }) = (&recorded, &produced) {
            if !a.is_empty() || !b.is_empty() {
                self.step_members.push((a.clone(), b.clone()));
            }
        }
        Ok(())
    }

    /// The end of the trace: the last step boundary; the rows fired (Ok: the group replays clean).
    pub fn finish(mut self) -> Result<Vec<u16>, Stop> {
        if let Some(kind) = self.last_kind.take() {
            if self.model.is_some() {
                self.boundary(&kind)?;
            }
        }
        Ok(self.model.map(|m| m.fired).unwrap_or_default())
    }
}

/// One group's events through the native replay: Ok(rows fired) when it replays clean.
pub fn replay_group<'a>(
    table: &Table,
    defaults: &Defaults,
    group_id: &str,
    events: impl Iterator<Item = Event<'a>>,
) -> Result<Vec<u16>, Stop> {
    let mut r = GroupReplay::new(table, defaults, group_id);
    for e in events {
        r.feed(&e)?;
    }
    r.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_decoded_at_least_as_strictly_as_codec() {
        let hb = r#"{"type":"HeartbeatRequest","group_id":"g","member_id":"m","generation_id":1}"#;
        assert!(matches!(decode_request(hb, "Heartbeat", "g"), Ok(Req::Heartbeat { generation: 1, .. })));
        for bad in [
            r#"{"type":"HeartbeatRequest","group_id":"g","member_id":"m","generation_id":true}"#,
            r#"{"type":"HeartbeatRequest","group_id":"g","member_id":"m","generation_id":1.0}"#,
            r#"{"type":"HeartbeatRequest","group_id":"g","member_id":"m"}"#,
            r#"{"type":"HeartbeatRequest","group_id":"g","member_id":"m","generation_id":1,"extra":0}"#,
            r#"{"type":"HeartbeatRequest","group_id":"other","member_id":"m","generation_id":1}"#,
            r#"{"type":"SyncGroupRequest","group_id":"g","member_id":"m","generation_id":1}"#,
            r#"{"type":"HeartbeatRequest","group_id":"g","member_id":"m","generation_id":1,"api_key":"SyncGroup"}"#,
        ] {
            assert!(decode_request(bad, "Heartbeat", "g").is_err(), "{bad}");
        }
        let commit = r#"{"type":"OffsetCommitRequest","group_id":"g","member_id":"","generation_id":-1,"offsets":[["t-0",5]]}"#;
        assert!(decode_request(commit, "OffsetCommit", "g").is_ok());
        let bad_tp = commit.replace("t-0", "t-x");
        assert!(decode_request(&bad_tp, "OffsetCommit", "g").is_err());
        let join = r#"{"type":"JoinGroupResponse","error":"NONE","members":[{"member_id":"a","group_instance_id":null,"metadata":"0A"}]}"#;
        assert!(matches!(decode_response(join, "JoinGroup"), Ok(Resp::Join { generation: -1, .. })));
        assert!(decode_response(&join.replace("0A", "0 A"), "JoinGroup").is_err());
        assert!(decode_response(&join.replace("NONE", "NO_SUCH_ERROR"), "JoinGroup").is_err());
    }

    #[test]
    fn ids_are_a_bijection() {
        let mut ids = MemberIds::default();
        let (a, b, x, y): (Str, Str, Str, Str) = ("a".into(), "b".into(), "x".into(), "y".into());
        assert!(ids.unify(&a, &x) && ids.unify(&a, &x));
        assert!(!ids.unify(&a, &y), "a is bound to x");
        assert!(!ids.unify(&b, &x), "x is bound to a");
        assert!(ids.unify(&b, &y));
        assert!(ids.id(&empty_str(), &empty_str()) && !ids.id(&empty_str(), &x));
    }
}
