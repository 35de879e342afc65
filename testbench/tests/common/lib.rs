//! The shared harness of the NIC's tests (`testbench/tests`, one test binary per `hdl/src`
//! directory, one file per block at the block's path): generate a block, build it in Verilator
//! (cached by content), and run frames through it with seeded random idle and backpressure,
//! monitors on every stream; replay a run on Icarus; lint the generated Verilog.
//!
//! Every model is built through [`nicgen_tb::waves::watch`] ([`dut`], [`watched`]): a test
//! whose check fails with an instance alive leaves an FST of the cycles around the first
//! mismatch under `target/nicgen-waves/` and prints its path and how to open it; passing tests
//! build and run untraced models. Checks that know the cycle of a mismatch mark it
//! ([`nicgen_tb::waves::mark_mismatch`], as [`assert_frames`] does), so the waveform centres
//! there.
//!
//! The modules hold what several blocks' tests share: [`cmd`] (the per-frame command side
//! stream of the byte blocks), [`csum_frames`] (frames with known header offsets, for the
//! checksum units), [`mac`] (the MAC framing blocks' frames and verdicts),
//! [`engines`] (a queue engine with its memory-region table, served by the simulated host),
//! [`path_frames`] (the frame mixes of the RX and TX path tests).

pub mod cmd;
pub mod csum_frames;
pub mod engines;
pub mod mac;
pub mod path_frames;

use nicgen_edsl::{generate, EmitOptions, Generated, ModuleDef};
use nicgen_hdl::stream::StreamCfg;
use nicgen_tb::record::{RecordDriver, RecordSink};
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamError, StreamMonitor, StreamPorts,
    StreamSink,
};
use nicgen_tb::{Model, Recording, Sim, VerilatorBuild, VerilatorOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cell::RefCell;
use std::convert::Infallible;
use std::rc::Rc;

/// Generated text and the Verilator model of one block.
pub struct Dut {
    pub gen: Generated,
    pub model: Model,
}

/// Generate `def` and build its model (watched: a failure leaves a waveform), or `None` when
/// Verilator is absent and not required.
pub fn dut(def: &Rc<ModuleDef>) -> Option<Dut> {
    if !nicgen_tb::verilator::verilator_required() {
        return None;
    }
    let gen = generate(
        def,
        &EmitOptions {
            preset: "test".into(),
            config_hash: "-".into(),
        },
    );
    let model = watched(|trace| {
        VerilatorBuild::new(
            &gen.top,
            gen.verilog.clone(),
            &gen.shim_cpp,
            VerilatorOptions {
                trace,
                ..Default::default()
            },
        )
        .build()
        .unwrap_or_else(|e| panic!("building {}: {e}", gen.top))
    });
    Some(Dut { gen, model })
}

/// A model built by `build(trace)` through [`nicgen_tb::waves::watch`], so a failing check
/// leaves a waveform: for models the tests build themselves (the path tops).
pub fn watched(build: impl FnOnce(bool) -> Model) -> Model {
    let Ok(model) = nicgen_tb::waves::watch(|trace| Ok::<_, Infallible>(build(trace)));
    model
}

/// The bus widths every stream block runs at.
pub const WIDTHS: [u32; 3] = [8, 64, 512];

/// Hold reset for two cycles (when the block has one).
pub fn reset(sim: &mut Sim) {
    if let Some(rst) = sim.try_port("rst") {
        sim.set(rst, 1);
        sim.cycles_n(2);
        sim.set(rst, 0);
    }
}

/// `n` random frames of 1..=max_len bytes (a quarter of them very short), from `seed`.
pub fn random_frames(seed: u64, n: usize, max_len: usize) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let len = if rng.gen_bool(0.25) {
                rng.gen_range(1..=4.min(max_len))
            } else {
                rng.gen_range(1..=max_len)
            };
            (0..len).map(|_| rng.gen()).collect()
        })
        .collect()
}

/// One run's parameters.
#[derive(Clone, Copy, Debug)]
pub struct Knobs {
    pub seed: u64,
    pub idle: f64,
    pub backpressure: f64,
}

/// The matrix every stream block runs: idle x backpressure, each with its own seed.
pub fn matrix(base_seed: u64) -> Vec<Knobs> {
    let mut v = Vec::new();
    for (i, idle) in [0.0, 0.4].into_iter().enumerate() {
        for (j, backpressure) in [0.0, 0.5].into_iter().enumerate() {
            v.push(Knobs {
                seed: base_seed * 100 + (i * 2 + j) as u64,
                idle,
                backpressure,
            });
        }
    }
    v
}

thread_local! {
    /// Per output of the last [`run_frames`] on this thread, the cycle in which each frame's
    /// last beat transferred: where [`assert_frames`] finds the first wrong frame in time.
    static FRAME_CYCLES: RefCell<Vec<Vec<u64>>> = const { RefCell::new(Vec::new()) };
}

/// Drive `frames` (with `tuser` values) into `s_axis`, collect every output stream named in
/// `outs`, with monitors on all of them, until `done(sinks)` or a stall. Returns the sinks'
/// frames per output (and remembers when each completed, for [`assert_frames`]).
pub fn run_frames(
    sim: &mut Sim,
    knobs: Knobs,
    frames: &[(Vec<u8>, u64)],
    outs: &[&str],
    mut done: impl FnMut(&[Vec<Vec<u8>>], &Sim) -> bool,
    mut on_cycle: impl FnMut(&Sim),
) -> Vec<Vec<(Vec<u8>, u64)>> {
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), knobs.seed, knobs.idle);
    let mut mon_in = StreamMonitor::new(sp, knobs.seed);
    for (f, u) in frames {
        drv.push_with_user(f.clone(), *u);
    }
    let mut sinks: Vec<StreamSink> = Vec::new();
    let mut mons: Vec<StreamMonitor> = Vec::new();
    for (k, p) in outs.iter().enumerate() {
        let ports = StreamPorts::new(sim, p).unwrap();
        sinks.push(StreamSink::new(
            ports.clone(),
            knobs.seed ^ (0x5eed + k as u64),
            knobs.backpressure,
        ));
        mons.push(StreamMonitor::new(ports, knobs.seed));
    }
    let seed = knobs.seed;
    run_until_seeded(sim, seed, 2000, |sim| {
        let mut agents: Vec<&mut dyn Agent> = vec![&mut drv, &mut mon_in];
        for s in sinks.iter_mut() {
            agents.push(s);
        }
        for m in mons.iter_mut() {
            agents.push(m);
        }
        let progressed = step(sim, &mut agents)?;
        on_cycle(sim);
        let got: Vec<Vec<Vec<u8>>> = sinks
            .iter()
            .map(|s| s.frames().iter().map(|f| f.data.clone()).collect())
            .collect();
        Ok(Status::new(progressed, done(&got, sim)))
    })
    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    FRAME_CYCLES.with(|c| {
        *c.borrow_mut() = sinks
            .iter()
            .map(|s| s.frames().iter().map(|f| f.last_cycle).collect())
            .collect()
    });
    sinks
        .iter()
        .map(|s| {
            s.frames()
                .iter()
                .map(|f| (f.data.clone(), f.user))
                .collect()
        })
        .collect()
}

/// Output `out` of the last [`run_frames`] (`got`) equals the golden model's `want`; else marks
/// the cycle the first wrong frame completed as the mismatch (the failure waveform centres
/// there) and fails with `what` and the usual left/right listing.
pub fn assert_frames<T: PartialEq + std::fmt::Debug>(
    out: usize,
    got: &[T],
    want: &[T],
    what: &str,
) {
    if got == want {
        return;
    }
    let first = got.iter().zip(want).position(|(g, w)| g != w);
    let cycles = FRAME_CYCLES.with(|c| c.borrow().get(out).cloned().unwrap_or_default());
    let at = match first {
        Some(i) => cycles.get(i).copied(),
        // A frame too many: the first extra one; a frame missing: nothing came out wrong.
        None => cycles.get(want.len()).copied(),
    };
    if let Some(c) = at {
        nicgen_tb::waves::mark_mismatch(c);
    }
    let index = first.map_or(want.len().min(got.len()), |i| i);
    assert_eq!(got, want, "{what}: first difference at frame {index}");
}

/// Records the cycles in which a stream transfers a beat (for the zero-bubble checks).
pub struct Transfers {
    ports: StreamPorts,
    pub cycles: Vec<u64>,
}

impl Transfers {
    pub fn new(ports: StreamPorts) -> Self {
        Transfers {
            ports,
            cycles: Vec::new(),
        }
    }
}

impl Agent for Transfers {
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        if sim.get_bool(self.ports.tvalid) && sim.get_bool(self.ports.tready) {
            self.cycles.push(sim.cycles() - 1);
        }
        Ok(false)
    }
}

/// `cycles` is a run of consecutive integers.
pub fn contiguous(cycles: &[u64]) -> bool {
    cycles.windows(2).all(|p| p[1] == p[0] + 1)
}

/// Start recording after reset so the Icarus replay sees the same cycles.
pub fn recording_sim(d: &Dut) -> Sim {
    let mut sim = d.model.instance();
    sim.record_inputs(true);
    reset(&mut sim);
    sim
}

/// Replay a Verilator recording on Icarus and require cycle-by-cycle agreement.
pub fn icarus_agrees(d: &Dut, rec: &Recording) {
    if !nicgen_tb::icarus::icarus_required() {
        return;
    }
    nicgen_tb::icarus::replay(
        &d.gen.verilog,
        d.model.layout(),
        rec,
        nicgen_tb::icarus::XPolicy::StreamPayload { before: 2 },
    )
    .unwrap_or_else(|e| panic!("Icarus disagrees with Verilator on {}: {e}", d.gen.top));
}

/// `verilator --lint-only -Wall` on the generated files: zero warnings.
pub fn lint_clean(gen: &Generated) {
    // A directory per call: the tests of one binary run in threads and may lint one top at once.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "nicgen-lint-{}-{call}-{}",
        std::process::id(),
        gen.top
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for (n, t) in &gen.verilog {
        std::fs::write(dir.join(n), t).unwrap();
        files.push(dir.join(n));
    }
    let out = std::process::Command::new("verilator")
        .args(["--lint-only", "-Wall", "--top-module", &gen.top])
        .args(&files)
        .output()
        .expect("verilator");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !text.contains("%Warning"),
        "verilator -Wall on {}:\n{text}",
        gen.top
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stream block whose golden model is the identity: 40 random frames (with `tuser` values)
/// at every width of [`WIDTHS`] x idle x backpressure must come out unchanged and in order.
pub fn stream_identity(name: &str, build: impl Fn(&StreamCfg) -> Rc<ModuleDef>) {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let cfg = StreamCfg::new(w, 3);
        let Some(d) = dut(&build(&cfg)) else { return };
        for k in matrix(10 + wi as u64) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let bpb = (w / 8) as usize;
            let frames: Vec<(Vec<u8>, u64)> = random_frames(k.seed, 40, 4 * bpb + 3)
                .into_iter()
                .enumerate()
                .map(|(i, f)| (f, (i % 8) as u64))
                .collect();
            let n = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &frames,
                &["m_axis"],
                |g, _| g[0].len() == n,
                |_| {},
            );
            assert_frames(
                0,
                &got[0],
                &frames,
                &format!("{name} w={w} {k:?}: frames differ (model: identity)"),
            );
        }
    }
}

/// Record-stream blocks whose golden model is the identity (`s_axis`/`m_axis` data, valid and
/// ready; no keep or last): 200 random items under idle x backpressure come out unchanged and
/// in order, the sink checking the hold rule; without idle or backpressure one item per cycle.
pub fn record_identity(duts: impl Iterator<Item = (Rc<ModuleDef>, u32, String)>) {
    for (def, width, what) in duts {
        let Some(d) = dut(&def) else {
            return;
        };
        for k in matrix(90 + width as u64) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let mut rng = StdRng::seed_from_u64(k.seed);
            let bytes = width.div_ceil(8) as usize;
            let items: Vec<Vec<u8>> = (0..200)
                .map(|_| {
                    let mut v: Vec<u8> = (0..bytes).map(|_| rng.gen()).collect();
                    if width % 8 != 0 {
                        *v.last_mut().unwrap() &= (1u8 << (width % 8)) - 1;
                    }
                    v
                })
                .collect();
            let mut drv = RecordDriver::new(&sim, "s_axis", k.seed, k.idle).unwrap();
            let mut sink = RecordSink::new(&sim, "m_axis", k.seed + 1, k.backpressure).unwrap();
            for i in &items {
                drv.push(i.clone());
            }
            let start = sim.cycles();
            run_until_seeded(&mut sim, k.seed, 100, |sim| {
                let p = step(sim, &mut [&mut drv, &mut sink])?;
                Ok(Status::new(p, sink.items.len() == items.len()))
            })
            .unwrap();
            assert_eq!(sink.items, items, "width {width} {what} {k:?}");
            if k.idle == 0.0 && k.backpressure == 0.0 {
                let cycles = sim.cycles() - start;
                assert!(
                    cycles <= items.len() as u64 + 3,
                    "width {width} {what}: {} items took {cycles} cycles",
                    items.len()
                );
            }
        }
    }
}
