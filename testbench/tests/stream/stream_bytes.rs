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
use nicgen_tb::Sim;
use nicgen_tests::cmd::{run_with_cmds, CmdRun};
use nicgen_tests::*;
use num_bigint::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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

fn run_jobs(sim: &mut Sim, kind: Kind, k: Knobs, jobs: &[Job]) -> CmdRun {
    let frames: Vec<(Vec<u8>, u64)> = jobs.iter().map(|j| (j.frame.clone(), j.user)).collect();
    let cmds: Vec<BigUint> = jobs.iter().map(|j| j.cmd(kind)).collect();
    run_with_cmds(sim, k, &frames, &cmds, |_, out| out == jobs.len())
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
