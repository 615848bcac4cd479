//! The PyO3 surface of stage 1 over JSON Lines (jsonl_stage.rs): `JsonlStager(columns)` turns a
//! chunk of a file's lines (`stage`, `replay --local`) or a Spark text batch (`stage_batch`,
//! `mapInArrow`) into one Arrow record batch of the lines it parsed, plus the lines it did not
//! parse, which traces/batch.py runs through the Python validator.

use crate::jsonl_stage::{Cell, ColType, Columns};
use arrow::array::{Array, ArrayRef, AsArray, Int32Builder, Int64Builder, RecordBatch, StringBuilder};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use arrow::pyarrow::PyArrowType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::fmt::Write;
use std::sync::Arc;

/// Extra columns of a staged chunk: the line's number (`stage`) or row (`stage_batch`), and its
/// byte span in the chunk (`stage` only; `stage_batch` gives 0, 0).
const LINE: &str = "__line";
const START: &str = "__start";
const END: &str = "__end";

/// A staged chunk: the parsed lines, and (line, start, end) of the others.
type Staged = (RecordBatch, Vec<(i64, usize, usize)>);
type PyStaged = (PyArrowType<RecordBatch>, Vec<(i64, usize, usize)>);

fn to_py(staged: Result<Staged, String>) -> PyResult<PyStaged> {
    staged.map(|(batch, failed)| (PyArrowType(batch), failed)).map_err(PyValueError::new_err)
}

enum Builder {
    S(StringBuilder),
    I64(Int64Builder),
    I32(Int32Builder),
}

struct Chunk<'c> {
    columns: &'c Columns,
    origin: usize,
    builders: Vec<Builder>,
    line: Int64Builder,
    start: Int64Builder,
    end: Int64Builder,
    failed: Vec<(i64, usize, usize)>,
    scratch: String,
}

impl<'c> Chunk<'c> {
    fn new(columns: &'c Columns, origin: usize, rows: usize) -> Chunk<'c> {
        let builders = columns
            .types
            .iter()
            .map(|t| match t {
                ColType::Str => Builder::S(StringBuilder::with_capacity(rows, rows * 16)),
                ColType::I64 => Builder::I64(Int64Builder::with_capacity(rows)),
                ColType::I32 => Builder::I32(Int32Builder::with_capacity(rows)),
            })
            .collect();
        Chunk {
            columns,
            origin,
            builders,
            line: Int64Builder::with_capacity(rows),
            start: Int64Builder::with_capacity(rows),
            end: Int64Builder::with_capacity(rows),
            failed: Vec::new(),
            scratch: String::new(),
        }
    }

    /// One line: parsed into the builders, or noted as failed. `origin` writes the line's origin
    /// (used when the row has none).
    fn add(&mut self, text: &[u8], line: i64, span: (usize, usize), mut origin: impl FnMut(&mut String)) {
        let Some(cells) = self.columns.parse_line(text) else {
            self.failed.push((line, span.0, span.1));
            return;
        };
        for (i, (cell, b)) in cells.iter().zip(self.builders.iter_mut()).enumerate() {
            match (cell, b) {
                (Cell::Str(s), Builder::S(b)) => b.append_value(s),
                (Cell::Int(v), Builder::I64(b)) => b.append_value(*v),
                // the parse checked the range
                (Cell::Int(v), Builder::I32(b)) => b.append_value(*v as i32),
                (_, Builder::S(b)) if i == self.origin => {
                    self.scratch.clear();
                    origin(&mut self.scratch);
                    b.append_value(&self.scratch);
                }
                (_, Builder::S(b)) => b.append_null(),
                (_, Builder::I64(b)) => b.append_null(),
                (_, Builder::I32(b)) => b.append_null(),
            }
        }
        self.line.append_value(line);
        self.start.append_value(span.0 as i64);
        self.end.append_value(span.1 as i64);
    }

    fn finish(mut self, schema: &SchemaRef) -> Result<Staged, String> {
        let mut arrays: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(|b| -> ArrayRef {
                match b {
                    Builder::S(b) => Arc::new(b.finish()),
                    Builder::I64(b) => Arc::new(b.finish()),
                    Builder::I32(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        arrays.push(Arc::new(self.line.finish()));
        arrays.push(Arc::new(self.start.finish()));
        arrays.push(Arc::new(self.end.finish()));
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())?;
        Ok((batch, self.failed))
    }
}

#[pyclass(module = "groupspec_engine")]
pub(crate) struct JsonlStager {
    columns: Columns,
    origin: usize,
    schema: SchemaRef,
}

#[pymethods]
impl JsonlStager {
    /// columns: (name, type) of the trace columns in order (traces/schema.py COLUMNS); one of them
    /// is the string column `origin`.
    #[new]
    fn new(columns: Vec<(String, String)>) -> PyResult<Self> {
        let columns = Columns::new(columns).map_err(PyValueError::new_err)?;
        let origin = columns
            .index("origin")
            .filter(|&i| columns.types[i] == ColType::Str)
            .ok_or_else(|| PyValueError::new_err("the columns have no string column origin"))?;
        let mut fields: Vec<Field> = columns
            .names
            .iter()
            .zip(&columns.types)
            .map(|(n, t)| {
                let dt = match t {
                    ColType::Str => DataType::Utf8,
                    ColType::I64 => DataType::Int64,
                    ColType::I32 => DataType::Int32,
                };
                Field::new(n, dt, true)
            })
            .collect();
        for extra in [LINE, START, END] {
            fields.push(Field::new(extra, DataType::Int64, false));
        }
        Ok(JsonlStager { columns, origin, schema: Arc::new(Schema::new(fields)) })
    }

    /// `data`: whole lines of the file `path` (each ended by a newline, but for the file's last
    /// one), the first of them line `first_line`. Returns (the parsed lines as a batch: the trace
    /// columns, origin "PATH:LINE" where the row has none, `__line`, `__start`, `__end`; the lines
    /// not parsed as (line, start, end)). A span excludes the newline and one carriage return
    /// before it, as traces/local.py reads a line.
    /// The GIL is released while the lines are parsed (traces/local.py reads the next chunk meanwhile).
    fn stage(&self, py: Python<'_>, data: &[u8], path: &str, first_line: i64) -> PyResult<PyStaged> {
        to_py(py.allow_threads(|| self.stage_lines(data, path, first_line)))
    }

    /// A Spark text batch (columns `value` binary, `file` string, `pos` int64) -> as `stage`,
    /// with origin "FILE#POS" and `__line` the row of the batch (spans 0, 0).
    fn stage_batch(&self, batch: PyArrowType<RecordBatch>) -> PyResult<PyStaged> {
        to_py(self.stage_text_batch(&batch.0))
    }
}

impl JsonlStager {
    fn stage_lines(&self, data: &[u8], path: &str, first_line: i64) -> Result<Staged, String> {
        let rows = memchr::memchr_iter(b'\n', data).count() + 1;
        let mut chunk = Chunk::new(&self.columns, self.origin, rows);
        let mut start = 0;
        let mut line = first_line;
        while start < data.len() {
            let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |p| start + p);
            let mut stop = end;
            if stop > start && data[stop - 1] == b'\r' {
                stop -= 1;
            }
            chunk.add(&data[start..stop], line, (start, stop), |s| {
                let _ = write!(s, "{path}:{line}");
            });
            start = end + 1;
            line += 1;
        }
        chunk.finish(&self.schema)
    }

    fn stage_text_batch(&self, batch: &RecordBatch) -> Result<Staged, String> {
        let get = |name: &str| batch.column_by_name(name).ok_or_else(|| format!("the batch has no column {name}"));
        let values = get("value")?;
        let values = values.as_binary_opt::<i32>().ok_or("column value: expected binary")?;
        let files = get("file")?;
        let files = files.as_string_opt::<i32>().ok_or("column file: expected string")?;
        let pos = get("pos")?;
        let pos = pos.as_primitive_opt::<Int64Type>().ok_or("column pos: expected int64")?;
        let mut chunk = Chunk::new(&self.columns, self.origin, batch.num_rows());
        for i in 0..batch.num_rows() {
            let text = if values.is_null(i) { &b""[..] } else { values.value(i) };
            chunk.add(text, i as i64, (0, 0), |s| {
                let _ = write!(s, "{}#{}", files.value(i), pos.value(i));
            });
        }
        chunk.finish(&self.schema)
    }
}
