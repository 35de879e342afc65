//! The TX path (`eth_tx`) against the golden model `nicgen_model::tx::tx_frame`, at 8, 64 and
//! 512 bits with random idle and backpressure and random offload requests and VLAN tags.

mod common;
use common::host_frames;
use nicgen::sim_rx::Knobs;
use nicgen::sim_tx::{run_tx, tx_cfg, tx_model};
use nicgen_hdl::preset::Preset;
use nicgen_model::tx::tx_frame;

#[test]
fn tx_path_matches_the_model() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (pi, (preset, bits)) in [("nic64", 8u32), ("nic64", 64), ("nic512", 512)]
        .into_iter()
        .enumerate()
    {
        let mut p = Preset::builtin(preset).unwrap();
        p.data_bits = bits;
        let cfg = tx_cfg(&p);
        let model = tx_model(&cfg, preset).unwrap();
        for (ki, (idle, bp)) in [(0.0, 0.0), (0.3, 0.4)].into_iter().enumerate() {
            let seed = 2000 + 10 * pi as u64 + ki as u64;
            let frames = host_frames(seed, 50);
            let (wire, _) = run_tx(
                &model,
                &frames,
                Knobs {
                    seed,
                    idle,
                    backpressure: bp,
                },
                |_| {},
            )
            .unwrap();
            assert_eq!(wire.len(), frames.len());
            for (i, ((f, r), got)) in frames.iter().zip(&wire).enumerate() {
                let want = tx_frame(f, r, cfg.window as usize);
                assert_eq!(
                    got,
                    &want,
                    "w={bits} seed {seed} frame {i} ({} bytes, {r:?})",
                    f.len()
                );
            }
        }
    }
}
