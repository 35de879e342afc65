//! `stream_fork` delivers every frame to every output, unchanged and in order, with independent
//! random backpressure per output and monitors on all streams; width (8, 64, 512) x idle x
//! backpressure.

mod blocks;
use blocks::*;
use nicgen_hdl::stream::{stream_fork, StreamCfg};

#[test]
fn fork_is_identity_on_every_output() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(d) = dut(&stream_fork(&StreamCfg::new(w, 2), &["a", "b", "c"]).unwrap()) else {
            return;
        };
        for k in matrix(80 + wi as u64) {
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
