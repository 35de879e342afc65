//! From the generated Verilog back to the Rust that made it.
//!
//! Every declaration and assignment the generator writes ends in `// @[file:line]`, the Rust
//! line that made it. The tools speak Verilog: a lint warning names `nic_core.v:123`, a timing
//! path names a flattened register `u_rx.u_parse.meta_rd_p4`. This module reads a generated
//! design once and turns either into the Rust line, so `cargo xtask lint` and `cargo xtask sta`
//! print where to look in `hdl/`.

use std::collections::HashMap;
use std::path::Path;

/// One module of the generated design.
#[derive(Default)]
struct ModuleText {
    /// Instance name -> module name.
    insts: HashMap<String, String>,
    /// Declared name (wire, reg, port, memory) -> Rust location.
    decls: HashMap<String, String>,
}

/// The Rust locations of a generated design, by file line and by hierarchical name.
#[derive(Default)]
pub(crate) struct RustLines {
    modules: HashMap<String, ModuleText>,
    /// File name -> its lines.
    files: HashMap<String, Vec<String>>,
}

/// The `file:line` inside a `// @[file:line]` comment.
fn loc_of(line: &str) -> Option<&str> {
    let i = line.find("// @[")?;
    let rest = &line[i + 5..];
    Some(&rest[..rest.find(']')?])
}

/// The identifier a declaration line declares (`wire [3:0] x;`, `output reg y,`, `reg m [0:7];`).
fn declared(line: &str) -> Option<String> {
    let code = line.split("//").next()?.trim();
    let code = code.trim_start_matches("(* keep *)").trim();
    let code = code.split('=').next()?;
    let mut plain = String::new();
    let mut depth = 0i32;
    for c in code.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let toks: Vec<&str> = plain
        .split(|c: char| c.is_whitespace() || c == ';' || c == ',')
        .filter(|t| !t.is_empty())
        .collect();
    if !matches!(
        *toks.first()?,
        "wire" | "reg" | "input" | "output" | "localparam"
    ) {
        return None;
    }
    Some(toks.last()?.to_string())
}

impl RustLines {
    /// Read the Verilog files `files` (as listed in `files.f`) under `dir`.
    pub(crate) fn read(dir: &Path, files: &[String]) -> RustLines {
        let mut out = RustLines::default();
        for f in files {
            let Ok(text) = std::fs::read_to_string(dir.join(f)) else {
                continue;
            };
            let lines: Vec<String> = text.lines().map(String::from).collect();
            let mut cur: Option<String> = None;
            for l in &lines {
                let t = l.trim();
                if let Some(rest) = t.strip_prefix("module ") {
                    let name = rest.split([' ', '(']).next().unwrap_or("").to_string();
                    out.modules.entry(name.clone()).or_default();
                    cur = Some(name);
                    continue;
                }
                let Some(m) = cur.as_ref().and_then(|c| out.modules.get_mut(c)) else {
                    continue;
                };
                // An instance: `child u_name ( // @[...]`.
                if t.ends_with(']') && t.contains(" ( // @[") {
                    let mut w = t.split_whitespace();
                    if let (Some(module), Some(inst)) = (w.next(), w.next()) {
                        m.insts.insert(inst.to_string(), module.to_string());
                    }
                    continue;
                }
                if let (Some(name), Some(loc)) = (declared(l), loc_of(l)) {
                    m.decls.insert(name, loc.to_string());
                }
            }
            let base = Path::new(f)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| f.clone());
            out.files.insert(base, lines);
        }
        out
    }

    /// A generated design written by `nicgen generate` (its `files.f`).
    pub(crate) fn read_dir(dir: &Path) -> RustLines {
        let files: Vec<String> = std::fs::read_to_string(dir.join("files.f"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect();
        RustLines::read(dir, &files)
    }

    /// The Rust location of Verilog line `line` (1-based) of `file`: the line's own comment,
    /// else the nearest one above it in the same statement or declaration.
    pub(crate) fn at(&self, file: &str, line: usize) -> Option<String> {
        let base = Path::new(file).file_name()?.to_string_lossy().into_owned();
        let lines = self.files.get(&base)?;
        let mut i = line.checked_sub(1)?;
        // A multi-line statement carries its comment on its last line: look down first.
        for l in lines.iter().skip(i).take(8) {
            if let Some(loc) = loc_of(l) {
                return Some(loc.to_string());
            }
            if l.trim_end().ends_with(';') || l.trim().is_empty() {
                break;
            }
        }
        loop {
            if let Some(loc) = loc_of(lines.get(i)?) {
                return Some(loc.to_string());
            }
            i = i.checked_sub(1)?;
        }
    }

    /// The Rust location of a flattened name below `top` (`u_rx.u_parse.meta_rd_p4`): the
    /// instances are followed module by module, the last part is a declaration.
    pub(crate) fn of_path(&self, top: &str, path: &str) -> Option<String> {
        let mut module = top.to_string();
        let parts: Vec<&str> = path.split('.').collect();
        for inst in &parts[..parts.len().saturating_sub(1)] {
            module = self.modules.get(&module)?.insts.get(*inst)?.clone();
        }
        let m = self.modules.get(&module)?;
        let name = parts.last()?;
        if let Some(l) = m.decls.get(*name) {
            return Some(l.clone());
        }
        // A register bit or a derived cell name: the longest declared prefix.
        m.decls
            .iter()
            .filter(|(d, _)| name.starts_with(d.as_str()))
            .max_by_key(|(d, _)| d.len())
            .map(|(_, l)| l.clone())
    }

    /// `text` (tool output) with ` [rust: file:line]` after every `<name>.v:<line>` it cites.
    pub(crate) fn annotate(&self, text: &str) -> String {
        text.lines()
            .map(|l| match self.cited(l) {
                Some(loc) => format!("{l}  [rust: {loc}]"),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The Rust location of the first `<file>.v:<line>` a line of tool output cites.
    fn cited(&self, l: &str) -> Option<String> {
        let i = l.find(".v:")?;
        let start = l[..i]
            .rfind(|c: char| c.is_whitespace() || c == '/' || c == '(' || c == '\'')
            .map(|k| k + 1)
            .unwrap_or(0);
        let file = format!("{}.v", &l[start..i]);
        let num: String = l[i + 3..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        self.at(&file, num.parse().ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOP: &str = "module top (
    input  wire clk,
    input  wire a, // @[hdl/src/top.rs:10]
    output wire q // @[hdl/src/top.rs:11]
);

    wire b; // @[hdl/src/top.rs:12]

    assign b = a &
        a; // @[hdl/src/top.rs:13]

    child u_c ( // @[hdl/src/top.rs:14]
        .clk(clk),
        .d(b),
        .q(q)
    );

endmodule
";
    const CHILD: &str = "module child (
    input  wire clk,
    input  wire d, // @[hdl/src/child.rs:3]
    output reg  q // @[hdl/src/child.rs:4]
);

    (* keep *) reg  [3:0] meta_rd_p4; // @[hdl/src/child.rs:7]
endmodule
";

    fn lines() -> RustLines {
        let dir = std::env::temp_dir().join(format!("xtask-rust-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("top.v"), TOP).unwrap();
        std::fs::write(dir.join("child.v"), CHILD).unwrap();
        RustLines::read(&dir, &["child.v".into(), "top.v".into()])
    }

    #[test]
    fn lint_lines_map_to_rust() {
        let r = lines();
        assert_eq!(r.at("top.v", 7).as_deref(), Some("hdl/src/top.rs:12"));
        // The first line of a two-line assignment.
        assert_eq!(r.at("top.v", 9).as_deref(), Some("hdl/src/top.rs:13"));
        let out = r.annotate("%Warning-UNUSEDSIGNAL: top.v:7:10: Signal is not used: 'b'");
        assert!(out.ends_with("[rust: hdl/src/top.rs:12]"), "{out}");
        assert_eq!(r.annotate("no file here"), "no file here");
    }

    #[test]
    fn flattened_names_map_to_rust() {
        let r = lines();
        assert_eq!(r.of_path("top", "b").as_deref(), Some("hdl/src/top.rs:12"));
        assert_eq!(
            r.of_path("top", "u_c.meta_rd_p4").as_deref(),
            Some("hdl/src/child.rs:7")
        );
        assert_eq!(
            r.of_path("top", "u_c.meta_rd_p4_TRELLIS_FF_Q").as_deref(),
            Some("hdl/src/child.rs:7")
        );
        assert_eq!(r.of_path("top", "u_x.y"), None);
    }
}
