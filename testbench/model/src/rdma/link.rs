//! Two nodes and the links between them: enough network to run requesters against
//! responders with loss, reordering, duplication and ECN marking, deterministically.
//!
//! A [`Link`] carries whole frames one way after `delay` ticks; each frame is lost, delayed
//! further (and so reordered), duplicated or CE-marked with the configured probabilities,
//! drawn from a seeded [`SplitMix64`] so a run repeats exactly. A [`Node`] is a host (memory,
//! PDs, MRs), its QPs, the CNP notification point and one DCQCN reaction point per QP, whose
//! rate paces the QP's requester. A
//! [`Pair`] steps two nodes and two links one tick at a time.

use super::context::Host;
use super::dcqcn::{CnpPacer, Dcqcn, DcqcnParams};
use super::headers::{mark_ce, Packet};
use super::qp::Qp;
use super::{path_headers, LocalAddr, Wc};
use crate::roce::{self, opcode};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::IpAddr;

/// SplitMix64: a tiny, fixed pseudo-random generator (the model's runs must not change when a
/// dependency's generator does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Whether an event of probability `p` happens.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }
}

/// What a link does to frames.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Ticks from send to arrival.
    pub delay: u64,
    /// Probability a frame is lost.
    pub loss: f64,
    /// Probability a frame is held back 1..=`reorder_ticks` extra ticks (so later frames pass
    /// it).
    pub reorder: f64,
    /// The most extra ticks of a held-back frame.
    pub reorder_ticks: u64,
    /// Probability a frame arrives twice.
    pub duplicate: f64,
    /// Probability an ECN-capable frame is marked CE.
    pub ce_mark: f64,
}

impl LinkConfig {
    /// A perfect link with `delay` ticks.
    pub fn ideal(delay: u64) -> LinkConfig {
        LinkConfig {
            delay,
            loss: 0.0,
            reorder: 0.0,
            reorder_ticks: 0,
            duplicate: 0.0,
            ce_mark: 0.0,
        }
    }
}

/// Counts of what a link did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames handed to the link.
    pub sent: u64,
    /// Frames dropped.
    pub lost: u64,
    /// Frames held back.
    pub reordered: u64,
    /// Extra copies.
    pub duplicated: u64,
    /// Frames marked CE.
    pub marked: u64,
    /// Frames handed to the link whose ICRC was wrong (a model bug if not 0).
    pub bad_icrc: u64,
}

/// A one-way link.
#[derive(Clone, Debug)]
pub struct Link {
    /// Behaviour.
    pub cfg: LinkConfig,
    rng: SplitMix64,
    queue: BinaryHeap<Reverse<(u64, u64, Vec<u8>)>>,
    seq: u64,
    /// Counts.
    pub stats: LinkStats,
    /// When set, every frame handed to the link is also kept in `recorded` (a tap for tests
    /// and testbenches).
    pub record: bool,
    /// The frames handed to the link while `record` was set, in order.
    pub recorded: Vec<Vec<u8>>,
}

impl Link {
    /// A link with `cfg`, its random choices seeded with `seed`.
    pub fn new(cfg: LinkConfig, seed: u64) -> Link {
        Link {
            cfg,
            rng: SplitMix64(seed),
            queue: BinaryHeap::new(),
            seq: 0,
            stats: LinkStats::default(),
            record: false,
            recorded: Vec::new(),
        }
    }

    /// Hands `frame` to the link at `now`.
    pub fn send(&mut self, now: u64, frame: Vec<u8>) {
        self.stats.sent += 1;
        if !roce::icrc_ok(&frame) {
            self.stats.bad_icrc += 1;
        }
        if self.record {
            self.recorded.push(frame.clone());
        }
        if self.rng.chance(self.cfg.loss) {
            self.stats.lost += 1;
            return;
        }
        let copies = if self.rng.chance(self.cfg.duplicate) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut f = frame.clone();
            if self.rng.chance(self.cfg.ce_mark) && mark_ce(&mut f) {
                self.stats.marked += 1;
            }
            let mut at = now + self.cfg.delay;
            if self.cfg.reorder_ticks > 0 && self.rng.chance(self.cfg.reorder) {
                self.stats.reordered += 1;
                at += 1 + self.rng.below(self.cfg.reorder_ticks);
            }
            self.seq += 1;
            self.queue.push(Reverse((at, self.seq, f)));
        }
    }

    /// The frames that arrive by `now`, in arrival order.
    pub fn deliver(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while self
            .queue
            .peek()
            .is_some_and(|Reverse((at, _, _))| *at <= now)
        {
            out.push(self.queue.pop().unwrap().0 .2);
        }
        out
    }

    /// Frames in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }
}

/// Counts of what a node did with frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Frames dropped for a wrong ICRC.
    pub bad_icrc: u64,
    /// Frames dropped as not RoCEv2 or unparsable.
    pub malformed: u64,
    /// Frames for a QP the node does not have.
    pub unknown_qp: u64,
    /// CNPs sent by the notification point.
    pub cnps_sent: u64,
    /// CNPs received.
    pub cnps_received: u64,
}

/// A RoCE node: host memory and MRs, QPs, the CNP notification point and a DCQCN reaction
/// point per QP.
#[derive(Clone, Debug)]
pub struct Node {
    /// MAC and IP address.
    pub local: LocalAddr,
    /// Memory, PDs, MRs.
    pub host: Host,
    qps: BTreeMap<u32, Qp>,
    next_qpn: u32,
    /// CNP pacing of the notification point.
    pub np: CnpPacer,
    /// Reaction points by QP number.
    pub rp: BTreeMap<u32, Dcqcn>,
    /// Parameters new reaction points get.
    pub dcqcn: DcqcnParams,
    /// Counts.
    pub stats: NodeStats,
}

impl Node {
    /// A node at `mac`/`ip` with `mem` bytes of host memory and the default DCQCN parameters.
    pub fn new(mac: [u8; 6], ip: IpAddr, mem: usize) -> Node {
        let dcqcn = DcqcnParams::default();
        Node {
            local: LocalAddr { mac, ip },
            host: Host::new(mem),
            qps: BTreeMap::new(),
            next_qpn: 0x11,
            np: CnpPacer::new(dcqcn.min_time_between_cnps),
            rp: BTreeMap::new(),
            dcqcn,
            stats: NodeStats::default(),
        }
    }

    /// Creates a QP in RESET in `pd`; returns its number.
    pub fn create_qp(&mut self, pd: u32) -> u32 {
        let qpn = self.next_qpn;
        self.next_qpn += 1;
        self.qps.insert(qpn, Qp::new(qpn, pd, self.local));
        self.rp.insert(qpn, Dcqcn::new(self.dcqcn));
        qpn
    }

    /// The QP `qpn`.
    pub fn qp(&self, qpn: u32) -> &Qp {
        &self.qps[&qpn]
    }

    /// The QP `qpn` and the host, for posting work requests.
    pub fn qp_mut(&mut self, qpn: u32) -> (&mut Qp, &mut Host) {
        (self.qps.get_mut(&qpn).expect("no such QP"), &mut self.host)
    }

    fn sent(&mut self, qpn: u32, frames: &[Vec<u8>]) {
        if let Some(rp) = self.rp.get_mut(&qpn) {
            rp.on_bytes(frames.iter().map(|f| f.len() as u64).sum());
        }
    }

    /// Receives `frame` at `now`; returns the frames the node sends in answer. Frames with a
    /// wrong ICRC are dropped; a CE-marked frame makes the notification point send a CNP to
    /// the peer QP (paced); a CNP cuts the addressed QP's reaction point.
    pub fn on_frame(&mut self, now: u64, frame: &[u8]) -> Vec<Vec<u8>> {
        if !roce::is_roce(frame) || !roce::icrc_ok(frame) {
            self.stats.bad_icrc += u64::from(roce::is_roce(frame));
            self.stats.malformed += u64::from(!roce::is_roce(frame));
            return Vec::new();
        }
        let Ok(p) = Packet::parse(frame) else {
            self.stats.malformed += 1;
            return Vec::new();
        };
        let qpn = p.bth.dest_qp;
        if p.bth.opcode == opcode::CNP {
            self.stats.cnps_received += 1;
            if let (Some(rp), Some(qp)) = (self.rp.get_mut(&qpn), self.qps.get_mut(&qpn)) {
                rp.on_cnp(now);
                qp.requester.rate = Some(rp.rate());
            }
            return Vec::new();
        }
        let Some(qp) = self.qps.get_mut(&qpn) else {
            self.stats.unknown_qp += 1;
            return Vec::new();
        };
        let mut out = Vec::new();
        if p.ecn_ce() {
            if let Some(a) = qp.attr() {
                if self.np.admit(a.dest_qpn, now) {
                    if let Some(mut h) = path_headers(&self.local, a) {
                        let (roce::IpHeader::V4 { tos, .. }
                        | roce::IpHeader::V6 {
                            traffic_class: tos, ..
                        }) = &mut h.ip;
                        *tos = 48 << 2 | super::ECN_ECT0;
                        out.push(roce::cnp_frame(&h, a.dest_qpn));
                        self.stats.cnps_sent += 1;
                    }
                }
            }
        }
        let sent = qp.on_packet(&mut self.host, now, &p);
        self.sent(qpn, &sent);
        out.extend(sent);
        out
    }

    /// Advances the node to `now`: reaction point timers, QP retransmit timers and sends.
    pub fn tick(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let qpns: Vec<u32> = self.qps.keys().copied().collect();
        for qpn in qpns {
            let qp = self.qps.get_mut(&qpn).unwrap();
            if let Some(rp) = self.rp.get_mut(&qpn) {
                rp.tick(now);
                qp.requester.rate = rp.limiting.then(|| rp.rate());
            }
            let f = qp.tick(&mut self.host, now);
            self.sent(qpn, &f);
            out.extend(f);
        }
        out
    }

    /// Takes the completions of every QP.
    pub fn poll_cq(&mut self) -> Vec<Wc> {
        self.qps.values_mut().flat_map(|q| q.poll_cq()).collect()
    }
}

/// Two nodes joined by a link each way.
#[derive(Clone, Debug)]
pub struct Pair {
    /// Node A.
    pub a: Node,
    /// Node B.
    pub b: Node,
    /// A → B.
    pub ab: Link,
    /// B → A.
    pub ba: Link,
    /// The current tick.
    pub now: u64,
}

impl Pair {
    /// Nodes `a` and `b` joined by links with `cfg`, seeded from `seed`.
    pub fn new(a: Node, b: Node, cfg: LinkConfig, seed: u64) -> Pair {
        Pair {
            a,
            b,
            ab: Link::new(cfg, seed),
            ba: Link::new(cfg, seed ^ 0x5555_AAAA_5555_AAAA),
            now: 0,
        }
    }

    /// One tick: both nodes run their timers and send, then the frames due arrive and are
    /// answered.
    pub fn step(&mut self) {
        self.now += 1;
        let now = self.now;
        for f in self.a.tick(now) {
            self.ab.send(now, f);
        }
        for f in self.b.tick(now) {
            self.ba.send(now, f);
        }
        for f in self.ab.deliver(now) {
            for r in self.b.on_frame(now, &f) {
                self.ba.send(now, r);
            }
        }
        for f in self.ba.deliver(now) {
            for r in self.a.on_frame(now, &f) {
                self.ab.send(now, r);
            }
        }
    }

    /// Steps until `done` holds or `max_ticks` have passed; returns whether `done` held.
    pub fn run_until(&mut self, max_ticks: u64, mut done: impl FnMut(&mut Pair) -> bool) -> bool {
        let end = self.now + max_ticks;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }
}
