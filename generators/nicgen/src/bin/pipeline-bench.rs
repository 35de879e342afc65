//! `pipeline-bench [--quick] [--out FILE]`: steady-state cycles per frame through the simulated
//! RX and TX paths for each frame size, back to back, at the 64- and 512-bit presets; writes
//! `results/PIPELINE.md`, with the tool versions and cores detected on the machine that ran
//! it. Run it as `cargo xtask bench-pipeline`.
//!
//! Method: for each size, run N/2 frames and N frames (no idle, no backpressure); the
//! steady-state cost of a frame is `(cycles(N) - cycles(N/2)) / (N/2)` (the fill and drain
//! cancel, also a fill that lasts several frames: the tunnel stage's data side waits once for
//! the first frame's outer verdicts); TX `(cycles(N) - cycles(1)) / (N - 1)`. The
//! ideal is the beats the bus needs: RX `ceil((len + 4) / W)` on the wire side, TX
//! `ceil((max(len, 60) + 4) / W)`. The tunnel rows run VXLAN frames through the RX path with
//! `decap_all` (the tunnel stage removes the outer headers), and delivered whole with the inner
//! offloads: the ideal is the wire's beats. The
//! encapsulation rows send plain frames through the TX path with a VXLAN context: the ideal is
//! the outer frame's beats. The TSO rows send 64 KiB TCP super-frames as LSO sends (plain, and
//! VXLAN that the host encapsulated): the ideal is the beats of every segment on the wire, and
//! a send's cost is `(cycles(N) - cycles(1)) / (N - 1)` over N sends.

use anyhow::Result;
use nicgen::sim_rx::{run_rx, rx_cfg, rx_model, Knobs};
use nicgen::sim_tx::{run_tx, tx_cfg, tx_model};
use nicgen::traffic::{udp_frame, vxlan_frame, SIZES, TUNNEL_SIZES};
use nicgen_hdl::preset::Preset;
use nicgen_model::encap::{encap, EncapKind};
use nicgen_model::tunnel::{InnerOffload, Steering};
use nicgen_model::tx::TxRequest;
use std::fmt::Write;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = nicgen::results::out_path(&args, "../../results/PIPELINE.md");
    let machine = nicgen::results::describe_machine()?;
    nicgen::progress::show_builds();
    let n = if quick { 8 } else { 32 };
    let mut md = String::new();
    let _ = writeln!(md, "# Packet pipeline throughput\n");
    let _ = writeln!(md, "Written by `cargo xtask bench-pipeline{}` ({machine}). Steady-state cycles per frame, back to back, no idle, no backpressure: RX `(cycles(N) - cycles(N/2)) / (N/2)`, TX `(cycles(N) - cycles(1)) / (N - 1)`, with N = {n}; ideal = bus beats the frame needs (RX: `ceil((len + 4) / W)` on the wire; TX: `ceil((max(len, 60) + 4) / W)`). Mpps and Gb/s at the preset clock (Gb/s counts the frame without FCS).\n", if quick { " --quick" } else { "" });
    for preset in ["nic64", "nic512"] {
        let p = Preset::builtin(preset)?;
        let w = (p.data_bits / 8) as usize;
        let rcfg = rx_cfg(&p, None);
        let tcfg = tx_cfg(&p);
        eprintln!("pipeline-bench: building {preset} models...");
        let rx = rx_model(&rcfg, preset)?;
        let tx = tx_model(&tcfg, preset)?;
        let _ = writeln!(
            md,
            "## {preset}: {} bits at {} MHz\n",
            p.data_bits, p.clock_mhz
        );
        let _ = writeln!(md, "| bytes | RX ideal | RX achieved | RX Mpps | RX Gb/s | TX ideal | TX achieved | TX Mpps | TX Gb/s |");
        let _ = writeln!(md, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for len in SIZES {
            eprintln!("pipeline-bench: {preset} {len} bytes");
            let wire: Vec<Vec<u8>> = (0..n)
                .map(|i| {
                    let mut f = udp_frame(len, i);
                    nicgen_model::crc32::append_fcs(&mut f);
                    f
                })
                .collect();
            let rh = run_rx(
                &rx,
                &rcfg,
                &wire[..n / 2],
                None,
                None,
                Knobs::default(),
                |_| {},
            )?;
            let rn = run_rx(&rx, &rcfg, &wire, None, None, Knobs::default(), |_| {})?;
            let rx_per = (rn.cycles - rh.cycles) as f64 / (n / 2) as f64;
            let host: Vec<(Vec<u8>, TxRequest)> = (0..n)
                .map(|i| {
                    (
                        udp_frame(len, i),
                        TxRequest {
                            csum_l3: true,
                            csum_l4: true,
                            vlan_tci: None,
                            ..TxRequest::default()
                        },
                    )
                })
                .collect();
            let t1 = run_tx(&tx, &tcfg, &host[..1], Knobs::default(), |_| {})?.cycles;
            let tn = run_tx(&tx, &tcfg, &host, Knobs::default(), |_| {})?.cycles;
            let tx_per = (tn - t1) as f64 / (n - 1) as f64;
            let rx_ideal = (len + 4).div_ceil(w);
            let tx_ideal = (len.max(60) + 4).div_ceil(w);
            let mpps = |c: f64| p.clock_mhz / c;
            let gbps = |c: f64| mpps(c) * len as f64 * 8.0 / 1000.0;
            let _ = writeln!(
                md,
                "| {len} | {rx_ideal} | {rx_per:.2} | {:.1} | {:.1} | {tx_ideal} | {tx_per:.2} | {:.1} | {:.1} |",
                mpps(rx_per),
                gbps(rx_per),
                mpps(tx_per),
                gbps(tx_per)
            );
        }
        md.push('\n');
        let mut all = Steering::new();
        all.decap_all = true;
        let mut inner = Steering::new();
        inner.inner = InnerOffload::ALL;
        for (title, steering, decap) in [
            ("De-capsulation: VXLAN frames (IPv4 outer, VNI 42) through the RX path with `decap_all`; bytes are the outer frame's, Gb/s counts the inner frames delivered.", &all, true),
            ("Inner offloads: the same VXLAN frames delivered whole, their inner headers parsed, verified and hashed (`TUNNEL_CTL.inner_vxlan`); Gb/s counts the inner frames.", &inner, false),
        ] {
            let _ = writeln!(md, "{title}\n");
            let _ = writeln!(
                md,
                "| outer bytes | inner bytes | ideal | achieved | Mpps | inner Gb/s |"
            );
            let _ = writeln!(md, "|---:|---:|---:|---:|---:|---:|");
            for len in TUNNEL_SIZES {
                eprintln!("pipeline-bench: {preset} {} {len} bytes", if decap { "decap" } else { "inner" });
                let wire: Vec<Vec<u8>> = (0..n)
                    .map(|i| {
                        let mut f = vxlan_frame(len, i);
                        nicgen_model::crc32::append_fcs(&mut f);
                        f
                    })
                    .collect();
                let run = |k: usize| {
                    run_rx(
                        &rx,
                        &rcfg,
                        &wire[..k],
                        None,
                        Some(steering),
                        Knobs::default(),
                        |_| {},
                    )
                };
                let rh = run(n / 2)?.cycles;
                let rn = run(n)?;
                let done = |r: &nicgen_model::rx::RxReport| {
                    if decap {
                        r.decap() == Some(true)
                    } else {
                        r.tunnel.is_some_and(|t| t.inner)
                    }
                };
                if !rn.reports.iter().all(done) {
                    anyhow::bail!("{preset}: a {len}-byte VXLAN frame missed its tunnel offload");
                }
                let per = (rn.cycles - rh) as f64 / (n / 2) as f64;
                let ideal = (len + 4).div_ceil(w);
                let inner = len - 50;
                let mpps = p.clock_mhz / per;
                let _ = writeln!(
                    md,
                    "| {len} | {inner} | {ideal} | {per:.2} | {mpps:.1} | {:.1} |",
                    mpps * inner as f64 * 8.0 / 1000.0
                );
            }
            md.push('\n');
        }
        encap_rows(&mut md, &p, &tx, n)?;
        tso_rows(&mut md, &p, &tx, if quick { 3 } else { 5 })?;
    }
    std::fs::write(&out, md)?;
    eprintln!("pipeline-bench: wrote {}", out.display());
    Ok(())
}

/// Encapsulation: plain UDP frames through the TX path with the NIC's VXLAN context (IPv4
/// outer, the model's worked example).
fn encap_rows(md: &mut String, p: &Preset, tx: &nicgen_tb::Model, n: usize) -> Result<()> {
    let w = (p.data_bits / 8) as usize;
    let tcfg = tx_cfg(p);
    let ctx = nicgen_model::vectors::overlay::ctx(false, false, EncapKind::vxlan(42));
    let _ = writeln!(
        md,
        "Encapsulation: UDP frames through the TX path with a VXLAN context (IPv4 outer, {} bytes of outer headers); Gb/s counts the outer frames sent.\n",
        ctx.outer_len()
    );
    let _ = writeln!(
        md,
        "| inner bytes | outer bytes | ideal | achieved | Mpps | outer Gb/s |"
    );
    let _ = writeln!(md, "|---:|---:|---:|---:|---:|---:|");
    for len in SIZES {
        eprintln!("pipeline-bench: {} encap {len} bytes", p.name);
        let host: Vec<(Vec<u8>, TxRequest)> = (0..n)
            .map(|i| {
                (
                    udp_frame(len, i),
                    TxRequest {
                        csum_l4: true,
                        encap: Some(ctx),
                        ..TxRequest::default()
                    },
                )
            })
            .collect();
        let t1 = run_tx(tx, &tcfg, &host[..1], Knobs::default(), |_| {})?.cycles;
        let tn = run_tx(tx, &tcfg, &host, Knobs::default(), |_| {})?;
        if tn.wire.len() != n {
            anyhow::bail!(
                "{}: {n} frames to encapsulate gave {}",
                p.name,
                tn.wire.len()
            );
        }
        let per = (tn.cycles - t1) as f64 / (n - 1) as f64;
        let outer = len + ctx.outer_len();
        let ideal = (outer + 4).div_ceil(w);
        let mpps = p.clock_mhz / per;
        let _ = writeln!(
            md,
            "| {len} | {outer} | {ideal} | {per:.2} | {mpps:.1} | {:.1} |",
            mpps * outer as f64 * 8.0 / 1000.0
        );
    }
    md.push('\n');
    Ok(())
}

/// TSO: 64 KiB TCP super-frames (IPv4) as LSO sends, plain and host-encapsulated VXLAN.
fn tso_rows(md: &mut String, p: &Preset, tx: &nicgen_tb::Model, n: usize) -> Result<()> {
    use nicgen_model::tcp::Flags;
    use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip};
    let w = (p.data_bits / 8) as usize;
    let tcfg = tx_cfg(p);
    let _ = writeln!(
        md,
        "TSO: LSO sends of 64 KiB of TCP payload (IPv4), back to back, {n} sends; ideal = the beats of every segment with its FCS; segments per kcycle and Gb/s (segments on the wire) at the preset clock.\n"
    );
    let _ = writeln!(
        md,
        "| send | mss | segments | ideal cycles | achieved cycles | segments/kcycle | Gb/s |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for (name, tunnel) in [("plain", false), ("VXLAN (host)", true)] {
        // A tunnel's segments carry 50 bytes of outer headers: its MSS is 50 less for the same
        // largest frame (a segment must fit the path's MTU + 22).
        for mss in [1448usize, 8948].map(|m| if tunnel { m - 50 } else { m }) {
            eprintln!("pipeline-bench: {} tso {name} mss {mss}", p.name);
            let ip = Ip {
                v6: false,
                ident: 1,
            };
            // The headers, then 64 KiB of payload (more than an IPv4 length field holds: the
            // segmentation reads no length of the super-frame's own).
            let plain = tcp_frame(ip, false, 1, Flags::ACK, &[]);
            let mut frame = if tunnel {
                encap(&plain, &ctx(false, false, EncapKind::vxlan(42)), 1)?
            } else {
                plain
            };
            frame.extend(pattern(65536));
            let sends: Vec<(Vec<u8>, TxRequest)> = (0..n)
                .map(|_| {
                    (
                        frame.clone(),
                        TxRequest {
                            mss: Some(mss),
                            ..TxRequest::default()
                        },
                    )
                })
                .collect();
            let segs = nicgen_model::tso::tso(&frame, mss, &Default::default())?;
            let ideal: usize = segs.iter().map(|s| (s.len().max(60) + 4).div_ceil(w)).sum();
            let bytes: usize = segs.iter().map(|s| s.len()).sum();
            let t1 = run_tx(tx, &tcfg, &sends[..1], Knobs::default(), |_| {})?.cycles;
            let tn = run_tx(tx, &tcfg, &sends, Knobs::default(), |_| {})?;
            if tn.wire.len() != n * segs.len() {
                anyhow::bail!("{}: {n} sends gave {} segments", p.name, tn.wire.len());
            }
            let per = (tn.cycles - t1) as f64 / (n - 1) as f64;
            let _ = writeln!(
                md,
                "| {name} | {mss} | {} | {ideal} | {per:.1} | {:.1} | {:.1} |",
                segs.len(),
                segs.len() as f64 * 1000.0 / per,
                bytes as f64 * 8.0 * p.clock_mhz / per / 1000.0
            );
        }
    }
    md.push('\n');
    Ok(())
}
