//! Option pairs: data written under one option set must read the same under every other
//! option set a user can reopen the database with, or the reopen must be refused with an
//! `Error::InvalidArgument` that names the option at fault. A wrong value, a panic or any
//! other error fails the test.
//!
//! The option sets are [`profiles`]: every preset plus variations of block format, block
//! size, restart interval, bloom filters, level count, L0 trigger, write buffer size, the
//! WAL, parallel reads and the NVM tier (NVM memtable off / mutable / immutable, WAL in NVM,
//! an `nvm_dir` nothing uses, and an `nvm_dir` left out). For every ordered pair (A, B),
//! A == B included, on a fresh `MemFs` and simulated NVM (`PersistMode::CrashSim`; the same
//! pool is handed to every reopen, as a user keeps the same `nvm_dir`):
//!
//! 1. open under A and write a deterministic workload that leaves data everywhere it can
//!    be: tables compacted to deeper levels, flushed L0 tables, immutable and active
//!    memtables (NVM memtables where A has them), overwrites and deletions of the same keys
//!    at different depths; the last write switches the memtable, so a flush is pending;
//! 2. let the handle go: either drop it (which closes it without waiting for pending
//!    flushes and compactions) or simulate a process crash (continue on a copy of the
//!    files and the pool as they are at that instant; not for options without a WAL,
//!    whose crash loses writes by design);
//! 3. reopen under B and compare every key (`get`) and full forward and reverse scans with
//!    a `BTreeMap` model; again after `wait_for_background`, and after more writes and
//!    `compact_range(None, None)`; write more and let the handle go as in 2;
//! 4. reopen under A (the round trip) and check again, also after `wait_for_background`.
//!
//! Each run also creates a column family under A with options of its own
//! ([`family_options`]: another block size, bloom bits, compression and memtable size, and
//! where A has an `nvm_dir`, NVM tables or a matrix L0 in a pool of its own); the updates of
//! every third key go to it too, in the same batch, and every check reads it against a
//! model of its own as it reads the default family. Pairs where A or B has a mutable NVM
//! memtable run without a family: `nvm_memtable = mutable` does not combine with column
//! families (a write in place with no WAL record could split a batch across families);
//! `immutable` does, and some runs give the family one.
//!
//! Background work runs on threads, or deterministically (`Options::manual_background`:
//! at the workload's `run_background_work` calls and where a call would wait), which makes
//! a run exactly repeatable. Pair (A, B) drops the handles and (B, A) crashes, each pair
//! in one background mode (alternating over the pairs); (A, A) runs all four ways.
//!
//! A refused open is recorded (and printed); the database must then still open under the
//! options it was last open with and hold the same data. Tests after the matrix pin what it
//! meets only by chance: fewer levels than the data occupies, a pool smaller than later
//! options need, a crash between an NVM merge and its manifest edit.
//!
//! Run: `cargo test -p mezz-testkit --test option_pairs` (the matrix is split over two
//! tests). Narrow to pairs with `MEZZ_PAIR=<a>,<b>` (profile names; `*` matches any), e.g.
//! `MEZZ_PAIR=novelsm,nvm-immutable` or `MEZZ_PAIR=*,levels-2`; the pairs named run all
//! four ways. Set `MEZZ_PAIR_VERBOSE=1` to print every run with its time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mezz_env::{CrashOptions, FileSystem, KeepUnsynced, MemFs};
use mezz_pmem::{KeepLines, PowerCut};
use mezz_testkit::option_sets::{SIM_NVM_DIR, with_simulated_nvm, with_units};
use mezz_testkit::tiny_options;
use mezzanine::options::{NvmMemtable, PersistMode, SimNvm};
use mezzanine::{
    BlockFormat, ColumnFamily, Db, Error, Options, PlacementPolicy, Preset, ReadOptions,
    WriteBatch, WriteOptions,
};

/// Directory of the database on the `MemFs`.
const DB_DIR: &str = "/db";

/// Keys written by the first workload; the second adds `EXTRA_KEYS` more.
const KEYS: usize = 300;
const EXTRA_KEYS: usize = 40;
/// Size of the values written by [`Run::bulk`].
const BULK_VALUE: usize = 4096;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A named option set.
struct Profile {
    name: String,
    /// The options, with a placeholder simulated NVM where they use the NVM tier (each run
    /// attaches its own pool, see [`Run::options`]).
    options: Options,
    /// The user leaves `nvm_dir` out even when the database has an NVM pool.
    forgets_nvm_dir: bool,
    /// Bytes of large values the workloads add under this profile (to fill NVM memtables
    /// and the pool).
    bulk: usize,
}

fn profile(name: &str, o: Options) -> Profile {
    Profile {
        name: name.to_string(),
        options: o,
        forgets_nvm_dir: false,
        bulk: 0,
    }
}

/// `tiny_options(Preset::Leveldb)` changed by `f`, with a simulated NVM if it uses one.
fn leveldb_with(name: &str, f: impl FnOnce(&mut Options)) -> Profile {
    let mut o = tiny_options(Preset::Leveldb);
    f(&mut o);
    if o.nvm_sim.is_none() {
        // (`f` may have set the NVM sizes already.)
        with_simulated_nvm(&mut o);
    }
    profile(name, o)
}

/// The option sets every pair is drawn from.
fn profiles() -> Vec<Profile> {
    let mut v: Vec<Profile> = Preset::ALL
        .iter()
        .map(|&p| profile(p.name(), tiny_options(p)))
        .collect();
    v.extend([
        leveldb_with("prefix-r1", |o| {
            o.block_format = BlockFormat::Prefix;
            o.block_restart_interval = 1;
        }),
        leveldb_with("prefix-r16-b4k", |o| {
            o.block_format = BlockFormat::Prefix;
            o.block_restart_interval = 16;
            o.block_size = 4096;
        }),
        leveldb_with("keyset-b256-nobloom", |o| {
            o.block_format = BlockFormat::KeySet;
            o.block_size = 256;
            o.bloom_bits_per_key = 0;
        }),
        leveldb_with("b16k-bloom20-nocache", |o| {
            o.block_size = 16 << 10;
            o.bloom_bits_per_key = 20;
            o.block_cache_capacity = 0;
        }),
        leveldb_with("levels-2", |o| o.num_levels = 2),
        leveldb_with("levels-3", |o| o.num_levels = 3),
        leveldb_with("levels-12-deep", |o| {
            // L1 8 KiB, L2 16 KiB, L3 32 KiB, ...: the data spreads over many levels.
            o.num_levels = 12;
            o.max_bytes_for_level_base = 8 << 10;
            o.max_bytes_for_level_multiplier = 2.0;
        }),
        leveldb_with("l0-trigger-1", |o| o.level0_compaction_trigger = 1),
        leveldb_with("l0-trigger-8", |o| o.level0_compaction_trigger = 8),
        leveldb_with("buffer-4k-x4", |o| {
            o.write_buffer_size = 4096;
            o.max_write_buffer_number = 4;
        }),
        leveldb_with("buffer-1m", |o| o.write_buffer_size = 1 << 20),
        leveldb_with("no-wal", |o| o.use_wal = false),
        leveldb_with("parallel-reads", |o| o.parallel_reads = true),
        leveldb_with("nvm-dir-idle", |o| o.nvm_dir = Some(SIM_NVM_DIR.into())),
        leveldb_with("nvm-wal", |o| o.wal_on_nvm = true),
        leveldb_with("nvm-immutable", |o| o.nvm_memtable = NvmMemtable::Immutable),
        leveldb_with("nvm-immutable-small-wal-par", |o| {
            o.nvm_memtable = NvmMemtable::Immutable;
            o.wal_on_nvm = true;
            o.parallel_reads = true;
            with_simulated_nvm(o);
            o.nvm_memtable_size = 64 << 10;
        }),
        leveldb_with("nvm-mutable-wal", |o| {
            o.nvm_memtable = NvmMemtable::Mutable;
            o.wal_on_nvm = true;
        }),
        leveldb_with("nvm-overflow-small-par", |o| {
            o.nvm_memtable = NvmMemtable::Overflow;
            o.parallel_reads = true;
            with_simulated_nvm(o);
            o.nvm_memtable_size = 64 << 10;
        }),
        Profile {
            // Room for two NVM memtables and little else; the bulk fills both, so later
            // memtables go to L0 around them.
            bulk: 1 << 20,
            ..leveldb_with("nvm-immutable-tight-pool", |o| {
                o.nvm_memtable = NvmMemtable::Immutable;
                with_simulated_nvm(o);
                o.nvm_capacity = 1 << 20;
                o.nvm_memtable_size = 448 << 10;
            })
        },
        leveldb_with("nvm-immutable-wal-full-pool", |o| {
            // A pool just large enough for what validation asks: it runs full.
            o.nvm_memtable = NvmMemtable::Immutable;
            o.wal_on_nvm = true;
            with_simulated_nvm(o);
            o.nvm_memtable_size = 64 << 10;
            o.nvm_capacity = smallest_valid_capacity(o);
        }),
        leveldb_with("nvm-mutable-wal-full-pool", |o| {
            o.nvm_memtable = NvmMemtable::Mutable;
            o.wal_on_nvm = true;
            with_simulated_nvm(o);
            o.nvm_memtable_size = 64 << 10;
            o.nvm_capacity = smallest_valid_capacity(o);
        }),
        Profile {
            forgets_nvm_dir: true,
            ..leveldb_with("no-nvm-dir", |_| {})
        },
        leveldb_with("units-2-striped", |o| {
            with_units(o, 2, PlacementPolicy::Striped)
        }),
        leveldb_with("units-3-isolated", |o| {
            with_units(o, 3, PlacementPolicy::Isolated);
        }),
        leveldb_with("units-4-per-file", |o| {
            with_units(o, 4, PlacementPolicy::PerFile)
        }),
    ]);
    v
}

/// The smallest pool (in 4 KiB steps from 1 MiB) that `Options::validate` accepts for `o`.
fn smallest_valid_capacity(o: &Options) -> u64 {
    let mut o = o.clone();
    o.nvm_capacity = 1 << 20;
    while o.validate().is_err() && o.nvm_capacity < 1 << 30 {
        o.nvm_capacity += 4096;
    }
    o.nvm_capacity
}

// ---- keys, values and the workload ----

fn key(i: usize) -> Vec<u8> {
    // Varying lengths and shared prefixes exercise both block formats.
    format!("key{:05}{}", i, "-".repeat(i % 5)).into_bytes()
}

fn value(i: usize, version: usize) -> Vec<u8> {
    let fill = (i * 7 + version * 13) % 150 + 20;
    let mut v = format!("v{version}:{i}:").into_bytes();
    v.extend(std::iter::repeat_n(b'a' + (version % 26) as u8, fill));
    v
}

/// How a handle goes away before the next open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    /// Drop (= close) without waiting for background work.
    Close,
    /// A process crash (see [`Run::leave`]).
    Crash,
}

/// How background work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Background {
    /// Background threads (`max_background_jobs` of them).
    Threads,
    /// `Options::manual_background`: on the calling thread, at the workload's
    /// `run_background_work` calls and inline where a call would wait; a run is then
    /// exactly repeatable.
    Manual,
}

/// One way of running a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    exit: Exit,
    background: Background,
}

/// The database under test and its model.
struct Run {
    mode: Mode,
    mem: MemFs,
    fs: Arc<dyn FileSystem>,
    sim: SimNvm,
    dir: PathBuf,
    model: Model,
    /// The column family of the run (see [`family_options`]), and its model: updates of
    /// every third key go to it too, in the same batch as the default family's.
    family: Option<FamilyRun>,
    /// Where the run is, for failure reports.
    stage: String,
}

/// The column family a run writes beside the default one.
struct FamilyRun {
    /// Whether its options use NVM (then every open gets the simulated NVM its pool
    /// lives in, whatever the database's own options say).
    nvm: bool,
    model: Model,
}

/// Name of the column family a run creates.
const FAMILY: &str = "side";

/// The options of the column family run `(a, b)` creates under A: options of its own, other
/// than A's (block size, bloom bits, compression, memtable size), and where A uses NVM (has
/// an `nvm_dir`), NVM tables (TLSM), a matrix L0 (MatrixKV), NoveLSM's immutable NVM
/// memtables or Mezzanine's NVM tables without its mutable memtable in a pool of its own, by
/// `variant`. `None` where A or B has a mutable NVM memtable, which does not combine with column families (refused at create under A, at
/// open under B: such pairs run without a family).
fn family_options(a: &Profile, b: &Profile, variant: usize) -> Option<Options> {
    if a.options.nvm_memtable.in_place() || b.options.nvm_memtable.in_place() {
        return None;
    }
    let mut o = if a.options.nvm_dir.is_some() {
        let presets = [
            Preset::Tlsm,
            Preset::Matrixkv,
            Preset::Leveldb,
            Preset::Mezzanine,
        ];
        let p = presets[variant % presets.len()];
        let mut o = tiny_options(p);
        o.nvm_memtable = if p == Preset::Leveldb {
            NvmMemtable::Immutable
        } else {
            NvmMemtable::Off
        };
        with_simulated_nvm(&mut o);
        o
    } else {
        tiny_options(Preset::Leveldb)
    };
    o.block_size = if a.options.block_size == 512 {
        2048
    } else {
        512
    };
    o.bloom_bits_per_key = (a.options.bloom_bits_per_key + 7) % 16;
    let lz4 = a.options.to_text().contains("lz4");
    o.set("compression", if lz4 { "none" } else { "lz4" })
        .unwrap();
    if o.matrix_bytes == 0 {
        o.write_buffer_size = if a.options.write_buffer_size > 8 << 10 {
            8 << 10
        } else {
            32 << 10
        };
    }
    Some(o)
}

/// Whether key `i`'s updates go to the run's family too.
fn in_family(i: usize) -> bool {
    i.is_multiple_of(3)
}

/// The value of key `i`, `version` in the family (distinct from the default family's).
fn family_value(i: usize, version: usize) -> Vec<u8> {
    let mut v = value(i, version);
    v.insert(0, b'f');
    v
}

/// A failure of one pair.
#[derive(Debug)]
struct PairFailure {
    pair: String,
    detail: String,
}

/// A refused open.
#[derive(Debug, Clone)]
struct Refusal {
    pair: String,
    stage: String,
    message: String,
}

type Step<T> = Result<T, String>;

fn pool_path() -> PathBuf {
    Path::new(SIM_NVM_DIR).join(mezzanine::filename::POOL_FILE)
}

impl Run {
    fn new(mode: Mode) -> Self {
        let mem = MemFs::new();
        Self {
            mode,
            fs: Arc::new(mem.clone()),
            mem,
            sim: SimNvm::new(),
            dir: PathBuf::from(DB_DIR),
            model: Model::new(),
            family: None,
            stage: String::new(),
        }
    }

    /// The options of `p` for this database: its file system and, once the database has an
    /// NVM pool, that pool (as a user keeps passing the same `nvm_dir`), unless the profile
    /// leaves `nvm_dir` out.
    fn options(&self, p: &Profile) -> Options {
        let mut o = p.options.clone();
        o.fs = Arc::clone(&self.fs);
        o.manual_background = self.mode.background == Background::Manual;
        // A family's NVM pool lives in the simulated NVM (it stands for the machine's NVM,
        // which a user who leaves the database's `nvm_dir` out still has): the family
        // takes `nvm_sim` from the database's options.
        let family_sim = self
            .family
            .as_ref()
            .is_some_and(|f| f.nvm)
            .then(|| self.sim.clone());
        if p.forgets_nvm_dir {
            o.nvm_dir = None;
            o.nvm_sim = family_sim;
            return o;
        }
        if family_sim.is_some() && o.nvm_sim.is_none() {
            o.nvm_sim = family_sim;
        }
        if o.nvm_dir.is_some() || self.sim.exists(&pool_path()) {
            // The profile's own NVM sizes stay: a pool created under other options may be
            // smaller or larger than these ones say.
            o.nvm_dir = Some(SIM_NVM_DIR.into());
            o.nvm_persistence = PersistMode::CrashSim;
            o.nvm_sim = Some(self.sim.clone());
            o.nvm_prefault = false;
        }
        o
    }

    fn open(&self, p: &Profile) -> mezzanine::Result<Db> {
        Db::open(&self.dir, self.options(p))
    }

    /// The run's family in `db`, if it has one.
    fn family_cf(&self, db: &Db) -> Step<Option<ColumnFamily>> {
        match &self.family {
            None => Ok(None),
            Some(_) => db
                .column_family(FAMILY)
                .map(Some)
                .ok_or_else(|| format!("{}: the family {FAMILY} is gone", self.stage)),
        }
    }

    /// Puts key `i`, and where [`in_family`] says so its family value in the same batch.
    fn put(&mut self, db: &Db, i: usize, version: usize) -> Step<()> {
        let (k, v) = (key(i), value(i, version));
        match self.family_cf(db)?.filter(|_| in_family(i)) {
            None => db.put(&k, &v),
            Some(cf) => {
                let mut b = WriteBatch::new();
                b.put(&k, &v);
                b.put_cf(&cf, &k, &family_value(i, version));
                db.write(&WriteOptions::default(), b)
            }
        }
        .map_err(|e| format!("{}: put {i}: {e}", self.stage))?;
        if in_family(i)
            && let Some(f) = &mut self.family
        {
            f.model.insert(k.clone(), family_value(i, version));
        }
        self.model.insert(k, v);
        Ok(())
    }

    fn delete(&mut self, db: &Db, i: usize) -> Step<()> {
        let k = key(i);
        match self.family_cf(db)?.filter(|_| in_family(i)) {
            None => db.delete(&k),
            Some(cf) => {
                let mut b = WriteBatch::new();
                b.delete(&k);
                b.delete_cf(&cf, &k);
                db.write(&WriteOptions::default(), b)
            }
        }
        .map_err(|e| format!("{}: delete {i}: {e}", self.stage))?;
        if let Some(f) = &mut self.family {
            f.model.remove(&k);
        }
        self.model.remove(&k);
        Ok(())
    }

    /// Puts `version` of every key in `keys` in batches of `size`.
    fn batches(&mut self, db: &Db, keys: &[usize], version: usize, size: usize) -> Step<()> {
        let cf = self.family_cf(db)?;
        for chunk in keys.chunks(size) {
            let mut b = WriteBatch::new();
            for &i in chunk {
                b.put(&key(i), &value(i, version));
                if let Some(cf) = cf.as_ref().filter(|_| in_family(i)) {
                    b.put_cf(cf, &key(i), &family_value(i, version));
                }
            }
            db.write(&WriteOptions::default(), b)
                .map_err(|e| format!("{}: batch: {e}", self.stage))?;
            for &i in chunk {
                self.model.insert(key(i), value(i, version));
                if in_family(i)
                    && let Some(f) = &mut self.family
                {
                    f.model.insert(key(i), family_value(i, version));
                }
            }
        }
        Ok(())
    }

    fn call(&self, what: &str, r: mezzanine::Result<()>) -> Step<()> {
        r.map_err(|e| format!("{}: {what}: {e}", self.stage))
    }

    /// `bytes` of 4 KiB values under their own keys, each followed by an overwrite of a
    /// small key (so that the memtables the bulk fills hold versions newer than the ones
    /// below them).
    fn bulk(&mut self, db: &Db, bytes: usize, version: usize) -> Step<()> {
        for n in 0..bytes / BULK_VALUE {
            let k = format!("zbulk{n:05}").into_bytes();
            let mut v = value(n, version);
            v.resize(BULK_VALUE, b'0' + (version % 10) as u8);
            db.put(&k, &v)
                .map_err(|e| format!("{}: bulk put {n}: {e}", self.stage))?;
            self.model.insert(k, v);
            self.put(db, (n * 7) % KEYS, version)?;
        }
        Ok(())
    }

    /// The first workload (under A): data at every depth.
    fn workload_a(&mut self, db: &Db, bulk: usize) -> Step<()> {
        self.stage = "A: write".into();
        // Version 1 of every key, compacted to the deepest levels.
        for i in 0..KEYS {
            self.put(db, i, 1)?;
        }
        self.call("wait_for_background", db.wait_for_background())?;
        // Overwrites and deletions in L0/L1.
        for i in (0..KEYS).step_by(3) {
            self.put(db, i, 2)?;
        }
        for i in (0..KEYS).step_by(7) {
            self.delete(db, i)?;
        }
        self.call("flush", db.flush())?;
        self.call("wait_for_background", db.wait_for_background())?;
        // More in a fresh L0 table: overwrites, deletions, deleted keys written again.
        for i in (0..KEYS).step_by(5) {
            self.put(db, i, 3)?;
        }
        for i in (0..KEYS).step_by(11) {
            self.delete(db, i)?;
        }
        for i in (0..KEYS).step_by(14) {
            self.put(db, i, 3)?;
        }
        self.call("flush", db.flush())?;
        // One job of the compaction that flush made due (the rest stays pending).
        db.run_background_work(1)
            .map_err(|e| format!("{}: run_background_work: {e}", self.stage))?;
        // Memtables (immutable and active; NVM ones under an NVM memtable option).
        let keys: Vec<usize> = (0..KEYS).step_by(4).collect();
        self.batches(db, &keys, 4, 10)?;
        for i in (0..KEYS).step_by(13) {
            self.delete(db, i)?;
        }
        for i in (2..KEYS).step_by(9) {
            self.put(db, i, 5)?;
        }
        self.bulk(db, bulk, 5)?;
        self.until_switch(db, 6)
    }

    /// Writes `version` of keys until a write switches the memtable (a full memtable just
    /// became immutable: its flush is pending when the handle goes away next), at most one
    /// write per key; then overwrites (with `version + 1`) the last keys written before the
    /// switch, so that the new memtable holds newer versions of keys in the immutable one.
    fn until_switch(&mut self, db: &Db, version: usize) -> Step<()> {
        let mut written = Vec::new();
        for n in 0..KEYS {
            let i = (n * 31 + 7) % KEYS;
            let before = db.stats().immutable_memtables;
            self.put(db, i, version)?;
            if db.stats().immutable_memtables > before {
                break;
            }
            written.push(i);
        }
        for &i in written.iter().rev().take(4) {
            self.put(db, i, version + 1)?;
        }
        Ok(())
    }

    /// Writes under B: overwrites, deletions, new keys (some deleted again). Versions from
    /// 11 on, distinct from those written under A.
    fn workload_b(&mut self, db: &Db, bulk: usize) -> Step<()> {
        self.bulk(db, bulk, 11)?;
        for i in (0..KEYS).step_by(6) {
            self.put(db, i, 11)?;
        }
        for i in (1..KEYS).step_by(9) {
            self.delete(db, i)?;
        }
        let new: Vec<usize> = (KEYS..KEYS + EXTRA_KEYS).collect();
        self.batches(db, &new, 11, 7)?;
        for i in (KEYS..KEYS + EXTRA_KEYS).step_by(5) {
            self.delete(db, i)?;
        }
        Ok(())
    }

    /// The last writes under B, left in memtables.
    fn workload_b_tail(&mut self, db: &Db) -> Step<()> {
        for i in (0..KEYS + EXTRA_KEYS).step_by(8) {
            self.put(db, i, 12)?;
        }
        for i in (3..KEYS).step_by(17) {
            self.delete(db, i)?;
        }
        self.until_switch(db, 13)
    }

    /// Lets go of `db` open under `p`: `Exit::Close` drops the handle (which closes it,
    /// without waiting for pending flushes or compactions); `Exit::Crash` goes on with a
    /// copy of the files and of the NVM pool as a process crash leaves them now (every
    /// written byte survives, synced or not), then drops the handle on the originals.
    /// Without a WAL a crash loses writes the model cannot predict: such options close.
    fn leave(&mut self, db: Db, p: &Profile) {
        if self.mode.exit == Exit::Crash && p.options.use_wal {
            let opts = CrashOptions {
                keep_unsynced: KeepUnsynced::All,
                seed: 0,
            };
            let cut = PowerCut {
                keep_unpersisted: KeepLines::All,
                seed: 0,
            };
            let (fs, sim) = self
                .mem
                .crash_clone_with(&opts, || self.sim.power_cut(&cut));
            drop(db);
            self.fs = Arc::new(fs.clone());
            self.mem = fs;
            self.sim = sim;
        } else {
            drop(db);
        }
    }

    /// Compares every key and full scans in both directions with the model, in the
    /// default family and in the run's family.
    fn check(&self, db: &Db, what: &str) -> Step<()> {
        self.check_family(db, &db.default_column_family(), &self.model, what)?;
        if let (Some(f), Some(cf)) = (&self.family, self.family_cf(db)?) {
            self.check_family(db, &cf, &f.model, &format!("{what}, family {FAMILY}"))?;
        }
        Ok(())
    }

    /// [`Run::check`] of one family against `model`.
    fn check_family(&self, db: &Db, cf: &ColumnFamily, model: &Model, what: &str) -> Step<()> {
        let at = |detail: String| format!("{} / check {what}: {detail}", self.stage);
        let show = |v: Option<&[u8]>| match v {
            Some(v) => format!("{:?}", String::from_utf8_lossy(v)),
            None => "absent".into(),
        };
        for i in 0..KEYS + EXTRA_KEYS {
            let k = key(i);
            let got = db
                .get_cf(cf, &k)
                .map_err(|e| at(format!("get {:?}: {e}", String::from_utf8_lossy(&k))))?;
            let want = model.get(&k);
            if got.as_deref() != want.map(Vec::as_slice) {
                return Err(at(format!(
                    "get {:?}: expected {}, found {}",
                    String::from_utf8_lossy(&k),
                    show(want.map(Vec::as_slice)),
                    show(got.as_deref())
                )));
            }
        }
        for reverse in [false, true] {
            let dir = if reverse { "reverse" } else { "forward" };
            let mut it = db
                .cursor_cf(cf, &ReadOptions::default())
                .map_err(|e| at(format!("iter: {e}")))?;
            if reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            let mut want: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> = if reverse {
                Box::new(model.iter().rev())
            } else {
                Box::new(model.iter())
            };
            let mut n = 0usize;
            loop {
                let got = it.valid().then(|| (it.key().to_vec(), it.value().to_vec()));
                let exp = want.next();
                match (got, exp) {
                    (None, None) => break,
                    (Some((gk, gv)), Some((ek, ev))) if gk == *ek && gv == *ev => {}
                    (got, exp) => {
                        return Err(at(format!(
                            "{dir} scan, entry #{n}: expected {}, found {}",
                            exp.map_or("end".into(), |(k, v)| format!(
                                "{:?} = {}",
                                String::from_utf8_lossy(k),
                                show(Some(v))
                            )),
                            got.map_or("end".into(), |(k, v)| format!(
                                "{:?} = {}",
                                String::from_utf8_lossy(&k),
                                show(Some(&v))
                            )),
                        )));
                    }
                }
                n += 1;
                if reverse {
                    it.prev();
                } else {
                    it.next();
                }
            }
            it.status()
                .map_err(|e| at(format!("{dir} scan status: {e}")))?;
        }
        Ok(())
    }
}

/// The option fields whose values differ between `a` and `b`.
fn differing_fields(a: &Options, b: &Options) -> Vec<&'static str> {
    Options::FIELDS
        .iter()
        .copied()
        .filter(|f| a.get(f) != b.get(f))
        .collect()
}

/// What an open returned: a database, a refusal (with its message) or a failure.
enum Opened {
    Db(Db),
    Refused(String),
}

/// Opens under `to`, coming from the database last open under `from`. A refusal must be an
/// `InvalidArgument` naming an option that differs between the two.
fn open_switch(run: &Run, from: &Profile, to: &Profile) -> Step<Opened> {
    match run.open(to) {
        Ok(db) => Ok(Opened::Db(db)),
        Err(Error::InvalidArgument(m)) => {
            // The options that differ, and the pool's: it keeps the size it was created
            // with whatever later options say.
            let mut diff = differing_fields(&run.options(from), &run.options(to));
            diff.extend(["nvm_dir", "nvm_capacity"]);
            if diff.iter().any(|f| m.contains(f)) {
                Ok(Opened::Refused(m))
            } else {
                Err(format!(
                    "{}: open under {} refused with a message naming none of the options \
                     that differ ({}): {m}",
                    run.stage,
                    to.name,
                    diff.join(", ")
                ))
            }
        }
        Err(e) => Err(format!(
            "{}: open under {}: expected Ok or InvalidArgument, got {e:?}",
            run.stage, to.name
        )),
    }
}

/// After a refused open: the database still opens under `back` (the options it was last
/// open with) and holds the same data.
fn check_after_refusal(run: &mut Run, back: &Profile) -> Step<()> {
    run.stage = format!(
        "{} / reopen under {} after the refusal",
        run.stage, back.name
    );
    let db = run
        .open(back)
        .map_err(|e| format!("{}: open: {e:?}", run.stage))?;
    run.check(&db, "reopened")?;
    run.call("close", db.close())
}

/// Opens under `to` coming from `from`; a refusal is recorded in `refusals` (and the
/// database checked under `from` again), and gives `None`.
fn open_or_refuse(
    run: &mut Run,
    from: &Profile,
    to: &Profile,
    pair: &str,
    refusals: &mut Vec<Refusal>,
) -> Step<Option<Db>> {
    match open_switch(run, from, to)? {
        Opened::Db(db) => Ok(Some(db)),
        Opened::Refused(message) => {
            refusals.push(Refusal {
                pair: pair.to_string(),
                stage: run.stage.clone(),
                message,
            });
            check_after_refusal(run, from)?;
            Ok(None)
        }
    }
}

/// Runs pair (a, b); returns the refusals met.
fn run_pair(a: &Profile, b: &Profile, mode: Mode, variant: usize) -> Step<Vec<Refusal>> {
    let pair = pair_name(a, b, mode);
    let mut refusals = Vec::new();
    let mut run = Run::new(mode);

    // 1. Under A, with a column family of options of its own (where the pair allows one).
    run.stage = "A: open".into();
    let db = run.open(a).map_err(|e| format!("{}: {e:?}", run.stage))?;
    if let Some(fo) = family_options(a, b, variant) {
        let nvm = fo.nvm_dir.is_some();
        db.create_column_family(FAMILY, &fo)
            .map_err(|e| format!("A: create family {FAMILY} (nvm {nvm}): {e:?}"))?;
        run.family = Some(FamilyRun {
            nvm,
            model: Model::new(),
        });
    }
    run.workload_a(&db, a.bulk)?;
    run.check(&db, "after the writes")?;
    run.leave(db, a);

    // 2. Under B.
    run.stage = format!("B ({}): open", b.name);
    let Some(db) = open_or_refuse(&mut run, a, b, &pair, &mut refusals)? else {
        return Ok(refusals);
    };
    run.stage = format!("B ({})", b.name);
    run.check(&db, "after open")?;
    run.call("wait_for_background", db.wait_for_background())?;
    run.check(&db, "after wait_for_background")?;
    run.workload_b(&db, b.bulk)?;
    run.call("compact_range", db.compact_range(None, None))?;
    run.check(&db, "after writes and compact_range")?;
    run.workload_b_tail(&db)?;
    run.leave(db, b);

    // 3. Back under A.
    run.stage = format!("A again ({}): open", a.name);
    let Some(db) = open_or_refuse(&mut run, b, a, &pair, &mut refusals)? else {
        return Ok(refusals);
    };
    run.stage = format!("A again ({})", a.name);
    run.check(&db, "after open")?;
    run.call("wait_for_background", db.wait_for_background())?;
    run.check(&db, "after wait_for_background")?;
    run.call("close", db.close())?;
    Ok(refusals)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".into()
    }
}

/// The ways pair (`ia`, `ib`) (indices into [`profiles`]) runs: (a, b) and (b, a) let the
/// handle go differently (close one way, crash the other) with one background mode that
/// alternates over the pairs; (a, a) and pairs named in `MEZZ_PAIR` (`all`) run every way.
fn modes(ia: usize, ib: usize, all: bool) -> Vec<Mode> {
    let every = [Exit::Close, Exit::Crash]
        .into_iter()
        .flat_map(|exit| {
            [Background::Threads, Background::Manual]
                .into_iter()
                .map(move |background| Mode { exit, background })
        })
        .collect();
    if all || ia == ib {
        return every;
    }
    let background = if (ia + ib).is_multiple_of(2) {
        Background::Threads
    } else {
        Background::Manual
    };
    let exit = if ia < ib { Exit::Close } else { Exit::Crash };
    vec![Mode { exit, background }]
}

fn pair_name(a: &Profile, b: &Profile, mode: Mode) -> String {
    format!(
        "{} -> {} ({:?}, {:?})",
        a.name, b.name, mode.exit, mode.background
    )
}

/// Whether `name` matches one side of `MEZZ_PAIR`.
fn side_matches(pattern: Option<&str>, name: &str) -> bool {
    match pattern.map(str::trim) {
        None | Some("" | "*") => true,
        Some(p) => p == name,
    }
}

/// How long one run may take (they take well under a second; a debug build on a busy
/// machine, a few): a run still going after it is stuck, and waiting on would only end
/// in the test runner's timeout without naming the pair.
const RUN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);

/// [`run_pair`] on a thread of its own (its panic caught), failing the test at once, with
/// the pair's name, when it does not end within [`RUN_DEADLINE`] (a background job that
/// plans itself again without end keeps `wait_for_background` from returning: the pair
/// `nvm-immutable-tight-pool -> tlsm` did so once, a return to NVM that never found room).
fn run_pair_in_time(
    a: &Arc<Profile>,
    b: &Arc<Profile>,
    mode: Mode,
    variant: usize,
    pair: &str,
) -> std::thread::Result<Step<Vec<Refusal>>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (a, b) = (Arc::clone(a), Arc::clone(b));
    std::thread::Builder::new()
        .name("option-pair".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| run_pair(&a, &b, mode, variant)));
            let _ = tx.send(r);
        })
        .expect("spawn a run's thread");
    match rx.recv_timeout(RUN_DEADLINE) {
        Ok(r) => r,
        Err(_) => panic!(
            "option_pairs: {pair} did not end within {RUN_DEADLINE:?} (stuck background \
             work?); rerun it alone with MEZZ_PAIR"
        ),
    }
}

/// Runs every pair whose index (in A-major order) is `part` modulo `parts`, or only the
/// pairs `MEZZ_PAIR` names; fails listing every failing pair.
fn run_pairs(part: usize, parts: usize) {
    let profiles: Vec<Arc<Profile>> = profiles().into_iter().map(Arc::new).collect();
    for p in &profiles {
        let o = Run::new(modes(0, 0, true)[0]).options(p);
        o.validate()
            .unwrap_or_else(|e| panic!("profile {}: {e}", p.name));
    }
    let filter = std::env::var("MEZZ_PAIR")
        .ok()
        .filter(|f| !f.trim().is_empty());
    let (fa, fb) = match &filter {
        Some(f) => {
            let mut it = f.splitn(2, ',');
            (it.next(), it.next())
        }
        None => (None, None),
    };
    let verbose = std::env::var_os("MEZZ_PAIR_VERBOSE").is_some();
    let start = Instant::now();
    let mut failures: Vec<PairFailure> = Vec::new();
    let mut refusals: Vec<Refusal> = Vec::new();
    let mut ran = 0usize;
    // Runs with a column family, and of those with NVM in the family.
    let (mut with_family, mut family_nvm) = (0usize, 0usize);
    // Runs are dealt to the parts in turn.
    let mut index = 0usize;
    for (ia, a) in profiles.iter().enumerate() {
        for (ib, b) in profiles.iter().enumerate() {
            if filter.is_some() && !(side_matches(fa, &a.name) && side_matches(fb, &b.name)) {
                continue;
            }
            for mode in modes(ia, ib, filter.is_some()) {
                index += 1;
                if (index - 1) % parts != part {
                    continue;
                }
                ran += 1;
                if let Some(fo) = family_options(a, b, ia + ib) {
                    with_family += 1;
                    family_nvm += usize::from(fo.nvm_dir.is_some());
                }
                let pair = pair_name(a, b, mode);
                let t = Instant::now();
                let r = run_pair_in_time(a, b, mode, ia + ib, &pair);
                if verbose {
                    eprintln!("option_pairs: {pair}: {:?}", t.elapsed());
                }
                match r {
                    Ok(Ok(r)) => refusals.extend(r),
                    Ok(Err(detail)) => failures.push(PairFailure { pair, detail }),
                    Err(p) => failures.push(PairFailure {
                        pair,
                        detail: format!("panicked: {}", panic_message(p.as_ref())),
                    }),
                }
            }
        }
    }
    let mut report = format!(
        "option_pairs part {part}/{parts}: {ran} runs over {} profiles ({with_family} with a \
         column family, {family_nvm} of them with NVM in it) in {:?}, {} refused, {} failed\n",
        profiles.len(),
        start.elapsed(),
        refusals.len(),
        failures.len()
    );
    for r in &refusals {
        let _ = writeln!(
            report,
            "  refused: {} at {}: {}",
            r.pair, r.stage, r.message
        );
    }
    for f in &failures {
        let _ = writeln!(report, "  FAILED: {}: {}", f.pair, f.detail);
    }
    eprint!("{report}");
    assert!(
        filter.is_none() || index > 0,
        "MEZZ_PAIR={filter:?} names no pair"
    );
    assert!(failures.is_empty(), "{report}");
}

// The runs split over two tests so they run on two cores.
#[test]
fn option_pairs_part_0() {
    run_pairs(0, 2);
}

#[test]
fn option_pairs_part_1() {
    run_pairs(1, 2);
}

/// A database with tables down to level 4 opened with fewer levels: refused, naming
/// `num_levels` and the count it needs; opened with that count it reads the same.
#[test]
fn fewer_levels_than_the_data_occupies_is_refused() {
    let deep = profiles()
        .into_iter()
        .find(|p| p.name == "levels-12-deep")
        .unwrap();
    let mut run = Run::new(Mode {
        exit: Exit::Close,
        background: Background::Manual,
    });
    let db = run.open(&deep).unwrap();
    run.workload_a(&db, deep.bulk).unwrap();
    db.wait_for_background().unwrap();
    let deepest = (0..deep.options.num_levels)
        .rev()
        .find(|l| {
            db.property(&format!("mezz.num-files-at-level{l}"))
                .is_some_and(|n| n != "0")
        })
        .unwrap();
    assert!(deepest >= 3, "the workload reaches level {deepest} only");
    db.close().unwrap();
    drop(db);

    let with_levels = |n: usize| {
        let mut p = profile(&format!("levels-{n}"), tiny_options(Preset::Leveldb));
        p.options.num_levels = n;
        p
    };
    for n in 2..=deepest {
        match run.open(&with_levels(n)) {
            Err(Error::InvalidArgument(m)) => {
                assert!(
                    m.contains("num_levels") && m.contains(&format!(">= {}", deepest + 1)),
                    "{m}"
                );
            }
            other => panic!(
                "num_levels {n}: expected InvalidArgument, got {:?}",
                other.err()
            ),
        }
    }
    run.stage = "enough levels".into();
    let db = run.open(&with_levels(deepest + 1)).unwrap();
    run.check(&db, "after open").unwrap();
    db.compact_range(None, None).unwrap();
    run.check(&db, "after compact_range").unwrap();
    db.close().unwrap();
}

/// The profile named `name`.
fn named(name: &str) -> Profile {
    profiles()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no profile {name}"))
}

/// A pool is created with the size of the options that created it; options that need more
/// (here: WALs in NVM, about 1.1 MiB each, in a 1 MiB pool) must be refused at open with
/// a message naming `nvm_capacity`, not fail on a full pool at open or at a later write.
#[test]
fn a_pool_smaller_than_the_options_need_is_refused_naming_nvm_capacity() {
    let mode = Mode {
        exit: Exit::Close,
        background: Background::Manual,
    };
    let mut run = Run::new(mode);
    let small = named("nvm-immutable-tight-pool");
    let db = run.open(&small).unwrap();
    run.put(&db, 1, 1).unwrap();
    db.close().unwrap();
    drop(db);
    let wal_on_nvm = named("nvm-wal");
    // The options alone are fine: they ask for a pool of their own size.
    run.options(&wal_on_nvm).validate().unwrap();
    match run.open(&wal_on_nvm) {
        Err(Error::InvalidArgument(m)) if m.contains("nvm_capacity") => {}
        other => panic!(
            "expected InvalidArgument naming nvm_capacity, got {:?}",
            other.err()
        ),
    }
    let db = run.open(&small).unwrap();
    run.check(&db, "after the refusal").unwrap();
}

/// `nvm_memtable = immutable`: a crash after an immutable memtable was merged into the NVM
/// receiver and before the manifest edit that retires its WAL (here the edit fails) leaves
/// the merged writes both in the receiver and in the WAL. The database must open under the
/// same options and under options without an NVM memtable, and read the same.
#[test]
fn crash_between_an_nvm_merge_and_its_manifest_edit() {
    use mezz_env::{FaultFs, FaultOp, FaultRule, Trigger};
    let mode = Mode {
        exit: Exit::Crash,
        background: Background::Manual,
    };
    let a = named("nvm-immutable");
    let mut run = Run::new(mode);
    let faults = Arc::new(FaultFs::new(Arc::new(run.mem.clone())));
    run.fs = Arc::clone(&faults) as Arc<dyn FileSystem>;
    let db = run.open(&a).unwrap();
    run.stage = "A: write".into();
    for i in 0..KEYS {
        run.put(&db, i, 1).unwrap();
    }
    db.wait_for_background().unwrap();
    for i in (0..KEYS).step_by(3) {
        run.put(&db, i, 2).unwrap();
    }
    run.until_switch(&db, 3).unwrap();
    assert!(db.stats().immutable_memtables > 0);
    // The merge of the immutable memtable runs; the manifest edit after it fails.
    faults.add_rule(FaultRule::new(Some(FaultOp::Write), Trigger::After(0)).on_path("MANIFEST"));
    assert!(db.run_background_work(1).is_err());
    let crash = || {
        run.mem.crash_clone_with(
            &CrashOptions {
                keep_unsynced: KeepUnsynced::All,
                seed: 0,
            },
            || {
                run.sim.power_cut(&PowerCut {
                    keep_unpersisted: KeepLines::All,
                    seed: 0,
                })
            },
        )
    };
    let states: Vec<(MemFs, SimNvm)> = (0..4).map(|_| crash()).collect();
    drop(db);
    let mut failures = Vec::new();
    for ((mem, sim), b) in
        states
            .into_iter()
            .zip(["nvm-immutable", "leveldb", "novelsm", "nvm-dir-idle"])
    {
        let b = named(b);
        let mut r = Run::new(mode);
        r.fs = Arc::new(mem.clone());
        r.mem = mem;
        r.sim = sim;
        r.model = run.model.clone();
        r.stage = format!("reopen under {}", b.name);
        let result = (|| -> Step<()> {
            let db = r
                .open(&b)
                .map_err(|e| format!("{}: open: {e:?}", r.stage))?;
            r.check(&db, "after open")?;
            r.call("wait_for_background", db.wait_for_background())?;
            r.check(&db, "after wait_for_background")?;
            r.call("close", db.close())
        })();
        if let Err(e) = result {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
