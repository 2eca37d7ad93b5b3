//! Runs an op log against a real database and the model side by side.
//!
//! Owns: [`Harness`] (one open database, its model and their paired snapshots),
//! [`run_log`], [`History`] and [`Failure`].
//!
//! Invariants: the harness checks every observable result against the model as it goes and
//! stops at the first difference, so a returned [`History`] is also the model's history.
//! After the last op, [`Harness::final_check`] compares a full scan with the model and runs
//! `Db::verify`.
//!
//! Thread-safety: a harness is driven by one thread (the database itself may run background
//! threads).

// A failure is returned once per run and carries the op and both outputs: its size does
// not matter.
#![allow(clippy::result_large_err)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::FileSystem;
use mezzanine::{
    ColumnFamily, Db, DbIterator, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions,
};

use crate::codec::KeyCodec;
use crate::model::{Entry, Map, Model, View};
use crate::op::{BatchOp, Op, Output, SeekStart, Step, op_to_rust};

/// The outputs of a log, one per op.
pub type History = Vec<Output>;

/// Where and how a log run went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Index of the failing op; `None` for the open before the first op or the final check.
    pub op_index: Option<usize>,
    /// The failing op, when an op failed.
    pub op: Option<Op>,
    /// What the model (or the reference run) says.
    pub expected: String,
    /// What the database did.
    pub found: String,
}

impl Failure {
    fn at(i: usize, op: &Op, expected: impl fmt::Display, found: impl fmt::Display) -> Self {
        Self {
            op_index: Some(i),
            op: Some(op.clone()),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    fn general(what: &str, expected: impl fmt::Display, found: impl fmt::Display) -> Self {
        Self {
            op_index: None,
            op: None,
            expected: format!("{what}: {expected}"),
            found: found.to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.op_index, &self.op) {
            (Some(i), Some(op)) => writeln!(f, "op #{i}: {}", op_to_rust(op))?,
            _ => writeln!(f, "outside any op")?,
        }
        writeln!(f, "  expected: {}", self.expected)?;
        write!(f, "  found:    {}", self.found)
    }
}

/// One open database driven in step with a [`Model`].
#[derive(Debug)]
pub struct Harness {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: Options,
    db: Option<Db>,
    model: Model,
    /// Live snapshots: the database's and the model's frozen copy, in the order taken.
    snapshots: Vec<(Snapshot, Arc<Map>)>,
    /// Held iterators, in the order opened.
    iters: Vec<HeldIter>,
    /// How the model's keys are stored (the options' comparator).
    codec: KeyCodec,
    /// A column family that receives every write too, in the same batch (see
    /// [`Harness::with_mirror_family`]).
    mirror: Option<ColumnFamily>,
}

/// The name of the mirror column family.
pub const MIRROR_FAMILY: &str = "mirror";

/// An iterator kept across ops, with the model state it must keep showing.
#[derive(Debug)]
struct HeldIter {
    it: DbIterator,
    map: Arc<Map>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// The model's position (`None` = invalid).
    pos: Option<Vec<u8>>,
}

fn position(it: &DbIterator) -> Option<Entry> {
    it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
}

fn seek(it: &mut DbIterator, start: &SeekStart) {
    match start {
        SeekStart::First => it.seek_to_first(),
        SeekStart::Last => it.seek_to_last(),
        SeekStart::Seek(k) => it.seek(k),
        SeekStart::SeekForPrev(k) => it.seek_for_prev(k),
    }
}

/// Takes `steps` from the current position, recording each, stopping when invalid.
fn step(it: &mut DbIterator, steps: &[Step]) -> Vec<Option<Entry>> {
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        if !it.valid() {
            break;
        }
        match s {
            Step::Next => it.next(),
            Step::Prev => it.prev(),
        }
        out.push(position(it));
    }
    out
}

fn err(e: &mezzanine::Error) -> String {
    format!("error: {e}")
}

fn scan(it: &mut DbIterator, reverse: bool, limit: usize) -> mezzanine::Result<Vec<Entry>> {
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut out = Vec::new();
    while it.valid() && out.len() < limit {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status()?;
    Ok(out)
}

fn walk(
    it: &mut DbIterator,
    start: &SeekStart,
    steps: &[Step],
) -> mezzanine::Result<Vec<Option<Entry>>> {
    seek(it, start);
    let mut out = vec![position(it)];
    out.extend(step(it, steps));
    it.status()?;
    Ok(out)
}

fn read_opts(lower: Option<&Vec<u8>>, upper: Option<&Vec<u8>>) -> ReadOptions {
    ReadOptions {
        lower_bound: lower.cloned(),
        upper_bound: upper.cloned(),
        ..ReadOptions::default()
    }
}

impl Harness {
    /// Opens the database in `dir` on `fs` with `options` (whose `fs` is replaced by `fs`).
    ///
    /// # Errors
    /// A [`Failure`] if the open fails.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        mut options: Options,
    ) -> Result<Self, Failure> {
        options.fs = Arc::clone(&fs);
        // A new database gets a simulated NVM of its own (like its own file system).
        if options.nvm_sim.is_some() {
            options.nvm_sim = Some(mezzanine::options::SimNvm::new());
        }
        let db =
            Db::open(dir, options.clone()).map_err(|e| Failure::general("open", "Ok", err(&e)))?;
        Ok(Self {
            codec: KeyCodec::for_options(&options),
            fs,
            dir: dir.to_path_buf(),
            options,
            db: Some(db),
            model: Model::new(),
            snapshots: Vec::new(),
            iters: Vec::new(),
            mirror: None,
        })
    }

    /// Creates the column family [`MIRROR_FAMILY`] (with the database's options) and from
    /// now on writes every update into it as well, in the same batch as the default
    /// family's: snapshot reads, reopens and the final check then read it too, and it must
    /// show exactly what the default family shows (a batch spanning families is atomic, a
    /// snapshot reads every family at one point, recovery restores both).
    ///
    /// # Errors
    /// A [`Failure`] if the family cannot be created.
    pub fn with_mirror_family(&mut self) -> Result<(), Failure> {
        let cf = self
            .db()
            .create_column_family(MIRROR_FAMILY, &self.options)
            .map_err(|e| Failure::general("create the mirror family", "Ok", err(&e)))?;
        self.mirror = Some(cf);
        Ok(())
    }

    /// Checks that the mirror family (if any) holds what the model holds.
    fn check_mirror(&self, what: &str) -> Result<(), Failure> {
        let Some(cf) = &self.mirror else {
            return Ok(());
        };
        let want = self.model.view().scan(None, None, false, usize::MAX);
        let got = self
            .db()
            .cursor_cf(cf, &ReadOptions::default())
            .and_then(|mut it| scan(&mut it, false, usize::MAX))
            .map_err(|e| Failure::general(what, "Ok", err(&e)))?;
        let got: Vec<Entry> = got
            .into_iter()
            .map(|e| self.codec.decode_entry(e))
            .collect();
        if got != want {
            return Err(first_difference(what, &want, &got));
        }
        Ok(())
    }

    /// The open database.
    ///
    /// # Panics
    /// Never in practice: the handle is only absent while a reopen is in progress.
    #[must_use]
    pub fn db(&self) -> &Db {
        #[allow(clippy::expect_used)] // every path that takes the handle puts one back or fails
        self.db.as_ref().expect("database is open")
    }

    /// The model.
    #[must_use]
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The file system the database runs on.
    #[must_use]
    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    fn snapshot_slot(&self, slot: usize) -> Option<usize> {
        (!self.snapshots.is_empty()).then(|| slot % self.snapshots.len())
    }

    /// Replaces the options used by later reopens (their `fs` is kept): data written under
    /// one option set must read the same under another.
    /// A database with an NVM tier keeps it (its pool holds data) under the new options, and
    /// one with SSD directories keeps them.
    pub fn set_options(&mut self, mut options: Options) {
        options.fs = Arc::clone(&self.fs);
        if self.options.nvm_sim.is_none() && options.nvm_sim.is_some() {
            // The database gets its NVM device now: a fresh one of its own.
            options.nvm_sim = Some(mezzanine::options::SimNvm::new());
        } else if self.options.nvm_sim.is_some() {
            options.nvm_dir.clone_from(&self.options.nvm_dir);
            options.nvm_persistence = self.options.nvm_persistence;
            options.nvm_sim.clone_from(&self.options.nvm_sim);
            options.nvm_capacity = self.options.nvm_capacity;
            options.nvm_memtable_size = self.options.nvm_memtable_size;
        }
        if !self.options.ssd_paths.is_empty()
            && options.ssd_paths.len() < self.options.ssd_paths.len()
        {
            // The database keeps tables in its SSD directories: a user keeps passing them
            // (more may be appended).
            options.ssd_paths.clone_from(&self.options.ssd_paths);
        }
        self.codec = KeyCodec::for_options(&options);
        self.options = options;
    }

    /// Closes the database and opens it again; live snapshots are dropped first.
    ///
    /// # Errors
    /// A description of the close or open error.
    pub fn reopen(&mut self) -> Result<(), String> {
        self.snapshots.clear();
        self.iters.clear();
        if let Some(db) = self.db.take() {
            db.close().map_err(|e| format!("close: {}", err(&e)))?;
        }
        let db =
            Db::open(&self.dir, self.options.clone()).map_err(|e| format!("open: {}", err(&e)))?;
        if self.mirror.is_some() {
            self.mirror = Some(
                db.column_family(MIRROR_FAMILY)
                    .ok_or_else(|| "the mirror family is gone after the reopen".to_string())?,
            );
        }
        self.db = Some(db);
        Ok(())
    }

    /// Applies op number `i` to the database and the model and compares what they show.
    ///
    /// # Errors
    /// A [`Failure`] at the first difference or database error.
    pub fn apply(&mut self, i: usize, op: &Op) -> Result<Output, Failure> {
        let fail = |expected: &dyn fmt::Display, found: &dyn fmt::Display| {
            Failure::at(i, op, expected, found)
        };
        let wo = WriteOptions::default();
        let c = self.codec;
        let ro = |l: &Option<Vec<u8>>, u: &Option<Vec<u8>>| {
            read_opts(
                c.encode_opt(l.as_ref()).as_ref(),
                c.encode_opt(u.as_ref()).as_ref(),
            )
        };
        let dec = |v: Vec<Entry>| v.into_iter().map(|e| c.decode_entry(e)).collect::<Vec<_>>();
        let dec_walk = |v: Vec<Option<Entry>>| {
            v.into_iter()
                .map(|e| e.map(|e| c.decode_entry(e)))
                .collect::<Vec<_>>()
        };
        let expected = match op {
            Op::Put { key, value } if self.mirror.is_none() => {
                self.db()
                    .put(&c.encode(key), value)
                    .map_err(|e| fail(&"Ok", &err(&e)))?;
                self.model.put(key, value);
                Output::Done
            }
            Op::Delete { key } if self.mirror.is_none() => {
                self.db()
                    .delete(&c.encode(key))
                    .map_err(|e| fail(&"Ok", &err(&e)))?;
                self.model.delete(key);
                Output::Done
            }
            Op::Put { key, value } => {
                let mut b = WriteBatch::new();
                b.put(&c.encode(key), value);
                if let Some(m) = &self.mirror {
                    b.put_cf(m, &c.encode(key), value);
                }
                self.db().write(&wo, b).map_err(|e| fail(&"Ok", &err(&e)))?;
                self.model.put(key, value);
                Output::Done
            }
            Op::Delete { key } => {
                let mut b = WriteBatch::new();
                b.delete(&c.encode(key));
                if let Some(m) = &self.mirror {
                    b.delete_cf(m, &c.encode(key));
                }
                self.db().write(&wo, b).map_err(|e| fail(&"Ok", &err(&e)))?;
                self.model.delete(key);
                Output::Done
            }
            Op::Batch(items) => {
                let mut b = WriteBatch::new();
                for item in items {
                    match item {
                        BatchOp::Put { key, value } => {
                            b.put(&c.encode(key), value);
                            if let Some(m) = &self.mirror {
                                b.put_cf(m, &c.encode(key), value);
                            }
                        }
                        BatchOp::Delete { key } => {
                            b.delete(&c.encode(key));
                            if let Some(m) = &self.mirror {
                                b.delete_cf(m, &c.encode(key));
                            }
                        }
                    }
                }
                self.db().write(&wo, b).map_err(|e| fail(&"Ok", &err(&e)))?;
                self.model.apply_batch(items);
                Output::Done
            }
            Op::Get { key } => {
                let want = Output::Value(self.model.view().get(key));
                let got = self
                    .db()
                    .get(&c.encode(key))
                    .map_err(|e| fail(&want, &err(&e)))?;
                Self::compare(Output::Value(got), want, &fail)?
            }
            Op::Iterate {
                lower,
                upper,
                reverse,
                limit,
            } => {
                let want = Output::Entries(self.model.view().scan(
                    lower.as_deref(),
                    upper.as_deref(),
                    *reverse,
                    *limit,
                ));
                let got = self
                    .db()
                    .cursor(&ro(lower, upper))
                    .and_then(|mut it| scan(&mut it, *reverse, *limit))
                    .map_err(|e| fail(&want, &err(&e)))?;
                Self::compare(Output::Entries(dec(got)), want, &fail)?
            }
            Op::Walk {
                lower,
                upper,
                start,
                steps,
            } => {
                let want = Output::Walk(self.model.view().walk(
                    lower.as_deref(),
                    upper.as_deref(),
                    start,
                    steps,
                ));
                let got = self
                    .db()
                    .cursor(&ro(lower, upper))
                    .and_then(|mut it| walk(&mut it, &c.encode_start(start), steps))
                    .map_err(|e| fail(&want, &err(&e)))?;
                Self::compare(Output::Walk(dec_walk(got)), want, &fail)?
            }
            Op::TakeSnapshot => {
                let s = self.db().snapshot();
                self.snapshots.push((s, self.model.snapshot()));
                Output::Done
            }
            Op::ReadAtSnapshot {
                snapshot,
                key,
                lower,
                upper,
                reverse,
                limit,
            } => match self.snapshot_slot(*snapshot) {
                None => Output::NoSnapshot,
                Some(slot) => {
                    let Some((snap, map)) = self.snapshots.get(slot) else {
                        return Err(fail(&"a live snapshot", &"none"));
                    };
                    let view = View(map);
                    let want = Output::SnapshotRead {
                        value: view.get(key),
                        entries: view.scan(lower.as_deref(), upper.as_deref(), *reverse, *limit),
                    };
                    let mut ro = ro(lower, upper);
                    ro.snapshot = Some(snap.clone());
                    let db = self.db();
                    let got = db
                        .get_opt(&ro, &c.encode(key))
                        .and_then(|value| {
                            let mut it = db.cursor(&ro)?;
                            let entries = dec(scan(&mut it, *reverse, *limit)?);
                            Ok(Output::SnapshotRead { value, entries })
                        })
                        .map_err(|e| fail(&want, &err(&e)))?;
                    // The mirror family, read at the same snapshot, shows the same.
                    if let Some(m) = &self.mirror {
                        let mirrored = db
                            .get_cf_opt(m, &ro, &c.encode(key))
                            .and_then(|value| {
                                let mut it = db.cursor_cf(m, &ro)?;
                                let entries = dec(scan(&mut it, *reverse, *limit)?);
                                Ok(Output::SnapshotRead { value, entries })
                            })
                            .map_err(|e| fail(&want, &err(&e)))?;
                        let in_mirror = |w: &dyn fmt::Display, g: &dyn fmt::Display| {
                            fail(&format!("the mirror family: {w}"), g)
                        };
                        Self::compare(mirrored, want.clone(), &in_mirror)?;
                    }
                    Self::compare(got, want, &fail)?
                }
            },
            Op::ReleaseSnapshot { snapshot } => match self.snapshot_slot(*snapshot) {
                None => Output::NoSnapshot,
                Some(slot) => {
                    self.snapshots.remove(slot);
                    Output::Done
                }
            },
            Op::Flush => {
                self.db().flush().map_err(|e| fail(&"Ok", &err(&e)))?;
                Output::Done
            }
            Op::Background { jobs } => {
                self.db()
                    .run_background_work(*jobs)
                    .map_err(|e| fail(&"Ok", &err(&e)))?;
                if let Some(m) = &self.mirror {
                    self.db()
                        .run_background_work_cf(m, *jobs)
                        .map_err(|e| fail(&"Ok", &err(&e)))?;
                }
                Output::Done
            }
            Op::CompactRange { begin, end } => {
                self.db()
                    .compact_range(
                        c.encode_opt(begin.as_ref()).as_deref(),
                        c.encode_opt(end.as_ref()).as_deref(),
                    )
                    .map_err(|e| fail(&"Ok", &err(&e)))?;
                Output::Done
            }
            Op::Reopen => {
                self.reopen().map_err(|e| fail(&"Ok", &e))?;
                self.check_mirror("the mirror family after the reopen")?;
                Output::Done
            }
            Op::IterOpen {
                lower,
                upper,
                start,
            } => {
                let map = self.model.snapshot();
                let view = View(&map);
                let model_pos = view.position(lower.as_deref(), upper.as_deref(), start);
                let want = Output::Walk(vec![view.record(model_pos)]);
                let pos = model_pos.map(<[u8]>::to_vec);
                let mut it = self
                    .db()
                    .cursor(&ro(lower, upper))
                    .map_err(|e| fail(&want, &err(&e)))?;
                seek(&mut it, &c.encode_start(start));
                it.status().map_err(|e| fail(&want, &err(&e)))?;
                let got = Self::compare(Output::Walk(dec_walk(vec![position(&it)])), want, &fail)?;
                self.iters.push(HeldIter {
                    it,
                    map,
                    lower: lower.clone(),
                    upper: upper.clone(),
                    pos,
                });
                got
            }
            Op::IterStep { iter, steps } => {
                if self.iters.is_empty() {
                    Output::NoIterator
                } else {
                    let slot = iter % self.iters.len();
                    let Some(held) = self.iters.get_mut(slot) else {
                        return Err(fail(&"a held iterator", &"none"));
                    };
                    let view = View(&held.map);
                    let want_steps = view.steps_from(
                        held.lower.as_deref(),
                        held.upper.as_deref(),
                        held.pos.as_deref(),
                        steps,
                    );
                    if let Some(last) = want_steps.last() {
                        held.pos = last.as_ref().map(|(k, _)| k.clone());
                    }
                    let want = Output::Walk(want_steps);
                    let got = dec_walk(step(&mut held.it, steps));
                    held.it.status().map_err(|e| fail(&want, &err(&e)))?;
                    Self::compare(Output::Walk(got), want, &fail)?
                }
            }
            Op::IterClose { iter } => {
                if self.iters.is_empty() {
                    Output::NoIterator
                } else {
                    let slot = iter % self.iters.len();
                    self.iters.remove(slot);
                    Output::Done
                }
            }
        };
        Ok(expected)
    }

    fn compare(
        got: Output,
        want: Output,
        fail: &dyn Fn(&dyn fmt::Display, &dyn fmt::Display) -> Failure,
    ) -> Result<Output, Failure> {
        if got == want {
            Ok(got)
        } else {
            Err(fail(&want, &got))
        }
    }

    /// Compares a full forward and backward scan with the model and runs `Db::verify`.
    ///
    /// # Errors
    /// A [`Failure`] naming the first difference or error.
    pub fn final_check(&self) -> Result<(), Failure> {
        let want = self.model.view().scan(None, None, false, usize::MAX);
        for reverse in [false, true] {
            let got = self
                .db()
                .cursor(&ReadOptions::default())
                .and_then(|mut it| scan(&mut it, reverse, usize::MAX))
                .map_err(|e| Failure::general("final scan", "Ok", err(&e)))?;
            let got: Vec<Entry> = got
                .into_iter()
                .map(|e| self.codec.decode_entry(e))
                .collect();
            let mut want = want.clone();
            if reverse {
                want.reverse();
            }
            if got != want {
                let what = if reverse {
                    "final reverse scan"
                } else {
                    "final scan"
                };
                return Err(first_difference(what, &want, &got));
            }
        }
        self.check_mirror("the mirror family's final scan")?;
        self.db()
            .verify()
            .map_err(|e| Failure::general("verify", "Ok", err(&e)))?;
        Ok(())
    }

    /// Closes the database.
    ///
    /// # Errors
    /// A [`Failure`] if `close` fails.
    pub fn close(mut self) -> Result<(), Failure> {
        self.snapshots.clear();
        self.iters.clear();
        if let Some(db) = self.db.take() {
            db.close()
                .map_err(|e| Failure::general("close", "Ok", err(&e)))?;
        }
        Ok(())
    }
}

/// A failure describing where two entry lists first differ.
fn first_difference(what: &str, want: &[Entry], got: &[Entry]) -> Failure {
    let i = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let show = |e: Option<&Entry>| match e {
        None => "<end>".to_string(),
        Some((k, v)) => format!("{} => {}", crate::op::Abbrev(k), crate::op::Abbrev(v)),
    };
    Failure::general(
        what,
        format!("{} entries, entry {i} = {}", want.len(), show(want.get(i))),
        format!("{} entries, entry {i} = {}", got.len(), show(got.get(i))),
    )
}

/// Runs `ops` against a database created in `dir` on `fs` with `options` (whose `fs` field
/// is replaced by `fs`) and against the model; checks every output, then a final full scan
/// and `Db::verify`, then closes the database.
///
/// # Errors
/// The first [`Failure`].
pub fn run_log(
    ops: &[Op],
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    options: &Options,
) -> Result<History, Failure> {
    run_log_with(ops, fs, dir, options, false)
}

/// [`run_log`], with a mirror column family when `mirror` is set (see
/// [`Harness::with_mirror_family`]): its history must be the same.
///
/// # Errors
/// The first [`Failure`].
pub fn run_log_with(
    ops: &[Op],
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    options: &Options,
    mirror: bool,
) -> Result<History, Failure> {
    let mut h = Harness::open(fs, dir, options.clone())?;
    if mirror {
        h.with_mirror_family()?;
    }
    let mut history = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        history.push(h.apply(i, op)?);
    }
    h.final_check()?;
    h.close()?;
    Ok(history)
}
