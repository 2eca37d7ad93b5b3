//! Column families against a model: random puts, deletes and batches spanning families,
//! families created (each with options of its own) and dropped, snapshots, flushes (of the
//! database and of single families), range compactions and reopens, applied to the
//! database and to a `BTreeMap` per family. After each step the touched key is read back;
//! scans, snapshot reads and a full check of every family run every few steps and after
//! every reopen.
//!
//! Deterministic from its seed: a failure names the seed and the step
//! (`MEZZ_CF_SEED=<seed>` reruns that seed alone; `MEZZ_CF_OPS=<n>` changes the length).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use mezz_env::{FileSystem, MemFs};
use mezz_testkit::tiny_options;
use mezzanine::{
    ColumnFamily, Db, Error, Options, Preset, ReadOptions, Snapshot, WriteBatch, WriteOptions,
};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

const DB: &str = "/cf-model-db";
const KEYS: u32 = 150;
const MAX_FAMILIES: usize = 4;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// The model: every live family's contents, by name, in id order (the default first).
#[derive(Clone, Default)]
struct Model {
    fams: Vec<(String, Map)>,
}

impl Model {
    fn map(&mut self, name: &str) -> &mut Map {
        let i = self.fams.iter().position(|(n, _)| n == name).unwrap();
        &mut self.fams[i].1
    }
    fn names(&self) -> Vec<String> {
        self.fams.iter().map(|(n, _)| n.clone()).collect()
    }
}

struct Run {
    seed: u64,
    step: usize,
    rng: Xoshiro256PlusPlus,
    main: Options,
    db: Option<Db>,
    handles: BTreeMap<String, ColumnFamily>,
    model: Model,
    /// Snapshots with the model as it was when each was taken.
    snaps: Vec<(Snapshot, Model)>,
    /// Handles of dropped families (calls through them must fail cleanly).
    dropped: Vec<ColumnFamily>,
    next_name: u32,
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn scan(db: &Db, cf: &ColumnFamily, ro: &ReadOptions) -> Map {
    let mut it = db.cursor_cf(cf, ro).unwrap();
    it.seek_to_first();
    let mut got = Map::new();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    got
}

impl Run {
    fn ctx(&self) -> String {
        format!(
            "seed {} step {} (rerun: MEZZ_CF_SEED={})",
            self.seed, self.step, self.seed
        )
    }

    fn db(&self) -> &Db {
        self.db.as_ref().unwrap()
    }

    fn open(&mut self) {
        let db = Db::open(DB, self.main.clone()).unwrap_or_else(|e| panic!("{}: {e}", self.ctx()));
        assert_eq!(db.column_families(), self.model.names(), "{}", self.ctx());
        self.handles = self
            .model
            .names()
            .into_iter()
            .map(|n| {
                let h = db.column_family(&n).unwrap();
                (n, h)
            })
            .collect();
        self.db = Some(db);
    }

    fn reopen(&mut self) {
        self.snaps.clear();
        self.db.take().unwrap().close().unwrap();
        assert_eq!(
            Db::list_column_families(DB, &self.main).unwrap(),
            self.model.names(),
            "{}",
            self.ctx()
        );
        self.open();
        self.check_all();
    }

    fn pick_family(&mut self) -> String {
        let names = self.model.names();
        names[self.rng.random_range(0..names.len())].clone()
    }

    fn value(&mut self) -> Vec<u8> {
        let len = if self.rng.random_bool(0.03) {
            self.rng.random_range(2000..9000)
        } else {
            self.rng.random_range(1..120)
        };
        let mut v = format!("s{}-{}-", self.seed, self.step).into_bytes();
        v.resize(len.max(v.len()), b'a' + (self.step % 26) as u8);
        v
    }

    fn family_options(&mut self) -> Options {
        // Options of the family's own: a preset without an NVM memtable, its own memtable
        // size, block size and compression.
        let presets: &[Preset] = if self.main.nvm_dir.is_some() {
            &[
                Preset::Leveldb,
                Preset::Tlsm,
                Preset::Matrixkv,
                Preset::Mezzanine,
            ]
        } else {
            &[Preset::Leveldb]
        };
        let p = presets[self.rng.random_range(0..presets.len())];
        let mut o = tiny_options(p);
        // The mezzanine preset's mutable NVM memtable does not combine with families: its
        // families take `immutable` ones.
        if p == Preset::Mezzanine {
            o.nvm_memtable = mezzanine::options::NvmMemtable::Immutable;
        }
        // NoveLSM's `immutable` NVM memtables (a family's full memtables merged into its
        // NVM skip list); `mutable` ones do not combine with families.
        if self.main.nvm_dir.is_some() && p == Preset::Leveldb && self.rng.random_bool(0.5) {
            o.nvm_memtable = mezzanine::options::NvmMemtable::Immutable;
            mezz_testkit::option_sets::with_simulated_nvm(&mut o);
        }
        let wbs = [4 << 10, 8 << 10, 32 << 10][self.rng.random_range(0..3)];
        if o.matrix_bytes == 0 {
            o.write_buffer_size = wbs;
        }
        o.block_size = [512, 1024, 4096][self.rng.random_range(0..3)];
        if self.rng.random_bool(0.5) {
            o.set("compression", "lz4").unwrap();
        }
        o.bloom_bits_per_key = self.rng.random_range(0..12);
        o
    }

    fn check_key(&self, name: &str, k: &[u8]) {
        let h = &self.handles[name];
        let got = self.db().get_cf(h, k).unwrap();
        let want = self
            .model
            .fams
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, m)| m.get(k).cloned());
        assert_eq!(
            got,
            want,
            "{}: family {name} key {}",
            self.ctx(),
            String::from_utf8_lossy(k)
        );
    }

    fn check_family(&self, name: &str) {
        let h = &self.handles[name];
        let got = scan(self.db(), h, &ReadOptions::default());
        let want = &self.model.fams.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(
            got == *want,
            "{}: family {name}: scan has {} keys, the model {}",
            self.ctx(),
            got.len(),
            want.len()
        );
        // Point reads of a few keys, and a multi-get, agree.
        let keys: Vec<Vec<u8>> = (0..KEYS).step_by(7).map(key).collect();
        let got = self
            .db()
            .multi_get_cf(h, &ReadOptions::default(), &keys)
            .unwrap();
        for (k, g) in keys.iter().zip(got) {
            assert_eq!(g.as_ref(), want.get(k), "{}: multi_get {name}", self.ctx());
        }
    }

    fn check_all(&self) {
        for n in self.model.names() {
            self.check_family(&n);
        }
    }

    fn check_snapshot(&mut self) {
        if self.snaps.is_empty() {
            return;
        }
        let i = self.rng.random_range(0..self.snaps.len());
        let (snap, old) = &self.snaps[i];
        let ro = ReadOptions {
            snapshot: Some(snap.clone()),
            ..ReadOptions::default()
        };
        // Every family that existed then and still does reads as it was.
        for (name, want) in &old.fams {
            let Some(h) = self.handles.get(name) else {
                continue;
            };
            let got = scan(self.db(), h, &ro);
            assert!(
                got == *want,
                "{}: family {name} at a snapshot: {} keys, the model {}",
                self.ctx(),
                got.len(),
                want.len()
            );
        }
    }

    fn step(&mut self) {
        let name = self.pick_family();
        let k = key(self.rng.random_range(0..KEYS));
        match self.rng.random_range(0..1000u32) {
            0..350 => {
                let v = self.value();
                self.db().put_cf(&self.handles[&name], &k, &v).unwrap();
                self.model.map(&name).insert(k.clone(), v);
                self.check_key(&name, &k);
            }
            350..470 => {
                self.db().delete_cf(&self.handles[&name], &k).unwrap();
                self.model.map(&name).remove(&k);
                self.check_key(&name, &k);
            }
            470..650 => {
                // A batch spanning families.
                let mut b = WriteBatch::new();
                let mut touched = Vec::new();
                for _ in 0..self.rng.random_range(2..8) {
                    let f = self.pick_family();
                    let k = key(self.rng.random_range(0..KEYS));
                    if self.rng.random_bool(0.75) {
                        let v = self.value();
                        b.put_cf(&self.handles[&f], &k, &v);
                        self.model.map(&f).insert(k.clone(), v);
                    } else {
                        b.delete_cf(&self.handles[&f], &k);
                        self.model.map(&f).remove(&k);
                    }
                    touched.push((f, k));
                }
                let sync = self.rng.random_bool(0.1);
                self.db().write(&WriteOptions { sync }, b).unwrap();
                for (f, k) in touched {
                    self.check_key(&f, &k);
                }
            }
            650..760 => self.check_key(&name, &k),
            760..800 => self.check_family(&name),
            800..830 => {
                if self.snaps.len() >= 3 {
                    self.snaps.remove(0);
                }
                let s = self.db().snapshot();
                self.snaps.push((s, self.model.clone()));
            }
            830..870 => self.check_snapshot(),
            870..890 => {
                if self.model.fams.len() <= MAX_FAMILIES {
                    self.next_name += 1;
                    let n = format!("fam{}", self.next_name);
                    let o = self.family_options();
                    let h = self.db().create_column_family(&n, &o).unwrap();
                    self.handles.insert(n.clone(), h);
                    self.model.fams.push((n, Map::new()));
                }
            }
            890..900 => {
                if name != "default" {
                    let h = self.handles.remove(&name).unwrap();
                    self.db().drop_column_family(&h).unwrap();
                    self.model.fams.retain(|(n, _)| *n != name);
                    for (_, m) in &mut self.snaps {
                        m.fams.retain(|(n, _)| *n != name);
                    }
                    self.dropped.push(h);
                }
            }
            900..910 => {
                if let Some(h) = self.dropped.last() {
                    let db = self.db();
                    assert!(matches!(db.get_cf(h, &k), Err(Error::InvalidArgument(_))));
                    assert!(matches!(
                        db.put_cf(h, &k, b"x"),
                        Err(Error::InvalidArgument(_))
                    ));
                    assert!(db.cursor_cf(h, &ReadOptions::default()).is_err());
                }
            }
            910..935 => self.db().flush().unwrap(),
            935..965 => self.db().flush_cf(&self.handles[&name]).unwrap(),
            965..980 => {
                let hi = key(self.rng.random_range(0..KEYS));
                let (lo, hi) = if k <= hi { (k, hi) } else { (hi, k) };
                self.db()
                    .compact_range_cf(&self.handles[&name], Some(&lo), Some(&hi))
                    .unwrap();
            }
            980..988 => {
                let db = self.db();
                db.wait_for_background().unwrap();
                if let Some(h) = self.handles.get(&name) {
                    db.run_background_work_cf(h, 4).unwrap();
                }
            }
            _ => self.reopen(),
        }
    }
}

fn main_options(seed: u64, fs: &MemFs) -> Options {
    let p = [
        Preset::Leveldb,
        Preset::Tlsm,
        Preset::Matrixkv,
        Preset::Novelsm,
        Preset::Mezzanine,
    ][seed as usize % 5];
    let mut o = tiny_options(p);
    if matches!(p, Preset::Novelsm | Preset::Mezzanine) {
        // The default family with `immutable` NVM memtables (`mutable` ones, these
        // presets' own, do not combine with families).
        o.nvm_memtable = mezzanine::options::NvmMemtable::Immutable;
    }
    o.fs = Arc::new(fs.clone()) as Arc<dyn FileSystem>;
    o.manual_background = seed.is_multiple_of(2);
    o
}

fn run_seed(seed: u64, ops: usize) {
    let fs = MemFs::new();
    let main = main_options(seed, &fs);
    eprintln!(
        "column families model: seed {seed}, {ops} ops, preset {}, manual background {}",
        main.preset.name(),
        main.manual_background
    );
    let mut run = Run {
        seed,
        step: 0,
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        main,
        db: None,
        handles: BTreeMap::new(),
        model: Model {
            fams: vec![("default".to_string(), Map::new())],
        },
        snaps: Vec::new(),
        dropped: Vec::new(),
        next_name: 0,
    };
    run.open();
    for step in 0..ops {
        run.step = step;
        run.step();
    }
    run.check_all();
    run.reopen();
    // Only the live families' directories hold anything (`MemFs` keeps a directory once
    // made, empty).
    let root = std::path::Path::new(DB);
    let mut dirs: Vec<String> = fs
        .list_dir(root)
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("cf-") && !fs.list_dir(&root.join(n)).unwrap().is_empty())
        .collect();
    dirs.sort();
    let mut live: Vec<String> = run
        .handles
        .values()
        .filter(|h| h.id() != 0)
        .map(|h| format!("cf-{}", h.id()))
        .collect();
    live.sort();
    assert_eq!(dirs, live, "{}", run.ctx());
    run.db.take().unwrap().close().unwrap();
}

fn ops() -> usize {
    std::env::var("MEZZ_CF_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500)
}

#[test]
fn column_families_match_the_model() {
    if let Some(seed) = std::env::var("MEZZ_CF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run_seed(seed, ops());
        return;
    }
    for seed in 1..=8 {
        run_seed(seed, ops());
    }
}

/// Crash consistency across families. Each op is one batch writing slot `s` in three
/// families at version `i`: the default family always holds a marker (`v<i>` for a put,
/// `d<i>` for a delete), families `a` and `b` the value or nothing. A fourth family is
/// created, written and dropped halfway. At crash points (a [`MemFs::crash_clone`], taken
/// while background flushes and compactions run) the clone is opened and checked:
/// - every batch is all-or-nothing across the families (each slot shows one version in
///   all three);
/// - the state is that after a prefix of the batches, which holds every acknowledged batch
///   (process crash) or every batch up to the last `sync` one (power cut);
/// - the dropped family is gone, and its directory holds nothing.
///
/// With `nvm`, the default family and family `a` keep NoveLSM's `immutable` NVM memtables
/// (full memtables merged into a persistent skip list in NVM instead of written to L0),
/// and a power cut also drops the NVM lines not yet persisted.
fn crash_run(seed: u64, keep: mezz_env::KeepUnsynced, nvm: bool) {
    use mezz_env::CrashOptions;
    const SLOTS: u32 = 40;
    const OPS: usize = 500;
    let fs = MemFs::new();
    let immutable_nvm_memtables = |o: &mut Options| {
        o.nvm_memtable = mezzanine::options::NvmMemtable::Immutable;
        mezz_testkit::option_sets::with_simulated_nvm(o);
    };
    let mut o = tiny_options(Preset::Leveldb);
    if nvm {
        immutable_nvm_memtables(&mut o);
    }
    o.fs = Arc::new(fs.clone()) as Arc<dyn FileSystem>;
    let dir = "/crash-cf";
    let db = Db::open(dir, o.clone()).unwrap();
    let mut fo = tiny_options(Preset::Leveldb);
    fo.write_buffer_size = 4 << 10;
    if nvm {
        immutable_nvm_memtables(&mut fo);
        fo.nvm_sim.clone_from(&o.nvm_sim);
    }
    let a = db.create_column_family("a", &fo).unwrap();
    let mut fo = tiny_options(Preset::Leveldb);
    fo.write_buffer_size = 16 << 10;
    let b = db.create_column_family("b", &fo).unwrap();
    let c = db.create_column_family("c", &fo).unwrap();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // (slot, version, put?) per op, and the last op acknowledged with `sync`.
    let mut hist: Vec<(u32, u64, bool)> = Vec::new();
    let mut last_synced = 0usize;
    let mut dropped_at = None;
    let ctx = |i: usize| format!("crash seed {seed} ({keep:?}) op {i}");
    for i in 0..OPS {
        let slot = rng.random_range(0..SLOTS);
        let version = i as u64 + 1;
        let put = rng.random_bool(0.8);
        let k = key(slot);
        let mut batch = WriteBatch::new();
        let pad = "p".repeat(rng.random_range(0..200));
        if put {
            batch.put(&k, format!("v{version}").as_bytes());
            batch.put_cf(&a, &k, format!("a{version}{pad}").as_bytes());
            batch.put_cf(&b, &k, format!("b{version}").as_bytes());
        } else {
            batch.put(&k, format!("d{version}").as_bytes());
            batch.delete_cf(&a, &k);
            batch.delete_cf(&b, &k);
        }
        if dropped_at.is_none() {
            batch.put_cf(&c, &k, pad.as_bytes());
        }
        let sync = rng.random_bool(0.05);
        db.write(&WriteOptions { sync }, batch).unwrap();
        hist.push((slot, version, put));
        if sync {
            last_synced = hist.len();
        }
        match rng.random_range(0..100) {
            0..3 => db.flush_cf(&a).unwrap(),
            3..5 => db.compact_range_cf(&b, None, None).unwrap(),
            _ => {}
        }
        if i == OPS / 2 {
            db.drop_column_family(&c).unwrap();
            dropped_at = Some(i);
        }
        if !rng.random_bool(0.04) && i + 1 != OPS {
            continue;
        }
        // A crash point: files and NVM cut at one instant.
        let (clone, nvm_clone) = fs.crash_clone_with(
            &CrashOptions {
                keep_unsynced: keep,
                seed: seed ^ i as u64,
            },
            || {
                o.nvm_sim.as_ref().map(|sim| {
                    sim.power_cut(&mezz_pmem::PowerCut {
                        keep_unpersisted: match keep {
                            mezz_env::KeepUnsynced::All => mezz_pmem::KeepLines::All,
                            mezz_env::KeepUnsynced::None => mezz_pmem::KeepLines::None,
                            mezz_env::KeepUnsynced::RandomPrefix => mezz_pmem::KeepLines::Random,
                        },
                        seed: seed ^ i as u64,
                    })
                })
            },
        );
        let mut co = o.clone();
        co.fs = Arc::new(clone.clone()) as Arc<dyn FileSystem>;
        co.nvm_sim = nvm_clone;
        let r = Db::open(dir, co).unwrap_or_else(|e| panic!("{}: open: {e}", ctx(i)));
        let (ra, rb) = (r.column_family("a").unwrap(), r.column_family("b").unwrap());
        if dropped_at.is_some() {
            assert_eq!(r.column_families(), vec!["default", "a", "b"], "{}", ctx(i));
            let cdir = std::path::Path::new(dir).join(format!("cf-{}", c.id()));
            assert!(
                clone.list_dir(&cdir).unwrap_or_default().is_empty(),
                "{}: the dropped family's files are left",
                ctx(i)
            );
        }
        // Each slot: the version of the default family's marker, the same in `a`, `b`.
        let mut found: Vec<Option<(u64, bool)>> = Vec::new();
        for s in 0..SLOTS {
            let k = key(s);
            let d = r.get(&k).unwrap();
            let fa = r.get_cf(&ra, &k).unwrap();
            let fb = r.get_cf(&rb, &k).unwrap();
            let f = d.map(|d| {
                let put = d[0] == b'v';
                let v: u64 = std::str::from_utf8(&d[1..]).unwrap().parse().unwrap();
                (v, put)
            });
            let want_a = f.and_then(|(v, put)| put.then(|| format!("a{v}")));
            let want_b = f.and_then(|(v, put)| put.then(|| format!("b{v}")));
            let got_a = fa.map(|x| {
                let s = String::from_utf8(x).unwrap();
                s.trim_end_matches('p').to_string()
            });
            let got_b = fb.map(|x| String::from_utf8(x).unwrap());
            assert_eq!(
                (got_a, got_b),
                (want_a, want_b),
                "{}: slot {s}: a torn cross-family batch (default shows {f:?})",
                ctx(i)
            );
            found.push(f);
        }
        // A prefix of the history, holding every batch that had to survive.
        let p = found.iter().flatten().map(|(v, _)| *v).max().unwrap_or(0) as usize;
        let must = if keep == mezz_env::KeepUnsynced::All {
            hist.len()
        } else {
            last_synced
        };
        assert!(
            p >= must,
            "{}: recovered up to batch {p}, {must} had to survive",
            ctx(i)
        );
        for s in 0..SLOTS {
            let want = hist[..p]
                .iter()
                .rev()
                .find(|h| h.0 == s)
                .map(|h| (h.1, h.2));
            assert_eq!(
                found[s as usize],
                want,
                "{}: slot {s} is not at prefix {p}",
                ctx(i)
            );
        }
        r.close().unwrap();
    }
    if nvm {
        // The memtables did go to NVM, in both families that keep them there.
        assert!(db.stats().nvm_bytes_written > 0, "crash seed {seed}");
        assert!(
            db.stats_cf(&a).unwrap().nvm_bytes_written > 0,
            "crash seed {seed}"
        );
    }
    db.close().unwrap();
}

#[test]
fn a_process_crash_keeps_every_acknowledged_cross_family_batch_whole() {
    for seed in 1..=3 {
        crash_run(seed, mezz_env::KeepUnsynced::All, false);
    }
}

#[test]
fn a_power_cut_keeps_a_prefix_of_whole_cross_family_batches() {
    for seed in 11..=13 {
        crash_run(seed, mezz_env::KeepUnsynced::None, false);
    }
    for seed in 21..=23 {
        crash_run(seed, mezz_env::KeepUnsynced::RandomPrefix, false);
    }
}

#[test]
fn with_immutable_nvm_memtables_a_process_crash_keeps_cross_family_batches_whole() {
    for seed in 21..=22 {
        crash_run(seed, mezz_env::KeepUnsynced::All, true);
    }
}

#[test]
fn with_immutable_nvm_memtables_a_power_cut_keeps_a_prefix_of_whole_batches() {
    for seed in 31..=33 {
        crash_run(seed, mezz_env::KeepUnsynced::None, true);
    }
}
