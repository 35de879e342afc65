//! The tests of `hdl/src/stream`: one module per block, at the block's path
//! (`hdl/src/stream/stream_fifo.rs` is tested in `stream_fifo.rs` here).

mod record_fifo;
mod record_reg_slice;
mod stream_bytes;
mod stream_fifo;
mod stream_fork;
mod stream_fwd_reg;
mod stream_skid;
mod stream_trim;
mod stream_width;
mod waves;
