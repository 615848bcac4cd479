//! groupspec's native explorer. The transition table is handed over from Python as plain data at
//! run time; this crate implements the model's atoms, effects, reply forms and invariants (under
//! their Python names), the abstract model of check/abstract.py and the explorer of
//! check/explore.py. What a user registered and the crate lacks is called back into Python
//! (`step::Callbacks`, a counted slow path; check/callbacks.py answers). The concrete mode
//! (concrete.rs, concrete_replay.rs, pyrandom.rs) replays recorded traces one group at a time over
//! the same table (python_concrete.rs: Arrow batches in, "clean" per group out). The Python binding
//! (feature `python`) is a thin layer: plain data in, plain data out.

#![forbid(unsafe_code)]

pub mod abstract_model;
pub mod concrete;
pub mod concrete_replay;
pub mod explore;
pub mod explore_cache;
pub mod invariants;
pub mod jsonl_stage;
pub mod lockstep;
pub mod model;
pub mod properties;
pub mod pyrandom;
pub mod recent;
pub mod step;
pub mod varint;

#[cfg(feature = "python")]
mod python;
#[cfg(feature = "python")]
mod python_lockstep;
#[cfg(feature = "python")]
mod python_concrete;
#[cfg(feature = "python")]
mod python_jsonl;

#[cfg(test)]
mod tests;
