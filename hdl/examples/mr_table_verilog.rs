//! Writes the Verilog of the RoCE memory-region table, standalone, for synthesis out of context
//! (the table is not in `nic_core` yet, so `cargo xtask bench-area` cannot find it by instance
//! path): `cargo run --release -p nicgen-hdl --example mr_table_verilog -- DIR` writes
//! `DIR/e<entries>/` at 256 and 4096 entries, the top `roce_mr_table_e<entries>`.
//! results/AREA-mr_table.md has the synthesis command and the figures.

use nicgen_edsl::{generate, EmitOptions};
use nicgen_hdl::roce::{mr_table, MrTableCfg};
use std::path::Path;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: mr_table_verilog DIR");
    for entries in [256, 4096] {
        let block = mr_table(&MrTableCfg { entries }).unwrap_or_else(|e| panic!("{e}"));
        let opts = EmitOptions {
            preset: "mr_table".into(),
            config_hash: "-".into(),
        };
        let gen = generate(&block.into_def(), &opts);
        let out = Path::new(&dir).join(format!("e{entries}"));
        gen.write_to(&out)
            .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        println!("{}: top {}", out.display(), gen.top);
    }
}
