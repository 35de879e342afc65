//! The RX path (`eth_rx`) against the golden model `nicgen_model::rx::rx_frame`: well-formed
//! and malformed frames, VLAN tags, bad FCS, runts, oversize and MAC-control frames, at 8, 64
//! and 512 bits with random idle and backpressure; every frame in gives one report, in order,
//! and the delivered frames match byte for byte.

use nicgen::sim_rx::{run_rx, rx_cfg, rx_model, Knobs};
use nicgen_hdl::preset::Preset;
use nicgen_model::crc32::append_fcs;
use nicgen_model::rx::{rx_frame, RxConfig};
use nicgen_model::toeplitz::MICROSOFT_KEY;
use rand::{rngs::StdRng, Rng, SeedableRng};

fn required() -> bool {
    nicgen_tb::verilator::verilator_required()
}

/// A mix of frames as they come off the wire (FCS appended, sometimes corrupted).
fn wire_frames(seed: u64, n: usize, mtu: usize) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for _ in 0..n {
        let mut f: Vec<u8> = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        for _ in 0..rng.gen_range(0..=2) {
            f.extend([
                if rng.gen_bool(0.7) { 0x81 } else { 0x88 },
                if rng.gen_bool(0.7) { 0x00 } else { 0xa8 },
                rng.gen(),
                rng.gen(),
            ]);
        }
        let kind = rng.gen_range(0..10);
        let body_len = rng.gen_range(20..200);
        match kind {
            0..=5 => {
                let v6 = rng.gen_bool(0.4);
                f.extend(if v6 { [0x86, 0xdd] } else { [0x08, 0x00] });
                let proto = if rng.gen_bool(0.5) { 6 } else { 17 };
                let l4: Vec<u8> = (0..body_len).map(|_| rng.gen()).collect();
                if v6 {
                    let mut h = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
                    h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
                    h.extend((0..32).map(|_| rng.gen::<u8>()));
                    f.extend(h);
                } else {
                    let mut h = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0];
                    h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
                    h.extend((0..8).map(|_| rng.gen::<u8>()));
                    let ck = !nicgen_model::checksum::sum(&h);
                    h[10..12].copy_from_slice(&ck.to_be_bytes());
                    f.extend(h);
                }
                let l4_start = f.len();
                f.extend(l4);
                if proto == 6 {
                    f[l4_start + 12] = 0x50;
                } else {
                    let len = (f.len() - l4_start) as u16;
                    f[l4_start + 4..l4_start + 6].copy_from_slice(&len.to_be_bytes());
                }
                if rng.gen_bool(0.5) {
                    // Fix the L4 checksum with the model's TX insertion (IPv4: header too).
                    let o = nicgen_model::tx::Offsets {
                        ipv4: Some(!v6),
                        l4: Some(if proto == 6 {
                            nicgen_model::tx::L4::Tcp
                        } else {
                            nicgen_model::tx::L4::Udp
                        }),
                        l3_off: l4_start - if v6 { 40 } else { 20 },
                        l4_off: l4_start,
                        end: f.len(),
                    };
                    f = nicgen_model::tx::insert_checksums(&f, &o, !v6, true);
                }
            }
            6 => {
                f.extend([0x88, 0x08]); // MAC control (PAUSE)
                f.extend((0..46).map(|_| rng.gen::<u8>()));
            }
            7 => {
                f.extend([0x08, 0x06]);
                f.extend((0..body_len).map(|_| rng.gen::<u8>()));
            }
            8 => {
                // Truncated IP.
                f.extend([0x08, 0x00, 0x45]);
                f.extend((0..rng.gen_range(0..30)).map(|_| rng.gen::<u8>()));
            }
            _ => {
                // Runt or oversize.
                let len = if rng.gen_bool(0.5) {
                    rng.gen_range(1..50)
                } else {
                    mtu + 23 + rng.gen_range(0..20)
                };
                f = (0..len).map(|_| rng.gen()).collect();
            }
        }
        if f.len() < 60 && rng.gen_bool(0.7) {
            f.resize(60, 0);
        }
        append_fcs(&mut f);
        if rng.gen_ratio(1, 8) {
            let at = rng.gen_range(0..f.len());
            f[at] ^= 0x10;
        }
        out.push(f);
    }
    out
}

#[test]
fn rx_path_matches_the_model() {
    if !required() {
        return;
    }
    for (pi, (preset, data_bits)) in [("nic64", 8u32), ("nic64", 64), ("nic512", 512)]
        .into_iter()
        .enumerate()
    {
        let mut p = Preset::builtin(preset).unwrap();
        p.data_bits = data_bits;
        let cfg = rx_cfg(&p, None);
        let model = rx_model(&cfg, preset).unwrap();
        let mcfg = RxConfig {
            max_frame: cfg.max_frame() as usize,
            window: cfg.window as usize,
            rss_key: MICROSOFT_KEY,
            rss_enables: 0x3F,
            table: (0..cfg.rss.table_size)
                .map(|i| i % cfg.rss.queues)
                .collect(),
        };
        for (ki, (idle, bp)) in [(0.0, 0.0), (0.3, 0.4)].into_iter().enumerate() {
            let seed = 1000 + pi as u64 * 10 + ki as u64;
            let frames = wire_frames(seed, 60, p.mtu as usize);
            let run = run_rx(
                &model,
                &cfg,
                &frames,
                None,
                Knobs {
                    seed,
                    idle,
                    backpressure: bp,
                },
                |_| {},
            )
            .unwrap();
            let mut delivered = Vec::new();
            for (i, (f, got)) in frames.iter().zip(&run.reports).enumerate() {
                let (want, d) = rx_frame(f, &mcfg);
                assert_eq!(
                    got,
                    &want,
                    "w={data_bits} seed {seed} frame {i} ({} bytes): {:02x?}",
                    f.len(),
                    &f[..f.len().min(64)]
                );
                delivered.extend(d);
            }
            assert_eq!(
                run.delivered, delivered,
                "w={data_bits} seed {seed}: delivered frames"
            );
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
    let model = rx_model(&cfg, "nic64").unwrap();
    let mcfg = RxConfig {
        max_frame: cfg.max_frame() as usize,
        window: cfg.window as usize,
        rss_key: MICROSOFT_KEY,
        rss_enables: 0x3F,
        table: (0..cfg.rss.table_size)
            .map(|i| i % cfg.rss.queues)
            .collect(),
    };
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
