//! What the writers of the `results/` tables share: the machine a benchmark ran on, with tool
//! versions asked of the tools themselves at run time (so a table never claims a version that
//! did not make it), and where the table goes.

use anyhow::Result;
use nicgen_tb::verilator::Toolchain;
use std::process::Command;

/// `Verilator …, c++ …, rustc …, N cores`: the first line of `verilator --version`, of the
/// C++ compiler's `--version` (the one the models are built with), of `rustc --version`
/// (`$RUSTC` or `rustc`), and the cores this process may use.
pub fn describe_machine() -> Result<String> {
    let tc = Toolchain::detect()?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| format!("rustc unknown (`{rustc} --version` did not run)"));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(format!(
        "{}; {}; {rustc_version}; {cores} cores",
        tc.verilator_version, tc.cxx_version
    ))
}

/// `--out FILE` from the arguments, else `default` (a path under the workspace's
/// `results/`).
pub fn out_path(args: &[String], default: &str) -> std::path::PathBuf {
    args.iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(default))
}
