//! `Options::validate`: the per-field checks declared in the option table, then the checks
//! that relate several fields.
//!
//! Invariant: `Db::open` refuses any options this rejects, before anything is written.
//! Errors are `InvalidArgument` naming the first bad field. Reads `&self` only.

use super::parse::Named;
use super::{NvmMemtable, Options, PersistMode};
use crate::error::{Error, Result};

impl Options {
    /// Checks every field and their relations.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        self.check_fields()?;
        self.check_relations()
    }

    /// The checks that involve more than one field.
    fn check_relations(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.mmap_reads && self.use_direct_reads {
            return bad(
                "mmap_reads and use_direct_reads cannot both be true: mapped reads go through \
                 the page cache, which direct reads bypass (RocksDB refuses allow_mmap_reads \
                 with use_direct_reads the same way)"
                    .into(),
            );
        }
        if self.level0_slowdown_trigger < self.level0_compaction_trigger {
            return bad("level0_slowdown_trigger must be >= level0_compaction_trigger".into());
        }
        if self.level0_stop_trigger < self.level0_slowdown_trigger {
            return bad("level0_stop_trigger must be >= level0_slowdown_trigger".into());
        }
        if self.compression.levels().len() > self.num_levels {
            return bad(format!(
                "compression lists {} levels ({}) but num_levels is {}",
                self.compression.levels().len(),
                self.compression,
                self.num_levels
            ));
        }
        if self.hard_pending_compaction_bytes < self.soft_pending_compaction_bytes {
            return bad(
                "hard_pending_compaction_bytes must be >= soft_pending_compaction_bytes".into(),
            );
        }
        for (i, p) in self.ssd_paths.iter().enumerate() {
            let text = p.display().to_string();
            if text.contains(',') {
                return bad(format!("ssd_paths: {text:?} contains a comma"));
            }
            if self.ssd_paths[..i].contains(p) {
                return bad(format!("ssd_paths: {text:?} is given twice"));
            }
        }
        if !self.ssd_paths.is_empty() && self.placement_wide_paths >= self.ssd_paths.len() {
            return bad(format!(
                "placement_wide_paths {} must be below the number of ssd_paths ({})",
                self.placement_wide_paths,
                self.ssd_paths.len()
            ));
        }
        if self.nvm_dir.is_none() {
            if self.wal_on_nvm {
                return bad("wal_on_nvm needs nvm_dir".into());
            }
            if self.nvm_memtable != NvmMemtable::Off {
                return bad(format!(
                    "nvm_memtable={} (preset {}) needs nvm_dir (e.g. --nvm-dir /dev/shm/mezz-nvm)",
                    self.nvm_memtable.name(),
                    self.preset
                ));
            }
            if self.matrix_bytes > 0 {
                return bad(format!(
                    "matrix_bytes={} (preset {}) needs nvm_dir (e.g. --nvm-dir /dev/shm/mezz-nvm)",
                    self.matrix_bytes, self.preset
                ));
            }
            if self.nvm_tiering.enabled() {
                return bad(format!(
                    "nvm_tiering={} (preset {}) needs nvm_dir (e.g. --nvm-dir /dev/shm/mezz-nvm)",
                    <super::parse::Tiering as super::parse::Codec<_>>::print(&self.nvm_tiering),
                    self.preset
                ));
            }
        } else {
            if self.nvm_capacity < 1 << 20 {
                return bad(format!("nvm_capacity {} < 1 MiB", self.nvm_capacity));
            }
            if self.nvm_persistence == PersistMode::CrashSim && self.nvm_sim.is_none() {
                return bad("nvm_persistence=crashsim needs a simulated NVM (nvm_sim)".into());
            }
        }
        if self.nvm_memtable != NvmMemtable::Off {
            if self.nvm_memtable_size < 64 << 10 || self.nvm_memtable_size > (4usize << 30) - 4096 {
                return bad(format!(
                    "nvm_memtable_size {} not in 64 KiB..4 GiB",
                    self.nvm_memtable_size
                ));
            }
            // A mutable NVM memtable alternates with DRAM ones: without a WAL, a crash would
            // keep its (newer) writes and lose the older DRAM memtable's, a hole in the
            // history. Under `immutable` every memtable reaches NVM in order, so without a
            // WAL a crash loses only the newest writes, as any database without one does
            // (and a column family, whose updates the database's WAL holds, has none).
            if self.nvm_memtable.in_place() && !self.use_wal {
                return bad(format!(
                    "nvm_memtable={} needs use_wal=true",
                    self.nvm_memtable.name()
                ));
            }
        }
        if self.matrix_bytes > 0 {
            // The container is L0: NVM tables there would only take the memtables the
            // container has no room for, which a leveled:0 tiering keeps out of every other
            // level too (NVM tables for L0 alone, SSTs below the rows).
            if self.nvm_tiering == super::NvmTiering::Leveled(0) {
                return bad(
                    "matrix_bytes (a matrix container as L0) with nvm_tiering=leveled:0 (NVM \
                     tables for L0 only) keeps no level in NVM tables: use leveled:K with \
                     K >= 1, lru or none to put the levels under the container in NVM"
                        .into(),
                );
            }
            let least =
                (16 * self.matrix_page_bytes() as u64).max(4 * self.write_buffer_size as u64);
            if self.matrix_bytes < least {
                return bad(format!(
                    "matrix_bytes {} < {least}: the container must hold 16 pages of \
                     matrix_page_size and 4 memtables of write_buffer_size",
                    self.matrix_bytes
                ));
            }
        }
        if self.nvm_dir.is_some() {
            let need = self.nvm_bytes_needed();
            if need > self.nvm_capacity {
                return bad(format!(
                    "nvm_capacity {} cannot hold what the options keep in NVM: {need} bytes \
                     (the pool's superblock{}{}{})",
                    self.nvm_capacity,
                    if self.nvm_memtable == NvmMemtable::Off {
                        String::new()
                    } else {
                        format!(
                            ", two NVM memtables of nvm_memtable_size {} (one filling, one \
                             being flushed) with their headers",
                            self.nvm_memtable_size
                        )
                    },
                    if self.wal_on_nvm {
                        format!(
                            ", max_write_buffer_number {} + 1 WALs sized for write_buffer_size {}",
                            self.max_write_buffer_number, self.write_buffer_size
                        )
                    } else {
                        String::new()
                    },
                    if self.matrix_bytes > 0 {
                        format!(", a matrix container of matrix_bytes {}", self.matrix_bytes)
                    } else {
                        String::new()
                    }
                ));
            }
        }
        Ok(())
    }
}
