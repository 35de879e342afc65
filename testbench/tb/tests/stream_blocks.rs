//! Differential tests of the stream primitives against their golden models
//! (`nicgen_model::stream`): forward register, skid buffer, plain FIFO and frame FIFO, over
//! bus width (8, 64, 512 bits) x idle x backpressure, monitors on every stream. The FIFO runs
//! are replayed on Icarus and must agree with Verilator cycle by cycle.

mod blocks;
use blocks::*;
use nicgen_hdl::stream::{stream_fifo, stream_fwd_reg, stream_skid, FifoCfg, StreamCfg};
use nicgen_model::stream::{fifo_frames, MarkedFrame};

const WIDTHS: [u32; 3] = [8, 64, 512];

fn identity_block(name: &str, build: impl Fn(&StreamCfg) -> std::rc::Rc<nicgen_edsl::ModuleDef>) {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let cfg = StreamCfg::new(w, 3);
        let Some(d) = dut(&build(&cfg)) else { return };
        for k in matrix(10 + wi as u64) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let bpb = (w / 8) as usize;
            let frames: Vec<(Vec<u8>, u64)> = random_frames(k.seed, 40, 4 * bpb + 3)
                .into_iter()
                .enumerate()
                .map(|(i, f)| (f, (i % 8) as u64))
                .collect();
            let n = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &frames,
                &["m_axis"],
                |g, _| g[0].len() == n,
                |_| {},
            );
            assert_eq!(
                got[0], frames,
                "{name} w={w} {k:?}: frames differ (model: identity)"
            );
        }
    }
}

#[test]
fn forward_register_is_identity() {
    identity_block("stream_fwd_reg", |c| stream_fwd_reg(c).unwrap());
}

#[test]
fn skid_buffer_is_identity() {
    identity_block("stream_skid", |c| stream_skid(c).unwrap());
}

#[test]
fn plain_fifo_is_identity_and_matches_icarus() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let cfg = FifoCfg {
            stream: StreamCfg::new(w, 2),
            depth: 16,
            frame_mode: false,
        };
        let Some(d) = dut(&stream_fifo(&cfg).unwrap()) else {
            return;
        };
        for (ki, k) in matrix(20 + wi as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            let bpb = (w / 8) as usize;
            let frames: Vec<(Vec<u8>, u64)> = random_frames(k.seed, 30, 40 * bpb)
                .into_iter()
                .map(|f| (f, 1))
                .collect();
            let n = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &frames,
                &["m_axis"],
                |g, _| g[0].len() == n,
                |_| {},
            );
            assert_eq!(got[0], frames, "stream_fifo w={w} {k:?}");
            if ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn frame_fifo_drops_bad_and_oversize_frames_and_accounts_for_all() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let depth = 8u32;
        let cfg = FifoCfg {
            stream: StreamCfg::new(w, 1),
            depth,
            frame_mode: true,
        };
        let Some(d) = dut(&stream_fifo(&cfg).unwrap()) else {
            return;
        };
        let bpb = (w / 8) as usize;
        let cap = depth as usize * bpb;
        for (ki, k) in matrix(30 + wi as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            // Sizes around the capacity, a fifth marked bad.
            let raw = random_frames(k.seed, 40, cap + 2 * bpb);
            let frames: Vec<(Vec<u8>, u64)> = raw
                .iter()
                .enumerate()
                .map(|(i, f)| (f.clone(), (i % 5 == 2) as u64))
                .collect();
            let marked: Vec<MarkedFrame> = frames
                .iter()
                .map(|(b, u)| MarkedFrame {
                    bytes: b.clone(),
                    bad: *u == 1,
                })
                .collect();
            let want = fifo_frames(&marked, cap);
            let (bad_p, big_p) = (
                sim.port("stat_drop_bad").unwrap(),
                sim.port("stat_drop_oversize").unwrap(),
            );
            let (bad, big) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
            let total = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &frames,
                &["m_axis"],
                |g, _| g[0].len() + bad.get() + big.get() == total,
                |s| {
                    bad.set(bad.get() + s.get_u64(bad_p) as usize);
                    big.set(big.get() + s.get_u64(big_p) as usize);
                },
            );
            let got: Vec<Vec<u8>> = got[0]
                .iter()
                .map(|(f, u)| {
                    assert_eq!(*u, 0, "a delivered frame carries the bad mark");
                    f.clone()
                })
                .collect();
            assert_eq!(got, want.delivered, "frame FIFO w={w} {k:?}");
            assert_eq!(
                (bad.get(), big.get()),
                (want.dropped_bad, want.dropped_oversize),
                "drop counters w={w} {k:?}"
            );
            assert!(
                want.dropped_oversize > 0 && want.dropped_bad > 0,
                "the vectors exercise both drops"
            );
            if ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn impossible_parameters_are_refused_with_a_reason() {
    let e = stream_fifo(&FifoCfg {
        stream: StreamCfg::new(64, 1),
        depth: 12,
        frame_mode: true,
    })
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("FIFO depth 12 is not a power of two"),
        "{e}"
    );
    let e = stream_fwd_reg(&StreamCfg::new(12, 0)).unwrap_err();
    assert!(e.to_string().contains("not whole bytes"), "{e}");
    let e = stream_fifo(&FifoCfg {
        stream: StreamCfg::new(64, 0),
        depth: 16,
        frame_mode: true,
    })
    .unwrap_err();
    assert!(
        e.to_string().contains("frame mode needs a tuser bit"),
        "{e}"
    );
}
