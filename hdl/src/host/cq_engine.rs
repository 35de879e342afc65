//! `cq_engine`: completion queues and event queues: writes CQEs and EQEs to their rings in host
//! memory (mlx5 layout, owner bit), arms CQs, and raises interrupts per event queue with
//! moderation by count and time.
//!
//! ```text
//! s_cmpl (CMPL, from the send/receive engines) --+  session: one CQ, <= 8 completions
//! s_arm  (CQ arm doorbells, from the BAR) -------+--> one FSM --> m_dma_wr_req / m_dma_wr (CQEs/EQE)
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
//! - Sessions (merged writes): completions go out through one open session, a run of
//!   completions of one CQ in consecutive slots, written as one DMA write when it closes. It
//!   closes when it holds 8, or reaches the end of the aligned block of `min(8, ring)` slots it
//!   started in (so a write never crosses the ring's end or a 4 KiB page); when a completion
//!   that cannot join it is taken (its CQ's, compressed, unlike the title; or another CQ's
//!   when the session's period is 0 — with a period, another CQ's completion is written
//!   alone past the open session, which keeps waiting); before a
//!   queue command or a CQ arm doorbell is served; at once when it is an error completion on
//!   a compressed CQ, or its CQ is armed and has period 0; and when the CQ's
//!   `session` period (cycles, `qcmd_in.session`, counted from the session's first
//!   completion) has passed and no completion waits. With period 0 a session takes only the
//!   completions already waiting, so nothing is held back; with period `P` a lone completion
//!   goes out `P` cycles after it came, at most. An armed CQ's event follows its session's
//!   write, so a period also moderates its events (events of different CQs may then come in
//!   another order than their first completions).
//! - CQE compression (`qcmd_in.cqe_comp`, mlx5 `cqe_comp_en` with `mini_cqe_res_format`
//!   hash or checksum as `qcmd_in.mini_format`): a session of `n >= 2` is written as two slots,
//!   the title (the first completion's CQE with `format` = COMPRESSED, `byte_cnt` = `n`) and
//!   the array of 8-byte mini CQEs (`mini_cqe` layout, `struct mlx5_mini_cqe8`: mini `i` is
//!   completion `i`); the session still takes `n` slots (`pc += n`), the ones after the
//!   array left unwritten, and the driver expands it as `mlx5e_decompress_cqes_start/cont`
//!   do. A completion joins a compressed session when it has the title's opcode and every
//!   field its mini CQE does not carry equal to the title's: receive completions carry
//!   `byte_cnt` and the hash or the checksum (format), their `wqe_counter` the title's plus
//!   their index, and a striding RQ's completion joins only with the title's `wqe_id` (mlx5:
//!   a mini CQE has no `wqe_id`, the expanded CQEs keep the title's); send completions carry `byte_cnt`, `wqe_counter` and `s_wqe_opcode`. The
//!   expanded CQEs are exactly the full ones but for the timestamp, the title's for all
//!   (Linux, with the checksum format, drops the hash; here a session shares it exactly).
//!   Error CQEs are never compressed (mlx5): each is written alone, full.
//! - `wqe_id` (bytes 0x02-0x03, big-endian as `struct mlx5_cqe64`): written from the
//!   completion's `wqe_id` in every CQE; only the striding RQ's completions set it.
//! - Arm doorbell (`cq_arm`): if CQEs exist beyond the given consumer index the EQE is written
//!   at once, else the CQ is armed. Arm requests wait in a 16-entry queue; one arriving when it
//!   is full is counted in `stat_arm_lost` (the BAR cannot be stalled).
//! - An EQ interrupts when armed (EQ doorbell with arm) and it holds `mod_count` events not yet
//!   signalled, or `mod_period` ticks of 1024 cycles passed since the first of them; then it is
//!   disarmed until the next arm doorbell. Arming an EQ with events beyond the given consumer
//!   index interrupts at once.
//! - CQ overrun is not checked: the driver sizes each CQ for its queues' outstanding WQEs.
//! - Ports ([`CqPorts`]): `timer` (64-bit cycle count, CQE timestamps), `s_cmpl_*` ([`Cmpl`]),
//!   `s_arm_tdata/_tvalid` ([`CqArm`]), `s_qcmd_*` / `m_qcmd_res_*` (`QcmdReq` / `QcmdRes` of
//!   `crate::host`), `eq_db_tdata/_tvalid` ([`EqDb`]), `m_dma_wr_req_*` (`DmaWrReq`),
//!   `m_dma_wr_*`, `irq`, `stat_*` ([`CqStats`]).
//! - Latency: with session period 0, a lone completion's write request leaves 3 cycles after
//!   it is taken (take, decide, and a cycle in IDLE for another of its CQ); in the cycle it is
//!   decided when its session closes then (another CQ's completion waits behind it, its CQ is
//!   armed, the session is full); with period `P`, after `P` cycles. The EQE request follows
//!   the session's last beat by 2 cycles.
//! - Throughput: the FSM serves the next request in the last cycle of the one before (an arm
//!   doorbell, a write's last beat), never through an IDLE cycle; the completion after the one
//!   being decided is taken in the same cycle, so a completion that joins a session costs 1
//!   cycle. A session's write is its request and `slots * 64 / (W/8)` beats (`slots` = n, or 2
//!   compressed); another CQ's completion waiting behind it is decided in its last beat, and
//!   its request offered then. So single completions to alternating CQs cost their beats, 2
//!   cycles at 256 bits when the port takes each request at once (the block test's 64 in 129
//!   cycles); 8 merged CQEs at 64 bits take 9 + 64 cycles (about 9 per CQE), 8 compressed
//!   9 + 16 (about 3 per CQE), one DMA write instead of 8; `nic` builds the engine at the DMA
//!   port's width (256 bits on nic64: 8 merged CQEs in 9 + 16). The block test (runs of 1 to
//!   12 completions per CQ, random idle and backpressure, periods 0, 24 and 200) writes about
//!   870 completions in 590-660 writes.
//! - Cost: the CQ contexts and the arm queue in LUT RAM; the session: 8 completions
//!   (about 330 bits each) in LUT RAM, the title (about 270 flip-flops) and the mini-CQE
//!   array (512 flip-flops); the EQ registers (about 200 bits per EQ); no row in
//!   results/AREA.md.
//! - States: [`CqState`]; after reset `Init` sweeps the contexts.
//! - Golden model: `nicgen_model::cq::CqModel`; test: `testbench/tests/host/cq_engine.rs`.

use super::desc;
use super::regs::consts::{
    cqe_format, cqe_opcode, mini_cqe_format, qcmd_op, qcmd_status, qstate, qtype,
};
use super::regs::desc::{cqe, eqe};
use super::{DmaWrReq, QcmdReq, QcmdRes};
use crate::stats::event_counter;
use crate::stream::{record_fifo, Stream, StreamCfg};
use nicgen_edsl::prelude::*;

nicgen_edsl::record! {
    /// A completion to write: which CQ, and the CQE's fields (named as in the `cqe` layout).
    pub struct Cmpl {
        cqn: 16,
        opcode: 4,
        syndrome: 8,
        vendor_err_synd: 8,
        qpn: 24,
        s_wqe_opcode: 8,
        wqe_counter: 16,
        /// Striding RQ completions: the WQE the frame's strides are in (mlx5 `wqe_id`); 0
        /// for the others.
        wqe_id: 16,
        byte_cnt: 32,
        rss_hash_result: 32,
        rss_hash_type: 8,
        check_sum: 16,
        l2_ok: 1,
        l3_ok: 1,
        l4_ok: 1,
        l3_type: 2,
        l4_type: 3,
        cv: 1,
        ip_frag: 1,
        vlan_info: 16,
        l3_hdr: 2,
        /// The frame was delivered whole with the inner offloads: `l3_ok` / `l4_ok` cover the
        /// outer and the inner headers, RSS hashed the inner ones.
        tunneled: 1,
        /// The frame was de-capsulated (the l3/l4 fields and verdicts are the inner frame's).
        decapped: 1,
        /// The tunnel: bits 23:0 VNI/VSID, 25:24 kind, 28:26 malformed reason.
        tunnel_info: 29,
    }
}

nicgen_edsl::record! {
    /// A CQ arm doorbell, decoded: CQN, the consumer index and the arm sequence number.
    pub struct CqArm {
        cqn: 16,
        ci: 24,
        sn: 2,
        cmd: 2,
    }
}

nicgen_edsl::record! {
    /// An EQ doorbell, decoded.
    pub struct EqDb {
        eqn: 8,
        ci: 24,
        /// Arm the EQ (EQ_DB_ARM), else only update the consumer index.
        arm: 1,
    }
}

nicgen_edsl::record! {
    /// The engine's counters (`stat_<field>`, 32 bits, wrapping).
    pub struct CqStats {
        /// Completions written (each a CQE or a mini CQE).
        cqe_written: 32,
        /// EQEs written.
        eqe_written: 32,
        /// Completions for a CQ that is not ready, dropped.
        cmpl_dropped: 32,
        /// Arm doorbells lost to a full arm queue.
        arm_lost: 32,
    }
}

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

/// The engine's ports.
pub struct CqPorts {
    /// Free-running cycle count (CQE timestamps, moderation ticks).
    pub timer: Sig,
    /// Completions from the send and receive engines (`s_cmpl`).
    pub cmpl: RecordStream<Cmpl<u32>>,
    /// CQ arm doorbells from the BAR (`s_arm`; cannot be stalled).
    pub arm: RecordValid<CqArm<u32>>,
    /// CQ and EQ commands (`s_qcmd`).
    pub qcmd: RecordStream<QcmdReq<u32>>,
    /// Their answers (`m_qcmd_res`).
    pub qcmd_res: RecordStream<QcmdRes<u32>>,
    /// EQ doorbells from the BAR (`eq_db`).
    pub eq_db: RecordValid<EqDb<u32>>,
    /// CQE and EQE write requests (`m_dma_wr_req`).
    pub dma_wr_req: RecordStream<DmaWrReq<u32>>,
    /// Their data (`m_dma_wr`).
    pub dma_wr: Stream,
    /// One pulse per interrupt, a bit per vector.
    pub irq: Sig,
    /// Counters (`stat_*`).
    pub stats: CqStats,
}

impl Ports for CqPorts {
    type Cfg = CqCfg;
    fn ports(io: &Io, cfg: &CqCfg) -> Self {
        CqPorts {
            timer: io.input("timer", 64),
            cmpl: RecordStream::sink(io, "s_cmpl", Cmpl::shape()),
            arm: RecordValid::sink(io, "s_arm", CqArm::shape()),
            qcmd: RecordStream::sink(io, "s_qcmd", QcmdReq::shape()),
            qcmd_res: RecordStream::source(io, "m_qcmd_res", QcmdRes::shape()),
            eq_db: RecordValid::sink(io, "eq_db", EqDb::shape()),
            dma_wr_req: RecordStream::source(io, "m_dma_wr_req", DmaWrReq::shape()),
            dma_wr: Stream::source(io, "m_dma_wr", &StreamCfg::new(cfg.data_bits, 0)),
            irq: io.output("irq", cfg.eqs),
            stats: io.outputs("stat_", &CqStats::shape()),
        }
    }
}

nicgen_edsl::record! {
    /// CQ context word in the RAM.
    struct CqCtx {
        /// Ring address >> 12.
        base: 52,
        log_size: 5,
        eqn: 8,
        pc: 24,
        ci: 24,
        armed: 1,
        state: 2,
        /// CQE compression (qcmd_in.cqe_comp).
        comp: 1,
        /// Mini CQE format of receive completions (qcmd_in.mini_format).
        mini_format: 2,
        /// Cycles a session waits for more completions (qcmd_in.session).
        session: 16,
    }
}

nicgen_edsl::states! {
    /// The engine's states (one request at a time).
    pub enum CqState {
        Idle,
        Qcmd,
        Arm,
        /// Decide on the completion taken: drop it, add it to the open session, open one, or
        /// write the open session out first; and take the next completion. (Another CQ's
        /// completion that waits for a session's write is decided in its last beat instead.)
        Take,
        /// The session's write request.
        CqeReq,
        /// The session's data: its CQEs, or a compressed session's title and mini CQEs.
        CqeData,
        EqeReq,
        EqeData,
        /// After reset: every CQ context is written to "not created".
        Init,
    }
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

pub fn cq_engine(cfg: &CqCfg) -> Result<Block<CqPorts>, ElabError> {
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
    let arm_q = record_fifo(CqArm::shape(), 16)?;
    let cfg = *cfg;
    Block::build(
        format!("cq_engine_d{w}_c{}_e{}", cfg.cqs, cfg.eqs),
        cfg,
        move |p: CqPorts| {
            use CqState as S;
            doc("Completion and event queues: CQE/EQE writes with owner bits, CQ arming,");
            doc("interrupts per EQ with moderation by count and time.");
            let beats = 512 / w;
            let eq_bits = clog2(cfg.eqs as u64).max(1);

            let timer = p.timer;
            let tick = timer.slice(9, 0).eq(0u32).named("tick");
            let wr_req_ready = p.dma_wr_req.ready;
            let wr_ready = p.dma_wr.ready();

            // Arm doorbells wait in a queue (the BAR cannot be stalled).
            let u_arm = arm_q.instance("u_arm_q");
            u_arm.s_axis.data.set(p.arm.data);
            u_arm.s_axis.valid.set(p.arm.valid);
            let arm_lost = (p.arm.valid & !u_arm.s_axis.ready).named("arm_lost");

            let state = Fsm::new("state", S::Init);
            let is = |s: CqState| state.is(s);
            let idle = is(S::Idle);

            // The request being served, latched when the FSM leaves IDLE.
            // A command waits until the previous answer was taken (res_valid low).
            let res_valid = reg_init(1, 0u32).named("res_valid");
            let qcmd_go = (p.qcmd.valid & !res_valid).named("qcmd_go");
            // The open session: completions of one CQ held to go out as one write.
            let sess_open = reg_init(1, 0u32).named("sess_open");
            let sess_n = reg_init(4, 0u32).named("sess_n");
            let sess_room = reg_init(4, 0u32).named("sess_room");
            let sess_force = reg_init(1, 0u32).named("sess_force");
            let sess_age = reg_init(16, 0u32).named("sess_age");
            let sess_period = reg_init(16, 0u32).named("sess_period");
            let expired = sess_age.ge(sess_period).named("sess_expired");
            // The FSM is free to serve the next request: in IDLE, and in the last cycle of a
            // state that would go back to IDLE (an arm doorbell without an event, the last
            // beat of a write with nothing waiting after it), so that no IDLE cycle comes
            // between two requests. `sess_seen` is the session as the next request finds it
            // (a session's write closes it in its last beat).
            let free = wire(1).named("fsm_free");
            let sess_seen = wire(1).named("sess_seen");
            let flush_now = (sess_seen
                & (sess_force
                    | sess_n.eq(sess_room)
                    | qcmd_go
                    | u_arm.m_axis.valid
                    | (expired & !p.cmpl.valid)))
                .named("sess_flush_now");
            let take_qcmd = (free & !sess_seen & qcmd_go).named("take_qcmd");
            let take_arm = (free & !sess_seen & !qcmd_go & u_arm.m_axis.valid).named("take_arm");
            let take_idle =
                (free & p.cmpl.valid & mux(sess_seen, !flush_now, !qcmd_go & !u_arm.m_axis.valid))
                    .named("take_cmpl_idle");
            // Also taken while deciding the one before (below), so a run goes at one a cycle.
            let take_next = wire(1).named("take_cmpl_next");
            let take_cmpl = (take_idle | take_next).named("take_cmpl");
            p.qcmd.ready.set(take_qcmd);
            u_arm.m_axis.ready.set(take_arm);
            p.cmpl.ready.set(take_cmpl);
            let cmd = reg(QcmdReq::WIDTH).enable(take_qcmd).named("cmd");
            cmd.set(p.qcmd.data);
            let arm = reg(CqArm::WIDTH).enable(take_arm).named("arm");
            arm.set(u_arm.m_axis.data);
            let cm = reg(Cmpl::WIDTH).enable(take_cmpl).named("cmpl");
            cm.set(p.cmpl.data);
            let c = QcmdReq::unpack(cmd.unused()); // CQ and EQ commands use some words
            let a = CqArm::unpack(arm);
            // Only "arm" is implemented: the sequence number and the command are not read.
            a.sn.unused();
            a.cmd.unused();
            let k = Cmpl::unpack(cm);

            // CQ contexts.
            let ctx_mem = memory("cq_ctx", CqCtx::WIDTH, cfg.cqs.next_power_of_two().max(2));
            let aw = ctx_mem.addr_width();
            let sess_cqn = reg(16).named("sess_cqn");
            // The completion in `k` goes out alone past the open session (another CQ's, while
            // a session with a period waits).
            let bypass = reg_init(1, 0u32).named("sess_bypass");
            let in_cqe_req = is(S::CqeReq);
            let in_cqe_data = is(S::CqeData);
            let cqn = select(
                &[
                    (is(S::Qcmd), c.index),
                    (is(S::Arm), a.cqn),
                    (in_cqe_req | in_cqe_data, mux(bypass, k.cqn, sess_cqn)),
                ],
                k.cqn,
            )
            .named("cqn");
            let cqn_ok = cqn.lt(cfg.cqs as u64).named("cqn_in_range");
            let ctx = CqCtx::unpack(ctx_mem.read_async(cqn.trunc(aw)).named("cq_ctx_q"));
            let cq_ready = (cqn_ok & ctx.state.eq(qstate::RDY)).named("cq_ready");

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
            let op = c.op;
            let is_eq = c.qtype.eq(qtype::EQ);
            let idx = c.index;
            let eqi = idx.trunc(eq_bits).named("cmd_eqn");
            let idx_ok = mux(is_eq, idx.lt(cfg.eqs as u64), idx.lt(cfg.cqs as u64));
            let cur_state = mux(is_eq, pick(&eq_state, eqi), ctx.state);
            let log_size = c.in2.slice(4, 0);
            let link = c.in5.slice(15, 0);
            let size_ok = log_size.le(cfg.log_max as u64) & log_size.ne(0u32);
            let link_ok = link.lt(cfg.eqs as u64);
            let is_rst = cur_state.eq(qstate::RST);
            let bad_state = select(
                &[
                    (op.eq(qcmd_op::CREATE), !is_rst),
                    (op.eq(qcmd_op::DESTROY) | op.eq(qcmd_op::RESET), is_rst),
                ],
                lit(1, 0u32),
            );
            let known_op = op.ge(qcmd_op::CREATE) & op.le(qcmd_op::QUERY);
            let good_type = c.qtype.le(qtype::CQ);
            let cmd_status = select(
                &[
                    (!known_op | !good_type, lit(8, qcmd_status::BAD_PARAM)),
                    (!idx_ok, lit(8, qcmd_status::BAD_INDEX)),
                    (bad_state, lit(8, qcmd_status::BAD_RES_STATE)),
                    (
                        op.eq(qcmd_op::CREATE) & !(size_ok & link_ok),
                        lit(8, qcmd_status::BAD_PARAM),
                    ),
                ],
                lit(8, qcmd_status::OK),
            )
            .named("cmd_status");
            let cmd_ok = (is(S::Qcmd) & cmd_status.eq(qcmd_status::OK)).named("cmd_ok");
            let eq_sel = |i: usize| eqi.eq(i as u64) & is_eq & cmd_ok;
            let new_state = case(
                op,
                &[
                    (qcmd_op::CREATE, lit(2, qstate::RDY)),
                    (qcmd_op::DESTROY, lit(2, qstate::RST)),
                    (qcmd_op::RESET, lit(2, qstate::RDY)),
                ],
                cur_state,
            );
            let res = reg(QcmdRes::WIDTH).enable(is(S::Qcmd)).named("res");
            let q_pc = mux(is_eq, pick(&eq_pc, eqi), ctx.pc);
            let q_ci = mux(is_eq, pick(&eq_ci, eqi), ctx.ci);
            res.set(
                QcmdRes {
                    status: cmd_status,
                    out0: cur_state.zext(32),
                    out1: q_pc.zext(32),
                    out2: q_ci.zext(32),
                    out3: lit(32, 0u32),
                }
                .pack(),
            );
            res_valid.set(mux(
                is(S::Qcmd),
                1u32,
                mux(p.qcmd_res.ready, 0u32, res_valid),
            ));
            p.qcmd_res.data.set(res);
            p.qcmd_res.valid.set(res_valid);

            // ---- Sessions ----
            // The completion taken (`k`, in TAKE) joins the open session, opens one, or waits
            // for the open one to be written out. A session's completions are kept whole in a
            // small LUT RAM (their CQEs are built as they go out) and, for a compressed CQ,
            // as mini CQEs in a register (the slot after the title).
            let in_take = is(S::Take);
            let is_err = |op: Sig| op.eq(cqe_opcode::REQ_ERR) | op.eq(cqe_opcode::RESP_ERR);
            let cqe_time = reg(64).enable(take_cmpl).named("cqe_time");
            cqe_time.set(timer);
            let sess_comp = reg(1).named("sess_comp");
            let sess_csum = reg(1).named("sess_csum");
            let title_q = reg(Cmpl::WIDTH).named("sess_title");
            let t = Cmpl::unpack(title_q);
            let k_req = k.opcode.eq(cqe_opcode::REQ);
            // `k` with the fields its mini CQE carries taken from the title: equal to the
            // title when `k` may join a compressed session.
            let k_as_title = Cmpl {
                byte_cnt: t.byte_cnt,
                wqe_counter: t.wqe_counter,
                s_wqe_opcode: mux(k_req, t.s_wqe_opcode, k.s_wqe_opcode),
                check_sum: mux(!k_req & sess_csum, t.check_sum, k.check_sum),
                rss_hash_result: mux(!k_req & !sess_csum, t.rss_hash_result, k.rss_hash_result),
                ..k
            }
            .pack();
            let wqe_next = (k_req | k.wqe_counter.eq(t.wqe_counter + sess_n.zext(16)))
                .named("wqe_counter_next");
            let compatible =
                (!is_err(t.opcode) & !is_err(k.opcode) & wqe_next & k_as_title.eq(title_q))
                    .named("compatible");
            // The decision reads `k`'s CQ context through a port of its own, so that it can
            // also be made in the last data beat of the session before (`take_early`).
            // (Ring base, EQ and consumer index are the write's, read through `ctx`.)
            let kctx = CqCtx::unpack(
                ctx_mem
                    .read_async(k.cqn.trunc(aw))
                    .named("take_ctx_q")
                    .unused(),
            );
            let k_ready =
                (k.cqn.lt(cfg.cqs as u64) & kctx.state.eq(qstate::RDY)).named("take_cq_ready");
            // `k` decided in the closing session's last beat (it waited for that write): only
            // another CQ's, whose context that write does not change, and when no event
            // follows the write. That session is then as good as closed.
            let take_early = wire(1).named("take_early");
            let take_now = (in_take | take_early).named("take_now");
            let live = (sess_open & !take_early).named("sess_live");
            let same_cq = (live & k.cqn.eq(sess_cqn)).named("same_cq");
            let joins = (same_cq & !sess_force & sess_n.lt(sess_room) & (!sess_comp | compatible))
                .named("joins");
            let take_ok = (take_now & k_ready).named("take_ok");
            let join = (take_ok & joins).named("sess_join");
            let open = (take_ok & !live).named("sess_open_new");
            // Another CQ's completion: past a session that waits out a period, else after it.
            let bypass_go =
                (take_ok & live & !same_cq & sess_period.ne(0u32)).named("sess_bypass_go");
            let flush_first = (take_ok & live & !joins & !bypass_go).named("sess_flush_first");
            let dropped = (take_now & !k_ready).named("cmpl_dropped");
            // Room: to the end of the aligned block of min(8, ring) slots the session starts
            // in, so a write never crosses the ring's end or a 4 KiB page.
            let blk_mask = mux(
                kctx.log_size.ge(3u32),
                lit(3, 7u32),
                (lit(3, 1u32).shl_by(kctx.log_size) - 1u32).trunc(3),
            )
            .named("sess_blk_mask");
            let room = (blk_mask.zext(4) + 1u32) - (kctx.pc.trunc(3) & blk_mask).zext(4);
            // An error completion on a compressed CQ is a session of its own (never
            // compressed); an armed CQ without a period gets its event at once.
            let force = (kctx.comp & is_err(k.opcode)) | (kctx.armed & kctx.session.eq(0u32));
            sess_room.set_if(open, room);
            sess_cqn.set_if(open, k.cqn);
            sess_comp.set_if(open, kctx.comp);
            sess_csum.set_if(open, kctx.mini_format.eq(mini_cqe_format::CSUM));
            sess_period.set_if(open, kctx.session);
            title_q.set_if(open, cm);
            sess_force.set_if(open, force);
            // The next completion is taken while `k` is decided when `k` leaves (joins, opens
            // or is dropped) and no command or arm doorbell waits (they close the session
            // first).
            take_next.set(
                (take_now & (open | join | dropped) & p.cmpl.valid & !qcmd_go)
                    & !u_arm.m_axis.valid,
            );
            // The session after `k` closes at once: forced, full, a command or an arm waits,
            // or its period is 0 and another CQ's completion was taken behind `k`. Then its
            // request follows this cycle (no IDLE between), the next completion waiting. With
            // period 0 and nothing taken, IDLE closes it a cycle later if still nothing came.
            let next_cqn = Cmpl::unpack(p.cmpl.data).cqn;
            let closes = ((open | join)
                & (mux(open, force, sess_force)
                    | mux(open, lit(4, 1u32), sess_n + 1u32).eq(mux(open, room, sess_room))
                    | qcmd_go
                    | u_arm.m_axis.valid
                    | (mux(open, kctx.session, sess_period).eq(0u32)
                        & take_next
                        & !next_cqn.eq(k.cqn))))
            .named("sess_closes_now");
            sess_age.set(select(
                &[
                    (open, lit(16, 0u32)),
                    (sess_open & !sess_age.eq(0xFFFFu32), sess_age + 1u32),
                ],
                sess_age,
            ));
            let sess_buf = memory("sess_buf", Cmpl::WIDTH + 64, 8);
            sess_buf.write(
                open | join,
                mux(open, lit(3, 0u32), sess_n.trunc(3)),
                cat(&[cqe_time, cm]),
            );
            let mini = {
                use super::regs::desc::mini_cqe as m;
                let send = desc::pack(
                    m::LAYOUT,
                    &[
                        (m::WQE_COUNTER, k.wqe_counter),
                        (m::S_WQE_OPCODE, k.s_wqe_opcode),
                        (m::BYTE_CNT, k.byte_cnt),
                    ],
                );
                let hash = desc::pack(
                    m::LAYOUT,
                    &[
                        (m::RX_HASH_RESULT, k.rss_hash_result),
                        (m::BYTE_CNT, k.byte_cnt),
                    ],
                );
                let csum = desc::pack(
                    m::LAYOUT,
                    &[(m::CHECKSUM, k.check_sum), (m::BYTE_CNT, k.byte_cnt)],
                );
                let csum_fmt = mux(open, kctx.mini_format.eq(mini_cqe_format::CSUM), sess_csum);
                mux(k_req, send, mux(csum_fmt, csum, hash)).named("mini_cqe")
            };
            let minis: Vec<Sig> = (0..8u32)
                .map(|i| {
                    let r = reg(64).named(&format!("sess_mini{i}"));
                    let at = mux(open, lit(4, 0u32), sess_n);
                    r.set(select(
                        &[
                            ((open | join) & at.eq(i as u64), mini),
                            (open, lit(64, 0u32)),
                        ],
                        r,
                    ));
                    r
                })
                .collect();
            let mini_slot = cat(&minis.iter().rev().copied().collect::<Vec<_>>());

            // ---- CQE and EQE writes ----
            // A session goes out as one write: its n CQEs, or, compressed with n >= 2, the
            // title (the first CQE with format COMPRESSED and byte_cnt n) and the mini CQEs.
            let compressed = (!bypass & sess_comp & sess_n.gt(1u32)).named("sess_compressed");
            // Completions (and ring slots) the write stands for, and the slots it writes.
            let n_w = mux(bypass, lit(4, 1u32), sess_n).named("write_cqes");
            let slots = mux(compressed, lit(4, 2u32), n_w).named("sess_slots");
            let lb = beats.trailing_zeros();
            let slot_bits = 3 + lb;
            let beat = reg_init(slot_bits, 0u32).named("beat");
            let (beat_in_slot, slot) = if lb == 0 {
                (lit(1, 0u32), beat)
            } else {
                (beat.slice(lb - 1, 0), beat.slice(lb + 2, lb))
            };
            let slot = slot.named("slot");
            let write_beats = if lb == 0 {
                slots
            } else {
                cat(&[slots, lit(lb, 0u32)])
            };
            let last_beat_all = (beat.zext(4 + lb) + 1u32)
                .eq(write_beats)
                .named("last_beat_of_write");
            let last_beat_slot = beat_in_slot.eq((beats - 1) as u64);
            let in_eqe_data = is(S::EqeData);
            let data_go = ((in_cqe_data | in_eqe_data) & wr_ready).named("data_beat");
            let last_beat = mux(in_eqe_data, last_beat_slot, last_beat_all);
            beat.set_if(data_go, mux(last_beat, lit(slot_bits, 0u32), beat + 1u32));

            // The EQ an event goes to, and whether it takes it.
            let ev_eqn = ctx.eqn.trunc(eq_bits).named("event_eqn");
            let ev_eq_ready = (pick(&eq_state, ev_eqn).eq(qstate::RDY)
                & ctx.eqn.lt(cfg.eqs as u64))
            .named("event_eq_ready");
            // Arm: an EQE at once when CQEs exist beyond the consumer index.
            let arm_fires = (cq_ready & ctx.pc.ne(a.ci)).named("arm_fires");

            let e_q =
                mux(bypass, cat(&[cqe_time, cm]), sess_buf.read_async(slot)).named("sess_entry");
            let e = Cmpl::unpack(e_q.slice(Cmpl::WIDTH - 1, 0));
            let e_time = e_q.slice(Cmpl::WIDTH + 63, Cmpl::WIDTH);
            e.cqn.unused(); // the session's CQ is `sess_cqn`
            let e_err = is_err(e.opcode).named("error_cqe");
            let cqe = desc::pack(
                cqe::LAYOUT,
                &[
                    (cqe::RSS_HASH_RESULT, e.rss_hash_result),
                    (cqe::RSS_HASH_TYPE, e.rss_hash_type),
                    (cqe::CHECK_SUM, e.check_sum),
                    (cqe::L3_HDR, e.l3_hdr),
                    (cqe::L2_OK, e.l2_ok),
                    (cqe::L3_OK, e.l3_ok),
                    (cqe::L4_OK, e.l4_ok),
                    (cqe::CV, e.cv),
                    (cqe::IP_FRAG, e.ip_frag),
                    (cqe::L3_TYPE, e.l3_type),
                    (cqe::L4_TYPE, e.l4_type),
                    (cqe::VLAN_INFO, e.vlan_info),
                    (cqe::TUNNELED, e.tunneled),
                    (cqe::DECAPPED, e.decapped),
                    (cqe::TUNNEL_ID, e.tunnel_info.slice(23, 0)),
                    (cqe::TUNNEL_KIND, e.tunnel_info.slice(25, 24)),
                    (cqe::TUNNEL_BAD, e.tunnel_info.slice(28, 26)),
                    (cqe::BYTE_CNT, mux(compressed, sess_n.zext(32), e.byte_cnt)),
                    // Error CQEs carry their syndromes in the timestamp's last two bytes.
                    (
                        cqe::TIMESTAMP,
                        mux(
                            e_err,
                            cat(&[e_time.slice(63, 16), e.vendor_err_synd, e.syndrome]),
                            e_time,
                        ),
                    ),
                    (cqe::QPN, e.qpn),
                    (cqe::S_WQE_OPCODE, e.s_wqe_opcode),
                    (cqe::WQE_COUNTER, e.wqe_counter),
                    (cqe::WQE_ID, e.wqe_id),
                    (cqe::OWNER, owner(ctx.log_size, ctx.pc + slot.zext(24))),
                    (
                        cqe::FORMAT,
                        mux(
                            compressed,
                            lit(2, cqe_format::COMPRESSED),
                            lit(2, cqe_format::FULL),
                        ),
                    ),
                    (cqe::OPCODE, e.opcode),
                ],
            )
            .named("cqe");
            // The EQE's CQN: the completion's or the arm's.
            let ev_cqn = reg(24).named("event_cqn");
            let ev_eq = reg(eq_bits).named("event_eq");
            let ev_eq_pc = pick(&eq_pc, ev_eq);
            let ev_eq_log = pick(&eq_log, ev_eq);
            let eqe = desc::pack(
                eqe::LAYOUT,
                &[
                    (eqe::EVENT_TYPE, lit(8, 0u32)),
                    (eqe::CQN, ev_cqn),
                    (eqe::OWNER, owner(ev_eq_log, ev_eq_pc)),
                ],
            )
            .named("eqe");
            let entry = select(
                &[(in_eqe_data, eqe), (compressed & slot.eq(1u32), mini_slot)],
                cqe,
            );
            let beat_arms: Vec<(u64, Sig)> = (0..beats)
                .map(|i| (i as u64, entry.slice(w * i + w - 1, w * i)))
                .collect();
            p.dma_wr
                .data()
                .set(case(beat_in_slot, &beat_arms, lit(w, 0u32)));
            p.dma_wr.keep().set(lit(w / 8, (1u128 << (w / 8)) - 1));
            p.dma_wr.last().set(last_beat);
            p.dma_wr.valid().set(in_cqe_data | in_eqe_data);

            let in_eqe_req = is(S::EqeReq);
            // A session that closes as it is decided offers its request in that cycle (as
            // CQE_REQ then does, unchanged): `k`'s CQ, one slot when it opens, else the
            // joined session's slots (a join makes n >= 2: two compressed).
            let req_now = (take_now & closes).named("sess_req_now");
            let now_slots = select(
                &[(open, lit(4, 1u32)), (sess_comp, lit(4, 2u32))],
                sess_n + 1u32,
            );
            let wr_addr = select(
                &[
                    (
                        in_eqe_req,
                        slot_addr(pick(&eq_base, ev_eq), ev_eq_log, ev_eq_pc),
                    ),
                    (req_now, slot_addr(kctx.base, kctx.log_size, kctx.pc)),
                ],
                slot_addr(ctx.base, ctx.log_size, ctx.pc),
            );
            let wr_slots = mux(req_now, now_slots, slots);
            p.dma_wr_req.set_fields(&DmaWrReq {
                addr: wr_addr,
                len: mux(
                    in_eqe_req,
                    lit(13, 64u32),
                    cat(&[wr_slots.zext(7), lit(6, 0u32)]),
                ),
                ..DmaWrReq::zeros()
            });
            p.dma_wr_req.valid.set(in_cqe_req | in_eqe_req | req_now);
            let req_go_cqe = in_cqe_req & wr_req_ready;
            let req_go_eqe = in_eqe_req & wr_req_ready;
            let cqe_done = (in_cqe_data & data_go & last_beat).named("cqe_done");
            let eqe_done = (in_eqe_data & data_go & last_beat).named("eqe_done");
            sess_open.set(select(
                &[(open, lit(1, 1u32)), (cqe_done & !bypass, lit(1, 0u32))],
                sess_open,
            ));
            sess_n.set(select(
                &[
                    (open, lit(4, 1u32)),
                    (join, sess_n + 1u32),
                    (cqe_done & !bypass, lit(4, 0u32)),
                ],
                sess_n,
            ));
            // A completion waits in `k` while the session before it is written out.
            let pending = reg_init(1, 0u32).named("cmpl_pending");
            pending.set(select(
                &[
                    (flush_first | (take_next & closes), lit(1, 1u32)),
                    (take_now, lit(1, 0u32)),
                ],
                pending,
            ));

            bypass.set(select(
                &[(bypass_go, lit(1, 1u32)), (cqe_done, lit(1, 0u32))],
                bypass,
            ));

            // Event after a session: the CQ was armed and its EQ takes events.
            let cqe_event = (cqe_done & ctx.armed & ev_eq_ready).named("cqe_event");
            take_early.set(cqe_done & pending & !bypass & !cqe_event & !k.cqn.eq(sess_cqn));
            let arm_event = (is(S::Arm) & arm_fires & ev_eq_ready).named("arm_event");
            free.set(
                idle | (is(S::Arm) & !arm_event) | ((cqe_done | eqe_done) & !cqe_event & !pending),
            );
            sess_seen.set(sess_open & !(cqe_done & !bypass));
            ev_cqn.set_if(cqe_event | arm_event, cqn.zext(24));
            ev_eq.set_if(cqe_event | arm_event, ev_eqn);

            // ---- Context RAM writes (one writer: this FSM) ----
            let ctx_write = (cmd_ok & !is_eq) | is(S::Arm) & cq_ready | cqe_done;
            let created = CqCtx {
                base: cat(&[c.in1, c.in0.slice(31, 12)]),
                log_size,
                eqn: link.trunc(8),
                pc: lit(24, 0u32),
                ci: lit(24, 0u32),
                armed: lit(1, 0u32),
                state: lit(2, qstate::RDY),
                comp: c.in6.bit(0),
                mini_format: c.in6.slice(2, 1),
                session: c.in6.slice(31, 16),
            }
            .pack();
            let updated = CqCtx {
                pc: mux(cqe_done, ctx.pc + n_w.zext(24), ctx.pc),
                ci: mux(is(S::Arm), a.ci, ctx.ci),
                armed: select(
                    &[(cqe_done, lit(1, 0u32)), (is(S::Arm), !arm_fires)],
                    ctx.armed,
                ),
                state: mux(is(S::Qcmd), new_state, ctx.state),
                ..ctx
            }
            .pack();
            // After reset, a sweep writes every context to "not created" (state RST).
            let sweep = reg_init(aw, 0u32).named("init_addr");
            let in_init = is(S::Init);
            let sweep_done = (in_init & sweep.eq(((1u64 << aw) - 1) as u64)).named("init_done");
            sweep.set_if(in_init, sweep + 1u32);
            ctx_mem.write(
                (ctx_write | in_init).named("ctx_write"),
                mux(in_init, sweep, cqn.trunc(aw)),
                select(
                    &[
                        (in_init, lit(CqCtx::WIDTH, 0u32)),
                        (is(S::Qcmd) & op.eq(qcmd_op::CREATE), created),
                    ],
                    updated,
                ),
            );

            // ---- FSM ----
            let to = |s: CqState| s.lit();
            let after = mux(pending, to(S::Take), to(S::Idle));
            // After a decision that let `k` go: its session's request, the next completion, or
            // IDLE.
            let decided = select(
                &[
                    (closes, mux(wr_req_ready, to(S::CqeData), to(S::CqeReq))),
                    (take_next, to(S::Take)),
                ],
                to(S::Idle),
            );
            state.set(select(
                &[
                    (free & flush_now, to(S::CqeReq)),
                    (take_qcmd, to(S::Qcmd)),
                    (take_arm, to(S::Arm)),
                    (take_idle, to(S::Take)),
                    (is(S::Qcmd), to(S::Idle)),
                    (is(S::Arm), mux(arm_event, to(S::EqeReq), to(S::Idle))),
                    (flush_first | bypass_go, to(S::CqeReq)),
                    (in_take, decided),
                    (req_go_cqe, to(S::CqeData)),
                    (take_early, decided),
                    (cqe_done, mux(cqe_event, to(S::EqeReq), after)),
                    (req_go_eqe, to(S::EqeData)),
                    (eqe_done, after),
                    (sweep_done, to(S::Idle)),
                ],
                state.q(),
            ));

            // ---- EQ state: commands, doorbells, events, moderation ----
            let db = p.eq_db.fields();
            let db_eqn = db.eqn;
            let mut irq_bits: Vec<Sig> = vec![lit(1, 0u32); n_eq];
            for i in 0..n_eq {
                let sel = eq_sel(i);
                let create = sel & op.eq(qcmd_op::CREATE);
                let db_hit = (p.eq_db.valid & db_eqn.eq(i as u64)).named(&format!("eq{i}_db"));
                let ev = (eqe_done & ev_eq.eq(i as u64)).named(&format!("eq{i}_event"));
                let ready = eq_state[i].eq(qstate::RDY);
                eq_state[i].set_if(sel, new_state);
                eq_base[i].set_if(create, cat(&[c.in1, c.in0.slice(31, 12)]));
                eq_log[i].set_if(create, log_size);
                eq_vec[i].set_if(create, link.trunc(eq_bits));
                eq_mcount[i].set_if(create, c.in6.slice(15, 0));
                eq_mperiod[i].set_if(create, c.in6.slice(31, 16));
                eq_pc[i].set(select(
                    &[(create, lit(24, 0u32)), (ev, eq_pc[i] + 1u32)],
                    eq_pc[i],
                ));
                eq_ci[i].set(select(
                    &[(create, lit(24, 0u32)), (db_hit & ready, db.ci)],
                    eq_ci[i],
                ));
                // Moderation: fire when armed with enough pending events or after the period.
                let need = mux(eq_mcount[i].eq(0u32), lit(16, 1u32), eq_mcount[i]);
                let has = eq_pending[i].ne(0u32);
                let by_time = eq_mperiod[i].ne(0u32) & eq_ticks[i].ge(eq_mperiod[i]);
                let fire = (ready & eq_armed[i] & has & (eq_pending[i].ge(need) | by_time))
                    .named(&format!("eq{i}_fire"));
                let arm_now = db_hit & ready & db.arm;
                let behind = db.ci.ne(eq_pc[i] + ev.zext(24));
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
            p.irq.set(irq);

            // ---- Counters ----
            let s = &p.stats;
            let cqes = reg_init(32, 0u32).named("count_cqe_written");
            cqes.set_if(cqe_done, cqes + n_w.zext(32));
            s.cqe_written.set(cqes);
            s.eqe_written.set(event_counter("eqe_written", eqe_done));
            s.cmpl_dropped.set(event_counter("cmpl_dropped", dropped));
            s.arm_lost.set(event_counter("arm_lost", arm_lost));
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
