//! `stream_skid`: skid buffer (SpinalHDL's `s2mPipe`).
//!
//! Cuts the backward path: `s_axis_tready` comes from a flip-flop (docs/TIMING.md, rule 1). When
//! the sink stalls, the beat accepted in that cycle parks in the skid register and is offered
//! first afterwards; the forward path stays combinational. `s_axis_tready` has a flop of its own
//! (`skid_free`, the complement of `skid_valid`, which selects and enables every payload bit), so
//! the source's logic does not start at that wide net (rule 3).
//!
//! - Ports: `s_axis_*` in, `m_axis_*` out.
//! - Latency 0 cycles; throughput 1 beat/cycle.
//! - Cost: one payload register (the skid) + two reset flops, a 2:1 mux on the payload; put a
//!   [`mod@super::stream_fwd_reg`] behind it to cut both directions (2 payload registers); no row
//!   of its own in results/AREA.md.
//! - Golden model: identity on frames; test: `testbench/tests/stream/stream_skid.rs`.

use super::{stream_in, stream_out, StreamCfg};
use nicgen_edsl::prelude::*;

pub fn stream_skid(cfg: &StreamCfg) -> Result<Rc<ModuleDef>, ElabError> {
    cfg.check("stream_skid")?;
    Module::build(format!("stream_skid_{}", cfg.suffix()), || {
        doc("Skid buffer: cuts ready; latency 0, 1 beat/cycle, one beat of storage.");
        let s = stream_in("s_axis", cfg);
        let m = stream_out("m_axis", cfg);
        let skid_valid = reg_init(1, 0u32).named("skid_valid");
        let skid_free = reg_init(1, 1u32).named("skid_free");
        s.ready().set(skid_free);
        let capture = (s.valid() & !skid_valid & !m.ready()).named("capture");
        skid_valid.set_if(m.ready(), 0u32);
        skid_valid.set_if(capture, 1u32);
        skid_free.set_if(m.ready(), 1u32);
        skid_free.set_if(capture, 0u32);
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
    })
}
