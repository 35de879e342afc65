//! The TX path (`eth_tx`) against the golden model `nicgen_model::tx::tx_frame`, at 8, 64, 512
//! bits and the widths of the nic128 and nic256 presets, with random idle and backpressure and
//! random offload requests and VLAN tags.

use nicgen::sim_rx::Knobs;
use nicgen::sim_tx::{encap_contexts, model_wire};
use nicgen::sim_tx::{run_tx, tx_cfg, tx_model_with};
use nicgen::traffic::{udp_frame, SIZES};
use nicgen_hdl::overlay::tx_tso::max_mss_at as tx_tso_max_mss;
use nicgen_hdl::preset::Preset;
use nicgen_model::encap::{encap, EncapKind};
use nicgen_model::tcp::Flags;
use nicgen_model::tx::{tx_frame, TxRequest};
use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip, NVGRE};
use nicgen_tests::path_frames::host_frames;
use nicgen_tests::watched;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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
        // The TSO engine's segment buffer at 8 bits holds two segments of at most 7936 payload
        // bytes (one FIFO of 16384 beats).
        p.overlay.max_mss = p.overlay.max_mss.min(tx_tso_max_mss(bits));
        let cfg = tx_cfg(&p);
        let model = watched(|t| tx_model_with(&cfg, preset, t).unwrap());
        for (ki, (idle, bp)) in [(0.0, 0.0), (0.3, 0.4)].into_iter().enumerate() {
            let seed = 2000 + 10 * pi as u64 + ki as u64;
            let frames = host_frames(seed, 50);
            let wire = run_tx(
                &model,
                &cfg,
                &frames,
                Knobs {
                    seed,
                    idle,
                    backpressure: bp,
                },
                |_| {},
            )
            .unwrap()
            .wire;
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
        let cfg = tx_cfg(&p);
        let model = watched(|t| tx_model_with(&cfg, preset, t).unwrap());
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
                let cycles =
                    |k: usize| run_tx(&model, &cfg, &frames[..k], Knobs::default(), |_| {});
                let (c1, cn) = (cycles(1).unwrap().cycles, cycles(n).unwrap().cycles);
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

/// A TCP super-frame of `len` payload bytes (flags ACK|PSH|CWR|FIN, sequence and IPv4 ID near
/// their wrap): plain, or already encapsulated by the host in `kind`.
fn superframe(rng: &mut StdRng, kind: Option<EncapKind>, len: usize) -> Vec<u8> {
    let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::CWR.0 | Flags::FIN.0);
    let inner = Ip {
        v6: rng.gen(),
        ident: 0xFFFE,
    };
    let plain = tcp_frame(
        inner,
        kind.is_none() && rng.gen(),
        0xFFFF_F000,
        flags,
        &pattern(len),
    );
    match kind {
        None => plain,
        Some(k) => encap(&plain, &ctx(rng.gen(), rng.gen(), k), 0x7FFE).unwrap(),
    }
}

/// Sends for the segmentation and encapsulation stages: LSO sends (plain TCP over IPv4 and
/// IPv6, and VXLAN and NVGRE super-frames the host encapsulated) and plain frames, each
/// encapsulated by the NIC or not (two contexts, VXLAN over IPv4 and NVGRE over IPv6), some
/// VLAN-tagged, with refused sends (LSO of a frame that is not TCP), sends the sender aborts
/// part-way and frames too short to encapsulate among them.
fn overlay_sends(seed: u64, n: usize) -> Vec<(Vec<u8>, TxRequest)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let plain = host_frames(seed, n);
    let nic_ctx = [
        ctx(false, false, EncapKind::vxlan(77)),
        ctx(true, false, NVGRE),
    ];
    (0..n)
        .map(|i| {
            let (mut f, mut r) = plain[i].clone();
            match rng.gen_range(0..10) {
                0..=4 => {
                    let kind =
                        [None, None, Some(EncapKind::vxlan(42)), Some(NVGRE)][rng.gen_range(0..4)];
                    let len = match rng.gen_range(0..4) {
                        0 => rng.gen_range(0..100),
                        3 => rng.gen_range(3000..12000),
                        _ => rng.gen_range(100..3000),
                    };
                    f = superframe(&mut rng, kind, len);
                    r.mss = Some([1, 7, 64, 536, 1448, 3000][rng.gen_range(0..6)]);
                    // Aborted by the sender after some of its payload: its whole segments
                    // go out, the partial one is dropped and counted.
                    if len > 1 && rng.gen_bool(0.25) {
                        let n = f.len();
                        f.truncate(n - rng.gen_range(1..len));
                        r.aborted = true;
                    }
                }
                // LSO asked of a frame that is not TCP: refused and counted.
                5 => r.mss = Some(1000),
                // Too short to encapsulate: dropped and counted.
                6 => f.truncate(rng.gen_range(1..14)),
                _ => {}
            }
            if rng.gen_bool(0.5) {
                r.encap = Some(nic_ctx[rng.gen_range(0..2)]);
            }
            if f.len() < 14 && r.encap.is_none() {
                r.encap = Some(nic_ctx[0]);
            }
            (f, r)
        })
        .collect()
}

/// The TX path with its segmentation and encapsulation stages against
/// `nicgen_model::tx::tx_frames`: every frame out byte for byte, in order, and every refused
/// send, aborted send's partial segment and dropped frame counted, at 64 and 512 bits, with
/// and without idle and backpressure.
#[test]
fn tx_path_segments_and_encapsulates_as_the_model() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (pi, preset) in ["nic64", "nic512"].into_iter().enumerate() {
        let p = Preset::builtin(preset).unwrap();
        let cfg = tx_cfg(&p);
        let model = watched(|t| tx_model_with(&cfg, preset, t).unwrap());
        for (ki, (idle, bp)) in [(0.0, 0.0), (0.3, 0.4)].into_iter().enumerate() {
            let seed = 3000 + 10 * pi as u64 + ki as u64;
            let sends = overlay_sends(seed, 60);
            assert!(encap_contexts(&sends).len() == 2);
            assert!(
                sends.iter().any(|(_, r)| r.aborted),
                "an aborted send among them"
            );
            let want = model_wire(&sends, cfg.window as usize);
            let refused = sends
                .iter()
                .filter(|(f, r)| {
                    r.mss.is_some_and(|m| {
                        r.aborted || nicgen_model::tso::tso(f, m, &Default::default()).is_err()
                    })
                })
                .count();
            // (An LSO send that short is refused before the engine.)
            let short = sends
                .iter()
                .filter(|(f, r)| f.len() < 14 && r.mss.is_none())
                .count();
            let run = run_tx(
                &model,
                &cfg,
                &sends,
                Knobs {
                    seed,
                    idle,
                    backpressure: bp,
                },
                |_| {},
            )
            .unwrap();
            assert_eq!(
                run.wire.len(),
                want.len(),
                "{preset} seed {seed}: frames out"
            );
            for (i, (got, w)) in run.wire.iter().zip(&want).enumerate() {
                assert_eq!(got, w, "{preset} seed {seed}: frame {i} of {}", want.len());
            }
            assert_eq!(
                run.lso_bad as usize, refused,
                "{preset} seed {seed}: refused sends"
            );
            assert_eq!(
                run.encap_drop as usize, short,
                "{preset} seed {seed}: short frames"
            );
        }
    }
}
