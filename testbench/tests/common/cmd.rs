//! Blocks that take one command per frame on a side stream (`s_axis_cmd_tdata/tvalid/tready`,
//! no `tlast`) beside their frames: the command's driver, which also checks when commands are
//! taken, and a run of frames with their commands ([`run_with_cmds`]).

use crate::{Knobs, Transfers};
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamError, StreamMonitor, StreamPorts,
    StreamSink,
};
use nicgen_tb::{PortId, Sim};
use num_bigint::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

/// Commands a block takes ahead of their frames (its command register slice).
pub const CMD_AHEAD: u64 = 2;

/// Source of the command side stream with random idle (junk on `tdata` while idle); also
/// checks that every command transfer happens with a first beat on `s_axis`.
pub struct CmdDriver {
    data: PortId,
    valid: PortId,
    ready: PortId,
    s: StreamPorts,
    pub queue: VecDeque<BigUint>,
    rng: StdRng,
    idle: f64,
    pending: bool,
    in_frame: bool,
    width: u32,
    /// Commands taken, frames whose first beat was taken.
    cmds: u64,
    starts: u64,
}

impl CmdDriver {
    pub fn new(sim: &Sim, seed: u64, idle: f64) -> CmdDriver {
        let data = sim.port("s_axis_cmd_tdata").unwrap();
        CmdDriver {
            data,
            valid: sim.port("s_axis_cmd_tvalid").unwrap(),
            ready: sim.port("s_axis_cmd_tready").unwrap(),
            s: StreamPorts::new(sim, "s_axis").unwrap(),
            queue: VecDeque::new(),
            rng: StdRng::seed_from_u64(seed),
            idle,
            pending: false,
            in_frame: false,
            width: sim.width(data),
            cmds: 0,
            starts: 0,
        }
    }
}

impl Agent for CmdDriver {
    fn drive(&mut self, sim: &mut Sim) {
        if !self.pending && !self.queue.is_empty() && !self.rng.gen_bool(self.idle) {
            self.pending = true;
        }
        if self.pending {
            sim.set_big(self.data, &self.queue[0]);
        } else {
            let junk: Vec<u8> = (0..self.width.div_ceil(8))
                .map(|_| self.rng.gen())
                .collect();
            let mask = (BigUint::from(1u8) << self.width) - 1u32;
            sim.set_big(self.data, &(BigUint::from_bytes_le(&junk) & mask));
        }
        sim.set_bool(self.valid, self.pending);
    }
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        let cmd_xfer = self.pending && sim.get_bool(self.ready);
        let s_xfer = sim.get_bool(self.s.tvalid) && sim.get_bool(self.s.tready);
        let first = s_xfer && !self.in_frame;
        self.cmds += cmd_xfer as u64;
        self.starts += first as u64;
        // A frame's first beat is taken only once its command is (in the same cycle at the
        // latest), and the block holds at most `CMD_AHEAD` commands of frames not started.
        assert!(
            self.starts <= self.cmds && self.cmds <= self.starts + CMD_AHEAD,
            "cycle {}: {} commands taken, {} frames started",
            sim.cycles() - 1,
            self.cmds,
            self.starts
        );
        if s_xfer {
            self.in_frame = !sim.get_bool(self.s.tlast);
        }
        if cmd_xfer {
            self.queue.pop_front();
            self.pending = false;
        }
        Ok(cmd_xfer)
    }
}

/// Output of one [`run_with_cmds`]: frames with the `tuser` of their last beat, input and
/// output transfer cycles.
pub struct CmdRun {
    pub frames: Vec<(Vec<u8>, u64)>,
    pub ti: Vec<u64>,
    pub to: Vec<u64>,
}

/// Drive `frames` (with `tuser` values, on their last beats only) into `s_axis` and their
/// commands `cmds` into `s_axis_cmd`, collect `m_axis`, monitors on both data streams, until
/// `done(sim, frames out)` after a cycle, or a stall.
pub fn run_with_cmds(
    sim: &mut Sim,
    k: Knobs,
    frames: &[(Vec<u8>, u64)],
    cmds: &[BigUint],
    mut done: impl FnMut(&Sim, usize) -> bool,
) -> CmdRun {
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mp = StreamPorts::new(sim, "m_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
    drv.user_on_last_beat();
    let mut cmd = CmdDriver::new(sim, k.seed ^ 0xc0de, k.idle);
    for (f, u) in frames {
        drv.push_with_user(f.clone(), *u);
    }
    cmd.queue.extend(cmds.iter().cloned());
    let mut sink = StreamSink::new(mp.clone(), k.seed ^ 0x5eed, k.backpressure);
    let mut mi = StreamMonitor::new(sp.clone(), k.seed);
    let mut mo = StreamMonitor::new(mp.clone(), k.seed);
    let mut ti = Transfers::new(sp);
    let mut to = Transfers::new(mp);
    run_until_seeded(sim, k.seed, 500, |sim| {
        let progressed = step(
            sim,
            &mut [
                &mut drv, &mut cmd, &mut sink, &mut mi, &mut mo, &mut ti, &mut to,
            ],
        )?;
        Ok(Status::new(progressed, done(sim, sink.frames().len())))
    })
    .unwrap_or_else(|e| panic!("seed {:#x}: {e}", k.seed));
    CmdRun {
        frames: sink
            .frames()
            .iter()
            .map(|f| (f.data.clone(), f.user))
            .collect(),
        ti: ti.cycles,
        to: to.cycles,
    }
}
