//! Storage: where table bytes and other persistent objects live.
//!
//! Owns: [`nvm`] (the NVM pool and its objects).

pub mod nvm;
