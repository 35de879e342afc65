//! `record_reg_slice` and `record_reg_slice_wide` pass every item through unchanged and in
//! order under random idle and backpressure; the sink checks the hold rule. Without idle or
//! backpressure both move one item per cycle.

use nicgen_edsl::prelude::*;
use nicgen_hdl::stream::{record_reg_slice, record_reg_slice_wide, RecordReg};
use nicgen_tests::*;

/// A register slice alone in a module, with record-stream ports.
fn reg_slice(width: u32, wide: bool) -> Rc<ModuleDef> {
    let kind = if wide { "_wide" } else { "" };
    Module::build(format!("record_slice{kind}_w{width}"), move || {
        let slice: fn(&str, Sig, Sig) -> RecordReg = if wide {
            record_reg_slice_wide
        } else {
            record_reg_slice
        };
        let r = slice(
            "slice",
            input("s_axis_tdata", width),
            input("s_axis_tvalid", 1),
        );
        output("s_axis_tready", r.s_ready);
        r.ready.set(input("m_axis_tready", 1));
        output("m_axis_tdata", r.data);
        output("m_axis_tvalid", r.valid);
    })
    .unwrap()
}

#[test]
fn record_reg_slice_is_identity() {
    record_identity(
        [1u32, 37, 300]
            .into_iter()
            .map(|w| (reg_slice(w, false), w, "slice".to_string())),
    );
}

/// The wide slice: both halves' control copies must agree under every handshake pattern (a
/// half that loads or holds a cycle apart from the other corrupts the record).
#[test]
fn record_reg_slice_wide_is_identity() {
    record_identity(
        [2u32, 37, 300]
            .into_iter()
            .map(|w| (reg_slice(w, true), w, "wide slice".to_string())),
    );
}
