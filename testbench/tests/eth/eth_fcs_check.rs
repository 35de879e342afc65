//! Differential tests of `eth_fcs_check` (FCS check and strip, runt/oversize/MAC-control flags
//! on `tuser`) against `nicgen_model::mac::fcs_check`, over bus width (8, 64, 512 bits) x idle x
//! backpressure and at 16, 48 and 128 bits, monitors on every stream, `verilator -Wall` clean;
//! plus a zero-bubble run: back-to-back frames never stall the input. One run at 64 bits is
//! replayed on Icarus and must agree with Verilator cycle by cycle. The size limit counts the
//! frame's own VLAN tags: every run has untagged, one-tag and two-tag frames at exactly their
//! limit (14 + 4 × tags + MTU bytes without FCS) and one byte over.

use nicgen_hdl::eth::eth_fcs_check::{eth_fcs_check, FcsCheckCfg};
use nicgen_model::crc32::append_fcs;
use nicgen_model::mac::{fcs_append, fcs_check, RxVerdict};
use nicgen_tests::mac::{back_to_back_frames, body, run_back_to_back, tuser_of, MTU};
use nicgen_tests::path_frames::size_limit_frames;
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Frames as they come off the wire: random bodies 1..=200 bytes with their FCS, one in five
/// corrupted (one bit anywhere, FCS included); raw scraps of 1..=8 bytes; MAC control frames
/// (untagged, behind a C-tag or an S-tag, and 0x8808 where it is really FCS); the 60/64/65
/// boundaries; the size limits with 0, 1 and 2 tags, and one byte over
/// ([`size_limit_frames`]).
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
    for len in [56, 59, 60, 61] {
        let b = body(&mut rng, len);
        v.push(with_fcs(b, &mut rng));
    }
    // The size limits: the model must agree with what each frame was built as.
    for (f, over) in size_limit_frames(MTU as usize) {
        assert_eq!(
            fcs_check(&f, MTU as usize).oversize,
            over,
            "{} bytes",
            f.len()
        );
        v.push(f);
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
            mtu: MTU,
        })
        .unwrap()) else {
            return;
        };
        lint_clean(&d.gen);
        for (ki, k) in matrix(600 + wi as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            let frames = wire_frames(k.seed, 60);
            let want: Vec<RxVerdict> = frames.iter().map(|f| fcs_check(f, MTU as usize)).collect();
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

#[test]
fn back_to_back_frames_take_their_ideal_beats() {
    for w in WIDTHS {
        let bpb = (w / 8) as usize;
        let frames = back_to_back_frames();
        // The input is never stalled, so the run takes the input beats plus the latency.
        let Some(c) = dut(&eth_fcs_check(&FcsCheckCfg {
            data_bits: w,
            mtu: MTU,
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
    // beats), 48 bits (6 bytes: neither a power of two nor a multiple of 4), 128 bits. One knob
    // setting each, the same checks.
    let k = Knobs {
        seed: 808,
        idle: 0.3,
        backpressure: 0.3,
    };
    for w in [16u32, 48, 128] {
        let Some(c) = dut(&eth_fcs_check(&FcsCheckCfg {
            data_bits: w,
            mtu: MTU,
        })
        .unwrap()) else {
            return;
        };
        lint_clean(&c.gen);
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
            let e = fcs_check(f, MTU as usize);
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
fn impossible_parameters_are_rejected() {
    let e = eth_fcs_check(&FcsCheckCfg {
        data_bits: 64,
        mtu: 45,
    })
    .unwrap_err();
    assert!(e.mentions("mtu 45"), "{e}");
}
