//! Checksum blocks.

pub mod inet_csum;

pub use inet_csum::{inet_csum, CsumCfg};
