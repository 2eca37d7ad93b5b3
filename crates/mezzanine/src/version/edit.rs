//! [`VersionEdit`]: a change from one version to the next, and its encoding in the MANIFEST
//! (spec: `docs/formats/manifest.md`).
//!
//! Invariants: an unknown record tag, table tier or location is a `Corruption` (an old build
//! never silently ignores what a newer one records; a newer format version announces it
//! first).
//!
//! Thread-safety: plain data.

use mezz_format::SeqNo;
use mezz_format::coding::{Decoder, put_length_prefixed, put_varint32, put_varint64};

use crate::error::{Error, Result};
use crate::storage::nvm::{NvmObject, NvmObjectKind};
use crate::table::{TableLocation, TableMeta, Tier};

/// The newest manifest format version this build reads: 5, the version of an edit that
/// records column families.
pub const MANIFEST_FORMAT_VERSION: u32 = 5;

/// The format version a new manifest starts with (its snapshot edit): 4, what a database
/// without column families needs, so builds before families still open it.
pub const MANIFEST_BASE_VERSION: u32 = 4;

/// The format version every edit with column-family records carries (written before them,
/// whatever the edit's own `format_version`), so a build before families refuses the
/// manifest as a newer version instead of an unknown tag.
pub const FAMILIES_FORMAT_VERSION: u32 = 5;

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

const TIER_SSD: u8 = 0;
const LOCATION_SST: u8 = 0;
const TIER_NVM: u8 = 1;
const LOCATION_NVM: u8 = 1;
const LOCATION_ROW: u8 = 2;
const TAG_MATRIX_COMPACTOR: u32 = 20;
// Column families (`docs/column-families.md`): a family added (id, name, its options as
// text), a family dropped (id). Every other record belongs to the default family (id 0),
// whose tables this manifest lists; a column family's tables are listed by its own
// manifest, in its own directory.
const TAG_COLUMN_FAMILY_ADD: u32 = 30;
const TAG_COLUMN_FAMILY_DROP: u32 = 31;

/// A column family recorded in the manifest: its id, name and options (as text, the
/// format of `Options::to_text`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyRecord {
    /// The family's id (never 0, never reused).
    pub id: u32,
    /// Its unique name.
    pub name: String,
    /// Its options, as given at creation, in the text format.
    pub options: String,
}

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
    /// The matrix container's compactor: the rows with an id up to this one (`0` = none).
    pub matrix_compactor: Option<u64>,
    /// Column families added.
    pub families_added: Vec<FamilyRecord>,
    /// Column families dropped (by id).
    pub families_dropped: Vec<u32>,
}

fn put_usize(buf: &mut Vec<u8>, v: usize) {
    put_varint64(buf, v as u64);
}

fn encode_table(buf: &mut Vec<u8>, t: &TableMeta) {
    put_varint64(buf, t.id);
    buf.push(match t.tier() {
        Tier::Ssd => TIER_SSD,
        Tier::Nvm => TIER_NVM,
    });
    match t.location {
        TableLocation::Sst { path_id } => {
            buf.push(LOCATION_SST);
            put_varint32(buf, path_id);
        }
        TableLocation::Nvm { object } => {
            buf.push(LOCATION_NVM);
            put_varint64(buf, object);
            put_usize(buf, t.nvm_refs.len());
            for r in &t.nvm_refs {
                put_varint64(buf, r.object);
                put_varint64(buf, r.bytes);
                buf.push(u8::from(r.created));
            }
        }
        TableLocation::Row {
            space,
            row,
            header_page,
            consumed,
        } => {
            buf.push(LOCATION_ROW);
            put_varint64(buf, space);
            put_varint64(buf, row);
            put_varint32(buf, header_page);
            put_varint32(buf, consumed);
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
        TIER_NVM => Tier::Nvm,
        t => return Err(Error::corruption(off, format!("unknown table tier {t}"))),
    };
    let loc_off = d.offset();
    let mut nvm_refs = Vec::new();
    let location = match d.u8()? {
        LOCATION_SST => TableLocation::Sst {
            path_id: d.varint32()?,
        },
        LOCATION_NVM => {
            let object = d.varint64()?;
            let n_off = d.offset();
            let n = d.varint64()?;
            if n > 1 << 20 {
                return Err(Error::corruption(
                    n_off,
                    format!("table {id}: {n} NVM references"),
                ));
            }
            for _ in 0..n {
                let object = d.varint64()?;
                let bytes = d.varint64()?;
                let f_off = d.offset();
                let created = match d.u8()? {
                    0 => false,
                    1 => true,
                    f => {
                        return Err(Error::corruption(
                            f_off,
                            format!("table {id}: NVM reference flag {f}"),
                        ));
                    }
                };
                nvm_refs.push(crate::table::NvmRef {
                    object,
                    bytes,
                    created,
                });
            }
            TableLocation::Nvm { object }
        }
        LOCATION_ROW => TableLocation::Row {
            space: d.varint64()?,
            row: d.varint64()?,
            header_page: d.varint32()?,
            consumed: d.varint32()?,
        },
        l => {
            return Err(Error::corruption(
                loc_off,
                format!("unknown table location {l}"),
            ));
        }
    };
    if location.tier() != tier {
        return Err(Error::corruption(
            loc_off,
            format!("table {id}: tier {tier:?} does not match its location {location:?}"),
        ));
    }
    let size = d.varint64()?;
    let smallest = d.length_prefixed()?.to_vec();
    let largest = d.length_prefixed()?.to_vec();
    Ok(TableMeta {
        id,
        location,
        size,
        smallest,
        largest,
        smallest_seq: d.varint64()?,
        largest_seq: d.varint64()?,
        num_entries: d.varint64()?,
        num_deletions: d.varint64()?,
        nvm_refs,
        pinned: Default::default(),
        seeks: Default::default(),
    })
}

impl VersionEdit {
    /// Appends the encoding of this edit to `buf`.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        let families = !self.families_added.is_empty() || !self.families_dropped.is_empty();
        let version = match self.format_version {
            Some(v) if families => Some(v.max(FAMILIES_FORMAT_VERSION)),
            None if families => Some(FAMILIES_FORMAT_VERSION),
            v => v,
        };
        if let Some(v) = version {
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
            if o.kind.is_table() || o.kind == NvmObjectKind::MatrixSpace {
                put_varint64(buf, o.weight);
            }
        }
        for id in &self.deleted_nvm_objects {
            put_varint32(buf, TAG_DELETED_NVM_OBJECT);
            put_varint64(buf, *id);
        }
        if let Some(r) = self.matrix_compactor {
            put_varint32(buf, TAG_MATRIX_COMPACTOR);
            put_varint64(buf, r);
        }
        for f in &self.families_added {
            put_varint32(buf, TAG_COLUMN_FAMILY_ADD);
            put_varint32(buf, f.id);
            put_length_prefixed(buf, f.name.as_bytes());
            put_length_prefixed(buf, f.options.as_bytes());
        }
        for id in &self.families_dropped {
            put_varint32(buf, TAG_COLUMN_FAMILY_DROP);
            put_varint32(buf, *id);
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
                    let weight = if kind.is_table() || kind == NvmObjectKind::MatrixSpace {
                        d.varint64()?
                    } else {
                        0
                    };
                    e.new_nvm_objects.push(NvmObject {
                        id,
                        kind,
                        offset,
                        len,
                        weight,
                    });
                }
                TAG_DELETED_NVM_OBJECT => e.deleted_nvm_objects.push(d.varint64()?),
                TAG_MATRIX_COMPACTOR => e.matrix_compactor = Some(d.varint64()?),
                TAG_COLUMN_FAMILY_ADD => {
                    let id = d.varint32()?;
                    let off = d.offset();
                    let text = |b: &[u8]| {
                        std::str::from_utf8(b).map(str::to_string).map_err(|_| {
                            Error::corruption(off, "column family record is not UTF-8")
                        })
                    };
                    let name = text(d.length_prefixed()?)?;
                    let options = text(d.length_prefixed()?)?;
                    if id == 0 {
                        return Err(Error::corruption(off, "column family record for id 0"));
                    }
                    e.families_added.push(FamilyRecord { id, name, options });
                }
                TAG_COLUMN_FAMILY_DROP => e.families_dropped.push(d.varint32()?),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::tests::meta;

    #[test]
    fn edit_roundtrips() {
        let e = VersionEdit {
            // (An edit with family records carries at least their version.)
            format_version: Some(FAMILIES_FORMAT_VERSION),
            comparator: Some(COMPARATOR_NAME.into()),
            log_number: Some(7),
            next_file_number: Some(300),
            last_sequence: Some(1 << 40),
            compact_pointers: vec![(2, b"k\x01\x00\x00\x00\x00\x00\x00\x00".to_vec())],
            deleted_tables: vec![(1, 12), (3, 99_999_999_999)],
            new_tables: vec![
                (0, meta(13, "a", "zz", (5, 9), 4096)),
                (4, meta(14, "b", "c", (1, 1), 1)),
                (
                    0,
                    TableMeta {
                        location: TableLocation::Row {
                            space: 16,
                            row: 17,
                            header_page: 3,
                            consumed: 250,
                        },
                        ..meta(18, "d", "e", (10, 20), 8192)
                    },
                ),
            ],
            db_id: Some([7; 16]),
            new_nvm_objects: vec![
                NvmObject {
                    id: 15,
                    kind: NvmObjectKind::Memtable,
                    offset: 1 << 20,
                    len: 64 << 20,
                    weight: 0,
                },
                NvmObject {
                    id: 16,
                    kind: NvmObjectKind::MatrixSpace,
                    offset: 65 << 20,
                    len: 64 << 20,
                    weight: 4096,
                },
            ],
            deleted_nvm_objects: vec![11],
            matrix_compactor: Some(17),
            families_added: vec![FamilyRecord {
                id: 2,
                name: "f".into(),
                options: "block_size=1024\n".into(),
            }],
            families_dropped: vec![1],
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
    fn column_family_records_roundtrip() {
        let e = VersionEdit {
            last_sequence: Some(9),
            families_added: vec![
                FamilyRecord {
                    id: 1,
                    name: "logs".into(),
                    options: "write_buffer_size=65536\n".into(),
                },
                FamilyRecord {
                    id: 700,
                    name: "é".into(),
                    options: String::new(),
                },
            ],
            families_dropped: vec![3, 1],
            ..Default::default()
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        // It is marked with the families' format version, first, so a build before column
        // families refuses it as a newer version (it reads the version before any tag it
        // does not know).
        assert_eq!(
            buf[..2],
            [TAG_FORMAT_VERSION as u8, FAMILIES_FORMAT_VERSION as u8]
        );
        let want = VersionEdit {
            format_version: Some(FAMILIES_FORMAT_VERSION),
            ..e.clone()
        };
        assert_eq!(VersionEdit::decode(&buf, 0).unwrap(), want);
        // A snapshot edit (base version) with families is raised to the families' version.
        let snap = VersionEdit {
            format_version: Some(MANIFEST_BASE_VERSION),
            ..e.clone()
        };
        let mut buf = Vec::new();
        snap.encode(&mut buf);
        assert_eq!(VersionEdit::decode(&buf, 0).unwrap(), want);
        // An edit without family records (every edit an older build wrote) decodes with
        // none, and keeps its version.
        let old = VersionEdit {
            log_number: Some(4),
            ..Default::default()
        };
        let mut buf = Vec::new();
        old.encode(&mut buf);
        let d = VersionEdit::decode(&buf, 0).unwrap();
        assert!(d.families_added.is_empty() && d.families_dropped.is_empty());
        assert_eq!(d.format_version, None);
        // Family 0 cannot be added.
        let mut buf = Vec::new();
        put_varint32(&mut buf, TAG_COLUMN_FAMILY_ADD);
        put_varint32(&mut buf, 0);
        put_length_prefixed(&mut buf, b"x");
        put_length_prefixed(&mut buf, b"");
        assert!(VersionEdit::decode(&buf, 0).is_err());
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
                assert!(detail.to_string().contains("42"), "{detail}");
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
    fn an_nvm_table_roundtrips() {
        let mut t = meta(21, "k", "q", (3, 8), 1 << 20);
        t.location = TableLocation::Nvm {
            object: u64::MAX - 1,
        };
        let e = VersionEdit {
            new_nvm_objects: vec![NvmObject {
                id: 20,
                kind: NvmObjectKind::Memtable,
                offset: 4096,
                len: 1 << 20,
                weight: 0,
            }],
            new_tables: vec![(0, t.clone()), (2, meta(22, "a", "b", (1, 2), 10))],
            ..VersionEdit::default()
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        let back = VersionEdit::decode(&buf, 0).unwrap();
        assert_eq!(back, e);
        assert_eq!(back.new_tables[0].1.tier(), Tier::Nvm);
        assert_eq!(back.new_tables[1].1.tier(), Tier::Ssd);
    }

    /// A one-record edit adding `t` at level 1, with the table's tier byte replaced by
    /// `tier` and its location byte by `location` (when given); and the index of the tier
    /// byte in the record.
    fn table_record(t: &TableMeta, tier: Option<u8>, location: Option<u8>) -> (Vec<u8>, usize) {
        let mut body = Vec::new();
        encode_table(&mut body, t);
        let mut id = Vec::new();
        put_varint64(&mut id, t.id);
        let at = id.len();
        if let Some(tier) = tier {
            body[at] = tier;
        }
        if let Some(location) = location {
            body[at + 1] = location;
        }
        let mut buf = Vec::new();
        put_varint32(&mut buf, TAG_NEW_TABLE);
        put_usize(&mut buf, 1);
        put_length_prefixed(&mut buf, &body);
        let tier_index = buf.len() - body.len() + at;
        (buf, tier_index)
    }

    fn expect_corruption(buf: &[u8], base: u64) -> (u64, String) {
        match VersionEdit::decode(buf, base) {
            Err(Error::Corruption { offset, detail, .. }) => (offset, detail.to_string()),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_tier_that_contradicts_the_location_is_corruption_naming_the_offset() {
        let sst = meta(300, "a", "b", (1, 1), 1);
        let mut nvm = sst.clone();
        nvm.location = TableLocation::Nvm { object: 299 };
        // Untouched, both decode.
        for t in [&sst, &nvm] {
            let (buf, _) = table_record(t, None, None);
            assert_eq!(VersionEdit::decode(&buf, 0).unwrap().new_tables[0].1, *t);
        }
        for (t, tier) in [(&sst, TIER_NVM), (&nvm, TIER_SSD)] {
            let (buf, tier_index) = table_record(t, Some(tier), None);
            let (offset, detail) = expect_corruption(&buf, 5000);
            // The offset is that of the location the tier contradicts, right after the tier.
            assert_eq!(offset, 5000 + tier_index as u64 + 1, "{detail}");
            assert!(detail.contains("table 300"), "{detail}");
            assert!(detail.contains("does not match"), "{detail}");
        }
    }

    #[test]
    fn an_unknown_location_or_tier_byte_is_corruption() {
        let t = meta(7, "a", "b", (1, 1), 1);
        let (buf, tier_index) = table_record(&t, None, Some(3));
        let (offset, detail) = expect_corruption(&buf, 64);
        assert_eq!(offset, 64 + tier_index as u64 + 1);
        assert!(detail.contains("unknown table location 3"), "{detail}");

        let (buf, tier_index) = table_record(&t, Some(9), None);
        let (offset, detail) = expect_corruption(&buf, 64);
        assert_eq!(offset, 64 + tier_index as u64);
        assert!(detail.contains("unknown table tier 9"), "{detail}");
    }
}
