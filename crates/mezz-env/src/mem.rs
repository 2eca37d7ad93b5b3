//! An in-memory file system that models what survives a power cut.
//!
//! Owns: [`MemFs`], its file types, and the crash model ([`CrashOptions`], [`KeepUnsynced`]).
//!
//! Model (the same one a journaling file system gives an engine that follows the rules):
//! - A file is an inode holding its bytes and how many of them are durable (`synced_len`).
//!   Writers only append, so the durable content is always a prefix of the live content.
//!   `WritableFile::sync` makes every byte written so far durable; `flush` does nothing (an
//!   append is already "in the OS").
//! - Each directory maps names to inodes twice: the live namespace, which `create`, `rename`,
//!   `remove_file` and `lock` (when it creates the lock file) change, and the durable namespace,
//!   which `sync_dir` replaces with a copy of the live one. `create` on an existing name binds
//!   the name to a *new* empty inode (like writing a new file); the old inode stays reachable
//!   through the durable namespace until the directory is synced.
//! - Directories themselves are durable as soon as `create_dir_all` returns (a simplification:
//!   the engine creates its directory once, before anything else). `/` and the empty path (the
//!   base of relative paths) always exist.
//! - [`MemFs::crash_clone`] builds a new, independent `MemFs` holding what a crash would leave.
//!
//! Paths are normalised lexically: `.` components are dropped and `..` removes the previous
//! component; symbolic links do not exist. A file's directory is its path's parent.
//!
//! Thread-safety: `MemFs` is a cheap handle (`Arc`) whose clones share one state. The namespace
//! is behind one mutex; each inode has its own read-write lock, so readers of a file do not
//! block each other. Lock order: namespace, then inode.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

/// What a simulated crash keeps of the bytes written but not synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeepUnsynced {
    /// Power cut, worst case: only synced bytes and synced directory entries survive.
    #[default]
    None,
    /// Process crash: the operating system keeps everything written and every namespace
    /// change, synced or not.
    All,
    /// Power cut, partial write-back: the durable namespace survives, and each file keeps its
    /// synced bytes plus a random prefix (possibly empty, possibly all) of its unsynced tail.
    RandomPrefix,
}

/// Options for [`MemFs::crash_clone`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrashOptions {
    /// What is kept of unsynced data.
    pub keep_unsynced: KeepUnsynced,
    /// Seed of the random choices made for [`KeepUnsynced::RandomPrefix`]; the same seed and
    /// the same file-system state give the same result.
    pub seed: u64,
}

/// One file's content.
#[derive(Debug, Default)]
struct Inode {
    /// Live content.
    data: Vec<u8>,
    /// Length of the durable prefix of `data`.
    synced_len: usize,
}

type InodeRef = Arc<RwLock<Inode>>;

/// One directory's entries (files only; subdirectories live in `State::dirs`).
#[derive(Debug, Default)]
struct Dir {
    live: BTreeMap<String, InodeRef>,
    durable: BTreeMap<String, InodeRef>,
}

#[derive(Debug, Default)]
struct State {
    /// Every directory, by normalised path.
    dirs: BTreeMap<PathBuf, Dir>,
    /// Paths (normalised) of the locks currently held.
    locks: HashSet<PathBuf>,
}

/// An in-memory, crash-simulating file system. Clones share the same files.
#[derive(Debug, Clone)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

impl Default for MemFs {
    fn default() -> Self {
        Self::new()
    }
}

/// Lexical normalisation: drops `.`, resolves `..` against the previous component.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Splits a normalised file path into its directory and its name.
fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a file path: {}", path.display()),
            )
        })?
        .to_string_lossy()
        .into_owned();
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((dir, name))
}

fn not_found(what: &str, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{what} {}: no such file or directory", path.display()),
    )
}

impl State {
    fn with_roots() -> Self {
        let mut s = Self::default();
        s.dirs.insert(PathBuf::new(), Dir::default());
        s.dirs.insert(PathBuf::from("/"), Dir::default());
        s
    }

    fn file(&self, path: &Path) -> Option<&InodeRef> {
        let (dir, name) = split(path).ok()?;
        self.dirs.get(&dir)?.live.get(&name)
    }

    fn file_or_err(&self, what: &str, path: &Path) -> io::Result<InodeRef> {
        self.file(path)
            .cloned()
            .ok_or_else(|| not_found(what, path))
    }

    /// The directory that will hold `path`, which must not name a directory itself.
    fn parent_dir_mut(&mut self, what: &str, path: &Path) -> io::Result<(&mut Dir, String)> {
        if self.dirs.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{what} {}: is a directory", path.display()),
            ));
        }
        let (dir, name) = split(path)?;
        let d = self
            .dirs
            .get_mut(&dir)
            .ok_or_else(|| not_found(what, &dir))?;
        Ok((d, name))
    }
}

impl MemFs {
    /// An empty file system holding only the root directories.
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State::with_roots())),
        }
    }

    /// Returns a new, independent file system holding what a crash of this one would leave
    /// now (see [`KeepUnsynced`]). Everything in the result is durable. Locks are not carried
    /// over. `self` is not changed and keeps working.
    #[must_use]
    pub fn crash_clone(&self, opts: &CrashOptions) -> MemFs {
        self.crash_clone_with(opts, || ()).0
    }

    /// [`MemFs::crash_clone`], running `also` while every operation on this file system
    /// waits: a crash of the files and of another device (e.g. a simulated NVM power cut
    /// taken in `also`) at one instant. Nothing the files do can depend on what happens on
    /// the other device during `also`, so the pair is a state a real crash could leave.
    /// `also` must not use this file system.
    pub fn crash_clone_with<T>(&self, opts: &CrashOptions, also: impl FnOnce() -> T) -> (MemFs, T) {
        let state = self.state.lock();
        let other = also();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(opts.seed);
        // Inodes reachable under several names stay shared in the clone.
        let mut copies: HashMap<usize, InodeRef> = HashMap::new();
        let mut new_state = State::with_roots();
        for (path, dir) in &state.dirs {
            let names = match opts.keep_unsynced {
                KeepUnsynced::All => &dir.live,
                KeepUnsynced::None | KeepUnsynced::RandomPrefix => &dir.durable,
            };
            let mut entries = BTreeMap::new();
            for (name, inode) in names {
                let key = Arc::as_ptr(inode) as usize;
                let copy = copies.entry(key).or_insert_with(|| {
                    let src = inode.read();
                    let keep = match opts.keep_unsynced {
                        KeepUnsynced::None => src.synced_len,
                        KeepUnsynced::All => src.data.len(),
                        KeepUnsynced::RandomPrefix => {
                            rng.random_range(src.synced_len..=src.data.len())
                        }
                    };
                    let data = src.data.get(..keep).unwrap_or(&src.data).to_vec();
                    let synced_len = data.len();
                    Arc::new(RwLock::new(Inode { data, synced_len }))
                });
                entries.insert(name.clone(), Arc::clone(copy));
            }
            new_state.dirs.insert(
                path.clone(),
                Dir {
                    live: entries.clone(),
                    durable: entries,
                },
            );
        }
        (
            MemFs {
                state: Arc::new(Mutex::new(new_state)),
            },
            other,
        )
    }

    /// Paths of every file in the live namespace, sorted.
    #[must_use]
    pub fn file_names(&self) -> Vec<PathBuf> {
        let state = self.state.lock();
        let mut out = Vec::new();
        for (path, dir) in &state.dirs {
            for name in dir.live.keys() {
                out.push(path.join(name));
            }
        }
        out.sort();
        out
    }

    /// XORs the byte at `offset` of a file with `xor_mask`, in both its live and (if the byte
    /// is durable) its durable content. Fails with `UnexpectedEof` past the end of the file.
    pub fn corrupt(&self, path: &Path, offset: u64, xor_mask: u8) -> io::Result<()> {
        let path = normalize(path);
        let inode = self.state.lock().file_or_err("corrupt", &path)?;
        let mut inode = inode.write();
        let byte = usize::try_from(offset)
            .ok()
            .and_then(|o| inode.data.get_mut(o))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("corrupt {} at {offset}: past the end", path.display()),
                )
            })?;
        *byte ^= xor_mask;
        Ok(())
    }

    /// Shortens a file to `len` bytes (live and durable content alike). Fails with
    /// `InvalidInput` if the file is shorter than `len`.
    pub fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let path = normalize(path);
        let inode = self.state.lock().file_or_err("truncate", &path)?;
        let mut inode = inode.write();
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= inode.data.len())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("truncate {} to {len}: file is shorter", path.display()),
                )
            })?;
        inode.data.truncate(len);
        inode.synced_len = inode.synced_len.min(len);
        Ok(())
    }

    /// Binds `path` to a new empty inode in the live namespace.
    fn create_inode(&self, what: &str, path: &Path) -> io::Result<InodeRef> {
        let mut state = self.state.lock();
        let (dir, name) = state.parent_dir_mut(what, path)?;
        let inode = InodeRef::default();
        dir.live.insert(name, Arc::clone(&inode));
        Ok(inode)
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let path = normalize(path);
        let inode = self.create_inode("create", &path)?;
        Ok(Box::new(MemWritableFile {
            inode,
            fs: Arc::clone(&self.state),
        }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let path = normalize(path);
        let inode = self.state.lock().file_or_err("open for append", &path)?;
        Ok(Box::new(MemWritableFile {
            inode,
            fs: Arc::clone(&self.state),
        }))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let path = normalize(path);
        let inode = self.state.lock().file_or_err("open", &path)?;
        let size = inode.read().data.len() as u64;
        Ok(Arc::new(MemRandomAccessFile { inode, size, path }))
    }

    fn exists(&self, path: &Path) -> bool {
        let path = normalize(path);
        let state = self.state.lock();
        state.dirs.contains_key(&path) || state.file(&path).is_some()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let path = normalize(path);
        let inode = self.state.lock().file_or_err("stat", &path)?;
        Ok(inode.read().data.len() as u64)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let path = normalize(path);
        let mut state = self.state.lock();
        let (dir, name) = state.parent_dir_mut("remove", &path)?;
        dir.live
            .remove(&name)
            .map(|_| ())
            .ok_or_else(|| not_found("remove", &path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let from = normalize(from);
        let to = normalize(to);
        let mut state = self.state.lock();
        // Check the destination first so a failed rename changes nothing.
        state.parent_dir_mut("rename to", &to)?;
        let (src, from_name) = state.parent_dir_mut("rename", &from)?;
        let inode = src
            .live
            .remove(&from_name)
            .ok_or_else(|| not_found("rename", &from))?;
        let (dst, to_name) = state.parent_dir_mut("rename to", &to)?;
        dst.live.insert(to_name, inode);
        Ok(())
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let path = normalize(path);
        let mut state = self.state.lock();
        let mut cur = Some(path.as_path());
        while let Some(p) = cur {
            if state.dirs.contains_key(p) {
                break;
            }
            if state.file(p).is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("create directory {}: a file exists there", p.display()),
                ));
            }
            cur = p.parent();
        }
        let mut cur = Some(path.as_path());
        while let Some(p) = cur {
            if state.dirs.contains_key(p) {
                break;
            }
            state.dirs.insert(p.to_path_buf(), Dir::default());
            cur = p.parent();
        }
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let path = normalize(path);
        let state = self.state.lock();
        let dir = state
            .dirs
            .get(&path)
            .ok_or_else(|| not_found("list", &path))?;
        let mut names: Vec<String> = dir.live.keys().cloned().collect();
        // Subdirectories.
        let subdirs: BTreeSet<String> = state
            .dirs
            .keys()
            .filter(|d| d.as_path() != path && d.parent() == Some(path.as_path()))
            .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.extend(subdirs);
        Ok(names)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let path = normalize(path);
        let mut state = self.state.lock();
        let dir = state
            .dirs
            .get_mut(&path)
            .ok_or_else(|| not_found("sync directory", &path))?;
        dir.durable = dir.live.clone();
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let path = normalize(path);
        let mut state = self.state.lock();
        if state.locks.contains(&path) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("lock {}: already held", path.display()),
            ));
        }
        if state.file(&path).is_none() {
            let (dir, name) = state.parent_dir_mut("open lock file", &path)?;
            dir.live.insert(name, InodeRef::default());
        }
        state.locks.insert(path.clone());
        Ok(Box::new(MemFileLock {
            state: Arc::clone(&self.state),
            path,
        }))
    }
}

/// An appender on a [`MemFs`] file.
///
/// Appends and syncs take the file system's namespace lock too, so that
/// [`MemFs::crash_clone`] (which holds it) sees one instant across all files: a power cut
/// is instantaneous, and a clone that read one file before a sync and another after it
/// would show an impossible state (a later file durable, an earlier one not).
#[derive(Debug)]
pub struct MemWritableFile {
    inode: InodeRef,
    fs: Arc<Mutex<State>>,
}

impl WritableFile for MemWritableFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        let _instant = self.fs.lock();
        self.inode.write().data.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let _instant = self.fs.lock();
        let mut inode = self.inode.write();
        inode.synced_len = inode.data.len();
        Ok(())
    }

    fn size(&self) -> u64 {
        self.inode.read().data.len() as u64
    }
}

/// A positional reader on a [`MemFs`] file. Reads see the file's current live content.
#[derive(Debug)]
pub struct MemRandomAccessFile {
    inode: InodeRef,
    size: u64,
    path: PathBuf,
}

impl RandomAccessFile for MemRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        crate::read_bytes_at(&self.inode.read().data, offset, buf, &self.path)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// A held [`MemFs`] lock.
#[derive(Debug)]
pub struct MemFileLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl FileLock for MemFileLock {}

impl Drop for MemFileLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(keep_unsynced: KeepUnsynced, seed: u64) -> CrashOptions {
        CrashOptions {
            keep_unsynced,
            seed,
        }
    }

    fn write(fs: &MemFs, path: &str, data: &[u8], sync: bool) {
        let mut w = fs.create(Path::new(path)).unwrap();
        w.append(data).unwrap();
        if sync {
            w.sync().unwrap();
        }
    }

    fn db() -> MemFs {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        fs
    }

    #[test]
    fn basic_file_operations() {
        let fs = db();
        let p = Path::new("/db/a");
        let mut w = fs.create(p).unwrap();
        w.append(b"hello").unwrap();
        w.append(b" world").unwrap();
        assert_eq!(w.size(), 11);
        drop(w);
        assert_eq!(fs.read_all(p).unwrap(), b"hello world");
        assert_eq!(fs.file_size(p).unwrap(), 11);
        let r = fs.open_read(p).unwrap();
        let mut buf = [0u8; 5];
        r.read_exact_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"world");
        assert_eq!(
            r.read_exact_at(7, &mut buf).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(
            r.read_exact_at(u64::MAX, &mut buf).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );

        let mut w = fs.open_append(p).unwrap();
        assert_eq!(w.size(), 11);
        w.append(b"!").unwrap();
        assert_eq!(fs.read_all(p).unwrap(), b"hello world!");

        fs.rename(p, Path::new("/db/b")).unwrap();
        assert!(!fs.exists(p));
        assert!(fs.exists(Path::new("/db/./b")));
        assert_eq!(
            fs.list_dir(Path::new("/db")).unwrap(),
            vec!["b".to_string()]
        );
        fs.remove_file(Path::new("/db/b")).unwrap();
        assert!(fs.list_dir(Path::new("/db")).unwrap().is_empty());
        assert_eq!(
            fs.remove_file(Path::new("/db/b")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs.open_read(Path::new("/db/b")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn create_needs_an_existing_directory() {
        let fs = MemFs::new();
        let err = fs.create(Path::new("/nope/file")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        fs.create_dir_all(Path::new("/nope/deeper")).unwrap();
        fs.create(Path::new("/nope/file")).unwrap();
        assert!(fs.exists(Path::new("/nope/deeper")));
        let mut names = fs.list_dir(Path::new("/nope")).unwrap();
        names.sort();
        assert_eq!(names, vec!["deeper".to_string(), "file".to_string()]);
        // Relative paths work from the implicit base directory.
        fs.create_dir_all(Path::new("rel")).unwrap();
        write(&fs, "rel/x", b"1", true);
        assert_eq!(fs.read_all(Path::new("./rel/x")).unwrap(), b"1");
    }

    #[test]
    fn create_truncates() {
        let fs = db();
        write(&fs, "/db/f", b"old content", true);
        write(&fs, "/db/f", b"new", false);
        assert_eq!(fs.read_all(Path::new("/db/f")).unwrap(), b"new");
    }

    #[test]
    fn crash_drops_unsynced_bytes() {
        let fs = db();
        let mut w = fs.create(Path::new("/db/wal")).unwrap();
        w.append(b"synced").unwrap();
        w.sync().unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        w.append(b"-lost").unwrap();
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 1));
        assert_eq!(crashed.read_all(Path::new("/db/wal")).unwrap(), b"synced");
        // The old instance keeps working and does not affect the clone.
        w.append(b"+more").unwrap();
        assert_eq!(
            fs.read_all(Path::new("/db/wal")).unwrap(),
            b"synced-lost+more"
        );
        assert_eq!(crashed.read_all(Path::new("/db/wal")).unwrap(), b"synced");
    }

    #[test]
    fn crash_drops_a_synced_file_whose_directory_was_not_synced() {
        let fs = db();
        write(&fs, "/db/kept", b"k", true);
        fs.sync_dir(Path::new("/db")).unwrap();
        write(&fs, "/db/gone", b"g", true);
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 1));
        assert!(crashed.exists(Path::new("/db/kept")));
        assert!(!crashed.exists(Path::new("/db/gone")));
        assert_eq!(crashed.file_names(), vec![PathBuf::from("/db/kept")]);
        // Removal is not durable before the directory sync either.
        fs.remove_file(Path::new("/db/kept")).unwrap();
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 1));
        assert_eq!(crashed.read_all(Path::new("/db/kept")).unwrap(), b"k");
        fs.sync_dir(Path::new("/db")).unwrap();
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 1));
        assert!(!crashed.exists(Path::new("/db/kept")));
        assert!(crashed.exists(Path::new("/db/gone")));
    }

    #[test]
    fn crash_reverts_an_unsynced_rename() {
        let fs = db();
        write(&fs, "/db/CURRENT", b"MANIFEST-1", true);
        fs.sync_dir(Path::new("/db")).unwrap();
        write(&fs, "/db/CURRENT.tmp", b"MANIFEST-2", true);
        fs.rename(Path::new("/db/CURRENT.tmp"), Path::new("/db/CURRENT"))
            .unwrap();
        assert_eq!(
            fs.read_all(Path::new("/db/CURRENT")).unwrap(),
            b"MANIFEST-2"
        );
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 1));
        assert_eq!(
            crashed.read_all(Path::new("/db/CURRENT")).unwrap(),
            b"MANIFEST-1"
        );
        assert!(!crashed.exists(Path::new("/db/CURRENT.tmp")));
        fs.sync_dir(Path::new("/db")).unwrap();
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 1));
        assert_eq!(
            crashed.read_all(Path::new("/db/CURRENT")).unwrap(),
            b"MANIFEST-2"
        );
    }

    #[test]
    fn crash_keeping_all_keeps_everything() {
        let fs = db();
        write(&fs, "/db/a", b"unsynced", false);
        write(&fs, "/db/b", b"tmp", false);
        fs.rename(Path::new("/db/b"), Path::new("/db/c")).unwrap();
        let crashed = fs.crash_clone(&opts(KeepUnsynced::All, 1));
        assert_eq!(crashed.read_all(Path::new("/db/a")).unwrap(), b"unsynced");
        assert_eq!(crashed.read_all(Path::new("/db/c")).unwrap(), b"tmp");
        assert!(!crashed.exists(Path::new("/db/b")));
        // Everything in the clone is durable: a second crash keeps it.
        let again = crashed.crash_clone(&opts(KeepUnsynced::None, 1));
        assert_eq!(again.read_all(Path::new("/db/a")).unwrap(), b"unsynced");
        assert_eq!(again.read_all(Path::new("/db/c")).unwrap(), b"tmp");
    }

    #[test]
    fn crash_random_prefix_keeps_synced_bytes_and_a_prefix_of_the_rest() {
        let fs = db();
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let mut w = fs.create(Path::new("/db/f")).unwrap();
        w.append(&data[..100]).unwrap();
        w.sync().unwrap();
        w.append(&data[100..]).unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        let mut lengths = BTreeSet::new();
        for seed in 0..32 {
            let crashed = fs.crash_clone(&opts(KeepUnsynced::RandomPrefix, seed));
            let got = crashed.read_all(Path::new("/db/f")).unwrap();
            assert!(got.len() >= 100, "synced bytes lost: {}", got.len());
            assert_eq!(&got[..], &data[..got.len()]);
            lengths.insert(got.len());
            // Same seed, same result.
            let twin = fs.crash_clone(&opts(KeepUnsynced::RandomPrefix, seed));
            assert_eq!(twin.read_all(Path::new("/db/f")).unwrap(), got);
        }
        assert!(lengths.len() > 1, "random prefix never varied");
    }

    #[test]
    fn crash_clone_does_not_carry_locks() {
        let fs = db();
        let _guard = fs.lock(Path::new("/db/LOCK")).unwrap();
        assert_eq!(
            fs.lock(Path::new("/db/LOCK")).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        fs.sync_dir(Path::new("/db")).unwrap();
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 0));
        assert!(crashed.exists(Path::new("/db/LOCK")));
        drop(crashed.lock(Path::new("/db/LOCK")).unwrap());
    }

    #[test]
    fn lock_is_released_on_drop_and_shared_by_clones() {
        let fs = db();
        let other = fs.clone();
        let guard = fs.lock(Path::new("/db/LOCK")).unwrap();
        assert_eq!(
            other.lock(Path::new("/db/./LOCK")).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        drop(guard);
        drop(other.lock(Path::new("/db/LOCK")).unwrap());
    }

    #[test]
    fn corrupt_and_truncate() {
        let fs = db();
        write(&fs, "/db/f", b"abcdef", true);
        fs.corrupt(Path::new("/db/f"), 1, 0x20).unwrap();
        assert_eq!(fs.read_all(Path::new("/db/f")).unwrap(), b"aBcdef");
        fs.sync_dir(Path::new("/db")).unwrap();
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 0));
        assert_eq!(crashed.read_all(Path::new("/db/f")).unwrap(), b"aBcdef");
        assert_eq!(
            fs.corrupt(Path::new("/db/f"), 6, 1).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        fs.truncate(Path::new("/db/f"), 4).unwrap();
        assert_eq!(fs.read_all(Path::new("/db/f")).unwrap(), b"aBcd");
        assert_eq!(
            fs.truncate(Path::new("/db/f"), 5).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        let crashed = fs.crash_clone(&opts(KeepUnsynced::None, 0));
        assert_eq!(crashed.read_all(Path::new("/db/f")).unwrap(), b"aBcd");
    }

    #[test]
    fn concurrent_writers_and_readers() {
        let fs = db();
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let fs = fs.clone();
                s.spawn(move || {
                    let path = PathBuf::from(format!("/db/t{t}"));
                    let mut w = fs.create(&path).unwrap();
                    for i in 0..100u8 {
                        w.append(&[t, i]).unwrap();
                        let r = fs.open_read(&path).unwrap();
                        let mut b = [0u8; 2];
                        r.read_exact_at(u64::from(i) * 2, &mut b).unwrap();
                        assert_eq!(b, [t, i]);
                    }
                });
            }
        });
        assert_eq!(fs.file_names().len(), 4);
    }
}
