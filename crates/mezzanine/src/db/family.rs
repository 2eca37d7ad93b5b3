//! Column families: named key spaces of one database, created and dropped at run time,
//! each with its own options (`docs/column-families.md`).
//!
//! Owns: [`ColumnFamily`] (the caller's handle), [`Family`] (one open family) and
//! [`Families`] (the live ones, behind `DbInner::families`), and the steps that create,
//! drop, open and reclaim them.
//!
//! The model: the database's own engine is the default family (id 0). Every other family
//! is an engine of its own (a `DbInner`) in the directory `cf-<id>` of the database, with
//! its own memtables, version, manifest, compactions, options and statistics, but no WAL
//! and no sequence counter of its own: the database's write path logs every update, of any
//! family, in its one WAL, numbers it from its one sequence counter, and inserts a family's
//! updates into that family's memtable (`DbInner::insert_family_batch`) before the group is
//! published. So a batch spanning families is one WAL record (atomic), and a snapshot (one
//! sequence number, registered in the one snapshot list every family shares) reads every
//! family at the same point.
//!
//! Invariants:
//! - A family's id is never reused (the manifest keeps the highest one ever used).
//! - The database's manifest names every live family (a family-added record) before any of
//!   its updates is logged, and stops naming it (a family-dropped record, durable) before
//!   its directory is deleted; an open deletes every `cf-<id>` directory it does not name.
//! - Memtables switch together (RocksDB's `atomic_flush`): a family's memtable is switched
//!   only with the database's (`DbInner::switch_memtable`, which a full family memtable
//!   forces), so a family's immutable memtable holds only updates of closed WALs, which its
//!   flush syncs before it writes (`DbInner::sync_parent_wals`): no family table holds an
//!   update a power cut can drop from the WAL with the rest of its batch.
//! - A WAL becomes obsolete (the log number moves past it) only after every live family
//!   has flushed what it holds: the database's flush first waits for the families'
//!   (`DbInner::flush_families`), and the switches are one step (`family_switch`).
//!   Recovery replays into a family only the updates above the largest sequence number its
//!   tables hold, then flushes it before the new manifest makes the replayed WALs
//!   obsolete.
//!
//! Thread-safety: `Families` sits behind an `RwLock` that is a leaf: nothing else is taken
//! while it is held. Creating and dropping a family hold the database's `write` lock (no
//! group is being logged or inserted meanwhile), then its `manifest` lock (through
//! `log_and_apply`), then `families`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::base::snapshot::SnapshotList;
use crate::batch::FamilyId;
use crate::error::{Error, Result};
use crate::iter::DbIterator;
use crate::manifest::{FamilyRecord, VersionEdit};
use crate::options::{Options, ReadOptions};

use super::DbInner;

/// The name of the default column family (id 0).
pub const DEFAULT_COLUMN_FAMILY: &str = "default";

/// A handle on a column family: cheap to clone, usable from any thread. The default
/// family's handle has id 0. After the family is dropped every call through the handle
/// fails with `InvalidArgument`.
#[derive(Clone, Debug)]
pub struct ColumnFamily {
    id: u32,
    name: String,
    /// `None` for the default family.
    fam: Option<Arc<Family>>,
}

impl ColumnFamily {
    /// The family's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The family's id (0: the default family).
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    pub(super) fn default_family() -> ColumnFamily {
        ColumnFamily {
            id: 0,
            name: DEFAULT_COLUMN_FAMILY.to_string(),
            fam: None,
        }
    }

    pub(super) fn family(&self) -> Option<&Arc<Family>> {
        self.fam.as_ref()
    }
}

impl FamilyId for ColumnFamily {
    fn family_id(&self) -> u32 {
        self.id
    }
}

/// One open column family other than the default.
#[derive(Debug)]
pub(crate) struct Family {
    pub(super) id: u32,
    /// What the manifest records of it (its options as created; see `options_text`).
    pub(super) record: FamilyRecord,
    /// Its options as the manifest records them now (changed by
    /// `Db::set_column_family_options`, in effect from the next open).
    pub(super) options_text: parking_lot::Mutex<String>,
    /// Its engine (in `cf-<id>`, without a WAL).
    pub(super) db: Arc<DbInner>,
    /// Its options as opened (the recorded ones, adjusted: see [`family_options`]).
    pub(super) opts: Options,
    /// Set once the family is dropped: calls through old handles fail.
    pub(super) dropped: AtomicBool,
    /// The largest sequence number in its tables when the database opened: recovery
    /// replays only its updates above it.
    pub(super) flushed_seq: u64,
}

/// The live column families (other than the default) and the next id.
#[derive(Debug, Default)]
pub(crate) struct Families {
    pub(super) live: BTreeMap<u32, Arc<Family>>,
    /// Above every id ever used.
    pub(super) next_id: u32,
}

impl Families {
    pub(super) fn records(&self) -> BTreeMap<u32, FamilyRecord> {
        self.live
            .iter()
            .map(|(id, f)| {
                let mut r = f.record.clone();
                r.options = f.options_text.lock().clone();
                (*id, r)
            })
            .collect()
    }

    fn handle(f: &Arc<Family>) -> ColumnFamily {
        ColumnFamily {
            id: f.id,
            name: f.record.name.clone(),
            fam: Some(Arc::clone(f)),
        }
    }
}

/// The options of a column family that `Db::set_column_family_options` may change: none of
/// them changes how its files are laid out or read.
pub const CHANGEABLE_FAMILY_OPTIONS: &[&str] = &[
    "write_buffer_size",
    "max_write_buffer_number",
    "block_size",
    "block_restart_interval",
    "bloom_bits_per_key",
    "compression",
    "zstd_level",
    "block_cache_capacity",
    "max_open_files",
    "target_file_size",
    "level0_compaction_trigger",
    "level0_slowdown_trigger",
    "level0_stop_trigger",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "compaction_pri",
    "seek_compaction",
    "soft_pending_compaction_bytes",
    "hard_pending_compaction_bytes",
    "delayed_write_rate",
    "max_background_jobs",
    "background_nice",
    "paranoid_checks",
    "parallel_reads",
];

/// Why `nvm_memtable = mutable` and column families do not combine: a mutable NVM
/// memtable takes a write in place, durable at once, with no WAL record; a batch spanning
/// families is atomic because it is one WAL record. A power cut could keep a family's half
/// in its NVM memtable while the WAL's lost tail drops the other half. (`immutable` keeps
/// every write in the WAL first: a family may use it, and so may the default family.)
pub(super) fn mutable_nvm_memtable_error() -> Error {
    Error::InvalidArgument(MUTABLE_NVM_MEMTABLE_REASON.to_string())
}

/// The reason of [`mutable_nvm_memtable_error`].
pub(super) const MUTABLE_NVM_MEMTABLE_REASON: &str = "column families and nvm_memtable = \
     mutable or overflow do not combine: a mutable NVM memtable takes writes without the WAL \
     record that makes a batch across families atomic (nvm_memtable = immutable does combine)";

/// The directory name of family `id`.
pub(super) fn family_dir_name(id: u32) -> String {
    format!("cf-{id}")
}

/// The id of a family directory's name (`cf-<id>`).
pub(super) fn parse_family_dir(name: &str) -> Option<u32> {
    name.strip_prefix("cf-")?
        .parse::<u32>()
        .ok()
        .filter(|&id| id > 0)
}

/// The options family `id` of the database in `dir` (opened with `main`) runs with:
/// `recorded` (its options as text, as given at creation) with the database's internal
/// fields (file system, comparator, logger, background mode), no WAL of its own (the
/// database's logs its updates), and its directories under `cf-<id>`: its tables in
/// `dir/cf-<id>` and `<ssd_path>/cf-<id>`, its NVM pool (a pool of its own, of its own
/// `nvm_capacity`: its share of NVM) in `<nvm_dir>/cf-<id>`.
///
/// # Errors
/// `InvalidArgument` if the text does not parse or asks for an NVM memtable (a family has
/// no WAL of its own, and an NVM memtable stands in for one).
pub(super) fn family_options(main: &Options, id: u32, recorded: &str) -> Result<Options> {
    let mut o = Options::from_text(recorded)?;
    o.keep_internal(main.clone());
    if o.nvm_memtable.in_place() {
        return Err(mutable_nvm_memtable_error());
    }
    let sub = family_dir_name(id);
    o.use_wal = false;
    o.wal_on_nvm = false;
    o.create_if_missing = true;
    o.error_if_exists = false;
    o.recovery_mode = main.recovery_mode;
    o.nvm_dir = o.nvm_dir.as_ref().map(|d| d.join(&sub));
    o.ssd_paths = o.ssd_paths.iter().map(|p| p.join(&sub)).collect();
    Ok(o)
}

/// Opens the engine of family `record` of the database in `dir`, sharing `snapshots` with
/// it; creates it when `create` (`Db::create_column_family`, before the manifest names it).
///
/// # Errors
/// As `Db::open`; `Corruption` naming `cf-<id>/CURRENT` when the family exists (`create`
/// is false: the manifest names it) but its CURRENT is gone: its engine was created, with
/// its CURRENT, before the manifest named it, so its tables and manifest may be there
/// still, and opening it afresh would drop every update of it that is no longer in the WAL.
pub(super) fn open_family(
    dir: &Path,
    main: &Options,
    record: &FamilyRecord,
    snapshots: &Arc<SnapshotList>,
    create: bool,
) -> Result<Arc<Family>> {
    let opts = family_options(main, record.id, &record.options)?;
    let path = dir.join(family_dir_name(record.id));
    let current = crate::filename::current_file(&path);
    if !create && !opts.fs.exists(&current) {
        return Err(Error::corruption(
            0,
            format!(
                "column family {:?} (id {}) is named by the manifest, but its CURRENT is \
                 missing",
                record.name, record.id
            ),
        )
        .in_file(current));
    }
    if let Some(nvm) = &opts.nvm_dir {
        opts.fs
            .create_dir_all(nvm)
            .map_err(|e| Error::from(e).in_file(nvm))?;
    }
    let db = super::open::open_with(&path, opts.clone(), Some(Arc::clone(snapshots)))?;
    // What the family holds durably: its tables, and (under `nvm_memtable = immutable`)
    // the NVM memtables mapped back, which hold the merged memtables' entries (a family
    // has no WAL, so the only memtables of a family just opened are NVM ones).
    let flushed_seq = {
        let sv = db.versions.super_version.load();
        let tables = sv.version.all_tables().map(|(_, t)| t.largest_seq);
        let nvm = sv
            .nvm
            .iter()
            .chain(sv.imms.iter())
            .chain(std::iter::once(&sv.mem))
            .filter(|m| m.is_nvm() && !m.is_empty())
            .map(|m| m.max_seq());
        tables.chain(nvm).max().unwrap_or(0)
    };
    Ok(Arc::new(Family {
        id: record.id,
        record: record.clone(),
        options_text: parking_lot::Mutex::new(record.options.clone()),
        db,
        opts,
        dropped: AtomicBool::new(false),
        flushed_seq,
    }))
}

/// Closes a family's engine: no flush (its updates since its last flush are in the
/// database's WALs, which are kept for them), background work stopped, LOCK released.
pub(super) fn close_family(f: &Family) -> Result<()> {
    let inner = &f.db;
    if !inner.gate.shut() {
        inner.gate.wait_finished();
        return Ok(());
    }
    inner.jobs.done_cv.notify_all();
    inner.wake_next_writer();
    inner.gate.wait_idle();
    let closed = inner.shutdown();
    inner.gate.finish();
    closed
}

/// Deletes what family directory `path` holds (tables, manifest, its NVM pool, LOCK, its
/// tables in its SSD directories) and the directory. Its NVM and SSD directories are read
/// from the OPTIONS file it holds (a dropped family's record is gone from the manifest).
pub(super) fn reclaim_family_dir(main: &Options, path: &Path) -> Result<()> {
    let fs = &main.fs;
    let mut opts = Options::default();
    let newest_options = fs
        .list_dir(path)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| {
            match crate::filename::parse_file_name(&n) {
                Some((crate::filename::FileType::Options, num)) => Some(num),
                _ => None,
            }
            .map(|num| (num, n))
        })
        .max();
    if let Some((_, name)) = newest_options
        && let Ok(text) = fs.read_all(&path.join(name))
        && let Ok(text) = String::from_utf8(text)
        && let Ok(o) = Options::from_text(&text)
    {
        opts = o;
    }
    opts.keep_internal(main.clone());
    destroy_family(path, &opts)
}

/// Deletes a family's files: its directory (`destroy_db`: tables, manifest, NVM pool,
/// LOCK), then its tables in its SSD directories (`<ssd_path>/cf-<id>`, which `opts`
/// names already) and those directories, then its NVM directory if empty.
fn destroy_family(path: &Path, opts: &Options) -> Result<()> {
    let fs = &opts.fs;
    let destroyed = super::destroy_db(path, opts);
    for unit in &opts.ssd_paths {
        for name in fs.list_dir(unit).unwrap_or_default() {
            if name == crate::filename::UNIT_FILE || super::repair::is_engine_file(&name) {
                let _ = fs.remove_file(&unit.join(&name));
            }
        }
        let _ = fs.remove_dir(unit);
    }
    if let Some(nvm) = &opts.nvm_dir {
        let _ = fs.remove_dir(nvm);
    }
    destroyed
}

/// Wakes the writer at the front of the queue when dropped: declared before the guard of
/// the `write` lock, it runs after that guard is released (locals drop in reverse order),
/// as every release of the lock must be followed by (see `DbInner::wake_next_writer`).
struct WakeOnDrop<'a>(&'a DbInner);

impl Drop for WakeOnDrop<'_> {
    fn drop(&mut self) {
        self.0.wake_next_writer();
    }
}

fn dropped_error(name: &str) -> Error {
    Error::InvalidArgument(format!("column family {name:?} was dropped"))
}

impl DbInner {
    /// The engine a call on `cf` goes to: this one for the default family, the family's
    /// own otherwise.
    ///
    /// # Errors
    /// `InvalidArgument` if the family was dropped or is not this database's.
    pub(super) fn target<'a>(&'a self, cf: &'a ColumnFamily) -> Result<&'a DbInner> {
        let Some(f) = cf.family() else {
            return Ok(self);
        };
        if f.dropped.load(Ordering::Acquire) {
            return Err(dropped_error(&f.record.name));
        }
        match self.families.read().live.get(&f.id) {
            Some(live) if Arc::ptr_eq(live, f) => Ok(&f.db),
            _ => Err(Error::InvalidArgument(format!(
                "column family {:?} is not a family of {}",
                f.record.name,
                self.path.display()
            ))),
        }
    }

    /// Checks that every update of `batch` belongs to the default family or a live one.
    ///
    /// # Errors
    /// `InvalidArgument` naming an id that is no live family's.
    pub(super) fn check_families(&self, batch: &crate::batch::WriteBatch) -> Result<()> {
        let fams = self.families.read();
        match batch
            .families()
            .into_iter()
            .find(|id| !fams.live.contains_key(id))
        {
            Some(id) => Err(Error::InvalidArgument(format!(
                "the batch writes to column family {id}, which does not exist (dropped?)"
            ))),
            None => Ok(()),
        }
    }

    /// The live families that updates of `batch` belong to. Updates of a family dropped
    /// since the batch was checked (`check_families`) are logged and ignored (recovery
    /// ignores them too).
    pub(super) fn families_of(&self, batch: &crate::batch::WriteBatch) -> Vec<Arc<Family>> {
        let ids = batch.families();
        let fams = self.families.read();
        ids.iter()
            .filter_map(|id| fams.live.get(id).cloned())
            .collect()
    }

    /// Waits until every live family has flushed its immutable memtables (before this
    /// engine's flush makes a WAL obsolete: the families' updates in it must be in their
    /// tables first; the switch of this engine's memtable switched theirs).
    pub(super) fn flush_families(&self) -> Result<()> {
        // A switch under way finishes first (its families' memtables are switched with it).
        drop(self.family_switch.lock());
        let fams: Vec<Arc<Family>> = self.families.read().live.values().cloned().collect();
        for f in fams {
            if let Err(e) = f.db.wait_for_flushes()
                && !f.dropped.load(Ordering::Acquire)
            {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The live column families.
    pub(super) fn live_families(&self) -> Vec<Arc<Family>> {
        self.families.read().live.values().cloned().collect()
    }

    /// Switches the memtable of every live family that holds anything (with this engine's
    /// own switch, under its `write` lock).
    pub(super) fn switch_families(&self) -> Result<()> {
        let fams: Vec<Arc<Family>> = self.families.read().live.values().cloned().collect();
        for f in fams {
            f.db.switch_family_memtable()?;
        }
        Ok(())
    }

    /// Whether a live family's active memtable holds anything.
    pub(super) fn families_hold_updates(&self) -> bool {
        self.families
            .read()
            .live
            .values()
            .any(|f| !f.db.versions.super_version.load().mem.is_empty())
    }

    /// In a column family's engine, before its flush writes: the WALs of the database that
    /// hold the memtable's updates are durable (they are closed: the memtable was switched
    /// with the database's), so that a power cut cannot keep the family's updates in a
    /// table and lose the same batches' updates of other families with the WAL's tail.
    pub(super) fn sync_parent_wals(&self) -> Result<()> {
        match self.parent.get().and_then(std::sync::Weak::upgrade) {
            Some(p) => p.sync_closed_wals(u64::MAX),
            None => Ok(()),
        }
    }

    /// `Db::create_column_family`.
    pub(super) fn create_family(
        self: &Arc<Self>,
        name: &str,
        opts: &Options,
    ) -> Result<ColumnFamily> {
        if name.is_empty() || name == DEFAULT_COLUMN_FAMILY {
            return Err(Error::InvalidArgument(format!(
                "{name:?} cannot name a new column family"
            )));
        }
        if self.opts.nvm_memtable.in_place() {
            return Err(mutable_nvm_memtable_error());
        }
        // Every return releases the `write` lock: the writers queued meanwhile are woken
        // then (`woken` is dropped after `ws`).
        let woken = WakeOnDrop(self);
        let ws = self.writes.write.lock();
        self.wait_for_inserts(&ws);
        let id = {
            let fams = self.families.read();
            if fams.live.values().any(|f| f.record.name == name) {
                return Err(Error::InvalidArgument(format!(
                    "column family {name:?} exists already"
                )));
            }
            fams.next_id.max(1)
        };
        let record = FamilyRecord {
            id,
            name: name.to_string(),
            options: opts.to_text(),
        };
        // Its engine first (a crash before the record leaves a directory the next open
        // does not name, and deletes), then the record.
        let f = match open_family(
            &self.path,
            &self.opts,
            &record,
            &self.versions.snapshots,
            true,
        ) {
            Ok(f) => f,
            Err(e) => {
                // Whatever the failed open left (the id is used again next time).
                let dir = self.path.join(family_dir_name(id));
                if self.fs.exists(&dir) {
                    let _ = reclaim_family_dir(&self.opts, &dir);
                }
                return Err(e);
            }
        };
        let _ = f.db.parent.set(Arc::downgrade(self));
        // The new directories' entries are durable before the record names them: a power
        // cut must not keep the record and lose `cf-<id>` (an open then stops on the named
        // family's missing CURRENT) or its NVM directory (its pool).
        let mut parents = vec![self.path.clone()];
        parents.extend(
            f.opts
                .nvm_dir
                .as_ref()
                .and_then(|d| d.parent())
                .map(Path::to_path_buf),
        );
        parents.extend(
            f.opts
                .ssd_paths
                .iter()
                .filter_map(|d| d.parent())
                .map(Path::to_path_buf),
        );
        for p in &parents {
            if let Err(e) = self.fs.sync_dir(p) {
                let _ = close_family(&f);
                let _ = reclaim_family_dir(&self.opts, &f.db.path);
                return Err(Error::from(e).in_file(p));
            }
        }
        // Its sequence numbers continue the database's.
        {
            let last = self.versions.last_seq.load(Ordering::Acquire);
            let mut fws = f.db.writes.write.lock();
            fws.last_assigned = fws.last_assigned.max(last);
            f.db.versions.last_seq.fetch_max(last, Ordering::AcqRel);
        }
        let edit = VersionEdit {
            families_added: vec![record],
            ..Default::default()
        };
        if let Err(e) = self.log_and_apply(edit, None, &[]) {
            // The record may be in the manifest all the same (its sync failed, or the
            // error came after the write): the directory stays, and the next open keeps
            // it (the family then exists, empty) or deletes it, as the manifest says.
            let _ = close_family(&f);
            return Err(e);
        }
        {
            let mut fams = self.families.write();
            fams.live.insert(id, Arc::clone(&f));
            fams.next_id = id + 1;
        }
        self.has_families.store(true, Ordering::Release);
        drop(ws);
        drop(woken);
        self.info_log
            .log(format_args!("column family {name:?} created (id {id})"));
        Ok(Families::handle(&f))
    }

    /// `Db::drop_column_family`.
    pub(super) fn drop_family(&self, cf: &ColumnFamily) -> Result<()> {
        let Some(f) = cf.family() else {
            return Err(Error::InvalidArgument(
                "the default column family cannot be dropped".to_string(),
            ));
        };
        self.target(cf)?;
        {
            let _woken = WakeOnDrop(self);
            let ws = self.writes.write.lock();
            self.wait_for_inserts(&ws);
            if f.dropped.load(Ordering::Acquire) {
                return Err(dropped_error(&f.record.name));
            }
            let edit = VersionEdit {
                families_dropped: vec![f.id],
                ..Default::default()
            };
            self.log_and_apply(edit, None, &[])?;
            f.dropped.store(true, Ordering::Release);
            let mut fams = self.families.write();
            fams.live.remove(&f.id);
            self.has_families
                .store(!fams.live.is_empty(), Ordering::Release);
        }
        self.info_log.log(format_args!(
            "column family {:?} dropped (id {})",
            f.record.name, f.id
        ));
        // The record is durable: what is left is reclaimed (a crash here leaves a
        // directory the next open deletes).
        close_family(f)?;
        destroy_family(&f.db.path, &f.opts)
    }

    /// `Db::set_column_family_options`.
    pub(super) fn set_family_options(
        &self,
        cf: &ColumnFamily,
        changes: &[(&str, &str)],
    ) -> Result<()> {
        let Some(f) = cf.family() else {
            return Err(Error::InvalidArgument(
                "the default family's options are the database's: pass them to Db::open"
                    .to_string(),
            ));
        };
        self.target(cf)?;
        if let Some((name, _)) = changes
            .iter()
            .find(|(name, _)| !CHANGEABLE_FAMILY_OPTIONS.contains(name))
        {
            return Err(Error::InvalidArgument(format!(
                "the option {name} of column family {:?} cannot be changed after its \
                 creation (changeable: {})",
                f.record.name,
                CHANGEABLE_FAMILY_OPTIONS.join(", ")
            )));
        }
        let _woken = WakeOnDrop(self);
        let ws = self.writes.write.lock();
        let mut o = Options::from_text(&f.options_text.lock())?;
        for (name, value) in changes {
            o.set(name, value)?;
        }
        let text = o.to_text();
        // The options the family would open with must validate.
        family_options(&self.opts, f.id, &text)?.validate()?;
        let record = FamilyRecord {
            options: text.clone(),
            ..f.record.clone()
        };
        let edit = VersionEdit {
            families_added: vec![record],
            ..Default::default()
        };
        self.log_and_apply(edit, None, &[])?;
        *f.options_text.lock() = text;
        drop(ws);
        Ok(())
    }

    /// `Db::column_family`.
    pub(super) fn family_handle(&self, name: &str) -> Option<ColumnFamily> {
        if name == DEFAULT_COLUMN_FAMILY {
            return Some(ColumnFamily::default_family());
        }
        self.families
            .read()
            .live
            .values()
            .find(|f| f.record.name == name)
            .map(Families::handle)
    }

    /// `Db::column_families`: every live family's name, the default first, then by id.
    pub(super) fn family_names(&self) -> Vec<String> {
        std::iter::once(DEFAULT_COLUMN_FAMILY.to_string())
            .chain(
                self.families
                    .read()
                    .live
                    .values()
                    .map(|f| f.record.name.clone()),
            )
            .collect()
    }

    /// Closes every family (after this engine's background work stopped; without a WAL,
    /// `close` flushed them with its own memtable first: their updates are nowhere else).
    pub(super) fn close_families(&self) -> Result<()> {
        let fams: Vec<Arc<Family>> = self.families.read().live.values().cloned().collect();
        let mut first = None;
        for f in fams {
            if let Err(e) = close_family(&f) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl super::Db {
    /// Creates column family `name` with `opts` (the options that make sense per family:
    /// memtable size, block size, compression, bloom bits, compaction, NVM tables, matrix
    /// L0 and its NVM pool capacity; see `docs/column-families.md`), and records them:
    /// later opens use them without the caller repeating them.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty name, `"default"`, a name in use, options that do
    /// not validate or ask for an NVM memtable, or a database with NVM memtables; I/O
    /// errors; `Closed`.
    pub fn create_column_family(&self, name: &str, opts: &Options) -> Result<ColumnFamily> {
        let _pass = self.inner.enter()?;
        self.inner.create_family(name, opts)
    }

    /// Drops column family `cf`: the manifest stops naming it (durably), then its files
    /// (tables, manifest, NVM pool) are deleted. Its handles fail from then on.
    ///
    /// # Errors
    /// `InvalidArgument` for the default family or a family dropped already; I/O errors.
    pub fn drop_column_family(&self, cf: &ColumnFamily) -> Result<()> {
        let _pass = self.inner.enter()?;
        self.inner.drop_family(cf)
    }

    /// Changes options of column family `cf` (`name`, `value` as `Options::set` takes
    /// them), records them in the manifest, and uses them from the next open on. Only
    /// [`CHANGEABLE_FAMILY_OPTIONS`] may change (memtable and block sizes, compression, bloom bits,
    /// compaction shape and triggers...); the others (the levels, the NVM tier, the SSD
    /// directories, the block format) are refused, as is the default family (its options
    /// are the ones given to `Db::open`).
    ///
    /// # Errors
    /// `InvalidArgument` for the default family, a dropped family, an option not in
    /// [`CHANGEABLE_FAMILY_OPTIONS`] or a value that does not parse or validate; I/O errors.
    pub fn set_column_family_options(
        &self,
        cf: &ColumnFamily,
        changes: &[(&str, &str)],
    ) -> Result<()> {
        let _pass = self.inner.enter()?;
        self.inner.set_family_options(cf, changes)
    }

    /// The handle of the live column family `name` (`"default"` included).
    #[must_use]
    pub fn column_family(&self, name: &str) -> Option<ColumnFamily> {
        self.inner.family_handle(name)
    }

    /// The handle of the default column family.
    #[must_use]
    pub fn default_column_family(&self) -> ColumnFamily {
        ColumnFamily::default_family()
    }

    /// The names of the live column families, `"default"` first.
    #[must_use]
    pub fn column_families(&self) -> Vec<String> {
        self.inner.family_names()
    }

    /// The names of the column families of the database in `path` (closed), `"default"`
    /// first, read from its manifest (`opts` gives the file system and comparator).
    ///
    /// # Errors
    /// As the manifest's recovery: `Io` (no database there), `Corruption`.
    pub fn list_column_families(path: impl AsRef<Path>, opts: &Options) -> Result<Vec<String>> {
        let r = crate::manifest::recover_manifest(
            opts.fs.as_ref(),
            path.as_ref(),
            opts.num_levels,
            opts.recovery_mode,
            &opts.key_order(),
        )?;
        Ok(std::iter::once(DEFAULT_COLUMN_FAMILY.to_string())
            .chain(r.families.into_values().map(|f| f.name))
            .collect())
    }

    /// Puts `key` = `value` in family `cf`.
    ///
    /// # Errors
    /// As [`super::Db::put`]; `InvalidArgument` for a dropped family.
    pub fn put_cf(&self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = crate::batch::WriteBatch::new();
        b.put_cf(cf, key, value);
        self.write(&crate::options::WriteOptions::default(), b)
    }

    /// Deletes `key` in family `cf`.
    ///
    /// # Errors
    /// As [`super::Db::put_cf`].
    pub fn delete_cf(&self, cf: &ColumnFamily, key: &[u8]) -> Result<()> {
        let mut b = crate::batch::WriteBatch::new();
        b.delete_cf(cf, key);
        self.write(&crate::options::WriteOptions::default(), b)
    }

    /// The value of `key` in family `cf`.
    ///
    /// # Errors
    /// As [`super::Db::get`]; `InvalidArgument` for a dropped family.
    pub fn get_cf(&self, cf: &ColumnFamily, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, &ReadOptions::default(), key)
    }

    /// [`super::Db::get_cf`] with `opts` (a snapshot of this database reads every family
    /// at the same point).
    ///
    /// # Errors
    /// As [`super::Db::get_cf`].
    pub fn get_cf_opt(
        &self,
        cf: &ColumnFamily,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let _pass = self.inner.enter()?;
        let t = self.inner.target(cf)?;
        let _fpass = t.enter()?;
        t.get(opts, key)
    }

    /// The values of `keys` in family `cf`, read from one view of it.
    ///
    /// # Errors
    /// As [`super::Db::get_cf`].
    pub fn multi_get_cf<I>(
        &self,
        cf: &ColumnFamily,
        opts: &ReadOptions,
        keys: I,
    ) -> Result<Vec<Option<Vec<u8>>>>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let _pass = self.inner.enter()?;
        let t = self.inner.target(cf)?;
        let _fpass = t.enter()?;
        let (sv, seq) = t.read_view(opts);
        keys.into_iter()
            .map(|k| t.get_in(&sv, seq, opts, k.as_ref()))
            .collect()
    }

    /// A cursor over family `cf` (see [`super::Db::cursor`]).
    ///
    /// # Errors
    /// As [`super::Db::cursor`]; `InvalidArgument` for a dropped family.
    pub fn cursor_cf(&self, cf: &ColumnFamily, opts: &ReadOptions) -> Result<DbIterator> {
        let _pass = self.inner.enter()?;
        self.inner.target(cf)?.cursor(opts)
    }

    /// A property of family `cf` (the names of [`super::Db::property`]); `None` for an
    /// unknown name or a dropped family.
    #[must_use]
    pub fn property_cf(&self, cf: &ColumnFamily, name: &str) -> Option<String> {
        self.inner.target(cf).ok()?.property(name)
    }

    /// Flushes family `cf`'s memtable to its tables and waits. Memtables are switched
    /// together (as RocksDB's `atomic_flush`), so this flushes every family that holds
    /// updates, the default included.
    ///
    /// # Errors
    /// As [`super::Db::flush`]; `InvalidArgument` for a dropped family.
    pub fn flush_cf(&self, cf: &ColumnFamily) -> Result<()> {
        let _pass = self.inner.enter()?;
        // Memtables are switched together (see `docs/column-families.md`): this flushes
        // every family.
        self.inner.target(cf)?.flush()
    }

    /// Compacts the range `[begin, end]` of family `cf` (see
    /// [`super::Db::compact_range`]).
    ///
    /// # Errors
    /// As [`super::Db::compact_range`]; `InvalidArgument` for a dropped family.
    pub fn compact_range_cf(
        &self,
        cf: &ColumnFamily,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        let _pass = self.inner.enter()?;
        let t = self.inner.target(cf)?;
        let _fpass = t.enter()?;
        t.compact_range(begin, end)
    }

    /// Runs up to `max_jobs` due background jobs of family `cf` on the calling thread
    /// (see [`super::Db::run_background_work`]).
    ///
    /// # Errors
    /// As [`super::Db::run_background_work`].
    pub fn run_background_work_cf(&self, cf: &ColumnFamily, max_jobs: usize) -> Result<usize> {
        let _pass = self.inner.enter()?;
        let t = self.inner.target(cf)?;
        let _fpass = t.enter()?;
        t.run_background_work(max_jobs)
    }

    /// The statistics of family `cf`.
    ///
    /// # Errors
    /// `InvalidArgument` for a dropped family.
    pub fn stats_cf(&self, cf: &ColumnFamily) -> Result<crate::stats::Stats> {
        Ok(self.inner.target(cf)?.stats())
    }
}
