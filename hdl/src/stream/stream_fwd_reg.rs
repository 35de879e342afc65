//! `stream_fwd_reg`: forward register slice (SpinalHDL's `m2sPipe`).
//!
//! Cuts the forward path: `m_axis_tvalid` and the payload come from flip-flops; `s_axis_tready`
//! is `!m_axis_tvalid || m_axis_tready` (ready is not cut; pair with [`super::stream_skid`] to
//! cut both).
//!
//! - Ports: `s_axis_*` in, `m_axis_*` out (see [`super::StreamCfg`]).
//! - Latency 1 cycle; throughput 1 beat/cycle (no bubbles under continuous `m_axis_tready`).
//! - Cost: one payload register (data + keep + last + user bits) with clock enable, no reset on
//!   the payload, one reset flop for valid.
//! - Golden model: identity on frames (`nicgen_model::stream`); test:
//!   `testbench/tb/tests/stream_blocks.rs`.

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
        let load = (take & s.valid()).named("load");
        for ((_, src), (_, dst)) in s.payload().into_iter().zip(m.payload()) {
            let r = reg(src.width()).enable(load);
            r.set(src);
            dst.set(r);
        }
        m.valid().set(valid);
    })
}

/// A register slice on a record stream (`data`, `valid`, no keep/last), built in the current
/// module rather than as an instance (for records whose width is not a stream width). It cuts
/// both directions: `valid`/`data` and the upstream ready all come from flops (a forward
/// register with a skid register behind its ready, SpinalHDL's `m2sPipe().s2mPipe()`).
pub struct RecordReg {
    /// The registered record.
    pub data: Sig,
    /// Its valid (a flop).
    pub valid: Sig,
    /// The downstream ready: the caller sets it.
    pub ready: Sig,
    /// The upstream ready (a flop: the skid register is empty): connect it to the source.
    pub s_ready: Sig,
}

/// Registers `data`/`valid` as `<name>_data`/`<name>_valid`, with the skid register
/// `<name>_skid_*`; latency 1, 1 record/cycle.
pub fn record_reg_slice(name: &str, data: Sig, valid: Sig) -> RecordReg {
    let ready = wire(1).named(&format!("{name}_ready"));
    let valid_q = reg_init(1, 0u32).named(&format!("{name}_valid"));
    let skid_v = reg_init(1, 0u32).named(&format!("{name}_skid_valid"));
    let s_ready = (!skid_v).named(&format!("{name}_s_ready"));
    let take = (valid & s_ready).named(&format!("{name}_take"));
    let load = (!valid_q | ready).named(&format!("{name}_load"));
    // The output register loads from the skid register first, else from the input. The data
    // registers load whenever they may (the skid register whenever it is empty, the output
    // register whenever it may move), whatever the input's valid, which so only reaches the
    // two valid flops: a word loaded without its valid is never shown.
    valid_q.set_if(load, skid_v | take);
    let skid_d = reg(data.width())
        .enable(s_ready)
        .named(&format!("{name}_skid_data"));
    skid_d.set(data);
    skid_v.set(!load & (skid_v | take));
    let data_q = reg(data.width())
        .enable(load)
        .named(&format!("{name}_data"));
    data_q.set(mux(skid_v, skid_d, data));
    RecordReg {
        data: data_q,
        valid: valid_q,
        ready,
        s_ready,
    }
}
