//! `stream_skid`: skid buffer (SpinalHDL's `s2mPipe`).
//!
//! Cuts the backward path: `s_axis_tready` comes from a flip-flop. When the sink stalls, the
//! beat accepted in that cycle parks in the skid register and is offered first afterwards; the
//! forward path stays combinational.
//!
//! `s_axis_tready` has a flop of its own (`skid_free`, the complement of `skid_valid`, so that
//! synthesis keeps both): `skid_valid` selects and enables every payload bit (twice the payload
//! width in loads), and the placer puts it among them; the ready goes to the source's logic,
//! which must not start at that net (on the TX path a skid's `skid_valid`, 172 loads, fed
//! `tx_csum`'s output side with 2.8 ns of routing before its first LUT).
//!
//! - Latency 0 cycles; throughput 1 beat/cycle.
//! - Cost: one payload register (the skid) + two reset flops, a 2:1 mux on the payload.
//!   Put a [`mod@super::stream_fwd_reg`] behind it to cut both directions (2 payload registers).
//! - Golden model: identity on frames; test: `testbench/tb/tests/stream_blocks.rs`.

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
