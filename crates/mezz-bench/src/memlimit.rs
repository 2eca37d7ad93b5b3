//! `--memory-limit`: a memory cgroup around the benchmark process, so that an engine's heap
//! *and* the page cache it faults in are charged to one budget and reclaimed at its limit.
//!
//! An engine without direct I/O (LevelDB, fjall) keeps its table files in the kernel's page
//! cache, memory that its resident set size does not show and that no engine option bounds.
//! [`MemoryCgroup::join`] creates the group `mezz-bench-<pid>` as a child of the process's
//! current memory cgroup (cgroup v1: the hierarchy with the `memory` controller; v2: the
//! unified hierarchy where `memory` is among `cgroup.controllers`), sets its limit
//! (`memory.limit_in_bytes` / `memory.max`; swap, where it is accounted, gets no more), and
//! moves the whole process (every thread) into it. Pages are charged to the group of the
//! process that first faults them in, so the limit covers what the benchmark reads and
//! writes from then on, not files another process had cached before.
//!
//! The guard owns the group: dropping it (also on error paths and unwinding) moves the
//! process back to the group it came from, empties the group (v1 `memory.force_empty`) and
//! removes it. A cleanup step that fails is printed as a warning, never a panic. The group
//! outlives the process only if the process is killed while inside it (an empty directory
//! that `rmdir` removes).
//!
//! Invariants: while a [`MemoryCgroup`] exists the process is a member of its group; at
//! most one exists per process at a time (a second `join` would nest inside the first and
//! the first's drop would move the process out of both). Thread-safety: moving a process
//! moves every thread of it, so threads started before or after `join` are all limited;
//! `join` and the drop should run on the thread that owns the benchmark, with no other
//! code of the process moving it between cgroups meanwhile.
//!
//! The parsers are pure functions over the files' text, tested without a cgroup.

use std::path::{Path, PathBuf};

use crate::error::{BenchError, Result};

/// The smallest limit accepted: below it the process itself could not run.
pub const MIN_LIMIT_BYTES: u64 = 16 << 20;

/// Directories tried, in order, when `/proc/self/mountinfo` names no memory controller.
const FALLBACK_MOUNTS: [&str; 3] = [
    "/sys/fs/cgroup/memory",
    "/sys/fs/cgroup",
    "/sys/fs/cgroup/unified",
];

/// The cgroup interface version of a hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// cgroup v1: one hierarchy per controller (set of controllers).
    V1,
    /// cgroup v2: the unified hierarchy.
    V2,
}

impl CgroupVersion {
    /// The file holding a group's memory limit.
    #[must_use]
    pub fn limit_file(self) -> &'static str {
        match self {
            Self::V1 => "memory.limit_in_bytes",
            Self::V2 => "memory.max",
        }
    }

    /// The file holding a group's peak memory use (page cache included).
    #[must_use]
    pub fn peak_file(self) -> &'static str {
        match self {
            Self::V1 => "memory.max_usage_in_bytes",
            Self::V2 => "memory.peak",
        }
    }
}

/// A mounted cgroup hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    /// v1 or v2.
    pub version: CgroupVersion,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// The hierarchy's directory that is mounted there (`/` unless a container mounted a
    /// subtree).
    pub root: String,
}

/// Undoes the octal escapes (`\040` for a space, ...) of a `/proc/self/mountinfo` field.
fn unescape_mount_field(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && let Some(digits) = s.get(i + 1..i + 4)
            && digits.bytes().all(|c| (b'0'..=b'7').contains(&c))
            && let Ok(v) = u8::from_str_radix(digits, 8)
        {
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup hierarchies of a `/proc/self/mountinfo` text: v1 hierarchies whose super
/// options include `memory`, and every cgroup2 mount (whether it has the memory controller
/// is a property of its `cgroup.controllers` file, not of the mount).
#[must_use]
pub fn parse_cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            let root = unescape_mount_field(l.get(3)?);
            let mount_point = PathBuf::from(unescape_mount_field(l.get(4)?));
            let version = match *r.first()? {
                "cgroup" if r.get(2)?.split(',').any(|o| o == "memory") => CgroupVersion::V1,
                "cgroup2" => CgroupVersion::V2,
                _ => return None,
            };
            Some(CgroupMount {
                version,
                mount_point,
                root,
            })
        })
        .collect()
}

/// The memory controller's hierarchy among `mounts`: the first v1 memory hierarchy, else
/// the first cgroup2 mount for which `v2_has_memory(mount_point)` holds.
#[must_use]
pub fn pick_memory_mount(
    mounts: &[CgroupMount],
    v2_has_memory: impl Fn(&Path) -> bool,
) -> Option<CgroupMount> {
    mounts
        .iter()
        .find(|m| m.version == CgroupVersion::V1)
        .or_else(|| {
            mounts
                .iter()
                .find(|m| m.version == CgroupVersion::V2 && v2_has_memory(&m.mount_point))
        })
        .cloned()
}

/// Whether a `cgroup.controllers` (or `cgroup.subtree_control`) text lists `memory`.
#[must_use]
pub fn lists_memory(controllers: &str) -> bool {
    controllers.split_whitespace().any(|c| c == "memory")
}

/// The process's group in the hierarchy of `version` from the text of `/proc/self/cgroup`:
/// v1 the line whose controllers include `memory`, v2 the `0::` line.
#[must_use]
pub fn parse_own_cgroup(proc_cgroup: &str, version: CgroupVersion) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut f = line.splitn(3, ':');
        let id = f.next()?;
        let controllers = f.next()?;
        let path = f.next()?;
        let ours = match version {
            CgroupVersion::V1 => controllers.split(',').any(|c| c == "memory"),
            CgroupVersion::V2 => id == "0" && controllers.is_empty(),
        };
        ours.then(|| path.to_string())
    })
}

/// The directory of group `group` (a path as `/proc/self/cgroup` gives it) under `mount`.
#[must_use]
pub fn group_dir(mount: &CgroupMount, group: &str) -> PathBuf {
    let root = mount.root.trim_end_matches('/');
    let rel = group.strip_prefix(root).unwrap_or(group);
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() {
        mount.mount_point.clone()
    } else {
        mount.mount_point.join(rel)
    }
}

/// A byte count from a cgroup usage file (`None` for `max` or anything unparsable).
#[must_use]
pub fn parse_usage(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// The memory controller's hierarchy of this machine.
fn find_memory_mount() -> Option<CgroupMount> {
    let v2_has_memory = |p: &Path| {
        std::fs::read_to_string(p.join("cgroup.controllers")).is_ok_and(|t| lists_memory(&t))
    };
    if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo")
        && let Some(m) = pick_memory_mount(&parse_cgroup_mounts(&text), v2_has_memory)
    {
        return Some(m);
    }
    FALLBACK_MOUNTS.iter().find_map(|p| {
        let p = Path::new(p);
        let version = if p.join("memory.limit_in_bytes").is_file() {
            CgroupVersion::V1
        } else if v2_has_memory(p) {
            CgroupVersion::V2
        } else {
            return None;
        };
        Some(CgroupMount {
            version,
            mount_point: p.to_path_buf(),
            root: "/".into(),
        })
    })
}

/// What a benchmark records of the limit it ran under: the limit and where the group's
/// peak is read. Cheap to clone; reading the peak after the group is gone gives `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryBudget {
    /// The group's limit in bytes (heap and page cache together).
    pub limit_bytes: u64,
    /// The group's peak usage file, if the kernel has one (v2 `memory.peak` appeared in
    /// Linux 5.19).
    pub peak_file: Option<PathBuf>,
}

impl MemoryBudget {
    /// The group's peak memory use so far, page cache included (not reset between
    /// benchmarks), if known.
    #[must_use]
    pub fn peak_bytes(&self) -> Option<u64> {
        std::fs::read_to_string(self.peak_file.as_ref()?)
            .ok()
            .and_then(|t| parse_usage(&t))
    }
}

/// The memory cgroup the process runs in while this guard lives (see the module's doc).
#[derive(Debug)]
pub struct MemoryCgroup {
    version: CgroupVersion,
    /// The group created (`<parent>/mezz-bench-<pid>`).
    dir: PathBuf,
    /// The group the process came from, and returns to.
    parent: PathBuf,
    limit_bytes: u64,
    /// Whether the process was moved into `dir` (the drop moves it back only then).
    joined: bool,
}

/// The error of a `join` that could not set up the group.
fn fail(what: String) -> BenchError {
    BenchError::MemoryLimit(format!(
        "{what}; the benchmark needs a writable memory cgroup (cgroup v1 memory controller \
         or cgroup v2 with `memory` in cgroup.controllers; usually root) and was not run"
    ))
}

impl MemoryCgroup {
    /// Creates the group `mezz-bench-<pid>` under the process's current memory cgroup,
    /// limits it to `limit_bytes`, and moves the process into it.
    ///
    /// # Errors
    /// `MemoryLimit` naming what is missing: no memory controller mounted, the process's
    /// group not found, the group not creatable (not root), the limit not settable, or the
    /// process not movable; `InvalidArgument` for a limit under [`MIN_LIMIT_BYTES`]. The
    /// group is removed again on every error.
    pub fn join(limit_bytes: u64) -> Result<Self> {
        if limit_bytes < MIN_LIMIT_BYTES {
            return Err(BenchError::InvalidArgument(format!(
                "--memory-limit {limit_bytes} is below the minimum of {} MiB",
                MIN_LIMIT_BYTES >> 20
            )));
        }
        let mount = find_memory_mount().ok_or_else(|| {
            fail(format!(
                "no cgroup memory controller is mounted (none in /proc/self/mountinfo, nor at {})",
                FALLBACK_MOUNTS.join(", ")
            ))
        })?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|t| parse_own_cgroup(&t, mount.version))
            .unwrap_or_else(|| "/".to_string());
        let parent = group_dir(&mount, &own);
        if !parent.join("cgroup.procs").is_file() {
            return Err(fail(format!(
                "the process's memory cgroup {own} is not at {}",
                parent.display()
            )));
        }
        if mount.version == CgroupVersion::V2 {
            let control = parent.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&control).is_ok_and(|t| lists_memory(&t));
            if !enabled && let Err(e) = std::fs::write(&control, "+memory") {
                return Err(fail(format!(
                    "the memory controller is not enabled for the children of {} and \
                     cannot be ({}: {e})",
                    parent.display(),
                    control.display()
                )));
            }
        }
        let dir = parent.join(format!("mezz-bench-{}", std::process::id()));
        if dir.is_dir() {
            // Left by an earlier process of the same id that was killed inside it.
            let _ = std::fs::remove_dir(&dir);
        }
        std::fs::create_dir(&dir).map_err(|e| {
            fail(format!(
                "cannot create the memory cgroup {}: {e}",
                dir.display()
            ))
        })?;
        let mut group = Self {
            version: mount.version,
            dir,
            parent,
            limit_bytes,
            joined: false,
        };
        // From here on, an early return drops `group`, which removes the directory.
        let limit_path = group.dir.join(mount.version.limit_file());
        if !limit_path.is_file() {
            return Err(fail(format!(
                "the cgroup {} has no {} (memory controller not enabled there)",
                group.dir.display(),
                mount.version.limit_file()
            )));
        }
        std::fs::write(&limit_path, limit_bytes.to_string()).map_err(|e| {
            fail(format!(
                "cannot set {} to {limit_bytes}: {e}",
                limit_path.display()
            ))
        })?;
        // Swap, where accounted, gets no more: the heap must not spill out of the budget.
        // (Absent files mean no swap accounting; then there is nothing to bound.)
        let (swap_file, swap_value) = match mount.version {
            CgroupVersion::V1 => ("memory.memsw.limit_in_bytes", limit_bytes.to_string()),
            CgroupVersion::V2 => ("memory.swap.max", "0".to_string()),
        };
        let swap_path = group.dir.join(swap_file);
        if swap_path.is_file()
            && let Err(e) = std::fs::write(&swap_path, &swap_value)
        {
            eprintln!(
                "warning: --memory-limit: cannot set {} to {swap_value}: {e} (swap is not \
                 bounded by the limit)",
                swap_path.display()
            );
        }
        let procs = group.dir.join("cgroup.procs");
        std::fs::write(&procs, std::process::id().to_string()).map_err(|e| {
            fail(format!(
                "cannot move the process into {}: {e}",
                procs.display()
            ))
        })?;
        group.joined = true;
        Ok(group)
    }

    /// The group's directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The limit and the group's peak file, for the results.
    #[must_use]
    pub fn budget(&self) -> MemoryBudget {
        let peak = self.dir.join(self.version.peak_file());
        MemoryBudget {
            limit_bytes: self.limit_bytes,
            peak_file: peak.is_file().then_some(peak),
        }
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let warn = |what: &str, path: &Path, e: &std::io::Error| {
            eprintln!(
                "warning: --memory-limit cleanup: {what} {}: {e}",
                path.display()
            );
        };
        if self.joined {
            let procs = self.parent.join("cgroup.procs");
            if let Err(e) = std::fs::write(&procs, std::process::id().to_string()) {
                warn("cannot move the process back to", &procs, &e);
                // Still inside: the group cannot be emptied or removed.
                return;
            }
        }
        if self.version == CgroupVersion::V1 {
            // Reclaims the page cache charged to the group, which would otherwise move to
            // the parent when the group is removed.
            let f = self.dir.join("memory.force_empty");
            if f.is_file()
                && let Err(e) = std::fs::write(&f, "0")
            {
                warn("cannot write 0 to", &f, &e);
            }
        }
        // The kernel may take a moment to see the group empty.
        let mut last = None;
        for attempt in 0..5 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(10 << attempt));
        }
        if let Some(e) = last {
            warn("cannot remove", &self.dir, &e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const UNIFIED: &str = "\
22 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw
30 22 0:26 /kube/pod1 /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate
99 22 0:50 / /mnt/my\\040cg rw - cgroup2 none rw
";

    #[test]
    fn v1_memory_hierarchy_wins_over_a_v2_mount() {
        let mounts = parse_cgroup_mounts(HYBRID);
        assert_eq!(mounts.len(), 2, "{mounts:?}");
        let m = pick_memory_mount(&mounts, |_| true).unwrap();
        assert_eq!(m.version, CgroupVersion::V1);
        assert_eq!(m.mount_point, Path::new("/sys/fs/cgroup/memory"));
        assert_eq!(m.root, "/");
    }

    #[test]
    fn v2_mount_needs_memory_in_its_controllers() {
        let mounts = parse_cgroup_mounts(UNIFIED);
        assert_eq!(mounts.len(), 2);
        assert_eq!(mounts[1].mount_point, Path::new("/mnt/my cg"));
        let m = pick_memory_mount(&mounts, |p| p == Path::new("/sys/fs/cgroup")).unwrap();
        assert_eq!(m.version, CgroupVersion::V2);
        assert_eq!(m.root, "/kube/pod1");
        let m = pick_memory_mount(&mounts, |p| p == Path::new("/mnt/my cg")).unwrap();
        assert_eq!(m.mount_point, Path::new("/mnt/my cg"));
        assert_eq!(pick_memory_mount(&mounts, |_| false), None);
        // The hybrid machine's v2 mount holds only hugetlb: v1 is used, never it.
        let only_v2: Vec<CgroupMount> = parse_cgroup_mounts(HYBRID)
            .into_iter()
            .filter(|m| m.version == CgroupVersion::V2)
            .collect();
        assert_eq!(
            pick_memory_mount(&only_v2, |_| lists_memory("hugetlb\n")),
            None
        );
        assert!(parse_cgroup_mounts("garbage\n\n1 2 3\n").is_empty());
    }

    #[test]
    fn controllers_list_memory_as_a_word() {
        assert!(lists_memory("cpuset cpu io memory hugetlb pids\n"));
        assert!(!lists_memory("cpuset cpu io hugetlb\n"));
        assert!(!lists_memory("memoryx\n"));
        assert!(!lists_memory(""));
    }

    #[test]
    fn own_group_comes_from_the_matching_line() {
        let text =
            "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpu,cpuacct:/x\n0::/user.slice/s:1\n";
        assert_eq!(
            parse_own_cgroup(text, CgroupVersion::V1).as_deref(),
            Some("/process_api/abc")
        );
        assert_eq!(
            parse_own_cgroup(text, CgroupVersion::V2).as_deref(),
            Some("/user.slice/s:1")
        );
        assert_eq!(parse_own_cgroup("0::/\n", CgroupVersion::V1), None);
        assert_eq!(
            parse_own_cgroup("5:cpu,memory:/a\n", CgroupVersion::V1).as_deref(),
            Some("/a")
        );
    }

    #[test]
    fn group_dirs_are_relative_to_the_mounted_root() {
        let v1 = CgroupMount {
            version: CgroupVersion::V1,
            mount_point: "/sys/fs/cgroup/memory".into(),
            root: "/".into(),
        };
        assert_eq!(
            group_dir(&v1, "/process_api/abc"),
            Path::new("/sys/fs/cgroup/memory/process_api/abc")
        );
        assert_eq!(group_dir(&v1, "/"), Path::new("/sys/fs/cgroup/memory"));
        let sub = CgroupMount {
            version: CgroupVersion::V2,
            mount_point: "/sys/fs/cgroup".into(),
            root: "/kube/pod1".into(),
        };
        assert_eq!(
            group_dir(&sub, "/kube/pod1/app"),
            Path::new("/sys/fs/cgroup/app")
        );
        assert_eq!(group_dir(&sub, "/kube/pod1"), Path::new("/sys/fs/cgroup"));
        // A namespaced view already relative to the mount.
        assert_eq!(group_dir(&sub, "/app"), Path::new("/sys/fs/cgroup/app"));
    }

    #[test]
    fn usage_files_parse_to_bytes() {
        assert_eq!(parse_usage("146800640\n"), Some(146_800_640));
        assert_eq!(parse_usage("0"), Some(0));
        assert_eq!(parse_usage("max\n"), None);
        assert_eq!(parse_usage(""), None);
        assert_eq!(CgroupVersion::V1.peak_file(), "memory.max_usage_in_bytes");
        assert_eq!(CgroupVersion::V2.peak_file(), "memory.peak");
        assert_eq!(CgroupVersion::V1.limit_file(), "memory.limit_in_bytes");
        assert_eq!(CgroupVersion::V2.limit_file(), "memory.max");
    }

    #[test]
    fn a_missing_peak_file_reads_as_unknown() {
        let b = MemoryBudget {
            limit_bytes: 1 << 30,
            peak_file: None,
        };
        assert_eq!(b.peak_bytes(), None);
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("memory.peak");
        std::fs::write(&f, "4096\n").unwrap();
        let b = MemoryBudget {
            limit_bytes: 1 << 30,
            peak_file: Some(f),
        };
        assert_eq!(b.peak_bytes(), Some(4096));
    }

    #[test]
    fn limits_below_the_minimum_are_refused() {
        assert!(matches!(
            MemoryCgroup::join(1 << 20),
            Err(BenchError::InvalidArgument(_))
        ));
    }
}
