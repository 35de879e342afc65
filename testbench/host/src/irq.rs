//! The interrupt latch: the NIC's `irq` output carries one bit per vector, and a one-cycle
//! pulse on bit `v` is one message on vector `v` (MSI-X style). The latch keeps a pending bit
//! and a message count per vector, as an interrupt controller would.

use crate::error::{port, HostError};
use nicgen_tb::{Dir, PortId, Sim};

/// Pending vectors and message counts of the NIC's `irq` port.
#[derive(Debug)]
pub struct Irq {
    port: PortId,
    vectors: usize,
    pending: u64,
    counts: Vec<u64>,
}

impl Irq {
    /// Resolves the `irq` output (1 to 64 vectors).
    pub fn new(sim: &Sim) -> Result<Irq, HostError> {
        let p = port(sim, "irq", Dir::Output, None)?;
        let vectors = sim.width(p) as usize;
        if vectors > 64 {
            return Err(HostError::Port {
                top: sim.top().to_string(),
                port: "irq".into(),
                message: format!("has {vectors} vectors; the driver's masks hold 64"),
            });
        }
        Ok(Irq {
            port: p,
            vectors,
            pending: 0,
            counts: vec![0; vectors],
        })
    }

    /// After [`Sim::cycle`]: latches the vectors pulsed in that cycle. Returns whether any was.
    pub fn observe(&mut self, sim: &Sim) -> bool {
        let bits = sim.get_u64(self.port);
        if bits == 0 {
            return false;
        }
        self.pending |= bits;
        for (v, count) in self.counts.iter_mut().enumerate() {
            *count += bits >> v & 1;
        }
        true
    }

    /// Number of vectors (the width of `irq`).
    pub fn vectors(&self) -> usize {
        self.vectors
    }

    /// Pending vectors (bit `v` = vector `v`), left pending.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Takes the pending vectors in `mask`: returns them and clears them.
    pub fn take(&mut self, mask: u64) -> u64 {
        let fired = self.pending & mask;
        self.pending &= !mask;
        fired
    }

    /// Messages received on vector `v` so far (0 for a vector the NIC does not have).
    pub fn count(&self, v: usize) -> u64 {
        self.counts.get(v).copied().unwrap_or(0)
    }
}
