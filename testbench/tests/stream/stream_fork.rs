//! `stream_fork` and `stream_fork_buffered` deliver every frame to every output, unchanged and
//! in order, with independent random backpressure per output and monitors on all streams;
//! width (8, 64, 512) x idle x backpressure; the buffered fork also takes 1 beat/cycle with
//! every output ready.

use nicgen_edsl::ModuleDef;
use nicgen_hdl::stream::{stream_fork, stream_fork_buffered, StreamCfg};
use nicgen_tests::*;
use std::rc::Rc;

#[test]
fn fork_is_identity_on_every_output() {
    fork_identity(|c| stream_fork(c, &["a", "b", "c"]).unwrap().into_def(), 80);
}

#[test]
fn buffered_fork_is_identity_on_every_output() {
    fork_identity(
        |c| {
            stream_fork_buffered(c, &["a", "b", "c"], 8)
                .unwrap()
                .into_def()
        },
        90,
    );
}

#[test]
fn buffered_fork_has_no_bubbles() {
    for w in [8u32, 64] {
        let Some(d) = dut(&stream_fork_buffered(&StreamCfg::new(w, 0), &["a", "b"], 8).unwrap())
        else {
            return;
        };
        let mut sim = d.model.instance();
        reset(&mut sim);
        let p = |n: &str| sim.port(n).unwrap();
        let (sv, sr, sl) = (p("s_axis_tvalid"), p("s_axis_tready"), p("s_axis_tlast"));
        let (ar, br) = (p("m_axis_a_tready"), p("m_axis_b_tready"));
        let (av, bv) = (p("m_axis_a_tvalid"), p("m_axis_b_tvalid"));
        sim.set_bool(ar, true);
        sim.set_bool(br, true);
        sim.set_bool(sv, true);
        sim.set_bool(sl, true);
        let (mut taken, mut out) = (0, 0);
        for cycle in 0..200 {
            sim.eval();
            taken += sim.get_bool(sr) as u32;
            // Past the FIFOs' latency, a beat on both outputs every cycle.
            if cycle >= 10 {
                out += (sim.get_bool(av) && sim.get_bool(bv)) as u32;
            }
            sim.cycle();
        }
        assert_eq!(taken, 200, "w={w}: input refused with every output ready");
        assert_eq!(out, 190, "w={w}: output beats in the last 190 cycles");
    }
}

fn fork_identity(build: impl Fn(&StreamCfg) -> Rc<ModuleDef>, seed: u64) {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(d) = dut(&build(&StreamCfg::new(w, 2))) else {
            return;
        };
        for k in matrix(seed + wi as u64) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let frames: Vec<(Vec<u8>, u64)> = random_frames(k.seed, 30, 3 * (w / 8) as usize + 5)
                .into_iter()
                .enumerate()
                .map(|(i, f)| (f, (i % 4) as u64))
                .collect();
            let n = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &frames,
                &["m_axis_a", "m_axis_b", "m_axis_c"],
                |g, _| g.iter().all(|o| o.len() == n),
                |_| {},
            );
            for (o, name) in got.iter().zip(["a", "b", "c"]) {
                assert_eq!(o, &frames, "output {name}, w={w} {k:?}");
            }
        }
    }
}

#[test]
fn a_fork_needs_two_outputs() {
    let e = stream_fork(&StreamCfg::new(64, 0), &["only"]).unwrap_err();
    assert!(e.to_string().contains("at least two outputs"), "{e}");
}
