//! `stream_fork`: one stream to several consumers, each seeing every beat exactly once.
//!
//! Each output has a "taken" flag: an output that has accepted the current beat waits (its
//! `tvalid` low) until every other output has too; then the input beat completes and the flags
//! clear. So a slow consumer delays the others by at most the current beat, and no output's
//! `tvalid` ever drops before its transfer (stream rule 1) or depends on its own `tready`
//! (stream rule 6).
//! The same shape as verilog-ethernet's `axis_broadcast`.
//!
//! - Ports ([`ForkPorts`]): `s_axis_*`; `m_axis_<name>_*` for every output name given.
//! - Latency 0 cycles; throughput 1 beat/cycle when all outputs are ready.
//! - Cost: one flop per output and a few gates; the payload is wired, not registered; no row of
//!   its own in results/AREA.md.
//! - Golden model: identity to every output; test: `testbench/tests/stream/stream_fork.rs`.
//!
//! [`stream_fork_buffered`] decouples the outputs instead (docs/TIMING.md, rule 11): a small
//! LUT-RAM FIFO per output, all written with the same beat. The input is taken while every FIFO
//! has room for two more beats (their `s_axis_room` flops, so `s_axis_tready` is an AND of flops
//! that no consumer's `tready` reaches) and goes through a register that writes every FIFO in the
//! next cycle: each FIFO's write is that register's valid, so no FIFO's occupancy logic waits on
//! another FIFO's flags (rule 8), and no output's `tvalid` depends on another consumer. Latency 3
//! cycles (the input register, then a LUT-RAM FIFO's write to its `tvalid`); 1 beat/cycle with
//! `depth` 8 or more (the room flags count a beat from its take, two cycles before a read can
//! free its entry); a slow consumer holds the others back only once its FIFO is nearly full.
//! Cost: a `depth`-entry LUT-RAM FIFO per output (16 entries cost the same LUT RAM on ECP5 and
//! Xilinx parts), one beat of flops; each output's payload is that FIFO's LUT-RAM read (put a
//! register behind it where the consumer's first logic is deep).

use super::stream_fifo::{stream_fifo_room, FifoPorts, FifoRam};
use super::{FifoCfg, Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// The ports of both forks: one stream in, one stream out per output name.
pub struct ForkPorts {
    /// The stream in (`s_axis_*`).
    pub s_axis: Stream,
    /// `m_axis_<name>_*`, in the order the names were given.
    pub m_axis: Vec<Stream>,
}

impl Ports for ForkPorts {
    /// The streams' shape and the output names.
    type Cfg = (StreamCfg, Vec<String>);
    fn ports(io: &Io, (cfg, names): &(StreamCfg, Vec<String>)) -> Self {
        ForkPorts {
            s_axis: Stream::sink(io, "s_axis", cfg),
            m_axis: names
                .iter()
                .map(|n| Stream::source(io, &format!("m_axis_{n}"), cfg))
                .collect(),
        }
    }
}

/// A fork's configuration checks, shared by both shapes.
fn check(block: &str, cfg: &StreamCfg, outputs: &[&str]) -> Result<(), ElabError> {
    cfg.check(block)?;
    if outputs.len() < 2 {
        return Err(ElabError::config(
            block,
            "a fork needs at least two outputs",
        ));
    }
    Ok(())
}

/// One stream to the outputs `outputs`, each seeing every beat once (see the module docs).
pub fn stream_fork(cfg: &StreamCfg, outputs: &[&str]) -> Result<Block<ForkPorts>, ElabError> {
    check("stream_fork", cfg, outputs)?;
    let names: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
    Block::build(
        format!("stream_fork_{}_{}", cfg.suffix(), names.join("_")),
        (*cfg, names.clone()),
        move |p: ForkPorts| {
            doc(&format!(
                "Stream fork to {}: every output sees every beat once.",
                names.join(", ")
            ));
            let (s, outs) = (&p.s_axis, &p.m_axis);
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
                o.set_beat(&s.beat());
            }
        },
    )
}

/// One stream to several consumers through a `depth`-entry FIFO each (see the module docs).
pub fn stream_fork_buffered(
    cfg: &StreamCfg,
    outputs: &[&str],
    depth: u32,
) -> Result<Block<ForkPorts>, ElabError> {
    check("stream_fork_buffered", cfg, outputs)?;
    if depth < 8 {
        return Err(ElabError::config(
            "stream_fork_buffered",
            format!("depth {depth}: at least 8 entries keep 1 beat/cycle"),
        ));
    }
    // Room for two beats: the one in the input register and the one taken this cycle.
    let fifo = stream_fifo_room(&FifoCfg::new(*cfg, depth), FifoRam::Lut, 2)?;
    let names: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
    let shape = cfg.beat();
    Block::build(
        format!(
            "stream_fork_buffered_{}_n{depth}_{}",
            cfg.suffix(),
            names.join("_")
        ),
        (*cfg, names.clone()),
        move |p: ForkPorts| {
            doc(&format!(
                "Stream fork to {} through a {depth}-entry FIFO each: every output sees every beat once.",
                names.join(", ")
            ));
            let s = &p.s_axis;
            let fifos: Vec<FifoPorts> = names
                .iter()
                .map(|n| fifo.instance(&format!("u_q_{n}")))
                .collect();
            // The input is taken while every FIFO has room for two more beats (flops), and
            // lands in a register that writes every FIFO in the next cycle: each FIFO's write
            // is a flop, so no FIFO's state waits on another's (docs/TIMING.md, rule 8).
            let all = fifos
                .iter()
                .map(|q| q.room.expect("built with a room flag"))
                .reduce(|a, b| a & b)
                .expect("at least two outputs")
                .named("all_room");
            s.ready().set(all);
            let in_valid = reg_init(1, 0u32).named("in_valid");
            in_valid.set(s.valid() & all);
            // The beat register loads every cycle; only `in_valid` says it holds a beat.
            let held = reg(shape.width()).named("in_beat");
            held.set(shape.pack(&s.beat()));
            let held = shape.unpack(held);
            for (q, o) in fifos.iter().zip(&p.m_axis) {
                q.s_axis.set_beat(&held);
                q.s_axis.valid().set(in_valid);
                // Always ready while `in_valid`: its room was reserved when the beat was taken.
                q.s_axis.ready().unused();
                connect(&q.m_axis, o);
            }
        },
    )
}
