//! Unit tests of the pieces that need no table (the table comes from Python; the agreement with
//! model.step is tested from Python, tests/engine).

use crate::abstract_model::*;
use crate::model::*;
use crate::step::*;

fn row(id: &str, event: &str, guard: &[(&str, bool)], form: &str, next: Option<&str>, effects: &[&str]) -> RowData {
    RowData {
        id: id.to_string(),
        states: vec![id.split('/').next().unwrap_or("").to_string()],
        event: event.to_string(),
        guard: guard.iter().map(|(a, p)| (a.to_string(), *p)).collect(),
        form: form.to_string(),
        error: "NONE".to_string(),
        next_state: next.map(|s| s.to_string()),
        effects: effects.iter().map(|s| s.to_string()).collect(),
        new_incarnation: false,
    }
}

fn fields() -> Vec<(String, Vec<String>)> {
    EFFECTS.iter().map(|(n, _)| (n.to_string(), vec!["members".to_string()])).collect()
}

fn group_fields() -> Vec<String> {
    FIELDS.iter().map(|(n, _)| n.to_string()).collect()
}

#[test]
fn unknown_atom_effect_and_form_are_named() {
    let bad = vec![row("Missing/JoinGroup/x", "JoinGroup", &[("no-such-atom", true)], "error", None, &[])];
    let e = Table::new(bad, vec![], fields(), group_fields()).err().unwrap_or_default();
    assert!(e.contains("no-such-atom"), "{e}");
    let bad = vec![row("Missing/JoinGroup/x", "JoinGroup", &[], "error", None, &["no-such-effect"])];
    let e = Table::new(bad, vec![], fields(), group_fields()).err().unwrap_or_default();
    assert!(e.contains("no-such-effect"), "{e}");
    let bad = vec![row("Missing/JoinGroup/x", "JoinGroup", &[], "no-such-form", None, &[])];
    let e = Table::new(bad, vec![], fields(), group_fields()).err().unwrap_or_default();
    assert!(e.contains("no-such-form"), "{e}");
}

#[test]
fn group_fields_the_engine_lacks_or_misses_are_named() {
    let mut given = group_fields();
    given.push("moon_phase".to_string());
    let e = Table::new(vec![], vec![], fields(), given).err().unwrap_or_default();
    assert!(e.contains("moon_phase"), "{e}");
    let given: Vec<String> = group_fields().into_iter().filter(|f| f != "owned").collect();
    let e = Table::new(vec![], vec![], fields(), given).err().unwrap_or_default();
    assert!(e.contains("owned"), "{e}");
}

#[test]
fn select_protocol_votes_and_breaks_ties_by_first_member() {
    assert_eq!(select_protocol(&[]), PN_NONE);
    assert_eq!(select_protocol(&[vec![PN_RANGE], vec![PN_ROUNDROBIN, PN_RANGE]]), PN_RANGE);
    assert_eq!(select_protocol(&[vec![PN_ROUNDROBIN, PN_RANGE], vec![PN_ROUNDROBIN, PN_RANGE]]), PN_ROUNDROBIN);
    assert_eq!(select_protocol(&[vec![PN_RANGE, PN_ROUNDROBIN], vec![PN_ROUNDROBIN, PN_RANGE]]), PN_RANGE);
    assert_eq!(select_protocol(&[vec![PN_ROUNDROBIN], vec![PN_RANGE]]), PN_NONE);
}

#[test]
fn valid_state_edges_follow_kafka() {
    assert!(State::valid_transition(State::Stable, State::PreparingRebalance));
    assert!(!State::valid_transition(State::Stable, State::Stable));
    assert!(State::valid_transition(State::Dead, State::Dead));
    assert!(!State::valid_transition(State::Empty, State::Stable));
}

fn sample_world() -> World {
    let m = Member {
        id: mid(1, 0),
        instance: NOINST,
        client: 1,
        ptype: PT_CONSUMER,
        protocols: 2,
        session_timeout: SESSION_MS,
        rebalance_timeout: REBALANCE_MS,
        aj: Some((5, true)),
        a_sync: Some(7),
        is_new: true,
        assignment: true,
        session: true,
        pending_sync: false,
    };
    let g = Group {
        state: State::PreparingRebalance,
        generation: 2,
        ptype: PT_CONSUMER,
        pname: PN_RANGE,
        leader: mid(1, 0),
        members: vec![m.clone()].into(),
        pending: vec![mid(0, 1), mid(0, 0)].into(),
        join_timers: vec![JoinTimer { initial: true, delay: 3000, remaining: 27000 }].into(),
        sync_timers: vec![1].into(),
        offsets: Some(1),
        persisted: Some(std::sync::Arc::new(Persisted {
            state: State::Stable,
            generation: 1,
            ptype: PT_CONNECT,
            pname: PN_ROUNDROBIN,
            leader: mid(1, 0),
            members: vec![m].into(),
        })),
        owned: false,
        new_member_added: true,
    };
    let c = Client { phase: Phase::ToSync, member: mid(1, 0), generation: 2, leader: true, roster: [mid(1, 0)].into_iter().collect(), epoch: 1 };
    World { group: g, clients: smallvec::smallvec![Client::fresh(0), c] }
}

#[test]
fn packed_worlds_decode_to_the_same_world() {
    let w = sample_world();
    let mut enc = Vec::new();
    encode_world(&w, &mut enc).expect("encodes");
    assert_eq!(decode_world(&enc, 2), w);
    let init = World { group: Group::default(), clients: smallvec::smallvec![Client::fresh(0); 3] };
    encode_world(&init, &mut enc).expect("encodes");
    assert_eq!(decode_world(&enc, 3), init);
}

#[test]
fn canonical_keys_identify_renamed_worlds_only() {
    let b = two_dynamic_members();
    let rns = renamers(&b, true);
    assert_eq!(rns.len(), 2);
    let w = sample_world();
    // the same world with clients 0 and 1 swapped
    let mut v = w.clone();
    let swap = |m: Mid| if m == NOID { m } else { mid(1 - base_of(m), m & 15) };
    for m in v.group.members.iter_mut() {
        m.id = swap(m.id);
        m.client = 1 - m.client;
        m.aj = m.aj.map(|(r, s)| (if r % 2 == 1 { r + 1 } else { r - 1 }, s));
        m.a_sync = m.a_sync.map(|r| if r % 2 == 1 { r + 1 } else { r - 1 });
    }
    v.group.leader = swap(v.group.leader);
    v.group.pending = v.group.pending.iter().map(|m| swap(*m)).collect();
    if let Some(p) = v.group.persisted.as_mut() {
        let p = std::sync::Arc::make_mut(p);
        p.leader = swap(p.leader);
        for m in p.members.iter_mut() {
            m.id = swap(m.id);
            m.client = 1 - m.client;
            m.aj = m.aj.map(|(r, s)| (if r % 2 == 1 { r + 1 } else { r - 1 }, s));
            m.a_sync = m.a_sync.map(|r| if r % 2 == 1 { r + 1 } else { r - 1 });
        }
    }
    v.clients.swap(0, 1);
    for c in v.clients.iter_mut() {
        c.member = swap(c.member);
        c.roster = c.roster.iter().map(|m| swap(*m)).collect();
    }
    let (mut k1, mut k2) = (Vec::new(), Vec::new());
    canonical_key(&w, &rns, &mut k1);
    canonical_key(&v, &rns, &mut k2);
    assert_eq!(k1, k2);
    let mut u = w.clone();
    u.group.generation = 3;
    canonical_key(&u, &rns, &mut k2);
    assert_ne!(k1, k2);
}

#[test]
fn repr_matches_python_dataclass_repr() {
    let names = Names { dynamic: 1 };
    let r = Resp::join_error(E_MEMBER_ID_REQUIRED, mid(0, 0));
    assert_eq!(
        names.resp_repr(&r),
        "JoinGroupResponse(error=Error.MEMBER_ID_REQUIRED, generation_id=-1, protocol_type=None, \
         protocol_name=None, leader='', member_id='c0#0', skip_assignment=False, members=())"
    );
    assert_eq!(names.client_repr(&Client::fresh(0)), "Client(phase='idle', member_id='', generation=-1, leader=False, roster=(), epoch=0)");
}


struct NoCalls;

impl Callbacks for NoCalls {
    fn atom(&self, atom: u16, _: &Group, _: &Input, _: &Settings) -> Result<bool, StepError> {
        Ok(atom == 0)
    }
    fn fire_row(
        &self,
        row: &str,
        _: &Group,
        _: &Input,
        _: &Settings,
        _: &mut Chooser,
    ) -> Result<RowOutcome, StepError> {
        Err(StepError::Internal(format!("fired {row}")))
    }
    fn state_violated(&self, _: u16, _: &Group) -> Result<bool, String> {
        Ok(false)
    }
    fn transition_violated(&self, _: u16, _: &[String], _: &Group, _: &Input, _: &Transition) -> Result<bool, String> {
        Ok(false)
    }
}

#[test]
fn names_through_python_are_called_back_in_the_order_given() {
    let rows = vec![
        row("Missing/JoinGroup/x", "JoinGroup", &[("user-b", true), ("user-a", false)], "user-form", None, &[]),
        row("Empty/JoinGroup/y", "JoinGroup", &[], "error", None, &["user-effect", "create-group"]),
    ];
    let slow = SlowPath {
        atoms: vec!["user-b".into(), "user-a".into()],
        effects: vec!["user-effect".into()],
        reply_forms: vec!["user-form".into()],
        callbacks: Box::new(NoCalls),
    };
    let mut f = fields();
    f.push(("user-effect".into(), vec!["members".into()]));
    let t = Table::with_slow_path(rows, vec![], f, group_fields(), Some(slow)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.rows[0].guard, vec![(Lit::Py(0), true), (Lit::Py(1), false)]);
    assert_eq!(t.rows[0].reply, ReplyKind::PyForm);
    assert!(t.rows[0].py && t.rows[1].py);
    assert_eq!(t.rows[1].effects, vec![Effect::CreateGroup]);
    let inp = Input { kind: Ev::JoinGroup, req: None, member: None, instance: NOINST, request_id: 0 };
    let s = zero_settings();
    // atom 0 (user-b) holds, atom 1 (user-a) does not: the row matches and is fired by Python
    match step(&t, &Group::default(), &inp, &s, &mut Chooser::default()) {
        Err(StepError::Internal(e)) => assert_eq!(e, "fired Missing/JoinGroup/x"),
        _ => panic!("the row was not sent to Python"),
    }
}

mod lockstep {
    use super::*;
    use crate::lockstep::*;

    struct Collect(Vec<Found>);

    impl Listener for Collect {
        fn level(&mut self, found: &[Found], _: bool) -> Result<bool, String> {
            self.0.extend(found.iter().cloned());
            Ok(true)
        }
        fn tick(&mut self, _: usize, _: usize, _: usize, _: usize) -> Result<(), String> {
            Ok(())
        }
    }

    fn model(rows: Vec<RowData>) -> Model {
        let table = Table::new(rows, vec![], fields(), group_fields()).unwrap_or_else(|e| panic!("{e}"));
        let b = Bounds {
            dynamic: 1,
            stat: 0,
            max_generation: 1,
            faults: 0,
            open: false,
            require_known_member_id: true,
            max_ids_per_client: 1,
            group_max_size: 1 << 30,
            metadata_changes: false,
            group_id_empty: false,
        };
        Model::new(table, b).unwrap_or_else(|e| panic!("{e}"))
    }

    fn join(error: &str) -> RowData {
        RowData { error: error.to_string(), ..row("Missing/JoinGroup/x", "JoinGroup", &[], "error", None, &[]) }
    }

    #[test]
    fn anonymises_client_names_and_request_ids_only() {
        assert_eq!(anon("rid:12 c0#1 s1 'c3' consumer|NONE|s_1|c"), "X X X 'X' consumer|NONE|s_1|c");
    }

    #[test]
    fn a_table_against_itself_shows_no_difference_and_another_error_is_found_at_depth_one() {
        let (a, b) = (model(vec![join("UNKNOWN_MEMBER_ID")]), model(vec![join("UNKNOWN_MEMBER_ID")]));
        let mut seen = Collect(Vec::new());
        let out = lockstep(&a, &b, false, None, &mut seen).unwrap_or_else(|e| panic!("{e}"));
        assert!(seen.0.is_empty() && out.complete && out.nodes >= 1, "{:?} {:?}", seen.0.first(), out);
        let c = model(vec![join("COORDINATOR_NOT_AVAILABLE")]);
        let mut seen = Collect(Vec::new());
        lockstep(&a, &c, false, None, &mut seen).unwrap_or_else(|e| panic!("{e}"));
        assert!(!seen.0.is_empty(), "a different error must be a difference");
        assert!(seen.0.iter().all(|f| f.depth == 1 && f.path.is_empty()));
        // side A's answer comes first (check/diff.py lists A's extra answers before B's)
        assert!(seen.0.iter().all(|f| f.shown_by == 0));
    }
}

#[test]
fn the_step_cache_answers_each_key_with_its_own_step() {
    use crate::explore_cache::{Cache, GroupFacts};
    let rows = vec![
        RowData { error: "UNKNOWN_MEMBER_ID".into(), ..row("Missing/JoinGroup/x", "JoinGroup", &[], "error", None, &[]) },
        RowData { error: "NOT_COORDINATOR".into(), ..row("Missing/Heartbeat/x", "Heartbeat", &[], "error", None, &[]) },
    ];
    let t = Table::new(rows, vec![], fields(), group_fields()).unwrap_or_else(|e| panic!("{e}"));
    let b = two_dynamic_members();
    let model = Model::new(t, b).unwrap_or_else(|e| panic!("{e}"));
    let facts = GroupFacts { model: &model, state_invs: &[], symmetry: true };
    let s = zero_settings();
    let join = Input { kind: Ev::JoinGroup, req: None, member: None, instance: NOINST, request_id: 1 };
    let beat = Input { kind: Ev::Heartbeat, ..join.clone() };
    // a check that every step violates: its verdict is kept with the step
    fn always(_: &[RowSpec], _: &Group, _: &Input, _: &Transition) -> bool {
        true
    }
    let checks: [crate::invariants::TransitionCheck; 1] = [always];
    let mut c = Cache::new(usize::MAX);
    let mut enc = Vec::new();
    encode_group(&Group::default(), &mut enc).unwrap_or_else(|e| panic!("{e}"));
    let g = c.intern_bytes(&enc, &facts);
    let reply = |c: &mut Cache, gid: u32, before: &Group, x: &Input, variant: u8| {
        let at = c.step(&model.table, gid, before, x, &s, variant, &checks, &facts).unwrap_or_else(|_| panic!("the step failed"));
        let rec = &c.record(gid)[at.0 as usize..at.1 as usize];
        let all: Vec<_> = crate::explore_cache::outcomes_in(rec).collect();
        assert_eq!(all.len(), 1, "one outcome");
        let o = all[0];
        assert_eq!(o.verdicts, 1);
        (c.resp(o.reply).error(), o.after)
    };
    let (a, b) = (reply(&mut c, g, &Group::default(), &join, 0), reply(&mut c, g, &Group::default(), &beat, 0));
    assert_ne!(a.0, b.0, "a join and a heartbeat get different replies");
    assert_eq!((c.hits, c.misses), (0, 2));
    assert_eq!(reply(&mut c, g, &Group::default(), &beat, 0), b);
    assert_eq!((c.hits, c.misses), (1, 2));
    assert_eq!(reply(&mut c, g, &Group::default(), &beat, 1), b); // the other settings: a step of its own
    assert_eq!(reply(&mut c, g, &Group::default(), &join, 0), a); // kept: a hit
    assert_eq!((c.hits, c.misses), (2, 3));
    // the same input on another group is another step, and leads to that group
    enc.clear();
    let three = Group { generation: 3, ..Group::default() };
    encode_group(&three, &mut enc).unwrap_or_else(|e| panic!("{e}"));
    let other = c.intern_bytes(&enc, &facts);
    assert_ne!(other, g);
    let (_, after) = reply(&mut c, other, &three, &join, 0);
    assert_eq!(after, other);
    assert_eq!((c.hits, c.misses), (2, 4));
    // emptied past its limit: the same key is stepped again
    let mut small = Cache::new(0);
    let g = small.intern_bytes(&enc, &facts);
    reply(&mut small, g, &three, &join, 0);
    small.trim();
    let g = small.intern_bytes(&enc, &facts);
    reply(&mut small, g, &three, &join, 0);
    assert_eq!((small.hits, small.misses, small.clears), (0, 2, 1));
}

#[test]
fn group_id_empty_is_read_from_the_runs_settings() {
    assert!(ATOMS.contains(&("group-id-empty", Atom::GroupIdEmpty)));
    let inp = Input { kind: Ev::JoinGroup, req: None, member: None, instance: NOINST, request_id: 0 };
    let mut s = zero_settings();
    assert_eq!(eval_atom(Atom::GroupIdEmpty, &Group::default(), &inp, &s), Ok(false));
    s.group_id_empty = true;
    assert_eq!(eval_atom(Atom::GroupIdEmpty, &Group::default(), &inp, &s), Ok(true));
    // the concrete replay takes it from the group it replays
    let d = crate::concrete_replay::Defaults {
        min_session_timeout_ms: 0,
        max_session_timeout_ms: 0,
        group_max_size: 1,
        initial_rebalance_delay_ms: 0,
        new_member_join_timeout_ms: 0,
    };
    let empty = crate::concrete_replay::decode_config("{}", &d, "").map(|(s, _)| s.group_id_empty);
    let named = crate::concrete_replay::decode_config("{}", &d, "g").map(|(s, _)| s.group_id_empty);
    assert_eq!((empty, named), (Ok(true), Ok(false)));
}

/// Bounds of two dynamic members through generation 3, no faults.
fn two_dynamic_members() -> Bounds {
    Bounds {
        dynamic: 2,
        stat: 0,
        max_generation: 3,
        faults: 0,
        open: false,
        require_known_member_id: true,
        max_ids_per_client: 2,
        group_max_size: 1 << 30,
        metadata_changes: false,
        group_id_empty: false,
    }
}

/// Settings with every limit and delay at zero (a group of at most one member, appends succeed).
fn zero_settings() -> Settings {
    Settings {
        min_session_timeout_ms: 0,
        max_session_timeout_ms: 0,
        group_max_size: 1,
        initial_rebalance_delay_ms: 0,
        new_member_join_timeout_ms: 0,
        append_ok: true,
        append_error: E_NONE,
        group_id_empty: false,
    }
}

#[test]
fn the_state_store_finds_every_key_across_its_chunks() {
    use crate::explore::Store;
    // chunks of 40 bytes: keys of 1 to 13 bytes fill many of them, some to the last byte
    let key = |i: u32| -> Vec<u8> { (0..(i % 13 + 1)).map(|b| (i * 7 + b) as u8).chain(i.to_le_bytes()).collect() };
    let mut store = Store::with_chunks(40);
    for i in 0..2_000u32 {
        let k = key(i);
        assert_eq!(store.intern(Store::hash(&k), &k), Ok((i, true)));
    }
    for i in 0..2_000u32 {
        let k = key(i);
        assert_eq!(store.key(i), &k[..]);
        assert_eq!(store.find(Store::hash(&k), &k), Some(i));
        assert_eq!(store.intern(Store::hash(&k), &k), Ok((i, false)));
    }
    assert_eq!(store.len(), 2_000);
    assert_eq!(store.find(Store::hash(b"absent"), b"absent"), None);
    // a key longer than a chunk is refused, not split
    let long = [1u8; 41];
    assert!(store.intern(Store::hash(&long), &long).is_err());
    assert_eq!(store.len(), 2_000);
}

/// A client's roster holds ROSTER_IDS ids inline: bounds that could list more in one JoinGroup
/// response make no model (7 clients x 3 ids + 1 = 22 fit; 8 x 3 + 1 = 25 do not).
#[test]
fn bounds_whose_rosters_could_outgrow_the_inline_roster_make_no_model() {
    let at = |dynamic: u8| Bounds { dynamic, max_ids_per_client: 3, ..two_dynamic_members() };
    assert_eq!(at(7).roster_fits(), Ok(()));
    let err = at(8).roster_fits().expect_err("25 ids cannot fit");
    assert!(err.contains("at most 22 member ids"), "{err}");
}

#[test]
fn a_few_items_sort_as_the_library_sorts_them() {
    // every length up to past the networks' 8 and insertion's 16: distinct items, items with
    // many ties, and items at the top of the range (the networks pad with u64::MAX)
    let mut x = 12345u64;
    for n in 0..40usize {
        for round in 0..60 {
            let v: Vec<u64> = (0..n)
                .map(|i| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    match round % 3 {
                        0 => x >> 20 << 8 | i as u64,
                        1 => x >> 61,
                        _ => u64::MAX - (x >> 62),
                    }
                })
                .collect();
            let mut theirs = v.clone();
            theirs.sort();
            let (mut few, mut unbranched) = (v.clone(), v.clone());
            sort_few(&mut few);
            sort_unbranched(&mut unbranched);
            assert_eq!(few, theirs, "{n} items: {v:?}");
            assert_eq!(unbranched, theirs, "{n} items: {v:?}");
        }
    }
}
