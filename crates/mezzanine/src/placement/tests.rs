//! The placement policies, tested on their own (pure inputs), and the engine's placement
//! over a version with running jobs.

use std::sync::Arc;

use super::*;
use crate::manifest::VersionEdit;
use crate::version::tests::meta;

fn unit(path_id: u32) -> UnitView {
    UnitView {
        path_id,
        ..UnitView::default()
    }
}

fn input(units: &[UnitView], table_id: u64, cursor: u64) -> PlaceInput<'_> {
    PlaceInput {
        units,
        table_id,
        cursor,
    }
}

#[test]
fn striped_rotates_over_every_unit_whatever_the_load() {
    let mut units: Vec<UnitView> = (1..=4).map(unit).collect();
    units[0].other_writers = 3;
    units[0].job_read_bytes = 1 << 30;
    let chosen: Vec<u32> = (0..8)
        .map(|c| choose_unit(PlacementPolicy::Striped, &input(&units, 99, c)))
        .collect();
    assert_eq!(chosen, vec![1, 2, 3, 4, 1, 2, 3, 4]);
}

#[test]
fn per_file_maps_each_table_by_its_number_alone() {
    let mut units: Vec<UnitView> = (1..=3).map(unit).collect();
    units[1].other_readers = 2;
    for id in 0..9u64 {
        let u = choose_unit(PlacementPolicy::PerFile, &input(&units, id, 1000 + id));
        assert_eq!(u, units[(id % 3) as usize].path_id);
    }
}

#[test]
fn isolated_writes_where_no_input_and_no_other_job_is() {
    let mut units: Vec<UnitView> = (1..=4).map(unit).collect();
    units[0].job_read_bytes = 10 << 20; // this job reads unit 1
    units[1].other_readers = 1; // another compaction reads unit 2
    units[2].other_writers = 1; // another job writes unit 3
    for id in 0..6 {
        assert_eq!(
            choose_unit(PlacementPolicy::Isolated, &input(&units, id, id)),
            4,
            "table {id}"
        );
    }
    // With every unit in conflict, the one with fewest kinds of conflict wins.
    units[3].other_readers = 1;
    units[3].other_writers = 1;
    assert_eq!(
        choose_unit(PlacementPolicy::Isolated, &input(&units, 7, 7)),
        1
    );
}

#[test]
fn isolated_spreads_upper_levels_over_the_least_hot_units() {
    let mut units: Vec<UnitView> = (1..=3).map(unit).collect();
    units[0].hot_bytes = 30 << 20;
    units[1].hot_bytes = 10 << 20;
    units[2].hot_bytes = 20 << 20;
    assert_eq!(
        choose_unit(PlacementPolicy::Isolated, &input(&units, 5, 0)),
        2
    );
    // Equal heat: the rotation by table number spreads successive tables.
    let even: Vec<UnitView> = (1..=3).map(unit).collect();
    let chosen: Vec<u32> = (0..3)
        .map(|id| choose_unit(PlacementPolicy::Isolated, &input(&even, id, 0)))
        .collect();
    let mut sorted = chosen.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![1, 2, 3], "{chosen:?}");
}

#[test]
fn isolated_spreads_a_jobs_tables_over_the_coolest_units_and_avoids_over_share() {
    let mut units: Vec<UnitView> = (1..=3).map(unit).collect();
    units[0].bytes = 100 << 20;
    units[2].bytes = 50 << 20;
    // A unit with no live table takes the first table.
    assert_eq!(
        choose_unit(PlacementPolicy::Isolated, &input(&units, 11, 0)),
        2
    );
    // The job packs its next tables there, PACK_TABLES in all, then goes to the next
    // coolest unit.
    for written in 1..PACK_TABLES {
        units[1].job_written = written;
        assert_eq!(
            choose_unit(PlacementPolicy::Isolated, &input(&units, 12, 0)),
            2,
            "after {written}"
        );
    }
    units[1].job_written = PACK_TABLES;
    assert_eq!(
        choose_unit(PlacementPolicy::Isolated, &input(&units, 12, 0)),
        3
    );
    // Hot (upper-level) bytes weigh more than cold ones.
    units[1].job_written = 0;
    units[1].bytes = 20 << 20;
    units[1].hot_bytes = 20 << 20; // heat 80 MiB
    units[2].hot_bytes = 0; // heat 50 MiB
    assert_eq!(
        choose_unit(PlacementPolicy::Isolated, &input(&units, 13, 0)),
        3
    );
    // A unit far over its share of bytes is left, however cool it otherwise is.
    let mut skewed: Vec<UnitView> = (1..=3).map(unit).collect();
    skewed[0].bytes = 4 << 30;
    skewed[1].bytes = 1 << 30;
    skewed[2].bytes = 1 << 30;
    skewed[1].hot_bytes = 1 << 30;
    skewed[2].hot_bytes = 1 << 30;
    assert_ne!(
        choose_unit(PlacementPolicy::Isolated, &input(&skewed, 14, 0)),
        1
    );
}

#[test]
fn names_round_trip() {
    for p in [
        PlacementPolicy::Striped,
        PlacementPolicy::PerFile,
        PlacementPolicy::Isolated,
    ] {
        assert_eq!(PlacementPolicy::parse(p.name()), Some(p));
    }
    assert_eq!(PlacementPolicy::parse("raid0"), None);
}

fn at(id: u64, lo: &str, hi: &str, path_id: u32, size: u64) -> TableMeta {
    let mut m = meta(id, lo, hi, (id, id), size);
    m.location = TableLocation::Sst { path_id };
    m
}

#[test]
fn unit_views_count_bytes_hot_bytes_and_the_jobs_reads() {
    let v = Version::new(4)
        .apply(&VersionEdit {
            new_tables: vec![
                (0, at(1, "a", "c", 1, 100)),
                (1, at(2, "a", "c", 2, 200)),
                (3, at(3, "a", "m", 2, 5000)),
                (3, at(4, "n", "z", 3, 7000)),
                (2, at(5, "a", "z", 0, 9)), // the database directory: not a candidate
            ],
            ..VersionEdit::default()
        })
        .unwrap();
    let inputs: Vec<Arc<TableMeta>> = v.tables(1).to_vec();
    let views = unit_views(&v, &[1, 2, 3], &inputs, 3);
    let got: Vec<(u32, u64, u64, u64)> = views
        .iter()
        .map(|u| (u.path_id, u.bytes, u.hot_bytes, u.job_read_bytes))
        .collect();
    assert_eq!(
        got,
        vec![(1, 100, 100, 0), (2, 5200, 200, 200), (3, 7000, 0, 0)]
    );
}

#[test]
fn running_jobs_steer_each_other_and_leave_no_record_behind() {
    let v = Version::new(4)
        .apply(&VersionEdit {
            new_tables: vec![
                (1, at(1, "a", "m", 1, 1 << 20)),
                (2, at(2, "a", "m", 2, 4 << 20)),
                (2, at(3, "n", "z", 3, 4 << 20)),
            ],
            ..VersionEdit::default()
        })
        .unwrap();
    let p = UnitPlacement::new(PlacementPolicy::Isolated, vec![1, 2, 3, 4]);
    // A compaction L1 -> L2 reads units 1 and 2.
    let inputs = vec![Arc::clone(&v.tables(1)[0]), Arc::clone(&v.tables(2)[0])];
    let mut compaction = p.begin(&JobInfo {
        version: &v,
        output_level: 2,
        inputs: &inputs,
    });
    let first = compaction.place(10);
    assert!(first == 3 || first == 4, "{first}");
    // A flush meanwhile avoids the units the compaction reads and writes.
    let mut flush = p.begin(&JobInfo {
        version: &v,
        output_level: 0,
        inputs: &[],
    });
    let f = flush.place(11);
    assert!(f == 3 || f == 4, "flush went to {f}");
    assert_ne!(f, first, "flush went where the compaction writes");
    // Every unit now conflicts for the compaction but the one it writes itself.
    assert_eq!(compaction.place(12), first);
    assert_eq!(p.activity().running_jobs(), 2);
    drop(compaction);
    drop(flush);
    assert_eq!(p.activity().running_jobs(), 0);
}

#[test]
fn a_single_unit_takes_every_table() {
    let v = Version::new(3);
    let p = UnitPlacement::new(PlacementPolicy::Isolated, vec![0]);
    let mut j = p.begin(&JobInfo {
        version: &v,
        output_level: 1,
        inputs: &[],
    });
    assert_eq!((j.place(1), j.place(2)), (0, 0));
    assert_eq!(p.activity().running_jobs(), 0);
    let mut d = DbDirPlacement.begin(&JobInfo {
        version: &v,
        output_level: 0,
        inputs: &[],
    });
    assert_eq!(d.place(3), 0);
}

#[test]
fn every_policy_returns_one_of_its_units_and_is_pure() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..2000 {
        let n = rng.random_range(1..6u32);
        let units: Vec<UnitView> = (1..=n)
            .map(|path_id| UnitView {
                path_id,
                bytes: rng.random_range(0..1u64 << 33),
                hot_bytes: rng.random_range(0..1u64 << 30),
                job_read_bytes: rng.random_range(0..2u64),
                job_written: rng.random_range(0..3u32),
                other_readers: rng.random_range(0..2u32),
                other_writers: rng.random_range(0..2u32),
            })
            .collect();
        let id = rng.random_range(0..1000u64);
        let cursor = rng.random_range(0..1000u64);
        for policy in [
            PlacementPolicy::Striped,
            PlacementPolicy::PerFile,
            PlacementPolicy::Isolated,
        ] {
            let u = choose_unit(policy, &input(&units, id, cursor));
            assert!(units.iter().any(|v| v.path_id == u), "{policy:?} gave {u}");
            assert_eq!(u, choose_unit(policy, &input(&units, id, cursor)));
        }
    }
}

#[test]
fn isolated_keeps_upper_levels_on_the_wide_units_and_deeper_ones_off_them() {
    let v = Version::new(4);
    let p = UnitPlacement::new(PlacementPolicy::Isolated, vec![1, 2, 3, 4]).with_wide_units(1);
    let place = |level: usize, id: u64| {
        p.begin(&JobInfo {
            version: &v,
            output_level: level,
            inputs: &[],
        })
        .place(id)
    };
    for id in 0..8 {
        assert_eq!(place(0, id), 1);
        assert_eq!(place(1, id), 1);
        assert_ne!(place(2, id), 1);
        assert_ne!(place(3, id), 1);
    }
    // The other policies ignore it; all units wide means none is.
    let s = UnitPlacement::new(PlacementPolicy::Striped, vec![1, 2]).with_wide_units(1);
    let got: Vec<u32> = (0..4)
        .map(|id| {
            s.begin(&JobInfo {
                version: &v,
                output_level: 0,
                inputs: &[],
            })
            .place(id)
        })
        .collect();
    assert_eq!(got, vec![1, 2, 1, 2]);
    let all = UnitPlacement::new(PlacementPolicy::Isolated, vec![1, 2]).with_wide_units(2);
    assert_eq!(all.candidates(3), &[1, 2]);
}

/// Places `n` tables of one job with `isolated`, noting each in the views as the job's
/// placement does; returns the units chosen.
fn place_job(units: &mut [UnitView], n: u64) -> Vec<u32> {
    (0..n)
        .map(|id| {
            let u = choose_unit(PlacementPolicy::Isolated, &input(units, id, 0));
            units
                .iter_mut()
                .find(|v| v.path_id == u)
                .unwrap()
                .job_written += 1;
            u
        })
        .collect()
}

#[test]
fn isolated_packs_a_jobs_tables_on_scarce_quiet_units_and_spreads_them_over_many() {
    // Units 1 and 2 hold live tables; 3, 4 and 5 hold none.
    let mut units: Vec<UnitView> = (1..=5).map(unit).collect();
    units[0].bytes = 8 << 20;
    units[1].bytes = 4 << 20;
    let placed = place_job(&mut units, 10);
    // Four on one quiet unit, four on the next, two on the last; none where reads are.
    let mut counts: Vec<usize> = [3, 4, 5]
        .iter()
        .map(|&u| placed.iter().filter(|&&p| p == u).count())
        .collect();
    counts.sort_unstable();
    assert_eq!(counts, vec![2, 4, 4], "{placed:?}");
    assert_eq!(
        placed[..4]
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        1
    );
    // With many units free (more than half), a job's tables spread one per unit: a small
    // database keeps its reads on as many units as it can.
    let mut roomy: Vec<UnitView> = (1..=16).map(unit).collect();
    roomy[0].bytes = 8 << 20;
    let spread = place_job(&mut roomy, 6);
    assert_eq!(
        spread
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        6,
        "{spread:?}"
    );
    assert!(!spread.contains(&1));
    // With every quiet unit full, the next table goes to the coolest unit serving reads.
    for v in &mut units[2..] {
        v.job_written = v.job_written.max(PACK_TABLES);
    }
    assert_eq!(
        choose_unit(PlacementPolicy::Isolated, &input(&units, 100, 0)),
        2
    );
}

#[test]
fn isolated_paces_writes_only_to_units_that_hold_live_tables() {
    // Unit 1 holds a live table (foreground reads reach it); units 2 and 3 hold none.
    let v = Version::new(4)
        .apply(&VersionEdit {
            new_tables: vec![(2, at(1, "a", "z", 1, 4 << 20))],
            ..VersionEdit::default()
        })
        .unwrap();
    let job = |p: &UnitPlacement| {
        p.begin(&JobInfo {
            version: &v,
            output_level: 1,
            inputs: &[],
        })
    };
    let paced =
        UnitPlacement::new(PlacementPolicy::Isolated, vec![1, 2, 3]).with_write_pace(16 << 10);
    let j = job(&paced);
    assert_eq!(j.pace_bytes(1), 16 << 10, "a unit serving reads is paced");
    assert_eq!(j.pace_bytes(2), 0, "a unit with no live table is not");
    assert_eq!(j.pace_bytes(3), 0);
    drop(j);
    // A unit free when the job began serves reads once another job places a table there
    // (that table is live once its job installs it), even after that job is gone; the
    // job's own tables do not count (they are not live until it installs them).
    let mut a = job(&paced);
    let mut b = job(&paced);
    let mine = a.place(10);
    assert_ne!(mine, 1, "a writes where no table is live");
    assert_eq!(
        a.pace_bytes(mine),
        0,
        "its own table does not make a unit serve reads"
    );
    let theirs = b.place(11);
    assert_ne!(theirs, mine);
    assert_eq!(a.pace_bytes(theirs), 16 << 10, "b writes there now");
    drop(b);
    assert_eq!(
        a.pace_bytes(theirs),
        16 << 10,
        "b's table is live there now"
    );
    // A job that begins while another writes a unit paces it too.
    let mut c = job(&paced);
    let cs = c.place(12);
    let d = job(&paced);
    assert_eq!(d.pace_bytes(cs), 16 << 10);
    drop((a, c, d));
    // Pacing off, or another policy: never paced.
    let off = UnitPlacement::new(PlacementPolicy::Isolated, vec![1, 2, 3]);
    assert_eq!(job(&off).pace_bytes(1), 0);
    let striped =
        UnitPlacement::new(PlacementPolicy::Striped, vec![1, 2, 3]).with_write_pace(16 << 10);
    assert_eq!(job(&striped).pace_bytes(1), 0);
}
