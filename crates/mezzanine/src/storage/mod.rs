//! The storage layer: where a table's bytes live, and the operations on those places.
//!
//! Owns: [`Storage`], which resolves a [`TableLocation`] (an SST file in one of the SSD
//! directories, or an NVM object) to something to read or write, and owns create, remove,
//! sync and list per directory and per NVM pool; and [`nvm`] (the NVM pool and its
//! objects). Nothing else in the engine builds a table's path: flushes and compactions
//! create tables here (through a table sink), the table cache opens them here, and clean-up
//! removes them here.
//!
//! Directories: index 0 is the database directory (which also holds the WALs, the MANIFEST,
//! CURRENT and the other metadata files); further indexes are more SSD directories (parallel
//! units) that hold table files only. A table records its directory index in the manifest
//! (`TableLocation::Sst { path_id }`), so the order of the directories must stay the same
//! from one open to the next.
//!
//! Invariants: a table's location never changes while it is in a version (moving a table
//! between tiers makes a new table); removing a table that is gone already is not an error
//! (clean-up is best effort and idempotent).
//!
//! Thread-safety: `Storage` is immutable after construction and shared through `Arc`; the
//! file system and the NVM tier do their own locking.

pub mod nvm;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::{FileSystem, RandomAccessFile, WritableFile};

use crate::error::{Error, Result};
use crate::filename::{self, FileType};
use crate::table::{TableLocation, TableMeta};
use crate::version::Version;
use nvm::NvmTier;

/// The places one database keeps its tables: SSD directories and, optionally, an NVM pool.
#[derive(Debug)]
pub struct Storage {
    fs: Arc<dyn FileSystem>,
    /// SSD directories by index; `dirs[0]` is the database directory.
    dirs: Vec<PathBuf>,
    nvm: Option<Arc<NvmTier>>,
}

impl Storage {
    /// Storage over the database directory `db_dir` (index 0), the further SSD directories
    /// `more_dirs` (indexes 1, 2, ...) and the NVM tier, if any.
    #[must_use]
    pub fn new(
        fs: Arc<dyn FileSystem>,
        db_dir: PathBuf,
        more_dirs: Vec<PathBuf>,
        nvm: Option<Arc<NvmTier>>,
    ) -> Self {
        let mut dirs = Vec::with_capacity(1 + more_dirs.len());
        dirs.push(db_dir);
        dirs.extend(more_dirs);
        Self { fs, dirs, nvm }
    }

    /// The file system every SSD directory is reached through.
    #[must_use]
    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    /// The database directory (index 0).
    #[must_use]
    pub fn db_dir(&self) -> &Path {
        &self.dirs[0]
    }

    /// Number of SSD directories (at least 1).
    #[must_use]
    pub fn num_dirs(&self) -> usize {
        self.dirs.len()
    }

    /// The NVM tier, if the database has one open.
    #[must_use]
    pub fn nvm(&self) -> Option<&Arc<NvmTier>> {
        self.nvm.as_ref()
    }

    /// SSD directory `path_id`.
    ///
    /// # Errors
    /// `Corruption` for an index no directory has (a manifest naming more directories than
    /// the options give).
    pub fn dir(&self, path_id: u32) -> Result<&Path> {
        self.dirs
            .get(path_id as usize)
            .map(PathBuf::as_path)
            .ok_or_else(|| {
                Error::corruption(
                    0,
                    format!(
                        "a table is in SSD directory {path_id}, but only {} are configured",
                        self.dirs.len()
                    ),
                )
            })
    }

    /// The file holding the bytes of table `id` at `location`: its SST file, or the NVM
    /// pool file for a table in NVM. Errors about a table name this path.
    ///
    /// # Errors
    /// As [`Storage::dir`]; `InvalidArgument` for an NVM location without an NVM tier.
    pub fn table_path(&self, id: u64, location: TableLocation) -> Result<PathBuf> {
        match location {
            TableLocation::Sst { path_id } => Ok(filename::sst_file(self.dir(path_id)?, id)),
            TableLocation::Nvm { .. } => Ok(self.nvm_tier()?.dir().join(nvm::POOL_FILE)),
        }
    }

    /// [`Storage::table_path`] for errors: never fails (an unresolvable location gives the
    /// database directory's would-be SST path).
    #[must_use]
    pub fn describe(&self, meta: &TableMeta) -> PathBuf {
        self.table_path(meta.id, meta.location)
            .unwrap_or_else(|_| filename::sst_file(self.db_dir(), meta.id))
    }

    fn nvm_tier(&self) -> Result<&Arc<NvmTier>> {
        self.nvm.as_ref().ok_or_else(|| {
            Error::InvalidArgument("a table is in NVM, but no NVM tier is open (nvm_dir)".into())
        })
    }

    /// Creates the SST file of table `id` in directory `path_id`; returns its path too.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn create_sst(&self, id: u64, path_id: u32) -> Result<(PathBuf, Box<dyn WritableFile>)> {
        let path = filename::sst_file(self.dir(path_id)?, id);
        let file = self
            .fs
            .create(&path)
            .map_err(|e| Error::from(e).in_file(&path))?;
        Ok((path, file))
    }

    /// Opens the SST file of table `id` in directory `path_id` for reading.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn open_sst(&self, id: u64, path_id: u32) -> Result<(PathBuf, Arc<dyn RandomAccessFile>)> {
        let path = filename::sst_file(self.dir(path_id)?, id);
        let file = self
            .fs
            .open_read(&path)
            .map_err(|e| Error::from(e).in_file(&path))?;
        Ok((path, file))
    }

    /// The size in bytes of the table's stored form (its file's size, for an SST).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn table_size(&self, meta: &TableMeta) -> Result<u64> {
        match meta.location {
            TableLocation::Sst { path_id } => {
                let path = filename::sst_file(self.dir(path_id)?, meta.id);
                self.fs
                    .file_size(&path)
                    .map_err(|e| Error::from(e).in_file(&path))
            }
            TableLocation::Nvm { .. } => Err(Error::InvalidArgument(format!(
                "table {}: tables in NVM are not supported by this build",
                meta.id
            ))),
        }
    }

    /// Removes the stored form of table `id` at `location`, best effort (a table that is
    /// gone already is not an error; a failure leaves a file the next open removes). An NVM
    /// table's extent is released through the manifest, not here.
    pub fn remove_table(&self, id: u64, location: TableLocation) {
        if let TableLocation::Sst { path_id } = location
            && let Ok(dir) = self.dir(path_id)
        {
            let _ = self.fs.remove_file(&filename::sst_file(dir, id));
        }
    }

    /// Syncs SSD directory `path_id` (after creating files in it, before a manifest edit
    /// names them).
    ///
    /// # Errors
    /// `Io` naming the directory.
    pub fn sync_dir(&self, path_id: u32) -> Result<()> {
        let dir = self.dir(path_id)?;
        self.fs
            .sync_dir(dir)
            .map_err(|e| Error::from(e).in_file(dir))
    }

    /// Checks that every table of `version` is somewhere this storage can reach: an SST in
    /// a configured directory, or (once NVM tables exist) an NVM object the version lists.
    /// Open runs it, so a mismatch is refused up front instead of failing reads later.
    ///
    /// # Errors
    /// `InvalidArgument` for a table in a directory index the options do not configure, or
    /// in NVM (this build reads no NVM tables); `Corruption` for a table in an NVM object the
    /// version does not list.
    pub fn check_locations(&self, version: &Version) -> Result<()> {
        for (level, t) in version.all_tables() {
            match t.location {
                TableLocation::Sst { path_id } => {
                    if path_id as usize >= self.dirs.len() {
                        return Err(Error::InvalidArgument(format!(
                            "the database keeps table {} (L{level}) in SSD directory \
                             {path_id}, but only {} SSD directories are configured",
                            t.id,
                            self.dirs.len()
                        )));
                    }
                }
                TableLocation::Nvm { object } => {
                    if !version.nvm_objects.contains_key(&object) {
                        return Err(Error::corruption(
                            0,
                            format!(
                                "table {} (L{level}) is in NVM object {object}, which the \
                                 manifest does not list",
                                t.id
                            ),
                        ));
                    }
                    return Err(Error::InvalidArgument(format!(
                        "table {} (L{level}) is in NVM object {object}: tables in NVM are not \
                         supported by this build",
                        t.id
                    )));
                }
            }
        }
        Ok(())
    }

    /// Every SST file in every SSD directory: (table id, location).
    ///
    /// # Errors
    /// `Io` naming the directory that could not be listed.
    pub fn list_tables(&self) -> Result<Vec<(u64, TableLocation)>> {
        let mut out = Vec::new();
        for (i, dir) in self.dirs.iter().enumerate() {
            let path_id = u32::try_from(i).unwrap_or(u32::MAX);
            let names = self
                .fs
                .list_dir(dir)
                .map_err(|e| Error::from(e).in_file(dir))?;
            for name in names {
                if let Some((FileType::Sst, n)) = filename::parse_file_name(&name) {
                    out.push((n, TableLocation::Sst { path_id }));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_creates_lists_and_removes_tables_per_directory() {
        let fs: Arc<dyn FileSystem> = Arc::new(mezz_env::MemFs::new());
        for d in ["/db", "/ssd1"] {
            fs.create_dir_all(Path::new(d)).unwrap();
        }
        let s = Storage::new(
            Arc::clone(&fs),
            PathBuf::from("/db"),
            vec![PathBuf::from("/ssd1")],
            None,
        );
        assert_eq!(s.num_dirs(), 2);
        let (p0, mut f0) = s.create_sst(7, 0).unwrap();
        let (p1, mut f1) = s.create_sst(8, 1).unwrap();
        f0.append(b"x").unwrap();
        f1.append(b"yy").unwrap();
        drop((f0, f1));
        assert_eq!(p0, filename::sst_file(Path::new("/db"), 7));
        assert_eq!(p1, filename::sst_file(Path::new("/ssd1"), 8));
        s.sync_dir(1).unwrap();
        let mut listed = s.list_tables().unwrap();
        listed.sort_by_key(|t| t.0);
        assert_eq!(
            listed,
            vec![
                (7, TableLocation::Sst { path_id: 0 }),
                (8, TableLocation::Sst { path_id: 1 })
            ]
        );
        let (_, r) = s.open_sst(8, 1).unwrap();
        assert_eq!(r.size(), 2);
        s.remove_table(8, TableLocation::Sst { path_id: 1 });
        s.remove_table(8, TableLocation::Sst { path_id: 1 });
        assert_eq!(s.list_tables().unwrap().len(), 1);
        // A directory index the options do not give is a clear error, not a panic.
        assert!(matches!(s.dir(5), Err(Error::Corruption { .. })));
        assert!(matches!(
            s.table_path(1, TableLocation::Nvm { object: 3 }),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn locations_the_storage_cannot_reach_are_refused() {
        use crate::manifest::VersionEdit;
        use crate::storage::nvm::{NvmObject, NvmObjectKind};
        let fs: Arc<dyn FileSystem> = Arc::new(mezz_env::MemFs::new());
        let s = Storage::new(fs, PathBuf::from("/db"), vec![PathBuf::from("/ssd1")], None);
        let at = |location| {
            let mut m = crate::version::tests::meta(9, "a", "b", (1, 1), 10);
            m.location = location;
            Version::new(4)
                .apply(&VersionEdit {
                    new_tables: vec![(2, m)],
                    new_nvm_objects: vec![NvmObject {
                        id: 5,
                        kind: NvmObjectKind::Memtable,
                        offset: 4096,
                        len: 4096,
                    }],
                    ..VersionEdit::default()
                })
                .unwrap()
        };
        s.check_locations(&at(TableLocation::Sst { path_id: 1 }))
            .unwrap();
        match s.check_locations(&at(TableLocation::Sst { path_id: 2 })) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("SSD directory 2"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.check_locations(&at(TableLocation::Nvm { object: 5 })),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            s.check_locations(&at(TableLocation::Nvm { object: 6 })),
            Err(Error::Corruption { .. })
        ));
    }
}
