//! `rq_engine`: the receive queues: each delivered frame from the RX path goes to the RQ its
//! RSS queue names, is scattered by DMA into the buffers of that RQ's next receive WQE, and
//! completes with a CQE carrying the RX path's verdicts (checksums, checksum-complete, RSS hash
//! and type, VLAN).
//!
//! ```text
//! s_axis_rx (frame) -> frame ring (block RAM) + {end, length} FIFO     (intake, beside the FSM)
//!   -> head frame + s_axis_rx_meta (its record) -> RQ context (LUT RAM)
//!   -> producer counter from the doorbell record when the cached one is used up
//!   -> receive WQE (scatter list, up to 16 data segments), from the WQE cache (block RAM,
//!      shared by the RQs), read into it (DMA) unless read ahead -> per segment, per 4 KiB
//!      piece:
//!      m_dma_wr_req + m_dma_wr (the frame's bytes from their position in the ring: off)
//!   -> the frame's ring space freed
//!   -> m_cmpl (RESP_SEND CQE request) after the last data beat was taken
//!   -> the RQ's next WQEs read into the WQE cache (in the background) if they are posted
//! ```
//!
//! - A frame's data leaves the RX path before its record (the record waits for the checksum
//!   of the whole frame), so the engine takes the frame first, then records, skipping the
//!   records of dropped frames (they have no data).
//! - Intake: frames go into a ring (block RAM, twice `max_frame` rounded up to a power of
//!   two, each frame from a beat-aligned start right after the one before) beside the main
//!   FSM, each frame's end and length into a 16-entry FIFO (LUT RAM). `s_axis_rx_tready` is a
//!   flop: high within a frame, or while the ring has room for a whole `max_frame` frame and
//!   the FIFO a place (so a frame once started is never stalled). The main FSM takes the head
//!   frame with the next record that is not a drop's, scatters it from its start (the ring's
//!   free pointer) and frees its space (the free pointer to its end) at its completion or its
//!   drop, in order. A frame over `max_frame` keeps its first `max_frame` bytes' beats.
//! - A frame for an RQ that is not ready (never created, or in error) is dropped and counted
//!   (`stat_no_queue`); one for an RQ with no posted WQE is dropped and counted
//!   (`stat_no_wqe`, the mlx5 "out of buffer" counter).
//! - WQE cache: [`RQ_WQE_CACHE`] entries shared by the RQs, each the first 256 bytes of one
//!   WQE (block RAM at {entry, beat}) with registers for its state (free, reading, ready), RQ,
//!   WQE counter, an error flag (its read was answered with an error: the frame that uses the
//!   WQE gets LOCAL_ACCESS) and a stale flag. A frame finds its WQE by {RQ, consumer counter}
//!   over the entries: ready, it is copied into the WQE register (one cycle a datapath beat);
//!   reading, the frame waits for it; nowhere, it is read now into the lowest free entry (or,
//!   with none free, into a ready entry of another RQ, whose WQE is read again when its own
//!   frame comes, so a full cache never stops the engine). Each RQ's context has a read-ahead
//!   pointer `ra`: its WQEs `ci..ra` are in the cache or on the way. While a frame waits for
//!   its WQE (state `WqeWait`) and after each frame (state `Ahead`), WQE `ra` of its RQ is read
//!   into the lowest free entry, one a cycle, while the producer counter the engine knows
//!   says it is posted (never a WQE beyond it: the doorbell record is still read only when
//!   the known WQEs are used up), the RQ has fewer than [`RQ_WQE_AHEAD`] WQEs there (so one
//!   busy RQ leaves entries to the others) and an entry is free. The reads go on while the
//!   engine takes other frames, so one RQ's frames back to back find their WQEs read ahead
//!   instead of waiting a DMA round trip each. A WQE used up frees its entry. A command on an
//!   RQ (CREATE, DESTROY, RESET) frees its ready entries, marks its reading ones stale (the
//!   answer is dropped and the entry freed when it lands) and sets `ra` to `ci`. The driver
//!   rewrites a WQE only after it is used up, so a WQE read ahead is the one a read at the
//!   frame would give.
//! - A scatter list ends at a segment with byte count 0 (mlx5 ends it with lkey 0x100), or at
//!   16 segments or the WQE stride. A segment outside its memory region (or an invalid lkey)
//!   → LOCAL_PROT; a frame longer than the list → LOCAL_LENGTH; a WQE read answered with an
//!   error → LOCAL_ACCESS (on the frame that uses the WQE, when it was read ahead). Each gives an error CQE (RESP_ERR, syndrome, `vendor_err_synd` =
//!   segment index), consumes the WQE, drops the frame, and puts the RQ in error until RESET
//!   (bytes already written into earlier segments stay).
//! - Striding (multi-packet) RQs (mlx5 MPWRQ; CREATE's `striding`, `log_num_strides`,
//!   `log_stride_size`): a WQE is a 16-byte next segment (not read: the ring is cyclic) and one
//!   data segment, a buffer of strides. A frame goes to the current WQE from its next free
//!   stride, taking ceil(len / stride size) strides; its CQE has that first stride in
//!   `wqe_counter`, the WQE (the RQ's 16-bit WQE counter) in `wqe_id` (mlx5
//!   `mlx5e_handle_rx_cqe_mpwrq` finds the WQE by it) and byte_cnt = strides consumed << 16 |
//!   length; fillers and error CQEs carry their WQE's `wqe_id` too, plain RQs' CQEs 0. A frame needing more
//!   strides than the WQE has left first gets a filler CQE (byte_cnt bit 31, the strides left,
//!   no data: `Filler`, `FillAdv`) and starts over at the next WQE, where no WQE is a counted
//!   drop as above. A WQE is used up when its strides are (or by an error CQE). The bytes a
//!   frame may use are the data segment's byte count from its first stride: a frame longer
//!   (segment 2) or needing more strides than a whole WQE (segment 1) → LOCAL_LENGTH.
//!   `stat_cqes` counts frame completions, not fillers. A striding WQE stays in its cache
//!   entry until used up, and in the WQE register between frames: the next frame into the same WQE
//!   is not read again (nor copied, when no frame of another RQ came in between).
//! - Ports ([`RqPorts`]): `s_axis_rx_*`, `s_axis_rx_meta_*` ([`RxMeta`]), `s_qcmd_*` /
//!   `m_qcmd_res_*` (RQ commands), `m_dma_rd_req_*` / `s_dma_rd_cpl_*` (tags
//!   `0..`[`RQ_DMA_TAGS`]: 0 doorbell records, `i + 1` the read into WQE-cache entry `i`;
//!   answers in any order),
//!   `m_dma_wr_req_*` (`DmaWrReq`) / `m_dma_wr_*`, `mr_lkey` → `mr_valid/_base/_len`
//!   ([`MrLookup`]), `m_cmpl_*` ([`Cmpl`]), `stat_*` ([`RqStats`]).
//! - States: [`RqState`].
//! - Throughput: the intake takes a beat a cycle while the main FSM handles one frame at a
//!   time (record, WQE, scatter, completion), so a frame's scatter overlaps the next frames'
//!   arrival: back to back, large frames cost their output beats plus the per-frame steps
//!   below, not their input beats as well; the ring holds at least two `max_frame` frames
//!   (up to 16 small ones). Each WQE is read once (unless its entry went to another RQ's
//!   frame); a frame's WQE read ahead (the steady state while at most
//!   `RQ_WQE_CACHE / RQ_WQE_AHEAD` RQs are busy and an RQ's frames come no faster than
//!   [`RQ_WQE_AHEAD`] a DMA round trip) costs a copy of `wqe_len / (data_bits / 8)`
//!   cycles plus one (plain 64-byte WQEs on a 64-bit datapath: 9) instead of a round trip, and
//!   the reads ahead after it a cycle each plus one (`Ahead`); a filler adds a CQE and three
//!   cycles.
//!   Latency: the whole frame into the ring (its record comes after it anyway; the cycle after
//!   its last beat it can be taken), a doorbell-record read when the cached producer counter
//!   is used up (striding: only when a WQE is used up), a WQE read when it was not read ahead
//!   (an RQ's first frame, the first after its known WQEs ran out or after a command; a frame
//!   whose WQE is on the way waits for that read), then the writes.
//! - Cost: the WQE register (most of the flip-flops), the WQE cache (`RQ_WQE_CACHE` x 256
//!   bytes of block RAM, 8 KiB, whatever the number of RQs) with 20 + log2(RQs) bits of
//!   registers per entry (state, stale, error, RQ, WQE counter) and a comparator per entry on
//!   {RQ, WQE counter}, the RQ contexts in LUT RAM (25 bits per RQ for the stride geometry and
//!   cursor plus a 16-bit stride adder, 16 for the read-ahead pointer), the frame ring in block
//!   RAM (2 x `max_frame` rounded up to a power of two) and its 16-entry FIFO in LUT RAM (end
//!   pointer and length); no row in results/AREA.md (doorbell-to-CQE figures:
//!   results/HOST.md).
//! - Golden model: `nicgen_model::rq`; test: `testbench/tests/host/rq_engine.rs`.

use super::cq_engine::Cmpl;
use super::desc;
use super::mr_table::MrLookup;
use super::qctx::{sweep, QcmdPort};
use super::regs::consts::{cqe_opcode, qstate, qtype, syndrome};
use super::regs::desc::{data_seg, dbr};
use super::{DmaRdCplUser, DmaRdReq, DmaWrReq, QcmdReq, QcmdRes};
use crate::eth::eth_rx::RxMeta;
use crate::rss::rss_toeplitz::cqe_rss_hash_type_sig;
use crate::stats::event_counter;
use crate::stream::{Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// Entries of the WQE cache: each holds the first 256 bytes of one receive WQE of any RQ,
/// read ahead or read for the frame that needs it. Four RQs' read-ahead depth
/// ([`RQ_WQE_AHEAD`]): RSS spreads a host's flows over its queues, and four busy RQs keep
/// their WQEs read ahead without taking each other's entries.
pub const RQ_WQE_CACHE: u32 = 32;

/// WQEs one RQ may have in the WQE cache at once (its consumer counter's and the ones after),
/// so that one busy RQ leaves entries to the others.
pub const RQ_WQE_AHEAD: u32 = 8;

/// DMA read tags the engine uses, `0..RQ_DMA_TAGS`: 0 for doorbell records, `i + 1` for the
/// read into WQE-cache entry `i`. It reads an answer's tag modulo `2^RQ_TAG_BITS`, so a
/// parent may move its tags by a multiple of that and route the answers back unchanged.
pub const RQ_DMA_TAGS: u32 = RQ_WQE_CACHE + 1;

/// Bits of the engine's tags (the low bits of an answer's tag it looks at).
pub const RQ_TAG_BITS: u32 = 6;
const _: () = assert!(RQ_DMA_TAGS <= 1 << RQ_TAG_BITS);
const _: () = assert!(RQ_WQE_CACHE.is_power_of_two() && RQ_WQE_AHEAD <= RQ_WQE_CACHE);

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RqCfg {
    pub data_bits: u32,
    /// Receive queues (RQNs `0..rqs`); the RX path's queue numbers index them.
    pub rqs: u32,
    /// Width of the RX record's queue field.
    pub queue_bits: u32,
    /// Completion queues (a CREATE's CQ must be below this).
    pub cqs: u32,
    /// Memory-region table entries.
    pub mrs: u32,
    /// Largest frame the RX path delivers (bytes, without FCS).
    pub max_frame: u32,
    /// Largest log2 ring size (WQEs) accepted by CREATE.
    pub log_max: u32,
}

nicgen_edsl::record! {
    /// The engine's counters (`stat_<field>`, 32 bits, wrapping).
    pub struct RqStats {
        /// Records of delivered frames taken.
        frames: 32,
        /// Frames dropped: their RQ is not ready.
        no_queue: 32,
        /// Frames dropped: their RQ has no posted WQE.
        no_wqe: 32,
        /// Completions in error.
        errors: 32,
        /// Frame completions (CQE requests) made; striding RQ filler CQEs are not counted.
        cqes: 32,
    }
}

/// The engine's ports.
pub struct RqPorts {
    /// Delivered frames (`s_axis_rx`) and their records (`s_axis_rx_meta`, [`RxMeta`]).
    pub rx: Stream,
    pub rx_meta: RecordStream<RxMeta<u32>>,
    /// RQ commands (`s_qcmd`) and their answers (`m_qcmd_res`).
    pub qcmd: RecordStream<QcmdReq<u32>>,
    pub qcmd_res: RecordStream<QcmdRes<u32>>,
    /// DMA reads of doorbell records and WQEs (`m_dma_rd_req`, `s_dma_rd_cpl`).
    pub dma_rd_req: RecordStream<DmaRdReq<u32>>,
    pub dma_rd_cpl: Stream,
    /// DMA writes of the frames (`m_dma_wr_req`, `m_dma_wr`).
    pub dma_wr_req: RecordStream<DmaWrReq<u32>>,
    pub dma_wr: Stream,
    /// The memory-region lookup (`mr_lkey`, `mr_valid/_base/_len`).
    pub mr: MrLookup,
    /// Completion requests to the CQ engine (`m_cmpl`).
    pub cmpl: RecordStream<Cmpl<u32>>,
    /// Counters (`stat_*`).
    pub stats: RqStats,
}

impl Ports for RqPorts {
    type Cfg = RqCfg;
    fn ports(io: &Io, cfg: &RqCfg) -> Self {
        let scfg = StreamCfg::new(cfg.data_bits, 0);
        RqPorts {
            rx: Stream::sink(io, "s_axis_rx", &scfg),
            rx_meta: RecordStream::sink(io, "s_axis_rx_meta", RxMeta::shape(cfg.queue_bits)),
            qcmd: RecordStream::sink(io, "s_qcmd", QcmdReq::shape()),
            qcmd_res: RecordStream::source(io, "m_qcmd_res", QcmdRes::shape()),
            dma_rd_req: RecordStream::source(io, "m_dma_rd_req", DmaRdReq::shape()),
            dma_rd_cpl: Stream::sink(
                io,
                "s_dma_rd_cpl",
                &StreamCfg::new(cfg.data_bits, DmaRdCplUser::WIDTH),
            ),
            dma_wr_req: RecordStream::source(io, "m_dma_wr_req", DmaWrReq::shape()),
            dma_wr: Stream::source(io, "m_dma_wr", &scfg),
            mr: MrLookup::engine(io, cfg.mrs),
            cmpl: RecordStream::source(io, "m_cmpl", Cmpl::shape()),
            stats: io.outputs("stat_", &RqStats::shape()),
        }
    }
}

nicgen_edsl::record! {
    /// RQ context word in the RAM.
    struct RqCtx {
        /// Ring address >> 12.
        base: 52,
        log_size: 5,
        log_stride: 4,
        /// Doorbell record address >> 3.
        dbr: 61,
        cqn: 16,
        ci: 16,
        pc: 16,
        synd: 8,
        err_wqe: 16,
        state: 2,
        /// Striding (multi-packet) RQ.
        striding: 1,
        /// Striding: log2 strides per WQE, log2 bytes per stride.
        log_nstr: 4,
        log_ssz: 4,
        /// Striding: strides of WQE `ci` already used.
        stride: 16,
        /// Read-ahead pointer: the WQE cache holds (or is reading) this RQ's WQEs `ci..ra`.
        ra: 16,
    }
}

nicgen_edsl::states! {
    /// The engine's states (one frame at a time; frames come in beside them).
    pub enum RqState {
        Init,
        Idle,
        Qcmd,
        /// A frame is in the ring: waiting for its record.
        Meta,
        Ctx,
        DbrReq,
        DbrWait,
        DbrGot,
        /// No read of the frame's WQE in flight: one is issued.
        WqeReq,
        /// The frame's WQE is being read into a WQE-cache entry (the RQ's next WQEs are
        /// read ahead meanwhile).
        WqeWait,
        /// The WQE-cache entry into the WQE register.
        Copy,
        Seg,
        WrReq,
        WrData,
        Cmpl,
        Advance,
        /// Reads of the RQ's next WQEs into the WQE cache, one a cycle, while the RQ may
        /// have more there.
        Ahead,
        /// Striding RQ: the filler CQE for the strides the frame could not use.
        Filler,
        /// Striding RQ: the WQE after the filler; the frame starts over at `Ctx`.
        FillAdv,
    }
}

pub fn rq_engine(cfg: &RqCfg) -> Result<Block<RqPorts>, ElabError> {
    let w = cfg.data_bits;
    if ![8, 64, 128, 256, 512].contains(&w) {
        return Err(ElabError::config(
            "rq_engine",
            format!("data_bits {w}: one of 8, 64, 128, 256, 512"),
        ));
    }
    if cfg.rqs < 2 || cfg.rqs > 256 || cfg.mrs < 2 || cfg.mrs > 256 || cfg.log_max > 15 {
        return Err(ElabError::config(
            "rq_engine",
            "rqs and mrs must be 2..=256 and log_max at most 15",
        ));
    }
    if !(64..=16384).contains(&cfg.max_frame) || cfg.queue_bits == 0 || cfg.queue_bits > 16 {
        return Err(ElabError::config(
            "rq_engine",
            "max_frame must be 64..=16384 and queue_bits 1..=16",
        ));
    }
    let cfg = *cfg;
    let meta_l = RxMeta::shape(cfg.queue_bits);
    Block::build(
        format!("rq_engine_d{w}_q{}_m{}", cfg.rqs, cfg.mrs),
        cfg,
        move |p: RqPorts| {
            use RqState as S;
            doc("Receive queues: frames to the RQ RSS chose, scattered by DMA into posted WQEs,");
            doc("completions with the RX path's verdicts.");
            let b = w / 8;
            let bb = b.trailing_zeros();
            let mr_bits = clog2(cfg.mrs as u64);
            let buf_bytes = cfg.max_frame.next_power_of_two();
            // Beats of one frame (positions within a frame).
            let baw = clog2((buf_bytes / b).max(2) as u64);
            let pos_bits = buf_bytes.trailing_zeros() + 1;
            let wqe_beats = (2048 / w).max(1);
            let wqe_beat_bits = clog2(wqe_beats as u64);

            let rx = &p.rx;
            let (meta_data, meta_valid) = (p.rx_meta.data, p.rx_meta.valid);
            let rd_req_ready = p.dma_rd_req.ready;
            let cpl = &p.dma_rd_cpl;
            let wr_req_ready = p.dma_wr_req.ready;
            let wr = &p.dma_wr;
            let (mr_valid, mr_base, mr_len) = (p.mr.entry.valid, p.mr.entry.base, p.mr.entry.len);
            let cmpl_ready = p.cmpl.ready;

            let state = Fsm::new("state", S::Init);
            let is = |s: RqState| state.is(s);
            let next = |s: RqState| s.lit();

            // ---- Commands ----
            let qcmd = QcmdPort::new(&p.qcmd, &p.qcmd_res);
            let take_qcmd = (is(S::Idle) & qcmd.go).named("take_qcmd");
            qcmd.take(take_qcmd);
            let c = &qcmd.c;

            // ---- Intake: frames into the ring, beside the main FSM ----
            // Each frame is written from a beat-aligned start right after the one before; its
            // end (the next frame's start) and length go to a small FIFO. A frame is accepted
            // only while the ring has room for a whole `max_frame` one and the FIFO a place, so
            // once started it is never stalled. The main FSM takes frames in order; the head
            // frame starts at `ring_free`, which moves to its end when the frame is done.
            let max_beats = cfg.max_frame.div_ceil(b);
            let ring_beats = (2 * cfg.max_frame).next_power_of_two() / b;
            let frame_mem = memory("frame_ring", w, ring_beats);
            let rbw = frame_mem.addr_width();
            let ring_wr = reg_init(rbw + 1, 0u32).named("ring_wr"); // next beat written
            let ring_free = reg_init(rbw + 1, 0u32).named("ring_free"); // head frame's start
            let rx_rdy = reg_init(1, 0u32).named("rx_ready");
            rx.ready().set(rx_rdy);
            let rx_beat = (rx.valid() & rx_rdy).named("rx_beat");
            let rx_end = (rx_beat & rx.last()).named("rx_frame_end");
            // Beats of the frame so far (a frame over `max_frame` keeps its first beats).
            let in_beat = reg_init(pos_bits + 1, 0u32).named("in_beat");
            let in_room = in_beat.lt(max_beats as u64);
            in_beat.set(select(
                &[
                    (rx_end, lit(pos_bits + 1, 0u32)),
                    (rx_beat & in_room, in_beat + 1u32),
                ],
                in_beat,
            ));
            let wr_now = (rx_beat & in_room).named("ring_write");
            frame_mem.write(wr_now, ring_wr.trunc(rbw), rx.data());
            let ring_wr_next = (ring_wr + wr_now.zext(rbw + 1)).named("ring_wr_next");
            ring_wr.set(ring_wr_next);
            // Bytes on the last beat: tkeep is a run from bit 0.
            let keep = rx.keep();
            let last_n = select(
                &(0..b)
                    .rev()
                    .map(|i| (keep.bit(i), lit(bb + 1, (i + 1) as u64)))
                    .collect::<Vec<_>>(),
                lit(bb + 1, 0u32),
            );
            let in_len = (in_beat.zext(pos_bits + bb + 1).shl(bb) + last_n.zext(pos_bits + bb + 1))
                .trunc(pos_bits);
            // The FIFO of frames in the ring: {end, length}.
            let fq_depth = 16u32;
            let fq_mem = memory("frame_queue", rbw + 1 + pos_bits, fq_depth);
            let fqw = fq_mem.addr_width();
            let fq_wp = reg_init(fqw + 1, 0u32).named("frame_queue_wr");
            let fq_rp = reg_init(fqw + 1, 0u32).named("frame_queue_rd");
            fq_mem.write(rx_end, fq_wp.trunc(fqw), cat(&[ring_wr_next, in_len]));
            let fq_wp_next = (fq_wp + rx_end.zext(fqw + 1)).named("frame_queue_wr_next");
            fq_wp.set(fq_wp_next);
            let fq_head = fq_mem
                .read_async(fq_rp.trunc(fqw))
                .named("frame_queue_head");
            let queued = fq_wp.ne(fq_rp).named("frame_queued");
            // Ready next cycle: within a frame, or room for a whole frame and a FIFO place
            // (from this cycle's pointers: the space freed meanwhile is seen a cycle later).
            let mid = ((in_beat.ne(0u32) | rx_beat) & !rx_end).named("rx_mid_frame");
            let used = (ring_wr_next - ring_free).named("ring_used");
            let room = used.le((ring_beats - max_beats) as u64);
            let fq_room = (fq_wp_next - fq_rp).lt(fq_depth as u64);
            rx_rdy.set(mid | (room & fq_room));

            // ---- The next frame's record ----
            let m = meta_l.unpack(meta_data);
            let meta_drop = m.drop;
            let idle_free = (is(S::Idle) & !qcmd.go).named("idle_free");
            let skip_meta = (idle_free | is(S::Meta)) & meta_valid & meta_drop;
            let take_meta =
                ((idle_free | is(S::Meta)) & queued & meta_valid & !meta_drop).named("take_meta");
            p.rx_meta.ready.set(skip_meta | take_meta);
            fq_rp.set(fq_rp + take_meta.zext(fqw + 1));
            let frame_len = reg(pos_bits).enable(take_meta).named("frame_len");
            frame_len.set(fq_head.trunc(pos_bits));
            let frame_end = reg_init(rbw + 1, 0u32).named("frame_end");
            frame_end.set_if(take_meta, fq_head.slice(rbw + pos_bits, pos_bits));
            // The frame's space is freed once nothing more is read from it: at its completion
            // (after the scatter, or instead of it), or back in Idle after a drop (setting it
            // again there changes nothing).
            ring_free.set_if(is(S::Idle) | is(S::Cmpl), frame_end);
            let meta = reg(meta_l.width()).enable(take_meta).named("meta");
            meta.set(meta_data);
            // The drop reasons and `malformed` do not reach the CQE (mlx5 has no field for them).
            let mt = meta_l.unpack(meta.unused());
            // The RQ named by the record.
            let q = mt.queue.named("rqn");

            // ---- RQ contexts ----
            let ctx_mem = memory("rq_ctx", RqCtx::WIDTH, cfg.rqs.next_power_of_two());
            let aw = ctx_mem.addr_width();
            let (sweep_addr, sweep_done) = sweep(is(S::Init), aw);
            let idx_w = aw.max(16);
            let cur_q = mux(is(S::Qcmd), c.index.zext(idx_w), q.zext(idx_w)).named("cur_rq");
            let ctx = RqCtx::unpack(ctx_mem.read_async(cur_q.trunc(aw)).named("rq_ctx_q"));
            let q_ok = q.zext(16).lt(cfg.rqs as u64) & ctx.state.eq(qstate::RDY);

            let cur_state = ctx.state;
            let log_size = c.in2.slice(4, 0);
            let log_stride = c.in2.slice(11, 8);
            let link = c.in5.slice(15, 0);
            let c_striding = c.in2.bit(16);
            let c_log_nstr = c.in2.slice(23, 20);
            let c_log_ssz = c.in2.slice(27, 24);
            // A striding WQE is a next segment and a data segment: 32 bytes at least.
            let striding_ok = !c_striding
                | (log_stride.ge(5u32)
                    & c_log_nstr.ge(1u32)
                    & c_log_nstr.le(14u32)
                    & c_log_ssz.ge(6u32)
                    & c_log_ssz.le(13u32));
            let params_ok = log_size.le(cfg.log_max as u64)
                & log_stride.ge(4u32)
                & log_stride.le(9u32)
                & link.lt(cfg.cqs as u64)
                & striding_ok;
            let v = qcmd.verdict(qtype::RQ, cfg.rqs, cur_state, params_ok);
            let cmd_ok = (is(S::Qcmd) & v.ok).named("cmd_done_ok");
            qcmd.answer(
                is(S::Qcmd),
                v.status,
                [
                    cur_state.zext(32),
                    ctx.pc.zext(32),
                    ctx.ci.zext(32),
                    cat(&[ctx.err_wqe, lit(8, 0u32), ctx.synd]),
                ],
            );

            // ---- DMA read answers ----
            // Tag 0: doorbell records, into the WQE register. Tags 1..RQ_DMA_TAGS: WQE reads,
            // into WQE-cache entry tag - 1. The tag is taken modulo
            // 2^RQ_TAG_BITS, so a parent that moves the tags by a multiple of that needs no
            // translation back.
            let cpl_u = DmaRdCplUser::unpack(cpl.user().expect("tuser").unused());
            cpl.ready().set(lit(1, 1u32));
            // Descriptor reads are whole and start at byte 0: tkeep says nothing new.
            let _ = cpl.keep().unused();
            let cpl_tag = cpl_u.tag.trunc(RQ_TAG_BITS).named("answer_tag");
            let desc_beat = (cpl.valid() & cpl_tag.eq(0u32)).named("dbr_beat");
            let desc_last = (desc_beat & cpl.last()).named("dbr_done");
            let wqe_beat = reg_init(wqe_beat_bits, 0u32).named("wqe_beat");
            wqe_beat.set(select(
                &[
                    (is(S::DbrReq), lit(wqe_beat_bits, 0u32)),
                    (desc_beat, wqe_beat + 1u32),
                ],
                wqe_beat,
            ));
            let desc_err = reg_init(1, 0u32).named("desc_err");
            desc_err.set(select(
                &[
                    (is(S::DbrReq), lit(1, 0u32)),
                    (desc_beat & cpl_u.err, lit(1, 1u32)),
                ],
                desc_err,
            ));
            let desc_err_now = desc_err | (desc_beat & cpl_u.err);

            let ci = reg(16).named("ci");
            let pc = reg(16).named("pc");
            ci.set(select(
                &[(is(S::Ctx), ctx.ci), (is(S::Advance), ci + 1u32)],
                ci,
            ));

            // ---- WQE cache: WQEs of any RQs, read ahead or for their frame ----
            // Entry `i` holds the first `wqe_len` bytes of one WQE (beats of the datapath in
            // block RAM at {i, beat}) with its RQ and WQE counter: reading (its read, tag
            // `i + 1`, in flight) or ready (answered; an error flag when the answer was an
            // error: the frame that uses the WQE gets LOCAL_ACCESS). A frame whose WQE is
            // ready copies it into the WQE register (a few cycles) instead of reading it; one
            // whose WQE is being read waits for it. An RQ's context keeps a read-ahead pointer
            // `ra`: its WQEs `ci..ra` are there or on the way, and while its frame waits and
            // after each frame, its next WQEs are read into free entries while they are
            // posted (by the producer counter the engine knows), `ra - ci` is below
            // RQ_WQE_AHEAD and an entry is free. A WQE used up frees its entry. A command on an
            // RQ frees its ready entries and marks its reading ones stale (their answers are
            // dropped and the entries freed when they land).
            let ne = RQ_WQE_CACHE as usize;
            let eb = clog2(RQ_WQE_CACHE as u64);
            let rq_a = cur_q.trunc(aw).named("rq_addr");
            let cache_mem = memory("wqe_cache", w, RQ_WQE_CACHE * wqe_beats);
            let e_reg = |n: &str, wd: u32, init: bool| -> Vec<Sig> {
                (0..ne)
                    .map(|i| {
                        let name = format!("wqe_entry{i}_{n}");
                        if init {
                            reg_init(wd, 0u32).named(&name)
                        } else {
                            reg(wd).named(&name)
                        }
                    })
                    .collect()
            };
            let e_used = e_reg("used", 1, true);
            let e_ready = e_reg("ready", 1, true);
            let e_stale = e_reg("stale", 1, true);
            let e_err = e_reg("err", 1, false);
            let e_q = e_reg("rq", aw, false);
            let e_ci = e_reg("ci", 16, false);
            let any = |v: Vec<Sig>| v.into_iter().reduce(|a, b| a | b).unwrap();
            let first = |v: &[Sig], name: &str| {
                select(
                    &v.iter()
                        .enumerate()
                        .map(|(i, x)| (*x, lit(eb, i as u64)))
                        .collect::<Vec<_>>(),
                    lit(eb, 0u32),
                )
                .named(name)
            };
            // Entry `i` is (or is reading) WQE `ctx.ci` of this RQ.
            let is_cur: Vec<Sig> = (0..ne)
                .map(|i| e_used[i] & e_q[i].eq(rq_a) & e_ci[i].eq(ctx.ci))
                .collect();
            let hit_v: Vec<Sig> = (0..ne).map(|i| is_cur[i] & e_ready[i]).collect();
            let entry_hit = any(hit_v.clone()).named("wqe_entry_hit");
            let hit_e = first(&hit_v, "wqe_hit_entry");
            let entry_err =
                any((0..ne).map(|i| hit_v[i] & e_err[i]).collect()).named("wqe_entry_err");
            // The read of the frame's WQE is in flight (and not stale).
            let live_q = any((0..ne)
                .map(|i| is_cur[i] & !e_ready[i] & !e_stale[i])
                .collect())
            .named("wqe_read_live");
            let free_v: Vec<Sig> = e_used.iter().map(|u| !*u).collect();
            let any_free = any(free_v.clone()).named("wqe_entry_free");
            let free_e = first(&free_v, "free_wqe_entry");
            // A ready entry: the one a frame whose WQE is nowhere takes when none is free (the
            // WQE it held is read again when its frame comes).
            let ready_v: Vec<Sig> = (0..ne).map(|i| e_used[i] & e_ready[i]).collect();
            let any_ready = any(ready_v.clone()).named("wqe_entry_ready");
            let ready_e = first(&ready_v, "ready_wqe_entry");
            let tag_bits = RQ_TAG_BITS;
            // The answer's entry and its registers.
            let a_e = (cpl_tag - 1u32).trunc(eb).named("answer_entry");
            let by_entry = |v: &[Sig], wd: u32| {
                case(
                    a_e,
                    &(0..ne).map(|i| (i as u64, v[i])).collect::<Vec<_>>(),
                    lit(wd, 0u32),
                )
            };
            let a_q = by_entry(&e_q, aw).named("answer_rq");
            let a_stale = by_entry(&e_stale, 1).named("answer_stale");
            let a_beat = (cpl.valid() & cpl_tag.ne(0u32)).named("wqe_answer_beat");
            let a_done = (a_beat & cpl.last()).named("wqe_answer_done");
            let a_pos = reg_init(wqe_beat_bits, 0u32).named("wqe_answer_beat_no");
            a_pos.set(select(
                &[(a_done, lit(wqe_beat_bits, 0u32)), (a_beat, a_pos + 1u32)],
                a_pos,
            ));
            let a_err = reg_init(1, 0u32).named("wqe_answer_err");
            a_err.set(select(
                &[(a_done, lit(1, 0u32)), (a_beat & cpl_u.err, lit(1, 1u32))],
                a_err,
            ));
            cache_mem.write(a_beat, cat(&[a_e, a_pos]), cpl.data());
            // A command on the RQ this cycle also makes the answer stale.
            let cmd_on = |x: Sig| is(S::Qcmd) & x.eq(rq_a);
            let a_keep = (!a_stale & !cmd_on(a_q)).named("wqe_answer_kept");

            let ring = cat(&[ctx.base, lit(12, 0u32)]);
            let mask = (lit(16, 1u32).shl_by(ctx.log_size) - 1u32).named("ring_mask");
            let stride = ctx.log_stride;
            // At most 256 bytes of the WQE are read (16 segments).
            let wqe_len = mux(
                stride.gt(8u32),
                lit(13, 256u32),
                lit(13, 1u32).shl_by(stride),
            )
            .named("wqe_read_len");
            let max_segs = wqe_len.shr(4).trunc(5).named("max_segments");
            // Beats of the datapath the WQE fills (in its cache entry and in the WQE register).
            let wqe_n = (wqe_len + lit(13, (b - 1) as u64))
                .shr(bb)
                .trunc(wqe_beat_bits + 1)
                .named("wqe_beats");

            // Copy: the entry's beat k is read in cycle k of Copy and lands in the WQE register the
            // next cycle; done after beat wqe_n - 1 landed.
            let copy_k = reg_init(wqe_beat_bits + 1, 0u32).named("copy_beat");
            copy_k.set(mux(
                is(S::Copy),
                copy_k + 1u32,
                lit(wqe_beat_bits + 1, 0u32),
            ));
            let copy_done = (is(S::Copy) & copy_k.eq(wqe_n)).named("copy_done");
            let entry_word = cache_mem.read_sync(cat(&[hit_e, copy_k.trunc(wqe_beat_bits)]), None);
            let copy_at = (copy_k - 1u32).trunc(wqe_beat_bits);
            let copy_wr = (is(S::Copy) & copy_k.ne(0u32)).named("copy_write");
            let wqe_regs: Vec<Sig> = (0..wqe_beats)
                .map(|i| {
                    let r = reg(w).named(&format!("wqe_b{i}"));
                    let from_dbr = desc_beat & wqe_beat.eq(i as u64);
                    let from_cache = copy_wr & copy_at.eq(i as u64);
                    r.set_if(from_dbr | from_cache, mux(from_dbr, cpl.data(), entry_word));
                    r
                })
                .collect();
            let wqe = cat(&wqe_regs.iter().rev().copied().collect::<Vec<_>>()).named("wqe");
            let pc_rec = desc::get(dbr::RQ_PC, wqe).named("doorbell_pc");
            pc.set(select(&[(is(S::Ctx), ctx.pc), (is(S::DbrGot), pc_rec)], pc));
            // ---- Strides (striding RQ) ----
            let striding = ctx.striding.named("striding");
            let ssz_mask = (lit(16, 1u32).shl_by(ctx.log_ssz) - 1u32).named("stride_mask");
            let nstr = lit(16, 1u32).shl_by(ctx.log_nstr).named("strides_per_wqe");
            // Strides the frame takes: ceil(len / stride size), at least one.
            let need = mux(
                frame_len.eq(0u32),
                lit(16, 1u32),
                (frame_len.zext(16) + ssz_mask).shr_by(ctx.log_ssz),
            )
            .named("strides_needed");
            let str_left = (nstr - ctx.stride).named("strides_left");
            let too_big = (striding & need.gt(nstr)).named("frame_over_wqe");
            let fill = (striding & !too_big & need.gt(str_left)).named("needs_filler");
            let str_off = ctx
                .stride
                .zext(32)
                .shl_by(ctx.log_ssz)
                .named("stride_offset");

            // Striding: the WQE register still holds WQE `ci` of this RQ from the frame before
            // (no doorbell read, copy or command since), so the next frame into it is not
            // copied again. A WQE is rewritten by the driver only after it is used up, by when
            // `ci` has moved on.
            let wqe_cached = reg_init(1, 0u32).named("wqe_cached");
            let cached_q = reg(cfg.queue_bits).named("wqe_cached_rq");
            let cached_ci = reg(16).named("wqe_cached_ci");
            let wqe_read_ok = copy_done & !entry_err;
            wqe_cached.set(select(
                &[
                    (is(S::DbrReq) | is(S::Copy) | take_qcmd, lit(1, 0u32)),
                    (wqe_read_ok & striding, lit(1, 1u32)),
                ],
                wqe_cached,
            ));
            cached_q.set_if(wqe_read_ok, q);
            cached_ci.set_if(wqe_read_ok, ci);
            let wqe_hit = (striding & wqe_cached & cached_q.eq(q) & cached_ci.eq(ctx.ci))
                .named("wqe_cache_hit");

            // ---- Scatter ----
            let si = reg(5).named("segment");
            let seg_arms: Vec<(u64, Sig)> = (0..16u32)
                .map(|i| (i as u64, wqe.slice(128 * i + 127, 128 * i)))
                .collect();
            let dseg = case(si, &seg_arms, lit(128, 0u32)).named("data_seg");
            // Striding: the one data segment from the frame's first stride on.
            let d_count = desc::get(data_seg::BYTE_COUNT, dseg);
            let seg_count = mux(
                striding,
                mux(
                    d_count.zext(32).gt(str_off),
                    (d_count.zext(32) - str_off).trunc(31),
                    lit(31, 0u32),
                ),
                d_count,
            )
            .named("seg_count");
            let seg_lkey = desc::get(data_seg::LKEY, dseg);
            let seg_addr = mux(
                striding,
                desc::get(data_seg::ADDR, dseg) + str_off.zext(64),
                desc::get(data_seg::ADDR, dseg),
            );
            p.mr.lkey.set(seg_lkey.trunc(mr_bits));
            let list_end =
                (si.ge(max_segs) | seg_count.eq(0u32) | (striding & (si.ge(2u32) | too_big)))
                    .named("list_end");
            let left = reg(pos_bits).named("frame_left"); // bytes still to place
            let pos = reg(pos_bits).named("frame_pos"); // next frame byte to place
            let use_n = mux(
                seg_count.zext(32).lt(left.zext(32)),
                seg_count.trunc(pos_bits),
                left,
            )
            .named("segment_use");
            let seg_end = seg_addr.add_wide(use_n.zext(64));
            let mr_end = mr_base.add_wide(mr_len);
            let seg_ok =
                seg_lkey.lt(cfg.mrs as u64) & mr_valid & seg_addr.ge(mr_base) & seg_end.le(mr_end);
            // The current piece: within the segment, one 4 KiB page, what is left of the frame.
            let w_addr = reg(64).named("write_addr");
            let w_seg_left = reg(pos_bits).named("segment_left");
            let to_4k = (lit(14, 4096u32) - w_addr.slice(11, 0).zext(14)).named("to_4k");
            let piece = mux(
                w_seg_left.zext(32).lt(to_4k.zext(32)),
                w_seg_left.resize(14),
                to_4k,
            )
            .named("piece");
            let off = pos.trunc(bb.max(1)) & lit(bb.max(1), (b - 1) as u64);
            let off6 = if bb == 0 { lit(6, 0u32) } else { off.zext(6) };
            p.dma_wr_req.set_fields(&DmaWrReq {
                addr: w_addr,
                len: piece.trunc(13),
                off: off6,
                pad: lit(13, 0u32),
            });
            p.dma_wr_req.valid.set(is(S::WrReq));
            let wr_req_go = (is(S::WrReq) & wr_req_ready).named("write_request_go");
            // Piece data: beats from pos / B to (pos + piece - 1) / B, read one ahead.
            let p_first = reg(baw).named("piece_first_beat");
            let p_beats = reg(baw + 1).named("piece_beats");
            let p_off = reg(bb.max(1)).named("piece_off");
            let p_end = reg(bb.max(1)).named("piece_end"); // bytes on the last beat (0 = all)
            let sent = reg_init(baw + 1, 0u32).named("beats_loaded");
            let o_valid = reg_init(1, 0u32).named("wr_valid");
            let more = (is(S::WrData) & sent.lt(p_beats)).named("more_beats");
            let load = ((!o_valid | wr.ready()) & more).named("wr_load");
            let rd_addr = (ring_free.trunc(rbw) + (p_first + sent.trunc(baw)).resize(rbw))
                .named("frame_read_beat");
            let data = frame_mem.read_sync(rd_addr, Some(load));
            sent.set(mux(
                is(S::WrData),
                mux(load, sent + 1u32, sent),
                lit(baw + 1, 0u32),
            ));
            o_valid.set(mux(load, 1u32, mux(wr.ready(), 0u32, o_valid)));
            let o_first = reg(1).named("wr_first");
            let o_last = reg(1).named("wr_last");
            o_first.set_if(load, sent.eq(0u32));
            o_last.set_if(load, sent.eq(p_beats - 1u32));
            let all = (1u128 << b) - 1;
            let keep_out = if b == 1 {
                lit(1, 1u32)
            } else {
                let from: Vec<(u64, Sig)> = (0..b)
                    .map(|o| (o as u64, lit(b, all & !((1u128 << o) - 1))))
                    .collect();
                let to: Vec<(u64, Sig)> = (1..b)
                    .map(|e| (e as u64, lit(b, (1u128 << e) - 1)))
                    .collect();
                let k_from = mux(o_first, case(p_off, &from, lit(b, all)), lit(b, all));
                let k_to = mux(o_last, case(p_end, &to, lit(b, all)), lit(b, all));
                k_from & k_to
            };
            wr.data().set(data);
            wr.keep().set(keep_out);
            wr.last().set(o_last);
            wr.valid().set(o_valid);
            let piece_done = (is(S::WrData) & !more & (!o_valid | wr.ready())).named("piece_done");

            // Verdicts.
            let synd = reg(8).named("syndrome");
            let failed = reg(1).named("failed");
            let seg_in = is(S::Seg);
            let seg_len_err = seg_in & list_end; // frame left but no segment
            let seg_prot = seg_in & !list_end & !seg_ok;
            let wqe_bad = copy_done & entry_err;
            synd.set(select(
                &[
                    (is(S::Ctx), lit(8, 0u32)),
                    (wqe_bad, lit(8, syndrome::LOCAL_ACCESS)),
                    (seg_len_err, lit(8, syndrome::LOCAL_LENGTH)),
                    (seg_prot, lit(8, syndrome::LOCAL_PROT)),
                ],
                synd,
            ));
            failed.set(select(
                &[
                    (is(S::Ctx), lit(1, 0u32)),
                    (wqe_bad | seg_len_err | seg_prot, lit(1, 1u32)),
                ],
                failed,
            ));

            // Cursor updates.
            let seg_start = seg_in & !list_end & seg_ok;
            si.set(select(
                &[
                    (is(S::Copy), striding.zext(5)),
                    (is(S::Ctx), lit(5, 1u32)),
                    (seg_start, si + 1u32),
                ],
                si,
            ));
            w_addr.set(select(
                &[(seg_start, seg_addr), (piece_done, w_addr + piece.zext(64))],
                w_addr,
            ));
            w_seg_left.set(select(
                &[
                    (seg_start, use_n),
                    (piece_done, w_seg_left - piece.resize(pos_bits)),
                ],
                w_seg_left,
            ));
            left.set(select(
                &[
                    (is(S::Ctx), frame_len),
                    (piece_done, left - piece.resize(pos_bits)),
                ],
                left,
            ));
            pos.set(select(
                &[
                    (is(S::Ctx), lit(pos_bits, 0u32)),
                    (piece_done, pos + piece.resize(pos_bits)),
                ],
                pos,
            ));
            let piece_last_byte = (pos + piece.resize(pos_bits) - 1u32).named("piece_last_byte");
            p_first.set_if(wr_req_go, pos.shr(bb).trunc(baw));
            p_beats.set_if(
                wr_req_go,
                (piece_last_byte.shr(bb) - pos.shr(bb) + 1u32).trunc(baw + 1),
            );
            p_off.set_if(
                wr_req_go,
                if bb == 0 { lit(1, 0u32) } else { pos.trunc(bb) },
            );
            p_end.set_if(
                wr_req_go,
                if bb == 0 {
                    lit(1, 0u32)
                } else {
                    (piece_last_byte.trunc(bb) + 1u32).trunc(bb)
                },
            );

            // ---- Completion ----
            let l3 = mt.l3;
            let l3_type = case(l3, &[(1, lit(2, 2u32)), (2, lit(2, 1u32))], lit(2, 0u32));
            // Striding: byte_cnt is filler (bit 31), strides consumed (30:16), length (15:0).
            let frame_cnt = mux(
                striding,
                cat(&[lit(1, 0u32), need.trunc(15), frame_len.zext(16)]),
                frame_len.zext(32),
            );
            let filler_cnt = cat(&[lit(1, 1u32), str_left.trunc(15), lit(16, 0u32)]);
            let frame_cmpl = Cmpl {
                cqn: ctx.cqn,
                opcode: mux(
                    failed,
                    lit(4, cqe_opcode::RESP_ERR),
                    lit(4, cqe_opcode::RESP_SEND),
                ),
                syndrome: mux(failed, synd, lit(8, 0u32)),
                vendor_err_synd: mux(failed, si.zext(8), lit(8, 0u32)),
                qpn: q.zext(24),
                wqe_counter: mux(striding, ctx.stride, ci),
                wqe_id: mux(striding, ci, lit(16, 0u32)),
                byte_cnt: mux(failed, lit(32, 0u32), frame_cnt),
                rss_hash_result: mt.rss_hash,
                rss_hash_type: cqe_rss_hash_type_sig(mt.rss_type),
                check_sum: mt.csum,
                l2_ok: lit(1, 1u32),
                // Delivered whole with the inner offloads: the verdicts cover both header sets
                // (mlx5: the driver then reports CHECKSUM_UNNECESSARY at level 1); an outer
                // without TCP/UDP (NVGRE's GRE) has no L4 checksum to add.
                l3_ok: mt.l3_ok & (!mt.inner | mt.inner_l3_ok),
                l4_ok: mux(
                    mt.inner,
                    (mt.l4_ok | mt.l4.eq(0u64)) & mt.inner_l4_ok,
                    mt.l4_ok,
                ),
                l3_type,
                l4_type: mt.l4.zext(3),
                cv: mt.vlan,
                vlan_info: mt.vlan_tci,
                l3_hdr: l3_type,
                tunneled: mt.inner,
                decapped: mt.decap,
                tunnel_info: cat(&[mt.tunnel_bad, mt.tunnel, mt.tunnel_id]),
                ..Cmpl::zeros()
            }
            .pack();
            // A filler CQE: the RQ, the first stride skipped and the count; nothing else.
            let filler_cmpl = Cmpl {
                cqn: ctx.cqn,
                opcode: lit(4, cqe_opcode::RESP_SEND),
                qpn: q.zext(24),
                wqe_counter: ctx.stride,
                wqe_id: ci,
                byte_cnt: filler_cnt,
                ..Cmpl::zeros()
            }
            .pack();
            let filling = is(S::Filler).named("filling");
            p.cmpl.data.set(mux(filling, filler_cmpl, frame_cmpl));
            p.cmpl.valid.set(is(S::Cmpl) | filling);
            let cmpl_go = (is(S::Cmpl) & cmpl_ready).named("cmpl_go");

            // ---- WQE reads: the frame's (WqeReq) and its RQ's next ones (WqeWait, Ahead) ----
            let adv = is(S::Advance);
            // Striding: the strides after this frame's; the WQE is used up when they all are
            // (and after an error, which consumes it).
            let str_next = (ctx.stride + need).named("stride_next");
            let wqe_done = !striding | failed | str_next.eq(nstr);
            let fill_adv = is(S::FillAdv);
            // One request waits in a register for the port (the doorbell read goes first
            // unless this one is already offered); its entry is taken when it is loaded.
            let rr_valid = reg_init(1, 0u32).named("wqe_req_valid");
            let rr_go = wire(1).named("wqe_read_go");
            let can_load = (!rr_valid | rr_go).named("wqe_read_can_load");
            let load_now =
                (is(S::WqeReq) & !live_q & can_load & (any_free | any_ready)).named("wqe_read_now");
            // Read-ahead (in Ahead the context already written by Advance): WQE `ra` when the
            // known producer counter says it is posted (no read beyond it), the RQ has fewer
            // than RQ_WQE_AHEAD WQEs in the cache and an entry is free.
            let ahead_n = (ctx.ra - ctx.ci).named("wqes_ahead");
            let want_ahead =
                (q_ok & ctx.ra.ne(ctx.pc) & ahead_n.lt(RQ_WQE_AHEAD as u64) & any_free)
                    .named("ahead_want");
            let load_ahead =
                ((is(S::Ahead) | is(S::WqeWait)) & want_ahead & can_load).named("wqe_read_ahead");
            let load = (load_now | load_ahead).named("wqe_read_load");
            let load_ci = mux(load_now, ctx.ci, ctx.ra).named("wqe_read_ci");
            let load_e = mux(load_now & !any_free, ready_e, free_e).named("wqe_read_entry");
            let wqe_off = (load_ci & mask).zext(64).shl_by(stride).named("wqe_offset");
            let rr = reg(64 + 13 + tag_bits).enable(load).named("wqe_req");
            rr.set(cat(&[
                ring + wqe_off,
                wqe_len,
                load_e.zext(tag_bits) + 1u32,
            ]));
            let (rr_addr, rr_len, rr_tag) = (
                rr.slice(64 + 13 + tag_bits - 1, 13 + tag_bits),
                rr.slice(13 + tag_bits - 1, tag_bits),
                rr.slice(tag_bits - 1, 0),
            );
            // Port: a request offered is held until taken (rule 1 of the DMA port).
            let offered = reg_init(1, 0u32).named("rd_req_offered");
            let offered_dbr = reg(1).named("rd_req_offered_dbr");
            let pick_dbr = mux(offered, offered_dbr, is(S::DbrReq)).named("rd_pick_dbr");
            let dbr = cat(&[ctx.dbr, lit(3, 0u32)]);
            p.dma_rd_req.set_fields(&DmaRdReq {
                addr: mux(pick_dbr, dbr, rr_addr),
                len: mux(pick_dbr, lit(13, 4u32), rr_len),
                tag: mux(pick_dbr, lit(8, 0u32), rr_tag.zext(8)),
                ..DmaRdReq::zeros()
            });
            let rd_valid = is(S::DbrReq) | rr_valid;
            p.dma_rd_req.valid.set(rd_valid);
            offered.set(rd_valid & !rd_req_ready);
            offered_dbr.set(pick_dbr);
            let dbr_go = (is(S::DbrReq) & pick_dbr & rd_req_ready).named("dbr_read_go");
            rr_go.set(rr_valid & !pick_dbr & rd_req_ready);
            rr_valid.set(select(
                &[(load, lit(1, 1u32)), (rr_go, lit(1, 0u32))],
                rr_valid,
            ));
            // Entries: taken by a read, ready when its answer lands (freed instead when stale),
            // freed when their WQE is used up (a frame's completion or a filler) or by a
            // command on their RQ (marked stale while reading).
            let release = ((adv & wqe_done) | fill_adv).named("wqe_used_up");
            for i in 0..ne {
                let mine = load & load_e.eq(i as u64);
                let done_i = a_done & a_e.eq(i as u64);
                let cmd_i = e_used[i] & cmd_on(e_q[i]);
                let drop =
                    (done_i & !a_keep) | (cmd_i & e_ready[i]) | (release & is_cur[i] & e_ready[i]);
                e_used[i].set(select(
                    &[(mine, lit(1, 1u32)), (drop, lit(1, 0u32))],
                    e_used[i],
                ));
                e_ready[i].set(select(
                    &[(mine | drop, lit(1, 0u32)), (done_i, lit(1, 1u32))],
                    e_ready[i],
                ));
                e_stale[i].set(select(
                    &[(mine, lit(1, 0u32)), (cmd_i & !e_ready[i], lit(1, 1u32))],
                    e_stale[i],
                ));
                e_err[i].set_if(done_i, a_err | cpl_u.err);
                e_q[i].set_if(mine, rq_a);
                e_ci[i].set_if(mine, load_ci);
            }

            // ---- Sequencing ----
            // From the context read this cycle (the ci/pc registers load at Ctx).
            let need_dbr = ctx.ci.eq(ctx.pc);
            state.set(select(
                &[
                    (sweep_done, next(S::Idle)),
                    (take_qcmd, next(S::Qcmd)),
                    (take_meta, next(S::Ctx)),
                    (idle_free & queued, next(S::Meta)),
                    (is(S::Qcmd), next(S::Idle)),
                    (is(S::Ctx) & !q_ok, next(S::Idle)),
                    (is(S::Ctx) & fill, next(S::Filler)),
                    (
                        is(S::Ctx),
                        select(
                            &[
                                (wqe_hit, next(S::Seg)),
                                (entry_hit, next(S::Copy)),
                                (live_q, next(S::WqeWait)),
                                (need_dbr, next(S::DbrReq)),
                            ],
                            next(S::WqeReq),
                        ),
                    ),
                    (is(S::DbrReq) & dbr_go, next(S::DbrWait)),
                    (
                        is(S::DbrWait) & desc_last,
                        mux(desc_err_now, next(S::Idle), next(S::DbrGot)),
                    ),
                    (
                        is(S::DbrGot),
                        mux(pc_rec.eq(ci), next(S::Idle), next(S::WqeReq)),
                    ),
                    (is(S::WqeReq) & (live_q | load_now), next(S::WqeWait)),
                    (is(S::WqeWait) & entry_hit, next(S::Copy)),
                    (copy_done, mux(entry_err, next(S::Cmpl), next(S::Seg))),
                    (seg_len_err | seg_prot, next(S::Cmpl)),
                    (seg_start, next(S::WrReq)),
                    (wr_req_go, next(S::WrData)),
                    (
                        piece_done,
                        select(
                            &[
                                (left.eq(piece.resize(pos_bits)), next(S::Cmpl)),
                                (w_seg_left.eq(piece.resize(pos_bits)), next(S::Seg)),
                            ],
                            next(S::WrReq),
                        ),
                    ),
                    (filling & cmpl_ready, next(S::FillAdv)),
                    (is(S::FillAdv), next(S::Ctx)),
                    (cmpl_go, next(S::Advance)),
                    (is(S::Advance), next(S::Ahead)),
                    (is(S::Ahead) & !want_ahead, next(S::Idle)),
                ],
                state.q(),
            ));
            // A frame with no place: not ready, or no WQE after reading the doorbell record.
            let no_queue = is(S::Ctx) & !q_ok;
            let no_wqe = is(S::DbrGot) & pc_rec.eq(ci);

            // ---- Context writes ----
            let created = RqCtx {
                base: cat(&[c.in1, c.in0.slice(31, 12)]),
                log_size,
                log_stride,
                dbr: cat(&[c.in4, c.in3.slice(31, 3)]),
                cqn: link,
                ci: lit(16, 0u32),
                pc: lit(16, 0u32),
                synd: lit(8, 0u32),
                err_wqe: lit(16, 0u32),
                state: lit(2, qstate::RDY),
                striding: c_striding,
                log_nstr: c_log_nstr,
                log_ssz: c_log_ssz,
                stride: lit(16, 0u32),
                ra: lit(16, 0u32),
            }
            .pack();
            let keep_pc = is(S::DbrGot);
            // WQE `ci` read or used up: `ra` is past it.
            let ra_past_ci = mux(ahead_n.eq(0u32), ctx.ci + 1u32, ctx.ra);
            let updated = RqCtx {
                ci: select(
                    &[(adv & wqe_done, ci + 1u32), (fill_adv, ctx.ci + 1u32)],
                    ctx.ci,
                ),
                stride: select(
                    &[
                        (fill_adv | (adv & wqe_done), lit(16, 0u32)),
                        (adv, str_next),
                    ],
                    ctx.stride,
                ),
                pc: mux(adv | keep_pc, mux(keep_pc, pc_rec, pc), ctx.pc),
                synd: mux(adv & failed, synd, ctx.synd),
                err_wqe: mux(adv & failed, ci, ctx.err_wqe),
                state: select(
                    &[
                        (is(S::Qcmd), v.new_state),
                        (adv & failed, lit(2, qstate::ERR)),
                    ],
                    ctx.state,
                ),
                ra: select(
                    &[
                        (is(S::Qcmd), ctx.ci),
                        (load_ahead, ctx.ra + 1u32),
                        (load_now | release, ra_past_ci),
                    ],
                    ctx.ra,
                ),
                ..ctx
            }
            .pack();
            ctx_mem.write(
                (is(S::Init) | cmd_ok | adv | keep_pc | fill_adv | load).named("ctx_write"),
                mux(is(S::Init), sweep_addr, cur_q.trunc(aw)),
                select(
                    &[
                        (is(S::Init), lit(RqCtx::WIDTH, 0u32)),
                        (is(S::Qcmd) & v.create, created),
                    ],
                    updated,
                ),
            );

            let s = &p.stats;
            s.frames.set(event_counter("frames", take_meta));
            s.no_queue.set(event_counter("no_queue", no_queue));
            s.no_wqe.set(event_counter("no_wqe", no_wqe));
            s.errors.set(event_counter("errors", cmpl_go & failed));
            s.cqes.set(event_counter("cqes", cmpl_go));
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_at_every_width() {
        for w in [8, 64, 128, 512] {
            let cfg = RqCfg {
                data_bits: w,
                rqs: 16,
                queue_bits: 4,
                cqs: 16,
                mrs: 16,
                max_frame: 9022,
                log_max: 12,
            };
            match rq_engine(&cfg) {
                Err(e) => panic!("{w}: {e}"),
                Ok(def) => {
                    if let Ok(dir) = std::env::var("NICGEN_DUMP_RQ") {
                        generate(&def, &EmitOptions::default())
                            .write_to(std::path::Path::new(&format!("{dir}/d{w}")))
                            .unwrap();
                    }
                }
            }
        }
    }
}
