//! A file-system wrapper that injects I/O errors.
//!
//! Owns: [`FaultFs`], its rules ([`FaultRule`], [`FaultOp`], [`Trigger`]) and the file wrappers
//! that subject appends, syncs and reads of files it opened to the same rules.
//!
//! Semantics:
//! - Every call of an injectable operation is matched against every rule, in the order they
//!   were added. A rule matches when its `op` is `None` or equal to the call's operation and
//!   its `path_contains` is `None` or a substring of the call's path (for a rename, of either
//!   path). Each matching rule counts the call and decides, from its [`Trigger`], whether to
//!   fail it; the call fails if any rule says so. A failed call does nothing: the wrapped file
//!   system is not called.
//! - Operations that are never injected: `exists`, `file_size`, `create_dir_all`, `lock`.
//! - While disabled ([`FaultFs::set_enabled`]), calls are neither counted nor failed.
//! - Injected errors are `io::Error::other("injected fault: {op:?} on {path}")`, and
//!   [`FaultFs::injected`] counts them. [`is_injected`] recognises them.
//!
//! Thread-safety: the rules sit behind one mutex, so concurrent calls see a single order of
//! matching calls; with [`Trigger::Probability`] the outcome is deterministic for a given seed
//! only if that order is (e.g. one thread). Clones of a `FaultFs` share rules and counters.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile, WriteLifetime};

/// The kinds of operation that can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// `RandomAccessFile::read_exact_at` (also inside `FileSystem::read_all`).
    Read,
    /// `WritableFile::append` and `WritableFile::flush`.
    Write,
    /// `WritableFile::sync`.
    Sync,
    /// `FileSystem::sync_dir`.
    SyncDir,
    /// `FileSystem::create`.
    Create,
    /// `FileSystem::open_read` and `FileSystem::open_append`.
    Open,
    /// `FileSystem::rename`.
    Rename,
    /// `FileSystem::remove_file`.
    Remove,
    /// `FileSystem::list_dir`.
    List,
}

/// When a rule fails the calls it matches. Counts are of matching calls only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// Let the first `n` matching calls succeed, then fail every later one.
    After(u64),
    /// Fail only the `(n + 1)`-th matching call (`Once(0)` fails the first).
    Once(u64),
    /// Fail each matching call with probability `p` (clamped to `[0, 1]`; NaN counts as 0),
    /// drawing from a generator seeded with `seed`.
    Probability {
        /// Probability of failure per matching call.
        p: f64,
        /// Seed of the rule's random generator.
        seed: u64,
    },
}

/// One fault-injection rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// The operation to fail; `None` matches every injectable operation.
    pub op: Option<FaultOp>,
    /// Only calls whose path contains this string match; `None` matches every path.
    pub path_contains: Option<String>,
    /// When matching calls fail.
    pub trigger: Trigger,
}

impl FaultRule {
    /// A rule failing the given operation (or any, for `None`) on any path.
    #[must_use]
    pub fn new(op: Option<FaultOp>, trigger: Trigger) -> Self {
        Self {
            op,
            path_contains: None,
            trigger,
        }
    }

    /// Restricts the rule to paths containing `fragment`.
    #[must_use]
    pub fn on_path(mut self, fragment: impl Into<String>) -> Self {
        self.path_contains = Some(fragment.into());
        self
    }
}

/// A rule and its running state.
#[derive(Debug)]
struct ActiveRule {
    rule: FaultRule,
    /// Matching calls seen so far.
    seen: u64,
    rng: Xoshiro256PlusPlus,
}

impl ActiveRule {
    fn new(rule: FaultRule) -> Self {
        let seed = match rule.trigger {
            Trigger::Probability { seed, .. } => seed,
            Trigger::After(_) | Trigger::Once(_) => 0,
        };
        Self {
            rule,
            seen: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    fn matches(&self, op: FaultOp, paths: &[&Path]) -> bool {
        if self.rule.op.is_some_and(|o| o != op) {
            return false;
        }
        match &self.rule.path_contains {
            None => true,
            Some(fragment) => paths
                .iter()
                .any(|p| p.to_string_lossy().contains(fragment.as_str())),
        }
    }

    /// Counts a matching call and says whether it fails.
    fn fires(&mut self) -> bool {
        let n = self.seen;
        self.seen = self.seen.saturating_add(1);
        match self.rule.trigger {
            Trigger::After(k) => n >= k,
            Trigger::Once(k) => n == k,
            Trigger::Probability { p, .. } => {
                let draw: f64 = self.rng.random();
                draw < p
            }
        }
    }
}

/// State shared by a `FaultFs`, its clones and the files it opened.
#[derive(Default)]
struct Faults {
    rules: Mutex<Vec<ActiveRule>>,
    enabled: AtomicBool,
    injected: AtomicU64,
    /// Once this returns true, every call that changes the file system fails.
    freeze_when: Mutex<Option<FreezePredicate>>,
    /// Runs first in every call that rules can match.
    before_each: Mutex<Option<CallHook>>,
}

/// See [`FaultFs::freeze_when`].
type FreezePredicate = Arc<dyn Fn() -> bool + Send + Sync>;

/// See [`FaultFs::before_each`].
type CallHook = Arc<dyn Fn(FaultOp, &Path) + Send + Sync>;

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("rules", &self.rules)
            .field("enabled", &self.enabled)
            .field("injected", &self.injected)
            .field("freeze_when", &self.freeze_when.lock().is_some())
            .field("before_each", &self.before_each.lock().is_some())
            .finish()
    }
}

impl Faults {
    /// Fails the call if a rule says so.
    fn check(&self, op: FaultOp, paths: &[&Path]) -> io::Result<()> {
        // Cloned out of its lock: the hook may block (and other threads' calls go on).
        let hook = self.before_each.lock().clone();
        if let (Some(hook), Some(path)) = (hook, paths.first()) {
            hook(op, path);
        }
        if !self.enabled.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut fail = !matches!(op, FaultOp::Read | FaultOp::Open | FaultOp::List)
            && self.freeze_when.lock().as_ref().is_some_and(|f| f());
        for rule in self.rules.lock().iter_mut() {
            if rule.matches(op, paths) && rule.fires() {
                fail = true;
            }
        }
        if !fail {
            return Ok(());
        }
        self.injected.fetch_add(1, Ordering::AcqRel);
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        Err(io::Error::other(InjectedFault(format!(
            "injected fault: {op:?} on {}",
            shown.join(" -> ")
        ))))
    }
}

/// The payload of an injected error; its `Display` is the error's message.
#[derive(Debug)]
struct InjectedFault(String);

impl fmt::Display for InjectedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InjectedFault {}

/// Whether `err` was injected by a [`FaultFs`] (directly, not re-wrapped by a caller).
#[must_use]
pub fn is_injected(err: &io::Error) -> bool {
    err.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<InjectedFault>().is_some())
}

/// A file system that forwards to another one and fails calls according to its rules.
/// Starts enabled, with no rules.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn FileSystem>,
    faults: Arc<Faults>,
}

impl fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultFs")
            .field("inner", &self.inner)
            .field("enabled", &self.faults.enabled.load(Ordering::Relaxed))
            .field("injected", &self.injected())
            .finish_non_exhaustive()
    }
}

impl FaultFs {
    /// Wraps `inner`.
    #[must_use]
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        let faults = Faults {
            enabled: AtomicBool::new(true),
            ..Faults::default()
        };
        Self {
            inner,
            faults: Arc::new(faults),
        }
    }

    /// The wrapped file system.
    #[must_use]
    pub fn inner(&self) -> &Arc<dyn FileSystem> {
        &self.inner
    }

    /// Adds a rule; its counts start at zero.
    pub fn add_rule(&self, rule: FaultRule) {
        self.faults.rules.lock().push(ActiveRule::new(rule));
    }

    /// Removes every rule.
    pub fn clear_rules(&self) {
        self.faults.rules.lock().clear();
    }

    /// Number of errors injected so far.
    #[must_use]
    pub fn injected(&self) -> u64 {
        self.faults.injected.load(Ordering::Acquire)
    }

    /// Once `pred` returns true, every call that would change the file system (create,
    /// write, sync, rename, remove, directory sync) fails as an injected fault: the state
    /// left is the one of that moment. Used to cut power to the file system at the same
    /// instant as another event (e.g. a simulated NVM power cut).
    pub fn freeze_when(&self, pred: impl Fn() -> bool + Send + Sync + 'static) {
        *self.faults.freeze_when.lock() = Some(Arc::new(pred));
    }

    /// Runs `hook` at the start of every call that rules can match (the operations of
    /// [`FaultOp`]), with the operation and its (first) path, whether injection is on or
    /// not. It may block, panic or record: tests use it to hold a call at an exact point
    /// while other threads act, or to make a call panic.
    pub fn before_each(&self, hook: impl Fn(FaultOp, &Path) + Send + Sync + 'static) {
        *self.faults.before_each.lock() = Some(Arc::new(hook));
    }

    /// Turns injection (and the counting of matching calls) on or off.
    pub fn set_enabled(&self, enabled: bool) {
        self.faults.enabled.store(enabled, Ordering::Release);
    }

    fn wrap_writer(&self, inner: Box<dyn WritableFile>, path: &Path) -> Box<dyn WritableFile> {
        Box::new(FaultWritableFile {
            inner,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
        })
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.faults.check(FaultOp::Create, &[path])?;
        let f = self.inner.create(path)?;
        Ok(self.wrap_writer(f, path))
    }

    fn create_with_hint(
        &self,
        path: &Path,
        lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        self.faults.check(FaultOp::Create, &[path])?;
        let f = self.inner.create_with_hint(path, lifetime)?;
        Ok(self.wrap_writer(f, path))
    }

    fn create_direct(
        &self,
        path: &Path,
        lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        self.faults.check(FaultOp::Create, &[path])?;
        let f = self.inner.create_direct(path, lifetime)?;
        Ok(self.wrap_writer(f, path))
    }

    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.faults.check(FaultOp::Create, &[path])?;
        let f = self.inner.create_log(path)?;
        Ok(self.wrap_writer(f, path))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.faults.check(FaultOp::Open, &[path])?;
        let f = self.inner.open_append(path)?;
        Ok(self.wrap_writer(f, path))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.faults.check(FaultOp::Open, &[path])?;
        let inner = self.inner.open_read(path)?;
        Ok(Arc::new(FaultRandomAccessFile {
            inner,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
        }))
    }

    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.faults.check(FaultOp::Open, &[path])?;
        let inner = self.inner.open_read_direct(path)?;
        Ok(Arc::new(FaultRandomAccessFile {
            inner,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.faults.check(FaultOp::Remove, &[path])?;
        self.inner.remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.faults.check(FaultOp::Rename, &[from, to])?;
        self.inner.rename(from, to)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.faults.check(FaultOp::List, &[path])?;
        self.inner.list_dir(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.faults.check(FaultOp::SyncDir, &[path])?;
        self.inner.sync_dir(path)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

/// A writer whose appends, flushes and syncs are subject to the rules of its [`FaultFs`].
#[derive(Debug)]
pub struct FaultWritableFile {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.faults.check(FaultOp::Write, &[&self.path])?;
        self.inner.append(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.faults.check(FaultOp::Write, &[&self.path])?;
        self.inner.flush()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.faults.check(FaultOp::Sync, &[&self.path])?;
        self.inner.sync()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn close(&mut self) -> io::Result<()> {
        self.faults.check(FaultOp::Write, &[&self.path])?;
        self.inner.close()
    }
    fn set_early_writeback(&mut self, on: bool) {
        self.inner.set_early_writeback(on);
    }
}

/// A reader whose reads are subject to the rules of its [`FaultFs`].
#[derive(Debug)]
pub struct FaultRandomAccessFile {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.faults.check(FaultOp::Read, &[&self.path])?;
        self.inner.read_exact_at(offset, buf)
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CrashOptions, KeepUnsynced, MemFs};

    fn setup() -> (MemFs, FaultFs) {
        let mem = MemFs::new();
        mem.create_dir_all(Path::new("/db")).unwrap();
        let fs = FaultFs::new(Arc::new(mem.clone()));
        (mem, fs)
    }

    #[test]
    fn before_each_sees_every_matchable_call_even_with_injection_off() {
        let (_mem, fs) = setup();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        fs.before_each(move |op, path| s.lock().push((op, path.to_path_buf())));
        fs.set_enabled(false);
        let p = Path::new("/db/a.sst");
        fs.create(p).unwrap();
        fs.open_read(p).unwrap();
        fs.remove_file(p).unwrap();
        assert!(fs.exists(Path::new("/db")), "not a matchable call");
        assert_eq!(
            *seen.lock(),
            vec![
                (FaultOp::Create, p.to_path_buf()),
                (FaultOp::Open, p.to_path_buf()),
                (FaultOp::Remove, p.to_path_buf()),
            ]
        );
    }

    /// Outcome of `n` `sync_dir` calls: true = failed.
    fn sync_dir_outcomes(fs: &FaultFs, n: usize) -> Vec<bool> {
        (0..n)
            .map(|_| fs.sync_dir(Path::new("/db")).is_err())
            .collect()
    }

    /// The direct variants reach the inner file system and are subject to the rules of
    /// their plain counterparts (`Create`, `Open`, and reads and writes of their files).
    #[test]
    fn direct_variants_pass_through_and_take_faults() {
        let (_mem, fs) = setup();
        let p = Path::new("/db/t.sst");
        let mut w = fs.create_direct(p, WriteLifetime::Short).unwrap();
        w.append(b"table").unwrap();
        w.sync().unwrap();
        assert_eq!(fs.read_all(p).unwrap(), b"table");
        let mut buf = [0u8; 5];
        fs.open_read_direct(p)
            .unwrap()
            .read_exact_at(0, &mut buf)
            .unwrap();
        assert_eq!(&buf, b"table");
        fs.add_rule(FaultRule::new(Some(FaultOp::Create), Trigger::After(0)));
        fs.add_rule(FaultRule::new(Some(FaultOp::Open), Trigger::After(0)));
        assert!(is_injected(
            &fs.create_direct(p, WriteLifetime::Short).unwrap_err()
        ));
        assert!(is_injected(&fs.open_read_direct(p).unwrap_err()));
        assert_eq!(fs.injected(), 2);
    }

    #[test]
    fn passes_through_without_rules() {
        let (mem, fs) = setup();
        let mut w = fs.create(Path::new("/db/a")).unwrap();
        w.append(b"xyz").unwrap();
        w.sync().unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        assert_eq!(fs.read_all(Path::new("/db/a")).unwrap(), b"xyz");
        assert_eq!(mem.read_all(Path::new("/db/a")).unwrap(), b"xyz");
        assert_eq!(fs.injected(), 0);
    }

    #[test]
    fn after_countdown_fails_every_later_call() {
        let (_mem, fs) = setup();
        fs.add_rule(FaultRule::new(Some(FaultOp::SyncDir), Trigger::After(2)));
        assert_eq!(
            sync_dir_outcomes(&fs, 5),
            vec![false, false, true, true, true]
        );
        assert_eq!(fs.injected(), 3);
        fs.clear_rules();
        assert!(fs.sync_dir(Path::new("/db")).is_ok());
    }

    #[test]
    fn once_fails_a_single_call() {
        let (_mem, fs) = setup();
        fs.add_rule(FaultRule::new(Some(FaultOp::SyncDir), Trigger::Once(1)));
        assert_eq!(sync_dir_outcomes(&fs, 4), vec![false, true, false, false]);
        assert_eq!(fs.injected(), 1);
    }

    #[test]
    fn probability_is_deterministic_per_seed() {
        let run = |seed| {
            let (_mem, fs) = setup();
            fs.add_rule(FaultRule::new(
                Some(FaultOp::SyncDir),
                Trigger::Probability { p: 0.5, seed },
            ));
            sync_dir_outcomes(&fs, 64)
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert!(a.iter().any(|&f| f) && a.iter().any(|&f| !f));
        assert_ne!(a, run(8));

        let (_mem, fs) = setup();
        fs.add_rule(FaultRule::new(
            None,
            Trigger::Probability { p: 0.0, seed: 1 },
        ));
        assert!(sync_dir_outcomes(&fs, 16).iter().all(|&f| !f));
        fs.clear_rules();
        fs.add_rule(FaultRule::new(
            None,
            Trigger::Probability { p: 1.0, seed: 1 },
        ));
        assert!(sync_dir_outcomes(&fs, 16).iter().all(|&f| f));
    }

    #[test]
    fn rules_filter_by_operation_and_path() {
        let (_mem, fs) = setup();
        fs.add_rule(FaultRule::new(Some(FaultOp::Create), Trigger::After(0)).on_path(".sst"));
        let err = fs.create(Path::new("/db/000001.sst")).unwrap_err();
        assert!(is_injected(&err));
        assert_eq!(err.to_string(), "injected fault: Create on /db/000001.sst");
        fs.create(Path::new("/db/000002.log")).unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        assert_eq!(fs.injected(), 1);
        // A failed create did not create anything.
        assert!(!fs.exists(Path::new("/db/000001.sst")));
    }

    #[test]
    fn rename_matches_either_path() {
        let (_mem, fs) = setup();
        drop(fs.create(Path::new("/db/CURRENT.tmp")).unwrap());
        fs.add_rule(
            FaultRule::new(Some(FaultOp::Rename), Trigger::After(0)).on_path("/db/CURRENT"),
        );
        let err = fs
            .rename(Path::new("/db/CURRENT.tmp"), Path::new("/db/CURRENT"))
            .unwrap_err();
        assert!(err.to_string().contains("Rename"));
        assert!(fs.exists(Path::new("/db/CURRENT.tmp")));
        assert!(!fs.exists(Path::new("/db/CURRENT")));
    }

    #[test]
    fn errors_surface_from_wrapped_files() {
        let (mem, fs) = setup();
        let mut w = fs.create(Path::new("/db/000003.log")).unwrap();
        w.append(b"first").unwrap();
        w.sync().unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();

        fs.add_rule(FaultRule::new(Some(FaultOp::Write), Trigger::Once(0)));
        assert!(is_injected(&w.append(b"dropped").unwrap_err()));
        w.append(b"-second").unwrap();
        assert_eq!(w.size(), 12);

        fs.add_rule(FaultRule::new(Some(FaultOp::Sync), Trigger::After(0)));
        assert!(is_injected(&w.sync().unwrap_err()));
        // The failed sync did not make the tail durable.
        let crashed = mem.crash_clone(&CrashOptions {
            keep_unsynced: KeepUnsynced::None,
            seed: 0,
        });
        assert_eq!(
            crashed.read_all(Path::new("/db/000003.log")).unwrap(),
            b"first"
        );

        let r = fs.open_read(Path::new("/db/000003.log")).unwrap();
        fs.add_rule(FaultRule::new(Some(FaultOp::Read), Trigger::After(0)));
        let mut buf = [0u8; 5];
        assert!(is_injected(&r.read_exact_at(0, &mut buf).unwrap_err()));
        assert!(fs.read_all(Path::new("/db/000003.log")).is_err());
        assert_eq!(fs.injected(), 4);
    }

    #[test]
    fn disabled_calls_are_not_counted() {
        let (_mem, fs) = setup();
        fs.add_rule(FaultRule::new(Some(FaultOp::SyncDir), Trigger::Once(1)));
        fs.set_enabled(false);
        assert_eq!(sync_dir_outcomes(&fs, 3), vec![false, false, false]);
        fs.set_enabled(true);
        assert_eq!(sync_dir_outcomes(&fs, 3), vec![false, true, false]);
    }

    #[test]
    fn open_list_and_remove_can_fail() {
        let (_mem, fs) = setup();
        drop(fs.create(Path::new("/db/f")).unwrap());
        fs.add_rule(FaultRule::new(Some(FaultOp::Open), Trigger::After(0)));
        fs.add_rule(FaultRule::new(Some(FaultOp::List), Trigger::After(0)));
        fs.add_rule(FaultRule::new(Some(FaultOp::Remove), Trigger::After(0)));
        assert!(fs.open_read(Path::new("/db/f")).is_err());
        assert!(fs.open_append(Path::new("/db/f")).is_err());
        assert!(fs.list_dir(Path::new("/db")).is_err());
        assert!(fs.remove_file(Path::new("/db/f")).is_err());
        assert!(fs.exists(Path::new("/db/f")));
        assert_eq!(fs.injected(), 4);
        // Real errors of the inner file system are not counted as injected.
        fs.clear_rules();
        let err = fs.open_read(Path::new("/db/missing")).unwrap_err();
        assert!(!is_injected(&err));
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
