//! Checksum blocks.

pub mod frame_sum;
pub mod inet_csum;
pub mod pseudo;

pub use frame_sum::{frame_sum, SumIn, SumOut};
pub use inet_csum::{inet_csum, CsumCfg};
