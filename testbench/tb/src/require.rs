//! Whether a test that needs something from the machine fails or skips when it is missing: the
//! one decision every test makes, through [`require`].
//!
//! # Why one flag
//! The suite needs external tools (Verilator and a C++ compiler, Icarus Verilog, Yosys, tshark,
//! python3 with scapy, cocotb and cocotbext-axi) and, for the TAP test, root with
//! `/dev/net/tun`, `ip` and `ping`. On a developer's machine a missing one skips the tests that
//! need it, with a `SKIPPED (...)` line saying what is missing. Where the tools must be there (CI, `cargo xtask test`), a skip would
//! be a silent pass, so [`FLAG`]`=1` turns every such skip into a failure. [`ALIAS`] is the
//! flag's older name and means the same.
//!
//! The gates built on it: [`crate::verilator::verilator_required`],
//! [`crate::icarus::icarus_required`], [`crate::tshark::tshark_required`], [`tool_required`]
//! (any command-line tool, e.g. `yosys`), [`scapy_required`], [`cocotb_required`] and
//! [`root_required`].

use std::path::Path;
use std::process::Command;

/// The environment variable that makes a missing tool a test failure (value `1`).
pub const FLAG: &str = "NICGEN_REQUIRE_TOOLS";
/// The older name of [`FLAG`], accepted with the same meaning.
pub const ALIAS: &str = "REQUIRE_VERILATOR";

/// True when [`FLAG`] or [`ALIAS`] is `1`: missing tools are failures.
pub fn tools_required() -> bool {
    [FLAG, ALIAS]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1"))
}

/// The decision: `probe` is `Ok` when `what` is usable, else says why not. Returns `true` when
/// usable. When not: under [`FLAG`]`=1` it panics (the test fails, naming what is missing);
/// otherwise it prints `SKIPPED (...)` and returns `false`, and the test returns early.
///
/// ```no_run
/// let probe = std::fs::metadata("/dev/net/tun").map(|_| ()).map_err(|e| e.to_string());
/// if !nicgen_tb::require::require("/dev/net/tun", probe) { return; }
/// ```
pub fn require(what: &str, probe: Result<(), String>) -> bool {
    match probe {
        Ok(()) => true,
        Err(why) if tools_required() => {
            panic!("{what} is required ({FLAG}=1) but unusable: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED ({what} unusable: {why}; set {FLAG}=1 to make this a failure)");
            false
        }
    }
}

/// Whether `tool` runs: `tool --version`, or `tool -V` (Icarus and Yosys answer that; Icarus
/// exits non-zero but prints its version).
pub fn probe_tool(tool: &str) -> Result<(), String> {
    let runs = |arg: &str| {
        Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success() || !o.stdout.is_empty())
    };
    if runs("--version") || runs("-V") {
        Ok(())
    } else {
        Err(format!("`{tool}` is not on PATH or does not run"))
    }
}

/// Gate for a test that runs the command-line tool `tool` (see [`require`]).
pub fn tool_required(tool: &str) -> bool {
    require(tool, probe_tool(tool))
}

/// The Python interpreter the oracles run with: `$PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Run `script` with [`python`] from its standard input (`python3 - ARGS...`): its output, or
/// why it did not run or failed (its standard error). Tests build frames with scapy this way.
pub fn run_python(script: &str, args: &[&std::ffi::OsStr]) -> Result<std::process::Output, String> {
    use std::io::Write;
    use std::process::Stdio;
    let py = python();
    let run = Command::new(&py)
        .arg("-")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(script.as_bytes())?;
            c.wait_with_output()
        });
    match run {
        Ok(o) if o.status.success() => Ok(o),
        Ok(o) => Err(format!(
            "`{py} -` failed: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("cannot run `{py}`: {e}")),
    }
}

/// Whether [`python`] imports every module of `modules`; the error names the first that fails
/// and `fix`, the command that installs it.
pub fn probe_imports(modules: &[&str], fix: &str) -> Result<(), String> {
    let py = python();
    let code = format!("import {}", modules.join(", "));
    match Command::new(&py).args(["-c", &code]).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "`{py} -c '{code}'` failed: {} ({fix})",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Err(format!("cannot run `{py}`: {e}")),
    }
}

/// Whether [`python`] imports scapy.
pub fn probe_scapy() -> Result<(), String> {
    probe_imports(&["scapy.all"], "Debian: `apt-get install python3-scapy`")
}

/// The Python requirements of the cocotb example (cocotb, cocotbext-axi, scapy), from the
/// workspace root; `cargo xtask install-tools` installs them with pip.
pub const COCOTB_REQUIREMENTS: &str = "examples/cocotb/requirements.txt";

/// Whether [`python`] imports what the cocotb example needs: cocotb with its runner,
/// cocotbext-axi and scapy.
pub fn probe_cocotb() -> Result<(), String> {
    probe_imports(
        &["cocotb", "cocotb_tools.runner", "cocotbext.axi", "scapy"],
        &format!(
            "`python3 -m pip install -r {COCOTB_REQUIREMENTS}` or `cargo xtask install-tools`"
        ),
    )
}

/// Gate for a test that runs the cocotb example (see [`require`]).
pub fn cocotb_required() -> bool {
    require("python3 with cocotb and cocotbext-axi", probe_cocotb())
}

/// Gate for a test that builds frames with scapy (see [`require`]).
pub fn scapy_required() -> bool {
    require("python3 with scapy", probe_scapy())
}

/// Whether this process may create TAP devices and enter network namespaces: effective user
/// root, `/dev/net/tun` present, and each of `tools` on PATH (e.g. `ip`, `ping`).
pub fn probe_root(tools: &[&str]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mut missing = Vec::new();
    // /proc/self belongs to the process's effective user.
    match std::fs::metadata("/proc/self") {
        Ok(m) if m.uid() == 0 => {}
        Ok(m) => missing.push(format!("root (running as uid {})", m.uid())),
        Err(e) => missing.push(format!("root (cannot read /proc/self: {e})")),
    }
    if !Path::new("/dev/net/tun").exists() {
        missing.push("/dev/net/tun (`modprobe tun`)".into());
    }
    for t in tools {
        if !on_path(t) {
            missing.push(format!("`{t}` on PATH"));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing {}", missing.join(", ")))
    }
}

/// Gate for a test that needs root, `/dev/net/tun` and `tools` (see [`require`]).
pub fn root_required(tools: &[&str]) -> bool {
    require(
        &format!("root with /dev/net/tun and {}", tools.join(", ")),
        probe_root(tools),
    )
}

fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usable_tool_passes_and_a_missing_one_is_named() {
        let e = probe_tool("nicgen-no-such-tool").unwrap_err();
        assert!(e.contains("nicgen-no-such-tool"), "{e}");
        assert!(require("something", Ok(())));
        assert!(on_path("sh"));
        assert!(!on_path("nicgen-no-such-tool"));
    }
}
