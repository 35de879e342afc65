//! The tests of `hdl/src/host`: one module per block, at the block's path
//! (`hdl/src/host/cq_engine.rs` is tested in `cq_engine.rs` here).

mod bar_regs;
mod cq_engine;
mod rq_engine;
mod sq_engine;
