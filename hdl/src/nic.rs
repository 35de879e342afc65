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
//!   DMA: reads of sq_engine (tags 0..32) and rq_engine (tags 32..41) share m_dma_rd_req; writes of
//!        rq_engine (frames) and cq_engine (CQEs, EQEs) share m_dma_wr_req / m_dma_wr, a
//!        whole write at a time. A DMA port wider than the datapath (`host.dma_bits`): the
//!        answers narrowed (stream_narrow) at the port; the receive engine's write data
//!        widened (stream_widen) and held whole in a write buffer (frame-mode stream_fifo,
//!        block RAM), its requests in a queue, so that a write holds the port for its beats
//!        at the port's width only; its completions wait in a queue until their frames'
//!        writes are out, so a CQE never overtakes its frame's data. The CQ engine writes at
//!        the port's width (a CQE in 512 / dma_bits beats).
//! ```
//!
//! - Ports ([`NicPorts`]): `s_axil_*` (BAR 0, `crate::host`), `m_dma_rd_req_*`, `s_dma_rd_cpl_*`,
//!   `m_dma_wr_req_*`, `m_dma_wr_*`, `irq` (one bit per EQ), `m_axis_mac_tx_*`,
//!   `s_axis_mac_rx_*` (wire frames with FCS), `stat_qcmd_unknown`.
//! - Queue commands: writing QCMD.EXEC sets STATUS.busy and hands the command to the engine
//!   of its queue type; its answer clears busy and fills STATUS.status and OUT. An unknown
//!   queue type answers BAD_PARAM at once.
//! - Doorbells are mlx5's: SQ_DB's second dword carries `qpn_ds` (the SQN in bits 31:8 of the
//!   big-endian value), CQ_DB's first dword the arm word and its second the CQN, EQ_DB_* the
//!   big-endian `eqn << 24 | ci`. SQ_DB and SQ_BF (the BlueFlame window, 0x800-0x8FF) go to
//!   `sq_engine` dword by dword as written; it decodes the doorbell and takes BlueFlame WQEs.
//! - Latency and throughput: those of the engines and of `nic_core`; frames/s and
//!   doorbell-to-CQE latency through the driver loopback: results/HOST.md.
//! - Cost: the host interface and `nic_core`; with a port wider than the datapath, the write
//!   buffer (the longest frame at the port's width, rounded up to a power of two: 512 x 256
//!   bits on nic64), the 8-entry request queue and the 16-entry completion queue in LUT RAM;
//!   no row in results/AREA.md.
//! - Golden model: `nicgen_model::tx` then `nicgen_model::rx` per frame, through the driver;
//!   test: `testbench/system/loopback.rs` (the real driver, `sw-driver`, in loopback).

use crate::host::bar_regs::{bar_regs, BarCfg, BarPorts, BuildInfo, HostParams};
use crate::host::cq_engine::{cq_engine, Cmpl, CqArm, CqCfg, CqPorts, EqDb};
use crate::host::mr_table::{mr_table, MrTablePorts, MrWrite};
use crate::host::regs::consts::{qcmd_status, qtype};
use crate::host::regs::{dev, encap, mr, qcmd, rss, stats, tunnel, uar};
use crate::host::rq_engine::{rq_engine, RqCfg, RqPorts, RQ_DMA_TAGS, RQ_TAG_BITS};
use crate::host::sq_engine::{sq_engine_encap, SqCfg, SqDb, SqPorts, LSO_MAX, TAGS as SQ_TAGS};
use crate::host::{Axil, DmaRdCplUser, DmaRdReq, DmaWrReq, QcmdReq, QcmdRes};
use crate::overlay::rx_decap::cfg_addr as tun_addr;
use crate::preset::Preset;
use crate::rss::rss_toeplitz::cfg_addr;
use crate::stats::event_counter;
use crate::stream::{
    record_fifo, stream_fifo_in, stream_narrow, stream_widen, Beat, FifoCfg, FifoRam,
    RecordFifoPorts, Stream, StreamCfg, WidthCfg,
};
use crate::top::{nic_core, rx_cfg, NicCorePorts};
use nicgen_edsl::prelude::*;
use nicgen_edsl::record::Word;

/// Host-side parameters of a preset.
pub fn host_params(p: &Preset) -> HostParams {
    HostParams {
        queues: p.host.queues,
        eqs: p.host.eqs,
        mrs: p.host.mrs,
        log_max_wq: p.host.log_max_wq,
        caps: {
            let mut c = vec!["csum", "rss", "vlan", "loopback"];
            let o = &p.overlay;
            for (on, cap) in [
                (o.steer_entries > 0, "tunnels"),
                (o.encap_contexts > 0, "encap"),
                (o.max_mss > 0, "tso"),
            ] {
                if on {
                    c.push(cap);
                }
            }
            c
        },
    }
}

/// The ports of [`nic()`].
pub struct NicPorts {
    /// BAR 0 (`s_axil_*`).
    pub axil: Axil,
    /// DMA reads: requests (`m_dma_rd_req_*`) and their data (`s_dma_rd_cpl_*`, `tuser` =
    /// [`DmaRdCplUser`]).
    pub dma_rd_req: RecordStream<DmaRdReq<u32>>,
    pub dma_rd_cpl: Stream,
    /// DMA writes: requests (`m_dma_wr_req_*`), then their data (`m_dma_wr_*`).
    pub dma_wr_req: RecordStream<DmaWrReq<u32>>,
    pub dma_wr: Stream,
    /// One pulse per interrupt, a bit per EQ.
    pub irq: Sig,
    /// The wire, FCS included (`m_axis_mac_tx_*`, `s_axis_mac_rx_*`).
    pub mac_tx: Stream,
    pub mac_rx: Stream,
    /// Queue commands of an unknown queue type (`stat_qcmd_unknown`).
    pub qcmd_unknown: Sig,
}

impl Ports for NicPorts {
    type Cfg = Preset;
    fn ports(io: &Io, p: &Preset) -> Self {
        let w = p.data_bits;
        let s = StreamCfg::new(w, 0);
        let d = p.dma_bits();
        NicPorts {
            axil: Axil::sink(io, "s_axil"),
            dma_rd_req: RecordStream::source(io, "m_dma_rd_req", DmaRdReq::shape()),
            dma_rd_cpl: Stream::sink(io, "s_dma_rd_cpl", &StreamCfg::new(d, DmaRdCplUser::WIDTH)),
            dma_wr_req: RecordStream::source(io, "m_dma_wr_req", DmaWrReq::shape()),
            dma_wr: Stream::source(io, "m_dma_wr", &StreamCfg::new(d, 0)),
            irq: io.output("irq", p.host.eqs),
            mac_tx: Stream::source(io, "m_axis_mac_tx", &s),
            mac_rx: Stream::sink(io, "s_axis_mac_rx", &s),
            qcmd_unknown: io.output("stat_qcmd_unknown", 32),
        }
    }
}

/// The instances inside [`nic()`], for the stage functions that wire them.
struct Parts {
    bar: BarPorts,
    core: NicCorePorts,
    mr: MrTablePorts,
    cq: CqPorts,
    sq: SqPorts,
    rq: RqPorts,
}

/// log2 of the largest LSO send (`ID.OVERLAY.log_max_lso`): [`LSO_MAX`] with the TSO
/// engine (the send engine gathers a longer send in pieces), 0 without.
pub fn log_max_lso(p: &Preset) -> u32 {
    if p.overlay.max_mss > 0 {
        LSO_MAX.trailing_zeros()
    } else {
        0
    }
}

/// The whole NIC for preset `p`, its identification block stamped with `build`.
pub fn nic(p: &Preset, build: &BuildInfo) -> Result<Block<NicPorts>, ElabError> {
    let w = p.data_bits;
    let h = host_params(p);
    let rcfg = rx_cfg(p);
    let max_frame = rcfg.max_frame();
    let core = nic_core(p)?;
    let bar = bar_regs(&BarCfg::id(p, &h, build)?)?;
    let mrt = mr_table(h.mrs, 2)?;
    // The CQ engine writes at the DMA port's width: a CQE or EQE is 512 / dma_bits beats.
    let cq = cq_engine(&CqCfg {
        data_bits: p.dma_bits(),
        cqs: h.queues,
        eqs: h.eqs,
        log_max: h.log_max_wq,
    })?;
    let sq = sq_engine_encap(
        &SqCfg {
            data_bits: w,
            sqs: h.queues,
            cqs: h.queues,
            mrs: h.mrs,
            max_frame,
            max_lso: match log_max_lso(p) {
                0 => 0,
                l => 1 << l,
            },
            log_max: h.log_max_wq,
        },
        p.overlay.encap_contexts,
    )?;
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
    // A DMA port wider than the datapath: its read answers narrowed and its write data widened
    // at the port, every byte at its place (`off` kept).
    let dma = p.dma_bits();
    let converters = if dma > w {
        Some((
            stream_narrow(&WidthCfg {
                in_bits: dma,
                out_bits: w,
                user_bits: DmaRdCplUser::WIDTH,
            })?,
            stream_widen(&WidthCfg {
                in_bits: w,
                out_bits: dma,
                user_bits: 0,
            })?,
            stream_fifo_in(
                &FifoCfg::new(StreamCfg::new(dma, 1), write_buffer_beats(max_frame, dma)).frames(),
                FifoRam::Block,
            )?,
            record_fifo(DmaWrReq::shape(), WRITE_QUEUE)?,
            record_fifo(Word::shape(Cmpl::WIDTH + COUNT_BITS), CMPL_QUEUE)?,
        ))
    } else {
        None
    };
    Block::build("nic", p.clone(), move |p: NicPorts| {
        doc("nicgen NIC: host interface (BAR registers, queues, DMA, completions, events)");
        doc("around the Ethernet core.");
        let u = Parts {
            bar: bar.instance("u_bar"),
            core: core.instance("u_core"),
            mr: mrt.instance("u_mr_table"),
            cq: cq.instance("u_cq_engine"),
            sq: sq.instance("u_sq_engine"),
            rq: rq.instance("u_rq_engine"),
        };
        connect(&p.axil, &u.bar.axil);
        let timer = device(&u);
        memory_regions(&u);
        let unknown = queue_commands(&u);
        p.qcmd_unknown.set(event_counter("qcmd_unknown", unknown));
        rss_window(&u, table_size);
        doorbells(&u, timer);

        // ---- Data path: SQ -> TX path, RX path -> RQ, MAC side out ----
        connect(&u.sq.tx, &u.core.tx);
        connect(&u.sq.tx_cmd, &u.core.tx_cmd);
        connect(&u.core.rx, &u.rq.rx);
        connect(&u.core.rx_meta, &u.rq.rx_meta);
        connect(&u.core.mac_tx, &p.mac_tx);
        connect(&p.mac_rx, &u.core.mac_rx);

        let conv = converters
            .as_ref()
            .map(|(narrow, widen, buffer, queue, cmpl_q)| {
                let u_rd = narrow.instance("u_dma_rd_narrow");
                connect(&p.dma_rd_cpl, &u_rd.s_axis);
                let u_wr = widen.instance("u_dma_wr_widen");
                connect(&u.rq.dma_wr, &u_wr.s_axis);
                // The widened writes wait whole in the buffer, their requests in the queue.
                let u_buf = buffer.instance("u_dma_wr_buffer");
                u_buf.s_axis.set_beat(&Beat {
                    user: lit(1, 0u32),
                    ..u_wr.m_axis.beat()
                });
                u_buf.s_axis.valid().set(u_wr.m_axis.valid());
                u_wr.m_axis.ready().set(u_buf.s_axis.ready());
                if let Some(d) = &u_buf.drops {
                    // Never high: the buffer holds the longest write (`write_buffer_beats`).
                    d.drop_bad.unused();
                    d.drop_oversize.unused();
                }
                let u_q = queue.instance("u_dma_wr_queue");
                connect(&u.rq.dma_wr_req, &u_q.s_axis);
                (u_rd, u_buf, u_q, cmpl_q.instance("u_rq_cmpl_queue"))
            });
        // The engines' side of the port: the read answers narrowed, the receive engine's
        // writes widened and buffered whole (the CQ engine's are at the port's width
        // already); or the port.
        let (cpl, rq_wr) = match &conv {
            Some((u_rd, u_buf, u_q, _)) => (
                &u_rd.m_axis,
                RqWrites {
                    req: &u_q.m_axis,
                    data: &u_buf.m_axis,
                    whole: true,
                },
            ),
            None => (
                &p.dma_rd_cpl,
                RqWrites {
                    req: &u.rq.dma_wr_req,
                    data: &u.rq.dma_wr,
                    whole: false,
                },
            ),
        };
        let rq_left = dma_writes(&u, rq_wr, &p.dma_wr_req, &p.dma_wr);
        let rq_cmpl = match &conv {
            Some((_, _, _, u_cq)) => held_completions(&u, rq_left, u_cq),
            None => CmplSource {
                valid: u.rq.cmpl.valid,
                data: u.rq.cmpl.data,
                ready: u.rq.cmpl.ready,
            },
        };
        completions(&u, &rq_cmpl);
        let rd_err = dma_reads(&u, &p.dma_rd_req, cpl);
        p.irq.set(u.cq.irq);
        counters(&u, rd_err);
    })
}

/// The device block: free-running timer, health counter, loopback control. Returns the timer.
fn device(u: &Parts) -> Sig {
    let timer = reg_init(64, 0u32).named("timer");
    timer.set(timer + 1u32);
    let health = reg_init(32, 0u32).named("health");
    health.set_if(timer.slice(9, 0).eq(1023u32), health + 1u32);
    u.bar.ro(dev::HEALTH).set(health);
    u.bar.ro(dev::TIMER).set(timer);
    u.core
        .loopback
        .set(u.bar.rw(dev::CTRL).value.unused().bit(0)); // bits 31:1 reserved
    u.bar.ro(dev::STATUS).set(u.core.loopback_active.zext(32));
    let _ = u.bar.rw(dev::SCRATCH).value.unused(); // read back only
                                                   // Write pulses of the read-write registers: their values are used, not the pulses.
    for (_, port) in u.bar.regs() {
        if let crate::host::bar_regs::RegPort::Rw(rw) = port {
            let _ = rw.we.unused();
        }
    }
    timer
}

/// MR.SEL, BASE, LEN and COMMIT write the memory-region table; the send and receive engines
/// look it up (readers 0 and 1).
fn memory_regions(u: &Parts) {
    let sel = u.bar.rw(mr::SEL).value;
    let commit = u.bar.wo(mr::COMMIT);
    connect(
        &MrWrite {
            en: commit.we,
            index: sel.slice(7, 0),
            valid: commit.data.bit(0),
            base: u.bar.rw(mr::BASE).value, // element 0 low dword, element 1 high
            len: u.bar.rw(mr::LEN).value,
        },
        &u.mr.wr,
    );
    let _ = sel.unused();
    let _ = commit.data.unused();
    for (reader, engine) in u.mr.rd.iter().zip([&u.sq.mr, &u.rq.mr]) {
        reader.0.set(engine.lkey);
        connect(&reader.1, &engine.entry);
    }
}

/// QCMD.EXEC hands the command to the engine of its queue type; its answer clears busy and
/// fills STATUS and OUT. Returns the pulse of a command of an unknown queue type.
fn queue_commands(u: &Parts) -> Sig {
    let exec = u.bar.wo(qcmd::EXEC);
    let exec_word = exec.data.unused(); // bits 15:8 reserved
    let ins = u.bar.rw(qcmd::IN).value;
    let busy = reg_init(1, 0u32).named("qcmd_busy");
    let cmd = reg(QcmdReq::WIDTH).enable(exec.we & !busy).named("qcmd");
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
    let engines = [
        (&u.cq.qcmd, &u.cq.qcmd_res, q_type.le(qtype::CQ)),
        (&u.sq.qcmd, &u.sq.qcmd_res, q_type.eq(qtype::SQ)),
        (&u.rq.qcmd, &u.rq.qcmd_res, q_type.eq(qtype::RQ)),
    ];
    let unknown = !(q_type.le(qtype::RQ));
    let mut taken = lit(1, 0u32);
    let mut answered = lit(1, 0u32);
    let mut answer = lit(QcmdRes::WIDTH, 0u32);
    for (req, res, mine) in engines {
        req.data.set(cmd);
        req.valid.set(busy & offered & mine);
        taken = taken | (mine & req.ready);
        res.ready.set(busy & mine);
        let v = res.valid & mine;
        answered = answered | v;
        answer = mux(v, res.data, answer);
    }
    let bad = QcmdRes {
        status: lit(8, qcmd_status::BAD_PARAM),
        ..QcmdRes::zeros()
    }
    .pack();
    let done = busy & (answered | unknown);
    offered.set(select(
        &[
            (exec.we & !busy, lit(1, 1u32)),
            (busy & offered & taken, lit(1, 0u32)),
        ],
        offered,
    ));
    busy.set(select(
        &[(exec.we & !busy, lit(1, 1u32)), (done, lit(1, 0u32))],
        busy,
    ));
    let result = reg(QcmdRes::WIDTH).enable(done).named("qcmd_result");
    result.set(mux(unknown, bad, answer));
    let res = QcmdRes::unpack(result);
    u.bar
        .ro(qcmd::STATUS)
        .set(cat(&[lit(16, 0u32), res.status, lit(7, 0u32), busy]));
    u.bar
        .ro(qcmd::OUT)
        .set(cat(&[res.out3, res.out2, res.out1, res.out0]));
    busy & unknown
}

/// The RSS, tunnel and encapsulation windows (KEY, ENABLES, TABLE; VXLAN_PORT, CTL,
/// STEER_QUEUE, STEER; CTX) onto the core's configuration port; table writes past the preset's
/// table are dropped (the steering table ignores entries past its own size, the core context
/// words past its contexts).
fn rss_window(u: &Parts, table_size: u32) {
    let key = u.bar.wo(rss::KEY);
    let en = u.bar.wo(rss::ENABLES);
    let tab = u.bar.wo(rss::TABLE);
    let port = u.bar.wo(tunnel::VXLAN_PORT);
    let ctl = u.bar.wo(tunnel::CTL);
    let squeue = u.bar.wo(tunnel::STEER_QUEUE);
    let steer = u.bar.wo(tunnel::STEER);
    let ctx = u.bar.wo(encap::CTX);
    let ctx_i = ctx.index.expect("CTX is an array");
    let steer_i = steer.index.expect("STEER is an array");
    let tab_i = tab.index.expect("TABLE is an array");
    let tab_ok = if table_size >= 2048 {
        lit(1, 1u32)
    } else {
        tab_i.lt(table_size as u64)
    };
    let a_bits = cfg_addr::BITS;
    let key_i = key.index.expect("KEY is an array");
    u.core
        .cfg
        .we
        .set(key.we | en.we | (tab.we & tab_ok) | port.we | ctl.we | squeue.we | steer.we | ctx.we);
    let at = |a: u32| lit(a_bits, a as u64);
    u.core.cfg.addr.set(select(
        &[
            (key.we, at(cfg_addr::KEY) + key_i.zext(a_bits)),
            (en.we, at(cfg_addr::ENABLES)),
            (tab.we, at(cfg_addr::TABLE) + tab_i.resize(a_bits)),
            (port.we, at(tun_addr::VXLAN_PORT)),
            (ctl.we, at(tun_addr::TUNNEL_CTL)),
            (squeue.we, at(tun_addr::STEER_QUEUE)),
            (ctx.we, at(crate::top::ENCAP_CTX) + ctx_i.resize(a_bits)),
        ],
        at(tun_addr::STEER) + steer_i.resize(a_bits),
    ));
    u.core.cfg.wdata.set(select(
        &[
            (key.we, key.data),
            (en.we, en.data),
            (tab.we, tab.data),
            (port.we, port.data),
            (ctl.we, ctl.data),
            (squeue.we, squeue.data),
            (ctx.we, ctx.data),
        ],
        steer.data,
    ));
}

/// The mlx5 doorbells (payloads are big-endian descriptor bytes): SQ_DB and SQ_BF go to the send
/// engine as written (SQ_DB's second dword, `qpn_ds`, is the doorbell), CQ_DB's first dword the arm word and its second the CQN, EQ_DB_* `eqn << 24 | ci`.
fn doorbells(u: &Parts, timer: Sig) {
    let bswap = |x: Sig| {
        cat(&[
            x.slice(7, 0),
            x.slice(15, 8),
            x.slice(23, 16),
            x.slice(31, 24),
        ])
    };
    // SQ_DB then SQ_BF: the 256-byte doorbell / BlueFlame window, dword by dword, as written.
    let sq_db = u.bar.wo(uar::SQ_DB);
    let sq_bf = u.bar.wo(uar::SQ_BF);
    let db_i = sq_db.index.expect("SQ_DB has two dwords").zext(6);
    let bf_i = sq_bf.index.expect("SQ_BF is an array").zext(6) + 2u32;
    u.sq.db.set_fields(&SqDb {
        index: mux(sq_db.we, db_i, bf_i),
        data: mux(sq_db.we, sq_db.data, sq_bf.data),
    });
    u.sq.db.valid.set(sq_db.we | sq_bf.we);
    let cq_db = u.bar.wo(uar::CQ_DB);
    let cq_first = cq_db.index.expect("CQ_DB has two dwords").eq(0u32);
    let arm_word = reg(32).enable(cq_db.we & cq_first).named("cq_arm_word");
    arm_word.set(bswap(cq_db.data));
    let cqn_word = bswap(cq_db.data);
    u.cq.arm.set_fields(&CqArm {
        cqn: cqn_word.slice(15, 0),
        ci: arm_word.slice(23, 0),
        sn: arm_word.slice(29, 28),
        cmd: arm_word.slice(25, 24),
    });
    u.cq.arm.valid.set(cq_db.we & !cq_first);
    let _ = arm_word.unused();
    let _ = cqn_word.unused();
    let eq_arm = u.bar.wo(uar::EQ_DB_ARM);
    let eq_noarm = u.bar.wo(uar::EQ_DB_NOARM);
    let eq_word = bswap(mux(eq_arm.we, eq_arm.data, eq_noarm.data));
    u.cq.eq_db.set_fields(&EqDb {
        eqn: eq_word.slice(31, 24),
        ci: eq_word.slice(23, 0),
        arm: eq_arm.we,
    });
    u.cq.eq_db.valid.set(eq_arm.we | eq_noarm.we);
    u.cq.timer.set(timer);
}

/// Receive completions as the merge into the CQ engine sees them.
struct CmplSource {
    valid: Sig,
    data: Sig,
    /// Driven by the merge.
    ready: Sig,
}

/// Bits of the write counters behind the buffered writes (modulo 2^COUNT_BITS: far more than
/// the writes that can be between asked and gone, so that half the range tells ahead from
/// behind).
const COUNT_BITS: u32 = 6;
/// Receive completions held until their frames' writes are out.
const CMPL_QUEUE: u32 = 16;

/// The receive engine's completions behind the write buffer: each waits in a queue with the
/// count of writes the engine had asked for when it came (its frame's among them: the engine
/// completes a frame after its writes), and goes to the merge once as many writes have left
/// through the port (`left`: a pulse per receive write's last beat out). So a CQE never
/// overtakes its frame's data, while the engine goes on with the next frames.
fn held_completions(u: &Parts, left: Sig, q: &RecordFifoPorts<Word<u32>>) -> CmplSource {
    let rq = &u.rq;
    let asked = rq.dma_wr_req.valid & rq.dma_wr_req.ready;
    let asked_n = reg_init(COUNT_BITS, 0u32).named("rq_writes_asked");
    asked_n.set_if(asked, asked_n + 1u32);
    let left_n = reg_init(COUNT_BITS, 0u32).named("rq_writes_left");
    left_n.set_if(left, left_n + 1u32);
    q.s_axis.data.set(cat(&[asked_n, rq.cmpl.data]));
    q.s_axis.valid.set(rq.cmpl.valid);
    rq.cmpl.ready.set(q.s_axis.ready);
    let head = q.m_axis.data;
    let mark = head.slice(Cmpl::WIDTH + COUNT_BITS - 1, Cmpl::WIDTH);
    // Out when left - mark (mod 2^COUNT_BITS) is in the lower half: left has reached mark.
    let out = (!(left_n - mark).bit(COUNT_BITS - 1)).named("rq_cmpl_written");
    CmplSource {
        valid: (q.m_axis.valid & out).named("rq_cmpl_valid"),
        data: head.slice(Cmpl::WIDTH - 1, 0),
        ready: q.m_axis.ready,
    }
}

/// Completions of the send and receive engines into the CQ engine, alternating under load.
fn completions(u: &Parts, rq: &CmplSource) {
    let (sq, cq, rq_valid) = (&u.sq.cmpl, &u.cq.cmpl, rq.valid);
    let prefer_rq = reg_init(1, 0u32).named("cmpl_prefer_rq");
    let pick_rq = (rq_valid & (prefer_rq | !sq.valid)).named("cmpl_pick_rq");
    cq.data.set(mux(pick_rq, rq.data, sq.data));
    cq.valid.set(sq.valid | rq_valid);
    sq.ready.set(cq.ready & !pick_rq);
    rq.ready.set(cq.ready & pick_rq);
    prefer_rq.set_if(cq.ready & (sq.valid | rq_valid), !pick_rq);
}

/// The receive engine's first DMA read tag: the first multiple of `2^RQ_TAG_BITS` (the
/// receive engine reads its answers' tags modulo that) at or above the send engine's tags.
const RQ_TAG_BASE: u32 = SQ_TAGS.next_multiple_of(1 << RQ_TAG_BITS);
const _: () = assert!(
    RQ_TAG_BASE >= SQ_TAGS
        && RQ_TAG_BASE.is_multiple_of(1 << RQ_TAG_BITS)
        && RQ_TAG_BASE + RQ_DMA_TAGS <= 256
);

/// DMA reads: the send engine's tags 0..SQ_TAGS and the receive engine's tags RQ_TAG_BASE..
/// RQ_TAG_BASE + RQ_DMA_TAGS (its own tags moved up by [`RQ_TAG_BASE`]) share the request port
/// `out` (a granted request holds, rule 1); the answers (`cpl`, at the datapath's width) go
/// back by tag. Returns the pulse of an answer with an error.
fn dma_reads(u: &Parts, out: &RecordStream<DmaRdReq<u32>>, cpl: &Stream) -> Sig {
    let (sq, rq) = (&u.sq.dma_rd_req, &u.rq.dma_rd_req);
    let rd_hold = reg_init(1, 0u32).named("rd_req_holding");
    let rd_held_rq = reg(1).named("rd_req_held_rq");
    let rd_prefer_rq = reg_init(1, 0u32).named("rd_prefer_rq");
    let rd_pick_rq =
        mux(rd_hold, rd_held_rq, rq.valid & (rd_prefer_rq | !sq.valid)).named("rd_pick_rq");
    // The receive engine's own tags are moved to the range its answers are routed on.
    let rq_req = DmaRdReq::unpack(rq.data);
    let rq_req_tagged = DmaRdReq {
        tag: rq_req.tag | lit(8, RQ_TAG_BASE),
        ..rq_req
    }
    .pack();
    let rd_valid = sq.valid | rq.valid;
    out.data.set(mux(rd_pick_rq, rq_req_tagged, sq.data));
    out.valid.set(rd_valid);
    sq.ready.set(out.ready & !rd_pick_rq);
    rq.ready.set(out.ready & rd_pick_rq);
    rd_hold.set(rd_valid & !out.ready);
    rd_held_rq.set(rd_pick_rq);
    rd_prefer_rq.set_if(rd_valid & out.ready, !rd_pick_rq);

    let cu = DmaRdCplUser::unpack(cpl.user().expect("tuser"));
    let to_rq = (cu.tag.ge(RQ_TAG_BASE) & cu.tag.lt(RQ_TAG_BASE + RQ_DMA_TAGS)).named("cpl_to_rq");
    for (e, mine) in [(&u.sq.dma_rd_cpl, !to_rq), (&u.rq.dma_rd_cpl, to_rq)] {
        e.set_beat(&cpl.beat());
        e.valid().set(cpl.valid() & mine);
    }
    cpl.ready()
        .set(mux(to_rq, u.rq.dma_rd_cpl.ready(), u.sq.dma_rd_cpl.ready()));
    cpl.valid() & cpl.ready() & cpl.last() & cu.err
}

/// Requests of the receive engine's writes in the queue in front of the port.
const WRITE_QUEUE: u32 = 8;

/// Beats of the write buffer: a power of two that holds the longest write of the receive
/// engine (a whole frame, starting anywhere in a beat of the port), so that a write never
/// waits for room the buffer cannot make.
fn write_buffer_beats(max_frame: u32, dma_bits: u32) -> u32 {
    let bytes = dma_bits / 8;
    (max_frame + bytes - 1).div_ceil(bytes).next_power_of_two()
}

/// The receive engine's writes as the port arbiter sees them: its requests and their data,
/// straight from the engine (the port is the datapath's width, the data comes a beat a cycle
/// once the request is granted), or `whole`: widened to a wider port and held whole in a
/// frame-mode FIFO, the requests in a queue, so that a write is granted once all its data is
/// in the buffer and holds the port for its beats only.
struct RqWrites<'a> {
    req: &'a RecordStream<DmaWrReq<u32>>,
    data: &'a Stream,
    whole: bool,
}

/// DMA writes of the receive engine (frames, `rq`) and the CQ engine (CQEs, EQEs, at the
/// port's width) to the request port `req` and the port's data stream `wr`: a whole write
/// (request, then its data) at a time. Returns a pulse per receive write whose last beat went
/// out. A CQE never overtakes its frame's data: straight from the engine, its completion comes
/// after the data went through the port; behind the buffer, it waits for it
/// ([`held_completions`]).
fn dma_writes(u: &Parts, rq: RqWrites, req: &RecordStream<DmaWrReq<u32>>, wr: &Stream) -> Sig {
    let cq_req = &u.cq.dma_wr_req;
    let cq_data = &u.cq.dma_wr;
    // Grant: 0 none, 1 RQ, 2 CQ; chosen before the request is offered (so it holds) and
    // kept until the data's last beat.
    let grant = reg_init(2, 0u32).named("wr_grant");
    let in_data = reg_init(1, 0u32).named("wr_in_data");
    let (g_rq, g_cq) = (grant.eq(1u32), grant.eq(2u32));
    let (rq_req, rq_data) = (rq.req, rq.data);
    // A whole write may go once its data is in the buffer (whose `tuser`, the bad-frame
    // flag, is always 0).
    let rq_ready_to_go = if rq.whole {
        if let Some(user) = rq_data.user() {
            user.unused();
        }
        rq_req.valid & rq_data.valid()
    } else {
        rq_req.valid
    };
    let req_valid =
        (!in_data & ((g_rq & rq_req.valid) | (g_cq & cq_req.valid))).named("wr_req_valid");
    req.data.set(mux(g_cq, cq_req.data, rq_req.data));
    req.valid.set(req_valid);
    rq_req.ready.set(!in_data & g_rq & req.ready);
    cq_req.ready.set(!in_data & g_cq & req.ready);
    let req_go = req_valid & req.ready;
    let (r, c) = (rq_data.beat(), cq_data.beat());
    wr.set_beat(&Beat {
        data: mux(g_cq, c.data, r.data),
        keep: mux(g_cq, c.keep, r.keep),
        last: mux(g_cq, c.last, r.last),
        user: r.user,
    });
    wr.valid()
        .set(in_data & mux(g_cq, cq_data.valid(), rq_data.valid()));
    rq_data.ready().set(in_data & g_rq & wr.ready());
    cq_data.ready().set(in_data & g_cq & wr.ready());
    let data_end = in_data & wr.valid() & wr.ready() & wr.last();
    grant.set(select(
        &[
            (grant.eq(0u32) & rq_ready_to_go, lit(2, 1u32)),
            (grant.eq(0u32) & cq_req.valid, lit(2, 2u32)),
            (data_end, lit(2, 0u32)),
        ],
        grant,
    ));
    in_data.set(select(
        &[(req_go, lit(1, 1u32)), (data_end, lit(1, 0u32))],
        in_data,
    ));
    (data_end & g_rq).named("wr_rq_left")
}

/// The STATS block: the core's counters, the DMA read errors and the engines' counters the
/// map shows; the engines' other counters stay internal.
fn counters(u: &Parts, rd_err: Sig) {
    let (rx, bar) = (&u.core.rx_stats, &u.bar);
    for (reg, stat) in [
        (stats::RX_FRAMES, rx.frames_in),
        (stats::RX_DELIVERED, rx.delivered),
        (stats::RX_DROP_RUNT, rx.drop_runt),
        (stats::RX_DROP_OVERSIZE, rx.drop_oversize),
        (stats::RX_DROP_FCS, rx.drop_fcs),
        (stats::RX_DROP_MAC_CONTROL, rx.drop_mac_control),
        (stats::RX_MALFORMED, rx.malformed),
        (stats::RX_VLAN_STRIPPED, rx.vlan_stripped),
        (stats::RX_L3_CSUM_BAD, rx.l3_csum_bad),
        (stats::RX_L4_CSUM_BAD, rx.l4_csum_bad),
        (stats::RX_DECAPPED, rx.decapped),
        (stats::RX_TUNNEL_MALFORMED, rx.tunnel_malformed),
        (stats::TX_FRAMES, u.core.tx_frames),
        (stats::TX_LSO_BAD, u.core.tx_lso_bad),
        (stats::TX_ENCAP_DROP, u.core.tx_encap_drop),
    ] {
        bar.ro(reg).set(stat);
    }
    let rd_err_count = reg_init(64, 0u32).named("dma_rd_errors");
    rd_err_count.set_if(rd_err, rd_err_count + 1u32);
    bar.ro(stats::DMA_RD_ERR).set(rd_err_count);
    bar.ro(stats::RX_NO_WQE).set(u.rq.stats.no_wqe.zext(64));
    bar.ro(stats::TX_WQES).set(u.sq.stats.wqes.zext(64));
    bar.ro(stats::RX_CQES).set(u.rq.stats.cqes.zext(64));
    for s in [
        u.sq.stats.db_bad,
        u.sq.stats.wqe_errors,
        u.sq.stats.frames,
        u.rq.stats.frames,
        u.rq.stats.no_queue,
        u.rq.stats.errors,
        u.cq.stats.cqe_written,
        u.cq.stats.eqe_written,
        u.cq.stats.cmpl_dropped,
        u.cq.stats.arm_lost,
    ] {
        let _ = s.unused();
    }
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
