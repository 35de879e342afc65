//! Stamps the generator's git commit into the build, for the identification registers
//! (`id.GIT_HASH`, `id.GIT_FLAGS`; `nicgen_hdl::host::bar_regs::BuildInfo::current`).
//!
//! Sets `NICGEN_GIT_HASH` (40 hex digits of `git rev-parse HEAD`, empty when not in a git
//! checkout or git is missing) and `NICGEN_GIT_DIRTY` (`1` when `git status --porcelain
//! --untracked-files=no` lists anything, as `git describe --dirty`; untracked files do not count).
//!
//! Reruns when HEAD moves (HEAD, the branch ref, packed-refs), when the index changes (commit,
//! add) and when this crate's files change. An edit to a tracked file of another crate that is
//! neither staged nor followed by a rebuild of this crate does not refresh the dirty flag until
//! one of those happens: watching the whole work tree would rerun this on every build, since
//! `target/` lives inside it. `--no-optional-locks` keeps `git status` from rewriting the index
//! (which would trigger the next rerun).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    for own in ["build.rs", "Cargo.toml", "src", "presets"] {
        println!("cargo:rerun-if-changed={own}");
    }
    let hash = git(&["rev-parse", "HEAD"])
        .filter(|h| h.len() >= 40 && h.bytes().all(|c| c.is_ascii_hexdigit()))
        .map(|h| h[..40].to_ascii_lowercase());
    let dirty = hash.is_some()
        && git(&[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ])
        .is_some_and(|s| !s.is_empty());
    if hash.is_some() {
        if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
            let dir = Path::new(&dir);
            watch(&dir.join("HEAD"));
            watch(&dir.join("index"));
        }
        if let Some(common) = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]) {
            let common = Path::new(&common);
            watch(&common.join("packed-refs"));
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch(&common.join(r));
            }
        }
    }
    println!(
        "cargo:rustc-env=NICGEN_GIT_HASH={}",
        hash.unwrap_or_default()
    );
    println!("cargo:rustc-env=NICGEN_GIT_DIRTY={}", u8::from(dirty));
}
