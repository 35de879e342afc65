//! Shared helpers: run the external tools on generated Verilog.
#![allow(dead_code)]

use nicgen_edsl::Generated;
use std::path::{Path, PathBuf};
use std::process::Command;

/// True when `tool` runs; missing, it fails the test under `NICGEN_REQUIRE_TOOLS=1` and skips it
/// otherwise (`nicgen_tb::require` decides).
pub fn have(tool: &str) -> bool {
    nicgen_tb::require::tool_required(tool)
}

pub fn write(g: &Generated, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nicgen-edsl-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    g.write_to(&dir).unwrap();
    dir
}

fn files(g: &Generated, dir: &Path) -> Vec<String> {
    g.verilog
        .iter()
        .map(|(n, _)| dir.join(n).to_string_lossy().into_owned())
        .collect()
}

/// `verilator --lint-only -Wall`: returns the combined output; asserts zero warnings.
pub fn lint_clean(g: &Generated, tag: &str) {
    if !have("verilator") {
        return;
    }
    let dir = write(g, tag);
    let out = Command::new("verilator")
        .args(["--lint-only", "-Wall", "--top-module", &g.top])
        .args(files(g, &dir))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !text.contains("%Warning"),
        "verilator -Wall on {tag}:\n{text}\n---\n{}",
        dump(g)
    );
}

pub fn iverilog_ok(g: &Generated, tag: &str) {
    if !have("iverilog") {
        return;
    }
    let dir = write(g, tag);
    let out = Command::new("iverilog")
        .args(["-g2005", "-Wall", "-o", "/dev/null", "-s", &g.top])
        .args(files(g, &dir))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && text.trim().is_empty(),
        "iverilog -g2005 on {tag}:\n{text}\n---\n{}",
        dump(g)
    );
}

pub fn yosys_ok(g: &Generated, tag: &str) {
    if !have("yosys") {
        return;
    }
    let dir = write(g, tag);
    let script = format!(
        "read_verilog {}; synth -top {}",
        files(g, &dir).join(" "),
        g.top
    );
    let out = Command::new("yosys")
        .args(["-q", "-p", &script])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "yosys synth on {tag}:\n{text}");
    assert!(
        !text.contains("Warning"),
        "yosys warnings on {tag}:\n{text}"
    );
}

pub fn dump(g: &Generated) -> String {
    g.verilog
        .iter()
        .map(|(n, t)| format!("==> {n}\n{t}"))
        .collect()
}
