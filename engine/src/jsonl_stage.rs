//! Stage 1 of the trace replay over JSON Lines, natively: one line -> the trace row's cells, or
//! "not here" (the line goes to the Python validator, traces/validate.py, which gives its reason).
//!
//! The parse is at least as strict as the pyarrow parse it replaces (traces/batch.py `_parse`):
//! one JSON object per line, known columns only (their names and types come from
//! traces/schema.py, handed over at run time), no key twice, strings for string columns, integers
//! within range for int64/int32 columns, null for "absent", nothing nested. A line that passes is
//! only parsed; the column rules (required fields, vocabularies) stay traces/batch.py `flag_rows`.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A column's type as traces/schema.py names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    Str,
    I64,
    I32,
}

impl ColType {
    pub fn parse(name: &str) -> Result<ColType, String> {
        match name {
            "string" => Ok(ColType::Str),
            "int64" => Ok(ColType::I64),
            "int32" => Ok(ColType::I32),
            t => Err(format!("unknown column type {t}")),
        }
    }
}

/// One cell of a parsed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell<'a> {
    Absent,
    Null,
    Str(Cow<'a, str>),
    Int(i64),
}

impl Cell<'_> {
    pub fn is_null(&self) -> bool {
        matches!(self, Cell::Absent | Cell::Null)
    }
}

/// The trace columns, in order.
pub struct Columns {
    pub names: Vec<String>,
    pub types: Vec<ColType>,
}

impl Columns {
    pub fn new(columns: Vec<(String, String)>) -> Result<Columns, String> {
        let mut names = Vec::with_capacity(columns.len());
        let mut types = Vec::with_capacity(columns.len());
        for (n, t) in columns {
            names.push(n);
            types.push(ColType::parse(&t)?);
        }
        Ok(Columns { names, types })
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The line's cells (one per column), or None: the line is not one flat object of known,
    /// well-typed columns (the Python validator then judges it). `line` excludes the newline.
    pub fn parse_line<'a>(&self, line: &'a [u8]) -> Option<Vec<Cell<'a>>> {
        let mut de = serde_json::Deserializer::from_slice(line);
        let cells = de.deserialize_map(RowVisitor { columns: self }).ok()?;
        de.end().ok()?;
        Some(cells)
    }
}

struct RowVisitor<'c> {
    columns: &'c Columns,
}

impl<'de> Visitor<'de> for RowVisitor<'_> {
    type Value = Vec<Cell<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace row object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut cells = vec![Cell::Absent; self.columns.names.len()];
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let i = self.columns.index(&key.0).ok_or_else(|| de::Error::custom("unknown column"))?;
            if cells[i] != Cell::Absent {
                return Err(de::Error::custom("column twice"));
            }
            cells[i] = map.next_value_seed(CellSeed(self.columns.types[i]))?;
        }
        Ok(cells)
    }
}

/// A JSON string, borrowed from the line when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

struct CellSeed(ColType);

impl<'de> DeserializeSeed<'de> for CellSeed {
    type Value = Cell<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CellSeed {
    type Value = Cell<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {:?} or null", self.0)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Cell::Null)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        match self.0 {
            ColType::Str => Ok(Cell::Str(Cow::Borrowed(v))),
            _ => Err(E::custom("a string in an integer column")),
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        match self.0 {
            ColType::Str => Ok(Cell::Str(Cow::Owned(v.to_owned()))),
            _ => Err(E::custom("a string in an integer column")),
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        match self.0 {
            ColType::I64 => Ok(Cell::Int(v)),
            ColType::I32 if i32::try_from(v).is_ok() => Ok(Cell::Int(v)),
            _ => Err(E::custom("integer out of range or in a string column")),
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        match i64::try_from(v) {
            Ok(v) => self.visit_i64(v),
            Err(_) => Err(E::custom("integer beyond int64")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Columns {
        Columns::new(vec![
            ("group_id".into(), "string".into()),
            ("seq".into(), "int64".into()),
            ("generation".into(), "int32".into()),
        ])
        .unwrap()
    }

    #[test]
    fn parses_a_flat_row() {
        let c = columns();
        let cells = c.parse_line(br#" {"seq": 3, "group_id": "g\"1", "generation": null} "#).unwrap();
        assert_eq!(cells, vec![Cell::Str(Cow::Owned("g\"1".into())), Cell::Int(3), Cell::Null]);
        let cells = c.parse_line(br#"{"group_id":"g"}"#).unwrap();
        assert_eq!(cells, vec![Cell::Str(Cow::Borrowed("g")), Cell::Absent, Cell::Absent]);
    }

    #[test]
    fn refuses_what_the_python_validator_must_judge() {
        let c = columns();
        for line in [
            &br#"{"group_id":"g","extra":1}"#[..],             // unknown column
            br#"{"group_id":"g","group_id":"h"}"#,             // a key twice
            br#"{"group_id":"g","group_id":null}"#,            // a key twice, once null
            br#"{"group_id":1}"#,                              // wrong type
            br#"{"seq":"1"}"#,                                 // string in an int column
            br#"{"seq":1.0}"#,                                 // float
            br#"{"seq":1e3}"#,                                 // float
            br#"{"seq":true}"#,                                // bool
            br#"{"seq":9223372036854775808}"#,                 // beyond int64
            br#"{"generation":2147483648}"#,                   // beyond int32
            br#"{"generation":-2147483649}"#,                  // beyond int32
            br#"{"group_id":["g"]}"#,                          // nested
            br#"{"group_id":{"a":1}}"#,                        // nested
            br#"{"group_id":"\ud800"}"#,                       // lone surrogate
            br#"{"group_id":"g"} x"#,                          // trailing text
            br#"{"group_id":"g""#,                             // cut short
            br#"[1]"#,                                         // not an object
            br#"null"#,
            b"",
            b"   ",
            b"{\"group_id\":\"\xff\"}",                        // not UTF-8
            br#"{"seq":NaN}"#,
        ] {
            assert!(c.parse_line(line).is_none(), "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(c.parse_line(br#"{"generation":-2147483648}"#).unwrap()[2], Cell::Int(i64::from(i32::MIN)));
        assert_eq!(c.parse_line(br#"{"seq":9223372036854775807}"#).unwrap()[1], Cell::Int(i64::MAX));
    }
}
