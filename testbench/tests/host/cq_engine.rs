//! `cq_engine` against the golden model `nicgen_model::cq` at 8, 64 and 512 bits with random idle
//! and backpressure: queue commands (including every refused case), CQEs and EQEs byte for byte
//! at the right ring slots with the right owner bits, CQ arming (caught up and behind), EQ
//! arming with moderation by count, drops for CQs that do not exist, QUERY counters, and an
//! interrupt moderated by time. Sessions: plain CQs' back-to-back CQEs merged into one write;
//! compressed CQs (hash and checksum mini formats, several session periods) read back through
//! the golden model's ring reader as exactly the model's full CQEs, error completions never
//! compressed, fewer writes than completions, and a lone completion written once its session's
//! period has passed; single completions to alternating CQs at a bounded cost in cycles each.

use nicgen_edsl::Shape;
use nicgen_hdl::host::cq_engine::{cq_engine, Cmpl as CmplRec, CqArm, CqCfg, EqDb};
use nicgen_hdl::host::{DmaWrReq, QcmdRes};
use nicgen_model::cq::{session_bytes, Cmpl, CqModel, CqReader, MiniFormat, RingMem, RingWrite};
use nicgen_tb::record::{PulseDriver, RecordDriver, RecordSink};
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamError, StreamPorts, StreamSink,
};
use nicgen_tb::{PortId, Sim};
use nicgen_tests::engines::qcmd;
use nicgen_tests::*;
use rand::{rngs::StdRng, Rng, SeedableRng};

const CQS: u32 = 8;
const EQS: u32 = 2;

/// Drives `timer` with the cycle count, as the device's free-running counter does.
struct Timer(PortId);

impl Agent for Timer {
    fn drive(&mut self, sim: &mut Sim) {
        let now = sim.cycles();
        sim.set(self.0, now);
    }
    fn observe(&mut self, _sim: &Sim) -> Result<bool, StreamError> {
        Ok(false)
    }
}

/// Counts the one-cycle pulses on each `irq` bit.
struct IrqCounter {
    port: PortId,
    counts: Vec<u32>,
    first_at: Option<u64>,
}

impl Agent for IrqCounter {
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        let v = sim.get_u64(self.port);
        for (i, c) in self.counts.iter_mut().enumerate() {
            if v >> i & 1 == 1 {
                *c += 1;
                self.first_at.get_or_insert(sim.cycles());
            }
        }
        Ok(false)
    }
}

struct Bench {
    qcmd: RecordDriver,
    qres: RecordSink,
    cmpl: RecordDriver,
    arm: PulseDriver,
    eqdb: PulseDriver,
    wr_req: RecordSink,
    wr: StreamSink,
    irq: IrqCounter,
    timer: Timer,
}

impl Bench {
    fn new(sim: &Sim, k: &Knobs) -> Bench {
        Bench {
            qcmd: RecordDriver::new(sim, "s_qcmd", k.seed, k.idle).unwrap(),
            qres: RecordSink::new(sim, "m_qcmd_res", k.seed + 1, k.backpressure).unwrap(),
            cmpl: RecordDriver::new(sim, "s_cmpl", k.seed + 2, k.idle).unwrap(),
            arm: PulseDriver::new(sim, "s_arm", 3).unwrap(),
            eqdb: PulseDriver::new(sim, "eq_db", 3).unwrap(),
            wr_req: RecordSink::new(sim, "m_dma_wr_req", k.seed + 3, k.backpressure).unwrap(),
            wr: StreamSink::new(
                StreamPorts::new(sim, "m_dma_wr").unwrap(),
                k.seed + 4,
                k.backpressure,
            ),
            irq: IrqCounter {
                port: sim.port("irq").unwrap(),
                counts: vec![0; EQS as usize],
                first_at: None,
            },
            timer: Timer(sim.port("timer").unwrap()),
        }
    }

    /// 64-byte entries written so far (a merged write holds several).
    fn entries(&self) -> usize {
        self.wr.frames().iter().map(|f| f.data.len() / 64).sum()
    }

    /// Step until every driver is empty, `writes` entries were written and `answers` commands
    /// answered, then 16 more cycles (late interrupts).
    fn settle(&mut self, sim: &mut Sim, seed: u64, writes: usize, answers: usize) {
        self.settle_for(sim, seed, writes, answers, 16);
    }

    /// [`Self::settle`], then `tail` more cycles (a session's period).
    fn settle_for(&mut self, sim: &mut Sim, seed: u64, writes: usize, answers: usize, tail: u32) {
        let mut tail = tail;
        let r = run_until_seeded(sim, seed, 5000 + u64::from(tail), |sim| {
            let Bench {
                qcmd,
                qres,
                cmpl,
                arm,
                eqdb,
                wr_req,
                wr,
                irq,
                timer,
            } = self;
            let p = step(
                sim,
                &mut [qcmd, qres, cmpl, arm, eqdb, wr_req, wr, irq, timer],
            )?;
            let quiet = self.qcmd.is_idle()
                && self.cmpl.is_idle()
                && self.arm.is_idle()
                && self.eqdb.is_idle()
                && self.entries() >= writes
                && self.wr_req.items.len() == self.wr.frames().len()
                && self.qres.items.len() >= answers;
            if quiet {
                tail -= 1;
            }
            Ok(Status::new(p || quiet, quiet && tail == 0))
        });
        if let Err(e) = r {
            panic!(
                "{e}: {} of {writes} writes requested, {} written, {} of {answers} commands answered, \
                 {} completions and {} commands not yet taken",
                self.wr_req.items.len(),
                self.entries(),
                self.qres.items.len(),
                !self.cmpl.is_idle() as u8,
                !self.qcmd.is_idle() as u8
            );
        }
    }

    /// The ring writes so far, a 64-byte entry each (a merged write split into its entries).
    fn writes(&self) -> Vec<RingWrite> {
        self.raw_writes()
            .into_iter()
            .flat_map(|(addr, data)| {
                data.chunks(64)
                    .enumerate()
                    .map(|(i, e)| RingWrite {
                        addr: addr + 64 * i as u64,
                        bytes: e.try_into().expect("whole entries"),
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The DMA writes so far: address and data, each request paired with its data burst.
    fn raw_writes(&self) -> Vec<(u64, Vec<u8>)> {
        assert_eq!(
            self.wr_req.items.len(),
            self.wr.frames().len(),
            "one data burst per request"
        );
        self.wr_req
            .items
            .iter()
            .zip(self.wr.frames())
            .enumerate()
            .map(|(i, (r, d))| {
                let f = DmaWrReq::shape().decode(r);
                assert!(
                    f.len % 64 == 0 && (64..=512).contains(&f.len),
                    "whole entries, at most 8: {}",
                    f.len
                );
                assert_eq!(
                    f.len as usize,
                    d.data.len(),
                    "write {i} at {:#x}: request and data",
                    f.addr
                );
                assert_eq!(f.off, 0);
                let addr = f.addr as u64;
                assert!(addr % 4096 + f.len as u64 <= 4096, "a write crosses a page");
                (addr, d.data.clone())
            })
            .collect()
    }
}

/// A bench of an engine at `w` bits with `cqs` CQs and one EQ, out of reset, without idle or
/// backpressure (for the tests that time the engine); None where the tools are missing.
fn one_eq_bench(w: u32, cqs: u32, seed: u64) -> Option<(Sim, Bench)> {
    let cfg = CqCfg {
        data_bits: w,
        cqs,
        eqs: 1,
        log_max: 12,
    };
    let d = dut(&cq_engine(&cfg).unwrap())?;
    let mut sim = d.model.instance();
    reset(&mut sim);
    let k = Knobs {
        seed,
        idle: 0.0,
        backpressure: 0.0,
    };
    let mut b = Bench::new(&sim, &k);
    b.irq.counts = vec![0];
    Some((sim, b))
}

fn create(qtype: u128, index: u128, base: u64, log: u32, link: u32, mod_count: u32) -> Vec<u8> {
    qcmd(
        1,
        qtype,
        index,
        [
            (base & 0xFFFF_FFFF) as u128,
            (base >> 32) as u128,
            log as u128,
            0,
            0,
            link as u128,
            mod_count as u128,
            0,
        ],
    )
}

fn cmpl_record(c: &Cmpl) -> Vec<u8> {
    CmplRec::shape().encode(&CmplRec {
        cqn: c.cqn as u128,
        opcode: c.opcode as u128,
        syndrome: c.syndrome as u128,
        vendor_err_synd: c.vendor_err_synd as u128,
        qpn: c.qpn as u128,
        s_wqe_opcode: c.s_wqe_opcode as u128,
        wqe_counter: c.wqe_counter as u128,
        wqe_id: c.wqe_id as u128,
        byte_cnt: c.byte_cnt as u128,
        rss_hash_result: c.rss_hash_result as u128,
        rss_hash_type: c.rss_hash_type as u128,
        check_sum: c.check_sum as u128,
        l2_ok: c.l2_ok as u128,
        l3_ok: c.l3_ok as u128,
        l4_ok: c.l4_ok as u128,
        l3_type: c.l3_type as u128,
        l4_type: c.l4_type as u128,
        cv: c.cv as u128,
        ip_frag: c.ip_frag as u128,
        vlan_info: c.vlan_info as u128,
        l3_hdr: c.l3_hdr as u128,
        tunneled: c.tunneled as u128,
        decapped: c.decapped as u128,
        tunnel_info: c.tunnel_info as u128,
    })
}

/// A completion of random fields; its `wqe_id` is taken from the others (no draw of its own,
/// so the tests' random streams do not depend on it).
fn random_cmpl(rng: &mut StdRng) -> Cmpl {
    let mut c = Cmpl {
        cqn: rng.gen_range(0..CQS),
        opcode: [0u8, 2, 13, 14][rng.gen_range(0..4)],
        syndrome: rng.gen(),
        vendor_err_synd: rng.gen(),
        qpn: rng.gen_range(0..1 << 24),
        s_wqe_opcode: rng.gen(),
        wqe_counter: rng.gen(),
        wqe_id: 0,
        byte_cnt: rng.gen(),
        rss_hash_result: rng.gen(),
        rss_hash_type: rng.gen(),
        check_sum: rng.gen(),
        l2_ok: rng.gen(),
        l3_ok: rng.gen(),
        l4_ok: rng.gen(),
        l3_type: rng.gen_range(0..4),
        l4_type: rng.gen_range(0..8),
        cv: rng.gen(),
        ip_frag: rng.gen(),
        vlan_info: rng.gen(),
        l3_hdr: rng.gen_range(0..4),
        ..Cmpl::default()
    };
    c.wqe_id = c.wqe_counter.rotate_left(5) ^ c.check_sum;
    // Tunnel fields from the others too: every bit of both occurs.
    c.tunneled = c.rss_hash_result & 1 == 1;
    c.decapped = c.rss_hash_result & 2 == 2;
    c.tunnel_info = c.rss_hash_result.rotate_left(3) & 0x1FFF_FFFF;
    c
}

/// CQE bytes without the timestamp (the device's cycle count; the model leaves it 0). Error
/// CQEs keep their syndromes in the last two bytes; EQEs have no timestamp.
fn untimed(mut w: RingWrite, eq_rings: &[u64]) -> RingWrite {
    if eq_rings.contains(&(w.addr & !0xFFF)) {
        return w;
    }
    let err = matches!(w.bytes[0x3F] >> 4, 13 | 14);
    w.bytes[0x30..if err { 0x36 } else { 0x38 }].fill(0);
    w
}

fn status(item: &[u8]) -> u64 {
    QcmdRes::shape().decode(item).status as u64
}

#[test]
fn cq_engine_matches_the_model() {
    for (wi, w) in [8u32, 64, 256, 512].into_iter().enumerate() {
        let cfg = CqCfg {
            data_bits: w,
            cqs: CQS,
            eqs: EQS,
            log_max: 12,
        };
        let Some(d) = dut(&cq_engine(&cfg).unwrap()) else {
            return;
        };
        for (ki, k) in matrix(300 + wi as u64).into_iter().enumerate() {
            let mut sim = if ki == 1 {
                recording_sim(&d)
            } else {
                d.model.instance()
            };
            reset(&mut sim);
            let mut b = Bench::new(&sim, &k);
            let mut m = CqModel::new(CQS as usize, EQS as usize);
            let mut rng = StdRng::seed_from_u64(k.seed);
            // Queues: EQ0 interrupts on every event, EQ1 on every second one.
            let mut cmds = vec![
                create(0, 0, 0x1_0000, 3, 0, 1),
                create(0, 1, 0x2_0000, 2, 1, 2),
            ];
            m.create_eq(0, 0x1_0000, 3, 0, 1);
            m.create_eq(1, 0x2_0000, 2, 1, 2);
            for cq in 0..CQS - 2 {
                let (base, log) = (0x10_0000 + cq as u64 * 0x1000, 2 + cq % 2);
                cmds.push(create(1, cq as u128, base, log, cq % 2, 0));
                m.create_cq(cq, base, log, cq % 2);
            }
            // Refused: twice, out of range, bad size, bad EQ link, destroy/reset of a queue
            // that does not exist, an unknown op.
            let refused = [
                (create(1, 0, 0x3_0000, 2, 0, 0), 0x09),
                (create(1, 100, 0x3_0000, 2, 0, 0), 0x0A),
                (create(1, 7, 0x3_0000, 0, 0, 0), 0x03),
                (create(1, 7, 0x3_0000, 13, 0, 0), 0x03),
                (create(1, 7, 0x3_0000, 2, 5, 0), 0x03),
                (qcmd(2, 1, 7, [0; 8]), 0x09),
                (qcmd(3, 0, 1, [0; 8]), 0x00), // reset of a ready EQ: fine
                (qcmd(9, 1, 0, [0; 8]), 0x03),
            ];
            let n_ok = cmds.len();
            for c in cmds.iter().chain(refused.iter().map(|r| &r.0)) {
                b.qcmd.push(c.clone());
            }
            b.settle(&mut sim, k.seed, 0, n_ok + refused.len());
            for (i, item) in b.qres.items.iter().enumerate() {
                let want = if i < n_ok { 0 } else { refused[i - n_ok].1 };
                assert_eq!(status(item), want, "w={w} {k:?}: command {i}");
            }
            let mut want_writes: Vec<RingWrite> = Vec::new();
            let mut answers = b.qres.items.len();
            for phase in 0..6 {
                // Arm both EQs where they are, and a random set of CQs (caught up or behind).
                for eq in 0..EQS {
                    let ci = m.eq_pc(eq).unwrap();
                    b.eqdb.queue.push_back(EqDb::shape().encode(&EqDb {
                        eqn: eq as u128,
                        ci: ci as u128,
                        arm: 1,
                    }));
                    m.eq_doorbell(eq, ci, true);
                }
                // The EQs armed before any CQ arm can raise an event (the two come on separate
                // ports; an EQ armed after the event would count it as already waiting).
                b.settle(&mut sim, k.seed, want_writes.len(), answers);
                for cq in 0..CQS {
                    if rng.gen_bool(0.6) {
                        let pc = m.cq_pc(cq).unwrap_or(0);
                        let ci = if rng.gen_bool(0.3) {
                            pc.wrapping_sub(1) & 0xFF_FFFF
                        } else {
                            pc
                        };
                        b.arm.queue.push_back(CqArm::shape().encode(&CqArm {
                            cqn: cq as u128,
                            ci: ci as u128,
                            ..Default::default()
                        }));
                        want_writes.extend(m.arm_cq(cq, ci));
                    }
                }
                b.settle(&mut sim, k.seed, want_writes.len(), answers);
                if phase == 3 {
                    // Destroy CQ 2: its later completions are dropped.
                    b.qcmd.push(qcmd(2, 1, 2, [0; 8]));
                    m.destroy_cq(2);
                    answers += 1;
                    b.settle(&mut sim, k.seed, want_writes.len(), answers);
                }
                for _ in 0..12 {
                    let c = random_cmpl(&mut rng);
                    b.cmpl.push(cmpl_record(&c));
                    want_writes.extend(m.complete(&c));
                }
                b.settle(&mut sim, k.seed, want_writes.len(), answers);
                let got: Vec<RingWrite> = b
                    .writes()
                    .into_iter()
                    .map(|x| untimed(x, &[0x1_0000, 0x2_0000]))
                    .collect();
                assert_eq!(
                    got.len(),
                    want_writes.len(),
                    "w={w} {k:?} phase {phase}: writes"
                );
                for (i, (g, x)) in got.iter().zip(&want_writes).enumerate() {
                    assert_eq!(g, x, "w={w} {k:?} phase {phase}: write {i}");
                }
                assert_eq!(
                    b.irq.counts, m.irqs,
                    "w={w} {k:?} phase {phase}: interrupts"
                );
            }
            // QUERY reports the producer counters.
            for cq in [0u32, 1, 5] {
                b.qcmd.push(qcmd(4, 1, cq as u128, [0; 8]));
            }
            b.settle(&mut sim, k.seed, want_writes.len(), answers + 3);
            for (i, cq) in [0u32, 1, 5].into_iter().enumerate() {
                let r = QcmdRes::shape().decode(&b.qres.items[answers + i]);
                assert_eq!(r.status, 0);
                assert_eq!(r.out0, 1, "ready");
                assert_eq!(r.out1 as u32, m.cq_pc(cq).unwrap(), "CQ {cq} pc");
            }
            let dropped = sim.port("stat_cmpl_dropped").unwrap();
            assert_eq!(sim.get_u64(dropped), m.dropped as u64, "w={w} {k:?}: drops");
            let lost = sim.port("stat_arm_lost").unwrap();
            assert_eq!(sim.get_u64(lost), 0);
            if ki == 1 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn an_eq_interrupts_after_its_period_when_the_count_is_not_reached() {
    let Some((mut sim, mut b)) = one_eq_bench(64, 4, 7) else {
        return;
    };
    // EQ0: 50 events or 2 ticks (2048 cycles); CQ0 on it.
    b.qcmd
        .push(qcmd(1, 0, 0, [0x1_0000, 0, 3, 0, 0, 0, 50 | 2 << 16, 0]));
    b.qcmd.push(create(1, 0, 0x2_0000, 3, 0, 0));
    b.settle(&mut sim, 7, 0, 2);
    b.eqdb.queue.push_back(EqDb::shape().encode(&EqDb {
        arm: 1,
        ..Default::default()
    }));
    b.arm
        .queue
        .push_back(CqArm::shape().encode(&CqArm::default()));
    b.settle(&mut sim, 7, 0, 2);
    assert_eq!(b.irq.counts, vec![0]);
    let start = sim.cycles();
    b.cmpl.push(cmpl_record(&Cmpl::default()));
    b.settle(&mut sim, 7, 2, 2);
    assert_eq!(b.irq.counts, vec![0], "one event of 50: no interrupt yet");
    run_until_seeded(&mut sim, 7, 4000, |sim| {
        let p = step(sim, &mut [&mut b.irq, &mut b.timer])?;
        Ok(Status::new(p, b.irq.counts[0] == 1))
    })
    .unwrap();
    let after = b.irq.first_at.unwrap() - start;
    assert!(
        (1024..=3 * 1024 + 64).contains(&after),
        "interrupt {after} cycles after the event; the period is 2 ticks of 1024"
    );
}

/// Host memory of the compressed test: 64-byte slots, a ring's slots starting with owner 1.
struct Slots(std::collections::HashMap<u64, [u8; 64]>);

impl RingMem for Slots {
    fn read64(&self, addr: u64) -> [u8; 64] {
        self.0.get(&(addr & !63)).copied().unwrap_or_else(|| {
            let mut b = [0; 64];
            b[0x3F] = 0xF1;
            b
        })
    }
    fn write8(&mut self, addr: u64, v: u8) {
        let mut b = self.read64(addr);
        b[(addr & 63) as usize] = v;
        self.0.insert(addr & !63, b);
    }
}

/// CQ create word 6: compression, mini format, session period.
fn cq_opts(comp: bool, fmt: MiniFormat, period: u32) -> u32 {
    comp as u32 | ((fmt == MiniFormat::Csum) as u32) << 1 | period << 16
}

/// A run of `n` completions for `cqn` that a compressed session may take whole (the mini CQE's
/// fields and the WQE counter vary), with an error completion now and then.
fn run_of(rng: &mut StdRng, cqn: u32, n: usize, fmt: MiniFormat) -> Vec<Cmpl> {
    let mut t = random_cmpl(rng);
    t.cqn = cqn;
    t.opcode = [0u8, 2][rng.gen_range(0..2)];
    (0..n)
        .map(|i| {
            let mut c = t.clone();
            c.byte_cnt = rng.gen();
            if c.opcode == 0 {
                c.wqe_counter = rng.gen();
                c.s_wqe_opcode = rng.gen();
            } else {
                c.wqe_counter = t.wqe_counter.wrapping_add(i as u16);
                match fmt {
                    MiniFormat::Hash => c.rss_hash_result = rng.gen(),
                    MiniFormat::Csum => c.check_sum = rng.gen(),
                }
            }
            if rng.gen_bool(0.06) {
                c.opcode = [13u8, 14][rng.gen_range(0..2)];
            }
            c
        })
        .collect()
}

#[test]
fn cq_engine_compressed_sessions_read_back_as_the_model() {
    const PERIODS: [u32; 3] = [0, 24, 200];
    // 256 bits (the DMA port of nic64 and nic128) last, so each width keeps its seeds.
    for (wi, w) in [8u32, 64, 512, 256].into_iter().enumerate() {
        let cfg = CqCfg {
            data_bits: w,
            cqs: CQS,
            eqs: EQS,
            log_max: 12,
        };
        let Some(d) = dut(&cq_engine(&cfg).unwrap()) else {
            return;
        };
        let (mut n_writes, mut n_cmpl) = (0usize, 0usize);
        for (ki, k) in matrix(400 + wi as u64).into_iter().enumerate() {
            let mut sim = if ki == 1 {
                recording_sim(&d)
            } else {
                d.model.instance()
            };
            reset(&mut sim);
            let mut b = Bench::new(&sim, &k);
            let mut m = CqModel::new(CQS as usize, EQS as usize);
            let mut rng = StdRng::seed_from_u64(k.seed);
            let mut cmds = vec![
                create(0, 0, 0x1_0000, 3, 0, 1),
                create(0, 1, 0x2_0000, 2, 1, 2),
            ];
            m.create_eq(0, 0x1_0000, 3, 0, 1);
            m.create_eq(1, 0x2_0000, 2, 1, 2);
            // CQ c: compressed but CQ 5 (plain, merged writes only); hash format on odd CQs;
            // ring sizes 4, 8, 16 and 32 slots; session periods 0, 24 and 200 cycles.
            let mut readers = Vec::new();
            for cq in 0..CQS {
                let (base, log) = (0x10_0000 + cq as u64 * 0x1000, 2 + cq % 4);
                let fmt = if cq % 2 == 1 {
                    MiniFormat::Hash
                } else {
                    MiniFormat::Csum
                };
                let opts = cq_opts(cq != 5, fmt, PERIODS[cq as usize % 3]);
                cmds.push(create(1, cq as u128, base, log, cq % 2, opts));
                m.create_cq(cq, base, log, cq % 2);
                readers.push(CqReader {
                    base,
                    log_size: log,
                    fmt,
                    cc: 0,
                });
            }
            let n_cmds = cmds.len();
            for c in cmds {
                b.qcmd.push(c);
            }
            b.settle(&mut sim, k.seed, 0, n_cmds);
            assert!(b.qres.items.iter().all(|r| status(r) == 0));
            let mut mem = Slots(Default::default());
            let (mut want_cqes, mut got_cqes) = (
                vec![Vec::new(); CQS as usize],
                vec![Vec::new(); CQS as usize],
            );
            let mut want_eqes = Vec::new();
            let mut seen = 0;
            let eq_ring = |a: u64| a < 0x10_0000;
            let cq_of = |a: u64| ((a - 0x10_0000) / 0x1000) as usize;
            let model_writes = |m: Vec<RingWrite>,
                                want_cqes: &mut Vec<Vec<[u8; 64]>>,
                                want_eqes: &mut Vec<RingWrite>| {
                for x in m {
                    if eq_ring(x.addr) {
                        want_eqes.push(x);
                    } else {
                        want_cqes[cq_of(x.addr)].push(x.bytes);
                    }
                }
            };
            for phase in 0..5 {
                // Some CQs armed (caught up: the next completion goes out at once with an
                // event; behind: an event now).
                for eq in 0..EQS {
                    let ci = m.eq_pc(eq).unwrap();
                    b.eqdb.queue.push_back(EqDb::shape().encode(&EqDb {
                        eqn: eq as u128,
                        ci: ci as u128,
                        arm: 1,
                    }));
                    m.eq_doorbell(eq, ci, true);
                }
                // The EQs armed before any CQ arm can raise an event.
                b.settle(&mut sim, k.seed, 0, n_cmds);
                for cq in 0..CQS {
                    if rng.gen_bool(0.2) {
                        let pc = m.cq_pc(cq).unwrap();
                        let ci = if rng.gen_bool(0.3) {
                            pc.wrapping_sub(1) & 0xFF_FFFF
                        } else {
                            pc
                        };
                        b.arm.queue.push_back(CqArm::shape().encode(&CqArm {
                            cqn: cq as u128,
                            ci: ci as u128,
                            ..Default::default()
                        }));
                        let x = m.arm_cq(cq, ci);
                        model_writes(x, &mut want_cqes, &mut want_eqes);
                    }
                }
                b.settle(&mut sim, k.seed, 0, n_cmds);
                // Runs of like completions, CQs interleaved now and then.
                let mut count = 0;
                while count < 40 {
                    let cq = rng.gen_range(0..CQS);
                    let n = rng.gen_range(1..=12);
                    for c in run_of(&mut rng, cq, n, readers[cq as usize].fmt) {
                        b.cmpl.push(cmpl_record(&c));
                        let x = m.complete(&c);
                        model_writes(x, &mut want_cqes, &mut want_eqes);
                    }
                    count += n;
                }
                n_cmpl += count;
                b.settle_for(&mut sim, k.seed, 0, n_cmds, 260);
                // Apply the writes in order, each ring read after each write as a driver
                // polling would.
                let raw = b.raw_writes();
                for (addr, data) in &raw[seen..] {
                    if !eq_ring(*addr) {
                        n_writes += 1;
                        if data.len() == 128 && cq_of(*addr) != 5 {
                            assert_eq!(data[0x3F] >> 2 & 3, 3, "a title");
                            assert!(data[0x3F] >> 4 < 13, "an error CQE compressed");
                        }
                    }
                    for (i, e) in data.chunks(64).enumerate() {
                        mem.0.insert(addr + 64 * i as u64, e.try_into().unwrap());
                    }
                    if !eq_ring(*addr) {
                        let cq = cq_of(*addr);
                        got_cqes[cq].extend(readers[cq].poll(&mut mem));
                    }
                }
                seen = raw.len();
                let eqes: Vec<RingWrite> =
                    b.writes().into_iter().filter(|x| eq_ring(x.addr)).collect();
                // Events follow their session's write: per EQ, the same slots with the same
                // owner bits, for the same CQs (a held session's event may come later than
                // another CQ's).
                let key = |v: &[RingWrite]| {
                    let mut k: Vec<(u64, u8, u32)> = v
                        .iter()
                        .map(|x| {
                            let cqn = u32::from_be_bytes(x.bytes[0x38..0x3C].try_into().unwrap());
                            (x.addr & !0xFFF, x.bytes[0x3F], cqn)
                        })
                        .collect();
                    k.sort();
                    k
                };
                assert_eq!(
                    key(&eqes),
                    key(&want_eqes),
                    "w={w} {k:?} phase {phase}: EQEs"
                );
                let slots = |v: &[RingWrite]| v.iter().map(|x| x.addr).collect::<Vec<_>>();
                assert_eq!(slots(&eqes), slots(&want_eqes), "w={w} {k:?} phase {phase}");
                for cq in 0..CQS as usize {
                    let got: Vec<[u8; 64]> = got_cqes[cq]
                        .iter()
                        .map(|c| {
                            untimed(
                                RingWrite {
                                    addr: 0x10_0000,
                                    bytes: *c,
                                },
                                &[],
                            )
                            .bytes
                        })
                        .collect();
                    let want: Vec<[u8; 64]> = want_cqes[cq]
                        .iter()
                        .map(|c| {
                            untimed(
                                RingWrite {
                                    addr: 0x10_0000,
                                    bytes: *c,
                                },
                                &[],
                            )
                            .bytes
                        })
                        .collect();
                    assert_eq!(got.len(), want.len(), "w={w} {k:?} phase {phase}: CQ {cq}");
                    for (i, (g, x)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(g, x, "w={w} {k:?} phase {phase}: CQ {cq} CQE {i}");
                    }
                }
                assert_eq!(b.irq.counts, m.irqs, "w={w} {k:?} phase {phase}: irqs");
            }
            let written = sim.port("stat_cqe_written").unwrap();
            assert_eq!(
                sim.get_u64(written) as usize,
                want_cqes.iter().map(Vec::len).sum::<usize>()
            );
            if ki == 1 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
        eprintln!("w={w}: {n_cmpl} completions in {n_writes} CQ writes");
        // Runs of one CQ, another CQ's completions written alone past a waiting session:
        // about 870 completions in 600 writes.
        assert!(
            n_writes * 4 < n_cmpl * 3,
            "w={w}: sessions should save at least a quarter of the writes: {n_writes} for \
             {n_cmpl}"
        );
    }
}

#[test]
fn a_lone_completion_leaves_when_its_session_period_ends_and_a_run_is_one_write() {
    let Some((mut sim, mut b)) = one_eq_bench(64, 4, 9) else {
        return;
    };
    let period = 300;
    b.qcmd.push(create(0, 0, 0x1_0000, 3, 0, 1));
    b.qcmd.push(create(
        1,
        1,
        0x2_0000,
        4,
        0,
        cq_opts(true, MiniFormat::Csum, period),
    ));
    b.settle(&mut sim, 9, 0, 2);
    // One completion: written alone (a full CQE), not before the period, soon after it.
    let mut rng = StdRng::seed_from_u64(9);
    let run = run_of(&mut rng, 1, 8, MiniFormat::Csum);
    let run: Vec<Cmpl> = run
        .into_iter()
        .map(|mut c| {
            if c.opcode >= 13 {
                c.opcode -= 13;
            }
            c
        })
        .collect();
    let start = sim.cycles();
    b.cmpl.push(cmpl_record(&run[0]));
    b.settle(&mut sim, 9, 1, 2);
    let took = sim.cycles() - start - 16;
    assert!(
        (u64::from(period)..u64::from(period) + 40).contains(&took),
        "a lone completion written {took} cycles after it came; the period is {period}"
    );
    let first = b.raw_writes();
    assert_eq!(first.len(), 1);
    let mut want = nicgen_model::cq::cqe_bytes(&run[0], false).to_vec();
    let mut got = first[0].1.clone();
    got[0x30..0x38].fill(0);
    want[0x30..0x38].fill(0);
    assert_eq!(got, want, "a session of one is a full CQE");
    // Seven more back to back: a session that reaches the block end (slot 1..8) is one write
    // of the title and the mini CQEs.
    for c in &run[1..] {
        b.cmpl.push(cmpl_record(c));
    }
    b.settle(&mut sim, 9, 2, 2);
    let all = b.raw_writes();
    assert_eq!(all.len(), 2, "seven completions, one write");
    let mut want = session_bytes(&run[1..], false, MiniFormat::Csum);
    let mut got = all[1].1.clone();
    assert_eq!(all[1].0, 0x2_0040);
    got[0x30..0x38].fill(0);
    want[0x30..0x38].fill(0);
    assert_eq!(got, want, "title and mini CQEs");
}

/// A striding RQ's completions share a compressed session only within one WQE: the mini CQE
/// has no `wqe_id`, so a completion of the next WQE ends the session and opens the next one,
/// whose title carries the new `wqe_id`.
#[test]
fn a_compressed_session_ends_where_the_striding_wqe_changes() {
    let Some((mut sim, mut b)) = one_eq_bench(64, 2, 11) else {
        return;
    };
    b.qcmd.push(create(0, 0, 0x1_0000, 3, 0, 1));
    b.qcmd.push(create(
        1,
        1,
        0x2_0000,
        4,
        0,
        cq_opts(true, MiniFormat::Csum, 300),
    ));
    b.settle(&mut sim, 11, 0, 2);
    // Eight receive completions, one stride each: three in WQE 0x0102, five in WQE 0x0103
    // (its strides counted from 0 again).
    let mut rng = StdRng::seed_from_u64(11);
    let mut t = random_cmpl(&mut rng);
    (t.cqn, t.opcode, t.wqe_counter) = (1, 2, 0);
    let run: Vec<Cmpl> = (0..8u16)
        .map(|i| {
            let mut c = t.clone();
            c.byte_cnt = 1 << 16 | rng.gen_range(60..=64);
            c.check_sum = rng.gen();
            (c.wqe_id, c.wqe_counter) = if i < 3 { (0x0102, i) } else { (0x0103, i - 3) };
            c
        })
        .collect();
    for c in &run {
        b.cmpl.push(cmpl_record(c));
    }
    b.settle(&mut sim, 11, 2, 2);
    let all = b.raw_writes();
    let at: Vec<u64> = all.iter().map(|w| w.0).collect();
    assert_eq!(
        at,
        [0x2_0000, 0x2_00C0],
        "two sessions, the second at slot 3"
    );
    for (w, part) in all.iter().zip([&run[..3], &run[3..]]) {
        let mut want = session_bytes(part, false, MiniFormat::Csum);
        let mut got = w.1.clone();
        got[0x30..0x38].fill(0);
        want[0x30..0x38].fill(0);
        assert_eq!(
            got, want,
            "session at {:#x}: title (its wqe_id) and mini CQEs",
            w.0
        );
        assert_eq!(u16::from_be_bytes([got[2], got[3]]), part[0].wqe_id);
    }
}

/// Single completions to two CQs, alternating, with period 0 and the DMA port always ready (at
/// 256 bits, nic64's port: a CQE is 2 beats): each completion is a session of its own, decided
/// in the last beat of the write before and its request offered then, so a completion costs
/// its 2 beats: 129 cycles for 64. The bound, 3 cycles a completion, sits between that and the
/// 383 cycles (6 a completion) of the engine that took one completion at a time through IDLE.
#[test]
fn alternating_single_completions_cost_their_write_beats() {
    let Some((mut sim, mut b)) = one_eq_bench(256, 4, 13) else {
        return;
    };
    let mut m = CqModel::new(4, 1);
    b.qcmd.push(create(0, 0, 0x1_0000, 3, 0, 1));
    m.create_eq(0, 0x1_0000, 3, 0, 1);
    for cq in 0..2u32 {
        let base = 0x2_0000 + 0x1000 * cq as u64;
        b.qcmd.push(create(1, cq as u128, base, 4, 0, 0));
        m.create_cq(cq, base, 4, 0);
    }
    b.settle(&mut sim, 13, 0, 3);
    let mut rng = StdRng::seed_from_u64(13);
    let n = 64;
    let mut want = Vec::new();
    for i in 0..n {
        let mut c = random_cmpl(&mut rng);
        c.cqn = i % 2;
        b.cmpl.push(cmpl_record(&c));
        want.extend(m.complete(&c));
    }
    let start = sim.cycles();
    b.settle(&mut sim, 13, n as usize, 3);
    let took = sim.cycles() - start - 16;
    let got: Vec<RingWrite> = b.writes().into_iter().map(|x| untimed(x, &[])).collect();
    let want: Vec<RingWrite> = want.into_iter().map(|x| untimed(x, &[])).collect();
    assert_eq!(got, want, "the model's CQEs, in order");
    assert_eq!(b.raw_writes().len(), n as usize, "a write per completion");
    eprintln!("{n} alternating completions in {took} cycles");
    assert!(
        took <= 3 * u64::from(n),
        "{n} alternating completions took {took} cycles: more than 3 a completion"
    );
}
