//! The PyO3 surface: `Engine(rows, urgent, effect_fields, group_fields, bounds, slow_path,
//! callbacks)`, `Engine.explore(...)`, `Engine.initial()`, `Engine.successors(world)` and
//! `implemented()`; and `PyCallbacks`, the slow path into check/callbacks.py.

use crate::abstract_model::*;
use crate::explore::{explore, path_to, Options, Progress, CACHE_BYTES, LIVENESS, PARKED_ANSWERED};
use crate::invariants::{invariant_by_name, INVARIANTS};
use crate::model::*;
use crate::step::*;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use std::io::Write;
use std::time::Instant;

type RowTuple = (String, Vec<String>, String, Vec<(String, bool)>, String, String, Option<String>, Vec<String>, bool);

/// The slow path: the Python object (check/callbacks.py) that answers for the atoms, rows and
/// invariants the engine has no native version of. Worlds go to it as their Python repr, and
/// come back as plain tuples of the engine's codes.
struct PyCallbacks {
    obj: Py<PyAny>,
    names: Names,
}

type MemberTuple = (u8, u8, u8, u8, u8, i32, i32, Option<(u16, bool)>, Option<u16>, (bool, bool, bool, bool));
type GroupHead = (u8, i32, u8, u8, u8);
type PersistedTuple = (u8, i32, u8, u8, u8, Vec<MemberTuple>);
type GroupTuple = (
    GroupHead,
    Vec<MemberTuple>,
    Vec<u8>,
    Vec<(bool, i32, i32)>,
    Vec<i32>,
    Option<i32>,
    Option<PersistedTuple>,
    bool,
    bool,
);

type JoinTuple = (String, i16, i32, u8, u8, u8, u8, bool, Vec<(u8, u8, Option<u8>)>);
type DescribeTuple = (String, i16, String, u8, u8, Vec<(u8, u8, u8, Option<u8>, bool)>);

fn state_of(v: u8) -> Result<State, String> {
    State::ALL.get(v as usize).copied().ok_or_else(|| format!("no state {v}"))
}

fn member_of(t: MemberTuple) -> Member {
    let (id, instance, client, ptype, protocols, session_timeout, rebalance_timeout, aj, a_sync, flags) = t;
    let (is_new, assignment, session, pending_sync) = flags;
    Member {
        id,
        instance,
        client,
        ptype,
        protocols,
        session_timeout,
        rebalance_timeout,
        aj,
        a_sync,
        is_new,
        assignment,
        session,
        pending_sync,
    }
}

fn group_of(t: GroupTuple) -> Result<Group, String> {
    let ((state, generation, ptype, pname, leader), members, pending, jts, sts, offsets, persisted, owned, nma) = t;
    let persisted = match persisted {
        None => None,
        Some((st, generation, ptype, pname, leader, ms)) => Some(std::sync::Arc::new(Persisted {
            state: state_of(st)?,
            generation,
            ptype,
            pname,
            leader,
            members: ms.into_iter().map(member_of).collect(),
        })),
    };
    Ok(Group {
        state: state_of(state)?,
        generation,
        ptype,
        pname,
        leader,
        members: members.into_iter().map(member_of).collect(),
        pending: pending.into_iter().collect(),
        join_timers: jts.into_iter().map(|(initial, delay, remaining)| JoinTimer { initial, delay, remaining }).collect(),
        sync_timers: sts.into_iter().collect(),
        offsets,
        persisted,
        owned,
        new_member_added: nma,
    })
}

fn described_state(s: &str) -> Result<&'static str, String> {
    match s {
        "" => Ok(""),
        "Dead" => Ok("Dead"),
        x => State::from_name(x).map(|st| st.name()).ok_or_else(|| format!("no group state {x:?}")),
    }
}

fn resp_of(t: &Bound<'_, PyAny>) -> PyResult<Resp> {
    let tag: String = t.get_item(0)?.extract()?;
    Ok(match tag.as_str() {
        "join" => {
            let (_, error, generation, ptype, pname, leader, member, skip, ms): JoinTuple = t.extract()?;
            let members = ms.into_iter().map(|(id, instance, meta)| JoinMember { id, instance, meta }).collect();
            Resp::Join { error, generation, ptype, pname, leader, member, skip, members }
        }
        "sync" => {
            let (_, error, ptype, pname, assignment): (String, i16, u8, u8, bool) = t.extract()?;
            Resp::Sync { error, ptype, pname, assignment }
        }
        "heartbeat" => Resp::Heartbeat { error: t.extract::<(String, i16)>()?.1 },
        "leave" => {
            let (_, error, members): (String, i16, Vec<(u8, u8, i16)>) = t.extract()?;
            Resp::Leave { error, members }
        }
        "commit" => Resp::Commit { error: t.extract::<(String, i16)>()?.1 },
        "fetch" => {
            let (_, error, partition): (String, i16, Option<i32>) = t.extract()?;
            Resp::Fetch { error, partition }
        }
        "describe" => {
            let (_, error, state, ptype, protocol, ms): DescribeTuple = t.extract()?;
            let members = ms
                .into_iter()
                .map(|(id, instance, client, meta, assignment)| DescMember { id, instance, client, meta, assignment })
                .collect();
            Resp::Describe { error, state: described_state(&state).map_err(PyValueError::new_err)?, ptype, protocol, members }
        }
        "list" => {
            let (_, error, listed): (String, i16, Option<(u8, u8)>) = t.extract()?;
            let listed = match listed {
                None => None,
                Some((p, st)) => Some((p, state_of(st).map_err(PyValueError::new_err)?)),
            };
            Resp::List { error, listed }
        }
        "delete" => Resp::Delete { error: t.extract::<(String, i16)>()?.1 },
        x => return Err(PyValueError::new_err(format!("no response kind {x:?}"))),
    })
}

fn internal(e: PyErr) -> StepError {
    StepError::Internal(format!("through Python: {e}"))
}

impl Callbacks for PyCallbacks {
    fn atom(&self, atom: u16, g: &Group, x: &Input, s: &Settings) -> Result<bool, StepError> {
        Python::with_gil(|py| {
            let r = self.obj.call_method1(
                py,
                "atom",
                (atom, self.names.group_repr(g), self.names.input_repr(x), s.append_ok),
            )?;
            r.extract::<bool>(py)
        })
        .map_err(internal)
    }

    fn fire_row(
        &self,
        row: &str,
        g: &Group,
        x: &Input,
        s: &Settings,
        ch: &mut Chooser,
    ) -> Result<RowOutcome, StepError> {
        let rest: Vec<u32> = ch.prefix.iter().skip(ch.made.len()).copied().collect();
        Python::with_gil(|py| -> PyResult<Result<RowOutcome, StepError>> {
            let r = self.obj.call_method1(
                py,
                "fire",
                (row, self.names.group_repr(g), self.names.input_repr(x), s.append_ok, rest),
            )?;
            let r = r.bind(py).downcast::<PyTuple>()?.clone();
            let tag: String = r.get_item(0)?.extract()?;
            if tag == "defect" {
                return Ok(Err(StepError::Defect(Defect { message: r.get_item(1)?.extract()? })));
            }
            let group = group_of(r.get_item(1)?.extract()?).map_err(PyValueError::new_err)?;
            let mut outputs = Vec::new();
            for o in r.get_item(2)?.try_iter()? {
                let o = o?;
                let resp = o.get_item(1)?;
                outputs.push(Output {
                    rid: o.get_item(0)?.extract()?,
                    resp: if resp.is_none() { None } else { Some(resp_of(&resp)?) },
                    member: o.get_item(2)?.extract()?,
                });
            }
            let reply = r.get_item(3)?;
            let reply = if reply.is_none() { None } else { Some(resp_of(&reply)?) };
            let made: Vec<u32> = r.get_item(4)?.extract()?;
            let counts: Vec<u32> = r.get_item(5)?.extract()?;
            ch.made.extend(made);
            ch.counts.extend(counts);
            Ok(Ok((group, outputs, reply)))
        })
        .map_err(internal)?
    }

    fn state_violated(&self, inv: u16, g: &Group) -> Result<bool, String> {
        Python::with_gil(|py| {
            self.obj.call_method1(py, "state_violated", (inv, self.names.group_repr(g)))?.extract::<bool>(py)
        })
        .map_err(|e| format!("through Python: {e}"))
    }

    fn transition_violated(
        &self,
        inv: u16,
        rows: &[String],
        before: &Group,
        x: &Input,
        t: &Transition,
    ) -> Result<bool, String> {
        let n = &self.names;
        let outputs: Vec<String> = t.outputs.iter().map(|o| n.output_repr(o)).collect();
        let reply = t.reply.as_ref().map(|r| n.resp_repr(r));
        Python::with_gil(|py| {
            self.obj
                .call_method1(
                    py,
                    "transition_violated",
                    (inv, rows.to_vec(), n.group_repr(before), n.input_repr(x), n.group_repr(&t.after), outputs, reply),
                )?
                .extract::<bool>(py)
        })
        .map_err(|e| format!("through Python: {e}"))
    }
}

#[pyclass(module = "groupspec_engine")]
pub(crate) struct Engine {
    pub(crate) model: Model,
}

fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|x| x.parse::<usize>().ok()))
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

#[pymethods]
impl Engine {
    /// rows: (id, states, event, guard literals, reply form, error name, next state, effects,
    /// new incarnation); urgent: (event, guard literals); effect_fields: (effect, fields it
    /// modifies); group_fields: model/dsl.py GROUP_FIELDS; bounds: the fields of
    /// check.abstract.Bounds; slow_path: the (atoms, effects, reply forms) to ask `callbacks`
    /// for (check/callbacks.py) instead of refusing the table.
    #[new]
    #[pyo3(signature = (rows, urgent, effect_fields, group_fields, bounds, slow_path=None, callbacks=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        rows: Vec<RowTuple>,
        urgent: Vec<(String, Vec<(String, bool)>)>,
        effect_fields: Vec<(String, Vec<String>)>,
        group_fields: Vec<String>,
        bounds: &Bound<'_, PyDict>,
        slow_path: Option<(Vec<String>, Vec<String>, Vec<String>)>,
        callbacks: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let data = rows
            .into_iter()
            .map(|(id, states, event, guard, form, error, next_state, effects, new_incarnation)| RowData {
                id,
                states,
                event,
                guard,
                form,
                error,
                next_state,
                effects,
                new_incarnation,
            })
            .collect();
        let dynamic_clients: u8 = bounds
            .get_item("dynamic")?
            .ok_or_else(|| PyValueError::new_err("bounds: missing dynamic"))?
            .extract()?;
        let slow = match (slow_path, callbacks) {
            (Some((atoms, effects, reply_forms)), Some(obj)) => Some(SlowPath {
                atoms,
                effects,
                reply_forms,
                callbacks: Box::new(PyCallbacks { obj, names: Names { dynamic: dynamic_clients } }),
            }),
            (None, None) => None,
            _ => return Err(PyValueError::new_err("slow_path and callbacks go together")),
        };
        let table =
            Table::with_slow_path(data, urgent, effect_fields, group_fields, slow).map_err(PyValueError::new_err)?;
        let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
            bounds.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("bounds: missing {k}")))
        };
        let faults: Vec<String> = get("faults")?.extract()?;
        let mut fmask = 0u16;
        for f in &faults {
            fmask |= fault_bit(f).ok_or_else(|| PyValueError::new_err(format!("the native engine has no fault {f:?}")))?;
        }
        let mode: String = get("mode")?.extract()?;
        if mode != "closed" && mode != "open" {
            return Err(PyValueError::new_err(format!("unknown mode {mode:?}")));
        }
        let dynamic: u8 = get("dynamic")?.extract()?;
        let stat: u8 = get("static")?.extract()?;
        if dynamic as usize + stat as usize > 9 {
            return Err(PyValueError::new_err("the native engine handles at most 9 clients"));
        }
        let b = Bounds {
            dynamic,
            stat,
            max_generation: get("max_generation")?.extract()?,
            faults: fmask,
            open: mode == "open",
            require_known_member_id: get("require_known_member_id")?.extract()?,
            max_ids_per_client: get("max_ids_per_client")?.extract()?,
            group_max_size: get("group_max_size")?.extract()?,
            metadata_changes: get("metadata_changes")?.extract()?,
            group_id_empty: get("group_id")?.extract::<String>()?.is_empty(),
        };
        Ok(Engine { model: Model::new(table, b).map_err(PyValueError::new_err)? })
    }

    /// Explores; returns a dict of counts, row coverage and violations (each with its path of
    /// successor positions). Ctrl-C stops the run: the result says `interrupted`.
    #[pyo3(signature = (symmetry, invariants, liveness, max_states, first_violation_only, stop_at_first_violation, progress, path_properties, skip, settle=None, py_invariants=Vec::new(), memo=true, threads=1, cache_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn explore<'py>(
        &self,
        py: Python<'py>,
        symmetry: bool,
        invariants: Vec<String>,
        liveness: bool,
        max_states: Option<usize>,
        first_violation_only: bool,
        stop_at_first_violation: bool,
        progress: bool,
        path_properties: Vec<String>,
        skip: Vec<String>,
        settle: Option<Vec<String>>,
        py_invariants: Vec<(bool, String)>,
        memo: bool,
        threads: usize,
        cache_bytes: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut invs = Vec::new();
        for name in &invariants {
            invs.push(
                invariant_by_name(name)
                    .ok_or_else(|| PyValueError::new_err(format!("the native engine has no invariant named {name:?}")))?,
            );
        }
        let opts = Options {
            symmetry,
            invariants: invs,
            py_invariants,
            liveness,
            max_states,
            first_violation_only,
            stop_at_first_violation,
            report_liveness: path_properties.iter().any(|p| p == LIVENESS),
            report_parked: path_properties.iter().any(|p| p == PARKED_ANSWERED),
            skip,
            settle,
            memo,
            cache_bytes: cache_bytes.unwrap_or(CACHE_BYTES),
            threads,
        };
        if let Some(p) = path_properties.iter().find(|p| *p != LIVENESS && *p != PARKED_ANSWERED) {
            return Err(PyValueError::new_err(format!("the native engine has no path property named {p:?}")));
        }
        let start = Instant::now();
        let mut last = Instant::now();
        let mut peak_rss = rss_bytes();
        let mut interrupt: Option<PyErr> = None;
        let mut tick = |p: &Progress| -> bool {
            if let Err(e) = py.check_signals() {
                interrupt = Some(e);
                return false;
            }
            if last.elapsed().as_secs_f64() >= 2.0 {
                last = Instant::now();
                let rss = rss_bytes();
                peak_rss = peak_rss.max(rss);
                if progress {
                    let secs = start.elapsed().as_secs_f64();
                    let mut err = std::io::stderr();
                    let _ = writeln!(
                        err,
                        "  explored {} states, {} edges, depth {}, queue {} ({:.0} states/s, {} MB)",
                        p.states,
                        p.edges,
                        p.depth,
                        p.queue,
                        p.states as f64 / secs.max(1e-9),
                        rss.max(p.bytes) / (1 << 20)
                    );
                }
            }
            true
        };
        let out = explore(&self.model, &opts, &mut tick).map_err(PyRuntimeError::new_err)?;
        peak_rss = peak_rss.max(rss_bytes());
        let d = PyDict::new(py);
        d.set_item("states", out.states)?;
        d.set_item("edges", out.edges)?;
        d.set_item("depth", out.depth)?;
        d.set_item("frontier", out.frontier)?;
        d.set_item("seconds", start.elapsed().as_secs_f64())?;
        d.set_item("store_bytes", out.store_bytes)?;
        d.set_item("memo", (out.memo_hits, out.memo_misses))?;
        d.set_item("memo_clears", out.memo_clears)?;
        d.set_item("threads", out.threads)?;
        d.set_item("peak_rss_bytes", peak_rss)?;
        let interrupted = match interrupt {
            Some(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => true,
            Some(e) => return Err(e),
            None => false,
        };
        d.set_item("interrupted", interrupted || out.interrupted)?;
        let fired = PyDict::new(py);
        for (i, n) in out.rows_fired.iter().enumerate() {
            if *n > 0 {
                fired.set_item(&self.model.table.rows[i].id, *n)?;
            }
        }
        d.set_item("rows_fired", fired)?;
        let mut vs = Vec::new();
        for v in &out.violations {
            vs.push((v.name.clone(), path_to(&out.parent, &out.ord, v.node), v.extra, v.stuck, v.request));
        }
        d.set_item("violations", vs)?;
        d.set_item("cut_short", &out.cut_short)?;
        d.set_item("liveness_checked", out.liveness_checked)?;
        Ok(d)
    }

    /// The initial world, packed.
    fn initial<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut enc = Vec::new();
        encode_world(&self.model.initial(), &mut enc).map_err(PyRuntimeError::new_err)?;
        Ok(PyBytes::new(py, &enc))
    }

    /// The world's repr as Python writes `check.abstract.World`.
    fn world_repr(&self, world: &[u8]) -> String {
        self.model.names.world_repr(&decode_world(world, self.model.n as usize))
    }

    /// The successors of a packed world, in check/abstract.py's order: for each, (packed world,
    /// fault, rows fired or None, reply repr or None, output reprs, group repr, client reprs).
    /// A table defect raises ValueError with SpecDefect's message.
    #[allow(clippy::type_complexity)]
    fn successors<'py>(
        &self,
        py: Python<'py>,
        world: &[u8],
    ) -> PyResult<Vec<(Bound<'py, PyBytes>, bool, Option<Vec<String>>, Option<String>, Vec<String>, String, Vec<String>)>> {
        let w = decode_world(world, self.model.n as usize);
        let succs = match self.model.successors(&w) {
            Ok(s) => s,
            Err(StepError::Defect(d)) => return Err(PyValueError::new_err(d.message)),
            Err(StepError::Internal(e)) => return Err(PyRuntimeError::new_err(e)),
        };
        let names = &self.model.names;
        let mut out = Vec::new();
        let mut enc = Vec::new();
        for s in succs {
            encode_world(&s.world, &mut enc).map_err(PyRuntimeError::new_err)?;
            let (rows, reply, outputs) = match &s.transition {
                None => (None, None, Vec::new()),
                Some(t) => (
                    Some(t.rows.iter().map(|r| self.model.table.rows[*r as usize].id.clone()).collect()),
                    t.reply.as_ref().map(|r| names.resp_repr(r)),
                    t.outputs.iter().map(|o| names.output_repr(o)).collect(),
                ),
            };
            out.push((
                PyBytes::new(py, &enc),
                s.fault,
                rows,
                reply,
                outputs,
                names.group_repr(&s.world.group),
                s.world.clients.iter().map(|c| names.client_repr(c)).collect(),
            ));
        }
        Ok(out)
    }
}

/// What the engine implements: {"atoms": [...], "effects": [...], "reply_forms": [...],
/// "invariants": [...], "path_properties": [...], "faults": [...], "events": [...]}.
#[pyfunction]
fn implemented(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("atoms", ATOMS.iter().map(|x| x.0).collect::<Vec<_>>())?;
    d.set_item("effects", EFFECTS.iter().map(|x| x.0).collect::<Vec<_>>())?;
    d.set_item("reply_forms", REPLY_FORMS.iter().map(|x| x.0).collect::<Vec<_>>())?;
    d.set_item("invariants", INVARIANTS.iter().map(|x| x.0).collect::<Vec<_>>())?;
    d.set_item("path_properties", vec![LIVENESS, PARKED_ANSWERED])?;
    d.set_item("faults", FAULTS.to_vec())?;
    d.set_item("events", EVENT_NAMES.to_vec())?;
    d.set_item("group_fields", FIELDS.iter().map(|x| x.0).collect::<Vec<_>>())?;
    Ok(d)
}

#[pymodule]
fn groupspec_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_function(wrap_pyfunction!(implemented, m)?)?;
    m.add_function(wrap_pyfunction!(crate::python_lockstep::lockstep, m)?)?;
    m.add_class::<crate::python_concrete::Replayer>()?;
    m.add_class::<crate::python_jsonl::JsonlStager>()?;
    Ok(())
}
