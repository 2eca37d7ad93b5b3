//! Mezzanine's test kit (used by tests only): a `BTreeMap` model of the database, a seeded
//! generator of operation logs, a runner that applies a log to a real database and to the
//! model side by side, named option sets, and the metamorphic runner with a shrinker that
//! prints failing logs as regression tests.
//!
//! ```no_run
//! use mezz_testkit::{GenConfig, OptionSets, check_seed};
//! // 500 random ops under every preset and option variation, each on a fresh MemFs.
//! check_seed(7, 500, &GenConfig::default(), &OptionSets::standard());
//! ```
//!
//! Layout: `op` (ops, outputs, Rust rendering), `model` (the reference), `generator`
//! (random logs), `runner` (one database vs the model), `option_sets`, `meta`
//! (metamorphic runs and shrinking), `crash` (in-process crash campaigns), `stress`
//! (kill -9 rounds), `lifecycle` (worker threads against a handle that a controller
//! closes, reopens and crashes under them).
//!
//! Invariants: the model defines the expected result of every op; a run stops at the first
//! difference and reports the op index, the op, what was expected and what was found.
//!
//! Thread-safety: every type here is used from one test thread at a time; the `crash`,
//! `stress` and `lifecycle` runners start threads of their own (see each module).

pub mod codec;
pub mod crash;
pub mod generator;
pub mod lifecycle;
pub mod meta;
pub mod model;
pub mod op;
pub mod option_sets;
pub mod runner;
pub mod stress;

pub use codec::KeyCodec;
pub use generator::{GenConfig, KeySpace, OpGenerator, OpMix};
pub use meta::{
    MEM_DIR, MetaFailure, ShrunkFailure, check_log, check_seed, find_failure, run_metamorphic,
    run_on_memfs, shrink,
};
pub use model::{Model, View};
pub use op::{BatchOp, Op, Output, SeekStart, Step, make_value, ops_to_rust};
pub use option_sets::{NamedOptions, OptionSets, tiny_options};
pub use runner::{Failure, Harness, History, MIRROR_FAMILY, run_log, run_log_with};
