//! Runtime utilities shared by the format crate and the engine: none of them is an
//! encoding, and none knows of files, tables or the engine.
//!
//! Owns: [`counter`] (statistics counters striped over per-thread shards), [`spare`]
//! (per-thread pools of spare block buffers, and the bounded pool type behind them) and
//! [`trace`] (per-thread counts and times of what reads waited on).
//!
//! Layering: the lowest crate of the workspace besides `mezz-env`; it depends on nothing
//! but `std`. `mezz-format` uses it (a table reader's read counters, block buffers and
//! read-wait traces), and so does the engine.
//!
//! Thread-safety: see each module; the per-thread state of [`spare`] and [`trace`] is
//! thread-local, [`counter::StripedCounters`] is `Send + Sync`.

pub mod counter;
pub mod spare;
pub mod trace;
