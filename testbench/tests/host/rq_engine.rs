//! `rq_engine` (with `mr_table`) against the golden model `nicgen_model::rq`, served by the
//! simulated host's DMA at 8, 64 and 512 bits: frames of every size scattered over receive
//! WQEs of one to four segments at any alignment (and across 4 KiB pages), records of dropped
//! frames skipped, frames for an RQ that does not exist or has no WQE dropped and counted,
//! every CQE field compared (records of de-capsulated tunnels and of tunnels delivered whole
//! with the inner offloads among them: `decapped`, `tunneled`, verdicts of both header sets);
//! then a frame longer than its scatter list and a segment outside its region: error CQEs, the
//! RQ in error until RESET. A striding RQ (multi-packet WQEs) the same way: frames of random sizes packed into the strides of each WQE, filler CQEs where a
//! frame does not fit in the strides left, a filler followed by no WQE counted as a drop, each
//! WQE read once for all its frames, and its error cases. With DMA reads answered after a long
//! fixed latency: two RQs' next WQEs read ahead into the shared WQE cache while frames of the
//! other arrive (frames complete in less than one read's latency), never beyond the posted
//! WQEs nor the RQ's read-ahead depth; one RQ's frames back to back with its WQEs read ahead
//! together (many reads outstanding, far from a round trip a frame); a frame finding the cache
//! full of other RQs' WQEs; a RESET drops the RQ's WQEs read ahead (landed or in flight).

use nicgen_edsl::Shape;
use nicgen_hdl::eth::eth_rx::RxMeta;
use nicgen_hdl::host::cq_engine::Cmpl as CmplRec;
use nicgen_hdl::host::rq_engine::{rq_engine, RqCfg, RQ_WQE_AHEAD, RQ_WQE_CACHE};
use nicgen_hdl::host::QcmdRes;
use nicgen_host::{DmaConfig, DmaService, HostMemory, MemoryConfig};
use nicgen_model::cq::Cmpl;
use nicgen_model::rq::{Rq, RxInfo, Strides};
use nicgen_model::sq::Mr;
use nicgen_tb::record::{RecordDriver, RecordSink};
use nicgen_tb::stream::{
    run_until_budget, run_until_seeded, step, Status, StreamDriver, StreamError, StreamPorts,
};
use nicgen_tb::{Model, Sim};
use nicgen_tests::dut;
use nicgen_tests::engines::{qcmd, reset_and_program_mrs, with_mr_table, Host};
use rand::{rngs::StdRng, Rng, SeedableRng};

const RQS: u32 = 8;
const QBITS: u32 = 4;
const MRS: u32 = 4;
const LOG_SIZE: u32 = 4;
const LOG_STRIDE: u32 = 6; // 64-byte WQEs: up to 4 segments
const RQN: u32 = 2;
const CQN: u32 = 6;

fn model(w: u32) -> Option<Model> {
    let rq = rq_engine(&RqCfg {
        data_bits: w,
        rqs: RQS,
        queue_bits: QBITS,
        cqs: 8,
        mrs: MRS,
        max_frame: 9022,
        log_max: 12,
    })
    .unwrap();
    dut(&with_mr_table(&format!("rq_dut_d{w}"), &rq, MRS, None)).map(|d| d.model)
}

struct Bench {
    host: Host,
    frames: StreamDriver,
    metas: RecordDriver,
    qcmd: RecordDriver,
    qres: RecordSink,
    cmpl: RecordSink,
}

impl Bench {
    /// One cycle of every agent; whether one made progress.
    fn step(&mut self, sim: &mut Sim) -> Result<bool, StreamError> {
        let Bench {
            host,
            frames,
            metas,
            qcmd,
            qres,
            cmpl,
        } = self;
        step(sim, &mut [host, frames, metas, qcmd, qres, cmpl])
    }

    fn step_until(&mut self, sim: &mut Sim, seed: u64, done: impl Fn(&Bench) -> bool) {
        let mut tail = 20;
        run_until_seeded(sim, seed, 3000, |sim| {
            let p = self.step(sim)?;
            let quiet =
                self.frames.is_idle() && self.metas.is_idle() && self.qcmd.is_idle() && done(self);
            if quiet {
                tail -= 1;
            }
            Ok(Status::new(p || quiet, quiet && tail == 0))
        })
        .unwrap_or_else(|e| {
            panic!(
                "{e}: frames sent {}, records sent {}, completions {}, DMA {:?}",
                self.frames.frames_sent(),
                self.metas.sent,
                self.cmpl.items.len(),
                self.host.dma.stats()
            )
        });
    }
}

fn meta(queue: u32, drop: bool, i: &RxInfo) -> Vec<u8> {
    RxMeta::shape(QBITS).encode(&RxMeta {
        drop: drop as u128,
        fcs_bad: drop as u128,
        vlan: i.vlan.is_some() as u128,
        vlan_tci: i.vlan.unwrap_or(0) as u128,
        l3: i.l3 as u128,
        l4: i.l4 as u128,
        l3_ok: i.l3_ok as u128,
        l4_ok: i.l4_ok as u128,
        csum: i.csum as u128,
        rss_type: i.rss_type as u128,
        rss_hash: i.rss_hash as u128,
        queue: queue as u128,
        tunnel: i.tunnel as u128,
        tunnel_bad: i.tunnel_bad as u128,
        tunnel_id: i.tunnel_id as u128,
        decap: i.decap as u128,
        inner: i.inner as u128,
        // The inner types are not in the CQE; any value.
        inner_l3: if i.inner { i.l3 as u128 } else { 0 },
        inner_l4: if i.inner { i.l4 as u128 } else { 0 },
        inner_l3_ok: i.inner_l3_ok as u128,
        inner_l4_ok: i.inner_l4_ok as u128,
        ..Default::default()
    })
}

fn decode_cmpl(item: &[u8]) -> Cmpl {
    let f = CmplRec::shape().decode(item);
    Cmpl {
        cqn: f.cqn as u32,
        opcode: f.opcode as u8,
        syndrome: f.syndrome as u8,
        vendor_err_synd: f.vendor_err_synd as u8,
        qpn: f.qpn as u32,
        s_wqe_opcode: f.s_wqe_opcode as u8,
        wqe_counter: f.wqe_counter as u16,
        wqe_id: f.wqe_id as u16,
        byte_cnt: f.byte_cnt as u32,
        rss_hash_result: f.rss_hash_result as u32,
        rss_hash_type: f.rss_hash_type as u8,
        check_sum: f.check_sum as u16,
        l2_ok: f.l2_ok == 1,
        l3_ok: f.l3_ok == 1,
        l4_ok: f.l4_ok == 1,
        l3_type: f.l3_type as u8,
        l4_type: f.l4_type as u8,
        cv: f.cv == 1,
        ip_frag: f.ip_frag == 1,
        vlan_info: f.vlan_info as u16,
        l3_hdr: f.l3_hdr as u8,
        tunneled: f.tunneled == 1,
        decapped: f.decapped == 1,
        tunnel_info: f.tunnel_info as u32,
    }
}

/// The CREATE word 2 bits of a striding RQ.
fn stride_words(log_num: u32, log_size: u32) -> u32 {
    1 << 16 | log_num << 20 | log_size << 24
}

fn rq_cmd(op: u128, index: u128, ins: [u128; 8]) -> Vec<u8> {
    qcmd(op, 3, index, ins)
}

struct Setup {
    sim: Sim,
    b: Bench,
    rq: Rq,
    dbr: u64,
    pc: u16,
    buf: (u64, usize),
    mrs: Vec<Option<Mr>>,
    answers: usize,
    rng: StdRng,
    /// Frames pushed so far (each ends in a CQE or a counted drop).
    frames_total: u64,
}

fn setup(m: &Model, seed: u64, dma: DmaConfig, idle: f64, strides: Option<Strides>) -> Setup {
    let mut sim = m.instance();
    let mut mem = HostMemory::new(MemoryConfig::default()).unwrap();
    let ring = mem.alloc((1 << LOG_SIZE) << LOG_STRIDE, 4096).unwrap().addr;
    let dbr = mem.alloc(8, 8).unwrap().addr;
    let buf = mem.alloc(256 * 1024, 64).unwrap();
    let mrs = vec![
        None,
        Some(Mr {
            base: buf.addr,
            len: buf.len as u64,
        }),
        None,
        None,
    ];
    reset_and_program_mrs(&mut sim, &mrs);
    let b = Bench {
        host: Host {
            dma: DmaService::new(&sim, dma).unwrap(),
            mem,
        },
        frames: StreamDriver::new(StreamPorts::new(&sim, "s_axis_rx").unwrap(), seed, idle),
        metas: RecordDriver::new(&sim, "s_axis_rx_meta", seed + 1, idle).unwrap(),
        qcmd: RecordDriver::new(&sim, "s_qcmd", seed + 2, 0.0).unwrap(),
        qres: RecordSink::new(&sim, "m_qcmd_res", seed + 3, 0.3).unwrap(),
        cmpl: RecordSink::new(&sim, "m_cmpl", seed + 4, 0.3).unwrap(),
    };
    let mut s = Setup {
        sim,
        b,
        rq: Rq {
            rqn: RQN,
            ring,
            log_size: LOG_SIZE,
            log_stride: LOG_STRIDE,
            cqn: CQN,
            ci: 0,
            error: false,
            strides,
            stride: 0,
        },
        dbr,
        pc: 0,
        buf: (buf.addr, buf.len),
        mrs,
        answers: 0,
        rng: StdRng::seed_from_u64(seed),
        frames_total: 0,
    };
    let lo = |a: u64| (a & 0xFFFF_FFFF) as u128;
    let create = rq_cmd(
        1,
        RQN as u128,
        [
            lo(ring),
            (ring >> 32) as u128,
            (LOG_STRIDE << 8
                | LOG_SIZE
                | strides.map_or(0, |t| stride_words(t.log_num, t.log_size))) as u128,
            lo(dbr),
            (dbr >> 32) as u128,
            CQN as u128,
            0,
            0,
        ],
    );
    assert_eq!(s.command(create, seed), 0, "CREATE");
    s
}

impl Setup {
    fn command(&mut self, cmd: Vec<u8>, seed: u64) -> u64 {
        self.b.qcmd.push(cmd);
        self.answers += 1;
        let n = self.answers;
        self.b
            .step_until(&mut self.sim, seed, |b| b.qres.items.len() == n);
        QcmdRes::shape().decode(&self.b.qres.items[n - 1]).status as u64
    }

    /// Post a receive WQE with `segs` (byte_count, lkey, addr), terminated when shorter.
    fn post(&mut self, segs: &[(u32, u32, u64)]) {
        self.write_wqe(&Self::wqe(segs));
    }

    /// Write the WQE at ring position `at` again (`post`'s layout) without posting it.
    fn rewrite(&mut self, at: u16, segs: &[(u32, u32, u64)]) {
        let slot = (at as u64) & ((1 << LOG_SIZE) - 1);
        let w = Self::wqe(segs);
        self.b
            .host
            .mem
            .write(self.rq.ring + (slot << LOG_STRIDE), &w)
            .unwrap();
    }

    /// A receive WQE's bytes: `segs` (byte_count, lkey, addr), terminated when shorter.
    fn wqe(segs: &[(u32, u32, u64)]) -> Vec<u8> {
        let mut w = vec![0u8; 1 << LOG_STRIDE];
        for (i, (n, k, a)) in segs.iter().enumerate() {
            w[16 * i..16 * i + 4].copy_from_slice(&n.to_be_bytes());
            w[16 * i + 4..16 * i + 8].copy_from_slice(&k.to_be_bytes());
            w[16 * i + 8..16 * i + 16].copy_from_slice(&a.to_be_bytes());
        }
        if segs.len() < 4 {
            let t = 16 * segs.len();
            w[t + 4..t + 8].copy_from_slice(&0x100u32.to_be_bytes());
        }
        w
    }

    /// Run `n` cycles with nothing new to send.
    fn idle(&mut self, n: u64) {
        for _ in 0..n {
            self.b.step(&mut self.sim).unwrap();
        }
    }

    /// DMA reads requested so far.
    fn reads(&self) -> u64 {
        self.b.host.dma.stats().read_requests
    }

    /// Post a striding WQE: a next segment, then one data segment (byte_count, lkey, addr).
    fn post_striding(&mut self, (n, k, a): (u32, u32, u64)) {
        let mut w = vec![0u8; 1 << LOG_STRIDE];
        w[16..20].copy_from_slice(&n.to_be_bytes());
        w[20..24].copy_from_slice(&k.to_be_bytes());
        w[24..32].copy_from_slice(&a.to_be_bytes());
        self.write_wqe(&w);
    }

    fn write_wqe(&mut self, w: &[u8]) {
        let slot = (self.pc as u64) & ((1 << LOG_SIZE) - 1);
        self.b
            .host
            .mem
            .write(self.rq.ring + (slot << LOG_STRIDE), w)
            .unwrap();
        self.pc = self.pc.wrapping_add(1);
        self.b
            .host
            .mem
            .write(self.dbr, &(self.pc as u32).to_be_bytes())
            .unwrap();
    }

    /// Random segments (1..=4) covering at least `at_least` bytes, at random alignments in
    /// the buffer area, never overlapping within one round (`cursor` restarts each round).
    fn random_segs(&mut self, at_least: usize, cursor: &mut usize) -> Vec<(u32, u32, u64)> {
        let n = self.rng.gen_range(1..=4);
        let each = at_least.div_ceil(n) + self.rng.gen_range(0..64);
        (0..n)
            .map(|_| {
                *cursor += self.rng.gen_range(0..300);
                let at = *cursor;
                *cursor += each;
                assert!(*cursor < self.buf.1, "the test's buffer area is too small");
                (each as u32, 1u32, self.buf.0 + at as u64)
            })
            .collect()
    }

    /// Send frames (with records, `(queue, frame, info)`; dropped records have no frame) and
    /// check every completion and every byte written against the model (of RQ `self.rq`).
    /// Returns the cycles until the last frame's outcome (its CQE or drop).
    fn send(&mut self, items: &[(u32, Option<Vec<u8>>, RxInfo)], seed: u64, what: &str) -> u64 {
        let start = self.sim.cycles();
        let mut outcome_at = None;
        let k0 = self.b.cmpl.items.len();
        let mut want = Vec::new();
        for (q, f, info) in items {
            self.b.metas.push(meta(*q, f.is_none(), info));
            let Some(f) = f else { continue };
            self.b.frames.push(f.clone());
            self.frames_total += 1;
            if *q == self.rq.rqn {
                let mem = &self.b.host.mem;
                let read = |a: u64, n: usize| {
                    let mut v = vec![0; n];
                    mem.read(a, &mut v).ok().map(|_| v)
                };
                if let Some(r) = self.rq.receive(&read, self.pc, f, info, &self.mrs) {
                    want.push(r);
                }
            }
        }
        let n = want.iter().map(|r| r.cmpls().count()).sum::<usize>();
        // Done when every frame sent so far has its outcome: a CQE, or a drop for want of a
        // queue or a WQE (so the next round's doorbell record cannot race this round).
        let frames = self.frames_total;
        let outcomes =
            ["cqes", "no_wqe", "no_queue"].map(|n| self.sim.port(&format!("stat_{n}")).unwrap());
        let sim_outcomes = |sim: &Sim| outcomes.iter().map(|p| sim.get_u64(*p)).sum::<u64>();
        let mut tail = 20;
        // A budget as well: a design that completes forever must fail, not hang.
        run_until_budget(&mut self.sim, seed, 3000, 2_000_000, |sim| {
            let p = self.b.step(sim)?;
            let quiet = sim_outcomes(sim) == frames && self.b.cmpl.items.len() >= k0 + n;
            if quiet {
                outcome_at.get_or_insert(sim.cycles());
                tail -= 1;
            }
            Ok(Status::new(p || quiet, quiet && tail == 0))
        })
        .unwrap_or_else(|e| {
            let first: Vec<Cmpl> = self.b.cmpl.items[k0..]
                .iter()
                .take(8)
                .map(|x| decode_cmpl(x))
                .collect();
            panic!(
                "{what}: {e}: {} outcomes of {frames} frames, completions {} (first {first:?})",
                sim_outcomes(&self.sim),
                self.b.cmpl.items.len() - k0,
            )
        });
        let got: Vec<Cmpl> = self.b.cmpl.items[k0..]
            .iter()
            .map(|x| decode_cmpl(x))
            .collect();
        let exp: Vec<Cmpl> = want.iter().flat_map(|r| r.cmpls().cloned()).collect();
        assert_eq!(got, exp, "{what}: completions");
        for r in &want {
            for (a, bytes) in &r.writes {
                let mut v = vec![0; bytes.len()];
                self.b.host.mem.read(*a, &mut v).unwrap();
                assert_eq!(&v, bytes, "{what}: bytes at {a:#x}");
            }
        }
        outcome_at.unwrap() - start
    }

    fn stat(&self, n: &str) -> u64 {
        self.sim
            .get_u64(self.sim.port(&format!("stat_{n}")).unwrap())
    }
}

fn random_info(rng: &mut StdRng) -> RxInfo {
    RxInfo {
        vlan: rng.gen_bool(0.3).then(|| rng.gen()),
        l3: rng.gen_range(0..3),
        l4: rng.gen_range(0..3),
        l3_ok: rng.gen(),
        l4_ok: rng.gen(),
        csum: rng.gen(),
        rss_type: rng.gen_range(0..7),
        rss_hash: rng.gen(),
        tunnel: 0,
        tunnel_id: 0,
        tunnel_bad: 0,
        ..RxInfo::default()
    }
    .with_tunnel()
}

trait WithTunnel {
    fn with_tunnel(self) -> Self;
}

impl WithTunnel for RxInfo {
    /// Tunnel fields taken from the others (no draws of their own, so the tests' random
    /// streams do not depend on them): every kind, reason and a 24-bit id occur; a
    /// well-formed tunnel is de-capsulated, delivered whole with the inner offloads (every
    /// pair of inner verdicts) or delivered whole without them.
    fn with_tunnel(mut self) -> Self {
        let h = self.rss_hash;
        self.tunnel = (h % 3) as u8;
        // Well formed about half the time, every reason in the other half.
        self.tunnel_bad = ((h >> 2) % 16).saturating_sub(8) as u8;
        self.tunnel_id = h.rotate_left(7) & 0xFF_FFFF;
        let well_formed = self.tunnel != 0 && self.tunnel_bad == 0;
        let mode = (h >> 27) % 3;
        self.decap = well_formed && mode == 0;
        self.inner = well_formed && mode == 1;
        self.inner_l3_ok = self.inner && h >> 30 & 1 == 1;
        self.inner_l4_ok = self.inner && h >> 31 == 1;
        self
    }
}

#[test]
fn rq_engine_matches_the_model() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        for (ki, (dma, idle)) in [
            (
                DmaConfig {
                    seed: 1 + wi as u64,
                    ..DmaConfig::default()
                },
                0.0,
            ),
            (
                DmaConfig {
                    seed: 9 + wi as u64,
                    latency_min: 1,
                    latency_max: 4,
                    reorder: false,
                    wr_data_stall: 0.4,
                    req_stall: 0.3,
                    ..DmaConfig::default()
                },
                0.3,
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let seed = 200 + 10 * wi as u64 + ki as u64;
            let mut s = setup(&m, seed, dma, idle, None);
            let mut dropped_no_wqe = 0;
            for round in 0..5 {
                let what = format!("w={w} knobs {ki} round {round}");
                let frames: Vec<(u32, Option<Vec<u8>>, RxInfo)> = (0..8)
                    .map(|_| {
                        let len = if s.rng.gen_bool(0.2) {
                            s.rng.gen_range(1500..6000)
                        } else {
                            s.rng.gen_range(60..400)
                        };
                        let f: Vec<u8> = (0..len).map(|_| s.rng.gen()).collect();
                        let info = random_info(&mut s.rng);
                        match s.rng.gen_range(0..10) {
                            0 => (RQN, None, info),  // a dropped frame's record
                            1 => (5, Some(f), info), // an RQ never created
                            _ => (RQN, Some(f), info),
                        }
                    })
                    .collect();
                // WQEs for all but one of this round's frames: the last finds none.
                let mine: Vec<usize> = frames
                    .iter()
                    .filter(|x| x.0 == RQN && x.1.is_some())
                    .map(|x| x.1.as_ref().unwrap().len())
                    .collect();
                let mut cursor = 0;
                for len in &mine[..mine.len().saturating_sub(1)] {
                    let segs = s.random_segs(*len, &mut cursor);
                    s.post(&segs);
                }
                dropped_no_wqe += usize::from(!mine.is_empty());
                s.send(&frames, seed, &what);
                assert!(!s.rq.error, "{what}: a good frame failed");
            }
            assert_eq!(
                s.stat("no_wqe"),
                dropped_no_wqe as u64,
                "w={w}: frames without a WQE"
            );
            assert!(s.stat("no_queue") > 0);
        }
    }
}

#[test]
fn scatter_errors_complete_in_error_and_the_queue_recovers() {
    let Some(m) = model(64) else { return };
    let mut s = setup(&m, 5, DmaConfig::default(), 0.0, None);
    let f: Vec<u8> = (0..1000).map(|i| i as u8).collect();
    let info = RxInfo::default();
    let buf = s.buf;
    for (what, segs, synd) in [
        (
            "frame longer than the list",
            vec![(300u32, 1u32, buf.0), (200, 1, buf.0 + 4000)],
            0x01u8,
        ),
        (
            "segment outside its region",
            vec![(2000, 1, buf.0 + buf.1 as u64 - 100)],
            0x04,
        ),
        ("invalid lkey", vec![(2000, 3, buf.0)], 0x04),
    ] {
        s.post(&segs);
        s.send(&[(RQN, Some(f.clone()), info)], 5, what);
        assert!(s.rq.error, "{what}: the model fails it");
        let last = decode_cmpl(s.b.cmpl.items.last().unwrap());
        assert_eq!((last.opcode, last.syndrome), (14, synd), "{what}");
        s.command(rq_cmd(4, RQN as u128, [0; 8]), 5);
        let r = QcmdRes::shape().decode(s.b.qres.items.last().unwrap());
        assert_eq!(r.out0, 3, "{what}: RQ in error");
        // Frames meanwhile are dropped; RESET brings the RQ back.
        s.post(&[(2000, 1, buf.0)]);
        let before = s.stat("no_queue");
        s.send(
            &[(RQN, Some(f.clone()), info)],
            5,
            &format!("{what}: while in error"),
        );
        assert_eq!(s.stat("no_queue"), before + 1);
        assert_eq!(
            s.command(rq_cmd(3, RQN as u128, [0; 8]), 5),
            0,
            "{what}: RESET"
        );
        s.rq.error = false;
        s.send(
            &[(RQN, Some(f.clone()), info)],
            5,
            &format!("{what}: after RESET"),
        );
    }
}

/// The striding RQ of the tests: 8 strides of 256 bytes per WQE.
const STRIDES: Strides = Strides {
    log_num: 3,
    log_size: 8,
};
const WQE_BYTES: u32 = 1 << (STRIDES.log_num + STRIDES.log_size);

#[test]
fn striding_rq_matches_the_model() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(m) = model(w) else { return };
        let dma = DmaConfig {
            seed: 31 + wi as u64,
            latency_min: 1,
            latency_max: 6,
            wr_data_stall: 0.3,
            req_stall: 0.3,
            ..DmaConfig::default()
        };
        let seed = 400 + wi as u64;
        let mut s = setup(&m, seed, dma, 0.3, Some(STRIDES));
        let (mut fillers, mut packed) = (0, 0);
        for round in 0..6 {
            let what = format!("w={w} striding round {round}");
            let frames: Vec<(u32, Option<Vec<u8>>, RxInfo)> = (0..10)
                .map(|_| {
                    let len = if s.rng.gen_bool(0.25) {
                        s.rng.gen_range(700..=WQE_BYTES as usize)
                    } else {
                        s.rng.gen_range(60..300)
                    };
                    let f: Vec<u8> = (0..len).map(|_| s.rng.gen()).collect();
                    let info = random_info(&mut s.rng);
                    match s.rng.gen_range(0..12) {
                        0 => (RQN, None, info),
                        _ => (RQN, Some(f), info),
                    }
                })
                .collect();
            // Fewer WQEs than frames (several frames share one); a round may run out of
            // them, then its remaining frames are dropped.
            for _ in 0..s.rng.gen_range(1..=4) {
                let at = s.buf.0 + (s.pc as u64 % 64) * WQE_BYTES as u64;
                s.post_striding((WQE_BYTES, 1, at));
            }
            s.send(&frames, seed, &what);
            assert!(!s.rq.error, "{what}: a good frame failed");
            let got: Vec<Cmpl> = s.b.cmpl.items.iter().map(|x| decode_cmpl(x)).collect();
            fillers = got.iter().filter(|c| c.byte_cnt >> 31 == 1).count();
            packed = got
                .iter()
                .filter(|c| c.byte_cnt >> 31 == 0 && c.wqe_counter > 0)
                .count();
        }
        assert!(fillers > 0, "w={w}: no filler CQE was exercised");
        assert!(packed > 0, "w={w}: no WQE took a second frame");
        assert!(s.stat("no_wqe") > 0, "w={w}: no frame ran out of WQEs");
    }
}

#[test]
fn striding_rq_fillers_drops_and_errors() {
    let Some(m) = model(64) else { return };
    // Stride geometry CREATE refuses: strides under 64 bytes, WQEs under 32 bytes.
    let mut s = setup(&m, 7, DmaConfig::default(), 0.0, Some(STRIDES));
    let lo = |a: u64| (a & 0xFFFF_FFFF) as u128;
    for (what, w2) in [
        ("32-byte strides", 4 << 8 | LOG_SIZE | stride_words(3, 5)),
        ("16-byte WQEs", 4 << 8 | LOG_SIZE | stride_words(3, 8)),
        (
            "2^15 strides",
            LOG_STRIDE << 8 | LOG_SIZE | stride_words(15, 8),
        ),
    ] {
        let create = rq_cmd(
            1,
            3,
            [
                lo(s.rq.ring),
                0,
                w2 as u128,
                lo(s.dbr),
                0,
                CQN as u128,
                0,
                0,
            ],
        );
        assert_ne!(s.command(create, 7), 0, "{what}: CREATE accepted");
    }
    let buf = s.buf;
    let info = RxInfo::default();
    let frame = |n: usize| -> Vec<u8> { (0..n).map(|i| (i * 7) as u8).collect() };
    // Two frames share a WQE; the third does not fit in the strides left: a filler CQE,
    // then the next WQE. A fourth does not fit either, and there is no next WQE: dropped.
    s.post_striding((WQE_BYTES, 1, buf.0));
    s.post_striding((WQE_BYTES, 1, buf.0 + 4096));
    let items: Vec<_> = [300, 1000, 1200, 1500]
        .into_iter()
        .map(|n| (RQN, Some(frame(n)), info))
        .collect();
    s.send(&items, 7, "filler then drop");
    let got: Vec<Cmpl> = s.b.cmpl.items.iter().map(|x| decode_cmpl(x)).collect();
    let cnt: Vec<(u16, u16, u32)> = got
        .iter()
        .map(|c| (c.wqe_id, c.wqe_counter, c.byte_cnt))
        .collect();
    assert_eq!(
        cnt,
        [
            (0, 0, 2 << 16 | 300),
            (0, 2, 4 << 16 | 1000),
            (0, 6, 1 << 31 | 2 << 16),
            (1, 0, 5 << 16 | 1200),
            (1, 5, 1 << 31 | 3 << 16),
        ],
        "WQE id, stride index and count, fillers"
    );
    assert_eq!(s.stat("no_wqe"), 1, "the frame after the last filler");
    // Two doorbell-record reads (the first frame, the last) and one read per WQE: the second
    // frame into a WQE is not read again.
    assert_eq!(s.b.host.dma.stats().read_requests, 4, "DMA reads");
    // Errors: a frame larger than a whole WQE, a data segment shorter than the strides the
    // frame takes, an lkey with no region.
    // Each consumes its WQE (2, 3, 4), which its error CQE names.
    for (wqe, (what, seg, len, synd, vendor)) in [
        ("frame over a WQE", (WQE_BYTES, 1, buf.0), 2049, 0x01u8, 1u8),
        ("short data segment", (600, 1, buf.0), 1000, 0x01, 2),
        ("invalid lkey", (WQE_BYTES, 3, buf.0), 100, 0x04, 1),
    ]
    .into_iter()
    .enumerate()
    {
        s.post_striding(seg);
        s.send(&[(RQN, Some(frame(len)), info)], 7, what);
        assert!(s.rq.error, "{what}: the model fails it");
        let last = decode_cmpl(s.b.cmpl.items.last().unwrap());
        assert_eq!(
            (
                last.opcode,
                last.syndrome,
                last.vendor_err_synd,
                last.wqe_id
            ),
            (14, synd, vendor, 2 + wqe as u16),
            "{what}"
        );
        assert_eq!(
            s.command(rq_cmd(3, RQN as u128, [0; 8]), 7),
            0,
            "{what}: RESET"
        );
        s.rq.error = false;
    }
}

/// A second RQ of a test: its model, doorbell record and producer counter, swapped into the
/// [`Setup`] ([`Setup::swap`]) while its frames are sent.
struct OtherRq {
    rq: Rq,
    dbr: u64,
    pc: u16,
}

impl Setup {
    /// Create RQ `rqn` (plain, on CQ `cqn`) with its own ring (`ring_len` bytes of it
    /// mapped) and doorbell record.
    fn create_other(&mut self, rqn: u32, cqn: u32, ring_len: usize, seed: u64) -> OtherRq {
        let mem = &mut self.b.host.mem;
        let ring = mem.alloc(ring_len, 4096).unwrap().addr;
        let dbr = mem.alloc(8, 8).unwrap().addr;
        let lo = |a: u64| (a & 0xFFFF_FFFF) as u128;
        let create = rq_cmd(
            1,
            rqn as u128,
            [
                lo(ring),
                (ring >> 32) as u128,
                (LOG_STRIDE << 8 | LOG_SIZE) as u128,
                lo(dbr),
                (dbr >> 32) as u128,
                cqn as u128,
                0,
                0,
            ],
        );
        assert_eq!(self.command(create, seed), 0, "CREATE {rqn}");
        OtherRq {
            rq: Rq {
                rqn,
                ring,
                log_size: LOG_SIZE,
                log_stride: LOG_STRIDE,
                cqn,
                ci: 0,
                error: false,
                strides: None,
                stride: 0,
            },
            dbr,
            pc: 0,
        }
    }

    /// Make `o` the RQ that `post`, `rewrite` and `send` work on (and the current one `o`).
    fn swap(&mut self, o: &mut OtherRq) {
        std::mem::swap(&mut self.rq, &mut o.rq);
        std::mem::swap(&mut self.dbr, &mut o.dbr);
        std::mem::swap(&mut self.pc, &mut o.pc);
    }
}

/// DMA reads answered after this many cycles, no sooner and no later.
const SLOW: u64 = 600;

/// A frame of `n` bytes, told apart by `k`.
fn pattern(n: usize, k: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8) ^ k).collect()
}

fn slow_dma() -> DmaConfig {
    DmaConfig {
        seed: 3,
        latency_min: SLOW,
        latency_max: SLOW,
        reorder: false,
        ..DmaConfig::default()
    }
}

#[test]
fn wqes_are_read_ahead_per_rq() {
    let Some(m) = model(64) else { return };
    let mut s = setup(&m, 11, slow_dma(), 0.0, None);
    let mut other = s.create_other(3, 5, (1 << LOG_SIZE) << LOG_STRIDE, 11);
    let info = RxInfo::default();
    let mut cursor = 0;
    // Six WQEs on RQ 2, four on RQ 3, posted before any frame.
    for n in [6, 4] {
        for _ in 0..n {
            let segs = s.random_segs(300, &mut cursor);
            s.post(&segs);
        }
        s.swap(&mut other);
    }
    // The first frame of each RQ reads the doorbell record and its WQE; while that read is in
    // flight, the RQ's other posted WQEs (fewer than its read-ahead depth) are read into the
    // WQE cache, and none beyond them.
    for q in [RQN, 3] {
        let t = s.send(&[(q, Some(pattern(300, q as u8)), info)], 11, "first frame");
        assert!(
            t > 2 * SLOW,
            "RQ {q}: first frame in {t} cycles, without its two reads"
        );
        s.swap(&mut other);
    }
    assert_eq!(
        s.reads(),
        12,
        "per RQ: doorbell record, WQE 0, the other posted WQEs ahead (RQ 2: 5, RQ 3: 3)"
    );
    // Frames of the two RQs in turn, after their WQEs landed: none waits for a read (each
    // completes in less than one DMA latency), and none is read again.
    for k in 1..4u8 {
        s.idle(SLOW + 100);
        for q in [RQN, 3] {
            let what = format!("RQ {q} frame {k}");
            let t = s.send(&[(q, Some(pattern(300, k ^ q as u8)), info)], 11, &what);
            assert!(t < SLOW, "{what}: {t} cycles: it waited for a read");
            s.swap(&mut other);
        }
    }
    assert_eq!(s.reads(), 12, "each WQE read once");
    // Two frames of RQ 2 back to back (WQEs 4 and 5): both WQEs were read ahead.
    s.idle(SLOW + 100);
    let two: Vec<_> = (0..2)
        .map(|k| (RQN, Some(pattern(300, 20 + k)), info))
        .collect();
    let t = s.send(&two, 11, "two frames back to back");
    assert!(
        t < SLOW,
        "two frames back to back: {t} cycles: a read waited for"
    );
    // The seventh frame finds no WQE: the doorbell record is read (nothing was read ahead
    // of it).
    s.idle(SLOW + 100);
    s.send(&[(RQN, Some(pattern(300, 9)), info)], 11, "no WQE");
    assert_eq!((s.stat("no_wqe"), s.reads()), (1, 13));
}

#[test]
fn a_command_empties_the_rqs_wqe_cache_entries() {
    let Some(m) = model(64) else { return };
    let mut s = setup(&m, 13, slow_dma(), 0.0, None);
    let info = RxInfo::default();
    let mut cursor = 0;
    let frame = |k: u8| pattern(500, k);
    let d = RQ_WQE_AHEAD as u64;
    // Two WQEs more than the RQ's read-ahead depth.
    for _ in 0..d + 2 {
        let segs = s.random_segs(500, &mut cursor);
        s.post(&segs);
    }
    // WQE 0's frame: while its read is in flight WQEs 1..d are read ahead (the depth: the
    // RQ's WQEs ci..ci + d), after it WQE d + 1; they land.
    s.send(&[(RQN, Some(frame(1)), info)], 13, "WQE 0");
    s.idle(SLOW + 100);
    assert_eq!(
        s.reads(),
        2 + d,
        "doorbell record, WQE 0, WQEs 1..={d} ahead"
    );
    // RESET, the driver writes WQE 1 again (other buffers): the frame uses the new one, read
    // again, and the WQEs after it are read again.
    assert_eq!(s.command(rq_cmd(3, RQN as u128, [0; 8]), 13), 0, "RESET");
    let segs = s.random_segs(500, &mut cursor);
    s.rewrite(1, &segs);
    let t = s.send(&[(RQN, Some(frame(2)), info)], 13, "WQE 1 after RESET");
    assert!(t > SLOW, "WQE 1 after RESET: {t} cycles, without a read");
    assert_eq!(
        s.reads(),
        2 + d + 1 + d,
        "WQE 1 again, WQEs 2..={} ahead",
        d + 1
    );
    // RESET while the read of WQE d + 1 (issued after the frame) is in flight: its answer is
    // dropped. The driver writes WQE 2 again, and WQE d + 1 once that answer has come (the
    // host reads memory when it answers); WQE 2 is read again, the ones after it ahead, and
    // every frame up to WQE d + 1 uses the new WQEs.
    assert_eq!(s.command(rq_cmd(3, RQN as u128, [0; 8]), 13), 0, "RESET");
    let segs = s.random_segs(500, &mut cursor);
    s.rewrite(2, &segs);
    s.idle(SLOW + 100);
    let segs = s.random_segs(500, &mut cursor);
    s.rewrite(d as u16 + 1, &segs);
    s.send(&[(RQN, Some(frame(3)), info)], 13, "WQE 2 after RESET");
    assert_eq!(
        s.reads(),
        2 + d + 1 + d + d,
        "WQE 2 again, WQEs 3..={} ahead",
        d + 1
    );
    let rest: Vec<_> = (3..=d + 1)
        .map(|k| (RQN, Some(frame(k as u8 + 1)), info))
        .collect();
    s.send(&rest, 13, "WQEs 3 on after RESET");
    assert_eq!(s.reads(), 2 + d + 1 + d + d, "no WQE read twice");
}

/// A frame whose WQE is nowhere while the WQE cache is full of other RQs' WQEs read ahead
/// takes one of their ready entries (that WQE is read again when its own frame comes): RQs
/// with their read-ahead depth each fill the cache, one more RQ's frame still completes, and
/// every frame of the first RQ still gets its own WQE.
#[test]
fn a_frame_takes_an_entry_of_a_full_wqe_cache() {
    let Some(m) = model(64) else { return };
    let mut s = setup(&m, 37, slow_dma(), 0.0, None);
    let ring_len = (1 << LOG_SIZE) << LOG_STRIDE;
    let d = RQ_WQE_AHEAD as u64;
    // RQs that fill the cache with their read-ahead: RQN and the ones after it, then one more.
    let k = (RQ_WQE_CACHE / RQ_WQE_AHEAD) as usize;
    assert!(
        RQN as usize + k < RQS as usize,
        "the test's RQs fit in the engine's"
    );
    let mut others: Vec<OtherRq> = (1..=k as u32)
        .map(|i| s.create_other(RQN + i, i % 8, ring_len, 37))
        .collect();
    let info = RxInfo::default();
    let mut cursor = 0;
    let n = d + 2;
    // Each RQ: n WQEs; its first frame reads the doorbell record and WQE 0, WQEs 1..=d ahead.
    for i in 0..k {
        if i > 0 {
            s.swap(&mut others[i - 1]);
        }
        for _ in 0..n {
            let segs = s.random_segs(200, &mut cursor);
            s.post(&segs);
        }
        let q = s.rq.rqn;
        s.send(&[(q, Some(pattern(200, i as u8)), info)], 37, "first frame");
        s.idle(SLOW + 100);
        if i > 0 {
            s.swap(&mut others[i - 1]);
        }
    }
    let full = k as u64 * (2 + d);
    assert_eq!(s.reads(), full, "{k} RQs: d WQEs ahead each");
    // The last RQ's first frame: its WQE goes into an entry of RQN's (the cache is full).
    s.swap(&mut others[k - 1]);
    for _ in 0..2 {
        let segs = s.random_segs(200, &mut cursor);
        s.post(&segs);
    }
    let q = s.rq.rqn;
    s.send(
        &[(q, Some(pattern(200, 77)), info)],
        37,
        "the last RQ's first frame",
    );
    s.idle(SLOW + 100);
    assert_eq!(
        s.reads(),
        full + 3,
        "the last RQ: doorbell record, WQE 0, WQE 1 ahead once WQE 0 is used up"
    );
    // RQN's other frames: the WQE whose entry the last RQ took is read again.
    s.swap(&mut others[k - 1]);
    let frames: Vec<_> = (1..n)
        .map(|j| (RQN, Some(pattern(200, 100 + j as u8)), info))
        .collect();
    s.send(&frames, 37, "RQN's other frames");
    assert_eq!(
        s.reads(),
        full + 3 + 2,
        "RQN: WQE {} ahead, WQE {d} read again",
        n - 1
    );
}

#[test]
fn a_wqe_read_ahead_in_error_fails_the_frame_that_uses_it() {
    let Some(m) = model(64) else { return };
    let mut s = setup(&m, 17, slow_dma(), 0.0, None);
    let info = RxInfo::default();
    let mut cursor = 0;
    let frame = |k: u8| pattern(200, k);
    // RQ 3's ring has only its first WQE mapped; WQE 1 is posted but cannot be read.
    let mut other = s.create_other(3, 5, 1 << LOG_STRIDE, 17);
    s.swap(&mut other);
    let segs = s.random_segs(200, &mut cursor);
    s.post(&segs);
    s.pc += 1;
    let (dbr, pc) = (s.dbr, s.pc as u32);
    s.b.host.mem.write(dbr, &pc.to_be_bytes()).unwrap();
    // WQE 0 completes the first frame; WQE 1, read ahead, is answered with an error.
    s.send(&[(3, Some(frame(1)), info)], 17, "WQE 0");
    assert!(!s.rq.error, "WQE 0 is good");
    assert_eq!(s.stat("errors"), 0, "no error before a frame uses WQE 1");
    s.idle(SLOW + 100);
    assert_eq!(s.reads(), 3, "doorbell record, WQE 0, WQE 1 ahead");
    // The next frame uses WQE 1: LOCAL_ACCESS, the RQ in error (no read again).
    s.send(&[(3, Some(frame(2)), info)], 17, "WQE 1");
    assert!(s.rq.error, "the model fails it");
    let last = decode_cmpl(s.b.cmpl.items.last().unwrap());
    assert_eq!((last.opcode, last.syndrome), (14, 0x11), "LOCAL_ACCESS");
    assert_eq!((s.stat("errors"), s.reads()), (1, 3));
    // The other RQ goes on.
    s.swap(&mut other);
    let segs = s.random_segs(200, &mut cursor);
    s.post(&segs);
    s.send(&[(RQN, Some(frame(3)), info)], 17, "RQ 2");
}

#[test]
fn a_frame_arrives_while_the_one_before_is_scattered() {
    // Frames back to back (no idle, no backpressure, writes always taken, WQEs read ahead):
    // the engine takes each frame into its ring while it scatters the one before, so eight
    // frames complete in little more than their input beats, not in their input and output
    // beats one after the other (about twice as many).
    for w in [8, 64] {
        let Some(m) = model(w) else { return };
        let dma = DmaConfig {
            seed: 5,
            latency_min: 20,
            latency_max: 20,
            reorder: false,
            ..DmaConfig::default()
        };
        let mut s = setup(&m, 23, dma, 0.0, None);
        s.b.cmpl = RecordSink::new(&s.sim, "m_cmpl", 27, 0.0).unwrap();
        let info = RxInfo::default();
        let (n, len) = (8usize, 1000usize);
        let mut cursor = 0;
        for _ in 0..=n {
            let segs = s.random_segs(len, &mut cursor);
            s.post(&segs);
        }
        // The first frame reads the doorbell record and its WQE; the next two are read ahead.
        s.send(&[(RQN, Some(pattern(len, 1)), info)], 23, "first frame");
        s.idle(100);
        let frames: Vec<_> = (0..n)
            .map(|k| (RQN, Some(pattern(len, 2 + k as u8)), info))
            .collect();
        let t = s.send(&frames, 23, "back to back");
        let beats_in = (n * len.div_ceil(w as usize / 8)) as u64;
        assert!(
            2 * t < 3 * beats_in,
            "{w} bits: {n} frames of {len} bytes in {t} cycles, {beats_in} input beats: \
             the input waited for the scatter"
        );
    }
}

/// Frames back to back into one RQ with its whole ring posted, DMA reads answered after 150
/// cycles: the RQ's next WQEs are read ahead together (many reads outstanding at once, up to
/// its share of the WQE cache), so after the first frame none waits a round trip of its own;
/// every CQE and byte as the model's.
#[test]
fn the_wqes_of_one_rq_are_read_ahead_together() {
    const LAT: u64 = 150;
    let Some(m) = model(64) else { return };
    let dma = DmaConfig {
        seed: 9,
        latency_min: LAT,
        latency_max: LAT,
        reorder: false,
        max_outstanding_reads: 64,
        ..DmaConfig::default()
    };
    let mut s = setup(&m, 29, dma, 0.0, None);
    s.b.cmpl = RecordSink::new(&s.sim, "m_cmpl", 31, 0.0).unwrap();
    let info = RxInfo::default();
    let n = 1usize << LOG_SIZE;
    let len = 60usize;
    let mut cursor = 0;
    for _ in 0..n {
        let segs = s.random_segs(len, &mut cursor);
        s.post(&segs);
    }
    // The first frame reads the doorbell record and its WQE, then the WQEs after it ahead.
    s.send(&[(RQN, Some(pattern(len, 1)), info)], 29, "first frame");
    let frames: Vec<_> = (1..n)
        .map(|k| (RQN, Some(pattern(len, 1 + k as u8)), info))
        .collect();
    assert_eq!(
        s.reads(),
        2 + RQ_WQE_AHEAD as u64,
        "doorbell record, WQE 0, then as many WQEs ahead as the RQ's depth and no more"
    );
    let t = s.send(&frames, 29, "back to back");
    let most = s.b.host.dma.stats().max_outstanding;
    eprintln!(
        "{} frames back to back in {t} cycles, {most} reads outstanding at most",
        n - 1
    );
    assert_eq!(
        s.reads(),
        1 + n as u64,
        "the doorbell record once, each WQE once"
    );
    assert!(
        most >= 6,
        "at most {most} DMA reads were outstanding at once"
    );
    // Two WQEs read ahead per round trip take over 1400 cycles for these frames; with the
    // RQ's depth in flight they take about 450.
    assert!(t < 800, "{} frames back to back took {t} cycles", n - 1);
}
