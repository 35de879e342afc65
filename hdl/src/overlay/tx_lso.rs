//! `tx_lso`: the TX path's segmentation stage. LSO sends go through the TSO engine
//! ([`mod@super::tx_tso`]); every other frame goes around it through a bypass FIFO; the two
//! are merged back in the order the frames came, and each frame (each segment) leaves with its
//! [`FrameCmd`] on a command queue beside it.
//!
//! ```text
//!            +-> tx_tso (TsoCmd, FrameCmd as sideband) --+
//! s_axis ----+                                            +-> merge (in order) -> slice -> m_axis
//! s_axis_cmd +-> bypass FIFO (FrameCmd, drop flag) ------+        |
//!            +-> order FIFO (1 bit per frame) ------------------->+-> command FIFO -> m_cmd
//! ```
//!
//! **Why a bypass.** The TSO engine spends a few cycles per super-frame handing its fixer a
//! segment's request; a frame that is not segmented would pay them too, and one-beat frames
//! (60 bytes at 512 bits) must pass at one a cycle (results/PIPELINE.md). Around the engine they
//! cost one cycle each.
//!
//! **Order.** The order FIFO holds, per frame taken, which side it went to; the merge takes a
//! bypass frame, or a TSO send's frames up to the one the engine flags as the send's last.
//! A side never waits for the other: a send's frames keep leaving the engine while frames
//! behind it wait in the bypass FIFO, and when that fills the input waits.
//!
//! **Refused sends are dropped here, in order.** An LSO command the engine would refuse
//! ([`super::tx_tso::refuses`]) or whose segments could be longer than `max_frame` (`hdr_len +
//! mss`) is sent down the bypass flagged `drop`; a send that ends inside its headers leaves the
//! engine as one frame flagged `bad`. The merge discards both, a beat a cycle, and pulses
//! `stat_bad` at the discarded frame's last beat, so every frame in is a frame out or a count.
//!
//! - Ports ([`LsoPorts`]): `s_axis_*` and `s_axis_cmd_*` ([`TxCmd`], one per frame); `m_axis_*`
//!   (frames and segments, in order) and `m_cmd_*` ([`FrameCmd`], one per frame out, queued at
//!   its first beat); `stat_bad`, `stat_long` (the engine's: a send of more than 256 KiB of
//!   payload, segmented).
//! - Timing (docs/TIMING.md): register slices on both inputs and on the output (rules 1, 2);
//!   the split decides from the slices' flops and the targets' readies, each a flop (the
//!   engine's input and command slices, the FIFOs' `!full`); the merge decides from the order
//!   FIFO's head, the sources' valids and the output slice's and command FIFO's readies.
//! - Latency: a bypassed frame: the input slice, the block-RAM FIFO's write, read and
//!   prefetch, the output slice; a send: the engine's (store and forward per segment,
//!   [`mod@super::tx_tso`]) and the output slice.
//! - Throughput: a beat a cycle on each side; one-beat frames at one a cycle through the
//!   bypass; the engine's segments as it emits them.
//! - Cost: [`mod@super::tx_tso`], a block-RAM FIFO of [`BYPASS_DEPTH`] beats, two small LUT-RAM
//!   FIFOs (1 bit and [`FrameCmd`] wide) and the three slices.
//! - Golden model: `nicgen_model::tx::tx_frames` (segmentation then the per-frame offloads);
//!   test: `testbench/tests/eth/eth_tx.rs` (the TX path with LSO and encapsulation).

use super::tx_tso::{
    refuses, tx_tso, TsoCfg, TsoCmd, USER_BAD, USER_CMD, USER_IN_ABORT, USER_LAST_SEG,
};
use crate::eth::eth_tx::{FrameCmd, TxCmd};
use crate::stream::stream_fifo::{stream_fifo_in, FifoRam};
use crate::stream::{
    beat_reg_slice, record_fifo, record_reg_slice, record_reg_slice_ctl, Beat, FifoCfg, Stream,
    StreamCfg,
};
use nicgen_edsl::prelude::*;
use nicgen_edsl::record::Word;

/// Beats the bypass FIFO holds: how far the input may run ahead of a send still leaving the
/// engine.
pub const BYPASS_DEPTH: u32 = 64;

/// Frames taken and not yet merged (the order FIFO's entries).
const ORDER_DEPTH: u32 = 32;

/// Frame commands queued between the merge and their consumer: the frames in flight from here
/// to the TX path's dispatch (its parser's latency), so that one-beat frames are not throttled.
const CMD_DEPTH: u32 = 64;

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LsoCfg {
    /// Bus width: a power of two from 8 to 512 bits.
    pub data_bits: u32,
    /// Largest `mss` ([`TsoCfg::max_mss`]).
    pub max_mss: u32,
    /// Longest segment, bytes: a send whose `hdr_len + mss` exceeds it is refused.
    pub max_frame: u32,
}

/// The ports of [`tx_lso`].
pub struct LsoPorts {
    /// Frames in; `tuser` ([`USER_IN_ABORT`]) on an LSO send's last beat: the send is aborted.
    pub s_axis: Stream,
    pub cmd: RecordStream<TxCmd<u32>>,
    pub m_axis: Stream,
    pub m_cmd: RecordStream<FrameCmd<u32>>,
    /// A refused send dropped (a pulse at its last beat).
    pub bad: Sig,
    /// A send of more than 256 KiB of payload (segmented all the same).
    pub long: Sig,
}

impl Ports for LsoPorts {
    type Cfg = LsoCfg;
    fn ports(io: &Io, cfg: &LsoCfg) -> Self {
        let s = StreamCfg::new(cfg.data_bits, 0);
        LsoPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(cfg.data_bits, 1)),
            cmd: RecordStream::sink(io, "s_axis_cmd", TxCmd::shape()),
            m_axis: Stream::source(io, "m_axis", &s),
            m_cmd: RecordStream::source(io, "m_cmd", FrameCmd::shape()),
            bad: io.output("stat_bad", 1),
            long: io.output("stat_long", 1),
        }
    }
}

/// The module `tx_lso_d<W>_m<max_mss>`.
pub fn tx_lso(cfg: &LsoCfg) -> Result<Block<LsoPorts>, ElabError> {
    let w = cfg.data_bits;
    let fcw = FrameCmd::WIDTH;
    if cfg.max_frame >= 1 << 16 {
        return Err(ElabError::config(
            "tx_lso",
            format!("max_frame {} must be below 65536", cfg.max_frame),
        ));
    }
    let tso = tx_tso(&TsoCfg {
        data_bits: w,
        max_mss: cfg.max_mss,
        user_bits: fcw,
    })?;
    // Bypass beats carry the frame's command above a drop flag (bit 0).
    let byp = stream_fifo_in(
        &FifoCfg::new(StreamCfg::new(w, fcw + 1), BYPASS_DEPTH),
        FifoRam::Block,
    )?;
    let ord = record_fifo(Word::shape(1), ORDER_DEPTH)?;
    let cq = record_fifo(FrameCmd::shape(), CMD_DEPTH)?;
    let cfg = *cfg;
    Block::build(
        format!("tx_lso_d{w}_m{}", cfg.max_mss),
        cfg,
        move |p: LsoPorts| {
            doc("TX segmentation stage: LSO sends through tx_tso, other frames around it, in order.");
            let u_tso = tso.instance("u_tso");
            let u_byp = byp.instance("u_bypass");
            let u_ord = ord.instance("u_order_q");
            let u_cq = cq.instance("u_cmd_q");

            // ---- Split: at a frame's first beat its command picks the side. ----
            let in_shape = StreamCfg::new(w, 1).beat();
            let in_sl = record_reg_slice("in", in_shape.pack(&p.s_axis.beat()), p.s_axis.valid());
            p.s_axis.ready().set(in_sl.s_ready);
            let inp = in_shape.unpack(in_sl.data);
            let cs = record_reg_slice_ctl("cmd", p.cmd.data, p.cmd.valid);
            p.cmd.ready.set(cs.s_ready);
            let c = TxCmd::unpack(cs.data);
            let t = TsoCmd::unpack(c.tso);
            let seg_len = t.hdr_len.zext(17) + t.mss.zext(17);
            let refused =
                (refuses(&t, cfg.max_mss) | seg_len.gt(cfg.max_frame)).named("lso_refused");
            let to_tso = (t.lso & !refused).named("to_tso");
            let drop = (t.lso & refused).named("lso_drop");
            let mid = reg_init(1, 0u32).named("in_frame");
            let first = !mid;
            let route = reg(1).named("route_tso");
            let held = reg(fcw + 1).named("bypass_user");
            let r_tso = mux(first, to_tso, route).named("in_to_tso");
            let byp_user = mux(
                first,
                cat(&[FrameCmd::of(&c, lit(1, 0u32)).pack(), drop]),
                held,
            );
            let first_ok =
                (cs.valid_ctl & u_ord.s_axis.ready & (!to_tso | u_tso.cmd.ready)).named("first_ok");
            let side_ready = mux(r_tso, u_tso.s_axis.ready(), u_byp.s_axis.ready());
            let ready = (side_ready & (mid | first_ok)).named("in_ready");
            in_sl.ready.set(ready);
            let take = (in_sl.valid & ready).named("in_take");
            let take_first = (take & first).named("in_take_first");
            cs.ready.set(take_first);
            mid.set_if(take, !inp.last);
            route.set_if(take_first, to_tso);
            held.set_if(take_first, byp_user);

            let beat = Beat {
                data: inp.data,
                keep: inp.keep,
                last: inp.last,
                user: byp_user,
            };
            // The engine's `tuser` is the abort flag (its command carries the frame's own); a
            // frame around the engine is never aborted (only an LSO send may be: `sq_engine`).
            u_tso.s_axis.set_beat(&Beat {
                user: inp.user.bit(USER_IN_ABORT),
                ..beat
            });
            u_tso
                .s_axis
                .valid()
                .set(in_sl.valid & r_tso & (mid | first_ok));
            u_tso.cmd.data.set(c.tso);
            u_tso.cmd.valid.set(take_first & to_tso);
            if let Some(u) = u_tso.cmd_user {
                // The engine writes every checksum of a segment.
                u.set(FrameCmd::of(&c, lit(1, 1u32)).pack());
            }
            u_byp.s_axis.set_beat(&beat);
            u_byp
                .s_axis
                .valid()
                .set(in_sl.valid & !r_tso & (mid | first_ok));
            u_ord.s_axis.data.set(to_tso);
            u_ord.s_axis.valid.set(take_first);

            // ---- Merge: the head of the order FIFO names the side of the next frame. ----
            let head = &u_ord.m_axis;
            let sel = head.data.bit(0).named("merge_tso");
            let (a, b) = (&u_byp.m_axis, &u_tso.m_axis);
            let (au, bu) = (
                a.user().expect("bypass tuser"),
                b.user().expect("engine tuser"),
            );
            let s_valid = (head.valid & mux(sel, b.valid(), a.valid())).named("merge_valid");
            let s_last = mux(sel, b.last(), a.last());
            let s_cmd = mux(
                sel,
                bu.slice(bu.width() - 1, USER_CMD),
                au.slice(au.width() - 1, 1),
            );
            let discard = mux(sel, bu.bit(USER_BAD), au.bit(0)).named("merge_discard");
            let out_valid = wire(1).named("out_in_valid");
            let out = beat_reg_slice(
                "out",
                mux(sel, b.data(), a.data()),
                mux(sel, b.keep(), a.keep()),
                s_last,
                out_valid,
            );
            let o_first = reg_init(1, 1u32).named("out_first");
            let fwd_ok = (out.slice.s_ready & (!o_first | u_cq.s_axis.ready)).named("merge_fwd_ok");
            let go = (s_valid & (discard | fwd_ok)).named("merge_go");
            a.ready().set(go & !sel);
            b.ready().set(go & sel);
            let fwd = (go & !discard).named("merge_fwd");
            out_valid.set(fwd);
            let end = (go & s_last & (!sel | bu.bit(USER_LAST_SEG))).named("merge_end");
            head.ready.set(end);
            o_first.set_if(go, s_last);
            u_cq.s_axis.data.set(s_cmd);
            u_cq.s_axis.valid.set(fwd & o_first);
            out.drive(&p.m_axis);
            connect(&u_cq.m_axis, &p.m_cmd);
            let bad_q = reg_init(1, 0u32).named("stat_bad_q");
            bad_q.set(go & discard & s_last);
            p.bad.set(bad_q);
            // The engine's own count of refused sends is the merge's discards here: the split
            // refuses what the engine would, and the engine's short sends come out flagged.
            u_tso.bad.unused();
            p.long.set(u_tso.long);
        },
    )
}
