//! The tests of `hdl/src/rss`: one module per block, at the block's path
//! (`hdl/src/rss/rss_toeplitz.rs` is tested in `rss_toeplitz.rs` here).

mod rss_toeplitz;
