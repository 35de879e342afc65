//! Differential test of `tx_csum` against `nicgen_model::tx::insert_checksums` over width
//! (8, 64, 512) x idle x backpressure, every combination of the two offload flags, with the
//! host's checksum fields holding garbage; and back-to-back runs that count cycles (no bubbles,
//! the documented latency).

use nicgen_hdl::eth::tx_csum::{latency, tx_csum, TxCsumCfg};
use nicgen_model::tx::insert_checksums;
use nicgen_tb::record::RecordDriver;
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamMonitor, StreamPorts, StreamSink,
};
use nicgen_tests::csum_frames::{build, Built};
use nicgen_tests::*;
use rand::{rngs::StdRng, Rng, SeedableRng};

#[test]
fn tx_checksum_insertion_matches_the_model() {
    insertion_matches_the_model(None);
}

/// Requests scarce (idle 95 % of cycles), so that a frame's beats wait for their request and
/// a frame ends with no request there: a request must pair with the frame after the one it
/// waited behind, never with a frame already let in.
#[test]
fn tx_checksum_requests_late() {
    insertion_matches_the_model(Some(0.95));
}

fn insertion_matches_the_model(req_idle: Option<f64>) {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let buffer_beats = if w == 8 { 2048 } else { 256 };
        let Some(d) = dut(&tx_csum(&TxCsumCfg {
            data_bits: w,
            levels_per_stage: 2,
            buffer_beats,
        })
        .unwrap()) else {
            return;
        };
        for k in matrix(70 + wi as u64) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let mut rng = StdRng::seed_from_u64(k.seed);
            let mut frames: Vec<(Built, bool, bool)> = Vec::new();
            for _ in 0..30 {
                let mut b = build(&mut rng);
                // The host's checksum fields are whatever it left there.
                let o = b.offsets;
                let at = o.l4_off
                    + if o.l4 == Some(nicgen_model::tx::L4::Tcp) {
                        16
                    } else {
                        6
                    };
                b.frame[at] = rng.gen();
                if o.ipv4 == Some(true) {
                    b.frame[o.l3_off + 10] = rng.gen();
                }
                frames.push((b, rng.gen(), rng.gen()));
            }
            let sp = StreamPorts::new(&sim, "s_axis").unwrap();
            let mp = StreamPorts::new(&sim, "m_axis").unwrap();
            let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
            let mut mon_in = StreamMonitor::new(sp, k.seed);
            let mut sink = StreamSink::new(mp.clone(), k.seed + 3, k.backpressure);
            let mut mon_out = StreamMonitor::new(mp, k.seed);
            let mut req =
                RecordDriver::new(&sim, "s_axis_req", k.seed + 1, req_idle.unwrap_or(k.idle))
                    .unwrap();
            for (b, l3, l4) in &frames {
                drv.push(b.frame.clone());
                req.push(b.tx_req(*l3, *l4));
            }
            let n = frames.len();
            run_until_seeded(&mut sim, k.seed, 3000, |sim| {
                let mut agents: Vec<&mut dyn Agent> =
                    vec![&mut drv, &mut mon_in, &mut req, &mut sink, &mut mon_out];
                let p = step(sim, &mut agents)?;
                Ok(Status::new(p, sink.frames().len() == n))
            })
            .unwrap();
            for (i, ((b, l3, l4), got)) in frames.iter().zip(sink.frames()).enumerate() {
                let want = insert_checksums(&b.frame, &b.offsets, *l3, *l4);
                assert_eq!(
                    got.data, want,
                    "w={w} {k:?} frame {i} (l3 {l3}, l4 {l4}, {:?})",
                    b.offsets
                );
            }
        }
    }
}

/// Back to back, requests offered ahead, no idle and no backpressure, frames of equal beat
/// counts (store-and-forward: a longer frame after a shorter one must wait for its own last
/// beat): the input is never stalled and the frames leave in consecutive cycles, also one- and
/// two-beat frames at 512 bits (where short frames cost one beat each).
#[test]
fn back_to_back_frames_leave_without_bubbles() {
    for (w, frame_beats) in [(64u32, 8usize), (512, 1), (512, 2)] {
        let cfg = TxCsumCfg {
            data_bits: w,
            levels_per_stage: 2,
            buffer_beats: 256,
        };
        let Some(d) = dut(&tx_csum(&cfg).unwrap()) else {
            return;
        };
        let mut sim = d.model.instance();
        reset(&mut sim);
        let bpb = w as usize / 8;
        let mut rng = StdRng::seed_from_u64(u64::from(w) + frame_beats as u64);
        let frames: Vec<Built> = std::iter::repeat_with(|| build(&mut rng))
            .filter(|b| b.frame.len().div_ceil(bpb) == frame_beats)
            .take(40)
            .collect();
        let sp = StreamPorts::new(&sim, "s_axis").unwrap();
        let mp = StreamPorts::new(&sim, "m_axis").unwrap();
        let mut drv = StreamDriver::new(sp.clone(), 1, 0.0);
        let mut sink = StreamSink::new(mp.clone(), 2, 0.0);
        let mut mon_in = StreamMonitor::new(sp.clone(), 1);
        let mut mon_out = StreamMonitor::new(mp.clone(), 1);
        let mut ti = Transfers::new(sp);
        let mut to = Transfers::new(mp);
        let mut req = RecordDriver::new(&sim, "s_axis_req", 3, 0.0).unwrap();
        for b in &frames {
            drv.push(b.frame.clone());
            req.push(b.tx_req(true, true));
        }
        run_until_seeded(&mut sim, 1, 200, |sim| {
            let mut agents: Vec<&mut dyn Agent> = vec![
                &mut drv,
                &mut mon_in,
                &mut req,
                &mut sink,
                &mut mon_out,
                &mut ti,
                &mut to,
            ];
            let p = step(sim, &mut agents)?;
            Ok(Status::new(p, sink.frames().len() == frames.len()))
        })
        .unwrap();
        for (i, (b, got)) in frames.iter().zip(sink.frames()).enumerate() {
            let want = insert_checksums(&b.frame, &b.offsets, true, true);
            assert_eq!(got.data, want, "w={w} frame {i}");
        }
        let beats = frames.len() * frame_beats;
        assert_eq!((ti.cycles.len(), to.cycles.len()), (beats, beats));
        assert_eq!(
            to.cycles[0] - ti.cycles[frame_beats - 1],
            u64::from(latency(&cfg)),
            "w={w}: latency from the last beat in to the first beat out"
        );
        let gaps = |c: &[u64]| c.windows(2).filter(|p| p[1] != p[0] + 1).count();
        assert_eq!(
            (gaps(&ti.cycles), gaps(&to.cycles)),
            (0, 0),
            "w={w}, {frame_beats}-beat frames: input and output bubbles"
        );
    }
}
