//! In-memory file handles for this crate's unit tests (compiled only with `cfg(test)`).
//!
//! Thread-safety: the buffer is behind a mutex; handles are `Send + Sync`.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mezz_env::{RandomAccessFile, WritableFile};

/// A growable buffer shared by a writer and the test.
#[derive(Debug, Clone, Default)]
pub struct SharedBuf {
    data: Arc<Mutex<Vec<u8>>>,
    syncs: Arc<AtomicUsize>,
}

impl SharedBuf {
    pub fn bytes(&self) -> Vec<u8> {
        self.data.lock().unwrap().clone()
    }
    pub fn syncs(&self) -> usize {
        self.syncs.load(Ordering::SeqCst)
    }
    pub fn writer(&self) -> Box<dyn WritableFile> {
        Box::new(VecWritable(self.clone()))
    }
}

#[derive(Debug)]
struct VecWritable(SharedBuf);

impl WritableFile for VecWritable {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.0.data.lock().unwrap().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.data.lock().unwrap().len() as u64
    }
}

/// A read-only file over a byte vector.
#[derive(Debug)]
pub struct VecFile(pub Vec<u8>);

impl VecFile {
    pub fn shared(data: Vec<u8>) -> Arc<dyn RandomAccessFile> {
        Arc::new(VecFile(data))
    }
}

impl RandomAccessFile for VecFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start
            .checked_add(buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        let src = self.0.get(start..end).ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}
