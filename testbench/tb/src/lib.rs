//! nicgen testbench glue: everything a Rust test needs to drive generated Verilog.
//!
//! The crate receives generated *text* (Verilog and a C++ shim) and never depends on the eDSL,
//! so block tests, system tests and the CLI can all use it and the eDSL can change freely
//! behind the shim ABI.
//!
//! - [`layout`]: the flat `u64` word buffers exchanged with a model once per cycle.
//! - [`verilator`]: builds, caches and loads Verilator models; [`Sim`] steps one cycle per call.
//! - [`icarus`]: replays a recorded input trace on Icarus Verilog and compares cycle by cycle,
//!   an independent second simulator for the same Verilog.
//! - [`stream`]: AXI-Stream drivers, sinks and protocol monitors with seeded idle/backpressure.
//! - [`record`]: agents for record streams (per-frame metadata without tkeep/tlast).
//! - [`scoreboard`]: expected-vs-actual frame comparison with a hex diff of the first mismatch.
//! - [`pcap`]: Ethernet pcap read/write.
//! - [`tshark`]: tshark as an independent oracle: per-frame checksum verdicts and protocol decodes.
//! - [`waves`]: FST waveforms: a window of a run (`nicgen sim --trace`), and the waveform a
//!   failing test leaves around its first mismatch.
//! - [`require`]: whether a test whose tool (or root) is missing fails or skips
//!   (`NICGEN_REQUIRE_TOOLS=1`).
//!
//! Invariant: nothing here knows about a particular block; blocks are described by their port
//! names and layout only.

pub mod icarus;
pub mod layout;
pub mod pcap;
pub mod record;
pub mod require;
pub mod scoreboard;
pub mod stream;
pub mod tshark;
pub mod verilator;
pub mod waves;

pub use layout::{Dir, Layout, PortId, PortLayout};
pub use verilator::{Model, Recording, Sim, VerilatorBuild, VerilatorError, VerilatorOptions};
