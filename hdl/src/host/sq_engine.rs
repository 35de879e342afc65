//! `sq_engine`: the send queues: doorbells, WQE fetch, validation, gather by DMA, the frame and
//! its offload request to the TX path, completions.
//!
//! Two sides: the issue side takes one WQE at a time, from its doorbell to its last data read
//! issued, and hands it to the retire side (`sq_engine/retire.rs`), which waits for the WQE's
//! answers, sends its frame(s) and makes its CQE, in issue order. So the issue side goes on to
//! the next WQEs while earlier ones' reads are in flight and their frames go out: the gathers
//! of many WQEs overlap each other and the transmit of those before them.
//!
//! ```text
//! s_db (writes of the doorbell / BlueFlame window) -> BlueFlame buffer (256 bytes)
//!   doorbell (dword 1) -> pending / resume bitmaps -> round-robin pick -> SQ context (LUT RAM)
//!   -> a whole BlueFlame WQE at the consumer counter: its WQEBBs from the BlueFlame buffer
//!      into the WQE register, no read at all; otherwise:
//!   -> the producer counter: from the doorbell itself when it came with dword 0 (mlx5's
//!      8-byte doorbell is the last WQE's control bytes 0..8: wqe_index + its WQEBBs),
//!      else read from the doorbell record
//!   -> the posted WQEBBs, up to PREFETCH_WQEBBS (16) per DMA read, into the prefetch buffer's
//!      half for this turn (none when the look-ahead already read them: below); while the
//!      turn consumes them, the look-ahead reads the next ones into the other half
//!   -> per WQE: its WQEBBs (<= 4) copied from the buffer into the WQE register (a WQE that
//!      runs past what was fetched: a read of its rest first)
//!   -> check ctrl / Ethernet / data segments (lengths, opcode, memory regions)
//!   -> space for the WQE's bytes in the gather ring, a retire slot (its id)
//!   -> the frame into the gather ring in WQE order: bytes in the WQE (inline header, inline
//!      data segments) copied from the WQE register, pointer segments by DMA reads (30 data
//!      tags, each marked with the WQE's id, answers in any order, each landing at its byte
//!      position: `off`)
//!   -> the WQE to the retire FIFO -> next WQE
//! retire side, in issue order, once no tag carries the head's id:
//!   -> the offload request (`TxCmd`) into an 8-entry FIFO to m_axis_tx_cmd (the TX path takes
//!      it once it has parsed the frame's headers), the frame on m_axis_tx (a multi-packet WQE:
//!      each packet in turn)
//!   -> m_cmpl (CQE request), the WQE's ring space freed
//! ```
//!
//! - WQEs follow mlx5 (`regmap` layouts `ctrl_seg`, `eth_seg`, `data_seg`): opcodes SEND,
//!   LSO and ENHANCED_MPSW (below) and NOP; `cs_flags` L3/L4 become the TX path's checksum
//!   requests; with no inline header, `vlan_cmd` 0x8000 inserts `vlan_tci`; otherwise `inline_hdr_sz` bytes from
//!   Ethernet-segment byte 14 on start the frame; then the data segments in order: pointer segments
//!   (gathered by DMA) and inline data segments (`byte_count` with bit 31 set, the bytes right
//!   after it, padded to whole DS units; they may span WQEBBs). A zero-length inline segment adds
//!   no bytes (mlx5_ib writes one for a send whose gather entries are all empty).
//! - LSO (opcode 0x0E, mlx5e's TSO send): a SEND whose frame is a super-frame, segmented
//!   behind this engine by the TSO engine (`crate::overlay::tx_tso`) from the request in
//!   `TxCmd::tso`; the frame is gathered and checked as a SEND's, up to `max_lso` bytes
//!   ([`LSO_MAX`], 256 KiB, in the NIC: `ID.OVERLAY.log_max_lso`). One longer than a WQE's
//!   share of the gather ring (`max_frame` rounded up to a power of two, 16 KiB at nic64) is
//!   gathered **in pieces** of that share: the issue side reserves a piece, gathers into it
//!   (a read ends where its piece does), hands it to the retire side as a record of its own
//!   and goes on into the next piece, so the ring's two shares hold the piece going out and
//!   the one filling. The retire side streams the pieces out as one frame, the request with
//!   the first, the CQE with the last (`sq_engine/retire.rs`). Such a send may have no
//!   inline data segment after its header (LOCAL_LENGTH: it would be copied across a piece's
//!   end; mlx5e writes none). A DMA error in a piece after the first cannot recall the
//!   pieces gone before: the frame ends with an abort beat (`m_axis_tx_tuser`), on which the
//!   TX path sends the send's whole segments and drops the partial one
//!   (`crate::overlay::tx_tso::USER_IN_ABORT`); the WQE completes in error as any data error
//!   does. mlx5e inlines every header
//!   through the (inner) TCP header, so the frame starts with `inline_hdr_sz` header bytes. The
//!   request ([`TsoCmd`]) from the Ethernet segment, offsets being the software-parser fields
//!   (2-byte units) times 2:
//!
//!   | `TsoCmd` | tunnelled (`swp_inner_l3_offset` != 0) | plain (`swp_inner_l3_offset` = 0) |
//!   |---|---|---|
//!   | `lso` | 1 | 1 |
//!   | `mss` | `mss` | `mss` |
//!   | `hdr_len` | `inline_hdr_sz` | `inline_hdr_sz` |
//!   | `outer_l3`, `outer_l4` | `swp_outer_l3_offset`, `swp_outer_l4_offset` | 0, 0 |
//!   | `l3`, `l4` | `swp_inner_l3_offset`, `swp_inner_l4_offset` | `swp_outer_l3_offset`, `swp_outer_l4_offset` |
//!   | `tunnel` | 1 (VXLAN) with `swp_flags` OUTER_L4_UDP (0x20), else 2 (NVGRE) | 0 |
//!   | `outer_v6` | `swp_flags` OUTER_L3_IPV6 (0x10) | 0 |
//!   | `v6` | `swp_flags` INNER_L3_IPV6 (0x01) | `swp_flags` OUTER_L3_IPV6 (0x10) |
//!
//!   The plain column is how mlx5e fills the fields for a frame without encapsulation. Every
//!   other WQE's request has `lso = 0`. The CQE's `s_wqe_opcode` is 0x0E and its `byte_cnt` the
//!   super-frame's length. What the TSO engine refuses (an `mss` over its `max_mss`, a TCP
//!   header past `hdr_len`, ...) it drops and counts; this engine refuses only what the
//!   request cannot carry (below).
//! - Encapsulation: an SQ created with `qcmd_in.encap` set (CREATE's IN word 6: `encap` bit 31,
//!   `encap_ctx` bits 7:0) sends every frame with `TxCmd::encap = 1` and `encap_ctx` its
//!   context index, every packet of a multi-packet WQE and every super-frame (so every segment
//!   of it) alike. A CREATE whose context is not below `encap_contexts` ([`sq_engine_encap`];
//!   `ID.OVERLAY.encap_contexts`) is refused with BAD_PARAM; without `encap`, word 6 is not
//!   looked at.
//! - Enhanced multi-packet send (ENHANCED_MPSW, opcode 0x29, as mlx5e's MPWQE): one WQE
//!   carries many packets and gets one CQE. After the ctrl segment, an Ethernet segment whose
//!   `cs_flags` apply to every packet and whose bytes 12-13 are 0 (no inline header, no VLAN
//!   insert); then each data segment is one packet, a pointer segment or an inline data
//!   segment. The WQE register holds 16 DS, so one WQE carries at most 14 packets. Every
//!   segment is checked before any packet is sent; the packets are then gathered into the
//!   buffer together, each at a 64-byte start (so the pointer packets' reads are in flight at
//!   once on the data tags, as a SEND's segments are), and sent one after the other out of it,
//!   each with the same offload request; the CQE (when CQ_UPDATE is asked) has `byte_cnt` the
//!   sum of the packets and `s_wqe_opcode` 0x29. A failing segment fails the whole WQE: none
//!   of its packets is sent.
//! - A WQE fails, in this order, with an error CQE (REQ_ERR) carrying the syndrome and, in
//!   `vendor_err_synd`, the index of the failing segment: an opcode other than SEND, LSO,
//!   ENHANCED_MPSW or NOP, a DS count of 0 or over 16 (or under 2 for SEND, LSO and
//!   ENHANCED_MPSW), an inline header or inline data segment beyond the WQE's DS count, an
//!   inline header or VLAN insert in an ENHANCED_MPSW, an LSO with `mss` 0 or over 16383 (the
//!   request's 14 bits), with an inline header under 14 bytes or a VLAN insert instead of one,
//!   or with a software-parser offset of 128 units (256 bytes) or more → LOCAL_QP_OP (failing
//!   segment 0); a zero-length pointer segment, an empty frame or one over
//!   `max_frame` (an LSO's: `max_lso`), an LSO in pieces with an inline data segment (the DS
//!   count blamed), in an ENHANCED_MPSW a packet of 0 bytes or over `max_frame`, packets that, each
//!   at a 64-byte start, overrun one WQE's share of the gather ring (`max_frame` rounded up to a
//!   power of two), or no packet → LOCAL_LENGTH; an lkey outside the table, invalid, or a pointer segment outside its
//!   region → LOCAL_PROT; a DMA read answered with an error → LOCAL_ACCESS (`vendor_err_synd`: the
//!   DS count, as for an empty frame). The WQE is consumed and the SQ goes to the error state (QCMD
//!   QUERY shows it; RESET resumes at the next WQE). A DMA answer's error is judged when its WQE
//!   retires: the issue side may have gone on with the SQ's next WQEs, which the retire side then
//!   flushes (no frame, no CQE), and the issue side puts the SQ in error with its consumer
//!   counter after the failed WQE, as if it had stopped there. Queue commands wait until every
//!   issued WQE has retired. A prefetch-buffer half holds one SQ's WQEBBs for one turn: it is
//!   emptied at every turn taken, so WQEBBs fetched after a failed WQE (or past a turn's end)
//!   are read again; only the look-ahead's half (below) is kept for a later turn.
//! - Look-ahead: while a turn runs, one descriptor read on [`LOOKAHEAD_TAG`] fills the buffer's
//!   other half, in a cycle the request port is idle, with the WQEBBs the engine needs after
//!   the current half's:
//!   - when the round robin would pick another SQ next (ready, not in fault, with WQEBBs
//!     posted and its producer counter known from its 8-byte doorbell, or from its context on
//!     a resume bit alone; no BlueFlame WQE waiting for it): the read its turn would start
//!     with, at most TURN_WQEBBS (that turn ends there while this SQ waits);
//!   - otherwise (no other SQ waits, or the next pick is this SQ again): this SQ's next posted
//!     WQEBBs, from where the current half ends up to its producer counter (a doorbell rung
//!     since with dword 0 extends it), at most PREFETCH_WQEBBS; not for a BlueFlame WQE, a
//!     failed WQE or a flush.
//!
//!   A turn, or a refill within one, that starts exactly where the look-ahead started takes
//!   its half as the current one, without a descriptor read (a turn waits in Idle, a refill in
//!   WqeReq, for an answer still on the way); one that starts elsewhere drops it and reads on
//!   tag 0. A queue command or a fault voids it, as do an answer with an error (the turn then
//!   reads and meets the error itself) and a consumer counter that moved. So a busy SQ's
//!   descriptor reads overlap the WQEs of the read before, two halves ping-ponging, and under
//!   load the SQs' first reads overlap the turns before them instead of adding up.
//! - A doorbell for an SQ that is not ready (never created, or in error) has no CQ to complete
//!   to: it is counted in `stat_db_bad` and ignored.
//! - BlueFlame (`regmap` `uar.SQ_DB` / `uar.SQ_BF`): the BAR hands every dword written to the
//!   UAR page's 256-byte window at 0x800 to `s_db` as written; they go into the BlueFlame
//!   buffer, and the write of dword 1 (`qpn_ds`, the second half of the 8-byte doorbell) is the
//!   doorbell and commits: the buffer holds a WQE when the DS count is 1..=16 and dword 0 and
//!   every dword 2..4*DS was written since the previous doorbell (in any order). At that SQ's
//!   turn, a committed WQE whose `wqe_index` equals the consumer counter is run from the
//!   buffer: the producer counter is taken as its end, and neither the doorbell record nor the
//!   ring is read. Anything else falls back to the plain doorbell (record, then the ring,
//!   where the driver also wrote the WQE): a WQE not wholly written, over 256 bytes (DS over
//!   16: refused by the ring path, LOCAL_QP_OP) or not the SQ's next (WQEs posted before it
//!   are still pending). A BlueFlame WQE that fails its checks ends in its error CQE as a
//!   fetched one would; a BlueFlame doorbell on an SQ not ready is ignored and counted like
//!   any other. One buffer serves every SQ: a write of the window while a WQE is being copied
//!   out of it voids the copy (the WQE is fetched from the ring instead), and the buffer is
//!   taken (used or not) at its SQ's turn, so nothing stale is ever run. The driver writes the
//!   WQE into the ring and the doorbell record before the window, as for a plain doorbell;
//!   the 8-byte plain doorbell alone is dwords 0 and 1 (the WQE is then fetched).
//! - Arbitration: SQs with a doorbell rung (pending bit) or a turn cut short (resume bit) are
//!   served round robin, one turn each. A turn runs the SQ's WQEs up to its producer counter,
//!   but once it has consumed TURN_WQEBBS (8) WQEBBs and another SQ waits, it ends after the
//!   WQE in hand and sets the SQ's resume bit. So under load every busy SQ gets an equal share
//!   of WQEBBs (within one WQE per turn), however many WQEs another has posted. A turn taken
//!   for its resume bit alone goes on from the producer counter in the SQ's context, without
//!   reading the doorbell record again; a doorbell rung meanwhile has set the pending bit, and
//!   that turn reads it. A resume turn of an SQ that is no longer ready ends at once (not
//!   counted in `stat_db_bad`).
//! - Completions: a CQE for every WQE with `fm_ce_se` CQ_UPDATE, and for every failed WQE.
//! - Ports ([`SqPorts`]): `s_db_tdata/_tvalid` ([`SqDb`]), `s_qcmd_*` / `m_qcmd_res_*` (SQ
//!   commands), `m_dma_rd_req_*` (`DmaRdReq`), `s_dma_rd_cpl_*` (tags `0..TAGS`: 0 for the
//!   turn's descriptors, [`LOOKAHEAD_TAG`] for the look-ahead's, the others for data), `mr_lkey` → `mr_valid/_base/_len` ([`MrLookup`]:
//!   combinational lookup in the memory-region table), `m_axis_tx_*` (`tuser`: the abort
//!   beat of an LSO in pieces), `m_axis_tx_cmd_*`,
//!   `m_cmpl_*` ([`Cmpl`] of `cq_engine`), `stat_*` ([`SqStats`]).
//! - States: [`SqState`] (the issue side); the stages in their own files: the WQE decode
//!   (`sq_engine/wqe.rs`), the copy of inline bytes into the gather ring
//!   (`sq_engine/inline_copy.rs`), the retire side (`sq_engine/retire.rs`) and its frame out of
//!   the gather ring (`sq_engine/frame_out.rs`).
//! - Latency: about two DMA round trips for a doorbell batch's first WQE (WQEBBs, data; a
//!   third first, the doorbell record, when the doorbell came without dword 0; none for the
//!   WQEBBs when the look-ahead read them during the turn before); a BlueFlame WQE none for
//!   its descriptors (doorbell to WQE register: about 5 cycles plus 512/W + 2 per WQEBB), so
//!   with its frame inline it makes no DMA read at all; a later WQE whose WQEBBs were
//!   prefetched or looked ahead waits for no descriptor read once the WQEs before it take a
//!   round trip to run, only for its data (none when its frame is all in the WQE). A
//!   descriptor read fetches from the next WQEBB needed up to the producer counter (at least
//!   the rest of the current WQE), at most PREFETCH_WQEBBS (TURN_WQEBBS while another SQ
//!   waits), cut where the ring wraps or a 4 KiB page ends; a WQE cut that way reads its rest
//!   (or takes the look-ahead's) when it gets there. Each WQEBB copied from the buffer:
//!   512/W + 2 cycles.
//! - Throughput: the issue side takes a WQE in about 8 cycles plus its WQEBBs' copies and a cycle
//!   per data segment, without waiting for its data: up to 30 data reads (of as many WQEs) and
//!   16 WQEs are in flight, and the gather ring (twice the largest WQE's bytes) holds their
//!   frames, so a DMA round trip is paid once per ring-full rather than per WQE. The retire side
//!   sends a packet every `ceil(len / B) + 2` cycles; a multi-packet WQE's packets all land
//!   before its first is sent (a failed read fails them all); one descriptor read per PREFETCH_WQEBBS
//!   WQEBBs rung at once, none for a BlueFlame WQE (the driver's dword writes on the BAR, 2 + 4*DS,
//!   bound a BlueFlame stream instead); inline bytes go into the buffer one beat per cycle, pausing
//!   in the cycles a DMA answer writes it. One busy SQ keeps about this pace under DMA latency
//!   as long as PREFETCH_WQEBBS WQEBBs take about a round trip to run ([`PREFETCH_WQEBBS`]);
//!   results/HOST.md.
//! - Cost: the WQE register (most of the flip-flops), the SQ contexts in LUT RAM (201 bits
//!   each), the WQE prefetch buffer (two halves of PREFETCH_WQEBBS x 64 bytes of block RAM, 2 KiB, read into a
//!   register), the look-ahead's registers (a request, two counters, its window's subtracts
//!   and compares for two sources) and a second read port on the SQ contexts and doorbell
//!   counters, the BlueFlame buffer
//!   (256 bytes of RAM in 32-bit lanes, a 64-bit written mask, a W-bit multiplexer in front of the
//!   WQE register), the gather ring in block RAM (one byte lane per RAM, twice `max_frame`
//!   rounded up to a power of two), per data tag a beat address and a WQE id, the retire FIFO
//!   (16 x 222 bits), the packet FIFO (16 lengths) and the request FIFO (8 x 88 bits, a `TxCmd` each) in LUT RAM, a 32-bit fault word per SQ, the
//!   inline copy's beat multiplexers and byte shifter, a 32-bit multi-packet layout sum, for LSO
//!   sends in pieces a piece counter (`pos_bits`) and a 32-bit count of the bytes left; no row in
//!   results/AREA.md.
//! - Golden model: `nicgen_model::sq`; test: `testbench/tests/host/sq_engine.rs`.

mod frame_out;
mod inline_copy;
mod retire;
mod wqe;

use super::cq_engine::Cmpl;
use super::desc;
use super::mr_table::MrLookup;
use super::qctx::{sweep, QcmdPort};
use super::regs::consts::{fm_ce_se, qstate, qtype, syndrome};
use super::regs::desc::{ctrl_seg, dbr};
use super::{DmaRdCplUser, DmaRdReq, QcmdReq, QcmdRes};
use crate::eth::eth_tx::TxCmd;
#[cfg(doc)]
use crate::overlay::tx_tso::TsoCmd;
use crate::stats::event_counter;
use crate::stream::{Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SqCfg {
    pub data_bits: u32,
    /// Send queues (SQNs `0..sqs`).
    pub sqs: u32,
    /// Completion queues (a CREATE's CQ must be below this).
    pub cqs: u32,
    /// Memory-region table entries (lkeys `0..mrs`).
    pub mrs: u32,
    /// Largest frame a WQE may describe (bytes, without FCS).
    pub max_frame: u32,
    /// Largest LSO send (bytes, headers included; at most [`LSO_MAX`]). Above `max_frame`
    /// rounded up to a power of two, an LSO send longer than that is gathered in pieces
    /// (below); otherwise an LSO send is held to `max_frame` as a SEND is. The TX path must
    /// then segment (`crate::overlay::tx_lso`): it takes the frame as it comes.
    pub max_lso: u32,
    /// Largest log2 ring size (WQEBBs) accepted by CREATE.
    pub log_max: u32,
}

nicgen_edsl::record! {
    /// A write to the UAR page's send doorbell / BlueFlame window (`uar.SQ_DB` then
    /// `uar.SQ_BF`, 256 bytes): its dword and the 32 bits as written (WQE bytes in memory
    /// order, byte 0 in bits 7:0). Dword 1 (`qpn_ds`) is the doorbell.
    pub struct SqDb {
        /// Dword of the window (0..64).
        index: 6,
        data: 32,
    }
}

nicgen_edsl::record! {
    /// The engine's counters (`stat_<field>`, 32 bits, wrapping).
    pub struct SqStats {
        /// Doorbells ignored: SQN out of range, SQ not ready, doorbell record unreadable.
        db_bad: 32,
        /// WQEs executed (completed, in error or not).
        wqes: 32,
        /// WQEs completed in error.
        wqe_errors: 32,
        /// Frames sent to the TX path.
        frames: 32,
    }
}

/// The engine's ports.
pub struct SqPorts {
    /// Writes to the doorbell / BlueFlame window (`s_db`; cannot be stalled).
    pub db: RecordValid<SqDb<u32>>,
    /// SQ commands (`s_qcmd`) and their answers (`m_qcmd_res`).
    pub qcmd: RecordStream<QcmdReq<u32>>,
    pub qcmd_res: RecordStream<QcmdRes<u32>>,
    /// DMA reads: requests (`m_dma_rd_req`) and answers (`s_dma_rd_cpl`, `tuser` =
    /// [`DmaRdCplUser`]).
    pub dma_rd_req: RecordStream<DmaRdReq<u32>>,
    pub dma_rd_cpl: Stream,
    /// The memory-region lookup (`mr_lkey`, `mr_valid/_base/_len`).
    pub mr: MrLookup,
    /// The frames (`m_axis_tx`) and their offload requests (`m_axis_tx_cmd`, [`TxCmd`]).
    pub tx: Stream,
    pub tx_cmd: RecordStream<TxCmd<u32>>,
    /// Completion requests to the CQ engine (`m_cmpl`).
    pub cmpl: RecordStream<Cmpl<u32>>,
    /// Counters (`stat_*`).
    pub stats: SqStats,
}

impl Ports for SqPorts {
    type Cfg = SqCfg;
    fn ports(io: &Io, cfg: &SqCfg) -> Self {
        let w = cfg.data_bits;
        SqPorts {
            db: RecordValid::sink(io, "s_db", SqDb::shape()),
            qcmd: RecordStream::sink(io, "s_qcmd", QcmdReq::shape()),
            qcmd_res: RecordStream::source(io, "m_qcmd_res", QcmdRes::shape()),
            dma_rd_req: RecordStream::source(io, "m_dma_rd_req", DmaRdReq::shape()),
            dma_rd_cpl: Stream::sink(io, "s_dma_rd_cpl", &StreamCfg::new(w, DmaRdCplUser::WIDTH)),
            mr: MrLookup::engine(io, cfg.mrs),
            tx: Stream::source(io, "m_axis_tx", &StreamCfg::new(w, 1)),
            tx_cmd: RecordStream::source(io, "m_axis_tx_cmd", TxCmd::shape()),
            cmpl: RecordStream::source(io, "m_cmpl", Cmpl::shape()),
            stats: io.outputs("stat_", &SqStats::shape()),
        }
    }
}

/// Read tags: 0 for the turn's descriptor reads, [`LOOKAHEAD_TAG`] for the look-ahead's, the
/// others (`1..TAGS - 1`) for data. Each data read is one tag, so the data tags bound the
/// gathers in flight: 30 reads of a 64-byte frame cover a DMA round trip of 1 µs at the 64-bit
/// preset's frame rate; the receive engine's tags start at `TAGS`.
pub const TAGS: u32 = 32;

/// The tag of the look-ahead read: the WQEBBs needed after the current half's (the next SQ's
/// first, or this SQ's next), fetched during the current turn.
pub const LOOKAHEAD_TAG: u32 = TAGS - 1;

/// The largest LSO send an SQ takes: 256 KiB, headers included (mlx5's `max_lso_cap`, log2
/// 18).
pub const LSO_MAX: u32 = 1 << 18;

/// Dwords of the BlueFlame window (256 bytes: the largest WQE, 4 WQEBBs).
const BF_DWORDS: u32 = 64;

/// WQEBBs a prefetch-buffer half holds and a descriptor read fetches at most (a power of two).
/// Sixteen: a busy SQ's look-ahead into the other half is hidden while a half's WQEs take about
/// a DMA round trip to run, and 16 one-WQEBB sends take about 210 cycles at 512 bits and 350 at
/// 64 bits, against round trips of 250 and 156 cycles at 1 µs (8 would leave about half the
/// round trip showing). 32 gained 2 % at 512 bits and lost 15 % at 64, where its 2 KiB answers
/// (256 beats) hold up the data answers behind them on the one answer port.
pub const PREFETCH_WQEBBS: u32 = 16;

/// WQEBBs an SQ may consume in one turn while another SQ waits (a turn's first read, and a
/// look-ahead for another SQ, fetch no more): eight, two WQEs of the largest size or eight
/// one-WQEBB sends, so another SQ waits a few WQEs' time, not a whole half's.
pub const TURN_WQEBBS: u32 = 8;

nicgen_edsl::record! {
    /// SQ context word in the RAM.
    struct SqCtx {
        /// Ring address >> 12.
        base: 52,
        log_size: 5,
        /// Doorbell record address >> 3.
        dbr: 61,
        cqn: 16,
        ci: 16,
        pc: 16,
        synd: 8,
        err_wqe: 16,
        state: 2,
        /// Encapsulate every frame with context `encap_ctx` (`qcmd_in.encap`).
        encap: 1,
        encap_ctx: 8,
    }
}

nicgen_edsl::states! {
    /// The issue side's states (one WQE at a time; the retire side has its own).
    pub enum SqState {
        Init,
        Idle,
        Qcmd,
        Ctx,
        DbrReq,
        DbrWait,
        Check,
        WqeReq,
        WqeWait,
        Parse,
        Validate,
        /// Space in the gather ring and a retire slot for the WQE's frame.
        Reserve,
        Gather,
        /// Hand the WQE to the retire side.
        Push,
        Advance,
        /// A DMA answer failed a WQE the retire side took: that SQ's context into error.
        Fault,
        /// The doorbell record has landed in its register: take the producer counter.
        DbrGot,
        /// One WQEBB from the prefetch buffer into the WQE register.
        WqeCopy,
        /// An LSO send in pieces: the full piece to the retire side.
        PiecePush,
        /// An LSO send in pieces: space in the ring (and a retire slot) for the next piece.
        PieceReserve,
    }
}

/// The lowest set bit of `v` among `0..n` and whether there is one.
fn first_set(v: Sig, n: u32, bits: u32) -> (Sig, Sig) {
    let arms: Vec<(Sig, Sig)> = (0..n).map(|i| (v.bit(i), lit(bits, i))).collect();
    (select(&arms, lit(bits, 0u32)), v.or_reduce())
}

/// The send engine without encapsulation: a CREATE asking for an encapsulation context is
/// refused ([`sq_engine_encap`] with none).
pub fn sq_engine(cfg: &SqCfg) -> Result<Block<SqPorts>, ElabError> {
    sq_engine_encap(cfg, 0)
}

/// The send engine whose SQs may be created with an encapsulation context below
/// `encap_contexts` (`ID.OVERLAY.encap_contexts`, at most 256; 0: none).
pub fn sq_engine_encap(cfg: &SqCfg, encap_contexts: u32) -> Result<Block<SqPorts>, ElabError> {
    let w = cfg.data_bits;
    if ![8, 64, 128, 256, 512].contains(&w) {
        return Err(ElabError::config(
            "sq_engine",
            format!("data_bits {w}: one of 8, 64, 128, 256, 512"),
        ));
    }
    if cfg.sqs < 2 || cfg.sqs > 256 || cfg.mrs < 2 || cfg.mrs > 256 || cfg.log_max > 15 {
        return Err(ElabError::config(
            "sq_engine",
            "sqs and mrs must be 2..=256 and log_max at most 15",
        ));
    }
    if encap_contexts > 256 {
        return Err(ElabError::config(
            "sq_engine",
            format!("encap_contexts {encap_contexts}: at most 256 (an 8-bit index)"),
        ));
    }
    if !(64..=16384).contains(&cfg.max_frame) {
        return Err(ElabError::config(
            "sq_engine",
            "max_frame must be 64..=16384",
        ));
    }
    if cfg.max_lso > LSO_MAX {
        return Err(ElabError::config(
            "sq_engine",
            format!("max_lso {}: at most {LSO_MAX}", cfg.max_lso),
        ));
    }
    let cfg = *cfg;
    // A build that accepts encapsulation contexts is another module.
    let mut suffix = match encap_contexts {
        0 => String::new(),
        e => format!("_e{e}"),
    };
    // LSO sends gathered in pieces (longer than a WQE's share of the ring).
    let pieces = cfg.max_lso > cfg.max_frame.next_power_of_two();
    if pieces && cfg.max_frame < 512 {
        return Err(ElabError::config(
            "sq_engine",
            "LSO sends in pieces need max_frame of at least 512 (the inline header in the first piece)",
        ));
    }
    if pieces {
        suffix += &format!("_l{}", cfg.max_lso);
    }
    Block::build(
        format!("sq_engine_d{w}_q{}_m{}{suffix}", cfg.sqs, cfg.mrs),
        cfg,
        move |p: SqPorts| {
            use SqState as S;
            doc("Send queues: doorbells, WQE fetch and checks, gather by DMA, frames and offload");
            doc("requests to the TX path, completions.");
            let b = w / 8; // bytes per beat
            let bb = b.trailing_zeros(); // log2 bytes per beat (b is a power of two)
            let sq_bits = clog2(cfg.sqs as u64);
            let mr_bits = clog2(cfg.mrs as u64);
            let tag_bits = clog2(TAGS as u64);
            // One WQE's bytes at most (a multi-packet WQE's packets at 64-byte starts).
            let buf_bytes = cfg.max_frame.next_power_of_two();
            // The gather ring holds two of them: the largest frame goes out while the next
            // gathers, and small ones by the dozen.
            let ring_bytes = 2 * buf_bytes;
            let ring_beats = (ring_bytes / b).max(2);
            let pos_bits = clog2(ring_bytes as u64);
            let id_bits = retire::ENTRIES.trailing_zeros();
            let wqe_beats = 2048 / w;
            let wqe_beat_bits = clog2(wqe_beats as u64).max(1);

            // ---- Ports ----
            let rd_req_ready = p.dma_rd_req.ready;
            let cpl = &p.dma_rd_cpl;
            let (mr_valid, mr_base, mr_len) = (p.mr.entry.valid, p.mr.entry.base, p.mr.entry.len);
            let tx = &p.tx;

            let state = Fsm::new("state", S::Init);
            let is = |s: SqState| state.is(s);

            // ---- Doorbells: a pending bit per SQ (rung since its last turn began) and a resume
            // bit per SQ (its turn was cut with WQEs left), picked round robin ----
            let pending = reg_init(cfg.sqs, 0u32).named("pending");
            let resume = reg_init(cfg.sqs, 0u32).named("resume");
            let waiting = (pending | resume).named("waiting");
            let dbw = p.db.fields();
            let bf_we = p.db.valid; // any write of the window
            let db_valid = (bf_we & dbw.index.eq(1u32)).named("doorbell");
            // Dword 1 is control-segment bytes 4..8, dword 0 its bytes 0..4.
            let ctrl_hi = cat(&[dbw.data, lit(32, 0u32)]);
            let db_sqn = desc::get(ctrl_seg::QPN, ctrl_hi).named("db_sqn");
            let db_ok = (db_valid & db_sqn.lt(cfg.sqs as u64)).named("db_in_range");
            let last_pick = reg_init(sq_bits, 0u32).named("last_pick");
            let above: Vec<Sig> = (0..cfg.sqs)
                .rev()
                .map(|i| waiting.bit(i) & last_pick.lt(i as u64))
                .collect();
            let (pick_hi, any_hi) = first_set(cat(&above), cfg.sqs, sq_bits);
            let (pick_lo, any) = first_set(waiting, cfg.sqs, sq_bits);
            let pick = mux(any_hi, pick_hi, pick_lo).named("pick");

            // ---- Queue commands ----
            let qcmd = QcmdPort::new(&p.qcmd, &p.qcmd_res);
            // SQs a DMA answer put in error (found by the retire side) come first; a queue
            // command waits until the retire side is empty, so it never meets a WQE between
            // issue and completion.
            let faults = reg_init(cfg.sqs, 0u32).named("faults");
            let (fault_pick, any_fault) = first_set(faults, cfg.sqs, sq_bits);
            let rt_empty = wire(1).named("retire_empty");
            let take_fault = (is(S::Idle) & any_fault).named("take_fault");
            let take_qcmd = (is(S::Idle) & !any_fault & qcmd.go & rt_empty).named("take_qcmd");
            // The look-ahead read in flight and its SQ (below): that SQ's turn waits for it.
            let la_busy = reg_init(1, 0u32).named("lookahead_busy");
            let la_sqn = reg(sq_bits).named("lookahead_sqn");
            // Its answer landed whole and still stands; void (queue command, fault); failed; the
            // WQEBB counters it covers (`la_ci .. la_end`).
            let la_ok = reg_init(1, 0u32).named("lookahead_ready");
            let la_stale = reg_init(1, 0u32).named("lookahead_stale");
            let la_err = reg_init(1, 0u32).named("lookahead_error");
            let la_ci = reg(16).named("lookahead_ci");
            let la_end = reg(16).named("lookahead_end");
            let la_waits = (la_busy & la_sqn.eq(pick)).named("lookahead_waits");
            let take_db =
                (is(S::Idle) & !any_fault & !qcmd.go & any & !la_waits).named("take_doorbell");
            qcmd.take(take_qcmd);
            let c = &qcmd.c;

            let sqn = reg(sq_bits).enable(take_db | take_fault).named("sqn");
            sqn.set(mux(take_fault, fault_pick, pick));
            last_pick.set_if(take_db, pick);
            let one = |i: Sig| lit(cfg.sqs, 1u32).shl_by(i);
            let set_bits = mux(db_ok, one(db_sqn.trunc(sq_bits)), lit(cfg.sqs, 0u32));
            let clr_bits = mux(take_db, one(pick), lit(cfg.sqs, 0u32));
            pending.set((pending & !clr_bits) | set_bits);
            // A turn taken for its resume bit alone continues from the producer counter the
            // SQ's context holds (read from its doorbell record in an earlier turn): no record
            // read. Any doorbell rung since sets the pending bit, so its own turn reads it.
            let resumed = reg(1).enable(take_db).named("resumed");
            resumed.set((resume & !pending).shr_by(pick).bit(0));

            // ---- SQ contexts (LUT RAM, swept to "not created" after reset) ----
            let ctx_mem = memory("sq_ctx", SqCtx::WIDTH, cfg.sqs.next_power_of_two());
            let aw = ctx_mem.addr_width();
            // After reset, a sweep writes every SQ context to "not created".
            let (sweep, sweep_done) = sweep(is(S::Init), aw);
            let cur_q = mux(
                is(S::Qcmd),
                c.index.trunc(aw.max(sq_bits)),
                sqn.zext(aw.max(sq_bits)),
            );
            let ctx = SqCtx::unpack(ctx_mem.read_async(cur_q.trunc(aw)).named("sq_ctx_q"));

            let cur_state = ctx.state;
            let log_size = c.in2.slice(4, 0);
            let link = c.in5.slice(15, 0);
            // `qcmd_in.encap` and `qcmd_in.encap_ctx` (IN word 6, as the words above).
            let encap = c.in6.bit(31).named("create_encap");
            let encap_ctx = c.in6.slice(7, 0).named("create_encap_ctx");
            let encap_ok = if encap_contexts == 0 {
                !encap
            } else {
                !encap | encap_ctx.lt(encap_contexts as u64)
            };
            let params_ok = log_size.le(cfg.log_max as u64)
                & log_size.ne(0u32)
                & link.lt(cfg.cqs as u64)
                & encap_ok;
            let v = qcmd.verdict(qtype::SQ, cfg.sqs, cur_state, params_ok);
            let (create, new_state) = (v.create, v.new_state);
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

            // ---- Descriptor reads: the doorbell record into its register, WQEBBs into the
            // prefetch buffer, from which each WQEBB is copied into the WQE register ----
            // The answers routed here carry tags below TAGS: only the low bits are looked at.
            let cpl_u = DmaRdCplUser::unpack(cpl.user().expect("tuser").unused());
            let cpl_tag = cpl_u.tag.trunc(tag_bits).named("cpl_tag");
            let cpl_beat = cpl.valid().named("cpl_beat"); // always ready
            cpl.ready().set(lit(1, 1u32));
            let desc_beat = (cpl_beat & cpl_tag.eq(0u32)).named("desc_beat");
            let la_beat = (cpl_beat & cpl_tag.eq(LOOKAHEAD_TAG)).named("lookahead_beat");
            let data_beat =
                (cpl_beat & cpl_tag.ne(0u32) & !cpl_tag.eq(LOOKAHEAD_TAG)).named("data_beat");
            let wqe_beat = reg_init(wqe_beat_bits, 0u32).named("wqe_beat");
            // The prefetch buffer (block RAM, read into a register): WQEBB counter `c` at
            // `c % PREFETCH_WQEBBS`, `512 / w` beats each.
            let bb_shift = (512 / w).trailing_zeros(); // log2 beats per WQEBB
            let bpb = 1u32 << bb_shift;
            let pf_log = PREFETCH_WQEBBS.trailing_zeros();
            // Two halves: the current turn's, and the next turn's being looked ahead into.
            let pf_mem = memory("wqe_prefetch", w, 2 * PREFETCH_WQEBBS * bpb);
            let half = reg_init(1, 0u32).named("prefetch_half");
            let pf_at = |counter: Sig, beat: Sig| {
                if bb_shift == 0 {
                    counter.trunc(pf_log)
                } else {
                    cat(&[counter.trunc(pf_log), beat.trunc(bb_shift)])
                }
            };
            let pf_off_bits = pf_log + bb_shift;
            let pf_wr = reg(pf_off_bits).named("prefetch_wr_beat");
            let pf_rd_beat = reg(bb_shift + 1).named("copy_beat"); // beats addressed so far
            let copy_v = reg_init(1, 0u32).named("copy_valid"); // the RAM's word is for the WQE
            let pf_q = wire(w).named("prefetch_q");
            let wqe_slots: Vec<Sig> = (0..wqe_beats)
                .map(|i| {
                    let r = reg(w).named(&format!("wqe_b{i}"));
                    r.set_if(copy_v & wqe_beat.eq(i as u64), pf_q);
                    r
                })
                .collect();
            let wqe = cat(&wqe_slots.iter().rev().copied().collect::<Vec<_>>()).named("wqe");
            // The doorbell record's 4 bytes (byte 0 lowest), shifted in a beat at a time.
            let dbr_q = reg(32).named("dbr_word");
            let dbr_beat = desc_beat & is(S::DbrWait);
            dbr_q.set_if(
                dbr_beat,
                if w >= 32 {
                    cpl.data().slice(31, 0)
                } else {
                    cat(&[cpl.data(), dbr_q.slice(31, w)])
                },
            );
            let desc_err = reg_init(1, 0u32).named("desc_err");
            let desc_last = (desc_beat & cpl.last()).named("desc_done");

            // ---- Per-WQE state ----
            let ci = reg(16).named("ci");
            let pc = reg(16).named("pc");
            // The WQE's WQEBB being brought in.
            let wqebb = reg(2).named("wqebb");
            // WQEBB counters `ci .. pf_end` are in the prefetch buffer's half (at most
            // PREFETCH_WQEBBS; emptied at each doorbell taken, so nothing outlives its SQ's turn
            // or error, unless the look-ahead read them: then its half becomes the current).
            let pf_end = reg(16).named("prefetch_end");
            let wqe_rd_bbs = reg(pf_log + 1).named("wqe_read_bbs"); // WQEBBs of the read in flight

            // The WQE is copied from the BlueFlame buffer instead of the prefetch buffer.
            let use_bf = reg_init(1, 0u32).named("use_blueflame");
            let wq = wqe::decode(wqe);
            let (ds, ihs, is_send, is_nop, is_mpw) =
                (wq.ds, wq.ihs, wq.is_send, wq.is_nop, wq.is_mpw);
            // The largest frame of this WQE: an LSO send's may be longer (gathered in pieces).
            let frame_max = if pieces {
                mux(wq.is_lso, lit(32, cfg.max_lso), lit(32, cfg.max_frame))
            } else {
                lit(32, cfg.max_frame)
            }
            .named("frame_max");

            // Data segment under the cursor.
            let dsi = reg(5).named("ds_index");
            let seg = wqe::segment(wqe, dsi);
            let (seg_len, seg_addr) = (seg.len, seg.addr);
            p.mr.lkey.set(seg.lkey.trunc(mr_bits));
            let lkey_ok = seg.lkey.lt(cfg.mrs as u64) & mr_valid;
            let seg_end = seg_addr.add_wide(seg_len.zext(64)).named("seg_end");
            let mr_end = mr_base.add_wide(mr_len).named("mr_end");
            let in_region = seg_addr.ge(mr_base) & seg_end.le(mr_end);
            let more_ds = dsi.zext(8).lt(ds.zext(8)).named("more_segments");
            let total = reg(32).named("frame_len");
            let seg_total = (total + seg_len.zext(32)).named("len_with_segment");
            // An inline data segment: its bytes start after its byte-count word and must end
            // within the DS count; it takes (4 + len) / 16 DS units, rounded up.
            let inl_start = (dsi.zext(32).shl(4) + 4u32).named("inline_start");
            let inl_fits = (inl_start + seg_len.zext(32))
                .le(ds.zext(32).shl(4))
                .named("inline_segment_fits");
            let inl_ds = ((seg_len.zext(32) + 19u32).shr(4)).resize(5);
            let seg_step = mux(seg.inline, inl_ds, lit(5, 1u32)).named("segment_ds");
            // A multi-packet WQE lays its packets out in the gather buffer at 64-byte starts
            // (a whole number of beats at every width); together they must fit the buffer.
            let up64 = |v: Sig| (v + 63u32) & lit(v.width(), ((1u64 << v.width()) - 1) & !63);
            let laid = reg(32).named("mpw_laid_out");
            let laid_next = (laid + up64(seg_len.zext(32))).named("mpw_laid_with_segment");

            // Verdict of the current WQE.
            let synd = reg(8).named("syndrome");
            let failed = reg(1).named("failed");
            let fail = |cond: Sig, code: u64| (cond, lit(8, code));
            let v_in = is(S::Validate) & more_ds;
            let v_fail = select(
                &[
                    fail(seg.inline & !inl_fits, syndrome::LOCAL_QP_OP),
                    fail(
                        (!seg.inline | is_mpw) & seg_len.eq(0u32),
                        syndrome::LOCAL_LENGTH,
                    ),
                    fail(
                        mux(
                            is_mpw,
                            seg_len.gt(cfg.max_frame as u64) | laid_next.gt(buf_bytes as u64),
                            seg_total.gt(frame_max),
                        ),
                        syndrome::LOCAL_LENGTH,
                    ),
                    fail(!seg.inline & (!lkey_ok | !in_region), syndrome::LOCAL_PROT),
                ],
                lit(8, 0u32),
            )
            .named("segment_fault");
            let v_bad = (v_in & v_fail.ne(0u32)).named("segment_bad");
            let v_done = (is(S::Validate) & !more_ds).named("validated");
            let empty = total.eq(0u32) & (is_send | is_mpw);
            // An LSO send longer than a WQE's share of the ring (`buf_bytes`) is gathered in
            // pieces of that share: pointer segments only after the inline header (an inline
            // data segment would be copied across a piece's end), else LOCAL_LENGTH.
            let inl_seen = reg(1).named("inline_data_seen");
            inl_seen.set(select(
                &[
                    (is(S::Parse), lit(1, 0u32)),
                    (v_in & seg.inline, lit(1, 1u32)),
                ],
                inl_seen,
            ));
            let big = if pieces {
                (wq.is_lso & total.gt(buf_bytes as u64)).named("lso_in_pieces")
            } else {
                lit(1, 0u32)
            };
            let big_inl = (big & inl_seen).named("lso_pieces_inline");
            let v_len_bad = (v_done & (empty | big_inl)).named("frame_length_bad");

            // ---- Gather buffer: one byte-wide RAM per lane ----
            let pos = reg(pos_bits).named("pos"); // byte position of the next data
                                                  // Where the next segment's bytes start: a multi-packet WQE's packets at 64 bytes.
            let pos_seg = mux(is_mpw, up64(pos), pos).named("segment_pos");

            // Tags in flight: base beat per tag, busy bits.
            let busy = reg_init(TAGS, 0u32).named("tag_busy");
            let free_v: Vec<Sig> = (1..TAGS)
                .rev()
                .map(|t| {
                    if t == LOOKAHEAD_TAG {
                        lit(1, 0u32)
                    } else {
                        !busy.bit(t)
                    }
                })
                .collect();
            let free_v = cat(&[cat(&free_v), lit(1, 0u32)]);
            let (first_free, have_tag) = first_set(free_v, TAGS, tag_bits);
            // A request offered and not yet taken keeps its tag (stream rule 1), even if a
            // lower tag frees meanwhile.
            let holding = reg_init(1, 0u32).named("req_holding");
            let held_tag = reg(tag_bits).named("held_tag");
            let free_tag = mux(holding, held_tag, first_free).named("data_tag");
            let bases: Vec<Sig> = (0..TAGS)
                .map(|t| reg(pos_bits - bb).named(&format!("tag{t}_beat")))
                .collect();
            let base_arms: Vec<(u64, Sig)> = bases
                .iter()
                .enumerate()
                .map(|(t, r)| (t as u64, *r))
                .collect();
            let in_burst = reg_init(1, 0u32).named("cpl_in_burst");
            let burst_addr = reg(pos_bits - bb).named("cpl_addr");
            let cpl_addr = mux(
                in_burst,
                burst_addr,
                case(cpl_tag, &base_arms, lit(pos_bits - bb, 0u32)),
            )
            .named("cpl_write_beat");
            in_burst.set_if(data_beat, !cpl.last());
            burst_addr.set_if(data_beat, cpl_addr + 1u32);
            // Each data tag carries the retire id of the WQE it gathers for.
            let wr_id = wire(id_bits).named("retire_id");
            let owners: Vec<Sig> = (0..TAGS)
                .map(|t| {
                    if t == 0 {
                        lit(id_bits, 0u32)
                    } else {
                        reg(id_bits).named(&format!("tag{t}_wqe"))
                    }
                })
                .collect();
            let owner_arms: Vec<(u64, Sig)> = owners
                .iter()
                .enumerate()
                .map(|(t, r)| (t as u64, *r))
                .collect();
            let cpl_owner = case(cpl_tag, &owner_arms, lit(id_bits, 0u32)).named("cpl_wqe");

            // Gather cursor over the current data segment.
            let g_addr = reg(64).named("gather_addr");
            let g_left = reg(31).named("gather_left");
            let to_4k = (lit(14, 4096u32) - g_addr.slice(11, 0).zext(14)).named("to_4k");
            let chunk_4k =
                mux(g_left.zext(32).lt(to_4k.zext(32)), g_left.trunc(14), to_4k).named("chunk_4k");
            // An LSO send in pieces: bytes left in the piece's space, the send's bytes after
            // the pieces reserved so far; a read ends where its piece does.
            let piece_left = reg(pos_bits).named("piece_left");
            let rest = reg(32).named("lso_rest");
            let piece_first = reg(1).named("piece_first");
            let piece_full = (big & piece_left.eq(0u32)).named("piece_full");
            let chunk = if pieces {
                mux(
                    big & piece_left.zext(16).lt(chunk_4k.zext(16)),
                    piece_left.resize(14),
                    chunk_4k,
                )
                .named("chunk")
            } else {
                chunk_4k
            };
            let g_pending = g_left.ne(0u32).named("gather_pending");
            let g_active = (is(S::Gather) & g_pending & !piece_full).named("gather_active");
            let issue_w = wire(1).named("issue_w");
            // Bytes in the WQE (the inline header, then each inline data segment) are copied
            // into the buffer while DMA answers for earlier segments may still land.
            // The WQE's space in the ring (from `ring_at`, where the previous one's ended), a
            // retire slot, and for a SEND its packet's place in the packet FIFO.
            let rt_room = wire(1).named("retire_room");
            let pk_room = wire(1).named("packet_room");
            let freed = wire(pos_bits + 1).named("ring_freed");
            let ring_at = reg_init(pos_bits + 1, 0u32).named("ring_reserved");
            let ring_need = mux(is_mpw, laid, mux(big, lit(32, buf_bytes), up64(total)))
                .trunc(pos_bits + 1)
                .named("ring_need");
            // The next piece: the rest, at most a share.
            let piece_len = mux(rest.gt(buf_bytes as u64), lit(32, buf_bytes), rest)
                .trunc(pos_bits)
                .named("piece_len");
            let piece_need = up64(piece_len.zext(pos_bits + 1)).named("piece_need");
            let at_piece = is(S::PieceReserve);
            let ring_take = mux(at_piece, piece_need, ring_need).named("ring_take");
            let space = (lit(pos_bits + 2, ring_bytes as u64)
                - (ring_at - freed).zext(pos_bits + 2))
            .named("ring_space");
            let fits = ring_take.zext(pos_bits + 2).le(space).named("ring_fits");
            let reserve_go =
                (is(S::Reserve) & fits & rt_room & (is_mpw | pk_room)).named("reserve_go");
            let piece_go = (at_piece & fits & rt_room & pk_room).named("piece_go");
            let base = ring_at.trunc(pos_bits).named("wqe_base");
            ring_at.set_if(reserve_go | piece_go, ring_at + ring_take);
            piece_left.set(select(
                &[
                    (reserve_go, lit(pos_bits, buf_bytes) - ihs.resize(pos_bits)),
                    (piece_go, piece_len),
                    (issue_w & big, piece_left - chunk.resize(pos_bits)),
                ],
                piece_left,
            ));
            rest.set(select(
                &[
                    (reserve_go, total - buf_bytes),
                    (piece_go, rest - piece_len.zext(32)),
                ],
                rest,
            ));
            piece_first.set(select(
                &[(reserve_go, lit(1, 1u32)), (piece_go, lit(1, 0u32))],
                piece_first,
            ));
            let load_hdr = reserve_go.named("load_inline_header");
            let inl_busy = wire(1).named("inline_busy");
            // Loading the gather cursor or the inline copy: at each new segment (a multi-packet
            // WQE's: once its packet's length has a place in the packet FIFO).
            let load_seg = (is(S::Gather)
                & !g_pending
                & !piece_full
                & !inl_busy
                & more_ds
                & (!is_mpw | pk_room))
                .named("load_segment");
            let load_inl = (load_seg & seg.inline).named("load_inline_segment");
            let load_ptr = (load_seg & !seg.inline).named("load_pointer_segment");
            // The look-ahead read, once offered, goes first until it is taken.
            let la_offer = reg_init(1, 0u32).named("lookahead_offer");
            let la_req = reg(DmaRdReq::WIDTH).named("lookahead_req");
            let issue = (g_active & have_tag & rd_req_ready & !la_offer).named("issue_data_read");
            issue_w.set(issue);
            holding.set(g_active & have_tag & !la_offer & !rd_req_ready);
            held_tag.set(free_tag);

            // DMA read requests: descriptors (tag 0) or data.
            let ring = cat(&[ctx.base, lit(12, 0u32)]);
            let mask16 = (lit(16, 1u32).shl_by(ctx.log_size) - 1u32).named("ring_mask");
            let cur = (ci + wqebb.zext(16)).named("wqebb_counter");
            let slot = (cur & mask16).named("wqebb_slot");
            let wqe_addr = ring + cat(&[slot.zext(58), lit(6, 0u32)]);
            // The WQEBB is in the buffer, or is the next to fetch (`cur == pf_end`).
            let pf_hit = (use_bf | wqebb.zext(16).lt(pf_end - ci)).named("prefetch_hit");
            // A read fetches from `cur` what the producer counter shows posted (at least the
            // rest of the WQE, once its first WQEBB gave its size), as much as the buffer holds,
            // cut where the ring wraps or a 4 KiB page ends.
            let bbs_left = (wq.nbb - wqebb.zext(3)).named("wqebbs_left");
            let need = mux(wqebb.eq(0u32), lit(16, 1u32), bbs_left.zext(16));
            let posted = (pc - cur).named("wqebbs_posted");
            let want = mux(posted.lt(need), need, posted);
            // Another SQ waits: the turn ends after TURN_WQEBBS, so a read fetches no more.
            let others = (waiting & !one(sqn)).or_reduce().named("others_waiting");
            let cap = mux(others, lit(16, TURN_WQEBBS), lit(16, PREFETCH_WQEBBS));
            let to_ring_end = (mask16 - slot + 1u32).named("wqebbs_to_ring_end");
            let to_page_end =
                (lit(16, 64u32) - slot.slice(5, 0).zext(16)).named("wqebbs_to_page_end");
            let room = (lit(16, PREFETCH_WQEBBS) - wqebb.zext(16)).named("wqebbs_room");
            let min16 = |a: Sig, b: Sig| mux(a.lt(b), a, b);
            let wqe_bbs = min16(
                min16(min16(want, cap), room),
                min16(to_ring_end, to_page_end),
            )
            .trunc(pf_log + 1)
            .named("wqe_read_wqebbs");
            wqe_rd_bbs.set_if(is(S::WqeReq), wqe_bbs);
            let dbr_addr = cat(&[ctx.dbr, lit(3, 0u32)]) + 4u32;
            let rd = |addr: Sig, len: Sig| {
                DmaRdReq {
                    addr,
                    len,
                    ..DmaRdReq::zeros()
                }
                .pack()
            };
            let data_req = DmaRdReq {
                addr: g_addr,
                len: chunk.trunc(13),
                tag: free_tag.zext(8),
                off: pos.trunc(bb.max(1)).zext(6) & lit(6, (b - 1) as u64),
                pad: lit(5, 0u32),
            }
            .pack();
            p.dma_rd_req.data.set(select(
                &[
                    (la_offer, la_req),
                    (is(S::DbrReq), rd(dbr_addr, lit(13, 4u32))),
                    (
                        is(S::WqeReq),
                        rd(wqe_addr, cat(&[wqe_bbs, lit(6, 0u32)]).zext(13)),
                    ),
                ],
                data_req,
            ));
            // The next WQEBB is not in the buffer: the look-ahead of this SQ from exactly here
            // supplies it (its half becomes the turn's), or is waited for while on the way;
            // one of this SQ's from elsewhere is dropped, and the WQEBBs are read on tag 0.
            let at_refill = (is(S::WqeReq) & !pf_hit).named("prefetch_miss");
            let la_here = (la_sqn.eq(sqn) & la_ci.eq(cur)).named("lookahead_here");
            let la_refill = (at_refill & la_here & la_ok).named("lookahead_refill");
            let la_wait =
                (at_refill & la_here & (la_offer | la_busy) & !la_stale).named("lookahead_wait");
            let la_drop = (at_refill & la_sqn.eq(sqn) & !la_ci.eq(cur)).named("lookahead_drop");
            let desc_req = is(S::DbrReq) | (at_refill & !la_refill & !la_wait);
            p.dma_rd_req
                .valid
                .set(la_offer | desc_req | (g_active & have_tag));
            let desc_go = (desc_req & rd_req_ready & !la_offer).named("desc_read_go");

            // Tag bookkeeping.
            let tag_one = |t: Sig| lit(TAGS, 1u32).shl_by(t);
            let set_busy = mux(issue, tag_one(free_tag), lit(TAGS, 0u32));
            let clr_busy = mux(data_beat & cpl.last(), tag_one(cpl_tag), lit(TAGS, 0u32));
            busy.set((busy & !clr_busy) | set_busy);
            for (t, r) in bases.iter().enumerate() {
                r.set_if(
                    issue & free_tag.eq(t as u64),
                    pos.shr(bb).trunc(pos_bits - bb),
                );
                if t != 0 {
                    owners[t].set_if(issue & free_tag.eq(t as u64), wr_id);
                }
            }
            // Per retire id: one of its WQE's answers came with an error (cleared when the id
            // is given to a WQE that gathers).
            let id_one = |id: Sig| lit(retire::ENTRIES, 1u32).shl_by(id);
            let wqe_err = reg_init(retire::ENTRIES, 0u32).named("wqe_data_err");
            wqe_err.set(
                (wqe_err
                    & !mux(
                        reserve_go | piece_go,
                        id_one(wr_id),
                        lit(retire::ENTRIES, 0u32),
                    ))
                    | mux(
                        data_beat & cpl_u.err,
                        id_one(cpl_owner),
                        lit(retire::ENTRIES, 0u32),
                    ),
            );

            // Buffer writes: DMA answers, or (when none lands) the inline copy.
            let inl = inline_copy::inline_copy(
                wqe,
                w,
                pos_bits,
                inline_copy::Load {
                    go: load_hdr | load_inl,
                    src: mux(load_hdr, lit(8, 30u32), inl_start.trunc(8)),
                    at: mux(load_hdr, base, pos_seg),
                    len: mux(load_hdr, ihs.resize(pos_bits), seg_len.resize(pos_bits)),
                },
                data_beat,
            );
            inl_busy.set(inl.busy);
            let lanes: Vec<Mem> = (0..b)
                .map(|i| memory(&format!("gather_lane{i}"), 8, ring_beats))
                .collect();
            let baw = lanes[0].addr_width();
            for (i, lane) in lanes.iter().enumerate() {
                let dma_en = data_beat & cpl.keep().bit(i as u32);
                lane.write(
                    inl.en[i] | dma_en,
                    mux(data_beat, cpl_addr.trunc(baw), inl.row.trunc(baw)),
                    mux(
                        data_beat,
                        cpl.data().slice(8 * i as u32 + 7, 8 * i as u32),
                        inl.data[i],
                    ),
                );
            }
            // ---- The retire side: frames and completions in issue order ----
            let pk_push =
                ((reserve_go & !is_mpw) | (load_seg & is_mpw) | piece_go).named("packet_push");
            let npk = reg(5).named("wqe_packets");
            npk.set(select(
                &[
                    (is(S::Parse), lit(5, 0u32)),
                    (piece_go, lit(5, 1u32)),
                    (pk_push, npk + 1u32),
                ],
                npk,
            ));
            // Ring bytes of the WQE's record (of the current piece, for an LSO in pieces).
            let alloc = reg(15).named("wqe_alloc");
            alloc.set(select(
                &[
                    (is(S::Parse), lit(15, 0u32)),
                    (reserve_go | piece_go, ring_take.resize(15)),
                ],
                alloc,
            ));
            let push = (is(S::Push) & rt_room).named("push");
            let piece_push = (is(S::PiecePush) & rt_room).named("piece_push");
            let wqe_ci_next = wire(16).named("wqe_ci_next");
            let rt = retire::retire(retire::In {
                tx,
                tx_cmd: &p.tx_cmd,
                cmpl: &p.cmpl,
                lanes: &lanes,
                pos_bits,
                push: push | piece_push,
                entry: retire::Retire {
                    sqn: sqn.zext(8),
                    cqn: ctx.cqn,
                    wqe_counter: ci,
                    next_ci: wqe_ci_next,
                    opcode: wq.opcode,
                    want_cqe: (wq.fm & lit(8, fm_ce_se::CQ_UPDATE)).ne(0u32),
                    failed,
                    syndrome: synd,
                    // A data error blames the DS count (a piece is pushed mid-gather).
                    vendor: mux(is(S::PiecePush), ds.zext(8), dsi.zext(8)),
                    byte_cnt: total,
                    csum_l3: wq.cs.bit(6),
                    csum_l4: wq.cs.bit(7),
                    vlan: wq.vlan_ins,
                    vlan_tci: wq.vlan_tci,
                    encap: ctx.encap,
                    encap_ctx: ctx.encap_ctx,
                    tso: wq.tso,
                    packets: npk,
                    alloc,
                    cont: big & !piece_first,
                    more: is(S::PiecePush),
                }
                .pack(),
                pk_push,
                pk_len: select(
                    &[
                        (is_mpw, seg_len.resize(pos_bits)),
                        (at_piece, piece_len),
                        (big, lit(pos_bits, buf_bytes)),
                    ],
                    total.trunc(pos_bits),
                ),
                tag_busy: busy,
                tag_owner: owners.clone(),
                err: wqe_err,
                clear_flush: take_qcmd,
                sqs: cfg.sqs,
            });
            wr_id.set(rt.wr_id);
            // A DMA answer failed one of this SQ's WQEs: the rest of the turn would be flushed.
            let flushing = rt.flush.shr_by(sqn).bit(0).named("sq_flushing");
            rt_room.set(rt.room);
            rt_empty.set(rt.empty);
            pk_room.set(rt.pk_room);
            freed.set(rt.freed);
            // A fault from the retire side: the failed WQE and the consumer counter after it,
            // per SQ, until the SQ's Fault turn writes them into its context.
            let fault_mem = memory("sq_fault", 32, cfg.sqs.next_power_of_two());
            let fault_sqn = rt.fault_sqn.trunc(sq_bits);
            fault_mem.write(
                rt.fault,
                fault_sqn
                    .zext(fault_mem.addr_width().max(sq_bits))
                    .trunc(fault_mem.addr_width()),
                cat(&[rt.fault_next, rt.fault_ci]),
            );
            let fault_q = fault_mem.read_async(
                sqn.zext(fault_mem.addr_width().max(sq_bits))
                    .trunc(fault_mem.addr_width()),
            );
            faults.set(
                (faults & !mux(take_fault, one(fault_pick), lit(cfg.sqs, 0u32)))
                    | mux(rt.fault, one(fault_sqn), lit(cfg.sqs, 0u32)),
            );

            // ---- Sequencing ----
            let sq_ready = ctx.state.eq(qstate::RDY).named("sq_ready");
            // The 4 bytes read from the doorbell record + 4 are its bytes 4..8.
            let dbr_word = cat(&[dbr_q, lit(32, 0u32)]);
            let pc_rec = desc::get(dbr::SQ_PC, dbr_word).named("doorbell_pc");
            let need_more_bb = (wqebb.zext(3) + 1u32).lt(wq.nbb).named("more_wqebbs");
            // PARSE: a DS count that cannot be fetched fails at once; otherwise fetch the rest of
            // the WQE first, then judge it.
            let desc_err_now = (desc_err | (desc_beat & cpl_u.err)).named("descriptor_error");
            let fetch_more =
                (is(S::Parse) & wq.ds_ok & need_more_bb & !desc_err).named("fetch_more");
            let parse_bad = (is(S::Parse) & !fetch_more & (wq.qp_bad | desc_err)).named("wqe_bad");
            let parse_synd = mux(
                desc_err,
                lit(8, syndrome::LOCAL_ACCESS),
                lit(8, syndrome::LOCAL_QP_OP),
            );
            // A WQE whose first WQEBB could not be read counts as one WQEBB.
            let first_unread = desc_err & wqebb.eq(0u32);
            let nbb_eff =
                mux(wq.ds_ok & !first_unread, wq.nbb, lit(3, 1u32)).named("wqe_bbs_consumed");
            let adv_ci = (ci + nbb_eff.zext(16)).named("ci_next");
            wqe_ci_next.set(adv_ci);

            // Failure bookkeeping (what the issue side finds; DMA answers' errors are judged
            // on the retire side).
            synd.set(select(
                &[
                    (is(S::Check), lit(8, 0u32)),
                    (parse_bad, parse_synd),
                    (v_bad, v_fail),
                    (v_len_bad, lit(8, syndrome::LOCAL_LENGTH)),
                ],
                synd,
            ));
            failed.set(select(
                &[
                    (is(S::Check), lit(1, 0u32)),
                    (parse_bad | v_bad | v_len_bad, lit(1, 1u32)),
                ],
                failed,
            ));
            desc_err.set(select(
                &[
                    (is(S::DbrReq) | is(S::Check), lit(1, 0u32)),
                    (desc_beat & cpl_u.err, lit(1, 1u32)),
                ],
                desc_err,
            ));
            // WQEBB j lands at beat j * 512 / W of the WQE register.
            wqe_beat.set(select(
                &[
                    (
                        is(S::WqeReq),
                        wqebb
                            .zext(wqe_beat_bits + 2)
                            .shl(bb_shift)
                            .trunc(wqe_beat_bits),
                    ),
                    (copy_v, wqe_beat + 1u32),
                ],
                wqe_beat,
            ));
            // The prefetch buffer: descriptor answers written from `cur` on; a copy reads the
            // WQEBB's beats one a cycle into the WQE register a cycle later.
            let wqe_landing = (desc_beat & is(S::WqeWait)).named("wqebb_beat_lands");
            let la_wr = reg(pf_off_bits).named("lookahead_wr_beat");
            let la_half = reg(1).named("lookahead_half");
            pf_mem.write(
                wqe_landing | la_beat,
                mux(la_beat, cat(&[la_half, la_wr]), cat(&[half, pf_wr])),
                cpl.data(),
            );
            pf_wr.set(select(
                &[
                    (is(S::WqeReq), pf_at(cur, lit(bb_shift.max(1), 0u32))),
                    (wqe_landing, pf_wr + 1u32),
                ],
                pf_wr,
            ));
            let copy_addr = (is(S::WqeCopy) & pf_rd_beat.lt(bpb as u64)).named("copy_addressed");
            let copy_done = (is(S::WqeCopy) & pf_rd_beat.eq(bpb as u64)).named("copy_done");
            // ---- BlueFlame: the window's dwords into a buffer (one 32-bit RAM per dword lane
            // of a beat); the doorbell (dword 1) commits what was written since the last one ----
            let nl = (w / 32).max(1); // dword lanes per beat
            let bf_lanes: Vec<Mem> = (0..nl)
                .map(|i| memory(&format!("bf_lane{i}"), 32, BF_DWORDS / nl))
                .collect();
            let lane_bits = nl.trailing_zeros();
            let bf_row_w = bf_lanes[0].addr_width();
            for (i, lane) in bf_lanes.iter().enumerate() {
                let mine = if nl == 1 {
                    lit(1, 1u32)
                } else {
                    dbw.index.trunc(lane_bits).eq(i as u64)
                };
                lane.write(
                    bf_we & mine,
                    dbw.index.shr(lane_bits).trunc(bf_row_w),
                    dbw.data,
                );
            }
            let bf_mask = reg_init(BF_DWORDS, 0u32).named("bf_written");
            // The wqe_index of dword 0 (opmod_idx_opcode).
            let bf_w0 = reg(16)
                .enable(bf_we & dbw.index.eq(0u32))
                .named("bf_dword0_index");
            bf_w0.set(desc::get(ctrl_seg::WQE_INDEX, dbw.data));
            let wr_bit = lit(BF_DWORDS, 1u32).shl_by(dbw.index);
            bf_mask.set(select(
                &[(db_valid, lit(BF_DWORDS, 0u32)), (bf_we, bf_mask | wr_bit)],
                bf_mask,
            ));
            // Whole: a DS count of 1..=16 and its dwords 0 and 2..4*DS all written (dword 1 is
            // this write).
            let db_ds = desc::get(ctrl_seg::DS, ctrl_hi).named("db_ds");
            let need = (lit(BF_DWORDS + 1, 1u32).shl_by(cat(&[db_ds, lit(2, 0u32)])) - 1u32)
                .trunc(BF_DWORDS)
                & lit(BF_DWORDS, !2u64);
            let bf_whole =
                (db_ds.ne(0u32) & db_ds.le(16u32) & (bf_mask & need).eq(need)).named("bf_whole");
            let bf_valid = reg_init(1, 0u32).named("bf_valid");
            let bf_sqn = reg(sq_bits).enable(db_valid).named("bf_sqn");
            bf_sqn.set(db_sqn.trunc(sq_bits));
            let bf_idx = reg(16).enable(db_valid).named("bf_wqe_index");
            bf_idx.set(bf_w0);
            let bf_nbb = reg(3).enable(db_valid).named("bf_wqebbs");
            bf_nbb.set((db_ds.zext(7) + 3u32).shr(2).trunc(3));
            // The doorbell's producer counter: mlx5's 8-byte doorbell is the last posted WQE's
            // control-segment bytes 0..8, so its wqe_index plus its WQEBBs (from the DS count)
            // is the producer counter the driver also wrote into the doorbell record. Kept per
            // SQ (valid when dword 0 came with the doorbell), so the SQ's turn needs no read
            // of the record; a doorbell of dword 1 alone leaves the record to be read.
            let dpc_mem = memory("sq_db_pc", 17, cfg.sqs.next_power_of_two());
            let dpc_aw = dpc_mem.addr_width();
            let at_q = |q: Sig| q.zext(q.width().max(dpc_aw)).trunc(dpc_aw);
            let db_nbb = (db_ds.zext(16) + 3u32).shr(2).named("db_wqebbs");
            dpc_mem.write(
                db_ok,
                at_q(db_sqn),
                cat(&[bf_mask.bit(0) & db_ds.ne(0u32), bf_w0 + db_nbb]),
            );
            let dpc_q = dpc_mem.read_async(at_q(sqn)).named("db_pc_q");
            let db_pc_ok = (dpc_q.bit(16) & !resumed).named("db_pc_ok");
            // Used when it is the SQ's next WQE; taken (used or not) at its SQ's turn.
            let bf_mine = (bf_valid & bf_sqn.eq(sqn)).named("bf_for_this_sq");
            let bf_hit = (is(S::Ctx) & sq_ready & bf_mine & bf_idx.eq(ctx.ci)).named("bf_hit");

            // ---- Look-ahead: the WQEBBs the engine needs after the current half, read while
            // the turn consumes it ----
            // While a turn runs and the request port is idle, one read on LOOKAHEAD_TAG fills
            // the prefetch buffer's other half, from a WQEBB counter on, with as many posted
            // WQEBBs as a half holds, cut at the ring's end or a 4 KiB page:
            // - when the round robin would pick another SQ next (not in fault, ready, with
            //   WQEBBs posted, its producer counter known from its 8-byte doorbell or, on a
            //   resume bit alone, from its context, and no BlueFlame WQE waiting): that SQ's,
            //   from its consumer counter, at most TURN_WQEBBS (its turn ends there while this
            //   SQ waits); its turn then starts on that half with no descriptor read;
            // - otherwise (no other SQ waits): this SQ's, from where the current half ends, up
            //   to its producer counter (or, rung again with its 8-byte doorbell, up to that
            //   one's), so that when the turn (or its next one) reaches that WQEBB the half
            //   is switched to instead of read. Not during a BlueFlame WQE (no ring read at
            //   all), a failed WQE's turn or a flush.
            // A queue command or a fault voids it (an answer in flight lands and is dropped),
            // as do an answer with an error and a consumer counter that has moved: the data is
            // used only from exactly where it starts.
            let at_ctx = |q: Sig| q.zext(aw.max(sq_bits)).trunc(aw);
            let lctx = SqCtx::unpack(
                ctx_mem
                    .read_async(at_ctx(pick))
                    .named("lookahead_ctx_q")
                    .unused(),
            );
            // WQEBBs a look-ahead read from `from` takes: up to `lim`, at most `cap`, within
            // the ring (`mask`) and the 4 KiB page.
            let window = |from: Sig, lim: Sig, mask: Sig, cap: u32| {
                let at = from & mask;
                min16(
                    min16(lim - from, lit(16, cap)),
                    min16(mask - at + 1u32, lit(16, 64u32) - at.slice(5, 0).zext(16)),
                )
                .trunc(pf_log + 1)
            };
            let ldpc = dpc_mem.read_async(at_q(pick)).named("lookahead_db_pc_q");
            let l_pending = pending.shr_by(pick).bit(0);
            let l_pc_known = mux(l_pending, ldpc.bit(16), lit(1, 1u32));
            let l_pc = mux(l_pending, ldpc.slice(15, 0), lctx.pc).named("lookahead_pc");
            let l_posted = (l_pc - lctx.ci).named("lookahead_posted");
            let l_mask = (lit(16, 1u32).shl_by(lctx.log_size) - 1u32).named("lookahead_mask");
            let l_bbs = window(lctx.ci, l_pc, l_mask, TURN_WQEBBS).named("lookahead_wqebbs");
            let in_turn = !(is(S::Init) | is(S::Idle) | is(S::Qcmd) | is(S::Fault) | is(S::Ctx));
            let port_idle = !desc_req & !(g_active & have_tag) & !holding;
            let la_free = !la_busy & !la_ok & !la_offer;
            let next_other = any & !pick.eq(sqn);
            let la_other = (in_turn
                & port_idle
                & next_other
                & !faults.shr_by(pick).bit(0)
                & lctx.state.eq(qstate::RDY)
                & l_pc_known
                & l_posted.ne(0u32)
                & !(bf_valid & bf_sqn.eq(pick))
                & la_free)
                .named("lookahead_start_other");
            // This SQ: the producer counter and `pf_end` hold (not before the turn has its
            // producer counter, nor while a tag-0 read is landing), and the current half has
            // WQEBBs (else the turn's own read fetches them).
            let s_known = !(is(S::DbrReq) | is(S::DbrWait) | is(S::DbrGot) | is(S::WqeWait));
            let s_rung = (any & l_pending & ldpc.bit(16) & !bf_mine).named("lookahead_rung_again");
            let s_pc = mux(s_rung, ldpc.slice(15, 0), pc).named("lookahead_self_pc");
            let s_bbs =
                window(pf_end, s_pc, mask16, PREFETCH_WQEBBS).named("lookahead_self_wqebbs");
            let la_self = (in_turn
                & s_known
                & port_idle
                & !next_other
                & !use_bf
                & !failed
                & !flushing
                & pf_end.ne(ci)
                & (s_pc - ci).gt(pf_end - ci)
                & la_free)
                .named("lookahead_start_self");
            let la_start = (la_other | la_self).named("lookahead_start");
            let la_from = mux(la_self, pf_end, lctx.ci).named("lookahead_from");
            let la_base = mux(la_self, ctx.base, lctx.base);
            let la_slot = la_from & mux(la_self, mask16, l_mask);
            let la_bbs = mux(la_self, s_bbs, l_bbs);
            la_req.set_if(
                la_start,
                DmaRdReq {
                    addr: cat(&[la_base, lit(12, 0u32)]) + cat(&[la_slot.zext(58), lit(6, 0u32)]),
                    len: cat(&[la_bbs, lit(6, 0u32)]).zext(13),
                    tag: lit(8, LOOKAHEAD_TAG),
                    ..DmaRdReq::zeros()
                }
                .pack(),
            );
            la_sqn.set_if(la_start, mux(la_self, sqn, pick));
            la_ci.set_if(la_start, la_from);
            la_end.set_if(la_start, la_from + la_bbs.zext(16));
            la_half.set_if(la_start, !half);
            la_wr.set(select(
                &[
                    (la_start, pf_at(la_from, lit(bb_shift.max(1), 0u32))),
                    (la_beat, la_wr + 1u32),
                ],
                la_wr,
            ));
            let la_taken = (la_offer & rd_req_ready).named("lookahead_taken");
            la_offer.set(select(
                &[(la_start, lit(1, 1u32)), (la_taken, lit(1, 0u32))],
                la_offer,
            ));
            let la_done = (la_beat & cpl.last()).named("lookahead_done");
            la_busy.set(select(
                &[(la_taken, lit(1, 1u32)), (la_done, lit(1, 0u32))],
                la_busy,
            ));
            let la_void = take_qcmd | take_fault;
            la_stale.set(select(
                &[(la_start, lit(1, 0u32)), (la_void | la_drop, lit(1, 1u32))],
                la_stale,
            ));
            la_err.set(select(
                &[
                    (la_start, lit(1, 0u32)),
                    (la_beat & cpl_u.err, lit(1, 1u32)),
                ],
                la_err,
            ));
            // Taken (used or not) at its SQ's turn.
            let la_use = (is(S::Ctx) & la_sqn.eq(sqn)).named("lookahead_turn");
            let la_hit =
                (la_use & la_ok & la_ci.eq(ctx.ci) & sq_ready & !bf_hit).named("lookahead_hit");
            la_ok.set(select(
                &[
                    (la_void | la_use | la_refill | la_drop, lit(1, 0u32)),
                    (la_done, !la_stale & !la_err & !cpl_u.err),
                ],
                la_ok,
            ));
            half.set_if(la_hit | la_refill, la_half);

            bf_valid.set(select(
                &[
                    (db_valid, bf_whole & db_ok),
                    (bf_we | (is(S::Ctx) & bf_mine), lit(1, 0u32)),
                ],
                bf_valid,
            ));
            // A write of the window while its WQE is being copied: the copy is void, the WQE is
            // read from the ring instead.
            let bf_touched = reg_init(1, 0u32).named("bf_touched");
            bf_touched.set(select(
                &[(bf_we, lit(1, 1u32)), (is(S::Ctx), lit(1, 0u32))],
                bf_touched,
            ));
            let bf_fallback = (copy_done & use_bf & bf_touched).named("bf_fallback");
            use_bf.set(select(
                &[
                    (is(S::Ctx), bf_hit),
                    (bf_fallback | is(S::Advance), lit(1, 0u32)),
                ],
                use_bf,
            ));
            let bf_beat = if bb_shift == 0 {
                wqebb.zext(2)
            } else {
                cat(&[wqebb, pf_rd_beat.trunc(bb_shift)])
            };
            let bf_q = if w >= 32 {
                let rows: Vec<Sig> = bf_lanes
                    .iter()
                    .rev()
                    .map(|l| l.read_sync(bf_beat.trunc(bf_row_w), Some(copy_addr)))
                    .collect();
                cat(&rows)
            } else {
                let per = 32 / w; // beats per dword
                let sel_bits = per.trailing_zeros();
                let sel = reg(sel_bits).named("bf_byte_sel");
                sel.set(bf_beat.trunc(sel_bits));
                let row =
                    bf_lanes[0].read_sync(bf_beat.shr(sel_bits).trunc(bf_row_w), Some(copy_addr));
                let arms: Vec<(u64, Sig)> = (0..per)
                    .map(|i| (i as u64, row.slice(w * (i + 1) - 1, w * i)))
                    .collect();
                case(sel, &arms, lit(w, 0u32))
            };
            let pf_rd = pf_mem.read_sync(cat(&[half, pf_at(cur, pf_rd_beat)]), Some(copy_addr));
            pf_q.set(mux(use_bf, bf_q, pf_rd));
            wqebb.set(select(
                &[
                    (is(S::Check), lit(2, 0u32)),
                    (fetch_more, wqebb + 1u32),
                    (bf_fallback, lit(2, 0u32)),
                ],
                wqebb,
            ));
            copy_v.set(copy_addr);
            pf_rd_beat.set(select(
                &[
                    (is(S::WqeReq), lit(bb_shift + 1, 0u32)),
                    (copy_addr, pf_rd_beat + 1u32),
                ],
                pf_rd_beat,
            ));
            pf_end.set(select(
                &[
                    (is(S::Ctx), mux(la_hit, la_end, ctx.ci)),
                    (la_refill, la_end),
                    (is(S::WqeWait) & desc_last & desc_err_now, ci),
                    (is(S::WqeWait) & desc_last, cur + wqe_rd_bbs.zext(16)),
                ],
                pf_end,
            ));
            ci.set(select(
                &[(is(S::Ctx), ctx.ci), (is(S::Advance), adv_ci)],
                ci,
            ));
            pc.set(select(
                &[
                    (is(S::DbrGot), pc_rec),
                    (bf_hit, ctx.ci + bf_nbb.zext(16)),
                    (is(S::Ctx), mux(db_pc_ok, dpc_q.slice(15, 0), ctx.pc)),
                ],
                pc,
            ));
            dsi.set(select(
                &[
                    (parse_bad, lit(5, 0u32)),
                    (is(S::Parse), wq.first_ds.trunc(5)),
                    (v_in & !v_bad, dsi + seg_step),
                    (v_done & !v_len_bad, wq.first_ds.trunc(5)),
                    (load_seg, dsi + seg_step),
                ],
                dsi,
            ));
            total.set(select(
                &[
                    (is(S::Parse), mux(is_send, ihs.zext(32), lit(32, 0u32))),
                    (v_in & !v_bad, seg_total),
                ],
                total,
            ));
            laid.set(select(
                &[(is(S::Parse), lit(32, 0u32)), (v_in & !v_bad, laid_next)],
                laid,
            ));
            g_addr.set(select(
                &[(load_ptr, seg_addr), (issue, g_addr + chunk.zext(64))],
                g_addr,
            ));
            g_left.set(select(
                &[
                    (is(S::Parse), lit(31, 0u32)),
                    (load_ptr, seg_len),
                    (issue, g_left - chunk.zext(31)),
                ],
                g_left,
            ));
            pos.set(select(
                &[
                    (reserve_go, base + ihs.resize(pos_bits)),
                    (load_inl, pos_seg + seg_len.resize(pos_bits)),
                    (load_ptr, pos_seg),
                    (issue, pos + chunk.zext(pos_bits)),
                ],
                pos,
            ));

            let gather_done = is(S::Gather) & !g_pending & !inl_busy & !more_ds;
            // A piece is full with bytes still to gather: it goes to the retire side, the next
            // is reserved, the gather goes on into it.
            let to_piece = (is(S::Gather) & piece_full & !inl_busy & (g_pending | more_ds))
                .named("piece_done");
            // Fair turns: once a turn has consumed TURN_WQEBBS and another SQ waits, it ends
            // after the WQE just completed and the SQ waits for its next turn on its resume bit.
            let turn_ci = reg(16).enable(is(S::Ctx)).named("turn_start_ci");
            turn_ci.set(ctx.ci);
            let cut = (is(S::Advance)
                & !failed
                & adv_ci.ne(pc)
                & others
                & (adv_ci - turn_ci).ge(TURN_WQEBBS as u64))
            .named("turn_cut");
            resume.set((resume & !clr_bits) | mux(cut, one(sqn), lit(cfg.sqs, 0u32)));
            let to = |s: SqState| s.lit();
            state.set(select(
                &[
                    (sweep_done, to(S::Idle)),
                    (take_fault, to(S::Fault)),
                    (take_qcmd, to(S::Qcmd)),
                    (take_db, to(S::Ctx)),
                    (is(S::Qcmd) | is(S::Fault), to(S::Idle)),
                    (
                        is(S::Ctx),
                        select(
                            &[
                                (bf_hit, to(S::Check)),
                                (sq_ready & (resumed | db_pc_ok), to(S::Check)),
                                (sq_ready, to(S::DbrReq)),
                            ],
                            to(S::Idle),
                        ),
                    ),
                    (is(S::DbrReq) & desc_go, to(S::DbrWait)),
                    (
                        is(S::DbrWait) & desc_last,
                        mux(desc_err_now, to(S::Idle), to(S::DbrGot)),
                    ),
                    (is(S::DbrGot), to(S::Check)),
                    (is(S::Check), mux(ci.eq(pc), to(S::Idle), to(S::WqeReq))),
                    (is(S::WqeReq) & (pf_hit | la_refill), to(S::WqeCopy)),
                    (is(S::WqeReq) & desc_go, to(S::WqeWait)),
                    (
                        is(S::WqeWait) & desc_last,
                        mux(desc_err_now, to(S::Parse), to(S::WqeReq)),
                    ),
                    (copy_done, mux(bf_fallback, to(S::WqeReq), to(S::Parse))),
                    (fetch_more, to(S::WqeReq)),
                    (parse_bad, to(S::Push)),
                    (is(S::Parse), mux(is_nop, to(S::Push), to(S::Validate))),
                    (v_bad | v_len_bad, to(S::Push)),
                    (v_done, to(S::Reserve)),
                    (reserve_go, to(S::Gather)),
                    (to_piece, to(S::PiecePush)),
                    (gather_done, to(S::Push)),
                    (piece_push, to(S::PieceReserve)),
                    (piece_go, to(S::Gather)),
                    (push, to(S::Advance)),
                    (
                        is(S::Advance),
                        mux(failed | cut | flushing, to(S::Idle), to(S::Check)),
                    ),
                ],
                state.q(),
            ));
            // ---- Context writes ----
            let created = SqCtx {
                base: cat(&[c.in1, c.in0.slice(31, 12)]),
                log_size,
                dbr: cat(&[c.in4, c.in3.slice(31, 3)]),
                cqn: link,
                ci: lit(16, 0u32),
                pc: lit(16, 0u32),
                synd: lit(8, 0u32),
                err_wqe: lit(16, 0u32),
                state: lit(2, qstate::RDY),
                encap,
                encap_ctx,
            }
            .pack();
            let adv = is(S::Advance);
            let flt = is(S::Fault);
            let updated = SqCtx {
                ci: select(&[(adv, adv_ci), (flt, fault_q.slice(31, 16))], ctx.ci),
                pc: mux(adv, pc, ctx.pc),
                synd: select(
                    &[(adv & failed, synd), (flt, lit(8, syndrome::LOCAL_ACCESS))],
                    ctx.synd,
                ),
                err_wqe: select(
                    &[(adv & failed, ci), (flt, fault_q.slice(15, 0))],
                    ctx.err_wqe,
                ),
                state: select(
                    &[
                        (is(S::Qcmd), new_state),
                        ((adv & failed) | flt, lit(2, qstate::ERR)),
                    ],
                    ctx.state,
                ),
                ..ctx
            }
            .pack();
            ctx_mem.write(
                (is(S::Init) | cmd_ok | adv | flt).named("ctx_write"),
                mux(is(S::Init), sweep, cur_q.trunc(aw)),
                select(
                    &[
                        (is(S::Init), lit(SqCtx::WIDTH, 0u32)),
                        (is(S::Qcmd) & create, created),
                    ],
                    updated,
                ),
            );

            // ---- Counters ----
            let s = &p.stats;
            s.db_bad.set(event_counter(
                "db_bad",
                (db_valid & !db_ok)
                    | (is(S::Ctx) & !sq_ready & !resumed)
                    | (is(S::DbrWait) & desc_last & desc_err_now),
            ));
            s.wqes.set(event_counter("wqes", rt.wqe_done));
            s.wqe_errors.set(event_counter("wqe_errors", rt.wqe_error));
            s.frames.set(event_counter("frames", rt.sent));
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_at_every_width_and_rejects_bad_parameters() {
        for w in [8, 64, 128, 512] {
            let cfg = SqCfg {
                data_bits: w,
                sqs: 64,
                cqs: 64,
                mrs: 16,
                max_frame: 9022,
                max_lso: LSO_MAX,
                log_max: 12,
            };
            match sq_engine(&cfg) {
                Err(e) => panic!("{w}: {e}"),
                Ok(def) => {
                    if let Ok(dir) = std::env::var("NICGEN_DUMP_SQ") {
                        generate(&def, &EmitOptions::default())
                            .write_to(std::path::Path::new(&format!("{dir}/d{w}")))
                            .unwrap();
                    }
                }
            }
        }
        let bad = SqCfg {
            data_bits: 64,
            sqs: 64,
            cqs: 64,
            mrs: 16,
            max_frame: 20000,
            max_lso: 0,
            log_max: 12,
        };
        assert!(sq_engine(&bad).is_err());
        let cfg = SqCfg {
            max_frame: 9022,
            ..bad
        };
        assert!(sq_engine_encap(&cfg, 48).is_ok());
        assert!(sq_engine_encap(&cfg, 257).is_err());
        let too_long = SqCfg {
            max_lso: LSO_MAX + 1,
            ..cfg
        };
        assert!(sq_engine(&too_long).is_err());
        let small = SqCfg {
            max_frame: 256,
            max_lso: LSO_MAX,
            ..cfg
        };
        assert!(sq_engine(&small).is_err());
    }
}
