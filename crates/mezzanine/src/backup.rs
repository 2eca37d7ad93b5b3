//! Incremental backups to a directory (RocksDB's `BackupEngine` model).
//!
//! Owns: the backup directory (layout and meta-file format: `docs/formats/backup.md`).
//! Each backup is built from a checkpoint of the live database ([`Db::checkpoint`]), so it
//! is consistent while writes go on. Tables go to `shared/`, named by table number, crc32c
//! and size, so a table already there (from an earlier backup) is not copied again and is
//! shared by every backup that holds it; the other files (manifest, `CURRENT`, `IDENTITY`,
//! `OPTIONS`) go to `private/<id>/`. Every file's size and crc32c is recorded in the
//! backup's meta file `meta/<id>`. A database's column families are in the checkpoint
//! (`cf-<id>/`): their files are named `cf-<id>/<name>` in the meta file, their tables
//! shared as `cf-<id>_<number>_..` (table numbers are per family), their other files kept
//! in `private/<id>/cf-<id>/`, and a restore recreates their directories.
//!
//! Invariants:
//! - A backup exists exactly when its meta file does. The meta file is written last
//!   (temp file, sync, rename, directory sync), after every file it names is synced under
//!   its final name; deleting a backup removes its meta file first. A crash at any point
//!   leaves every earlier backup intact; what a crashed backup left (`tmp/`, a `private/`
//!   directory with no meta file, temp files, shared files no meta names) is removed by
//!   the next `open` (all but the last) or purge (shared files).
//! - A shared file is complete once it has its final name (copied to a temp name, synced,
//!   renamed) and never changes; a restore checks every byte against the recorded crc32c
//!   and refuses the backup on a mismatch.
//!
//! Thread-safety: a `BackupEngine` is used from one thread at a time (`&mut self` for the
//! calls that change the directory); one engine per backup directory at a time (nothing
//! stops a second process: the directory is not locked).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::db::Db;
use crate::error::{Error, Result};

/// The first line of every meta file.
const META_MAGIC: &str = "mezzanine-backup 1";
/// Bytes read and written at a time.
const CHUNK: usize = 1 << 20;

/// One backup, as `list` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// The backup's id (1, 2, ...: larger is newer).
    pub id: u64,
    /// When it was taken (seconds since the Unix epoch).
    pub timestamp: u64,
    /// The database's last sequence number in it.
    pub sequence: u64,
    /// Files in it.
    pub num_files: usize,
    /// Bytes of its files (shared ones counted in full).
    pub size: u64,
}

/// What `create_backup` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupCreated {
    /// The new backup.
    pub info: BackupInfo,
    /// Tables copied into `shared/`.
    pub tables_copied: usize,
    /// Tables already in `shared/` (not copied).
    pub tables_shared: usize,
    /// Bytes written into the backup directory.
    pub bytes_copied: u64,
}

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BackupFile {
    /// Its name in the database directory.
    name: String,
    /// Its path in the backup directory (`shared/...` or `private/<id>/...`).
    stored: String,
    size: u64,
    crc: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    id: u64,
    timestamp: u64,
    sequence: u64,
    files: Vec<BackupFile>,
}

impl Meta {
    fn info(&self) -> BackupInfo {
        BackupInfo {
            id: self.id,
            timestamp: self.timestamp,
            sequence: self.sequence,
            num_files: self.files.len(),
            size: self.files.iter().map(|f| f.size).sum(),
        }
    }

    fn encode(&self) -> String {
        let mut s = format!(
            "{META_MAGIC}\nid {}\ntimestamp {}\nsequence {}\nfiles {}\n",
            self.id,
            self.timestamp,
            self.sequence,
            self.files.len()
        );
        for f in &self.files {
            s.push_str(&format!(
                "file {} {} {} {:08x}\n",
                f.name, f.stored, f.size, f.crc
            ));
        }
        let crc = crc32c::crc32c(s.as_bytes());
        s.push_str(&format!("crc32c {crc:08x}\n"));
        s
    }

    fn decode(path: &Path, text: &[u8]) -> Result<Meta> {
        let bad = |detail: String| Error::Corruption {
            file: Some(path.to_path_buf()),
            offset: 0,
            detail: detail.into(),
        };
        let text = std::str::from_utf8(text).map_err(|_| bad("not UTF-8 text".into()))?;
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or_else(|| bad("truncated meta file".into()))?;
        let (body, last) = text.split_at(body_end);
        let stored_crc = last
            .strip_prefix("crc32c ")
            .and_then(|r| r.strip_suffix('\n'))
            .filter(|h| h.len() == 8 && h.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("no crc32c line at the end (truncated meta file?)".into()))?;
        let crc = crc32c::crc32c(body.as_bytes());
        if crc != stored_crc {
            return Err(bad(format!(
                "meta file checksum mismatch: stored {stored_crc:08x}, computed {crc:08x}"
            )));
        }
        let mut lines = body.lines();
        if lines.next() != Some(META_MAGIC) {
            return Err(bad(format!("does not start with {META_MAGIC:?}")));
        }
        let mut field = |name: &str| -> Result<u64> {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad(format!("missing or bad {name:?} line")))
        };
        let id = field("id")?;
        let timestamp = field("timestamp")?;
        let sequence = field("sequence")?;
        let n = field("files")?;
        let mut files = Vec::new();
        for line in lines {
            let parts: Vec<&str> = line.split(' ').collect();
            let [tag, name, stored, size, crc] = parts.as_slice() else {
                return Err(bad(format!("bad file line {line:?}")));
            };
            let size = size.parse().ok();
            let crc = u32::from_str_radix(crc, 16).ok();
            let (Some(size), Some(crc)) = (size, crc) else {
                return Err(bad(format!("bad file line {line:?}")));
            };
            let private = format!("private/{id}/");
            let stored_ok = (stored.starts_with("shared/") || stored.starts_with(&private))
                && !stored.contains("..");
            if *tag != "file" || !safe_db_name(name) || !stored_ok {
                return Err(bad(format!("bad file line {line:?}")));
            }
            files.push(BackupFile {
                name: (*name).to_string(),
                stored: (*stored).to_string(),
                size,
                crc,
            });
        }
        if files.len() as u64 != n {
            return Err(bad(format!("{} file lines, {n} announced", files.len())));
        }
        Ok(Meta {
            id,
            timestamp,
            sequence,
            files,
        })
    }
}

/// A plain file name: no directory part, nothing that leaves a directory.
fn safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', ' '])
}

/// The name of a file of a database: a plain file name, or one in a column family's
/// directory (`cf-<id>/<name>`, `<id>` a decimal number above 0 without leading zeros).
fn safe_db_name(name: &str) -> bool {
    match name.split_once('/') {
        None => safe_name(name),
        Some((dir, file)) => {
            family_dir_id(dir).is_some_and(|id| format!("cf-{id}") == dir) && safe_name(file)
        }
    }
}

/// The id of a column family's directory name (`cf-<id>`).
fn family_dir_id(dir: &str) -> Option<u32> {
    dir.strip_prefix("cf-")?
        .parse::<u32>()
        .ok()
        .filter(|&id| id > 0)
}

/// The stem of a table's name in `shared/`: its name without `.sst`, a column family's
/// table prefixed by its directory (`cf-<id>_<number>`): table numbers are per family, so
/// family 1's `000012.sst` is another table than the default family's.
fn shared_stem(name: &str) -> String {
    name.strip_suffix(".sst").unwrap_or(name).replace('/', "_")
}

/// Creates the directory holding `path` (a family's directory in the backup or the
/// restored database) if `name` names a file in one; returns it then.
fn make_family_dir(base: &Path, name: &str) -> Result<Option<PathBuf>> {
    match name.split_once('/') {
        Some((dir, _)) => {
            let d = base.join(dir);
            fs::create_dir_all(&d).map_err(io_at(&d))?;
            Ok(Some(d))
        }
        None => Ok(None),
    }
}

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).in_file(path)
}

fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(dir))
}

/// Reads `path` to the end; returns its size and crc32c.
fn checksum(path: &Path) -> Result<(u64, u32)> {
    let mut f = fs::File::open(path).map_err(io_at(path))?;
    let mut buf = vec![0u8; CHUNK];
    let (mut size, mut crc) = (0u64, 0u32);
    loop {
        let n = f.read(&mut buf).map_err(io_at(path))?;
        if n == 0 {
            return Ok((size, crc));
        }
        let chunk = buf
            .get(..n)
            .expect("read returns at most the buffer's length");
        crc = crc32c::crc32c_append(crc, chunk);
        size += n as u64;
    }
}

/// Copies `from` to `to` (created, or truncated) and syncs it; returns the size and crc32c
/// of the bytes copied.
fn copy_checksummed(from: &Path, to: &Path) -> Result<(u64, u32)> {
    let mut src = fs::File::open(from).map_err(io_at(from))?;
    let mut dst = fs::File::create(to).map_err(io_at(to))?;
    let mut buf = vec![0u8; CHUNK];
    let (mut size, mut crc) = (0u64, 0u32);
    loop {
        let n = src.read(&mut buf).map_err(io_at(from))?;
        if n == 0 {
            break;
        }
        let chunk = buf
            .get(..n)
            .expect("read returns at most the buffer's length");
        crc = crc32c::crc32c_append(crc, chunk);
        size += n as u64;
        dst.write_all(chunk).map_err(io_at(to))?;
    }
    dst.sync_all().map_err(io_at(to))?;
    Ok((size, crc))
}

fn remove_tree(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::from(e).in_file(path)),
    }
}

fn list_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for e in fs::read_dir(dir).map_err(io_at(dir))? {
        let e = e.map_err(io_at(dir))?;
        if let Some(n) = e.file_name().to_str() {
            names.push(n.to_string());
        }
    }
    Ok(names)
}

/// Incremental backups of databases in one directory (see the module documentation).
#[derive(Debug)]
pub struct BackupEngine {
    dir: PathBuf,
}

impl BackupEngine {
    /// Opens (creating if missing) the backup directory `dir`, and removes what an
    /// interrupted backup left there (its checkpoint, a private directory with no meta
    /// file, a meta file or a table not yet renamed into place).
    ///
    /// # Errors
    /// I/O errors.
    pub fn open(dir: impl AsRef<Path>) -> Result<BackupEngine> {
        let dir = dir.as_ref().to_path_buf();
        for sub in ["shared", "private", "meta"] {
            let p = dir.join(sub);
            fs::create_dir_all(&p).map_err(io_at(&p))?;
        }
        let engine = BackupEngine { dir };
        remove_tree(&engine.dir.join("tmp"))?;
        for sub in ["meta", "shared"] {
            let d = engine.dir.join(sub);
            for name in list_names(&d)? {
                if name.ends_with(".tmp") || name.ends_with(".part") {
                    let p = d.join(&name);
                    fs::remove_file(&p).map_err(io_at(&p))?;
                }
            }
        }
        let ids: BTreeSet<u64> = engine.ids()?.into_iter().collect();
        let private = engine.dir.join("private");
        for name in list_names(&private)? {
            if name.parse::<u64>().is_ok_and(|id| ids.contains(&id)) {
                continue;
            }
            remove_tree(&private.join(name))?;
        }
        Ok(engine)
    }

    /// The backup directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Ids of the backups (those with a meta file), ascending.
    fn ids(&self) -> Result<Vec<u64>> {
        let mut ids: Vec<u64> = list_names(&self.dir.join("meta"))?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn meta_path(&self, id: u64) -> PathBuf {
        self.dir.join("meta").join(id.to_string())
    }

    fn read_meta(&self, id: u64) -> Result<Meta> {
        let path = self.meta_path(id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::InvalidArgument(format!(
                    "no backup {id} in {}",
                    self.dir.display()
                )));
            }
            Err(e) => return Err(Error::from(e).in_file(&path)),
        };
        let meta = Meta::decode(&path, &bytes)?;
        if meta.id != id {
            return Err(Error::Corruption {
                file: Some(path),
                offset: 0,
                detail: format!("meta file of backup {id} names backup {}", meta.id).into(),
            });
        }
        Ok(meta)
    }

    /// Backs up `db`: checkpoints it into `tmp/`, copies the tables not already in
    /// `shared/` and the other files into `private/<id>/`, and writes the meta file last.
    ///
    /// # Errors
    /// The checkpoint's errors; I/O errors. Earlier backups are untouched either way.
    pub fn create_backup(&mut self, db: &Db) -> Result<BackupCreated> {
        let id = self.ids()?.last().map_or(1, |l| l + 1);
        let tmp = self.dir.join("tmp");
        remove_tree(&tmp)?;
        fs::create_dir_all(&tmp).map_err(io_at(&tmp))?;
        let ckpt = tmp.join(format!("checkpoint-{id}"));
        let private_rel = format!("private/{id}");
        let private = self.dir.join(&private_rel);
        remove_tree(&private)?;
        let res = (|| -> Result<BackupCreated> {
            let info = db.checkpoint(&ckpt)?;
            fs::create_dir_all(&private).map_err(io_at(&private))?;
            let shared = self.dir.join("shared");
            let existing: BTreeSet<String> = list_names(&shared)?.into_iter().collect();
            let mut files = Vec::new();
            let (mut copied, mut reused, mut bytes) = (0, 0, 0u64);
            for name in &info.tables {
                let src = ckpt.join(name);
                let stem = shared_stem(name);
                let size = fs::metadata(&src).map_err(io_at(&src))?.len();
                let prefix = format!("{stem}_");
                let suffix = format!("_{size}.sst");
                let candidate = existing
                    .iter()
                    .any(|n| n.starts_with(&prefix) && n.ends_with(&suffix));
                let (size, crc) = if candidate {
                    checksum(&src)?
                } else {
                    (size, 0)
                };
                let stored_name = format!("{stem}_{crc:08x}_{size}.sst");
                if candidate && existing.contains(&stored_name) {
                    reused += 1;
                    files.push(BackupFile {
                        name: name.clone(),
                        stored: format!("shared/{stored_name}"),
                        size,
                        crc,
                    });
                    continue;
                }
                let part = shared.join(format!("{stem}.sst.part"));
                let (size, crc) = copy_checksummed(&src, &part)?;
                let stored_name = format!("{stem}_{crc:08x}_{size}.sst");
                let dst = shared.join(&stored_name);
                fs::rename(&part, &dst).map_err(io_at(&dst))?;
                copied += 1;
                bytes += size;
                files.push(BackupFile {
                    name: name.clone(),
                    stored: format!("shared/{stored_name}"),
                    size,
                    crc,
                });
            }
            let mut family_dirs = BTreeSet::new();
            for name in &info.others {
                let src = ckpt.join(name);
                let dst = private.join(name);
                if let Some(d) = make_family_dir(&private, name)? {
                    family_dirs.insert(d);
                }
                let (size, crc) = copy_checksummed(&src, &dst)?;
                bytes += size;
                files.push(BackupFile {
                    name: name.clone(),
                    stored: format!("{private_rel}/{name}"),
                    size,
                    crc,
                });
            }
            sync_dir(&shared)?;
            for d in &family_dirs {
                sync_dir(d)?;
            }
            sync_dir(&private)?;
            sync_dir(&self.dir.join("private"))?;
            let meta = Meta {
                id,
                timestamp: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                sequence: info.last_sequence,
                files,
            };
            self.write_meta(&meta)?;
            Ok(BackupCreated {
                info: meta.info(),
                tables_copied: copied,
                tables_shared: reused,
                bytes_copied: bytes,
            })
        })();
        if res.is_err() {
            let _ = remove_tree(&private);
        }
        let _ = remove_tree(&tmp);
        res
    }

    /// Writes `meta` atomically: temp file, sync, rename, directory sync.
    fn write_meta(&self, meta: &Meta) -> Result<()> {
        let dir = self.dir.join("meta");
        let tmp = dir.join(format!("{}.tmp", meta.id));
        let path = self.meta_path(meta.id);
        {
            let mut f = fs::File::create(&tmp).map_err(io_at(&tmp))?;
            f.write_all(meta.encode().as_bytes()).map_err(io_at(&tmp))?;
            f.sync_all().map_err(io_at(&tmp))?;
        }
        fs::rename(&tmp, &path).map_err(io_at(&path))?;
        sync_dir(&dir)
    }

    /// Every backup, oldest first.
    ///
    /// # Errors
    /// I/O errors; `Corruption` for a damaged meta file.
    pub fn list(&self) -> Result<Vec<BackupInfo>> {
        self.ids()?
            .into_iter()
            .map(|id| self.read_meta(id).map(|m| m.info()))
            .collect()
    }

    /// Re-reads every file of backup `id` and checks its size and crc32c.
    ///
    /// # Errors
    /// `InvalidArgument` if there is no such backup; `Corruption` naming the first file
    /// that is missing, has another size or another checksum; I/O errors.
    pub fn verify(&self, id: u64) -> Result<BackupInfo> {
        let meta = self.read_meta(id)?;
        for f in &meta.files {
            let path = self.dir.join(&f.stored);
            let (size, crc) = match checksum(&path) {
                Ok(v) => v,
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    return Err(self.damaged(id, &path, "the file is missing".into()));
                }
                Err(e) => return Err(e),
            };
            self.check_file(id, f, &path, size, crc)?;
        }
        Ok(meta.info())
    }

    fn damaged(&self, id: u64, path: &Path, what: String) -> Error {
        Error::Corruption {
            file: Some(path.to_path_buf()),
            offset: 0,
            detail: format!("backup {id} is damaged: {what}").into(),
        }
    }

    fn check_file(&self, id: u64, f: &BackupFile, path: &Path, size: u64, crc: u32) -> Result<()> {
        if size != f.size {
            return Err(self.damaged(id, path, format!("{size} bytes, {} recorded", f.size)));
        }
        if crc != f.crc {
            return Err(self.damaged(
                id,
                path,
                format!("crc32c {crc:08x}, {:08x} recorded", f.crc),
            ));
        }
        Ok(())
    }

    /// Restores backup `id` into `db_dir`, which must not hold a database: copies every
    /// file, checking each against its recorded size and crc32c, `CURRENT` last (so an
    /// interrupted restore leaves no openable database). Open it with the options it is to
    /// run with (a backup is an SSD-only database: any preset, a fresh NVM directory).
    ///
    /// # Errors
    /// `InvalidArgument` if there is no such backup or `db_dir` holds a database;
    /// `Corruption` for a damaged file (the files restored so far are removed); I/O
    /// errors.
    pub fn restore(&self, id: u64, db_dir: impl AsRef<Path>) -> Result<BackupInfo> {
        let db_dir = db_dir.as_ref();
        // The target first: a database there is refused whatever the backup's state.
        if db_dir
            .join(crate::filename::current_file(Path::new("")))
            .exists()
        {
            return Err(Error::InvalidArgument(format!(
                "{} holds a database; restore into a new directory",
                db_dir.display()
            )));
        }
        let meta = self.read_meta(id)?;
        fs::create_dir_all(db_dir).map_err(io_at(db_dir))?;
        let mut written = Vec::new();
        let mut family_dirs = BTreeSet::new();
        let res = (|| -> Result<()> {
            // The database's `CURRENT` last (a family's is in its directory, `cf-<id>/`).
            let (current, rest): (Vec<&BackupFile>, Vec<&BackupFile>) =
                meta.files.iter().partition(|f| f.name == "CURRENT");
            for f in rest.into_iter().chain(current) {
                if let Some(d) = make_family_dir(db_dir, &f.name)? {
                    family_dirs.insert(d);
                }
                let src = self.dir.join(&f.stored);
                let part = db_dir.join(format!("{}.restore", f.name));
                written.push(part.clone());
                let (size, crc) = copy_checksummed(&src, &part)?;
                self.check_file(id, f, &src, size, crc)?;
                let dst = db_dir.join(&f.name);
                fs::rename(&part, &dst).map_err(io_at(&dst))?;
                written.push(dst);
            }
            for d in &family_dirs {
                sync_dir(d)?;
            }
            sync_dir(db_dir)
        })();
        if let Err(e) = res {
            for p in written {
                let _ = fs::remove_file(p);
            }
            for d in family_dirs {
                let _ = fs::remove_dir(d);
            }
            return Err(e);
        }
        Ok(meta.info())
    }

    /// Deletes backup `id` and the shared files no other backup names.
    ///
    /// # Errors
    /// `InvalidArgument` if there is no such backup; I/O errors.
    pub fn delete(&mut self, id: u64) -> Result<()> {
        if !self.meta_path(id).exists() {
            return Err(Error::InvalidArgument(format!(
                "no backup {id} in {}",
                self.dir.display()
            )));
        }
        self.remove_backup(id)?;
        self.collect_garbage()
    }

    /// Deletes all but the newest `keep` backups, and the shared files no remaining
    /// backup names; returns the ids deleted.
    ///
    /// # Errors
    /// I/O errors; `Corruption` for a remaining backup's damaged meta file (no shared file
    /// is removed then).
    pub fn purge_old(&mut self, keep: usize) -> Result<Vec<u64>> {
        let ids = self.ids()?;
        let n = ids.len().saturating_sub(keep);
        let old: Vec<u64> = ids.into_iter().take(n).collect();
        for &id in &old {
            self.remove_backup(id)?;
        }
        self.collect_garbage()?;
        Ok(old)
    }

    /// Removes the meta file first (the backup is gone from then on), then its private
    /// files.
    fn remove_backup(&self, id: u64) -> Result<()> {
        let meta = self.meta_path(id);
        fs::remove_file(&meta).map_err(io_at(&meta))?;
        sync_dir(&self.dir.join("meta"))?;
        remove_tree(&self.dir.join("private").join(id.to_string()))
    }

    /// Removes every shared file no backup names (and temp files of interrupted copies).
    fn collect_garbage(&self) -> Result<()> {
        let mut live = BTreeMap::new();
        for id in self.ids()? {
            for f in self.read_meta(id)?.files {
                live.insert(f.stored, ());
            }
        }
        let shared = self.dir.join("shared");
        for name in list_names(&shared)? {
            if !live.contains_key(&format!("shared/{name}")) {
                let p = shared.join(&name);
                fs::remove_file(&p).map_err(io_at(&p))?;
            }
        }
        sync_dir(&shared)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn meta() -> Meta {
        Meta {
            id: 3,
            timestamp: 1_700_000_000,
            sequence: 42,
            files: vec![
                BackupFile {
                    name: "000007.sst".into(),
                    stored: "shared/000007_0badcafe_100.sst".into(),
                    size: 100,
                    crc: 0x0bad_cafe,
                },
                BackupFile {
                    name: "CURRENT".into(),
                    stored: "private/3/CURRENT".into(),
                    size: 16,
                    crc: 7,
                },
            ],
        }
    }

    #[test]
    fn meta_round_trips_and_every_damage_is_refused() {
        let m = meta();
        let text = m.encode();
        let p = Path::new("meta/3");
        assert_eq!(Meta::decode(p, text.as_bytes()).unwrap(), m);
        // Any changed byte is caught by the checksum line, or breaks the syntax.
        for i in 0..text.len() {
            let mut b = text.clone().into_bytes();
            b[i] ^= 0x01;
            assert!(
                Meta::decode(p, &b).is_err(),
                "byte {i} flipped went unnoticed"
            );
        }
        // Truncated anywhere.
        for i in 0..text.len() - 1 {
            assert!(
                Meta::decode(p, &text.as_bytes()[..i]).is_err(),
                "cut at {i}"
            );
        }
    }

    #[test]
    fn files_of_column_families_are_named_in_their_directory_and_shared_apart() {
        let mut m = meta();
        m.files.push(BackupFile {
            name: "cf-2/000007.sst".into(),
            stored: format!("shared/{}_0badcafe_100.sst", shared_stem("cf-2/000007.sst")),
            size: 100,
            crc: 0x0bad_cafe,
        });
        m.files.push(BackupFile {
            name: "cf-2/CURRENT".into(),
            stored: "private/3/cf-2/CURRENT".into(),
            size: 16,
            crc: 7,
        });
        let text = m.encode();
        assert_eq!(
            Meta::decode(Path::new("meta/3"), text.as_bytes()).unwrap(),
            m
        );
        // The default family's table 000007 and family 2's are two shared files.
        assert_eq!(shared_stem("000007.sst"), "000007");
        assert_eq!(shared_stem("cf-2/000007.sst"), "cf-2_000007");
    }

    #[test]
    fn a_meta_file_cannot_name_a_file_outside_the_backup() {
        for (name, stored) in [
            ("../x", "shared/a.sst"),
            ("CURRENT", "private/4/CURRENT"),
            ("CURRENT", "shared/../../etc/passwd"),
            ("a/b", "shared/b"),
            ("cf-0/CURRENT", "private/3/cf-0/CURRENT"),
            ("cf-01/CURRENT", "private/3/cf-01/CURRENT"),
            ("cf-1/../CURRENT", "private/3/CURRENT"),
            ("cf-1/a/b", "private/3/cf-1/a/b"),
            ("cf-1/", "private/3/cf-1/"),
            ("cf-1/CURRENT", "private/3/cf-1/../../4/CURRENT"),
        ] {
            let mut m = meta();
            m.files[1].name = name.into();
            m.files[1].stored = stored.into();
            let text = m.encode();
            let err = Meta::decode(Path::new("meta/3"), text.as_bytes()).unwrap_err();
            assert!(err.to_string().contains("bad file line"), "{err}");
        }
    }
}
