//! Every block's doc points at its golden model and its test, and the pointers resolve.
//!
//! A file under `hdl/src` that builds a module (`Module::build(` or `Block::build(` in its code)
//! must have, in its `//!` doc, an entry (a list item or a paragraph) with `Golden model:` and
//! `test:` (or `tests:`). The golden model names `nicgen_model::` paths (a module, or an item
//! in it), or is the identity or `none` with a reason, for plumbing; the test names at least
//! one file, as a path from the repository root in backticks. Any file's `Golden model:` and
//! `test:` entries must resolve, and so must every `testbench/...` or `generators/...` path in a
//! `//!` doc:
//!
//! - `nicgen_model::a::b`: `testbench/model/src/a.rs` or `a/mod.rs` exists, and `b` is a
//!   module under it or appears as `pub fn|struct|enum|mod|const|type|static|trait b` in it;
//! - a test path exists (a file).
//!
//! The test fails listing every offender with its file and line.

use std::fs;
use std::path::{Path, PathBuf};

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// One entry of a `//!` doc (a list item with its continuation lines, or a paragraph): its
/// text with `**` removed, and the line (1-based) each byte of it came from.
struct Entry {
    text: String,
    lines: Vec<usize>,
}

impl Entry {
    fn line_at(&self, at: usize) -> usize {
        self.lines[at.min(self.lines.len() - 1)]
    }
}

/// The `//!` entries of `src`.
fn entries(src: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut open = false;
    for (i, line) in src.lines().enumerate() {
        let Some(doc) = line.trim_start().strip_prefix("//!") else {
            open = false;
            continue;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc).replace("**", "");
        if doc.trim().is_empty() {
            open = false;
            continue;
        }
        if !open || doc.starts_with("- ") {
            out.push(Entry {
                text: String::new(),
                lines: Vec::new(),
            });
        } else {
            let e = out.last_mut().unwrap();
            e.text.push(' ');
            e.lines.push(i + 1);
        }
        let e = out.last_mut().unwrap();
        e.lines.extend(std::iter::repeat_n(i + 1, doc.len()));
        e.text.push_str(&doc);
        open = true;
    }
    out
}

/// Where `word` (ASCII, matched without case) starts in `text` at a word boundary, followed by
/// `:`.
fn marker(text: &str, word: &str) -> Option<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(k) = lower[from..].find(word) {
        let at = from + k;
        let end = at + word.len();
        let boundary = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
        if boundary && lower[end..].starts_with(':') {
            return Some((at, end + 1));
        }
        from = end;
    }
    None
}

/// The test marker (`test:` or `tests:`): its start and the end of the marker.
fn test_marker(text: &str) -> Option<(usize, usize)> {
    [marker(text, "test"), marker(text, "tests")]
        .into_iter()
        .flatten()
        .min()
}

/// The backticked tokens of `text` with their offsets.
fn backticked(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(a) = text[rest..].find('`') {
        let start = rest + a + 1;
        let Some(b) = text[start..].find('`') else {
            break;
        };
        out.push((start, &text[start..start + b]));
        rest = start + b + 1;
    }
    out
}

/// The `nicgen_model::` paths in `text` with their offsets.
fn model_paths(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = text[from..].find("nicgen_model::") {
        let at = from + k;
        let len = text[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(text.len() - at);
        out.push((at, text[at..at + len].trim_end_matches(':')));
        from = at + len;
    }
    out
}

/// Why `path` (`nicgen_model::a::b`) does not resolve in the model crate of the repository at
/// `root`, or `None` when it does.
fn unresolved(root: &Path, path: &str) -> Option<String> {
    let model_src = root.join("testbench/model/src");
    let segs: Vec<&str> = path.split("::").skip(1).collect();
    if segs.is_empty() {
        return Some("names no module".into());
    }
    let (mut dir, mut file) = (model_src.to_path_buf(), model_src.join("lib.rs"));
    for (i, seg) in segs.iter().enumerate() {
        let (flat, nested) = (dir.join(format!("{seg}.rs")), dir.join(seg).join("mod.rs"));
        if flat.is_file() || nested.is_file() {
            file = if flat.is_file() { flat } else { nested };
            dir = dir.join(seg);
            continue;
        }
        let shown = file.strip_prefix(root).unwrap_or(&file);
        if i + 1 != segs.len() {
            return Some(format!(
                "`{seg}` is not a module (no {seg}.rs or {seg}/mod.rs beside {})",
                shown.display()
            ));
        }
        let src = fs::read_to_string(&file).unwrap();
        let kinds = [
            "fn", "struct", "enum", "mod", "const", "type", "static", "trait",
        ];
        let found = src.lines().any(|l| {
            let l = l.trim_start();
            kinds.iter().any(|k| {
                l.strip_prefix("pub ")
                    .and_then(|r| r.strip_prefix(k))
                    .and_then(|r| r.strip_prefix(' '))
                    .and_then(|r| r.strip_prefix(seg))
                    .is_some_and(|r| {
                        !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                    })
            })
        });
        return (!found).then(|| {
            format!(
                "no `pub fn|struct|enum|mod|const|type|static|trait {seg}` in {}",
                shown.display()
            )
        });
    }
    None
}

/// Whether the code of `src` (outside comments) builds a module.
fn builds_a_module(src: &str) -> bool {
    src.lines().any(|l| {
        !l.trim_start().starts_with("//")
            && (l.contains("Module::build(") || l.contains("Block::build("))
    })
}

/// The offenders of one file (`name` as shown, `src` its text), checked against the
/// repository at `root`.
fn check_file(root: &Path, name: &str, src: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let mut complete = false;
    for e in entries(src) {
        let golden = marker(&e.text, "golden model");
        let test = test_marker(&e.text);
        if golden.is_none() && test.is_none() {
            continue;
        }
        if let Some((g_at, g_end)) = golden {
            let g_stop = test.map_or(
                e.text.len(),
                |t| if t.0 > g_end { t.0 } else { e.text.len() },
            );
            let g_text = &e.text[g_end..g_stop];
            let paths = model_paths(g_text);
            for (at, p) in &paths {
                if let Some(why) = unresolved(root, p) {
                    let line = e.line_at(g_end + at);
                    bad.push(format!("{name}:{line}: golden model `{p}`: {why}"));
                }
            }
            let plain = g_text.trim_start().to_ascii_lowercase();
            let reasoned_none = plain
                .strip_prefix("none")
                .is_some_and(|r| r.trim_matches(|c: char| !c.is_ascii_alphanumeric()).len() > 2);
            if paths.is_empty() && !plain.starts_with("identity") && !reasoned_none {
                bad.push(format!(
                    "{name}:{}: the golden model names no `nicgen_model::` path (nor the \
                     identity, nor `none` with a reason)",
                    e.line_at(g_at)
                ));
            }
        }
        if let Some((t_at, t_end)) = test {
            let files: Vec<(usize, &str)> = backticked(&e.text[t_end..])
                .into_iter()
                .filter(|(_, t)| t.contains('/'))
                .collect();
            if files.is_empty() {
                bad.push(format!(
                    "{name}:{}: the test names no file (a path from the repository root, in \
                     backticks)",
                    e.line_at(t_at)
                ));
            }
            for (at, f) in &files {
                if !root.join(f).is_file() {
                    let line = e.line_at(t_end + at);
                    bad.push(format!("{name}:{line}: test `{f}` does not exist"));
                }
            }
            complete |= golden.is_some() && !files.is_empty();
        }
    }
    for e in entries(src) {
        for (at, t) in backticked(&e.text) {
            let repo_path = t.starts_with("testbench/") || t.starts_with("generators/");
            if repo_path && !t.contains(['<', '*', ' ']) && !root.join(t).exists() {
                let line = e.line_at(at);
                let msg = format!("{name}:{line}: `{t}` does not exist");
                if !bad
                    .iter()
                    .any(|b| b.starts_with(&format!("{name}:{line}:")) && b.contains(t))
                {
                    bad.push(msg);
                }
            }
        }
    }
    if builds_a_module(src) && !complete {
        bad.push(format!(
            "{name}: builds a module but its `//!` doc has no entry with `Golden model:` and \
             `test:` naming a test file"
        ));
    }
    bad
}

#[test]
fn every_block_names_a_golden_model_and_a_test_that_exist() {
    let root = root();
    let files = rust_files(&root.join("hdl/src"));
    let mut bad = Vec::new();
    let mut blocks = 0;
    for f in &files {
        let src = fs::read_to_string(f).unwrap();
        blocks += usize::from(builds_a_module(&src));
        let name = f.strip_prefix(&root).unwrap().display().to_string();
        bad.extend(check_file(&root, &name, &src));
    }
    assert!(
        blocks >= 20,
        "only {blocks} files under hdl/src build a module: is the walk broken?"
    );
    assert!(
        bad.is_empty(),
        "{} stale or missing pointers in hdl/src docs:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The checker itself: good pointers pass, and each kind of stale or missing pointer is
/// reported on its line.
#[test]
fn the_checker_reports_each_kind_of_bad_pointer() {
    let root = root();
    let check = |src: &str| check_file(&root, "x.rs", src);
    let good = "//! A block.\n//!\n//! - Golden model: `nicgen_model::tx::insert_checksums` (and\n\
                //!   `nicgen_model::checksum`); test:\n//!   `testbench/tests/docs.rs`.\n\
                fn f() { Module::build(\"x\", || {}); }\n";
    assert_eq!(check(good), Vec::<String>::new());
    let identity =
        "//! - **Golden model**: identity on frames; **test**: `testbench/tests/docs.rs`.\n\
                    fn f() { Module::build(\"x\", || {}); }\n";
    assert_eq!(check(identity), Vec::<String>::new());
    let cases = [
        (
            "//! - Golden model: `nicgen_model::tx::no_such_fn`; test: `testbench/tests/docs.rs`.\n",
            "x.rs:1: golden model `nicgen_model::tx::no_such_fn`: no `pub",
        ),
        (
            "//! - Golden model: `nicgen_model::no_such_mod::f`; test: `testbench/tests/docs.rs`.\n",
            "x.rs:1: golden model `nicgen_model::no_such_mod::f`: `no_such_mod` is not a module",
        ),
        (
            "//!\n//! - Golden model: `nicgen_model::tx`; test:\n//!   `testbench/tests/gone.rs`.\n",
            "x.rs:3: test `testbench/tests/gone.rs` does not exist",
        ),
        (
            "//! - Golden model: the usual one; test: `testbench/tests/docs.rs`.\n",
            "x.rs:1: the golden model names no `nicgen_model::` path",
        ),
        (
            "//! - Golden model: `nicgen_model::tx`; test: the unit tests below.\n",
            "x.rs:1: the test names no file",
        ),
        (
            "//! Tested through `generators/nicgen/tests/gone.rs`.\n",
            "x.rs:1: `generators/nicgen/tests/gone.rs` does not exist",
        ),
        (
            "//! A block without pointers.\nfn f() { Module::build(\"x\", || {}); }\n",
            "x.rs: builds a module but its `//!` doc has no entry",
        ),
    ];
    for (src, want) in cases {
        let got = check(src);
        assert!(
            got.len() == 1 && got[0].starts_with(want),
            "{src:?}: got {got:?}, want one offender starting {want:?}"
        );
    }
    // A mention of `Module::build` in a comment is not a module.
    assert!(check("//! Used inside an engine's `Module::build`.\n").is_empty());
}
