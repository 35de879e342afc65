//! The tests of `hdl/src/overlay`: one module per block, at the block's path
//! (`hdl/src/overlay/tunnel_steering.rs` is tested in `tunnel_steering.rs` here).

mod tunnel_steering;
mod tx_encap;
mod tx_tso;
