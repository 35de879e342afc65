//! `nic`: the whole NIC: the host interface around the Ethernet core (`nic_core`).
//!
//! ```text
//!  BAR (AXI4-Lite) -> bar_regs (from the register map) --+-- DEV: loopback, time, health
//!                                                        +-- STATS (counters of every engine)
//!                                                        +-- MR  -> mr_table --(lookups)--+
//!                                                        +-- QCMD -> queue-command router |
//!                                                        +-- RSS -> nic_core cfg port     |
//!                                                        +-- UAR doorbells                |
//!   SQ doorbells -> sq_engine -(frame, offload request)-> nic_core (eth_tx) --> MAC / loopback
//!   MAC / loopback -> nic_core (eth_rx) -(frame, record)-> rq_engine                     |
//!   sq_engine, rq_engine -(completions)-> cq_engine -> CQEs, EQEs, irq                   |
//!   DMA: reads of sq_engine (tags 0..8) and rq_engine (tag 8) share m_dma_rd_req; writes of
//!        rq_engine (frames) and cq_engine (CQEs, EQEs) share m_dma_wr_req / m_dma_wr, a
//!        whole write at a time, so a CQE never overtakes its frame's data.
//! ```
//!
//! - Ports: `s_axil_*` (BAR 0, `crate::host`), `m_dma_rd_req_*`, `s_dma_rd_cpl_*`,
//!   `m_dma_wr_req_*`, `m_dma_wr_*`, `irq` (one bit per EQ), `m_axis_mac_tx_*`,
//!   `s_axis_mac_rx_*` (wire frames with FCS).
//! - Queue commands: writing QCMD.EXEC sets STATUS.busy and hands the command to the engine
//!   of its queue type; its answer clears busy and fills STATUS.status and OUT. An unknown
//!   queue type answers BAD_PARAM at once.
//! - Doorbells are mlx5's: SQ_DB's second dword carries `qpn_ds` (the SQN in bits 31:8 of the
//!   big-endian value), CQ_DB's first dword the arm word and its second the CQN, EQ_DB_* the
//!   big-endian `eqn << 24 | ci`.
//! - Latency and throughput: those of the engines and of `nic_core`; frames/s and
//!   doorbell-to-CQE latency through the driver loopback: results/HOST.md.
//! - Cost: the host interface and `nic_core`; no row in results/AREA.md.
//! - Golden model: `nicgen_model::tx` then `nicgen_model::rx` per frame, through the driver;
//!   test: `testbench/system/loopback.rs` (the real driver, `sw-driver`, in loopback).

use crate::host::bar_regs::{bar_regs, port_base, BarCfg, BuildInfo, HostParams};
use crate::host::cq_engine::{cq_engine, CqArm, CqCfg, EqDb};
use crate::host::mr_table::mr_table;
use crate::host::regmap;
use crate::host::regs::consts::{qcmd_status, qtype};
use crate::host::rq_engine::{rq_engine, RqCfg};
use crate::host::sq_engine::{sq_engine, SqCfg};
use crate::host::{DmaRdCplUser, DmaRdReq, QcmdReq, QcmdRes};
use crate::preset::Preset;
use crate::rss::rss_toeplitz::cfg_addr;
use crate::stats::stat_counter;
use crate::stream::{stream_in, stream_out, StreamCfg};
use crate::top::{nic_core, rx_cfg};
use nicgen_edsl::prelude::*;

/// Host-side parameters of a preset.
pub fn host_params(p: &Preset) -> HostParams {
    HostParams {
        queues: p.host.queues,
        eqs: p.host.eqs,
        mrs: p.host.mrs,
        log_max_wq: p.host.log_max_wq,
        caps: vec!["csum", "rss", "vlan", "loopback"],
    }
}

/// The whole NIC for preset `p`, its identification block stamped with `build`.
pub fn nic(p: &Preset, build: &BuildInfo) -> Result<Rc<ModuleDef>, ElabError> {
    let w = p.data_bits;
    let h = host_params(p);
    let rcfg = rx_cfg(p);
    let max_frame = rcfg.max_frame();
    let core = nic_core(p)?;
    let bar = bar_regs(&BarCfg::id(p, &h, build)?)?;
    let mrt = mr_table(h.mrs, 2)?;
    let cq = cq_engine(&CqCfg {
        data_bits: w,
        cqs: h.queues,
        eqs: h.eqs,
        log_max: h.log_max_wq,
    })?;
    let sq = sq_engine(&SqCfg {
        data_bits: w,
        sqs: h.queues,
        cqs: h.queues,
        mrs: h.mrs,
        max_frame,
        log_max: h.log_max_wq,
    })?;
    let rq = rq_engine(&RqCfg {
        data_bits: w,
        rqs: h.queues,
        queue_bits: rcfg.rss.queue_bits(),
        cqs: h.queues,
        mrs: h.mrs,
        max_frame,
        log_max: h.log_max_wq,
    })?;
    let table_size = p.rss.table_size;
    let scfg = StreamCfg::new(w, 0);
    Module::build("nic", move || {
        doc("nicgen NIC: host interface (BAR registers, queues, DMA, completions, events)");
        doc("around the Ethernet core.");
        let u_bar = instance(&bar, "u_bar");
        let u_core = instance(&core, "u_core");
        let u_mr = instance(&mrt, "u_mr_table");
        let u_cq = instance(&cq, "u_cq_engine");
        let u_sq = instance(&sq, "u_sq_engine");
        let u_rq = instance(&rq, "u_rq_engine");

        // ---- BAR pass-through ----
        for port in &bar.ports {
            let n = port.name.as_str();
            if n.starts_with("s_axil_") {
                match port.dir {
                    nicgen_edsl::Dir::Input => u_bar.set(n, input(n, port.width)),
                    nicgen_edsl::Dir::Output => output(n, u_bar.get(n)),
                }
            }
        }
        let reg_port = |kind: &str, path: &str, suffix: &str| {
            let (b, r) = regmap::find(path).expect("register in the map");
            format!("{kind}_{}{suffix}", port_base(b, r))
        };
        let ro = |path: &str, v: Sig| u_bar.set(&reg_port("ro", path, ""), v);
        let rw = |path: &str| u_bar.get(&reg_port("rw", path, ""));
        let wo = |path: &str, what: &str| u_bar.get(&reg_port("wo", path, &format!("_{what}")));

        // ---- Device: loopback, time, health ----
        let timer = reg_init(64, 0u32).named("timer");
        timer.set(timer + 1u32);
        let health = reg_init(32, 0u32).named("health");
        health.set_if(timer.slice(9, 0).eq(1023u32), health + 1u32);
        ro("dev.HEALTH", health);
        ro("dev.TIMER", timer);
        u_core.set("cfg_loopback", rw("dev.CTRL").unused().bit(0)); // bits 31:1 reserved
        ro("dev.STATUS", u_core.get("loopback_active").zext(32));
        let _ = rw("dev.SCRATCH").unused(); // read back only
                                            // Write pulses of the read-write registers: their values are used, not the pulses.
        for port in &bar.ports {
            if port.name.starts_with("rw_") && port.name.ends_with("_we") {
                u_bar.unused(&port.name);
            }
        }
        // ---- Memory regions ----
        let mr_base = rw("mr.BASE"); // element 0 low dword, element 1 high
        let mr_len = rw("mr.LEN");
        u_mr.set("wr_en", wo("mr.COMMIT", "we"));
        u_mr.set("wr_index", rw("mr.SEL").slice(7, 0));
        u_mr.set("wr_valid", wo("mr.COMMIT", "data").bit(0));
        u_mr.set("wr_base", mr_base);
        u_mr.set("wr_len", mr_len);
        let _ = rw("mr.SEL").unused();
        let _ = wo("mr.COMMIT", "data").unused();
        for (r, e) in [(0, &u_sq), (1, &u_rq)] {
            u_mr.set(&format!("rd{r}_lkey"), e.get("mr_lkey"));
            for f in ["valid", "base", "len"] {
                e.set(&format!("mr_{f}"), u_mr.get(&format!("rd{r}_{f}")));
            }
        }

        // ---- Queue commands: QCMD.EXEC -> the engine of the queue type ----
        let exec = wo("qcmd.EXEC", "we");
        let exec_word = wo("qcmd.EXEC", "data").unused(); // bits 15:8 reserved
        let ins = rw("qcmd.IN");
        let busy = reg_init(1, 0u32).named("qcmd_busy");
        let cmd = reg(QcmdReq::WIDTH).enable(exec & !busy).named("qcmd");
        cmd.set(
            QcmdReq {
                op: exec_word.slice(3, 0),
                qtype: exec_word.slice(7, 4),
                index: exec_word.slice(31, 16),
                in0: ins.slice(31, 0),
                in1: ins.slice(63, 32),
                in2: ins.slice(95, 64),
                in3: ins.slice(127, 96),
                in4: ins.slice(159, 128),
                in5: ins.slice(191, 160),
                in6: ins.slice(223, 192),
                in7: ins.slice(255, 224),
            }
            .pack(),
        );
        let q_type = QcmdReq::unpack(cmd).qtype;
        let offered = reg_init(1, 0u32).named("qcmd_offered");
        let engines: [(&Inst, Sig); 3] = [
            (&u_cq, q_type.le(qtype::CQ)),
            (&u_sq, q_type.eq(qtype::SQ)),
            (&u_rq, q_type.eq(qtype::RQ)),
        ];
        let unknown = !(q_type.le(qtype::RQ));
        let mut taken = lit(1, 0u32);
        let mut answered = lit(1, 0u32);
        let mut answer = lit(QcmdRes::WIDTH, 0u32);
        for (e, mine) in engines.iter() {
            e.set("s_qcmd_tdata", cmd);
            e.set("s_qcmd_tvalid", busy & offered & *mine);
            taken = taken | (*mine & e.get("s_qcmd_tready"));
            e.set("m_qcmd_res_tready", busy & *mine);
            let v = e.get("m_qcmd_res_tvalid") & *mine;
            answered = answered | v;
            answer = mux(v, e.get("m_qcmd_res_tdata"), answer);
        }
        let bad = QcmdRes {
            status: lit(8, qcmd_status::BAD_PARAM),
            ..QcmdRes::zeros()
        }
        .pack();
        let done = busy & (answered | unknown);
        offered.set(select(
            &[
                (exec & !busy, lit(1, 1u32)),
                (busy & offered & taken, lit(1, 0u32)),
            ],
            offered,
        ));
        busy.set(select(
            &[(exec & !busy, lit(1, 1u32)), (done, lit(1, 0u32))],
            busy,
        ));
        let result = reg(QcmdRes::WIDTH).enable(done).named("qcmd_result");
        result.set(mux(unknown, bad, answer));
        let res = QcmdRes::unpack(result);
        ro(
            "qcmd.STATUS",
            cat(&[lit(16, 0u32), res.status, lit(7, 0u32), busy]),
        );
        ro("qcmd.OUT", cat(&[res.out3, res.out2, res.out1, res.out0]));

        // ---- RSS window -> the core's config port ----
        let key_we = wo("rss.KEY", "we");
        let en_we = wo("rss.ENABLES", "we");
        let tab_we = wo("rss.TABLE", "we");
        let tab_i = wo("rss.TABLE", "index");
        let tab_ok = if table_size >= 2048 {
            lit(1, 1u32)
        } else {
            tab_i.lt(table_size as u64)
        };
        let a_bits = cfg_addr::BITS;
        u_core.set("cfg_we", key_we | en_we | (tab_we & tab_ok));
        u_core.set(
            "cfg_addr",
            select(
                &[
                    (
                        key_we,
                        lit(a_bits, cfg_addr::KEY as u64) + wo("rss.KEY", "index").zext(a_bits),
                    ),
                    (en_we, lit(a_bits, cfg_addr::ENABLES as u64)),
                ],
                lit(a_bits, cfg_addr::TABLE as u64) + tab_i.resize(a_bits),
            ),
        );
        u_core.set(
            "cfg_wdata",
            select(
                &[
                    (key_we, wo("rss.KEY", "data")),
                    (en_we, wo("rss.ENABLES", "data")),
                ],
                wo("rss.TABLE", "data"),
            ),
        );

        // ---- Doorbells (payloads are big-endian descriptor bytes) ----
        let bswap = |x: Sig| {
            cat(&[
                x.slice(7, 0),
                x.slice(15, 8),
                x.slice(23, 16),
                x.slice(31, 24),
            ])
        };
        let sq_db = wo("uar.SQ_DB", "we") & wo("uar.SQ_DB", "index").eq(1u32);
        let qpn_ds = bswap(wo("uar.SQ_DB", "data"));
        u_sq.set("s_db_tdata", qpn_ds.slice(23, 8));
        u_sq.set("s_db_tvalid", sq_db);
        let _ = qpn_ds.unused();
        let cq_db = wo("uar.CQ_DB", "we");
        let cq_first = wo("uar.CQ_DB", "index").eq(0u32);
        let arm_word = reg(32).enable(cq_db & cq_first).named("cq_arm_word");
        arm_word.set(bswap(wo("uar.CQ_DB", "data")));
        let cqn_word = bswap(wo("uar.CQ_DB", "data"));
        u_cq.set(
            "s_arm_tdata",
            CqArm {
                cqn: cqn_word.slice(15, 0),
                ci: arm_word.slice(23, 0),
                sn: arm_word.slice(29, 28),
                cmd: arm_word.slice(25, 24),
            }
            .pack(),
        );
        u_cq.set("s_arm_tvalid", cq_db & !cq_first);
        let _ = arm_word.unused();
        let _ = cqn_word.unused();
        let eq_arm = wo("uar.EQ_DB_ARM", "we");
        let eq_noarm = wo("uar.EQ_DB_NOARM", "we");
        let eq_word = bswap(mux(
            eq_arm,
            wo("uar.EQ_DB_ARM", "data"),
            wo("uar.EQ_DB_NOARM", "data"),
        ));
        u_cq.set(
            "eq_db_tdata",
            EqDb {
                eqn: eq_word.slice(31, 24),
                ci: eq_word.slice(23, 0),
                arm: eq_arm,
            }
            .pack(),
        );
        u_cq.set("eq_db_tvalid", eq_arm | eq_noarm);
        u_cq.set("timer", timer);

        // ---- Data path: SQ -> TX path, RX path -> RQ, MAC side out ----
        u_core.connect_in("s_axis_tx", &u_sq.bundle_out("m_axis_tx", &scfg.spec()));
        u_core.set("s_axis_tx_cmd_tdata", u_sq.get("m_axis_tx_cmd_tdata"));
        u_core.set("s_axis_tx_cmd_tvalid", u_sq.get("m_axis_tx_cmd_tvalid"));
        u_sq.set("m_axis_tx_cmd_tready", u_core.get("s_axis_tx_cmd_tready"));
        u_rq.connect_in("s_axis_rx", &u_core.bundle_out("m_axis_rx", &scfg.spec()));
        u_rq.set("s_axis_rx_meta_tdata", u_core.get("m_axis_rx_meta_tdata"));
        u_rq.set("s_axis_rx_meta_tvalid", u_core.get("m_axis_rx_meta_tvalid"));
        u_core.set("m_axis_rx_meta_tready", u_rq.get("s_axis_rx_meta_tready"));
        connect_bundles(
            &stream_out("m_axis_mac_tx", &scfg).0,
            &u_core.bundle_out("m_axis_mac_tx", &scfg.spec()),
        );
        u_core.connect_in("s_axis_mac_rx", &stream_in("s_axis_mac_rx", &scfg).0);

        // ---- Completions: SQ and RQ into the CQ engine, alternating ----
        let sq_c = u_sq.get("m_cmpl_tvalid");
        let rq_c = u_rq.get("m_cmpl_tvalid");
        let prefer_rq = reg_init(1, 0u32).named("cmpl_prefer_rq");
        let pick_rq = (rq_c & (prefer_rq | !sq_c)).named("cmpl_pick_rq");
        let c_ready = u_cq.get("s_cmpl_tready");
        u_cq.set(
            "s_cmpl_tdata",
            mux(pick_rq, u_rq.get("m_cmpl_tdata"), u_sq.get("m_cmpl_tdata")),
        );
        u_cq.set("s_cmpl_tvalid", sq_c | rq_c);
        u_sq.set("m_cmpl_tready", c_ready & !pick_rq);
        u_rq.set("m_cmpl_tready", c_ready & pick_rq);
        prefer_rq.set_if(c_ready & (sq_c | rq_c), !pick_rq);

        // ---- DMA reads: SQ tags 0..8, RQ tag 8; a granted request holds (rule 1) ----
        let rd_ready = input("m_dma_rd_req_tready", 1);
        let sq_r = u_sq.get("m_dma_rd_req_tvalid");
        let rq_r = u_rq.get("m_dma_rd_req_tvalid");
        let rd_hold = reg_init(1, 0u32).named("rd_req_holding");
        let rd_held_rq = reg(1).named("rd_req_held_rq");
        let rd_prefer_rq = reg_init(1, 0u32).named("rd_prefer_rq");
        let rd_pick_rq =
            mux(rd_hold, rd_held_rq, rq_r & (rd_prefer_rq | !sq_r)).named("rd_pick_rq");
        // The receive engine's own tag is replaced by the one its answers are routed on.
        let rq_req = DmaRdReq::unpack(u_rq.get("m_dma_rd_req_tdata").unused());
        let rq_req_tagged = DmaRdReq {
            tag: lit(8, 8u32),
            ..rq_req
        }
        .pack();
        let rd_valid = sq_r | rq_r;
        output(
            "m_dma_rd_req_tdata",
            mux(rd_pick_rq, rq_req_tagged, u_sq.get("m_dma_rd_req_tdata")),
        );
        output("m_dma_rd_req_tvalid", rd_valid);
        u_sq.set("m_dma_rd_req_tready", rd_ready & !rd_pick_rq);
        u_rq.set("m_dma_rd_req_tready", rd_ready & rd_pick_rq);
        rd_hold.set(rd_valid & !rd_ready);
        rd_held_rq.set(rd_pick_rq);
        rd_prefer_rq.set_if(rd_valid & rd_ready, !rd_pick_rq);
        let cpl = stream_in("s_dma_rd_cpl", &StreamCfg::new(w, DmaRdCplUser::WIDTH));
        let cu = DmaRdCplUser::unpack(cpl.user().expect("tuser"));
        let to_rq = cu.tag.eq(8u32).named("cpl_to_rq");
        for (e, mine) in [(&u_sq, !to_rq), (&u_rq, to_rq)] {
            e.set("s_dma_rd_cpl_tdata", cpl.data());
            e.set("s_dma_rd_cpl_tkeep", cpl.keep());
            e.set("s_dma_rd_cpl_tlast", cpl.last());
            e.set("s_dma_rd_cpl_tuser", cpl.user().expect("tuser"));
            e.set("s_dma_rd_cpl_tvalid", cpl.valid() & mine);
        }
        cpl.ready().set(mux(
            to_rq,
            u_rq.get("s_dma_rd_cpl_tready"),
            u_sq.get("s_dma_rd_cpl_tready"),
        ));
        let rd_err = cpl.valid() & cpl.ready() & cpl.last() & cu.err;

        // ---- DMA writes: a whole write (request, then its data) at a time ----
        let wr = stream_out("m_dma_wr", &scfg);
        let wr_req_ready = input("m_dma_wr_req_tready", 1);
        let rq_w = u_rq.get("m_dma_wr_req_tvalid");
        let cq_w = u_cq.get("m_dma_wr_req_tvalid");
        // Grant: 0 none, 1 RQ, 2 CQ; chosen before the request is offered (so it holds) and
        // kept until the data's last beat.
        let grant = reg_init(2, 0u32).named("wr_grant");
        let in_data = reg_init(1, 0u32).named("wr_in_data");
        let (g_rq, g_cq) = (grant.eq(1u32), grant.eq(2u32));
        let src = |f: &str| {
            mux(
                g_cq,
                u_cq.get(&format!("m_dma_wr_{f}")),
                u_rq.get(&format!("m_dma_wr_{f}")),
            )
        };
        let req_valid = (!in_data & ((g_rq & rq_w) | (g_cq & cq_w))).named("wr_req_valid");
        output("m_dma_wr_req_tdata", src("req_tdata"));
        output("m_dma_wr_req_tvalid", req_valid);
        u_rq.set("m_dma_wr_req_tready", !in_data & g_rq & wr_req_ready);
        u_cq.set("m_dma_wr_req_tready", !in_data & g_cq & wr_req_ready);
        let req_go = req_valid & wr_req_ready;
        wr.data().set(src("tdata"));
        wr.keep().set(src("tkeep"));
        wr.last().set(src("tlast"));
        wr.valid().set(in_data & src("tvalid"));
        u_rq.set("m_dma_wr_tready", in_data & g_rq & wr.ready());
        u_cq.set("m_dma_wr_tready", in_data & g_cq & wr.ready());
        let data_end = in_data & wr.valid() & wr.ready() & wr.last();
        grant.set(select(
            &[
                (grant.eq(0u32) & rq_w, lit(2, 1u32)),
                (grant.eq(0u32) & cq_w, lit(2, 2u32)),
                (data_end, lit(2, 0u32)),
            ],
            grant,
        ));
        in_data.set(select(
            &[(req_go, lit(1, 1u32)), (data_end, lit(1, 0u32))],
            in_data,
        ));

        output("irq", u_cq.get("irq"));

        // ---- Counters ----
        let core_stat = |n: &str| u_core.get(&format!("stat_{n}"));
        for (path, stat) in [
            ("stats.RX_FRAMES", "rx_frames_in"),
            ("stats.RX_DELIVERED", "rx_delivered"),
            ("stats.RX_DROP_RUNT", "rx_drop_runt"),
            ("stats.RX_DROP_OVERSIZE", "rx_drop_oversize"),
            ("stats.RX_DROP_FCS", "rx_drop_fcs"),
            ("stats.RX_DROP_MAC_CONTROL", "rx_drop_mac_control"),
            ("stats.RX_MALFORMED", "rx_malformed"),
            ("stats.RX_VLAN_STRIPPED", "rx_vlan_stripped"),
            ("stats.RX_L3_CSUM_BAD", "rx_l3_csum_bad"),
            ("stats.RX_L4_CSUM_BAD", "rx_l4_csum_bad"),
            ("stats.TX_FRAMES", "tx_frames"),
        ] {
            ro(path, core_stat(stat));
        }
        let rd_err_count = reg_init(64, 0u32).named("dma_rd_errors");
        rd_err_count.set_if(rd_err, rd_err_count + 1u32);
        ro("stats.DMA_RD_ERR", rd_err_count);
        ro("stats.RX_NO_WQE", u_rq.get("stat_no_wqe").zext(64));
        ro("stats.TX_WQES", u_sq.get("stat_wqes").zext(64));
        ro("stats.RX_CQES", u_rq.get("stat_cqes").zext(64));
        // Engine counters the map does not show (yet) stay internal.
        for (e, names) in [
            (&u_sq, &["db_bad", "wqe_errors", "frames"][..]),
            (&u_rq, &["frames", "no_queue", "errors"][..]),
            (
                &u_cq,
                &["cqe_written", "eqe_written", "cmpl_dropped", "arm_lost"][..],
            ),
        ] {
            for n in names {
                e.unused(&format!("stat_{n}"));
            }
        }
        stat_counter("qcmd_unknown", busy & unknown);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_for_every_preset() {
        for (name, _) in crate::preset::BUILTIN {
            let p = Preset::builtin(name).unwrap();
            if let Err(e) = nic(&p, &BuildInfo::unknown()) {
                panic!("{name}: {e}");
            }
        }
    }
}
