//! Reading SST files: the [`Table`] implementation over `mezz_format::sst::TableReader`
//! and the block cache the SSTs of one database share.
//!
//! Owns:
//! - [`SstTable`]: one open SST file behind the engine's [`Table`] trait. Point lookups
//!   consult the bloom filter first (counting `bloom_negatives`), then the index and one
//!   data block.
//! - [`BlockCacheImpl`]: the block cache shared by every table of a DB, over `quick_cache`,
//!   weighted by block size in bytes, keyed by (table id, block offset).
//!
//! The table cache (`table::cache`) opens SSTs through the storage layer and hands them out
//! as `dyn Table`.
//!
//! Building SSTs is not here: flush and compaction write them with
//! `mezz_format::sst::TableBuilder`.
//!
//! Statistics: every table of one table cache counts its reads into the DB's
//! `StatsCollector::table_reads` (blocks and bytes read, decode time, block cache hits and
//! misses), striped by thread; `Db::stats` reads the totals from there. Bloom filter
//! negatives go to `StatsCollector::bloom_negatives`, striped the same way.
//!
//! Errors: every error from reading a table names the file (`Error::in_file`).
//!
//! Thread-safety: both types are `Send + Sync` and shared through `Arc`.

use std::path::PathBuf;
use std::sync::Arc;

use mezz_format::block::Block;
use mezz_format::ikey::{ValueKind, make_internal_key, parse_internal_key};
use mezz_format::sst::{BlockCache, TableReader};

use crate::table::InFileIter;
use mezz_format::{InternalIterator, SeqNo};

use crate::error::{Error, Result};
use crate::pinned::{PinnedLookup, PinnedValue};
use crate::stats::StatsCollector;
use crate::table::{LookupResult, Table, TableMeta, TableReadOptions};

// ---------------------------------------------------------------------------------------
// Block cache
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, Default)]
struct BlockWeighter;

impl quick_cache::Weighter<(u64, u64), Arc<Block>> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), block: &Arc<Block>) -> u64 {
        // Never 0: zero-weight items are never evicted.
        block.len_bytes().max(1) as u64
    }
}

/// What one insertion evicted (at most two blocks are kept to recycle; a third and later
/// are dropped at once, as the cache's default does).
#[derive(Default)]
struct Evicted([Option<Arc<Block>>; 2]);

/// Collects the blocks an insertion evicts, so that their buffers can be recycled after
/// the shard's lock is released.
#[derive(Debug, Clone, Copy, Default)]
struct RecycleEvicted;

impl quick_cache::Lifecycle<(u64, u64), Arc<Block>> for RecycleEvicted {
    type RequestState = Evicted;

    fn on_evict(&self, state: &mut Evicted, _key: (u64, u64), block: Arc<Block>) {
        if let Some(slot) = state.0.iter_mut().find(|s| s.is_none()) {
            *slot = Some(block);
        }
    }
}

type BlockMap = quick_cache::sync::Cache<
    (u64, u64),
    Arc<Block>,
    BlockWeighter,
    quick_cache::DefaultHashBuilder,
    RecycleEvicted,
>;

/// The block cache shared by every table of a DB: at most `capacity` bytes of blocks.
///
/// A block evicted by an insertion, when no reader still holds it, gives its buffer to the
/// inserting thread's spare buffers (`mezz_util::spare`): that thread's next block read
/// fills it, so a stream of cache misses neither allocates nor frees block buffers (freeing
/// a block another thread allocated takes that thread's malloc arena lock).
pub struct BlockCacheImpl {
    cache: BlockMap,
    capacity: u64,
}

impl std::fmt::Debug for BlockCacheImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCacheImpl")
            .field("capacity", &self.capacity)
            .field("blocks", &self.cache.len())
            .field("bytes", &self.cache.weight())
            .finish()
    }
}

impl BlockCacheImpl {
    /// A cache of `capacity` bytes. REQUIRES: `capacity > 0` (a DB with capacity 0 uses no
    /// cache at all).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1) as u64;
        // Estimated item count: blocks of about 4 KiB.
        let items = usize::try_from(capacity / 4096)
            .unwrap_or(usize::MAX)
            .max(16);
        Self {
            cache: quick_cache::sync::Cache::with(
                items,
                capacity,
                BlockWeighter,
                quick_cache::DefaultHashBuilder::default(),
                RecycleEvicted,
            ),
            capacity,
        }
    }

    /// Bytes of blocks currently cached.
    #[must_use]
    #[cfg(test)]
    pub fn used_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// Blocks currently cached.
    #[must_use]
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// The capacity in bytes.
    #[must_use]
    #[cfg(test)]
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
}

impl BlockCache for BlockCacheImpl {
    fn get(&self, cache_id: u64, offset: u64) -> Option<Arc<Block>> {
        self.cache.get(&(cache_id, offset))
    }

    fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>) {
        let mut evicted = Evicted::default();
        self.cache
            .insert_with_lifecycle((cache_id, offset), block, &mut evicted);
        for block in evicted.0.into_iter().flatten() {
            if let Ok(block) = Arc::try_unwrap(block) {
                mezz_util::spare::give(block.into_contents());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// SstTable
// ---------------------------------------------------------------------------------------

/// One open SST file.
#[derive(Debug)]
pub struct SstTable {
    meta: TableMeta,
    path: PathBuf,
    reader: Arc<TableReader>,
    stats: Arc<StatsCollector>,
    /// Bytes whole-table scans and `verify` read at a time (0: one read per block).
    scan_readahead: usize,
}

impl SstTable {
    /// Opens the SST file `file` (at `path`) of table `meta`, sharing `block_cache` and
    /// counting its reads into `stats`.
    ///
    /// # Errors
    /// `Io` / `Corruption` / `UnsupportedVersion` from reading the footer, index, filter
    /// and properties, naming `path`.
    pub(crate) fn open(
        meta: &TableMeta,
        path: PathBuf,
        file: Arc<dyn mezz_env::RandomAccessFile>,
        block_cache: Option<&Arc<BlockCacheImpl>>,
        stats: &Arc<StatsCollector>,
        order: &mezz_format::KeyOrder,
    ) -> Result<SstTable> {
        let size = file.size();
        let cache = block_cache.map(|c| Arc::clone(c) as Arc<dyn BlockCache>);
        let reader = TableReader::open_with_counters(
            file,
            size,
            meta.id,
            cache,
            Arc::clone(&stats.table_reads),
            order,
        );
        let reader = reader.map_err(|e| e.in_file(&path))?;
        Ok(SstTable {
            meta: meta.clone(),
            path,
            reader: Arc::new(reader),
            stats: Arc::clone(stats),
            scan_readahead: 0,
        })
    }

    /// The same table, whose whole-table scans (`TableReadOptions::whole_table_scan`) and
    /// `verify` read `bytes` at a time (`Storage::scan_readahead`; 0: one read per block).
    #[must_use]
    pub(crate) fn with_scan_readahead(mut self, bytes: usize) -> Self {
        self.scan_readahead = bytes;
        self
    }

    fn lookup(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
    ) -> Result<Option<LookupResult>> {
        Ok(self
            .lookup_pinned(user_key, seq, opts)?
            .map(|found| match found {
                PinnedLookup::Value(v) => LookupResult::Value(v.to_vec()),
                PinnedLookup::Deleted => LookupResult::Deleted,
            }))
    }
}

impl SstTable {
    /// As `lookup`, returning a value that borrows its data block.
    fn lookup_pinned(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
    ) -> Result<Option<PinnedLookup>> {
        if !self.reader.may_contain(user_key) {
            self.stats.bloom_negatives.add(0, 1);
            return Ok(None);
        }
        let lookup = make_internal_key(user_key, seq, ValueKind::SEEK);
        let Some((ikey, block, range)) = self
            .reader
            .get_unfiltered_pinned(&lookup, opts.fill_cache)?
        else {
            return Ok(None);
        };
        let p = parse_internal_key(&ikey)
            .ok_or_else(|| Error::corruption(0, format!("undecodable internal key {ikey:02x?}")))?;
        Ok(Some(match p.kind {
            ValueKind::Value => PinnedLookup::Value(
                PinnedValue::in_block(block, range)
                    .ok_or_else(|| Error::corruption(0, "a value outside its block"))?,
            ),
            ValueKind::Deletion => PinnedLookup::Deleted,
        }))
    }
}

impl Table for SstTable {
    fn may_contain(&self, user_key: &[u8]) -> bool {
        self.reader.may_contain(user_key)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn meta(&self) -> &TableMeta {
        &self.meta
    }

    fn get(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
    ) -> Result<Option<LookupResult>> {
        self.lookup(user_key, seq, opts)
            .map_err(|e| e.in_file(&self.path))
    }

    fn get_pinned(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
    ) -> Result<Option<PinnedLookup>> {
        self.lookup_pinned(user_key, seq, opts)
            .map_err(|e| e.in_file(&self.path))
    }

    /// `opts.verify_checksums` has no effect yet: blocks are verified when read from the
    /// file, and cached blocks are trusted.
    fn iter(&self, opts: &TableReadOptions) -> Box<dyn InternalIterator<Error>> {
        let readahead = if opts.whole_table_scan {
            self.scan_readahead
        } else {
            0
        };
        Box::new(InFileIter::new(
            self.reader.iter_with_readahead(opts.fill_cache, readahead),
            self.path.clone(),
        ))
    }

    fn verify(&self) -> Result<u64> {
        self.reader
            .verify_with_readahead(self.scan_readahead)
            .map_err(|e| e.in_file(&self.path).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filename;
    use crate::iter::{LevelIterator, testing};
    use crate::table::TableLocation;
    use crate::table::cache::TableCache;
    use mezz_env::FileSystem;
    use mezz_env::PosixFs;
    use mezz_format::block::BlockFormat;
    use mezz_format::ikey::{MAX_SEQ, compare_internal_keys};
    use mezz_format::sst::{TableBuilder, TableBuilderOptions};
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use std::collections::BTreeMap;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    /// A 4 KiB-ish block whose buffer starts with `tag`'s entries.
    fn block_of(tag: u8) -> Arc<Block> {
        let mut b = mezz_format::block::BlockBuilder::new(BlockFormat::KeySet, 4);
        for i in 0..32u8 {
            b.add(
                &make_internal_key(&[tag, i], 1, ValueKind::Value),
                &[tag; 100],
            );
        }
        Arc::new(Block::new(b.finish().to_vec(), BlockFormat::KeySet).unwrap())
    }

    #[test]
    fn evicted_blocks_give_their_buffers_to_the_inserting_thread() {
        let one = block_of(0).len_bytes();
        let cache = Arc::new(BlockCacheImpl::new(one * 4));
        let c = Arc::clone(&cache);
        std::thread::spawn(move || {
            assert_eq!(mezz_util::spare::held(), 0);
            // One block a reader still holds when it is evicted: its buffer stays with it.
            let held = block_of(200);
            c.insert(1, 0, Arc::clone(&held));
            for i in 1..40u8 {
                c.insert(1, u64::from(i) * 4096, block_of(i));
            }
            assert!(
                c.used_bytes() <= c.capacity(),
                "the cache stays within capacity"
            );
            assert_eq!(
                mezz_util::spare::held(),
                mezz_util::spare::MAX_SPARES,
                "evicted blocks nobody held became this thread's spare buffers"
            );
            // Block reads on this thread now take the spares instead of allocating; none
            // of them is the buffer of the block a reader still holds.
            let spares: Vec<Vec<u8>> = (0..mezz_util::spare::MAX_SPARES)
                .map(|_| mezz_util::spare::zeroed(one))
                .collect();
            assert_eq!(mezz_util::spare::held(), 0);
            for buf in &spares {
                assert!(buf.iter().all(|&b| b == 0));
                assert_ne!(buf.as_ptr(), held.contents().as_ptr());
            }
            assert_eq!(held.contents(), block_of(200).contents());
        })
        .join()
        .unwrap();
        // Another thread's pool is its own.
        assert_eq!(mezz_util::spare::held(), 0);
    }

    /// Writes `entries` (sorted internal keys) as table `id` in `dir`.
    fn write_table(
        fs: &dyn FileSystem,
        dir: &std::path::Path,
        id: u64,
        entries: &[(Vec<u8>, Vec<u8>)],
        format: BlockFormat,
    ) -> TableMeta {
        let file = fs.create(&filename::sst_file(dir, id)).unwrap();
        let opts = TableBuilderOptions {
            block_size: 512,
            block_format: format,
            ..TableBuilderOptions::default()
        };
        let mut b = TableBuilder::new(file, opts);
        for (k, v) in entries {
            b.add(k, v).unwrap();
        }
        let p = b.finish().unwrap();
        TableMeta {
            id,
            location: TableLocation::Sst { path_id: 0 },
            size: p.file_size,
            smallest: p.smallest_key,
            largest: p.largest_key,
            smallest_seq: p.smallest_seq,
            largest_seq: p.largest_seq,
            num_entries: p.num_entries,
            num_deletions: p.num_deletions,
            nvm_refs: Vec::new(),
            pinned: Default::default(),
            seeks: Default::default(),
        }
    }

    /// Keys `key00000..` with 1-3 versions each (some deletions); sorted.
    fn versioned_entries(rng: &mut StdRng, n_keys: usize, key_step: usize) -> Entries {
        let mut out = Vec::new();
        let mut seq = 1u64;
        for i in 0..n_keys {
            let uk = format!("key{:05}", i * key_step).into_bytes();
            for _ in 0..rng.random_range(1..=3) {
                let kind = if rng.random_bool(0.25) {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                let v = if kind == ValueKind::Value {
                    format!("value-{seq}-{}", "x".repeat(rng.random_range(0..40))).into_bytes()
                } else {
                    Vec::new()
                };
                out.push((make_internal_key(&uk, seq, kind), v));
                seq += rng.random_range(1..4);
            }
        }
        out.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        out
    }

    /// The expected lookup result for `user_key` at `seq`.
    fn model_get(
        entries: &[(Vec<u8>, Vec<u8>)],
        user_key: &[u8],
        seq: SeqNo,
    ) -> Option<LookupResult> {
        entries
            .iter()
            .filter_map(|(k, v)| {
                let p = parse_internal_key(k).unwrap();
                (p.user_key == user_key && p.seq <= seq).then_some((p.seq, p.kind, v))
            })
            .max_by_key(|e| e.0)
            .map(|(_, kind, v)| match kind {
                ValueKind::Value => LookupResult::Value(v.clone()),
                ValueKind::Deletion => LookupResult::Deleted,
            })
    }

    fn setup(
        max_open: usize,
        block_cache: usize,
    ) -> (
        tempfile::TempDir,
        Arc<dyn FileSystem>,
        Arc<StatsCollector>,
        TableCache,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs::new());
        let stats = Arc::new(StatsCollector::default());
        let storage = Arc::new(crate::storage::Storage::new(
            Arc::clone(&fs),
            dir.path().to_path_buf(),
            Vec::new(),
            None,
        ));
        let tc = TableCache::new(storage, max_open, block_cache, Arc::clone(&stats));
        (dir, fs, stats, tc)
    }

    /// Point reads pin tables to their metadata while pin slots are free (half of
    /// `max_open`), and the pinned table is the one `open` hands out too (never opened
    /// twice); a copy of the metadata starts unpinned and still compares equal; dropping
    /// the metadata gives the slot back.
    #[test]
    fn point_reads_pin_tables_up_to_half_of_max_open() {
        use std::borrow::Cow;
        let mut rng = StdRng::seed_from_u64(5);
        let (dir, fs, _stats, tc) = setup(4, 0);
        let entries = versioned_entries(&mut rng, 50, 1);
        let mut metas: Vec<Arc<TableMeta>> = (1..=3)
            .map(|id| {
                Arc::new(write_table(
                    fs.as_ref(),
                    dir.path(),
                    id,
                    &entries,
                    BlockFormat::KeySet,
                ))
            })
            .collect();
        let ro = TableReadOptions::default();
        let (uk, seq) = (b"key00000".as_slice(), MAX_SEQ);
        let want = model_get(&entries, uk, seq);
        {
            let a = tc.open_for_read(&metas[0]).unwrap();
            assert!(matches!(a, Cow::Borrowed(_)));
            assert_eq!(tc.pinned_tables(), 1);
            assert_eq!(format!("{:?}", metas[0].pinned), "pinned");
            let again = tc.open_for_read(&metas[0]).unwrap();
            assert!(Arc::ptr_eq(&a, &again));
            assert!(Arc::ptr_eq(&tc.open(&metas[0]).unwrap(), &a));
            assert_eq!(a.get(uk, seq, &ro).unwrap(), want);
            let b = tc.open_for_read(&metas[1]).unwrap();
            assert!(matches!(b, Cow::Borrowed(_)));
            // No slot left: the third table is handed out, not pinned.
            let c = tc.open_for_read(&metas[2]).unwrap();
            assert!(matches!(c, Cow::Owned(_)));
            assert_eq!(tc.pinned_tables(), 2);
            assert_eq!(c.get(uk, seq, &ro).unwrap(), want);
            let copy = (*metas[0]).clone();
            assert_eq!(copy, *metas[0]);
            assert_eq!(format!("{:?}", copy.pinned), "unpinned");
        }
        // The first table's metadata goes (no version names it any more): its slot is
        // free again, and the third table takes it.
        metas.remove(0);
        assert_eq!(tc.pinned_tables(), 1);
        let c = tc.open_for_read(&metas[1]).unwrap();
        assert!(matches!(c, Cow::Borrowed(_)));
        assert_eq!(tc.pinned_tables(), 2);
        assert_eq!(c.get(uk, seq, &ro).unwrap(), want);
    }

    #[test]
    fn get_and_iter_match_written_data() {
        for format in [BlockFormat::KeySet, BlockFormat::Prefix] {
            let mut rng = StdRng::seed_from_u64(11);
            let (dir, fs, stats, tc) = setup(100, 1 << 20);
            let entries = versioned_entries(&mut rng, 800, 2);
            let max_seq = entries
                .iter()
                .map(|(k, _)| parse_internal_key(k).unwrap().seq)
                .max()
                .unwrap();
            let meta = write_table(fs.as_ref(), dir.path(), 7, &entries, format);
            assert_eq!(meta.num_entries, entries.len() as u64);
            let t = tc.open(&meta).unwrap();
            assert_eq!(t.meta(), &meta);
            assert_eq!(t.verify().unwrap(), entries.len() as u64);
            let ro = TableReadOptions::default();

            // Point lookups: present keys at random snapshots, and absent keys (odd numbers
            // fall between the written even ones).
            for _ in 0..2000 {
                let i = rng.random_range(0..1600);
                let uk = format!("key{i:05}").into_bytes();
                let seq = rng.random_range(0..=max_seq + 1);
                assert_eq!(
                    t.get(&uk, seq, &ro).unwrap(),
                    model_get(&entries, &uk, seq),
                    "{format:?} key {i} seq {seq}"
                );
            }
            assert!(t.get(b"aaa", MAX_SEQ, &ro).unwrap().is_none());
            assert!(t.get(b"zzz", MAX_SEQ, &ro).unwrap().is_none());
            // Most absent keys are stopped by the bloom filter.
            assert!(
                stats.snapshot().bloom_negatives > 500,
                "{}",
                stats.snapshot().bloom_negatives
            );

            // Forward and reverse iteration return exactly the entries.
            let mut it = t.iter(&ro);
            it.seek_to_first();
            let mut got = Vec::new();
            while it.valid() {
                got.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            assert_eq!(got, entries);
            it.seek_to_last();
            got.clear();
            while it.valid() {
                got.push((it.key().to_vec(), it.value().to_vec()));
                it.prev();
            }
            got.reverse();
            assert_eq!(got, entries);
            it.status().unwrap();
            drop(it);
            assert!(stats.snapshot().decode_bytes > 0);
        }
    }

    #[test]
    fn block_cache_hits_are_counted() {
        let mut rng = StdRng::seed_from_u64(12);
        let (dir, fs, stats, tc) = setup(100, 1 << 20);
        let entries = versioned_entries(&mut rng, 300, 1);
        let meta = write_table(fs.as_ref(), dir.path(), 1, &entries, BlockFormat::KeySet);
        let t = tc.open(&meta).unwrap();
        let ro = TableReadOptions::default();
        let uk = b"key00100";
        t.get(uk, MAX_SEQ, &ro).unwrap().unwrap();
        assert_eq!(stats.snapshot().block_cache_hits, 0);
        assert_eq!(stats.snapshot().block_cache_misses, 1);
        t.get(uk, MAX_SEQ, &ro).unwrap().unwrap();
        assert_eq!(stats.snapshot().block_cache_hits, 1);
        assert_eq!(stats.snapshot().block_cache_misses, 1);
        let cache = tc.block_cache().unwrap();
        assert_eq!(cache.len(), 1);
        assert!(cache.used_bytes() > 0);

        // fill_cache = false reads the block but does not keep it.
        let no_fill = TableReadOptions {
            fill_cache: false,
            ..TableReadOptions::default()
        };
        t.get(b"key00250", MAX_SEQ, &no_fill).unwrap().unwrap();
        t.get(b"key00250", MAX_SEQ, &no_fill).unwrap().unwrap();
        assert_eq!(stats.snapshot().block_cache_misses, 3);
        assert_eq!(cache.len(), 1);

        // A full scan caches every data block; a second scan hits them all.
        let scan = |t: &Arc<dyn Table>| {
            let mut it = t.iter(&ro);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                n += 1;
                it.next();
            }
            n
        };
        assert_eq!(scan(&t), entries.len());
        let hits = stats.snapshot().block_cache_hits;
        let misses = stats.snapshot().block_cache_misses;
        assert_eq!(scan(&t), entries.len());
        let blocks = t_num_blocks(&t, &tc, &meta);
        assert_eq!(stats.snapshot().block_cache_hits - hits, blocks);
        assert_eq!(stats.snapshot().block_cache_misses, misses);
    }

    fn t_num_blocks(_t: &Arc<dyn Table>, tc: &TableCache, meta: &TableMeta) -> u64 {
        let (_, file) = tc.storage().open_sst(meta.id, 0).unwrap();
        let size = file.size();
        TableReader::open_with_counters(
            file,
            size,
            meta.id,
            None,
            Arc::default(),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap()
        .properties()
        .num_data_blocks
    }

    #[test]
    fn no_block_cache_when_capacity_is_zero() {
        let mut rng = StdRng::seed_from_u64(13);
        let (dir, fs, stats, tc) = setup(100, 0);
        assert!(tc.block_cache().is_none());
        let entries = versioned_entries(&mut rng, 100, 1);
        let meta = write_table(fs.as_ref(), dir.path(), 1, &entries, BlockFormat::KeySet);
        let t = tc.open(&meta).unwrap();
        for _ in 0..3 {
            t.get(b"key00050", MAX_SEQ, &TableReadOptions::default())
                .unwrap();
        }
        assert_eq!(stats.snapshot().block_cache_hits, 0);
        assert!(stats.snapshot().decode_bytes > 0);
    }

    #[test]
    fn block_cache_respects_capacity() {
        let c = BlockCacheImpl::new(64 * 1024);
        for i in 0..200u64 {
            let mut w = mezz_format::block::BlockBuilder::new(BlockFormat::KeySet, 16);
            w.add(
                &make_internal_key(&i.to_be_bytes(), 1, ValueKind::Value),
                &[0u8; 1000],
            );
            let b = Block::new(w.finish().to_vec(), BlockFormat::KeySet).unwrap();
            c.insert(1, i * 4096, Arc::new(b));
        }
        assert!(c.used_bytes() <= 64 * 1024, "{}", c.used_bytes());
        assert!(c.len() < 200);
        assert!(c.len() >= 10);
    }

    #[test]
    fn table_cache_evicts_and_reports_paths() {
        let mut rng = StdRng::seed_from_u64(14);
        let (dir, fs, _stats, tc) = setup(16, 1 << 20);
        let mut metas = Vec::new();
        for id in 1..=40u64 {
            let entries = versioned_entries(&mut rng, 10, 1);
            metas.push(write_table(
                fs.as_ref(),
                dir.path(),
                id,
                &entries,
                BlockFormat::KeySet,
            ));
        }
        for m in &metas {
            tc.open(m).unwrap();
        }
        assert!(tc.open_tables() <= 16, "{}", tc.open_tables());
        assert!(tc.open_tables() > 0);

        // A cached table survives the removal of its file; an evicted one does not.
        let m = &metas[39];
        let t = tc.open(m).unwrap();
        fs.remove_file(&filename::sst_file(dir.path(), m.id))
            .unwrap();
        let again = tc.open(m).unwrap();
        assert!(Arc::ptr_eq(&t, &again));
        assert!(
            again
                .get(b"key00005", MAX_SEQ, &TableReadOptions::default())
                .is_ok()
        );
        tc.evict(m.id, m.location);
        let err = tc.open(m).unwrap_err();
        match err {
            Error::Io { path, .. } => {
                assert_eq!(path.unwrap(), filename::sst_file(dir.path(), m.id));
            }
            e => panic!("unexpected {e:?}"),
        }
        // The table handed out earlier keeps working.
        assert!(
            t.get(b"key00005", MAX_SEQ, &TableReadOptions::default())
                .is_ok()
        );
    }

    #[test]
    fn corrupt_table_error_names_file() {
        let mut rng = StdRng::seed_from_u64(15);
        let (dir, fs, _stats, tc) = setup(100, 0);
        let entries = versioned_entries(&mut rng, 200, 1);
        let meta = write_table(fs.as_ref(), dir.path(), 3, &entries, BlockFormat::KeySet);
        let path = filename::sst_file(dir.path(), 3);
        let mut bytes = std::fs::read(&path).unwrap();

        // A damaged data block: open works, the lookup that reads it fails.
        bytes[10] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let t = tc.open(&meta).unwrap();
        let first_user_key = mezz_format::ikey::user_key(&entries[0].0).to_vec();
        match t.get(&first_user_key, MAX_SEQ, &TableReadOptions::default()) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file.unwrap(), path),
            r => panic!("unexpected {r:?}"),
        }
        let mut it = t.iter(&TableReadOptions::default());
        it.seek_to_first();
        match it.status() {
            Err(Error::Corruption { file, .. }) => assert_eq!(file.unwrap(), path),
            r => panic!("unexpected {r:?}"),
        }
        assert!(t.verify().unwrap_err().is_corruption());

        // A damaged footer: open fails.
        tc.evict(3, meta.location);
        let n = bytes.len();
        bytes[n - 1] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        match tc.open(&meta) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file.unwrap(), path),
            r => panic!("unexpected {r:?}"),
        }
    }

    /// Splits sorted entries into tables of random sizes (never splitting a user key).
    fn write_level(
        rng: &mut StdRng,
        fs: &dyn FileSystem,
        dir: &std::path::Path,
        entries: &[(Vec<u8>, Vec<u8>)],
    ) -> Vec<Arc<TableMeta>> {
        let mut metas = Vec::new();
        let mut start = 0;
        let mut id = 100;
        while start < entries.len() {
            let mut end = (start + rng.random_range(1..60)).min(entries.len());
            while end < entries.len()
                && mezz_format::ikey::user_key(&entries[end].0)
                    == mezz_format::ikey::user_key(&entries[end - 1].0)
            {
                end += 1;
            }
            let format = if rng.random_bool(0.5) {
                BlockFormat::KeySet
            } else {
                BlockFormat::Prefix
            };
            metas.push(Arc::new(write_table(
                fs,
                dir,
                id,
                &entries[start..end],
                format,
            )));
            id += 1;
            start = end;
        }
        metas
    }

    #[test]
    fn level_iterator_concatenates_tables() {
        let mut rng = StdRng::seed_from_u64(16);
        let (dir, fs, _stats, tc) = setup(20, 1 << 20);
        let tc = Arc::new(tc);
        let entries = versioned_entries(&mut rng, 400, 3);
        let metas = write_level(&mut rng, fs.as_ref(), dir.path(), &entries);
        assert!(metas.len() > 5);
        let mut it =
            LevelIterator::new(metas.clone(), Arc::clone(&tc), TableReadOptions::default());
        assert!(!it.valid());
        testing::assert_scans(&mut it, &entries);
        // Random seeks (inside tables, between them, before and after all) and mixed steps.
        testing::assert_random_walk(&mut it, &entries, &mut rng, 3000, |rng| {
            (
                format!("key{:05}", rng.random_range(0..1250)).into_bytes(),
                rng.random_range(0..2000),
            )
        });
        assert!(tc.open_tables() <= 20);
    }

    #[test]
    fn level_iterator_stops_at_and_reports_missing_table() {
        let mut rng = StdRng::seed_from_u64(17);
        let (dir, fs, _stats, tc) = setup(100, 0);
        let entries = versioned_entries(&mut rng, 200, 1);
        let metas = write_level(&mut rng, fs.as_ref(), dir.path(), &entries);
        assert!(metas.len() >= 3);
        let gone = &metas[1];
        let gone_path = filename::sst_file(dir.path(), gone.id);
        fs.remove_file(&gone_path).unwrap();
        let mut it = LevelIterator::new(metas.clone(), Arc::new(tc), TableReadOptions::default());
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            n += 1;
            it.next();
        }
        // Fail-stop: the entries of the first table, then nothing past the missing one.
        assert_eq!(n, metas[0].num_entries);
        match it.status() {
            Err(Error::Io { path, .. }) => assert_eq!(path.unwrap(), gone_path),
            r => panic!("unexpected {r:?}"),
        }
    }

    #[test]
    fn db_iterator_over_memtable_and_tables() {
        // End to end over every source kind: memtable, an L0 table, and a level.
        use crate::iter::{DbIterator, merging_iterator};
        use crate::memtable::MemTable;
        let mut rng = StdRng::seed_from_u64(18);
        let (dir, fs, _stats, tc) = setup(100, 1 << 20);
        let tc = Arc::new(tc);
        let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        let mut seq = 0u64;
        let mut gen_run = |n: usize, model: &mut BTreeMap<Vec<u8>, Option<Vec<u8>>>| {
            let mut run = Vec::new();
            for _ in 0..n {
                seq += 1;
                let uk = format!("k{:04}", rng.random_range(0..500)).into_bytes();
                if rng.random_bool(0.2) {
                    run.push((make_internal_key(&uk, seq, ValueKind::Deletion), Vec::new()));
                    model.insert(uk, None);
                } else {
                    let v = format!("v{seq}").into_bytes();
                    run.push((make_internal_key(&uk, seq, ValueKind::Value), v.clone()));
                    model.insert(uk, Some(v));
                }
            }
            run.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            run
        };
        let oldest = gen_run(1500, &mut model);
        let level = write_level(
            &mut StdRng::seed_from_u64(1),
            fs.as_ref(),
            dir.path(),
            &oldest,
        );
        let l0_entries = gen_run(500, &mut model);
        let l0 = write_table(fs.as_ref(), dir.path(), 9, &l0_entries, BlockFormat::Prefix);
        let mem = Arc::new(MemTable::new(1, 64 << 20, mezz_format::KeyOrder::default()));
        for (k, v) in gen_run(300, &mut model) {
            let p = parse_internal_key(&k).unwrap();
            mem.add(p.seq, p.kind, p.user_key, &v).unwrap();
        }
        let ro = TableReadOptions::default();
        let children: Vec<Box<dyn InternalIterator<Error>>> = vec![
            mem.iter(),
            tc.open(&l0).unwrap().iter(&ro),
            Box::new(LevelIterator::new(level, Arc::clone(&tc), ro)),
        ];
        let mut it = DbIterator::new(
            merging_iterator(children, &mezz_format::KeyOrder::default()),
            MAX_SEQ,
            None,
            None,
            Box::new(Arc::clone(&mem)),
            mezz_format::KeyOrder::default(),
        );
        let expect: Vec<(Vec<u8>, Vec<u8>)> = model
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        assert_eq!(got, expect);
        it.seek_to_last();
        got.clear();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        got.reverse();
        assert_eq!(got, expect);

        // Seeks and direction changes across every source.
        let mut pos: Option<usize> = None;
        for _ in 0..3000 {
            let k = format!("k{:04}", rng.random_range(0..520)).into_bytes();
            match rng.random_range(0..8) {
                0 | 1 => {
                    it.seek(&k);
                    let i = expect.partition_point(|e| e.0 < k);
                    pos = (i < expect.len()).then_some(i);
                }
                2 | 3 => {
                    it.seek_for_prev(&k);
                    pos = expect.partition_point(|e| e.0 <= k).checked_sub(1);
                }
                4 | 5 => {
                    if let Some(p) = pos {
                        it.next();
                        pos = (p + 1 < expect.len()).then_some(p + 1);
                    }
                }
                _ => {
                    if let Some(p) = pos {
                        it.prev();
                        pos = p.checked_sub(1);
                    }
                }
            }
            assert_eq!(it.valid(), pos.is_some());
            if let Some(p) = pos {
                assert_eq!((it.key(), it.value()), (&expect[p].0[..], &expect[p].1[..]));
            }
        }
        it.status().unwrap();
    }
}
