//! The DMA service: the host's side of the NIC's DMA port (`hdl/src/host/mod.rs`, "The DMA
//! port"), one clock cycle at a time, checking the NIC's side of the rules.
//!
//! What the host does (each bullet a knob of [`DmaConfig`]):
//! - accepts read requests (`m_dma_rd_req`) while fewer than `max_outstanding_reads` are
//!   unanswered, and write requests (`m_dma_wr_req`) at any time, both with random `tready`
//!   stalls (`req_stall`);
//! - answers each read after a random latency in `[latency_min, latency_max]` cycles (from
//!   the request's transfer to the first beat offered); with `reorder` it picks at random among
//!   the reads whose latency has passed, so answers overtake each other; without it answers
//!   leave in request order. An answer's beats are contiguous (never interleaved), laid out as
//!   rule 2 says, and carry `tuser = {err, tag}` ([`DmaRdCplUser`]);
//! - moves data at `bytes_per_cycle` in each direction (a token bucket that holds at most one
//!   beat or one cycle's worth, whichever is larger), with extra random `tready` stalls on the
//!   write data (`wr_data_stall`);
//! - with a `link` ([`crate::link`]), also spends a PCIe link's bandwidth per direction:
//!   downstream the read completions (payload and 20 B per completion TLP, cut at the MPS),
//!   upstream the posted writes (payload and 24 B per TLP) and the read requests (24 B per
//!   request TLP, cut at the MRRS), each direction also carrying the DLLPs the other's TLPs
//!   cause. A beat or a request goes while its direction is not in debt and is charged its
//!   wire bytes when it goes. [`DmaConfig::pcie`] builds this configuration from a link, a
//!   clock and a latency in nanoseconds;
//! - takes the write data in request order and applies each write to [`HostMemory`] when its
//!   last beat arrives, so writes become visible in order (rule 3);
//! - serves a read only after every write accepted before it has been applied (PCIe's rule
//!   that a read does not pass a posted write), reading memory when the answer starts.
//!
//! Reads of memory that is not allocated are answered with `err` set and zero data; writes to
//! it are dropped; both are counted in [`DmaStats`].
//!
//! What it checks on the NIC's side, each failure a [`DmaViolation`] naming the [`DmaRule`]:
//! request lengths and 4 KiB boundaries (rule 1), one outstanding read per tag (rule 2), the
//! beat count, `tlast` and `tkeep` of write data (rule 3), and that requests and write beats
//! hold while not taken (stream rule 1).
//!
//! Randomness comes from one `StdRng` seeded by `DmaConfig::seed`: a run reproduces exactly.

use crate::error::{port, HostError};
use crate::link::{
    tlp_starts, LinkTiming, PcieLink, Wire, CPL_TLP_OVERHEAD, DLLP_PER_TLP, REQ_TLP_OVERHEAD,
};
use crate::memory::HostMemory;
use nicgen_hdl::host::{DmaRdCplUser, DmaRdReq, DmaWrReq, Shape, DMA_MAX_LEN};
use nicgen_tb::stream::{Role, StreamPorts};
use nicgen_tb::{Dir, PortId, Sim};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::fmt;

/// The knobs of the DMA service.
#[derive(Clone, Debug, PartialEq)]
pub struct DmaConfig {
    /// Seed of every random choice (stalls, latencies, answer order, idle junk).
    pub seed: u64,
    /// Reads accepted but not yet fully answered, at most (1..=256; tags are 8 bits).
    pub max_outstanding_reads: usize,
    /// Fewest cycles from a read request's transfer to its first answer beat (at least 1).
    pub latency_min: u64,
    /// Most cycles from a read request's transfer to its first answer beat.
    pub latency_max: u64,
    /// Answers may overtake each other.
    pub reorder: bool,
    /// Data bandwidth in each direction, bytes per cycle; `None` = one beat per cycle.
    pub bytes_per_cycle: Option<u32>,
    /// Probability of `tready` low in a cycle on each request channel.
    pub req_stall: f64,
    /// Probability of `tready` low in a cycle on the write data channel.
    pub wr_data_stall: f64,
    /// A PCIe link's bandwidth and TLP costs on top of the port's (see [`crate::link`]);
    /// `None`: the port's beats and `bytes_per_cycle` alone.
    pub link: Option<LinkTiming>,
}

impl Default for DmaConfig {
    /// 50-200 cycles of latency, answers out of order, one beat per cycle, no stalls.
    fn default() -> Self {
        DmaConfig {
            seed: 0,
            max_outstanding_reads: 32,
            latency_min: 50,
            latency_max: 200,
            reorder: true,
            bytes_per_cycle: None,
            req_stall: 0.0,
            wr_data_stall: 0.0,
            link: None,
        }
    }
}

impl DmaConfig {
    /// A host behind `link` for a NIC clocked at `clock_mhz`: every read answered
    /// `latency_ns` after its request (rounded to whole cycles, at least one), answers free
    /// to overtake each other as a root complex's may, 256 reads outstanding at most (8-bit
    /// tags: the NIC's own tags are the limit), no random stalls, and the link's bandwidth
    /// with its TLP costs in each direction.
    pub fn pcie(link: PcieLink, clock_mhz: f64, latency_ns: u64, seed: u64) -> DmaConfig {
        let latency = Self::ns_to_cycles(latency_ns, clock_mhz);
        DmaConfig {
            seed,
            max_outstanding_reads: 256,
            latency_min: latency,
            latency_max: latency,
            reorder: true,
            bytes_per_cycle: None,
            req_stall: 0.0,
            wr_data_stall: 0.0,
            link: Some(link.timing(clock_mhz)),
        }
    }

    /// `ns` nanoseconds in whole cycles of `clock_mhz` (rounded, at least one).
    pub fn ns_to_cycles(ns: u64, clock_mhz: f64) -> u64 {
        ((ns as f64 * clock_mhz / 1000.0).round() as u64).max(1)
    }

    fn check(&self) -> Result<(), HostError> {
        let bad = |field, message: String| Err(HostError::Config { field, message });
        if !(1..=256).contains(&self.max_outstanding_reads) {
            return bad(
                "max_outstanding_reads",
                format!(
                    "is {}, must be 1..=256 (8-bit tags)",
                    self.max_outstanding_reads
                ),
            );
        }
        if self.latency_min < 1 || self.latency_min > self.latency_max {
            return bad(
                "latency_min",
                format!(
                    "is {}, must be at least 1 and at most latency_max ({})",
                    self.latency_min, self.latency_max
                ),
            );
        }
        if self.bytes_per_cycle == Some(0) {
            return bad("bytes_per_cycle", "is 0: nothing would move".into());
        }
        if let Some((field, message)) = self.link.as_ref().and_then(LinkTiming::problem) {
            return bad(field, message);
        }
        for (field, p) in [
            ("req_stall", self.req_stall),
            ("wr_data_stall", self.wr_data_stall),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return bad(field, format!("is {p}, not a probability in [0, 1]"));
            }
        }
        Ok(())
    }
}

/// A rule of the DMA port that the NIC can break.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DmaRule {
    /// Rule 1: `1 <= len <= 4096`.
    Length,
    /// Rule 1: a request does not cross a 4 KiB boundary.
    Boundary,
    /// Rule 2: at most one outstanding read per tag.
    TagInUse,
    /// Rule 3: a write's data is exactly `ceil((off + len) / (W/8))` beats, `tlast` on the final one.
    WriteBeats,
    /// Rule 3: write `tkeep` is all ones except on the last beat, where it covers the rest.
    WriteKeep,
    /// Stream rule 1: a request or beat, once offered, holds until it is taken.
    Hold,
}

impl fmt::Display for DmaRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DmaRule::Length => "rule 1 (1 <= len <= 4096)",
            DmaRule::Boundary => "rule 1 (no request crosses a 4 KiB boundary)",
            DmaRule::TagInUse => "rule 2 (one outstanding read per tag)",
            DmaRule::WriteBeats => {
                "rule 3 (ceil((off + len) / (W/8)) write beats, tlast on the last)"
            }
            DmaRule::WriteKeep => "rule 3 (write tkeep marks exactly the data bytes of each beat)",
            DmaRule::Hold => "stream rule 1 (hold until taken)",
        })
    }
}

/// The NIC broke a rule of the DMA port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DMA port `{channel}`: the NIC broke {rule} in cycle {cycle} (seed {seed:#x}): {message}")]
pub struct DmaViolation {
    /// Which rule.
    pub rule: DmaRule,
    /// The channel's port prefix (`m_dma_rd_req`, `m_dma_wr_req`, `m_dma_wr`).
    pub channel: &'static str,
    /// Cycle index (0-based) of the offending transfer.
    pub cycle: u64,
    /// The service's seed.
    pub seed: u64,
    /// Details: addresses, lengths, tags.
    pub message: String,
}

/// What the DMA service has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaStats {
    /// Read requests accepted.
    pub read_requests: u64,
    /// Reads fully answered (with or without `err`).
    pub reads_answered: u64,
    /// Bytes answered without `err`.
    pub read_bytes: u64,
    /// Reads answered with `err` (the range was not all allocated).
    pub read_errors: u64,
    /// Answers that started while an earlier-accepted read was still waiting.
    pub out_of_order: u64,
    /// Most reads outstanding at once.
    pub max_outstanding: usize,
    /// Writes applied to memory.
    pub writes: u64,
    /// Bytes applied to memory.
    pub write_bytes: u64,
    /// Writes dropped because the range was not all allocated.
    pub dropped_writes: u64,
    /// Bytes of the dropped writes.
    pub dropped_write_bytes: u64,
    /// Wire bytes spent on the link from the NIC to the host: write payloads, request and
    /// write TLP overhead, the DLLPs of the completions (0 without a link).
    pub link_up_bytes: u64,
    /// Wire bytes spent on the link from the host to the NIC: completion payloads and
    /// overhead, the DLLPs of the requests and writes (0 without a link).
    pub link_down_bytes: u64,
}

/// A request channel: record `tdata`, `tvalid`, `tready`.
#[derive(Debug)]
struct ReqPorts {
    data: PortId,
    valid: PortId,
    ready: PortId,
}

impl ReqPorts {
    fn new(sim: &Sim, prefix: &str, width: u32) -> Result<ReqPorts, HostError> {
        Ok(ReqPorts {
            data: port(sim, &format!("{prefix}_tdata"), Dir::Output, Some(width))?,
            valid: port(sim, &format!("{prefix}_tvalid"), Dir::Output, Some(1))?,
            ready: port(sim, &format!("{prefix}_tready"), Dir::Input, Some(1))?,
        })
    }

    fn transfer(&self, sim: &Sim) -> Option<Vec<u8>> {
        (sim.get_bool(self.valid) && sim.get_bool(self.ready)).then(|| sim.get_bytes_le(self.data))
    }
}

/// Checks that what a channel offers holds until it is taken.
#[derive(Debug)]
struct HoldCheck {
    channel: &'static str,
    valid: PortId,
    ready: PortId,
    payload: Vec<PortId>,
    held: Option<Vec<Vec<u8>>>,
}

impl HoldCheck {
    fn snapshot(&self, sim: &Sim) -> Vec<Vec<u8>> {
        self.payload.iter().map(|p| sim.get_bytes_le(*p)).collect()
    }

    fn check(&mut self, sim: &Sim) -> Result<(), String> {
        let valid = sim.get_bool(self.valid);
        if let Some(prev) = self.held.take() {
            if !valid {
                return Err("tvalid fell before the offered item was taken".into());
            }
            if self.snapshot(sim) != prev {
                return Err("the offered item changed before it was taken".into());
            }
        }
        if valid && !sim.get_bool(self.ready) {
            self.held = Some(self.snapshot(sim));
        }
        Ok(())
    }
}

/// A token bucket: `per_cycle` bytes of credit a cycle, holding at most `cap`.
#[derive(Debug)]
struct Throttle {
    per_cycle: u64,
    cap: u64,
    credit: u64,
}

impl Throttle {
    fn new(per_cycle: u64, beat: u64) -> Throttle {
        Throttle {
            per_cycle,
            cap: per_cycle.max(beat),
            credit: 0,
        }
    }
    fn tick(&mut self) {
        self.credit = (self.credit + self.per_cycle).min(self.cap);
    }
}

/// The PCIe link's state: its timing and a wire per direction.
#[derive(Debug)]
struct Link {
    timing: LinkTiming,
    /// NIC to host: read requests and posted writes.
    up: Wire,
    /// Host to NIC: read completions.
    down: Wire,
}

impl Link {
    /// Spends `up` and `down` wire bytes, counted in `stats`.
    fn charge(&mut self, stats: &mut DmaStats, up: u64, down: u64) {
        self.up.charge(up);
        self.down.charge(down);
        stats.link_up_bytes += up;
        stats.link_down_bytes += down;
    }
}

#[derive(Debug)]
struct Read {
    seq: u64,
    tag: u8,
    addr: u64,
    len: usize,
    /// Byte position of the first data byte in the first beat.
    off: usize,
    accepted: u64,
    ready_at: u64,
    /// Writes accepted before this read: they are applied before it is answered.
    after_writes: u64,
}

#[derive(Debug)]
struct Answer {
    tag: u8,
    /// Host address of the first data byte.
    addr: u64,
    data: Vec<u8>,
    err: bool,
    /// Byte position of the first data byte in the first beat.
    off: usize,
    /// Bus bytes (the `off` leading positions included) sent so far.
    sent: usize,
    /// A beat is on the bus, waiting for `tready`.
    offered: bool,
}

#[derive(Debug)]
struct Write {
    addr: u64,
    len: usize,
    /// Byte position of the first data byte in the first beat.
    off: usize,
    data: Vec<u8>,
    /// Beats taken so far.
    beats: usize,
}

/// The host's side of the DMA port; see the module docs. Call [`drive`](Self::drive) before
/// each [`Sim::cycle`] and [`observe`](Self::observe) after it ([`crate::SimHost`] does).
#[derive(Debug)]
pub struct DmaService {
    config: DmaConfig,
    rng: StdRng,
    rd_req: ReqPorts,
    wr_req: ReqPorts,
    cpl: StreamPorts,
    wr: StreamPorts,
    holds: [HoldCheck; 3],
    beat: usize,
    rd_bw: Throttle,
    wr_bw: Throttle,
    link: Option<Link>,
    tag_busy: [bool; 256],
    /// Accepted reads not yet being answered, in acceptance order.
    waiting: Vec<Read>,
    answer: Option<Answer>,
    /// Put junk on the idle completion bus at the next drive.
    junk_due: bool,
    writes: VecDeque<Write>,
    reads_accepted: u64,
    writes_accepted: u64,
    writes_done: u64,
    stats: DmaStats,
}

impl DmaService {
    /// Resolves the DMA ports of `sim` (checking widths and directions against the contract)
    /// and checks `config`.
    pub fn new(sim: &Sim, config: DmaConfig) -> Result<DmaService, HostError> {
        config.check()?;
        let rd_req = ReqPorts::new(sim, "m_dma_rd_req", DmaRdReq::WIDTH)?;
        let wr_req = ReqPorts::new(sim, "m_dma_wr_req", DmaWrReq::WIDTH)?;
        let stream = |prefix: &str, role: Role| {
            let err = |message: String| HostError::Port {
                top: sim.top().to_string(),
                port: prefix.to_string(),
                message,
            };
            let p = StreamPorts::new(sim, prefix).map_err(|e| err(e.to_string()))?;
            if p.role != role {
                return Err(err("points the wrong way".into()));
            }
            Ok(p)
        };
        let cpl = stream("s_dma_rd_cpl", Role::IntoDesign)?;
        let wr = stream("m_dma_wr", Role::OutOfDesign)?;
        let user_width = DmaRdCplUser::WIDTH;
        if cpl.user_width != user_width {
            return Err(HostError::Port {
                top: sim.top().to_string(),
                port: "s_dma_rd_cpl_tuser".into(),
                message: format!(
                    "is {} bits wide (0: missing), the contract says {user_width}",
                    cpl.user_width
                ),
            });
        }
        if cpl.data_bytes != wr.data_bytes {
            return Err(HostError::Port {
                top: sim.top().to_string(),
                port: "m_dma_wr_tdata".into(),
                message: format!(
                    "is {} bytes wide but s_dma_rd_cpl_tdata is {}",
                    wr.data_bytes, cpl.data_bytes
                ),
            });
        }
        let beat = cpl.data_bytes;
        let per_cycle = config.bytes_per_cycle.map_or(beat as u64, u64::from);
        let mut wr_payload = vec![wr.tdata, wr.tlast];
        wr_payload.extend(wr.tkeep);
        let holds = [
            HoldCheck {
                channel: "m_dma_rd_req",
                valid: rd_req.valid,
                ready: rd_req.ready,
                payload: vec![rd_req.data],
                held: None,
            },
            HoldCheck {
                channel: "m_dma_wr_req",
                valid: wr_req.valid,
                ready: wr_req.ready,
                payload: vec![wr_req.data],
                held: None,
            },
            HoldCheck {
                channel: "m_dma_wr",
                valid: wr.tvalid,
                ready: wr.tready,
                payload: wr_payload,
                held: None,
            },
        ];
        let link = config.link.map(|timing| Link {
            up: Wire::new(timing.bytes_per_cycle),
            down: Wire::new(timing.bytes_per_cycle),
            timing,
        });
        Ok(DmaService {
            rng: StdRng::seed_from_u64(config.seed),
            config,
            rd_req,
            wr_req,
            cpl,
            wr,
            holds,
            beat,
            rd_bw: Throttle::new(per_cycle, beat as u64),
            wr_bw: Throttle::new(per_cycle, beat as u64),
            link,
            tag_busy: [false; 256],
            waiting: Vec::new(),
            answer: None,
            junk_due: true,
            writes: VecDeque::new(),
            reads_accepted: 0,
            writes_accepted: 0,
            writes_done: 0,
            stats: DmaStats::default(),
        })
    }

    /// The knobs.
    pub fn config(&self) -> &DmaConfig {
        &self.config
    }

    /// Bytes per data beat (`W/8`).
    pub fn beat_bytes(&self) -> usize {
        self.beat
    }

    /// Counters so far.
    pub fn stats(&self) -> DmaStats {
        self.stats
    }

    /// Reads accepted and not yet fully answered.
    pub fn outstanding_reads(&self) -> usize {
        self.waiting.len() + usize::from(self.answer.is_some())
    }

    /// Write requests accepted whose data has not fully arrived.
    pub fn pending_writes(&self) -> usize {
        self.writes.len()
    }

    /// Nothing outstanding in either direction.
    pub fn is_idle(&self) -> bool {
        self.outstanding_reads() == 0 && self.writes.is_empty()
    }

    fn stall(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.gen_bool(p)
    }

    /// Before [`Sim::cycle`]: sets `tready` on the request and write data channels and offers
    /// the next answer beat, reading `mem` when an answer starts.
    pub fn drive(&mut self, sim: &mut Sim, mem: &HostMemory) {
        let now = sim.cycles();
        self.rd_bw.tick();
        self.wr_bw.tick();
        if let Some(l) = &mut self.link {
            l.up.tick();
            l.down.tick();
        }
        let up_free = self.link.as_ref().is_none_or(|l| l.up.free());
        let room = self.outstanding_reads() < self.config.max_outstanding_reads;
        let rd_ready = room && up_free && !self.stall(self.config.req_stall);
        sim.set_bool(self.rd_req.ready, rd_ready);
        let wr_req_ready = !self.stall(self.config.req_stall);
        sim.set_bool(self.wr_req.ready, wr_req_ready);
        let wr_ready = match self.writes.front() {
            Some(w) => {
                let next = beat_span(w.off, w.len, self.beat, w.beats).1.len() as u64;
                self.wr_bw.credit >= next && up_free && !self.stall(self.config.wr_data_stall)
            }
            None => false,
        };
        sim.set_bool(self.wr.tready, wr_ready);
        if self.answer.is_none() {
            self.answer = self.start_answer(now, mem);
        }
        self.offer_beat(sim);
    }

    /// Picks the next read to answer, if any may go now, and reads its data.
    fn start_answer(&mut self, now: u64, mem: &HostMemory) -> Option<Answer> {
        let may_go = |r: &Read| r.ready_at <= now && r.after_writes <= self.writes_done;
        let i = if self.config.reorder {
            let ready: Vec<usize> = (0..self.waiting.len())
                .filter(|&i| may_go(&self.waiting[i]))
                .collect();
            if ready.is_empty() {
                return None;
            }
            ready[self.rng.gen_range(0..ready.len())]
        } else {
            self.waiting.first().filter(|r| may_go(r)).map(|_| 0)?
        };
        let read = self.waiting.remove(i);
        if i > 0 {
            self.stats.out_of_order += 1;
        }
        let mut data = vec![0; read.len];
        let err = mem.read(read.addr, &mut data).is_err();
        Some(Answer {
            tag: read.tag,
            addr: read.addr,
            data,
            err,
            off: read.off,
            sent: 0,
            offered: false,
        })
    }

    fn offer_beat(&mut self, sim: &mut Sim) {
        let cpl = &self.cpl;
        if let Some(a) = self.answer.as_mut().filter(|a| !a.offered) {
            let index = a.sent / self.beat;
            let (keep, range) = beat_span(a.off, a.data.len(), self.beat, index);
            let n = range.len();
            let down_free = self.link.as_ref().is_none_or(|l| l.down.free());
            if self.rd_bw.credit >= n as u64 && down_free {
                self.rd_bw.credit -= n as u64;
                if let Some(l) = &mut self.link {
                    let (lo, hi) = (range.start as u64, range.end as u64);
                    let tlps = tlp_starts(a.addr, lo, hi, l.timing.mps.into());
                    let (up, down) = (tlps * DLLP_PER_TLP, hi - lo + tlps * CPL_TLP_OVERHEAD);
                    l.charge(&mut self.stats, up, down);
                }
                // Bytes outside the data are junk (the NIC must look at tkeep).
                let mut beat: Vec<u8> = (0..self.beat).map(|_| self.rng.gen()).collect();
                let first = if index == 0 { a.off } else { 0 };
                beat[first..first + n].copy_from_slice(&a.data[range.clone()]);
                sim.set_bytes_le(cpl.tdata, &beat);
                if let Some(k) = cpl.tkeep {
                    sim.set_bytes_le(k, &keep);
                }
                sim.set_bool(cpl.tlast, range.end == a.data.len());
                if let Some(u) = cpl.tuser {
                    let user = DmaRdCplUser::shape().encode(&DmaRdCplUser {
                        tag: u128::from(a.tag),
                        err: u128::from(a.err),
                    });
                    sim.set(u, le_u64(&user));
                }
                a.offered = true;
            }
        }
        let offered = self.answer.as_ref().is_some_and(|a| a.offered);
        sim.set_bool(cpl.tvalid, offered);
        if !offered && self.junk_due {
            // Junk on an idle bus, so a NIC that samples without tvalid reads garbage.
            let junk: Vec<u8> = (0..self.beat).map(|_| self.rng.gen()).collect();
            sim.set_bytes_le(cpl.tdata, &junk);
            if let Some(u) = cpl.tuser {
                sim.set(u, self.rng.gen::<u64>() >> (64 - cpl.user_width));
            }
            sim.set_bool(cpl.tlast, self.rng.gen());
            self.junk_due = false;
        }
    }

    /// After [`Sim::cycle`]: takes what was transferred (requests, write beats, an answer
    /// beat), applies completed writes to `mem`, and checks the NIC's side of the rules.
    /// Returns whether anything was transferred.
    pub fn observe(&mut self, sim: &Sim, mem: &mut HostMemory) -> Result<bool, DmaViolation> {
        let cycle = sim.cycles().saturating_sub(1);
        let seed = self.config.seed;
        let violation = |rule, channel, message| DmaViolation {
            rule,
            channel,
            cycle,
            seed,
            message,
        };
        for h in &mut self.holds {
            h.check(sim)
                .map_err(|m| violation(DmaRule::Hold, h.channel, m))?;
        }
        let mut progress = false;
        if let Some(a) = self.answer.as_mut().filter(|a| a.offered) {
            if sim.get_bool(self.cpl.tready) {
                progress = true;
                a.offered = false;
                a.sent += self.beat;
                if a.sent >= a.off + a.data.len() {
                    self.tag_busy[usize::from(a.tag)] = false;
                    self.stats.reads_answered += 1;
                    if a.err {
                        self.stats.read_errors += 1;
                    } else {
                        self.stats.read_bytes += a.data.len() as u64;
                    }
                    self.answer = None;
                    self.junk_due = true;
                }
            }
        }
        if let Some(req) = self.rd_req.transfer(sim) {
            progress = true;
            self.accept_read(&req, cycle)
                .map_err(|(rule, m)| violation(rule, "m_dma_rd_req", m))?;
        }
        if let Some(req) = self.wr_req.transfer(sim) {
            progress = true;
            let r = DmaWrReq::shape().decode(&req);
            let (addr, len, off) = (r.addr as u64, r.len as usize, r.off as usize);
            check_request(addr, len).map_err(|(rule, m)| violation(rule, "m_dma_wr_req", m))?;
            check_off(off, self.beat).map_err(|(rule, m)| violation(rule, "m_dma_wr_req", m))?;
            self.writes_accepted += 1;
            self.writes.push_back(Write {
                addr,
                len,
                off,
                data: Vec::with_capacity(len),
                beats: 0,
            });
        }
        if sim.get_bool(self.wr.tvalid) && sim.get_bool(self.wr.tready) {
            progress = true;
            self.take_write_beat(sim, mem)
                .map_err(|(rule, m)| violation(rule, "m_dma_wr", m))?;
        }
        Ok(progress)
    }

    fn accept_read(&mut self, req: &[u8], cycle: u64) -> Result<(), (DmaRule, String)> {
        let r = DmaRdReq::shape().decode(req);
        let (addr, len, tag, off) = (r.addr as u64, r.len as usize, r.tag as u8, r.off as usize);
        check_request(addr, len)?;
        check_off(off, self.beat)?;
        if self.tag_busy[usize::from(tag)] {
            let earlier = self
                .waiting
                .iter()
                .find(|r| r.tag == tag)
                .map(|r| {
                    format!(
                        " (read of {} bytes at {:#x} accepted in cycle {})",
                        r.len, r.addr, r.accepted
                    )
                })
                .unwrap_or_else(|| " (its answer is being sent)".into());
            return Err((
                DmaRule::TagInUse,
                format!(
                    "read of {len} bytes at {addr:#x} uses tag {tag}, still outstanding{earlier}"
                ),
            ));
        }
        self.tag_busy[usize::from(tag)] = true;
        if let Some(l) = &mut self.link {
            let tlps = tlp_starts(addr, 0, len as u64, l.timing.mrrs.into());
            l.charge(
                &mut self.stats,
                tlps * REQ_TLP_OVERHEAD,
                tlps * DLLP_PER_TLP,
            );
        }
        let latency = self
            .rng
            .gen_range(self.config.latency_min..=self.config.latency_max);
        self.waiting.push(Read {
            seq: self.reads_accepted,
            tag,
            addr,
            len,
            off,
            accepted: cycle,
            ready_at: cycle + latency,
            after_writes: self.writes_accepted,
        });
        self.reads_accepted += 1;
        self.stats.read_requests += 1;
        self.stats.max_outstanding = self.stats.max_outstanding.max(self.outstanding_reads());
        debug_assert!(self.waiting.windows(2).all(|w| w[0].seq < w[1].seq));
        Ok(())
    }

    fn take_write_beat(
        &mut self,
        sim: &Sim,
        mem: &mut HostMemory,
    ) -> Result<(), (DmaRule, String)> {
        let beat = self.beat;
        let Some(w) = self.writes.front_mut() else {
            // tready is only high with a write waiting for data.
            return Ok(());
        };
        let beats = (w.off + w.len).div_ceil(beat);
        let index = w.beats;
        let (want_keep, range) = beat_span(w.off, w.len, beat, index);
        let n = range.len();
        let what = || {
            format!(
                "beat {} of {beats} of the write of {} bytes at {:#x}",
                index + 1,
                w.len,
                w.addr
            )
        };
        let last = sim.get_bool(self.wr.tlast);
        if last != (index + 1 == beats) {
            let m = if last {
                "tlast before the request's length is reached"
            } else {
                "no tlast although the request's length is reached"
            };
            return Err((DmaRule::WriteBeats, format!("{}: {m}", what())));
        }
        if let Some(k) = self.wr.tkeep {
            let (got, want) = (sim.get_bytes_le(k), want_keep);
            if got != want {
                return Err((
                    DmaRule::WriteKeep,
                    format!(
                        "{}: tkeep {} but the beat carries {n} bytes of the data (tkeep {})",
                        what(),
                        hex(&got),
                        hex(&want)
                    ),
                ));
            }
        }
        let data = sim.get_bytes_le(self.wr.tdata);
        let first = if index == 0 { w.off } else { 0 };
        if let Some(l) = &mut self.link {
            let lo = w.data.len() as u64;
            let tlps = tlp_starts(w.addr, lo, lo + n as u64, l.timing.mps.into());
            let up = n as u64 + tlps * REQ_TLP_OVERHEAD;
            l.charge(&mut self.stats, up, tlps * DLLP_PER_TLP);
        }
        w.data.extend_from_slice(&data[first..first + n]);
        w.beats += 1;
        if w.data.len() == w.len {
            if let Some(w) = self.writes.pop_front() {
                self.writes_done += 1;
                if mem.write(w.addr, &w.data).is_ok() {
                    self.stats.writes += 1;
                    self.stats.write_bytes += w.len as u64;
                } else {
                    self.stats.dropped_writes += 1;
                    self.stats.dropped_write_bytes += w.len as u64;
                }
            }
        }
        Ok(())
    }
}

/// Rule 1 on one request.
fn check_request(addr: u64, len: usize) -> Result<(), (DmaRule, String)> {
    let max = DMA_MAX_LEN as usize;
    if !(1..=max).contains(&len) {
        return Err((
            DmaRule::Length,
            format!("request of {len} bytes at {addr:#x} (must be 1..={max})"),
        ));
    }
    let page = u64::from(DMA_MAX_LEN);
    if addr % page + len as u64 > page {
        let boundary = (addr / page + 1) * page;
        return Err((
            DmaRule::Boundary,
            format!("request of {len} bytes at {addr:#x} crosses {boundary:#x}"),
        ));
    }
    Ok(())
}

fn le_u64(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .enumerate()
        .fold(0, |v, (i, b)| v | u64::from(*b) << (8 * i))
}

/// `off` on its own: a byte position inside a beat.
fn check_off(off: usize, beat: usize) -> Result<(), (DmaRule, String)> {
    if off >= beat {
        return Err((
            DmaRule::Length,
            format!("off {off} is not a byte position in a {beat}-byte beat"),
        ));
    }
    Ok(())
}

/// Beat `index` of a transfer of `len` data bytes starting at byte `off` of the first beat:
/// its `tkeep` (little-endian bytes) and the range of the data it carries.
fn beat_span(
    off: usize,
    len: usize,
    beat: usize,
    index: usize,
) -> (Vec<u8>, std::ops::Range<usize>) {
    let (lo, hi) = (index * beat, (index + 1) * beat);
    let start = lo.max(off);
    let end = hi.min(off + len);
    let mut keep = vec![0u8; beat.div_ceil(8)];
    for p in start..end {
        let i = p - lo;
        keep[i / 8] |= 1 << (i % 8);
    }
    let range = if end > start {
        start - off..end - off
    } else {
        0..0
    };
    (keep, range)
}

fn hex(le: &[u8]) -> String {
    let digits: String = le.iter().rev().map(|b| format!("{b:02x}")).collect();
    format!("0x{digits}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_rules() {
        assert_eq!(check_request(0x1000, 4096), Ok(()));
        assert_eq!(check_request(0x1fff, 1), Ok(()));
        assert_eq!(check_request(0x1000, 0).unwrap_err().0, DmaRule::Length);
        assert_eq!(check_request(0x1000, 4097).unwrap_err().0, DmaRule::Length);
        let (rule, m) = check_request(0x1ff0, 17).unwrap_err();
        assert_eq!(rule, DmaRule::Boundary);
        assert!(m.contains("crosses 0x2000"), "{m}");
    }

    #[test]
    fn keep_layout() {
        assert_eq!(beat_span(0, 8, 8, 0), (vec![0xff], 0..8));
        assert_eq!(beat_span(0, 3, 8, 0), (vec![0x07], 0..3));
        assert_eq!(
            beat_span(0, 9, 64, 0),
            (vec![0xff, 0x01, 0, 0, 0, 0, 0, 0], 0..9)
        );
        // With an offset: 10 bytes from byte 5 of 8-byte beats: 3 + 7 bytes.
        assert_eq!(beat_span(5, 10, 8, 0), (vec![0xe0], 0..3));
        assert_eq!(beat_span(5, 10, 8, 1), (vec![0x7f], 3..10));
        assert_eq!(beat_span(5, 2, 8, 0), (vec![0x60], 0..2));
        assert_eq!(hex(&[0x01, 0xff]), "0xff01");
    }

    #[test]
    fn records_round_trip_through_the_contract_layouts() {
        let shape = DmaRdReq::shape();
        let req = shape.encode(&DmaRdReq {
            addr: 0x1_2345_6789,
            len: 4096,
            tag: 200,
            ..Default::default()
        });
        let r = shape.decode(&req);
        assert_eq!((r.addr, r.len, r.tag), (0x1_2345_6789, 4096, 200));
        let user = DmaRdCplUser::shape().encode(&DmaRdCplUser { tag: 7, err: 1 });
        assert_eq!(le_u64(&user), 7 | 1 << 8);
    }

    #[test]
    fn throttle_allows_one_beat_or_one_cycle_of_credit() {
        let mut t = Throttle::new(16, 64);
        for _ in 0..10 {
            t.tick();
        }
        assert_eq!(t.credit, 64);
        let mut t = Throttle::new(128, 64);
        t.tick();
        t.tick();
        assert_eq!(t.credit, 128);
    }

    #[test]
    fn config_is_checked() {
        let bad = [
            DmaConfig {
                max_outstanding_reads: 0,
                ..Default::default()
            },
            DmaConfig {
                latency_min: 0,
                ..Default::default()
            },
            DmaConfig {
                latency_min: 10,
                latency_max: 9,
                ..Default::default()
            },
            DmaConfig {
                bytes_per_cycle: Some(0),
                ..Default::default()
            },
            DmaConfig {
                req_stall: 1.5,
                ..Default::default()
            },
            DmaConfig {
                link: Some(LinkTiming {
                    mps: 100,
                    ..PcieLink::gen3(8).timing(250.0)
                }),
                ..Default::default()
            },
        ];
        for c in bad {
            assert!(matches!(c.check(), Err(HostError::Config { .. })), "{c:?}");
        }
        assert_eq!(DmaConfig::default().check(), Ok(()));
        assert_eq!(
            DmaConfig::pcie(PcieLink::gen3(16), 250.0, 1000, 0).check(),
            Ok(())
        );
    }
}
