//! The metamorphic runner: one op log under many option sets, every history equal to the
//! model's and to each other; on failure, the log is shrunk and printed as a regression test.
//!
//! Owns: [`run_metamorphic`], [`shrink`], [`check_log`], [`check_seed`], [`MetaFailure`].
//!
//! Invariants: each option set runs on its own fresh [`MemFs`], so runs never share state;
//! shrinking only accepts a smaller log that still fails under the failing option set.
//!
//! Thread-safety: runs are sequential on the calling thread.

// A failure is returned once per run and carries the op and both outputs: its size does
// not matter.
#![allow(clippy::result_large_err)]

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use mezz_env::MemFs;

use crate::generator::{GenConfig, OpGenerator};
use crate::op::{Op, ops_to_rust};
use crate::option_sets::{NamedOptions, OptionSets};
use crate::runner::{Failure, History, run_log};

/// The directory inside each fresh [`MemFs`] that the runner opens its database in.
pub const MEM_DIR: &str = "db";

/// A failure under one option set.
#[derive(Debug, Clone)]
pub struct MetaFailure {
    /// The option set that failed.
    pub option_set: String,
    /// What went wrong.
    pub failure: Failure,
}

impl fmt::Display for MetaFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "under option set {}: {}", self.option_set, self.failure)
    }
}

/// Runs `ops` under `set` on a fresh in-memory file system.
///
/// # Errors
/// The run's first [`Failure`].
pub fn run_on_memfs(ops: &[Op], set: &NamedOptions) -> Result<History, Failure> {
    let fs = MemFs::new();
    run_log(ops, Arc::new(fs), Path::new(MEM_DIR), &set.options)
}

/// Runs `ops` under every set of `sets` (each on a fresh [`MemFs`]); every run is checked
/// against the model and every history must equal the first set's.
///
/// # Errors
/// The first failing set and its failure.
pub fn run_metamorphic(ops: &[Op], sets: &OptionSets) -> Result<(), MetaFailure> {
    let mut reference: Option<(&str, History)> = None;
    for set in sets.iter() {
        let history = run_on_memfs(ops, set).map_err(|failure| MetaFailure {
            option_set: set.name.clone(),
            failure,
        })?;
        match &reference {
            None => reference = Some((&set.name, history)),
            Some((ref_name, ref_history)) => {
                let diverged = ref_history
                    .iter()
                    .zip(&history)
                    .position(|(a, b)| a != b)
                    .or_else(|| (ref_history.len() != history.len()).then_some(history.len()));
                if let Some(i) = diverged {
                    let show =
                        |h: &History| h.get(i).map_or("<none>".to_string(), |o| o.to_string());
                    return Err(MetaFailure {
                        option_set: set.name.clone(),
                        failure: Failure {
                            op_index: Some(i),
                            op: ops.get(i).cloned(),
                            expected: format!("{} (as under {ref_name})", show(ref_history)),
                            found: show(&history),
                        },
                    });
                }
            }
        }
    }
    Ok(())
}

/// Shrinks a failing log by delta debugging: removes chunks of halving size, then single
/// ops, keeping every removal after which `still_fails` holds; stops after `max_runs` calls.
pub fn shrink(ops: &[Op], still_fails: &mut dyn FnMut(&[Op]) -> bool, max_runs: usize) -> Vec<Op> {
    let mut cur = ops.to_vec();
    let mut runs = 0;
    let mut chunk = (cur.len() / 2).max(1);
    while runs < max_runs && !cur.is_empty() {
        let mut progressed = false;
        let mut i = 0;
        while i < cur.len() && runs < max_runs {
            let end = (i + chunk).min(cur.len());
            let mut cand = Vec::with_capacity(cur.len() - (end - i));
            cand.extend_from_slice(cur.get(..i).unwrap_or_default());
            cand.extend_from_slice(cur.get(end..).unwrap_or_default());
            runs += 1;
            if still_fails(&cand) {
                cur = cand;
                progressed = true;
            } else {
                i = end;
            }
        }
        if !progressed {
            if chunk == 1 {
                break;
            }
            chunk = (chunk / 2).max(1);
        }
    }
    cur
}

/// How many runs [`check_seed`] spends shrinking: `MEZZ_SHRINK_RUNS`, default 300.
fn shrink_budget() -> usize {
    std::env::var("MEZZ_SHRINK_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300)
}

/// Replays `ops` under every option set of [`OptionSets::from_env`]; panics with the
/// failure. This is what regression tests call.
///
/// # Panics
/// On any failure.
pub fn check_log(ops: &[Op]) {
    if let Err(f) = run_metamorphic(ops, &OptionSets::from_env()) {
        panic!("{f}");
    }
}

/// A failing generated log, shrunk.
#[derive(Debug, Clone)]
pub struct ShrunkFailure {
    /// The generator seed.
    pub seed: u64,
    /// Ops generated.
    pub n_ops: usize,
    /// The failure of the full log.
    pub first: MetaFailure,
    /// The shrunk log.
    pub ops: Vec<Op>,
    /// The failure of the shrunk log (`None` if it stopped failing: not deterministic).
    pub last: Option<MetaFailure>,
}

impl ShrunkFailure {
    /// The seed, both failures and the shrunk log as a ready-to-paste regression test.
    #[must_use]
    pub fn report(&self) -> String {
        let mut report = format!(
            "metamorphic failure: seed {}, {} ops\n{}\n\nshrunk to {} ops",
            self.seed,
            self.n_ops,
            self.first,
            self.ops.len()
        );
        match &self.last {
            Some(f) => report.push_str(&format!(" which fail with:\n{f}\n")),
            None => report.push_str(" (no longer failing: the failure is not deterministic)\n"),
        }
        report.push_str("\nregression test for tests/regressions.rs:\n\n");
        report.push_str(&ops_to_rust(&format!("seed_{}", self.seed), &self.ops));
        report
    }
}

/// Generates `n_ops` ops from `seed` and runs them under `sets`; on failure, shrinks the
/// log against the failing set (plus the reference set, for a divergence) within the
/// `MEZZ_SHRINK_RUNS` budget.
#[must_use]
pub fn find_failure(
    seed: u64,
    n_ops: usize,
    cfg: &GenConfig,
    sets: &OptionSets,
) -> Option<ShrunkFailure> {
    let ops = OpGenerator::new(seed, cfg.clone()).generate(n_ops);
    let first = run_metamorphic(&ops, sets).err()?;
    let mut narrowed = Vec::new();
    if let Some(reference) = sets.0.first()
        && reference.name != first.option_set
    {
        narrowed.push(reference.clone());
    }
    if let Some(failing) = sets.find(&first.option_set) {
        narrowed.push(failing.clone());
    }
    let narrowed = OptionSets(narrowed);
    // Ops after the failing one only matter to the final check; try without them first.
    let mut prefix = ops.clone();
    if let Some(i) = first.failure.op_index {
        prefix.truncate(i + 1);
        if run_metamorphic(&prefix, &narrowed).is_ok() {
            prefix = ops;
        }
    }
    let mut fails = |cand: &[Op]| run_metamorphic(cand, &narrowed).is_err();
    let small = shrink(&prefix, &mut fails, shrink_budget());
    let last = run_metamorphic(&small, &narrowed).err();
    Some(ShrunkFailure {
        seed,
        n_ops,
        first,
        ops: small,
        last,
    })
}

/// [`find_failure`], printing the report to stderr and panicking on failure.
///
/// # Panics
/// On any failure.
pub fn check_seed(seed: u64, n_ops: usize, cfg: &GenConfig, sets: &OptionSets) {
    if let Some(f) = find_failure(seed, n_ops, cfg, sets) {
        let report = f.report();
        eprintln!("{report}");
        panic!("{report}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrink_finds_the_minimal_pair() {
        // "Fails" iff the log still holds both Put(a) and a later Get(a).
        let ops: Vec<Op> = (0..100u8)
            .map(|i| match i {
                17 => Op::Put {
                    key: b"a".to_vec(),
                    value: b"1".to_vec(),
                },
                80 => Op::Get { key: b"a".to_vec() },
                _ => Op::Get { key: vec![i] },
            })
            .collect();
        let mut fails = |c: &[Op]| {
            let p = c.iter().position(|o| matches!(o, Op::Put { .. }));
            let g = c.iter().position(|o| *o == Op::Get { key: b"a".to_vec() });
            matches!((p, g), (Some(p), Some(g)) if p < g)
        };
        let small = shrink(&ops, &mut fails, 1_000);
        assert_eq!(small.len(), 2);
        assert!(fails(&small));
    }

    #[test]
    fn shrink_respects_its_budget() {
        let ops = vec![Op::Flush; 64];
        let mut runs = 0;
        let mut fails = |_: &[Op]| {
            runs += 1;
            false
        };
        let out = shrink(&ops, &mut fails, 10);
        assert_eq!(out.len(), 64);
        assert_eq!(runs, 10);
    }
}
