//! # nicgen-driver: the thin host driver of the nicgen NIC
//!
//! Written against three traits ([`hw`]): the device's register space (BAR 0), DMA-visible host
//! memory, and interrupts. Backends: the Verilator-simulated NIC with a simulated host
//! (`testbench/host`, in process) and a real PCIe function through VFIO ([`vfio`]).
//!
//! Invariant: nothing here knows whether the device is simulated; tests and the CLI run this
//! same code against the simulation.

pub mod hw;
/// The register and descriptor map (generated; see `docs/REGISTERS.md`).
#[rustfmt::skip]
pub mod regs;
