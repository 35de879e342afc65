//! # nicgen-host: the simulated host machine around a Verilator-simulated NIC
//!
//! The NIC's host side is a contract (`hdl/src/host/mod.rs`): an AXI4-Lite BAR slave, a tagged
//! DMA read port whose answers may come out of order, a DMA write port, and one-cycle `irq`
//! pulses per vector. This crate is the other side of that contract, as a PCIe root complex,
//! an IOMMU and host RAM would be, and it implements the driver's traits
//! (`nicgen_driver::hw`), so the real driver code runs against the simulated NIC in process
//! (docs/DESIGN.md, decision 5).
//!
//! - [`HostMemory`]: sparse byte-addressed memory (4 KiB pages, created on first write) with
//!   an allocator of bus addresses: aligned, non-overlapping regions, freed space reused, a
//!   total limit. Only allocated bytes are reachable by DMA.
//! - [`DmaService`]: serves the DMA port each cycle and checks the NIC's side of its rules;
//!   a broken rule is a [`DmaViolation`] naming the [`DmaRule`], the cycle and the seed.
//! - [`Irq`]: latches the `irq` pulses per vector and counts them.
//! - [`AxilMaster`]: 32-bit BAR reads and writes, each failing after a budget of cycles
//!   ([`AxilError::Timeout`] names the handshake that never came).
//! - [`SimHost`]: owns the [`nicgen_tb::Sim`] and all of the above plus extra per-cycle
//!   [`nicgen_tb::stream::Agent`]s (the MAC-side streams of the NIC, monitors); one
//!   [`SimHost::cycle`] steps everything. It implements `RegisterSpace`, `DmaMemory` and
//!   `Interrupts`.
//!
//! ## The knobs ([`HostConfig`], [`DmaConfig`], [`MemoryConfig`])
//!
//! | knob | default | effect |
//! |---|---|---|
//! | `dma.seed` | 0 ([`HostConfig::from_seed`]) | every random choice; a run reproduces exactly |
//! | `dma.latency_min`, `dma.latency_max` | 50, 200 cycles | read request to first answer beat |
//! | `dma.reorder` | on | answers overtake each other (random among those due) |
//! | `dma.max_outstanding_reads` | 32 | read requests accepted before `tready` stays low |
//! | `dma.bytes_per_cycle` | one beat (`W/8`) | data bandwidth in each direction |
//! | `dma.req_stall` | 0 | probability of `tready` low per cycle on the request channels |
//! | `dma.wr_data_stall` | 0 | the same on the write data channel |
//! | `dma.link` | none | a PCIe link's bandwidth per direction with its TLP costs ([`link`]) |
//! | `memory.base`, `memory.size` | 4 GiB, 256 MiB | the DMA address space (above 32 bits on purpose) |
//! | `clock_mhz` | 250 | nanoseconds of the driver's API to cycles |
//! | `axil_budget` | 10 000 cycles | a BAR transaction's limit |
//! | `relax_cycles` | 8 | cycles one `Interrupts::relax` lets pass |
//!
//! ## What it models, and what not
//! Latency, reordering, bandwidth and backpressure of a PCIe link as the NIC sees them at the
//! contract; reads of unallocated memory answered with `tuser.err` (an IOMMU fault or an
//! unsupported request), writes to it dropped and counted; posted writes applied in order and
//! never overtaken by later reads. With [`DmaConfig::pcie`] (a [`PcieLink`], the NIC's clock
//! and a latency in nanoseconds) the bandwidth is a PCIe link's: each transfer cut into TLPs
//! at the max payload and read request sizes, each TLP paying its framing, header and a share
//! of the DLLPs, per direction ([`link`] says which bytes and why). Not modelled: credits per
//! TLP type, cache coherence costs, the flight time of posted writes, and interrupt
//! moderation.
//!
//! ```no_run
//! # fn demo(sim: nicgen_tb::Sim) -> Result<(), nicgen_host::HostError> {
//! use nicgen_driver::hw::{DmaMemory, Interrupts, RegisterSpace};
//! use nicgen_host::{HostConfig, SimHost};
//! let mut host = SimHost::new(sim, HostConfig::from_seed(7))?;
//! host.reset(2)?;
//! let ring = host.alloc(4096, 4096).expect("memory");
//! host.write32(0x10, ring.addr as u32); // a register write: simulated cycles pass
//! let fired = host.wait(1, 100_000); // up to 100 us of simulated time for vector 0
//! # let _ = fired; Ok(()) }
//! ```

mod axil;
mod dma;
mod error;
mod host;
mod irq;
pub mod link;
mod memory;

pub use axil::{AxilError, AxilMaster, AxilOp};
pub use dma::{DmaConfig, DmaRule, DmaService, DmaStats, DmaViolation};
pub use error::HostError;
pub use host::{AgentId, HostConfig, SimHost};
pub use irq::Irq;
pub use link::{LinkTiming, PcieLink};
pub use memory::{HostMemory, MemError, MemoryConfig, PAGE};
