//! The TX path (`eth_tx`) against the golden model `nicgen_model::tx::tx_frame`, at 8, 64 and
//! 512 bits with random idle and backpressure and random offload requests and VLAN tags.

use nicgen::sim_rx::Knobs;
use nicgen::sim_tx::{run_tx, tx_cfg, tx_model};
use nicgen::traffic::{udp_frame, SIZES};
use nicgen_hdl::preset::Preset;
use nicgen_model::tx::{tx_frame, TxRequest};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// Host frames: IPv4/IPv6 TCP/UDP with garbage in the checksum fields, VLAN-tagged ones, non-IP,
/// short and truncated ones.
pub fn host_frames(seed: u64, n: usize) -> Vec<(Vec<u8>, TxRequest)> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut f: Vec<u8> = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
            let kind = rng.gen_range(0..8);
            let body: usize = if rng.gen_bool(0.2) {
                rng.gen_range(300..2000)
            } else {
                rng.gen_range(8..300)
            };
            match kind {
                0..=5 => {
                    let v6 = rng.gen_bool(0.4);
                    let proto: u8 = if rng.gen_bool(0.5) { 6 } else { 17 };
                    f.extend(if v6 { [0x86, 0xdd] } else { [0x08, 0x00] });
                    let l4len = body.max(20);
                    if v6 {
                        let mut h = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
                        h[4..6].copy_from_slice(&(l4len as u16).to_be_bytes());
                        h.extend((0..32).map(|_| rng.gen::<u8>()));
                        f.extend(h);
                    } else {
                        let mut h = vec![
                            0x45,
                            0,
                            0,
                            0,
                            0,
                            0,
                            0x40,
                            0,
                            64,
                            proto,
                            rng.gen(),
                            rng.gen(),
                        ];
                        h[2..4].copy_from_slice(&((20 + l4len) as u16).to_be_bytes());
                        h.extend((0..8).map(|_| rng.gen::<u8>()));
                        f.extend(h);
                    }
                    let l4 = f.len();
                    f.extend((0..l4len).map(|_| rng.gen::<u8>()));
                    if proto == 6 {
                        f[l4 + 12] = 0x50;
                    } else {
                        f[l4 + 4..l4 + 6].copy_from_slice(&(l4len as u16).to_be_bytes());
                    }
                }
                6 => {
                    f.extend([0x08, 0x06]);
                    f.extend((0..body).map(|_| rng.gen::<u8>()));
                }
                _ => f.truncate(rng.gen_range(1..12)),
            }
            let req = TxRequest {
                csum_l3: rng.gen(),
                csum_l4: rng.gen(),
                vlan_tci: rng.gen_bool(0.3).then(|| rng.gen()),
            };
            (f, req)
        })
        .collect()
}

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
        let model = tx_model(&tx_cfg(&p), preset).unwrap();
        for vlan in [false, true] {
            for len in SIZES {
                let frames: Vec<(Vec<u8>, TxRequest)> = (0..n)
                    .map(|i| {
                        let req = TxRequest {
                            csum_l3: true,
                            csum_l4: true,
                            vlan_tci: vlan.then_some(0x2000 + i as u16),
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
