//! The NIC's MAC side as the whole-NIC simulations see it: one agent on both wire streams
//! (`m_axis_mac_tx` out of the NIC, `s_axis_mac_rx` into it, frames with FCS) that counts the
//! frames crossing each way and, when asked, writes them to a pcapng capture with their
//! direction and the simulated time.
//!
//! It either hands the NIC's frames to its owner and takes frames to send in (`sim tap`: the
//! other end is a TAP), or is a cable from the NIC's TX back to its RX (`sim loopback
//! --pcap-wire`: the loop closes outside the NIC, so every frame crosses both ports and the
//! capture holds it once each way).
//!
//! The capture holds frames without their FCS, as packet captures do; a frame whose FCS was
//! wrong carries the CRC-error flag. A frame's time is the cycle of its last beat at the
//! preset's clock (cycle × 1000 / MHz nanoseconds, cycle 0 the first simulated cycle).

use nicgen_tb::pcap::{Direction, PcapError, PcapNgCapture};
use nicgen_tb::stream::{Agent, StreamDriver, StreamError, StreamPorts, StreamSink};
use nicgen_tb::Sim;
use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::Duration;

/// A wire capture being written: the file and the clock that turns cycles into time.
pub struct WireCapture {
    out: PcapNgCapture<BufWriter<File>>,
    clock_mhz: f64,
}

impl WireCapture {
    /// Create the capture file at `path`, for a NIC clocked at `clock_mhz`.
    pub fn create(path: &Path, clock_mhz: f64) -> Result<WireCapture, PcapError> {
        Ok(WireCapture {
            out: PcapNgCapture::create(path, "nicgen MAC")?,
            clock_mhz,
        })
    }

    fn record(&mut self, dir: Direction, cycle: u64, frame: &[u8]) -> Result<(), PcapError> {
        let ns = (cycle as f64 * 1000.0 / self.clock_mhz).round() as u64;
        let good = frame.len() >= 4 && nicgen_model::crc32::check_fcs(frame);
        let body = &frame[..frame.len().saturating_sub(4)];
        self.out.write(dir, Duration::from_nanos(ns), body, !good)
    }
}

/// Frames that crossed the MAC ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WireCounts {
    /// Into the NIC (`s_axis_mac_rx`), whole frames accepted.
    pub rx_frames: u64,
    /// Out of the NIC (`m_axis_mac_tx`).
    pub tx_frames: u64,
}

/// The agent on the NIC's two MAC streams (see the module docs).
pub struct MacWire {
    tx: StreamSink,
    rx: StreamDriver,
    /// Frames given to `rx`, not yet wholly accepted, in order.
    rx_pending: VecDeque<Vec<u8>>,
    /// Frames out of the NIC, for [`MacWire::take_tx`] (unused as a cable).
    tx_out: Vec<Vec<u8>>,
    cable: bool,
    capture: Option<WireCapture>,
    /// The first capture write error; reported by [`MacWire::finish`].
    error: Option<PcapError>,
    counts: WireCounts,
}

impl MacWire {
    /// The agent on `sim`'s `m_axis_mac_tx` and `s_axis_mac_rx`, never stalling the NIC;
    /// `cable` loops every frame the NIC sends back into it; `capture` records both ways.
    pub fn new(
        sim: &Sim,
        seed: u64,
        cable: bool,
        capture: Option<WireCapture>,
    ) -> Result<MacWire, StreamError> {
        Ok(MacWire {
            tx: StreamSink::new(StreamPorts::new(sim, "m_axis_mac_tx")?, seed, 0.0),
            rx: StreamDriver::new(StreamPorts::new(sim, "s_axis_mac_rx")?, seed, 0.0),
            rx_pending: VecDeque::new(),
            tx_out: Vec::new(),
            cable,
            capture,
            error: None,
            counts: WireCounts::default(),
        })
    }

    /// Send `frame` (with its FCS) into the NIC's MAC.
    pub fn push_rx(&mut self, frame: Vec<u8>) {
        self.rx_pending.push_back(frame.clone());
        self.rx.push(frame);
    }

    /// The frames (with FCS) the NIC sent since the last call.
    pub fn take_tx(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx_out)
    }

    /// Frames that crossed each way so far.
    pub fn counts(&self) -> WireCounts {
        self.counts
    }

    /// Close the capture (flushing it): frames written, or the first write error.
    pub fn finish(&mut self) -> Result<usize, PcapError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.capture.take() {
            Some(c) => {
                let n = c.out.frames();
                c.out.finish()?;
                Ok(n)
            }
            None => Ok(0),
        }
    }

    fn record(&mut self, dir: Direction, cycle: u64, frame: &[u8]) {
        if let (Some(c), None) = (&mut self.capture, &self.error) {
            if let Err(e) = c.record(dir, cycle, frame) {
                self.error = Some(e);
            }
        }
    }
}

impl Agent for MacWire {
    fn drive(&mut self, sim: &mut Sim) {
        self.tx.drive(sim);
        self.rx.drive(sim);
    }

    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        // The cycle whose values were just sampled (as StreamSink stamps a beat).
        let cycle = sim.cycles().saturating_sub(1);
        let sent_before = self.rx.frames_sent();
        let moved = self.tx.observe(sim)? | self.rx.observe(sim)?;
        if self.rx.frames_sent() > sent_before {
            let f = self
                .rx_pending
                .pop_front()
                .expect("a pending frame was sent");
            self.counts.rx_frames += 1;
            self.record(Direction::Inbound, cycle, &f);
        }
        for f in self.tx.take_frames() {
            self.counts.tx_frames += 1;
            self.record(Direction::Outbound, cycle, &f);
            if self.cable {
                self.push_rx(f);
            } else {
                self.tx_out.push(f);
            }
        }
        Ok(moved)
    }
}
