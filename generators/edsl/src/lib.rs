//! # nicgen-edsl: a construction-style hardware eDSL in Rust
//!
//! Rust runs at elaboration time and builds a netlist, as in Chisel, SpinalHDL or Amaranth:
//! loops, functions, generics and configs are plain Rust; widths are values checked at
//! elaboration (a NIC is full of derived widths that stable const generics cannot express).
//!
//! ```
//! use nicgen_edsl::prelude::*;
//! let m = Module::build("acc", || {
//!     let d = input("d", 8);
//!     let en = input("en", 1);
//!     let acc = reg(9).init(0u32).enable(en);
//!     acc.set(acc + d.zext(9));
//!     output("q", acc);
//! }).unwrap();
//! let v = generate(&m, &EmitOptions::default());
//! assert!(v.verilog[0].1.contains("module acc ("));
//! ```
//!
//! Pieces:
//! - [`builder`]: signals ([`Sig`]), ports, wires, registers, memories, instances, bundles;
//! - [`check`]: elaboration checks (drivers, unused bits, combinational loops on a petgraph);
//! - [`verilog`] and [`design`]: the Verilog-2005 emitter, structural deduplication, manifest;
//! - [`shim`]: the Verilator bindings (C++ `extern "C"` shim and Rust `#[repr(C)]` types).

pub mod builder;
pub mod check;
pub mod design;
pub mod ir;
pub mod names;
pub mod shim;
pub mod verilog;

pub use builder::*;
pub use design::{config_hash, generate, EmitOptions, Generated, Manifest, TopPort, GENERATOR};
pub use ir::{Dir, Loc, ModuleDef};

/// Everything a block needs: `use nicgen_edsl::prelude::*;`.
pub mod prelude {
    pub use crate::builder::{
        bundle_in, bundle_out, case, cat, clog2, connect, delay, doc, input, instance, lit, memory,
        mux, output, output_wire, reg, reg_init, select, wire, Bundle, BundleSpec, ElabError, Flow,
        Inst, Mem, Module, Operand, Sig,
    };
    pub use crate::design::{generate, EmitOptions, Generated};
    pub use crate::ir::ModuleDef;
    pub use num_bigint::BigUint;
    pub use std::rc::Rc;
}
