//! Opening a database: lock, manifest replay, WAL replay, a fresh manifest, file GC,
//! the OPTIONS file, and the background threads.
//!
//! Recovery, step by step (see `docs/impl.md`); `open` runs one function per step:
//! 1. Validate the options; create the directory if allowed; take the LOCK (`lock_dir`).
//! 2. If `CURRENT` exists, replay the manifest it names into a version plus the log
//!    number, next file number and last sequence; a database being created gets its
//!    identity (`replay_manifest`).
//! 3. Open the NVM tier if anything lives or will live there, and map its memtables back
//!    (`open_nvm`). Build the storage layer over the DB directory and the `ssd_paths`:
//!    every table's location must be reachable (`Storage::check_locations`) and every
//!    unit must be this database's, at its index (`check_units`), and its file system
//!    must take direct I/O if the options ask for it (`Storage::check_direct_io`); the
//!    placement of new tables is built from the options.
//! 4. Replay every WAL numbered >= the log number, oldest first (`collect_wals`,
//!    `replay_wals`). Without NVM memtables, into a memtable; a memtable that fills is
//!    written to an L0 table; at the end the last memtable is written too. So every
//!    replayed WAL becomes obsolete and the database starts with an empty memtable and a
//!    new WAL. With NVM memtables (recovered or enabled), each WAL becomes one immutable
//!    memtable instead, kept with its WAL until flushed. Damage: under
//!    `TolerateCorruptTail` a torn tail of any WAL ends recovery there (point in time:
//!    later WALs are not replayed — a WAL switched out is synced off the write path, and a
//!    `sync` write first syncs every older WAL, so nothing acknowledged as durable lies
//!    beyond a tear); anything else is a `Corruption` naming file and offset.
//! 5. Put the recovered memtables in read order (`arrange_memtables`).
//! 6. Create the new WAL; write a new manifest holding the whole version, point `CURRENT`
//!    at it (temp file + rename + directory sync); write `OPTIONS-<n>`
//!    (`install_new_state`).
//! 7. Delete every file the new state does not use: SSTs not in the version, older WALs and
//!    manifests, temp files, older OPTIONS files (`remove_unused_files`).
//! 8. Free the NVM extents this open released, assemble the `DbInner` and start the
//!    background threads (they compact if the recovered shape needs it).
//!
//! Thread-safety: `open` runs on the caller's thread; the LOCK keeps every other handle out
//! of the directory, and no other thread sees the database before step 8 starts the
//! background threads.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use arc_swap::ArcSwap;
use mezz_env::{FileLock, FileSystem};
use mezz_format::SeqNo;
use parking_lot::{Condvar, Mutex};

use crate::batch::WriteBatch;
use crate::compaction::{Claims, SstSink, write_table};
use crate::design::{Design, WalPlace};
use crate::error::{Error, Result};
use crate::filename::{self, FileType};
use crate::manifest::{
    FamilyRecord, Manifest, VersionEdit, recover_manifest, set_current, write_file_atomically,
    write_new_manifest,
};
use crate::memtable::MemTable;
use crate::options::{Options, RecoveryMode};
use crate::placement::{JobInfo, Placement, UnitPlacement};
use crate::state::MemtableSet;
use crate::stats::StatsCollector;
use crate::storage::Storage;
use crate::storage::nvm::NvmTier;
use crate::storage::nvm::{NvmObject, NvmObjectKind};
use crate::table::cache::TableCache;
use crate::table::{TableLocation, TableMeta};
use crate::version::Version;
use crate::wal::{ReplayEnd, WalWriter, replay_wal, replay_wal_bytes};

use super::background::Jobs;
use super::{
    ClosedWal, DbInner, MAX_MANIFEST_BYTES, Scheduler, State, VersionState, WritePipeline,
    WriteState,
};
use crate::base::snapshot::SnapshotList;
use crate::info_log::InfoLog;

/// Opens (or creates) the database in `path`: the recovery steps above, one function each.
pub(super) fn open(path: &Path, opts: Options) -> Result<Arc<DbInner>> {
    open_with(path, opts, None)
}

/// [`open`], sharing `snapshots` when given (a column family's engine shares the
/// database's snapshot list, so that its compactions keep what a snapshot of the database
/// reads).
pub(super) fn open_with(
    path: &Path,
    opts: Options,
    snapshots: Option<Arc<SnapshotList>>,
) -> Result<Arc<DbInner>> {
    let locked = lock_dir(path, &opts)?;
    let info_log = Arc::new(InfoLog::open(
        locked.fs.as_ref(),
        &locked.dir,
        opts.info_log.clone(),
    ));
    info_log.log(format_args!(
        "Mezzanine {} {} {}; comparator: {}; options:\n{}",
        env!("CARGO_PKG_VERSION"),
        if locked.exists {
            "recovering"
        } else {
            "creating"
        },
        locked.dir.display(),
        opts.key_order().name(),
        opts.to_text()
    ));
    let started = Instant::now();
    let rec = replay_manifest(&locked, &opts)?;
    let snapshots = snapshots.unwrap_or_default();
    let families = open_families(&locked, &opts, &rec, &snapshots)?;
    let mut phases = OpenPhases::new(started);
    phases.mark("manifest");
    let opened = open_recovered(locked, opts, info_log, rec, &families, snapshots, phases);
    if opened.is_err() {
        for f in families.values() {
            let _ = super::family::close_family(f);
        }
    }
    opened
}

/// Step 2, last part: the column families. Deletes every family directory the manifest
/// does not name (a family dropped, or one whose creation did not reach the manifest),
/// then opens each family the manifest names.
fn open_families(
    locked: &LockedDir,
    opts: &Options,
    rec: &Recovery,
    snapshots: &Arc<SnapshotList>,
) -> Result<BTreeMap<u32, Arc<super::family::Family>>> {
    for name in &rec.names {
        if let Some(id) = super::family::parse_family_dir(name)
            && !rec.families.contains_key(&id)
        {
            super::family::reclaim_family_dir(opts, &locked.dir.join(name))?;
        }
    }
    if rec.families.is_empty() {
        return Ok(BTreeMap::new());
    }
    if opts.nvm_memtable.in_place() {
        return Err(Error::InvalidArgument(format!(
            "{}: {}",
            locked.dir.display(),
            super::family::MUTABLE_NVM_MEMTABLE_REASON
        )));
    }
    let mut open = BTreeMap::new();
    for r in rec.families.values() {
        match super::family::open_family(&locked.dir, opts, r, snapshots, false) {
            Ok(f) => {
                open.insert(r.id, f);
            }
            Err(e) => {
                for f in open.values() {
                    let _ = super::family::close_family(f);
                }
                return Err(e);
            }
        }
    }
    Ok(open)
}

/// Steps 3 to 8 (see `open`), with the column families open.
fn open_recovered(
    locked: LockedDir,
    opts: Options,
    info_log: Arc<InfoLog>,
    mut rec: Recovery,
    families: &BTreeMap<u32, Arc<super::family::Family>>,
    snapshots: Arc<SnapshotList>,
    mut phases: OpenPhases,
) -> Result<Arc<DbInner>> {
    let mut nvm = open_nvm(&locked, &opts, &mut rec)?;
    phases.mark("nvm");
    let storage = Arc::new(
        Storage::new(
            Arc::clone(&locked.fs),
            locked.dir.clone(),
            opts.ssd_paths.clone(),
            nvm.tier.clone(),
        )
        .with_matrix(nvm.matrix.clone())
        .with_order(opts.key_order())
        .with_mapped_reads(opts.mmap_reads)
        .with_direct_io(
            opts.use_direct_reads,
            opts.use_direct_io_for_flush_and_compaction,
        ),
    );
    let design = Design::assemble(&opts, &storage);
    rec.version.check_reachable(&storage)?;
    check_units(&opts, &storage, &rec)?;
    storage.check_direct_io()?;
    let placement: Arc<dyn Placement> = Arc::new(
        UnitPlacement::new(opts.placement, storage.table_units())
            .with_wide_units(opts.placement_wide_paths)
            .with_write_pace(opts.placement_write_pace),
    );
    phases.mark("checks");
    let wals = collect_wals(&locked, &nvm, &mut rec)?;
    let replayed = replay_wals(
        &locked,
        &opts,
        &design,
        &storage,
        placement.as_ref(),
        &mut nvm,
        &mut rec,
        &wals,
        families,
    )?;
    // The families' replayed updates reach their tables before the new manifest makes the
    // WALs obsolete; the sequence continues above every family's.
    for f in families.values() {
        f.db.flush()?;
        rec.last_seq = rec
            .last_seq
            .max(f.db.versions.last_seq.load(Ordering::Acquire));
    }
    phases.mark("wal replay");
    let lists = arrange_memtables(
        replayed.kept_mems,
        nvm.mems,
        design.memtables().seals_recovered_nvm_memtables(),
    );
    let installed = install_new_state(
        &locked,
        &opts,
        (&design, &storage),
        &mut rec,
        &replayed.kept_wals,
    )?;
    remove_unused_files(
        &locked,
        &storage,
        &rec.names,
        &rec.version,
        &replayed.kept_wals,
        &installed,
    )?;
    free_released(nvm.tier.as_ref(), &rec.released);
    phases.mark("install");
    info_log.log(format_args!(
        "recovered: {} tables, {} WALs replayed, {} memtables kept, last sequence {}, \
         new WAL {}, manifest {}; {phases}",
        rec.version.all_tables().count(),
        wals.len(),
        lists.imms.len() + lists.nvm_sealed.len(),
        rec.last_seq,
        installed.wal_number,
        installed.manifest_number
    ));
    let inner = assemble_db_inner(
        locked,
        opts,
        info_log,
        rec,
        (storage, placement, design),
        replayed.rewritten,
        lists,
        installed,
        (families, snapshots),
    )?;
    for f in families.values() {
        let _ = f.db.parent.set(Arc::downgrade(&inner));
    }
    inner.design.recover(inner.as_ref())?;
    start_background_threads(&inner)?;
    Ok(inner)
}

/// Step 3, last part: checks the further SSD directories (`ssd_paths`) against the
/// database (see [`Storage::check_units`]) and keeps new file numbers above every table
/// file found in them.
fn check_units(opts: &Options, storage: &Storage, rec: &Recovery) -> Result<()> {
    let temp = || alloc(&rec.next_file);
    let tables: Vec<&TableMeta> = rec.version.all_tables().map(|(_, t)| t.as_ref()).collect();
    let max_table = storage.check_units(&rec.db_id, opts.create_if_missing, &tables, &temp)?;
    rec.next_file.fetch_max(max_table + 1, Ordering::SeqCst);
    Ok(())
}

/// The database directory, locked by this open (step 1).
struct LockedDir {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    /// Held for the life of the database: no other handle opens the directory meanwhile.
    lock: Box<dyn FileLock>,
    /// `CURRENT` exists: there is a database to recover (else one is being created).
    exists: bool,
    /// The recovery mode in force (`paranoid_checks` means `AbsoluteConsistency`).
    mode: RecoveryMode,
}

/// Step 1: validates `opts`, creates the directory if `create_if_missing` allows, takes
/// the LOCK and checks `create_if_missing` / `error_if_exists` against `CURRENT`.
///
/// Guarantees: on success the directory exists, this open alone holds its LOCK and no other
/// file has been written yet.
fn lock_dir(path: &Path, opts: &Options) -> Result<LockedDir> {
    opts.validate()?;
    let fs = Arc::clone(&opts.fs);
    let dir = path.to_path_buf();
    if opts.ssd_paths.contains(&dir) {
        return Err(Error::InvalidArgument(format!(
            "ssd_paths: {} is the database directory itself",
            dir.display()
        )));
    }
    if !fs.exists(&dir) {
        if !opts.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "{} does not exist (create_if_missing is false)",
                dir.display()
            )));
        }
        fs.create_dir_all(&dir).map_err(io_err(&dir))?;
    }
    let lock_path = filename::lock_file(&dir);
    let lock = fs.lock(&lock_path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked(dir.clone())
        } else {
            Error::from(e).in_file(&lock_path)
        }
    })?;
    let exists = fs.exists(&filename::current_file(&dir));
    if !exists && !opts.create_if_missing {
        return Err(Error::InvalidArgument(format!(
            "no database at {} (create_if_missing is false)",
            dir.display()
        )));
    }
    if exists && opts.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "database at {} already exists (error_if_exists is true)",
            dir.display()
        )));
    }
    let mode = opts.recovery_mode_in_force();
    Ok(LockedDir {
        fs,
        dir,
        lock,
        exists,
        mode,
    })
}

/// What recovery builds up from step 2 on: the recovered version and the edit that turns
/// it into the new one, the file numbers, the last sequence, the NVM objects released.
struct Recovery {
    /// The version the manifest recorded; step 6 applies `edit` to it.
    version: Version,
    /// WALs below this number were obsolete before this open.
    log_number: u64,
    /// The largest sequence number recovered so far.
    last_seq: SeqNo,
    /// The next file number (allocate with `alloc`).
    next_file: AtomicU64,
    /// The directory listing taken in step 2, before this open created any file but the LOCK.
    names: Vec<String>,
    /// The numbered files among `names`.
    parsed: Vec<(FileType, u64)>,
    /// The database's identity (recorded in the manifest and the NVM pool's superblock).
    db_id: [u8; 16],
    /// What the new manifest changes in the recovered version.
    edit: VersionEdit,
    /// NVM objects released by this open; their extents are freed once the new manifest
    /// is durable.
    released: Vec<NvmObject>,
    /// WALs this open made files because the NVM pool had no room for them
    /// (`wal_on_nvm`; see `create_wal`).
    wal_fallbacks: u64,
    /// NVM memtables with the deferred mark dropped after a WAL that lost its tail
    /// (`drop_deferred_after`).
    dropped_nvm_memtables: u64,
    /// The column families the manifest names.
    families: BTreeMap<u32, FamilyRecord>,
    /// The id the next column family gets.
    next_family_id: u32,
}

/// Allocates the next file number.
fn alloc(next_file: &AtomicU64) -> u64 {
    next_file.fetch_add(1, Ordering::Relaxed)
}

/// Step 2: replays the manifest `CURRENT` names (or starts from an empty version for a new
/// database), lists the directory, and settles the database's identity.
///
/// Guarantees: the next file number is at least the manifest's and above the number of
/// every file in the directory. A database whose manifest records no identity (one being
/// created) gets one, from `IDENTITY` or new and written there durably, and the edit sets
/// it; either way that takes the first file number allocated.
fn replay_manifest(locked: &LockedDir, opts: &Options) -> Result<Recovery> {
    let LockedDir {
        fs, dir, exists, ..
    } = locked;
    let mut families = BTreeMap::new();
    let mut next_family_id = 1;
    let (version, log_number, manifest_next, last_seq) = if *exists {
        let r = recover_manifest(
            fs.as_ref(),
            dir,
            opts.num_levels,
            locked.mode,
            &opts.key_order(),
        )?;
        families = r.families;
        next_family_id = r.next_family_id;
        (r.version, r.log_number, r.next_file_number, r.last_sequence)
    } else {
        (
            Version::new(opts.num_levels).with_order(opts.key_order()),
            0,
            1,
            0,
        )
    };

    // Every number in use, so new files never collide with leftovers.
    let names = fs.list_dir(dir).map_err(io_err(dir))?;
    let parsed: Vec<(FileType, u64)> = names
        .iter()
        .filter_map(|n| filename::parse_file_name(n))
        .collect();
    // An old info log's number is a time (`LOG.old.<micros>`), not a file number.
    let max_seen = parsed
        .iter()
        .filter(|&&(t, _)| t != FileType::InfoLog)
        .map(|&(_, n)| n)
        .max()
        .unwrap_or(0);
    let next_file = AtomicU64::new(manifest_next.max(max_seen + 1));

    // The database's identity (recorded in the manifest and the NVM pool's superblock).
    let mut edit = VersionEdit::default();
    let db_id = match version.db_id {
        Some(id) => id,
        None => {
            let id = new_db_identity(fs.as_ref(), dir, alloc(&next_file))?;
            edit.db_id = Some(id);
            id
        }
    };
    Ok(Recovery {
        version,
        log_number,
        last_seq,
        next_file,
        names,
        parsed,
        db_id,
        edit,
        released: Vec::new(),
        wal_fallbacks: 0,
        dropped_nvm_memtables: 0,
        families,
        next_family_id,
    })
}

/// The NVM tier and what the recovered version keeps in it (step 3).
struct NvmState {
    /// The tier, if this open uses one.
    tier: Option<Arc<NvmTier>>,
    /// The NVM objects the recovered version lists.
    live: Vec<NvmObject>,
    /// The NVM memtables mapped back, in the version's object order.
    mems: Vec<Arc<MemTable>>,
    /// The matrix container's page space, if the database has one.
    matrix: Option<Arc<crate::storage::matrix::MatrixSpace>>,
}

/// Step 3: opens the NVM tier when something lives or will live there and maps the NVM
/// memtables back (not replayed: each list is checked as it is mapped), raising the last
/// sequence to what they hold.
///
/// Fails with `InvalidArgument` if the version lists NVM objects but `nvm_dir` is not set.
fn open_nvm(locked: &LockedDir, opts: &Options, rec: &mut Recovery) -> Result<NvmState> {
    // The NVM tier: its free space is whatever the recovered version does not list.
    let live: Vec<NvmObject> = rec.version.nvm_objects.values().copied().collect();
    // The tier is opened when something lives or will live there (an `nvm_dir` that no
    // option uses costs nothing).
    let uses_nvm = crate::design::uses_nvm(opts) || !live.is_empty();
    let tier = if opts.has_nvm() && uses_nvm {
        Some(NvmTier::open(opts, rec.db_id, &live, !locked.exists)?)
    } else if !live.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "the database at {} keeps {} objects in an NVM pool: open it with nvm_dir set",
            locked.dir.display(),
            live.len()
        )));
    } else {
        None
    };
    let mut mems: Vec<Arc<MemTable>> = Vec::new();
    if let Some(tier) = &tier {
        for o in live.iter().filter(|o| o.kind == NvmObjectKind::Memtable) {
            let list = crate::memtable::nvm_list::NvmList::recover(tier, *o, &opts.key_order())?;
            rec.last_seq = rec.last_seq.max(list.physical_max_seq());
            mems.push(Arc::new(MemTable::nvm(o.id, list)));
        }
    }
    let matrix = match &tier {
        Some(t) => crate::design::matrixkv::open_space(
            t,
            opts,
            &rec.version,
            &mut rec.edit,
            &mut rec.released,
            &|| alloc(&rec.next_file),
        )?,
        None => None,
    };
    Ok(NvmState {
        tier,
        live,
        mems,
        matrix,
    })
}

/// A WAL to replay: a file, or a log in the NVM pool.
#[derive(Debug, Clone, Copy)]
enum WalSource {
    File(u64),
    Nvm(NvmObject),
}

impl WalSource {
    fn number(&self) -> u64 {
        match self {
            WalSource::File(n) => *n,
            WalSource::Nvm(o) => o.id,
        }
    }

    /// Replays this WAL into `apply`, batch by batch; `tolerate`: a torn tail ends the
    /// replay (`ReplayEnd::TornTail`) instead of failing it.
    fn replay(
        &self,
        locked: &LockedDir,
        storage: &Storage,
        tolerate: bool,
        apply: &mut dyn FnMut(WriteBatch) -> Result<()>,
    ) -> Result<ReplayEnd> {
        match self {
            WalSource::File(n) => replay_wal(
                locked.fs.as_ref(),
                &filename::wal_file(&locked.dir, *n),
                tolerate,
                apply,
            ),
            WalSource::Nvm(o) => {
                let (bytes, pool) = storage.read_nvm_log(o)?;
                replay_wal_bytes(bytes, &pool, tolerate, apply)
            }
        }
    }
}

/// Step 4, first half: the WALs to replay, oldest first: files and NVM logs numbered >=
/// the log number. An NVM log below it is released (the edit deletes it), and so is an
/// NVM log that holds no record: a spare made ready for a switch that never came (see
/// `DbInner::prepare_spare`), or the log of a switch with no write after it. Such a log
/// holds nothing to replay, and it must not make an older WAL that ends without its END
/// marker look as if it lost its tail: no newer write lies beyond that end.
///
/// # Errors
/// `Corruption` for an NVM log with a damaged header.
fn collect_wals(locked: &LockedDir, nvm: &NvmState, rec: &mut Recovery) -> Result<Vec<WalSource>> {
    let mut wals: Vec<WalSource> = Vec::new();
    if locked.exists {
        for &(t, n) in &rec.parsed {
            if t == FileType::Wal && n >= rec.log_number {
                wals.push(WalSource::File(n));
            }
        }
    }
    for o in nvm.live.iter().filter(|o| o.kind == NvmObjectKind::Wal) {
        let replay = o.id >= rec.log_number
            && match &nvm.tier {
                Some(tier) => !tier.log_is_empty(o)?,
                None => true,
            };
        if replay {
            wals.push(WalSource::Nvm(*o));
        } else {
            rec.edit.deleted_nvm_objects.push(o.id);
            rec.released.push(*o);
        }
    }
    wals.sort_by_key(WalSource::number);
    // WAL files never written to, newer than every other WAL and every NVM memtable that
    // may hold writes after an unsynced WAL: a spare made ready for a switch that never
    // came (`DbInner::prepare_spare`), or the WAL of a switch with no durable write after
    // it. Such a file holds nothing and is deleted with the obsolete WALs; it must not make
    // the newest WAL with records, which ends without its END marker, look as if it lost
    // its tail.
    let newest_deferred = nvm
        .mems
        .iter()
        .filter(|m| !m.is_empty() && m.written_ahead_of_older_wals())
        .map(|m| m.id())
        .max()
        .unwrap_or(0);
    while let Some(&WalSource::File(n)) = wals.last() {
        if n < newest_deferred || !wal_file_never_written(locked, n)? {
            break;
        }
        wals.pop();
    }
    Ok(wals)
}

/// Whether WAL file `number` holds nothing but zeros (the reserved space of a mapped log)
/// or nothing at all. Reads from the start in chunks and stops at the first non-zero byte:
/// a log with records says so in its first chunk (its first record's header), where reading
/// the whole file first read the newest WAL twice at every open, as long again as its
/// replay (`bench/results/2026-12-01-reopen-wal-scan`).
fn wal_file_never_written(locked: &LockedDir, number: u64) -> Result<bool> {
    let path = filename::wal_file(&locked.dir, number);
    file_holds_only_zeros(locked.fs.as_ref(), &path)
}

/// Whether the file at `path` is empty or holds nothing but zeros, read from its start in
/// chunks of 1 MiB until the first non-zero byte.
fn file_holds_only_zeros(fs: &dyn FileSystem, path: &Path) -> Result<bool> {
    const CHUNK: usize = 1 << 20;
    let file = fs.open_read(path).map_err(io_err(path))?;
    let size = file.size();
    let mut buf = Vec::new();
    let mut offset = 0u64;
    while offset < size {
        let n = usize::try_from(size - offset).map_or(CHUNK, |left| left.min(CHUNK));
        buf.resize(n, 0);
        file.read_exact_at(offset, &mut buf).map_err(io_err(path))?;
        if buf.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        offset += n as u64;
    }
    Ok(true)
}

/// What WAL replay keeps (step 4).
#[derive(Default)]
struct Replayed {
    /// The WALs that feed kept memtables. Every WAL not kept becomes obsolete with the new
    /// manifest.
    kept_wals: HashSet<u64>,
    /// One immutable memtable per kept WAL.
    kept_mems: Vec<Arc<MemTable>>,
    /// A WAL rewritten at open (the valid prefix of a torn one) that feeds a kept memtable.
    rewritten: Option<WalWriter>,
    /// The oldest replayed WAL that did not end complete (torn, or a file without its END
    /// marker): what lies after it in the history may be lost.
    first_incomplete: Option<u64>,
}

/// Step 4, second half: replays `wals` into L0 tables (`replay_into_l0`) or, when NVM
/// memtables are present or enabled, into one memtable per WAL (`replay_into_memtables`);
/// then releases the NVM memtables that hold nothing.
///
/// Guarantees: the tables written are durable (directory synced); the last sequence covers
/// every replayed write.
#[allow(clippy::too_many_arguments)]
fn replay_wals(
    locked: &LockedDir,
    opts: &Options,
    design: &Design,
    storage: &Arc<Storage>,
    placement: &dyn Placement,
    nvm: &mut NvmState,
    rec: &mut Recovery,
    wals: &[WalSource],
    families: &BTreeMap<u32, Arc<super::family::Family>>,
) -> Result<Replayed> {
    let tolerate = locked.mode == RecoveryMode::TolerateCorruptTail;
    let keep_memtables = design
        .memtables()
        .keeps_recovered_memtables(!nvm.mems.is_empty());
    let replayed = if !keep_memtables {
        replay_into_l0(
            locked, opts, design, storage, placement, rec, wals, tolerate, families,
        )?;
        Replayed::default()
    } else {
        let r = replay_into_memtables(
            locked,
            opts,
            (design, storage),
            nvm,
            rec,
            wals,
            tolerate,
            families,
        )?;
        if let Some(n) = r.first_incomplete {
            drop_deferred_after(&mut nvm.mems, n, tolerate, &locked.dir, rec)?;
        }
        r
    };
    if !rec.edit.new_tables.is_empty() {
        locked
            .fs
            .sync_dir(&locked.dir)
            .map_err(io_err(&locked.dir))?;
    }
    release_empty_nvm_memtables(&mut nvm.mems, rec);
    Ok(replayed)
}

/// Replays the WALs into memtables, writing full ones (and the last) to L0 (the edit adds
/// the tables); keeps no memtable, so every replayed WAL becomes obsolete.
#[allow(clippy::too_many_arguments)]
fn replay_into_l0(
    locked: &LockedDir,
    opts: &Options,
    design: &Design,
    storage: &Arc<Storage>,
    placement: &dyn Placement,
    rec: &mut Recovery,
    wals: &[WalSource],
    tolerate: bool,
    families: &BTreeMap<u32, Arc<super::family::Family>>,
) -> Result<()> {
    let cap = opts.memtable_capacity();
    let mut mem = Arc::new(MemTable::new(0, cap, opts.key_order()));
    let flush_mem = |mem: &Arc<MemTable>, edit: &mut VersionEdit| -> Result<()> {
        if mem.is_empty() {
            return Ok(());
        }
        // A design's own L0 format first (a matrix row, as a flush would write it), else
        // an SST.
        for target in design.flush_targets() {
            if let Some(meta) = target.write_replayed(mem, opts, &|| alloc(&rec.next_file))? {
                edit.new_tables.push((0, meta));
                return Ok(());
            }
        }
        let new_file = || alloc(&rec.next_file);
        let job = placement.begin(&JobInfo {
            version: &rec.version,
            output_level: 0,
            inputs: &[],
        });
        let mut sink = SstSink::new(storage, opts, 0, &new_file, job);
        let mut it = mem.iter();
        // No snapshot exists while the database opens.
        if let Some(w) = write_table(&mut sink, it.as_mut(), &[], mem.order())? {
            edit.new_tables.push((0, w.meta));
        }
        Ok(())
    };
    // A torn tail ends recovery at that point (point in time), even in a WAL that is
    // not the newest: a WAL switched out is synced off the write path (or, when nothing
    // asks for WALs to be durable, never: its memtable's flush makes it obsolete), so a
    // power cut can tear it while a newer WAL holds later (never synced) writes.
    // Replaying those would leave a hole in the history; no acknowledged-durable write is
    // among them, because a `sync` write first syncs every older WAL. The same holds for
    // a WAL file that is not the newest and ends without its END marker: it was sealed
    // when switched out, so it lost its tail. Later WALs become obsolete with the new log
    // number.
    for (i, src) in wals.iter().enumerate() {
        let end = src.replay(locked, storage, tolerate, &mut |batch: WriteBatch| {
            let n = batch.len() as u64;
            if n > 0 {
                let seq: SeqNo = batch.sequence();
                let need = crate::memtable::room_needed(batch.len(), batch.approximate_size());
                if mem.room() < need {
                    flush_mem(&mem, &mut rec.edit)?;
                    mem = Arc::new(MemTable::new(
                        0,
                        cap.max(need.saturating_mul(2)),
                        opts.key_order(),
                    ));
                }
                mem.insert_batch(&batch)?;
                rec.last_seq = rec.last_seq.max(seq + n - 1);
                replay_into_families(&batch, families)?;
            }
            if mem.approximate_memory_usage() >= opts.write_buffer_size {
                flush_mem(&mem, &mut rec.edit)?;
                mem = Arc::new(MemTable::new(0, cap, opts.key_order()));
            }
            Ok(())
        })?;
        if matches!(end, ReplayEnd::TornTail { .. }) {
            break;
        }
        if end == ReplayEnd::Unsealed && i + 1 < wals.len() {
            if !tolerate {
                return Err(lost_tail(&locked.dir, src.number()));
            }
            break;
        }
    }
    flush_mem(&mem, &mut rec.edit)?;
    drop(mem);
    Ok(())
}

/// Replays a WAL batch's updates of column families into their engines, those a family
/// holds durably already (its tables and NVM memtables) excepted; a dropped family's are
/// ignored.
fn replay_into_families(
    batch: &WriteBatch,
    families: &BTreeMap<u32, Arc<super::family::Family>>,
) -> Result<()> {
    let n = batch.len() as u64;
    if families.is_empty() || n == 0 {
        return Ok(());
    }
    let last = batch.sequence() + n - 1;
    for id in batch.families() {
        if let Some(f) = families.get(&id)
            && last > f.flushed_seq
        {
            f.db.apply_family_batch(batch, id, f.flushed_seq)?;
        }
    }
    Ok(())
}

/// The error (under `AbsoluteConsistency`) for WAL `number` in `dir`, older than the
/// newest and ending without its END marker.
fn lost_tail(dir: &Path, number: u64) -> Error {
    Error::corruption(
        0,
        "a WAL older than the newest ends without its END marker (its tail was lost)",
    )
    .in_file(filename::wal_file(dir, number))
}

/// Replays each WAL into its own immutable memtable, kept with its WAL (a torn WAL's valid
/// prefix relogged into a new one); retires WAL memtables whose data an NVM memtable
/// already holds, and releases the NVM WALs that feed no kept memtable.
///
/// Guarantees: every kept WAL is durable: a WAL file replayed as it was is synced (it may
/// have been read from the OS cache), a torn one's prefix is rewritten and synced.
#[allow(clippy::too_many_arguments)]
fn replay_into_memtables(
    locked: &LockedDir,
    opts: &Options,
    (design, storage): (&Design, &Storage),
    nvm: &NvmState,
    rec: &mut Recovery,
    wals: &[WalSource],
    tolerate: bool,
    families: &BTreeMap<u32, Arc<super::family::Family>>,
) -> Result<Replayed> {
    let LockedDir { fs, dir, .. } = locked;
    let mut kept_wals: HashSet<u64> = HashSet::new();
    let mut kept_mems: Vec<Arc<MemTable>> = Vec::new();
    let mut rewritten: Option<WalWriter> = None;
    let mut first_incomplete = None;
    // NVM memtables are mapped back, not replayed; so the WALs' memtables must stay
    // memtables too (an L0 table written now would be newer than an NVM memtable that
    // reads consult first). Each WAL becomes one immutable memtable, flushed later in
    // order; a torn WAL's valid prefix is rewritten into a new WAL (a later crash must
    // not stop at the old tear before newer WALs), and the WALs after it are dropped.
    for (i, src) in wals.iter().enumerate() {
        let mut m = Arc::new(MemTable::new(
            src.number(),
            opts.memtable_capacity(),
            opts.key_order(),
        ));
        let end = src.replay(locked, storage, tolerate, &mut |batch: WriteBatch| {
            let n = batch.len() as u64;
            if n > 0 {
                // One memtable per WAL, however much the WAL holds (written under other
                // options, it may exceed one memtable of these).
                let need = crate::memtable::room_needed(batch.len(), batch.approximate_size());
                if m.room() < need {
                    m = Arc::new(m.grown(need)?);
                }
                m.insert_batch(&batch)?;
                rec.last_seq = rec.last_seq.max(batch.sequence() + n - 1);
                replay_into_families(&batch, families)?;
            }
            Ok(())
        })?;
        let torn = matches!(end, ReplayEnd::TornTail { .. });
        if end != ReplayEnd::Complete && first_incomplete.is_none() {
            first_incomplete = Some(src.number());
        }
        if !m.is_empty() {
            if torn {
                let number = alloc(&rec.next_file);
                let (w, m2) = relog_memtable(fs, dir, opts, (design, storage), &m, number, rec)?;
                rewritten = Some(w);
                kept_wals.insert(number);
                kept_mems.push(m2);
            } else {
                if let WalSource::File(n) = src {
                    // Replayed from the OS cache after a process crash: make it durable
                    // before newer writes can be acknowledged. A newer WAL follows it from
                    // now on: one that ends without an END marker (the newest of the last
                    // process) is sealed, as a switch would have.
                    let path = filename::wal_file(dir, *n);
                    if end == ReplayEnd::Unsealed {
                        crate::wal::seal_existing(fs.as_ref(), &path)?;
                    } else {
                        fs.open_append(&path)
                            .and_then(|mut f| f.sync())
                            .map_err(|e| Error::from(e).in_file(&path))?;
                    }
                }
                kept_wals.insert(src.number());
                kept_mems.push(m);
            }
        }
        // A WAL file older than the newest that ends without its END marker lost its
        // tail (see `replay_into_l0`): its prefix is kept, newer WALs are not replayed.
        if torn || (end == ReplayEnd::Unsealed && i + 1 < wals.len()) {
            if !torn && !tolerate {
                return Err(lost_tail(dir, src.number()));
            }
            break;
        }
    }
    // A WAL memtable whose every sequence number lies in the committed range of an NVM
    // memtable was merged into it: a crash came between the merge's commit and the
    // manifest edit that retires the WAL. (A sequence number names one write, and an
    // NVM memtable's committed entries cover a contiguous range.) Its entries are
    // copies; keeping them would put two memtables with the same data in the read
    // order, so the WAL is retired now.
    kept_mems.retain(|m| {
        let copy = nvm
            .mems
            .iter()
            .any(|n| !n.is_empty() && n.min_seq() <= m.min_seq() && m.max_seq() <= n.max_seq());
        if copy {
            kept_wals.remove(&m.id());
            if rewritten.as_ref().is_some_and(|w| w.number() == m.id()) {
                rewritten = None;
            }
        }
        !copy
    });
    // NVM WALs that feed no kept memtable are released.
    for src in wals {
        if let WalSource::Nvm(o) = src
            && !kept_wals.contains(&o.id)
        {
            rec.edit.deleted_nvm_objects.push(o.id);
            rec.released.push(*o);
        }
    }
    Ok(Replayed {
        kept_wals,
        kept_mems,
        rewritten,
        first_incomplete,
    })
}

/// Drops from `mems` the NVM memtables with the deferred mark that are newer than WAL
/// `torn`, which did not end complete, releasing their objects (the edit deletes them).
///
/// Such a memtable took writes before the WALs older than it were durable (see
/// `DbInner::log_group`), and WAL `torn` is one of them: the switch to the memtable sealed
/// it, so it lost at least its END marker and maybe records. Keeping the memtable could
/// keep writes made after lost ones (a hole in the history); none of its writes was
/// acknowledged as durable, since a `sync` write syncs the older WALs first. Under
/// `AbsoluteConsistency` (`tolerate` false) such a memtable is an error instead.
fn drop_deferred_after(
    mems: &mut Vec<Arc<MemTable>>,
    torn: u64,
    tolerate: bool,
    dir: &Path,
    rec: &mut Recovery,
) -> Result<()> {
    let after =
        |m: &Arc<MemTable>| m.id() > torn && !m.is_empty() && m.written_ahead_of_older_wals();
    if !tolerate && mems.iter().any(after) {
        return Err(lost_tail(dir, torn));
    }
    mems.retain(|m| {
        if after(m)
            && let Some(obj) = m.nvm_object()
        {
            rec.edit.deleted_nvm_objects.push(m.id());
            rec.released.push(obj);
            rec.dropped_nvm_memtables += 1;
            false
        } else {
            true
        }
    });
    Ok(())
}

/// Drops the NVM memtables that hold nothing from `mems`, releasing their objects (the
/// edit deletes them).
fn release_empty_nvm_memtables(mems: &mut Vec<Arc<MemTable>>, rec: &mut Recovery) {
    // Empty NVM memtables hold nothing: release them.
    mems.retain(|m| {
        if m.is_empty()
            && let Some(obj) = m.nvm_object()
        {
            rec.edit.deleted_nvm_objects.push(m.id());
            rec.released.push(obj);
            false
        } else {
            true
        }
    });
}

/// The recovered memtables in read order (step 5), as the memtable set takes them (it
/// starts without a receiver: a recovered NVM memtable never becomes the receiver again).
struct MemtableLists {
    /// Immutable memtables, newest first.
    imms: Vec<Arc<MemTable>>,
    /// `nvm_memtable = immutable`: NVM memtables waiting for their flush, newest first.
    nvm_sealed: Vec<Arc<MemTable>>,
}

/// Step 5: puts the memtables kept from the WALs (`kept`) and the NVM memtables mapped
/// back (`nvm_mems`) in read order.
///
/// Guarantees: every list is ordered by sequence number, newest first; sealed NVM
/// memtables are older than every immutable one.
fn arrange_memtables(
    kept: Vec<Arc<MemTable>>,
    nvm_mems: Vec<Arc<MemTable>>,
    seal_nvm: bool,
) -> MemtableLists {
    // Where the recovered memtables go. Reads consult memtables newest first and take the
    // first hit, so every list is ordered by sequence number (newest first), never by
    // object number: a memtable started later can hold older data (a receiver created to
    // take an old DRAM memtable while a newer mutable-mode NVM memtable waits above it).
    // With `seal_nvm` (the memtable design's choice: NoveLSM's `immutable` mode), NVM
    // memtables that are older than every recovered DRAM memtable go below them as full
    // ones waiting for their flush (the shape that mode keeps); otherwise all memtables
    // share one list, flushed oldest first. A recovered
    // NVM memtable never becomes the receiver again: merges into it would lift its commit
    // word over a write group that a crash cut short in it.
    let oldest_kept = kept.iter().map(|m| m.min_seq()).min().unwrap_or(u64::MAX);
    let newest_first = |m: &Arc<MemTable>| std::cmp::Reverse((m.max_seq(), m.id()));
    let mut imms: Vec<Arc<MemTable>> = kept;
    let mut nvm_sealed: Vec<Arc<MemTable>> = Vec::new();
    if seal_nvm && nvm_mems.iter().all(|m| m.max_seq() < oldest_kept) {
        nvm_sealed = nvm_mems;
        nvm_sealed.sort_by_key(newest_first);
    } else {
        imms.extend(nvm_mems);
    }
    imms.sort_by_key(newest_first);
    MemtableLists { imms, nvm_sealed }
}

/// The new durable state (step 6).
struct Installed {
    /// The WAL of the new active memtable (`None` when `use_wal` is off).
    wal: Option<WalWriter>,
    /// Its number (also the new active memtable's).
    wal_number: u64,
    /// The oldest WAL still needed, recorded in the new manifest.
    log_number: u64,
    manifest: Manifest,
    manifest_number: u64,
    options_number: u64,
}

/// Step 6: creates the new WAL, applies the edit (with the log number of the oldest WAL
/// still needed) to the recovered version, writes a new manifest holding the whole version,
/// points `CURRENT` at it and writes `OPTIONS-<n>`.
///
/// Guarantees: on success the new state is durable and `CURRENT` names it. File numbers are
/// allocated in this order: the WAL, the manifest, the OPTIONS file, the temp files of
/// `CURRENT` and of the OPTIONS file.
fn install_new_state(
    locked: &LockedDir,
    opts: &Options,
    layout: (&Design, &Storage),
    rec: &mut Recovery,
    kept_wals: &HashSet<u64>,
) -> Result<Installed> {
    let LockedDir { fs, dir, .. } = locked;
    // The new WAL, then a new manifest naming the oldest WAL still needed.
    let wal_number = alloc(&rec.next_file);
    let wal = if opts.use_wal {
        Some(create_wal(fs, dir, opts, layout, wal_number, rec)?)
    } else {
        None
    };
    let log_number = kept_wals
        .iter()
        .copied()
        .min()
        .unwrap_or(wal_number)
        .min(wal_number);
    rec.edit.log_number = Some(log_number);
    rec.version = rec.version.apply(&rec.edit)?;
    let manifest_number = alloc(&rec.next_file);
    let options_number = alloc(&rec.next_file);
    let current_tmp = alloc(&rec.next_file);
    let options_tmp = alloc(&rec.next_file);
    let mut manifest = write_new_manifest(
        fs.as_ref(),
        dir,
        manifest_number,
        &rec.version,
        log_number,
        rec.next_file.load(Ordering::Relaxed),
        rec.last_seq,
    )?;
    if let Some(fe) = crate::manifest::family_snapshot_edit(&rec.families, rec.next_family_id) {
        manifest.append(&fe)?;
    }
    set_current(fs.as_ref(), dir, manifest_number, current_tmp)?;
    write_file_atomically(
        fs.as_ref(),
        dir,
        &filename::options_file(dir, options_number),
        opts.to_text().as_bytes(),
        options_tmp,
    )?;
    Ok(Installed {
        wal,
        wal_number,
        log_number,
        manifest,
        manifest_number,
        options_number,
    })
}

/// Step 7: deletes what the new state (`version`, the WALs in `kept_wals`, what `installed`
/// wrote) does not use: tables in any SSD directory that the version does not name, and,
/// from the database directory's listing `names`, WALs older than the new one and not kept,
/// other manifests and OPTIONS files, temp files.
///
/// Best effort (a file that cannot be removed, or a directory that cannot be listed, is
/// left for the next open), except for WALs at or above the new log number: those are
/// removed for good (the directory synced after them), or the open fails.
///
/// # Errors
/// `Io` from removing such a WAL or syncing the directory.
fn remove_unused_files(
    locked: &LockedDir,
    storage: &Storage,
    names: &[String],
    version: &Version,
    kept_wals: &HashSet<u64>,
    installed: &Installed,
) -> Result<()> {
    let mut wal_in_range_removed = false;
    // File GC: whatever the new state does not reference.
    let live: HashSet<(u64, TableLocation)> = version
        .all_tables()
        .map(|(_, t)| (t.id, t.location))
        .collect();
    for (id, location) in storage.list_tables().unwrap_or_default() {
        if !live.contains(&(id, location)) {
            storage.remove_table(id, location);
        }
    }
    for name in names {
        let Some((t, n)) = filename::parse_file_name(name) else {
            continue;
        };
        let obsolete = match t {
            FileType::Sst => false,
            FileType::Wal => n < installed.wal_number && !kept_wals.contains(&n),
            FileType::Manifest => n != installed.manifest_number,
            FileType::Options => n != installed.options_number,
            FileType::Temp => true,
            // The info logs are the info log's to rotate.
            FileType::Current | FileType::Lock | FileType::Identity | FileType::InfoLog => false,
        };
        if !obsolete {
            continue;
        }
        let path = locked.dir.join(name);
        if t == FileType::Wal && n >= installed.log_number {
            // A WAL at or above the new log number that no memtable needs (a spare never
            // written to, a WAL after a lost tail): a later recovery would replay it, so it
            // must be gone for good before any write is acknowledged (an empty file among
            // newer logs reads as a log that lost its tail, and ends replay there).
            locked.fs.remove_file(&path).map_err(io_err(&path))?;
            wal_in_range_removed = true;
        } else {
            let _ = locked.fs.remove_file(&path);
        }
    }
    if wal_in_range_removed {
        locked
            .fs
            .sync_dir(&locked.dir)
            .map_err(io_err(&locked.dir))?;
    }
    Ok(())
}

/// Step 8, first part: frees the extents of the NVM objects this open released, now that
/// the new manifest (durable) no longer lists them.
fn free_released(nvm: Option<&Arc<NvmTier>>, released: &[NvmObject]) {
    // The new manifest no longer lists them: their space is free.
    if let Some(tier) = nvm {
        for o in released {
            tier.free(o);
        }
    }
}

/// Step 8, second part: assembles the `DbInner`: a new empty active memtable fed by the new
/// WAL, the arranged memtable lists, the new version, the rewritten WAL (if any) as a
/// closed one whose sync is still owed.
///
/// Fails with a `Corruption` if the recovered state breaks the read order.
#[allow(clippy::too_many_arguments)]
fn assemble_db_inner(
    locked: LockedDir,
    opts: Options,
    info_log: Arc<InfoLog>,
    rec: Recovery,
    (storage, placement, design): (Arc<Storage>, Arc<dyn Placement>, Design),
    rewritten: Option<WalWriter>,
    lists: MemtableLists,
    installed: Installed,
    (families, snapshots): (
        &BTreeMap<u32, Arc<super::family::Family>>,
        Arc<SnapshotList>,
    ),
) -> Result<Arc<DbInner>> {
    let MemtableLists { imms, nvm_sealed } = lists;
    let closed_wals: Vec<Arc<ClosedWal>> = rewritten
        .map(|w| {
            Arc::new(ClosedWal {
                number: w.number(),
                writer: Mutex::new(Some(w)),
            })
        })
        .into_iter()
        .collect();
    let read_pool = if opts.parallel_reads {
        Some(crate::parallel::ReadPool::new(2)?)
    } else {
        None
    };

    let stats = Arc::new(StatsCollector::default());
    StatsCollector::add(&stats.nvm_wal_fallbacks, rec.wal_fallbacks);
    StatsCollector::add(
        &stats.nvm_memtables_dropped_at_open,
        rec.dropped_nvm_memtables,
    );
    let table_cache = Arc::new(TableCache::new(
        Arc::clone(&storage),
        opts.max_open_files,
        opts.block_cache_capacity,
        Arc::clone(&stats),
    ));
    let mem = Arc::new(MemTable::new(
        installed.wal_number,
        opts.memtable_capacity(),
        opts.key_order(),
    ));
    let version = Arc::new(rec.version);
    let mems = MemtableSet::new(mem, imms, nvm_sealed);
    let sv = mems.super_version(Arc::clone(&version));
    sv.check_read_order().map_err(|e| {
        Error::corruption(
            0,
            format!("recovered state of {}: {e}", locked.dir.display()),
        )
    })?;
    let policy = Arc::clone(design.policy());
    let pending = policy.pending_bytes(&version);
    Ok(Arc::new(DbInner {
        path: locked.dir,
        fs: locked.fs,
        stats,
        table_cache,
        writes: WritePipeline {
            write: Mutex::new(WriteState {
                wal: installed.wal,
                delay_debt_nanos: 0,
                free_rate: Default::default(),
                trace: crate::stats::WriteTrace::default(),
                last_assigned: rec.last_seq,
                family_bytes: 0,
            }),
            queue: Mutex::new(std::collections::VecDeque::new()),
            queued: std::sync::atomic::AtomicUsize::new(0),
            closed_wals: Mutex::new(closed_wals),
            wal_failed: AtomicBool::new(false),
            sync_wals_ahead: AtomicBool::new(design.syncs_wals_ahead()),
            // The open synced the directory after creating its WAL (with `CURRENT`).
            wal_entries_durable: AtomicU64::new(installed.wal_number),
            spare: Mutex::new(None),
        },
        versions: VersionState {
            manifest: Mutex::new(installed.manifest),
            super_version: ArcSwap::from_pointee(sv),
            last_seq: AtomicU64::new(rec.last_seq),
            next_file: rec.next_file,
            max_manifest_bytes: AtomicU64::new(MAX_MANIFEST_BYTES),
            snapshots,
        },
        jobs: Scheduler {
            state: Mutex::new(State {
                mems,
                version,
                log_number: installed.log_number,
                flush_running: false,
                claims: Claims::with_order(opts.key_order()),
                bg_compactions: 0,
                seek_compaction: None,
                bg_error: None,
                shutting_down: false,
                pending_compaction_bytes: pending,
                obsolete: Vec::new(),
                obsolete_nvm: Vec::new(),
            }),
            bg_cv: Condvar::new(),
            done_cv: Condvar::new(),
            threads: Mutex::new(Vec::new()),
        },
        gate: Arc::new(crate::gate::Gate::new()),
        lock: Mutex::new(Some(locked.lock)),
        info_log,
        storage,
        policy,
        design,
        placement,
        read_pool,
        opts,
        families: parking_lot::RwLock::new(super::family::Families {
            live: families.clone(),
            next_id: rec.next_family_id,
        }),
        has_families: AtomicBool::new(!families.is_empty()),
        parent: std::sync::OnceLock::new(),
        family_switch: Mutex::new(()),
    }))
}

/// Step 8, last part: starts the background threads (none with `manual_background`).
///
/// If a thread cannot be started, the database is shut down (the threads already started
/// stop) and the error returned.
fn start_background_threads(inner: &Arc<DbInner>) -> Result<()> {
    let jobs = if inner.opts.manual_background {
        0
    } else {
        inner.opts.max_background_jobs
    };
    let nice = i32::try_from(inner.opts.background_nice).unwrap_or(19);
    crate::memtable::set_reclaim_nice(nice);
    for i in 0..jobs {
        let bg = Arc::clone(inner);
        // With two threads or more, the first runs the flushes writers may wait on at the
        // process's priority and the others run compactions at `background_nice`; a single
        // thread runs both, at the process's priority.
        let (name, kind, lower) = match (jobs, i) {
            (1, _) => ("mezz-bg-0".to_string(), Jobs::All, false),
            (_, 0) => ("mezz-flush".to_string(), Jobs::Flushes, false),
            _ => (format!("mezz-bg-{i}"), Jobs::Compactions, nice > 0),
        };
        let h = std::thread::Builder::new().name(name).spawn(move || {
            if lower {
                // Advisory: where the kernel refuses, the thread runs as it is.
                let _ = mezz_pmem::sched::lower_current_thread_priority(nice);
            }
            // A panic in a job must not leave writers and `flush` callers waiting for a
            // thread that is gone: it becomes the background error, which they return.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                bg.background_loop(kind);
            }));
            if let Err(payload) = ran {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                bg.set_bg_error(&format!("a background thread panicked: {what}"));
            }
        });
        match h {
            Ok(h) => inner.jobs.threads.lock().push(h),
            Err(e) => {
                inner.gate.shut();
                let _ = inner.shutdown();
                inner.gate.finish();
                return Err(Error::from(e));
            }
        }
    }
    Ok(())
}

/// How long each step of an open took, for the LOG's `recovered:` line: `manifest` (its
/// replay, and the column families' opens), `nvm` (the NVM pool and its structures),
/// `checks` (units and reachability), `wal replay` (with the families' flushes of what it
/// gave them) and `install` (the new manifest, the files removed).
struct OpenPhases {
    last: Instant,
    spent: Vec<(&'static str, std::time::Duration)>,
}

impl OpenPhases {
    fn new(started: Instant) -> Self {
        Self {
            last: started,
            spent: Vec::new(),
        }
    }

    /// Ends the step named `name` now.
    fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.spent.push((name, now - self.last));
        self.last = now;
    }
}

impl std::fmt::Display for OpenPhases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let total: std::time::Duration = self.spent.iter().map(|(_, d)| *d).sum();
        write!(f, "{:.1} ms (", total.as_secs_f64() * 1e3)?;
        for (i, (name, d)) in self.spent.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name} {:.1}", d.as_secs_f64() * 1e3)?;
        }
        f.write_str(")")
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).in_file(path)
}

/// Creates WAL `number` during open where the design places it (an NVM WAL's object goes
/// into `rec.edit`, which the new manifest records), else, or when the design's place has
/// no room, a file (counted in `rec.wal_fallbacks`).
fn create_wal(
    fs: &Arc<dyn mezz_env::FileSystem>,
    dir: &Path,
    opts: &Options,
    (design, storage): (&Design, &Storage),
    number: u64,
    rec: &mut Recovery,
) -> Result<WalWriter> {
    match design.wals().place(storage, opts, number)? {
        WalPlace::Nvm(obj, w) => {
            rec.edit.new_nvm_objects.push(obj);
            return Ok(w);
        }
        WalPlace::FileFallback => rec.wal_fallbacks += 1,
        WalPlace::File => {}
    }
    let mut w = WalWriter::create(fs.as_ref(), dir, number, opts.wal_mapped())?;
    w.set_early_writeback(design.syncs_wals_ahead());
    Ok(w)
}

/// Rewrites the entries of `m` (replayed from a torn WAL) into a new WAL `number` and a new
/// memtable fed by it; returns both. Entries are logged in sequence order, consecutive
/// sequence numbers in one batch.
fn relog_memtable(
    fs: &Arc<dyn mezz_env::FileSystem>,
    dir: &Path,
    opts: &Options,
    layout: (&Design, &Storage),
    m: &Arc<MemTable>,
    number: u64,
    rec: &mut Recovery,
) -> Result<(WalWriter, Arc<MemTable>)> {
    let mut w = create_wal(fs, dir, opts, layout, number, rec)?;
    let mut entries: Vec<(SeqNo, Vec<u8>, Vec<u8>)> = Vec::with_capacity(m.len());
    let mut it = m.iter();
    it.seek_to_first();
    while it.valid() {
        let k = it.key();
        entries.push((
            mezz_format::ikey::trailer(k) >> 8,
            k.to_vec(),
            it.value().to_vec(),
        ));
        it.next();
    }
    drop(it);
    entries.sort_by_key(|e| e.0);
    // The same entries (their nodes' heights drawn anew): room for twice the bytes.
    let m2 = Arc::new(MemTable::new(
        number,
        opts.memtable_capacity()
            .max(m.approximate_memory_usage().saturating_mul(2)),
        opts.key_order(),
    ));
    let mut batch = WriteBatch::new();
    let flush = |batch: &mut WriteBatch, w: &mut WalWriter| -> Result<()> {
        if !batch.is_empty() {
            w.append(batch.data(), false)?;
            m2.insert_batch(batch)?;
            *batch = WriteBatch::new();
        }
        Ok(())
    };
    let mut next_seq = 0;
    for (seq, ikey, value) in &entries {
        if batch.is_empty() || *seq != next_seq || batch.approximate_size() > 1 << 20 {
            flush(&mut batch, &mut w)?;
            batch.set_sequence(*seq);
        }
        let Some(pk) = mezz_format::ikey::parse_internal_key(ikey) else {
            return Err(Error::corruption(
                0,
                "malformed internal key in a replayed memtable",
            ));
        };
        match pk.kind {
            mezz_format::ValueKind::Deletion => batch.delete(pk.user_key),
            _ => batch.put(pk.user_key, value),
        }
        next_seq = seq + 1;
    }
    flush(&mut batch, &mut w)?;
    // Newer writes go to a newer WAL: this one must end exactly at its records, sealed.
    w.seal()?;
    w.close()?;
    w.sync()?;
    fs.sync_dir(dir).map_err(io_err(dir))?;
    Ok((w, m2))
}

/// The id of a database whose manifest records none yet (it is being created): the one in
/// `IDENTITY` if an earlier open of this directory got that far before it was interrupted
/// (so it can reclaim the NVM pool it may have created), else a new one, written to
/// `IDENTITY` (synced) before anything else records it.
fn new_db_identity(fs: &dyn mezz_env::FileSystem, dir: &Path, temp: u64) -> Result<[u8; 16]> {
    let path = filename::identity_file(dir);
    if fs.exists(&path) {
        let bytes = fs.read_all(&path).map_err(io_err(&path))?;
        return parse_identity(&bytes).ok_or_else(|| Error::Corruption {
            file: Some(path.clone()),
            offset: 0,
            detail: "IDENTITY does not hold a database id (32 hex digits)".into(),
        });
    }
    let id: [u8; 16] = rand::random();
    let text = mezz_pmem::pool::db_id_hex(&id);
    write_file_atomically(fs, dir, &path, format!("{text}\n").as_bytes(), temp)?;
    Ok(id)
}

/// Parses `IDENTITY`: 32 hex digits and a newline.
fn parse_identity(bytes: &[u8]) -> Option<[u8; 16]> {
    let text = std::str::from_utf8(bytes).ok()?.strip_suffix('\n')?;
    if text.len() != 32 {
        return None;
    }
    let mut id = [0u8; 16];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use mezz_env::MemFs;

    fn write(fs: &MemFs, path: &Path, data: &[u8]) {
        let mut f = fs.create(path).unwrap();
        f.append(data).unwrap();
        f.sync().unwrap();
    }

    /// The chunked scan answers as a scan of the whole file would: a non-zero byte past the
    /// first chunk, or in the last byte of a file of whole chunks, still counts as written.
    #[test]
    fn only_zeros_is_decided_over_the_whole_file() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let p = Path::new("/d/f");
        write(&fs, p, &[]);
        assert!(file_holds_only_zeros(&fs, p).unwrap(), "empty");
        for len in [1usize, 4096, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20] {
            let mut data = vec![0u8; len];
            write(&fs, p, &data);
            assert!(file_holds_only_zeros(&fs, p).unwrap(), "{len} zeros");
            for at in [0, len / 2, len - 1] {
                data.fill(0);
                if let Some(b) = data.get_mut(at) {
                    *b = 0x5a;
                }
                write(&fs, p, &data);
                assert!(!file_holds_only_zeros(&fs, p).unwrap(), "{len}: byte {at}");
            }
        }
        assert!(file_holds_only_zeros(&fs, Path::new("/d/missing")).is_err());
    }
}
