//! The cocotb example (`examples/cocotb`) as a user runs it: `nicgen generate` of nic64 into a
//! temporary directory, then `python3 examples/cocotb/run.py DIR` on Icarus with a small frame
//! count. Fails when the runner fails, when cocotb reports a failed test, or when not every test
//! of the example ran (read from the xUnit results it writes).
//!
//! Needs Icarus (`iverilog`, `vvp` on PATH, as cocotb's runner calls them) and python3 with
//! cocotb, cocotbext-axi and scapy (`examples/cocotb/requirements.txt`; `cargo xtask test`
//! installs them); without them the test skips, or fails under `NICGEN_REQUIRE_TOOLS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tests of `examples/cocotb/test_eth_rx.py`, every one of which must run and pass.
const TESTS: &[&str] = &[
    "good_tcp_and_udp_frames_come_out_unchanged",
    "bad_fcs_frame_is_dropped",
    "vlan_tag_is_stripped_and_reported",
    "ipv4_tcp_checksum_verdicts",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_cocotb_example_passes_on_the_generated_rx_path() {
    use nicgen_tb::require::{cocotb_required, python, tool_required};
    if !tool_required("iverilog") || !tool_required("vvp") || !cocotb_required() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("nicgen-cocotb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let gen = dir.join("nic64");

    let o = Command::new(env!("CARGO_BIN_EXE_nicgen"))
        .args(["generate", "--preset", "nic64", "--out"])
        .arg(&gen)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "nicgen generate: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    let build = dir.join("build");
    let o = Command::new(python())
        .arg(root().join("examples/cocotb/run.py"))
        .arg(&gen)
        .args(["--frames", "12", "--seed", "1"])
        .arg("--build-dir")
        .arg(&build)
        .current_dir(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        o.status.success(),
        "examples/cocotb/run.py failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("cocotb: {} passed, 0 failed", TESTS.len())),
        "run.py's summary:\n{stdout}\n{stderr}"
    );

    // The xUnit results: one passing testcase per test of the example.
    let xml = std::fs::read_to_string(build.join("results.xml")).expect("results.xml");
    for t in TESTS {
        assert!(
            xml.contains(&format!("name=\"{t}\"")),
            "{t} did not run:\n{xml}"
        );
    }
    assert_eq!(xml.matches("<testcase").count(), TESTS.len(), "{xml}");
    assert!(
        !xml.contains("<failure") && !xml.contains("<error"),
        "a cocotb test failed:\n{xml}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
