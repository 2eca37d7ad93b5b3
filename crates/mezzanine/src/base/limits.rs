//! Sizes that options, memtables and the NVM pool's layout share: what one memtable's
//! arena can address and what an entry costs in it, and the prefix of an NVM memtable's
//! extent. Options derive their sizes from these; the structures that use them import
//! them from here, so that options need no structure above them.
//!
//! Thread-safety: constants and pure functions only.

use mezz_format::ikey::TRAILER_LEN;

/// The most bytes one DRAM memtable's arena can hold (its offsets are 32-bit).
pub const MAX_DRAM_CAPACITY: usize = mezz_pmem::arena::MAX_CAPACITY;

/// Bytes at the start of an NVM memtable's extent before its skip list: the first 8 hold
/// the commit word (the highest sequence number whose write group is wholly durable in the
/// list), the next 8 the reserve word (no entry has a higher sequence number), the next 8
/// the low word (the smallest sequence number), the next 8 the deferred mark (see
/// [`DEFERRED_MARK`]); the rest is reserved.
pub const LIST_PREFIX: usize = 4096;

/// Arena bytes one skip-list node costs beyond its key and value at most: the node header,
/// a full tower of links, alignment, and on NVM the padding that keeps a node's header,
/// links and key inside one cache line (`mezz_pmem::arena::Arena::alloc_with_head`).
pub const NODE_OVERHEAD: usize = 16 + 4 * 12 + 8 + mezz_pmem::region::LINE;

/// Arena bytes a memtable (NVM or DRAM: the same skip list) needs to take `entries` entries
/// holding `bytes` bytes of user keys and values (an upper bound: every node a full tower).
#[must_use]
pub fn room_needed(entries: usize, bytes: usize) -> usize {
    entries * (NODE_OVERHEAD + TRAILER_LEN) + bytes
}
