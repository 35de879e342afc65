//! The preset top (`nic_core`: TX path, RX path, MAC-side loopback) at 64 and 512 bits against
//! the golden model, with random idle and backpressure on every port:
//!
//! - loopback off, both directions at once: `m_axis_mac_tx` carries `tx_frame` of every host
//!   frame; every wire frame on `s_axis_mac_rx` gives the `rx_frame` report and delivery;
//! - loopback toggled under traffic: every host frame comes back through the RX path
//!   (`rx_frame(tx_frame(f))`) while on, goes to the wire while off, is never split or lost,
//!   and the held wire input enters once the loopback is off;
//! - the hardware counters (`stat_rx_*`, `stat_tx_frames`) equal the counts of the records;
//! - an FST trace window of the top can be written.

use nicgen::sim_rx::{decode, model_cfg, report_counts, Knobs};
use nicgen::sim_tx::tx_cmd;
use nicgen_edsl::{generate, EmitOptions};
use nicgen_hdl::eth::eth_rx::RxCfg;
use nicgen_hdl::eth::eth_rx::RX_STATS;
use nicgen_hdl::preset::Preset;
use nicgen_hdl::top::{nic_core, rx_cfg};
use nicgen_model::rx::{rx_frame, RxConfig, RxReport};
use nicgen_model::tx::{tx_frame, TxRequest};
use nicgen_tb::record::{RecordDriver, RecordSink};
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamMonitor, StreamPorts, StreamSink,
};
use nicgen_tb::{Model, Sim, VerilatorBuild, VerilatorOptions};
use nicgen_tests::path_frames::{host_frames, wire_frames};
use nicgen_tests::{reset, watched};

fn core_model(p: &Preset, trace: bool) -> Model {
    let g = generate(
        &nic_core(p).unwrap(),
        &EmitOptions {
            preset: p.name.clone(),
            config_hash: p.config_hash(),
        },
    );
    VerilatorBuild::new(
        &g.top,
        g.verilog.clone(),
        &g.shim_cpp,
        VerilatorOptions {
            trace,
            cache_dir: None,
        },
    )
    .build()
    .unwrap()
}

/// Every agent on the top's ports.
struct Bench {
    tx_in: StreamDriver,
    tx_cmd: RecordDriver,
    mac_rx: StreamDriver,
    mac_tx: StreamSink,
    rx_out: StreamSink,
    rx_meta: RecordSink,
    monitors: Vec<StreamMonitor>,
}

impl Bench {
    fn new(sim: &Sim, k: Knobs) -> Bench {
        let ports = |p: &str| StreamPorts::new(sim, p).unwrap();
        Bench {
            tx_in: StreamDriver::new(ports("s_axis_tx"), k.seed, k.idle),
            tx_cmd: RecordDriver::new(sim, "s_axis_tx_cmd", k.seed + 1, k.idle).unwrap(),
            mac_rx: StreamDriver::new(ports("s_axis_mac_rx"), k.seed + 2, k.idle),
            mac_tx: StreamSink::new(ports("m_axis_mac_tx"), k.seed + 3, k.backpressure),
            rx_out: StreamSink::new(ports("m_axis_rx"), k.seed + 4, k.backpressure),
            rx_meta: RecordSink::new(sim, "m_axis_rx_meta", k.seed + 5, k.backpressure).unwrap(),
            monitors: ["s_axis_tx", "s_axis_mac_rx", "m_axis_mac_tx", "m_axis_rx"]
                .into_iter()
                .map(|p| StreamMonitor::new(ports(p), k.seed))
                .collect(),
        }
    }

    /// Step until `done`; `each` runs before every cycle (to drive `cfg_loopback`).
    fn run(
        &mut self,
        sim: &mut Sim,
        seed: u64,
        mut each: impl FnMut(&mut Sim, &Bench),
        done: impl Fn(&Bench) -> bool,
    ) {
        run_until_seeded(sim, seed, 20_000, |sim| {
            each(sim, self);
            let Bench {
                tx_in,
                tx_cmd,
                mac_rx,
                mac_tx,
                rx_out,
                rx_meta,
                monitors,
            } = self;
            let mut agents: Vec<&mut dyn Agent> =
                vec![tx_in, tx_cmd, mac_rx, mac_tx, rx_out, rx_meta];
            for m in monitors.iter_mut() {
                agents.push(m);
            }
            let p = step(sim, &mut agents)?;
            Ok(Status::new(p, done(self)))
        })
        .unwrap();
    }
}

/// The counters after the run, checked against the reports and the TX frame count.
fn check_counters(sim: &mut Sim, reports: &[RxReport], tx_frames: usize, what: &str) {
    sim.cycle();
    let got: Vec<(&str, u64)> = RX_STATS
        .iter()
        .map(|n| {
            let port = sim.port(&format!("stat_rx_{n}")).unwrap();
            (*n, sim.get_u64(port))
        })
        .collect();
    assert_eq!(got, report_counts(reports), "{what}: RX counters");
    let port = sim.port("stat_tx_frames").unwrap();
    assert_eq!(
        sim.get_u64(port),
        tx_frames as u64,
        "{what}: stat_tx_frames"
    );
}

const PRESETS: [&str; 2] = ["nic64", "nic512"];
const KNOBS: [(f64, f64); 2] = [(0.0, 0.0), (0.3, 0.4)];

/// One run: a fresh, reset instance with `host` frames queued on the TX side and `wire` frames
/// on the MAC RX side.
struct Case {
    cfg: RxCfg,
    mcfg: RxConfig,
    sim: Sim,
    bench: Bench,
    host: Vec<(Vec<u8>, TxRequest)>,
    wire: Vec<Vec<u8>>,
    seed: u64,
    what: String,
}

/// Run `body` for every preset × knob setting with `n_host` / `n_wire` random frames;
/// `before` runs on the reset instance before the frames are queued.
fn for_each_case(
    base_seed: u64,
    n_host: usize,
    n_wire: usize,
    before: impl Fn(&mut Sim),
    body: impl Fn(Case),
) {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (pi, preset) in PRESETS.into_iter().enumerate() {
        let p = Preset::builtin(preset).unwrap();
        let cfg = rx_cfg(&p);
        let model = watched(|t| core_model(&p, t));
        for (ki, (idle, backpressure)) in KNOBS.into_iter().enumerate() {
            let seed = base_seed + 10 * pi as u64 + ki as u64;
            let k = Knobs {
                seed,
                idle,
                backpressure,
            };
            let host = host_frames(seed, n_host);
            let wire = wire_frames(seed + 1, n_wire, p.mtu as usize);
            let mut sim = model.instance();
            reset(&mut sim);
            before(&mut sim);
            let mut bench = Bench::new(&sim, k);
            for (f, r) in &host {
                bench.tx_in.push(f.clone());
                bench.tx_cmd.push(tx_cmd(f, r, None));
            }
            for f in &wire {
                bench.mac_rx.push(f.clone());
            }
            body(Case {
                mcfg: model_cfg(&cfg),
                cfg,
                sim,
                bench,
                host,
                wire,
                seed,
                what: format!("{preset} {k:?}"),
            });
        }
    }
}

impl Case {
    /// The RX side: one report per frame of `rx_in` (wire frames with FCS, in the order they
    /// entered), each the model's, and the delivered frames byte for byte; then the counters.
    fn check_rx(&mut self, rx_in: &[&Vec<u8>]) {
        let what = &self.what;
        let reports: Vec<RxReport> = self
            .bench
            .rx_meta
            .items
            .iter()
            .map(|x| decode(&self.cfg, x))
            .collect();
        assert_eq!(
            reports.len(),
            rx_in.len(),
            "{what}: one report per RX frame"
        );
        let mut delivered = Vec::new();
        for (i, (f, got)) in rx_in.iter().zip(&reports).enumerate() {
            let (want, d) = rx_frame(f, &self.mcfg);
            assert_eq!(got, &want, "{what}: RX frame {i}");
            delivered.extend(d);
        }
        let out: Vec<Vec<u8>> = self
            .bench
            .rx_out
            .frames()
            .iter()
            .map(|f| f.data.clone())
            .collect();
        assert_eq!(out, delivered, "{what}: delivered frames");
        check_counters(&mut self.sim, &reports, self.host.len(), what);
    }

    /// What the TX path puts on the wire for every host frame (FCS included), in order.
    fn tx_wire(&self) -> Vec<Vec<u8>> {
        self.host
            .iter()
            .map(|(f, r)| tx_frame(f, r, self.cfg.window as usize))
            .collect()
    }

    fn sent(&self) -> Vec<Vec<u8>> {
        self.bench
            .mac_tx
            .frames()
            .iter()
            .map(|f| f.data.clone())
            .collect()
    }
}

#[test]
fn both_directions_at_once_match_the_model() {
    for_each_case(
        3000,
        40,
        40,
        |_| {},
        |mut c| {
            let (nh, nw) = (c.host.len(), c.wire.len());
            c.bench.run(
                &mut c.sim,
                c.seed,
                |_, _| {},
                |b| b.mac_tx.frames().len() == nh && b.rx_meta.items.len() == nw,
            );
            assert_eq!(c.sent(), c.tx_wire(), "{}: frames on the wire", c.what);
            let wire = c.wire.clone();
            c.check_rx(&wire.iter().collect::<Vec<_>>());
        },
    );
}

#[test]
fn loopback_toggled_under_traffic_loses_and_splits_nothing() {
    let set_loopback = |sim: &mut Sim| {
        let (want, active) = (
            sim.port("cfg_loopback").unwrap(),
            sim.port("loopback_active").unwrap(),
        );
        sim.set(want, 1);
        sim.cycles_n(2); // outputs are sampled before each edge
        assert_eq!(sim.get_u64(active), 1, "loopback takes effect when idle");
    };
    for_each_case(4000, 60, 20, set_loopback, |mut c| {
        let want_lb = c.sim.port("cfg_loopback").unwrap();
        let (nh, nw) = (c.host.len(), c.wire.len());
        // Loopback on until a third of the host frames came back, then off.
        let switch_after = nh / 3;
        c.bench.run(
            &mut c.sim,
            c.seed,
            |sim, b| {
                if b.rx_meta.items.len() >= switch_after {
                    sim.set(want_lb, 0);
                }
            },
            |b| b.mac_tx.frames().len() + b.rx_meta.items.len() == nh + nw,
        );
        let what = c.what.clone();
        let sent = c.sent();
        let looped = nh - sent.len();
        assert!(
            looped >= switch_after && looped < nh,
            "{what}: {looped} frames looped back"
        );
        // The first `looped` host frames came back through RX; the rest went to the wire;
        // the held wire input entered after them.
        let tx_wire = c.tx_wire();
        assert_eq!(sent, tx_wire[looped..], "{what}: frames on the wire");
        let active = c.sim.port("loopback_active").unwrap();
        assert_eq!(c.sim.get_u64(active), 0, "{what}: loopback off at the end");
        let wire = c.wire.clone();
        let rx_in: Vec<&Vec<u8>> = tx_wire[..looped].iter().chain(&wire).collect();
        c.check_rx(&rx_in);
    });
}

#[test]
fn fst_trace_window_of_the_top() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let model = core_model(&p, true);
    let mut sim = model.instance();
    let path = std::env::temp_dir().join(format!("nicgen-nic-core-{}.fst", std::process::id()));
    sim.trace_window(5, 25, &path).unwrap();
    reset(&mut sim);
    sim.cycles_n(40);
    // The window closed at cycle 25: a complete file with cycles 5..25 (times 10..49).
    let info = nicgen_tb::waves::check_fst(&path).unwrap();
    assert_eq!((info.start_time, info.end_time), (10, 49), "{info:?}");
    let _ = std::fs::remove_file(&path);
}
