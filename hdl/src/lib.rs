//! # nicgen-hdl: the NIC, described in the nicgen eDSL
//!
//! One block per file, named after the module it builds. Each block's doc states its purpose,
//! ports, latency, throughput and cost (its row in `results/AREA.md` where it has one), and names
//! its golden model (in `testbench/model`) and its test (`testbench/tests/<dir>/<block>.rs`,
//! mirroring this crate's folders). The timing rules the blocks share are in `docs/TIMING.md`.
//!
//! - [`stream`]: the AXI-Stream interface, its handshake rules and sideband table, and the
//!   stream primitives (forward register, skid buffer, FIFO);
//! - [`csum`]: checksum blocks;
//! - [`eth`]: the Ethernet packet pipeline (MAC framing, header parsing, checksum offloads, VLAN);
//! - [`overlay`]: VXLAN and NVGRE (tunnel steering; encapsulation and de-capsulation);
//! - [`host`]: the host interface (BAR registers, DMA, queues, doorbells, completions, events);
//! - [`roce`]: RoCEv2 (the ICRC, checked and inserted);
//! - [`rss`]: receive-side scaling (Toeplitz hash, indirection table);
//! - [`stats`]: event counters (the `stat_<name>` outputs);
//! - [`timing`]: the timing idioms the blocks share (docs/TIMING.md), as library pieces;
//! - [`preset`]: build configurations (TOML, built in);
//! - [`top`]: the Ethernet core `nic_core` (TX and RX paths, MAC loopback);
//! - [`nic`]: the whole NIC, the host interface around the core.
//!
//! Invariant: nothing here depends on the testbench or the driver.

pub mod csum;
pub mod eth;
pub mod host;
pub mod nic;
pub mod overlay;
pub mod preset;
pub mod roce;
pub mod rss;
pub mod stats;
pub mod stream;
pub mod timing;
pub mod top;

pub use preset::Preset;
