//! Measurement kernels that check the emulated NVM cost ([`mezz_pmem::cost`]) against what
//! its profile says: the engine of `mezz nvm-calibrate`, which drives them, compares the
//! results with the profile's figures and prints them.
//!
//! Owns: [`Calibration`], one pool-like file mapped with a profile, in two areas of `area`
//! bytes each: the *read area* `[0, area)`, which [`Calibration::prepare`] fills with a
//! random cyclic permutation of its 64-byte lines (each line starts with the offset of the
//! next one) and which is only read afterwards, and the *write area* `[area, 2 area)`,
//! which the write kernels overwrite (each thread its own part). Every kernel reports its
//! accesses to the region's cost hooks exactly as the engine's data structures do, and
//! returns a [`Sample`] (operations, bytes, wall time) for the caller to turn into figures.
//!
//! Invariants: the kernels never read or write outside their area; the region is not
//! shared with anything else (it is private to the `Calibration`), and the kernels that
//! run several threads give each thread a disjoint part of the write area, so no byte is
//! written by one thread while another accesses it. Kernels take `&mut self`: one runs at
//! a time. Every byte access goes through the safe extent API of `mezz-pmem`
//! ([`mezz_pmem::extent`]): `prepare` and the write kernels write through claims (each
//! thread claims its part of the write area before its timed loop starts), and the reads
//! (the chase's volatile word loads, the copies) read the read area, which is published
//! once `prepare` returned.
//!
//! Thread-safety: `Calibration` is `Send`; its kernels spawn scoped threads of their own.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mezz_format::{Error, Result};
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use mezz_pmem::{
    Clock, Emulation, ExtentWriter, Media, NvmProfile, PersistMode, Region, RegionOptions,
    RegionStats,
};

/// Size of a line of the pointer chase.
const LINE: usize = 64;
/// The access size of the sequential stream's loads.
const STREAM_STEP: usize = 256;
/// The stream reports its bytes in chunks of this many (as a scan reports records).
const STREAM_CHUNK: usize = 4096;
/// Kernels look at the clock every this many operations.
const CLOCK_EVERY: u64 = 16;

/// What a kernel did: operations, bytes the caller asked for, and the wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Accesses (loads, copies, writes) made.
    pub ops: u64,
    /// Bytes read or written by the caller (not rounded to the device's access size).
    pub bytes: u64,
    /// Wall time of the whole run (the slowest thread's, for several threads).
    pub elapsed: Duration,
}

impl Sample {
    /// Nanoseconds per operation (per thread: `elapsed / (ops / threads)`).
    #[must_use]
    pub fn ns_per_op(&self, threads: usize) -> f64 {
        if self.ops == 0 {
            return 0.0;
        }
        self.elapsed.as_nanos() as f64 * threads.max(1) as f64 / self.ops as f64
    }

    /// Bytes per second, in GB/s (10^9).
    #[must_use]
    pub fn gb_per_sec(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s == 0.0 {
            return 0.0;
        }
        self.bytes as f64 / s / 1e9
    }

    fn merge(samples: &[Sample]) -> Sample {
        Sample {
            ops: samples.iter().map(|s| s.ops).sum(),
            bytes: samples.iter().map(|s| s.bytes).sum(),
            elapsed: samples.iter().map(|s| s.elapsed).max().unwrap_or_default(),
        }
    }
}

/// The calibration file mapped with one profile. See the module documentation.
#[derive(Debug)]
pub struct Calibration {
    region: Arc<Region>,
    area: usize,
    /// Where the pointer chase goes on from: each run continues the cycle, so runs do not
    /// revisit the lines (still cached) of the one before.
    chase_at: usize,
}

fn region_options(profile: NvmProfile, prefault: bool) -> RegionOptions {
    RegionOptions {
        // On a memory file system (`/dev/shm`) `msync` persists by cache-line flushes and
        // `sfence`, as the engine's pool does there; elsewhere it calls `msync`.
        mode: PersistMode::Msync,
        emulation: Emulation {
            profile,
            ..Emulation::default()
        },
        prefault,
        ..RegionOptions::default()
    }
}

impl Calibration {
    /// Creates the file `path` (it must not exist) of `2 * area` bytes, and writes the
    /// pointer chase into its read area: a random cyclic permutation of its lines, from
    /// `seed`. `area` is rounded down to whole pages (at least one).
    ///
    /// # Errors
    /// `Io` when the file cannot be created or mapped; `InvalidArgument` for an area of
    /// less than a page or more than 2^38 bytes (the chase keeps line numbers in `u32`).
    pub fn prepare(path: &Path, area: usize, seed: u64) -> Result<()> {
        let area = Self::check_area(area)?;
        let region = Region::create(path, 2 * area, &region_options(NvmProfile::Dram, true))?;
        let lines = area / LINE;
        let mut order: Vec<u32> = (0..lines as u32).collect();
        order.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
        // The region was just created and no one else maps or reads it.
        let mut read_area = region.claim(0, area)?;
        for (i, &line) in order.iter().enumerate() {
            let next = order[(i + 1) % lines] as u64 * LINE as u64;
            // `line < lines`, so `[line * 64, + 8)` lies in the read area.
            read_area.write(line as usize * LINE, &next.to_le_bytes());
        }
        drop(read_area);
        region.persist(0, area).map_err(Error::from)?;
        region.fence().map_err(Error::from)?;
        Ok(())
    }

    fn check_area(area: usize) -> Result<usize> {
        let area = area / 4096 * 4096;
        if area == 0 || area / LINE > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "calibration area of {area} bytes: need 4 KiB to 256 GiB"
            )));
        }
        Ok(area)
    }

    /// Maps the file `path` made by [`Calibration::prepare`] with the same `area`, charging
    /// `profile`; every page is mapped before this returns.
    ///
    /// # Errors
    /// `Io` when the file cannot be mapped; `InvalidArgument` when it is not `2 * area`
    /// bytes long.
    pub fn open(path: &Path, area: usize, profile: NvmProfile) -> Result<Calibration> {
        let area = Self::check_area(area)?;
        let region = Region::open(path, &region_options(profile, false))?;
        if region.len() != 2 * area {
            return Err(Error::InvalidArgument(format!(
                "{}: {} bytes, expected {} (two areas of {area})",
                path.display(),
                region.len(),
                2 * area
            )));
        }
        region.touch_pages();
        Ok(Calibration {
            region,
            area,
            chase_at: 0,
        })
    }

    /// The profile charged.
    #[must_use]
    pub fn profile(&self) -> NvmProfile {
        self.region.profile()
    }

    /// Bytes of each area.
    #[must_use]
    pub fn area(&self) -> usize {
        self.area
    }

    /// Where the next [`Calibration::random_reads`] starts in the chase (an offset in the
    /// read area).
    #[must_use]
    pub fn chase_position(&self) -> usize {
        self.chase_at
    }

    /// Makes the next [`Calibration::random_reads`] start at `at` (rounded down to a line
    /// inside the read area): two mappings of one file can take turns along the same cycle
    /// without either revisiting lines the other just brought into the caches.
    pub fn set_chase_position(&mut self, at: usize) {
        self.chase_at = at.min(self.area - LINE) / LINE * LINE;
    }

    /// The region's counters (accesses, device bytes, emulated delay) so far.
    #[must_use]
    pub fn stats(&self) -> RegionStats {
        self.region.stats()
    }

    /// (a) Random dependent reads: `steps` loads following the pointer chase from where the
    /// last run stopped, each reported as one 64-byte access at its line
    /// ([`Media::on_read_at`]: a profile's CPU cache model serves the lines it holds, so
    /// a read area larger than that cache measures the device, a smaller one the cache).
    pub fn random_reads(&mut self, steps: u64) -> Sample {
        self.chase(steps, |region, off| region.on_read_at(off, LINE))
    }

    /// (a') The same pointer chase without charging anything, but with a plain spin of
    /// `gap_ns` after each load, on the clock and in the way a charge spins: the host's own
    /// latency when its loads come as far apart as under a profile (on the test host it
    /// grows with the gap: idle memory is slower to answer), so that what a profile adds
    /// can be told from what the host adds.
    pub fn random_reads_spaced(&mut self, steps: u64, gap_ns: u64) -> Sample {
        let clock = Clock::get();
        self.chase(steps, |_, _| {
            let t = clock.now_ns(true);
            clock.spin_until_ns(t + gap_ns);
        })
    }

    /// `steps` loads following the pointer chase from where the last run stopped, calling
    /// `after_load` after each.
    fn chase(&mut self, steps: u64, mut after_load: impl FnMut(&Region, usize)) -> Sample {
        let region = &*self.region;
        let mut off = self.chase_at;
        let start = Instant::now();
        for _ in 0..steps {
            // `off` is 0 or an offset stored by `prepare` (clamped and aligned below), a
            // multiple of 64 below `area`, so the aligned 8-byte load lies in the read area,
            // which nobody writes after `prepare` (published).
            let next = region.load_volatile_u64(off);
            after_load(region, off);
            off = (u64::from_le(next) as usize).min(self.area - LINE) / LINE * LINE;
        }
        let elapsed = start.elapsed();
        self.chase_at = off;
        Sample {
            ops: steps,
            bytes: steps * LINE as u64,
            elapsed,
        }
    }

    /// (b) A sequential scan of the whole read area in 256-byte loads, reported as a scan
    /// reports its records: the first 4 KiB as one access, every further 4 KiB as its
    /// continuation ([`Media::on_read_continued`]).
    pub fn sequential_reads(&mut self) -> Sample {
        let region = &*self.region;
        let mut buf = [0u8; STREAM_STEP];
        let mut sum = 0u64;
        let start = Instant::now();
        let mut off = 0;
        while off + STREAM_CHUNK <= self.area {
            for step in (0..STREAM_CHUNK).step_by(STREAM_STEP) {
                // `off + STREAM_CHUNK <= area`, so the 256 bytes lie in the read area, which
                // nobody writes after `prepare` (published).
                region.read_published(off + step, &mut buf);
                sum = sum.wrapping_add(u64::from(std::hint::black_box(&buf)[0]));
            }
            if off == 0 {
                region.on_read(STREAM_CHUNK);
            } else {
                region.on_read_continued(STREAM_CHUNK);
            }
            off += STREAM_CHUNK;
        }
        let elapsed = start.elapsed();
        std::hint::black_box(sum);
        Sample {
            ops: (off / STREAM_STEP) as u64,
            bytes: off as u64,
            elapsed,
        }
    }

    /// Runs `kernel(part, lo, hi)` on `threads` threads, each on its own part `[lo, hi)` of
    /// the area that starts at `at` (whole multiples of `align`), and merges their samples;
    /// a thread whose part is empty does nothing.
    fn parallel<F>(&self, threads: usize, at: usize, align: usize, kernel: F) -> Sample
    where
        F: Fn(usize, usize, usize) -> Sample + Sync,
    {
        let threads = threads.max(1);
        let area = self.area;
        let samples: Vec<Sample> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let k = &kernel;
                    s.spawn(move || {
                        let (lo, hi) = part_of(area, t, threads, align);
                        if hi <= lo {
                            return Sample::default();
                        }
                        k(t, at + lo, at + hi)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        Sample::merge(&samples)
    }

    /// (c) Read bandwidth: `threads` threads copy `access` bytes at a time out of their own
    /// part of the read area, in order, each copy one access ([`Media::on_read`]), for at
    /// least `min_time`.
    pub fn read_bandwidth(&mut self, threads: usize, access: usize, min_time: Duration) -> Sample {
        let region = &*self.region;
        self.parallel(threads, 0, access, |_, lo, hi| {
            let mut buf = vec![0u8; access];
            let mut off = lo;
            run_for(min_time, access, || {
                // `lo <= off` and `off + access <= hi <= area`: inside the read area, which
                // nobody writes after `prepare` (published).
                region.read_published(off, &mut buf);
                std::hint::black_box(&buf);
                region.on_read(access);
                off = next_step(off, access, lo, hi);
                true
            })
        })
    }

    /// (d) Write bandwidth with persistence, as the engine writes: each copy of `access`
    /// bytes into the thread's own part of the write area is reported
    /// ([`Media::on_write`]), persisted and fenced; for at least `min_time`.
    pub fn write_bandwidth(&mut self, threads: usize, access: usize, min_time: Duration) -> Sample {
        let region = &self.region;
        self.parallel(threads, self.area, access, |_, lo, hi| {
            // This thread's part of the write area (the parts are disjoint).
            let Ok(mut part) = region.claim(lo, hi - lo) else {
                return Sample::default();
            };
            let src = vec![0x5au8; access];
            let mut off = lo;
            run_for(min_time, access, || {
                // `off + access <= hi`: inside this thread's part.
                let written = write_persisted(&mut part, off - lo, &src);
                off = next_step(off, access, lo, hi);
                written
            })
        })
    }

    /// (e) Small random persisted writes: 64 bytes at a random line of the thread's own
    /// part of the write area, reported, persisted and fenced; for at least `min_time`.
    pub fn random_persisted_writes(&mut self, threads: usize, min_time: Duration) -> Sample {
        let region = &self.region;
        self.parallel(threads, self.area, LINE, |part, lo, hi| {
            // This thread's part of the write area (the parts are disjoint).
            let Ok(mut claimed) = region.claim(lo, hi - lo) else {
                return Sample::default();
            };
            let lines = ((hi - lo) / LINE) as u64;
            let src = [0xa5u8; LINE];
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x9e37_79b9_7f4a_7c15 ^ part as u64);
            run_for(min_time, LINE, || {
                let at = rng.random_range(0..lines) as usize * LINE;
                // `lo + at + 64 <= hi`: inside this thread's part.
                write_persisted(&mut claimed, at, &src)
            })
        })
    }
}

/// The loop of a timed kernel: calls `op` until at least `min_time` has passed (looking at
/// the clock every [`CLOCK_EVERY`] operations) or `op` fails (returns false; not counted).
/// Each operation moves `size` bytes.
fn run_for(min_time: Duration, size: usize, mut op: impl FnMut() -> bool) -> Sample {
    let start = Instant::now();
    let mut ops = 0u64;
    while op() {
        ops += 1;
        if ops.is_multiple_of(CLOCK_EVERY) && start.elapsed() >= min_time {
            break;
        }
    }
    Sample {
        ops,
        bytes: ops * size as u64,
        elapsed: start.elapsed(),
    }
}

/// The offset after `off` in a sweep of `[lo, hi)` by `step`: the next whole step, else `lo`
/// again.
fn next_step(off: usize, step: usize, lo: usize, hi: usize) -> usize {
    let next = off + step;
    if next + step > hi { lo } else { next }
}

/// Copies `src` into the claimed part at `at` (panics outside it), reports the write
/// ([`Media::on_write`]), persists and fences it, as the engine writes; false if persisting
/// failed.
fn write_persisted(part: &mut ExtentWriter, at: usize, src: &[u8]) -> bool {
    part.write(at, src);
    let region = part.region();
    region.on_write(src.len());
    region
        .persist(part.offset() + at, src.len())
        .and_then(|()| region.fence())
        .is_ok()
}

/// Part `part` of `parts` of `[0, area)`, in whole multiples of `align`.
fn part_of(area: usize, part: usize, parts: usize, align: usize) -> (usize, usize) {
    let align = align.max(1);
    let each = area / parts.max(1) / align * align;
    (part * each, part * each + each)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "maps a file")]
    fn kernels_report_what_they_touch() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("calibration");
        let area = 256 << 10;
        Calibration::prepare(&path, area, 7).unwrap_or_else(|e| panic!("{e}"));
        let mut c =
            Calibration::open(&path, area, NvmProfile::Optane).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.profile(), NvmProfile::Optane);
        let s = c.random_reads(1000);
        assert_eq!(s.ops, 1000);
        let st = c.stats();
        assert_eq!((st.read_accesses, st.read_device_bytes), (1000, 256_000));
        let s = c.sequential_reads();
        assert_eq!(s.bytes, area as u64);
        let st2 = c.stats();
        assert_eq!(st2.read_accesses, 1001, "a scan is one access");
        assert_eq!(st2.read_device_bytes - st.read_device_bytes, area as u64);
        let s = c.read_bandwidth(2, 4096, Duration::from_millis(1));
        assert!(s.ops > 0 && s.bytes == s.ops * 4096);
        let w = c.write_bandwidth(2, 4096, Duration::from_millis(1));
        let st3 = c.stats();
        assert_eq!(st3.write_accesses, w.ops, "one persist per copy");
        let r = c.random_persisted_writes(1, Duration::from_millis(1));
        let st4 = c.stats();
        assert_eq!(st4.write_accesses - st3.write_accesses, r.ops);
        assert_eq!(
            st4.write_device_bytes - st3.write_device_bytes,
            r.ops * 256,
            "a 64-byte persist costs a whole 256-byte unit"
        );
        let dram = Calibration::open(&path, area, NvmProfile::Dram);
        assert!(dram.is_ok());
        assert!(Calibration::open(&path, area * 2, NvmProfile::Dram).is_err());
        assert!(Calibration::prepare(&path, area, 7).is_err(), "exists");
    }

    #[test]
    fn parts_are_disjoint_and_aligned() {
        assert_eq!(part_of(1 << 20, 0, 2, 4096), (0, 512 << 10));
        assert_eq!(part_of(1 << 20, 1, 2, 4096), (512 << 10, 1 << 20));
        assert_eq!(part_of(10_000, 2, 3, 64), (6656, 9984));
        assert_eq!(next_step(0, 64, 0, 256), 64);
        assert_eq!(
            next_step(192, 64, 0, 256),
            0,
            "wraps after the last whole step"
        );
        assert_eq!(next_step(4096, 4096, 4096, 12_288), 8192);
        assert_eq!(next_step(8192, 4096, 4096, 12_288), 4096);
    }
}
