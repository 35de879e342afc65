//! The tests of `hdl/src/roce`: one module per block, at the block's path
//! (`hdl/src/roce/icrc.rs` is tested in `icrc.rs` here).

mod icrc;
