//! Differential tests of `stream_trim` against `nicgen_model::stream::trim_bytes`: bus width
//! (8, 64, 512, and the odd widths 16 and 48) x idle x backpressure, random frames of 1 to 300
//! bytes with random commands (head at and around beat and frame edges up to `max_head`, len
//! around the remaining length, 0 and past the frame, some drops), `tuser` carried to the last
//! beat, monitors on both data streams, commands taken by their frames' first beats and at
//! most two ahead, and the drop pulses counted against the model (delivered + dropped =
//! offered). One run per width is replayed on Icarus. A zero-bubble check counts the cycles of
//! back-to-back frames kept whole.

use nicgen_edsl::record::Shape;
use nicgen_hdl::stream::{stream_trim, StreamCfg, TrimCfg, TrimCmd};
use nicgen_model::stream::trim_bytes;
use nicgen_tb::Sim;
use nicgen_tests::cmd::{run_with_cmds, CmdRun};
use nicgen_tests::*;
use num_bigint::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The longest outer header set the decap path removes fits 256 bytes.
const MAX_HEAD: u32 = 256;

/// One frame and its command.
#[derive(Clone, Debug)]
struct Job {
    frame: Vec<u8>,
    user: u64,
    head: usize,
    len: usize,
    drop: bool,
}

impl Job {
    fn cmd(&self, cfg: &TrimCfg) -> BigUint {
        BigUint::from_bytes_le(&cfg.cmd().encode(&TrimCmd {
            head: self.head as u128,
            len: self.len as u128,
            drop: self.drop as u128,
        }))
    }
    fn expect(&self) -> Option<Vec<u8>> {
        trim_bytes(&self.frame, self.head, self.len, self.drop)
    }
}

/// Random jobs for `w` bytes per beat: frames of 1 to `max_len` bytes; head half the time at
/// an edge (0, around a beat boundary, around the frame's length), else anywhere up to
/// `max_head`; len around what remains after head, or 0, 1, or far past the frame; drop with
/// probability 0.1.
fn jobs(seed: u64, count: usize, w: usize, max_head: usize, max_len: usize) -> Vec<Job> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let flen = rng.gen_range(1..=max_len);
            let head = if rng.gen_bool(0.5) {
                let base = [0, w, 2 * w, flen][rng.gen_range(0..4)] as i64;
                (base + rng.gen_range(-2..=2)).clamp(0, max_head as i64) as usize
            } else {
                rng.gen_range(0..=max_head)
            };
            let rest = flen.saturating_sub(head) as i64;
            let len = match rng.gen_range(0..10) {
                0 => 0,
                1 => 1,
                2 => 0xffff,
                3 => rng.gen_range(0..=0xffff),
                _ => (rest + rng.gen_range(-(w as i64) - 2..=2)).clamp(0, 0xffff) as usize,
            };
            Job {
                frame: (0..flen).map(|_| rng.gen()).collect(),
                user: rng.gen_range(0..2),
                head,
                len,
                drop: rng.gen_bool(0.1),
            }
        })
        .collect()
}

fn cfg(w: u32) -> TrimCfg {
    TrimCfg {
        stream: StreamCfg::new(w, 1),
        max_head: MAX_HEAD,
    }
}

/// Run `js`; the delivered frames and the number of `stat_drop` pulses.
fn run_jobs(sim: &mut Sim, cfg: &TrimCfg, k: Knobs, js: &[Job]) -> (CmdRun, usize) {
    let drop_p = sim.port("stat_drop").unwrap();
    let frames: Vec<(Vec<u8>, u64)> = js.iter().map(|j| (j.frame.clone(), j.user)).collect();
    let cmds: Vec<BigUint> = js.iter().map(|j| j.cmd(cfg)).collect();
    let mut drops = 0;
    let r = run_with_cmds(sim, k, &frames, &cmds, |sim, out| {
        drops += sim.get_u64(drop_p) as usize;
        out + drops == js.len()
    });
    (r, drops)
}

/// Every frame of `js` through the trim at each width of `widths`, over the idle x
/// backpressure matrix; Icarus replays one run per width when `icarus`.
fn differential(widths: &[u32], frames: usize, icarus: bool) {
    for (wi, &w) in widths.iter().enumerate() {
        let c = cfg(w);
        let Some(d) = dut(&stream_trim(&c).unwrap_or_else(|e| panic!("{e}")).into_def()) else {
            return;
        };
        let bpb = (w / 8) as usize;
        for (ki, k) in matrix(80 + wi as u64 + w as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            let js = jobs(k.seed, frames, bpb, MAX_HEAD as usize, 300);
            let (r, drops) = run_jobs(&mut sim, &c, k, &js);
            let want: Vec<(Vec<u8>, u64)> = js
                .iter()
                .filter_map(|j| j.expect().map(|f| (f, j.user)))
                .collect();
            let dropped = js.len() - want.len();
            assert!(
                dropped >= frames / 10 && want.len() >= frames / 3,
                "w={w} {k:?}: the jobs exercise both outcomes ({} delivered, {dropped} dropped)",
                want.len()
            );
            for (i, (got, want)) in r.frames.iter().zip(&want).enumerate() {
                assert!(
                    got == want,
                    "w={w} {k:?} delivered frame {i}: got {got:02x?}, want {want:02x?}; jobs \
                     (frame len, head, len, drop): {:?}",
                    js.iter()
                        .map(|j| (j.frame.len(), j.head, j.len, j.drop))
                        .collect::<Vec<_>>()
                );
            }
            assert_eq!(
                (r.frames.len(), drops),
                (want.len(), dropped),
                "w={w} {k:?}: (delivered, dropped)"
            );
            if icarus && ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn trim_matches_the_model() {
    differential(&WIDTHS, 120, true);
}

/// Widths that are not a power of two bytes: the shift and the counters do not divide.
#[test]
fn odd_widths_match_the_model() {
    differential(&[16, 48], 60, false);
}

/// Back-to-back frames kept whole (head 0, len at least the frame), sink always ready: the
/// input is taken every cycle, every input beat leaves as an output beat in consecutive
/// cycles, 4 cycles later.
#[test]
fn whole_frames_pass_without_bubbles() {
    let k = Knobs {
        seed: 7,
        idle: 0.0,
        backpressure: 0.0,
    };
    for w in WIDTHS {
        let c = cfg(w);
        let Some(d) = dut(&stream_trim(&c).unwrap().into_def()) else {
            return;
        };
        let bpb = (w / 8) as usize;
        let mut js = jobs(3, 50, bpb, 0, 300);
        for (i, j) in js.iter_mut().enumerate() {
            j.drop = false;
            j.len = if i % 2 == 0 { j.frame.len() } else { 0xffff };
        }
        let mut sim = d.model.instance();
        reset(&mut sim);
        let (r, drops) = run_jobs(&mut sim, &c, k, &js);
        let in_beats: usize = js.iter().map(|j| j.frame.len().div_ceil(bpb)).sum();
        assert_eq!(drops, 0, "w={w}");
        assert_eq!((r.ti.len(), r.to.len()), (in_beats, in_beats), "w={w}");
        assert!(contiguous(&r.ti), "w={w}: input stalled");
        assert!(contiguous(&r.to), "w={w}: output bubbles");
        assert_eq!(r.to[0] - r.ti[0], 4, "w={w}: latency");
        let want: Vec<Vec<u8>> = js.iter().map(|j| j.frame.clone()).collect();
        let got: Vec<Vec<u8>> = r.frames.into_iter().map(|f| f.0).collect();
        assert_eq!(got, want, "w={w}");
    }
}

#[test]
fn impossible_parameters_are_refused_with_a_reason() {
    let e = stream_trim(&TrimCfg {
        stream: StreamCfg::new(64, 1),
        max_head: 0,
    })
    .unwrap_err();
    assert!(e.to_string().contains("max_head 0"), "{e}");
    let e = stream_trim(&TrimCfg {
        stream: StreamCfg::new(24, 0),
        max_head: 64,
    })
    .unwrap_err();
    assert!(e.to_string().contains("multiple of 16"), "{e}");
}

#[test]
fn generated_verilog_is_lint_clean() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (w, user, max_head) in [(8, 1, 256), (16, 0, 13), (48, 1, 100), (64, 1, 256)]
        .into_iter()
        .chain([(512, 1, 256), (512, 0, 4096)])
    {
        let def = stream_trim(&TrimCfg {
            stream: StreamCfg::new(w, user),
            max_head,
        })
        .unwrap();
        lint_clean(&nicgen_edsl::generate(&def, &Default::default()));
    }
}
