//! Differential tests of the MAC framing blocks against `nicgen_model::mac`:
//! `eth_fcs_check` (FCS check and strip, runt/oversize/MAC-control flags on `tuser`) and
//! `eth_fcs_append` (pad to 60, append the FCS), over bus width (8, 64, 512 bits) x idle x
//! backpressure, monitors on every stream, `verilator -Wall` clean; plus zero-bubble runs:
//! back-to-back frames take exactly their ideal number of beats. One run per block at 64 bits is
//! replayed on Icarus and must agree with Verilator cycle by cycle.

mod blocks;
use blocks::*;
use nicgen_hdl::eth::eth_fcs_append::{
    eth_fcs_append, eth_fcs_append_pipelined, latency, FcsAppendCfg, UNADVANCE_PER_STAGE,
};
use nicgen_hdl::eth::eth_fcs_check::{eth_fcs_check, FcsCheckCfg};
use nicgen_hdl::eth::rx_user;
use nicgen_model::crc32::{append_fcs, check_fcs, crc32, RESIDUE};
use nicgen_model::mac::{fcs_append, fcs_check, RxVerdict};
use nicgen_tb::stream::{
    run_until_seeded, step, ReceivedFrame, Status, StreamDriver, StreamMonitor, StreamPorts,
    StreamSink,
};
use nicgen_tb::Sim;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const WIDTHS: [u32; 3] = [8, 64, 512];
/// `max_frame` of the check under test: a 1500-byte MTU, untagged (1514 bytes without FCS).
const MAX_FRAME: u32 = 1514;

fn tuser_of(v: &RxVerdict) -> u64 {
    let bit = |on: bool, b: u32| (on as u64) << b;
    bit(v.bad(), rx_user::BAD)
        | bit(v.fcs_bad, rx_user::FCS_BAD)
        | bit(v.runt, rx_user::RUNT)
        | bit(v.oversize, rx_user::OVERSIZE)
        | bit(v.mac_control, rx_user::MAC_CONTROL)
}

fn body(rng: &mut StdRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen()).collect()
}

/// Frames as they come off the wire: random bodies 1..=200 bytes with their FCS, one in five
/// corrupted (one bit anywhere, FCS included); raw scraps of 1..=8 bytes; MAC control frames
/// (untagged, behind a C-tag or an S-tag, and 0x8808 where it is really FCS); the 60/64/65 and
/// 1514/1515 boundaries.
fn wire_frames(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    fn with_fcs(mut b: Vec<u8>, rng: &mut StdRng) -> Vec<u8> {
        append_fcs(&mut b);
        if rng.gen_ratio(1, 5) {
            let bit = rng.gen_range(0..8 * b.len());
            b[bit / 8] ^= 1 << (bit % 8);
        }
        b
    }
    let mut v = Vec::new();
    for len in [56, 59, 60, 61, 1514, 1515] {
        let b = body(&mut rng, len);
        v.push(with_fcs(b, &mut rng));
    }
    for tag in [None, Some(0x8100u16), Some(0x88A8), Some(0x9100)] {
        let mut b = body(&mut rng, 60);
        match tag {
            None => b[12..14].copy_from_slice(&[0x88, 0x08]),
            Some(t) => {
                b[12..14].copy_from_slice(&t.to_be_bytes());
                b[16..18].copy_from_slice(&[0x88, 0x08]);
            }
        }
        v.push(with_fcs(b, &mut rng));
    }
    // 0x8808 in bytes 12-13 of an 18-byte frame (inside) and of a 16-byte one (in the FCS).
    for len in [18usize, 16] {
        let mut f = body(&mut rng, len);
        f[12..14].copy_from_slice(&[0x88, 0x08]);
        v.push(f);
    }
    v.push(vec![0; 4]); // the empty frame with its (correct) FCS
    while v.len() < n {
        let f = if rng.gen_ratio(1, 6) {
            let len = rng.gen_range(1..=8);
            body(&mut rng, len)
        } else {
            let len = rng.gen_range(1..=200);
            let mut b = body(&mut rng, len);
            if len >= 14 && rng.gen_ratio(1, 8) {
                b[12..14].copy_from_slice(&[0x88, 0x08]);
            }
            with_fcs(b, &mut rng)
        };
        v.push(f);
    }
    // Shuffle so that every kind meets every neighbour.
    for i in (1..v.len()).rev() {
        let j = rng.gen_range(0..=i);
        v.swap(i, j);
    }
    v
}

#[test]
fn fcs_check_matches_the_model() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let Some(d) = dut(&eth_fcs_check(&FcsCheckCfg {
            data_bits: w,
            max_frame: MAX_FRAME,
        })
        .unwrap()) else {
            return;
        };
        lint_clean(&d.gen);
        for (ki, k) in matrix(600 + wi as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            let frames = wire_frames(k.seed, 60);
            let want: Vec<RxVerdict> = frames
                .iter()
                .map(|f| fcs_check(f, MAX_FRAME as usize))
                .collect();
            let input: Vec<(Vec<u8>, u64)> = frames.iter().map(|f| (f.clone(), 0)).collect();
            let n = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &input,
                &["m_axis"],
                |g, _| g[0].len() == n,
                |_| {},
            );
            assert_eq!(got[0].len(), n, "w={w} {k:?}: one frame out per frame in");
            let mut flagged = [0usize; 5];
            for (i, ((g, u), e)) in got[0].iter().zip(&want).enumerate() {
                let ctx = format!(
                    "w={w} {k:?}: frame {i} ({} bytes in, starts {:02x?})",
                    frames[i].len(),
                    &frames[i][..frames[i].len().min(18)]
                );
                assert_eq!(g, &e.frame, "{ctx}: bytes");
                assert_eq!(
                    *u,
                    tuser_of(e),
                    "{ctx}: tuser (want fcs_bad {} runt {} oversize {} mac_control {})",
                    e.fcs_bad,
                    e.runt,
                    e.oversize,
                    e.mac_control
                );
                for (b, c) in flagged.iter_mut().enumerate() {
                    *c += (*u >> b & 1) as usize;
                }
            }
            // Every flag was exercised, and good frames too.
            assert!(
                flagged.iter().skip(1).all(|&c| c > 0),
                "flags seen: {flagged:?}"
            );
            assert!(flagged[0] < n, "no good frame in the run");
            if w == 64 && ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

/// Frames without FCS for the TX side: random 1..=200 bytes (a quarter of them 1..=4), plus the
/// padding boundaries and a full-size frame.
fn tx_frames(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xF0F0);
    let mut v = random_frames(seed, n, 200);
    for len in [1, 55, 56, 57, 59, 60, 61, 63, 64, 65, 1514] {
        v.push(body(&mut rng, len));
    }
    for i in (1..v.len()).rev() {
        let j = rng.gen_range(0..=i);
        v.swap(i, j);
    }
    v
}

#[test]
fn fcs_append_matches_the_model() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let Some(d) = dut(&eth_fcs_append(&FcsAppendCfg { data_bits: w }).unwrap()) else {
            return;
        };
        lint_clean(&d.gen);
        for (ki, k) in matrix(700 + wi as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            let frames = tx_frames(k.seed, 50);
            let input: Vec<(Vec<u8>, u64)> = frames.iter().map(|f| (f.clone(), 0)).collect();
            let n = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &input,
                &["m_axis"],
                |g, _| g[0].len() == n,
                |_| {},
            );
            assert_eq!(got[0].len(), n, "w={w} {k:?}: one frame out per frame in");
            for (i, ((g, _), f)) in got[0].iter().zip(&frames).enumerate() {
                let ctx = format!("w={w} {k:?}: frame {i} ({} bytes in)", f.len());
                assert_eq!(g, &fcs_append(f), "{ctx}");
                // Independent of the model's padding code: layout, zeros and the residue.
                let padded = f.len().max(60);
                assert_eq!(g.len(), padded + 4, "{ctx}: length");
                assert_eq!(&g[..f.len()], &f[..], "{ctx}: payload");
                assert!(g[f.len()..padded].iter().all(|&b| b == 0), "{ctx}: padding");
                assert!(check_fcs(g), "{ctx}: FCS");
                assert_eq!(crc32(g), RESIDUE, "{ctx}: residue");
            }
            if w == 64 && ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn fcs_append_then_check_round_trips() {
    // The two blocks agree with each other at every width (the check sees only good frames).
    for w in WIDTHS {
        let (Some(a), Some(c)) = (
            dut(&eth_fcs_append(&FcsAppendCfg { data_bits: w }).unwrap()),
            dut(&eth_fcs_check(&FcsCheckCfg {
                data_bits: w,
                max_frame: MAX_FRAME,
            })
            .unwrap()),
        ) else {
            return;
        };
        let frames = tx_frames(90 + w as u64, 30);
        let k = Knobs {
            seed: 91,
            idle: 0.2,
            backpressure: 0.2,
        };
        let mut sa = a.model.instance();
        reset(&mut sa);
        let input: Vec<(Vec<u8>, u64)> = frames.iter().map(|f| (f.clone(), 0)).collect();
        let n = input.len();
        let tx = run_frames(
            &mut sa,
            k,
            &input,
            &["m_axis"],
            |g, _| g[0].len() == n,
            |_| {},
        );
        let mut sc = c.model.instance();
        reset(&mut sc);
        let rx = run_frames(
            &mut sc,
            k,
            &tx[0],
            &["m_axis"],
            |g, _| g[0].len() == n,
            |_| {},
        );
        for (i, ((g, u), f)) in rx[0].iter().zip(&frames).enumerate() {
            let mut padded = f.clone();
            padded.resize(f.len().max(60), 0);
            let want = fcs_check(&fcs_append(f), MAX_FRAME as usize);
            assert!(!want.fcs_bad && !want.runt);
            assert_eq!((g, *u), (&padded, tuser_of(&want)), "w={w}: frame {i}");
        }
    }
}

/// Run `frames` with no idle and no backpressure; the sink's frames with their cycles, and the
/// cycle of the first input beat.
fn run_back_to_back(sim: &mut Sim, frames: &[Vec<u8>]) -> (Vec<ReceivedFrame>, u64) {
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mp = StreamPorts::new(sim, "m_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), 1, 0.0);
    let mut sink = StreamSink::new(mp.clone(), 2, 0.0);
    let mut mon_in = StreamMonitor::new(sp, 1);
    let mut mon_out = StreamMonitor::new(mp, 1);
    for f in frames {
        drv.push(f.clone());
    }
    let start = sim.cycles();
    run_until_seeded(sim, 1, 200, |sim| {
        let p = step(sim, &mut [&mut drv, &mut sink, &mut mon_in, &mut mon_out])?;
        Ok(Status::new(p, sink.frames().len() == frames.len()))
    })
    .unwrap();
    (sink.frames().to_vec(), start)
}

#[test]
fn back_to_back_frames_take_their_ideal_beats() {
    for w in [8u32, 64, 512] {
        let bpb = (w / 8) as usize;
        let mut rng = StdRng::seed_from_u64(5);
        let frames: Vec<Vec<u8>> = (0..40)
            .map(|_| {
                let len = rng.gen_range(64..=128);
                body(&mut rng, len)
            })
            .chain([vec![7u8; 1], vec![8; 60], vec![9; 61]])
            // A run of minimum-size frames: one beat each at 512 bits.
            .chain((0..8).map(|i| vec![i; 60]))
            .collect();

        // Append: every frame leaves in exactly ceil((len + 4) / W) consecutive cycles, and the
        // next frame follows in the very next cycle.
        let Some(a) = dut(&eth_fcs_append(&FcsAppendCfg { data_bits: w }).unwrap()) else {
            return;
        };
        let mut sim = a.model.instance();
        reset(&mut sim);
        let (got, start) = run_back_to_back(&mut sim, &frames);
        let mut ideal_total = 0;
        for (i, (g, f)) in got.iter().zip(&frames).enumerate() {
            let ideal = (f.len().max(60) + 4).div_ceil(bpb) as u64;
            ideal_total += ideal;
            assert_eq!(g.data, fcs_append(f), "w={w}: frame {i}");
            assert_eq!(
                g.last_cycle - g.first_cycle + 1,
                ideal,
                "w={w}: frame {i} beats"
            );
            if i > 0 {
                assert_eq!(
                    g.first_cycle,
                    got[i - 1].last_cycle + 1,
                    "w={w}: gap before frame {i}"
                );
            }
        }
        let lat = latency(&FcsAppendCfg { data_bits: w }, UNADVANCE_PER_STAGE) as u64;
        let total = got.last().unwrap().last_cycle + 1 - start;
        assert_eq!(total, ideal_total + lat, "w={w}: append total cycles");

        // Check: the input is never stalled, so the run takes the input beats plus the latency.
        let Some(c) = dut(&eth_fcs_check(&FcsCheckCfg {
            data_bits: w,
            max_frame: MAX_FRAME,
        })
        .unwrap()) else {
            return;
        };
        let wire: Vec<Vec<u8>> = frames.iter().map(|f| fcs_append(f)).collect();
        let mut sim = c.model.instance();
        reset(&mut sim);
        let (got, start) = run_back_to_back(&mut sim, &wire);
        let in_beats: u64 = wire.iter().map(|f| f.len().div_ceil(bpb) as u64).sum();
        for (i, (g, f)) in got.iter().zip(&wire).enumerate() {
            assert_eq!(g.data, f[..f.len() - 4], "w={w}: frame {i}");
            assert_eq!(g.user, 0, "w={w}: frame {i} flagged");
        }
        let total = got.last().unwrap().last_cycle + 1 - start;
        assert_eq!(total, in_beats + 3, "w={w}: check total cycles");
    }
}

#[test]
fn other_widths_and_pipelining() {
    // Widths with their own corner cases: 16 bits (a two-beat hold line, FCS in up to three
    // beats), 48 bits (6 bytes: neither a power of two nor a multiple of 4), 128 bits with one
    // un-advance matrix per stage. One knob setting each, both blocks, the same checks.
    let k = Knobs {
        seed: 808,
        idle: 0.3,
        backpressure: 0.3,
    };
    for (w, per_stage) in [(16u32, 2u32), (48, 2), (128, 1)] {
        let (Some(a), Some(c)) = (
            dut(&eth_fcs_append_pipelined(&FcsAppendCfg { data_bits: w }, per_stage).unwrap()),
            dut(&eth_fcs_check(&FcsCheckCfg {
                data_bits: w,
                max_frame: MAX_FRAME,
            })
            .unwrap()),
        ) else {
            return;
        };
        lint_clean(&a.gen);
        lint_clean(&c.gen);
        let frames = tx_frames(k.seed + w as u64, 40);
        let mut sim = a.model.instance();
        reset(&mut sim);
        let input: Vec<(Vec<u8>, u64)> = frames.iter().map(|f| (f.clone(), 0)).collect();
        let n = input.len();
        let got = run_frames(
            &mut sim,
            k,
            &input,
            &["m_axis"],
            |g, _| g[0].len() == n,
            |_| {},
        );
        for (i, ((g, _), f)) in got[0].iter().zip(&frames).enumerate() {
            assert_eq!(
                g,
                &fcs_append(f),
                "append w={w}: frame {i} ({} bytes)",
                f.len()
            );
        }
        let wire = wire_frames(k.seed + w as u64, 50);
        let mut sim = c.model.instance();
        reset(&mut sim);
        let input: Vec<(Vec<u8>, u64)> = wire.iter().map(|f| (f.clone(), 0)).collect();
        let n = input.len();
        let got = run_frames(
            &mut sim,
            k,
            &input,
            &["m_axis"],
            |g, _| g[0].len() == n,
            |_| {},
        );
        for (i, ((g, u), f)) in got[0].iter().zip(&wire).enumerate() {
            let e = fcs_check(f, MAX_FRAME as usize);
            assert_eq!(
                (g, *u),
                (&e.frame, tuser_of(&e)),
                "check w={w}: frame {i} ({} bytes)",
                f.len()
            );
        }
    }
}

#[test]
fn crc_update_matches_the_model() {
    // The one-cycle update of `crc32::crc_update` over 8 bytes, chained through its own output:
    // after bytes b1 and b2 from the initial register, the FCS is !register.
    use nicgen_edsl::prelude::*;
    use nicgen_hdl::eth::crc32::{crc_update, INIT, XOROUT};
    let def = Module::build("crc_update_k8", || {
        let state = input("state", 32);
        let bytes = input("bytes", 64);
        output("next", crc_update(state, bytes));
    })
    .unwrap();
    let Some(d) = dut(&def) else { return };
    lint_clean(&d.gen);
    let mut sim = d.model.instance();
    let (ps, pb, pn) = (
        sim.port("state").unwrap(),
        sim.port("bytes").unwrap(),
        sim.port("next").unwrap(),
    );
    let mut rng = StdRng::seed_from_u64(17);
    for _ in 0..200 {
        let b1: Vec<u8> = body(&mut rng, 8);
        let b2: Vec<u8> = body(&mut rng, 8);
        sim.set(ps, INIT as u64);
        sim.set_bytes_le(pb, &b1);
        sim.eval();
        let r1 = sim.get_u64(pn);
        assert_eq!(r1 as u32 ^ XOROUT, crc32(&b1), "one step over {b1:02x?}");
        sim.set(ps, r1);
        sim.set_bytes_le(pb, &b2);
        sim.eval();
        let both = [b1, b2].concat();
        assert_eq!(
            sim.get_u64(pn) as u32 ^ XOROUT,
            crc32(&both),
            "two steps over {both:02x?}"
        );
    }
}

#[test]
fn impossible_parameters_are_rejected() {
    let e = eth_fcs_check(&FcsCheckCfg {
        data_bits: 64,
        max_frame: 59,
    })
    .unwrap_err();
    assert!(e.mentions("max_frame 59"), "{e}");
    let e = eth_fcs_append(&FcsAppendCfg { data_bits: 20 }).unwrap_err();
    assert!(e.mentions("20"), "{e}");
}
