//! `stream_skid`: skid buffer (SpinalHDL's `s2mPipe`).
//!
//! Cuts the backward path: `s_axis_tready` comes from a flip-flop (docs/TIMING.md, rule 1). When
//! the sink stalls, the beat accepted in that cycle parks in the skid register and is offered
//! first afterwards; the forward path stays combinational. `s_axis_tready` has a flop of its own
//! (`skid_valid_n1`, the complement copy of `skid_valid`, which selects and enables every payload
//! bit: a [`Replicated`] register), so the source's logic does not start at that wide net
//! (rule 3).
//!
//! - Ports: `s_axis_*` in, `m_axis_*` out.
//! - Latency 0 cycles; throughput 1 beat/cycle.
//! - Cost: one payload register (the skid) + two reset flops, a 2:1 mux on the payload; put a
//!   [`mod@super::stream_fwd_reg`] behind it to cut both directions (2 payload registers); no row
//!   of its own in results/AREA.md.
//! - Golden model: identity on frames; test: `testbench/tests/stream/stream_skid.rs`.

use super::stream_fwd_reg::PassPorts;
use super::StreamCfg;
use nicgen_edsl::prelude::*;

/// The skid buffer on streams shaped `cfg`.
pub fn stream_skid(cfg: &StreamCfg) -> Result<Block<PassPorts>, ElabError> {
    cfg.check("stream_skid")?;
    Block::build(
        format!("stream_skid_{}", cfg.suffix()),
        *cfg,
        |p: PassPorts| {
            doc("Skid buffer: cuts ready; latency 0, 1 beat/cycle, one beat of storage.");
            let (s, m) = (p.s_axis, p.m_axis);
            // The skid register's valid, twice: copy 0 selects and enables the payload, copy 1
            // (stored complemented: `skid_valid_n1` is "free") is the upstream ready, so the
            // source's logic does not start at a net of one load per payload bit.
            let skid = Replicated::new("skid_valid", 2, 1, Some(0));
            let skid_valid = skid.get(0);
            s.ready().set(skid.get_n(1));
            let capture = (s.valid() & !skid_valid & !m.ready()).named("capture");
            skid.set_if(m.ready(), lit(1, 0u32));
            skid.set_if(capture, lit(1, 1u32));
            // The skid register copies the input whenever it is empty (what it holds then is never
            // shown), so its enable is a flop, not `m_axis_tready` fanned out to every bit.
            for ((name, src), (_, dst)) in s.payload().into_iter().zip(m.payload()) {
                let r = reg(src.width())
                    .enable(!skid_valid)
                    .named(&format!("skid_{name}"));
                r.set(src);
                dst.set(mux(skid_valid, r, src));
            }
            m.valid().set(s.valid() | skid_valid);
        },
    )
}
