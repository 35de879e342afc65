//! AXI-Stream testbench agents over a [`Sim`]: a source ([`StreamDriver`]), a sink
//! ([`StreamSink`]), a protocol checker ([`StreamMonitor`]) and a bounded run loop
//! ([`run_until`]).
//!
//! # Why
//! Every block in the NIC moves frames as AXI-Stream; its tests feed frames with random idle
//! cycles, take them out under random backpressure, and check the handshake on every stream in
//! every cycle (STYLE.md, "Streams" and "Tests"). Doing that in one place keeps the rules
//! identical everywhere and makes every failure name its seed, cycle, stream and rule.
//!
//! # Signals
//! A stream with prefix `p` is `p_tdata`, `p_tkeep`, `p_tvalid`, `p_tready`, `p_tlast` and an
//! optional `p_tuser` (at most 64 bits). `p_tkeep` may be absent only on a bus one byte wide.
//! Byte `i` of a beat is `tdata[8i+7:8i]` and is valid iff `tkeep[i]`; a frame's first byte is
//! byte 0 of its first beat. The source drives a frame's user value on every beat of it; the
//! sink reports the `tuser` of the last beat (where verilog-ethernet puts e.g. "bad frame").
//!
//! # Handshake rules (checked by [`StreamMonitor`] on every cycle)
//! All values are those sampled just before the rising edge of a cycle.
//! 1. **Hold.** While `tvalid && !tready`, on the next cycle `tvalid` stays high and `tdata`,
//!    `tkeep`, `tlast` and `tuser` are unchanged (a beat, once offered, is never withdrawn or
//!    altered until it is taken).
//! 2. **Transfer.** A beat is transferred exactly in the cycles where `tvalid && tready`; the
//!    monitor counts beats and frames (`tlast`) on that condition only.
//! 3. **Full beats inside a frame.** A beat with `tvalid && !tlast` has `tkeep` all ones.
//! 4. **Last beat.** A beat with `tvalid && tlast` has a non-zero `tkeep`, contiguous from bit 0
//!    (`0b0001`, `0b0011`, `0b0111`, `0b1111` on a 4-byte bus).
//! 5. **No X/Z.** Not checkable in 2-state Verilator and skipped here; the Icarus replay
//!    ([`crate::icarus`]) reports X on outputs instead.
//!
//! Two further rules bind the designs but cannot be seen by a monitor at the boundary: a source
//! must not wait for `tready` before raising `tvalid`, and a sink may (but need not) wait for
//! `tvalid` before raising `tready`.
//!
//! # Using the agents
//! Each cycle: agents `drive` their inputs, then [`Sim::cycle`], then agents `observe` the
//! sampled values (a beat was accepted iff `tvalid && tready` in that sample). [`step`] does
//! exactly that for a list of [`Agent`]s, and [`run_until`] repeats a step closure under a
//! budget of cycles without progress, so a stuck design fails with "no progress for N cycles"
//! instead of hanging:
//! ```no_run
//! # use nicgen_tb::stream::*;
//! # fn demo(sim: &mut nicgen_tb::Sim, seed: u64) -> Result<(), StreamError> {
//! let mut src = StreamDriver::new(StreamPorts::new(sim, "s_axis")?, seed, 0.3);
//! let mut sink = StreamSink::new(StreamPorts::new(sim, "m_axis")?, seed + 1, 0.3);
//! let mut mon_in = StreamMonitor::new(StreamPorts::new(sim, "s_axis")?, seed);
//! let mut mon_out = StreamMonitor::new(StreamPorts::new(sim, "m_axis")?, seed);
//! src.push(vec![1, 2, 3, 4, 5]);
//! run_until(sim, 1000, |sim| {
//!     let progressed = step(sim, &mut [&mut src, &mut sink, &mut mon_in, &mut mon_out])?;
//!     Ok(Status::new(progressed, sink.frames().len() == 1))
//! })?;
//! # Ok(()) }
//! ```

use crate::layout::{Dir, PortId};
use crate::verilator::Sim;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::fmt;

/// Errors of the stream agents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The model's ports do not form the requested stream.
    #[error("stream `{prefix}`: {message}")]
    Ports {
        /// Stream prefix.
        prefix: String,
        /// What is wrong.
        message: String,
    },
    /// A handshake rule was broken.
    #[error(transparent)]
    Violation(#[from] Violation),
    /// [`run_until`] saw no progress for too long.
    #[error("no progress for {idle_limit} cycles (stopped after cycle {cycle}; seed {seed})")]
    NoProgress {
        /// The idle budget.
        idle_limit: u64,
        /// Last cycle run (0-based).
        cycle: u64,
        /// Seed, if the caller gave one to [`run_until_seeded`].
        seed: SeedText,
    },
    /// [`run_until_budget`] ran out of its total cycle budget.
    #[error("not done after {max_cycles} cycles (seed {seed})")]
    Budget {
        /// Total budget.
        max_cycles: u64,
        /// Seed, if known.
        seed: SeedText,
    },
}

/// A seed for messages, or "not given".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedText(pub Option<u64>);

impl fmt::Display for SeedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => write!(f, "{s:#x}"),
            None => write!(f, "not given"),
        }
    }
}

/// A broken handshake rule, with everything needed to reproduce it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stream `{prefix}` broke rule {rule} ({}) in cycle {cycle} (seed {seed:#x}): {message}", rule_name(*.rule))]
pub struct Violation {
    /// Seed of the test run.
    pub seed: u64,
    /// Cycle index (0-based: the n-th call to [`Sim::cycle`]).
    pub cycle: u64,
    /// Stream prefix.
    pub prefix: String,
    /// Rule number, as in the module docs.
    pub rule: u8,
    /// Details.
    pub message: String,
}

fn rule_name(rule: u8) -> &'static str {
    match rule {
        1 => "hold while not ready",
        2 => "transfer on valid && ready",
        3 => "full tkeep inside a frame",
        4 => "contiguous non-zero tkeep on the last beat",
        5 => "no X/Z",
        _ => "unknown rule",
    }
}

/// Whether the testbench drives a stream into the design or takes it out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `tvalid` is an input of the design (an `s_axis*` stream): the testbench is the source.
    IntoDesign,
    /// `tvalid` is an output of the design (an `m_axis*` stream): the testbench is the sink.
    OutOfDesign,
}

/// The resolved ports of one stream.
#[derive(Debug, Clone)]
pub struct StreamPorts {
    /// The prefix, e.g. `s_axis`.
    pub prefix: String,
    /// `_tdata`.
    pub tdata: PortId,
    /// `_tkeep`; absent only on one-byte buses.
    pub tkeep: Option<PortId>,
    /// `_tvalid`.
    pub tvalid: PortId,
    /// `_tready`.
    pub tready: PortId,
    /// `_tlast`.
    pub tlast: PortId,
    /// `_tuser`, if the stream has one.
    pub tuser: Option<PortId>,
    /// Bytes per beat.
    pub data_bytes: usize,
    /// Width of `_tuser` (0 if absent).
    pub user_width: u32,
    /// Direction relative to the design.
    pub role: Role,
}

impl StreamPorts {
    /// Finds `<prefix>_tdata/_tkeep/_tvalid/_tready/_tlast[/_tuser]` and checks their widths
    /// and directions.
    pub fn new(sim: &Sim, prefix: &str) -> Result<StreamPorts, StreamError> {
        let err = |message: String| StreamError::Ports {
            prefix: prefix.to_string(),
            message,
        };
        let find = |suffix: &str| sim.try_port(&format!("{prefix}_{suffix}"));
        let need = |suffix: &str| {
            find(suffix).ok_or_else(|| {
                err(format!(
                    "no port `{prefix}_{suffix}` ({})",
                    sim.layout().port_list()
                ))
            })
        };
        let tdata = need("tdata")?;
        let tvalid = need("tvalid")?;
        let tready = need("tready")?;
        let tlast = need("tlast")?;
        let tkeep = find("tkeep");
        let tuser = find("tuser");
        let data_width = sim.width(tdata);
        if !data_width.is_multiple_of(8) {
            return Err(err(format!("tdata is {data_width} bits, not whole bytes")));
        }
        let data_bytes = (data_width / 8) as usize;
        match tkeep {
            Some(k) if sim.width(k) as usize != data_bytes => {
                return Err(err(format!(
                    "tkeep is {} bits for {data_bytes} data bytes",
                    sim.width(k)
                )));
            }
            None if data_bytes != 1 => {
                return Err(err(format!(
                    "no `{prefix}_tkeep` on a {data_bytes}-byte bus"
                )))
            }
            _ => {}
        }
        for (name, p) in [("tvalid", tvalid), ("tready", tready), ("tlast", tlast)] {
            if sim.width(p) != 1 {
                return Err(err(format!("{name} is {} bits wide, not 1", sim.width(p))));
            }
        }
        let user_width = tuser.map(|u| sim.width(u)).unwrap_or(0);
        if user_width > 64 {
            return Err(err(format!(
                "tuser is {user_width} bits; nicgen-tb supports at most 64"
            )));
        }
        let forward_dir = tvalid.dir;
        let forward = [
            ("tdata", Some(tdata)),
            ("tlast", Some(tlast)),
            ("tkeep", tkeep),
            ("tuser", tuser),
        ];
        for (name, p) in forward {
            if p.is_some_and(|p| p.dir != forward_dir) {
                return Err(err(format!(
                    "{name} and tvalid point in different directions"
                )));
            }
        }
        if tready.dir == forward_dir {
            return Err(err("tready points in the same direction as tvalid".into()));
        }
        let role = if forward_dir == Dir::Input {
            Role::IntoDesign
        } else {
            Role::OutOfDesign
        };
        Ok(StreamPorts {
            prefix: prefix.to_string(),
            tdata,
            tkeep,
            tvalid,
            tready,
            tlast,
            tuser,
            data_bytes,
            user_width,
            role,
        })
    }

    /// Sets `tkeep` to `n` ones from bit 0 (any bus width).
    /// `tkeep` set for bytes `from..to` of the beat.
    fn set_keep_range(&self, sim: &mut Sim, from: usize, to: usize) {
        if let Some(k) = self.tkeep {
            let mut bytes = vec![0u8; self.data_bytes.div_ceil(8)];
            for i in from..to {
                bytes[i / 8] |= 1 << (i % 8);
            }
            sim.set_bytes_le(k, &bytes);
        }
    }

    /// `tkeep` as a little-endian bit vector (bit i = byte i), all ones if the port is absent.
    fn keep_bits(&self, sim: &Sim) -> Vec<bool> {
        match self.tkeep {
            Some(k) => {
                let bytes = sim.get_bytes_le(k);
                (0..self.data_bytes)
                    .map(|i| bytes[i / 8] >> (i % 8) & 1 == 1)
                    .collect()
            }
            None => vec![true; self.data_bytes],
        }
    }
}

/// One testbench participant in a cycle: sets inputs before it, observes values after it.
pub trait Agent {
    /// Before [`Sim::cycle`]: set the inputs this agent drives.
    fn drive(&mut self, _sim: &mut Sim) {}
    /// After [`Sim::cycle`]: look at the sampled values. `Ok(true)` if a beat was transferred
    /// on a stream this agent watches (progress).
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError>;
}

/// One cycle for a set of agents: all `drive`, [`Sim::cycle`], all `observe`.
/// Returns whether any agent saw progress.
pub fn step(sim: &mut Sim, agents: &mut [&mut dyn Agent]) -> Result<bool, StreamError> {
    for a in agents.iter_mut() {
        a.drive(sim);
    }
    sim.cycle();
    let mut progressed = false;
    for a in agents.iter_mut() {
        progressed |= a.observe(sim)?;
    }
    Ok(progressed)
}

/// What a step closure of [`run_until`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Something moved this cycle; the idle counter restarts.
    Progress,
    /// Nothing moved this cycle.
    Idle,
    /// The test's goal is reached; stop.
    Done,
}

impl Status {
    /// `Done` if `done`, else `Progress` or `Idle`.
    pub fn new(progressed: bool, done: bool) -> Status {
        match (done, progressed) {
            (true, _) => Status::Done,
            (false, true) => Status::Progress,
            (false, false) => Status::Idle,
        }
    }
}

/// Calls `step` (which must run one cycle) until it returns [`Status::Done`]; fails with
/// [`StreamError::NoProgress`] after `idle_limit` consecutive cycles without progress. Returns
/// the number of steps taken. Pick `idle_limit` above the design's latency plus the longest
/// random idle/backpressure run you expect (a few hundred cycles is typical).
pub fn run_until(
    sim: &mut Sim,
    idle_limit: u64,
    step: impl FnMut(&mut Sim) -> Result<Status, StreamError>,
) -> Result<u64, StreamError> {
    run_inner(sim, idle_limit, u64::MAX, None, step)
}

/// [`run_until`] whose "no progress" error also names the test's seed.
pub fn run_until_seeded(
    sim: &mut Sim,
    seed: u64,
    idle_limit: u64,
    step: impl FnMut(&mut Sim) -> Result<Status, StreamError>,
) -> Result<u64, StreamError> {
    run_inner(sim, idle_limit, u64::MAX, Some(seed), step)
}

/// [`run_until_seeded`] with a total cycle budget as well, for designs that could make
/// progress forever (e.g. emit frames endlessly).
pub fn run_until_budget(
    sim: &mut Sim,
    seed: u64,
    idle_limit: u64,
    max_cycles: u64,
    step: impl FnMut(&mut Sim) -> Result<Status, StreamError>,
) -> Result<u64, StreamError> {
    run_inner(sim, idle_limit, max_cycles, Some(seed), step)
}

fn run_inner(
    sim: &mut Sim,
    idle_limit: u64,
    max_cycles: u64,
    seed: Option<u64>,
    mut step: impl FnMut(&mut Sim) -> Result<Status, StreamError>,
) -> Result<u64, StreamError> {
    let mut idle = 0u64;
    let mut steps = 0u64;
    loop {
        if steps >= max_cycles {
            return Err(StreamError::Budget {
                max_cycles,
                seed: SeedText(seed),
            });
        }
        let status = step(sim)?;
        steps += 1;
        match status {
            Status::Done => return Ok(steps),
            Status::Progress => idle = 0,
            Status::Idle => {
                idle += 1;
                if idle >= idle_limit {
                    return Err(StreamError::NoProgress {
                        idle_limit,
                        cycle: sim.cycles().saturating_sub(1),
                        seed: SeedText(seed),
                    });
                }
            }
        }
    }
}

/// A frame as received by a [`StreamSink`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedFrame {
    /// The bytes of all accepted beats, in order, where `tkeep` was set.
    pub data: Vec<u8>,
    /// `tuser` of the last beat (0 without a `tuser` port).
    pub user: u64,
    /// Cycle of the first beat.
    pub first_cycle: u64,
    /// Cycle of the last beat.
    pub last_cycle: u64,
}

/// Source agent: sends queued frames into the design with seeded random idle cycles.
///
/// Before each beat (when no beat is pending) it stays idle with probability `idle_prob`; a
/// beat once offered stays on the bus unchanged until accepted (rule 1). Idle cycles carry
/// random `tdata/tkeep/tlast/tuser`, so a design that samples them without `tvalid` fails.
#[derive(Debug)]
pub struct StreamDriver {
    ports: StreamPorts,
    seed: u64,
    rng: StdRng,
    idle_prob: f64,
    /// Frames, their `tuser`, and the byte of the first beat each starts at.
    queue: VecDeque<(Vec<u8>, u64, usize)>,
    /// Position in the frame's beats (bytes, counted from byte 0 of its first beat).
    pos: usize,
    pending: bool,
    frames_sent: u64,
    beats_sent: u64,
    /// `tuser` is the frame's value on its last beat only ([`StreamDriver::user_on_last_beat`]).
    user_last_only: bool,
}

impl StreamDriver {
    /// A source on `ports` (which must be an `IntoDesign` stream). Panics on a sink stream or a
    /// probability outside `[0, 1)`; both are test bugs.
    pub fn new(ports: StreamPorts, seed: u64, idle_prob: f64) -> StreamDriver {
        assert_eq!(
            ports.role,
            Role::IntoDesign,
            "StreamDriver: `{}` is an output stream of the design",
            ports.prefix
        );
        assert!(
            (0.0..1.0).contains(&idle_prob),
            "StreamDriver: idle probability {idle_prob} not in [0, 1)"
        );
        StreamDriver {
            ports,
            seed,
            rng: StdRng::seed_from_u64(seed),
            idle_prob,
            queue: VecDeque::new(),
            pos: 0,
            pending: false,
            frames_sent: 0,
            beats_sent: 0,
            user_last_only: false,
        }
    }

    /// From now on a frame's user value is on its last beat only (where a block reads marks
    /// such as `bad`); the beats before carry its complement, so a block that passes on the
    /// `tuser` of another beat fails.
    pub fn user_on_last_beat(&mut self) {
        self.user_last_only = true;
    }

    /// Queues a frame with user value 0.
    pub fn push(&mut self, frame: Vec<u8>) {
        self.push_with_user(frame, 0);
    }

    /// Queues a frame whose beats all carry `user` on `tuser`. Panics on an empty frame (a
    /// stream cannot carry one: rule 4) or a user value wider than `tuser`.
    pub fn push_with_user(&mut self, frame: Vec<u8>, user: u64) {
        assert!(
            !frame.is_empty(),
            "StreamDriver `{}`: a frame must have at least one byte",
            self.ports.prefix
        );
        let w = self.ports.user_width;
        assert!(
            user == 0 || (w > 0 && (w >= 64 || user >> w == 0)),
            "StreamDriver `{}`: user value {user:#x} does not fit tuser ({w} bits)",
            self.ports.prefix
        );
        if self.ports.tkeep.is_none() {
            assert_eq!(
                frame.len() % self.ports.data_bytes,
                0,
                "frame length must be whole beats without tkeep"
            );
        }
        self.queue.push_back((frame, user, 0));
    }

    /// Queues a frame whose first byte is byte `off` of its first beat, `tkeep` marking only
    /// the frame's bytes, as the DMA port carries a transfer (`nicgen_hdl::host`, rules 2 and
    /// 3; not a stream rule 3/4 frame, so a [`StreamMonitor`] would flag it). Panics on an
    /// empty frame, `off` outside the beat, or a port without `tkeep`.
    pub fn push_at(&mut self, frame: Vec<u8>, off: usize, user: u64) {
        assert!(
            off < self.ports.data_bytes && self.ports.tkeep.is_some(),
            "StreamDriver `{}`: offset {off} needs tkeep and a beat of more than {off} bytes",
            self.ports.prefix
        );
        self.push_with_user(frame, user);
        self.queue.back_mut().unwrap().2 = off;
    }

    /// True when every queued frame has been accepted.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Frames fully accepted so far.
    pub fn frames_sent(&self) -> u64 {
        self.frames_sent
    }

    /// Beats accepted so far.
    pub fn beats_sent(&self) -> u64 {
        self.beats_sent
    }

    /// The driver's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn set_garbage(&mut self, sim: &mut Sim) {
        let p = &self.ports;
        let data: Vec<u8> = (0..p.data_bytes).map(|_| self.rng.gen()).collect();
        sim.set_bytes_le(p.tdata, &data);
        if let Some(k) = p.tkeep {
            let mut keep: Vec<u8> = (0..p.data_bytes.div_ceil(8))
                .map(|_| self.rng.gen())
                .collect();
            if !p.data_bytes.is_multiple_of(8) {
                *keep.last_mut().unwrap() &= (1u8 << (p.data_bytes % 8)) - 1;
            }
            sim.set_bytes_le(k, &keep);
        }
        sim.set_bool(p.tlast, self.rng.gen());
        if let Some(u) = p.tuser {
            let w = p.user_width;
            let v = self.rng.gen::<u64>() & if w >= 64 { u64::MAX } else { (1 << w) - 1 };
            sim.set(u, v);
        }
    }
}

impl Agent for StreamDriver {
    fn drive(&mut self, sim: &mut Sim) {
        if !self.pending && !self.queue.is_empty() && !self.rng.gen_bool(self.idle_prob) {
            self.pending = true;
        }
        if !self.pending {
            sim.set_bool(self.ports.tvalid, false);
            self.set_garbage(sim);
            return;
        }
        let p = &self.ports;
        let (frame, user, lead) = self.queue.front().unwrap();
        let (lead, total) = (*lead, lead + frame.len());
        let end = (self.pos + p.data_bytes).min(total);
        let first = self.pos.max(lead);
        let mut beat = vec![0u8; end - self.pos];
        beat[first - self.pos..].copy_from_slice(&frame[first - lead..end - lead]);
        sim.set_bytes_le(p.tdata, &beat);
        p.set_keep_range(sim, first - self.pos, end - self.pos);
        sim.set_bool(p.tlast, end == total);
        if let Some(u) = p.tuser {
            let w = p.user_width;
            let mask = if w >= 64 { u64::MAX } else { (1 << w) - 1 };
            let early = self.user_last_only && end != total;
            sim.set(u, if early { !*user & mask } else { *user });
        }
        sim.set_bool(p.tvalid, true);
    }

    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        if !(self.pending && sim.get_bool(self.ports.tvalid) && sim.get_bool(self.ports.tready)) {
            return Ok(false);
        }
        self.pending = false;
        self.beats_sent += 1;
        self.pos += self.ports.data_bytes;
        let (frame, _, lead) = self.queue.front().unwrap();
        if self.pos >= lead + frame.len() {
            self.queue.pop_front();
            self.pos = 0;
            self.frames_sent += 1;
        }
        Ok(true)
    }
}

/// Sink agent: takes frames out of the design with seeded random backpressure (`tready` low
/// with probability `backpressure`), collecting the bytes of accepted beats.
#[derive(Debug)]
pub struct StreamSink {
    ports: StreamPorts,
    seed: u64,
    rng: StdRng,
    backpressure: f64,
    current: Vec<u8>,
    first_cycle: Option<u64>,
    frames: Vec<ReceivedFrame>,
}

impl StreamSink {
    /// A sink on `ports` (which must be an `OutOfDesign` stream). Panics on a source stream or
    /// a probability outside `[0, 1)`.
    pub fn new(ports: StreamPorts, seed: u64, backpressure: f64) -> StreamSink {
        assert_eq!(
            ports.role,
            Role::OutOfDesign,
            "StreamSink: `{}` is an input stream of the design",
            ports.prefix
        );
        assert!(
            (0.0..1.0).contains(&backpressure),
            "StreamSink: backpressure {backpressure} not in [0, 1)"
        );
        StreamSink {
            ports,
            seed,
            rng: StdRng::seed_from_u64(seed),
            backpressure,
            current: Vec::new(),
            first_cycle: None,
            frames: Vec::new(),
        }
    }

    /// Frames received so far.
    pub fn frames(&self) -> &[ReceivedFrame] {
        &self.frames
    }

    /// Takes the received frames' bytes, leaving the list empty.
    pub fn take_frames(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.frames)
            .into_iter()
            .map(|f| f.data)
            .collect()
    }

    /// True while a frame has started but its last beat has not arrived.
    pub fn in_frame(&self) -> bool {
        self.first_cycle.is_some()
    }

    /// The sink's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

impl Agent for StreamSink {
    fn drive(&mut self, sim: &mut Sim) {
        let ready = !self.rng.gen_bool(self.backpressure);
        sim.set_bool(self.ports.tready, ready);
    }

    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        let p = &self.ports;
        if !(sim.get_bool(p.tvalid) && sim.get_bool(p.tready)) {
            return Ok(false);
        }
        let cycle = sim.cycles().saturating_sub(1);
        let data = sim.get_bytes_le(p.tdata);
        for (byte, keep) in data.iter().zip(p.keep_bits(sim)) {
            if keep {
                self.current.push(*byte);
            }
        }
        let first = *self.first_cycle.get_or_insert(cycle);
        if sim.get_bool(p.tlast) {
            let user = p.tuser.map(|u| sim.get_u64(u)).unwrap_or(0);
            self.frames.push(ReceivedFrame {
                data: std::mem::take(&mut self.current),
                user,
                first_cycle: first,
                last_cycle: cycle,
            });
            self.first_cycle = None;
        }
        Ok(true)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Beat {
    valid: bool,
    ready: bool,
    data: Vec<u8>,
    keep: Vec<bool>,
    last: bool,
    user: u64,
}

/// Checks the numbered handshake rules of the module docs on one stream, every cycle; either
/// direction. Also counts beats and frames.
#[derive(Debug)]
pub struct StreamMonitor {
    ports: StreamPorts,
    seed: u64,
    prev: Option<Beat>,
    beats: u64,
    frames: u64,
}

impl StreamMonitor {
    /// A monitor on `ports`; `seed` is the test's seed, quoted in every violation.
    pub fn new(ports: StreamPorts, seed: u64) -> StreamMonitor {
        StreamMonitor {
            ports,
            seed,
            prev: None,
            beats: 0,
            frames: 0,
        }
    }

    /// Beats transferred so far.
    pub fn beats(&self) -> u64 {
        self.beats
    }

    /// Frames (beats with `tlast`) transferred so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Checks the values sampled in the cycle just run. Returns whether a beat was transferred.
    pub fn check(&mut self, sim: &Sim) -> Result<bool, Violation> {
        let p = &self.ports;
        let cycle = sim.cycles().saturating_sub(1);
        let beat = Beat {
            valid: sim.get_bool(p.tvalid),
            ready: sim.get_bool(p.tready),
            data: sim.get_bytes_le(p.tdata),
            keep: p.keep_bits(sim),
            last: sim.get_bool(p.tlast),
            user: p.tuser.map(|u| sim.get_u64(u)).unwrap_or(0),
        };
        let violation = |rule: u8, message: String| Violation {
            seed: self.seed,
            cycle,
            prefix: p.prefix.clone(),
            rule,
            message,
        };
        if let Some(prev) = self.prev.as_ref().filter(|b| b.valid && !b.ready) {
            if !beat.valid {
                return Err(violation(
                    1,
                    "tvalid fell although the beat offered in the previous cycle was not accepted"
                        .into(),
                ));
            }
            let changed: Vec<&str> = [
                ("tdata", prev.data != beat.data),
                ("tkeep", prev.keep != beat.keep),
                ("tlast", prev.last != beat.last),
                ("tuser", prev.user != beat.user),
            ]
            .iter()
            .filter(|(_, c)| *c)
            .map(|(n, _)| *n)
            .collect();
            if !changed.is_empty() {
                return Err(violation(
                    1,
                    format!(
                        "{} changed while tvalid && !tready in the previous cycle",
                        changed.join(", ")
                    ),
                ));
            }
        }
        if beat.valid {
            let keep_str = || {
                beat.keep
                    .iter()
                    .rev()
                    .map(|k| if *k { '1' } else { '0' })
                    .collect::<String>()
            };
            if !beat.last && !beat.keep.iter().all(|k| *k) {
                return Err(violation(
                    3,
                    format!("tkeep = 0b{} on a beat without tlast", keep_str()),
                ));
            }
            if beat.last {
                let n = beat.keep.iter().take_while(|k| **k).count();
                if n == 0 || beat.keep[n..].iter().any(|k| *k) {
                    return Err(violation(
                        4,
                        format!("tkeep = 0b{} on the last beat", keep_str()),
                    ));
                }
            }
        }
        let transferred = beat.valid && beat.ready;
        if transferred {
            self.beats += 1;
            if beat.last {
                self.frames += 1;
            }
        }
        self.prev = Some(beat);
        Ok(transferred)
    }
}

impl Agent for StreamMonitor {
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        Ok(self.check(sim)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violation_message_names_seed_cycle_stream_and_rule() {
        let v = Violation {
            seed: 0x2a,
            cycle: 17,
            prefix: "m_axis".into(),
            rule: 1,
            message: "tdata changed".into(),
        };
        let s = v.to_string();
        assert_eq!(
            s,
            "stream `m_axis` broke rule 1 (hold while not ready) in cycle 17 (seed 0x2a): tdata changed"
        );
    }

    #[test]
    fn status_and_no_progress_text() {
        assert_eq!(Status::new(true, true), Status::Done);
        assert_eq!(Status::new(true, false), Status::Progress);
        assert_eq!(Status::new(false, false), Status::Idle);
        let e = StreamError::NoProgress {
            idle_limit: 50,
            cycle: 99,
            seed: SeedText(Some(7)),
        };
        assert_eq!(
            e.to_string(),
            "no progress for 50 cycles (stopped after cycle 99; seed 0x7)"
        );
    }
}
