//! `Db::checkpoint`: a consistent, openable copy of the database in another directory,
//! taken while writes go on (RocksDB's `Checkpoint::CreateCheckpoint`).
//!
//! Owns: building the copy. The copy is a plain SSD database: its manifest names SST files
//! only, so it opens with any preset, with or without an NVM directory.
//! - The super versions of every family (the default one and each live column family) and
//!   the last published sequence number `S` are loaded in one step, under the `write` lock
//!   once every logged group is published (`DbInner::pin_for_checkpoint`): no group, no
//!   memtable switch (all families switch together, under that lock) and no family created
//!   or dropped falls between the loads. Every write acknowledged before the call is at or
//!   below `S` and in the pinned memtables or tables, no pinned table holds one above `S`,
//!   and a batch spanning families is in every family's copy or in none. Holding a super
//!   version keeps every table it names (and the NVM objects and matrix pages they live in)
//!   from being deleted or reused until its copy is done: obsolete tables are removed only
//!   once nothing holds them.
//! - SST files are hard-linked into the copy (copied where linking fails, e.g. across file
//!   systems), whatever SSD directory (`ssd_paths`) they are in; the copy keeps them all in
//!   its own directory.
//! - What lives in NVM or DRAM is materialised as SSTs: each NVM table or matrix row
//!   becomes one SST with the same table id at the same level (same key and sequence
//!   ranges, so the version's shape and L0 read order stay), and the memtables' entries at
//!   or below `S` become one L0 SST, newer than every other table.
//! - A new manifest (a snapshot of that version, last sequence `S`, no WAL needed), a new
//!   database identity (so the copy can never be opened against the source's NVM pool),
//!   `CURRENT`, `IDENTITY` and `OPTIONS` are written; the copy is built in `<dir>.tmp`,
//!   synced, and renamed to `dir` only when complete (on a file system that cannot rename
//!   directories, its files are moved into `dir` one by one, `CURRENT` last).
//! - Column families: each live family's copy is made the same way in `<dir>/cf-<id>/`
//!   (its own manifest, `CURRENT`, `IDENTITY`, `OPTIONS`), and the copy's manifest records
//!   the same families and next family id. A family's recorded options are kept but for
//!   where its files go: no `ssd_paths`, no NVM tier (`copy_family_options`), so the copy's
//!   family is an SSD family in the copy's directory, never one using the source's SSD or
//!   NVM directories. `CheckpointInfo` names a family's files `cf-<id>/<name>`.
//!
//! Invariant: the source database's files are never written: a failure or a crash leaves
//! it as it was (and at most a `<dir>.tmp` directory, which the next checkpoint to `dir`
//! removes).
//!
//! Thread-safety: runs on the caller's thread, beside writers, reads and background jobs;
//! it holds the `write` lock (writers wait) only to let the groups logged be published and
//! load the super versions, no engine lock while copying.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mezz_env::FileSystem;
use mezz_format::SeqNo;
use mezz_format::ikey::parse_internal_key;
use mezz_format::iter::InternalIterator;
use mezz_format::sst::TableBuilder;

use super::DbInner;
use super::family::{Family, family_dir_name, family_options, parse_family_dir};
use crate::compaction::sink::table_builder_options;
use crate::error::{Error, Result};
use crate::filename;
use crate::iter::merging_iterator;
use crate::manifest::{
    COMPARATOR_NAME, FamilyRecord, MANIFEST_BASE_VERSION, VersionEdit, family_snapshot_edit,
    set_current, write_new_manifest,
};
use crate::options::{NvmTiering, Options};
use crate::state::SuperVersion;
use crate::table::{TableLocation, TableMeta, TableReadOptions};
use crate::version::Version;

/// What [`crate::Db::checkpoint`] made. With column families the counts and lists include
/// every family's files; a family's are named `cf-<id>/<name>` (relative to the copy).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The copy holds every write with a sequence number up to this one, and none above
    /// (its manifest's last sequence number).
    pub last_sequence: SeqNo,
    /// SST files hard-linked from the source.
    pub linked: usize,
    /// SST files copied from the source (linking failed).
    pub copied: usize,
    /// SSTs written from data in NVM or in memtables.
    pub materialised: usize,
    /// Bytes of every table of the copy.
    pub table_bytes: u64,
    /// The names of the copy's table files (in its directory; a column family's as
    /// `cf-<id>/<name>`: table numbers are per family).
    pub tables: Vec<String>,
    /// The names of the copy's other files (manifest, `CURRENT`, `IDENTITY`, `OPTIONS`; a
    /// column family's as `cf-<id>/<name>`).
    pub others: Vec<String>,
}

/// Bytes read and written at a time when copying a file.
const COPY_CHUNK: usize = 1 << 20;

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).in_file(path)
}

/// Copies `from` to `to` through `fs` and syncs `to`; returns the bytes copied.
fn copy_file(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<u64> {
    let src = fs.open_read(from).map_err(io_at(from))?;
    let size = src.size();
    let mut dst = fs.create(to).map_err(io_at(to))?;
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut off = 0u64;
    while off < size {
        let n = usize::try_from((size - off).min(COPY_CHUNK as u64)).unwrap_or(COPY_CHUNK);
        let chunk = buf.get_mut(..n).expect("n <= COPY_CHUNK");
        src.read_exact_at(off, chunk).map_err(io_at(from))?;
        dst.append(chunk).map_err(io_at(to))?;
        off += n as u64;
    }
    dst.sync().map_err(io_at(to))?;
    dst.close().map_err(io_at(to))?;
    Ok(size)
}

/// Removes `dir` and the files in it, and its family directories (`cf-<id>`) with theirs
/// (a leftover of an interrupted checkpoint).
fn remove_dir_and_files(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    for name in fs.list_dir(dir).map_err(io_at(dir))? {
        let p = dir.join(&name);
        if parse_family_dir(&name).is_some() && fs.list_dir(&p).is_ok() {
            remove_dir_and_files(fs, &p)?;
        } else {
            fs.remove_file(&p).map_err(io_at(&p))?;
        }
    }
    fs.remove_dir(dir).map_err(io_at(dir))
}

/// Moves every file of `from` into the new directory `to`, its family directories
/// (`cf-<id>`) first, file by file, `CURRENT` last, and removes `from`.
fn move_files(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<()> {
    fs.create_dir_all(to).map_err(io_at(to))?;
    let current = filename::current_file(Path::new(""));
    let mut names = fs.list_dir(from).map_err(io_at(from))?;
    names.sort_by_key(|n| Path::new(n) == current);
    for name in names {
        let src = from.join(&name);
        let dst = to.join(&name);
        if parse_family_dir(&name).is_some() && fs.list_dir(&src).is_ok() {
            move_files(fs, &src, &dst)?;
            continue;
        }
        fs.rename(&src, &dst).map_err(io_at(&dst))?;
    }
    fs.sync_dir(to).map_err(io_at(to))?;
    fs.remove_dir(from).map_err(io_at(from))
}

/// `<dir>.tmp`, where the copy is built.
fn temp_dir_of(dir: &Path) -> Result<PathBuf> {
    let name = dir.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "checkpoint directory {} has no final component",
            dir.display()
        ))
    })?;
    let mut tmp = name.to_os_string();
    tmp.push(".tmp");
    Ok(dir.with_file_name(tmp))
}

/// Writes the entries of `iter` with a sequence number up to `max_seq` into a new SST at
/// `path`, built with the options of `level`; `None` (and no file) if there were none.
fn write_sst(
    fs: &dyn FileSystem,
    opts: &crate::options::Options,
    level: usize,
    path: &Path,
    iter: &mut dyn InternalIterator<Error>,
    max_seq: SeqNo,
) -> Result<Option<mezz_format::sst::TableProperties>> {
    let file = fs.create(path).map_err(io_at(path))?;
    let mut b = TableBuilder::new(file, table_builder_options(opts, level));
    let res = (|| -> Result<()> {
        // The last internal key added. The same update can be in two of the memtables
        // pinned: under `nvm_memtable = immutable` the NVM receiver holds the entries of
        // the DRAM memtable it is merging before the install that retires that memtable,
        // and a super version pinned meanwhile names both (reads hide the copy by the
        // receiver's range; a whole-memtable iterator does not). One sequence number is
        // one update, so a repeat is skipped.
        let mut last: Vec<u8> = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            let key = iter.key();
            let p = parse_internal_key(key).ok_or_else(|| {
                Error::corruption(0, format!("a table holds a malformed key {key:?}"))
            })?;
            if p.seq <= max_seq && key != last.as_slice() {
                b.add(key, iter.value())
                    .map_err(|e| Error::from(e).in_file(path))?;
                last.clear();
                last.extend_from_slice(key);
            }
            iter.next();
        }
        iter.status()
    })();
    if let Err(e) = res {
        b.abandon();
        let _ = fs.remove_file(path);
        return Err(e);
    }
    if b.num_entries() == 0 {
        b.abandon();
        fs.remove_file(path).map_err(io_at(path))?;
        return Ok(None);
    }
    let props = b.finish().map_err(|e| Error::from(e).in_file(path))?;
    Ok(Some(props))
}

fn meta_of(id: u64, p: &mezz_format::sst::TableProperties) -> TableMeta {
    TableMeta::from_properties(id, TableLocation::Sst { path_id: 0 }, p)
}

/// What one checkpoint copies, loaded in one step (`DbInner::pin_for_checkpoint`).
struct Pinned {
    /// The default family's super version.
    sv: Arc<SuperVersion>,
    /// Each live family, its super version and its record (options as recorded now).
    families: Vec<(Arc<Family>, Arc<SuperVersion>, FamilyRecord)>,
    /// The id the next family would get.
    next_family_id: u32,
    /// The last published sequence number `S`.
    last_seq: SeqNo,
}

/// A family's recorded options as its copy records them: the same options, but its tables
/// in the copy's `cf-<id>` directory only (no `ssd_paths`) and no NVM tier (no `nvm_dir`,
/// `nvm_memtable = off`, `nvm_tiering = off`, `matrix_bytes = 0`): the copy's family is an SSD family, as the
/// copy's default family is an SSD database. Kept as they were, the source's directories
/// would be the copy's (its tables written into the source's SSD directories, its NVM
/// pool looked for in the source's `<nvm_dir>/cf-<id>`).
fn copy_family_options(recorded: &str) -> Result<String> {
    let mut o = Options::from_text(recorded)?;
    o.nvm_dir = None;
    o.nvm_memtable = crate::options::NvmMemtable::Off;
    o.nvm_tiering = NvmTiering::Off;
    o.matrix_bytes = 0;
    o.wal_on_nvm = false;
    o.ssd_paths.clear();
    o.placement_wide_paths = 0;
    Ok(o.to_text())
}

/// The error of a family's copy: `Busy` if the family was dropped meanwhile (its files
/// are deleted with it, whatever the pinned super version holds), `e` otherwise.
fn family_gone(f: &Family, e: Error) -> Error {
    if f.dropped.load(Ordering::Acquire) {
        Error::Busy(format!(
            "column family {:?} was dropped during the checkpoint ({e}); try again",
            f.record.name
        ))
    } else {
        e
    }
}

/// `name` in the copy's family directory `prefix` (`""` for the default family), as
/// `CheckpointInfo` lists it (`cf-<id>/name`).
fn listed(prefix: &str, name: &Path) -> String {
    let name = name.to_string_lossy();
    if prefix.is_empty() {
        name.into_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

impl DbInner {
    /// `Db::checkpoint` (see the module documentation).
    /// REQUIRES: the caller holds a pass of the gate.
    pub(super) fn checkpoint(&self, dir: &Path) -> Result<CheckpointInfo> {
        let fs = self.fs.as_ref();
        if fs.exists(dir) {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} already exists",
                dir.display()
            )));
        }
        let tmp = temp_dir_of(dir)?;
        if fs.exists(&tmp) {
            remove_dir_and_files(fs, &tmp)?;
        }
        fs.create_dir_all(&tmp).map_err(io_at(&tmp))?;
        match self.build_checkpoint(&tmp) {
            Ok(info) => {
                if fs.rename(&tmp, dir).is_err() {
                    // A file system that cannot rename directories (the in-memory
                    // ones): the files move one by one, `CURRENT` last, so `dir` is
                    // not a database until complete.
                    move_files(fs, &tmp, dir)?;
                }
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    fs.sync_dir(parent).map_err(io_at(parent))?;
                }
                self.info_log.log(format_args!(
                    "checkpoint: {} at sequence {} ({} tables linked, {} copied, {} written)",
                    dir.display(),
                    info.last_sequence,
                    info.linked,
                    info.copied,
                    info.materialised
                ));
                Ok(info)
            }
            Err(e) => {
                let _ = remove_dir_and_files(fs, &tmp);
                Err(e)
            }
        }
    }

    /// Loads every family's super version and the last published sequence number `S` in
    /// one step: under the `write` lock, once every group logged is inserted and published
    /// (`wait_for_inserts`). Groups are logged, and memtables switched (every family's
    /// with the database's, `switch_memtable`), only under that lock, and a group's
    /// updates of other families are inserted under it too (`log_group`); families are
    /// created, dropped and their options changed under it. So no group and no switch
    /// falls between two loads: every memtable loaded holds exactly the updates up to `S`
    /// it will ever hold, no table holds one above `S`, and the set of families and their
    /// records are those at `S`. The lock is held for the loads only.
    fn pin_for_checkpoint(&self) -> Pinned {
        let ws = self.writes.write.lock();
        self.wait_for_inserts(&ws);
        let sv = self.versions.super_version.load_full();
        let (families, next_family_id) = {
            let fams = self.families.read();
            let mut records = fams.records();
            let pinned = fams
                .live
                .values()
                .filter_map(|f| {
                    let r = records.remove(&f.id)?;
                    Some((Arc::clone(f), f.db.versions.super_version.load_full(), r))
                })
                .collect();
            (pinned, fams.next_id)
        };
        let last_seq = self.versions.last_seq.load(Ordering::Acquire);
        drop(ws);
        self.wake_next_writer();
        Pinned {
            sv,
            families,
            next_family_id,
            last_seq,
        }
    }

    fn build_checkpoint(&self, tmp: &Path) -> Result<CheckpointInfo> {
        let fs = self.fs.as_ref();
        let Pinned {
            sv,
            families,
            next_family_id,
            last_seq,
        } = self.pin_for_checkpoint();
        let mut info = CheckpointInfo::default();
        // The tables of every family first (the last sequence number of every manifest
        // is above all of them). A super version is let go once its tables are copied.
        let own = self.copy_tables(&sv, last_seq, tmp, "", &mut info)?;
        drop(sv);
        let mut copies = Vec::with_capacity(families.len());
        for (f, sv, record) in families {
            let prefix = family_dir_name(f.id);
            let out = tmp.join(&prefix);
            fs.create_dir_all(&out).map_err(io_at(&out))?;
            let tables =
                f.db.copy_tables(&sv, last_seq, &out, &prefix, &mut info)
                    .map_err(|e| family_gone(&f, e))?;
            drop(sv);
            copies.push((f, record, prefix, out, tables));
        }
        // A table may hold entries a little above `S` only if a group was logged and not
        // yet published at the pin, which the pin rules out; the copy's last sequence
        // number is above every entry it holds all the same, so that its new writes never
        // reuse one.
        let last_seq = std::iter::once(&own)
            .chain(copies.iter().map(|c| &c.4))
            .flat_map(|e| e.new_tables.iter())
            .map(|(_, t)| t.largest_seq)
            .fold(last_seq, SeqNo::max);
        info.last_sequence = last_seq;

        let mut records = std::collections::BTreeMap::new();
        for (f, record, prefix, out, tables) in copies {
            let text = copy_family_options(&record.options)?;
            let opened_as = family_options(&self.opts, f.id, &text)?.to_text();
            f.db.write_copy_files(&out, &prefix, tables, last_seq, &opened_as, None, &mut info)?;
            records.insert(
                record.id,
                FamilyRecord {
                    options: text,
                    ..record.clone()
                },
            );
        }
        let families = family_snapshot_edit(&records, next_family_id);
        self.write_copy_files(
            tmp,
            "",
            own,
            last_seq,
            &self.opts.to_text(),
            families.as_ref(),
            &mut info,
        )?;
        Ok(info)
    }

    /// Puts this engine's tables of `sv` into the directory `out` of the copy (`prefix`:
    /// its name there, `""` for the default family's): SSTs linked or copied, NVM tables
    /// and matrix rows written as SSTs, the memtables' entries up to `last_seq` as one L0
    /// SST above the others. Returns the edit naming them.
    fn copy_tables(
        &self,
        sv: &SuperVersion,
        last_seq: SeqNo,
        out: &Path,
        prefix: &str,
        info: &mut CheckpointInfo,
    ) -> Result<VersionEdit> {
        let fs = self.fs.as_ref();
        let mut edit = VersionEdit::default();
        let read_opts = TableReadOptions {
            fill_cache: false,
            verify_checksums: false,
            whole_table_scan: true,
        };
        for (level, t) in sv.version.all_tables() {
            let name = filename::sst_file(Path::new(""), t.id);
            let dst = out.join(&name);
            let meta = match t.location {
                TableLocation::Sst { .. } => {
                    let src = self.storage.table_path(t.id, t.location)?;
                    if fs.hard_link(&src, &dst).is_ok() {
                        info.linked += 1;
                    } else {
                        copy_file(fs, &src, &dst)?;
                        info.copied += 1;
                    }
                    TableMeta {
                        location: TableLocation::Sst { path_id: 0 },
                        pinned: Default::default(),
                        seeks: Default::default(),
                        ..TableMeta::clone(t)
                    }
                }
                TableLocation::Nvm { .. } | TableLocation::Row { .. } => {
                    let table = self.table_cache.open(t)?;
                    let mut it = table.iter(&read_opts);
                    match write_sst(fs, &self.opts, level, &dst, it.as_mut(), SeqNo::MAX)? {
                        Some(p) => {
                            info.materialised += 1;
                            meta_of(t.id, &p)
                        }
                        None => continue,
                    }
                }
            };
            info.table_bytes += meta.size;
            info.tables.push(listed(prefix, &name));
            edit.new_tables.push((level, meta));
        }
        // The memtables (DRAM and NVM), up to the sequence number: one L0 table above all
        // others.
        let mems: Vec<Box<dyn InternalIterator<Error>>> = std::iter::once(&sv.mem)
            .chain(sv.imms.iter())
            .chain(sv.nvm.iter())
            .filter(|m| !m.is_empty())
            .map(Arc::clone)
            .map(|m| m.iter())
            .collect();
        if !mems.is_empty() {
            let id = self.new_file_number();
            let name = filename::sst_file(Path::new(""), id);
            let dst = out.join(&name);
            let mut it = merging_iterator(mems, self.storage.order());
            if let Some(p) = write_sst(fs, &self.opts, 0, &dst, it.as_mut(), last_seq)? {
                info.materialised += 1;
                let meta = meta_of(id, &p);
                info.table_bytes += meta.size;
                info.tables.push(listed(prefix, &name));
                edit.new_tables.push((0, meta));
            }
        }
        Ok(edit)
    }

    /// Writes the other files of this engine's copy in `out` (`prefix` as for
    /// `copy_tables`): a new manifest naming `tables` (last sequence `last_seq`, a new
    /// identity, then `families`, the column families of the default family's copy),
    /// `CURRENT`, `IDENTITY` and `OPTIONS` (`options_text`); syncs `out`.
    #[allow(clippy::too_many_arguments)]
    fn write_copy_files(
        &self,
        out: &Path,
        prefix: &str,
        tables: VersionEdit,
        last_seq: SeqNo,
        options_text: &str,
        families: Option<&VersionEdit>,
        info: &mut CheckpointInfo,
    ) -> Result<()> {
        let fs = self.fs.as_ref();
        let db_id: [u8; 16] = rand::random();
        let edit = VersionEdit {
            format_version: Some(MANIFEST_BASE_VERSION),
            comparator: Some(COMPARATOR_NAME.to_string()),
            db_id: Some(db_id),
            ..tables
        };
        let manifest_number = self.new_file_number();
        let options_number = self.new_file_number();
        let current_tmp = self.new_file_number();
        let identity_tmp = self.new_file_number();
        let next_file = self.versions.next_file.load(Ordering::Relaxed);
        let version = Version::new(self.opts.num_levels)
            .with_order(self.storage.order().clone())
            .apply(&edit)?;
        // Written and synced by `write_new_manifest` (and `append`).
        let mut manifest = write_new_manifest(
            fs,
            out,
            manifest_number,
            &version,
            next_file,
            next_file,
            last_seq,
        )?;
        if let Some(fe) = families {
            manifest.append(fe)?;
        }
        drop(manifest);
        set_current(fs, out, manifest_number, current_tmp)?;
        let id_text = mezz_pmem::pool::db_id_hex(&db_id);
        crate::manifest::write_file_atomically(
            fs,
            out,
            &filename::identity_file(out),
            format!("{id_text}\n").as_bytes(),
            identity_tmp,
        )?;
        let options_path = filename::options_file(out, options_number);
        let mut f = fs.create(&options_path).map_err(io_at(&options_path))?;
        f.append(options_text.as_bytes())
            .map_err(io_at(&options_path))?;
        f.sync().map_err(io_at(&options_path))?;
        f.close().map_err(io_at(&options_path))?;
        for p in [
            filename::manifest_file(Path::new(""), manifest_number),
            filename::current_file(Path::new("")),
            filename::identity_file(Path::new("")),
            filename::options_file(Path::new(""), options_number),
        ] {
            info.others.push(listed(prefix, &p));
        }
        fs.sync_dir(out).map_err(io_at(out))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{Db, Options};

    /// On a file system without hard links every SST is copied, and the copy matches.
    #[test]
    fn tables_are_copied_where_links_fail() {
        let fs: Arc<dyn FileSystem> = Arc::new(mezz_env::MemFs::new());
        let opts = Options {
            fs: Arc::clone(&fs),
            write_buffer_size: 16 << 10,
            ..Options::default()
        };
        let db = Db::open("/db", opts.clone()).unwrap();
        for i in 0..3000u32 {
            db.put(format!("k{i:05}").as_bytes(), &[b'x'; 40]).unwrap();
        }
        db.delete(b"k00007").unwrap();
        let info = db.checkpoint("/ckpt").unwrap();
        assert_eq!(info.linked, 0, "{info:?}");
        assert!(info.copied > 0, "{info:?}");
        // (The in-memory file system keeps empty directories.)
        assert!(
            fs.list_dir(Path::new("/ckpt.tmp"))
                .unwrap_or_default()
                .is_empty()
        );
        db.put(b"later", b"1").unwrap();
        let copy = Db::open("/ckpt", opts).unwrap();
        assert_eq!(copy.iter().count(), 2999);
        assert_eq!(copy.get(b"k00007").unwrap(), None);
        assert_eq!(copy.get(b"later").unwrap(), None);
        copy.verify().unwrap();
    }
}
