//! The model cache: where builds live, how they are keyed, and how concurrent builders agree.
//!
//! Layout under [`cache_dir`]: `models/<key>/libmodel.so`, `runtime/<key>/libverilated.a`,
//! `locks/*.lock`, and `tmp/` for builds in progress. A key is the SHA-256 of every input of a
//! build (texts, tool versions, flags), so an entry never goes stale and is never compared by
//! timestamp. A builder takes the key's file lock, looks again, builds in a fresh directory
//! under `tmp/` and renames the finished directory into place; a reader that sees the artifact
//! without the lock therefore sees a complete one, and of several threads or processes that
//! want the same key exactly one compiles.

use super::{io_err, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The cache root: `$NICGEN_CACHE_DIR`, else `<target dir>/nicgen-cache`. The target dir is
/// `$CARGO_TARGET_DIR`, else the nearest ancestor of the running executable named `target`
/// (test and bench binaries live in `target/<profile>/deps`), else a `target` directory next to
/// the nearest ancestor of `$CARGO_MANIFEST_DIR` (or of this crate's source) that has one, else
/// the system temp dir.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("NICGEN_CACHE_DIR") {
        return PathBuf::from(d);
    }
    target_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("nicgen-cache")
}

/// The cargo target directory this process belongs to, found as [`cache_dir`] describes
/// (without `$NICGEN_CACHE_DIR`); `None` if there is none.
pub fn target_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(t) = exe
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "target"))
        {
            return Some(t.to_path_buf());
        }
    }
    let manifest_dirs = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from(env!("CARGO_MANIFEST_DIR"))]);
    for start in manifest_dirs {
        if let Some(a) = start.ancestors().find(|a| a.join("target").is_dir()) {
            return Some(a.join("target"));
        }
    }
    None
}

/// An exclusive advisory lock on a file (`File::lock`, an `flock` on Linux), released on drop.
/// Works between threads (each lock opens its own file description) and between processes.
pub(super) struct FileLock(fs::File);

impl FileLock {
    pub(super) fn acquire(path: &Path) -> Result<FileLock> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
        }
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io_err(format!("opening lock file {}", path.display())))?;
        f.lock()
            .map_err(io_err(format!("locking {}", path.display())))?;
        Ok(FileLock(f))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A fresh, unique directory under `parent` for a build in progress.
pub(super) fn fresh_dir(parent: &Path, label: &str) -> Result<PathBuf> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = parent.join(format!("{label}-{}-{n}", std::process::id()));
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io_err(format!("removing stale {}", dir.display())))?;
    }
    fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
    Ok(dir)
}

/// Moves a completed build directory into its final place. The caller holds the key's lock, so
/// nobody else is writing `final_dir`; a leftover without the expected artifact is replaced.
pub(super) fn install_dir(from: &Path, final_dir: &Path) -> Result<()> {
    if final_dir.exists() {
        fs::remove_dir_all(final_dir).map_err(io_err(format!(
            "removing incomplete {}",
            final_dir.display()
        )))?;
    }
    if let Some(p) = final_dir.parent() {
        fs::create_dir_all(p).map_err(io_err(format!("creating {}", p.display())))?;
    }
    fs::rename(from, final_dir).map_err(io_err(format!(
        "renaming {} to {}",
        from.display(),
        final_dir.display()
    )))
}

/// SHA-256 over length-prefixed fields, so no two different inputs can concatenate equally.
pub(super) struct KeyHasher(Sha256);

impl KeyHasher {
    pub(super) fn new(domain: &str) -> Self {
        let mut h = KeyHasher(Sha256::new());
        h.field(domain.as_bytes());
        h
    }
    fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }
    pub(super) fn str(&mut self, s: &str) -> &mut Self {
        self.field(s.as_bytes())
    }
    pub(super) fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn file_lock_serializes_threads() {
        let dir = std::env::temp_dir().join(format!("nicgen-lock-test-{}", std::process::id()));
        let path = dir.join("x.lock");
        let inside = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let _l = FileLock::acquire(&path).unwrap();
                    assert_eq!(
                        inside.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two holders at once"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    inside.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        let _ = fs::remove_dir_all(&dir);
    }
}
