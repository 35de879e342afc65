//! `stream_fwd_reg`: forward register slice (SpinalHDL's `m2sPipe`).
//!
//! Cuts the forward path: `m_axis_tvalid` and the payload come from flip-flops; `s_axis_tready`
//! is `!m_axis_tvalid || m_axis_tready` (ready is not cut; pair with [`mod@super::stream_skid`] to
//! cut both; docs/TIMING.md, rule 2).
//!
//! - Ports: `s_axis_*` in, `m_axis_*` out (see [`super::StreamCfg`]).
//! - Latency 1 cycle; throughput 1 beat/cycle (no bubbles under continuous `m_axis_tready`).
//! - Cost: one payload register (data + keep + last + user bits) with clock enable, no reset on
//!   the payload, two reset flops for valid (the valid and its complement, which only the
//!   payload's enable reads: rule 3); no row of its own in results/AREA.md.
//! - Golden model: identity on frames (`nicgen_model::stream`); test:
//!   `testbench/tests/stream/stream_fwd_reg.rs`.

use super::{stream_in, stream_out, StreamCfg};
use nicgen_edsl::prelude::*;

pub fn stream_fwd_reg(cfg: &StreamCfg) -> Result<Rc<ModuleDef>, ElabError> {
    cfg.check("stream_fwd_reg")?;
    Module::build(format!("stream_fwd_reg_{}", cfg.suffix()), || {
        doc("Forward register slice: cuts valid and data; latency 1, 1 beat/cycle.");
        let s = stream_in("s_axis", cfg);
        let m = stream_out("m_axis", cfg);
        let valid = reg_init(1, 0u32);
        let take = (!valid | m.ready()).named("take");
        s.ready().set(take);
        valid.set_if(take, s.valid());
        // The payload's enables from a copy of the valid of their own (its complement, so that
        // synthesis keeps both), so that the upstream ready, which a FIFO's read logic
        // follows, is not the net of one load per payload bit (docs/TIMING.md, rule 3).
        let valid_n = reg_init(1, 1u32).named("valid_n");
        valid_n.set_if(take, !s.valid());
        let load = (valid_n | m.ready()).named("load");
        // The payload loads whenever the register may move, valid or not (a word loaded
        // without its valid is never shown), so the input's valid reaches only the valid flop
        // and the payload's enables are one LUT from the reader's ready (gated by the valid
        // too, the enable of a register after a FIFO would also be the FIFO's pop).
        for ((_, src), (_, dst)) in s.payload().into_iter().zip(m.payload()) {
            let r = reg(src.width()).enable(load);
            r.set(src);
            dst.set(r);
        }
        m.valid().set(valid);
    })
}
