//! Differential test of the Internet-checksum stage against `nicgen_model::checksum::stream_csum`
//! over bus width (8, 64, 512 bits) x idle x backpressure x pipeline depth; one run per width is
//! replayed on Icarus and must agree with Verilator cycle by cycle.

use nicgen_hdl::csum::{inet_csum, CsumCfg};
use nicgen_model::checksum::stream_csum;
use nicgen_tests::*;

#[test]
fn checksum_stage_matches_the_model() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        for lps in [1u32, 2] {
            let Some(d) = dut(&inet_csum(&CsumCfg {
                data_bits: w,
                levels_per_stage: lps,
            })
            .unwrap()) else {
                return;
            };
            for (ki, k) in matrix(40 + wi as u64 * 2 + lps as u64)
                .into_iter()
                .enumerate()
            {
                let mut sim = recording_sim(&d);
                let bpb = (w / 8) as usize;
                let mut frames: Vec<Vec<u8>> = random_frames(k.seed, 40, 5 * bpb + 3);
                // Edge cases: all ones (sum 0xFFFF), all zeros, carries on every word.
                frames.push(vec![0xFF; 2 * bpb + 1]);
                frames.push(vec![0x00; bpb]);
                frames.push(vec![0xFF, 0xFF, 0x00, 0x01]);
                let want: Vec<Vec<u8>> = frames
                    .iter()
                    .map(|f| stream_csum(f).to_le_bytes().to_vec())
                    .collect();
                let input: Vec<(Vec<u8>, u64)> = frames.iter().map(|f| (f.clone(), 0)).collect();
                let n = frames.len();
                let got = run_frames(
                    &mut sim,
                    k,
                    &input,
                    &["m_axis_csum"],
                    |g, _| g[0].len() == n,
                    |_| {},
                );
                let got: Vec<Vec<u8>> = got[0].iter().map(|f| f.0.clone()).collect();
                for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        g,
                        e,
                        "w={w} lps={lps} {k:?}: frame {i} ({} bytes)",
                        frames[i].len()
                    );
                }
                if ki == 3 && lps == 1 {
                    icarus_agrees(&d, &sim.take_recording());
                }
            }
        }
    }
}

#[test]
fn one_beat_frames_back_to_back_take_one_cycle_each() {
    // Zero bubbles: with no idle and no backpressure, N one-beat frames take N cycles plus the
    // pipeline latency.
    for w in [64u32, 512] {
        let Some(d) = dut(&inet_csum(&CsumCfg {
            data_bits: w,
            levels_per_stage: 1,
        })
        .unwrap()) else {
            return;
        };
        let mut sim = d.model.instance();
        reset(&mut sim);
        let n = 100;
        let frames: Vec<(Vec<u8>, u64)> = (0..n)
            .map(|i| (vec![i as u8; (w / 8) as usize], 0))
            .collect();
        let k = Knobs {
            seed: 7,
            idle: 0.0,
            backpressure: 0.0,
        };
        let start = sim.cycles();
        let got = run_frames(
            &mut sim,
            k,
            &frames,
            &["m_axis_csum"],
            |g, _| g[0].len() == n,
            |_| {},
        );
        assert_eq!(got[0].len(), n);
        let latency = (sim.cycles() - start) as usize - n;
        assert!(
            latency <= 10,
            "w={w}: {n} one-beat frames took {} cycles",
            sim.cycles() - start
        );
    }
}
