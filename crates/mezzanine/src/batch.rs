//! `WriteBatch`: a list of puts and deletes applied atomically.
//!
//! (API skeleton: bodies are being filled in.)

/// A group of updates applied atomically by `Db::write`.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {}

impl WriteBatch {
    /// An empty batch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        let _ = (key, value);
        todo!()
    }
    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        let _ = key;
        todo!()
    }
    /// Number of updates.
    #[must_use]
    pub fn len(&self) -> usize {
        todo!()
    }
    /// Whether the batch holds no update.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Removes every update.
    pub fn clear(&mut self) {
        todo!()
    }
    /// Encoded size in bytes.
    #[must_use]
    pub fn approximate_size(&self) -> usize {
        todo!()
    }
}
