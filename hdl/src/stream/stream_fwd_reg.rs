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
//!   payload's enable reads: a [`Replicated`] register, rule 3); no row of its own in
//!   results/AREA.md.
//! - Golden model: identity on frames (`nicgen_model::stream`); test:
//!   `testbench/tests/stream/stream_fwd_reg.rs`.

use super::{Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// The ports of a stream pass-through block: `s_axis` in, `m_axis` out, same shape.
pub struct PassPorts {
    pub s_axis: Stream,
    pub m_axis: Stream,
}

impl Ports for PassPorts {
    type Cfg = StreamCfg;
    fn ports(io: &Io, cfg: &StreamCfg) -> Self {
        PassPorts {
            s_axis: Stream::sink(io, "s_axis", cfg),
            m_axis: Stream::source(io, "m_axis", cfg),
        }
    }
}

/// The forward register slice on streams shaped `cfg`.
pub fn stream_fwd_reg(cfg: &StreamCfg) -> Result<Block<PassPorts>, ElabError> {
    cfg.check("stream_fwd_reg")?;
    Block::build(
        format!("stream_fwd_reg_{}", cfg.suffix()),
        *cfg,
        |p: PassPorts| {
            doc("Forward register slice: cuts valid and data; latency 1, 1 beat/cycle.");
            let (s, m) = (p.s_axis, p.m_axis);
            // The valid, twice: copy 0 is `m_axis_tvalid` and makes the upstream ready, copy 1
            // (`valid_n1`, the complement) only the payload's enables, so that the upstream ready,
            // which a FIFO's read logic follows, is not the net of one load per payload bit
            // (docs/TIMING.md, rule 3).
            let valid = Replicated::new("valid", 2, 1, Some(0));
            let take = (valid.get_n(0) | m.ready()).named("take");
            s.ready().set(take);
            valid.set_if(take, s.valid());
            let load = (valid.get_n(1) | m.ready()).named("load");
            // The payload loads whenever the register may move, valid or not (a word loaded
            // without its valid is never shown), so the input's valid reaches only the valid flop
            // and the payload's enables are one LUT from the reader's ready (gated by the valid
            // too, the enable of a register after a FIFO would also be the FIFO's pop).
            for ((_, src), (_, dst)) in s.payload().into_iter().zip(m.payload()) {
                let r = reg(src.width()).enable(load);
                r.set(src);
                dst.set(r);
            }
            m.valid().set(valid.get(0));
        },
    )
}
