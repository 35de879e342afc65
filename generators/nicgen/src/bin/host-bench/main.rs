//! `host-bench [--quick] [--out FILE]`: the host interface measured through the real driver in
//! loopback, written to `results/HOST.md` (run it as `cargo xtask bench-host`), with the tool
//! versions and cores detected on the machine that ran it. The simulated host is the preset's
//! PCIe link (`nicgen::sim_loopback::pcie_dma`: Gen3 x8 below 512 bits, x16 at 512, TLP costs
//! at MPS 256 B and MRRS 512 B) with a 1 µs DMA read latency unless said otherwise.
//!
//! 1. doorbell-to-CQE latency in cycles for a 64-byte send on an idle NIC, at several DMA read
//!    latencies, and at 1 µs per send mode (plain, inline, BlueFlame + inline);
//! 2. Mpps and Gb/s through the driver loopback per frame size, at the preset clock (from
//!    simulated cycles), plain sends, 64-byte frames in BlueFlame mode, with doorbell
//!    batching and in multi-packet send WQEs, 64- and 1514-byte frames into a striding RQ,
//!    64-byte frames with DMA answered at once (the engines' own cost), and how fast the simulation itself ran (cycles/s,
//!    frames/s); then the goals against those rows, met or missed and what bounds them,
//!    with two rows run again on a traced model to say where the engines' cycles went
//!    (`occupancy`; one such run alone: `host-bench --occupancy PRESET BYTES NS`);
//! 3. 64-byte frames without and with CQE compression;
//! 4. the whole NIC's simulation speed: `nicgen sim loopback --frames 10000` at the CLI's
//!    defaults on nic64, three runs, against the goal; and, when `valgrind` is
//!    installed, where a simulated cycle's instructions go, per block: callgrind over a
//!    1000-frame and a 200-frame run of a model built with `-fno-inline` (each module its own
//!    C++ class), the difference divided by the difference in cycles, so the set-up drops out.
//!
//! `--quick` runs 256 frames per size (64 from 1514 bytes up) instead of 1000 (250).

mod occupancy;

use anyhow::Result;
use nicgen::sim_loopback::{
    doorbell_to_cqe, doorbell_to_cqe_mode, host_link, nic_model, pcie_dma, run_loopback,
    LoopbackOpts, RxMode, TxMode, DMA_LATENCY_NS,
};
use nicgen_hdl::preset::Preset;
use nicgen_tb::verilator::Model;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::process::Command;
use std::time::Instant;

/// One row of the throughput table: frame bytes, send and receive modes, frames per send
/// doorbell, DMA read latency (ns).
#[derive(Clone, Copy)]
struct Row {
    len: usize,
    tx: TxMode,
    rx: RxMode,
    batch: usize,
    latency_ns: u64,
}

/// The loopback run of row `r` on preset `p`, `n` frames (a quarter of them from 1514 bytes up).
fn row_opts(p: &Preset, r: &Row, n: usize) -> LoopbackOpts {
    LoopbackOpts {
        frames: if r.len >= 1514 { n / 4 } else { n },
        queues: 4,
        min_len: 60,
        max_len: r.len.max(60),
        seed: SEED,
        dma: pcie_dma(p, r.latency_ns, SEED),
        fixed_len: Some(r.len),
        window: WINDOW,
        pcap_wire: None,
        tx_mode: r.tx,
        doorbell_batch: r.batch,
        cqe_compress: false,
        cq_session: 0,
        rx_mode: r.rx,
    }
}

const fn row(len: usize, tx: TxMode, rx: RxMode, batch: usize, latency_ns: u64) -> Row {
    Row {
        len,
        tx,
        rx,
        batch,
        latency_ns,
    }
}

/// Rows of the throughput table: plain sends and receives at every size, then 64 B with
/// BlueFlame (+ inline), with 4 frames per doorbell, in multi-packet send WQEs (runs of 14, one
/// WQE each), into a striding RQ (also 1514 B), and both of the last two together; then 64 B
/// plain, BlueFlame and multi-packet into striding with DMA answered at once, which is what the
/// engines alone allow.
const ROWS: [Row; 16] = [
    row(64, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(128, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(256, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(512, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(1024, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(1514, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(9000, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(64, TxMode::Bf, RxMode::Plain, 1, DMA_LATENCY_NS),
    row(64, TxMode::Plain, RxMode::Plain, 4, DMA_LATENCY_NS),
    row(64, TxMode::Mpwqe, RxMode::Plain, 14, DMA_LATENCY_NS),
    row(64, TxMode::Plain, RxMode::Striding, 1, DMA_LATENCY_NS),
    row(1514, TxMode::Plain, RxMode::Striding, 1, DMA_LATENCY_NS),
    row(64, TxMode::Mpwqe, RxMode::Striding, 14, DMA_LATENCY_NS),
    row(64, TxMode::Plain, RxMode::Plain, 1, 0),
    row(64, TxMode::Bf, RxMode::Plain, 1, 0),
    row(64, TxMode::Mpwqe, RxMode::Striding, 14, 0),
];

/// Rows run again traced for the goals' bounds ([`occupancy`]): 256 bytes plain at 1 µs (the
/// frame-size goal) and 64 bytes plain with DMA answered at once (the engines' own cost).
const TRACED: [Row; 2] = [ROWS[2], ROWS[13]];

/// The 64-byte rates the issue asks of the host path: 10GbE line rate on nic64 (14.88 Mpps) and
/// the ConnectX-4 Lx's published 75 Mpps on nic512.
fn target_mpps_64(preset: &str) -> f64 {
    if preset == "nic512" {
        75.0
    } else {
        14.88
    }
}

/// The datapath's ideal cycles for a frame of `len` bytes (results/PIPELINE.md): the bus beats
/// it needs with its FCS, at least 60 bytes before it.
fn ideal_cycles(len: usize, data_bits: u32) -> f64 {
    (len.max(60) + 4).div_ceil(data_bits as usize / 8) as f64
}

/// Frames in flight in the throughput rows: deep enough that a DMA round trip of 1 µs on the
/// send and the receive side is covered many times over (a real driver's rings hold hundreds),
/// so the rows show what the engines do, not how far the loop's window reaches.
const WINDOW: usize = 64;

/// DMA read latencies of the doorbell-to-CQE table, ns.
const LATENCIES_NS: [u64; 4] = [0, 500, 1000, 2000];
const SEED: u64 = 7;

/// The CQE compression table: 64-byte frames as in the throughput table, without and with
/// `--cqe-compress` (every CQ compressing, sessions of
/// [`nicgen::sim_loopback::CQE_COMPRESS_SESSION`] cycles).
fn cqe_compress_rows(
    md: &mut String,
    p: &Preset,
    model: &nicgen_tb::Model,
    n: usize,
    command: &str,
) -> Result<()> {
    let _ = writeln!(
        md,
        "CQE compression (`{command}`; `nicgen sim loopback --cqe-compress`): 64-byte frames as \
         above, each CQ writing runs of like completions as a title and mini CQEs (checksum \
         format) in sessions of {} cycles; `DMA writes/frame` counts every write the NIC made \
         (frames, CQEs, EQEs); `sessions` the compressed sessions the driver expanded and the \
         completions they held (each frame has two: its send and its receive completion).\n",
        nicgen::sim_loopback::CQE_COMPRESS_SESSION
    );
    let _ = writeln!(
        md,
        "| mode | frames | cycles/frame | Mpps | DMA writes/frame | sessions | completions in \
         sessions |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for compress in [false, true] {
        eprintln!("host-bench: {} 64 bytes, cqe compress {compress}", p.name);
        let o = LoopbackOpts {
            frames: n,
            queues: 4,
            min_len: 60,
            max_len: 64,
            seed: SEED,
            dma: pcie_dma(p, DMA_LATENCY_NS, SEED),
            fixed_len: Some(64),
            window: WINDOW,
            pcap_wire: None,
            tx_mode: TxMode::Plain,
            doorbell_batch: 1,
            cqe_compress: compress,
            cq_session: nicgen::sim_loopback::default_cq_session(compress),
            rx_mode: RxMode::Plain,
        };
        let r = run_loopback(p, model, &o, |_| {})?;
        anyhow::ensure!(
            r.mismatches == 0,
            "{}, cqe compress {compress}: {} frames differ from the model: {:?}",
            p.name,
            r.mismatches,
            r.notes
        );
        let per = r.cycles as f64 / r.frames as f64;
        let _ = writeln!(
            md,
            "| {} | {} | {per:.0} | {:.3} | {:.2} | {} | {} |",
            if compress { "cqe-compress" } else { "plain" },
            r.frames,
            p.clock_mhz / per,
            r.dma_writes as f64 / r.frames as f64,
            r.compressed.0,
            r.compressed.1
        );
    }
    md.push('\n');
    Ok(())
}

/// A row's mode as the table names it.
fn mode_name(r: &Row) -> String {
    let mut parts = Vec::new();
    match r.tx {
        TxMode::Bf => parts.push("bf".to_string()),
        TxMode::Mpwqe => parts.push("mpwqe".to_string()),
        TxMode::Plain | TxMode::Inline => {}
    }
    if r.batch > 1 {
        parts.push(format!("batch {}", r.batch));
    }
    if r.rx == RxMode::Striding {
        parts.push("striding".to_string());
    }
    if parts.is_empty() {
        "plain".into()
    } else {
        parts.join(", ")
    }
}

/// The throughput goals against the rows just measured, each met or missed, and for a
/// miss what bounds it: the same 64-byte loop with DMA answered at once (0 ns) is the engines'
/// own cost, so the gap between it and the 1 µs row is DMA latency the engines do not overlap.
fn goals(
    md: &mut String,
    p: &Preset,
    measured: &[(Row, f64)],
    traced: &[(Row, occupancy::Occupancy)],
    bf_latency: u64,
) {
    let occ = |len: usize, ns: u64| {
        traced
            .iter()
            .find(|(r, _)| r.len == len && r.latency_ns == ns)
            .map(|(_, o)| o)
    };
    let at = |len: usize, tx: TxMode, rx: RxMode, batch: usize, ns: u64| {
        measured
            .iter()
            .find(|(r, _)| {
                r.len == len && r.tx == tx && r.rx == rx && r.batch == batch && r.latency_ns == ns
            })
            .map(|&(_, c)| c)
    };
    let _ = writeln!(md, "Goals, from the rows above:\n");
    let ahead = nicgen_hdl::host::rq_engine::RQ_WQE_AHEAD;
    // Every size from 256 B at the datapath's ideal.
    let worst = measured
        .iter()
        .filter(|(r, _)| {
            r.len >= 256
                && r.tx == TxMode::Plain
                && r.rx == RxMode::Plain
                && r.batch == 1
                && r.latency_ns == DMA_LATENCY_NS
        })
        .map(|&(r, c)| (r.len, c, c / ideal_cycles(r.len, p.data_bits)))
        .max_by(|a, b| a.2.total_cmp(&b.2));
    if let Some((len, c, ratio)) = worst {
        let _ = writeln!(
            md,
            "- Every size from 256 B at the datapath's ideal: {}; the farthest is {len} B at {c:.0} \
             cycles a frame, {ratio:.1}x its ideal of {:.0}.",
            if ratio <= 1.05 { "met" } else { "missed" },
            ideal_cycles(len, p.data_bits)
        );
        // The send engine takes its DMA answers (the 64-byte WQE, then the frame) a datapath
        // beat a cycle.
        let beat = p.data_bits as usize / 8;
        let answers = 64usize.div_ceil(beat) + len.div_ceil(beat);
        // Where the cycles went in that row, traced; then the floor its answers set.
        if let Some(o) = occ(256, DMA_LATENCY_NS) {
            let _ = write!(
                md,
                "  What bounds it, in the 256-byte row run again traced (`cargo run --release -p \
                 nicgen --bin host-bench -- --occupancy {} 256 {DMA_LATENCY_NS}`: {:.0} cycles a \
                 frame; cycles {}..{} of its waveform): the send engine's issue side {} \
                 (WqeWait: waiting for a descriptor read; the look-ahead reads one turn ahead, \
                 and with {WINDOW} frames in flight over 4 SQs, each rung a frame at a time, a \
                 turn finds few WQEs posted and its read still on the way); the receive engine \
                 {} (WqeWait: a receive WQE not read ahead; these frames are one flow, all in \
                 one RQ); DMA answers brought the send engine a beat in {:.0} % of the cycles.",
                p.name,
                o.per_frame,
                o.from,
                o.to,
                o.sq.top(5.0),
                o.rq.top(5.0),
                o.sq_answer_beats
            );
        } else {
            md.push_str("  What bounds it:");
        }
        let _ = write!(
            md,
            " A plain send's DMA answers, its 64-byte WQE and its frame, reach the send engine a \
             datapath beat ({beat} bytes) a cycle: {answers} beats for {len} bytes against the \
             frame's ideal of {:.0}{}.",
            ideal_cycles(len, p.data_bits),
            if answers as f64 > ideal_cycles(len, p.data_bits) {
                ", a floor with no waiting at all"
            } else {
                ", no more, so here the per-frame costs below bound it as they do at 64 bytes"
            }
        );
        md.push('\n');
    }
    let target = target_mpps_64(&p.name);
    let best = measured
        .iter()
        .filter(|(r, _)| r.len == 64 && r.latency_ns == DMA_LATENCY_NS)
        .map(|&(r, c)| (mode_name(&r), p.clock_mhz / c))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((mode, mpps)) = best {
        let _ = writeln!(
            md,
            "- 64-byte frames at {target} Mpps: {}; the best mode ({mode}) reaches {mpps:.3} Mpps, \
             {:.1} % of it.",
            if mpps >= target { "met" } else { "missed" },
            100.0 * mpps / target
        );
    }
    // A DMA read costs a round trip; a CQE sooner than one means the send read nothing.
    let round_trip = nicgen_host::DmaConfig::ns_to_cycles(DMA_LATENCY_NS, p.clock_mhz);
    let _ =
        writeln!(
        md,
        "- A 64-byte BlueFlame + inline send makes no DMA read before its frame leaves: {}; its \
         CQE comes {bf_latency} cycles after the doorbell at {DMA_LATENCY_NS} ns DMA latency, \
         {} one read's round trip of {round_trip} cycles (the doorbell-to-CQE table above).",
        if bf_latency < round_trip { "met" } else { "missed" },
        if bf_latency < round_trip { "less than" } else { "not less than" }
    );
    let combo = |ns: u64| at(64, TxMode::Mpwqe, RxMode::Striding, 14, ns);
    if let (Some(c1), Some(c0)) = (combo(DMA_LATENCY_NS), combo(0)) {
        let _ = writeln!(
            md,
            "- Multi-packet sends into a striding RQ, which leave neither a descriptor read per \
             send nor a receive-WQE read per frame: {c1:.0} cycles a frame at {DMA_LATENCY_NS} ns \
             and {c0:.0} with DMA answered at once; the gap, {:.0} cycles, is DMA latency the \
             engines do not yet hide (the send engine reads, during a turn, the next SQ's \
             first descriptors or this SQ's next ones; the receive engine reads up to {ahead} \
             WQEs of an RQ ahead).",
            c1 - c0
        );
    }
    if let (Some(c1), Some(c0), Some(s1), Some(b0)) = (
        at(64, TxMode::Plain, RxMode::Plain, 1, DMA_LATENCY_NS),
        at(64, TxMode::Plain, RxMode::Plain, 1, 0),
        at(64, TxMode::Plain, RxMode::Striding, 1, DMA_LATENCY_NS),
        at(64, TxMode::Bf, RxMode::Plain, 1, 0),
    ) {
        let _ = write!(
            md,
            "- What bounds the 64-byte rate: with DMA answered at once the loop takes {c0:.0} \
             cycles a frame plain (ideal {:.0}): the engines' own per-frame cost.",
            ideal_cycles(64, p.data_bits)
        );
        if let Some(o) = occ(64, 0) {
            let eqe = o.cq.get("EqeReq") + o.cq.get("EqeData");
            let _ = write!(
                md,
                " That row run again traced (`cargo run --release -p nicgen --bin host-bench \
                 -- --occupancy {} 64 0`, cycles {}..{} of its waveform): the send engine's \
                 issue side, one WQE at a time, {} (WqeCopy copies a WQEBB out of the \
                 prefetch buffer a datapath beat a cycle); the receive engine {} (WrData \
                 writes a frame a datapath beat a cycle); the completion engine idle {:.0} % \
                 of the cycles and on EQEs {eqe:.0} % (the loopback's driver arms a CQ \
                 whenever it waits, and with DMA answered at once it waits for nearly every \
                 frame), its write requests waiting for the DMA write port {:.0} % (the port \
                 is shared with the receive engine's writes).",
                p.name,
                o.from,
                o.to,
                o.sq.top(5.0),
                o.rq.top(5.0),
                o.cq.get("Idle"),
                o.cq_write_waits
            );
        }
        let _ = writeln!(
            md,
            " BlueFlame sends are bound by the driver's dword writes of the window (2 + 4 per \
             DS, each an AXI-Lite write), hence their {b0:.0} with no DMA latency to save. At \
             {DMA_LATENCY_NS} ns plain sends take {c1:.0} cycles a frame into plain RQs and \
             {s1:.0} into a striding RQ: the {:.0} between them are receive-WQE reads not \
             hidden. These frames are one flow, so RSS puts them all in one RQ, which needs a \
             WQE every frame and reads at most {ahead} ahead: {ahead} a round trip of {:.0} \
             cycles.",
            c1 - s1,
            DMA_LATENCY_NS as f64 * p.clock_mhz / 1000.0
        );
    }
    md.push('\n');
}

/// The simulation-speed run: the measure, a 10,000-frame loopback at the CLI's defaults.
const SPEED_FRAMES: usize = 10_000;
/// The whole-NIC simulation speed the issue started from (cycles/s); its goal is twice this.
const SPEED_START: f64 = 136_000.0;
/// Frames of the two profiled runs; their difference is what a cycle costs without set-up.
const PROFILE_FRAMES: [usize; 2] = [1000, 200];

/// `host-bench --profile-run N`: one nic64 loopback of `N` frames at the CLI's defaults,
/// printing its simulated cycles (the child that `sim_speed` runs under callgrind).
fn profile_run(frames: usize) -> Result<()> {
    let p = Preset::builtin("nic64")?;
    let model = nic_model(&p)?;
    let got = run_loopback(&p, &model, &LoopbackOpts::cli_defaults(&p, frames), |_| {})?;
    anyhow::ensure!(got.mismatches == 0, "{} frames differ", got.mismatches);
    println!("cycles {}", got.cycles);
    Ok(())
}

/// `host-bench --occupancy PRESET BYTES NS [FRAMES]`: one throughput row (plain sends and
/// receives of BYTES-byte frames at NS ns DMA latency, 256 frames unless told) run traced, and
/// where the engines' cycles went ([`occupancy`]): how the goals' bounds are measured.
fn occupancy_of(args: &[String]) -> Result<()> {
    let usage = "usage: host-bench --occupancy PRESET BYTES NS [FRAMES]";
    let [preset, len, ns, rest @ ..] = args else {
        anyhow::bail!("{usage}");
    };
    let p = Preset::builtin(preset)?;
    let num = |s: &String| {
        s.parse::<u64>()
            .map_err(|_| anyhow::anyhow!("{usage}: {s}?"))
    };
    let r = row(
        num(len)? as usize,
        TxMode::Plain,
        RxMode::Plain,
        1,
        num(ns)?,
    );
    let n = rest.first().map(num).transpose()?.unwrap_or(256) as usize;
    let fst = std::env::temp_dir().join(format!("host-bench-{preset}-{len}B-{ns}ns.fst"));
    let o = occupancy::measure(&p, &row_opts(&p, &r, n), &fst)?;
    println!("{o}\nwaveform: {}", fst.display());
    Ok(())
}

/// Instructions per block in a callgrind profile of a `-fno-inline` model: the functions of
/// module class `Vnic_<module>` summed under the module's name without its parameter suffix;
/// Verilator's own scheduling, the rest of the model, and everything outside it (the driver, the
/// host model, set-up) in rows of their own.
fn profile_blocks(file: &std::path::Path) -> Result<BTreeMap<String, u64>> {
    let out = Command::new("callgrind_annotate")
        .args(["--threshold=100"])
        .arg(file)
        .output()?;
    anyhow::ensure!(out.status.success(), "callgrind_annotate failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut by = BTreeMap::new();
    for line in text
        .lines()
        .skip_while(|l| !l.contains("file:function"))
        .skip(2)
    {
        let line = line.trim_start();
        let Some((n, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(n) = n.replace(',', "").parse::<u64>() else {
            continue;
        };
        let block = block_of(rest);
        *by.entry(block).or_insert(0) += n;
    }
    Ok(by)
}

/// The row of a function in `callgrind_annotate`'s listing (the text after the count).
fn block_of(function: &str) -> String {
    if let Some(i) = function
        .find("Vnic_")
        .filter(|_| !function.contains("Vnic___024root"))
    {
        let name = &function[i + 5..];
        let name = &name[..name.find("___").unwrap_or(name.len())];
        // Parameters follow the module's name as `_<letter><digit>...` (`_d64`, `_w16_n32`).
        let cut = name
            .match_indices('_')
            .map(|(k, _)| k)
            .find(|&k| {
                let mut c = name[k + 1..].chars();
                matches!((c.next(), c.next()), (Some(a), Some(b)) if a.is_ascii_lowercase() && b.is_ascii_digit())
            })
            .unwrap_or(name.len());
        name[..cut].to_string()
    } else if function.contains("libmodel.so") {
        if function.contains("Vnic___024root") || function.contains("Vnic::") {
            "(Verilator scheduling)".to_string()
        } else {
            "(model, other)".to_string()
        }
    } else {
        "(outside the model: driver, host, Rust)".to_string()
    }
}

/// The simulation-speed section: three timed runs of the CLI's default loopback, the goal, and
/// (with valgrind) the per-block instructions of a simulated cycle.
fn sim_speed(md: &mut String, p: &Preset, model: &Model) -> Result<()> {
    let _ = writeln!(
        md,
        "## Simulation speed\n\nThe whole NIC (nic64) in `nicgen sim loopback --frames \
         {SPEED_FRAMES}` at the CLI's defaults (random 60-1514-byte frames, 4 queues, plain \
         modes, 1000 ns DMA latency), three runs (`cargo xtask bench-host`; wall time of the \
         loop, model build excluded):\n"
    );
    let _ = writeln!(
        md,
        "| run | simulated cycles | wall (s) | sim cycles/s | sim frames/s |"
    );
    let _ = writeln!(md, "|---:|---:|---:|---:|---:|");
    let mut speeds = Vec::new();
    for run in 1..=3 {
        eprintln!("host-bench: simulation speed, run {run}");
        let t0 = Instant::now();
        let got = run_loopback(
            p,
            model,
            &LoopbackOpts::cli_defaults(p, SPEED_FRAMES),
            |_| {},
        )?;
        let wall = t0.elapsed().as_secs_f64();
        anyhow::ensure!(got.mismatches == 0, "{} frames differ", got.mismatches);
        let speed = got.cycles as f64 / wall;
        let _ = writeln!(
            md,
            "| {run} | {} | {wall:.2} | {speed:.0} | {:.0} |",
            got.cycles,
            got.frames as f64 / wall
        );
        speeds.push((speed, got.frames as f64 / wall));
    }
    speeds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (median, frames_s) = speeds[1];
    let _ = writeln!(
        md,
        "\nGoal: at least twice the issue's baseline of {:.0} k cycles/s (365 frames/s): {}; \
         the median run is {:.0} k cycles/s, {:.2}x, and {frames_s:.0} frames/s, {:.1}x.\n",
        SPEED_START / 1e3,
        if median >= 2.0 * SPEED_START {
            "met"
        } else {
            "missed"
        },
        median / 1e3,
        median / SPEED_START,
        frames_s / 365.0
    );
    if Command::new("valgrind").arg("--version").output().is_err() {
        let _ = writeln!(md, "(valgrind is not installed: no per-block profile.)\n");
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    let dir = std::env::temp_dir().join(format!("host-bench-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    // Build the -fno-inline model natively first; callgrind then only runs the loop.
    let st = Command::new(&exe)
        .args(["--profile-run", "1"])
        .env(nicgen_tb::verilator::EXTRA_FLAGS_ENV, "-fno-inline")
        .status()?;
    anyhow::ensure!(st.success(), "the profiled model did not build");
    let mut runs = Vec::new();
    for frames in PROFILE_FRAMES {
        eprintln!("host-bench: callgrind, {frames} frames");
        let file = dir.join(format!("callgrind.{frames}"));
        let out = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", file.display()))
            .arg(&exe)
            .args(["--profile-run", &frames.to_string()])
            .env(nicgen_tb::verilator::EXTRA_FLAGS_ENV, "-fno-inline")
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "callgrind run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cycles: u64 = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| {
                l.strip_prefix("cycles ")
                    .and_then(|c| c.trim().parse().ok())
            })
            .ok_or_else(|| anyhow::anyhow!("the profiled run printed no cycle count"))?;
        runs.push((cycles, profile_blocks(&file)?));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let ((c1, big), (c0, small)) = (&runs[0], &runs[1]);
    let cycles = (c1 - c0) as f64;
    let mut rows: Vec<(String, f64)> = big
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (*v as f64 - *small.get(k).unwrap_or(&0) as f64) / cycles,
            )
        })
        .collect();
    let total: f64 = rows.iter().map(|r| r.1).sum();
    rows.retain(|r| r.1 >= 50.0);
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let _ = writeln!(
        md,
        "Where a simulated cycle's instructions go: `valgrind --tool=callgrind` over nic64 \
         loopbacks of {} and {} frames (the CLI's defaults) of a model built with \
         `NICGEN_VERILATOR_FLAGS=-fno-inline` (each module a C++ class of its own; the inlined \
         model runs the same logic), per block the difference between the two runs over the \
         difference in simulated cycles ({:.0}), so the set-up drops out; {total:.0} \
         instructions a cycle in all, rows under 50 left out:\n",
        PROFILE_FRAMES[0], PROFILE_FRAMES[1], cycles
    );
    let _ = writeln!(
        md,
        "| block (all its instances) | instructions per cycle | share |"
    );
    let _ = writeln!(md, "|---|---:|---:|");
    for (k, v) in &rows {
        let _ = writeln!(md, "| {k} | {v:.0} | {:.1} % |", 100.0 * v / total);
    }
    let _ = writeln!(
        md,
        "\nWhat bounds the speed: Verilator evaluates every block's logic in every cycle, \
         whether or not a frame is in it, and the free-running pipelines (the header parsers, \
         the Toeplitz trees, the CRC networks) and the host engines' per-cycle decisions are \
         most of it.\n"
    );
    let _ = writeln!(md, "{}\n", anchor_goal(&read_bench_md()));
    Ok(())
}

/// results/BENCH.md as `cargo xtask bench` last wrote it (empty when missing).
fn read_bench_md() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/BENCH.md");
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The goal that the generated Verilog simulate at least as fast as rust-hdl's for the same job,
/// from the side-by-side table of `bench` (in `bench_md`, results/BENCH.md): each pair's ratio
/// nicgen / anchor, measured in one run.
fn anchor_goal(bench_md: &str) -> String {
    let head = "Goal: the generated Verilog simulates at least as fast as rust-hdl's for the same \
                job, measured side by side in one run, same harness and stimulus, by `cargo \
                xtask bench --anchor ../shared/anchors/rust-hdl` (results/BENCH.md, section 3)";
    let ratios: Vec<(String, f64)> = bench_md
        .split("### Side by side")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Pair"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let ratio = cells.get(4)?.trim_start_matches("**");
            let x = ratio.split("x**").next()?.parse::<f64>().ok()?;
            Some((cells[1].to_string(), x))
        })
        .collect();
    if ratios.is_empty() {
        return format!("{head}: not in results/BENCH.md; run that command.");
    }
    let met = ratios.iter().all(|(_, x)| *x >= 1.0);
    let list: Vec<String> = ratios
        .iter()
        .map(|(pair, x)| format!("{x:.2}x for the {pair}"))
        .collect();
    format!(
        "{head}: {}; nicgen / anchor {}.",
        if met { "met" } else { "missed" },
        list.join(", ")
    )
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--profile-run") {
        let frames = args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("--profile-run needs a frame count"))?;
        return profile_run(frames);
    }
    if let Some(i) = args.iter().position(|a| a == "--occupancy") {
        return occupancy_of(&args[i + 1..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let out = nicgen::results::out_path(&args, "../../results/HOST.md");
    let machine = nicgen::results::describe_machine()?;
    nicgen::progress::show_builds();
    // Enough frames that the window's first round trip is a small share of the run.
    let n = if quick { 256 } else { 1000 };
    let command = format!(
        "cargo xtask bench-host{}",
        if quick { " --quick" } else { "" }
    );
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Host interface: latency and throughput through the driver\n"
    );
    let _ = writeln!(
        md,
        "Every table below was written by `{command}` ({machine}). The whole NIC \
         (`nic`) behind the simulated host (`testbench/host`), driven by `sw-driver` in MAC \
         loopback. The host is a PCIe Gen3 link (`nicgen_host::link`): x8 for nic64, x16 for \
         nic512, each transfer cut into TLPs at MPS 256 B (completions, writes) and MRRS 512 B \
         (read requests), each TLP paying 20 B (completion) or 24 B (request, write) of framing \
         and header plus 4 B of DLLPs on the other direction; every DMA read is answered \
         {DMA_LATENCY_NS} ns after its request unless a table says otherwise, answers free to \
         overtake each other.\n"
    );
    let mut speed_md = String::new();
    let trace_dir = nicgen_tb::verilator::target_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("host-bench");
    std::fs::create_dir_all(&trace_dir)?;
    for preset in ["nic64", "nic512"] {
        let p = Preset::builtin(preset)?;
        eprintln!("host-bench: building {preset}...");
        let model = nic_model(&p)?;
        let link = host_link(&p);
        let timing = link.timing(p.clock_mhz);
        // The engines move one datapath beat a cycle through the DMA port, however wide it is.
        let (port, engine) = (p.dma_bits() / 8, p.data_bits / 8);
        let _ = writeln!(
            md,
            "## {preset}: {} bits at {} MHz, PCIe Gen3 x{}, DMA port {} bits\n",
            p.data_bits,
            p.clock_mhz,
            link.lanes,
            p.dma_bits()
        );
        let _ = writeln!(
            md,
            "The link moves {:.1} Gb/s a direction on the wire ({:.1} B a cycle); the DMA port \
             takes a {port}-byte beat a cycle, and each engine moves one {engine}-byte datapath \
             beat a cycle through it ({:.1} Gb/s) each way, so the {} bounds raw DMA.\n",
            link.bytes_per_second() * 8.0 / 1e9,
            timing.bytes_per_cycle,
            engine as f64 * 8.0 * p.clock_mhz / 1000.0,
            if timing.bytes_per_cycle < engine as f64 {
                "link"
            } else {
                "datapath width"
            },
        );
        let _ = writeln!(
            md,
            "Doorbell-to-CQE latency (`{command}`), 64-byte UDP/IPv4 send with both checksum \
             offloads, idle NIC, answers in request order (best of two after a warm-up; the CQ \
             polled every cycle):\n"
        );
        let _ = writeln!(
            md,
            "| DMA read latency (ns) | (cycles) | doorbell to CQE (cycles) | (ns) |"
        );
        let _ = writeln!(md, "|---:|---:|---:|---:|");
        for ns in LATENCIES_NS {
            let c = doorbell_to_cqe(&p, &model, 64, ns)?;
            let _ = writeln!(
                md,
                "| {ns} | {} | {c} | {:.0} |",
                nicgen_host::DmaConfig::ns_to_cycles(ns, p.clock_mhz),
                c as f64 * 1000.0 / p.clock_mhz
            );
        }
        let _ = writeln!(
            md,
            "\nThe same 64-byte send at {DMA_LATENCY_NS} ns DMA latency per send mode (`plain`: \
             the frame in a buffer; `inline`: in the WQE; `bf`: in the WQE, and the WQE \
             written through the BlueFlame window, so the NIC reads neither it nor the doorbell \
             record):\n"
        );
        let _ = writeln!(md, "| send mode | doorbell to CQE (cycles) | (ns) |");
        let _ = writeln!(md, "|---|---:|---:|");
        let mut bf_latency = 0;
        for (name, mode) in [
            ("plain", TxMode::Plain),
            ("inline", TxMode::Inline),
            ("bf (BlueFlame + inline)", TxMode::Bf),
        ] {
            let c = doorbell_to_cqe_mode(&p, &model, 64, DMA_LATENCY_NS, mode)?;
            if mode == TxMode::Bf {
                bf_latency = c;
            }
            let _ = writeln!(
                md,
                "| {name} | {c} | {:.0} |",
                c as f64 * 1000.0 / p.clock_mhz
            );
        }
        let _ = writeln!(
            md,
            "\nThroughput through the driver loopback (`{command}`): UDP/IPv4 frames of one \
             size, both checksum offloads, 4 queues, {WINDOW} frames in flight. `mode`: `plain` sends \
             (the frame in a buffer, a doorbell per frame) and one receive buffer per frame; \
             `bf` BlueFlame + inline sends; `batch 4` four frames per doorbell (one CQE per \
             run); `mpwqe, batch 14` runs of 14 frames as the packets of one enhanced \
             multi-packet send WQE (one CQE each), a run started once all of it fits; `striding` a striding RQ. `DMA ns`: the DMA read \
             latency. `ideal`: the datapath's cycles for the frame (results/PIPELINE.md). Mpps and Gb/s (frame \
             bytes without FCS) are simulated time at the preset clock; `link up` and `link \
             down` are the share of the PCIe link's wire bandwidth the run used, NIC to host \
             and host to NIC (payload, TLP overhead and DLLPs); `sim cycles/s` and `sim \
             frames/s` are how fast the simulation ran on this machine.\n"
        );
        let _ = writeln!(
            md,
            "| bytes | mode | DMA ns | frames | cycles/frame | ideal | Mpps | Gb/s | link up | \
             link down | sim cycles/s | sim frames/s |"
        );
        let _ = writeln!(
            md,
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        let mut measured = Vec::new();
        for r in ROWS {
            let mode = mode_name(&r);
            eprintln!(
                "host-bench: {preset} {} bytes, {mode}, {} ns",
                r.len, r.latency_ns
            );
            let o = row_opts(&p, &r, n);
            let t0 = Instant::now();
            let got = run_loopback(&p, &model, &o, |_| {})?;
            let wall = t0.elapsed().as_secs_f64();
            anyhow::ensure!(
                got.mismatches == 0,
                "{preset}, {} bytes, {mode}: {} frames differ from the model: {:?}",
                r.len,
                got.mismatches,
                got.notes
            );
            let per = got.cycles as f64 / got.frames as f64;
            let mpps = p.clock_mhz / per;
            let busy =
                |bytes: u64| 100.0 * bytes as f64 / (got.cycles as f64 * timing.bytes_per_cycle);
            let _ = writeln!(
                md,
                "| {} | {mode} | {} | {} | {per:.0} | {:.0} | {mpps:.3} | {:.2} | {:.1} % | {:.1} % | {:.0} | {:.0} |",
                r.len,
                r.latency_ns,
                got.frames,
                ideal_cycles(r.len, p.data_bits),
                mpps * r.len as f64 * 8.0 / 1000.0,
                busy(got.link_bytes.0),
                busy(got.link_bytes.1),
                got.cycles as f64 / wall,
                got.frames as f64 / wall
            );
            measured.push((r, per));
        }
        md.push('\n');
        // The rows whose misses the goals explain, traced: where the engines' cycles went.
        let mut traced = Vec::new();
        for r in TRACED {
            eprintln!(
                "host-bench: {preset} {} bytes, {}, {} ns, traced",
                r.len,
                mode_name(&r),
                r.latency_ns
            );
            let fst = trace_dir.join(format!("{preset}-{}B-{}ns.fst", r.len, r.latency_ns));
            traced.push((r, occupancy::measure(&p, &row_opts(&p, &r, n), &fst)?));
        }
        goals(&mut md, &p, &measured, &traced, bf_latency);
        md.push('\n');
        cqe_compress_rows(&mut md, &p, &model, n, &command)?;
        if preset == "nic64" {
            speed_md = String::new();
            sim_speed(&mut speed_md, &p, &model)?;
        }
    }
    md.push_str(&speed_md);
    // The simulation speeds depend on the share of a core the run got: say how busy the
    // machine was.
    if let Some(load) = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
    {
        let _ = writeln!(
            md,
            "The machine's 5-minute load average was {load} when the run ended; `sim cycles/s` \
             and `sim frames/s` scale with the share of a core the simulation got.\n"
        );
    }
    std::fs::write(&out, md)?;
    eprintln!("host-bench: wrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{anchor_goal, block_of};

    #[test]
    fn the_anchor_goal_reads_the_side_by_side_table() {
        let md = "## 3. x\n| Driver | a |\n| nicgen | **2.81 M** |\n\n### Side by side with the \
                  anchor\n\n| Pair | nicgen | anchor | nicgen / anchor |\n|---|---:|---:|---:|\n\
                  | checksum stage 512 b | **4.25 M** (4.25) | **3.46 M** (3.49) | **1.22x** \
                  (1.22 / 1.27 / 1.17) |\n| stage + FIFO | **5.25 M** | **2.82 M** | **0.98x** (0.98) |\n";
        let g = anchor_goal(md);
        assert!(g.contains(": missed;"), "{g}");
        assert!(
            g.contains("1.22x for the checksum stage 512 b, 0.98x for the stage + FIFO"),
            "{g}"
        );
        assert!(anchor_goal(&md.replace("0.98x", "1.98x")).contains(": met;"));
        assert!(anchor_goal("").contains("not in results/BENCH.md"));
    }

    #[test]
    fn profile_rows_name_the_block() {
        for (f, want) in [
            ("???:Vnic_eth_hdr_parse_d64u5_w128_f32___nba_sequent__TOP__0(Vnic_x*) [/x/libmodel.so]", "eth_hdr_parse"),
            ("???:Vnic_record_fifo_w16_n32___nba_sequent__TOP__0(x) [/x/libmodel.so]", "record_fifo"),
            ("???:Vnic_stream_widen_64_to_256_u0___ico_sequent(x) [/x/libmodel.so]", "stream_widen_64_to_256"),
            ("???:Vnic_bar_regs___nba_sequent__TOP__1(x) [/x/libmodel.so]", "bar_regs"),
            ("???:Vnic___024root___eval_nba(Vnic___024root*) [/x/libmodel.so]", "(Verilator scheduling)"),
            ("???:VL_REDXOR [/x/libmodel.so]", "(model, other)"),
            ("???:sha2::sha256::compress256 [/x/nicgen]", "(outside the model: driver, host, Rust)"),
        ] {
            assert_eq!(block_of(f), want, "{f}");
        }
    }
}
