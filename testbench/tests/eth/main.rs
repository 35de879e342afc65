//! The tests of `hdl/src/eth`: one module per block, at the block's path
//! (`hdl/src/eth/tx_csum.rs` is tested in `tx_csum.rs` here).

mod byte_pos;
mod crc32;
mod eth_fcs_append;
mod eth_fcs_check;
mod eth_hdr_parse;
mod eth_rx;
mod eth_tx;
mod rx_csum;
mod tx_csum;
