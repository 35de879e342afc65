//! Running the external programs the benchmarks drive (yosys, nextpnr, verilator, g++), and
//! the generated design they run on.
//!
//! Every benchmark section must survive a missing tool and say why in its table, so `have`
//! probes first, `version` never fails (it answers "missing"), and a failing run's error
//! carries the command and the tail of its output rather than just an exit status.

use anyhow::{bail, Context, Result};
use nicgen_edsl::ir::Dir;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One generated design in its scratch directory.
#[derive(Clone)]
pub(crate) struct Design {
    pub(crate) dir: PathBuf,
    pub(crate) top: String,
    pub(crate) files: Vec<String>,
    pub(crate) ports: Vec<(String, Dir, u32)>,
}

/// Whether `tool` is on `PATH`.
pub(crate) fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// First line of `tool args` (stdout, else stderr), or "missing".
pub(crate) fn version(tool: &str, args: &[&str]) -> String {
    match Command::new(tool).args(args).output() {
        Ok(o) => {
            let s = String::from_utf8_lossy(&o.stdout).into_owned()
                + &String::from_utf8_lossy(&o.stderr);
            s.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("?")
                .to_string()
        }
        Err(_) => "missing".into(),
    }
}

/// Run a command in `dir`; on failure the error carries the command and the tail of its output.
pub(crate) fn run_in(dir: &Path, prog: &str, args: &[String]) -> Result<String> {
    let out = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .output()
        .with_context(|| format!("cannot run `{prog}` (is it installed?)"))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(25).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "`{prog} {}` failed in {} ({}):\n{}",
            args.join(" "),
            dir.display(),
            out.status,
            tail.join("\n")
        );
    }
    Ok(text)
}

pub(crate) fn json(path: &Path) -> Result<serde_json::Value> {
    let t = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&t).with_context(|| format!("parsing {}", path.display()))
}
