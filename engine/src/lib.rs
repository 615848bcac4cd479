//! groupspec's native explorer. The transition table is handed over from Python as plain data at
//! run time; this crate implements the table's atoms, effects, reply forms and invariants (under
//! their Python names), the abstract model of check/abstract.py and the explorer of
//! check/explore.py. The Python binding (feature `python`) is a thin layer: plain data in,
//! plain data out.

#![forbid(unsafe_code)]

pub mod abstract_model;
pub mod explore;
pub mod invariants;
pub mod model;
pub mod properties;
pub mod step;

#[cfg(feature = "python")]
mod python;

#[cfg(test)]
mod tests;
