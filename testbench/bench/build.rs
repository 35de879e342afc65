//! Runs the generator at build time and keeps the Rust half of its Verilator bindings, so the
//! benchmark drives the model through the emitted `#[repr(C)]` types exactly as a user would.

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let def = nicgen_hdl::csum::inet_csum(&nicgen_hdl::csum::CsumCfg {
        data_bits: 512,
        levels_per_stage: 1,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let g = nicgen_edsl::generate(&def, &nicgen_edsl::EmitOptions::default());
    std::fs::write(out.join("inet_csum_sim.rs"), &g.shim_rs).unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
