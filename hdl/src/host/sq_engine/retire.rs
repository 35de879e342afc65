//! The retire side of `sq_engine`: WQEs whose gathers have been issued wait here, in the order
//! they were issued, until every DMA answer of theirs has landed in the gather buffer; then
//! their frames go out of the buffer on `m_axis_tx` (with their offload requests) and their
//! completions on `m_cmpl`.
//!
//! - The issue side pushes one [`Retire`] record per WQE (after it has issued the WQE's last
//!   read and copied its last inline byte) into a FIFO of `ENTRIES`, and before it one packet
//!   length per frame into a FIFO of `PACKETS` (a SEND has one packet, a multi-packet WQE one
//!   per data segment, a failed WQE or a NOP none). The FIFO slot a WQE will take is its id
//!   (`wr_id`): the issue side marks each data read with it, so the head is ready once no busy
//!   tag carries its id.
//! - The gather buffer is a ring: a WQE's packets sit at 64-byte starts from where the
//!   previous WQE's space ended (`alloc` bytes each); the head's space is freed when it
//!   retires, so the issue side reserves a WQE's space before its reads and gathers as far
//!   ahead as the ring, the tags and the FIFO allow.
//! - A DMA answer with an error (`err` bit of the WQE's id) fails the WQE when it retires:
//!   none of its packets is sent, its CQE is REQ_ERR with LOCAL_ACCESS, and WQEs of the same
//!   SQ issued after it are flushed (neither sent nor completed: the SQ stops at the failed
//!   WQE, as when the issue side finds a fault). The flush holds until a queue command is
//!   taken (which waits for this side to be empty); the issue side is told (`fault_*`) to
//!   put the SQ in error with its consumer counter after the failed WQE.
//! - An LSO send longer than a WQE's share of the ring is gathered in pieces, one record each
//!   (`cont`: not the first, `more`: not the last): a piece's beats follow the piece before
//!   it in one frame, its request queued with the first, the CQE made with the last. A piece
//!   failed by a DMA answer after earlier pieces left ends the frame with the abort beat
//!   (`frame_out`) and the error CQE; the WQE's later pieces are flushed with the SQ's later
//!   WQEs. A failed first piece fails the WQE as any WQE's failure does.
//! - Throughput: a packet every `ceil(len / B) + 2` cycles (the offload request queued, then
//!   the beats; the TX path takes the requests from their FIFO later, `frame_out`); a CQE one
//!   cycle after its WQE's last packet.

use super::super::cq_engine::Cmpl;
use super::super::regs::consts::{cqe_opcode, syndrome};
use super::frame_out;
use crate::eth::eth_tx::TxCmd;
use crate::overlay::tx_tso::TsoCmd;
use crate::stream::Stream;
use nicgen_edsl::prelude::*;

/// WQEs issued and not yet retired, at most (a power of two).
pub(super) const ENTRIES: u32 = 16;

/// Packet lengths queued, at most (a power of two; at least a multi-packet WQE's 14).
pub(super) const PACKETS: u32 = 16;

nicgen_edsl::record! {
    /// A WQE handed from the issue side: its completion and offload request.
    pub(super) struct Retire {
        sqn: 8,
        cqn: 16,
        /// The WQE's first WQEBB counter (the CQE's `wqe_counter`).
        wqe_counter: 16,
        /// The consumer counter after the WQE (where the SQ resumes if it fails here).
        next_ci: 16,
        opcode: 8,
        /// A CQE is asked for (CQ_UPDATE).
        want_cqe: 1,
        /// The issue side failed the WQE (`syndrome`, `vendor`): no packets.
        failed: 1,
        syndrome: 8,
        /// `vendor_err_synd`: the failing segment's index, or the DS count.
        vendor: 8,
        byte_cnt: 32,
        csum_l3: 1,
        csum_l4: 1,
        vlan: 1,
        vlan_tci: 16,
        /// Every packet's encapsulation: the SQ's context (`TxCmd::encap`, `encap_ctx`).
        encap: 1,
        encap_ctx: 8,
        /// The segmentation request (a packed `TsoCmd`, `lso = 0` but for an LSO send).
        tso: TsoCmd::WIDTH,
        /// Packets queued for it (0..=14).
        packets: 5,
        /// Gather-buffer bytes it holds (a multiple of 64; 0 when it gathered nothing).
        alloc: 15,
        /// A piece of an LSO send after its first: its beats continue the frame.
        cont: 1,
        /// A piece of an LSO send before its last: the frame goes on with the next record.
        more: 1,
    }
}

nicgen_edsl::states! {
    /// The retire side's states.
    pub(super) enum RetireState {
        Idle,
        /// Queue the packet's offload request (when the request FIFO has room), rewind the
        /// buffer read.
        Cmd,
        /// Stream the packet out.
        Send,
        /// Drop the packets of a failed or flushed WQE, one a cycle.
        Skip,
        /// End a frame whose later piece failed with the abort beat.
        Abort,
        /// The CQE (if one is due), then the WQE's space is freed.
        Cqe,
    }
}

/// What the retire side needs from the issue side.
pub(super) struct In<'a> {
    pub tx: &'a Stream,
    pub tx_cmd: &'a RecordStream<TxCmd<u32>>,
    pub cmpl: &'a RecordStream<Cmpl<u32>>,
    /// The gather buffer's byte lanes.
    pub lanes: &'a [Mem],
    /// Bits of a byte position in the ring.
    pub pos_bits: u32,
    /// Push a WQE (`entry`, a packed [`Retire`]); only while `Out::room`.
    pub push: Sig,
    pub entry: Sig,
    /// Push a packet length (`pos_bits`); only while `Out::pk_room`.
    pub pk_push: Sig,
    pub pk_len: Sig,
    /// The data tags' busy bits and the WQE id each carries.
    pub tag_busy: Sig,
    pub tag_owner: Vec<Sig>,
    /// Per WQE id: one of its answers came with an error.
    pub err: Sig,
    /// Clear every flush (a queue command is taken; this side is empty).
    pub clear_flush: Sig,
    /// Number of SQs (bits of the flush map).
    pub sqs: u32,
}

/// What the issue side learns back.
pub(super) struct Out {
    /// The id the next pushed WQE gets.
    pub wr_id: Sig,
    /// A WQE may be pushed (`ENTRIES` not all taken).
    pub room: Sig,
    /// No WQE is waiting or retiring.
    pub empty: Sig,
    /// A packet length may be pushed.
    pub pk_room: Sig,
    /// Bytes of the ring freed so far (`pos_bits + 1`, wrapping): the ring's space up to it.
    pub freed: Sig,
    /// Per SQ: its WQEs are being flushed.
    pub flush: Sig,
    /// A data error failed a WQE this cycle: put SQ `fault_sqn` in error at `fault_ci`,
    /// consumer counter `fault_next`.
    pub fault: Sig,
    pub fault_sqn: Sig,
    pub fault_ci: Sig,
    pub fault_next: Sig,
    /// Events for the counters: a WQE retired (flushed ones are not), in error, a frame sent.
    pub wqe_done: Sig,
    pub wqe_error: Sig,
    pub sent: Sig,
}

pub(super) fn retire(i: In) -> Out {
    use RetireState as R;
    let pos_bits = i.pos_bits;
    let id_bits = ENTRIES.trailing_zeros();
    let pk_bits = PACKETS.trailing_zeros();
    let state = Fsm::new("retire", R::Idle);
    let is = |s: RetireState| state.is(s);
    let up64 = |v: Sig| (v + 63u32) & lit(v.width(), ((1u64 << v.width()) - 1) & !63);

    // ---- The WQE FIFO (LUT RAM) ----
    let wr = reg_init(id_bits + 1, 0u32).named("rt_wr");
    let rd = reg_init(id_bits + 1, 0u32).named("rt_rd");
    let mem = memory("retire_fifo", Retire::WIDTH, ENTRIES);
    mem.write(i.push, wr.trunc(id_bits), i.entry);
    wr.set_if(i.push, wr + 1u32);
    let count = (wr - rd).named("rt_count");
    let rd_id = rd.trunc(id_bits).named("rt_head_id");
    let head = Retire::unpack(mem.read_async(rd_id).named("rt_head"));
    let has = count.ne(0u32).named("rt_has_head");

    // ---- The packet FIFO (LUT RAM) ----
    let pk_wr = reg_init(pk_bits + 1, 0u32).named("pk_wr");
    let pk_rd = reg_init(pk_bits + 1, 0u32).named("pk_rd");
    let pk_mem = memory("packet_fifo", pos_bits, PACKETS);
    pk_mem.write(i.pk_push, pk_wr.trunc(pk_bits), i.pk_len);
    pk_wr.set_if(i.pk_push, pk_wr + 1u32);
    let pk_len = pk_mem.read_async(pk_rd.trunc(pk_bits)).named("packet_len");

    // The head is ready once none of its reads is outstanding.
    let owned: Vec<Sig> = i
        .tag_owner
        .iter()
        .enumerate()
        .map(|(t, &o)| i.tag_busy.bit(t as u32) & o.eq(rd_id))
        .collect();
    let ready = (has & !cat(&owned).or_reduce()).named("rt_head_ready");

    // ---- Verdict, taken once in Idle ----
    let flush = reg_init(i.sqs, 0u32).named("flush");
    let sq_one = lit(i.sqs, 1u32).shl_by(head.sqn);
    let flushed = (flush & sq_one).ne(0u32).named("rt_flushed");
    let gathered = head.alloc.ne(0u32);
    let data_err = (!head.failed & gathered & i.err.shr_by(rd_id).bit(0)).named("rt_data_err");
    let take = (is(R::Idle) & ready).named("rt_take");
    let fault = (take & !flushed & data_err).named("rt_fault");
    flush.set(select(
        &[(i.clear_flush, lit(i.sqs, 0u32)), (fault, flush | sq_one)],
        flush,
    ));
    let skip = reg(1).named("rt_skip"); // flushed: no frame, no CQE
    let bad = reg(1).named("rt_bad"); // failed on either side: error CQE, no frame
    let dbad = reg(1).named("rt_data_bad"); // failed by a DMA answer
    skip.set_if(take, flushed);
    bad.set_if(take, head.failed | data_err);
    dbad.set_if(take, data_err);

    // ---- Packets ----
    let k = reg(5).named("rt_packet"); // packets of the head done
    let at = reg(pos_bits).named("rt_packet_start");
    let freed = reg_init(pos_bits + 1, 0u32).named("rt_freed");
    let has_pk = head.packets.ne(0u32);
    let last_pk = (k + 1u32).eq(head.packets);
    let out = frame_out::frame_out(
        i.tx,
        i.tx_cmd,
        i.lanes,
        frame_out::Ctl {
            total: pk_len,
            start: at
                .shr(i.lanes.len().trailing_zeros())
                .trunc(i.lanes[0].addr_width()),
            send: is(R::Send),
            cmd: is(R::Cmd),
            cont: head.cont,
            more: head.more,
            abort: is(R::Abort),
            cmd_data: TxCmd {
                csum_l3: head.csum_l3,
                csum_l4: head.csum_l4,
                vlan: head.vlan,
                vlan_tci: head.vlan_tci,
                encap: head.encap,
                encap_ctx: head.encap_ctx,
                tso: head.tso,
            }
            .pack(),
            pos_bits,
        },
    );
    let sent = out.sent;
    let skipped = is(R::Skip);
    // A piece that aborts its frame has one packet (the piece), dropped with the abort beat.
    let pk_pop = sent | skipped | out.aborted;
    pk_rd.set_if(pk_pop, pk_rd + 1u32);
    k.set(select(&[(take, lit(5, 0u32)), (pk_pop, k + 1u32)], k));
    at.set(select(
        &[(take, freed.trunc(pos_bits)), (sent, at + up64(pk_len))],
        at,
    ));

    // ---- Completion ----
    // A piece before the last has no CQE of its own (unless it failed: then it ends the WQE).
    let want = !skip & (bad | (head.want_cqe & !head.more));
    i.cmpl.set_fields(&Cmpl {
        cqn: head.cqn,
        opcode: mux(bad, lit(4, cqe_opcode::REQ_ERR), lit(4, cqe_opcode::REQ)),
        syndrome: select(
            &[(dbad, lit(8, syndrome::LOCAL_ACCESS)), (bad, head.syndrome)],
            lit(8, 0u32),
        ),
        vendor_err_synd: mux(bad, head.vendor, lit(8, 0u32)),
        qpn: head.sqn.zext(24),
        s_wqe_opcode: head.opcode,
        wqe_counter: head.wqe_counter,
        byte_cnt: mux(bad, lit(32, 0u32), head.byte_cnt),
        ..Cmpl::zeros()
    });
    i.cmpl.valid.set(is(R::Cqe) & want);
    let pop = (is(R::Cqe) & (!want | i.cmpl.ready)).named("rt_pop");
    rd.set_if(pop, rd + 1u32);
    freed.set_if(pop, freed + head.alloc.zext(pos_bits + 1));

    let to = |s: RetireState| s.lit();
    state.set(select(
        &[
            (
                take,
                select(
                    &[
                        (!has_pk, to(R::Cqe)),
                        (!flushed & data_err & head.cont, to(R::Abort)),
                        (flushed | head.failed | data_err, to(R::Skip)),
                    ],
                    to(R::Cmd),
                ),
            ),
            (skipped & last_pk, to(R::Cqe)),
            (out.aborted, to(R::Cqe)),
            (is(R::Cmd) & out.cmd_done, to(R::Send)),
            (sent, mux(last_pk, to(R::Cqe), to(R::Cmd))),
            (pop, to(R::Idle)),
        ],
        state.q(),
    ));

    Out {
        wr_id: wr.trunc(id_bits),
        room: count.lt(ENTRIES as u64),
        empty: !has,
        pk_room: (pk_wr - pk_rd).lt(PACKETS as u64),
        freed,
        flush,
        fault,
        fault_sqn: head.sqn,
        fault_ci: head.wqe_counter,
        fault_next: head.next_ci,
        // A WQE in pieces counts once: with its last piece, or the one that failed.
        wqe_done: pop & !skip & (bad | !head.more),
        wqe_error: pop & !skip & bad,
        sent: sent & !head.more,
    }
}
