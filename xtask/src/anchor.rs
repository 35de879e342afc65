//! A peer's design measured in the same run as nicgen's (`cargo xtask bench --anchor <dir>`):
//! the rust-hdl checksum stage of `../shared/anchors/rust-hdl/` (`csum512.v`, the stage alone;
//! `pipe512.v`, the stage behind a 16-deep FIFO; both with top `top`).
//!
//! A ratio against a figure from another run or machine is not a measurement, so the anchor is
//! synthesised, placed and simulated by the same functions, flags and stimulus as nicgen's
//! designs, and its simulation runs are interleaved with nicgen's.
//!
//! The simulation stimulus is the anchor's own C++ loop (`vl_bench_rusthdl.cpp`), generated for
//! both designs from their port lists: each cycle the 32-bit words of `tdata` from the LCG
//! `x = x * 1103515245 + 12345`, `tkeep` all ones, `tvalid` = 1, `tlast` every 24th beat, the
//! output's `tready` = bit 7 of the LCG (about half the cycles). Every output is folded into a
//! sink each cycle in both, so neither can be optimised away.

use crate::cpp_loop::{build, fold_output, Loop};
use crate::tools::Design;
use anyhow::{anyhow, bail, Context, Result};
use nicgen_edsl::ir::Dir;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The anchor's checksum stage alone.
pub(crate) const STAGE: &str = "csum512.v";
/// The anchor's checksum stage fed by its 16-deep FIFO.
pub(crate) const STAGE_FIFO: &str = "pipe512.v";

/// Copy anchor file `file` of `dir` into `target/bench/anchor_<stem>/` and read its top's ports.
pub(crate) fn design(root: &Path, dir: &Path, file: &str) -> Result<Design> {
    let src = dir.join(file);
    let text = std::fs::read_to_string(&src).with_context(|| {
        format!(
            "reading {} (--anchor expects the rust-hdl anchor directory with {STAGE} and {STAGE_FIFO})",
            src.display()
        )
    })?;
    let stem = file.trim_end_matches(".v");
    let out = root.join("target/bench").join(format!("anchor_{stem}"));
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join(file), &text)?;
    Ok(Design {
        dir: out,
        top: "top".into(),
        files: vec![file.into()],
        ports: top_ports(&text).with_context(|| format!("ports of `top` in {}", src.display()))?,
    })
}

/// The ports of module `top`, from its `input`/`output` declarations (rust-hdl writes one per
/// line: `input wire  [511:0] s_tdata;`).
fn top_ports(verilog: &str) -> Result<Vec<(String, Dir, u32)>> {
    let body = verilog
        .split("\nmodule ")
        .find(|m| m.trim_start().starts_with("top("))
        .ok_or_else(|| anyhow!("no `module top(`"))?;
    let body = body.split("endmodule").next().unwrap_or(body);
    let mut ports = Vec::new();
    for line in body.lines().map(str::trim) {
        let (dir, rest) = if let Some(r) = line.strip_prefix("input ") {
            (Dir::Input, r)
        } else if let Some(r) = line.strip_prefix("output ") {
            (Dir::Output, r)
        } else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let rest = rest
            .trim_start()
            .trim_start_matches("wire")
            .trim_start_matches("reg")
            .trim();
        let (width, name) = match rest.strip_prefix('[') {
            Some(r) => {
                let (range, name) = r
                    .split_once(']')
                    .ok_or_else(|| anyhow!("bad range in `{line}`"))?;
                let (hi, lo) = range
                    .split_once(':')
                    .ok_or_else(|| anyhow!("bad range in `{line}`"))?;
                let hi: u32 = hi.trim().parse().with_context(|| format!("`{line}`"))?;
                let lo: u32 = lo.trim().parse().with_context(|| format!("`{line}`"))?;
                (hi - lo + 1, name.trim())
            }
            None => (1, rest),
        };
        ports.push((name.to_string(), dir, width));
    }
    if ports.is_empty() {
        bail!("no input/output declarations");
    }
    Ok(ports)
}

/// What a port does in the anchor's stimulus, by name, for nicgen's names (`clk`, `rst`,
/// `s_axis_tdata`, `m_axis_csum_tready`) and rust-hdl's (`clock`, `s_tdata`, `m_tready`).
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Clock,
    Reset,
    Data,
    Keep,
    Valid,
    Last,
    Ready,
    Zero,
}

fn role(name: &str) -> Role {
    match name {
        "clk" | "clock" => Role::Clock,
        "rst" | "reset" => Role::Reset,
        "s_axis_tdata" | "s_tdata" => Role::Data,
        "s_axis_tkeep" | "s_tkeep" => Role::Keep,
        "s_axis_tvalid" | "s_tvalid" => Role::Valid,
        "s_axis_tlast" | "s_tlast" => Role::Last,
        n if n.starts_with('m') && n.ends_with("tready") => Role::Ready,
        _ => Role::Zero,
    }
}

/// The C++ main with the anchor's stimulus for design `d` (see the module doc).
pub(crate) fn sim_main(d: &Design) -> Result<String> {
    let clock = d
        .ports
        .iter()
        .find(|p| role(&p.0) == Role::Clock)
        .map(|p| p.0.clone())
        .ok_or_else(|| anyhow!("{}: no clock port", d.top))?;
    let reset = d
        .ports
        .iter()
        .find(|p| role(&p.0) == Role::Reset)
        .map(|p| p.0.clone());
    let mut drive = String::new();
    let mut sink = String::new();
    for (name, dir, w) in &d.ports {
        let r = role(name);
        if matches!(r, Role::Clock | Role::Reset) {
            continue;
        }
        if *dir == Dir::Output {
            fold_output(&mut sink, name, *w);
            continue;
        }
        match (r, *w) {
            (Role::Data, w) if w > 64 => {
                let _ = writeln!(
                    drive,
                    "        for (int w = 0; w < {}; w++) {{ x = x * 1103515245u + 12345u; t->{name}[w] = x; }}",
                    w.div_ceil(32)
                );
            }
            (Role::Keep, 64) => {
                let _ = writeln!(drive, "        t->{name} = ~0ULL;");
            }
            (Role::Keep, w) if w < 64 => {
                let _ = writeln!(drive, "        t->{name} = (1ULL << {w}) - 1;");
            }
            (Role::Valid, 1) => {
                let _ = writeln!(drive, "        t->{name} = 1;");
            }
            (Role::Last, 1) => {
                let _ = writeln!(drive, "        t->{name} = (c % 24) == 23;");
            }
            (Role::Ready, 1) => {
                let _ = writeln!(drive, "        t->{name} = (x >> 7) & 1;");
            }
            (Role::Zero, w) if w <= 64 => {
                let _ = writeln!(drive, "        t->{name} = 0;");
            }
            (r, w) => {
                if r != Role::Zero {
                    bail!(
                        "{}: port `{name}` ({w} bits) does not fit the anchor's stimulus",
                        d.top
                    );
                }
                let _ = writeln!(
                    drive,
                    "        for (int w = 0; w < {}; w++) t->{name}[w] = 0;",
                    w.div_ceil(32)
                );
            }
        }
    }
    Ok(Loop {
        what: "under the rust-hdl anchor's stimulus",
        globals: "",
        state: "    unsigned x = 1;\n",
        clock: &clock,
        reset: reset.as_deref(),
        drive: &drive,
        sink: &sink,
    }
    .source(&d.top))
}

/// Verilate `d` with [`sim_main`] under the flags of nicgen's own simulation benchmark plus
/// `-Wno-fatal` (rust-hdl's Verilog has width warnings; the flag changes no generated code);
/// returns the binary.
pub(crate) fn sim_build(d: &Design) -> Result<PathBuf> {
    build(
        d,
        "anchor_main.cpp",
        &sim_main(d)?,
        "obj_anchor",
        &["-Wno-fatal"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOP: &str = "\n\nmodule top(clock,s_tdata,m_tready,m_csum);\n    input wire  clock;\n    \
        input wire  [511:0] s_tdata;\n    input wire  m_tready;\n    output reg  [15:0] m_csum;\nendmodule\n\
        \nmodule top$fifo(clock,read);\n    input wire  clock;\n    input wire  read;\nendmodule\n";

    #[test]
    fn ports_of_top_only() {
        let p = top_ports(TOP).unwrap();
        let names: Vec<_> = p
            .iter()
            .map(|p| (p.0.as_str(), p.1 == Dir::Input, p.2))
            .collect();
        assert_eq!(
            names,
            [
                ("clock", true, 1),
                ("s_tdata", true, 512),
                ("m_tready", true, 1),
                ("m_csum", false, 16)
            ]
        );
    }

    #[test]
    fn the_stimulus_drives_every_role() {
        let d = Design {
            dir: PathBuf::new(),
            top: "top".into(),
            files: vec![],
            ports: top_ports(TOP).unwrap(),
        };
        let cpp = sim_main(&d).unwrap();
        assert!(cpp.contains("t->s_tdata[w] = x;"), "{cpp}");
        assert!(cpp.contains("t->m_tready = (x >> 7) & 1;"), "{cpp}");
        assert!(
            cpp.contains("sink = sink * 31 + (uint64_t)t->m_csum;"),
            "{cpp}"
        );
        assert!(!cpp.contains("t->rst"), "no reset port, no reset drive");
    }
}
