//! Placement: which SSD directory (parallel unit) each new table goes to.
//!
//! Owns: the [`Placement`] seam (a job asks it for a [`JobPlacement`], which places each
//! output table), the option value [`PlacementPolicy`], the three policies as one pure
//! function ([`choose_unit`] over a [`PlaceInput`]), the per-unit view a decision sees
//! ([`UnitView`], built from the version by [`unit_views`]), the record of which units the
//! running jobs read and write ([`UnitActivity`]), and [`UnitPlacement`], the engine's
//! placement, which ties them together. A unit is an SSD directory (`ssd_paths`), which may
//! be its own device, or a parallel unit of one device (see `docs/impl.md`).
//!
//! The policies (option `placement`):
//! - `striped`: every new table goes to the next unit in turn, whatever its level, size or
//!   the other jobs: a level spreads evenly over every unit (maximum parallelism), and
//!   writes land where reads are. The baseline the isolation design argues against.
//! - `per_file`: a table's unit is fixed by its file number (one table, one unit, the static
//!   mapping): just as blind to levels and load, without the rotation's balance.
//! - `isolated`: a compaction's outputs go to units that none of its inputs, no other
//!   running job (reading or writing) and as little read heat as possible occupy (bytes,
//!   the small hot upper levels weighing more): ideally units with no live table, which no
//!   foreground read touches; a job packs up to [`PACK_TABLES`] of its tables on such a
//!   unit, so live tables occupy few units and the rest stay free for writes; a unit far
//!   over its share of bytes is avoided. When an output must go to a unit that
//!   serves reads (it holds live tables, or another job's tables may have become live
//!   there), its writes are paced (option `placement_write_pace`): the table is synced
//!   every so many bytes, so a read of that unit waits behind at most that much of it.
//!
//! Invariants: [`choose_unit`] is a pure function of its input (tested on its own); it
//! always returns one of the input's units. A job's reads (its inputs' units) are recorded
//! before it places its first output and every record is removed when the job's
//! `JobPlacement` is dropped, so the activity seen by other jobs is exactly that of running
//! jobs. Placement never affects correctness: any unit is a valid place for any table.
//!
//! Thread-safety: `UnitPlacement` is shared by every job (`Send + Sync`; the activity record
//! is behind a mutex taken briefly per decision); a `JobPlacement` belongs to one job.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::table::{TableLocation, TableMeta};
use crate::version::Version;

pub use crate::options::PlacementPolicy;

/// One unit as a placement decision sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitView {
    /// The unit's SSD directory index (`TableLocation::Sst { path_id }`).
    pub path_id: u32,
    /// Bytes of the version's tables on the unit.
    pub bytes: u64,
    /// Bytes of the version's tables in the hot levels (every level above the bottom one).
    pub hot_bytes: u64,
    /// Bytes this job reads from the unit (its inputs there).
    pub job_read_bytes: u64,
    /// Tables this job has already written to the unit.
    pub job_written: u32,
    /// Other running jobs reading tables on the unit.
    pub other_readers: u32,
    /// Other running jobs writing tables to the unit.
    pub other_writers: u32,
}

/// Everything one decision depends on.
#[derive(Debug, Clone)]
pub struct PlaceInput<'a> {
    /// The candidate units (at least one), with the job's level already taken into
    /// account: the hot bytes of each view, and the candidates themselves (wide units).
    pub units: &'a [UnitView],
    /// The new table's file number.
    pub table_id: u64,
    /// A counter that advances by one per table placed by this database (`striped`).
    pub cursor: u64,
}

/// Chooses the unit (its `path_id`) for one new table. Pure: the same input gives the same
/// unit. Returns 0 (the database directory) only if `units` is empty.
#[must_use]
pub fn choose_unit(policy: PlacementPolicy, input: &PlaceInput<'_>) -> u32 {
    let units = input.units;
    let n = units.len() as u64;
    if n == 0 {
        return 0;
    }
    let pick = |i: u64| units[usize::try_from(i % n).unwrap_or(0)].path_id;
    match policy {
        PlacementPolicy::Striped => pick(input.cursor),
        PlacementPolicy::PerFile => pick(input.table_id),
        PlacementPolicy::Isolated => isolated(input),
    }
}

/// How many of one job's tables `isolated` packs on a quiet unit before it takes another,
/// once quiet units are scarce (half of the units or fewer are free).
///
/// Outputs written to a unit with no live table (quiet) disturb no read; once installed,
/// they make the unit serve reads. Spread one table per unit, a few dozen live tables
/// occupy every unit of a device with 32, and from then on every flush and compaction
/// writes ahead of reads. Packed four to a unit, the same tables occupy a quarter of the
/// units (a later compaction that consumes them frees the unit whole), and the rest stay
/// quiet for the writes. It costs no write bandwidth (a job writes its tables one after
/// the other) and puts up to four times a table's share of reads on one unit, which is
/// why a database with few tables (many quiet units) spreads them instead.
/// Measured on the model of 32 units (`bench/papers`, isolation): at a 50 % read mix,
/// 2 per unit fell between 1 and 4; 4, 8 and any number gave the same. Packing from the
/// start made the quick shape's dozen tables share 4 units (reads queued: 0.75x striped's
/// throughput); from a quarter of the units free, the full shape packed too late (read
/// p99 2.3-3.2x lower than striped's against 3.9-4.0x from half).
pub const PACK_TABLES: u32 = 4;

/// `isolated`: the unit with the smallest cost, compared in order:
/// 1. how many kinds of conflict it has (this job reads there; another job reads there;
///    another job writes there): a write queued on a unit delays every read there;
/// 2. whether it holds more than its share of bytes (over 1.5x the mean plus 64 MiB);
/// 3. packing, when no more than half of the units (at least 2) are free (quiet: no
///    live table; and neither written by this job nor used by another): first a quiet unit
///    this job already writes, while it has fewer than [`PACK_TABLES`] of the job's
///    tables; then a quiet unit the job has not written; then any other;
/// 4. how many of this job's tables it has taken already;
/// 5. its read heat: its bytes, with the hot levels' bytes (L0 and every level above the
///    bottom one, small and read more per byte) counted four times over;
/// 6. a rotation by table number (no unit is favoured among equals).
///
/// The output level matters through the views: a new upper-level table makes its unit
/// hot, so when no quiet unit is left the next upper-level outputs go elsewhere (small hot
/// levels spread), while large cold bottom tables fill the units that hold least.
fn isolated(input: &PlaceInput<'_>) -> u32 {
    let units = input.units;
    let n = units.len() as u64;
    let total: u64 = units.iter().map(|u| u.bytes).sum();
    let share = total / n.max(1);
    let over = |u: &UnitView| u.bytes > share + share / 2 + (64 << 20);
    // Pack only while quiet units are scarce: with many left, one table per unit spreads
    // the reads of a small database over more units.
    let free = |u: &UnitView| {
        u.bytes == 0 && u.job_written == 0 && u.other_readers == 0 && u.other_writers == 0
    };
    let pack = units.iter().filter(|u| free(u)).count() as u64 <= (n / 2).max(2);
    let key = |(i, u): (usize, &UnitView)| {
        let conflicts = u32::from(u.job_read_bytes > 0)
            + u32::from(u.other_readers > 0)
            + u32::from(u.other_writers > 0);
        let heat = u.bytes.saturating_add(u.hot_bytes.saturating_mul(3));
        let rotation = (i as u64 + n - input.table_id % n) % n;
        // A quiet unit holds no live table: no foreground read reaches it.
        let quiet = u.bytes == 0;
        let packing = if !pack || (quiet && u.job_written > 0 && u.job_written < PACK_TABLES) {
            0
        } else if quiet && u.job_written == 0 {
            1
        } else {
            2
        };
        (conflicts, over(u), packing, u.job_written, heat, rotation)
    };
    units
        .iter()
        .enumerate()
        .min_by_key(|&(i, u)| key((i, u)))
        .map_or(0, |(_, u)| u.path_id)
}

/// The units `candidates` as the version shows them, with this job's reads: bytes and hot
/// bytes (levels above the bottom one) per unit from `version`, `inputs` (the job's input
/// tables) as the job's reads. Activity fields are left zero.
#[must_use]
pub fn unit_views(
    version: &Version,
    candidates: &[u32],
    inputs: &[Arc<TableMeta>],
    bottom_level: usize,
) -> Vec<UnitView> {
    let mut views: Vec<UnitView> = candidates
        .iter()
        .map(|&path_id| UnitView {
            path_id,
            ..UnitView::default()
        })
        .collect();
    let slot = |views: &mut Vec<UnitView>, t: &TableMeta| -> Option<usize> {
        match t.location {
            TableLocation::Sst { path_id } => views.iter().position(|v| v.path_id == path_id),
            TableLocation::Nvm { .. } | TableLocation::Row { .. } => None,
        }
    };
    for (level, t) in version.all_tables() {
        if let Some(i) = slot(&mut views, t) {
            views[i].bytes += t.size;
            if level < bottom_level {
                views[i].hot_bytes += t.size;
            }
        }
    }
    for t in inputs {
        if let Some(i) = slot(&mut views, t) {
            views[i].job_read_bytes += t.size;
        }
    }
    views
}

/// The units each running job reads and writes.
#[derive(Debug, Default)]
pub struct UnitActivity {
    next_job: AtomicU64,
    jobs: Mutex<HashMap<u64, JobUnits>>,
    /// Tables placed on each unit so far, by every job (only grows).
    placed: Mutex<HashMap<u32, u64>>,
}

#[derive(Debug, Default, Clone)]
struct JobUnits {
    reads: Vec<u32>,
    writes: Vec<u32>,
}

impl UnitActivity {
    /// Records a new job reading `reads`; returns its id.
    fn register(&self, reads: Vec<u32>) -> u64 {
        let id = self.next_job.fetch_add(1, Ordering::Relaxed);
        self.jobs.lock().insert(
            id,
            JobUnits {
                reads,
                writes: Vec::new(),
            },
        );
        id
    }

    /// Fills the other-job fields of `views` (every job but `job`).
    fn fill_others(&self, job: u64, views: &mut [UnitView]) {
        for v in views.iter_mut() {
            v.other_readers = 0;
            v.other_writers = 0;
        }
        for (&id, units) in self.jobs.lock().iter() {
            if id == job {
                continue;
            }
            for v in views.iter_mut() {
                v.other_readers += u32::from(units.reads.contains(&v.path_id));
                v.other_writers += u32::from(units.writes.contains(&v.path_id));
            }
        }
    }

    /// Records that `job` placed a table on `unit`: in its writes first, then in the
    /// counts, so a job that snapshots the counts and then the writes (`begin`) sees every
    /// placement in one or the other.
    fn note_write(&self, job: u64, unit: u32) {
        if let Some(j) = self.jobs.lock().get_mut(&job)
            && !j.writes.contains(&unit)
        {
            j.writes.push(unit);
        }
        *self.placed.lock().entry(unit).or_default() += 1;
    }

    /// Tables placed on `unit` so far by every job.
    fn placed_on(&self, unit: u32) -> u64 {
        self.placed.lock().get(&unit).copied().unwrap_or(0)
    }

    /// Whether a running job other than `job` has placed a table on `unit`.
    fn others_write(&self, job: u64, unit: u32) -> bool {
        self.jobs
            .lock()
            .iter()
            .any(|(&id, units)| id != job && units.writes.contains(&unit))
    }

    fn remove(&self, job: u64) {
        self.jobs.lock().remove(&job);
    }

    /// Jobs running now (for tests and stats).
    #[must_use]
    #[cfg(test)]
    pub fn running_jobs(&self) -> usize {
        self.jobs.lock().len()
    }
}

/// What a job tells the placement when it starts.
#[derive(Debug, Clone, Copy)]
pub struct JobInfo<'a> {
    /// The version the job reads.
    pub version: &'a Version,
    /// The level its tables go to.
    pub output_level: usize,
    /// Its input tables (every level).
    pub inputs: &'a [Arc<TableMeta>],
}

/// Chooses the SSD directory of each new table, per job.
pub trait Placement: Send + Sync + std::fmt::Debug {
    /// Starts placing the outputs of one job; the returned value places each of its tables
    /// and ends the job's record when dropped.
    fn begin(&self, job: &JobInfo<'_>) -> Box<dyn JobPlacement>;
}

/// The placement of one job's output tables.
pub trait JobPlacement: Send + std::fmt::Debug {
    /// The directory index for the new table `table_id`.
    fn place(&mut self, table_id: u64) -> u32;
    /// Every how many bytes a table being written to `path_id` (a unit this job placed a
    /// table on) is synced, so that no more than that of its writes queue on the unit
    /// ahead of a foreground read; 0: not paced.
    fn pace_bytes(&self, _path_id: u32) -> u64 {
        0
    }
}

/// Every table in the database directory (directory 0).
#[derive(Debug, Clone, Copy, Default)]
#[cfg(test)]
pub struct DbDirPlacement;

#[cfg(test)]
impl Placement for DbDirPlacement {
    fn begin(&self, _job: &JobInfo<'_>) -> Box<dyn JobPlacement> {
        Box::new(DbDirPlacement)
    }
}

#[cfg(test)]
impl JobPlacement for DbDirPlacement {
    fn place(&mut self, _table_id: u64) -> u32 {
        0
    }
}

/// The engine's placement over the configured units.
#[derive(Debug)]
pub struct UnitPlacement {
    policy: PlacementPolicy,
    units: Vec<u32>,
    /// How many of `units` (the first ones) are wide: `isolated` keeps L0 and L1 there.
    wide: usize,
    /// `isolated` only: a table written to a unit holding live tables is synced every
    /// `pace` bytes (0: never).
    pace: u64,
    cursor: Arc<AtomicU64>,
    activity: Arc<UnitActivity>,
}

impl UnitPlacement {
    /// A placement with `policy` over the directory indexes `units` (not empty; with a
    /// single unit every table goes there).
    #[must_use]
    pub fn new(policy: PlacementPolicy, units: Vec<u32>) -> Self {
        let units = if units.is_empty() { vec![0] } else { units };
        Self {
            policy,
            units,
            wide: 0,
            pace: 0,
            cursor: Arc::new(AtomicU64::new(0)),
            activity: Arc::new(UnitActivity::default()),
        }
    }

    /// Declares the first `wide` units wide (each spread by its device over several
    /// parallel units): under `isolated`, L0 and L1 tables (small, hot, written by every
    /// flush, where write bandwidth matters most) go there and deeper tables to the other
    /// units, so flushes never queue on a unit that serves reads of the bottom levels.
    /// Ignored unless fewer than all units.
    #[must_use]
    pub fn with_wide_units(mut self, wide: usize) -> Self {
        self.wide = if wide < self.units.len() { wide } else { 0 };
        self
    }

    /// Under `isolated`, paces the writes of a table to a unit that holds live tables:
    /// the table is synced every `bytes` bytes (0: never), so its queued writes delay a
    /// read of that unit by the time `bytes` take to write, not the whole table's. A unit
    /// with no live table gets no foreground read and is written unpaced.
    #[must_use]
    pub fn with_write_pace(mut self, bytes: u64) -> Self {
        self.pace = bytes;
        self
    }

    /// The candidate units of a job writing `output_level`.
    fn candidates(&self, output_level: usize) -> &[u32] {
        if self.policy != PlacementPolicy::Isolated || self.wide == 0 {
            &self.units
        } else if output_level <= 1 {
            &self.units[..self.wide]
        } else {
            &self.units[self.wide..]
        }
    }

    /// The record of running jobs.
    #[must_use]
    #[cfg(test)]
    pub fn activity(&self) -> &Arc<UnitActivity> {
        &self.activity
    }
}

impl Placement for UnitPlacement {
    fn begin(&self, job: &JobInfo<'_>) -> Box<dyn JobPlacement> {
        let candidates = self.candidates(job.output_level);
        if candidates.len() == 1 {
            return Box::new(Fixed(candidates[0]));
        }
        let bottom_level = job
            .version
            .deepest_nonempty_level()
            .unwrap_or(0)
            .max(job.output_level);
        let views = unit_views(job.version, candidates, job.inputs, bottom_level);
        let reads: Vec<u32> = views
            .iter()
            .filter(|v| v.job_read_bytes > 0)
            .map(|v| v.path_id)
            .collect();
        let id = self.activity.register(reads);
        let pace = if self.policy == PlacementPolicy::Isolated {
            self.pace
        } else {
            0
        };
        // Where tables may become live while the job runs: (by the counts) units other
        // jobs place tables on from now, and units they are writing now. Counts first:
        // a placement made between the two snapshots is then in one of them.
        let placed_at_begin = views
            .iter()
            .map(|v| self.activity.placed_on(v.path_id))
            .collect();
        let busy_at_begin = views
            .iter()
            .map(|v| self.activity.others_write(id, v.path_id))
            .collect();
        Box::new(UnitJob {
            policy: self.policy,
            pace,
            busy_at_begin,
            placed_at_begin,
            views,
            cursor: Arc::clone(&self.cursor),
            activity: Arc::clone(&self.activity),
            id,
        })
    }
}

/// Every table of a job to one directory.
#[derive(Debug, Clone, Copy)]
struct Fixed(u32);

impl JobPlacement for Fixed {
    fn place(&mut self, _table_id: u64) -> u32 {
        self.0
    }
}

#[derive(Debug)]
struct UnitJob {
    policy: PlacementPolicy,
    /// See [`UnitPlacement::with_write_pace`] (0 unless `isolated`).
    pace: u64,
    /// Per view: whether another job was writing the unit when this one began.
    busy_at_begin: Vec<bool>,
    /// Per view: tables placed on the unit by every job when this one began.
    placed_at_begin: Vec<u64>,
    views: Vec<UnitView>,
    cursor: Arc<AtomicU64>,
    activity: Arc<UnitActivity>,
    id: u64,
}

impl JobPlacement for UnitJob {
    fn place(&mut self, table_id: u64) -> u32 {
        self.activity.fill_others(self.id, &mut self.views);
        let cursor = self.cursor.fetch_add(1, Ordering::Relaxed);
        let unit = choose_unit(
            self.policy,
            &PlaceInput {
                units: &self.views,
                table_id,
                cursor,
            },
        );
        if let Some(v) = self.views.iter_mut().find(|v| v.path_id == unit) {
            v.job_written += 1;
        }
        self.activity.note_write(self.id, unit);
        unit
    }

    fn pace_bytes(&self, path_id: u32) -> u64 {
        if self.pace == 0 {
            return 0;
        }
        let Some(i) = self.views.iter().position(|v| v.path_id == path_id) else {
            return 0;
        };
        let v = &self.views[i];
        // The unit serves foreground reads if it held live tables in the job's version
        // (its inputs included: they stay live until the job installs its outputs), or
        // if another job's tables may have become live there since: one was writing it
        // when this job began, or placed a table there since (which covers every job
        // writing it now; the job's own outputs are not live until it installs them).
        let placed_by_others = self
            .activity
            .placed_on(path_id)
            .saturating_sub(self.placed_at_begin.get(i).copied().unwrap_or(0))
            .saturating_sub(u64::from(v.job_written));
        let serves_reads = v.bytes > 0
            || self.busy_at_begin.get(i).copied().unwrap_or(false)
            || placed_by_others > 0;
        if serves_reads { self.pace } else { 0 }
    }
}

impl Drop for UnitJob {
    fn drop(&mut self) {
        self.activity.remove(self.id);
    }
}

#[cfg(test)]
mod tests;
