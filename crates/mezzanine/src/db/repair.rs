//! `repair_db` (LevelDB's `RepairDB`): rebuilds a database whose MANIFEST, `CURRENT`,
//! tables or logs are damaged from whatever it can still read.
//!
//! Owns: [`repair_db`], its [`RepairReport`] (with a [`FamilyRepair`] per column family),
//! and the steps it runs, one function each. Each engine (the database's, which is the
//! default column family, and each column family's in `cf-<id>`) is repaired by the same
//! steps, run by one `Repair` per engine directory (`repair_locked`, `repair_family`):
//! 0. Column families (`plan_families`): every `MANIFEST-*` of the database is read record
//!    by record, as far as it decodes, for the families added and dropped
//!    (`read_family_records`). A `cf-<id>` directory whose family was dropped is deleted at
//!    the end (step 7), not resurrected; every other is repaired, under the name and
//!    options its newest record gives, else the name `recovered-cf-<id>` (logged and
//!    reported) and the options of its newest readable `OPTIONS-*` (else the database's).
//!    A family a manifest names whose directory is gone is reported, not recovered.
//! 1. Take the LOCK; read what is left of the last manifest (its edits up to the first one
//!    that does not read or apply), which tells where the NVM objects are and the database's
//!    identity (`read_old_manifest`).
//! 2. Open the NVM pool (when the options name one and it exists) with the objects that
//!    manifest lists (`open_storage`).
//! 3. Check every SST of every SSD directory: each block is read and its checksum verified.
//!    A whole table is kept where it is; a table with bad blocks has its readable entries
//!    rewritten into a new table; a table whose footer or index cannot be read is dropped
//!    (`scan_ssts`).
//! 4. Copy every NVM table, matrix row and NVM memtable the manifest names into new SSTs, as
//!    far as each reads (`convert_nvm`).
//! 5. Replay every WAL (files and NVM logs) into new SSTs, each up to its first damaged
//!    record (`replay_logs`). Only the default family's updates go to its tables; a column
//!    family's (batch records of kinds 4/5) are handed to that family's repair, which
//!    writes them into its own new SSTs (`replay_family`): the database's WAL is the only
//!    log of every family. Updates of a family not repaired (dropped, no directory) are
//!    counted and reported, not replayed. Each column family is then repaired (steps 1 to
//!    7 in its directory, with its options), before the database's own steps 6 and 7.
//! 6. Place the tables in levels so that reads stay correct by sequence number
//!    (`place_tables`), write a fresh manifest with the code that writes a new database's
//!    first one (`write_new_manifest`), the database's recording the column families
//!    (their records, and the next id above every id seen), and point `CURRENT` at it. Its
//!    last sequence is above every family's tables'.
//! 7. Move what was not used, and the old manifests and logs, to `lost/` (the NVM pool, when
//!    something in it could not be read, to `lost/` in its own directory).
//!
//! Invariants: nothing the database needs is removed before the new manifest is durable; a
//! file that could not be used is moved, never deleted (a dropped family's directory is
//! deleted, after the new manifest that no longer names it, as an open would). The column
//! families are repaired before the database's manifest is rewritten, so a repair that
//! fails midway leaves the old manifest, the logs, and families that open with it (the
//! next open replays only the log updates above what a family's tables hold; the next
//! repair merges what two tables hold twice). The new manifest lists no NVM object
//! (everything that was in NVM is in SSTs), so the next open starts with the whole pool free.
//!
//! Thread-safety: runs on the caller's thread; the LOCK (the database's, and each column
//! family's while it is repaired) keeps every handle out meanwhile.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mezz_env::FileSystem;
use mezz_format::SeqNo;
use mezz_format::ikey::{parse_internal_key, user_key};
use mezz_format::iter::InternalIterator;
use mezz_format::log::{LogRead, LogReader};

use crate::batch::WriteBatch;
use crate::compaction::SstSink;
use crate::compaction::sink::TableSink;
use crate::error::{Error, Result};
use crate::filename::{self, FileType, POOL_FILE};
use crate::info_log::InfoLog;
use crate::manifest::{FamilyRecord, VersionEdit, set_current, write_new_manifest};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::placement::JobPlacement;
use crate::stats::StatsCollector;
use crate::storage::Storage;
use crate::storage::nvm::{NvmObject, NvmObjectKind, NvmTier};
use crate::table::cache::TableCache;
use crate::table::{TableLocation, TableMeta, TableReadOptions};
use crate::version::{Version, VersionBuilder};
use crate::wal::{ReplayEnd, replay_wal, replay_wal_bytes};

/// The updates of one engine's family in a run of log batches, gathered in memtables,
/// each written into new SSTs when full.
struct Replay {
    mem: Arc<MemTable>,
    cap: usize,
    new_tables: Vec<u64>,
    batches: u64,
    entries: u64,
    /// Entries of the batches that belong to other families.
    others: u64,
    max_seq: SeqNo,
}

impl Replay {
    fn new(r: &Repair<'_>) -> Replay {
        let cap = r.opts.memtable_capacity();
        Replay {
            mem: Arc::new(MemTable::new(0, cap, r.storage.order().clone())),
            cap,
            new_tables: Vec::new(),
            batches: 0,
            entries: 0,
            others: 0,
            max_seq: 0,
        }
    }

    /// Adds the updates of `batch` that belong to `r`'s family.
    fn add(&mut self, r: &mut Repair<'_>, batch: &WriteBatch) -> Result<()> {
        let n = batch.len() as u64;
        if n == 0 {
            return Ok(());
        }
        self.batches += 1;
        // Every update of the batch took a sequence number, whatever its family.
        self.max_seq = self.max_seq.max(batch.sequence().saturating_add(n - 1));
        let mine = batch.iter().filter(|op| op.family == r.family).count() as u64;
        self.others += n - mine;
        if mine == 0 {
            return Ok(());
        }
        let need = crate::memtable::room_needed(batch.len(), batch.approximate_size());
        if self.mem.room() < need || self.mem.approximate_memory_usage() >= r.opts.write_buffer_size
        {
            self.new_tables.extend(r.flush_memtable(&self.mem)?);
            self.mem = Arc::new(MemTable::new(
                0,
                self.cap.max(need.saturating_mul(2)),
                r.storage.order().clone(),
            ));
        }
        self.mem.insert_family(batch, r.family)?;
        self.entries += mine;
        Ok(())
    }

    /// Writes what is left; returns the new tables, the batches, the entries of the
    /// family and those of others.
    fn finish(mut self, r: &mut Repair<'_>) -> Result<(Vec<u64>, u64, u64, u64)> {
        if !self.mem.is_empty() {
            self.new_tables.extend(r.flush_memtable(&self.mem)?);
        }
        r.last_seq = r.last_seq.max(self.max_seq);
        Ok((self.new_tables, self.batches, self.entries, self.others))
    }
}

/// The name of the subdirectory what a repair could not use is moved to.
pub const LOST_DIR: &str = "lost";

/// What [`repair_db`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// SSTs kept as they were (every block read and verified): their numbers.
    pub tables_kept: Vec<u64>,
    /// Tables whose readable entries were written into new SSTs: SSTs with bad blocks, and
    /// every NVM table, matrix row and NVM memtable.
    pub tables_rewritten: Vec<RewrittenTable>,
    /// Tables, logs and other objects nothing could be kept of, with the reason.
    pub dropped: Vec<Dropped>,
    /// The logs replayed (files and NVM logs), oldest first.
    pub logs_replayed: Vec<ReplayedLog>,
    /// What the last manifest still told (or why it told nothing).
    pub manifest: String,
    /// Files moved to `lost/` (old manifests and logs, tables that could not be used, the
    /// NVM pool if something in it could not be read).
    pub moved_to_lost: Vec<PathBuf>,
    /// Tables per level in the new manifest.
    pub tables_per_level: Vec<usize>,
    /// The new manifest's number.
    pub new_manifest: u64,
    /// The largest sequence number found (the new manifest's last sequence).
    pub max_sequence: SeqNo,
    /// Entries known to be lost (damaged blocks of tables whose properties still read,
    /// entries of NVM tables that did not read); entries of dropped tables and of the
    /// damaged parts of logs are not counted (their number is not known).
    pub entries_lost: u64,
    /// Bytes known to be lost: dropped tables and logs, bad blocks, dropped log tails.
    pub bytes_lost: u64,
    /// The column families (other than the default) repaired, by id: each one's engine
    /// (in `cf-<id>`) repaired as the default family's, with its updates from the
    /// database's logs.
    pub families: Vec<FamilyRepair>,
    /// Column families whose drop record a manifest holds: their directories (and tables
    /// and NVM pools) were deleted, not resurrected. Their ids.
    pub families_reclaimed: Vec<u32>,
    /// Entries of the logs that belong to column families not recovered (dropped, or
    /// with no directory), by family id: not replayed (each is also in `dropped`).
    pub family_entries_dropped: BTreeMap<u32, u64>,
}

/// What [`repair_db`] did with one column family other than the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyRepair {
    /// The family's id (its directory is `cf-<id>`).
    pub id: u32,
    /// Its name in the new manifest.
    pub name: String,
    /// Whether no readable manifest named it: then `name` is `recovered-cf-<id>` (or,
    /// if that name is taken, with a `-<n>` appended).
    pub name_recovered: bool,
    /// Where its options came from: `"manifest"`, its directory's newest readable
    /// `OPTIONS-*` file, or the database's options (when none of its own read).
    pub options_from: String,
    /// Its engine's repair: its tables, its updates from the database's logs (as one
    /// replayed "log"), its new manifest in `cf-<id>`.
    pub report: RepairReport,
}

/// A table whose readable entries were rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewrittenTable {
    /// What it was (`"sst 12 in <dir>"`, `"NVM table 40"`, `"matrix row 3"`, `"NVM memtable 9"`).
    pub source: String,
    /// The new SSTs holding its entries.
    pub new_tables: Vec<u64>,
    /// Entries kept.
    pub entries_kept: u64,
    /// Entries lost, where the table records how many it had.
    pub entries_lost: Option<u64>,
    /// Bytes of the damaged part, where known.
    pub bytes_lost: u64,
    /// What was wrong (empty if the whole table read).
    pub damage: String,
}

/// Something nothing could be kept of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// What it was.
    pub what: String,
    /// Why it was dropped.
    pub reason: String,
    /// Its size in bytes, where known.
    pub bytes: Option<u64>,
}

/// A log replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayedLog {
    /// What it was (`"log 7"`, `"NVM log 7"`).
    pub source: String,
    /// Write batches replayed.
    pub batches: u64,
    /// Entries (puts and deletes) replayed.
    pub entries: u64,
    /// The SSTs written from it.
    pub new_tables: Vec<u64>,
    /// Bytes after the first damaged record (not replayed), 0 if it read to its end.
    pub bytes_dropped: u64,
    /// Where and why the replay stopped early, if it did.
    pub stopped: Option<String>,
    /// Entries of other column families (passed on to their repairs, or dropped: see
    /// [`RepairReport::family_entries_dropped`]); not in `entries`.
    pub family_entries: u64,
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "manifest: {}", self.manifest)?;
        writeln!(
            f,
            "tables kept: {} {:?}",
            self.tables_kept.len(),
            self.tables_kept
        )?;
        writeln!(f, "tables rewritten: {}", self.tables_rewritten.len())?;
        for t in &self.tables_rewritten {
            let lost = t
                .entries_lost
                .map_or_else(|| "unknown".to_string(), |n| n.to_string());
            write!(
                f,
                "  {}: {} entries kept in {:?}, {lost} entries lost, {} bytes lost",
                t.source, t.entries_kept, t.new_tables, t.bytes_lost
            )?;
            if !t.damage.is_empty() {
                write!(f, " ({})", t.damage)?;
            }
            writeln!(f)?;
        }
        writeln!(f, "logs replayed: {}", self.logs_replayed.len())?;
        for l in &self.logs_replayed {
            write!(
                f,
                "  {}: {} batches, {} entries into {:?}, {} bytes dropped",
                l.source, l.batches, l.entries, l.new_tables, l.bytes_dropped
            )?;
            if l.family_entries > 0 {
                write!(f, ", {} entries of column families", l.family_entries)?;
            }
            if let Some(s) = &l.stopped {
                write!(f, " (stopped: {s})")?;
            }
            writeln!(f)?;
        }
        writeln!(f, "dropped: {}", self.dropped.len())?;
        for d in &self.dropped {
            let bytes = d
                .bytes
                .map_or_else(|| "unknown".to_string(), |n| n.to_string());
            writeln!(f, "  {}: {} ({bytes} bytes)", d.what, d.reason)?;
        }
        writeln!(f, "moved to lost/: {}", self.moved_to_lost.len())?;
        for p in &self.moved_to_lost {
            writeln!(f, "  {}", p.display())?;
        }
        writeln!(
            f,
            "new manifest {}: tables per level {:?}",
            self.new_manifest, self.tables_per_level
        )?;
        writeln!(f, "max sequence: {}", self.max_sequence)?;
        write!(
            f,
            "lost: {} entries, {} bytes (where known)",
            self.entries_lost, self.bytes_lost
        )?;
        if self.families.is_empty()
            && self.families_reclaimed.is_empty()
            && self.family_entries_dropped.is_empty()
        {
            return Ok(());
        }
        write!(f, "\ncolumn families: {}", self.families.len())?;
        for fam in &self.families {
            let name = if fam.name_recovered {
                " (no manifest names it: name recovered)"
            } else {
                ""
            };
            write!(
                f,
                "\n  {} (id {}){name}, options from {}:",
                fam.name, fam.id, fam.options_from
            )?;
            for line in fam.report.to_string().lines() {
                write!(f, "\n    {line}")?;
            }
        }
        if !self.families_reclaimed.is_empty() {
            write!(
                f,
                "\ndropped column families deleted: {:?}",
                self.families_reclaimed
            )?;
        }
        for (id, n) in &self.family_entries_dropped {
            write!(
                f,
                "\nentries of column family {id} in the logs not replayed (no such family): {n}"
            )?;
        }
        Ok(())
    }
}

/// Rebuilds the database in `dir` from what can still be read (LevelDB's `RepairDB`): see
/// the module documentation for the steps and `docs/repair.md` for what it can and cannot
/// recover. Logs the report into the info log. The database opens after it returns `Ok`.
///
/// # Errors
/// `InvalidArgument` for bad options, a missing directory or one holding no table, log,
/// manifest or column family (and no NVM pool), or a column family no options can open;
/// `Locked` while the database is open; `Io` when a new table, a manifest or `CURRENT`
/// cannot be written (the damaged database is then left as it was, apart from new table
/// files the next repair or open removes, and column families repaired already, which the
/// old manifest opens as they are).
pub fn repair_db(dir: &Path, opts: &Options) -> Result<RepairReport> {
    opts.validate()?;
    let fs = Arc::clone(&opts.fs);
    if !fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "{} does not exist: nothing to repair",
            dir.display()
        )));
    }
    let lock_path = filename::lock_file(dir);
    let lock = fs.lock(&lock_path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked(dir.to_path_buf())
        } else {
            Error::from(e).in_file(&lock_path)
        }
    })?;
    let info_log = InfoLog::open(fs.as_ref(), dir, opts.info_log.clone());
    info_log.log(format_args!("repairing {}", dir.display()));
    let result = repair_locked(dir, opts, &info_log);
    match &result {
        Ok(report) => info_log.log(format_args!("repair finished:\n{report}")),
        Err(e) => info_log.log(format_args!("repair failed: {e}")),
    }
    drop(lock);
    result
}

/// The whole repair, under the LOCK: the default family's engine up to its logs (steps 1
/// to 5), whose replay hands each column family its updates; then each column family's
/// engine, repaired as the default family's (`repair_family`); then the default family's
/// new manifest, which records the families (step 6), and the clean-up (step 7), dropped
/// families' directories last.
fn repair_locked(dir: &Path, opts: &Options, info_log: &InfoLog) -> Result<RepairReport> {
    let fs = Arc::clone(&opts.fs);
    let names = fs.list_dir(dir).map_err(|e| Error::from(e).in_file(dir))?;
    let plan = plan_families(fs.as_ref(), dir, opts, &names)?;
    for line in &plan.notes {
        info_log.log(format_args!("{line}"));
    }
    let mut main = Repair::new(dir, opts, 0, !plan.dirs.is_empty())?;
    main.family_ids = plan.live.iter().map(|f| f.record.id).collect();
    main.scan_ssts()?;
    main.convert_nvm()?;
    main.replay_logs()?;
    let mut records = BTreeMap::new();
    for f in plan.live {
        let id = f.record.id;
        let batches = main.family_batches.remove(&id).unwrap_or_default();
        let report = repair_family(dir, &f.opts, id, batches)?;
        main.last_seq = main.last_seq.max(report.max_sequence);
        info_log.log(format_args!(
            "column family {:?} (id {id}) repaired: {} tables, max sequence {}",
            f.record.name,
            report.tables_per_level.iter().sum::<usize>(),
            report.max_sequence
        ));
        main.report.families.push(FamilyRepair {
            id,
            name: f.record.name.clone(),
            name_recovered: f.name_recovered,
            options_from: f.options_from,
            report,
        });
        records.insert(id, f.record);
    }
    // Ids are never reused: the next is above every id a manifest, a directory or a log
    // names.
    let highest_logged = main
        .report
        .family_entries_dropped
        .keys()
        .copied()
        .max()
        .unwrap_or(0);
    let next_id = plan.next_id.max(highest_logged.saturating_add(1));
    main.family_edit = crate::manifest::family_snapshot_edit(&records, next_id);
    // The families deleted below stay dropped for a later repair, should their deletion
    // not finish.
    if let Some(edit) = main.family_edit.as_mut() {
        for (id, _) in &plan.reclaim {
            if !edit.families_dropped.contains(id) {
                edit.families_dropped.push(*id);
            }
        }
    }
    for (id, n) in &main.report.family_entries_dropped {
        main.report.dropped.push(Dropped {
            what: format!("{n} entries of column family {id} in the logs"),
            reason: "no such family (dropped, or its directory is missing)".into(),
            bytes: None,
        });
    }
    main.report.dropped.extend(plan.dropped);
    let placed = main.place_tables()?;
    main.install(placed)?;
    main.move_to_lost();
    // The new manifest, durable, names none of them: their directories go (as an open
    // would delete them).
    for (id, path) in plan.reclaim {
        match super::family::reclaim_family_dir(opts, &path) {
            Ok(()) => {
                info_log.log(format_args!(
                    "dropped column family {id}: {} deleted",
                    path.display()
                ));
                main.report.families_reclaimed.push(id);
            }
            Err(e) => main.report.dropped.push(Dropped {
                what: format!("dropped column family {id} ({})", path.display()),
                reason: format!("could not be deleted (the next open deletes it): {e}"),
                bytes: None,
            }),
        }
    }
    Ok(main.report)
}

/// Repairs the engine of column family `id` of the database in `dir` (in `cf-<id>`, with
/// its options `opts`, as `family_options` makes them) as the default family's, its
/// updates from the database's logs being `batches`; writes its new manifest.
fn repair_family(
    dir: &Path,
    opts: &Options,
    id: u32,
    batches: Vec<WriteBatch>,
) -> Result<RepairReport> {
    let path = dir.join(super::family::family_dir_name(id));
    let fs = Arc::clone(&opts.fs);
    let lock_path = filename::lock_file(&path);
    let lock = fs.lock(&lock_path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked(path.clone())
        } else {
            Error::from(e).in_file(&lock_path)
        }
    })?;
    let mut r = Repair::new(&path, opts, id, true)?;
    r.scan_ssts()?;
    r.convert_nvm()?;
    // A family has no logs of its own: its updates are in the database's.
    r.replay_family(batches)?;
    let placed = r.place_tables()?;
    r.install(placed)?;
    r.move_to_lost();
    drop(lock);
    Ok(r.report)
}

/// A column family the repair keeps.
struct LiveFamily {
    /// Its record for the new manifest (name, options as text).
    record: FamilyRecord,
    name_recovered: bool,
    options_from: String,
    /// Its engine's options (`family_options` of `record.options`).
    opts: Options,
}

/// What to do with the column families: which to repair, which to delete.
struct FamilyPlan {
    /// The family directories found.
    dirs: Vec<u32>,
    live: Vec<LiveFamily>,
    /// Dropped families whose directories are still there: deleted at the end.
    reclaim: Vec<(u32, PathBuf)>,
    /// Families a manifest names whose directory is missing (not recovered).
    dropped: Vec<Dropped>,
    /// Above every family id seen.
    next_id: u32,
    /// For the info log.
    notes: Vec<String>,
}

/// The numbers of the `MANIFEST-*` files among `names`, oldest first.
fn manifest_numbers(names: &[String]) -> Vec<u64> {
    let mut files: Vec<u64> = names
        .iter()
        .filter_map(|n| match filename::parse_file_name(n) {
            Some((FileType::Manifest, number)) => Some(number),
            _ => None,
        })
        .collect();
    files.sort_unstable();
    files
}

/// The family records every manifest of `dir` holds: each `MANIFEST-*` file, oldest
/// first, read record by record up to its first that does not read or decode; the newest
/// record of each family added, every family dropped.
fn read_family_records(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
) -> (BTreeMap<u32, FamilyRecord>, BTreeSet<u32>) {
    let files = manifest_numbers(names);
    let (mut added, mut dropped) = (BTreeMap::new(), BTreeSet::new());
    for number in files {
        let Ok(file) = fs.open_read(&filename::manifest_file(dir, number)) else {
            continue;
        };
        let mut reader = LogReader::new(file);
        while let LogRead::Record { data, offset } = reader.read_record() {
            let Ok(edit) = VersionEdit::decode(&data, offset) else {
                break;
            };
            for f in edit.families_added {
                added.insert(f.id, f);
            }
            dropped.extend(edit.families_dropped);
        }
    }
    (added, dropped)
}

/// The newest `OPTIONS-*` file of family directory `path` (of family `id`) that reads and
/// parses: the options as the family was created with, as text (the file holds them as its
/// engine ran them, its SSD and NVM directories under `cf-<id>`: those are taken back to
/// the database's). Returns the text and the file's name.
fn options_in_dir(fs: &dyn FileSystem, path: &Path, id: u32) -> Option<(String, String)> {
    let mut files: Vec<(u64, String)> = fs
        .list_dir(path)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| match filename::parse_file_name(&n) {
            Some((FileType::Options, num)) => Some((num, n)),
            _ => None,
        })
        .collect();
    files.sort_unstable();
    let sub = super::family::family_dir_name(id);
    let parent = |p: &Path| -> PathBuf {
        match (p.file_name(), p.parent()) {
            (Some(n), Some(up)) if n == sub.as_str() => up.to_path_buf(),
            _ => p.to_path_buf(),
        }
    };
    files.into_iter().rev().find_map(|(_, name)| {
        let text = String::from_utf8(fs.read_all(&path.join(&name)).ok()?).ok()?;
        let mut o = Options::from_text(&text).ok()?;
        o.ssd_paths = o.ssd_paths.iter().map(|p| parent(p)).collect();
        o.nvm_dir = o.nvm_dir.as_deref().map(parent);
        o.use_wal = Options::default().use_wal;
        Some((o.to_text(), name))
    })
}

/// Decides what becomes of each column family (step 0): a directory `cf-<id>` whose family
/// a manifest records as dropped is deleted; any other is repaired, under the name and
/// options the newest record gives, else a recovered name (`recovered-cf-<id>`) and the
/// options of its newest readable `OPTIONS-*` file, else the database's. A family a
/// manifest names without a directory is reported and not recovered.
fn plan_families(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    names: &[String],
) -> Result<FamilyPlan> {
    let (added, dropped_ids) = read_family_records(fs, dir, names);
    let mut dirs: Vec<u32> = names
        .iter()
        .filter_map(|n| super::family::parse_family_dir(n))
        .filter(|id| fs.exists(&dir.join(super::family::family_dir_name(*id))))
        .collect();
    dirs.sort_unstable();
    let highest = added
        .keys()
        .chain(dropped_ids.iter())
        .chain(dirs.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let mut plan = FamilyPlan {
        dirs: dirs.clone(),
        live: Vec::new(),
        reclaim: Vec::new(),
        dropped: Vec::new(),
        next_id: highest.saturating_add(1),
        notes: Vec::new(),
    };
    let mut taken: BTreeSet<String> = added
        .iter()
        .filter(|(id, _)| !dropped_ids.contains(id))
        .map(|(_, r)| r.name.clone())
        .collect();
    for id in dirs {
        let path = dir.join(super::family::family_dir_name(id));
        if dropped_ids.contains(&id) {
            plan.notes.push(format!(
                "column family {id} was dropped (a manifest records it): {} is deleted",
                path.display()
            ));
            plan.reclaim.push((id, path));
            continue;
        }
        let (name, name_recovered) = match added.get(&id) {
            Some(r) => (r.name.clone(), false),
            None => {
                let base = format!("recovered-cf-{id}");
                let mut name = base.clone();
                let mut n = 1;
                while taken.contains(&name) || name == super::family::DEFAULT_COLUMN_FAMILY {
                    name = format!("{base}-{n}");
                    n += 1;
                }
                taken.insert(name.clone());
                plan.notes.push(format!(
                    "column family {id}: no readable manifest names it; recovered as {name:?}"
                ));
                (name, true)
            }
        };
        // Its options: the record's, else its directory's, else the database's; the first
        // its engine can run with.
        let mut candidates: Vec<(String, String)> = Vec::new();
        if let Some(r) = added.get(&id) {
            candidates.push((r.options.clone(), "manifest".into()));
        }
        if let Some((text, file)) = options_in_dir(fs, &path, id) {
            candidates.push((
                text,
                format!("{}/{file}", super::family::family_dir_name(id)),
            ));
        }
        let mut db_opts = opts.clone();
        // (A family cannot have an NVM memtable.)
        db_opts.nvm_memtable = crate::options::NvmMemtable::Off;
        candidates.push((
            db_opts.to_text(),
            "the database's options (none of its own read)".into(),
        ));
        let chosen = candidates.into_iter().find_map(|(text, from)| {
            let o = super::family::family_options(opts, id, &text).ok()?;
            o.validate().ok()?;
            Some((text, from, o))
        });
        let Some((text, options_from, fam_opts)) = chosen else {
            return Err(Error::InvalidArgument(format!(
                "column family {name:?} (id {id}, {}): no options its engine can run with \
                 (neither its recorded ones, nor its OPTIONS files, nor the database's): \
                 nothing repaired",
                path.display()
            )));
        };
        if options_from != "manifest" {
            plan.notes.push(format!(
                "column family {name:?} (id {id}): options from {options_from}"
            ));
        }
        plan.live.push(LiveFamily {
            record: FamilyRecord {
                id,
                name,
                options: text,
            },
            name_recovered,
            options_from,
            opts: fam_opts,
        });
    }
    for (id, r) in &added {
        if !dropped_ids.contains(id) && !plan.dirs.contains(id) {
            plan.dropped.push(Dropped {
                what: format!("column family {:?} (id {id})", r.name),
                reason: format!(
                    "a manifest names it, but its directory {} is missing (dropped?): not \
                     recovered",
                    super::family::family_dir_name(*id)
                ),
                bytes: None,
            });
        }
    }
    Ok(plan)
}

/// What is left of the last manifest.
struct OldManifest {
    version: Version,
    last_sequence: SeqNo,
    next_file_number: u64,
    /// The manifest files in the directory (moved to `lost/` at the end).
    files: Vec<u64>,
    /// For the report.
    summary: String,
    /// Every edit read: the manifest names every NVM object the database had.
    complete: bool,
}

/// New SSTs are written to the database directory: a further SSD directory may have no
/// `UNIT` file yet, and a table there would then make the next open refuse it.
#[derive(Debug)]
struct DbDirOnly;

impl JobPlacement for DbDirOnly {
    fn place(&mut self, _table_id: u64) -> u32 {
        0
    }
}

/// One table of the new version, before placement.
struct Kept {
    meta: TableMeta,
    /// Written by this repair (removed again if a later step supersedes it).
    new: bool,
}

struct Repair<'a> {
    dir: PathBuf,
    opts: &'a Options,
    fs: Arc<dyn FileSystem>,
    next_file: AtomicU64,
    old: OldManifest,
    db_id: [u8; 16],
    storage: Arc<Storage>,
    cache: TableCache,
    /// Why the NVM pool could not be opened, if it could not.
    pool_error: Option<String>,
    /// Why the NVM pool is moved to `lost/` at the end, if it is (empty: some object in
    /// it did not read whole, see the report).
    pool_lost: Option<String>,
    kept: Vec<Kept>,
    /// Files to move to `lost/` once the new manifest is durable.
    to_lose: Vec<PathBuf>,
    last_seq: SeqNo,
    report: RepairReport,
    /// The column family whose engine this is (0: the default family's, the database's).
    family: u32,
    /// The column families whose updates in the logs are kept (handed to their repairs).
    family_ids: BTreeSet<u32>,
    /// Their updates from the logs, by family, oldest first.
    family_batches: BTreeMap<u32, Vec<WriteBatch>>,
    /// The edit recording the column families, appended to the new manifest.
    family_edit: Option<VersionEdit>,
}

impl<'a> Repair<'a> {
    /// The repair of the engine in `dir` (the database's, or column family `family`'s),
    /// with its options. `allow_empty`: an engine with nothing to rebuild from is no error
    /// (a column family that holds nothing; a database whose column families hold
    /// everything).
    fn new(dir: &Path, opts: &'a Options, family: u32, allow_empty: bool) -> Result<Repair<'a>> {
        let fs = Arc::clone(&opts.fs);
        let names = fs.list_dir(dir).map_err(|e| Error::from(e).in_file(dir))?;
        // The largest file number in use (info logs carry a time, not a file number).
        let numbered = |n: &str| match filename::parse_file_name(n) {
            Some((
                FileType::Sst
                | FileType::Wal
                | FileType::Manifest
                | FileType::Options
                | FileType::Temp,
                number,
            )) => number,
            _ => 0,
        };
        let mut max_number = names.iter().map(|n| numbered(n)).max().unwrap_or(0);
        let usable = |n: &str| {
            matches!(
                filename::parse_file_name(n),
                Some((FileType::Sst | FileType::Wal | FileType::Manifest, _))
            )
        };
        let mut found_any = names.iter().any(|n| usable(n));
        for d in &opts.ssd_paths {
            for n in fs.list_dir(d).unwrap_or_default() {
                max_number = max_number.max(numbered(&n));
                found_any |= usable(&n);
            }
        }
        if !found_any && !allow_empty && !pool_file_exists(opts) {
            // As LevelDB: nothing to rebuild from is an error, not an empty database. (An
            // NVM pool is something: it is looked at, and kept in `lost/` if it cannot be
            // used.)
            return Err(Error::InvalidArgument(format!(
                "{}: repair found no tables, logs or manifests",
                dir.display()
            )));
        }
        let old = read_old_manifest(fs.as_ref(), dir, &names);
        for (_, t) in old.version.all_tables() {
            max_number = max_number.max(t.id);
        }
        for id in old.version.nvm_objects.keys() {
            max_number = max_number.max(*id);
        }
        let next_file = AtomicU64::new(old.next_file_number.max(max_number + 1));
        let db_id = match old.version.db_id {
            Some(id) => id,
            None => database_identity(fs.as_ref(), dir, opts)?,
        };
        let (storage, pool_error) = open_storage(dir, opts, &old.version, db_id, &next_file);
        let mut pool_lost = pool_error.clone();
        if pool_lost.is_none() && !old.complete && pool_file_exists(opts) {
            // Objects written after the damage (or, with no manifest, every object) cannot
            // be told from free space: the pool is kept in `lost/`, not reused.
            pool_lost = Some(
                "the manifest that records where its objects are is missing or damaged: \
                 objects it did not name could not be found"
                    .into(),
            );
        }
        let cache = TableCache::new(
            Arc::clone(&storage),
            opts.max_open_files,
            0,
            Arc::new(StatsCollector::default()),
        );
        let last_seq = old.last_sequence;
        let report = RepairReport {
            manifest: old.summary.clone(),
            ..RepairReport::default()
        };
        Ok(Repair {
            dir: dir.to_path_buf(),
            opts,
            fs,
            next_file,
            old,
            db_id,
            storage,
            cache,
            pool_error,
            pool_lost,
            kept: Vec::new(),
            to_lose: Vec::new(),
            last_seq,
            report,
            family,
            family_ids: BTreeSet::new(),
            family_batches: BTreeMap::new(),
            family_edit: None,
        })
    }

    fn alloc(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::Relaxed)
    }

    /// A sink writing new SSTs into the database directory.
    fn sink<'s>(&'s self, new_file: &'s (dyn Fn() -> u64 + Sync)) -> SstSink<'s> {
        SstSink::new(&self.storage, self.opts, 0, new_file, Box::new(DbDirOnly))
    }

    /// Step 3: every SST of every SSD directory (a further directory that cannot be listed
    /// is reported and skipped).
    fn scan_ssts(&mut self) -> Result<()> {
        let mut tables: Vec<(u64, u32)> = Vec::new();
        for path_id in 0..u32::try_from(self.storage.dir_count()).unwrap_or(u32::MAX) {
            let dir = self.storage.dir(path_id)?.to_path_buf();
            let names = match self.fs.list_dir(&dir) {
                Ok(names) => names,
                // A column family's directory in a further SSD directory is made when it
                // first writes there.
                Err(_) if path_id > 0 && self.family != 0 && !self.fs.exists(&dir) => continue,
                Err(e) if path_id > 0 => {
                    self.report.dropped.push(Dropped {
                        what: format!("SSD directory {}", dir.display()),
                        reason: format!("cannot be listed: {e}"),
                        bytes: None,
                    });
                    continue;
                }
                Err(e) => return Err(Error::from(e).in_file(&dir)),
            };
            for name in names {
                if let Some((FileType::Sst, id)) = filename::parse_file_name(&name) {
                    tables.push((id, path_id));
                }
            }
        }
        tables.sort_unstable();
        for (id, path_id) in tables {
            self.scan_sst(id, path_id)?;
        }
        Ok(())
    }

    fn scan_sst(&mut self, id: u64, path_id: u32) -> Result<()> {
        use mezz_format::sst::TableReader;
        let path = self
            .storage
            .table_path(id, TableLocation::Sst { path_id })?;
        let size = self.fs.file_size(&path).ok();
        let order = self.storage.order().clone();
        let opened = self.storage.open_sst(id, path_id).and_then(|(_, file)| {
            let len = file.size();
            TableReader::open(file, len, id, None, &order).map_err(|e| e.in_file(&path).into())
        });
        let reader = match opened {
            Ok(r) => r,
            Err(e) => {
                self.drop_file(&path, format!("sst {id}"), e.to_string(), size);
                return Ok(());
            }
        };
        let what = format!("sst {id} in {}", self.storage.dir(path_id)?.display());
        match reader.verify() {
            Ok(n) if n > 0 => {
                let meta = TableMeta::from_properties(
                    id,
                    TableLocation::Sst { path_id },
                    reader.properties(),
                );
                self.last_seq = self.last_seq.max(meta.largest_seq);
                self.report.tables_kept.push(id);
                self.kept.push(Kept { meta, new: false });
                Ok(())
            }
            Ok(_) => {
                self.drop_file(&path, what, "holds no entries".into(), size);
                Ok(())
            }
            Err(damage) => {
                // Keep what reads: every block that verifies, rewritten (LevelDB's
                // `RepairTable`).
                let new_file = || self.alloc();
                let mut sink = self.sink(&new_file);
                let salvaged = reader.salvage(&mut |k, v| {
                    sink.add(k, v).map_err(|e| mezz_format::Error::Corruption {
                        file: None,
                        offset: 0,
                        detail: format!("writing the rewritten table: {e}").into(),
                    })
                });
                let salvaged = match salvaged {
                    Ok(s) => s,
                    Err(e) => {
                        sink.abandon();
                        return Err(e.into());
                    }
                };
                let written = sink.finish()?;
                let bad: Vec<String> = salvaged
                    .bad_blocks
                    .iter()
                    .map(|(off, why)| format!("block at {off}: {why}"))
                    .collect();
                let damage = if bad.is_empty() {
                    damage.to_string()
                } else {
                    bad.join("; ")
                };
                let lost = salvaged.expected_entries.saturating_sub(salvaged.entries);
                self.report.entries_lost += lost;
                self.report.bytes_lost += salvaged.bad_bytes;
                self.to_lose.push(path);
                if written.is_empty() {
                    self.report.dropped.push(Dropped {
                        what,
                        reason: format!("no readable entries: {damage}"),
                        bytes: size,
                    });
                    return Ok(());
                }
                let new_tables = self.keep_written(written);
                self.report.tables_rewritten.push(RewrittenTable {
                    source: what,
                    new_tables,
                    entries_kept: salvaged.entries,
                    entries_lost: Some(lost),
                    bytes_lost: salvaged.bad_bytes,
                    damage,
                });
                Ok(())
            }
        }
    }

    /// Records the tables a sink wrote as kept (new); returns their numbers.
    fn keep_written(&mut self, written: Vec<crate::compaction::WrittenTable>) -> Vec<u64> {
        let mut ids = Vec::with_capacity(written.len());
        for w in written {
            ids.push(w.meta.id);
            self.last_seq = self.last_seq.max(w.meta.largest_seq);
            self.kept.push(Kept {
                meta: w.meta,
                new: true,
            });
        }
        ids
    }

    /// Marks `path` as unusable: reported as dropped, moved to `lost/` at the end.
    fn drop_file(&mut self, path: &Path, what: String, reason: String, bytes: Option<u64>) {
        self.report.bytes_lost += bytes.unwrap_or(0);
        self.report.dropped.push(Dropped {
            what,
            reason,
            bytes,
        });
        self.to_lose.push(path.to_path_buf());
    }

    /// Writes the entries of `it` (in internal-key order) into new SSTs, up to its end or
    /// its first error; returns the tables, the entries written and the error.
    fn copy_entries(
        &self,
        it: &mut dyn InternalIterator<Error>,
    ) -> Result<(Vec<crate::compaction::WrittenTable>, u64, Option<Error>)> {
        let new_file = || self.alloc();
        let mut sink = self.sink(&new_file);
        let mut n = 0u64;
        let mut prev: Option<Vec<u8>> = None;
        let order = self.storage.order();
        let copied = (|| -> Result<()> {
            it.seek_to_first();
            while it.valid() {
                let k = it.key();
                let in_order = prev
                    .as_deref()
                    .is_none_or(|p| order.compare_internal(p, k) == std::cmp::Ordering::Less);
                if parse_internal_key(k).is_some() && in_order {
                    sink.add(k, it.value())?;
                    n += 1;
                    prev = Some(k.to_vec());
                }
                if let Some(size) = sink.current_bytes()
                    && size >= self.opts.target_file_size
                {
                    sink.finish_table()?;
                }
                it.next();
            }
            Ok(())
        })();
        if let Err(e) = copied {
            sink.abandon();
            return Err(e);
        }
        let err = it.status().err();
        let written = sink.finish()?;
        Ok((written, n, err))
    }

    /// Step 4: the NVM tables, matrix rows and NVM memtables the old manifest names.
    fn convert_nvm(&mut self) -> Result<()> {
        let nvm_tables: Vec<(usize, Arc<TableMeta>)> = self
            .old
            .version
            .all_tables()
            .filter(|(_, t)| !matches!(t.location, TableLocation::Sst { .. }))
            .map(|(l, t)| (l, Arc::clone(t)))
            .collect();
        let memtables: Vec<NvmObject> = self
            .old
            .version
            .nvm_objects
            .values()
            .filter(|o| o.kind == NvmObjectKind::Memtable)
            .copied()
            .collect();
        let tier = self.storage.nvm().cloned();
        for (_, t) in nvm_tables {
            let what = match t.location {
                TableLocation::Row { row, .. } => format!("matrix row {row} (table {})", t.id),
                _ => format!("NVM table {}", t.id),
            };
            if let Some(why) = &self.pool_error {
                self.report.dropped.push(Dropped {
                    what,
                    reason: format!("the NVM pool could not be opened: {why}"),
                    bytes: Some(t.size),
                });
                self.report.bytes_lost += t.size;
                continue;
            }
            let table = match self.cache.open(&t) {
                Ok(table) => table,
                Err(e) => {
                    self.drop_nvm(what, e.to_string(), t.size);
                    self.report.bytes_lost += t.size;
                    continue;
                }
            };
            let mut it = table.iter(&TableReadOptions {
                fill_cache: false,
                verify_checksums: true,
                whole_table_scan: true,
            });
            let (written, n, err) = self.copy_entries(it.as_mut())?;
            drop(it);
            self.record_conversion(what, written, n, Some(t.num_entries), err);
        }
        for o in memtables {
            let what = format!("NVM memtable {}", o.id);
            let Some(tier) = tier.as_ref().filter(|_| self.pool_error.is_none()) else {
                self.report.dropped.push(Dropped {
                    what,
                    reason: format!(
                        "the NVM pool could not be opened: {}",
                        self.pool_error.clone().unwrap_or_default()
                    ),
                    bytes: Some(o.len),
                });
                continue;
            };
            let list =
                match crate::memtable::nvm_list::NvmList::recover(tier, o, self.storage.order()) {
                    Ok(list) => list,
                    Err(e) => {
                        self.drop_nvm(what, e.to_string(), o.len);
                        continue;
                    }
                };
            let mem = Arc::new(MemTable::nvm(o.id, list));
            if mem.is_empty() {
                continue;
            }
            let mut it = mem.iter();
            let (written, n, err) = self.copy_entries(it.as_mut())?;
            drop(it);
            self.record_conversion(what, written, n, None, err);
        }
        Ok(())
    }

    /// Something in the NVM pool could not be read: the pool goes to `lost/`.
    fn nvm_damaged(&mut self) {
        if self.pool_lost.is_none() {
            self.pool_lost = Some(String::new());
        }
    }

    /// Reports NVM object `what` (of `bytes` bytes) dropped for `reason`: the pool is kept
    /// in `lost/`.
    fn drop_nvm(&mut self, what: String, reason: String, bytes: u64) {
        self.nvm_damaged();
        self.report.dropped.push(Dropped {
            what,
            reason,
            bytes: Some(bytes),
        });
    }

    fn record_conversion(
        &mut self,
        what: String,
        written: Vec<crate::compaction::WrittenTable>,
        n: u64,
        expected: Option<u64>,
        err: Option<Error>,
    ) {
        let lost = expected.map(|e| e.saturating_sub(n));
        if err.is_some() {
            self.nvm_damaged();
        }
        self.report.entries_lost += lost.unwrap_or(0);
        let damage = err.map(|e| e.to_string()).unwrap_or_default();
        if written.is_empty() {
            if !damage.is_empty() {
                self.report.dropped.push(Dropped {
                    what,
                    reason: format!("no readable entries: {damage}"),
                    bytes: None,
                });
            }
            return;
        }
        let new_tables = self.keep_written(written);
        self.report.tables_rewritten.push(RewrittenTable {
            source: what,
            new_tables,
            entries_kept: n,
            entries_lost: lost.or(if damage.is_empty() { Some(0) } else { None }),
            bytes_lost: 0,
            damage,
        });
    }

    /// Step 5: every WAL file of the directory and every NVM log the old manifest names,
    /// each replayed up to its first damaged record into new SSTs.
    fn replay_logs(&mut self) -> Result<()> {
        enum Source {
            File(u64),
            Nvm(NvmObject),
        }
        let mut logs: Vec<(u64, Source)> = Vec::new();
        // Every log file, whatever the old manifest's log number: an older log holds older
        // sequence numbers, which newer tables shadow.
        for n in self
            .fs
            .list_dir(&self.dir)
            .map_err(|e| Error::from(e).in_file(&self.dir))?
        {
            if let Some((FileType::Wal, number)) = filename::parse_file_name(&n) {
                logs.push((number, Source::File(number)));
            }
        }
        for o in self.old.version.nvm_objects.values() {
            if o.kind == NvmObjectKind::Wal {
                logs.push((o.id, Source::Nvm(*o)));
            }
        }
        logs.sort_by_key(|(n, _)| *n);
        for (_, src) in logs {
            // Batches are gathered first (a replay callback cannot borrow the repair).
            let mut pending: Vec<WriteBatch> = Vec::new();
            let (what, path, size, end) = match &src {
                Source::File(n) => {
                    let path = filename::wal_file(&self.dir, *n);
                    let bytes = self.fs.read_all(&path).ok();
                    let end = replay_wal(self.fs.as_ref(), &path, true, |b| {
                        pending.push(b);
                        Ok(())
                    });
                    self.to_lose.push(path.clone());
                    (format!("log {n}"), path, bytes, end)
                }
                Source::Nvm(o) => {
                    let what = format!("NVM log {}", o.id);
                    match self.storage.read_nvm_log(o) {
                        Ok((bytes, pool)) => {
                            let copy = bytes.clone();
                            let end = replay_wal_bytes(bytes, &pool, true, |b| {
                                pending.push(b);
                                Ok(())
                            });
                            (what, pool, Some(copy), end)
                        }
                        Err(e) => {
                            self.drop_nvm(what, e.to_string(), o.len);
                            continue;
                        }
                    }
                }
            };
            let mut replay = Replay::new(self);
            for b in pending {
                self.hand_to_families(&b);
                replay.add(self, &b)?;
            }
            let (new_tables, batches, entries, family_entries) = replay.finish(self)?;
            // Bytes from the damage to the last byte that is not zero (a mapped log's
            // reserved space is zeros, not lost data).
            let dropped_from = |offset: u64| -> u64 {
                let Some(bytes) = &size else { return 0 };
                let end = bytes
                    .iter()
                    .rposition(|&b| b != 0)
                    .map_or(0, |i| i as u64 + 1);
                end.saturating_sub(offset)
            };
            let (bytes_dropped, stopped) = match end {
                Ok(ReplayEnd::Complete | ReplayEnd::Unsealed) => (0, None),
                // Only zeros after the last record: a mapped log's reserved space.
                Ok(ReplayEnd::TornTail { offset, .. }) if dropped_from(offset) == 0 => (0, None),
                Ok(ReplayEnd::TornTail { offset, detail }) => (
                    dropped_from(offset),
                    Some(format!("damaged record at offset {offset}: {detail}")),
                ),
                Err(Error::Corruption { offset, detail, .. }) => (
                    dropped_from(offset),
                    Some(format!("damaged record at offset {offset}: {detail}")),
                ),
                Err(e) => {
                    let all = size.as_ref().map_or(0, |b| b.len() as u64);
                    (all, Some(format!("{e} (in {})", path.display())))
                }
            };
            if matches!(src, Source::Nvm(_)) && stopped.is_some() {
                self.nvm_damaged();
            }
            self.report.bytes_lost += bytes_dropped;
            self.report.logs_replayed.push(ReplayedLog {
                source: what,
                batches,
                entries,
                new_tables,
                bytes_dropped,
                stopped,
                family_entries,
            });
        }
        Ok(())
    }

    /// The updates of column families in `batch` (a batch of the database's logs): kept
    /// for the repair of each family being repaired, counted as dropped for the others.
    fn hand_to_families(&mut self, batch: &WriteBatch) {
        for id in batch.families() {
            if self.family_ids.contains(&id) {
                self.family_batches
                    .entry(id)
                    .or_default()
                    .push(batch.clone());
            } else {
                let n = batch.iter().filter(|op| op.family == id).count() as u64;
                *self.report.family_entries_dropped.entry(id).or_default() += n;
            }
        }
    }

    /// Step 5 of a column family's repair: its updates from the database's logs
    /// (`batches`, oldest first, each holding some) into new SSTs; reported as one
    /// replayed log.
    fn replay_family(&mut self, batches: Vec<WriteBatch>) -> Result<()> {
        if batches.is_empty() {
            return Ok(());
        }
        let mut replay = Replay::new(self);
        for b in &batches {
            replay.add(self, b)?;
        }
        // (The other families' updates in these batches are the database's repair's.)
        let (new_tables, batches, entries, _) = replay.finish(self)?;
        self.report.logs_replayed.push(ReplayedLog {
            source: "its updates in the database's logs".into(),
            batches,
            entries,
            new_tables,
            bytes_dropped: 0,
            stopped: None,
            family_entries: 0,
        });
        Ok(())
    }

    /// Writes a memtable replayed from a log into new SSTs; returns their numbers.
    fn flush_memtable(&mut self, mem: &Arc<MemTable>) -> Result<Vec<u64>> {
        if mem.is_empty() {
            return Ok(Vec::new());
        }
        let mut it = mem.iter();
        let (written, _, err) = self.copy_entries(it.as_mut())?;
        if let Some(e) = err {
            return Err(e);
        }
        Ok(self.keep_written(written))
    }

    /// Step 6, first half: the level of every kept table (see [`place`]); when no
    /// placement keeps reads correct, the tables below L0 are merged into one sorted run
    /// in the last level.
    fn place_tables(&mut self) -> Result<Vec<(usize, TableMeta)>> {
        let metas: Vec<TableMeta> = self.kept.iter().map(|k| k.meta.clone()).collect();
        let max_l0 = self.opts.level0_slowdown_trigger.saturating_sub(1).max(1);
        if let Some(placed) = place(&metas, self.opts.num_levels, max_l0, self.storage.order()) {
            return Ok(placed);
        }
        let (l0, rest) = split_l0(&metas, max_l0);
        let mut placed: Vec<(usize, TableMeta)> = l0.into_iter().map(|t| (0, t)).collect();
        // Merge the rest: every entry, in internal-key order, the newest version of each key.
        let mut children: Vec<Box<dyn InternalIterator<Error>>> = Vec::new();
        for t in &rest {
            let table = self.cache.open(t)?;
            children.push(table.iter(&TableReadOptions {
                fill_cache: false,
                verify_checksums: true,
                whole_table_scan: true,
            }));
        }
        let order = self.storage.order().clone();
        let mut merged = crate::iter::merging_iterator(children, &order);
        let mut newest = NewestOnly {
            inner: merged.as_mut(),
            last_user_key: None,
            order,
        };
        let (written, _, err) = self.copy_entries(&mut newest)?;
        if let Some(e) = err {
            return Err(e);
        }
        drop(merged);
        let last = self.opts.num_levels.saturating_sub(1).max(1);
        for w in written {
            placed.push((last, w.meta));
        }
        // The tables this repair wrote and just merged are of no use any more.
        let merged_ids: std::collections::HashSet<u64> = rest.iter().map(|t| t.id).collect();
        for k in &self.kept {
            if k.new && merged_ids.contains(&k.meta.id) {
                self.storage.remove_table(k.meta.id, k.meta.location);
            }
        }
        self.report.manifest.push_str(
            "; the tables below L0 overlap in key and sequence ranges: merged into one sorted \
             run in the last level",
        );
        Ok(placed)
    }

    /// Step 6, second half: the new manifest and `CURRENT`.
    fn install(&mut self, placed: Vec<(usize, TableMeta)>) -> Result<()> {
        // New tables are written to the database directory only.
        self.storage.sync_dir(0)?;
        let mut per_level = vec![0usize; self.opts.num_levels];
        let mut edit = VersionEdit {
            db_id: Some(self.db_id),
            ..VersionEdit::default()
        };
        for (level, meta) in placed {
            if let Some(n) = per_level.get_mut(level) {
                *n += 1;
            }
            self.last_seq = self.last_seq.max(meta.largest_seq);
            edit.new_tables.push((level, meta));
        }
        let version = Version::new(self.opts.num_levels)
            .with_order(self.storage.order().clone())
            .apply(&edit)?;
        version.check_invariants()?;
        let log_number = self.alloc();
        let manifest_number = self.alloc();
        let current_tmp = self.alloc();
        let next_file = self.next_file.load(Ordering::Relaxed);
        let mut manifest = write_new_manifest(
            self.fs.as_ref(),
            &self.dir,
            manifest_number,
            &version,
            log_number,
            next_file,
            self.last_seq,
        )?;
        if let Some(fe) = self.family_edit.take() {
            manifest.append(&fe)?;
        }
        drop(manifest);
        set_current(self.fs.as_ref(), &self.dir, manifest_number, current_tmp)?;
        for n in &self.old.files {
            self.to_lose.push(filename::manifest_file(&self.dir, *n));
        }
        self.report.tables_per_level = per_level;
        self.report.new_manifest = manifest_number;
        self.report.max_sequence = self.last_seq;
        Ok(())
    }

    /// Step 7: moves what was not used to `lost/` (best effort: a file that cannot be moved
    /// stays where it is, which the next open handles as a leftover).
    fn move_to_lost(&mut self) {
        let lost = self.dir.join(LOST_DIR);
        let moved_any = !self.to_lose.is_empty() && self.fs.create_dir_all(&lost).is_ok();
        if moved_any {
            for from in std::mem::take(&mut self.to_lose) {
                let Some(name) = from.file_name() else {
                    continue;
                };
                // A file of a further SSD directory is moved to that directory's `lost/`
                // (a rename stays on its file system).
                let target_dir = match from.parent() {
                    Some(p) if p != self.dir => p.join(LOST_DIR),
                    _ => lost.clone(),
                };
                if target_dir != lost && self.fs.create_dir_all(&target_dir).is_err() {
                    continue;
                }
                let to = unique(self.fs.as_ref(), &target_dir.join(name));
                if self.fs.rename(&from, &to).is_ok() {
                    self.report.moved_to_lost.push(to);
                }
            }
            let _ = self.fs.sync_dir(&self.dir);
        }
        if let (Some(why), Some(nvm_dir)) = (&self.pool_lost, &self.opts.nvm_dir) {
            let pool = nvm_dir.join(POOL_FILE);
            let lost = nvm_dir.join(LOST_DIR);
            if pool.exists() && std::fs::create_dir_all(&lost).is_ok() {
                self.storage.close_nvm();
                let to = unique_std(&lost.join(POOL_FILE));
                if std::fs::rename(&pool, &to).is_ok() {
                    self.report.moved_to_lost.push(to);
                }
            }
            if !why.is_empty() {
                self.report.dropped.push(Dropped {
                    what: format!("NVM pool {}", pool.display()),
                    reason: why.clone(),
                    bytes: None,
                });
            }
        }
    }
}

/// Whether `name` (in a `lost/` directory) is a file a repair moved there: a name the
/// engine gives (a table, log, manifest, the NVM pool), possibly with the `.<n>` a move
/// adds when the name is taken already.
pub(crate) fn is_engine_file(name: &str) -> bool {
    let engine = |n: &str| n == POOL_FILE || filename::parse_file_name(n).is_some();
    engine(name)
        || name.rsplit_once('.').is_some_and(|(base, n)| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && engine(base)
        })
}

/// Whether the options name an NVM pool that exists.
fn pool_file_exists(opts: &Options) -> bool {
    opts.nvm_dir.as_ref().is_some_and(|d| {
        let pool = d.join(POOL_FILE);
        pool.exists() || opts.nvm_sim.as_ref().is_some_and(|s| s.exists(&pool))
    })
}

/// `path`, or `path.1`, `path.2`, ... if it exists already.
fn unique(fs: &dyn FileSystem, path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    let mut i = 1;
    while fs.exists(&p) {
        p = PathBuf::from(format!("{}.{i}", path.display()));
        i += 1;
    }
    p
}

fn unique_std(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    let mut i = 1;
    while p.exists() {
        p = PathBuf::from(format!("{}.{i}", path.display()));
        i += 1;
    }
    p
}

/// An iterator that yields only the first (newest) entry of each user key of `inner`, for
/// the forward scan of a merge; backward moves are `inner`'s, unfiltered (not used).
struct NewestOnly<'i> {
    inner: &'i mut dyn InternalIterator<Error>,
    last_user_key: Option<Vec<u8>>,
    order: mezz_format::KeyOrder,
}

impl NewestOnly<'_> {
    fn skip_older(&mut self) {
        while self.inner.valid() {
            let uk = user_key(self.inner.key());
            if !self
                .last_user_key
                .as_deref()
                .is_some_and(|l| self.order.same_user(l, uk))
            {
                return;
            }
            self.inner.next();
        }
    }
}

impl InternalIterator<Error> for NewestOnly<'_> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.last_user_key = None;
        self.inner.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.last_user_key = None;
        self.inner.seek(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
    }
    fn next(&mut self) {
        if self.inner.valid() {
            self.last_user_key = Some(user_key(self.inner.key()).to_vec());
            self.inner.next();
            self.skip_older();
        }
    }
    fn prev(&mut self) {
        self.inner.prev();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
    fn entry_ref(&self) -> Option<mezz_format::EntryRef> {
        None
    }
}

/// The newest tables whose sequence ranges are disjoint from one another and from every
/// other table's (so they can sit in L0, newest first, where reads take the first hit),
/// and the rest.
///
/// At most `max_l0` tables go to L0 (more would stall writes until compactions catch up).
fn split_l0(tables: &[TableMeta], max_l0: usize) -> (Vec<TableMeta>, Vec<TableMeta>) {
    let mut sorted: Vec<TableMeta> = tables.to_vec();
    sorted.sort_by(|a, b| b.largest_seq.cmp(&a.largest_seq).then(b.id.cmp(&a.id)));
    let mut k = 0;
    while k < sorted.len().min(max_l0) {
        let next_largest = sorted.get(k + 1).map(|t| t.largest_seq);
        let this_smallest = sorted.get(k).map_or(0, |t| t.smallest_seq);
        match next_largest {
            Some(n) if this_smallest <= n => break,
            _ => k += 1,
        }
    }
    let rest = sorted.split_off(k);
    (sorted, rest)
}

/// Levels for `tables` such that every read stays correct: L0 takes [`split_l0`]'s
/// tables; each other table goes one level below the deepest newer table whose user keys
/// it overlaps (so the newer version of a key is always found first), which needs every
/// such table to be wholly newer (its smallest sequence number above this one's largest).
/// `None` when two overlapping tables interleave in sequence numbers, or the levels run
/// out.
fn place(
    tables: &[TableMeta],
    num_levels: usize,
    max_l0: usize,
    order: &mezz_format::KeyOrder,
) -> Option<Vec<(usize, TableMeta)>> {
    let (l0, rest) = split_l0(tables, max_l0);
    let mut placed: Vec<(usize, TableMeta)> = l0.into_iter().map(|t| (0, t)).collect();
    let first_deeper = placed.len();
    for t in rest {
        let mut level = 1;
        for (l, p) in placed.iter().skip(first_deeper) {
            let overlap = order
                .compare_user(p.smallest_user_key(), t.largest_user_key())
                .is_le()
                && order
                    .compare_user(t.smallest_user_key(), p.largest_user_key())
                    .is_le();
            if !overlap {
                continue;
            }
            if p.smallest_seq <= t.largest_seq {
                return None;
            }
            level = level.max(l + 1);
        }
        if level >= num_levels {
            return None;
        }
        placed.push((level, t));
    }
    Some(placed)
}

/// Step 1: what is left of the last manifest: the one `CURRENT` names, else the newest
/// manifest file; its edits applied up to the first that does not read or apply.
fn read_old_manifest(fs: &dyn FileSystem, dir: &Path, names: &[String]) -> OldManifest {
    let files = manifest_numbers(names);
    let empty = || Version::new(crate::options::MAX_NUM_LEVELS);
    let from_current = fs
        .read_all(&filename::current_file(dir))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| match filename::parse_file_name(s.trim_end()) {
            Some((FileType::Manifest, n)) if files.contains(&n) => Some(n),
            _ => None,
        });
    let chosen = from_current.or_else(|| files.last().copied());
    let Some(number) = chosen else {
        return OldManifest {
            version: empty(),
            last_sequence: 0,
            next_file_number: 1,
            files,
            summary: "none found".into(),
            complete: false,
        };
    };
    let how = if from_current.is_some() {
        "named by CURRENT"
    } else {
        "the newest (CURRENT is missing or damaged)"
    };
    let path = filename::manifest_file(dir, number);
    let file = match fs.open_read(&path) {
        Ok(f) => f,
        Err(e) => {
            return OldManifest {
                version: empty(),
                last_sequence: 0,
                next_file_number: 1,
                files,
                summary: format!("manifest {number} ({how}) does not open: {e}"),
                complete: false,
            };
        }
    };
    let base = empty();
    let mut builder = VersionBuilder::new(&base);
    let mut reader = LogReader::new(file);
    let (mut edits, mut last_sequence, mut next_file_number) = (0u64, 0, 1);
    let mut stopped = None;
    loop {
        match reader.read_record() {
            LogRead::Eof => break,
            LogRead::Corrupt { offset, detail, .. } => {
                stopped = Some(format!("damaged record at offset {offset}: {detail}"));
                break;
            }
            LogRead::Record { data, offset } => {
                let applied = VersionEdit::decode(&data, offset).and_then(|edit| {
                    builder.apply(&edit)?;
                    Ok(edit)
                });
                match applied {
                    Ok(edit) => {
                        edits += 1;
                        last_sequence = edit.last_sequence.unwrap_or(last_sequence);
                        next_file_number = edit.next_file_number.unwrap_or(next_file_number);
                    }
                    Err(e) => {
                        stopped = Some(format!("edit at offset {offset}: {e}"));
                        break;
                    }
                }
            }
        }
    }
    let version = builder.finish();
    let complete = stopped.is_none() && edits > 0;
    let summary = match stopped {
        None => format!("manifest {number} ({how}): {edits} edits read"),
        Some(why) => format!("manifest {number} ({how}): {edits} edits read, then {why}"),
    };
    OldManifest {
        version,
        last_sequence,
        next_file_number,
        files,
        summary,
        complete,
    }
}

/// The database's identity when no manifest records it: `IDENTITY`, else a further SSD
/// directory's `UNIT` file, else the NVM pool's superblock, else a new one.
fn database_identity(fs: &dyn FileSystem, dir: &Path, opts: &Options) -> Result<[u8; 16]> {
    let parse = |bytes: &[u8]| -> Option<[u8; 16]> {
        let text = std::str::from_utf8(bytes).ok()?.trim_end();
        if text.len() != 32 {
            return None;
        }
        let mut id = [0u8; 16];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(id)
    };
    if let Some(id) = fs
        .read_all(&filename::identity_file(dir))
        .ok()
        .and_then(|b| parse(&b))
    {
        return Ok(id);
    }
    // `mezzanine unit <index> of database <id>` (docs/formats/unit.md).
    for d in &opts.ssd_paths {
        if let Some(id) = fs
            .read_all(&d.join(filename::UNIT_FILE))
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| t.rsplit_once(" of database ").map(|(_, id)| id.to_string()))
            .and_then(|id| parse(id.as_bytes()))
        {
            return Ok(id);
        }
    }
    if let Some(nvm) = &opts.nvm_dir
        && let Ok(bytes) = std::fs::read(nvm.join(POOL_FILE))
        && let Some(head) = bytes
            .get(..mezz_pmem::pool::SUPERBLOCK_LEN)
            .and_then(|b| <&[u8; mezz_pmem::pool::SUPERBLOCK_LEN]>::try_from(b).ok())
        && let Ok(sb) = mezz_pmem::pool::Superblock::decode(head)
    {
        return Ok(sb.db_id);
    }
    Ok(rand::random())
}

/// Step 2: the storage layer over the database's directories and, when the options name an
/// NVM directory holding a pool, the pool with the objects the old manifest lists (and the
/// matrix container, if it has one). Returns why the pool could not be opened, if it
/// could not.
fn open_storage(
    dir: &Path,
    opts: &Options,
    version: &Version,
    db_id: [u8; 16],
    next_file: &AtomicU64,
) -> (Arc<Storage>, Option<String>) {
    let live: Vec<NvmObject> = version.nvm_objects.values().copied().collect();
    let mut pool_lost = None;
    let mut tier = None;
    let mut matrix = None;
    if let Some(nvm_dir) = &opts.nvm_dir {
        if pool_file_exists(opts) {
            match NvmTier::open(opts, db_id, &live, false) {
                Ok(t) => {
                    let mut edit = VersionEdit::default();
                    let mut released = Vec::new();
                    let new_id = || next_file.fetch_add(1, Ordering::Relaxed);
                    let has_space = live.iter().any(|o| o.kind == NvmObjectKind::MatrixSpace);
                    if has_space {
                        // Opened for reading its rows only: with `matrix_bytes` 0 and no
                        // rows, `open_space` would release it, which is no harm here.
                        match crate::design::matrixkv::open_space(
                            &t,
                            opts,
                            version,
                            &mut edit,
                            &mut released,
                            &new_id,
                        ) {
                            Ok(m) => matrix = m,
                            Err(e) => pool_lost = Some(format!("matrix container: {e}")),
                        }
                    }
                    tier = Some(t);
                }
                Err(e) => pool_lost = Some(e.to_string()),
            }
        } else if !live.is_empty() {
            pool_lost = Some(format!(
                "the manifest lists {} NVM objects, but {} holds no pool",
                live.len(),
                nvm_dir.display()
            ));
        }
    } else if !live.is_empty() {
        pool_lost = Some(format!(
            "the manifest lists {} NVM objects, but the options name no nvm_dir",
            live.len()
        ));
    }
    let storage = Storage::new(
        Arc::clone(&opts.fs),
        dir.to_path_buf(),
        opts.ssd_paths.clone(),
        tier,
    )
    .with_matrix(matrix)
    .with_order(opts.key_order());
    (Arc::new(storage), pool_lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: u64, a: &str, b: &str, seqs: (u64, u64)) -> TableMeta {
        crate::version::tests::meta(id, a, b, seqs, 100)
    }

    #[test]
    fn newest_disjoint_tables_go_to_l0_and_the_rest_below_newer_overlapping_ones() {
        let tables = vec![
            meta(1, "a", "m", (1, 10)),
            meta(2, "n", "z", (5, 12)),
            meta(3, "a", "z", (20, 30)),
            meta(4, "a", "z", (31, 40)),
        ];
        let placed = place(&tables, 7, 10, &mezz_format::KeyOrder::default()).expect("a placement");
        let level = |id: u64| placed.iter().find(|(_, t)| t.id == id).map(|(l, _)| *l);
        assert_eq!(level(4), Some(0));
        assert_eq!(level(3), Some(0));
        assert_eq!(level(1), Some(1));
        assert_eq!(level(2), Some(1));
    }

    #[test]
    fn l0_takes_at_most_its_share_and_older_tables_go_below() {
        let tables: Vec<TableMeta> = (0..4)
            .map(|i| meta(i + 1, "a", "z", (10 * i + 1, 10 * i + 5)))
            .collect();
        let placed = place(&tables, 7, 2, &mezz_format::KeyOrder::default()).expect("a placement");
        let level = |id: u64| placed.iter().find(|(_, t)| t.id == id).map(|(l, _)| *l);
        assert_eq!(
            (level(4), level(3), level(2), level(1)),
            (Some(0), Some(0), Some(1), Some(2))
        );
        assert!(
            place(&tables, 2, 2, &mezz_format::KeyOrder::default()).is_none(),
            "the levels run out"
        );
    }

    #[test]
    fn overlapping_tables_with_interleaved_sequences_have_no_placement() {
        let tables = vec![
            meta(1, "a", "m", (1, 10)),
            meta(2, "c", "z", (5, 12)),
            meta(3, "x", "z", (2, 3)),
        ];
        assert!(place(&tables, 7, 10, &mezz_format::KeyOrder::default()).is_none());
        let deep = vec![
            meta(1, "a", "z", (1, 1)),
            meta(2, "a", "z", (2, 5)),
            meta(3, "a", "z", (3, 3)),
        ];
        // 2 and 3 interleave (3..3 inside 2..5): no placement.
        assert!(place(&deep, 7, 10, &mezz_format::KeyOrder::default()).is_none());
        // 1 and 2 share sequence numbers but no keys (one level); 3 lies below both.
        let levels = vec![
            meta(1, "a", "m", (1, 10)),
            meta(2, "n", "z", (5, 12)),
            meta(3, "a", "z", (0, 0)),
        ];
        let placed = place(&levels, 3, 10, &mezz_format::KeyOrder::default()).expect("a placement");
        let level = |id: u64| placed.iter().find(|(_, t)| t.id == id).map(|(l, _)| *l);
        assert_eq!((level(1), level(2), level(3)), (Some(1), Some(1), Some(2)));
        assert!(
            place(&levels, 2, 10, &mezz_format::KeyOrder::default()).is_none(),
            "the levels run out"
        );
    }
}
