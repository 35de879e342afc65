//! Writes the Verilog of the ICRC unit, standalone, for synthesis out of context (the unit is
//! not in `nic_core` yet, so `cargo xtask bench-area` cannot find it by instance path):
//! `cargo run --release -p nicgen-hdl --example icrc_verilog -- DIR` writes
//! `DIR/<check|insert><bits>/*.v` at 64 and 512 bits, the top `icrc_<mode>_d<bits>`.
//! results/AREA-icrc.md has the synthesis command and the figures.

use nicgen_edsl::{generate, EmitOptions};
use nicgen_hdl::roce::icrc::{icrc, IcrcCfg, IcrcMode};

fn main() {
    let dir = std::env::args().nth(1).expect("usage: icrc_verilog DIR");
    for bits in [64, 512] {
        for (mode, name) in [(IcrcMode::Check, "check"), (IcrcMode::Insert, "insert")] {
            let block = icrc(&IcrcCfg {
                data_bits: bits,
                mode,
            })
            .unwrap_or_else(|e| panic!("{e}"));
            let gen = generate(
                &block.into_def(),
                &EmitOptions {
                    preset: "icrc".into(),
                    config_hash: "-".into(),
                },
            );
            let out = format!("{dir}/{name}{bits}");
            std::fs::create_dir_all(&out).unwrap();
            for (file, text) in &gen.verilog {
                std::fs::write(format!("{out}/{file}"), text).unwrap();
            }
            println!("{out}: top {}", gen.top);
        }
    }
}
