//! Differential tests of `stream_fifo` against its golden model
//! (`nicgen_model::stream::fifo_frames`; the identity in plain mode): plain FIFO and frame FIFO
//! (LUT RAM and block RAM), over bus width (8, 64, 512 bits) x idle x backpressure, monitors on
//! every stream; the `s_axis_room` flag in every cycle. The FIFO runs are replayed on Icarus
//! and must agree with Verilator cycle by cycle. Jumbo frames go through a 2048-deep block-RAM
//! FIFO at 64 bits; zero-bubble checks count the cycles of back-to-back frames.

use nicgen_hdl::stream::stream_fifo::{BLOCK_PREFETCH, BRAM_BANK_DEPTH};
use nicgen_hdl::stream::{
    stream_fifo, stream_fifo_in, stream_fifo_room, FifoCfg, FifoRam, StreamCfg,
};
use nicgen_model::stream::{fifo_frames, MarkedFrame};
use nicgen_tb::stream::{
    run_until_seeded, step, Status, StreamDriver, StreamMonitor, StreamPorts, StreamSink,
};
use nicgen_tests::*;

#[test]
fn plain_fifo_is_identity_and_matches_icarus() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        for (ri, ram) in [FifoRam::Lut, FifoRam::Block].into_iter().enumerate() {
            let cfg = FifoCfg {
                stream: StreamCfg::new(w, 2),
                depth: 16,
                frame_mode: false,
            };
            let Some(d) = dut(&stream_fifo_in(&cfg, ram).unwrap()) else {
                return;
            };
            for (ki, k) in matrix(20 + wi as u64 + 7 * ri as u64)
                .into_iter()
                .enumerate()
            {
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
                assert_eq!(got[0], frames, "stream_fifo {ram:?} w={w} {k:?}");
                if ki == 3 {
                    icarus_agrees(&d, &sim.take_recording());
                }
            }
        }
    }
}

/// `s_axis_room` (a flop) says "free entries >= room", counting the writes up to the previous
/// cycle and the reads up to the cycle before it, in every cycle of random traffic (idle x
/// backpressure): both RAM kinds, thresholds 1 (`!full`), a middle one and the depth. In LUT
/// RAM it is exact at the ports; in block RAM the read stages and the output queue hold beats
/// that have left the RAM, so the ports' occupancy may be up to `BLOCK_PREFETCH` higher than
/// the count behind the flag.
#[test]
fn fifo_room_output_is_exact() {
    let depth = 16u32;
    for (wi, w) in [8u32, 64].into_iter().enumerate() {
        for (ri, ram) in [FifoRam::Lut, FifoRam::Block].into_iter().enumerate() {
            let slack = if ram == FifoRam::Block {
                i64::from(BLOCK_PREFETCH)
            } else {
                0
            };
            for room in [1, 6, depth] {
                let cfg = FifoCfg::new(StreamCfg::new(w, 1), depth);
                let Some(d) = dut(&stream_fifo_room(&cfg, ram, room).unwrap()) else {
                    return;
                };
                for k in matrix(40 + wi as u64 + 7 * ri as u64 + 3 * room as u64) {
                    let mut sim = d.model.instance();
                    reset(&mut sim);
                    let (sp, mp) = (
                        StreamPorts::new(&sim, "s_axis").unwrap(),
                        StreamPorts::new(&sim, "m_axis").unwrap(),
                    );
                    let room_port = sim.port("s_axis_room").unwrap();
                    let bpb = (w / 8) as usize;
                    let frames: Vec<(Vec<u8>, u64)> = random_frames(k.seed, 30, 40 * bpb)
                        .into_iter()
                        .map(|f| (f, 0))
                        .collect();
                    let n = frames.len();
                    // Occupancy at the ports before this cycle, and before the last cycle plus
                    // its write (what the flag was computed from).
                    let (mut occ, mut basis, mut checked, mut low) = (0i64, 0i64, 0u32, 0u32);
                    let limit = i64::from(depth - room);
                    let got = run_frames(
                        &mut sim,
                        k,
                        &frames,
                        &["m_axis"],
                        |g, _| g[0].len() == n,
                        |sim| {
                            let shown = sim.get_bool(room_port);
                            let ok = if shown {
                                basis <= limit + slack
                            } else {
                                basis > limit
                            };
                            assert!(
                                ok,
                                "room {room} {ram:?} w={w} {k:?}: s_axis_room {shown} with {basis} \
                                 beats in and the last write, {occ} now"
                            );
                            if slack == 0 {
                                assert_eq!(shown, basis <= limit);
                            }
                            checked += 1;
                            low += u32::from(!shown);
                            let write = sim.get_bool(sp.tvalid) && sim.get_bool(sp.tready);
                            let read = sim.get_bool(mp.tvalid) && sim.get_bool(mp.tready);
                            basis = occ + i64::from(write);
                            occ += i64::from(write) - i64::from(read);
                        },
                    );
                    assert_eq!(
                        got[0], frames,
                        "stream_fifo room {room} {ram:?} w={w} {k:?}"
                    );
                    if k.backpressure > 0.0 {
                        assert!(
                            low > 0,
                            "room {room} {ram:?} w={w} {k:?}: never low in {checked} cycles"
                        );
                    }
                }
            }
        }
    }
    let cfg = FifoCfg::new(StreamCfg::new(8, 1), depth);
    for bad in [0, depth + 1] {
        let e = stream_fifo_room(&cfg, FifoRam::Lut, bad).unwrap_err();
        assert!(e.to_string().contains("room threshold"), "{e}");
    }
}

#[test]
fn frame_fifo_drops_bad_and_oversize_frames_and_accounts_for_all() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        for (ri, ram) in [FifoRam::Lut, FifoRam::Block].into_iter().enumerate() {
            let depth = 8u32;
            let bpb = (w / 8) as usize;
            let cap = depth as usize * bpb;
            let cfg = FifoCfg {
                stream: StreamCfg::new(w, 1),
                depth,
                frame_mode: true,
            };
            let Some(d) = dut(&stream_fifo_in(&cfg, ram).unwrap()) else {
                return;
            };
            for (ki, k) in matrix(30 + wi as u64 + 7 * ri as u64)
                .into_iter()
                .enumerate()
            {
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
                let (got, bad, big) = run_frame_fifo(&mut sim, k, &frames);
                assert_eq!(got, want.delivered, "frame FIFO {ram:?} w={w} {k:?}");
                assert_eq!(
                    (bad, big),
                    (want.dropped_bad, want.dropped_oversize),
                    "drop counters {ram:?} w={w} {k:?}"
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
}

/// Run `frames` through a frame FIFO; return the delivered frames (checked unmarked) and the
/// bad / oversize drop pulse counts.
fn run_frame_fifo(
    sim: &mut nicgen_tb::Sim,
    k: Knobs,
    frames: &[(Vec<u8>, u64)],
) -> (Vec<Vec<u8>>, usize, usize) {
    {
        {
            let (bad_p, big_p) = (
                sim.port("stat_drop_bad").unwrap(),
                sim.port("stat_drop_oversize").unwrap(),
            );
            let (bad, big) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
            let total = frames.len();
            let got = run_frames(
                sim,
                k,
                frames,
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
            (got, bad.get(), big.get())
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
    let e =
        stream_fifo_in(&FifoCfg::new(StreamCfg::new(64, 1), 32768), FifoRam::Block).unwrap_err();
    assert!(e.to_string().contains("from 2 to 16384"), "{e}");
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

/// Jumbo frames (up to 9000 bytes, plus frames of exactly the capacity and just over it)
/// through a 2048 x 64-bit block-RAM FIFO (16 KiB: under two jumbo frames, one RAM bank) and an
/// 8192 x 64-bit one (four banks of `BRAM_BANK_DEPTH`, so the words cross every bank boundary
/// and wrap), plain and frame mode, idle x backpressure.
#[test]
fn block_fifo_carries_jumbo_frames() {
    assert_eq!(
        BRAM_BANK_DEPTH, 2048,
        "the depths below assume 2048-deep banks"
    );
    for (depth, frame_mode) in [(2048u32, false), (2048, true), (8192, false), (8192, true)] {
        let cap = depth as usize * 8;
        let cfg = FifoCfg::new(StreamCfg::new(64, 1), depth);
        let cfg = if frame_mode { cfg.frames() } else { cfg };
        let Some(d) = dut(&stream_fifo_in(&cfg, FifoRam::Block).unwrap()) else {
            return;
        };
        for k in matrix(40 + frame_mode as u64 + u64::from(depth / 1024)) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(k.seed);
            let lens = [
                9000,
                64,
                9000,
                cap,
                cap + 1,
                1500,
                9000,
                60,
                cap + 100,
                9000,
                7,
            ];
            let frames: Vec<(Vec<u8>, u64)> = lens
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let f: Vec<u8> = (0..n).map(|_| rand::Rng::gen(&mut rng)).collect();
                    (f, (frame_mode && i == 6) as u64)
                })
                .collect();
            if frame_mode {
                let marked: Vec<MarkedFrame> = frames
                    .iter()
                    .map(|(b, u)| MarkedFrame {
                        bytes: b.clone(),
                        bad: *u == 1,
                    })
                    .collect();
                let want = fifo_frames(&marked, cap);
                let (got, bad, big) = run_frame_fifo(&mut sim, k, &frames);
                assert!(
                    got == want.delivered,
                    "jumbo frame FIFO, depth {depth} {k:?}: delivered frames differ"
                );
                assert_eq!(
                    (bad, big),
                    (want.dropped_bad, want.dropped_oversize),
                    "{k:?}"
                );
                assert_eq!((bad, big), (1, 2));
            } else {
                let n = frames.len();
                let got = run_frames(
                    &mut sim,
                    k,
                    &frames,
                    &["m_axis"],
                    |g, _| g[0].len() == n,
                    |_| {},
                );
                assert!(
                    got[0] == frames,
                    "jumbo plain block FIFO, depth {depth} {k:?}: frames differ"
                );
            }
        }
    }
}

/// Drive `frames` back to back (no idle) into `s_axis` with `m_axis_tready` low for the first
/// `hold` cycles and high after; return the output frames and the input and output transfer
/// cycles.
fn back_to_back(
    sim: &mut nicgen_tb::Sim,
    frames: &[Vec<u8>],
    hold: u64,
) -> (Vec<Vec<u8>>, Vec<u64>, Vec<u64>) {
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mp = StreamPorts::new(sim, "m_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), 1, 0.0);
    for f in frames {
        drv.push(f.clone());
    }
    let mut sink = StreamSink::new(mp.clone(), 2, 0.0);
    let mut mi = StreamMonitor::new(sp.clone(), 1);
    let mut mo = StreamMonitor::new(mp.clone(), 1);
    let mut ti = Transfers::new(sp);
    let mut to = Transfers::new(mp.clone());
    let start = sim.cycles();
    run_until_seeded(sim, 1, 500, |sim| {
        let progressed = if sim.cycles() - start < hold {
            sim.set_bool(mp.tready, false);
            step(sim, &mut [&mut drv, &mut mi, &mut mo, &mut ti, &mut to])?;
            true
        } else {
            step(
                sim,
                &mut [&mut drv, &mut sink, &mut mi, &mut mo, &mut ti, &mut to],
            )?
        };
        Ok(Status::new(progressed, sink.frames().len() == frames.len()))
    })
    .unwrap();
    (sink.take_frames(), ti.cycles, to.cycles)
}

#[test]
fn block_fifo_has_no_bubbles() {
    for w in WIDTHS {
        let bpb = (w / 8) as usize;
        let frames = random_frames(77, 40, 12 * bpb);
        let beats: usize = frames.iter().map(|f| f.len().div_ceil(bpb)).sum();
        // Plain: the input never stalls and the output runs back to back, a constant 7 cycles
        // after the input (the registered pointer difference costs one of them, the output
        // queue behind the RAM's read stages two).
        let cfg = FifoCfg::new(StreamCfg::new(w, 1), 64);
        let Some(d) = dut(&stream_fifo_in(&cfg, FifoRam::Block).unwrap()) else {
            return;
        };
        let mut sim = d.model.instance();
        reset(&mut sim);
        let (got, ti, to) = back_to_back(&mut sim, &frames, 0);
        assert_eq!(got, frames);
        assert_eq!((ti.len(), to.len()), (beats, beats));
        assert!(contiguous(&ti) && contiguous(&to), "w={w}: bubbles");
        assert_eq!(to[0] - ti[0], 7, "w={w}: latency");
        // Frame mode, output held until the FIFO is full: then it drains 1 beat/cycle.
        let cfg = FifoCfg::new(StreamCfg::new(w, 1), 512).frames();
        let Some(d) = dut(&stream_fifo_in(&cfg, FifoRam::Block).unwrap()) else {
            return;
        };
        let mut sim = d.model.instance();
        reset(&mut sim);
        let (got, _, to) = back_to_back(&mut sim, &frames, beats as u64 + 10);
        assert_eq!(got, frames);
        assert!(contiguous(&to), "w={w}: frame-mode drain has bubbles");
    }
}
