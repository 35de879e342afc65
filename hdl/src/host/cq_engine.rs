//! `cq_engine`: completion queues and event queues: writes CQEs and EQEs to their rings in host
//! memory (mlx5 layout, owner bit), arms CQs, and raises interrupts per event queue with
//! moderation by count and time.
//!
//! ```text
//! s_cmpl (CMPL, from the send/receive engines) --+
//! s_arm  (CQ arm doorbells, from the BAR) -------+--> one FSM --> m_dma_wr_req / m_dma_wr (CQE, EQE)
//! s_qcmd (CREATE/DESTROY/RESET/QUERY, CQ & EQ) --+        |
//! eq_db_* (EQ doorbells, from the BAR) -----> EQ state (registers) --> irq (one bit per vector)
//! ```
//!
//! - CQ contexts (ring, size, EQ, producer counter, armed, state, last consumer index from the
//!   arm doorbell) live in a LUT RAM indexed by CQN, swept to "not created" after reset (one
//!   cycle per entry; commands and completions wait); EQ contexts, few, in registers.
//! - A completion for CQ `c` goes to slot `pc & (2^log_size - 1)` of its ring with
//!   `owner = (pc >> log_size) & 1`; then, if the CQ was armed, it is disarmed and an EQE
//!   (type COMPLETION, its CQN) goes to its EQ. A completion for a CQ that is not ready is
//!   dropped and counted (`stat_cmpl_dropped`).
//! - Arm doorbell (`cq_arm`): if CQEs exist beyond the given consumer index the EQE is written
//!   at once, else the CQ is armed. Arm requests wait in a 16-entry queue; one arriving when it
//!   is full is counted in `stat_arm_lost` (the BAR cannot be stalled).
//! - An EQ interrupts when armed (EQ doorbell with arm) and it holds `mod_count` events not yet
//!   signalled, or `mod_period` ticks of 1024 cycles passed since the first of them; then it is
//!   disarmed until the next arm doorbell. Arming an EQ with events beyond the given consumer
//!   index interrupts at once.
//! - CQ overrun is not checked: the driver sizes each CQ for its queues' outstanding WQEs.
//! - Ports: `s_cmpl_*` ([`CMPL`]), `s_arm_tdata/_tvalid` ([`CQ_ARM`]), `s_qcmd_*` /
//!   `m_qcmd_res_*` (`QCMD_REQ` / `QCMD_RES` of `crate::host`), `eq_db_tdata/_tvalid`
//!   ([`EQ_DB`]), `m_dma_wr_req_*`, `m_dma_wr_*`, `timer` (64-bit cycle count, CQE timestamps),
//!   `irq`, `stat_*`.
//! - Latency: a CQE write request leaves 2 cycles after its completion is taken; the EQE request
//!   follows the CQE's last beat by 2 cycles. Throughput: one CQE per `64 / (W/8) + 2` cycles
//!   (a CQE per 10 cycles at 64 bits, per 3 at 512 bits), plus as much for each EQE.
//! - Cost: the CQ contexts and the arm queue in LUT RAM; the EQ registers (about 200 bits per
//!   EQ) are most of the flip-flops; no row in results/AREA.md.
//! - Golden model: `nicgen_model::cq::CqModel`; test: `testbench/tests/host/cq_engine.rs`.

use super::desc;
use super::kv;
use super::{DMA_WR_REQ, QCMD_REQ, QCMD_RES};
use crate::record::RecordLayout;
use crate::stats::stat_counter;
use crate::stream::record_fifo;
use nicgen_edsl::prelude::*;

/// A completion to write: which CQ, and the CQE's fields (named as in the `cqe` layout).
pub const CMPL: RecordLayout = RecordLayout {
    name: "cmpl",
    fields: &[
        ("cqn", 16),
        ("opcode", 4),
        ("syndrome", 8),
        ("vendor_err_synd", 8),
        ("qpn", 24),
        ("s_wqe_opcode", 8),
        ("wqe_counter", 16),
        ("byte_cnt", 32),
        ("rss_hash_result", 32),
        ("rss_hash_type", 8),
        ("check_sum", 16),
        ("l2_ok", 1),
        ("l3_ok", 1),
        ("l4_ok", 1),
        ("l3_type", 2),
        ("l4_type", 3),
        ("cv", 1),
        ("ip_frag", 1),
        ("vlan_info", 16),
        ("l3_hdr", 2),
    ],
};

/// A CQ arm doorbell, decoded: CQN, the consumer index and the arm sequence number.
pub const CQ_ARM: RecordLayout = RecordLayout {
    name: "cq_arm",
    fields: &[("cqn", 16), ("ci", 24), ("sn", 2), ("cmd", 2)],
};

/// An EQ doorbell, decoded.
pub const EQ_DB: RecordLayout = RecordLayout {
    name: "eq_db",
    fields: &[("eqn", 8), ("ci", 24), ("arm", 1)],
};

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CqCfg {
    pub data_bits: u32,
    /// Completion queues (CQNs `0..cqs`).
    pub cqs: u32,
    /// Event queues = interrupt vectors (1..=32).
    pub eqs: u32,
    /// Largest log2 ring size accepted by CREATE.
    pub log_max: u32,
}

/// CQ context word in the RAM.
const CQ_CTX: RecordLayout = RecordLayout {
    name: "cq_ctx",
    fields: &[
        ("base", 52), // ring address >> 12
        ("log_size", 5),
        ("eqn", 8),
        ("pc", 24),
        ("ci", 24),
        ("armed", 1),
        ("state", 2),
    ],
};

mod st {
    pub const IDLE: u64 = 0;
    pub const QCMD: u64 = 1;
    pub const ARM: u64 = 2;
    pub const CQE_REQ: u64 = 3;
    pub const CQE_DATA: u64 = 4;
    pub const EQE_REQ: u64 = 5;
    pub const EQE_DATA: u64 = 6;
    /// After reset: every CQ context is written to "not created".
    pub const INIT: u64 = 7;
    pub const BITS: u32 = 3;
}

/// Slot address in a ring of 64-byte entries: `base << 12 | (pc mod 2^log) << 6`.
fn slot_addr(base: Sig, log_size: Sig, pc: Sig) -> Sig {
    let mask = (lit(24, 1u32).shl_by(log_size) - 1u32).named("slot_mask");
    let off = cat(&[(pc & mask).zext(26), lit(6, 0u32)]);
    cat(&[base, lit(12, 0u32)]) + off.zext(64)
}

/// Owner bit of entry `pc` in a ring of `2^log_size` entries.
fn owner(log_size: Sig, pc: Sig) -> Sig {
    pc.shr_by(log_size).bit(0)
}

pub fn cq_engine(cfg: &CqCfg) -> Result<Rc<ModuleDef>, ElabError> {
    let w = cfg.data_bits;
    if ![8, 64, 128, 256, 512].contains(&w) {
        return Err(ElabError::config(
            "cq_engine",
            format!("data_bits {w}: one of 8, 64, 128, 256, 512"),
        ));
    }
    if !(1..=32).contains(&cfg.eqs) || cfg.cqs < 2 || cfg.cqs > 4096 || cfg.log_max > 16 {
        return Err(ElabError::config(
            "cq_engine",
            "eqs must be 1..=32, cqs 2..=4096 and log_max at most 16",
        ));
    }
    let arm_q = record_fifo(CQ_ARM.width(), 16)?;
    let cfg = *cfg;
    Module::build(
        format!("cq_engine_d{w}_c{}_e{}", cfg.cqs, cfg.eqs),
        move || {
            doc("Completion and event queues: CQE/EQE writes with owner bits, CQ arming,");
            doc("interrupts per EQ with moderation by count and time.");
            let beats = 512 / w;
            let beat_bits = clog2(beats as u64).max(1);
            let eq_bits = clog2(cfg.eqs as u64).max(1);

            let timer = input("timer", 64);
            let tick = timer.slice(9, 0).eq(0u32).named("tick");
            let cmpl_data = input("s_cmpl_tdata", CMPL.width());
            let cmpl_valid = input("s_cmpl_tvalid", 1);
            let arm_in = input("s_arm_tdata", CQ_ARM.width());
            let arm_in_valid = input("s_arm_tvalid", 1);
            let qcmd_data = input("s_qcmd_tdata", QCMD_REQ.width());
            let qcmd_valid = input("s_qcmd_tvalid", 1);
            let res_ready = input("m_qcmd_res_tready", 1);
            let eqdb_data = input("eq_db_tdata", EQ_DB.width());
            let eqdb_valid = input("eq_db_tvalid", 1);
            let wr_req_ready = input("m_dma_wr_req_tready", 1);
            let wr_ready = input("m_dma_wr_tready", 1);

            // Arm doorbells wait in a queue (the BAR cannot be stalled).
            let u_arm = instance(&arm_q, "u_arm_q");
            u_arm.set("s_axis_tdata", arm_in);
            u_arm.set("s_axis_tvalid", arm_in_valid);
            let arm_lost = (arm_in_valid & !u_arm.get("s_axis_tready")).named("arm_lost");

            let state = reg_init(st::BITS, st::INIT).named("state");
            let idle = state.eq(st::IDLE);

            // The request being served, latched when the FSM leaves IDLE.
            // A command waits until the previous answer was taken (res_valid low).
            let res_valid = reg_init(1, 0u32).named("res_valid");
            let qcmd_go = (qcmd_valid & !res_valid).named("qcmd_go");
            let take_qcmd = (idle & qcmd_go).named("take_qcmd");
            let take_arm = (idle & !qcmd_go & u_arm.get("m_axis_tvalid")).named("take_arm");
            let take_cmpl =
                (idle & !qcmd_go & !u_arm.get("m_axis_tvalid") & cmpl_valid).named("take_cmpl");
            output("s_qcmd_tready", take_qcmd);
            u_arm.set("m_axis_tready", take_arm);
            output("s_cmpl_tready", take_cmpl);
            let cmd = reg(QCMD_REQ.width()).enable(take_qcmd).named("cmd");
            cmd.set(qcmd_data);
            let arm = reg(CQ_ARM.width()).enable(take_arm).named("arm");
            arm.set(u_arm.get("m_axis_tdata"));
            let cm = reg(CMPL.width()).enable(take_cmpl).named("cmpl");
            cm.set(cmpl_data);
            let c = QCMD_REQ.unpack(cmd.unused()); // CQ and EQ commands use some words
            let a = CQ_ARM.unpack(arm.unused()); // sn and cmd: only "arm" is implemented
            let k = CMPL.unpack(cm);

            // CQ contexts.
            let ctx_mem = memory("cq_ctx", CQ_CTX.width(), cfg.cqs.next_power_of_two().max(2));
            let aw = ctx_mem.addr_width();
            let in_state = |s: u64| state.eq(s);
            let cqn = select(
                &[
                    (in_state(st::QCMD), c.get("index")),
                    (in_state(st::ARM), a.get("cqn")),
                ],
                k.get("cqn"),
            )
            .named("cqn");
            let cqn_ok = cqn.lt(cfg.cqs as u64).named("cqn_in_range");
            let ctx = CQ_CTX.unpack(ctx_mem.read_async(cqn.trunc(aw)).named("cq_ctx_q"));
            let cq_ready = (cqn_ok & ctx.get("state").eq(kv("qstate", "RDY"))).named("cq_ready");

            // EQ contexts (registers).
            let n_eq = cfg.eqs as usize;
            let eq_reg = |name: &str, bits: u32, i: usize| {
                reg_init(bits, 0u32).named(&format!("eq{i}_{name}"))
            };
            let eq_state: Vec<Sig> = (0..n_eq).map(|i| eq_reg("state", 2, i)).collect();
            let eq_base: Vec<Sig> = (0..n_eq).map(|i| eq_reg("base", 52, i)).collect();
            let eq_log: Vec<Sig> = (0..n_eq).map(|i| eq_reg("log_size", 5, i)).collect();
            let eq_vec: Vec<Sig> = (0..n_eq).map(|i| eq_reg("vector", eq_bits, i)).collect();
            let eq_mcount: Vec<Sig> = (0..n_eq).map(|i| eq_reg("mod_count", 16, i)).collect();
            let eq_mperiod: Vec<Sig> = (0..n_eq).map(|i| eq_reg("mod_period", 16, i)).collect();
            let eq_pc: Vec<Sig> = (0..n_eq).map(|i| eq_reg("pc", 24, i)).collect();
            let eq_ci: Vec<Sig> = (0..n_eq).map(|i| eq_reg("ci", 24, i)).collect();
            let eq_armed: Vec<Sig> = (0..n_eq).map(|i| eq_reg("armed", 1, i)).collect();
            let eq_pending: Vec<Sig> = (0..n_eq).map(|i| eq_reg("pending", 16, i)).collect();
            let eq_ticks: Vec<Sig> = (0..n_eq).map(|i| eq_reg("ticks", 16, i)).collect();
            let pick = |regs: &[Sig], idx: Sig| {
                let arms: Vec<(u64, Sig)> = regs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as u64, *r))
                    .collect();
                case(idx, &arms, lit(regs[0].width(), 0u32))
            };

            // ---- Queue commands ----
            let op = c.get("op");
            let is_eq = c.get("qtype").eq(kv("qtype", "EQ"));
            let idx = c.get("index");
            let eqi = idx.trunc(eq_bits).named("cmd_eqn");
            let idx_ok = mux(is_eq, idx.lt(cfg.eqs as u64), idx.lt(cfg.cqs as u64));
            let cur_state = mux(is_eq, pick(&eq_state, eqi), ctx.get("state"));
            let log_size = c.get("in2").slice(4, 0);
            let link = c.get("in5").slice(15, 0);
            let size_ok = log_size.le(cfg.log_max as u64) & log_size.ne(0u32);
            let link_ok = link.lt(cfg.eqs as u64);
            let is_rst = cur_state.eq(kv("qstate", "RST"));
            let bad_state = select(
                &[
                    (op.eq(kv("qcmd_op", "CREATE")), !is_rst),
                    (
                        op.eq(kv("qcmd_op", "DESTROY")) | op.eq(kv("qcmd_op", "RESET")),
                        is_rst,
                    ),
                ],
                lit(1, 0u32),
            );
            let known_op = op.ge(kv("qcmd_op", "CREATE")) & op.le(kv("qcmd_op", "QUERY"));
            let good_type = c.get("qtype").le(kv("qtype", "CQ"));
            let cmd_status = select(
                &[
                    (
                        !known_op | !good_type,
                        lit(8, kv("qcmd_status", "BAD_PARAM")),
                    ),
                    (!idx_ok, lit(8, kv("qcmd_status", "BAD_INDEX"))),
                    (bad_state, lit(8, kv("qcmd_status", "BAD_RES_STATE"))),
                    (
                        op.eq(kv("qcmd_op", "CREATE")) & !(size_ok & link_ok),
                        lit(8, kv("qcmd_status", "BAD_PARAM")),
                    ),
                ],
                lit(8, kv("qcmd_status", "OK")),
            )
            .named("cmd_status");
            let cmd_ok =
                (in_state(st::QCMD) & cmd_status.eq(kv("qcmd_status", "OK"))).named("cmd_ok");
            let eq_sel = |i: usize| eqi.eq(i as u64) & is_eq & cmd_ok;
            let new_state = case(
                op,
                &[
                    (kv("qcmd_op", "CREATE"), lit(2, kv("qstate", "RDY"))),
                    (kv("qcmd_op", "DESTROY"), lit(2, kv("qstate", "RST"))),
                    (kv("qcmd_op", "RESET"), lit(2, kv("qstate", "RDY"))),
                ],
                cur_state,
            );
            let res = reg(QCMD_RES.width())
                .enable(in_state(st::QCMD))
                .named("res");
            let q_pc = mux(is_eq, pick(&eq_pc, eqi), ctx.get("pc"));
            let q_ci = mux(is_eq, pick(&eq_ci, eqi), ctx.get("ci"));
            res.set(QCMD_RES.pack(&[
                ("status", cmd_status),
                ("out0", cur_state.zext(32)),
                ("out1", q_pc.zext(32)),
                ("out2", q_ci.zext(32)),
                ("out3", lit(32, 0u32)),
            ]));
            res_valid.set(mux(
                in_state(st::QCMD),
                1u32,
                mux(res_ready, 0u32, res_valid),
            ));
            output("m_qcmd_res_tdata", res);
            output("m_qcmd_res_tvalid", res_valid);

            // ---- CQE and EQE writes ----
            let beat = reg_init(beat_bits, 0u32).named("beat");
            let last_beat = beat.eq((beats - 1) as u64);
            let in_cqe_data = in_state(st::CQE_DATA);
            let in_eqe_data = in_state(st::EQE_DATA);
            let data_go = ((in_cqe_data | in_eqe_data) & wr_ready).named("data_beat");
            beat.set_if(data_go, mux(last_beat, 0u32, beat + 1u32));

            // The EQ an event goes to, and whether it takes it.
            let ev_eqn = ctx.get("eqn").trunc(eq_bits).named("event_eqn");
            let ev_eq_ready = (pick(&eq_state, ev_eqn).eq(kv("qstate", "RDY"))
                & ctx.get("eqn").lt(cfg.eqs as u64))
            .named("event_eq_ready");
            // Arm: an EQE at once when CQEs exist beyond the consumer index.
            let arm_fires = (cq_ready & ctx.get("pc").ne(a.get("ci"))).named("arm_fires");

            let is_err = (k.get("opcode").eq(kv("cqe_opcode", "REQ_ERR"))
                | k.get("opcode").eq(kv("cqe_opcode", "RESP_ERR")))
            .named("error_cqe");
            let cqe_time = reg(64).enable(take_cmpl).named("cqe_time");
            cqe_time.set(timer);
            let cqe = desc::pack(
                "cqe",
                &[
                    ("rss_hash_result", k.get("rss_hash_result")),
                    ("rss_hash_type", k.get("rss_hash_type")),
                    ("check_sum", k.get("check_sum")),
                    ("l3_hdr", k.get("l3_hdr")),
                    ("l2_ok", k.get("l2_ok")),
                    ("l3_ok", k.get("l3_ok")),
                    ("l4_ok", k.get("l4_ok")),
                    ("cv", k.get("cv")),
                    ("ip_frag", k.get("ip_frag")),
                    ("l3_type", k.get("l3_type")),
                    ("l4_type", k.get("l4_type")),
                    ("vlan_info", k.get("vlan_info")),
                    ("byte_cnt", k.get("byte_cnt")),
                    // Error CQEs carry their syndromes in the timestamp's last two bytes.
                    (
                        "timestamp",
                        mux(
                            is_err,
                            cat(&[
                                cqe_time.slice(63, 16),
                                k.get("vendor_err_synd"),
                                k.get("syndrome"),
                            ]),
                            cqe_time,
                        ),
                    ),
                    ("qpn", k.get("qpn")),
                    ("s_wqe_opcode", k.get("s_wqe_opcode")),
                    ("wqe_counter", k.get("wqe_counter")),
                    ("owner", owner(ctx.get("log_size"), ctx.get("pc"))),
                    ("opcode", k.get("opcode")),
                ],
            )
            .named("cqe");
            // The EQE's CQN: the completion's or the arm's.
            let ev_cqn = reg(24).named("event_cqn");
            let ev_eq = reg(eq_bits).named("event_eq");
            let ev_eq_pc = pick(&eq_pc, ev_eq);
            let ev_eq_log = pick(&eq_log, ev_eq);
            let eqe = desc::pack(
                "eqe",
                &[
                    ("event_type", lit(8, 0u32)),
                    ("cqn", ev_cqn),
                    ("owner", owner(ev_eq_log, ev_eq_pc)),
                ],
            )
            .named("eqe");
            let entry = mux(in_eqe_data, eqe, cqe);
            let beat_arms: Vec<(u64, Sig)> = (0..beats)
                .map(|i| (i as u64, entry.slice(w * i + w - 1, w * i)))
                .collect();
            output("m_dma_wr_tdata", case(beat, &beat_arms, lit(w, 0u32)));
            output("m_dma_wr_tkeep", lit(w / 8, (1u128 << (w / 8)) - 1));
            output("m_dma_wr_tlast", last_beat);
            output("m_dma_wr_tvalid", in_cqe_data | in_eqe_data);

            let in_cqe_req = in_state(st::CQE_REQ);
            let in_eqe_req = in_state(st::EQE_REQ);
            let wr_addr = mux(
                in_eqe_req,
                slot_addr(pick(&eq_base, ev_eq), ev_eq_log, ev_eq_pc),
                slot_addr(ctx.get("base"), ctx.get("log_size"), ctx.get("pc")),
            );
            output(
                "m_dma_wr_req_tdata",
                DMA_WR_REQ.pack(&[
                    ("addr", wr_addr),
                    ("len", lit(13, 64u32)),
                    ("off", lit(6, 0u32)),
                    ("pad", lit(13, 0u32)),
                ]),
            );
            output("m_dma_wr_req_tvalid", (in_cqe_req & cq_ready) | in_eqe_req);
            let req_go_cqe = in_cqe_req & cq_ready & wr_req_ready;
            let req_go_eqe = in_eqe_req & wr_req_ready;
            let cqe_done = (in_cqe_data & data_go & last_beat).named("cqe_done");
            let eqe_done = (in_eqe_data & data_go & last_beat).named("eqe_done");

            // Event after a CQE: the CQ was armed and its EQ takes events.
            let cqe_event = (cqe_done & ctx.get("armed") & ev_eq_ready).named("cqe_event");
            let arm_event = (in_state(st::ARM) & arm_fires & ev_eq_ready).named("arm_event");
            ev_cqn.set_if(cqe_event | arm_event, cqn.zext(24));
            ev_eq.set_if(cqe_event | arm_event, ev_eqn);

            // ---- Context RAM writes (one writer: this FSM) ----
            let ctx_write = (cmd_ok & !is_eq) | in_state(st::ARM) & cq_ready | cqe_done;
            let created = CQ_CTX.pack(&[
                ("base", cat(&[c.get("in1"), c.get("in0").slice(31, 12)])),
                ("log_size", log_size),
                ("eqn", link.trunc(8)),
                ("pc", lit(24, 0u32)),
                ("ci", lit(24, 0u32)),
                ("armed", lit(1, 0u32)),
                ("state", lit(2, kv("qstate", "RDY"))),
            ]);
            let updated = CQ_CTX.pack(&[
                ("base", ctx.get("base")),
                ("log_size", ctx.get("log_size")),
                ("eqn", ctx.get("eqn")),
                ("pc", mux(cqe_done, ctx.get("pc") + 1u32, ctx.get("pc"))),
                ("ci", mux(in_state(st::ARM), a.get("ci"), ctx.get("ci"))),
                (
                    "armed",
                    select(
                        &[(cqe_done, lit(1, 0u32)), (in_state(st::ARM), !arm_fires)],
                        ctx.get("armed"),
                    ),
                ),
                (
                    "state",
                    mux(in_state(st::QCMD), new_state, ctx.get("state")),
                ),
            ]);
            // After reset, a sweep writes every context to "not created" (state RST).
            let sweep = reg_init(aw, 0u32).named("init_addr");
            let in_init = in_state(st::INIT);
            let sweep_done = (in_init & sweep.eq(((1u64 << aw) - 1) as u64)).named("init_done");
            sweep.set_if(in_init, sweep + 1u32);
            ctx_mem.write(
                (ctx_write | in_init).named("ctx_write"),
                mux(in_init, sweep, cqn.trunc(aw)),
                select(
                    &[
                        (in_init, lit(CQ_CTX.width(), 0u32)),
                        (in_state(st::QCMD) & op.eq(kv("qcmd_op", "CREATE")), created),
                    ],
                    updated,
                ),
            );

            // ---- FSM ----
            state.set(select(
                &[
                    (take_qcmd, lit(st::BITS, st::QCMD)),
                    (take_arm, lit(st::BITS, st::ARM)),
                    (take_cmpl, lit(st::BITS, st::CQE_REQ)),
                    (in_state(st::QCMD), lit(st::BITS, st::IDLE)),
                    (
                        in_state(st::ARM),
                        mux(
                            arm_event,
                            lit(st::BITS, st::EQE_REQ),
                            lit(st::BITS, st::IDLE),
                        ),
                    ),
                    (in_state(st::CQE_REQ) & !cq_ready, lit(st::BITS, st::IDLE)),
                    (req_go_cqe, lit(st::BITS, st::CQE_DATA)),
                    (
                        cqe_done,
                        mux(
                            cqe_event,
                            lit(st::BITS, st::EQE_REQ),
                            lit(st::BITS, st::IDLE),
                        ),
                    ),
                    (req_go_eqe, lit(st::BITS, st::EQE_DATA)),
                    (eqe_done, lit(st::BITS, st::IDLE)),
                    (sweep_done, lit(st::BITS, st::IDLE)),
                ],
                state,
            ));
            let dropped = (in_cqe_req & !cq_ready).named("cmpl_dropped");

            // ---- EQ state: commands, doorbells, events, moderation ----
            let db = EQ_DB.unpack(eqdb_data);
            let db_eqn = db.get("eqn");
            let mut irq_bits: Vec<Sig> = vec![lit(1, 0u32); n_eq];
            for i in 0..n_eq {
                let sel = eq_sel(i);
                let create = sel & op.eq(kv("qcmd_op", "CREATE"));
                let db_hit = (eqdb_valid & db_eqn.eq(i as u64)).named(&format!("eq{i}_db"));
                let ev = (eqe_done & ev_eq.eq(i as u64)).named(&format!("eq{i}_event"));
                let ready = eq_state[i].eq(kv("qstate", "RDY"));
                eq_state[i].set_if(sel, new_state);
                eq_base[i].set_if(create, cat(&[c.get("in1"), c.get("in0").slice(31, 12)]));
                eq_log[i].set_if(create, log_size);
                eq_vec[i].set_if(create, link.trunc(eq_bits));
                eq_mcount[i].set_if(create, c.get("in6").slice(15, 0));
                eq_mperiod[i].set_if(create, c.get("in6").slice(31, 16));
                eq_pc[i].set(select(
                    &[(create, lit(24, 0u32)), (ev, eq_pc[i] + 1u32)],
                    eq_pc[i],
                ));
                eq_ci[i].set(select(
                    &[(create, lit(24, 0u32)), (db_hit & ready, db.get("ci"))],
                    eq_ci[i],
                ));
                // Moderation: fire when armed with enough pending events or after the period.
                let need = mux(eq_mcount[i].eq(0u32), lit(16, 1u32), eq_mcount[i]);
                let has = eq_pending[i].ne(0u32);
                let by_time = eq_mperiod[i].ne(0u32) & eq_ticks[i].ge(eq_mperiod[i]);
                let fire = (ready & eq_armed[i] & has & (eq_pending[i].ge(need) | by_time))
                    .named(&format!("eq{i}_fire"));
                let arm_now = db_hit & ready & db.get("arm");
                let behind = db.get("ci").ne(eq_pc[i] + ev.zext(24));
                eq_armed[i].set(select(
                    &[
                        (create, lit(1, 0u32)),
                        (arm_now, lit(1, 1u32)),
                        (fire, lit(1, 0u32)),
                    ],
                    eq_armed[i],
                ));
                let sat = eq_pending[i].eq(0xFFFFu32);
                let bumped = mux(sat, eq_pending[i], eq_pending[i] + 1u32);
                eq_pending[i].set(select(
                    &[
                        (create | fire, mux(ev, lit(16, 1u32), lit(16, 0u32))),
                        // Arming behind the producer: interrupt at once; arming caught up:
                        // only new events count.
                        (arm_now & behind, mux(need.gt(bumped), need, bumped)),
                        (arm_now, mux(ev, lit(16, 1u32), lit(16, 0u32))),
                        (ev, bumped),
                    ],
                    eq_pending[i],
                ));
                eq_ticks[i].set(select(
                    &[
                        (create | fire | !has, lit(16, 0u32)),
                        (tick & !eq_ticks[i].eq(0xFFFFu32), eq_ticks[i] + 1u32),
                    ],
                    eq_ticks[i],
                ));
                for (v, bit) in irq_bits.iter_mut().enumerate() {
                    *bit = *bit | (fire & eq_vec[i].eq(v as u64));
                }
            }
            let irq_bits: Vec<Sig> = irq_bits.into_iter().rev().collect();
            let irq = reg_init(n_eq as u32, 0u32).named("irq_q");
            irq.set(cat(&irq_bits));
            output("irq", irq);

            // ---- Counters ----
            let count = stat_counter;
            count("cqe_written", cqe_done);
            count("eqe_written", eqe_done);
            count("cmpl_dropped", dropped);
            count("arm_lost", arm_lost);
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_rejects_bad_parameters() {
        for w in [8, 64, 512] {
            let cfg = CqCfg {
                data_bits: w,
                cqs: 64,
                eqs: 8,
                log_max: 12,
            };
            let def = cq_engine(&cfg).unwrap();
            if let Ok(dir) = std::env::var("NICGEN_DUMP_CQ") {
                generate(&def, &EmitOptions::default())
                    .write_to(std::path::Path::new(&format!("{dir}/d{w}")))
                    .unwrap();
            }
        }
        let bad = CqCfg {
            data_bits: 64,
            cqs: 64,
            eqs: 0,
            log_max: 12,
        };
        assert!(cq_engine(&bad).is_err());
    }
}
