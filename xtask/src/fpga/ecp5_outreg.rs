//! ECP5 flow step: put the register after a block-RAM read into the RAM's own output register.
//!
//! A `DP16KD` read with `REGMODE_x = "NOREG"` has a 5.83 ns clock-to-out in nextpnr's timing
//! model (speed grade 6); with `"OUTREG"` it is 0.95 ns. Lattice's synthesis and Vivado move a
//! register that directly follows a block-RAM read into the RAM; Yosys does not (its ECP5 RAM
//! mapping always writes `NOREG`, yosys issue #5814). So every block-RAM FIFO would be capped
//! near 146 MHz by the tool flow rather than by its logic. This pass does what those tools do,
//! on the `synth_ecp5` JSON netlist, before place and route:
//!
//! for each read port (A or B) of each `DP16KD` in `NOREG` mode, with no reset in use on the
//! port (`RSTx` absent or constant 0), the RAM's `GSR` disabled and `CLKx`/`OCEx` not inverted,
//! whose every used data output `DOx<i>` drives exactly one cell input, the `DI` of a
//! `TRELLIS_FF` that
//! - is clocked by the port's clock, rising edge (`CLKMUX = CLK`),
//! - has no set/reset in use (`LSR` absent or constant 0) and no `GSR`,
//! - and shares one clock enable with the others (or none),
//!
//! the flip-flops are removed, their `Q` nets are driven by `DOx<i>`, `REGMODE_x` becomes
//! `OUTREG` and `OCEx` takes their clock enable. The RAM's output register then holds exactly
//! what the flip-flops held, cycle for cycle: it loads the RAM's read data on the same edge
//! under the same enable, and nothing else read the RAM's outputs. Anything that does not
//! match is left as it is.
//!
//! The flow proves every netlist this pass changes equivalent to the one it read
//! ([`super::outreg_check`]), with the output register modelled as described above.

use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use std::collections::HashMap;

/// One net bit of a Yosys JSON netlist: a net number (`as_u64`) or a constant ("0", "1", "x").
type Bit = Value;

fn param<'a>(cell: &'a Value, name: &str) -> &'a str {
    cell["parameters"][name]
        .as_str()
        .map(str::trim)
        .unwrap_or("")
}

/// A port's single bit, if the cell has that port connected.
fn port_bit<'a>(cell: &'a Value, port: &str) -> Option<&'a Bit> {
    cell["connections"][port].as_array().and_then(|v| v.first())
}

/// Absorbs output registers in module `top`; returns how many read ports were converted.
pub fn absorb_bram_output_regs(netlist: &mut Value, top: &str) -> Result<usize> {
    let module = netlist["modules"]
        .get_mut(top)
        .ok_or_else(|| anyhow!("netlist has no module `{top}`"))?;
    // Every reader of every net bit: (cell name, port). Module outputs count as readers.
    let mut readers: HashMap<u64, Vec<(String, String)>> = HashMap::new();
    let cells = module["cells"]
        .as_object()
        .ok_or_else(|| anyhow!("module `{top}` has no cells"))?;
    for (name, cell) in cells {
        let Some(conns) = cell["connections"].as_object() else {
            continue;
        };
        for (port, bits) in conns {
            if cell["port_directions"][port].as_str() == Some("output") {
                continue;
            }
            for b in bits.as_array().into_iter().flatten() {
                if let Some(k) = b.as_u64() {
                    readers
                        .entry(k)
                        .or_default()
                        .push((name.clone(), port.clone()));
                }
            }
        }
    }
    if let Some(ports) = module["ports"].as_object() {
        for (pname, p) in ports {
            if p["direction"].as_str() != Some("input") {
                for b in p["bits"].as_array().into_iter().flatten() {
                    if let Some(k) = b.as_u64() {
                        readers
                            .entry(k)
                            .or_default()
                            .push((format!("<port {pname}>"), String::new()));
                    }
                }
            }
        }
    }

    // Plan the conversions first, then edit.
    struct Plan {
        ram: String,
        side: char,
        ce: Bit,
        /// (data output port, flip-flop cell, the flip-flop's Q bit)
        moves: Vec<(String, String, Bit)>,
    }
    let mut plans = Vec::new();
    let mut rams: Vec<&String> = cells
        .iter()
        .filter(|(_, c)| c["type"].as_str() == Some("DP16KD"))
        .map(|(n, _)| n)
        .collect();
    rams.sort();
    for ram in rams {
        let c = &cells[ram];
        for side in ['A', 'B'] {
            if param(c, &format!("REGMODE_{side}")) != "NOREG" {
                continue;
            }
            let Some(clk) = port_bit(c, &format!("CLK{side}")) else {
                continue;
            };
            // The output register is also reset by RSTx and by the global set/reset; a port
            // that uses either, or inverts its clock or enable, keeps its flip-flops.
            let rst_free = match port_bit(c, &format!("RST{side}")) {
                None => true,
                Some(b) => b.as_str() == Some("0"),
            };
            let plain = |p: &str| {
                let v = param(c, &format!("{p}{side}MUX"));
                v.is_empty() || v == format!("{p}{side}")
            };
            if !rst_free || param(c, "GSR") != "DISABLED" || !plain("CLK") || !plain("OCE") {
                continue;
            }
            let mut moves = Vec::new();
            let mut ce: Option<Bit> = None;
            let mut ok = true;
            for i in 0..18 {
                let port = format!("DO{side}{i}");
                let Some(k) = port_bit(c, &port).and_then(Value::as_u64) else {
                    continue;
                };
                let Some(rs) = readers.get(&k) else {
                    continue; // unused output
                };
                let [(ff, pin)] = rs.as_slice() else {
                    ok = false;
                    break;
                };
                let f = &cells[ff.as_str()];
                let this_ce = match param(f, "CEMUX") {
                    "1" => json!("1"),
                    "CE" => port_bit(f, "CE").cloned().unwrap_or(json!("1")),
                    _ => {
                        ok = false;
                        break;
                    }
                };
                let lsr_free = match port_bit(f, "LSR") {
                    None => true,
                    Some(b) => b.as_str() == Some("0"),
                };
                if f["type"].as_str() != Some("TRELLIS_FF")
                    || pin != "DI"
                    || port_bit(f, "CLK") != Some(clk)
                    || param(f, "CLKMUX") != "CLK"
                    || param(f, "GSR") != "DISABLED"
                    || !lsr_free
                    || ce.as_ref().is_some_and(|e| *e != this_ce)
                {
                    ok = false;
                    break;
                }
                ce = Some(this_ce);
                let q = port_bit(f, "Q")
                    .cloned()
                    .ok_or_else(|| anyhow!("TRELLIS_FF `{ff}` has no Q"))?;
                moves.push((port, ff.clone(), q));
            }
            if ok && !moves.is_empty() {
                plans.push(Plan {
                    ram: ram.clone(),
                    side,
                    ce: ce.unwrap_or(json!("1")),
                    moves,
                });
            }
        }
    }

    let cells = module["cells"].as_object_mut().expect("checked above");
    for p in &plans {
        for (_, ff, _) in &p.moves {
            cells.remove(ff);
        }
        let ram = cells.get_mut(&p.ram).expect("planned from this map");
        ram["parameters"][format!("REGMODE_{}", p.side)] = json!("OUTREG");
        ram["connections"][format!("OCE{}", p.side)] = json!([p.ce]);
        for (port, _, q) in &p.moves {
            ram["connections"][port] = json!([q]);
        }
    }
    Ok(plans.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DP16KD whose port B drives two flip-flops (bits 10, 11 -> Q 20, 21, enable 5).
    fn netlist(ff_extra: Value, also_read: bool) -> Value {
        let ff = |name: &str, d: u64, q: u64| {
            let mut c = json!({
                "type": "TRELLIS_FF",
                "parameters": {"CEMUX": "CE", "CLKMUX": "CLK", "GSR": "DISABLED",
                               "LSRMUX": "LSR", "REGSET": "RESET", "SRMODE": "LSR_OVER_CE"},
                "port_directions": {"CLK": "input", "CE": "input", "DI": "input", "Q": "output"},
                "connections": {"CLK": [2], "CE": [5], "DI": [d], "Q": [q]}
            });
            if let Some(o) = ff_extra.as_object() {
                for (k, v) in o {
                    c["parameters"][k] = v.clone();
                }
            }
            (name.to_string(), c)
        };
        let (n0, f0) = ff("r0", 10, 20);
        let (n1, f1) = ff("r1", 11, 21);
        let mut cells = serde_json::Map::new();
        cells.insert(
            "ram".into(),
            json!({
                "type": "DP16KD",
                "parameters": {"REGMODE_A": "NOREG", "REGMODE_B": "NOREG", "GSR": "DISABLED"},
                "port_directions": {"CLKB": "input", "CEB": "input", "OCEB": "input",
                                    "DOB0": "output", "DOB1": "output", "DOB2": "output"},
                "connections": {"CLKB": [2], "CEB": [4], "OCEB": ["1"],
                                "DOB0": [10], "DOB1": [11], "DOB2": [12]}
            }),
        );
        cells.insert(n0, f0);
        cells.insert(n1, f1);
        let out_bits = if also_read {
            json!([20, 21, 11])
        } else {
            json!([20, 21])
        };
        json!({"modules": {"top": {
            "ports": {"q": {"direction": "output", "bits": out_bits}},
            "cells": cells
        }}})
    }

    #[test]
    fn absorbs_a_register_that_only_follows_the_ram() {
        let mut n = netlist(json!({}), false);
        assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 1);
        let m = &n["modules"]["top"]["cells"];
        assert!(m.get("r0").is_none() && m.get("r1").is_none());
        assert_eq!(m["ram"]["parameters"]["REGMODE_B"], "OUTREG");
        assert_eq!(m["ram"]["parameters"]["REGMODE_A"], "NOREG");
        assert_eq!(m["ram"]["connections"]["OCEB"], json!([5]));
        assert_eq!(m["ram"]["connections"]["DOB0"], json!([20]));
        assert_eq!(m["ram"]["connections"]["DOB1"], json!([21]));
        assert_eq!(m["ram"]["connections"]["DOB2"], json!([12]));
    }

    #[test]
    fn leaves_a_ram_output_with_another_reader() {
        let mut n = netlist(json!({}), true);
        let before = n.clone();
        assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 0);
        assert_eq!(n, before);
    }

    #[test]
    fn leaves_registers_with_a_reset_or_global_set_reset() {
        for extra in [json!({"GSR": "ENABLED"}), json!({"CLKMUX": "INV"})] {
            let mut n = netlist(extra, false);
            let before = n.clone();
            assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 0);
            assert_eq!(n, before);
        }
        let mut n = netlist(json!({}), false);
        n["modules"]["top"]["cells"]["r1"]["connections"]["LSR"] = json!([7]);
        let before = n.clone();
        assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 0);
        assert_eq!(n, before);
    }

    #[test]
    fn leaves_a_ram_port_with_a_reset_or_global_set_reset() {
        let mut n = netlist(json!({}), false);
        n["modules"]["top"]["cells"]["ram"]["connections"]["RSTB"] = json!([7]);
        let before = n.clone();
        assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 0);
        assert_eq!(n, before);
        let mut n = netlist(json!({}), false);
        n["modules"]["top"]["cells"]["ram"]["parameters"]["GSR"] = json!("ENABLED");
        let before = n.clone();
        assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 0);
        assert_eq!(n, before);
        let mut n = netlist(json!({}), false);
        n["modules"]["top"]["cells"]["ram"]["connections"]["RSTB"] = json!(["0"]);
        assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 1);
    }

    #[test]
    fn leaves_registers_with_different_enables() {
        let mut n = netlist(json!({}), false);
        n["modules"]["top"]["cells"]["r1"]["connections"]["CE"] = json!([6]);
        let before = n.clone();
        assert_eq!(absorb_bram_output_regs(&mut n, "top").unwrap(), 0);
        assert_eq!(n, before);
    }
}
