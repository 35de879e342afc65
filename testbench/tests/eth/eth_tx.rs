//! The TX path (`eth_tx`) against the golden model `nicgen_model::tx::tx_frame`, at 8, 64, 512
//! bits and the widths of the nic128 and nic256 presets, with random idle and backpressure and
//! random offload requests and VLAN tags.

use nicgen::sim_rx::Knobs;
use nicgen::sim_tx::{run_tx, tx_cfg, tx_model_with};
use nicgen::traffic::{udp_frame, SIZES};
use nicgen_hdl::preset::Preset;
use nicgen_model::tx::{tx_frame, TxRequest};
use nicgen_tests::path_frames::host_frames;
use nicgen_tests::watched;

#[test]
fn tx_path_matches_the_model() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (pi, (preset, bits)) in [
        ("nic64", 8u32),
        ("nic64", 64),
        ("nic512", 512),
        ("nic128", 128),
        ("nic256", 256),
    ]
    .into_iter()
    .enumerate()
    {
        let mut p = Preset::builtin(preset).unwrap();
        p.data_bits = bits;
        let cfg = tx_cfg(&p);
        let model = watched(|t| tx_model_with(&cfg, preset, t).unwrap());
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

/// Back to back with no idle and no backpressure, every frame costs exactly the beats it needs
/// on the wire, `ceil((max(len, 60) + 4) / W)` (VLAN-tagged: `len + 4`), at the sizes of
/// `results/PIPELINE.md`: the steady-state cycles per frame, `(cycles(N) - cycles(1)) / (N - 1)`,
/// are cycle counts of the model, not wall-clock time.
#[test]
fn tx_path_sends_back_to_back_frames_without_bubbles() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let n = 32;
    let mut slow = Vec::new();
    for preset in ["nic64", "nic512"] {
        let p = Preset::builtin(preset).unwrap();
        let w = (p.data_bits / 8) as usize;
        let model = watched(|t| tx_model_with(&tx_cfg(&p), preset, t).unwrap());
        for vlan in [false, true] {
            for len in SIZES {
                let frames: Vec<(Vec<u8>, TxRequest)> = (0..n)
                    .map(|i| {
                        let req = TxRequest {
                            csum_l3: true,
                            csum_l4: true,
                            vlan_tci: vlan.then_some(0x2000 + i as u16),
                            ..TxRequest::default()
                        };
                        (udp_frame(len, i), req)
                    })
                    .collect();
                let cycles = |k: usize| run_tx(&model, &frames[..k], Knobs::default(), |_| {});
                let (c1, cn) = (cycles(1).unwrap().1, cycles(n).unwrap().1);
                let wire_len = len + if vlan { 4 } else { 0 };
                let ideal = (wire_len.max(60) + 4).div_ceil(w) as u64;
                let per = (cn - c1) as f64 / (n - 1) as f64;
                if cn - c1 != ideal * (n as u64 - 1) {
                    slow.push(format!(
                        "{preset} vlan {vlan} {len} bytes: {per:.2} cycles per frame, ideal {ideal}"
                    ));
                }
            }
        }
    }
    assert!(
        slow.is_empty(),
        "bubbles on the TX path:\n{}",
        slow.join("\n")
    );
}
