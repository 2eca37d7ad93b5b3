//! (module being written)
/// x
#[derive(Debug)]
pub struct PosixFs;
impl PosixFs {
    /// x
    #[must_use]
    pub fn new() -> Self {
        Self
    }
}
use std::path::Path;
use std::sync::Arc;
use std::io;
impl crate::FileSystem for PosixFs {
    fn create(&self, _p: &Path) -> io::Result<Box<dyn crate::WritableFile>> { todo!() }
    fn open_append(&self, _p: &Path) -> io::Result<Box<dyn crate::WritableFile>> { todo!() }
    fn open_read(&self, _p: &Path) -> io::Result<Arc<dyn crate::RandomAccessFile>> { todo!() }
    fn exists(&self, _p: &Path) -> bool { todo!() }
    fn file_size(&self, _p: &Path) -> io::Result<u64> { todo!() }
    fn remove_file(&self, _p: &Path) -> io::Result<()> { todo!() }
    fn rename(&self, _f: &Path, _t: &Path) -> io::Result<()> { todo!() }
    fn create_dir_all(&self, _p: &Path) -> io::Result<()> { todo!() }
    fn list_dir(&self, _p: &Path) -> io::Result<Vec<String>> { todo!() }
    fn sync_dir(&self, _p: &Path) -> io::Result<()> { todo!() }
    fn lock(&self, _p: &Path) -> io::Result<Box<dyn crate::FileLock>> { todo!() }
}
