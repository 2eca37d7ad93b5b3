//! The engine's in-memory state above the version: every memtable of an open database in
//! read order ([`set::MemtableSet`]) and the super versions readers pin
//! ([`super_version::SuperVersion`]), which only the set builds.
//!
//! Thread-safety: see each module; the set lives behind the engine's state lock.

pub mod set;
pub mod super_version;

pub use set::MemtableSet;
pub use super_version::SuperVersion;
