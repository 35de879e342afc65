//! Differential tests of `stream_insert` and `stream_delete` (VLAN insert/strip geometry:
//! offset 12, 4 bytes; plus a few other geometries) against `nicgen_model::stream::{insert_bytes,
//! delete_bytes}`: bus width (8, 64, 512) x idle x backpressure, random frames with lengths
//! around `off` and `off + n`, a random per-frame enable (and inserted bytes) on the command side
//! stream, `tuser` carried to the last beat, monitors on both data streams and a check that each
//! command is taken by its frame's first beat and at most two ahead of it. One run per width is
//! replayed on Icarus. Every test runs both output stages (`OutStage::Register` and `Slice`).
//! Zero-bubble checks count the cycles of back-to-back frames: delete never stalls its input,
//! insert stalls it only for the extra output beats.

use nicgen_hdl::stream::{stream_delete, stream_insert, DeleteCfg, InsertCfg, OutStage, StreamCfg};
use nicgen_model::stream::{delete_bytes, insert_bytes};
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamError, StreamMonitor, StreamPorts,
    StreamSink,
};
use nicgen_tb::{PortId, Sim};
use nicgen_tests::*;
use num_bigint::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

/// Both output stages: the handshake differs (a beat that emits nothing waits for room only
/// with the slice), the bytes and the cycle counts must not.
const STAGES: [OutStage; 2] = [OutStage::Register, OutStage::Slice];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Insert,
    Delete,
}

/// One frame and its command.
#[derive(Clone, Debug)]
struct Job {
    frame: Vec<u8>,
    user: u64,
    en: bool,
    bytes: Vec<u8>,
}

impl Job {
    /// `tdata[0]` = enable; insert: byte `j` at `tdata[8j+8:8j+1]`.
    fn cmd(&self, kind: Kind) -> BigUint {
        let en = BigUint::from(self.en as u8);
        match kind {
            Kind::Insert => (BigUint::from_bytes_le(&self.bytes) << 1u32) | en,
            Kind::Delete => en,
        }
    }
    fn expect(&self, kind: Kind, off: usize, n: usize) -> Vec<u8> {
        match (kind, self.en) {
            (_, false) => self.frame.clone(),
            (Kind::Insert, true) => insert_bytes(&self.frame, off, &self.bytes),
            (Kind::Delete, true) => delete_bytes(&self.frame, off, n),
        }
    }
}

/// Source of the command side stream (`s_axis_cmd_tdata/tvalid/tready`, no `tlast`), with
/// random idle; also checks that every command transfer happens with a first beat on `s_axis`.
struct CmdDriver {
    data: PortId,
    valid: PortId,
    ready: PortId,
    s: StreamPorts,
    queue: VecDeque<BigUint>,
    rng: StdRng,
    idle: f64,
    pending: bool,
    in_frame: bool,
    width: u32,
    /// Commands taken, frames whose first beat was taken.
    cmds: u64,
    starts: u64,
}

/// Commands the engine takes ahead of their frames (its command register slice).
const CMD_AHEAD: u64 = 2;

impl CmdDriver {
    fn new(sim: &Sim, seed: u64, idle: f64) -> CmdDriver {
        let data = sim.port("s_axis_cmd_tdata").unwrap();
        CmdDriver {
            data,
            valid: sim.port("s_axis_cmd_tvalid").unwrap(),
            ready: sim.port("s_axis_cmd_tready").unwrap(),
            s: StreamPorts::new(sim, "s_axis").unwrap(),
            queue: VecDeque::new(),
            rng: StdRng::seed_from_u64(seed),
            idle,
            pending: false,
            in_frame: false,
            width: sim.width(data),
            cmds: 0,
            starts: 0,
        }
    }
}

impl Agent for CmdDriver {
    fn drive(&mut self, sim: &mut Sim) {
        if !self.pending && !self.queue.is_empty() && !self.rng.gen_bool(self.idle) {
            self.pending = true;
        }
        if self.pending {
            sim.set_big(self.data, &self.queue[0]);
        } else {
            let junk: Vec<u8> = (0..self.width.div_ceil(8))
                .map(|_| self.rng.gen())
                .collect();
            let mask = (BigUint::from(1u8) << self.width) - 1u32;
            sim.set_big(self.data, &(BigUint::from_bytes_le(&junk) & mask));
        }
        sim.set_bool(self.valid, self.pending);
    }
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        let cmd_xfer = self.pending && sim.get_bool(self.ready);
        let s_xfer = sim.get_bool(self.s.tvalid) && sim.get_bool(self.s.tready);
        let first = s_xfer && !self.in_frame;
        self.cmds += cmd_xfer as u64;
        self.starts += first as u64;
        // A frame's first beat is taken only once its command is (in the same cycle at the
        // latest), and the engine holds at most `CMD_AHEAD` commands of frames not started.
        assert!(
            self.starts <= self.cmds && self.cmds <= self.starts + CMD_AHEAD,
            "cycle {}: {} commands taken, {} frames started",
            sim.cycles() - 1,
            self.cmds,
            self.starts
        );
        if s_xfer {
            self.in_frame = !sim.get_bool(self.s.tlast);
        }
        if cmd_xfer {
            self.queue.pop_front();
            self.pending = false;
        }
        Ok(cmd_xfer)
    }
}

/// Output of one run: frames with the `tuser` of their last beat, input and output transfer
/// cycles.
struct Run {
    frames: Vec<(Vec<u8>, u64)>,
    ti: Vec<u64>,
    to: Vec<u64>,
}

fn run_jobs(sim: &mut Sim, kind: Kind, k: Knobs, jobs: &[Job]) -> Run {
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mp = StreamPorts::new(sim, "m_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
    let mut cmd = CmdDriver::new(sim, k.seed ^ 0xc0de, k.idle);
    for j in jobs {
        drv.push_with_user(j.frame.clone(), j.user);
        cmd.queue.push_back(j.cmd(kind));
    }
    let mut sink = StreamSink::new(mp.clone(), k.seed ^ 0x5eed, k.backpressure);
    let mut mi = StreamMonitor::new(sp.clone(), k.seed);
    let mut mo = StreamMonitor::new(mp.clone(), k.seed);
    let mut ti = Transfers::new(sp);
    let mut to = Transfers::new(mp);
    run_until_seeded(sim, k.seed, 500, |sim| {
        let progressed = step(
            sim,
            &mut [
                &mut drv, &mut cmd, &mut sink, &mut mi, &mut mo, &mut ti, &mut to,
            ],
        )?;
        Ok(Status::new(progressed, sink.frames().len() == jobs.len()))
    })
    .unwrap_or_else(|e| panic!("seed {:#x}: {e}", k.seed));
    Run {
        frames: sink
            .frames()
            .iter()
            .map(|f| (f.data.clone(), f.user))
            .collect(),
        ti: ti.cycles,
        to: to.cycles,
    }
}

/// Random jobs: half the lengths at the edges (around `off`, `off + n` and beat boundaries),
/// half random; enable with probability 0.6 (or always).
fn jobs(seed: u64, count: usize, w: usize, off: usize, n: usize, always: bool) -> Vec<Job> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut edges: Vec<usize> = Vec::new();
    for base in [off, off + n, w, 2 * w, off + n + w] {
        for d in [-2i64, -1, 0, 1, 2] {
            let l = base as i64 + d;
            if l >= 1 {
                edges.push(l as usize);
            }
        }
    }
    (0..count)
        .map(|_| {
            let len = if rng.gen_bool(0.5) {
                edges[rng.gen_range(0..edges.len())]
            } else {
                rng.gen_range(1..=off + n + 4 * w)
            };
            Job {
                frame: (0..len).map(|_| rng.gen()).collect(),
                user: rng.gen_range(0..2),
                en: always || rng.gen_bool(0.6),
                bytes: (0..n).map(|_| rng.gen()).collect(),
            }
        })
        .collect()
}

fn build(kind: Kind, w: u32, off: u32, n: u32, out: OutStage) -> Option<Dut> {
    let stream = StreamCfg::new(w, 1);
    let def = match kind {
        Kind::Insert => stream_insert(&InsertCfg {
            stream,
            off,
            n,
            out,
        }),
        Kind::Delete => stream_delete(&DeleteCfg {
            stream,
            off,
            n,
            out,
        }),
    }
    .unwrap_or_else(|e| panic!("{e}"));
    dut(&def)
}

fn differential(kind: Kind, off: u32, n: u32, widths: &[u32], frames: usize, icarus: bool) {
    for out in STAGES {
        differential_stage(kind, off, n, widths, frames, icarus, out);
    }
}

fn differential_stage(
    kind: Kind,
    off: u32,
    n: u32,
    widths: &[u32],
    frames: usize,
    icarus: bool,
    out: OutStage,
) {
    for (wi, &w) in widths.iter().enumerate() {
        let Some(d) = build(kind, w, off, n, out) else {
            return;
        };
        let bpb = (w / 8) as usize;
        for (ki, k) in matrix(60 + 10 * (kind == Kind::Delete) as u64 + wi as u64 + off as u64)
            .into_iter()
            .enumerate()
        {
            let mut sim = recording_sim(&d);
            let js = jobs(k.seed, frames, bpb, off as usize, n as usize, false);
            let r = run_jobs(&mut sim, kind, k, &js);
            for (i, (j, got)) in js.iter().zip(&r.frames).enumerate() {
                let want = j.expect(kind, off as usize, n as usize);
                assert!(
                    got.0 == want,
                    "{kind:?} {out:?} off {off} n {n} w={w} {k:?} frame {i} (len {}, en {}): got {:02x?}, want {:02x?}",
                    j.frame.len(),
                    j.en,
                    got.0,
                    want
                );
                assert_eq!(
                    got.1, j.user,
                    "{kind:?} {out:?} w={w} {k:?} frame {i}: tuser"
                );
            }
            assert_eq!(r.frames.len(), js.len());
            if icarus && ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn delete_matches_the_model() {
    differential(Kind::Delete, 12, 4, &WIDTHS, 60, true);
}

#[test]
fn insert_matches_the_model() {
    differential(Kind::Insert, 12, 4, &WIDTHS, 60, true);
}

/// Other geometries: a splice spanning several beats at 16 bits, a delete longer than a beat at
/// 128 bits, a prepend (offset 0) longer than the 8-bit beat, an odd offset and length at 16 bits.
#[test]
fn other_geometries_match_the_model() {
    differential(Kind::Delete, 13, 5, &[16], 40, false);
    differential(Kind::Delete, 3, 20, &[128], 40, false);
    differential(Kind::Insert, 0, 6, &[8], 40, false);
    differential(Kind::Insert, 7, 11, &[16], 40, false);
}

/// Back-to-back frames, sink always ready, every frame enabled, then a random mix of enabled
/// and disabled frames.
#[test]
fn delete_never_stalls_and_insert_stalls_only_for_extra_beats() {
    let k = Knobs {
        seed: 99,
        idle: 0.0,
        backpressure: 0.0,
    };
    for w in WIDTHS {
        let bpb = (w / 8) as usize;
        for (kind, out) in [Kind::Delete, Kind::Insert]
            .into_iter()
            .flat_map(|k| STAGES.map(|o| (k, o)))
        {
            let Some(d) = build(kind, w, 12, 4, out) else {
                return;
            };
            for always in [true, false] {
                let mut sim = d.model.instance();
                reset(&mut sim);
                let js = jobs(5, 50, bpb, 12, 4, always);
                let r = run_jobs(&mut sim, kind, k, &js);
                let in_beats: usize = js.iter().map(|j| j.frame.len().div_ceil(bpb)).sum();
                let out_beats: usize = js
                    .iter()
                    .map(|j| j.expect(kind, 12, 4).len().div_ceil(bpb))
                    .sum();
                assert_eq!(
                    (r.ti.len(), r.to.len()),
                    (in_beats, out_beats),
                    "{kind:?} {out:?} w={w} always {always}"
                );
                match kind {
                    Kind::Delete => {
                        // The input is taken every cycle; the output ends at most 2 cycles
                        // after it (last beat flushed, output register): bubbles only where
                        // beats vanish.
                        assert!(
                            contiguous(&r.ti),
                            "delete {out:?} w={w} always {always}: input stalled"
                        );
                        let span = r.to.last().unwrap() - r.ti[0];
                        assert!(
                            span <= in_beats as u64 + 1,
                            "delete {out:?} w={w} always {always}: span {span} for {in_beats} beats"
                        );
                        assert_eq!(r.to[0] - r.ti[0], 2, "delete {out:?} w={w}: latency");
                    }
                    Kind::Insert => {
                        // The output never idles: every input stall is an extra output beat.
                        assert!(
                            contiguous(&r.to),
                            "insert {out:?} w={w} always {always}: output bubbles"
                        );
                        assert_eq!(r.to[0] - r.ti[0], 1, "insert {out:?} w={w}: latency");
                    }
                }
            }
        }
    }
}

#[test]
fn impossible_parameters_are_refused_with_a_reason() {
    let stream = StreamCfg::new(64, 1);
    let e = stream_delete(&DeleteCfg {
        stream,
        off: 0,
        n: 4,
        out: OutStage::Slice,
    })
    .unwrap_err();
    assert!(e.to_string().contains("offset 0"), "{e}");
    let e = stream_insert(&InsertCfg {
        stream,
        off: 12,
        n: 0,
        out: OutStage::Register,
    })
    .unwrap_err();
    assert!(e.to_string().contains("byte count 0"), "{e}");
    let e = stream_delete(&DeleteCfg {
        stream: StreamCfg::new(12, 0),
        off: 12,
        n: 4,
        out: OutStage::Register,
    })
    .unwrap_err();
    assert!(e.to_string().contains("not whole bytes"), "{e}");
}

#[test]
fn generated_verilog_is_lint_clean() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (w, out) in WIDTHS.into_iter().flat_map(|w| STAGES.map(|o| (w, o))) {
        let stream = StreamCfg::new(w, 1);
        for def in [
            stream_insert(&InsertCfg {
                stream,
                off: 12,
                n: 4,
                out,
            })
            .unwrap(),
            stream_delete(&DeleteCfg {
                stream,
                off: 12,
                n: 4,
                out,
            })
            .unwrap(),
        ] {
            lint_clean(&nicgen_edsl::generate(&def, &Default::default()));
        }
    }
}
