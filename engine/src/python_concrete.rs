//! The PyO3 surface of the native trace replay: `Replayer(rows, urgent, effect_fields,
//! group_fields, defaults)` built from the table as data, `Replayer.judge(batch, ranges)` over an
//! Arrow record batch of staged trace rows (traces/pipeline.py drives it from `mapInArrow`
//! and from `replay --local`), and the row coverage of the groups it judged.

use crate::concrete_replay::{replay_group, Defaults, Event};
use crate::step::{RowData, Table};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Int32Type, Int64Type};
use arrow::pyarrow::PyArrowType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rustc_hash::FxHashMap;
use std::time::Instant;

type RowTuple = (String, Vec<String>, String, Vec<(String, bool)>, String, String, Option<String>, Vec<String>, bool);

/// A string column (Utf8 or LargeUtf8).
enum Strings<'a> {
    Small(&'a arrow::array::StringArray),
    Large(&'a arrow::array::LargeStringArray),
}

impl<'a> Strings<'a> {
    fn of(batch: &'a RecordBatch, name: &str) -> PyResult<Strings<'a>> {
        let col = column(batch, name)?;
        match col.data_type() {
            DataType::Utf8 => Ok(Strings::Small(col.as_string::<i32>())),
            DataType::LargeUtf8 => Ok(Strings::Large(col.as_string::<i64>())),
            t => Err(PyValueError::new_err(format!("column {name}: expected a string column, got {t}"))),
        }
    }
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strings::Small(a) => (!a.is_null(i)).then(|| a.value(i)),
            Strings::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
        }
    }
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> PyResult<&'a dyn Array> {
    batch
        .column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| PyValueError::new_err(format!("the batch has no column {name}")))
}

/// An integer column (int64 or int32) read as i64.
fn ints(batch: &RecordBatch, name: &str) -> PyResult<Vec<Option<i64>>> {
    let col = column(batch, name)?;
    match col.data_type() {
        DataType::Int64 => Ok(col.as_primitive::<Int64Type>().iter().collect()),
        DataType::Int32 => Ok(col.as_primitive::<Int32Type>().iter().map(|v| v.map(i64::from)).collect()),
        t => Err(PyValueError::new_err(format!("column {name}: expected an integer column, got {t}"))),
    }
}

#[pyclass(module = "groupspec_engine")]
pub(crate) struct Replayer {
    table: Table,
    defaults: Defaults,
    /// row index -> times fired, over the groups judged clean
    coverage: Vec<u64>,
    /// why groups went back to Python -> how many
    handed_back: FxHashMap<String, u64>,
    /// time spent in `judge` (the native step with its Arrow reads), for the benchmarks' CPU split
    seconds: f64,
}

#[pymethods]
impl Replayer {
    /// rows, urgent, effect_fields, group_fields: as `Engine` takes them (check/native.py
    /// table_data); defaults: CoordinatorConfig's (min session timeout, max session timeout,
    /// group max size, initial rebalance delay, new member join timeout).
    #[new]
    fn new(
        rows: Vec<RowTuple>,
        urgent: Vec<(String, Vec<(String, bool)>)>,
        effect_fields: Vec<(String, Vec<String>)>,
        group_fields: Vec<String>,
        defaults: (i64, i64, i64, i64, i64),
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
        let table = Table::new(data, urgent, effect_fields, group_fields).map_err(PyValueError::new_err)?;
        let n = table.rows.len();
        let (a, b, c, d, e) = defaults;
        Ok(Replayer {
            table,
            defaults: Defaults {
                min_session_timeout_ms: a,
                max_session_timeout_ms: b,
                group_max_size: c,
                initial_rebalance_delay_ms: d,
                new_member_join_timeout_ms: e,
            },
            coverage: vec![0; n],
            handed_back: FxHashMap::default(),
            seconds: 0.0,
        })
    }

    /// Each range [start, end) of `batch` is one group's events in order (staged trace rows that
    /// passed stage 1). Per range: True when the group replays clean (its verdict is `ok` and its
    /// rows count in `coverage`), False when the Python replay must judge it.
    fn judge(&mut self, py: Python<'_>, batch: PyArrowType<RecordBatch>, ranges: Vec<(usize, usize)>) -> PyResult<Vec<bool>> {
        let started = Instant::now();
        let batch = batch.0;
        let gid = Strings::of(&batch, "group_id")?;
        let kind = Strings::of(&batch, "kind")?;
        let api = Strings::of(&batch, "api")?;
        let to_state = Strings::of(&batch, "to_state")?;
        let payload = Strings::of(&batch, "payload")?;
        let seq = ints(&batch, "seq")?;
        let ts = ints(&batch, "ts_ms")?;
        let rid = ints(&batch, "request_id")?;
        let generation = ints(&batch, "generation")?;
        let n = batch.num_rows();
        let mut out = Vec::with_capacity(ranges.len());
        for (k, (start, end)) in ranges.into_iter().enumerate() {
            if k % 256 == 0 {
                py.check_signals()?;
            }
            if start >= end || end > n {
                return Err(PyValueError::new_err(format!("range {start}..{end} outside the batch of {n} rows")));
            }
            let group = gid.get(start).unwrap_or("");
            let mut missing = false;
            let events = (start..end).map(|i| {
                let (s, t) = (seq[i], ts[i]);
                missing |= s.is_none() || t.is_none() || kind.get(i).is_none();
                Event {
                    seq: s.unwrap_or(-1),
                    ts: t.unwrap_or(-1),
                    kind: kind.get(i).unwrap_or(""),
                    api: api.get(i),
                    request_id: rid[i],
                    generation: generation[i],
                    to_state: to_state.get(i),
                    payload: payload.get(i),
                }
            });
            let verdict = replay_group(&self.table, &self.defaults, group, events);
            match verdict {
                Ok(rows) if !missing => {
                    for r in rows {
                        self.coverage[r as usize] += 1;
                    }
                    out.push(true);
                }
                Ok(_) => {
                    *self.handed_back.entry("a row without seq, ts_ms or kind".to_string()).or_insert(0) += 1;
                    out.push(false);
                }
                Err(why) => {
                    *self.handed_back.entry(why).or_insert(0) += 1;
                    out.push(false);
                }
            }
        }
        self.seconds += started.elapsed().as_secs_f64();
        Ok(out)
    }

    /// Seconds spent in `judge` so far.
    fn seconds(&self) -> f64 {
        self.seconds
    }

    /// (row id, times fired) over the groups judged clean since the last call, rows fired at
    /// least once; the counts start again from 0.
    fn take_coverage(&mut self) -> Vec<(String, u64)> {
        let out = self
            .table
            .rows
            .iter()
            .zip(&self.coverage)
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| (r.id.clone(), *n))
            .collect();
        self.coverage.iter_mut().for_each(|n| *n = 0);
        out
    }

    /// (reason, groups) for the groups handed back to the Python replay.
    fn handed_back(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self.handed_back.iter().map(|(k, n)| (k.clone(), *n)).collect();
        v.sort();
        v
    }
}
