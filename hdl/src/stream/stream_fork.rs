//! `stream_fork`: one stream to several consumers, each seeing every beat exactly once.
//!
//! Each output has a "taken" flag: an output that has accepted the current beat waits (its
//! `tvalid` low) until every other output has too; then the input beat completes and the flags
//! clear. So a slow consumer delays the others by at most the current beat, and no output's
//! `tvalid` ever drops before its transfer (rule 1) or depends on its own `tready` (rule 6).
//! The same shape as verilog-ethernet's `axis_broadcast`.
//!
//! - Ports: `s_axis_*`; `m_axis_<name>_*` for every output name given.
//! - Latency 0 cycles; throughput 1 beat/cycle when all outputs are ready.
//! - Cost: one flop per output and a few gates; the payload is wired, not registered.
//! - Golden model: identity to every output; test: `testbench/tb/tests/stream_blocks.rs`.

use super::{stream_in, stream_out, StreamCfg};
use nicgen_edsl::prelude::*;

pub fn stream_fork(cfg: &StreamCfg, outputs: &[&str]) -> Result<Rc<ModuleDef>, ElabError> {
    cfg.check("stream_fork")?;
    if outputs.len() < 2 {
        return Err(ElabError::config(
            "stream_fork",
            "a fork needs at least two outputs",
        ));
    }
    let names: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
    Module::build(
        format!("stream_fork_{}_{}", cfg.suffix(), names.join("_")),
        move || {
            doc(&format!(
                "Stream fork to {}: every output sees every beat once.",
                names.join(", ")
            ));
            let s = stream_in("s_axis", cfg);
            let outs: Vec<_> = names
                .iter()
                .map(|n| stream_out(&format!("m_axis_{n}"), cfg))
                .collect();
            let taken: Vec<Sig> = names
                .iter()
                .map(|n| reg_init(1, 0u32).named(&format!("taken_{n}")))
                .collect();
            let all = outs
                .iter()
                .zip(&taken)
                .map(|(o, t)| *t | o.ready())
                .reduce(|a, b| a & b)
                .expect("at least two outputs")
                .named("all_ready");
            s.ready().set(all);
            let done = (s.valid() & all).named("beat_done");
            for (o, t) in outs.iter().zip(&taken) {
                let v = s.valid() & !*t;
                o.valid().set(v);
                t.set(mux(done, 0u32, *t | (v & o.ready())));
                for ((_, dst), (_, src)) in o.payload().into_iter().zip(s.payload()) {
                    dst.set(src);
                }
            }
        },
    )
}
