//! The whole NIC in MAC loopback under the real driver (`nicgen::sim_loopback`): random frames
//! with checksum, VLAN and inline-header requests on several queues at once come back exactly
//! as the golden model says, while the rings wrap many times and the simulated host answers DMA
//! reads late, out of order, and with stalls. `NICGEN_LOOPBACK_FRAMES` sets the frames per run
//! (400 by default, as in CI); `nicgen sim loopback --frames 10000` is the long run.

use nicgen::sim_loopback::{nic_model, run_loopback, LoopbackOpts};
use nicgen_hdl::preset::Preset;
use nicgen_host::DmaConfig;

fn frames() -> usize {
    std::env::var("NICGEN_LOOPBACK_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

fn run(preset: &str, queues: usize, max_len: usize, dma: DmaConfig) {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin(preset).unwrap();
    let model = nic_model(&p).unwrap();
    let o = LoopbackOpts {
        frames: frames(),
        queues,
        max_len,
        seed: dma.seed,
        dma,
    };
    let r = run_loopback(&p, &model, &o, |_| {}).unwrap_or_else(|e| panic!("{preset}: {e:#}"));
    assert_eq!(r.frames, o.frames);
    assert_eq!(r.mismatches, 0, "{preset}: {:?}", r.notes);
}

#[test]
fn nic64_four_queues_jumbo_frames_late_reordered_dma() {
    run(
        "nic64",
        4,
        9014,
        DmaConfig {
            seed: 11,
            ..DmaConfig::default()
        },
    );
}

#[test]
fn nic512_three_queues_with_dma_stalls() {
    run(
        "nic512",
        3,
        1514,
        DmaConfig {
            seed: 12,
            latency_min: 10,
            latency_max: 400,
            req_stall: 0.2,
            wr_data_stall: 0.2,
            ..DmaConfig::default()
        },
    );
}
