//! `cargo xtask`: the project's automation (cargo-xtask pattern; no shell glue).
//!
//! - `cargo xtask test`  installs the Debian tools the tests need when they are missing
//!   (verilator, iverilog, yosys, tshark, scapy, ip, ping; with pip, the cocotb example's
//!   requirements), lints every preset's Verilog, and runs the workspace tests.
//! - `cargo xtask lint`  generates every built-in preset and checks it: `verilator --lint-only
//!   -Wall` with zero warnings, `iverilog -g2005`, and a yosys structural check (`hierarchy -check; proc; check -assert`).
//! - `cargo xtask bench` runs the benchmarks and writes `results/BENCH.md` (see there).
//! - `cargo xtask bench-area` synthesises every block of the Ethernet pipeline at the nic64 and
//!   nic512 presets (Xilinx 7-series area; ECP5-85k place and route with Fmax) and writes
//!   `results/AREA.md`.
//! - `cargo xtask bench-pipeline` measures cycles per frame through the RX/TX paths per frame
//!   size and writes `results/PIPELINE.md`.
//! - `cargo xtask bench-host` measures the host interface through the driver loopback behind
//!   the preset's PCIe link with 1 µs DMA latency (doorbell-to-CQE latency, also per send mode:
//!   plain, inline, BlueFlame + inline; Mpps and Gb/s per frame size, at 64 bytes by
//!   BlueFlame, and at 64 and 1514 bytes into a striding RQ; simulation speed) and writes
//!   `results/HOST.md`.
//! - `cargo xtask bench-tap` (root) runs the TAP tests (Linux through the whole NIC: plain TCP,
//!   the host's vxlan, the NIC's vxlan engines) and writes the TCP goodput of each transfer and
//!   the simulation's speed to `results/TAP.md`.
//! - `cargo xtask sta FILE.sdf [--mhz F] [--top N]` lists every endpoint of a routed design that
//!   misses a clock, grouped by launch and capture register (`fpga/sta.rs`; bench-area writes
//!   the SDF of every seed).
//!
//! The FPGA-flow tools (synthesis and place-and-route runners, the ECP5 netlist pass, static
//! timing, bench-area) are in [`fpga`]; this file keeps the command dispatch and the test,
//! lint and install automation.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

mod anchor;
mod bench;
mod cpp_loop;
mod fpga;
mod report;
mod rust_lines;
mod tools;

/// Debian packages the tests need, with the command that shows each is present.
const TOOLS: &[(&str, &str)] = &[
    ("verilator", "verilator"),
    ("iverilog", "iverilog"),
    ("yosys", "yosys"),
    ("tshark", "tshark"),
    ("g++", "g++"),
    ("make", "make"),
    ("zlib1g-dev", "/usr/include/zlib.h"),
    ("python3-scapy", "/usr/lib/python3/dist-packages/scapy"),
    // pip installs the cocotb example's requirements (`ensure_python`); cocotb embeds the
    // interpreter through its shared library.
    ("python3-pip", "python3 -m pip --version"),
    ("libpython3-dev", "ls /usr/lib/*/libpython3.*.so.1.0"),
    ("iproute2", "ip"),
    ("iputils-ping", "ping"),
    ("ethtool", "ethtool"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("lint") => lint().map(|_| ()),
        Some("bench") => bench::run(&root(), &args[1..]),
        Some("install-tools") => install_tools().and_then(|_| ensure_python()),
        Some("bench-area") => fpga::area::run(&root(), &args[1..]),
        Some("bench-pipeline") => run_bin("pipeline-bench", &args[1..]),
        Some("bench-host") => run_bin("host-bench", &args[1..]),
        Some("bench-tap") => bench_tap(),
        Some("sta") => fpga::sta::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <test [cargo test args]|lint|bench [--quick]|bench-area [--quick]|bench-pipeline [--quick]|bench-host [--quick]|bench-tap|sta FILE.sdf [--mhz F] [--top N]|install-tools>"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn present(probe: &str) -> bool {
    if probe.starts_with('/') {
        return Path::new(probe).exists();
    }
    if probe.contains(' ') {
        return Command::new("sh")
            .args(["-c", &format!("{probe} >/dev/null 2>&1")])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
    }
    Command::new("sh")
        .args(["-c", &format!("command -v {probe}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Install the missing Debian packages (as root, or through sudo).
fn install_tools() -> Result<()> {
    let missing: Vec<&str> = TOOLS
        .iter()
        .filter(|(_, p)| !present(p))
        .map(|(pkg, _)| *pkg)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing missing tools: {}", missing.join(" "));
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let prefix: Vec<&str> = if is_root { vec![] } else { vec!["sudo"] };
    let run = |args: &[&str]| -> Result<()> {
        let mut all: Vec<&str> = prefix.clone();
        all.extend_from_slice(args);
        let st = Command::new(all[0])
            .args(&all[1..])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .with_context(|| format!("cannot run {}", all.join(" ")))?;
        if !st.success() {
            bail!(
                "`{}` failed; install {} by hand and retry",
                all.join(" "),
                missing.join(" ")
            );
        }
        Ok(())
    };
    run(&["apt-get", "update", "-q"])?;
    let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    run(&args)
}

/// The Python packages the tests import, for the `python3` on PATH (which may not be Debian's):
/// scapy (the oracles) and the cocotb example's requirements (cocotb, cocotbext-axi, scapy),
/// installed with pip from that file when an import fails.
fn ensure_python() -> Result<()> {
    let req = root().join("examples/cocotb/requirements.txt");
    if present("python3 -c 'import scapy, cocotb, cocotb_tools.runner, cocotbext.axi'") {
        return Ok(());
    }
    eprintln!(
        "xtask: installing the Python packages of {} for python3 with pip",
        req.display()
    );
    let st = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&req)
        // Debian's own python3 is "externally managed" (PEP 668): pip refuses to install into it
        // without this. The packages go where the tests' python3 imports them from, as the
        // Debian tools above go where the tests run them from.
        .env("PIP_BREAK_SYSTEM_PACKAGES", "1")
        .env("PIP_ROOT_USER_ACTION", "ignore")
        .status()?;
    if !st.success() {
        bail!(
            "`python3 -m pip install -r {}` failed; install those packages for python3 by hand and retry",
            req.display()
        );
    }
    Ok(())
}

/// Run a benchmark binary of the `nicgen` crate in release mode with `args`.
fn run_bin(bin: &str, args: &[String]) -> Result<()> {
    let st = Command::new(cargo())
        .args(["run", "--release", "-q", "-p", "nicgen", "--bin", bin, "--"])
        .args(args)
        .current_dir(root())
        .status()?;
    if !st.success() {
        bail!("{bin} failed");
    }
    Ok(())
}

/// `cargo xtask bench-tap`: the TAP tests, one at a time, and the `goodput` / `tap-run` lines
/// they print, as `results/TAP.md`.
fn bench_tap() -> Result<()> {
    let out = Command::new(cargo())
        .args([
            "test",
            "--release",
            "-q",
            "-p",
            "nicgen",
            "--test",
            "tap",
            "--",
        ])
        .args(["--nocapture", "--test-threads=1"])
        .env("NICGEN_REQUIRE_TOOLS", "1")
        .current_dir(root())
        .stderr(std::process::Stdio::inherit())
        .output()?;
    if !out.status.success() {
        bail!("the TAP tests failed");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let fields = |tag: &str| -> Vec<Vec<String>> {
        text.lines()
            // (libtest prints `test NAME ... ` before a test's first output, on its line.)
            .filter_map(|l| l.find(tag).map(|at| &l[at + tag.len()..]))
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    };
    let kernel = Command::new("uname").arg("-r").output()?;
    let mut md = format!(
        "# TCP through the simulated NIC over TAPs\n\nWritten by `cargo xtask bench-tap` \
         (root; Linux {}, {} cores): the TAP tests of `testbench/system/tap.rs`, nic64, each a \
         4 MiB transfer checked by SHA-256 between two network namespaces joined only by \
         `nicgen sim tap`. Goodput is wall-clock: the RTL runs in Verilator, so it measures the \
         simulation as much as the design (the design's throughput is in PIPELINE.md and \
         HOST.md).\n\n| transfer | bytes | seconds | goodput kB/s |\n|---|---:|---:|---:|\n",
        String::from_utf8_lossy(&kernel.stdout).trim(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for f in fields("goodput\t") {
        let (bytes, secs): (f64, f64) = (f[1].parse()?, f[2].parse()?);
        md.push_str(&format!(
            "| {} | {} | {secs:.1} | {:.0} |\n",
            f[0],
            f[1],
            bytes / secs / 1000.0
        ));
    }
    md.push_str("\n| run | simulated cycles | seconds | cycles/s |\n|---|---:|---:|---:|\n");
    for f in fields("tap-run\t") {
        let name = match f[0].as_str() {
            "" => "plain",
            "x" => "host's vxlan (mode b)",
            "v" => "NIC's vxlan (mode a)",
            other => other,
        };
        let (c, secs): (f64, f64) = (f[1].parse()?, f[2].parse()?);
        md.push_str(&format!(
            "| {name} | {c:.0} | {secs:.1} | {:.0} |\n",
            c / secs
        ));
    }
    let path = root().join("results/TAP.md");
    std::fs::write(&path, md)?;
    eprintln!("bench-tap: wrote {}", path.display());
    Ok(())
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Generate every built-in preset into `target/lint/<preset>` and run the lint gate.
fn lint() -> Result<Vec<String>> {
    let root = root();
    let st = Command::new(cargo())
        .args(["build", "-q", "-p", "nicgen"])
        .current_dir(&root)
        .status()?;
    if !st.success() {
        bail!("cargo build -p nicgen failed");
    }
    let nicgen = root.join("target/debug/nicgen");
    let out = Command::new(&nicgen).arg("presets").output()?;
    let presets: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    if presets.is_empty() {
        bail!("`nicgen presets` listed nothing");
    }
    for p in &presets {
        let dir = root.join("target/lint").join(p);
        let _ = std::fs::remove_dir_all(&dir);
        let st = Command::new(&nicgen)
            .args(["generate", "--preset", p, "--out"])
            .arg(&dir)
            .status()?;
        if !st.success() {
            bail!("nicgen generate --preset {p} failed");
        }
        let files: Vec<String> = std::fs::read_to_string(dir.join("files.f"))?
            .lines()
            .map(String::from)
            .collect();
        let top = "nic";
        let v = Command::new("verilator")
            .args(["--lint-only", "-Wall", "--top-module", top])
            .args(&files)
            .current_dir(&dir)
            .output()
            .context("verilator not found: run `cargo xtask install-tools`")?;
        let text =
            String::from_utf8_lossy(&v.stderr).into_owned() + &String::from_utf8_lossy(&v.stdout);
        // Tool messages name Verilog lines; each also gets the Rust line that made it.
        let rust = rust_lines::RustLines::read(&dir, &files);
        if !v.status.success() || text.contains("%Warning") {
            bail!(
                "verilator --lint-only -Wall on preset {p}:\n{}",
                rust.annotate(&text)
            );
        }
        let i = Command::new("iverilog")
            .args(["-g2005", "-o", "/dev/null", "-s", top])
            .args(&files)
            .current_dir(&dir)
            .output()?;
        if !i.status.success() {
            bail!(
                "iverilog -g2005 on preset {p}:\n{}",
                rust.annotate(&String::from_utf8_lossy(&i.stderr))
            );
        }
        // Structural check (elaboration, processes, drivers, loops), not a full synthesis: the
        // whole NIC through `synth` takes many minutes per preset; area is `cargo xtask bench`'s.
        let script = format!(
            "read_verilog {}; hierarchy -check -top {top}; proc; check -assert",
            files.join(" ")
        );
        let y = Command::new("yosys")
            .args(["-q", "-p", &script])
            .current_dir(&dir)
            .output()?;
        if !y.status.success() {
            bail!(
                "yosys hierarchy/proc/check on preset {p}:\n{}",
                rust.annotate(&String::from_utf8_lossy(&y.stderr))
            );
        }
        println!("lint: preset {p}: verilator -Wall clean, iverilog -g2005 ok, yosys check ok");
    }
    Ok(presets)
}

fn test(extra: &[String]) -> Result<()> {
    install_tools()?;
    ensure_python()?;
    lint()?;
    let mut cmd = Command::new(cargo());
    cmd.args(["test", "--workspace"])
        .args(extra)
        .current_dir(root());
    // The tools were just installed: a missing tool (or root for the TAP test) is now a test
    // failure, never a skip (nicgen_tb::require).
    cmd.env("NICGEN_REQUIRE_TOOLS", "1");
    let st = cmd.status()?;
    if !st.success() {
        bail!("cargo test failed");
    }
    Ok(())
}
