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
//! - [`record`](mod@record): records declared once ([`record!`]): fields by name, packing, testbench
//!   encoding;
//! - [`io`]: typed ports ([`Ports`], [`Block`]), interfaces connected whole ([`connect`]),
//!   record streams;
//! - [`fsm`]: state machines over Rust enums ([`states!`]), emitted as `localparam`s;
//! - [`timing`]: timing idioms as library pieces (register replication);
//! - [`check`]: elaboration checks (drivers, unused bits, combinational loops on a petgraph);
//! - [`verilog`] and [`design`]: the Verilog-2005 emitter, structural deduplication, manifest;
//! - [`shim`]: the Verilator bindings (C++ `extern "C"` shim and Rust `#[repr(C)]` types);
//! - [`srcmap`]: the Rust function behind a source line, for the names of temporaries.

pub mod builder;
pub mod check;
pub mod design;
pub mod fsm;
pub mod io;
pub mod ir;
pub mod names;
pub mod record;
pub mod shim;
pub mod srcmap;
pub mod timing;
pub mod verilog;

pub use builder::*;
pub use design::{config_hash, generate, EmitOptions, Generated, Manifest, TopPort, GENERATOR};
pub use fsm::{Fsm, States};
pub use io::{connect, Block, Interface, Io, Ports, RecordStream, RecordValid, Role};
pub use ir::{Dir, Loc, ModuleDef};
pub use record::Shape;

/// Everything a block needs: `use nicgen_edsl::prelude::*;`.
pub mod prelude {
    pub use crate::builder::{
        case, cat, clog2, delay, doc, input, instance, lit, memory, mux, output, output_wire, reg,
        reg_init, select, wire, ElabError, Flow, Inst, Mem, Module, Operand, Sig,
    };
    pub use crate::design::{generate, EmitOptions, Generated};
    pub use crate::fsm::{Fsm, States};
    pub use crate::io::{connect, Block, Interface, Io, Ports, RecordStream, RecordValid, Role};
    pub use crate::ir::ModuleDef;
    pub use crate::record::Shape;
    pub use crate::timing::Replicated;
    pub use num_bigint::BigUint;
    pub use std::ops::{Shl, Shr};
    pub use std::rc::Rc;
}
