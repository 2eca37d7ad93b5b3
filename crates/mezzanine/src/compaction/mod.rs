//! Compaction: policies that decide what to compact, the executor that merges, and the
//! sinks that outputs are written to.
//!
//! Layout:
//! - [`policy`]: the [`CompactionPolicy`] trait, [`CompactionPlan`], the [`Claims`] of
//!   running jobs (jobs claim tables and key ranges, not whole levels) and
//!   [`WritePressure`] (the stall triggers are the policy's).
//! - [`leveled`]: [`LeveledPolicy`], the planner of the SST levels (pure functions of a
//!   version and the options).
//! - [`tiering`]: [`tiering::TieredPolicy`], TLSM's tiering on top of it (moves of NVM
//!   tables to SSD, reclamation of mostly dead NVM objects, which levels are NVM tables).
//! - [`column`](mod@column): MatrixKV's column planner (a pure function).
//! - [`matrix`]: [`matrix::MatrixPolicy`] (a matrix-container L0: column compactions,
//!   triggers on container bytes) and the column compaction it plans.
//! - [`executor`]: runs a plan (trivial move or merge) into a table sink; the merge loop
//!   is shared by every sink.
//! - [`sink`]: the [`TableSink`] trait (flush and compaction outputs), [`SstSink`] and
//!   [`write_table`]; which directory a new SST goes to is `crate::placement`'s.
//! - [`nvm_sink`]: [`nvm_sink::NvmSink`], outputs written as NVM tables (pointing at their
//!   inputs' entries where the method allows).
//! - [`spill`]: [`spill::SpillSink`], NVM tables while the pool has room for another,
//!   then SSTs (merges under a tiering that allows SSTs).
//!
//! Thread-safety: policies are pure and shared; each running job has its own executor and
//! sink.

pub mod column;
pub mod executor;
pub mod leveled;
pub mod matrix;
pub mod nvm_sink;
pub mod policy;
pub mod sink;
pub mod spill;
pub mod tiering;

pub use executor::{CompactionContext, resume_compaction, run_compaction, trivial_move_edit};
pub use policy::{
    Claims, CompactionPlan, CompactionPolicy, CompactionReason, StallCause, WritePressure,
};
pub use sink::{SstSink, WrittenTable, write_table};
