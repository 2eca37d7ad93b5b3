//! Quantities derived from options: level targets and the NVM space the options need.
//!
//! Pure functions of `&Options`.

use std::sync::Arc;

use super::{MAX_GROUP_BYTES, NvmMemtable, Options};

impl Options {
    /// The order of keys these options give ([`Options::comparator`], bytewise if none).
    #[must_use]
    pub fn key_order(&self) -> mezz_format::KeyOrder {
        self.comparator
            .as_ref()
            .map_or_else(mezz_format::KeyOrder::bytewise, |c| {
                mezz_format::KeyOrder::custom(Arc::clone(c))
            })
    }

    /// Whether these options use an NVM tier.
    #[must_use]
    pub fn has_nvm(&self) -> bool {
        self.nvm_dir.is_some()
    }

    /// The byte limit of NVM tables under `lru` tiering (when not given: 3/4 of the pool
    /// left by the NVM WALs and memtables the options keep room for there).
    #[must_use]
    pub fn nvm_table_budget(&self) -> u64 {
        match self.nvm_tiering {
            // 3/4 of what the pool's reserved users (NVM WALs, memtables) leave; an
            // `overflow` memtable takes its room from the other quarter when it needs one.
            super::NvmTiering::Lru(0) => {
                self.nvm_capacity.saturating_sub(self.nvm_bytes_reserved()) / 4 * 3
            }
            super::NvmTiering::Lru(b) => b,
            _ => self.nvm_capacity,
        }
    }

    /// Whether tables written for `level` are NVM tables. (Under `lru` every new table is;
    /// the ones that stayed longest move to SSD once NVM tables pass the budget, and a
    /// full pool falls back to SSTs.)
    #[must_use]
    pub fn level_in_nvm(&self, level: usize) -> bool {
        match self.nvm_tiering {
            super::NvmTiering::Off => false,
            super::NvmTiering::Leveled(k) => level <= k,
            super::NvmTiering::Lru(_) | super::NvmTiering::Full => true,
        }
    }

    /// The recovery mode in force: `recovery_mode`, except that `paranoid_checks` means
    /// `AbsoluteConsistency`.
    #[must_use]
    pub fn recovery_mode_in_force(&self) -> super::RecoveryMode {
        if self.paranoid_checks {
            super::RecoveryMode::AbsoluteConsistency
        } else {
            self.recovery_mode
        }
    }

    /// Whether WAL files are created as mapped logs (`wal_mmap`, where recovery tolerates
    /// the zero-filled tail a crash leaves in one).
    #[must_use]
    pub fn wal_mapped(&self) -> bool {
        self.wal_mmap && self.recovery_mode_in_force() == super::RecoveryMode::TolerateCorruptTail
    }

    /// The multiplier-derived target size of `level` (>= 1) in bytes.
    #[must_use]
    pub fn max_bytes_for_level(&self, level: usize) -> u64 {
        let mut b = self.max_bytes_for_level_base as f64;
        for _ in 1..level {
            b *= self.max_bytes_for_level_multiplier;
        }
        b as u64
    }

    /// Arena bytes of one DRAM memtable: `write_buffer_size`, a quarter more, and room for
    /// a maximal write group of small entries, clamped to what one arena can address. A
    /// memtable switches once it holds `write_buffer_size`, or earlier when the next group
    /// would not fit; a group larger than this gets a memtable sized for it. Address space
    /// only: pages are taken as entries arrive.
    #[must_use]
    pub fn memtable_capacity(&self) -> usize {
        let group = crate::base::limits::room_needed(MAX_GROUP_BYTES / 32, MAX_GROUP_BYTES);
        (self.write_buffer_size + self.write_buffer_size / 4 + group)
            .min(crate::base::limits::MAX_DRAM_CAPACITY)
    }

    /// The page size of a new matrix container: `matrix_page_size`, or with `0` a 256th of
    /// `write_buffer_size` rounded down to a power of two, from 4 KiB to 256 KiB. A row of
    /// one memtable then spans about 256 pages, so the pages a partly drained row holds
    /// beyond its live entries (at most three partly used) stay about 1 % of it. Fixed
    /// pages of 256 KiB (the earlier default) left a 2 MiB row holding up to 0.75 MiB it no
    /// longer used, and flushes waited for columns while a quarter of the container held
    /// nothing live.
    #[must_use]
    pub fn matrix_page_bytes(&self) -> usize {
        if self.matrix_page_size != 0 {
            return self.matrix_page_size;
        }
        let share = (self.write_buffer_size / 256).clamp(4 << 10, 256 << 10);
        1 << share.ilog2()
    }

    /// Bytes of one WAL in NVM (`wal_on_nvm`): a memtable's worth of records plus one
    /// maximal write group and slack.
    #[must_use]
    pub fn nvm_wal_bytes(&self) -> u64 {
        (self.write_buffer_size + self.write_buffer_size / 4 + MAX_GROUP_BYTES + (64 << 10)) as u64
    }

    /// The least pool size the NVM options need: the superblock, two NVM memtables (one
    /// filling, one being flushed), the matrix container (`matrix_bytes`) and, with
    /// `wal_on_nvm`, one WAL per memtable that may exist at once plus one (an open keeps the WALs of the memtables it recovers and
    /// creates a new one before any of them is flushed); every extent rounded up to the
    /// pool's alignment.
    /// Under `nvm_memtable = overflow`, room for one NVM memtable (its NVM memtables are
    /// not reserved: see [`Options::nvm_transient_bytes`]).
    #[must_use]
    pub fn nvm_bytes_needed(&self) -> u64 {
        let mut need = self.nvm_bytes_reserved();
        if self.nvm_memtable == NvmMemtable::Overflow {
            need += self.nvm_memtable_extent();
        }
        need
    }

    /// The pool bytes NVM tables always leave free or to the container: the superblock, the
    /// container and [`Options::nvm_transient_bytes`].
    #[must_use]
    pub fn nvm_bytes_reserved(&self) -> u64 {
        let mut need = mezz_pmem::pool::SUPERBLOCK_SIZE + self.nvm_transient_bytes();
        if self.matrix_bytes > 0 {
            need += nvm_align(self.matrix_bytes);
        }
        need
    }

    /// Bytes of the NVM object one NVM memtable takes: `nvm_memtable_size` and the list's
    /// prefix.
    #[must_use]
    pub fn nvm_memtable_len(&self) -> u64 {
        (self.nvm_memtable_size + crate::base::limits::LIST_PREFIX) as u64
    }

    /// The pool bytes of one NVM memtable (its extent).
    fn nvm_memtable_extent(&self) -> u64 {
        nvm_align(self.nvm_memtable_len())
    }

    /// The pool bytes the NVM WALs and memtables may take at once (see
    /// [`Options::nvm_bytes_needed`]): they come and go, so NVM tables must always leave
    /// them this much room. (The matrix container is allocated once, at open.) An
    /// `overflow` NVM memtable is not counted: it is made only when the pool has room for
    /// it at that moment (else the switch stays in DRAM and writers wait for a flush, as
    /// without NVM), so the room NVM tables leave under `lru` (a quarter of the pool)
    /// serves it instead of a reserve that would stand idle while flushes keep up.
    #[must_use]
    pub fn nvm_transient_bytes(&self) -> u64 {
        let align = nvm_align;
        let mut need = 0;
        if matches!(
            self.nvm_memtable,
            NvmMemtable::Mutable | NvmMemtable::Immutable
        ) {
            need += 2 * self.nvm_memtable_extent();
        }
        if self.wal_on_nvm {
            need += (self.max_write_buffer_number as u64 + 1) * align(self.nvm_wal_bytes());
        }
        need
    }
}

/// `n` rounded up to the pool's extent alignment.
fn nvm_align(n: u64) -> u64 {
    n.div_ceil(mezz_pmem::pool::EXTENT_ALIGN) * mezz_pmem::pool::EXTENT_ALIGN
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVM tables leave room for the WALs and memtables, which come and go, but not for the
    /// matrix container, which is allocated once at open: reserving it again would keep
    /// NVM tables out of pool space nobody else can use.
    #[test]
    fn the_table_reserve_leaves_the_container_out() {
        let o = Options::preset(super::super::Preset::Matrixkv);
        let transient = o.nvm_transient_bytes();
        assert!(transient >= 3 * o.write_buffer_size as u64, "{transient}");
        assert_eq!(
            o.nvm_bytes_needed(),
            mezz_pmem::pool::SUPERBLOCK_SIZE + transient + nvm_align(o.matrix_bytes)
        );
        let no_container = Options {
            matrix_bytes: 0,
            ..o.clone()
        };
        assert_eq!(no_container.nvm_transient_bytes(), transient);
    }

    /// An `overflow` NVM memtable is made only when the pool has room then: NVM tables keep
    /// no reserve for it (their LRU budget is 3/4 of the pool, as without NVM memtables),
    /// while the pool must still be able to hold one. NoveLSM's modes reserve two.
    #[test]
    fn an_overflow_memtable_takes_the_tables_headroom_not_a_reserve() {
        let o = Options::preset(super::super::Preset::Mezzanine);
        assert_eq!(o.nvm_memtable, NvmMemtable::Overflow);
        let one = nvm_align(o.nvm_memtable_size as u64 + crate::base::limits::LIST_PREFIX as u64);
        assert_eq!(o.nvm_transient_bytes(), 0);
        assert_eq!(o.nvm_bytes_needed(), mezz_pmem::pool::SUPERBLOCK_SIZE + one);
        let without = Options {
            nvm_memtable: NvmMemtable::Off,
            ..o.clone()
        };
        assert_eq!(o.nvm_table_budget(), without.nvm_table_budget());
        let mutable = Options {
            nvm_memtable: NvmMemtable::Mutable,
            ..o.clone()
        };
        assert_eq!(mutable.nvm_transient_bytes(), 2 * one);
        assert!(mutable.nvm_table_budget() < o.nvm_table_budget());
    }
}
