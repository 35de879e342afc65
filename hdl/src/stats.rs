//! Event counters: the `stat_<name>` outputs of the blocks.
//!
//! A block declares its counters as a record of output ports in its ports
//! (`io.outputs("stat_", &XStats::shape())`) and drives them from counters built inside it:
//! [`counter_bank`] for a whole record of events at once (each counter as wide as its field),
//! [`event_counter`] for one 32-bit counter. The register map (host interface) exposes them to
//! the driver.
//!
//! - Latency: a count is visible the cycle after its event.
//! - Throughput: one event per counter per cycle.
//! - Cost: one register and one incrementer of the counter's width per counter; counted in the
//!   rows of the blocks that hold them (results/AREA.md, results/AREA-paths.md).
//! - Golden model: the per-reason counts of `nicgen_model::rx` reports (`nicgen sim rx` checks
//!   that the hardware counters equal the counts of its records); test:
//!   `testbench/tests/eth/eth_rx.rs`.

use nicgen_edsl::prelude::*;

/// A counter per field of record `shape` inside the current module: the counter of field `f`
/// (register `count_<f>`, as wide as the field, reset to 0, wrapping) adds 1 in every cycle the
/// 1-bit event `events.f` is high, and drives `outs.f` (an output port).
#[track_caller]
pub fn counter_bank<S: Shape>(shape: &S, events: &S::Sigs, outs: &S::Sigs) {
    for (i, name) in S::NAMES.iter().enumerate() {
        let c = reg_init(shape.field_width(i), 0u32).named(&format!("count_{name}"));
        c.set_if(S::sig(events, i), c + 1u32);
        S::sig(outs, i).set(c);
    }
}

/// A 32-bit event counter inside the current module: register `count_<name>` (reset to 0,
/// wrapping), incremented in every cycle `ev` is high. A block drives its `stat_<name>` output
/// (a field of its counter record in its ports) with it.
#[track_caller]
pub fn event_counter(name: &str, ev: Sig) -> Sig {
    let r = reg_init(32, 0u32).named(&format!("count_{name}"));
    r.set_if(ev, r + 1u32);
    r
}
