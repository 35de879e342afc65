//! Receive-side scaling: Toeplitz hash over the Microsoft input sets and the indirection table.

pub mod rss_toeplitz;
