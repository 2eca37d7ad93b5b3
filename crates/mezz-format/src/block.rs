//! (module being written)

/// Data-block layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockFormat {
    /// The unified, 8-byte aligned KeySet block.
    KeySet,
    /// LevelDB's prefix-compressed block with restart points.
    Prefix,
}
