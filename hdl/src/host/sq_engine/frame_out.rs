//! The output stage of `sq_engine`: the gathered frame streamed out of the gather buffer on
//! `m_axis_tx` (the lanes read one beat ahead into their output registers), and the offload
//! requests queued beside it for the TX path.
//!
//! An LSO send gathered in pieces (`sq_engine`) leaves as one frame: each piece is streamed in
//! turn, the request queued with the first, `tlast` on the last piece's last beat. A piece
//! that failed after earlier ones left ends the frame with one abort beat: one byte, `tlast`
//! and `tuser` set (`crate::overlay::tx_tso::USER_IN_ABORT`).
//!
//! The TX path takes a frame's request only once its parser has the frame's headers, some
//! twenty cycles after the frame's last beat; the requests therefore wait in a FIFO of
//! [`CMDS`] (LUT RAM), in frame order, so the next frames stream out meanwhile.

use crate::eth::eth_tx::TxCmd;
use crate::stream::Stream;
use nicgen_edsl::prelude::*;

/// Offload requests queued for the TX path, at most (a power of two): more than the frames
/// the TX path holds between its input and its dispatch.
pub(super) const CMDS: u32 = 8;

/// What the stage needs from the engine.
pub(super) struct Ctl {
    /// Frame length, bytes (`pos_bits`).
    pub total: Sig,
    /// The frame's first beat in the buffer.
    pub start: Sig,
    /// The engine is in `Send`.
    pub send: Sig,
    /// The engine is in `Cmd` (the frame is ready: rewind, queue the request unless `cont`).
    pub cmd: Sig,
    /// The piece continues a frame (no request: it went with the first piece).
    pub cont: Sig,
    /// More pieces of the frame follow (no `tlast`).
    pub more: Sig,
    /// The engine is in `Abort`: end the frame with the abort beat.
    pub abort: Sig,
    /// The frame's offload request (a packed [`TxCmd`]).
    pub cmd_data: Sig,
    /// Bits of a byte position in the buffer.
    pub pos_bits: u32,
}

/// What the engine learns back.
pub(super) struct Out {
    /// The frame's last beat is taken: the frame is sent.
    pub sent: Sig,
    /// `Cmd` may end: the request FIFO has room for the request, or there is none to queue.
    pub cmd_done: Sig,
    /// The abort beat is loaded into the output register.
    pub aborted: Sig,
}

/// Stream the frame of `ctl.total` bytes from beat `ctl.start` on out of `lanes` (one byte-wide
/// RAM per byte lane of `tx`) on `tx`, its request (queued in `Cmd`) on `tx_cmd`.
pub(super) fn frame_out(
    tx: &Stream,
    tx_cmd: &RecordStream<TxCmd<u32>>,
    lanes: &[Mem],
    ctl: Ctl,
) -> Out {
    let b = lanes.len() as u32;
    let bb = b.trailing_zeros();
    let baw = lanes[0].addr_width();
    let Ctl {
        total,
        start,
        send,
        cmd,
        cont,
        more,
        abort,
        cmd_data,
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
    let o_abort = reg(1).named("tx_abort");
    let more_out = (send & loaded.lt(n_beats)).named("more_to_send");
    let free = (!o_valid | tx.ready()).named("tx_free");
    out_load.set(free & more_out);
    let abort_load = (abort & free).named("abort_load");
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
    o_last.set(select(
        &[(abort_load, lit(1, 1u32)), (out_load, is_last & !more)],
        o_last,
    ));
    o_abort.set(select(
        &[(abort_load, lit(1, 1u32)), (out_load, lit(1, 0u32))],
        o_abort,
    ));
    o_valid.set(mux(
        out_load | abort_load,
        1u32,
        mux(tx.ready(), 0u32, o_valid),
    ));
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
    tx.keep().set(select(
        &[(o_abort, lit(b, 1u32)), (o_last, last_keep)],
        all_keep,
    ));
    tx.last().set(o_last);
    tx.user().expect("m_axis_tx_tuser").set(o_abort);
    tx.valid().set(o_valid);
    // The request FIFO: written in `Cmd` when it has room, read by the TX path in order.
    let cb = CMDS.trailing_zeros();
    let c_wr = reg_init(cb + 1, 0u32).named("tx_cmd_wr");
    let c_rd = reg_init(cb + 1, 0u32).named("tx_cmd_rd");
    let c_mem = memory("tx_cmd_fifo", TxCmd::WIDTH, CMDS);
    let cmd_room = (c_wr - c_rd).lt(CMDS as u64).named("tx_cmd_room");
    let c_push = (cmd & !cont & cmd_room).named("tx_cmd_push");
    c_mem.write(c_push, c_wr.trunc(cb), cmd_data);
    c_wr.set_if(c_push, c_wr + 1u32);
    let c_valid = c_wr.ne(c_rd).named("tx_cmd_valid");
    c_rd.set_if(c_valid & tx_cmd.ready, c_rd + 1u32);
    tx_cmd.data.set(c_mem.read_async(c_rd.trunc(cb)));
    tx_cmd.valid.set(c_valid);
    let sent = (send & !more_out & free).named("frame_sent");
    Out {
        sent,
        cmd_done: cont | cmd_room,
        aborted: abort_load,
    }
}
