//! `record_reg_slice`: a register slice on a record stream (`data`, `valid`, `ready`; no
//! keep/last), built in the current module rather than as an instance, for records whose width
//! is not a stream width (parse records, commands, requests between the blocks of `eth_rx` and
//! `eth_tx`).
//!
//! - Cuts both directions: `valid`, `data` and the upstream ready all come from flops (a
//!   forward register with a skid register behind its ready, SpinalHDL's
//!   `m2sPipe().s2mPipe()`).
//! - Latency 1 cycle; throughput 1 record/cycle.
//! - Cost: two data registers (output and skid), two valid flops, a 2:1 mux on the data.
//! - Golden model: identity on records; test: `testbench/tb/tests/record_fifo.rs` (identity
//!   under idle x backpressure, 1 record/cycle without them).

use nicgen_edsl::prelude::*;

/// The signals of a [`record_reg_slice`].
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
