//! The external tools a build runs: finding Verilator, its include directory, the C++ compiler
//! and the archiver; the flags they are run with; running them; and the Verilator runtime,
//! compiled once per toolchain into a static archive that every model links.
//!
//! The tools' version lines and every flag go into the content keys (`cache.rs`), so a new
//! compiler or Verilator gives new cache entries rather than stale ones. The runtime is a
//! static archive, not a shared library, so that each model library carries its own copy and
//! several models can be loaded side by side with `RTLD_LOCAL`. Commands that fail report
//! their command line and the tail of their output, and keep the build directory for a look.

use super::cache::{fresh_dir, install_dir, FileLock, KeyHasher};
use super::progress::{report, BuildStep};
use super::{io_err, Result, VerilatorError};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Compiler flags for the runtime, the generated model and the shim (plus -I and -D flags).
/// `-faligned-new` is what Verilator's own makefile adds for its generated code.
const CXX_FLAGS: &[&str] = &["-std=gnu++17", "-O2", "-fPIC", "-faligned-new"];
/// Flags to link a model library.
pub(super) const LINK_FLAGS: &[&str] = &["-shared", "-Wl,-Bsymbolic", "-Wl,--no-undefined"];
/// Libraries the runtime needs (`-lz` is added when tracing: FST compresses with zlib).
const LINK_LIBS: &[&str] = &["-pthread"];
/// Runtime sources compiled into `libverilated.a`. Verilator 5.006 lists `verilated` and
/// `verilated_threads` in `VM_GLOBAL_FAST` even with `--threads 1`, and `verilated_fst_c`
/// (which itself includes gtkwave's fstapi/fastlz/lz4 C sources) with `--trace-fst`.
pub(super) const RUNTIME_SOURCES: &[&str] = &["verilated.cpp", "verilated_threads.cpp"];
pub(super) const RUNTIME_TRACE_SOURCES: &[&str] = &["verilated_fst_c.cpp"];

// ---------------------------------------------------------------------------------------------
// Discovery

/// The external tools a build uses, with the version strings that go into the cache key.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// The `verilator` executable.
    pub verilator: PathBuf,
    /// First line of `verilator --version`.
    pub verilator_version: String,
    /// Verilator's C++ include directory (holds `verilated.h`).
    pub include_dir: PathBuf,
    /// The C++ compiler (`$CXX` or `c++`).
    pub cxx: PathBuf,
    /// First line of `$CXX --version`.
    pub cxx_version: String,
    /// The archiver (`$AR` or `ar`).
    pub ar: PathBuf,
}

impl Toolchain {
    /// Finds Verilator and the C++ compiler. The result is cached for the process.
    pub fn detect() -> Result<Toolchain> {
        static DETECTED: OnceLock<Toolchain> = OnceLock::new();
        if let Some(tc) = DETECTED.get() {
            return Ok(tc.clone());
        }
        let tc = Self::detect_uncached()?;
        Ok(DETECTED.get_or_init(|| tc).clone())
    }

    fn detect_uncached() -> Result<Toolchain> {
        let verilator = find_verilator()?;
        let version_out = Command::new(&verilator)
            .arg("--version")
            .output()
            .map_err(|e| VerilatorError::NotFound {
                detail: format!("cannot run `{} --version`: {e}", verilator.display()),
            })?;
        let verilator_version = first_line(&version_out.stdout);
        if !version_out.status.success() || !verilator_version.starts_with("Verilator") {
            return Err(VerilatorError::NotFound {
                detail: format!(
                    "`{} --version` printed {:?} ({})",
                    verilator.display(),
                    verilator_version,
                    version_out.status
                ),
            });
        }
        let include_dir = find_include_dir(&verilator)?;
        let cxx = PathBuf::from(std::env::var_os("CXX").unwrap_or_else(|| "c++".into()));
        let cxx_out =
            Command::new(&cxx)
                .arg("--version")
                .output()
                .map_err(|e| VerilatorError::NotFound {
                    detail: format!(
                        "C++ compiler `{}` cannot run ({e}); install g++ or set CXX",
                        cxx.display()
                    ),
                })?;
        let cxx_version = first_line(&cxx_out.stdout);
        let ar = PathBuf::from(std::env::var_os("AR").unwrap_or_else(|| "ar".into()));
        Ok(Toolchain {
            verilator,
            verilator_version,
            include_dir,
            cxx,
            cxx_version,
            ar,
        })
    }
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

fn find_verilator() -> Result<PathBuf> {
    if let Some(v) = std::env::var_os("VERILATOR") {
        let p = PathBuf::from(&v);
        if p.components().count() > 1 {
            return if p.is_file() {
                Ok(p)
            } else {
                Err(VerilatorError::NotFound {
                    detail: format!("VERILATOR={} does not exist", p.display()),
                })
            };
        }
        return which(&p).ok_or_else(|| VerilatorError::NotFound {
            detail: format!("VERILATOR={} is not on PATH", p.display()),
        });
    }
    which(Path::new("verilator")).ok_or_else(|| VerilatorError::NotFound {
        detail: "`verilator` is not on PATH and VERILATOR is unset".into(),
    })
}

fn which(name: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn find_include_dir(verilator: &Path) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(out) = Command::new(verilator)
        .args(["--getenv", "VERILATOR_ROOT"])
        .output()
    {
        let root = first_line(&out.stdout);
        if out.status.success() && !root.is_empty() {
            candidates.push(PathBuf::from(root).join("include"));
        }
    }
    candidates.push(PathBuf::from("/usr/share/verilator/include"));
    candidates.push(PathBuf::from("/usr/local/share/verilator/include"));
    candidates
        .into_iter()
        .find(|d| d.join("verilated.h").is_file())
        .ok_or_else(|| VerilatorError::NotFound {
            detail: "found the verilator executable but not its include directory (verilated.h); \
                 check `verilator --getenv VERILATOR_ROOT`"
                .into(),
        })
}

/// Is Verilator usable on this machine?
pub fn verilator_available() -> bool {
    Toolchain::detect().is_ok()
}

/// Gate for tests that need Verilator (and the C++ compiler it builds with): `true` when
/// usable; otherwise [`crate::require::require`] decides between failing (under
/// `NICGEN_REQUIRE_TOOLS=1`) and skipping.
///
/// ```no_run
/// if !nicgen_tb::verilator::verilator_required() { return; }
/// ```
pub fn verilator_required() -> bool {
    crate::require::require(
        "Verilator",
        Toolchain::detect().map(|_| ()).map_err(|e| e.to_string()),
    )
}

// ---------------------------------------------------------------------------------------------
// Commands and flags

fn command_line(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
            parts.push(format!("'{}'", a.replace('\'', "'\\''")));
        } else {
            parts.push(a.into_owned());
        }
    }
    parts.join(" ")
}

/// Runs a command to completion; on failure returns the command line and its output's tail.
pub(super) fn run(mut cmd: Command, what: &str, dir: &Path) -> Result<()> {
    let line = command_line(&cmd);
    let out = cmd.output().map_err(|e| VerilatorError::CommandFailed {
        what: what.to_string(),
        command: line.clone(),
        status: format!("could not start: {e}"),
        output_tail: String::new(),
        dir: dir.to_path_buf(),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    Err(VerilatorError::CommandFailed {
        what: what.to_string(),
        command: line,
        status: out.status.to_string(),
        output_tail: tail,
        dir: dir.to_path_buf(),
    })
}

/// Runs `jobs` on at most `available_parallelism` threads, calling `finished` with the count
/// of jobs done after each; returns the first error.
pub(super) fn run_parallel(
    jobs: Vec<(Command, String)>,
    dir: &Path,
    finished: &(dyn Fn(usize) + Sync),
) -> Result<()> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len())
        .max(1);
    let queue = Mutex::new(jobs.into_iter());
    let first_error: Mutex<Option<VerilatorError>> = Mutex::new(None);
    let done = Mutex::new(0usize);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                if first_error.lock().unwrap().is_some() {
                    return;
                }
                let Some((cmd, what)) = queue.lock().unwrap().next() else {
                    return;
                };
                if let Err(e) = run(cmd, &what, dir) {
                    first_error.lock().unwrap().get_or_insert(e);
                    return;
                }
                let mut n = done.lock().unwrap();
                *n += 1;
                finished(*n);
            });
        }
    });
    match first_error.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Verilator's configuration macros, as its own makefile passes them, plus `NICGEN_TRACE`
/// (defined only when tracing) for shims that test that instead of `VM_TRACE_FST`.
fn defines(trace: bool) -> Vec<String> {
    let t = u8::from(trace);
    let mut d = vec![
        "-DVM_COVERAGE=0".to_string(),
        "-DVM_SC=0".into(),
        format!("-DVM_TRACE={t}"),
        format!("-DVM_TRACE_FST={t}"),
        "-DVM_TRACE_VCD=0".into(),
    ];
    if trace {
        d.push("-DNICGEN_TRACE=1".into());
    }
    d
}

pub(super) fn compile_flags(tc: &Toolchain, trace: bool) -> Vec<String> {
    let inc = tc.include_dir.display();
    let mut f: Vec<String> = CXX_FLAGS.iter().map(|s| s.to_string()).collect();
    f.push(format!("-I{inc}"));
    f.push(format!("-I{inc}/vltstd"));
    f.extend(defines(trace));
    f
}

pub(super) fn link_libs(trace: bool) -> Vec<&'static str> {
    let mut l = LINK_LIBS.to_vec();
    if trace {
        l.push("-lz");
    }
    l
}

// ---------------------------------------------------------------------------------------------
// The runtime archive

/// Builds (or finds) `runtime/<key>/libverilated.a` for this toolchain and trace option.
pub(super) fn runtime_archive(tc: &Toolchain, cache: &Path, trace: bool) -> Result<PathBuf> {
    let sources: Vec<&str> = RUNTIME_SOURCES
        .iter()
        .chain(if trace { RUNTIME_TRACE_SOURCES } else { &[] })
        .copied()
        .collect();
    let flags = compile_flags(tc, trace);
    let mut h = KeyHasher::new("nicgen-runtime-v1");
    h.str(&tc.verilator_version)
        .str(&tc.include_dir.to_string_lossy())
        .str(&tc.cxx_version);
    h.str(&flags.join("\0"))
        .str(&sources.join("\0"))
        .str(if trace { "trace" } else { "notrace" });
    let key = h.finish();
    let final_dir = cache.join("runtime").join(&key);
    let archive = final_dir.join("libverilated.a");
    if archive.is_file() {
        return Ok(archive);
    }
    let _lock = FileLock::acquire(&cache.join("locks").join(format!("runtime-{key}.lock")))?;
    if archive.is_file() {
        return Ok(archive);
    }
    let tmp = fresh_dir(&cache.join("tmp"), &format!("runtime-{}", &key[..8]))?;
    let out = tmp.join("out");
    fs::create_dir_all(&out).map_err(io_err(format!("creating {}", out.display())))?;
    let mut jobs = Vec::new();
    let mut objects = Vec::new();
    for src in &sources {
        let obj = tmp.join(src.replace(".cpp", ".o"));
        let mut cmd = Command::new(&tc.cxx);
        cmd.args(&flags)
            .arg("-c")
            .arg(tc.include_dir.join(src))
            .arg("-o")
            .arg(&obj);
        jobs.push((cmd, format!("compiling Verilator runtime {src}")));
        objects.push(obj);
    }
    let total = jobs.len();
    let compiled = |done| report(BuildStep::Runtime { done, total });
    compiled(0);
    run_parallel(jobs, &tmp, &compiled)?;
    let mut ar = Command::new(&tc.ar);
    ar.arg("rcs").arg(out.join("libverilated.a")).args(&objects);
    run(ar, "archiving the Verilator runtime", &tmp)?;
    install_dir(&out, &final_dir)?;
    let _ = fs::remove_dir_all(&tmp);
    Ok(archive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_command_reports_command_and_tail() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "for i in $(seq 1 100); do echo line$i; done; echo oops >&2; exit 3",
        ]);
        let err = run(cmd, "testing", Path::new("/tmp"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("testing failed: `sh -c 'for i"), "{err}");
        assert!(
            err.contains("oops") && err.contains("line100") && !err.contains("line1\n"),
            "{err}"
        );
        assert!(err.contains("exit status: 3"), "{err}");
    }

    #[test]
    fn command_line_quotes_arguments() {
        let mut cmd = Command::new("c++");
        cmd.args(["-O2", "a b", "it's"]);
        assert_eq!(command_line(&cmd), "c++ -O2 'a b' 'it'\\''s'");
    }
}
