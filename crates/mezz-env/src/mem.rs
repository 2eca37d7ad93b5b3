//! (module being written)
/// x
#[derive(Debug)]
pub struct MemFs;
/// x
#[derive(Debug)]
pub struct CrashOptions;
