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
/// on the wire, `ceil((len + 4) / W)`, at the sizes of `results/PIPELINE.md` (plain frames,
/// and VXLAN frames de-capsulated or with the inner offloads): the steady-state
/// cycles per frame, `(cycles(N) - cycles(N / 2)) / (N / 2)`, are cycle counts of the model,
/// not wall-clock time.
#[test]
fn rx_path_takes_back_to_back_frames_without_bubbles() {
    use nicgen_model::tunnel::{InnerOffload, Steering};
    if !required() {
        return;
    }
    let n = 32;
    let mut slow = Vec::new();
    let mut decap_all = Steering::new();
    decap_all.decap_all = true;
    let mut inner = Steering::new();
    inner.inner = InnerOffload::ALL;
    for preset in ["nic64", "nic512"] {
        let p = Preset::builtin(preset).unwrap();
        let w = (p.data_bits / 8) as usize;
        let cfg = rx_cfg(&p, None);
        let model = watched(|t| rx_model_with(&cfg, preset, t).unwrap());
        // Plain UDP frames; VXLAN frames de-capsulated, and delivered whole with the inner
        // offloads.
        let runs = nicgen::traffic::SIZES
            .iter()
            .map(|&len| ("plain", len, None))
            .chain(nicgen::traffic::TUNNEL_SIZES.iter().flat_map(|&len| {
                [
                    ("decap", len, Some(&decap_all)),
                    ("inner", len, Some(&inner)),
                ]
            }));
        for (what, len, steering) in runs {
            let wire: Vec<Vec<u8>> = (0..n)
                .map(|i| {
                    let mut f = match steering {
                        None => nicgen::traffic::udp_frame(len, i),
                        Some(_) => nicgen::traffic::vxlan_frame(len, i),
                    };
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
                    steering,
                    Knobs::default(),
                    |_| {},
                )
                .unwrap()
                .cycles
            };
            // The second half of a burst against its first half: each half's frames must
            // cost their ideal beats. (Against one frame alone, the difference would also
            // hold the burst's fill: the tunnel stage's data side waits once for the first
            // frame's outer verdicts, a few cycles that every later frame then keeps.)
            let (half, whole) = (cycles(n / 2), cycles(n));
            let ideal = (len + 4).div_ceil(w) as u64;
            if whole - half != ideal * (n / 2) as u64 {
                let per = (whole - half) as f64 / (n / 2) as f64;
                slow.push(format!(
                    "{preset} {what} {len} bytes: {per:.2} cycles per frame, ideal {ideal}"
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
/// 512 bits, steering only and `decap_all`, without and with random idle and backpressure,
/// and with the inner offloads for the tunnels delivered whole (VXLAN only, both kinds).
/// Every report, queue and delivered frame is the model's.
#[test]
fn rx_path_decapsulates_tunnels_as_the_model() {
    use nicgen_model::tunnel::{parse_tunnel, InnerOffload, Steering, TunnelConfig};
    if !required() {
        return;
    }
    for (preset, data_bits) in [("nic64", 64u32), ("nic512", 512)] {
        let p = Preset::builtin(preset).unwrap();
        let cfg = rx_cfg(&p, None);
        assert!(cfg.steer_entries >= 16, "{preset} has a tunnel stage");
        let model = watched(|t| rx_model_with(&cfg, preset, t).unwrap());
        let vxlan_only = InnerOffload {
            vxlan: true,
            nvgre: false,
        };
        for (ki, (idle, bp, all, inner)) in [
            (0.0, 0.0, false, vxlan_only),
            (0.3, 0.4, true, InnerOffload::default()),
            (0.2, 0.2, false, InnerOffload::ALL),
        ]
        .into_iter()
        .enumerate()
        {
            let seed = 7000 + u64::from(data_bits) * 10 + ki as u64;
            let mut rng = StdRng::seed_from_u64(seed);
            let tunnels = crate::eth_hdr_parse::tunnel_frames(seed, 120, 4789);
            let plain = wire_frames(seed, 30, 1500);
            let mut steering = Steering::new();
            steering.decap_all = all;
            steering.inner = inner;
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
            let inner_offloaded = run
                .reports
                .iter()
                .filter(|r| r.tunnel.is_some_and(|t| t.inner))
                .count();
            if inner != InnerOffload::default() {
                assert!(
                    inner_offloaded >= 10,
                    "{ctx}: {inner_offloaded} inner offloads"
                );
            }
        }
    }
}

/// The frames of [`rx_path_decapsulates_scapy_frames`], built by scapy, an implementation
/// independent of nicgen's: `python3 - OUT_DIR` writes `tunnels.pcap` (VXLAN over IPv4 and
/// IPv6 outers, with and without an outer VLAN tag, NVGRE over IPv4 and IPv6, a VXLAN header
/// with the I flag clear, a VXLAN frame to another UDP port) and `expect.jsonl` (per frame: the
/// inner frame scapy put in as hex, or null when it must be delivered whole, and the VNI/VSID).
const SCAPY_TUNNELS: &str = r#"
import json, random, sys
from scapy.all import Ether, Dot1Q, IP, IPv6, UDP, TCP, GRE, Raw, wrpcap
from scapy.layers.vxlan import VXLAN
out = sys.argv[1]
rng = random.Random(7)
frames, expect = [], []
def inner():
    l3 = IP(src="10.0.0.%d" % rng.randint(1, 250), dst="10.0.1.%d" % rng.randint(1, 250)) \
        if rng.random() < 0.6 else IPv6(src="fd00::%x" % rng.randint(1, 999), dst="fd00::1:%x" % rng.randint(1, 999))
    l4 = TCP(sport=rng.randint(1024, 65535), dport=80, flags="PA") if rng.random() < 0.5 \
        else UDP(sport=rng.randint(1024, 65535), dport=53)
    return Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / l3 / l4 / Raw(bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 300))))
for i in range(48):
    inn = inner()
    v6 = i % 2 == 1
    outer = Ether(src="02:00:00:00:01:01", dst="02:00:00:00:01:02")
    if i % 3 == 0:
        outer = outer / Dot1Q(vlan=100 + i)
    outer = outer / (IPv6(src="fd01::1", dst="fd01::2") if v6 else IP(src="192.0.2.1", dst="192.0.2.2"))
    kind = i % 4
    vni = rng.randint(0, (1 << 24) - 1)
    if kind in (0, 1):
        f = outer / UDP(sport=rng.randint(49152, 65535), dport=4789) / VXLAN(vni=vni) / inn
        expect.append({"inner": bytes(inn).hex(), "vni": vni, "tunnel": "vxlan"})
    elif kind == 2:
        f = outer / GRE(key_present=1, proto=0x6558, key=(vni << 8) | rng.randint(0, 255)) / inn
        expect.append({"inner": bytes(inn).hex(), "vni": vni, "tunnel": "nvgre"})
    elif i % 8 == 3:
        f = outer / UDP(sport=50000, dport=4789) / VXLAN(vni=vni, flags=0) / inn
        expect.append({"inner": None, "vni": None, "tunnel": "vxlan"})
    else:
        f = outer / UDP(sport=50000, dport=4790) / VXLAN(vni=vni) / inn
        expect.append({"inner": None, "vni": None, "tunnel": None})
    frames.append(f)
wrpcap(out + "/tunnels.pcap", frames)
with open(out + "/expect.jsonl", "w") as fh:
    for e in expect:
        fh.write(json.dumps(e) + "\n")
"#;

/// Frames built by scapy (not by nicgen's model) through the RX path with `decap_all`, at 64
/// bits: every well-formed VXLAN and NVGRE frame is delivered as exactly the inner frame scapy
/// put in, with scapy's VNI/VSID; the others whole. Skipped without python3 and scapy (a
/// failure under `NICGEN_REQUIRE_TOOLS=1`).
#[test]
fn rx_path_decapsulates_scapy_frames() {
    use nicgen_model::tunnel::Steering;
    if !required() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("rx-scapy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let probe = nicgen_tb::require::run_python(SCAPY_TUNNELS, &[dir.as_os_str()]).map(|_| ());
    if !nicgen_tb::require::require("python3 with scapy", probe) {
        return;
    }
    let frames = nicgen_tb::pcap::read_pcap(dir.join("tunnels.pcap")).unwrap();
    let expect: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("expect.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), expect.len());
    let p = Preset::builtin("nic64").unwrap();
    let cfg = rx_cfg(&p, None);
    let model = watched(|t| rx_model_with(&cfg, "nic64", t).unwrap());
    let wire: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| {
            let mut w = f.clone();
            append_fcs(&mut w);
            w
        })
        .collect();
    let mut steering = Steering::new();
    steering.decap_all = true;
    let run = run_rx(
        &model,
        &cfg,
        &wire,
        None,
        Some(&steering),
        Knobs::default(),
        |_| {},
    )
    .unwrap();
    assert_eq!(
        run.delivered.len(),
        frames.len(),
        "every frame is delivered"
    );
    let mut decapped = 0;
    for (i, ((f, e), (got, r))) in frames
        .iter()
        .zip(&expect)
        .zip(run.delivered.iter().zip(&run.reports))
        .enumerate()
    {
        let want = match e["inner"].as_str() {
            Some(h) => {
                decapped += 1;
                (0..h.len())
                    .step_by(2)
                    .map(|k| u8::from_str_radix(&h[k..k + 2], 16).unwrap())
                    .collect()
            }
            // Delivered whole, its outer VLAN tag stripped.
            None if f[12..14] == [0x81, 0x00] => [&f[..12], &f[16..]].concat(),
            None => f.clone(),
        };
        assert_eq!(got, &want, "frame {i}: delivered bytes ({e})");
        assert_eq!(
            r.decap(),
            Some(e["inner"].is_string()),
            "frame {i}: decap ({e})"
        );
        assert_eq!(
            r.tunnel_name(),
            e["tunnel"].as_str(),
            "frame {i}: tunnel ({e})"
        );
        assert_eq!(
            r.vni().map(u64::from),
            e["vni"].as_u64(),
            "frame {i}: VNI ({e})"
        );
    }
    assert!(decapped >= 30, "{decapped} frames de-capsulated");
    let _ = std::fs::remove_dir_all(&dir);
}
