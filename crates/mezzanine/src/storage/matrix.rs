//! The matrix container's page space in the NVM pool (MatrixKV's L0): where L0 rows live.
//!
//! Owns: [`MatrixSpace`], one NVM object of kind `MatrixSpace` cut into pages
//! (`mezz_nvtable::matrix::PageSpace`), the open rows by id, and the rule that frees pages.
//! Rows are L0 tables (`TableLocation::Row`); a column compaction that drains a prefix of a
//! row replaces its table with one over the same row and a larger consumed count. The row
//! format is `docs/formats/matrix-row.md`.
//!
//! Invariants:
//! - The space's object is in the manifest before any row is written into it; a row is in
//!   the manifest (as an L0 table) only after its commit word was persisted.
//! - The free list is never stored: open rebuilds it from the pages the recovered version's
//!   rows still use ([`MatrixSpace::open`]), so a crash leaks no page.
//! - A page returns to the free list only when no table that a reader may still hold uses
//!   it: [`MatrixSpace::release_unused`] is called with every row table still alive (the
//!   current version and those old versions pin), and frees exactly the pages of
//!   allocated rows that none of them uses, except rows still being built.
//!
//! Thread-safety: `MatrixSpace` is shared (`Arc`); the page space has its own mutex, and the
//! row map and the set of rows being built share one ([`Rows`]), so a clean-up sees them at
//! one instant: it read the rows being built, then the row map, under two locks, and a row
//! whose build started and finished between the two reads (the clean-up's thread
//! descheduled there) was in neither the set nor the tables, so it was forgotten and its
//! pages freed while the flush went on to name it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mezz_format::InternalIterator;
use mezz_nvtable::matrix::{
    HintSource, PageSpace, RowBuildOptions, RowBuilder, RowTable, SearchStats,
};
use parking_lot::Mutex;

use crate::base::meta::{TableLocation, TableMeta};
use crate::error::{Error, Result};
use crate::storage::nvm::{NvmObject, NvmTier};

/// Counters of row searches of one kind.
#[derive(Debug, Default)]
pub struct SearchCounters {
    /// Rows searched.
    pub rows_searched: AtomicU64,
    /// Rows whose search was narrowed by a hint.
    pub rows_hinted: AtomicU64,
    /// Key comparisons.
    pub comparisons: AtomicU64,
}

impl SearchCounters {
    /// Counts one row searched, narrowed by a hint or not, with its comparisons.
    pub(crate) fn count(&self, hinted: bool, stats: &SearchStats) {
        self.rows_searched.fetch_add(1, Ordering::Relaxed);
        self.rows_hinted
            .fetch_add(u64::from(hinted), Ordering::Relaxed);
        self.comparisons
            .fetch_add(stats.comparisons, Ordering::Relaxed);
    }
}

/// Counters of row searches (shared by the rows of one database): how much the hints save,
/// for point reads and iterator seeks apart.
#[derive(Debug, Default)]
pub struct RowSearchCounters {
    /// Point reads.
    pub gets: SearchCounters,
    /// Iterator seeks.
    pub seeks: SearchCounters,
}

/// Open rows by row id, with the pages each still holds.
type RowMap = HashMap<u64, (Arc<RowTable>, Vec<u32>)>;

/// What the space knows of its rows, read and changed under one lock.
struct Rows {
    /// Open rows by row id, with the pages each still holds (allocated for it and not
    /// released yet).
    open: RowMap,
    /// Rows being built: their pages are allocated but no table names them yet.
    building: HashSet<u64>,
}

/// The matrix container's pages and rows. See the module documentation.
pub struct MatrixSpace {
    object: NvmObject,
    region: Arc<mezz_pmem::Region>,
    space: PageSpace,
    /// The open rows and the rows being built, under one lock.
    rows: Mutex<Rows>,
    /// Whether point reads narrow older rows with cross-row hints (`matrix_hints`).
    hints: bool,
    /// Search counters of every row.
    counters: Arc<RowSearchCounters>,
    /// The bytes the last row that found no room needed (0 once a row fitted again): a
    /// flush waits for a column while the free pages are fewer.
    shortfall: AtomicU64,
    /// The order of keys in every row.
    order: mezz_format::KeyOrder,
}

impl std::fmt::Debug for MatrixSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixSpace")
            .field("object", &self.object)
            .field("space", &self.space)
            .finish_non_exhaustive()
    }
}

/// Per row the tables of `tables` name: its header page and the smallest consumed count
/// among them (the pages of that count are a superset of the others').
fn least_consumed<'a>(tables: impl Iterator<Item = &'a TableMeta>) -> HashMap<u64, (u32, u32)> {
    let mut least: HashMap<u64, (u32, u32)> = HashMap::new();
    for t in tables {
        if let TableLocation::Row {
            row,
            header_page,
            consumed,
            ..
        } = t.location
        {
            let e = least.entry(row).or_insert((header_page, consumed));
            e.1 = e.1.min(consumed);
        }
    }
    least
}

impl MatrixSpace {
    /// Opens the page space of `object` (pages of `page_size` bytes), with the rows the
    /// recovered version's tables name. Every such row must open (it committed before the
    /// manifest named it). The free list is every page none of them still uses.
    ///
    /// # Errors
    /// `Corruption` for a named row that is missing, damaged or inconsistent with the space.
    pub fn open<'a>(
        tier: &NvmTier,
        object: NvmObject,
        page_size: usize,
        hints: bool,
        tables: impl Iterator<Item = &'a TableMeta>,
        order: &mezz_format::KeyOrder,
    ) -> Result<MatrixSpace> {
        let extent = object.extent();
        let region = Arc::clone(tier.region());
        let probe = PageSpace::new(extent, page_size)?;
        let mut rows: RowMap = HashMap::new();
        let mut live: HashSet<u32> = HashSet::new();
        for (row, (header_page, consumed)) in least_consumed(tables) {
            let t = RowTable::open(&region, &probe, header_page, row, order)?.ok_or_else(|| {
                Error::corruption(
                    0,
                    format!("matrix row {row} (header page {header_page}) never committed"),
                )
            })?;
            let held = t.pages_in_use(consumed)?;
            live.extend(held.iter().copied());
            rows.insert(row, (Arc::new(t), held));
        }
        let mut live: Vec<u32> = live.into_iter().collect();
        live.sort_unstable();
        let space = PageSpace::from_live(extent, page_size, &live)?;
        Ok(MatrixSpace {
            object,
            region,
            space,
            rows: Mutex::new(Rows {
                open: rows,
                building: HashSet::new(),
            }),
            hints,
            counters: Arc::default(),
            shortfall: AtomicU64::new(0),
            order: order.clone(),
        })
    }

    /// Whether point reads use cross-row hints.
    #[must_use]
    pub fn hints(&self) -> bool {
        self.hints
    }

    /// The search counters of every row.
    #[must_use]
    pub fn counters(&self) -> &Arc<RowSearchCounters> {
        &self.counters
    }

    /// The NVM object holding the space.
    #[must_use]
    pub fn object(&self) -> NvmObject {
        self.object
    }

    /// Bytes of the container (whole pages).
    #[must_use]
    pub fn capacity_bytes(&self) -> u64 {
        self.space.capacity_bytes()
    }

    /// Bytes of pages in use (rows, live or not yet freed).
    #[must_use]
    pub fn used_bytes(&self) -> u64 {
        let p = self.space.page_size() as u64;
        u64::from(self.space.page_count() - self.space.free_count()) * p
    }

    /// Bytes of free pages.
    #[must_use]
    pub fn free_bytes(&self) -> u64 {
        u64::from(self.space.free_count()) * self.space.page_size() as u64
    }

    /// Whether the free pages are still fewer than the last row that did not fit needed (a
    /// flush then waits for a column to free some).
    #[must_use]
    pub fn is_short_of_room(&self) -> bool {
        self.shortfall.load(Ordering::Relaxed) > self.free_bytes()
    }

    /// The open row `row` whose header is at `header_page`.
    ///
    /// # Errors
    /// `Corruption` when it does not open (never committed, or damaged).
    pub fn row(&self, row: u64, header_page: u32) -> Result<Arc<RowTable>> {
        match self.rows.lock().open.get(&row) {
            Some((t, _)) if t.header_page() == header_page => Ok(Arc::clone(t)),
            _ => Err(Error::corruption(
                0,
                format!("matrix row {row} (header page {header_page}) is not in the container"),
            )),
        }
    }

    /// Builds row `row_id` from `iter` (internal-key order), its hints pointing into `prev`
    /// (the newest row in L0, with its consumed count), and returns it with its L0 table
    /// (id `row_id`). `Ok(None)` when the space has no room for it (the caller writes an
    /// SST instead) or `iter` is empty.
    ///
    /// # Errors
    /// `Corruption` / `Io` from reading `iter` or `prev`, or from persisting.
    pub fn build_row(
        &self,
        iter: &mut dyn InternalIterator<Error>,
        row_id: u64,
        prev: Option<(&RowTable, u32)>,
        block_size: usize,
    ) -> Result<Option<(Arc<RowTable>, TableMeta)>> {
        let mut b = RowBuilder::new(RowBuildOptions {
            block_size,
            order: self.order.clone(),
        });
        iter.seek_to_first();
        while iter.valid() {
            b.add(iter.key(), iter.value())?;
            iter.next();
        }
        iter.status()?;
        if b.is_empty() {
            return Ok(None);
        }
        // Blocks, key array, header (with its page list) and a page of slack for padding.
        let need = b.estimated_size() as u64
            + (b.len() * mezz_nvtable::matrix::KEY_ENTRY_LEN) as u64
            + 4096
            + self.space.page_size() as u64;
        let page_size = self.space.page_size();
        if need.div_ceil(page_size as u64) > mezz_nvtable::matrix::max_row_pages(page_size) as u64 {
            // More pages than a row's header can list (a memtable made larger than
            // write_buffer_size for one large write group, with small pages): an SST.
            return Ok(None);
        }
        if need > self.free_bytes() {
            self.shortfall.store(need, Ordering::Relaxed);
            return Ok(None);
        }
        self.rows.lock().building.insert(row_id);
        let built = b.finish(
            &self.region,
            &self.space,
            row_id,
            prev.map(|(row, consumed)| HintSource { row, consumed }),
        );
        let t = match built {
            Ok(t) => Arc::new(t),
            Err(e) => {
                self.rows.lock().building.remove(&row_id);
                // Too few free pages after all (the estimate was short): no row.
                let pages_short = matches!(&e, mezz_format::Error::InvalidArgument(m)
                    if m.contains("page space full"));
                if pages_short {
                    let p = self.space.page_size() as u64;
                    self.shortfall
                        .store(need.max(self.free_bytes() + p), Ordering::Relaxed);
                    return Ok(None);
                }
                return Err(e.into());
            }
        };
        self.shortfall.store(0, Ordering::Relaxed);
        let held = t.pages().to_vec();
        self.rows.lock().open.insert(row_id, (Arc::clone(&t), held));
        match row_meta(row_id, self.object.id, &t, 0) {
            Ok(Some(meta)) => Ok(Some((t, meta))),
            // A committed row holds entries, so it has a table; a row that cannot be read
            // back is given up (its pages are freed by the next clean-up).
            Ok(None) => {
                self.built(row_id);
                Ok(None)
            }
            Err(e) => {
                self.built(row_id);
                Err(e)
            }
        }
    }

    /// Row `row_id` is named by an installed table now (or was abandoned): its pages follow
    /// the tables from here on.
    pub fn built(&self, row_id: u64) {
        self.rows.lock().building.remove(&row_id);
    }

    /// Frees every page of the known rows that none of `alive` (every row table a reader
    /// may still hold) uses, and forgets rows no table names. Rows being built keep theirs.
    pub fn release_unused<'a>(&self, alive: impl Iterator<Item = &'a TableMeta>) {
        let least = least_consumed(alive);
        let mut rows = self.rows.lock();
        let Rows { open, building } = &mut *rows;
        let mut free: Vec<u32> = Vec::new();
        open.retain(|id, (t, held)| {
            if building.contains(id) {
                return true;
            }
            let keep: HashSet<u32> = match least.get(id) {
                // A row whose live part cannot be read keeps every page it holds.
                Some(&(_, c)) => match t.pages_in_use(c) {
                    Ok(p) => p.into_iter().collect(),
                    Err(_) => held.iter().copied().collect(),
                },
                None => HashSet::new(),
            };
            let (kept, gone): (Vec<u32>, Vec<u32>) =
                held.iter().copied().partition(|p| keep.contains(p));
            free.extend(gone);
            *held = kept;
            least.contains_key(id)
        });
        drop(rows);
        free.sort_unstable();
        free.dedup();
        if !free.is_empty() {
            // Each page is released once: it leaves its row's held list here. A failure
            // would mean broken bookkeeping; the pages then stay allocated until the next
            // open rebuilds the free list.
            let _ = self.space.release(&free);
        }
    }
}

/// The L0 table of row `row` (in the space object `space`) with entries `[0, consumed)`
/// gone, as table `id`; `None` when every entry is consumed.
///
/// # Errors
/// `Corruption` from reading the row's key array or blocks.
pub fn row_meta(id: u64, space: u64, row: &RowTable, consumed: u32) -> Result<Option<TableMeta>> {
    let n = row.num_entries();
    if consumed >= n {
        return Ok(None);
    }
    let h = row.header();
    let size = if consumed == 0 {
        row.len_bytes()
    } else {
        let data: u64 = row.block_summary(consumed)?.iter().map(|(_, b)| b).sum();
        data + u64::from(n - consumed) * mezz_nvtable::matrix::KEY_ENTRY_LEN as u64
    };
    Ok(Some(TableMeta {
        id,
        location: TableLocation::Row {
            space,
            row: row.id(),
            header_page: row.header_page(),
            consumed,
        },
        size,
        smallest: row.key(consumed)?,
        largest: row.key(n - 1)?,
        smallest_seq: h.smallest_seq,
        largest_seq: h.largest_seq,
        num_entries: u64::from(n - consumed),
        num_deletions: u64::from(h.num_deletions.min(n - consumed)),
        nvm_refs: Vec::new(),
        pinned: Default::default(),
        seeks: Default::default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtable::MemTable;
    use crate::options::Options;
    use crate::storage::nvm::NvmObjectKind;
    use mezz_format::ValueKind;
    use std::sync::atomic::AtomicBool;

    /// Flushes build rows and name them in the version while clean-ups run on another
    /// thread, each under the version's lock as the engine's are: every row the version
    /// names stays open in the container, and the rows it stopped naming give their pages
    /// back.
    #[test]
    fn rows_the_version_names_survive_concurrent_clean_ups() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            nvm_dir: Some(dir.path().to_path_buf()),
            nvm_capacity: 64 << 20,
            ..Options::default()
        };
        let tier = NvmTier::open(&opts, [7; 16], &[], true).unwrap();
        let obj = tier.alloc(1, NvmObjectKind::MatrixSpace, 16 << 20).unwrap();
        let space = Arc::new(
            MatrixSpace::open(
                &tier,
                obj,
                16 << 10,
                true,
                std::iter::empty(),
                &mezz_format::KeyOrder::default(),
            )
            .unwrap(),
        );
        let version: Arc<Mutex<Vec<TableMeta>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let cleaner = {
            let (space, version, stop) =
                (Arc::clone(&space), Arc::clone(&version), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let v = version.lock();
                    space.release_unused(v.iter());
                    drop(v);
                    n += 1;
                    std::thread::yield_now();
                }
                n
            })
        };
        for i in 0..300u64 {
            let m = Arc::new(MemTable::new(i, 1 << 20, mezz_format::KeyOrder::default()));
            for k in 0..40u64 {
                let key = format!("k{:05}", (k * 7 + i) % 1000);
                m.add(
                    i * 100 + k + 1,
                    ValueKind::Value,
                    key.as_bytes(),
                    &[i as u8; 64],
                )
                .unwrap();
            }
            let row_id = 100 + i;
            let (_, meta) = space
                .build_row(m.iter().as_mut(), row_id, None, 1024)
                .unwrap()
                .expect("room for the row");
            {
                // The version names the new row and drops the oldest beyond eight.
                let mut v = version.lock();
                v.push(meta);
                if v.len() > 8 {
                    v.remove(0);
                }
            }
            space.built(row_id);
            for t in version.lock().iter() {
                let TableLocation::Row {
                    row, header_page, ..
                } = t.location
                else {
                    unreachable!("rows only")
                };
                space.row(row, header_page).unwrap();
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert!(cleaner.join().unwrap() > 0);
        // Only the version's eight rows hold pages once the last clean-up ran.
        space.release_unused(version.lock().iter());
        assert_eq!(space.rows.lock().open.len(), 8);
        assert!(space.free_bytes() > space.capacity_bytes() / 2);
    }
}
