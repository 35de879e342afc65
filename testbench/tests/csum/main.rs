//! The tests of `hdl/src/csum`: one module per block, at the block's path
//! (`hdl/src/csum/inet_csum.rs` is tested in `inet_csum.rs` here).

mod inet_csum;
mod pseudo;
