//! Multi-threaded lifecycle stress (see `mezz_testkit::lifecycle`): four worker threads call
//! every kind of `Db` method while a controller closes, reopens and crashes the database
//! under them; every reopen checks every key against a model that allows for the calls in
//! flight, and the close contract is checked along the way.
//!
//! CI size: every preset's tiny options (and `novelsm` with the immutable NVM memtable), with
//! background threads and with `manual_background`, one short run each (bounded by op
//! counts). `MEZZ_LIFECYCLE_LONG=<n>` runs the long variant (n seeds, each under every
//! preset and two of the standard option sets, in both modes, in turn); `MEZZ_LIFECYCLE_BASE=<n>` gives
//! fresh seeds; `MEZZ_BACKGROUND=threads|manual` keeps one background mode. A failure prints
//! the seed, the option set and the controller's schedule; replay with
//! `MEZZ_LIFECYCLE_SEED=<seed> MEZZ_LIFECYCLE_SET=<set> [MEZZ_LIFECYCLE_SIZE=long]`. A run that
//! makes no progress for `MEZZ_LIFECYCLE_STALL_SECS` (120) is reported as hung and the
//! process exits with status 2.

use mezz_testkit::lifecycle::{LONG_ENV, base_seed, run_default, run_long, seed_from_env};

#[test]
fn lifecycle_every_preset() {
    let report = run_default(base_seed(0x11fe_c7c1e)).unwrap_or_else(|f| panic!("{f}"));
    println!("lifecycle: {report}");
    assert!(report.runs >= 1);
    assert!(report.acked > 0 && report.live_checks > 0);
    if seed_from_env().is_none() {
        // Every run reopens at least at its end; the schedule holds closes and crashes.
        assert!(report.clean_reopens > report.runs as u64, "{report}");
        assert!(report.crashes > 0, "{report}");
        assert!(report.closed_errors > 0, "{report}");
        assert!(report.after_close_checks > 0, "{report}");
    }
}

#[test]
fn lifecycle_long() {
    let Some(r) = run_long(0x5eed_11fe) else {
        println!("lifecycle_long: set {LONG_ENV}=<seeds> to run it");
        return;
    };
    let report = r.unwrap_or_else(|f| panic!("{f}"));
    println!("lifecycle long: {report}");
    assert!(report.runs >= 1);
}

/// The lifecycle run with a mirror column family (`LifecycleConfig::mirror_family`): every
/// write also goes into a second family in the same batch, and every reopen (after closes
/// and crashes, with workers calling every method meanwhile) requires both families to
/// hold the same state. Under the tiny sets of the presets without an NVM memtable, with
/// background threads and with manual background work.
#[test]
fn lifecycle_with_a_mirror_column_family() {
    use mezz_testkit::OptionSets;
    use mezz_testkit::lifecycle::{LifecycleConfig, lifecycle_sets, run_sets};
    let sets = OptionSets(
        lifecycle_sets()
            .0
            .into_iter()
            .filter(|s| !s.options.nvm_memtable.in_place())
            .collect(),
    );
    let cfg = LifecycleConfig {
        mirror_family: true,
        ..LifecycleConfig::short(base_seed(0x3117_70c5))
    };
    let report = run_sets(&cfg, &sets, |set, r| {
        println!("lifecycle (mirror family) {}: {r}", set.name);
    })
    .unwrap_or_else(|f| panic!("{f}"));
    assert!(report.runs >= 1);
    assert!(report.acked > 0 && report.crashes > 0, "{report}");
}
