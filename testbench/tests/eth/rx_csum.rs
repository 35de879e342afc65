//! Differential test of `rx_csum` against `nicgen_model::checksum`: random IPv4/IPv6 frames
//! (options, extension headers, VLAN tags, Ethernet padding, TCP/UDP, good/bad/zero UDP
//! checksums) over width (8, 64, 512) x idle x backpressure. The request fields are taken from
//! how each frame was built, so this test does not depend on the parser.

use nicgen_edsl::Shape;
use nicgen_hdl::eth::rx_csum::{rx_csum, RxCsumCfg, RxCsumRes};
use nicgen_tb::record::{RecordDriver, RecordSink};
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamMonitor, StreamPorts,
};
use nicgen_tests::csum_frames::{build, Built};
use nicgen_tests::*;
use rand::{rngs::StdRng, SeedableRng};

#[test]
fn rx_checksums_match_the_model() {
    for (wi, w) in [8u32, 64, 512].into_iter().enumerate() {
        let Some(d) = dut(&rx_csum(&RxCsumCfg {
            data_bits: w,
            levels_per_stage: 2,
        })
        .unwrap()) else {
            return;
        };
        for k in matrix(60 + wi as u64) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let mut rng = StdRng::seed_from_u64(k.seed);
            let frames: Vec<Built> = (0..40).map(|_| build(&mut rng)).collect();
            let sp = StreamPorts::new(&sim, "s_axis").unwrap();
            let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
            let mut mon = StreamMonitor::new(sp, k.seed);
            let mut req = RecordDriver::new(&sim, "s_axis_req", k.seed + 1, k.idle).unwrap();
            let mut res = RecordSink::new(&sim, "m_axis_res", k.seed + 2, k.backpressure).unwrap();
            for b in &frames {
                drv.push(b.frame.clone());
                req.push(b.rx_req());
            }
            let n = frames.len();
            run_until_seeded(&mut sim, k.seed, 2000, |sim| {
                let mut agents: Vec<&mut dyn Agent> = vec![&mut drv, &mut mon, &mut req, &mut res];
                let p = step(sim, &mut agents)?;
                Ok(Status::new(p, res.items.len() == n))
            })
            .unwrap();
            for (i, (b, got)) in frames.iter().zip(&res.items).enumerate() {
                let r = RxCsumRes::shape().decode(got);
                let g = (r.l3_ok == 1, r.l4_ok == 1, u16::try_from(r.csum).unwrap());
                let l3_is_v4 = b.offsets.ipv4 == Some(true);
                let (gl3, wl3) = if l3_is_v4 {
                    (g.0, b.want.0)
                } else {
                    (false, false)
                };
                assert_eq!(
                    (gl3, g.1, g.2),
                    (wl3, b.want.1, b.want.2),
                    "w={w} {k:?} frame {i} ({} bytes)",
                    b.frame.len()
                );
            }
        }
    }
}

#[test]
fn back_to_back_frames_have_no_bubbles() {
    let Some(d) = dut(&rx_csum(&RxCsumCfg {
        data_bits: 64,
        levels_per_stage: 2,
    })
    .unwrap()) else {
        return;
    };
    let mut sim = d.model.instance();
    reset(&mut sim);
    let mut rng = StdRng::seed_from_u64(5);
    let frames: Vec<Built> = (0..50).map(|_| build(&mut rng)).collect();
    let ideal: u64 = frames
        .iter()
        .map(|b| b.frame.len().div_ceil(8) as u64)
        .sum();
    let sp = StreamPorts::new(&sim, "s_axis").unwrap();
    let mut drv = StreamDriver::new(sp, 1, 0.0);
    let mut req = RecordDriver::new(&sim, "s_axis_req", 2, 0.0).unwrap();
    let mut res = RecordSink::new(&sim, "m_axis_res", 3, 0.0).unwrap();
    for b in &frames {
        drv.push(b.frame.clone());
        req.push(b.rx_req());
    }
    let start = sim.cycles();
    let mut beats = 0u64;
    run_until_seeded(&mut sim, 5, 200, |sim| {
        let p = step(sim, &mut [&mut drv, &mut req, &mut res])?;
        if !drv.is_idle() {
            beats = sim.cycles() - start;
        }
        Ok(Status::new(p, res.items.len() == frames.len()))
    })
    .unwrap();
    // One cycle to load the first request into the request queue (it is taken with its
    // frame's first beat), then one beat per cycle with no gap between frames.
    assert_eq!(
        beats + 1,
        ideal + 1,
        "{} frames of {ideal} beats took {} cycles to enter",
        frames.len(),
        beats + 1
    );
}
