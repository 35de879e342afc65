//! `host-bench [--quick] [--out FILE]`: the host interface measured through the real driver in
//! loopback, written to `results/HOST.md` (run it as `cargo xtask bench-host`), with the tool
//! versions and cores detected on the machine that ran it:
//!
//! 1. doorbell-to-CQE latency in cycles for a 64-byte send on an idle NIC, at several fixed DMA
//!    read latencies (the time a PCIe read takes, in cycles);
//! 2. frames/s and Gb/s through the driver loopback per frame size, at the preset clock (from
//!    simulated cycles), and how fast the simulation itself ran.

use anyhow::Result;
use nicgen::sim_loopback::{doorbell_to_cqe, nic_model, run_loopback, LoopbackOpts, TxMode};
use nicgen_hdl::preset::Preset;
use nicgen_host::DmaConfig;
use std::fmt::Write;
use std::time::Instant;

const SIZES: [usize; 7] = [64, 128, 256, 512, 1024, 1514, 9000];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = nicgen::results::out_path(&args, "../../results/HOST.md");
    let machine = nicgen::results::describe_machine()?;
    nicgen::progress::show_builds();
    let n = if quick { 64 } else { 1000 };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Host interface: latency and throughput through the driver\n"
    );
    let _ = writeln!(
        md,
        "Written by `cargo xtask bench-host{}` ({machine}). The whole NIC (`nic`) behind the \
         simulated host (`testbench/host`), driven by `sw-driver` in MAC loopback.\n",
        if quick { " --quick" } else { "" }
    );
    for preset in ["nic64", "nic512"] {
        let p = Preset::builtin(preset)?;
        eprintln!("host-bench: building {preset}...");
        let model = nic_model(&p)?;
        let _ = writeln!(
            md,
            "## {preset}: {} bits at {} MHz\n",
            p.data_bits, p.clock_mhz
        );
        let _ = writeln!(
            md,
            "Doorbell-to-CQE latency, 64-byte UDP/IPv4 send with both checksum offloads, idle NIC, \
             every DMA read answered after a fixed latency (best of two after a warm-up; the CQ \
             polled every cycle):\n"
        );
        let _ = writeln!(
            md,
            "| DMA read latency (cycles) | doorbell to CQE (cycles) | at {} MHz (ns) |",
            p.clock_mhz
        );
        let _ = writeln!(md, "|---:|---:|---:|");
        for lat in [1u64, 50, 100, 200] {
            let c = doorbell_to_cqe(&p, &model, 64, lat)?;
            let _ = writeln!(
                md,
                "| {lat} | {c} | {:.0} |",
                c as f64 * 1000.0 / p.clock_mhz
            );
        }
        let _ = writeln!(
            md,
            "\nThroughput through the driver loopback: {n} frames per size, UDP/IPv4, both checksum \
             offloads, 4 queues, 16 frames in flight, DMA latency 50-200 cycles with reordering. \
             Mpps and Gb/s are simulated time at the preset clock; `sim frames/s` is how fast the \
             simulation ran on this machine.\n"
        );
        let _ = writeln!(md, "| bytes | cycles/frame | Mpps | Gb/s | sim frames/s |");
        let _ = writeln!(md, "|---:|---:|---:|---:|---:|");
        for len in SIZES {
            eprintln!("host-bench: {preset} {len} bytes");
            let o = LoopbackOpts {
                frames: if len >= 1514 { n / 4 } else { n },
                queues: 4,
                max_len: len.max(60),
                seed: 7,
                dma: DmaConfig {
                    seed: 7,
                    ..DmaConfig::default()
                },
                fixed_len: Some(len),
                window: 16,
                pcap_wire: None,
                tx_mode: TxMode::Plain,
            };
            let t0 = Instant::now();
            let r = run_loopback(&p, &model, &o, |_| {})?;
            let wall = t0.elapsed().as_secs_f64();
            let per = r.cycles as f64 / r.frames as f64;
            let mpps = p.clock_mhz / per;
            let _ = writeln!(
                md,
                "| {len} | {per:.0} | {mpps:.2} | {:.2} | {:.0} |",
                mpps * len as f64 * 8.0 / 1000.0,
                r.frames as f64 / wall
            );
        }
        md.push('\n');
    }
    std::fs::write(&out, md)?;
    eprintln!("host-bench: wrote {}", out.display());
    Ok(())
}
