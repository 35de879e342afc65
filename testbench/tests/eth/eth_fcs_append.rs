//! Differential tests of `eth_fcs_append` (pad to 60, append the FCS) against
//! `nicgen_model::mac::fcs_append`, over bus width (8, 64, 512 bits) x idle x backpressure and
//! at 16, 48 and 128 bits with other pipelining, monitors on every stream, `verilator -Wall`
//! clean; its output through `eth_fcs_check` round-trips; plus a zero-bubble run: back-to-back
//! frames take exactly their ideal number of beats. One run at 64 bits is replayed on Icarus
//! and must agree with Verilator cycle by cycle.

use nicgen_hdl::eth::eth_fcs_append::{
    eth_fcs_append, eth_fcs_append_pipelined, latency, FcsAppendCfg, UNADVANCE_PER_STAGE,
};
use nicgen_hdl::eth::eth_fcs_check::{eth_fcs_check, FcsCheckCfg};
use nicgen_model::crc32::{check_fcs, crc32, RESIDUE};
use nicgen_model::mac::{fcs_append, fcs_check};
use nicgen_tests::mac::{back_to_back_frames, body, run_back_to_back, tuser_of, MTU};
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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
                mtu: MTU,
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
            let want = fcs_check(&fcs_append(f), MTU as usize);
            assert!(!want.fcs_bad && !want.runt);
            assert_eq!((g, *u), (&padded, tuser_of(&want)), "w={w}: frame {i}");
        }
    }
}

#[test]
fn back_to_back_frames_take_their_ideal_beats() {
    for w in WIDTHS {
        let bpb = (w / 8) as usize;
        let frames = back_to_back_frames();
        // Every frame leaves in exactly ceil((len + 4) / W) consecutive cycles, and the next
        // frame follows in the very next cycle.
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
    }
}

#[test]
fn other_widths_and_pipelining() {
    // Widths with their own corner cases: 16 bits (FCS in up to three beats), 48 bits (6 bytes:
    // neither a power of two nor a multiple of 4), 128 bits with one un-advance matrix per
    // stage. One knob setting each, the same checks.
    let k = Knobs {
        seed: 808,
        idle: 0.3,
        backpressure: 0.3,
    };
    for (w, per_stage) in [(16u32, 2u32), (48, 2), (128, 1)] {
        let Some(a) =
            dut(&eth_fcs_append_pipelined(&FcsAppendCfg { data_bits: w }, per_stage).unwrap())
        else {
            return;
        };
        lint_clean(&a.gen);
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
    }
}

#[test]
fn impossible_parameters_are_rejected() {
    let e = eth_fcs_append(&FcsAppendCfg { data_bits: 20 }).unwrap_err();
    assert!(e.mentions("20"), "{e}");
}
