//! The PyO3 surface of the native lockstep: `lockstep(a, b, one_sided, max_nodes, on_level,
//! progress)` over two `Engine`s built at the same bounds (check/native_diff.py drives it).

use crate::abstract_model::Action;
use crate::lockstep::{kind_name, lockstep as search, Found, Listener, Shown, Step};
use crate::model::Names;
use crate::python::Engine;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::io::Write;
use std::time::Instant;

type ActionTuple = (&'static str, i32, Option<String>, Option<String>, bool);
type ShownTuple = (String, &'static str, String);

fn action_tuple(n: &Names, a: &Action) -> ActionTuple {
    (kind_name(&a.kind), a.client, a.req.as_ref().map(|r| n.req_repr(r)), a.member.map(|m| n.mid(m)), a.append_fails)
}

fn shown_list(s: &[Shown]) -> Vec<ShownTuple> {
    s.iter().map(|x| (x.who.clone(), x.kind, x.text.clone())).collect()
}

type FoundTuple = (usize, Vec<(ActionTuple, Vec<ShownTuple>)>, ActionTuple, &'static str, Vec<ShownTuple>);

fn found_tuple(n: &Names, f: &Found) -> FoundTuple {
    let path = f.path.iter().map(|Step { action, shown }| (action_tuple(n, action), shown_list(shown))).collect();
    (f.depth, path, action_tuple(n, &f.action), if f.shown_by == 0 { "A" } else { "B" }, shown_list(&f.shown))
}

struct PyListener<'py> {
    py: Python<'py>,
    names: Names,
    on_level: Py<PyAny>,
    progress: bool,
    last: Instant,
    error: Option<PyErr>,
}

impl PyListener<'_> {
    fn keep<T>(&mut self, r: PyResult<T>) -> Result<T, String> {
        r.map_err(|e| {
            let msg = e.to_string();
            self.error = Some(e);
            msg
        })
    }
}

impl Listener for PyListener<'_> {
    fn level(&mut self, found: &[Found], finished: bool) -> Result<bool, String> {
        let items: Vec<FoundTuple> = found.iter().map(|f| found_tuple(&self.names, f)).collect();
        let r = self.on_level.call1(self.py, (items, finished)).and_then(|r| r.extract::<bool>(self.py));
        self.keep(r)
    }

    fn tick(&mut self, nodes: usize, depth: usize, queue: usize, differences: usize) -> Result<(), String> {
        let r = self.py.check_signals();
        self.keep(r)?;
        if self.progress && self.last.elapsed().as_secs_f64() > 2.0 {
            self.last = Instant::now();
            let _ = writeln!(
                std::io::stderr(),
                "  diff (native): {nodes} lockstep states, depth {depth}, queue {queue}, {differences} difference(s)"
            );
        }
        Ok(())
    }
}

/// check/diff.py explore_diff's search over engines `a` and `b` (the same bounds). `on_level(
/// differences, finished) -> stop` gets each depth's differences as (depth, path, action,
/// shown_by, shown): path [(action, shown)], action (kind, client, request repr, member, append
/// fails), shown [(who, "response" | "text", text)]. Returns nodes, edges, depth, frontier,
/// complete, seconds and rows_fired (row id of `a` -> times).
#[pyfunction]
#[pyo3(signature = (a, b, one_sided, max_nodes, on_level, progress))]
pub fn lockstep<'py>(
    py: Python<'py>,
    a: PyRef<'py, Engine>,
    b: PyRef<'py, Engine>,
    one_sided: bool,
    max_nodes: Option<usize>,
    on_level: Py<PyAny>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let (ma, mb) = (&a.model, &b.model);
    let mut listener = PyListener { py, names: ma.names, on_level, progress, last: Instant::now(), error: None };
    let out = match search(ma, mb, one_sided, max_nodes, &mut listener) {
        Ok(out) => out,
        Err(e) => return Err(listener.error.take().unwrap_or_else(|| PyRuntimeError::new_err(e))),
    };
    let d = PyDict::new(py);
    d.set_item("nodes", out.nodes)?;
    d.set_item("edges", out.edges)?;
    d.set_item("depth", out.depth)?;
    d.set_item("frontier", out.frontier)?;
    d.set_item("complete", out.complete)?;
    d.set_item("seconds", out.seconds)?;
    let fired = PyDict::new(py);
    for (row, times) in &out.rows_fired {
        let id = &ma.table.rows[*row as usize].id;
        let before: u64 = fired.get_item(id)?.map(|x| x.extract()).transpose()?.unwrap_or(0);
        fired.set_item(id, before + times)?;
    }
    d.set_item("rows_fired", fired)?;
    Ok(d)
}
