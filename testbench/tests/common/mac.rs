//! What the MAC framing blocks' tests (`eth_fcs_check`, `eth_fcs_append`, `crc32`) share: the
//! check's frame-size limit, the `tuser` a verdict sets, random bodies, and back-to-back runs
//! that record every frame's cycles.

use nicgen_hdl::eth::rx_user;
use nicgen_model::mac::RxVerdict;
use nicgen_tb::stream::{
    run_until_seeded, step, ReceivedFrame, Status, StreamDriver, StreamMonitor, StreamPorts,
    StreamSink,
};
use nicgen_tb::Sim;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// MTU of the check under test: 1500 bytes, so frames of 1514 bytes without FCS untagged, 1518
/// with one VLAN tag and 1522 with two.
pub const MTU: u32 = 1500;

/// The `tuser` bits `eth_fcs_check` sets for a verdict.
pub fn tuser_of(v: &RxVerdict) -> u64 {
    let bit = |on: bool, b: u32| (on as u64) << b;
    bit(v.bad(), rx_user::BAD)
        | bit(v.fcs_bad, rx_user::FCS_BAD)
        | bit(v.runt, rx_user::RUNT)
        | bit(v.oversize, rx_user::OVERSIZE)
        | bit(v.mac_control, rx_user::MAC_CONTROL)
}

/// `len` random bytes.
pub fn body(rng: &mut StdRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen()).collect()
}

/// The frames of the back-to-back runs (without FCS): 40 of 64..=128 bytes, the padding
/// boundaries, then a run of minimum-size frames (one beat each at 512 bits).
pub fn back_to_back_frames() -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(5);
    (0..40)
        .map(|_| {
            let len = rng.gen_range(64..=128);
            body(&mut rng, len)
        })
        .chain([vec![7u8; 1], vec![8; 60], vec![9; 61]])
        // A run of minimum-size frames: one beat each at 512 bits.
        .chain((0..8).map(|i| vec![i; 60]))
        .collect()
}

/// Run `frames` with no idle and no backpressure; the sink's frames with their cycles, and the
/// cycle of the first input beat.
pub fn run_back_to_back(sim: &mut Sim, frames: &[Vec<u8>]) -> (Vec<ReceivedFrame>, u64) {
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
