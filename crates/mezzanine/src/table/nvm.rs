//! NVM tables (TLSM) behind the [`Table`] trait: a persistent skip list in one NVM object
//! whose nodes point at entries in persistent buffers (or, for the `ps` method, at entries
//! written inside the list's own object).
//!
//! Owns: [`NvmTable`] (opened from a [`TableMeta`] through the NVM tier: the table's own
//! object and the objects its `nvm_refs` name). The persistent structure
//! itself, and every byte access to it, is `mezz_nvtable::ptable`; formats in
//! `docs/formats/nvm-table.md`.
//!
//! Invariants: reads go straight to NVM (no block cache); every entry read is checked
//! against the checksum its node holds, so a damaged entry is a `Corruption` error naming
//! the pool, never a value. A table is opened only while a version lists it, and its
//! objects are freed only once no version does (see `DbInner::purge_obsolete`).
//!
//! Thread-safety: `NvmTable` is `Send + Sync`; iterators are single-owner.

use std::path::PathBuf;
use std::sync::Arc;

use mezz_format::ikey::{ValueKind, make_internal_key, parse_internal_key};
use mezz_format::{InternalIterator, SeqNo};
use mezz_nvtable::ptable::{PTable, PTableIter};
use mezz_pmem::Extent;

use crate::error::{Error, Result};
use crate::storage::nvm::{NvmTier, POOL_FILE};
use crate::table::{InFileIter, LookupResult, Table, TableLocation, TableMeta, TableReadOptions};

/// An open NVM table. See the module documentation.
#[derive(Debug)]
pub struct NvmTable {
    meta: TableMeta,
    table: Arc<PTable>,
    pool_path: PathBuf,
}

fn extent_of(tier: &NvmTier, table: u64, object: u64) -> Result<Extent> {
    let o = tier.object(object).ok_or_else(|| {
        Error::corruption(
            0,
            format!("NVM table {table} references NVM object {object}, which is not live"),
        )
    })?;
    Ok(o.extent())
}

impl NvmTable {
    /// Opens the NVM table `meta` describes.
    ///
    /// # Errors
    /// `Corruption` (a damaged header or footer, an object the tier does not hold),
    /// `InvalidArgument` for a table that is not in NVM.
    pub fn open(
        tier: &NvmTier,
        meta: &TableMeta,
        order: &mezz_format::KeyOrder,
    ) -> Result<NvmTable> {
        let TableLocation::Nvm { object } = meta.location else {
            return Err(Error::InvalidArgument(format!(
                "table {} is not an NVM table",
                meta.id
            )));
        };
        let pool_path = tier.dir().join(POOL_FILE);
        let own = extent_of(tier, meta.id, object).map_err(|e| e.in_file(&pool_path))?;
        let mut data = Vec::with_capacity(meta.nvm_refs.len());
        for r in &meta.nvm_refs {
            if r.object != object {
                data.push(extent_of(tier, meta.id, r.object).map_err(|e| e.in_file(&pool_path))?);
            }
        }
        let table = PTable::open(Arc::clone(tier.region()), own, &data, order)
            .map_err(|e| e.in_file(&pool_path))?;
        if table.header().id != meta.id {
            return Err(Error::corruption(
                own.offset,
                format!(
                    "NVM object {object} holds table {}, the manifest says table {}",
                    table.header().id,
                    meta.id
                ),
            )
            .in_file(&pool_path));
        }
        Ok(NvmTable {
            meta: meta.clone(),
            table: Arc::new(table),
            pool_path,
        })
    }

    /// The persistent table (for byte-addressable compaction and moves to SSD).
    #[must_use]
    pub fn ptable(&self) -> &Arc<PTable> {
        &self.table
    }

    fn lookup(&self, user_key: &[u8], seq: SeqNo) -> Result<Option<LookupResult>> {
        if !self.table.may_contain(user_key) {
            return Ok(None);
        }
        let target = make_internal_key(user_key, seq, ValueKind::SEEK);
        let Some((k, v, _)) = self.table.seek(&target)? else {
            return Ok(None);
        };
        let p = parse_internal_key(k)
            .ok_or_else(|| Error::corruption(0, format!("undecodable internal key {k:02x?}")))?;
        if !self.table.order().same_user(p.user_key, user_key) {
            return Ok(None);
        }
        Ok(Some(match p.kind {
            ValueKind::Value => LookupResult::Value(v.to_vec()),
            ValueKind::Deletion => LookupResult::Deleted,
        }))
    }
}

impl Table for NvmTable {
    fn may_contain(&self, user_key: &[u8]) -> bool {
        self.table.may_contain(user_key)
    }

    fn meta(&self) -> &TableMeta {
        &self.meta
    }

    fn get(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        _opts: &TableReadOptions,
    ) -> Result<Option<LookupResult>> {
        self.lookup(user_key, seq)
            .map_err(|e| e.in_file(&self.pool_path))
    }

    fn iter(&self, _opts: &TableReadOptions) -> Box<dyn InternalIterator<Error>> {
        Box::new(InFileIter::new(
            PTableIter::new(Arc::clone(&self.table)),
            self.pool_path.clone(),
        ))
    }

    fn verify(&self) -> Result<u64> {
        self.table
            .verify()
            .map_err(|e| e.in_file(&self.pool_path).into())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
