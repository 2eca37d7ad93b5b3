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

use crate::compaction::{estimate_pending_compaction_bytes, write_table};
use crate::error::{Error, Result};
use crate::filename::{self, FileType};
use crate::memtable::MemTable;
use crate::options::{Options, RecoveryMode};
use crate::sst::TableCache;
use crate::stats::StatsCollector;
use crate::version::{
    SuperVersion, Version, VersionEdit, recover_manifest, set_current, write_file_atomically,
    write_new_manifest,
};
use crate::wal::{ReplayEnd, WalWriter, replay_wal};

use super::{DbInner, MAX_MANIFEST_BYTES, SnapshotList, State, WriteState};

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).in_file(path)
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

    let mut wals: Vec<u64> = if exists {
        parsed
            .iter()
            .filter(|&&(t, n)| t == FileType::Wal && n >= log_number)
            .map(|&(_, n)| n)
            .collect()
    } else {
        Vec::new()
    };
    wals.sort_unstable();

    // Replay the WALs into memtables, writing full ones (and the last) to L0.
    let mut edit = VersionEdit::default();
    let mut mem = Arc::new(MemTable::new(0));
    let flush_mem = |mem: &Arc<MemTable>, edit: &mut VersionEdit| -> Result<()> {
        if mem.is_empty() {
            return Ok(());
        }
        let mut it = mem.iter();
        if let Some(w) = write_table(fs.as_ref(), &dir, &opts, alloc(), it.as_mut())? {
            edit.new_tables.push((0, w.meta));
        }
        Ok(())
    };
    // A torn tail ends recovery at that point (point in time), even in a WAL that is not
    // the newest: a WAL switched out is synced off the write path, so a power cut can tear
    // it while a newer WAL holds later (never synced) writes. Replaying those would leave a
    // hole in the history; no acknowledged-durable write is among them, because a `sync`
    // write first syncs every older WAL. Later WALs become obsolete with the new log number.
    let tolerate = mode == RecoveryMode::TolerateCorruptTail;
    for &number in &wals {
        let wal_path = filename::wal_file(&dir, number);
        let end = replay_wal(fs.as_ref(), &wal_path, tolerate, |batch| {
            let n = batch.len() as u64;
            if n > 0 {
                let seq: SeqNo = batch.sequence();
                mem.insert_batch(&batch);
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
    if !edit.new_tables.is_empty() {
        fs.sync_dir(&dir).map_err(io_err(&dir))?;
    }

    // The new WAL, then a new manifest naming it as the log number.
    let wal_number = alloc();
    let wal = if opts.use_wal {
        Some(WalWriter::create(fs.as_ref(), &dir, wal_number)?)
    } else {
        None
    };
    edit.log_number = Some(wal_number);
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
        wal_number,
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
            FileType::Wal => n < wal_number,
            FileType::Manifest => n != manifest_number,
            FileType::Options => n != options_number,
            FileType::Temp => true,
            FileType::Current | FileType::Lock => false,
        };
        if obsolete {
            let _ = fs.remove_file(&dir.join(name));
        }
    }

    let stats = Arc::new(StatsCollector::default());
    let table_cache = Arc::new(TableCache::new(
        Arc::clone(&fs),
        dir.clone(),
        opts.max_open_files,
        opts.block_cache_capacity,
        Arc::clone(&stats),
    ));
    let mem = Arc::new(MemTable::new(wal_number));
    let version = Arc::new(version);
    let sv = SuperVersion {
        mem: Arc::clone(&mem),
        imms: Vec::new(),
        version: Arc::clone(&version),
    };
    let pending = estimate_pending_compaction_bytes(&version, &opts);
    let jobs = opts.max_background_jobs;
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
            mem: Arc::clone(&mem),
            wal,
            delay_debt_nanos: 0,
        }),
        queue: Mutex::new(std::collections::VecDeque::new()),
        manifest: Mutex::new(manifest),
        state: Mutex::new(State {
            mem,
            imms: Vec::new(),
            version,
            log_number: wal_number,
            flush_running: false,
            compactions_running: 0,
            busy_levels: vec![false; opts.num_levels],
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
        closed_wals: Mutex::new(Vec::new()),
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
