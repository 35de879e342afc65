//! The tests of `hdl/src/roce`: one module per block, at the block's path
//! (`hdl/src/roce/icrc.rs` is tested in `icrc.rs` here, `mr_table.rs` in `mr_table.rs`).

mod icrc;
mod mr_table;
