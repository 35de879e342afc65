//! `stream_fifo`: synchronous stream FIFO, optionally in frame (store-and-forward) mode.
//!
//! Storage is one memory of `depth` words holding `{tuser, tlast, tkeep, tdata}` with a
//! combinational read, so Yosys and Vivado map it to LUTRAM. Pointers carry one extra wrap bit
//! (`full` = same index, different wrap bit).
//!
//! **Frame mode** (`frame_mode = true`): the reader sees only complete frames (the write pointer
//! is published at `tlast`). A frame whose last beat carries `tuser[0]` (`bad`, see the stream
//! sideband table) is discarded by rewinding the write pointer; so is a frame with more beats than
//! the FIFO holds (it could never be published). Each drop pulses `stat_drop_bad` or
//! `stat_drop_oversize` for one cycle, so every frame in is accounted for: out + dropped = in.
//! The input is never blocked by a frame being dropped.
//!
//! - Ports: `s_axis_*`, `m_axis_*`, and in frame mode `stat_drop_bad`, `stat_drop_oversize`.
//! - Latency: 1 cycle from a write to `m_axis_tvalid` (plain); in frame mode 1 cycle after the
//!   frame's last beat. Throughput 1 beat/cycle in and out.
//! - Cost: `depth x (data + keep + 1 + user)` bits of LUTRAM, two (three in frame mode) pointers
//!   of `log2(depth) + 1` bits.
//! - Golden model: `nicgen_model::stream::fifo_frames`; test: `testbench/tb/tests/stream_blocks.rs`
//!   (also replayed on Icarus).

use super::{stream_in, stream_out, StreamCfg, TUSER_BAD};
use nicgen_edsl::prelude::*;

/// FIFO parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FifoCfg {
    pub stream: StreamCfg,
    /// Entries (beats); a power of two, at least 2.
    pub depth: u32,
    /// Store-and-forward with dropping of bad and oversize frames (needs `tuser`).
    pub frame_mode: bool,
}

pub fn stream_fifo(cfg: &FifoCfg) -> Result<Rc<ModuleDef>, ElabError> {
    cfg.stream.check("stream_fifo")?;
    if cfg.depth < 2 || !cfg.depth.is_power_of_two() {
        return Err(ElabError::config(
            "stream_fifo",
            format!("FIFO depth {} is not a power of two >= 2", cfg.depth),
        ));
    }
    if cfg.frame_mode && cfg.stream.user_bits == 0 {
        return Err(ElabError::config(
            "stream_fifo",
            "frame mode needs a tuser bit to mark bad frames (user_bits >= 1)",
        ));
    }
    let name = format!(
        "stream_fifo_{}_n{}{}",
        cfg.stream.suffix(),
        cfg.depth,
        if cfg.frame_mode { "_frame" } else { "" }
    );
    let cfg = *cfg;
    Module::build(name, move || {
        doc(&format!(
            "Synchronous stream FIFO, {} beats{}.",
            cfg.depth,
            if cfg.frame_mode {
                ", frame mode (drops bad and oversize frames)"
            } else {
                ""
            }
        ));
        let s = stream_in("s_axis", &cfg.stream);
        let m = stream_out("m_axis", &cfg.stream);
        let aw = clog2(cfg.depth as u64);
        let pw = aw + 1;
        let payload = s.payload();
        let word: Vec<Sig> = payload.iter().rev().map(|(_, sg)| *sg).collect();
        let word = cat(&word);
        let mem = memory("store", word.width(), cfg.depth);

        let wr_ptr = reg_init(pw, 0u32).named("wr_ptr");
        let rd_ptr = reg_init(pw, 0u32).named("rd_ptr");
        let used = (wr_ptr - rd_ptr).named("used");
        let full = used.eq(cfg.depth as u64).named("full");
        let push = wire(1).named("push");
        let write = wire(1).named("write");

        // The pointer the reader may advance to.
        let visible = if cfg.frame_mode {
            reg_init(pw, 0u32).named("wr_commit")
        } else {
            wr_ptr
        };
        let empty = visible.eq(rd_ptr).named("empty");
        let pop = (!empty & m.ready()).named("pop");
        rd_ptr.set_if(pop, rd_ptr + 1u32);

        if cfg.frame_mode {
            let dropping = reg_init(1, 0u32).named("dropping");
            let drop_bad = reg_init(1, 0u32).named("drop_bad_q");
            let drop_big = reg_init(1, 0u32).named("drop_oversize_q");
            let frame_beats = (wr_ptr - visible).named("frame_beats");
            let last = s.last();
            let bad = s.user().expect("checked above").bit(TUSER_BAD);
            s.ready().set(!full | dropping);
            push.set(s.valid() & (!full | dropping));
            // A non-last beat that fills the whole FIFO: the frame can never be published.
            let overflow = (push & !last & !dropping & frame_beats.eq((cfg.depth - 1) as u64))
                .named("overflow");
            let end = (push & last).named("end");
            let discard = (end & (bad | dropping)).named("discard");
            write.set(push & !dropping);
            wr_ptr.set_if(write, wr_ptr + 1u32);
            wr_ptr.set_if(overflow | discard, visible);
            visible.set_if(end & !discard, wr_ptr + 1u32);
            dropping.set_if(overflow, 1u32);
            dropping.set_if(end, 0u32);
            drop_bad.set(end & bad & !dropping);
            drop_big.set(end & dropping);
            output("stat_drop_bad", drop_bad);
            output("stat_drop_oversize", drop_big);
        } else {
            s.ready().set(!full);
            push.set(s.valid() & !full);
            write.set(push);
            wr_ptr.set_if(write, wr_ptr + 1u32);
        }

        mem.write(write, wr_ptr.trunc(aw), word);
        let q = mem.read_async(rd_ptr.trunc(aw)).named("rd_word");
        let mut lo = 0;
        for ((_, dst), (_, src)) in m.payload().into_iter().zip(payload) {
            let w = src.width();
            dst.set(q.slice(lo + w - 1, lo));
            lo += w;
        }
        m.valid().set(!empty);
    })
}
