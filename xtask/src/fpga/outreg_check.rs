//! Proof that [`super::ecp5_outreg::absorb_bram_output_regs`] kept a netlist's behaviour: the
//! netlist it read (gold) and the one it wrote (gate) are shown equivalent, every time the pass
//! changes a netlist.
//!
//! # What is proved
//! Every output of the module is the same function of the module's inputs and of the data the
//! block RAMs read, cycle for cycle, from the same initial state. In two steps:
//! - the cells that are the same in both netlists (type, parameters, connections) are compared
//!   here, cell by cell; the module ports must be the same too;
//! - the cells that differ (the RAMs whose register mode changed, the flip-flops removed, and
//!   anything else changed, removed or added) are cut out of each netlist as one module, with
//!   the nets they read from the rest as inputs and the nets they drive that the rest reads as
//!   outputs, and Yosys proves the two modules equivalent (`equiv_make`, `equiv_simple -seq 2`,
//!   `equiv_induct`, `equiv_status -assert`).
//!
//! Same surroundings and equivalent parts make equivalent netlists. The parts hold a few
//! hundred cells at most, so the proof takes seconds whatever the block's size.
//!
//! # The block-RAM model
//! Yosys has no behavioural `DP16KD` (its `cells_sim.v` declares only the ports), and the pass
//! changes nothing but what happens after a RAM's read, so each `DP16KD` is cut out of both
//! parts the same way:
//! - its input pins, except the output-register enables `OCEA`/`OCEB`, become outputs
//!   (`bram<n>_<pin>`): both netlists must drive every RAM with the same address, data, write
//!   enable, chip selects, clock and reset, so the RAM holds and reads the same data in both;
//! - the data it reads (what `DOx<i>` gives in `NOREG` mode) becomes an input
//!   (`bram<n>_DO<x><i>_read`), the same free input in both;
//! - in `REGMODE_x = "NOREG"` that input drives `DOx<i>`; in `"OUTREG"` a flip-flop does,
//!   loading it on the rising edge of `CLKx` when `OCEx` is high, with no reset and 0 as its
//!   first value: the datasheet's output register. The model is only built where that
//!   description is complete: the port's `RSTx` constant 0, the RAM's `GSR` disabled, `CLKx` and
//!   `OCEx` not inverted; otherwise the check fails instead of guessing.
//!
//! The RAMs' names, every parameter but `REGMODE_A`/`REGMODE_B`, and which pins are connected
//! are compared directly. The flip-flops (and any other ECP5 cell in the parts) keep Yosys's own
//! simulation models (`+/ecp5/cells_sim.v`), flattened into both.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::process::Command;

/// The parameters the pass may change.
const REGMODES: [&str; 2] = ["REGMODE_A", "REGMODE_B"];

fn module<'a>(netlist: &'a Value, top: &str) -> Result<&'a Value> {
    netlist["modules"]
        .get(top)
        .ok_or_else(|| anyhow!("netlist has no module `{top}`"))
}

/// The `DP16KD` cells of a module, by name (sorted).
fn brams(m: &Value) -> Vec<(&String, &Value)> {
    let mut v: Vec<(&String, &Value)> = m["cells"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, c)| c["type"].as_str() == Some("DP16KD"))
        .collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// A RAM as the pass must leave it: its parameters without the register modes, and which pins
/// are connected.
fn bram_signature(c: &Value) -> Value {
    let mut p = c["parameters"].as_object().cloned().unwrap_or_default();
    for r in REGMODES {
        p.remove(r);
    }
    let mut pins: Vec<&String> = c["connections"]
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    pins.sort();
    json!({ "parameters": p, "pins": pins })
}

/// The largest net number in `m`, so new nets can be numbered after it.
fn max_net(m: &Value) -> u64 {
    let mut max = 1;
    let mut see = |bits: &Value| {
        for b in bits.as_array().into_iter().flatten() {
            if let Some(k) = b.as_u64() {
                max = max.max(k);
            }
        }
    };
    for p in m["ports"].as_object().into_iter().flatten() {
        see(&p.1["bits"]);
    }
    for c in m["cells"].as_object().into_iter().flatten() {
        for bits in c.1["connections"].as_object().into_iter().flatten() {
            see(bits.1);
        }
    }
    for n in m["netnames"].as_object().into_iter().flatten() {
        see(&n.1["bits"]);
    }
    max
}

/// A copy of module `m` with every `DP16KD` replaced by the model of the module docs: RAM
/// inputs out as ports, read data in as ports, an output register where `REGMODE_x` asks.
fn cut_out_brams(m: &Value) -> Result<Value> {
    let mut out = m.clone();
    let mut next = max_net(m) + 1;
    let ports = out["ports"]
        .as_object_mut()
        .ok_or_else(|| anyhow!("a module without ports"))?;
    let mut new_cells = Map::new();
    let names: Vec<String> = brams(m).into_iter().map(|(n, _)| n.clone()).collect();
    for (r, name) in names.iter().enumerate() {
        let c = &m["cells"][name];
        let param = |p: &str| c["parameters"][p].as_str().map(str::trim).unwrap_or("");
        let conns = c["connections"]
            .as_object()
            .ok_or_else(|| anyhow!("DP16KD `{name}` has no connections"))?;
        for (pin, bits) in conns {
            if c["port_directions"][pin].as_str() == Some("output") || pin.starts_with("DO") {
                continue;
            }
            if pin == "OCEA" || pin == "OCEB" {
                continue; // read by the output register below, not by the array
            }
            ports.insert(
                format!("bram{r}_{pin}"),
                json!({ "direction": "output", "bits": bits }),
            );
        }
        for side in ['A', 'B'] {
            let outreg = match param(&format!("REGMODE_{side}")) {
                "" | "NOREG" => false,
                "OUTREG" => true,
                other => bail!("DP16KD `{name}`: REGMODE_{side} = {other:?} is not modelled"),
            };
            let pin = |p: &str| conns.get(&format!("{p}{side}")).and_then(|b| b.get(0));
            if outreg {
                let why = if pin("RST").is_some_and(|b| b.as_str() != Some("0")) {
                    Some(format!("RST{side} is in use"))
                } else if param("GSR") != "DISABLED" {
                    Some("its GSR is not DISABLED".into())
                } else if [("CLK", "CLK"), ("OCE", "OCE")].iter().any(|(p, _)| {
                    let v = param(&format!("{p}{side}MUX"));
                    !v.is_empty() && v != format!("{p}{side}")
                }) {
                    Some(format!("CLK{side} or OCE{side} is inverted or fixed"))
                } else {
                    None
                };
                if let Some(why) = why {
                    bail!(
                        "DP16KD `{name}`: port {side} uses its output register but {why}; the \
                         check has no model for that"
                    );
                }
            }
            for i in 0..18 {
                let Some(bit) = conns
                    .get(&format!("DO{side}{i}"))
                    .and_then(|b| b.get(0))
                    .filter(|b| b.as_u64().is_some())
                else {
                    continue;
                };
                let read = format!("bram{r}_DO{side}{i}_read");
                if !outreg {
                    ports.insert(read, json!({ "direction": "input", "bits": [bit] }));
                    continue;
                }
                let d = next;
                next += 1;
                ports.insert(read, json!({ "direction": "input", "bits": [d] }));
                let clk = pin("CLK").cloned().unwrap_or(json!("0"));
                let ce = pin("OCE").cloned().unwrap_or(json!("1"));
                new_cells.insert(
                    format!("bram{r}_outreg_{side}{i}"),
                    json!({
                        "type": "TRELLIS_FF",
                        "parameters": {"CEMUX": "CE", "CLKMUX": "CLK", "GSR": "DISABLED",
                                       "LSRMUX": "LSR", "REGSET": "RESET",
                                       "SRMODE": "LSR_OVER_CE"},
                        "port_directions": {"CLK": "input", "CE": "input", "LSR": "input",
                                            "DI": "input", "Q": "output"},
                        "connections": {"CLK": [clk], "CE": [ce], "LSR": ["0"], "DI": [d],
                                        "Q": [bit]}
                    }),
                );
            }
        }
    }
    let cells = out["cells"].as_object_mut().expect("read above");
    for name in &names {
        cells.remove(name);
    }
    cells.extend(new_cells);
    Ok(out)
}

/// Cell names, types, parameters and connections: what makes two cells the same.
fn same_cell(a: &Value, b: &Value) -> bool {
    ["type", "parameters", "connections"]
        .iter()
        .all(|k| a[*k] == b[*k])
}

/// The net bits a cell reads and drives.
fn cell_bits(c: &Value) -> (Vec<u64>, Vec<u64>) {
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for (pin, bits) in c["connections"].as_object().into_iter().flatten() {
        let out = c["port_directions"][pin].as_str() == Some("output")
            || (c["type"] == "DP16KD" && pin.starts_with("DO"));
        for k in bits
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
        {
            if out {
                outs.push(k)
            } else {
                ins.push(k)
            }
        }
    }
    (ins, outs)
}

/// The part of `gold` and `gate` that differs, as two modules with the same ports: the cells
/// that are not the same in both (changed, removed or added), their inputs the nets they read
/// from the rest (`i<net>`), their outputs the nets they drive that the rest or a module output
/// reads (`o<net>`). The rest is the same cells on the same nets in both, so the two netlists
/// are equivalent when these two modules are. Net numbers must mean the same in both: `gate`
/// is `gold` rewritten in place, as the pass does.
fn differing_parts(gold: &Value, gate: &Value) -> Result<Option<(Value, Value)>> {
    if gold["ports"] != gate["ports"] {
        bail!("outreg check: the module's ports changed");
    }
    let none = Map::new();
    let cells = |m: &Value| {
        m["cells"]
            .as_object()
            .cloned()
            .unwrap_or_else(|| none.clone())
    };
    let (gc, tc) = (cells(gold), cells(gate));
    let mut names: Vec<&String> = gc.keys().chain(tc.keys()).collect();
    names.sort();
    names.dedup();
    let differs = |n: &String| match (gc.get(n), tc.get(n)) {
        (Some(a), Some(b)) => !same_cell(a, b),
        _ => true,
    };
    let region: Vec<&String> = names.into_iter().filter(|n| differs(n)).collect();
    if region.is_empty() {
        return Ok(None);
    }
    use std::collections::BTreeSet;
    let (mut reads_rest, mut driven_region, mut read_region) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for (n, c) in &gc {
        if !region.contains(&n) {
            reads_rest.extend(cell_bits(c).0);
        }
    }
    for p in gold["ports"].as_object().into_iter().flatten() {
        if p.1["direction"].as_str() != Some("input") {
            reads_rest.extend(
                p.1["bits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64),
            );
        }
    }
    for m in [&gc, &tc] {
        for n in &region {
            if let Some(c) = m.get(*n) {
                let (i, o) = cell_bits(c);
                read_region.extend(i);
                driven_region.extend(o);
            }
        }
    }
    let part = |m: &Map<String, Value>| {
        let mut ports = Map::new();
        for k in read_region.difference(&driven_region) {
            ports.insert(format!("i{k}"), json!({"direction": "input", "bits": [k]}));
        }
        for k in driven_region.intersection(&reads_rest) {
            ports.insert(format!("o{k}"), json!({"direction": "output", "bits": [k]}));
        }
        let cells: Map<String, Value> = region
            .iter()
            .filter_map(|n| m.get(*n).map(|c| ((*n).clone(), c.clone())))
            .collect();
        json!({ "ports": ports, "cells": cells })
    };
    Ok(Some((part(&gc), part(&tc))))
}

/// Proves `gate` (what the pass wrote) equivalent to `gold` (what it read), module `top`, with
/// the Yosys binary `yosys`: the cells that differ (see [`differing_parts`]) are proved
/// equivalent with the RAM model of the module docs, the rest is compared cell by cell. Leaves
/// `outreg_gold.json`, `outreg_gate.json`, `outreg_check.ys` and `outreg_check.log` in `dir`.
/// An error names what differs or points to the log.
pub(crate) fn check_equivalent(
    gold: &Value,
    gate: &Value,
    top: &str,
    dir: &Path,
    yosys: &str,
) -> Result<()> {
    let (gold, gate) = (module(gold, top)?, module(gate, top)?);
    let (g, t) = (brams(gold), brams(gate));
    let names = |v: &[(&String, &Value)]| v.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    if names(&g) != names(&t) {
        bail!(
            "outreg check: the block RAMs differ: before {:?}, after {:?}",
            names(&g),
            names(&t)
        );
    }
    for ((name, a), (_, b)) in g.iter().zip(&t) {
        if bram_signature(a) != bram_signature(b) {
            bail!("outreg check: DP16KD `{name}` changed more than its REGMODE");
        }
    }
    let Some((gold_part, gate_part)) = differing_parts(gold, gate)? else {
        return Ok(()); // the same cells on the same nets
    };
    let wrap = |m: Value, as_name: &str| json!({ "modules": { as_name: m } });
    let files = [
        ("outreg_gold.json", wrap(cut_out_brams(&gold_part)?, "gold")),
        ("outreg_gate.json", wrap(cut_out_brams(&gate_part)?, "gate")),
    ];
    for (f, v) in &files {
        std::fs::write(dir.join(f), serde_json::to_vec(v)?)
            .with_context(|| format!("cannot write {}", dir.join(f).display()))?;
    }
    // Each netlist on its own with the cell library's simulation models, flattened; then the
    // two side by side and the proof. `equiv_status -assert` fails on any signal left
    // unproved. `-nooverwrite`: newer Yosys releases include `cells_ff.vh` twice from
    // `cells_sim.v` (identical definitions), which is a re-definition error without it.
    let mut script = String::new();
    for m in ["gold", "gate"] {
        script += &format!(
            "read_verilog -nooverwrite +/ecp5/cells_sim.v\nread_json outreg_{m}.json\n\
             hierarchy -check -top {m}\nproc\nflatten -wb\nmemory_map\nopt_clean\n\
             design -stash {m}\n"
        );
    }
    script += "design -copy-from gold -as gold gold
design -copy-from gate -as gate gate
equiv_make gold gate equiv
hierarchy -top equiv
equiv_simple -seq 2
equiv_induct
equiv_status -assert
";
    std::fs::write(dir.join("outreg_check.ys"), &script)?;
    let out = Command::new(yosys)
        .args(["-q", "-l", "outreg_check.log", "-s", "outreg_check.ys"])
        .current_dir(dir)
        .output()
        .with_context(|| format!("cannot run `{yosys}`"))?;
    if !out.status.success() {
        let log = std::fs::read_to_string(dir.join("outreg_check.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "outreg check: `{top}` after the block-RAM output-register pass is NOT proved \
             equivalent to its input ({}; log {}):\n{}\n{}",
            out.status,
            dir.join("outreg_check.log").display(),
            String::from_utf8_lossy(&out.stderr).trim(),
            tail.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fpga::ecp5_outreg::absorb_bram_output_regs;
    use std::path::PathBuf;

    /// A 1024 x 16 RAM written on port A and read on port B, its read data registered again
    /// under an enable: the register the pass moves into the RAM.
    const RAM_WITH_READ_REGISTER: &str = "
module top(input clk, input we, input [9:0] wa, input [15:0] wd, input [9:0] ra,
           input re, output reg [15:0] q, output [3:0] low);
  (* no_rw_check *) reg [15:0] mem [0:1023];
  reg [15:0] rd;
  always @(posedge clk) begin
    if (we) mem[wa] <= wd;
    rd <= mem[ra];
    if (re) q <= rd;
  end
  assign low = q[3:0] ^ wd[3:0];
endmodule
";

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-outreg-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// `synth_ecp5` of `files` (in `dir`) with Debian's Yosys, the YoWASP build in the bench
    /// flow writing the same cells.
    fn synth_ecp5(dir: &Path, files: &[String], top: &str) -> Value {
        let script = format!(
            "read_verilog {}; synth_ecp5 -top {top} -json synth.json",
            files.join(" ")
        );
        let st = Command::new("yosys")
            .args(["-q", "-p", &script])
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(st.success(), "synth_ecp5 failed in {}", dir.display());
        serde_json::from_slice(&std::fs::read(dir.join("synth.json")).unwrap()).unwrap()
    }

    /// The design above, synthesised; `None` when Yosys is missing and not required.
    fn synthesised(dir: &Path) -> Option<Value> {
        if !nicgen_tb::require::tool_required("yosys") {
            return None;
        }
        std::fs::write(dir.join("ram.v"), RAM_WITH_READ_REGISTER).unwrap();
        Some(synth_ecp5(dir, &["ram.v".into()], "top"))
    }

    #[test]
    fn the_pass_on_a_synthesised_ram_is_proved_equivalent() {
        let dir = scratch("good");
        let Some(gold) = synthesised(&dir) else {
            return;
        };
        let mut gate = gold.clone();
        assert_eq!(absorb_bram_output_regs(&mut gate, "top").unwrap(), 1);
        check_equivalent(&gold, &gate, "top", &dir, "yosys").unwrap();
        // The unchanged netlist is equivalent to itself too (the model's NOREG side alone).
        check_equivalent(&gold, &gold, "top", &dir, "yosys").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A block of the NIC: the frame FIFO in block RAM at 64 bits, as `bench-area` builds it.
    #[test]
    fn the_pass_on_the_block_ram_frame_fifo_is_proved_equivalent() {
        use nicgen_edsl::{generate, EmitOptions};
        use nicgen_hdl::stream::stream_fifo::{stream_fifo_in, FifoCfg, FifoRam};
        use nicgen_hdl::stream::StreamCfg;
        if !nicgen_tb::require::tool_required("yosys") {
            return;
        }
        let dir = scratch("fifo");
        let cfg = FifoCfg::new(StreamCfg::new(64, 5), 512).frames();
        let b = stream_fifo_in(&cfg, FifoRam::Block).unwrap();
        let g = generate(
            b.def(),
            &EmitOptions {
                preset: "test".into(),
                config_hash: "-".into(),
            },
        );
        g.write_to(&dir).unwrap();
        let files: Vec<String> = g.verilog.iter().map(|(n, _)| n.clone()).collect();
        let gold = synth_ecp5(&dir, &files, &g.top);
        let mut gate = gold.clone();
        let n = absorb_bram_output_regs(&mut gate, &g.top).unwrap();
        assert!(n > 0, "the pass found no register to move");
        check_equivalent(&gold, &gate, &g.top, &dir, "yosys").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Rewrites that look like the pass's but change behaviour: each must fail the check.
    #[test]
    fn the_check_catches_a_broken_rewrite() {
        let dir = scratch("broken");
        let Some(gold) = synthesised(&dir) else {
            return;
        };
        let mut gate = gold.clone();
        assert_eq!(absorb_bram_output_regs(&mut gate, "top").unwrap(), 1);
        let ram = brams(&gate["modules"]["top"])[0].0.clone();
        let side = if gate["modules"]["top"]["cells"][&ram]["parameters"]["REGMODE_B"] == "OUTREG" {
            'B'
        } else {
            'A'
        };
        type Break = Box<dyn Fn(&mut Value)>;
        let breaks: Vec<(&str, Break)> = vec![
            (
                "two data bits swapped",
                Box::new(move |c: &mut Value| {
                    let k = &mut c["connections"];
                    let (a, b) = (format!("DO{side}0"), format!("DO{side}1"));
                    let t = k[&a].clone();
                    k[&a] = k[&b].clone();
                    k[&b] = t;
                }),
            ),
            (
                "the registers' enable dropped",
                Box::new(move |c: &mut Value| {
                    c["connections"][format!("OCE{side}")] = json!(["1"])
                }),
            ),
            (
                "the register left out",
                Box::new(move |c: &mut Value| {
                    c["parameters"][format!("REGMODE_{side}")] = json!("NOREG")
                }),
            ),
        ];
        for (what, f) in breaks {
            let mut bad = gate.clone();
            f(&mut bad["modules"]["top"]["cells"][&ram]);
            let e = check_equivalent(&gold, &bad, "top", &dir, "yosys")
                .expect_err(&format!("{what}: the check passed a broken rewrite"));
            assert!(e.to_string().contains("unproven"), "{what}: {e}");
        }
        // A RAM parameter other than REGMODE changed: refused before Yosys runs.
        let mut bad = gate.clone();
        bad["modules"]["top"]["cells"][&ram]["parameters"]["WRITEMODE_A"] = json!("NORMAL");
        let e = check_equivalent(&gold, &bad, "top", &dir, "yosys").unwrap_err();
        assert!(e.to_string().contains("changed more than"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
