//! Which Rust function made a netlist node: the emitter names a temporary after it
//! (`slot_addr_l131`), as SpinalHDL names a condition after its source (`when_Stream_l368`).
//!
//! Every node records the file and line of the Rust that made it (`#[track_caller]`); the
//! function around that line is read from the source file, found relative to the workspace
//! (the paths `rustc` records are relative to it) or the current directory. A file that cannot
//! be read gives its stem instead (`cq_engine_l131`). The scan relies on rustfmt's layout: a
//! function's body ends at the first `}` line indented like its `fn`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One function definition: the line of its `fn`, the line of its closing brace, its name.
type Span = (u32, u32, String);

thread_local! {
    static FILES: RefCell<HashMap<&'static str, Option<Vec<Span>>>> = RefCell::new(HashMap::new());
}

/// The name to give a value made at `file:line` with no name of its own: the enclosing
/// function, else the file's stem.
pub fn origin(file: &'static str, line: u32) -> String {
    let f = FILES.with(|m| {
        m.borrow_mut()
            .entry(file)
            .or_insert_with(|| read(file).map(|t| spans(&t)))
            .as_ref()
            .and_then(|spans| enclosing(spans, line))
    });
    f.unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "n".into())
    })
}

fn read(file: &str) -> Option<String> {
    let p = Path::new(file);
    let mut tries: Vec<PathBuf> = vec![p.to_path_buf()];
    if p.is_relative() {
        // generators/edsl -> the workspace root.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        tries.insert(0, root.join(p));
    }
    tries.iter().find_map(|t| std::fs::read_to_string(t).ok())
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// Every `fn` in the text with the line span of its body.
fn spans(text: &str) -> Vec<Span> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let Some(name) = fn_name(t) else { continue };
        let ind = indent(l);
        let opens = l.matches('{').count();
        if opens > 0 && opens == l.matches('}').count() {
            out.push(((i + 1) as u32, (i + 1) as u32, name));
            continue;
        }
        let end = lines[i + 1..]
            .iter()
            .position(|m| indent(m) == ind && m.trim_start().starts_with('}'))
            .map(|k| i + 1 + k)
            .unwrap_or(i);
        out.push(((i + 1) as u32, (end + 1) as u32, name));
    }
    out
}

/// `name` when the line defines `fn name` (with any visibility or qualifiers before it).
fn fn_name(t: &str) -> Option<String> {
    let mut words = t.split_whitespace();
    let mut prev = "";
    for w in words.by_ref() {
        if prev == "fn" {
            let n: String = w
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            return (!n.is_empty()).then_some(n);
        }
        let qualifier = matches!(
            w,
            "pub" | "pub(crate)" | "pub(super)" | "const" | "unsafe" | "async" | "extern" | "fn"
        ) || w.starts_with("pub(")
            || w.starts_with('"');
        if !qualifier {
            return None;
        }
        prev = w;
    }
    None
}

/// The innermost function whose body holds `line`.
fn enclosing(spans: &[Span], line: u32) -> Option<String> {
    spans
        .iter()
        .filter(|(a, b, _)| *a <= line && line <= *b)
        .max_by_key(|(a, _, _)| *a)
        .map(|(_, _, n)| n.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_innermost_function() {
        let src = "\
//! doc
pub fn outer(x: u32) -> u32 {
    let f = |y| y + 1;
    fn inner() -> u32 {
        3
    }
    f(x) + inner()
}

pub(crate) fn other<T>() {}
";
        let s = spans(src);
        assert_eq!(enclosing(&s, 3).as_deref(), Some("outer"));
        assert_eq!(enclosing(&s, 5).as_deref(), Some("inner"));
        assert_eq!(enclosing(&s, 7).as_deref(), Some("outer"));
        assert_eq!(enclosing(&s, 10).as_deref(), Some("other"));
        assert_eq!(enclosing(&s, 1), None);
    }

    #[test]
    fn falls_back_to_the_file_stem() {
        assert_eq!(origin("no/such/dir/cq_engine.rs", 12), "cq_engine");
    }
}
