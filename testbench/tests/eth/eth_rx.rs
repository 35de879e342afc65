//! The RX path (`eth_rx`) against the golden model `nicgen_model::rx::rx_frame`: well-formed
//! and malformed frames, VLAN tags, bad FCS, runts, oversize and MAC-control frames, at 8, 64,
//! 512 bits and the widths of the nic128 and nic256 presets, with random idle and backpressure;
//! every frame in gives one report, in order, and the delivered frames match byte for byte. The
//! size limit counts each frame's own VLAN tags: frames at 14 + 4 × tags + MTU bytes are
//! delivered, one byte more are dropped. With the presets' tunnel stage: VXLAN and NVGRE
//! frames, well formed and broken, de-capsulated by steering entries or `decap_all` into
//! exactly the model's inner frames, with the model's tunnel reports and queues.

use nicgen::sim_rx::{model_cfg, model_cfg_with, run_rx, rx_cfg, rx_model_with, Knobs, RxRun};
use nicgen_hdl::preset::Preset;
use nicgen_model::crc32::append_fcs;
use nicgen_model::rx::{rx_frame, DropReason, RxConfig};
use nicgen_tests::path_frames::{size_limit_frames, wire_frames};
use nicgen_tests::watched;
use rand::{rngs::StdRng, Rng, SeedableRng};

fn required() -> bool {
    nicgen_tb::verilator::verilator_required()
}

/// Every report of `run` is the model's for its frame, and the delivered frames are the
/// model's, in order.
fn expect_model(frames: &[Vec<u8>], run: &RxRun, mcfg: &RxConfig, ctx: &str) {
    let mut delivered = Vec::new();
    for (i, (f, got)) in frames.iter().zip(&run.reports).enumerate() {
        let (want, d) = rx_frame(f, mcfg);
        assert_eq!(
            got,
            &want,
            "{ctx} frame {i} ({} bytes): {:02x?}",
            f.len(),
            &f[..f.len().min(96)]
        );
        delivered.extend(d);
    }
    assert_eq!(run.delivered, delivered, "{ctx}: delivered frames");
}

#[test]
fn rx_path_matches_the_model() {
    if !required() {
        return;
    }
    for (pi, (preset, data_bits)) in [
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
        p.data_bits = data_bits;
        let cfg = rx_cfg(&p, None);
        let model = watched(|t| rx_model_with(&cfg, preset, t).unwrap());
        let mcfg = model_cfg(&cfg);
        for (ki, (idle, bp)) in [(0.0, 0.0), (0.3, 0.4)].into_iter().enumerate() {
            let seed = 1000 + pi as u64 * 10 + ki as u64;
            let frames = wire_frames(seed, 60, p.mtu as usize);
            let run = run_rx(
                &model,
                &cfg,
                &frames,
                None,
                None,
                Knobs {
                    seed,
                    idle,
                    backpressure: bp,
                },
                |_| {},
            )
            .unwrap();
            expect_model(&frames, &run, &mcfg, &format!("w={data_bits} seed {seed}"));
        }
    }
}

/// The size limit with the frame's own tags: untagged, one-tag and two-tag frames (C and S
/// tags in every order, a third tag that counts as payload, a TPID the check does not know) at
/// exactly their limit are delivered, one byte longer are dropped as oversize; so is an
/// untagged frame with 1,508 bytes of L2 payload at MTU 1500. At 64 bits with MTU 1500, at 8
/// and 512 bits with the preset's jumbo MTU; without and with random idle and backpressure.
#[test]
fn rx_path_size_limit_counts_the_frames_own_tags() {
    if !required() {
        return;
    }
    for (preset, data_bits, mtu) in [
        ("nic64", 64u32, Some(1500)),
        ("nic64", 8, None),
        ("nic512", 512, None),
    ] {
        let mut p = Preset::builtin(preset).unwrap();
        p.data_bits = data_bits;
        let cfg = rx_cfg(&p, mtu);
        let model = watched(|t| rx_model_with(&cfg, preset, t).unwrap());
        let mcfg = model_cfg(&cfg);
        let cases = size_limit_frames(cfg.mtu as usize);
        let frames: Vec<Vec<u8>> = cases.iter().map(|c| c.0.clone()).collect();
        for (ki, (idle, bp)) in [(0.0, 0.0), (0.3, 0.4)].into_iter().enumerate() {
            let seed = 5000 + u64::from(data_bits) * 10 + ki as u64;
            let k = Knobs {
                seed,
                idle,
                backpressure: bp,
            };
            let run = run_rx(&model, &cfg, &frames, None, None, k, |_| {}).unwrap();
            assert_eq!(run.reports.len(), frames.len(), "w={data_bits}: reports");
            let mut delivered = Vec::new();
            for (i, ((f, over), got)) in cases.iter().zip(&run.reports).enumerate() {
                let ctx = format!(
                    "w={data_bits} mtu {} seed {seed} frame {i} ({} bytes with FCS, {:02x?})",
                    cfg.mtu,
                    f.len(),
                    &f[12..22]
                );
                let want_drop = over.then_some(DropReason::Oversize);
                assert_eq!(got.drop, want_drop, "{ctx}");
                let (want, d) = rx_frame(f, &mcfg);
                assert_eq!(got, &want, "{ctx}");
                delivered.extend(d);
            }
            assert_eq!(run.delivered, delivered, "w={data_bits}: delivered frames");
        }
    }
}

/// Fuzz: random bytes and mutated good frames of every length into the RX path at 64 bits.
/// Every frame in gives exactly one report, in order, equal to the model's; nothing hangs (the
/// run is bounded); a good frame after garbage comes out intact. `NICGEN_FUZZ_FRAMES` sets the
/// count (300 by default, as in CI; `NICGEN_FUZZ_FRAMES=1000000` for the long run).
#[test]
fn rx_fuzz_accounts_for_every_frame() {
    if !required() {
        return;
    }
    let n: usize = std::env::var("NICGEN_FUZZ_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let p = Preset::builtin("nic64").unwrap();
    let cfg = rx_cfg(&p, None);
    let model = watched(|t| rx_model_with(&cfg, "nic64", t).unwrap());
    let mcfg = model_cfg(&cfg);
    let seed: u64 = std::env::var("NICGEN_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(77);
    let mut rng = StdRng::seed_from_u64(seed);
    let good = wire_frames(seed, 50, p.mtu as usize);
    let mut done = 0;
    while done < n {
        let chunk = (n - done).min(2000);
        let mut frames = Vec::with_capacity(chunk);
        for _ in 0..chunk {
            let mut f = if rng.gen_bool(0.3) {
                (0..rng.gen_range(1..400)).map(|_| rng.gen()).collect()
            } else {
                let mut f = good[rng.gen_range(0..good.len())].clone();
                for _ in 0..rng.gen_range(1..6) {
                    let at = rng.gen_range(0..f.len());
                    match rng.gen_range(0..3) {
                        0 => f[at] = rng.gen(),
                        1 => f.truncate(at.max(1)),
                        _ => f.insert(at, rng.gen()),
                    }
                }
                f
            };
            if rng.gen_bool(0.5) {
                // Mostly with a valid FCS, so the frame reaches the parser.
                let len = f.len().saturating_sub(4).max(1);
                f.truncate(len);
                append_fcs(&mut f);
            }
            frames.push(f);
        }
        frames.push(good[0].clone());
        let run = run_rx(
            &model,
            &cfg,
            &frames,
            None,
            None,
            Knobs {
                seed: seed + done as u64,
                idle: 0.1,
                backpressure: 0.1,
            },
            |_| {},
        )
        .unwrap_or_else(|e| panic!("seed {seed}, frames {done}..: {e}"));
        assert_eq!(
            run.reports.len(),
            frames.len(),
            "seed {seed}: one report per frame"
        );
        let mut delivered = Vec::new();
        for (i, (f, got)) in frames.iter().zip(&run.reports).enumerate() {
            let (want, d) = rx_frame(f, &mcfg);
            assert_eq!(
                got,
                &want,
                "seed {seed} frame {} ({} bytes): {:02x?}",
                done + i,
                f.len(),
                &f[..f.len().min(64)]
            );
            delivered.extend(d);
        }
        assert_eq!(run.delivered, delivered, "seed {seed}: delivered bytes");
        done += chunk;
    }
}

/// Long backpressure: the frame buffer fills, so the input must stop while the FIFO after the
/// FCS check (which never stalls) lacks room for the beats still inside the check. More beats
/// are sent than the buffer holds, so the input stalls many times; a lost or doubled beat would
/// show as a frame that differs from the model. At 8 bits the check holds the most beats (a
/// 4-beat hold line). This catches a missing room check, not a threshold a few beats too high.
#[test]
fn rx_path_holds_its_input_when_full() {
    if !required() {
        return;
    }
    for data_bits in [8u32, 64] {
        let mut p = Preset::builtin("nic64").unwrap();
        p.data_bits = data_bits;
        let cfg = rx_cfg(&p, None);
        let model = watched(|t| rx_model_with(&cfg, "nic64", t).unwrap());
        let mcfg = model_cfg(&cfg);
        let seed = 3000 + u64::from(data_bits);
        // Frames until twice the buffer's beats have been sent.
        let w = (data_bits / 8) as usize;
        let want = 2 * cfg.buffer_beats() as usize;
        let mut beats = 0;
        let frames: Vec<Vec<u8>> = wire_frames(seed, 200, p.mtu as usize)
            .into_iter()
            .take_while(|f| {
                let more = beats < want;
                beats += f.len().div_ceil(w);
                more
            })
            .collect();
        assert!(
            beats >= want,
            "w={data_bits}: {beats} beats do not overfill the {}-beat buffer",
            cfg.buffer_beats()
        );
        let k = Knobs {
            seed,
            idle: 0.0,
            backpressure: 0.95,
        };
        let run = run_rx(&model, &cfg, &frames, None, None, k, |_| {}).unwrap();
        assert_eq!(run.reports.len(), frames.len(), "w={data_bits}: reports");
        let mut delivered = Vec::new();
        for (i, (f, got)) in frames.iter().zip(&run.reports).enumerate() {
            let (want, d) = rx_frame(f, &mcfg);
            assert_eq!(got, &want, "w={data_bits} frame {i} ({} bytes)", f.len());
            delivered.extend(d);
        }
        assert_eq!(run.delivered, delivered, "w={data_bits}: delivered frames");
    }
}

/// Back to back with no idle and no backpressure, every frame costs exactly the beats it takes
/// on the wire, `ceil((len + 4) / W)`, at the sizes of `results/PIPELINE.md`: the steady-state
/// cycles per frame, `(cycles(N) - cycles(1)) / (N - 1)`, are cycle counts of the model, not
/// wall-clock time.
#[test]
fn rx_path_takes_back_to_back_frames_without_bubbles() {
    if !required() {
        return;
    }
    let n = 32;
    let mut slow = Vec::new();
    for preset in ["nic64", "nic512"] {
        let p = Preset::builtin(preset).unwrap();
        let w = (p.data_bits / 8) as usize;
        let cfg = rx_cfg(&p, None);
        let model = watched(|t| rx_model_with(&cfg, preset, t).unwrap());
        for len in nicgen::traffic::SIZES {
            let wire: Vec<Vec<u8>> = (0..n)
                .map(|i| {
                    let mut f = nicgen::traffic::udp_frame(len, i);
                    append_fcs(&mut f);
                    f
                })
                .collect();
            let cycles = |k: usize| {
                run_rx(
                    &model,
                    &cfg,
                    &wire[..k],
                    None,
                    None,
                    Knobs::default(),
                    |_| {},
                )
                .unwrap()
                .cycles
            };
            let (c1, cn) = (cycles(1), cycles(n));
            let ideal = (len + 4).div_ceil(w) as u64;
            if cn - c1 != ideal * (n as u64 - 1) {
                let per = (cn - c1) as f64 / (n - 1) as f64;
                slow.push(format!(
                    "{preset} {len} bytes: {per:.2} cycles per frame, ideal {ideal}"
                ));
            }
        }
    }
    assert!(
        slow.is_empty(),
        "bubbles on the RX path:\n{}",
        slow.join("\n")
    );
}

/// VXLAN and NVGRE frames (the parser test's generator: IPv4 and IPv6 outers, tags, options,
/// and a share broken in their tunnel headers, lengths or fragments) mixed with plain frames,
/// a few with a bad FCS and a few longer than the longest frame (cut at the tunnel stage's
/// buffer, dropped as oversize), with half of the VNIs/VSIDs in the steering table: at 64 and
/// 512 bits, steering only and `decap_all`, without and with random idle and backpressure.
/// Every report, queue and delivered frame is the model's.
#[test]
fn rx_path_decapsulates_tunnels_as_the_model() {
    use nicgen_model::tunnel::{parse_tunnel, Steering, TunnelConfig};
    if !required() {
        return;
    }
    for (preset, data_bits) in [("nic64", 64u32), ("nic512", 512)] {
        let p = Preset::builtin(preset).unwrap();
        let cfg = rx_cfg(&p, None);
        assert!(cfg.steer_entries >= 16, "{preset} has a tunnel stage");
        let model = watched(|t| rx_model_with(&cfg, preset, t).unwrap());
        for (ki, (idle, bp, all)) in [(0.0, 0.0, false), (0.3, 0.4, true), (0.2, 0.2, false)]
            .into_iter()
            .enumerate()
        {
            let seed = 7000 + u64::from(data_bits) * 10 + ki as u64;
            let mut rng = StdRng::seed_from_u64(seed);
            let tunnels = crate::eth_hdr_parse::tunnel_frames(seed, 120, 4789);
            let plain = wire_frames(seed, 30, 1500);
            let mut steering = Steering::new();
            steering.decap_all = all;
            let tc = TunnelConfig {
                window: cfg.window as usize,
                ..TunnelConfig::default()
            };
            let mut frames = Vec::new();
            for f in &tunnels {
                let t = parse_tunnel(f, &tc);
                if t.is_well_formed()
                    && steering.entries().len() < cfg.steer_entries as usize
                    && rng.gen_bool(0.5)
                {
                    steering.insert(t.kind, t.id, rng.gen_range(0..p.rss.queues));
                }
                let mut w = f.clone();
                append_fcs(&mut w);
                if rng.gen_bool(0.05) {
                    let i = rng.gen_range(0..w.len());
                    w[i] ^= 1;
                }
                frames.push(w);
                if rng.gen_bool(0.25) {
                    frames.push(plain[rng.gen_range(0..plain.len())].clone());
                }
            }
            // Longer than the longest frame: the tunnel stage cuts them, the path drops them.
            for (i, len) in [cfg.max_frame() as usize + 40, 3 * cfg.max_frame() as usize]
                .into_iter()
                .enumerate()
            {
                let mut f = tunnels[i].clone();
                f.resize(len, 0x5a);
                append_fcs(&mut f);
                frames.insert(10 + 40 * i, f);
            }
            let mcfg = model_cfg_with(&cfg, &steering);
            let k = Knobs {
                seed,
                idle,
                backpressure: bp,
            };
            let run = run_rx(&model, &cfg, &frames, None, Some(&steering), k, |_| {})
                .unwrap_or_else(|e| panic!("w={data_bits} seed {seed}: {e}"));
            let ctx = format!("w={data_bits} seed {seed}");
            expect_model(&frames, &run, &mcfg, &ctx);
            let decapped = run
                .reports
                .iter()
                .filter(|r| r.decap() == Some(true))
                .count();
            assert!(decapped >= 10, "{ctx}: {decapped} de-capsulated");
        }
    }
}
