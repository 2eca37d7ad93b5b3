//! MatrixKV: L0 in NVM as a matrix container of rows (a flush writes a memtable as one row
//! with one bulk copy, its hints pointing into the next older row), drained into a wide L1
//! by column compactions.
//!
//! Components: the row flush target ([`RowTarget`]) and the matrix compaction policy. A
//! point read's cross-row hints are carried by the tables themselves
//! (`Table::get_chained`).
//!
//! Thread-safety: the target holds the container's page space (`Send + Sync`); one flush
//! runs at a time.

use std::sync::Arc;

use crate::compaction::CompactionPolicy;
use crate::compaction::matrix::{MatrixPolicy, row_id};
use crate::error::Result;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::storage::Storage;
use crate::storage::matrix::MatrixSpace;
use crate::version::VersionEdit;

use super::{FlushOutput, FlushStep, FlushTarget, Host};

/// A flush writes the memtable as one row of the matrix container.
#[derive(Debug)]
pub(crate) struct RowTarget {
    space: Arc<MatrixSpace>,
}

impl RowTarget {
    /// The target, when the options give the container room (`matrix_bytes`) and the
    /// database has one. (A container left by an earlier open without `matrix_bytes` is
    /// only drained.)
    pub(crate) fn for_options(opts: &Options, storage: &Storage) -> Option<Self> {
        let space = storage.matrix().filter(|_| opts.matrix_bytes > 0)?;
        Some(RowTarget {
            space: Arc::clone(space),
        })
    }
}

impl FlushTarget for RowTarget {
    /// When the container has no room, pages no reader holds any more are released and
    /// the row is tried once more; then, with `may_wait` and a compaction running or due,
    /// the flush waits for the column compaction, else the memtable passes to the next
    /// target (an SST). An empty memtable passes too.
    fn write<'a>(
        &'a self,
        host: &'a dyn Host,
        m: &Arc<MemTable>,
        may_wait: bool,
    ) -> Result<FlushStep<'a>> {
        if m.is_empty() {
            return Ok(FlushStep::Pass);
        }
        let space = &self.space;
        // The newest L0 table, if it is a row, is what the new row's hints point into.
        let newest = host.current().version.tables(0).first().cloned();
        let prev = match &newest {
            Some(t) if row_id(t).is_some() => Some(host.open_table(t)?),
            _ => None,
        };
        let prev = prev
            .as_ref()
            .and_then(|t| t.as_row())
            .map(|r| (r.row().as_ref(), r.consumed()));
        let row_id = host.new_file_number();
        let block_size = host.opts().block_size;
        let build = || space.build_row(m.iter().as_mut(), row_id, prev, block_size);
        let mut built = build()?;
        if built.is_none() {
            // Pages of tables nobody reads any more may not have gone back yet.
            host.purge_obsolete();
            if !space.is_short_of_room() {
                built = build()?;
            }
        }
        let Some((row, meta)) = built else {
            return Ok(if may_wait && host.compaction_pending() {
                FlushStep::Wait
            } else {
                FlushStep::Pass
            });
        };
        let mut edit = VersionEdit::default();
        edit.new_tables.push((0, meta));
        let row_bytes = row.len_bytes();
        let space = Arc::clone(space);
        Ok(FlushStep::Written(FlushOutput {
            edit,
            table: None,
            after_install: Some(Box::new(move |installed| {
                // From here the row's pages follow the tables naming it (none, if the
                // install failed: they are freed with the next clean-up, or by the next
                // open).
                space.built(row_id);
                if installed {
                    crate::stats::StatsCollector::add(
                        &host.stats().matrix_row_bytes_written,
                        row_bytes,
                    );
                }
            })),
        }))
    }
}

/// The matrix policy (column compactions out of the container), when the options give
/// the container room.
pub(crate) fn policy(opts: &Options) -> Option<Arc<dyn CompactionPolicy>> {
    (opts.matrix_bytes > 0).then(|| Arc::new(MatrixPolicy::new(opts)) as Arc<dyn CompactionPolicy>)
}
