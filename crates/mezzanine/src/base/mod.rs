//! The engine's ground floor: what every layer above speaks of and nothing below needs.
//! [`meta`]: table metadata, locations and tiers; [`limits`]: sizes shared by options and
//! memtables; [`snapshot`]: the registry of live snapshots.
//!
//! Imports only `error` and the crates below the engine (the layering test,
//! `tests/layers.rs`, holds it there).
//!
//! Thread-safety: see each module; all of it is `Send + Sync`.

pub mod limits;
pub mod meta;
pub mod snapshot;
