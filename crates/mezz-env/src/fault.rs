//! (module being written)
/// x
#[derive(Debug)]
pub struct FaultFs;
/// x
#[derive(Debug)]
pub enum FaultOp {}
/// x
#[derive(Debug)]
pub struct FaultRule;
