//! Opening a database: lock, manifest replay, WAL replay, a fresh manifest, file GC,
//! the OPTIONS file, and the background threads.
//!
//! Recovery, step by step (see `docs/impl.md`):
//! 1. Validate the options; create the directory if allowed; take the LOCK.
//! 2. If `CURRENT` exists, replay the manifest it names into a version plus the log
//!    number, next file number and last sequence.
//! 3. Replay every WAL numbered >= the log number, oldest first, into a memtable; a
//!    memtable that fills is written to an L0 table; at the end the last memtable is
//!    written too. So every replayed WAL becomes obsolete and the database starts with an
//!    empty memtable and a new WAL. Damage: under `TolerateCorruptTail` a torn tail of any
//!    WAL ends recovery there (point in time: later WALs are not replayed — a WAL switched
//!    out is synced off the write path, and a `sync` write first syncs every older WAL, so
//!    nothing acknowledged as durable lies beyond a tear); anything else is a `Corruption`
//!    naming file and offset.
//! 4. Write a new manifest holding the whole version, point `CURRENT` at it (temp file +
//!    rename + directory sync).
//! 5. Delete every file the new state does not use: SSTs not in the version, older WALs and
//!    manifests, temp files, older OPTIONS files. Write `OPTIONS-<n>`.
//! 6. Start the background threads (they compact if the recovered shape needs it).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use arc_swap::ArcSwap;
use mezz_format::SeqNo;
use parking_lot::{Condvar, Mutex};

use std::collections::HashSet;

use crate::batch::WriteBatch;
use crate::compaction::{
    Claims, CompactionPolicy, DbDirPlacement, LeveledPolicy, SstSink, write_table,
};
use crate::error::{Error, Result};
use crate::filename::{self, FileType};
use crate::manifest::{
    VersionEdit, recover_manifest, set_current, write_file_atomically, write_new_manifest,
};
use crate::memtable::MemTable;
use crate::memtable::set::{MemtableSet, NvmMemtablePolicy};
use crate::options::NvmMemtable;
use crate::options::{Options, RecoveryMode};
use crate::stats::StatsCollector;
use crate::storage::Storage;
use crate::storage::nvm::NvmTier;
use crate::storage::nvm::{NvmObject, NvmObjectKind};
use crate::table::cache::TableCache;
use crate::version::Version;
use crate::wal::{ReplayEnd, WalWriter, replay_wal, replay_wal_bytes};

use super::{DbInner, MAX_MANIFEST_BYTES, SnapshotList, State, WriteState};

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).in_file(path)
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
}

/// Creates WAL `number` during open: in NVM with `wal_on_nvm` (its object goes into `edit`,
/// which the new manifest records), else a file.
fn create_wal(
    fs: &Arc<dyn mezz_env::FileSystem>,
    dir: &Path,
    opts: &Options,
    nvm: Option<&Arc<NvmTier>>,
    number: u64,
    edit: &mut VersionEdit,
) -> Result<WalWriter> {
    match (opts.wal_on_nvm, nvm) {
        (true, Some(tier)) => {
            let obj = tier.alloc(number, NvmObjectKind::Wal, opts.nvm_wal_bytes())?;
            edit.new_nvm_objects.push(obj);
            WalWriter::create_nvm(tier, obj)
        }
        _ => WalWriter::create(fs.as_ref(), dir, number),
    }
}

/// Rewrites the entries of `m` (replayed from a torn WAL) into a new WAL `number` and a new
/// memtable fed by it; returns both. Entries are logged in sequence order, consecutive
/// sequence numbers in one batch.
fn relog_memtable(
    fs: &Arc<dyn mezz_env::FileSystem>,
    dir: &Path,
    opts: &Options,
    nvm: Option<&Arc<NvmTier>>,
    m: &Arc<MemTable>,
    number: u64,
    edit: &mut VersionEdit,
) -> Result<(WalWriter, Arc<MemTable>)> {
    let mut w = create_wal(fs, dir, opts, nvm, number, edit)?;
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
    let m2 = Arc::new(MemTable::new(number));
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

pub(super) fn open(path: &Path, opts: Options) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let fs = Arc::clone(&opts.fs);
    let dir = path.to_path_buf();
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
    let mode = if opts.paranoid_checks {
        RecoveryMode::AbsoluteConsistency
    } else {
        opts.recovery_mode
    };

    let (mut version, log_number, manifest_next, mut last_seq) = if exists {
        let r = recover_manifest(fs.as_ref(), &dir, opts.num_levels, mode)?;
        (r.version, r.log_number, r.next_file_number, r.last_sequence)
    } else {
        (Version::new(opts.num_levels), 0, 1, 0)
    };

    // Every number in use, so new files never collide with leftovers.
    let names = fs.list_dir(&dir).map_err(io_err(&dir))?;
    let parsed: Vec<(FileType, u64)> = names
        .iter()
        .filter_map(|n| filename::parse_file_name(n))
        .collect();
    let max_seen = parsed.iter().map(|&(_, n)| n).max().unwrap_or(0);
    let next_file = AtomicU64::new(manifest_next.max(max_seen + 1));
    let alloc = || next_file.fetch_add(1, Ordering::Relaxed);

    // The database's identity (recorded in the manifest and the NVM pool's superblock).
    let mut edit = VersionEdit::default();
    let db_id = match version.db_id {
        Some(id) => id,
        None => {
            let id = new_db_identity(fs.as_ref(), &dir, alloc())?;
            edit.db_id = Some(id);
            id
        }
    };

    // The NVM tier: its free space is whatever the recovered version does not list.
    let live: Vec<NvmObject> = version.nvm_objects.values().copied().collect();
    // The tier is opened when something lives or will live there (an `nvm_dir` that no
    // option uses costs nothing).
    let uses_nvm = opts.wal_on_nvm || opts.nvm_memtable != NvmMemtable::Off || !live.is_empty();
    let nvm = if opts.has_nvm() && uses_nvm {
        Some(NvmTier::open(&opts, db_id, &live, !exists)?)
    } else if !live.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "the database at {} keeps {} objects in an NVM pool: open it with nvm_dir set",
            dir.display(),
            live.len()
        )));
    } else {
        None
    };
    let storage = Arc::new(Storage::new(
        Arc::clone(&fs),
        dir.clone(),
        Vec::new(),
        nvm.clone(),
    ));
    let mut nvm_mems: Vec<Arc<MemTable>> = Vec::new();
    if let Some(tier) = &nvm {
        for o in live.iter().filter(|o| o.kind == NvmObjectKind::Memtable) {
            let list = crate::memtable::nvm_list::NvmList::recover(tier, *o)?;
            last_seq = last_seq.max(list.physical_max_seq());
            nvm_mems.push(Arc::new(MemTable::nvm(o.id, list)));
        }
    }
    // NVM objects released by this open; their extents are freed once the new manifest
    // is durable.
    let mut released: Vec<NvmObject> = Vec::new();

    // The WALs to replay, oldest first: files and NVM logs numbered >= the log number.
    let mut wals: Vec<WalSource> = Vec::new();
    if exists {
        for &(t, n) in &parsed {
            if t == FileType::Wal && n >= log_number {
                wals.push(WalSource::File(n));
            }
        }
    }
    for o in live.iter().filter(|o| o.kind == NvmObjectKind::Wal) {
        if o.id >= log_number {
            wals.push(WalSource::Nvm(*o));
        } else {
            edit.deleted_nvm_objects.push(o.id);
            released.push(*o);
        }
    }
    wals.sort_by_key(WalSource::number);
    let replay = |src: &WalSource,
                  tolerate: bool,
                  apply: &mut dyn FnMut(WriteBatch) -> Result<()>|
     -> Result<ReplayEnd> {
        match src {
            WalSource::File(n) => {
                replay_wal(fs.as_ref(), &filename::wal_file(&dir, *n), tolerate, apply)
            }
            WalSource::Nvm(o) => {
                let tier = nvm
                    .as_ref()
                    .ok_or_else(|| Error::InvalidArgument("NVM WAL without an NVM tier".into()))?;
                let bytes = tier.read_log(o)?;
                replay_wal_bytes(
                    bytes,
                    &tier.dir().join(crate::storage::nvm::POOL_FILE),
                    tolerate,
                    apply,
                )
            }
        }
    };
    let tolerate = mode == RecoveryMode::TolerateCorruptTail;
    // Every WAL not kept below becomes obsolete with the new manifest.
    let mut kept_wals: HashSet<u64> = HashSet::new();
    let mut kept_mems: Vec<Arc<MemTable>> = Vec::new();
    // A WAL rewritten at open (the valid prefix of a torn one) that feeds a kept memtable.
    let mut rewritten: Option<WalWriter> = None;
    let mem_policy = NvmMemtablePolicy::new(opts.nvm_memtable);
    let keep_memtables = mem_policy.keeps_recovered_memtables(!nvm_mems.is_empty());

    if !keep_memtables {
        // Replay the WALs into memtables, writing full ones (and the last) to L0.
        let mut mem = Arc::new(MemTable::new(0));
        let flush_mem = |mem: &Arc<MemTable>, edit: &mut VersionEdit| -> Result<()> {
            if mem.is_empty() {
                return Ok(());
            }
            let mut sink = SstSink::new(&storage, &opts, 0, &alloc, &DbDirPlacement);
            let mut it = mem.iter();
            if let Some(w) = write_table(&mut sink, it.as_mut())? {
                edit.new_tables.push((0, w.meta));
            }
            Ok(())
        };
        // A torn tail ends recovery at that point (point in time), even in a WAL that is
        // not the newest: a WAL switched out is synced off the write path, so a power cut
        // can tear it while a newer WAL holds later (never synced) writes. Replaying those
        // would leave a hole in the history; no acknowledged-durable write is among them,
        // because a `sync` write first syncs every older WAL. Later WALs become obsolete
        // with the new log number.
        for src in &wals {
            let end = replay(src, tolerate, &mut |batch: WriteBatch| {
                let n = batch.len() as u64;
                if n > 0 {
                    let seq: SeqNo = batch.sequence();
                    mem.insert_batch(&batch)?;
                    last_seq = last_seq.max(seq + n - 1);
                }
                if mem.approximate_memory_usage() >= opts.write_buffer_size {
                    flush_mem(&mem, &mut edit)?;
                    mem = Arc::new(MemTable::new(0));
                }
                Ok(())
            })?;
            if matches!(end, ReplayEnd::TornTail { .. }) {
                break;
            }
        }
        flush_mem(&mem, &mut edit)?;
        drop(mem);
    } else {
        // NVM memtables are mapped back, not replayed; so the WALs' memtables must stay
        // memtables too (an L0 table written now would be newer than an NVM memtable that
        // reads consult first). Each WAL becomes one immutable memtable, flushed later in
        // order; a torn WAL's valid prefix is rewritten into a new WAL (a later crash must
        // not stop at the old tear before newer WALs), and the WALs after it are dropped.
        for src in &wals {
            let m = Arc::new(MemTable::new(src.number()));
            let end = replay(src, tolerate, &mut |batch: WriteBatch| {
                let n = batch.len() as u64;
                if n > 0 {
                    m.insert_batch(&batch)?;
                    last_seq = last_seq.max(batch.sequence() + n - 1);
                }
                Ok(())
            })?;
            let torn = matches!(end, ReplayEnd::TornTail { .. });
            if !m.is_empty() {
                if torn {
                    let number = alloc();
                    let (w, m2) =
                        relog_memtable(&fs, &dir, &opts, nvm.as_ref(), &m, number, &mut edit)?;
                    rewritten = Some(w);
                    kept_wals.insert(number);
                    kept_mems.push(m2);
                } else {
                    if let WalSource::File(n) = src {
                        // Replayed from the OS cache after a process crash: make it durable
                        // before newer writes can be acknowledged.
                        let path = filename::wal_file(&dir, *n);
                        fs.open_append(&path)
                            .and_then(|mut f| f.sync())
                            .map_err(|e| Error::from(e).in_file(&path))?;
                    }
                    kept_wals.insert(src.number());
                    kept_mems.push(m);
                }
            }
            if torn {
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
            let copy = nvm_mems
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
        for src in &wals {
            if let WalSource::Nvm(o) = src
                && !kept_wals.contains(&o.id)
            {
                edit.deleted_nvm_objects.push(o.id);
                released.push(*o);
            }
        }
    }
    if !edit.new_tables.is_empty() {
        fs.sync_dir(&dir).map_err(io_err(&dir))?;
    }
    // Empty NVM memtables hold nothing: release them.
    nvm_mems.retain(|m| {
        if m.is_empty()
            && let Some(l) = m.nvm_list()
        {
            edit.deleted_nvm_objects.push(m.id());
            released.push(l.object());
            false
        } else {
            true
        }
    });

    // Where the recovered memtables go. Reads consult memtables newest first and take the
    // first hit, so every list is ordered by sequence number (newest first), never by
    // object number: a memtable started later can hold older data (a receiver created to
    // take an old DRAM memtable while a newer mutable-mode NVM memtable waits above it).
    // Under `nvm_memtable = immutable`, NVM memtables that are older than every recovered
    // DRAM memtable go below them as full ones waiting for their flush (the shape that mode
    // keeps); otherwise all memtables share one list, flushed oldest first. A recovered
    // NVM memtable never becomes the receiver again: merges into it would lift its commit
    // word over a write group that a crash cut short in it.
    let oldest_kept = kept_mems
        .iter()
        .map(|m| m.min_seq())
        .min()
        .unwrap_or(u64::MAX);
    let newest_first = |m: &Arc<MemTable>| std::cmp::Reverse((m.max_seq(), m.id()));
    let mut imms: Vec<Arc<MemTable>> = kept_mems;
    let mut nvm_sealed: Vec<Arc<MemTable>> = Vec::new();
    if opts.nvm_memtable == NvmMemtable::Immutable
        && nvm_mems.iter().all(|m| m.max_seq() < oldest_kept)
    {
        nvm_sealed = nvm_mems;
        nvm_sealed.sort_by_key(newest_first);
    } else {
        imms.extend(nvm_mems);
    }
    imms.sort_by_key(newest_first);

    // The new WAL, then a new manifest naming the oldest WAL still needed.
    let wal_number = alloc();
    let wal = if opts.use_wal {
        Some(create_wal(
            &fs,
            &dir,
            &opts,
            nvm.as_ref(),
            wal_number,
            &mut edit,
        )?)
    } else {
        None
    };
    let log_number = kept_wals
        .iter()
        .copied()
        .min()
        .unwrap_or(wal_number)
        .min(wal_number);
    edit.log_number = Some(log_number);
    version = version.apply(&edit)?;
    let manifest_number = alloc();
    let options_number = alloc();
    let current_tmp = alloc();
    let options_tmp = alloc();
    let manifest = write_new_manifest(
        fs.as_ref(),
        &dir,
        manifest_number,
        &version,
        log_number,
        next_file.load(Ordering::Relaxed),
        last_seq,
    )?;
    set_current(fs.as_ref(), &dir, manifest_number, current_tmp)?;
    write_file_atomically(
        fs.as_ref(),
        &dir,
        &filename::options_file(&dir, options_number),
        opts.to_text().as_bytes(),
        options_tmp,
    )?;

    // File GC: whatever the new state does not reference.
    let live: std::collections::HashSet<u64> = version.all_tables().map(|(_, t)| t.id).collect();
    for name in &names {
        let Some((t, n)) = filename::parse_file_name(name) else {
            continue;
        };
        let obsolete = match t {
            FileType::Sst => !live.contains(&n),
            FileType::Wal => n < wal_number && !kept_wals.contains(&n),
            FileType::Manifest => n != manifest_number,
            FileType::Options => n != options_number,
            FileType::Temp => true,
            FileType::Current | FileType::Lock | FileType::Identity => false,
        };
        if obsolete {
            let _ = fs.remove_file(&dir.join(name));
        }
    }

    // The new manifest no longer lists them: their space is free.
    if let Some(tier) = &nvm {
        for o in &released {
            tier.free(o);
        }
    }
    drop(released);
    let closed_wals: Vec<Arc<super::ClosedWal>> = rewritten
        .map(|w| {
            Arc::new(super::ClosedWal {
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
    let table_cache = Arc::new(TableCache::new(
        Arc::clone(&storage),
        opts.max_open_files,
        opts.block_cache_capacity,
        Arc::clone(&stats),
    ));
    let mem = Arc::new(MemTable::new(wal_number));
    let version = Arc::new(version);
    let mems = MemtableSet::new(mem_policy, mem, imms, nvm_sealed);
    let sv = mems.super_version(Arc::clone(&version));
    sv.check_read_order()
        .map_err(|e| Error::corruption(0, format!("recovered state of {}: {e}", dir.display())))?;
    let policy: Arc<dyn CompactionPolicy> = Arc::new(LeveledPolicy::new(&opts));
    let pending = policy.pending_bytes(&version);
    let jobs = if opts.manual_background {
        0
    } else {
        opts.max_background_jobs
    };
    let inner = Arc::new(DbInner {
        path: dir,
        fs,
        stats,
        table_cache,
        super_version: ArcSwap::from_pointee(sv),
        last_seq: AtomicU64::new(last_seq),
        next_file,
        snapshots: Arc::new(SnapshotList::default()),
        write: Mutex::new(WriteState {
            wal,
            delay_debt_nanos: 0,
        }),
        queue: Mutex::new(std::collections::VecDeque::new()),
        manifest: Mutex::new(manifest),
        state: Mutex::new(State {
            mems,
            version,
            log_number,
            flush_running: false,
            claims: Claims::new(),
            bg_error: None,
            shutting_down: false,
            pending_compaction_bytes: pending,
            obsolete: Vec::new(),
        }),
        bg_cv: Condvar::new(),
        done_cv: Condvar::new(),
        closed: AtomicBool::new(false),
        max_manifest_bytes: AtomicU64::new(MAX_MANIFEST_BYTES),
        lock: Mutex::new(Some(lock)),
        threads: Mutex::new(Vec::new()),
        closed_wals: Mutex::new(closed_wals),
        storage,
        policy,
        placement: Arc::new(DbDirPlacement),
        read_pool,
        opts,
    });
    for i in 0..jobs {
        let bg = Arc::clone(&inner);
        let h = std::thread::Builder::new()
            .name(format!("mezz-bg-{i}"))
            .spawn(move || bg.background_loop());
        match h {
            Ok(h) => inner.threads.lock().push(h),
            Err(e) => {
                inner.closed.store(true, Ordering::Release);
                let _ = inner.shutdown();
                return Err(Error::from(e));
            }
        }
    }
    Ok(inner)
}
