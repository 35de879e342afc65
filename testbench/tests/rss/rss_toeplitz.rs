//! `rss_toeplitz` through Verilator:
//! 1. the 16 Microsoft verification vectors (IPv4 and IPv6, 2- and 4-tuple) with the reset
//!    (Microsoft) key, plus the reset enables and table, on every configuration;
//! 2. differential against `nicgen_model::rss::rss` with random keys, enables and tables
//!    programmed through the config port, random requests, random idle and backpressure;
//! 3. configurations: 128 entries x 16 queues (default) and 64 entries x 3 queues with another
//!    tag width, tree shape and replication; latency and 1 request/cycle throughput are
//!    measured against the documented values.
//!
//! Both configurations pass `verilator --lint-only -Wall` with no warnings; the default one's
//! vector run under idle and backpressure is replayed on Icarus and must agree cycle by cycle.
//!
//! The record streams have no `tkeep`/`tlast`, so the test drives them with its own loop: the
//! source holds an offered request until it is taken, the sink checks that a stalled result is
//! held (stream rule 1), and every run has a cycle budget so nothing can hang.

use nicgen_edsl::Shape;
use nicgen_hdl::rss::rss_toeplitz::{
    cfg_addr, cqe_rss_hash_type, rss_toeplitz, RssCfg, RssReq, RssRes, MICROSOFT_KEY as HDL_KEY,
};
use nicgen_model::rss::{rss, RssType, ALL_TYPES, L3, L4};
use nicgen_model::toeplitz::MICROSOFT_KEY;
use nicgen_tb::{PortId, Sim};
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::net::{Ipv4Addr, Ipv6Addr};

#[derive(Clone, Copy, Debug)]
struct Req {
    l3: u8,
    l4: u8,
    frag: bool,
    src: u128,
    dst: u128,
    sport: u16,
    dport: u16,
    tag: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Res {
    hash: u32,
    rss_type: u8,
    queue: u32,
    tag: u64,
}

/// The configuration the block should hold (mirrors its registers).
#[derive(Clone, Debug)]
struct Config {
    key: [u8; 40],
    enables: u8,
    table: Vec<u32>,
}

impl Config {
    fn reset(cfg: &RssCfg) -> Config {
        Config {
            key: MICROSOFT_KEY,
            enables: ALL_TYPES,
            table: cfg.default_table(),
        }
    }

    fn expect(&self, r: &Req) -> Res {
        let (hash, t, queue) = rss(
            &self.key,
            self.enables,
            &self.table,
            L3::from_code(r.l3),
            L4::from_code(r.l4),
            r.frag,
            r.src,
            r.dst,
            r.sport,
            r.dport,
        );
        Res {
            hash,
            rss_type: t.code(),
            queue,
            tag: r.tag,
        }
    }
}

struct Ports {
    s_data: PortId,
    s_valid: PortId,
    s_ready: PortId,
    m_data: PortId,
    m_valid: PortId,
    m_ready: PortId,
    we: PortId,
    addr: PortId,
    wdata: PortId,
}

struct Bench {
    cfg: RssCfg,
    req: RssReq<u32>,
    res: RssRes<u32>,
    sim: Sim,
    p: Ports,
}

/// What one run observed.
struct Run {
    results: Vec<Res>,
    /// Loop iteration of each request's transfer and of each result's transfer.
    accepted_at: Vec<u64>,
    first_valid_at: Vec<u64>,
}

impl Bench {
    fn new(d: &Dut, cfg: RssCfg) -> Bench {
        let mut sim = d.model.instance();
        reset(&mut sim);
        let port = |n: &str| sim.port(n).unwrap();
        let p = Ports {
            s_data: port("s_axis_req_tdata"),
            s_valid: port("s_axis_req_tvalid"),
            s_ready: port("s_axis_req_tready"),
            m_data: port("m_axis_res_tdata"),
            m_valid: port("m_axis_res_tvalid"),
            m_ready: port("m_axis_res_tready"),
            we: port("cfg_we"),
            addr: port("cfg_addr"),
            wdata: port("cfg_wdata"),
        };
        assert_eq!(sim.width(p.s_data), cfg.req_layout().width());
        assert_eq!(sim.width(p.m_data), cfg.res_layout().width());
        Bench {
            cfg,
            req: cfg.req_layout(),
            res: cfg.res_layout(),
            sim,
            p,
        }
    }

    fn write(&mut self, addr: u32, data: u32) {
        self.sim.set(self.p.we, 1);
        self.sim.set(self.p.addr, addr as u64);
        self.sim.set(self.p.wdata, data as u64);
        self.sim.cycle();
        self.sim.set(self.p.we, 0);
        self.sim.set(self.p.addr, 0);
        self.sim.set(self.p.wdata, 0);
    }

    /// Program `c` through the config port (every key word, the enables, every table entry).
    fn program(&mut self, c: &Config) {
        for k in 0..10 {
            let b = &c.key[4 * k..4 * k + 4];
            self.write(
                cfg_addr::KEY + k as u32,
                u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            );
        }
        self.write(cfg_addr::ENABLES, c.enables as u32 | 0xFFFF_FFC0);
        for (i, q) in c.table.iter().enumerate() {
            self.write(cfg_addr::TABLE + i as u32, *q);
        }
    }

    fn encode(&self, r: &Req) -> Vec<u8> {
        self.req.encode(&RssReq {
            l3: r.l3 as u128,
            l4: r.l4 as u128,
            frag: r.frag as u128,
            src_ip: r.src,
            dst_ip: r.dst,
            src_port: r.sport as u128,
            dst_port: r.dport as u128,
            tag: r.tag as u128,
        })
    }

    fn decode(&self, bytes: &[u8]) -> Res {
        let f = self.res.decode(bytes);
        Res {
            hash: f.hash as u32,
            rss_type: f.rss_type as u8,
            queue: f.queue as u32,
            tag: f.tag as u64,
        }
    }

    /// Send `reqs` with random idle (probability per cycle of not offering a new request) and
    /// backpressure (probability of `tready` low); collect every result. Panics, naming the
    /// seed, on a rule-1 violation, on results beyond the requests, or past the cycle budget.
    fn run(&mut self, reqs: &[Req], seed: u64, idle: f64, backpressure: f64) -> Run {
        let mut rng = StdRng::seed_from_u64(seed);
        let encoded: Vec<Vec<u8>> = reqs.iter().map(|r| self.encode(r)).collect();
        let n = reqs.len();
        let budget = 40 * n as u64 + 400;
        let mut next = 0;
        let mut offering = false;
        let mut held: Option<Vec<u8>> = None; // a result offered and not taken last cycle
        let mut run = Run {
            results: Vec::new(),
            accepted_at: Vec::new(),
            first_valid_at: Vec::new(),
        };
        let mut it = 0u64;
        while run.results.len() < n {
            assert!(
                it < budget,
                "seed {seed}: {} of {n} results after {budget} cycles ({next} requests taken)",
                run.results.len()
            );
            if !offering && next < n && !rng.gen_bool(idle) {
                offering = true;
            }
            self.sim.set(self.p.s_valid, offering as u64);
            if offering {
                self.sim.set_bytes_le(self.p.s_data, &encoded[next]);
            } else {
                // Junk on an idle bus must not matter.
                let junk: Vec<u8> = (0..encoded[0].len()).map(|_| rng.gen()).collect();
                let w = self.req.width();
                let mut junk = junk;
                if !w.is_multiple_of(8) {
                    *junk.last_mut().unwrap() &= (1u8 << (w % 8)) - 1;
                }
                self.sim.set_bytes_le(self.p.s_data, &junk);
            }
            let ready = !rng.gen_bool(backpressure);
            self.sim.set(self.p.m_ready, ready as u64);
            self.sim.cycle();
            if offering && self.sim.get_bool(self.p.s_ready) {
                run.accepted_at.push(it);
                next += 1;
                offering = false;
            }
            let valid = self.sim.get_bool(self.p.m_valid);
            let data = self.sim.get_bytes_le(self.p.m_data);
            if let Some(h) = held.take() {
                assert!(valid, "seed {seed}, cycle {it}: rule 1: m_axis_res_tvalid dropped before the transfer");
                assert_eq!(
                    data, h,
                    "seed {seed}, cycle {it}: rule 1: m_axis_res_tdata changed while stalled"
                );
            }
            if valid {
                if run.first_valid_at.len() == run.results.len() {
                    run.first_valid_at.push(it);
                }
                if ready {
                    assert!(
                        run.results.len() < next,
                        "seed {seed}, cycle {it}: a result before its request"
                    );
                    run.results.push(self.decode(&data));
                } else {
                    held = Some(data);
                }
            }
            it += 1;
        }
        // Nothing more comes out.
        self.sim.set(self.p.s_valid, 0);
        self.sim.set(self.p.m_ready, 1);
        for _ in 0..2 * self.cfg.latency() + 4 {
            self.sim.cycle();
            assert!(
                !self.sim.get_bool(self.p.m_valid),
                "seed {seed}: a result beyond the {n} requests"
            );
        }
        run
    }
}

/// The Microsoft verification flows (wire-formats.md §3.6), from the model.
use nicgen_model::toeplitz::{MICROSOFT_V4 as MS_V4, MICROSOFT_V6 as MS_V6};

/// The 16 vectors as (request, expected hash, expected type): 2-tuple (L4 other) and TCP
/// 4-tuple for each flow.
fn microsoft_vectors(tag_bits: u32) -> Vec<(Req, u32, u8)> {
    let mut v = Vec::new();
    let mut push = |l3: u8, s: u128, d: u128, sp: u16, dp: u16, two: u32, four: u32| {
        let tag = v.len() as u64 & ((1 << tag_bits) - 1);
        let r = Req {
            l3,
            l4: 0,
            frag: false,
            src: s,
            dst: d,
            sport: sp,
            dport: dp,
            tag,
        };
        let ty = if l3 == 1 {
            RssType::Ipv4
        } else {
            RssType::Ipv6
        };
        v.push((r, two, ty.code()));
        let r = Req {
            l4: 1,
            tag: (tag + 1) & ((1 << tag_bits) - 1),
            ..r
        };
        let ty = if l3 == 1 {
            RssType::TcpIpv4
        } else {
            RssType::TcpIpv6
        };
        v.push((r, four, ty.code()));
    };
    for (s, sp, d, dp, two, four) in MS_V4 {
        let s = u32::from(s.parse::<Ipv4Addr>().unwrap()) as u128;
        let d = u32::from(d.parse::<Ipv4Addr>().unwrap()) as u128;
        push(1, s, d, sp, dp, two, four);
    }
    for (s, sp, d, dp, two, four) in MS_V6 {
        let s = u128::from(s.parse::<Ipv6Addr>().unwrap());
        let d = u128::from(d.parse::<Ipv6Addr>().unwrap());
        push(2, s, d, sp, dp, two, four);
    }
    assert_eq!(v.len(), 16);
    v
}

fn random_req(rng: &mut StdRng, tag_bits: u32) -> Req {
    // Mostly IP, all codes (3 = reserved) present; addresses random in all 128 bits so IPv4
    // must ignore the high ones.
    let l3 = match rng.gen_range(0..10) {
        0 => 0,
        1 => 3,
        2..=5 => 1,
        _ => 2,
    };
    Req {
        l3,
        l4: rng.gen_range(0..4),
        frag: rng.gen_bool(0.15),
        src: rng.gen(),
        dst: rng.gen(),
        sport: rng.gen(),
        dport: rng.gen(),
        tag: rng.gen::<u64>() & ((1u64 << tag_bits) - 1),
    }
}

fn random_config(rng: &mut StdRng, cfg: &RssCfg, phase: usize) -> Config {
    let mut key = [0u8; 40];
    rng.fill(&mut key[..]);
    let enables = match phase % 4 {
        0 => ALL_TYPES,
        1 => 0,
        _ => rng.gen_range(0..64),
    };
    let qmax = 1u32 << cfg.queue_bits();
    let table = (0..cfg.table_size)
        .map(|_| rng.gen_range(0..qmax))
        .collect();
    Config {
        key,
        enables,
        table,
    }
}

/// The configurations under test: the default, and 64 entries x 3 queues with a 5-bit tag, a
/// deeper XOR tree (96 -> 12 -> 2 -> 1) and four copies of the input and key.
fn configs() -> Vec<RssCfg> {
    vec![
        RssCfg::default(),
        RssCfg {
            table_size: 64,
            queues: 3,
            tag_bits: 5,
            first_terms: 3,
            xor_fanin: 8,
            replicas: 4,
            result_depth: 32,
        },
    ]
}

fn check_vectors(b: &mut Bench, seed: u64, idle: f64, bp: f64) -> Run {
    let vecs = microsoft_vectors(b.cfg.tag_bits);
    let reqs: Vec<Req> = vecs.iter().map(|v| v.0).collect();
    let run = b.run(&reqs, seed, idle, bp);
    let model = Config::reset(&b.cfg);
    for (i, ((r, hash, ty), got)) in vecs.iter().zip(&run.results).enumerate() {
        let want = Res {
            hash: *hash,
            rss_type: *ty,
            queue: (hash & (b.cfg.table_size - 1)) % b.cfg.queues,
            tag: r.tag,
        };
        assert_eq!(*got, want, "{:?}: vector {i} ({r:x?})", b.cfg);
        assert_eq!(*got, model.expect(r), "{:?}: vector {i}: model", b.cfg);
    }
    run
}

#[test]
fn microsoft_vectors_latency_and_throughput() {
    assert_eq!(
        HDL_KEY, MICROSOFT_KEY,
        "the block's reset key is the Microsoft key"
    );
    for t in 0..7u8 {
        assert_eq!(
            cqe_rss_hash_type(t),
            RssType::from_code(t).unwrap().cqe_hash_type()
        );
    }
    for (ci, cfg) in configs().into_iter().enumerate() {
        let Some(d) = dut(&rss_toeplitz(&cfg).unwrap()) else {
            return;
        };
        lint_clean(&d.gen);
        // Back to back, no backpressure: every cycle a request in, and the first result exactly
        // `latency` cycles after the first request.
        let mut b = Bench::new(&d, cfg);
        let run = check_vectors(&mut b, 1, 0.0, 0.0);
        let acc = &run.accepted_at;
        assert_eq!(
            acc.last().unwrap() - acc[0],
            15,
            "{cfg:?}: 16 requests in 16 cycles"
        );
        let lat: Vec<u64> = acc
            .iter()
            .zip(&run.first_valid_at)
            .map(|(a, v)| v - a)
            .collect();
        assert!(
            lat.iter().all(|l| *l == cfg.latency() as u64),
            "{cfg:?}: latency per request {lat:?}, documented {}",
            cfg.latency()
        );
        // A long back-to-back burst: no bubbles at 1 request/cycle.
        let mut rng = StdRng::seed_from_u64(77 + ci as u64);
        let reqs: Vec<Req> = (0..200)
            .map(|_| random_req(&mut rng, cfg.tag_bits))
            .collect();
        let run = b.run(&reqs, 2, 0.0, 0.0);
        assert_eq!(
            run.accepted_at[199] - run.accepted_at[0],
            199,
            "{cfg:?}: bubbles"
        );
        let model = Config::reset(&cfg);
        for (r, got) in reqs.iter().zip(&run.results) {
            assert_eq!(*got, model.expect(r), "{cfg:?}: {r:x?}");
        }
        // The vectors again under idle and backpressure, recorded for the Icarus replay.
        let mut sim = recording_sim(&d);
        std::mem::swap(&mut b.sim, &mut sim);
        check_vectors(&mut b, 3, 0.3, 0.5);
        if ci == 0 {
            icarus_agrees(&d, &b.sim.take_recording());
        }
    }
}

#[test]
fn random_config_and_requests_match_the_model() {
    for (ci, cfg) in configs().into_iter().enumerate() {
        let Some(d) = dut(&rss_toeplitz(&cfg).unwrap()) else {
            return;
        };
        let mut b = Bench::new(&d, cfg);
        let base = 1000 + 100 * ci as u64;
        let mut rng = StdRng::seed_from_u64(base);
        for (phase, k) in matrix(base).into_iter().enumerate() {
            let c = random_config(&mut rng, &cfg, phase);
            b.program(&c);
            // Writes to unmapped addresses change nothing.
            for a in [
                0x00A,
                0x00F,
                0x011,
                0x0FF,
                cfg_addr::TABLE + cfg.table_size,
                0xFFF,
            ] {
                b.write(a, rng.gen());
            }
            let reqs: Vec<Req> = (0..300)
                .map(|_| random_req(&mut rng, cfg.tag_bits))
                .collect();
            let run = b.run(&reqs, k.seed, k.idle, k.backpressure);
            for (i, (r, got)) in reqs.iter().zip(&run.results).enumerate() {
                assert_eq!(
                    *got,
                    c.expect(r),
                    "{cfg:?} {k:?} enables {:#04x}: request {i} {r:x?}",
                    c.enables
                );
            }
        }
    }
}
