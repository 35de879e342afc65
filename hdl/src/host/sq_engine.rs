//! `sq_engine`: the send queues: doorbells, WQE fetch, validation, gather by DMA, the frame and
//! its offload request to the TX path, completions.
//!
//! ```text
//! s_db (SQ doorbells) -> pending bitmap -> round-robin pick -> SQ context (LUT RAM)
//!   -> read the doorbell record (producer counter) -> per WQE: fetch its WQEBBs (<= 4)
//!   -> check ctrl / Ethernet / data segments (lengths, opcode, memory regions)
//!   -> inline header into the gather buffer, data segments by DMA reads (several tags in
//!      flight, answers in any order, each landing at its byte position: `off`)
//!   -> m_axis_tx_cmd (TX_CMD) with m_axis_tx (the frame; the TX path takes the request once
//!      it has parsed the frame's headers) -> m_cmpl (CQE request) -> next WQE
//! ```
//!
//! - WQEs follow mlx5 (`regmap` layouts `ctrl_seg`, `eth_seg`, `data_seg`): opcodes SEND and
//!   NOP; `cs_flags` L3/L4 become the TX path's checksum requests; with no inline header,
//!   `vlan_cmd` 0x8000 inserts `vlan_tci`; otherwise `inline_hdr_sz` bytes from Ethernet-segment
//!   byte 14 on start the frame; then the data segments, gathered in order.
//! - A WQE fails, in this order, with an error CQE (REQ_ERR) carrying the syndrome and, in
//!   `vendor_err_synd`, the index of the failing segment: an opcode other than SEND/NOP, a DS
//!   count of 0 or over 16 (or under 2 for SEND), an inline data segment, or an inline header
//!   beyond the WQE → LOCAL_QP_OP; a zero-length data segment, an empty frame or one over
//!   `max_frame` → LOCAL_LENGTH; an lkey outside the table, invalid, or a segment outside its
//!   region → LOCAL_PROT; a DMA read answered with an error → LOCAL_ACCESS. The WQE is consumed
//!   and the SQ goes to the error state (QCMD QUERY shows it; RESET resumes at the next WQE).
//! - A doorbell for an SQ that is not ready (never created, or in error) has no CQ to complete
//!   to: it is counted in `stat_db_bad` and ignored.
//! - Completions: a CQE for every WQE with `fm_ce_se` CQ_UPDATE, and for every failed WQE.
//! - Ports: `s_db_tdata/_tvalid` (SQN), `s_qcmd_*` / `m_qcmd_res_*` (SQ commands),
//!   `m_dma_rd_req_*`, `s_dma_rd_cpl_*` (tags `0..8`: 0 for descriptors, 1..8 for data),
//!   `mr_lkey` → `mr_valid/_base/_len` (combinational lookup in the memory-region table),
//!   `m_axis_tx_*`, `m_axis_tx_cmd_*`, `m_cmpl_*` (`CMPL` of `cq_engine`), `stat_*`.
//! - Latency: about three DMA round trips per doorbell batch's first WQE (doorbell record,
//!   WQE, data), then two per WQE.
//! - Throughput: one WQE at a time (gather, then send); results/HOST.md.
//! - Cost: the WQE register (most of the flip-flops), the SQ contexts in LUT RAM, the gather
//!   buffer in block RAM (one byte lane per RAM); no row in results/AREA.md.
//! - Golden model: `nicgen_model::sq`; test: `testbench/tests/host/sq_engine.rs`.

use super::cq_engine::CMPL;
use super::kv;
use super::qctx::{sweep, QcmdPort};
use super::{desc, DMA_RD_CPL_USER, DMA_RD_REQ};
use crate::eth::eth_tx::TX_CMD;
use crate::record::RecordLayout;
use crate::stats::stat_counter;
use crate::stream::{stream_in, stream_out, StreamCfg};
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
    /// Largest log2 ring size (WQEBBs) accepted by CREATE.
    pub log_max: u32,
}

/// Tags: 0 for descriptor reads, 1..DATA_TAGS for data.
const TAGS: u32 = 8;

/// SQ context word in the RAM.
const SQ_CTX: RecordLayout = RecordLayout {
    name: "sq_ctx",
    fields: &[
        ("base", 52), // ring >> 12
        ("log_size", 5),
        ("dbr", 61), // doorbell record >> 3
        ("cqn", 16),
        ("ci", 16),
        ("pc", 16),
        ("synd", 8),
        ("err_wqe", 16),
        ("state", 2),
    ],
};

mod st {
    pub const INIT: u64 = 0;
    pub const IDLE: u64 = 1;
    pub const QCMD: u64 = 2;
    pub const CTX: u64 = 3;
    pub const DBR_REQ: u64 = 4;
    pub const DBR_WAIT: u64 = 5;
    pub const CHECK: u64 = 6;
    pub const WQE_REQ: u64 = 7;
    pub const WQE_WAIT: u64 = 8;
    pub const PARSE: u64 = 9;
    pub const VALIDATE: u64 = 10;
    pub const INLINE: u64 = 11;
    pub const GATHER: u64 = 12;
    pub const DRAIN: u64 = 13;
    pub const CMD: u64 = 14;
    pub const SEND: u64 = 15;
    pub const CMPL: u64 = 16;
    pub const ADVANCE: u64 = 17;
    /// The doorbell record has landed in the WQE register: take the producer counter.
    pub const DBR_GOT: u64 = 18;
    pub const BITS: u32 = 5;
}

/// The lowest set bit of `v` among `0..n` and whether there is one.
fn first_set(v: Sig, n: u32, bits: u32) -> (Sig, Sig) {
    let arms: Vec<(Sig, Sig)> = (0..n).map(|i| (v.bit(i), lit(bits, i))).collect();
    (select(&arms, lit(bits, 0u32)), v.or_reduce())
}

pub fn sq_engine(cfg: &SqCfg) -> Result<Rc<ModuleDef>, ElabError> {
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
    if !(64..=16384).contains(&cfg.max_frame) {
        return Err(ElabError::config(
            "sq_engine",
            "max_frame must be 64..=16384",
        ));
    }
    let cfg = *cfg;
    let scfg = StreamCfg::new(w, 0);
    Module::build(
        format!("sq_engine_d{w}_q{}_m{}", cfg.sqs, cfg.mrs),
        move || {
            doc("Send queues: doorbells, WQE fetch and checks, gather by DMA, frames and offload");
            doc("requests to the TX path, completions.");
            let b = w / 8; // bytes per beat
            let bb = b.trailing_zeros(); // log2 bytes per beat (b is a power of two)
            let sq_bits = clog2(cfg.sqs as u64);
            let mr_bits = clog2(cfg.mrs as u64);
            let tag_bits = clog2(TAGS as u64);
            let buf_bytes = cfg.max_frame.next_power_of_two();
            let buf_beats = (buf_bytes / b).max(2);
            let pos_bits = clog2(buf_bytes as u64) + 1;
            let wqe_beats = 2048 / w;
            let wqe_beat_bits = clog2(wqe_beats as u64).max(1);

            // ---- Ports ----
            let db_data = input("s_db_tdata", 16);
            let db_valid = input("s_db_tvalid", 1);
            let rd_req_ready = input("m_dma_rd_req_tready", 1);
            let cpl = stream_in("s_dma_rd_cpl", &StreamCfg::new(w, DMA_RD_CPL_USER.width()));
            let mr_valid = input("mr_valid", 1);
            let mr_base = input("mr_base", 64);
            let mr_len = input("mr_len", 64);
            let tx = stream_out("m_axis_tx", &scfg);
            let cmd_ready = input("m_axis_tx_cmd_tready", 1);
            let cmpl_ready = input("m_cmpl_tready", 1);

            let state = reg_init(st::BITS, st::INIT).named("state");
            let is = |s: u64| state.eq(s);

            // ---- Doorbells: a pending bit per SQ, picked round robin ----
            let pending = reg_init(cfg.sqs, 0u32).named("pending");
            let db_sqn = db_data.named("db_sqn");
            let db_ok = (db_valid & db_sqn.lt(cfg.sqs as u64)).named("db_in_range");
            let last_pick = reg_init(sq_bits, 0u32).named("last_pick");
            let above: Vec<Sig> = (0..cfg.sqs)
                .rev()
                .map(|i| pending.bit(i) & last_pick.lt(i as u64))
                .collect();
            let (pick_hi, any_hi) = first_set(cat(&above), cfg.sqs, sq_bits);
            let (pick_lo, any) = first_set(pending, cfg.sqs, sq_bits);
            let pick = mux(any_hi, pick_hi, pick_lo).named("pick");

            // ---- Queue commands ----
            let qcmd = QcmdPort::new();
            let take_qcmd = (is(st::IDLE) & qcmd.go).named("take_qcmd");
            let take_db = (is(st::IDLE) & !qcmd.go & any).named("take_doorbell");
            qcmd.take(take_qcmd);
            let c = &qcmd.c;

            let sqn = reg(sq_bits).enable(take_db).named("sqn");
            sqn.set(pick);
            last_pick.set_if(take_db, pick);
            let one = |i: Sig| lit(cfg.sqs, 1u32).shl_by(i);
            let set_bits = mux(db_ok, one(db_sqn.trunc(sq_bits)), lit(cfg.sqs, 0u32));
            let clr_bits = mux(take_db, one(pick), lit(cfg.sqs, 0u32));
            pending.set((pending & !clr_bits) | set_bits);

            // ---- SQ contexts (LUT RAM, swept to "not created" after reset) ----
            let ctx_mem = memory("sq_ctx", SQ_CTX.width(), cfg.sqs.next_power_of_two());
            let aw = ctx_mem.addr_width();
            // After reset, a sweep writes every SQ context to "not created".
            let (sweep, sweep_done) = sweep(is(st::INIT), aw);
            let cur_q = mux(
                is(st::QCMD),
                c.get("index").trunc(aw.max(sq_bits)),
                sqn.zext(aw.max(sq_bits)),
            );
            let ctx = SQ_CTX.unpack(ctx_mem.read_async(cur_q.trunc(aw)).named("sq_ctx_q"));
            let rdy = kv("qstate", "RDY");

            let cur_state = ctx.get("state");
            let log_size = c.get("in2").slice(4, 0);
            let link = c.get("in5").slice(15, 0);
            let params_ok =
                log_size.le(cfg.log_max as u64) & log_size.ne(0u32) & link.lt(cfg.cqs as u64);
            let v = qcmd.verdict("SQ", cfg.sqs, cur_state, params_ok);
            let (create, new_state) = (v.create, v.new_state);
            let cmd_ok = (is(st::QCMD) & v.ok).named("cmd_done_ok");
            qcmd.answer(
                is(st::QCMD),
                v.status,
                [
                    cur_state.zext(32),
                    ctx.get("pc").zext(32),
                    ctx.get("ci").zext(32),
                    cat(&[ctx.get("err_wqe"), lit(8, 0u32), ctx.get("synd")]),
                ],
            );

            // ---- Descriptor reads land in the WQE register (the doorbell record too) ----
            // Tags above 7 are never issued: only the low bits are looked at.
            let cpl_u = DMA_RD_CPL_USER.unpack(cpl.user().expect("tuser").unused());
            let cpl_tag = cpl_u.get("tag").trunc(tag_bits).named("cpl_tag");
            let cpl_beat = cpl.valid().named("cpl_beat"); // always ready
            cpl.ready().set(lit(1, 1u32));
            let desc_beat = (cpl_beat & cpl_tag.eq(0u32)).named("desc_beat");
            let data_beat = (cpl_beat & cpl_tag.ne(0u32)).named("data_beat");
            let wqe_beat = reg_init(wqe_beat_bits, 0u32).named("wqe_beat");
            let wqe_slots: Vec<Sig> = (0..wqe_beats)
                .map(|i| {
                    let r = reg(w).named(&format!("wqe_b{i}"));
                    r.set_if(desc_beat & wqe_beat.eq(i as u64), cpl.data());
                    r
                })
                .collect();
            let wqe = cat(&wqe_slots.iter().rev().copied().collect::<Vec<_>>()).named("wqe");
            let desc_err = reg_init(1, 0u32).named("desc_err");
            let desc_last = (desc_beat & cpl.last()).named("desc_done");

            // ---- Per-WQE state ----
            let ci = reg(16).named("ci");
            let pc = reg(16).named("pc");
            let wqebb = reg(2).named("wqebb"); // WQEBBs fetched so far - 1
            let ctrl = wqe.slice(127, 0);
            let eth = wqe.slice(255, 128);
            let opcode = desc::get("ctrl_seg", "opcode", ctrl);
            let ds = desc::get("ctrl_seg", "ds", ctrl).named("ds");
            let fm = desc::get("ctrl_seg", "fm_ce_se", ctrl);
            let is_send = opcode.eq(kv("opcode", "SEND"));
            let is_nop = opcode.eq(kv("opcode", "NOP"));
            let nbb = ((ds.zext(8) + 3u32).shr(2)).trunc(3).named("wqe_bbs"); // 1..=4 when ds <= 16
                                                                              // Bytes 12-13 are the inline size, or with bit 15 set the VLAN-insert command.
            let vlan_ins = desc::get("eth_seg", "vlan_cmd", eth)
                .bit(15)
                .named("vlan_insert");
            let ihs = mux(
                vlan_ins,
                lit(16, 0u32),
                desc::get("eth_seg", "inline_hdr_sz", eth),
            )
            .named("inline_hdr_sz");
            let cs = desc::get("eth_seg", "cs_flags", eth);
            let vlan_tci = desc::get("eth_seg", "vlan_tci", eth);
            // First data segment: after ctrl, eth and the inline header's 16-byte slots.
            let inl_ds = mux(ihs.gt(2u32), (ihs + 13u32).shr(4), lit(16, 0u32));
            let first_ds = (inl_ds + 2u32).named("first_data_ds");
            let hdr_fits =
                (ihs.le(226u32) & (ihs + 30u32).le(ds.zext(16).shl(4))).named("inline_fits");
            let ds_ok = ds.ne(0u32) & ds.le(16u32) & (is_nop | ds.ge(2u32));
            let qp_bad =
                (!(is_send | is_nop) | !ds_ok | (is_send & !hdr_fits)).named("wqe_malformed");

            // Data segment under the cursor.
            let dsi = reg(5).named("ds_index");
            let ds_arms: Vec<(u64, Sig)> = (0..16u32)
                .map(|i| (i as u64, wqe.slice(128 * i + 127, 128 * i)))
                .collect();
            let dseg = case(dsi, &ds_arms, lit(128, 0u32)).named("data_seg");
            let seg_len = desc::get("data_seg", "byte_count", dseg).named("seg_len");
            let seg_inline = desc::get("data_seg", "inline", dseg);
            let seg_lkey = desc::get("data_seg", "lkey", dseg);
            let seg_addr = desc::get("data_seg", "addr", dseg).named("seg_addr");
            output("mr_lkey", seg_lkey.trunc(mr_bits));
            let lkey_ok = seg_lkey.lt(cfg.mrs as u64) & mr_valid;
            let seg_end = seg_addr.add_wide(seg_len.zext(64)).named("seg_end");
            let mr_end = mr_base.add_wide(mr_len).named("mr_end");
            let in_region = seg_addr.ge(mr_base) & seg_end.le(mr_end);
            let more_ds = dsi.zext(8).lt(ds.zext(8)).named("more_segments");
            let total = reg(32).named("frame_len");
            let seg_total = (total + seg_len.zext(32)).named("len_with_segment");

            // Verdict of the current WQE.
            let synd = reg(8).named("syndrome");
            let failed = reg(1).named("failed");
            let fail = |cond: Sig, code: &str| (cond, lit(8, kv("syndrome", code)));
            let v_in = is(st::VALIDATE) & more_ds;
            let v_fail = select(
                &[
                    fail(seg_inline, "LOCAL_QP_OP"),
                    fail(seg_len.eq(0u32), "LOCAL_LENGTH"),
                    fail(seg_total.gt(cfg.max_frame as u64), "LOCAL_LENGTH"),
                    fail(!lkey_ok | !in_region, "LOCAL_PROT"),
                ],
                lit(8, 0u32),
            )
            .named("segment_fault");
            let v_bad = (v_in & v_fail.ne(0u32)).named("segment_bad");
            let v_done = (is(st::VALIDATE) & !more_ds).named("validated");
            let empty = total.eq(0u32) & is_send;

            // ---- Gather buffer: one byte-wide RAM per lane ----
            let pos = reg(pos_bits).named("pos"); // byte position of the next data
            let inl_beat = reg(8).named("inline_beat");
            let n_inl = ((ihs.zext(16) + (b - 1) as u64).shr(bb)).trunc(8);
            let inl_src = wqe.shr(240).slice(2047 - 240, 0);
            let inl_arms: Vec<(u64, Sig)> = (0..226u32.div_ceil(b))
                .map(|k| {
                    let hi = (w * k + w - 1).min(2047 - 240);
                    let lo = w * k;
                    (k as u64, inl_src.slice(hi, lo).zext(w))
                })
                .collect();
            let inl_data = case(inl_beat, &inl_arms, lit(w, 0u32));
            let in_inline = (is(st::INLINE) & inl_beat.lt(n_inl)).named("inline_write");

            // Tags in flight: base beat per tag, busy bits.
            let busy = reg_init(TAGS, 0u32).named("tag_busy");
            let free_v: Vec<Sig> = (1..TAGS).rev().map(|t| !busy.bit(t)).collect();
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
            let data_err = reg_init(1, 0u32).named("data_err");

            // Gather cursor over the current data segment.
            let g_addr = reg(64).named("gather_addr");
            let g_left = reg(31).named("gather_left");
            let to_4k = (lit(14, 4096u32) - g_addr.slice(11, 0).zext(14)).named("to_4k");
            let chunk =
                mux(g_left.zext(32).lt(to_4k.zext(32)), g_left.trunc(14), to_4k).named("chunk");
            let g_active = (is(st::GATHER) & g_left.ne(0u32)).named("gather_active");
            // Loading the gather cursor: at each new segment.
            let load_seg = (is(st::GATHER) & !g_active & more_ds).named("load_segment");
            let issue = (g_active & have_tag & rd_req_ready).named("issue_data_read");
            holding.set(g_active & have_tag & !rd_req_ready);
            held_tag.set(free_tag);

            // DMA read requests: descriptors (tag 0) or data.
            let ring = cat(&[ctx.get("base"), lit(12, 0u32)]);
            let mask16 = (lit(16, 1u32).shl_by(ctx.get("log_size")) - 1u32).named("ring_mask");
            let slot = ((ci + wqebb.zext(16)) & mask16).named("wqebb_slot");
            let wqe_addr = ring + cat(&[slot.zext(58), lit(6, 0u32)]);
            let dbr_addr = cat(&[ctx.get("dbr"), lit(3, 0u32)]) + 4u32;
            let rd = |addr: Sig, len: u32| {
                DMA_RD_REQ.pack(&[
                    ("addr", addr),
                    ("len", lit(13, len)),
                    ("tag", lit(8, 0u32)),
                    ("off", lit(6, 0u32)),
                    ("pad", lit(5, 0u32)),
                ])
            };
            let data_req = DMA_RD_REQ.pack(&[
                ("addr", g_addr),
                ("len", chunk.trunc(13)),
                ("tag", free_tag.zext(8)),
                ("off", pos.trunc(bb.max(1)).zext(6) & lit(6, (b - 1) as u64)),
                ("pad", lit(5, 0u32)),
            ]);
            output(
                "m_dma_rd_req_tdata",
                select(
                    &[
                        (is(st::DBR_REQ), rd(dbr_addr, 4)),
                        (is(st::WQE_REQ), rd(wqe_addr, 64)),
                    ],
                    data_req,
                ),
            );
            let desc_req = is(st::DBR_REQ) | is(st::WQE_REQ);
            output("m_dma_rd_req_tvalid", desc_req | (g_active & have_tag));
            let desc_go = (desc_req & rd_req_ready).named("desc_read_go");

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
            }

            // Buffer writes: the inline header, then DMA answers (never at once).
            let lanes: Vec<Mem> = (0..b)
                .map(|i| memory(&format!("gather_lane{i}"), 8, buf_beats))
                .collect();
            let baw = lanes[0].addr_width();
            let inl_keep_n = (ihs.zext(16) - inl_beat.zext(16).shl(bb)).named("inline_left");
            let mut rd_lanes = Vec::new();
            let out_addr = reg(baw).named("out_beat");
            let out_load = wire(1).named("out_load");
            for (i, lane) in lanes.iter().enumerate() {
                let inl_en = in_inline & inl_keep_n.gt(i as u64);
                let dma_en = data_beat & cpl.keep().bit(i as u32);
                lane.write(
                    inl_en | dma_en,
                    mux(in_inline, inl_beat.zext(16).trunc(baw), cpl_addr.trunc(baw)),
                    mux(
                        in_inline,
                        inl_data.slice(8 * i as u32 + 7, 8 * i as u32),
                        cpl.data().slice(8 * i as u32 + 7, 8 * i as u32),
                    ),
                );
                rd_lanes.push(lane.read_sync(out_addr, Some(out_load)));
            }

            // ---- Streaming the frame out ----
            let n_beats = ((total.trunc(pos_bits) + (b - 1) as u64).shr(bb))
                .trunc(baw + 1)
                .named("frame_beats");
            let loaded = reg_init(baw + 1, 0u32).named("beats_loaded");
            let o_valid = reg_init(1, 0u32).named("tx_valid");
            let o_last = reg(1).named("tx_last");
            let more_out = (is(st::SEND) & loaded.lt(n_beats)).named("more_to_send");
            out_load.set((!o_valid | tx.ready()) & more_out);
            out_addr.set(select(
                &[(is(st::CMD), lit(baw, 0u32)), (out_load, out_addr + 1u32)],
                out_addr,
            ));
            loaded.set(mux(
                is(st::SEND),
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
            // The offload request goes with the frame, not before it: the TX path takes it
            // only once the frame's headers are parsed.
            let cmd_pending = reg_init(1, 0u32).named("cmd_pending");
            let cmd_taken = (cmd_pending & cmd_ready).named("cmd_taken");
            cmd_pending.set(select(
                &[(is(st::CMD), lit(1, 1u32)), (cmd_taken, lit(1, 0u32))],
                cmd_pending,
            ));
            let sent =
                (is(st::SEND) & !more_out & (!o_valid | tx.ready()) & (!cmd_pending | cmd_taken))
                    .named("frame_sent");

            // The offload request for the frame.
            output(
                "m_axis_tx_cmd_tdata",
                TX_CMD.pack(&[
                    ("csum_l3", cs.bit(6)),
                    ("csum_l4", cs.bit(7)),
                    ("vlan", vlan_ins),
                    ("vlan_tci", vlan_tci),
                ]),
            );
            output("m_axis_tx_cmd_tvalid", cmd_pending);

            // ---- Completion ----
            let want_cqe = failed | (fm & lit(8, kv("fm_ce_se", "CQ_UPDATE"))).ne(0u32);
            let opcode_cqe = mux(
                failed,
                lit(4, kv("cqe_opcode", "REQ_ERR")),
                lit(4, kv("cqe_opcode", "REQ")),
            );
            output(
                "m_cmpl_tdata",
                CMPL.pack_some(&[
                    ("cqn", ctx.get("cqn")),
                    ("opcode", opcode_cqe),
                    ("syndrome", mux(failed, synd, lit(8, 0u32))),
                    ("vendor_err_synd", mux(failed, dsi.zext(8), lit(8, 0u32))),
                    ("qpn", sqn.zext(24)),
                    ("s_wqe_opcode", opcode),
                    ("wqe_counter", ci),
                    ("byte_cnt", mux(failed, lit(32, 0u32), total)),
                ]),
            );
            output("m_cmpl_tvalid", is(st::CMPL) & want_cqe);
            let cmpl_done = (is(st::CMPL) & (!want_cqe | cmpl_ready)).named("cmpl_done");

            // ---- Sequencing ----
            let sq_ready = ctx.get("state").eq(rdy).named("sq_ready");
            let pc_rec = cat(&[wqe.slice(23, 16), wqe.slice(31, 24)]).named("doorbell_pc");
            let need_more_bb = (wqebb.zext(3) + 1u32).lt(nbb).named("more_wqebbs");
            let drained = busy.eq(0u32).named("reads_done");
            // PARSE: a DS count that cannot be fetched fails at once; otherwise fetch the rest of
            // the WQE first, then judge it.
            let desc_err_now =
                (desc_err | (desc_beat & cpl_u.get("err"))).named("descriptor_error");
            let fetch_more = (is(st::PARSE) & ds_ok & need_more_bb & !desc_err).named("fetch_more");
            let parse_bad = (is(st::PARSE) & !fetch_more & (qp_bad | desc_err)).named("wqe_bad");
            let parse_synd = mux(
                desc_err,
                lit(8, kv("syndrome", "LOCAL_ACCESS")),
                lit(8, kv("syndrome", "LOCAL_QP_OP")),
            );
            let nbb_eff = mux(ds_ok, nbb, lit(3, 1u32)).named("wqe_bbs_consumed");

            // Failure bookkeeping.
            synd.set(select(
                &[
                    (is(st::CHECK), lit(8, 0u32)),
                    (parse_bad, parse_synd),
                    (v_bad, v_fail),
                    (v_done & empty, lit(8, kv("syndrome", "LOCAL_LENGTH"))),
                    (
                        is(st::DRAIN) & drained & data_err,
                        lit(8, kv("syndrome", "LOCAL_ACCESS")),
                    ),
                ],
                synd,
            ));
            failed.set(select(
                &[
                    (is(st::CHECK), lit(1, 0u32)),
                    (
                        parse_bad | v_bad | (v_done & empty) | (is(st::DRAIN) & drained & data_err),
                        lit(1, 1u32),
                    ),
                ],
                failed,
            ));
            data_err.set(select(
                &[
                    (is(st::CHECK), lit(1, 0u32)),
                    (data_beat & cpl_u.get("err"), lit(1, 1u32)),
                ],
                data_err,
            ));
            desc_err.set(select(
                &[
                    (is(st::DBR_REQ) | is(st::CHECK), lit(1, 0u32)),
                    (desc_beat & cpl_u.get("err"), lit(1, 1u32)),
                ],
                desc_err,
            ));
            // WQEBB j lands at beat j * 512 / W of the WQE register.
            let bb_shift = (512 / w).trailing_zeros();
            wqe_beat.set(select(
                &[
                    (is(st::DBR_REQ), lit(wqe_beat_bits, 0u32)),
                    (
                        is(st::WQE_REQ),
                        wqebb
                            .zext(wqe_beat_bits + 2)
                            .shl(bb_shift)
                            .trunc(wqe_beat_bits),
                    ),
                    (desc_beat, wqe_beat + 1u32),
                ],
                wqe_beat,
            ));
            wqebb.set(select(
                &[(is(st::CHECK), lit(2, 0u32)), (fetch_more, wqebb + 1u32)],
                wqebb,
            ));
            ci.set(select(
                &[
                    (is(st::CTX), ctx.get("ci")),
                    (is(st::ADVANCE), ci + nbb_eff.zext(16)),
                ],
                ci,
            ));
            pc.set_if(is(st::DBR_GOT), pc_rec);
            dsi.set(select(
                &[
                    (parse_bad, lit(5, 0u32)),
                    (is(st::PARSE), first_ds.trunc(5)),
                    (v_in & !v_bad, dsi + 1u32),
                    (v_done & !empty, first_ds.trunc(5)),
                    (load_seg, dsi + 1u32),
                ],
                dsi,
            ));
            total.set(select(
                &[
                    (is(st::PARSE), mux(is_send, ihs.zext(32), lit(32, 0u32))),
                    (v_in & !v_bad, seg_total),
                ],
                total,
            ));
            inl_beat.set(select(
                &[(is(st::PARSE), lit(8, 0u32)), (in_inline, inl_beat + 1u32)],
                inl_beat,
            ));
            g_addr.set(select(
                &[(load_seg, seg_addr), (issue, g_addr + chunk.zext(64))],
                g_addr,
            ));
            g_left.set(select(
                &[
                    (is(st::PARSE), lit(31, 0u32)),
                    (load_seg, seg_len),
                    (issue, g_left - chunk.zext(31)),
                ],
                g_left,
            ));
            pos.set(select(
                &[
                    (is(st::PARSE), ihs.trunc(pos_bits)),
                    (issue, pos + chunk.zext(pos_bits)),
                ],
                pos,
            ));

            let gather_done = is(st::GATHER) & !g_active & !more_ds;
            let next = |s: u64| lit(st::BITS, s);
            state.set(select(
                &[
                    (sweep_done, next(st::IDLE)),
                    (take_qcmd, next(st::QCMD)),
                    (take_db, next(st::CTX)),
                    (is(st::QCMD), next(st::IDLE)),
                    (
                        is(st::CTX),
                        mux(sq_ready, next(st::DBR_REQ), next(st::IDLE)),
                    ),
                    (is(st::DBR_REQ) & desc_go, next(st::DBR_WAIT)),
                    (
                        is(st::DBR_WAIT) & desc_last,
                        mux(desc_err_now, next(st::IDLE), next(st::DBR_GOT)),
                    ),
                    (is(st::DBR_GOT), next(st::CHECK)),
                    (
                        is(st::CHECK),
                        mux(ci.eq(pc), next(st::IDLE), next(st::WQE_REQ)),
                    ),
                    (is(st::WQE_REQ) & desc_go, next(st::WQE_WAIT)),
                    (is(st::WQE_WAIT) & desc_last, next(st::PARSE)),
                    (fetch_more, next(st::WQE_REQ)),
                    (parse_bad, next(st::CMPL)),
                    (
                        is(st::PARSE),
                        mux(is_nop, next(st::CMPL), next(st::VALIDATE)),
                    ),
                    (v_bad | (v_done & empty), next(st::CMPL)),
                    (v_done, next(st::INLINE)),
                    (is(st::INLINE) & !in_inline, next(st::GATHER)),
                    (gather_done, next(st::DRAIN)),
                    (
                        is(st::DRAIN) & drained,
                        mux(data_err, next(st::CMPL), next(st::CMD)),
                    ),
                    (is(st::CMD), next(st::SEND)),
                    (sent, next(st::CMPL)),
                    (cmpl_done, next(st::ADVANCE)),
                    (
                        is(st::ADVANCE),
                        mux(failed, next(st::IDLE), next(st::CHECK)),
                    ),
                ],
                state,
            ));
            // ---- Context writes ----
            let created = SQ_CTX.pack(&[
                ("base", cat(&[c.get("in1"), c.get("in0").slice(31, 12)])),
                ("log_size", log_size),
                ("dbr", cat(&[c.get("in4"), c.get("in3").slice(31, 3)])),
                ("cqn", link),
                ("ci", lit(16, 0u32)),
                ("pc", lit(16, 0u32)),
                ("synd", lit(8, 0u32)),
                ("err_wqe", lit(16, 0u32)),
                ("state", lit(2, rdy)),
            ]);
            let adv_ci = ci + nbb_eff.zext(16);
            let updated = SQ_CTX.pack(&[
                ("base", ctx.get("base")),
                ("log_size", ctx.get("log_size")),
                ("dbr", ctx.get("dbr")),
                ("cqn", ctx.get("cqn")),
                ("ci", mux(is(st::ADVANCE), adv_ci, ctx.get("ci"))),
                ("pc", mux(is(st::ADVANCE), pc, ctx.get("pc"))),
                ("synd", mux(is(st::ADVANCE) & failed, synd, ctx.get("synd"))),
                (
                    "err_wqe",
                    mux(is(st::ADVANCE) & failed, ci, ctx.get("err_wqe")),
                ),
                (
                    "state",
                    select(
                        &[
                            (is(st::QCMD), new_state),
                            (is(st::ADVANCE) & failed, lit(2, kv("qstate", "ERR"))),
                        ],
                        ctx.get("state"),
                    ),
                ),
            ]);
            ctx_mem.write(
                (is(st::INIT) | cmd_ok | is(st::ADVANCE)).named("ctx_write"),
                mux(is(st::INIT), sweep, cur_q.trunc(aw)),
                select(
                    &[
                        (is(st::INIT), lit(SQ_CTX.width(), 0u32)),
                        (is(st::QCMD) & create, created),
                    ],
                    updated,
                ),
            );

            // ---- Counters ----
            let count = stat_counter;
            count(
                "db_bad",
                (db_valid & !db_ok)
                    | (is(st::CTX) & !sq_ready)
                    | (is(st::DBR_WAIT) & desc_last & desc_err_now),
            );
            count("wqes", cmpl_done);
            count("wqe_errors", cmpl_done & failed);
            count("frames", sent);
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
            log_max: 12,
        };
        assert!(sq_engine(&bad).is_err());
    }
}
