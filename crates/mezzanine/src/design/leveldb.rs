//! The plain LSM design (LevelDB's): a flush writes one SST to L0, placed on an SSD unit
//! by the placement policy; leveled compaction; DRAM memtables fed by WAL files, straight to
//! L0 when full.
//!
//! Thread-safety: stateless components.

use std::sync::Arc;

use crate::compaction::leveled::LeveledPolicy;
use crate::compaction::{CompactionPolicy, SstSink, write_table};
use crate::error::Result;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::placement::JobInfo;
use crate::version::VersionEdit;

use super::{FlushOutput, FlushStep, FlushTarget, Host, MemtableDesign, WalPlacement};

/// A flush writes an SST to L0: the target every design ends with.
#[derive(Debug)]
pub(crate) struct SstTarget;

impl FlushTarget for SstTarget {
    fn write<'a>(
        &'a self,
        host: &'a dyn Host,
        m: &Arc<MemTable>,
        _may_wait: bool,
    ) -> Result<FlushStep<'a>> {
        let new_file = || host.new_file_number();
        // A snapshot taken after this sees the newest version of every key in `m` (they
        // all precede it), so the list as it is now is all the flush must keep for.
        let snapshots = host.snapshots();
        // The published version, read without the state lock: placement only weighs it.
        let sv = host.current();
        let placement = host.placement().begin(&JobInfo {
            version: &sv.version,
            output_level: 0,
            inputs: &[],
        });
        drop(sv);
        let mut sink = SstSink::new(host.storage(), host.opts(), 0, &new_file, placement);
        let mut iter = m.iter();
        let written = write_table(&mut sink, iter.as_mut(), &snapshots, m.order())?;
        iter.status()?;
        Ok(FlushStep::Written(Box::new(table_output(written))))
    }
}

/// The output of a flush through a table sink: the table (if the memtable held anything)
/// and its NVM objects.
pub(crate) fn table_output<'a>(
    written: Option<crate::compaction::WrittenTable>,
) -> FlushOutput<'a> {
    let mut edit = VersionEdit::default();
    let mut table = (0, 0, 0);
    if let Some(w) = written {
        table = (w.bytes_written, w.data_bytes, w.encode_nanos);
        edit.new_tables.push((0, w.meta));
        edit.new_nvm_objects.extend(w.objects.iter().copied());
    }
    FlushOutput {
        edit,
        table: Some(table),
        after_install: None,
    }
}

/// DRAM memtables fed by WALs, straight to L0 when full (the trait's defaults).
#[derive(Debug)]
pub(crate) struct DramMemtables;

impl MemtableDesign for DramMemtables {}

/// WALs are files.
#[derive(Debug)]
pub(crate) struct FileWals;

impl WalPlacement for FileWals {}

/// Leveled compaction.
pub(crate) fn policy(opts: &Options) -> Arc<dyn CompactionPolicy> {
    Arc::new(LeveledPolicy::new(opts))
}
