//! Versions: which tables make up the database at one moment, the edits between them, and
//! the MANIFEST that records those edits durably.
//!
//! Owns: [`VersionEdit`] and its encoding (spec: `docs/formats/manifest.md`), the immutable
//! [`Version`] (tables per level), [`SuperVersion`] (memtables + version, what a reader
//! pins), and the manifest file helpers ([`Manifest`], [`recover_manifest`],
//! [`write_new_manifest`], [`set_current`]).
//!
//! Invariants of a `Version`:
//! - L0 is sorted newest first (by `largest_seq`, then id, descending); its tables may
//!   overlap.
//! - Every level >= 1 is sorted by smallest internal key and its tables do not overlap in
//!   user keys (one user key's versions never span two tables of a level).
//! - A `Version` is never mutated after construction; `Version::apply` builds a new one that
//!   shares the unchanged `Arc<TableMeta>`s. A table file may be deleted only once no live
//!   `Version` holds its `Arc<TableMeta>` (the engine watches the `Arc`'s strong count).
//!
//! Thread-safety: `Version`, `VersionEdit` and `SuperVersion` are immutable and shared
//! through `Arc`. `Manifest` is owned by one writer at a time (the engine serialises version
//! changes with a lock).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::FileSystem;
use mezz_format::SeqNo;
use mezz_format::coding::{Decoder, put_length_prefixed, put_varint32, put_varint64};
use mezz_format::ikey::compare_internal_keys;
use mezz_format::log::{LogRead, LogReader, LogWriter};

use crate::error::{Error, Result};
use crate::filename;
use crate::memtable::MemTable;
use crate::options::RecoveryMode;
use crate::table::{TableLocation, TableMeta, Tier};

/// The manifest format version this build writes and the newest it reads.
pub const MANIFEST_FORMAT_VERSION: u32 = 2;

/// The name of the key ordering, recorded in the manifest and checked on open.
pub const COMPARATOR_NAME: &str = "mezz.bytewise";

// Record tags. New object kinds (NVM tables, NVM segments, matrix rows) get new tags; an
// unknown tag is a corruption error, so an old build never silently ignores them (a newer
// format version announces them first).
const TAG_COMPARATOR: u32 = 1;
const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE_NUMBER: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_COMPACT_POINTER: u32 = 5;
const TAG_DELETED_TABLE: u32 = 6;
const TAG_NEW_TABLE: u32 = 7;
const TAG_FORMAT_VERSION: u32 = 8;
const TAG_DB_ID: u32 = 9;
const TAG_NEW_NVM_OBJECT: u32 = 10;
const TAG_DELETED_NVM_OBJECT: u32 = 11;

/// What an NVM object (an extent of the NVM pool) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvmObjectKind {
    /// A WAL kept in NVM (`wal_on_nvm`); the object's id is the WAL number.
    Wal,
    /// A persistent skip-list memtable (NoveLSM); the id is the memtable's number.
    Memtable,
}

impl NvmObjectKind {
    fn code(self) -> u8 {
        match self {
            NvmObjectKind::Wal => 1,
            NvmObjectKind::Memtable => 2,
        }
    }
    fn from_code(c: u8) -> Option<Self> {
        match c {
            1 => Some(NvmObjectKind::Wal),
            2 => Some(NvmObjectKind::Memtable),
            _ => None,
        }
    }
}

/// One live object of the NVM pool, as the manifest records it. Whatever the recovered
/// version does not list is free space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NvmObject {
    /// WAL number or memtable number (file-number space: unique per database).
    pub id: u64,
    /// What it holds.
    pub kind: NvmObjectKind,
    /// Offset of its extent in the pool.
    pub offset: u64,
    /// Length of its extent in bytes.
    pub len: u64,
}

const TIER_SSD: u8 = 0;
const LOCATION_SST: u8 = 0;

/// A change from one version to the next, as recorded in the MANIFEST.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// Manifest format version (written in the first edit of each manifest).
    pub format_version: Option<u32>,
    /// Key ordering name (written in the first edit of each manifest).
    pub comparator: Option<String>,
    /// WALs with a number below this are no longer needed for recovery.
    pub log_number: Option<u64>,
    /// The next unused file number.
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<SeqNo>,
    /// Per level: the largest internal key of the last compaction's input (round robin).
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Tables removed: (level, table id).
    pub deleted_tables: Vec<(usize, u64)>,
    /// Tables added: (level, metadata).
    pub new_tables: Vec<(usize, TableMeta)>,
    /// The database's identity (first edit of each manifest; also stamped into the NVM
    /// pool, so a pool is never opened with another database's manifest).
    pub db_id: Option<[u8; 16]>,
    /// NVM objects allocated.
    pub new_nvm_objects: Vec<NvmObject>,
    /// NVM objects released (their space is free once this edit is durable).
    pub deleted_nvm_objects: Vec<u64>,
}

fn put_usize(buf: &mut Vec<u8>, v: usize) {
    put_varint64(buf, v as u64);
}

fn encode_table(buf: &mut Vec<u8>, t: &TableMeta) {
    put_varint64(buf, t.id);
    buf.push(match t.tier {
        Tier::Ssd | Tier::Nvm => TIER_SSD,
    });
    match &t.location {
        TableLocation::Sst { path_id } => {
            buf.push(LOCATION_SST);
            put_varint32(buf, *path_id);
        }
    }
    put_varint64(buf, t.size);
    put_length_prefixed(buf, &t.smallest);
    put_length_prefixed(buf, &t.largest);
    put_varint64(buf, t.smallest_seq);
    put_varint64(buf, t.largest_seq);
    put_varint64(buf, t.num_entries);
    put_varint64(buf, t.num_deletions);
}

fn decode_level(d: &mut Decoder<'_>) -> Result<usize> {
    let off = d.offset();
    let l = d.varint32()?;
    if l >= 64 {
        return Err(Error::corruption(off, format!("level {l} out of range")));
    }
    Ok(l as usize)
}

fn decode_table(d: &mut Decoder<'_>) -> Result<TableMeta> {
    let id = d.varint64()?;
    let off = d.offset();
    let tier = match d.u8()? {
        TIER_SSD => Tier::Ssd,
        t => return Err(Error::corruption(off, format!("unknown table tier {t}"))),
    };
    let off = d.offset();
    let location = match d.u8()? {
        LOCATION_SST => TableLocation::Sst {
            path_id: d.varint32()?,
        },
        l => {
            return Err(Error::corruption(
                off,
                format!("unknown table location {l}"),
            ));
        }
    };
    let size = d.varint64()?;
    let smallest = d.length_prefixed()?.to_vec();
    let largest = d.length_prefixed()?.to_vec();
    Ok(TableMeta {
        id,
        tier,
        location,
        size,
        smallest,
        largest,
        smallest_seq: d.varint64()?,
        largest_seq: d.varint64()?,
        num_entries: d.varint64()?,
        num_deletions: d.varint64()?,
    })
}

impl VersionEdit {
    /// Appends the encoding of this edit to `buf`.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        if let Some(v) = self.format_version {
            put_varint32(buf, TAG_FORMAT_VERSION);
            put_varint32(buf, v);
        }
        if let Some(c) = &self.comparator {
            put_varint32(buf, TAG_COMPARATOR);
            put_length_prefixed(buf, c.as_bytes());
        }
        if let Some(n) = self.log_number {
            put_varint32(buf, TAG_LOG_NUMBER);
            put_varint64(buf, n);
        }
        if let Some(n) = self.next_file_number {
            put_varint32(buf, TAG_NEXT_FILE_NUMBER);
            put_varint64(buf, n);
        }
        if let Some(n) = self.last_sequence {
            put_varint32(buf, TAG_LAST_SEQUENCE);
            put_varint64(buf, n);
        }
        for (level, key) in &self.compact_pointers {
            put_varint32(buf, TAG_COMPACT_POINTER);
            put_usize(buf, *level);
            put_length_prefixed(buf, key);
        }
        for (level, id) in &self.deleted_tables {
            put_varint32(buf, TAG_DELETED_TABLE);
            put_usize(buf, *level);
            put_varint64(buf, *id);
        }
        if let Some(id) = &self.db_id {
            put_varint32(buf, TAG_DB_ID);
            put_length_prefixed(buf, id);
        }
        for o in &self.new_nvm_objects {
            put_varint32(buf, TAG_NEW_NVM_OBJECT);
            put_varint64(buf, o.id);
            buf.push(o.kind.code());
            put_varint64(buf, o.offset);
            put_varint64(buf, o.len);
        }
        for id in &self.deleted_nvm_objects {
            put_varint32(buf, TAG_DELETED_NVM_OBJECT);
            put_varint64(buf, *id);
        }
        for (level, t) in &self.new_tables {
            put_varint32(buf, TAG_NEW_TABLE);
            put_usize(buf, *level);
            let mut body = Vec::with_capacity(64 + t.smallest.len() + t.largest.len());
            encode_table(&mut body, t);
            put_length_prefixed(buf, &body);
        }
    }

    /// Decodes an edit; `base_offset` is the record's offset in the manifest (for errors).
    ///
    /// # Errors
    /// `Corruption` naming the offset for truncated fields, unknown tags or unknown table
    /// kinds; `UnsupportedVersion` for a newer manifest format.
    pub fn decode(data: &[u8], base_offset: u64) -> Result<Self> {
        let mut e = VersionEdit::default();
        let mut d = Decoder::new(data, base_offset);
        while d.remaining() > 0 {
            let tag_off = d.offset();
            match d.varint32()? {
                TAG_FORMAT_VERSION => {
                    let v = d.varint32()?;
                    if v > MANIFEST_FORMAT_VERSION || v == 0 {
                        return Err(Error::UnsupportedVersion {
                            what: "manifest",
                            found: v,
                            supported: MANIFEST_FORMAT_VERSION,
                        });
                    }
                    e.format_version = Some(v);
                }
                TAG_COMPARATOR => {
                    let off = d.offset();
                    let c = d.length_prefixed()?;
                    let c = std::str::from_utf8(c)
                        .map_err(|_| Error::corruption(off, "comparator name is not UTF-8"))?;
                    e.comparator = Some(c.to_string());
                }
                TAG_LOG_NUMBER => e.log_number = Some(d.varint64()?),
                TAG_NEXT_FILE_NUMBER => e.next_file_number = Some(d.varint64()?),
                TAG_LAST_SEQUENCE => e.last_sequence = Some(d.varint64()?),
                TAG_COMPACT_POINTER => {
                    let level = decode_level(&mut d)?;
                    e.compact_pointers
                        .push((level, d.length_prefixed()?.to_vec()));
                }
                TAG_DB_ID => {
                    let off = d.offset();
                    let id = d.length_prefixed()?;
                    e.db_id = Some(id.try_into().map_err(|_| {
                        Error::corruption(off, format!("db id of {} bytes, not 16", id.len()))
                    })?);
                }
                TAG_NEW_NVM_OBJECT => {
                    let id = d.varint64()?;
                    let off = d.offset();
                    let kind = NvmObjectKind::from_code(d.u8()?)
                        .ok_or_else(|| Error::corruption(off, "unknown NVM object kind"))?;
                    let offset = d.varint64()?;
                    let len = d.varint64()?;
                    e.new_nvm_objects.push(NvmObject {
                        id,
                        kind,
                        offset,
                        len,
                    });
                }
                TAG_DELETED_NVM_OBJECT => e.deleted_nvm_objects.push(d.varint64()?),
                TAG_DELETED_TABLE => {
                    let level = decode_level(&mut d)?;
                    e.deleted_tables.push((level, d.varint64()?));
                }
                TAG_NEW_TABLE => {
                    let level = decode_level(&mut d)?;
                    let body_off = d.offset();
                    let body = d.length_prefixed()?;
                    // The body's own length prefix is at most 10 bytes before the body.
                    let body_base = body_off + (d.offset() - body_off - body.len() as u64);
                    let mut bd = Decoder::new(body, body_base);
                    let t = decode_table(&mut bd)?;
                    if bd.remaining() > 0 {
                        return Err(Error::corruption(
                            bd.offset(),
                            "trailing bytes in new-table record",
                        ));
                    }
                    e.new_tables.push((level, t));
                }
                tag => {
                    return Err(Error::corruption(
                        tag_off,
                        format!("unknown manifest record tag {tag}"),
                    ));
                }
            }
        }
        Ok(e)
    }
}

/// The tables of the database at one moment. Immutable; see the module invariants.
#[derive(Debug, Clone)]
pub struct Version {
    /// Tables per level (index 0 = L0).
    pub levels: Vec<Vec<Arc<TableMeta>>>,
    /// Per level: where the next round-robin compaction starts (an internal key; empty =
    /// from the beginning).
    pub compact_pointers: Vec<Vec<u8>>,
    /// Live NVM objects, by id (ascending = creation order).
    pub nvm_objects: std::collections::BTreeMap<u64, NvmObject>,
    /// The database's identity, once recorded.
    pub db_id: Option<[u8; 16]>,
}

fn l0_order(a: &Arc<TableMeta>, b: &Arc<TableMeta>) -> Ordering {
    b.largest_seq.cmp(&a.largest_seq).then(b.id.cmp(&a.id))
}

impl Version {
    /// An empty version with `num_levels` levels.
    #[must_use]
    pub fn new(num_levels: usize) -> Self {
        Self {
            levels: vec![Vec::new(); num_levels],
            compact_pointers: vec![Vec::new(); num_levels],
            nvm_objects: std::collections::BTreeMap::new(),
            db_id: None,
        }
    }

    /// Number of levels.
    #[must_use]
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Tables at `level` (empty for a level out of range).
    #[must_use]
    pub fn tables(&self, level: usize) -> &[Arc<TableMeta>] {
        self.levels.get(level).map_or(&[], Vec::as_slice)
    }

    /// Number of tables at `level`.
    #[must_use]
    pub fn num_files(&self, level: usize) -> usize {
        self.tables(level).len()
    }

    /// Bytes of the tables at `level`.
    #[must_use]
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.tables(level).iter().map(|t| t.size).sum()
    }

    /// Every table, with its level.
    pub fn all_tables(&self) -> impl Iterator<Item = (usize, &Arc<TableMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, ts)| ts.iter().map(move |t| (l, t)))
    }

    /// The deepest level holding a table, if any.
    #[must_use]
    pub fn deepest_nonempty_level(&self) -> Option<usize> {
        self.levels.iter().rposition(|l| !l.is_empty())
    }

    /// Tables of `level` whose user-key range intersects `[begin, end]` (`None` =
    /// unbounded).
    #[must_use]
    pub fn overlapping(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<TableMeta>> {
        self.tables(level)
            .iter()
            .filter(|t| {
                begin.is_none_or(|b| t.largest_user_key() >= b)
                    && end.is_none_or(|e| t.smallest_user_key() <= e)
            })
            .cloned()
            .collect()
    }

    /// For a level >= 1: the one table whose range may hold `user_key`.
    #[must_use]
    pub fn find_table(&self, level: usize, user_key: &[u8]) -> Option<&Arc<TableMeta>> {
        let ts = self.tables(level);
        let i = ts.partition_point(|t| t.largest_user_key() < user_key);
        ts.get(i).filter(|t| t.smallest_user_key() <= user_key)
    }

    /// A new version with `edit` applied (compact pointers, deletions, then additions).
    ///
    /// # Errors
    /// `Corruption` if the edit names a level out of range, deletes a table that is not
    /// there or adds one twice.
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version> {
        let mut v = self.clone();
        let n = v.levels.len();
        let bad = |m: String| Error::corruption(0, m);
        for (level, key) in &edit.compact_pointers {
            let p = v
                .compact_pointers
                .get_mut(*level)
                .ok_or_else(|| bad(format!("compact pointer for level {level} >= {n}")))?;
            p.clone_from(key);
        }
        for (level, id) in &edit.deleted_tables {
            let l = v
                .levels
                .get_mut(*level)
                .ok_or_else(|| bad(format!("deleted table {id} at level {level} >= {n}")))?;
            let before = l.len();
            l.retain(|t| t.id != *id);
            if l.len() == before {
                return Err(bad(format!("deleted table {id} is not at level {level}")));
            }
        }
        for (level, meta) in &edit.new_tables {
            let l = v
                .levels
                .get_mut(*level)
                .ok_or_else(|| bad(format!("new table {} at level {level} >= {n}", meta.id)))?;
            if l.iter().any(|t| t.id == meta.id) {
                return Err(bad(format!(
                    "table {} added twice at level {level}",
                    meta.id
                )));
            }
            l.push(Arc::new(meta.clone()));
        }
        if let Some(id) = edit.db_id {
            v.db_id = Some(id);
        }
        for id in &edit.deleted_nvm_objects {
            if v.nvm_objects.remove(id).is_none() {
                return Err(bad(format!("deleted NVM object {id} does not exist")));
            }
        }
        for o in &edit.new_nvm_objects {
            let end = o.offset.checked_add(o.len);
            let overlaps = v
                .nvm_objects
                .values()
                .any(|x| end.is_none_or(|e| x.offset < e && o.offset < x.offset + x.len));
            if overlaps || v.nvm_objects.contains_key(&o.id) {
                return Err(bad(format!(
                    "NVM object {} at {}+{} overlaps a live one or is added twice",
                    o.id, o.offset, o.len
                )));
            }
            v.nvm_objects.insert(o.id, *o);
        }
        v.sort_levels();
        Ok(v)
    }

    /// Like [`Version::apply`] but reuses the caller's `Arc`s for moved tables (a trivial
    /// move keeps the same `Arc<TableMeta>`, so the file is never seen as obsolete).
    ///
    /// # Errors
    /// As [`Version::apply`].
    pub fn apply_with(&self, edit: &VersionEdit, moved: &[Arc<TableMeta>]) -> Result<Version> {
        let mut v = self.apply(edit)?;
        for level in &mut v.levels {
            for t in level.iter_mut() {
                if let Some(m) = moved.iter().find(|m| m.id == t.id) {
                    *t = Arc::clone(m);
                }
            }
        }
        Ok(v)
    }

    fn sort_levels(&mut self) {
        for (i, l) in self.levels.iter_mut().enumerate() {
            if i == 0 {
                l.sort_by(l0_order);
            } else {
                l.sort_by(|a, b| compare_internal_keys(&a.smallest, &b.smallest));
            }
        }
    }

    /// Checks the ordering invariants of levels >= 1.
    ///
    /// # Errors
    /// `Corruption` naming the two overlapping tables.
    pub fn check_invariants(&self) -> Result<()> {
        for (level, ts) in self.levels.iter().enumerate().skip(1) {
            for w in ts.windows(2) {
                if let [a, b] = w
                    && a.largest_user_key() >= b.smallest_user_key()
                {
                    return Err(Error::corruption(
                        0,
                        format!(
                            "level {level}: tables {} and {} overlap or are out of order",
                            a.id, b.id
                        ),
                    ));
                }
            }
        }
        for (level, t) in self.all_tables() {
            if compare_internal_keys(&t.smallest, &t.largest) == Ordering::Greater {
                return Err(Error::corruption(
                    0,
                    format!("level {level}: table {} has smallest > largest", t.id),
                ));
            }
        }
        Ok(())
    }

    /// An edit that recreates this version from nothing (the first record of a new
    /// manifest).
    #[must_use]
    pub fn snapshot_edit(&self) -> VersionEdit {
        VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            comparator: Some(COMPARATOR_NAME.to_string()),
            compact_pointers: self
                .compact_pointers
                .iter()
                .enumerate()
                .filter(|(_, k)| !k.is_empty())
                .map(|(l, k)| (l, k.clone()))
                .collect(),
            new_tables: self
                .all_tables()
                .map(|(l, t)| (l, TableMeta::clone(t)))
                .collect(),
            db_id: self.db_id,
            new_nvm_objects: self.nvm_objects.values().copied().collect(),
            ..VersionEdit::default()
        }
    }
}

/// What a reader pins: the memtables and the version, consistent with each other.
#[derive(Debug)]
pub struct SuperVersion {
    /// The active memtable.
    pub mem: Arc<MemTable>,
    /// Immutable memtables waiting for a flush, newest first.
    pub imms: Vec<Arc<MemTable>>,
    /// NVM memtables below the DRAM ones (`nvm_memtable = immutable`): the receiver, then
    /// the full ones waiting for their flush, newest first.
    pub nvm: Vec<Arc<MemTable>>,
    /// The tables.
    pub version: Arc<Version>,
}

/// One container in the read order, for [`SuperVersion::check_read_order`].
#[derive(Debug, Clone, Copy)]
enum ReadRun {
    Memtable { id: u64, nvm: bool },
    L0 { id: u64 },
}

impl std::fmt::Display for ReadRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadRun::Memtable { id, nvm: true } => write!(f, "NVM memtable {id}"),
            ReadRun::Memtable { id, nvm: false } => write!(f, "memtable {id}"),
            ReadRun::L0 { id } => write!(f, "L0 table {id}"),
        }
    }
}

impl SuperVersion {
    /// The containers a point read consults, in the order it consults them: the active
    /// memtable, the immutable ones, the NVM ones, then the L0 tables; each with its
    /// (smallest, largest) sequence number. Empty memtables are left out.
    fn read_order(&self) -> impl Iterator<Item = (ReadRun, SeqNo, SeqNo)> + '_ {
        let mems = std::iter::once(&self.mem)
            .chain(self.imms.iter())
            .chain(self.nvm.iter())
            .filter(|m| !m.is_empty())
            .map(|m| {
                let run = ReadRun::Memtable {
                    id: m.id(),
                    nvm: m.is_nvm(),
                };
                (run, m.min_seq(), m.max_seq())
            });
        let l0 = self
            .version
            .tables(0)
            .iter()
            .map(|t| (ReadRun::L0 { id: t.id }, t.smallest_seq, t.largest_seq));
        mems.chain(l0)
    }

    /// Checks the rule point reads and iterators rely on: the memtables and L0 tables, in
    /// the order reads consult them, hold strictly older data one after the other (every
    /// sequence number of a later container is below every one of an earlier container),
    /// so the first container holding a key holds its newest version. A violation is
    /// described (the engine refuses further writes rather than serve stale values).
    /// Allocates nothing unless it finds a violation (it runs at every install).
    ///
    /// # Errors
    /// A description of the first pair out of order.
    pub fn check_read_order(&self) -> std::result::Result<(), String> {
        let mut newer: Option<(ReadRun, SeqNo)> = None;
        for (run, lo, hi) in self.read_order() {
            if let Some((prev, prev_lo)) = newer
                && hi >= prev_lo
            {
                return Err(format!(
                    "read order violated: {run} (sequence numbers up to {hi}) is consulted \
                     after {prev} (from {prev_lo})"
                ));
            }
            newer = Some((run, lo));
        }
        Ok(())
    }
}

/// An open manifest being appended to.
#[derive(Debug)]
pub struct Manifest {
    writer: LogWriter,
    number: u64,
    path: PathBuf,
}

impl Manifest {
    /// The manifest's file number.
    #[must_use]
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written to this manifest.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.writer.size()
    }

    /// Appends one edit and syncs it.
    ///
    /// # Errors
    /// I/O errors (with the manifest's path).
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        let mut buf = Vec::with_capacity(256);
        edit.encode(&mut buf);
        self.writer
            .add_record(&buf)
            .and_then(|()| self.writer.sync())
            .map_err(|e| e.in_file(&self.path))
    }
}

/// What replaying a manifest produced.
#[derive(Debug)]
pub struct RecoveredManifest {
    /// The version.
    pub version: Version,
    /// WALs below this number are obsolete.
    pub log_number: u64,
    /// The next unused file number recorded.
    pub next_file_number: u64,
    /// The last sequence number recorded.
    pub last_sequence: SeqNo,
    /// The manifest's own file number.
    pub manifest_number: u64,
}

/// Reads `CURRENT` and replays the manifest it names into a version of `num_levels` levels.
///
/// A torn last record (what a crash during a manifest append leaves: an edit that was never
/// acknowledged — zeros, or a record cut short) is ignored unless `mode` is
/// `AbsoluteConsistency`; a complete last record with a bad checksum is a `Corruption`.
///
/// # Errors
/// `InvalidArgument` if the database has tables at level `num_levels` or deeper (it was
/// open with more levels); `Corruption` (with file and offset) for a bad CURRENT, a damaged
/// manifest, a comparator mismatch or an edit that does not apply; `Io` errors.
pub fn recover_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    num_levels: usize,
    mode: RecoveryMode,
) -> Result<RecoveredManifest> {
    let cur_path = filename::current_file(dir);
    let cur = fs
        .read_all(&cur_path)
        .map_err(|e| Error::from(e).in_file(&cur_path))?;
    let name = std::str::from_utf8(&cur)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .ok_or_else(|| Error::corruption(0, "CURRENT is not a file name ending in a newline"))
        .map_err(|e| e.in_file(&cur_path))?;
    let manifest_number = match filename::parse_file_name(name) {
        Some((filename::FileType::Manifest, n)) => n,
        _ => {
            return Err(
                Error::corruption(0, format!("CURRENT names {name:?}, not a manifest"))
                    .in_file(&cur_path),
            );
        }
    };
    let path = filename::manifest_file(dir, manifest_number);
    let file = fs
        .open_read(&path)
        .map_err(|e| Error::from(e).in_file(&path))?;
    let mut reader = LogReader::new(file);
    // Replayed with as many levels as any options allow, so that a database last open with
    // more levels than `num_levels` is refused below with a clear message instead of a
    // failing edit.
    let mut version = Version::new(num_levels.max(crate::options::MAX_NUM_LEVELS));
    let mut log_number = None;
    let mut next_file_number = None;
    let mut last_sequence = None;
    let mut first = true;
    loop {
        match reader.read_record() {
            LogRead::Eof => break,
            LogRead::Corrupt {
                offset,
                detail,
                at_tail,
            } => {
                if at_tail
                    && mode == RecoveryMode::TolerateCorruptTail
                    && is_torn_append(fs, &path, offset)
                {
                    break;
                }
                return Err(Error::corruption(offset, detail).in_file(&path));
            }
            LogRead::Record { data, offset } => {
                let edit = VersionEdit::decode(&data, offset).map_err(|e| e.in_file(&path))?;
                if first && edit.format_version.is_none() {
                    return Err(Error::corruption(
                        offset,
                        "first manifest record has no format version",
                    )
                    .in_file(&path));
                }
                first = false;
                if let Some(c) = &edit.comparator
                    && c != COMPARATOR_NAME
                {
                    return Err(Error::corruption(
                        offset,
                        format!("comparator {c:?} does not match {COMPARATOR_NAME:?}"),
                    )
                    .in_file(&path));
                }
                version = version.apply(&edit).map_err(|e| match e {
                    Error::Corruption { detail, .. } => Error::Corruption {
                        file: Some(path.clone()),
                        offset,
                        detail,
                    },
                    other => other,
                })?;
                log_number = edit.log_number.or(log_number);
                next_file_number = edit.next_file_number.or(next_file_number);
                last_sequence = edit.last_sequence.or(last_sequence);
            }
        }
    }
    if let Some(deepest) = version.deepest_nonempty_level()
        && deepest >= num_levels
    {
        return Err(Error::InvalidArgument(format!(
            "num_levels {num_levels} is too few for the database at {}: it has tables down to \
             level {deepest}; open it with num_levels >= {}",
            dir.display(),
            deepest + 1
        )));
    }
    version.levels.truncate(num_levels);
    version.compact_pointers.truncate(num_levels);
    let missing =
        |what: &str| Error::corruption(0, format!("manifest has no {what}")).in_file(&path);
    Ok(RecoveredManifest {
        version,
        log_number: log_number.ok_or_else(|| missing("log number"))?,
        next_file_number: next_file_number.ok_or_else(|| missing("next file number"))?,
        last_sequence: last_sequence.ok_or_else(|| missing("last sequence"))?,
        manifest_number,
    })
}

/// Whether the damage at `offset` is what an interrupted append leaves: the bytes from
/// there to the end are zeros, or a record whose fragments all verify but whose end is
/// missing. A complete fragment with a bad checksum is not a torn append: every manifest
/// edit is synced before the engine acts on it, so dropping a complete edit could resurrect
/// deleted data or lose flushed writes.
fn is_torn_append(fs: &dyn FileSystem, path: &Path, offset: u64) -> bool {
    use mezz_format::checksum::{crc32c, unmask};
    use mezz_format::log::{FIRST, LOG_BLOCK_SIZE, LOG_HEADER_LEN, MIDDLE};
    let Ok(bytes) = fs.read_all(path) else {
        return false;
    };
    let Some(rest) = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)) else {
        return false;
    };
    if rest.iter().all(|&b| b == 0) {
        return true;
    }
    let mut pos = offset as usize;
    loop {
        let left_in_block = LOG_BLOCK_SIZE - pos % LOG_BLOCK_SIZE;
        if left_in_block < LOG_HEADER_LEN {
            pos += left_in_block;
        }
        let Some(header) = bytes.get(pos..pos + LOG_HEADER_LEN) else {
            // The file ends inside a header (or exactly here, mid-record).
            return true;
        };
        let (Some(crc), Some(len), Some(&kind)) = (
            header
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes),
            header
                .get(4..6)
                .and_then(|b| b.try_into().ok())
                .map(u16::from_le_bytes),
            header.get(6),
        ) else {
            return false;
        };
        let end = pos + LOG_HEADER_LEN + usize::from(len);
        let Some(payload) = bytes.get(pos + LOG_HEADER_LEN..end) else {
            // The fragment runs past the end of the file: cut short by the crash, unless
            // what is there is a whole fragment whose length field was damaged (its
            // checksum matches the bytes up to the end of the file).
            let rest = bytes.get(pos + LOG_HEADER_LEN..).unwrap_or_default();
            let mut covered = Vec::with_capacity(rest.len() + 1);
            covered.push(kind);
            covered.extend_from_slice(rest);
            return crc32c(&covered) != unmask(crc);
        };
        let mut covered = Vec::with_capacity(payload.len() + 1);
        covered.push(kind);
        covered.extend_from_slice(payload);
        if crc32c(&covered) != unmask(crc) {
            return false;
        }
        if kind != FIRST && kind != MIDDLE {
            // A complete, valid record: the damage was something else.
            return false;
        }
        pos = end;
    }
}

/// Creates manifest `number` holding a snapshot of `version` plus the given counters, and
/// syncs it. The caller then points `CURRENT` at it with [`set_current`].
///
/// # Errors
/// I/O errors.
pub fn write_new_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    version: &Version,
    log_number: u64,
    next_file_number: u64,
    last_sequence: SeqNo,
) -> Result<Manifest> {
    let path = filename::manifest_file(dir, number);
    let file = fs
        .create(&path)
        .map_err(|e| Error::from(e).in_file(&path))?;
    let mut m = Manifest {
        writer: LogWriter::new(file),
        number,
        path,
    };
    let mut edit = version.snapshot_edit();
    edit.log_number = Some(log_number);
    edit.next_file_number = Some(next_file_number);
    edit.last_sequence = Some(last_sequence);
    m.append(&edit)?;
    Ok(m)
}

/// Points `CURRENT` at manifest `manifest_number`: writes a temp file, syncs it, renames it
/// over `CURRENT` and syncs the directory.
///
/// # Errors
/// I/O errors.
pub fn set_current(
    fs: &dyn FileSystem,
    dir: &Path,
    manifest_number: u64,
    temp_number: u64,
) -> Result<()> {
    let contents = format!("MANIFEST-{manifest_number:06}\n");
    write_file_atomically(
        fs,
        dir,
        &filename::current_file(dir),
        contents.as_bytes(),
        temp_number,
    )
}

/// Writes `data` to `path` through a temp file: write, sync, rename, sync the directory.
///
/// # Errors
/// I/O errors (with the path involved).
pub fn write_file_atomically(
    fs: &dyn FileSystem,
    dir: &Path,
    path: &Path,
    data: &[u8],
    temp_number: u64,
) -> Result<()> {
    let tmp = filename::temp_file(dir, temp_number);
    let res = (|| -> std::io::Result<()> {
        let mut f = fs.create(&tmp)?;
        f.append(data)?;
        f.sync()?;
        drop(f);
        fs.rename(&tmp, path)?;
        fs.sync_dir(dir)
    })();
    res.map_err(|e| {
        let _ = fs.remove_file(&tmp);
        Error::from(e).in_file(path)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mezz_format::ValueKind;
    use mezz_format::ikey::make_internal_key;

    pub(crate) fn meta(id: u64, lo: &str, hi: &str, seq: (u64, u64), size: u64) -> TableMeta {
        TableMeta {
            id,
            tier: Tier::Ssd,
            location: TableLocation::Sst { path_id: 0 },
            size,
            smallest: make_internal_key(lo.as_bytes(), seq.1, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), seq.0, ValueKind::Value),
            smallest_seq: seq.0,
            largest_seq: seq.1,
            num_entries: 10,
            num_deletions: 1,
        }
    }

    #[test]
    fn nvm_objects_are_tracked_and_overlaps_refused() {
        let obj = |id, offset, len| NvmObject {
            id,
            kind: NvmObjectKind::Wal,
            offset,
            len,
        };
        let v = Version::new(3)
            .apply(&VersionEdit {
                new_nvm_objects: vec![obj(5, 4096, 4096), obj(6, 8192, 4096)],
                ..VersionEdit::default()
            })
            .unwrap();
        assert_eq!(v.nvm_objects.len(), 2);
        let overlap = VersionEdit {
            new_nvm_objects: vec![obj(7, 8000, 100)],
            ..VersionEdit::default()
        };
        assert!(matches!(v.apply(&overlap), Err(Error::Corruption { .. })));
        let v = v
            .apply(&VersionEdit {
                deleted_nvm_objects: vec![5],
                ..VersionEdit::default()
            })
            .unwrap();
        assert_eq!(v.nvm_objects.keys().copied().collect::<Vec<_>>(), vec![6]);
        let again = VersionEdit {
            deleted_nvm_objects: vec![5],
            ..VersionEdit::default()
        };
        assert!(v.apply(&again).is_err());
        // The snapshot edit recreates them.
        let snap = Version::new(3).apply(&v.snapshot_edit()).unwrap();
        assert_eq!(snap.nvm_objects, v.nvm_objects);
    }

    #[test]
    fn edit_roundtrips() {
        let e = VersionEdit {
            format_version: Some(1),
            comparator: Some(COMPARATOR_NAME.into()),
            log_number: Some(7),
            next_file_number: Some(300),
            last_sequence: Some(1 << 40),
            compact_pointers: vec![(2, b"k\x01\x00\x00\x00\x00\x00\x00\x00".to_vec())],
            deleted_tables: vec![(1, 12), (3, 99_999_999_999)],
            new_tables: vec![
                (0, meta(13, "a", "zz", (5, 9), 4096)),
                (4, meta(14, "b", "c", (1, 1), 1)),
            ],
            db_id: Some([7; 16]),
            new_nvm_objects: vec![NvmObject {
                id: 15,
                kind: NvmObjectKind::Memtable,
                offset: 1 << 20,
                len: 64 << 20,
            }],
            deleted_nvm_objects: vec![11],
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(VersionEdit::decode(&buf, 0).unwrap(), e);
        // Every strict prefix fails cleanly (no panic), except the empty one and cut points
        // that fall exactly between records.
        for cut in 1..buf.len() {
            let _ = VersionEdit::decode(&buf[..cut], 0);
        }
    }

    #[test]
    fn unknown_tag_is_corruption_naming_the_tag() {
        let mut buf = Vec::new();
        VersionEdit {
            log_number: Some(3),
            ..VersionEdit::default()
        }
        .encode(&mut buf);
        let tag_offset = buf.len() as u64;
        put_varint32(&mut buf, 42);
        put_varint64(&mut buf, 1);
        match VersionEdit::decode(&buf, 100) {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, 100 + tag_offset);
                assert!(detail.contains("42"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn newer_format_version_is_rejected() {
        let mut buf = Vec::new();
        VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION + 1),
            ..VersionEdit::default()
        }
        .encode(&mut buf);
        assert!(matches!(
            VersionEdit::decode(&buf, 0),
            Err(Error::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn apply_sorts_levels_and_checks_deletions() {
        let v = Version::new(4);
        let e = VersionEdit {
            new_tables: vec![
                (0, meta(1, "a", "z", (1, 10), 1)),
                (0, meta(2, "a", "z", (11, 20), 1)),
                (1, meta(4, "m", "p", (1, 1), 1)),
                (1, meta(3, "a", "c", (1, 1), 1)),
            ],
            ..VersionEdit::default()
        };
        let v = v.apply(&e).unwrap();
        let ids = |l: usize| v.tables(l).iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(0), vec![2, 1], "L0 newest first");
        assert_eq!(ids(1), vec![3, 4], "L1 by smallest key");
        v.check_invariants().unwrap();
        assert_eq!(v.find_table(1, b"b").map(|t| t.id), Some(3));
        assert_eq!(v.find_table(1, b"d").map(|t| t.id), None);
        assert_eq!(v.find_table(1, b"p").map(|t| t.id), Some(4));
        assert_eq!(v.overlapping(1, Some(b"c"), Some(b"m")).len(), 2);
        assert_eq!(v.overlapping(1, Some(b"d"), Some(b"l")).len(), 0);
        let del_missing = VersionEdit {
            deleted_tables: vec![(2, 1)],
            ..VersionEdit::default()
        };
        assert!(v.apply(&del_missing).is_err());
        let overlap = VersionEdit {
            new_tables: vec![(1, meta(5, "b", "d", (1, 1), 1))],
            ..VersionEdit::default()
        };
        assert!(v.apply(&overlap).unwrap().check_invariants().is_err());
    }
    fn manifest_with_edits(fs: &mezz_env::MemFs, dir: &Path) -> PathBuf {
        fs.create_dir_all(dir).unwrap();
        let v = Version::new(4);
        let mut m = write_new_manifest(fs, dir, 3, &v, 2, 10, 0).unwrap();
        for id in 10..13 {
            m.append(&VersionEdit {
                new_tables: vec![(0, meta(id, "a", "b", (id, id), 100))],
                last_sequence: Some(id),
                ..VersionEdit::default()
            })
            .unwrap();
        }
        set_current(fs, dir, 3, 99).unwrap();
        filename::manifest_file(dir, 3)
    }

    #[test]
    fn manifest_recovery_replays_every_edit() {
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        manifest_with_edits(&fs, dir);
        let r = recover_manifest(&fs, dir, 4, RecoveryMode::AbsoluteConsistency).unwrap();
        assert_eq!(r.version.num_files(0), 3);
        assert_eq!(
            (r.log_number, r.next_file_number, r.last_sequence),
            (2, 10, 12)
        );
        assert_eq!(r.manifest_number, 3);
    }

    #[test]
    fn torn_manifest_append_is_tolerated_but_a_bad_complete_edit_is_not() {
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        let path = manifest_with_edits(&fs, dir);
        let len = fs.file_size(&path).unwrap();
        // Cut the last edit short: a torn append.
        fs.truncate(&path, len - 5).unwrap();
        let r = recover_manifest(&fs, dir, 4, RecoveryMode::TolerateCorruptTail).unwrap();
        assert_eq!(r.version.num_files(0), 2);
        assert!(recover_manifest(&fs, dir, 4, RecoveryMode::AbsoluteConsistency).is_err());

        let fs = mezz_env::MemFs::new();
        let path = manifest_with_edits(&fs, dir);
        let len = fs.file_size(&path).unwrap();
        // Flip a bit inside the last, complete edit.
        fs.corrupt(&path, len - 5, 0x10).unwrap();
        match recover_manifest(&fs, dir, 4, RecoveryMode::TolerateCorruptTail) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file.as_deref(), Some(&*path)),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_damaged_length_field_of_the_last_edit_is_corruption_not_a_torn_append() {
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        let path = manifest_with_edits(&fs, dir);
        let bytes = fs.read_all(&path).unwrap();
        // Find the last record's header: walk the records from the start.
        let mut pos = 0usize;
        let mut last = 0usize;
        while pos + 7 <= bytes.len() {
            let len = u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]) as usize;
            if len == 0 {
                break;
            }
            last = pos;
            pos += 7 + len;
        }
        // Make the length claim more bytes than the file has: it looks cut short, but the
        // bytes that are there match the checksum, so the edit was complete.
        fs.corrupt(&path, (last + 5) as u64, 0x80).unwrap();
        match recover_manifest(&fs, dir, 4, RecoveryMode::TolerateCorruptTail) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("expected corruption, got {other:?}"),
        }
    }
}
