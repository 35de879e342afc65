//! The harness's waveform of a failure (`nicgen_tb::waves`), on a stream block broken on
//! purpose: its identity check fails, and the failure leaves an FST under
//! `target/nicgen-waves/` that opens, with its path and the command to open it in the output.
//!
//! The broken checks are ignored tests that the checking test runs in a child process (the
//! same test binary), as a developer's failing test would run; the harness in that child
//! re-runs the check once more with tracing to write the file. One fails with its instance
//! alive and the mismatch's cycle marked (the block tests' shape), the other after its
//! instance is gone (the path tests' shape: a runner returns results, the test checks them).

use nicgen_edsl::prelude::*;
use nicgen_hdl::stream::{PassPorts, StreamCfg};
use nicgen_tb::verilator::Toolchain;
use nicgen_tb::waves::{check_fst, wave_path, PLAN_ENV, WAVES_ENV};
use nicgen_tests::{dut, random_frames, reset, run_frames, stream_identity, Knobs};
use std::path::Path;
use std::process::Command;
use std::rc::Rc;

/// A pass-through that flips bit 0 of `tdata` in every beat of a frame whose `tuser` is 5, so
/// the identity check fails on the sixth frame of a run.
fn broken_pass(cfg: &StreamCfg) -> Rc<ModuleDef> {
    Block::build(
        format!("stream_broken_{}", cfg.suffix()),
        *cfg,
        |p: PassPorts| {
            doc("A pass-through broken on purpose: flips tdata bit 0 of frames with tuser 5.");
            let (s, m) = (p.s_axis, p.m_axis);
            s.ready().set(m.ready());
            m.valid().set(s.valid());
            let user = s.user().expect("a stream with tuser");
            let w = s.data().width();
            let flip = mux(user.eq(5u64), lit(w, 1u64), lit(w, 0u64));
            for ((name, src), (_, dst)) in s.payload().into_iter().zip(m.payload()) {
                dst.set(if name == "tdata" { src ^ flip } else { src });
            }
        },
    )
    .unwrap()
    .into_def()
}

#[test]
#[ignore = "fails on purpose; a_broken_block_leaves_a_waveform_that_opens runs it"]
fn broken_block_fails_its_identity_check() {
    stream_identity("stream_broken", broken_pass);
}

/// The same block checked the way the path tests check a runner's results: after the run, with
/// the instance gone and no mismatch cycle marked.
#[test]
#[ignore = "fails on purpose; a_broken_block_leaves_a_waveform_that_opens runs it"]
fn broken_block_fails_after_its_run() {
    let Some(d) = dut(&broken_pass(&StreamCfg::new(8, 3))) else {
        return;
    };
    let frames: Vec<(Vec<u8>, u64)> = random_frames(3, 12, 9)
        .into_iter()
        .enumerate()
        .map(|(i, f)| (f, (i % 8) as u64))
        .collect();
    let got = {
        let mut sim = d.model.instance();
        reset(&mut sim);
        let k = Knobs {
            seed: 3,
            idle: 0.2,
            backpressure: 0.2,
        };
        let n = frames.len();
        run_frames(
            &mut sim,
            k,
            &frames,
            &["m_axis"],
            |g, _| g[0].len() == n,
            |_| {},
        )
        .remove(0)
    };
    assert_eq!(got, frames, "checked after the run");
}

#[test]
fn a_broken_block_leaves_a_waveform_that_opens() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (test, reason, around) in [
        (
            "waves::broken_block_fails_its_identity_check",
            "frames differ (model: identity): first difference at frame 5",
            "around the first mismatch at cycle",
        ),
        (
            "waves::broken_block_fails_after_its_run",
            "checked after the run",
            "where the instance stood at the failure",
        ),
    ] {
        let path = wave_path(test);
        let _ = std::fs::remove_file(&path);
        let out = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--ignored"])
            .env_remove(PLAN_ENV)
            .env_remove(WAVES_ENV)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{test}: the broken block passed:\n{text}"
        );
        assert!(
            text.contains(reason),
            "{test} failed for another reason:\n{text}"
        );
        let shown = path.display().to_string();
        assert!(
            text.contains(&format!("waveform of this failure: {shown}"))
                && text.contains(&format!("gtkwave {shown}"))
                && text.contains(&format!("surfer {shown}"))
                && text.contains(around),
            "{test}: the failure does not say where its waveform is:\n{text}"
        );
        let info = check_fst(&path).unwrap_or_else(|e| panic!("{test}: {e}\n{text}"));
        assert!(info.vars > 0 && info.end_time > info.start_time, "{info:?}");
        // Read back by gtkwave's own FST reader, as a viewer opens it.
        let read = fstapi_read(&path);
        assert!(
            read.contains("var m_axis_tdata") && read.contains("var s_axis_tuser"),
            "{test}: the waveform lacks the block's ports:\n{read}"
        );
        let changes: u64 = read
            .lines()
            .find_map(|l| l.strip_prefix("changes "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        assert!(changes > 0, "{test}: no value changes:\n{read}");
    }
}

/// A reader built from the `fstapi` sources Verilator ships (the reader GTKWave uses): opens
/// the file, names every variable (`var NAME`), and counts the value changes (`changes N`).
const FST_READER_C: &str = r#"
#include <stdio.h>
#include <inttypes.h>
#include "fstapi.h"
static uint64_t changes;
static void on_change(void *u, uint64_t t, fstHandle h, const unsigned char *v) {
    (void)u; (void)t; (void)h; (void)v; changes++;
}
int main(int argc, char **argv) {
    if (argc != 2) return 2;
    void *r = fstReaderOpen(argv[1]);
    if (!r) { fprintf(stderr, "fstReaderOpen failed on %s\n", argv[1]); return 1; }
    struct fstHier *h;
    while ((h = fstReaderIterateHier(r))) {
        if (h->htyp == FST_HT_VAR) printf("var %s\n", h->u.var.name);
    }
    fstReaderSetFacProcessMaskAll(r);
    fstReaderIterBlocks(r, on_change, NULL, NULL);
    printf("changes %" PRIu64 "\n", changes);
    fstReaderClose(r);
    return 0;
}
"#;

/// Compiles [`FST_READER_C`] against Verilator's copy of `fstapi` and runs it on `path`.
fn fstapi_read(path: &Path) -> String {
    let gtkwave = Toolchain::detect().unwrap().include_dir.join("gtkwave");
    let dir = std::env::temp_dir().join(format!("nicgen-fst-reader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("fst_reader.c");
    std::fs::write(&src, FST_READER_C).unwrap();
    let exe = dir.join("fst_reader");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .arg("-O1")
        .arg("-I")
        .arg(&gtkwave)
        .arg("-DFST_CONFIG_INCLUDE=\"fst_config.h\"")
        .arg(&src)
        .args(["fstapi.c", "fastlz.c", "lz4.c"].map(|f| gtkwave.join(f)))
        .args(["-lz", "-o"])
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(
        built.status.success(),
        "compiling the FST reader:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(&exe).arg(path).output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "the FST reader cannot open {}: {}{text}",
        path.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    text
}
