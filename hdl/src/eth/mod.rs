//! The Ethernet packet pipeline (ConnectX-4 Lx stateless offloads for plain traffic).
//!
//! Blocks (one per file):
//! - [`crc32`]: CRC-32 (Ethernet FCS) as parallel XOR networks built at elaboration;
//! - [`eth_fcs_check`]: RX MAC framing: FCS check and strip, runt/oversize/MAC-control detection;
//! - [`eth_fcs_append`]: TX MAC framing: pad to 60 bytes, append the FCS;
//! - [`eth_hdr_parse`]: header-window parser: L2 (two tags), IPv4/IPv6 (+extension headers), TCP/UDP.
//!
//! RX `tuser` bits after [`eth_fcs_check`] (valid on the `tlast` beat), extending the project
//! table in [`crate::stream`]: bit 0 `bad` (drop), bit 1 `fcs_bad`, bit 2 `runt`, bit 3
//! `oversize`, bit 4 `mac_control`.

pub mod byte_pos;
pub mod crc32;
pub mod eth_fcs_append;
pub mod eth_fcs_check;
pub mod eth_hdr_parse;
pub mod eth_rx;
pub mod eth_tx;
pub mod rx_csum;
pub mod tx_csum;

/// RX `tuser` bits after the FCS check (bit 0 is the project-wide `bad`).
pub mod rx_user {
    pub const BAD: u32 = 0;
    pub const FCS_BAD: u32 = 1;
    pub const RUNT: u32 = 2;
    pub const OVERSIZE: u32 = 3;
    pub const MAC_CONTROL: u32 = 4;
    /// Width of the RX `tuser` after the FCS check.
    pub const BITS: u32 = 5;
}

use crate::stream::{record_reg_slice, record_reg_slice_wide, RecordReg};
use nicgen_edsl::prelude::*;

/// Records this wide get register slices whose halves have control flops of their own, so
/// that no enable net spans a whole parse record (docs/TIMING.md, rule 4).
const WIDE_RECORD: u32 = 256;

/// Record stream `src` (an instance's output) through a register slice named `name` (data,
/// valid and ready from flops): for a queue's LUT-RAM read, or a record that travels far,
/// before logic that decides on it. The caller sets the slice's `ready`. Records of
/// [`WIDE_RECORD`] bits or more (parse records, checksum requests) go through
/// [`crate::stream::record_reg_slice_wide`].
pub(crate) fn out_slice<S: Shape>(src: &RecordStream<S>, name: &str) -> RecordReg {
    out_slice_with(src, name, None, false).0
}

/// [`out_slice`], with one more bit registered beside the record: `extra(record)`, for a
/// decision that must not share its flop (and that flop's fan-out) with the record's users.
/// Returns the slice (its `data` is the record alone) and the registered extra bit. `halves`
/// builds the slice in halves whatever the record's width, for a record whose `ready` is a
/// late decision (two enable nets, each with a LUT of its own).
fn out_slice_with<S: Shape>(
    src: &RecordStream<S>,
    name: &str,
    extra: Option<&dyn Fn(Sig) -> Sig>,
    halves: bool,
) -> (RecordReg, Option<Sig>) {
    let data = src.data;
    let w = data.width();
    let packed = match extra {
        Some(f) => cat(&[f(data), data]),
        None => data,
    };
    let slice = if halves || packed.width() >= WIDE_RECORD {
        record_reg_slice_wide
    } else {
        record_reg_slice
    };
    let mut q = slice(name, packed, src.valid);
    src.ready.set(q.s_ready);
    let bit = extra.map(|_| q.data.bit(w));
    if extra.is_some() {
        q.data = q.data.slice(w - 1, 0);
    }
    (q, bit)
}

/// Record stream `src` into `dst` (an instance's input) through a register slice named `name`
/// (see [`out_slice`]).
fn slice_into<S: Shape>(src: &RecordStream<S>, dst: &RecordStream<S>, name: &str) {
    out_slice(src, name).drive(dst);
}
