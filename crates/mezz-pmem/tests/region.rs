//! Regions in every persistence mode, on a temporary directory and on `/dev/shm`, and the
//! crash simulation (`SimNvm`).

#![allow(clippy::unwrap_used)] // Tests may unwrap, helpers included.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_format::Error;
use mezz_pmem::{
    Emulation, KeepLines, Media, NvmProfile, PersistMode, PowerCut, Region, RegionOptions,
    RegionStats, SimNvm,
};

/// Temporary directories to test file-backed modes on: one on the normal file system and one
/// under `/dev/shm` when it exists.
fn dirs() -> Vec<tempfile::TempDir> {
    let mut out = vec![tempfile::tempdir().unwrap()];
    if Path::new("/dev/shm").is_dir()
        && let Ok(d) = tempfile::tempdir_in("/dev/shm")
    {
        out.push(d);
    }
    out
}

/// Every persistence mode but the crash simulation.
const MODES: [PersistMode; 4] = [
    PersistMode::Adr,
    PersistMode::Eadr,
    PersistMode::Msync,
    PersistMode::Volatile,
];

/// Options of a pre-faulted file region in `mode` (`adr` emulated off DAX).
fn file_options(mode: PersistMode) -> RegionOptions {
    RegionOptions {
        mode,
        emulate_adr: true,
        prefault: true,
        ..RegionOptions::default()
    }
}

fn write(r: &Region, off: usize, data: &[u8]) {
    // SAFETY: no test accesses one range from two threads at once.
    unsafe { r.write_at(off, data) }
}

fn read(r: &Region, off: usize, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    // SAFETY: no test accesses one range from two threads at once.
    unsafe { r.read_at(off, &mut buf) };
    buf
}

#[test]
fn persist_mode_names_round_trip() {
    assert_eq!(PersistMode::default(), PersistMode::Msync);
    for m in PersistMode::ALL {
        assert_eq!(m.to_string().parse::<PersistMode>().unwrap(), m);
    }
    assert_eq!("ADR".parse::<PersistMode>().unwrap(), PersistMode::Adr);
    assert!(matches!(
        "pmem".parse::<PersistMode>(),
        Err(Error::InvalidArgument(_))
    ));
}

/// The file system type of the mount holding `path` (the longest matching mount point of
/// `/proc/mounts`), if known.
fn fs_type(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, ty) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(at).then(|| (at.len(), ty.to_string()))
        })
        .max()
        .map(|(_, ty)| ty)
}

/// `Msync` regions on a memory file system persist with cache-line flushes instead of
/// `msync` (which does nothing there); elsewhere, and in every other mode, with `msync` as
/// configured. Either way the bytes are in the file for the next mapping.
#[test]
fn msync_on_a_memory_file_system_persists_by_flushing() {
    for dir in dirs() {
        let memory_fs = matches!(fs_type(dir.path()).as_deref(), Some("tmpfs" | "ramfs"));
        for mode in [PersistMode::Msync, PersistMode::Volatile] {
            let opts = RegionOptions::with_mode(mode);
            let path = dir.path().join(format!("f-{mode}"));
            let r = Region::create(&path, 2 * 4096, &opts).unwrap();
            let expect = mode == PersistMode::Msync && memory_fs && cfg!(target_arch = "x86_64");
            assert_eq!(
                r.msync_by_flush(),
                expect,
                "{mode} on {}",
                dir.path().display()
            );
            write(&r, 4100, b"flushed");
            r.persist(4100, 7).unwrap();
            r.fence().unwrap();
            assert_eq!(r.stats().bytes_persisted, 7);
            drop(r);
            let r = Region::open(&path, &opts).unwrap();
            assert_eq!(read(&r, 4100, 7), b"flushed");
        }
    }
}

#[test]
fn file_modes_map_persist_and_reopen() {
    for dir in dirs() {
        for mode in MODES {
            let opts = file_options(mode);
            let path = dir.path().join(format!("r-{mode}"));
            let r = Region::create(&path, 3 * 4096 + 100, &opts).unwrap();
            assert_eq!(r.len(), 3 * 4096 + 100);
            assert_eq!(r.base().as_ptr() as usize % 4096, 0);
            assert_eq!(r.is_persistent(), mode != PersistMode::Volatile);
            assert_eq!(read(&r, 0, 16), vec![0; 16], "new region is zero");
            write(&r, 4000, b"hello, persistent world");
            write(&r, 3 * 4096 + 90, b"0123456789");
            r.persist(4000, 23).unwrap();
            r.persist(3 * 4096 + 90, 10).unwrap();
            // Out-of-range parts are ignored, not an error.
            r.persist(3 * 4096 + 90, 1 << 20).unwrap();
            r.persist(1 << 30, 8).unwrap();
            r.fence().unwrap();
            let st = r.stats();
            assert_eq!(st.persists, 3, "{mode}");
            assert_eq!(st.fences, 1);
            assert_eq!(st.bytes_persisted, 23 + 10 + 10);
            assert_eq!(r.bytes_persisted(), 43);
            assert!(!r.is_map_sync());
            drop(r);
            let r = Region::open(&path, &opts).unwrap();
            assert_eq!(r.len(), 3 * 4096 + 100);
            assert_eq!(read(&r, 4000, 23), b"hello, persistent world");
            assert_eq!(read(&r, 3 * 4096 + 90, 10), b"0123456789");
            // Creating over an existing file fails and leaves it alone.
            assert!(matches!(
                Region::create(&path, 4096, &opts),
                Err(Error::Io { .. })
            ));
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 3 * 4096 + 100);
        }
    }
}

#[test]
fn adr_without_dax_fails_clearly_unless_emulated() {
    for dir in dirs() {
        let path = dir.path().join("adr");
        let opts = RegionOptions::with_mode(PersistMode::Adr);
        let dax = match Region::create(&path, 8192, &opts) {
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.contains("DAX"), "{msg}");
                assert!(msg.contains("nvm_emulate_adr"), "{msg}");
                assert!(!path.exists(), "a failed create leaves no file");
                false
            }
            // A real DAX file system: then MAP_SYNC must have been granted.
            Ok(r) => {
                assert!(r.is_map_sync());
                drop(r);
                std::fs::remove_file(&path).unwrap();
                true
            }
            Err(e) => panic!("unexpected error {e}"),
        };
        let emulated = RegionOptions {
            emulate_adr: true,
            ..opts.clone()
        };
        let r = Region::create(&path, 8192, &emulated).unwrap();
        write(&r, 0, &[7; 200]);
        r.persist(0, 200).unwrap();
        r.fence().unwrap();
        assert_eq!(r.stats().persists, 1);
        drop(r);
        // Opening follows the same rule.
        if !dax {
            assert!(matches!(
                Region::open(&path, &opts),
                Err(Error::InvalidArgument(_))
            ));
        }
        assert_eq!(
            read(&Region::open(&path, &emulated).unwrap(), 0, 200),
            vec![7; 200]
        );
    }
}

#[test]
fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RegionOptions::default();
    assert!(matches!(
        Region::create(&dir.path().join("z"), 0, &opts),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Region::open(&dir.path().join("missing"), &opts),
        Err(Error::Io { .. })
    ));
    std::fs::write(dir.path().join("empty"), b"").unwrap();
    assert!(Region::open(&dir.path().join("empty"), &opts).is_err());
    let sim_no_registry = RegionOptions::with_mode(PersistMode::CrashSim);
    assert!(matches!(
        Region::create(&dir.path().join("s"), 4096, &sim_no_registry),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Region::anonymous(4096, &RegionOptions::crash_sim(&SimNvm::new())),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn anonymous_regions_work_in_every_other_mode_and_are_not_persistent() {
    for mode in MODES {
        let r = Region::anonymous(10_000, &RegionOptions::with_mode(mode)).unwrap();
        assert!(!r.is_persistent());
        assert!(r.path().is_none());
        write(&r, 9_000, b"x");
        r.persist(0, 10_000).unwrap();
        r.fence().unwrap();
        assert_eq!(read(&r, 9_000, 1), b"x");
        assert_eq!(r.stats().bytes_persisted, 10_000);
    }
}

#[test]
fn emulation_charges_delay() {
    let opts = RegionOptions {
        mode: PersistMode::Volatile,
        emulation: Emulation {
            read_ns_per_line: 100,
            write_ns_per_line: 300,
            persist_bytes_per_sec: 1 << 30,
            ..Emulation::default()
        },
        ..RegionOptions::default()
    };
    let r = Region::anonymous(1 << 16, &opts).unwrap();
    r.on_read(65);
    assert_eq!(r.stats().emulated_delay_ns, 200, "two lines read");
    r.on_write(64);
    assert_eq!(r.stats().emulated_delay_ns, 500, "one line written");
    r.persist(0, 1 << 16).unwrap();
    r.persist(0, 1 << 16).unwrap();
    // The second persist waits for the first one's share of the bandwidth.
    assert!(r.stats().emulated_delay_ns > 500);
    let off = Region::anonymous(4096, &RegionOptions::default()).unwrap();
    off.on_read(4096);
    off.on_write(4096);
    off.persist(0, 4096).unwrap();
    assert_eq!(off.stats().emulated_delay_ns, 0);
}

/// Options of an anonymous (never persisted) region charging `profile`.
fn profiled(profile: NvmProfile, mode: PersistMode) -> RegionOptions {
    RegionOptions {
        mode,
        emulate_adr: true,
        emulation: Emulation {
            profile,
            ..Emulation::default()
        },
        ..RegionOptions::default()
    }
}

/// The counters that follow from the charges alone (a single thread on an idle channel
/// never waits for bandwidth within the burst window, so the delay is the latency).
#[test]
fn profile_charges_each_read_access_once() {
    let r = Region::anonymous(
        1 << 20,
        &profiled(NvmProfile::Optane, PersistMode::Volatile),
    )
    .unwrap();
    assert_eq!(r.profile(), NvmProfile::Optane);
    r.on_read(64);
    let st = r.stats();
    assert_eq!(
        (st.read_accesses, st.read_device_bytes, st.emulated_delay_ns),
        (1, 256, 305 - 81),
        "one random 64 B read: the random extra, one 256 B unit"
    );
    // A search that visited 10 nodes: 10 accesses, 10 latencies.
    r.on_reads(10, 64);
    let st = r.stats();
    assert_eq!((st.read_accesses, st.read_device_bytes), (11, 11 * 256));
    assert_eq!(st.emulated_delay_ns, 11 * 224);
    // A 4 KiB copy: one latency, then streamed.
    r.on_read(4096);
    let st = r.stats();
    assert_eq!(
        (st.read_accesses, st.read_device_bytes),
        (12, 11 * 256 + 4096)
    );
    assert_eq!(st.emulated_delay_ns, 12 * 224);
    // The rest of a node: bandwidth only.
    r.on_read_continued(100);
    let st = r.stats();
    assert_eq!(st.read_accesses, 12);
    assert_eq!(st.read_device_bytes, 11 * 256 + 4096 + 100);
    assert_eq!(st.emulated_delay_ns, 12 * 224);
    // Empty accesses are nothing.
    r.on_read(0);
    r.on_reads(5, 0);
    r.on_read_continued(0);
    assert_eq!(r.stats(), st);
}

#[test]
fn profile_charges_writes_where_they_reach_the_device() {
    // Never persisted: the write hooks charge (Optane: bandwidth, no latency).
    let v = Region::anonymous(
        1 << 20,
        &profiled(NvmProfile::Optane, PersistMode::Volatile),
    )
    .unwrap();
    v.on_writes(3, 64);
    let st = v.stats();
    assert_eq!((st.write_accesses, st.write_device_bytes), (3, 768));
    assert_eq!(st.emulated_delay_ns, 0, "optane writes add no latency");
    v.persist(0, 4096).unwrap();
    assert_eq!(v.stats().write_accesses, 3, "a volatile persist is nothing");
    // CXL: 64 B lines, a latency per write access.
    let c = Region::anonymous(1 << 20, &profiled(NvmProfile::Cxl, PersistMode::Volatile)).unwrap();
    c.on_write(8);
    let st = c.stats();
    assert_eq!((st.write_accesses, st.write_device_bytes), (1, 64));
    assert_eq!(st.emulated_delay_ns, 80);
    c.on_read(64);
    assert_eq!(c.stats().emulated_delay_ns, 160);

    // Persisted (a file): the persists charge, each range rounded out to whole units; the
    // write hooks do not (the same bytes would be charged twice).
    for dir in dirs() {
        for mode in [PersistMode::Adr, PersistMode::Msync] {
            let path = dir.path().join(format!("profiled-{mode}"));
            let opts = RegionOptions {
                prefault: true,
                ..profiled(NvmProfile::Optane, mode)
            };
            let r = Region::create(&path, 1 << 16, &opts).unwrap();
            assert!(r.is_persistent());
            write(&r, 200, &[1; 64]);
            r.on_write(64);
            assert_eq!(r.stats().write_accesses, 0);
            r.persist(200, 64).unwrap();
            r.fence().unwrap();
            let st = r.stats();
            assert_eq!(
                (st.write_accesses, st.write_device_bytes),
                (1, 512),
                "64 B straddling two 256 B units"
            );
            r.persist(1024, 4096).unwrap();
            let st = r.stats();
            assert_eq!((st.write_accesses, st.write_device_bytes), (2, 512 + 4096));
            // A non-temporal word store (adr) is one write access of one unit.
            if r.store_word_uncached(4096 + 1024, 7) {
                let st = r.stats();
                assert_eq!(
                    (st.write_accesses, st.write_device_bytes),
                    (3, 512 + 4096 + 256)
                );
            }
            drop(r);
            std::fs::remove_file(&path).unwrap();
        }
    }
}

/// Counters stay exact when many threads charge at once (more threads than the slots that
/// own a counter shard, some ending while others start).
#[test]
fn counters_are_exact_under_many_threads() {
    let r = Region::anonymous(1 << 16, &profiled(NvmProfile::Cxl, PersistMode::Volatile)).unwrap();
    let threads = 48;
    let each = 50;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    r.on_read(64);
                    r.on_write(8);
                }
            });
        }
    });
    let st = r.stats();
    let n = (threads * each) as u64;
    assert_eq!((st.read_accesses, st.read_device_bytes), (n, n * 64));
    assert_eq!((st.write_accesses, st.write_device_bytes), (n, n * 64));
    // Every charge waited its latency at least (80 ns each way).
    assert!(st.emulated_delay_ns >= 2 * n * 80, "{st:?}");
}

#[test]
fn dram_profile_charges_nothing_and_per_line_knobs_add_to_a_profile() {
    let d = Region::anonymous(1 << 16, &profiled(NvmProfile::Dram, PersistMode::Volatile)).unwrap();
    d.on_reads(100, 64);
    d.on_read_continued(4096);
    d.on_writes(100, 64);
    assert_eq!(d.stats(), RegionStats::default());
    // The per-line knobs still apply, on top of the profile.
    let opts = RegionOptions {
        emulation: Emulation {
            profile: NvmProfile::Optane,
            read_ns_per_line: 10,
            write_ns_per_line: 20,
            ..Emulation::default()
        },
        ..profiled(NvmProfile::Optane, PersistMode::Volatile)
    };
    let r = Region::anonymous(1 << 16, &opts).unwrap();
    r.on_read(128);
    assert_eq!(r.stats().emulated_delay_ns, 224 + 2 * 10);
    r.on_write(64);
    assert_eq!(r.stats().emulated_delay_ns, 224 + 2 * 10 + 20);
}

// ---- crash simulation ----

fn sim_region(sim: &SimNvm, path: &str, len: usize) -> Arc<Region> {
    Region::create(Path::new(path), len, &RegionOptions::crash_sim(sim)).unwrap()
}

fn cut(sim: &SimNvm, keep: KeepLines, seed: u64) -> SimNvm {
    sim.power_cut(&PowerCut {
        keep_unpersisted: keep,
        seed,
    })
}

fn durable(sim: &SimNvm, path: &str) -> Vec<u8> {
    sim.durable_image(Path::new(path)).unwrap()
}

#[test]
fn crashsim_keeps_only_persisted_and_fenced_lines() {
    let sim = SimNvm::new();
    let r = sim_region(&sim, "p", 4096);
    assert!(r.is_persistent());
    write(&r, 0, &[1; 64]); // persisted + fenced
    write(&r, 128, &[2; 64]); // persisted, not fenced
    write(&r, 256, &[3; 64]); // written only
    r.persist(0, 64).unwrap();
    r.fence().unwrap();
    r.persist(128, 64).unwrap();
    assert_eq!(sim.persist_points(), 2);
    assert_eq!(sim.fence_points(), 1);

    let after = cut(&sim, KeepLines::None, 0);
    let img = durable(&after, "p");
    assert_eq!(&img[0..64], &[1; 64]);
    assert_eq!(&img[128..192], &[0; 64]);
    assert_eq!(&img[256..320], &[0; 64]);
    // Opening the file of the new registry shows the same bytes.
    let r2 = Region::open(Path::new("p"), &RegionOptions::crash_sim(&after)).unwrap();
    assert_eq!(read(&r2, 0, 4096), img);
    assert_eq!(after.persist_points(), 0);

    let all = durable(&cut(&sim, KeepLines::All, 0), "p");
    assert_eq!(&all[128..192], &[2; 64]);
    assert_eq!(&all[256..320], &[3; 64]);

    // The original keeps working: a fence now makes line 128 durable.
    r.fence().unwrap();
    assert_eq!(&durable(&sim, "p")[128..192], &[2; 64]);
}

#[test]
fn crashsim_persists_whole_lines() {
    let sim = SimNvm::new();
    let r = sim_region(&sim, "l", 4096);
    write(&r, 60, &[9; 8]); // straddles lines 0 and 1
    r.persist(62, 1).unwrap(); // flushes line 0 only
    r.fence().unwrap();
    let img = durable(&cut(&sim, KeepLines::None, 0), "l");
    assert_eq!(&img[60..64], &[9; 4]);
    assert_eq!(&img[64..68], &[0; 4]);
}

#[test]
fn crashsim_random_subset_is_reproducible() {
    let sim = SimNvm::new();
    let r = sim_region(&sim, "rnd", 64 * 256);
    write(&r, 0, &vec![0xAB; 64 * 256]);
    let kept = |seed| {
        let img = durable(&cut(&sim, KeepLines::Random, seed), "rnd");
        img.chunks(64)
            .map(|l| {
                assert!(l == [0xAB; 64] || l == [0; 64], "lines are all or nothing");
                l[0] == 0xAB
            })
            .collect::<Vec<bool>>()
    };
    let a = kept(1);
    assert_eq!(a, kept(1));
    assert_ne!(a, kept(2));
    let n = a.iter().filter(|&&k| k).count();
    assert!(n > 0 && n < 256, "kept {n} of 256 lines");
}

#[test]
fn arm_cut_after_freezes_at_the_nth_persist() {
    // Write line i and persist + fence it, for i in 0..4; a cut armed at persist n keeps
    // lines 0..n-1.
    for n in 1..=5u64 {
        let sim = SimNvm::new();
        let r = sim_region(&sim, "a", 4096);
        sim.arm_cut_after(n);
        for i in 0..4usize {
            write(&r, i * 64, &[i as u8 + 1; 64]);
            r.persist(i * 64, 64).unwrap();
            r.fence().unwrap();
        }
        assert_eq!(sim.persist_points(), 4);
        assert_eq!(sim.cut_happened(), n <= 4);
        let img = durable(&cut(&sim, KeepLines::None, 0), "a");
        for i in 0..4usize {
            let expect = if (i as u64) < n - 1 { i as u8 + 1 } else { 0 };
            assert_eq!(img[i * 64], expect, "cut at {n}, line {i}");
        }
        // The live memory kept running.
        assert_eq!(read(&r, 3 * 64, 1), [4]);
    }
    // Arming below the count freezes at once.
    let sim = SimNvm::new();
    let r = sim_region(&sim, "b", 4096);
    r.persist(0, 8).unwrap();
    sim.arm_cut_after(1);
    assert!(sim.cut_happened());
    write(&r, 0, &[5; 8]);
    r.persist(0, 8).unwrap();
    r.fence().unwrap();
    assert_eq!(durable(&sim, "b")[0], 0);
}

#[test]
fn sim_registry_files() {
    let sim = SimNvm::new();
    let opts = RegionOptions::crash_sim(&sim);
    let p = PathBuf::from("dir/f");
    assert!(matches!(Region::open(&p, &opts), Err(Error::Io { .. })));
    let r = Region::create(&p, 5000, &opts).unwrap();
    assert!(matches!(
        Region::create(&p, 5000, &opts),
        Err(Error::Io { .. })
    ));
    assert!(sim.exists(&p));
    assert_eq!(sim.file_len(&p), Some(5000));
    assert_eq!(sim.paths(), vec![p.clone()]);
    // Two regions over one simulated file share its bytes.
    let r2 = Region::open(&p, &opts).unwrap();
    write(&r, 10, b"shared");
    assert_eq!(read(&r2, 10, 6), b"shared");
    sim.damage(&p, 0, b"xy").unwrap();
    assert_eq!(read(&r2, 0, 2), b"xy");
    assert_eq!(&durable(&sim, "dir/f")[0..2], b"xy");
    assert!(sim.remove(&p));
    assert!(!sim.exists(&p));
    assert_eq!(read(&r, 10, 6), b"shared", "a removed file stays mapped");
}

#[test]
fn armed_cut_uses_the_live_bytes_of_the_cut_moment() {
    let sim = SimNvm::new();
    let r = sim_region(&sim, "c", 4096);
    sim.arm_cut_after(1);
    write(&r, 0, &[1; 64]);
    r.persist(0, 64).unwrap(); // the cut happens here
    write(&r, 64, &[2; 64]); // after the cut: never reached the media
    let late = sim_region(&sim, "late", 4096); // created after the cut
    write(&late, 0, &[3; 8]);
    let all = cut(&sim, KeepLines::All, 0);
    let img = durable(&all, "c");
    assert_eq!(&img[0..64], &[1; 64], "written before the cut: may survive");
    assert_eq!(
        &img[64..128],
        &[0; 64],
        "written after the cut: cannot survive"
    );
    assert!(all.durable_image(Path::new("late")).is_none());
}

#[test]
fn msync_fences_sync_ranges_persisted_from_other_threads() {
    let dir = tempfile::tempdir().unwrap();
    let r = Region::create(&dir.path().join("t"), 64 * 4096, &RegionOptions::default()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let r = &r;
            s.spawn(move || {
                for i in 0..16usize {
                    let off = (t * 16 + i) * 4096;
                    write(r, off, &[t as u8 + 1; 100]);
                    r.persist(off, 100).unwrap();
                    r.fence().unwrap();
                }
            });
        }
    });
    assert_eq!(r.stats().persists, 64);
    drop(r);
    let data = std::fs::read(dir.path().join("t")).unwrap();
    for page in 0..64 {
        assert_eq!(data[page * 4096], (page / 16) as u8 + 1);
    }
}

/// A persistent word in every mode: `publish` and `stage` + `fence` leave the value readable
/// in place and in the file after a reopen, counted as a persist of 8 bytes. Where `persist`
/// flushes cache lines (`adr`, and `msync` on a memory file system), the word is written
/// with a non-temporal store; elsewhere it is stored and persisted as any other range.
#[test]
fn persistent_words_in_every_mode() {
    for dir in dirs() {
        for mode in MODES {
            let opts = file_options(mode);
            let path = dir.path().join(format!("w-{mode}"));
            let r = Region::create(&path, 8192, &opts).unwrap();
            let media: Arc<dyn Media> = r.clone();
            let uncached = media.store_word_uncached(4096, 5);
            assert_eq!(
                uncached,
                cfg!(target_arch = "x86_64")
                    && (mode == PersistMode::Adr
                        || (mode == PersistMode::Msync && dir.path().starts_with("/dev/shm"))),
                "{mode} in {}",
                dir.path().display()
            );
            // Misaligned or out of range: nothing written.
            assert!(!media.store_word_uncached(4097, 1));
            assert!(!media.store_word_uncached(8192, 1));
            let before = r.stats();
            let w = mezz_pmem::PersistentWord::new(Arc::clone(&media), 4096).unwrap();
            w.publish(0x0102_0304_0506_0708).unwrap();
            let v = mezz_pmem::PersistentWord::new(Arc::clone(&media), 4104).unwrap();
            v.stage(42).unwrap();
            media.fence().unwrap();
            assert_eq!(w.load(), 0x0102_0304_0506_0708);
            assert_eq!(v.load(), 42);
            if mode != PersistMode::Volatile {
                let st = r.stats();
                assert_eq!(st.persists - before.persists, 2, "{mode}");
                assert_eq!(st.bytes_persisted - before.bytes_persisted, 16, "{mode}");
            }
            drop((w, v, media, r));
            let r = Region::open(&path, &opts).unwrap();
            assert_eq!(
                read(&r, 4096, 16),
                [0x0102_0304_0506_0708u64.to_le_bytes(), 42u64.to_le_bytes()].concat(),
                "{mode}"
            );
        }
    }
}

/// The CPU cache in front of the `optane` device: a line read again is served by the
/// cache (not charged), a persist writes it back and evicts it, and the next read pays the
/// device again. The cache is shared by every region of the profile, so each test uses
/// its own addresses (a region of its own) and counts only this region's charges.
#[test]
fn a_cached_line_is_not_charged_until_a_persist_evicts_it() {
    let r = Region::anonymous(
        1 << 20,
        &profiled(NvmProfile::Optane, PersistMode::Volatile),
    )
    .unwrap();
    r.on_read_at(4096, 64);
    let st = r.stats();
    assert_eq!((st.read_accesses, st.read_cache_hits), (1, 0));
    r.on_read_at(4096 + 8, 32);
    r.on_read_continued_at(4096 + 16, 48);
    let st = r.stats();
    assert_eq!(
        (st.read_accesses, st.read_cache_hits),
        (1, 1),
        "served by the cache"
    );
    assert_eq!(st.read_device_bytes, 256, "a hit moves no device bytes");
    assert_eq!(st.emulated_delay_ns, 224);
    r.persist(4096, 64).unwrap();
    r.fence().unwrap();
    r.on_read_at(4096, 64);
    let st = r.stats();
    assert_eq!(st.read_accesses, 2, "the persist evicted the line");
    // The plain hooks know no address: always charged.
    r.on_read(64);
    assert_eq!(r.stats().read_accesses, 3);
    // A new mapping at the same addresses starts cold.
    r.on_read_at(8192, 64);
    r.on_read_at(8192, 64);
    assert_eq!(r.stats().read_cache_hits, 2);
    let base = r.base();
    drop(r);
    let r2 = Region::anonymous(
        1 << 20,
        &profiled(NvmProfile::Optane, PersistMode::Volatile),
    )
    .unwrap();
    if r2.base() == base {
        r2.on_read_at(8192, 64);
        assert_eq!(r2.stats().read_cache_hits, 0, "a line of the old mapping");
    }
    // The `dram` profile has no model (and charges nothing).
    let d = Region::anonymous(1 << 20, &profiled(NvmProfile::Dram, PersistMode::Volatile)).unwrap();
    d.on_read_at(0, 64);
    d.on_read_at(0, 64);
    assert_eq!((d.stats().read_accesses, d.stats().read_cache_hits), (0, 0));
}
