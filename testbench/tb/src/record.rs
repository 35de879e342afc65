//! Agents for record streams: `<prefix>_tdata/_tvalid/_tready` without `tkeep`/`tlast`, one
//! transfer per item (per-frame metadata, requests, results).
//!
//! Items are little-endian byte strings of the `tdata` width. The source keeps an offered item
//! stable until it is taken (stream rule 1) and idles at random, driving random junk on `tdata`
//! while `tvalid` is low (a unit must not take data without its valid); the sink applies random
//! backpressure and checks rule 1 on what it is offered.

use crate::stream::{Agent, StreamError};
use crate::{PortId, Sim};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

fn ports(sim: &Sim, prefix: &str) -> Result<(PortId, PortId, PortId), StreamError> {
    let p = |s: &str| {
        sim.port(&format!("{prefix}_{s}"))
            .map_err(|e| StreamError::Ports {
                prefix: prefix.to_string(),
                message: e.to_string(),
            })
    };
    Ok((p("tdata")?, p("tvalid")?, p("tready")?))
}

/// Source of record items with seeded random idle cycles.
#[derive(Debug)]
pub struct RecordDriver {
    prefix: String,
    data: PortId,
    valid: PortId,
    ready: PortId,
    rng: StdRng,
    /// Junk for `tdata` while idle (its own stream, so the idle pattern is the seed's).
    junk: StdRng,
    data_bits: u32,
    idle: f64,
    queue: VecDeque<Vec<u8>>,
    pending: bool,
    pub sent: u64,
}

impl RecordDriver {
    pub fn new(sim: &Sim, prefix: &str, seed: u64, idle: f64) -> Result<Self, StreamError> {
        let (data, valid, ready) = ports(sim, prefix)?;
        Ok(RecordDriver {
            prefix: prefix.to_string(),
            data,
            valid,
            ready,
            rng: StdRng::seed_from_u64(seed),
            junk: StdRng::seed_from_u64(seed ^ 0x6a75_6e6b),
            data_bits: sim.width(data),
            idle,
            queue: VecDeque::new(),
            pending: false,
            sent: 0,
        })
    }
    pub fn push(&mut self, item: Vec<u8>) {
        self.queue.push_back(item);
    }
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }
}

impl Agent for RecordDriver {
    fn drive(&mut self, sim: &mut Sim) {
        if !self.pending && !self.queue.is_empty() && !self.rng.gen_bool(self.idle) {
            self.pending = true;
        }
        if self.pending {
            sim.set_bytes_le(self.data, self.queue.front().unwrap());
        } else {
            let mut junk = vec![0u8; (self.data_bits as usize).div_ceil(8)];
            self.junk.fill(&mut junk[..]);
            if !self.data_bits.is_multiple_of(8) {
                *junk.last_mut().unwrap() &= (1u8 << (self.data_bits % 8)) - 1;
            }
            sim.set_bytes_le(self.data, &junk);
        }
        sim.set_bool(self.valid, self.pending);
    }
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        if self.pending && sim.get_bool(self.ready) {
            self.pending = false;
            self.queue.pop_front();
            self.sent += 1;
            return Ok(true);
        }
        let _ = &self.prefix;
        Ok(false)
    }
}

/// Sink of record items with seeded random backpressure; checks that an offered item holds.
#[derive(Debug)]
pub struct RecordSink {
    prefix: String,
    data: PortId,
    valid: PortId,
    ready: PortId,
    rng: StdRng,
    backpressure: f64,
    seed: u64,
    held: Option<Vec<u8>>,
    pub items: Vec<Vec<u8>>,
}

impl RecordSink {
    pub fn new(sim: &Sim, prefix: &str, seed: u64, backpressure: f64) -> Result<Self, StreamError> {
        let (data, valid, ready) = ports(sim, prefix)?;
        Ok(RecordSink {
            prefix: prefix.to_string(),
            data,
            valid,
            ready,
            rng: StdRng::seed_from_u64(seed),
            backpressure,
            seed,
            held: None,
            items: Vec::new(),
        })
    }
}

impl Agent for RecordSink {
    fn drive(&mut self, sim: &mut Sim) {
        let r = !self.rng.gen_bool(self.backpressure);
        sim.set_bool(self.ready, r);
    }
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        if !sim.get_bool(self.valid) {
            if self.held.is_some() {
                panic!(
                    "record stream `{}` (seed {}): rule 1 (hold) broken at cycle {}: tvalid dropped before the transfer",
                    self.prefix,
                    self.seed,
                    sim.cycles()
                );
            }
            return Ok(false);
        }
        let v = sim.get_bytes_le(self.data);
        if let Some(h) = &self.held {
            assert_eq!(
                h,
                &v,
                "record stream `{}` (seed {}): rule 1 (hold) broken at cycle {}: tdata changed while waiting",
                self.prefix,
                self.seed,
                sim.cycles()
            );
        }
        if sim.get_bool(self.ready) {
            self.held = None;
            self.items.push(v);
            Ok(true)
        } else {
            self.held = Some(v);
            Ok(false)
        }
    }
}

/// Source of items on a valid-only port (`<prefix>_tdata/_tvalid`, no `tready`): register
/// strobes and doorbells that cannot be stalled. One item per one-cycle pulse, with at least
/// `gap` idle cycles between pulses (a BAR write takes several cycles).
#[derive(Debug)]
pub struct PulseDriver {
    data: PortId,
    valid: PortId,
    gap: u32,
    wait: u32,
    pub queue: VecDeque<Vec<u8>>,
    pub sent: u64,
}

impl PulseDriver {
    pub fn new(sim: &Sim, prefix: &str, gap: u32) -> Result<Self, StreamError> {
        let p = |s: &str| {
            sim.port(&format!("{prefix}_{s}"))
                .map_err(|e| StreamError::Ports {
                    prefix: prefix.to_string(),
                    message: e.to_string(),
                })
        };
        Ok(PulseDriver {
            data: p("tdata")?,
            valid: p("tvalid")?,
            gap,
            wait: 0,
            queue: VecDeque::new(),
            sent: 0,
        })
    }
    pub fn push(&mut self, item: Vec<u8>) {
        self.queue.push_back(item);
    }
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }
}

impl Agent for PulseDriver {
    fn drive(&mut self, sim: &mut Sim) {
        sim.set_bool(self.valid, false);
        if self.wait > 0 {
            self.wait -= 1;
            return;
        }
        if let Some(item) = self.queue.pop_front() {
            sim.set_bytes_le(self.data, &item);
            sim.set_bool(self.valid, true);
            self.wait = self.gap;
            self.sent += 1;
        }
    }
    fn observe(&mut self, _sim: &Sim) -> Result<bool, StreamError> {
        Ok(false)
    }
}
