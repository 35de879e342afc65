//! The output stage of `sq_engine`: the gathered frame streamed out of the gather buffer on
//! `m_axis_tx` (the lanes read one beat ahead into their output registers), and the offload
//! request held beside it until the TX path takes it.

use crate::stream::Stream;
use nicgen_edsl::prelude::*;

/// What the stage needs from the engine.
pub(super) struct Ctl {
    /// Frame length, bytes (`pos_bits`).
    pub total: Sig,
    /// The frame's first beat in the buffer.
    pub start: Sig,
    /// The engine is in `Send`.
    pub send: Sig,
    /// The engine is in `Cmd` (the frame is ready: rewind, offer the request).
    pub cmd: Sig,
    /// The TX path takes the offload request.
    pub cmd_ready: Sig,
    /// Bits of a byte position in the buffer.
    pub pos_bits: u32,
}

/// What the engine learns back.
pub(super) struct Out {
    /// The frame's last beat and its request are taken: the frame is sent.
    pub sent: Sig,
    /// The offload request is offered (`m_axis_tx_cmd_tvalid`).
    pub cmd_pending: Sig,
}

/// Stream the frame of `ctl.total` bytes from beat `ctl.start` on out of `lanes` (one byte-wide RAM per byte lane of
/// `tx`) on `tx`.
pub(super) fn frame_out(tx: &Stream, lanes: &[Mem], ctl: Ctl) -> Out {
    let b = lanes.len() as u32;
    let bb = b.trailing_zeros();
    let baw = lanes[0].addr_width();
    let Ctl {
        total,
        start,
        send,
        cmd,
        cmd_ready,
        pos_bits,
    } = ctl;
    let out_addr = reg(baw).named("out_beat");
    let out_load = wire(1).named("out_load");
    let rd_lanes: Vec<Sig> = lanes
        .iter()
        .map(|lane| lane.read_sync(out_addr, Some(out_load)))
        .collect();
    let n_beats = ((total.trunc(pos_bits).zext(pos_bits + 1) + (b - 1) as u64).shr(bb))
        .resize(baw + 1)
        .named("frame_beats");
    let loaded = reg_init(baw + 1, 0u32).named("beats_loaded");
    let o_valid = reg_init(1, 0u32).named("tx_valid");
    let o_last = reg(1).named("tx_last");
    let more_out = (send & loaded.lt(n_beats)).named("more_to_send");
    out_load.set((!o_valid | tx.ready()) & more_out);
    out_addr.set(select(
        &[(cmd, start), (out_load, out_addr + 1u32)],
        out_addr,
    ));
    loaded.set(mux(
        send,
        mux(out_load, loaded + 1u32, loaded),
        lit(baw + 1, 0u32),
    ));
    let is_last = loaded.eq(n_beats - 1u32);
    o_last.set_if(out_load, is_last);
    o_valid.set(mux(out_load, 1u32, mux(tx.ready(), 0u32, o_valid)));
    let all_keep = lit(b, (1u128 << b) - 1);
    let last_keep = if b == 1 {
        all_keep
    } else {
        let tail = total.trunc(bb);
        let keep_tail: Vec<(u64, Sig)> = (1..b)
            .map(|n| (n as u64, lit(b, (1u128 << n) - 1)))
            .collect();
        case(tail, &keep_tail, all_keep)
    };
    tx.data()
        .set(cat(&rd_lanes.iter().rev().copied().collect::<Vec<_>>()));
    tx.keep().set(mux(o_last, last_keep, all_keep));
    tx.last().set(o_last);
    tx.valid().set(o_valid);
    // The offload request goes with the frame, not before it: the TX path takes it only once
    // the frame's headers are parsed.
    let cmd_pending = reg_init(1, 0u32).named("cmd_pending");
    let cmd_taken = (cmd_pending & cmd_ready).named("cmd_taken");
    cmd_pending.set(select(
        &[(cmd, lit(1, 1u32)), (cmd_taken, lit(1, 0u32))],
        cmd_pending,
    ));
    let sent = (send & !more_out & (!o_valid | tx.ready()) & (!cmd_pending | cmd_taken))
        .named("frame_sent");
    Out { sent, cmd_pending }
}
