//! Verilator runtime glue: build a generated top into a cached shared library, load it, and
//! step it one clock cycle per FFI call.
//!
//! # Why it looks like this
//! Verilator is the project's simulator (DESIGN.md, decision 2). The eDSL emits Verilog plus a
//! small C++ shim per top with a fixed C ABI; this module turns that text into a loaded model.
//! It does not depend on the eDSL: it receives text. Builds are cached by *content* (never by
//! timestamp), the Verilator runtime is compiled once and reused by every model, and concurrent
//! builds of the same model from several test threads or processes are serialized by a file
//! lock so exactly one of them compiles.
//!
//! # The shim ABI (version 1)
//! ```c
//! uint32_t nicgen_abi_version(void);            // returns 1
//! const char* nicgen_layout(void);              // JSON, see crate::layout
//! void* nicgen_new(void);                       // one VerilatedContext per instance
//! void  nicgen_free(void* h);
//! void  nicgen_cycle(void* h, const uint64_t* in, uint64_t* out);
//! void  nicgen_eval(void* h, const uint64_t* in, uint64_t* out);
//! int   nicgen_trace_open(void* h, const char* path);   // FST; 0 ok, -1 built without tracing
//! void  nicgen_trace_close(void* h);
//! uint64_t nicgen_cycles(void* h);
//! ```
//! `nicgen_cycle` applies the inputs, evaluates, samples *all* outputs into `out` (the values
//! the coming rising edge will see), then evaluates `clk=1` and `clk=0` and dumps the trace if
//! one is open. So after [`Sim::cycle`] the outputs are the pre-edge values of that cycle, and a
//! handshake "happened" in that cycle iff `valid && ready` in the buffers. `nicgen_eval` applies
//! inputs and evaluates without a clock edge. The inputs listed in the layout exclude the clock.
//!
//! The shim is compiled with `-DVM_TRACE={0,1} -DVM_TRACE_FST={0,1}` matching the build, and
//! with `-DNICGEN_TRACE=1` when tracing, so one shim text serves both: it guards its FST code
//! with `#if VM_TRACE_FST` (or `#ifdef NICGEN_TRACE`), and calls `traceEverOn(true)` on its
//! context before constructing the model when tracing. The Rust side never puts bits above a
//! port's width into the input buffer, so the shim may copy words without masking.
//!
//! # Build pipeline
//! 1. [`Toolchain::detect`]: `$VERILATOR` or `verilator` on `PATH`, `verilator --version`, the
//!    include directory (`verilator --getenv VERILATOR_ROOT`/include), `$CXX` or `c++`.
//! 2. The content key: SHA-256 over the Verilog files (names and texts), the shim, the Verilator
//!    version, the exact Verilator and compiler flags, the compiler's `--version` line, the
//!    trace option and the ABI version.
//! 3. Cache layout under [`cache_dir`]: `models/<key>/libmodel.so`,
//!    `runtime/<key2>/libverilated.a`, `locks/*.lock`, and `tmp/` for builds in progress, which
//!    are renamed into place atomically when complete.
//! 4. `verilator --cc --threads 1 --top-module TOP [--trace-fst]`; every generated `.cpp` plus the
//!    shim is compiled with `-O2 -fPIC` in parallel (bounded by the available cores) and linked
//!    with `-shared -Wl,-Bsymbolic` against the runtime archive (`-pthread`, and `-lz` for FST).
//!
//! Each model library carries its own copy of the Verilator runtime and is opened with
//! `RTLD_LOCAL`, so several models coexist in one process; each [`Sim`] owns its own
//! `VerilatedContext`, so instances are independent and may live on different threads.

use crate::layout::{self, Dir, Layout, PortId};
use fs2::FileExt;
use num_bigint::BigUint;
use sha2::{Digest, Sha256};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The shim ABI version this crate speaks.
pub const ABI_VERSION: u32 = 1;

/// Flags passed to `verilator`, besides `--top-module`, `--Mdir` and the file list.
const VERILATOR_FLAGS: &[&str] = &["--cc", "--threads", "1"];
/// Extra Verilator flag when tracing is enabled.
const VERILATOR_TRACE_FLAG: &str = "--trace-fst";
/// Compiler flags for the runtime, the generated model and the shim (plus -I and -D flags).
/// `-faligned-new` is what Verilator's own makefile adds for its generated code.
const CXX_FLAGS: &[&str] = &["-std=gnu++17", "-O2", "-fPIC", "-faligned-new"];
/// Flags to link a model library.
const LINK_FLAGS: &[&str] = &["-shared", "-Wl,-Bsymbolic", "-Wl,--no-undefined"];
/// Libraries the runtime needs (`-lz` is added when tracing: FST compresses with zlib).
const LINK_LIBS: &[&str] = &["-pthread"];
/// Runtime sources compiled into `libverilated.a`. Verilator 5.006 lists `verilated` and
/// `verilated_threads` in `VM_GLOBAL_FAST` even with `--threads 1`, and `verilated_fst_c`
/// (which itself includes gtkwave's fstapi/fastlz/lz4 C sources) with `--trace-fst`.
const RUNTIME_SOURCES: &[&str] = &["verilated.cpp", "verilated_threads.cpp"];
const RUNTIME_TRACE_SOURCES: &[&str] = &["verilated_fst_c.cpp"];

/// Everything that can go wrong while building, loading or driving a model.
#[derive(Debug, thiserror::Error)]
pub enum VerilatorError {
    /// Verilator (or a companion tool) could not be found or run.
    #[error("Verilator not found: {detail}. Install it (Debian/Ubuntu: `apt-get install verilator`) or set VERILATOR=/path/to/verilator")]
    NotFound {
        /// What was tried.
        detail: String,
    },
    /// A build command exited with an error.
    #[error("{what} failed: `{command}` ({status})\n--- last lines of output ---\n{output_tail}\n--- build directory kept at {dir} ---")]
    CommandFailed {
        /// What the command was doing.
        what: String,
        /// The command line.
        command: String,
        /// Exit status.
        status: String,
        /// The last lines of stdout and stderr.
        output_tail: String,
        /// Where the build's files are.
        dir: PathBuf,
    },
    /// A file system operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The inputs to a build are unusable (bad file name, empty file list, ...).
    #[error("invalid build input: {0}")]
    Invalid(String),
    /// The shared library could not be opened or lacks an ABI symbol.
    #[error("cannot load model {path}: {source}")]
    Load {
        /// Library path.
        path: PathBuf,
        /// The dynamic loader's error.
        #[source]
        source: libloading::Error,
    },
    /// The shim reports an ABI version this crate does not speak.
    #[error("model {path} speaks shim ABI {found}, this nicgen-tb speaks {expected}: regenerate the shim")]
    AbiMismatch {
        /// Library path.
        path: PathBuf,
        /// Version reported by `nicgen_abi_version`.
        found: u32,
        /// [`ABI_VERSION`].
        expected: u32,
    },
    /// The layout JSON is malformed or inconsistent.
    #[error("model {path}: bad layout: {message}")]
    Layout {
        /// Library path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A port name does not exist.
    #[error("model `{top}` has no port `{name}` ({available})")]
    NoSuchPort {
        /// Top module.
        top: String,
        /// The requested name.
        name: String,
        /// All ports, for the reader.
        available: String,
    },
    /// Tracing requested on a model built without it.
    #[error("model `{top}` was built without tracing: build it with VerilatorOptions {{ trace: true, .. }}")]
    TraceUnavailable {
        /// Top module.
        top: String,
    },
    /// The shim could not open the trace file.
    #[error("cannot open FST trace {path} (nicgen_trace_open returned {code})")]
    TraceOpen {
        /// Trace file.
        path: PathBuf,
        /// Return code.
        code: i32,
    },
}

type Result<T, E = VerilatorError> = std::result::Result<T, E>;

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> VerilatorError {
    let context = context.into();
    move |source| VerilatorError::Io { context, source }
}

// ---------------------------------------------------------------------------------------------
// Toolchain discovery

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

/// Gate for tests that need Verilator. Returns `true` when Verilator is usable. When it is not:
/// with `REQUIRE_VERILATOR=1` (CI) it panics, so a missing simulator is a failure and never a
/// silent pass; otherwise it prints why the test is skipped and returns `false`.
///
/// ```no_run
/// if !nicgen_tb::verilator::verilator_required() { return; }
/// ```
pub fn verilator_required() -> bool {
    match Toolchain::detect() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("REQUIRE_VERILATOR").is_ok_and(|v| v == "1") {
                panic!("REQUIRE_VERILATOR=1 but Verilator is unusable: {e}");
            }
            eprintln!(
                "SKIPPED (Verilator unusable, set REQUIRE_VERILATOR=1 to make this a failure): {e}"
            );
            false
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cache directory

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

fn target_dir() -> Option<PathBuf> {
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

/// An exclusive advisory lock on a file (flock), released on drop. Works between threads (each
/// lock opens its own file description) and between processes.
struct FileLock(fs::File);

impl FileLock {
    fn acquire(path: &Path) -> Result<FileLock> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
        }
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io_err(format!("opening lock file {}", path.display())))?;
        f.lock_exclusive()
            .map_err(io_err(format!("locking {}", path.display())))?;
        Ok(FileLock(f))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = fs2::FileExt::unlock(&self.0);
    }
}

/// A fresh, unique directory under `parent` for a build in progress.
fn fresh_dir(parent: &Path, label: &str) -> Result<PathBuf> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = parent.join(format!("{label}-{}-{n}", std::process::id()));
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io_err(format!("removing stale {}", dir.display())))?;
    }
    fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
    Ok(dir)
}

// ---------------------------------------------------------------------------------------------
// Hashing

/// SHA-256 over length-prefixed fields, so no two different inputs can concatenate equally.
struct KeyHasher(Sha256);

impl KeyHasher {
    fn new(domain: &str) -> Self {
        let mut h = KeyHasher(Sha256::new());
        h.field(domain.as_bytes());
        h
    }
    fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.field(s.as_bytes())
    }
    fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Commands

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
fn run(mut cmd: Command, what: &str, dir: &Path) -> Result<()> {
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

/// Runs `jobs` on at most `available_parallelism` threads; returns the first error.
fn run_parallel(jobs: Vec<(Command, String)>, dir: &Path) -> Result<()> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len())
        .max(1);
    let queue = Mutex::new(jobs.into_iter());
    let first_error: Mutex<Option<VerilatorError>> = Mutex::new(None);
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

fn compile_flags(tc: &Toolchain, trace: bool) -> Vec<String> {
    let inc = tc.include_dir.display();
    let mut f: Vec<String> = CXX_FLAGS.iter().map(|s| s.to_string()).collect();
    f.push(format!("-I{inc}"));
    f.push(format!("-I{inc}/vltstd"));
    f.extend(defines(trace));
    f
}

fn link_libs(trace: bool) -> Vec<&'static str> {
    let mut l = LINK_LIBS.to_vec();
    if trace {
        l.push("-lz");
    }
    l
}

// ---------------------------------------------------------------------------------------------
// The runtime archive

/// Builds (or finds) `runtime/<key>/libverilated.a` for this toolchain and trace option.
fn runtime_archive(tc: &Toolchain, cache: &Path, trace: bool) -> Result<PathBuf> {
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
    eprintln!(
        "nicgen: compiling the Verilator runtime (key {})",
        &key[..8]
    );
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
    run_parallel(jobs, &tmp)?;
    let mut ar = Command::new(&tc.ar);
    ar.arg("rcs").arg(out.join("libverilated.a")).args(&objects);
    run(ar, "archiving the Verilator runtime", &tmp)?;
    install_dir(&out, &final_dir)?;
    let _ = fs::remove_dir_all(&tmp);
    Ok(archive)
}

/// Moves a completed build directory into its final place. The caller holds the key's lock, so
/// nobody else is writing `final_dir`; a leftover without the expected artifact is replaced.
fn install_dir(from: &Path, final_dir: &Path) -> Result<()> {
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

// ---------------------------------------------------------------------------------------------
// Model builds

/// Options of a model build.
#[derive(Debug, Clone, Default)]
pub struct VerilatorOptions {
    /// Build with FST tracing support (`--trace-fst`, `-lz`). Traced models are slower; tracing
    /// itself is still opt-in per instance with [`Sim::trace_window`].
    pub trace: bool,
    /// Cache root; `None` means [`cache_dir()`].
    pub cache_dir: Option<PathBuf>,
}

/// Whether [`VerilatorBuild::build_with_status`] found the model in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// The library was already in the cache.
    Hit,
    /// This call built it.
    Built,
}

/// A request to turn Verilog text and a shim into a loaded [`Model`].
#[derive(Debug, Clone)]
pub struct VerilatorBuild {
    top: String,
    files: Vec<(String, String)>,
    shim: String,
    options: VerilatorOptions,
}

impl VerilatorBuild {
    /// `files` are `(file name, Verilog text)` in the order Verilator should read them; the
    /// names must be plain file names (no directories). `shim` is the C++ shim text.
    pub fn new(
        top: impl Into<String>,
        files: Vec<(String, String)>,
        shim: impl Into<String>,
        options: VerilatorOptions,
    ) -> Self {
        VerilatorBuild {
            top: top.into(),
            files,
            shim: shim.into(),
            options,
        }
    }

    fn check(&self) -> Result<()> {
        let ident = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
                && !s.starts_with(|c: char| c.is_ascii_digit() || c == '$')
        };
        if !ident(&self.top) {
            return Err(VerilatorError::Invalid(format!(
                "top name `{}` is not a Verilog identifier",
                self.top
            )));
        }
        if self.files.is_empty() {
            return Err(VerilatorError::Invalid("no Verilog files".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for (name, _) in &self.files {
            let ok = !name.is_empty()
                && name != "."
                && name != ".."
                && !name.contains(['/', '\\', '\0'])
                && name != "nicgen_shim.cpp";
            if !ok {
                return Err(VerilatorError::Invalid(format!(
                    "`{name}` is not a plain file name"
                )));
            }
            if !seen.insert(name) {
                return Err(VerilatorError::Invalid(format!(
                    "file `{name}` given twice"
                )));
            }
        }
        Ok(())
    }

    fn verilator_flags(&self) -> Vec<String> {
        let mut f: Vec<String> = VERILATOR_FLAGS.iter().map(|s| s.to_string()).collect();
        if self.options.trace {
            f.push(VERILATOR_TRACE_FLAG.into());
        }
        f.push("--top-module".into());
        f.push(self.top.clone());
        f
    }

    /// The content key of this build (64 hex digits). Runs `verilator --version` and
    /// `c++ --version` (once per process) but compiles nothing.
    pub fn key(&self) -> Result<String> {
        self.check()?;
        Ok(self.key_with(&Toolchain::detect()?))
    }

    fn key_with(&self, tc: &Toolchain) -> String {
        let mut h = KeyHasher::new("nicgen-model-v1");
        h.str(&ABI_VERSION.to_string()).str(&self.top);
        h.str(&self.files.len().to_string());
        for (name, text) in &self.files {
            h.str(name).str(text);
        }
        h.str(&self.shim);
        h.str(&tc.verilator_version)
            .str(&tc.include_dir.to_string_lossy())
            .str(&self.verilator_flags().join("\0"));
        h.str(&tc.cxx_version)
            .str(&compile_flags(tc, self.options.trace).join("\0"));
        h.str(&LINK_FLAGS.join("\0"))
            .str(&link_libs(self.options.trace).join("\0"));
        h.str(if self.options.trace {
            "trace"
        } else {
            "notrace"
        });
        h.finish()
    }

    /// Builds (or finds in the cache) and loads the model.
    pub fn build(&self) -> Result<Model> {
        self.build_with_status().map(|(m, _)| m)
    }

    /// Like [`build`](Self::build), also telling whether the cache already had the model.
    /// Prints one line to stderr when it builds, nothing on a cache hit.
    pub fn build_with_status(&self) -> Result<(Model, CacheStatus)> {
        self.check()?;
        let tc = Toolchain::detect()?;
        let key = self.key_with(&tc);
        let cache = self.options.cache_dir.clone().unwrap_or_else(cache_dir);
        let final_dir = cache.join("models").join(&key);
        let lib = final_dir.join("libmodel.so");
        let load = |status| Model::load_traced(&lib, Some(self.options.trace)).map(|m| (m, status));
        if lib.is_file() {
            return load(CacheStatus::Hit);
        }
        let _lock = FileLock::acquire(&cache.join("locks").join(format!("model-{key}.lock")))?;
        if lib.is_file() {
            return load(CacheStatus::Hit);
        }
        eprintln!("nicgen: verilating {} (key {})", self.top, &key[..8]);
        let tmp = fresh_dir(&cache.join("tmp"), &format!("model-{}", &key[..8]))?;
        self.build_in(&tc, &tmp, &cache)?;
        install_dir(&tmp.join("out"), &final_dir)?;
        let _ = fs::remove_dir_all(&tmp);
        load(CacheStatus::Built)
    }

    /// Verilates, compiles the model, then gets the runtime archive and links: errors in the
    /// design or the shim show up before any runtime compile.
    fn build_in(&self, tc: &Toolchain, tmp: &Path, cache: &Path) -> Result<()> {
        let src = tmp.join("src");
        let mdir = tmp.join("obj");
        let out = tmp.join("out");
        for d in [&src, &mdir, &out] {
            fs::create_dir_all(d).map_err(io_err(format!("creating {}", d.display())))?;
        }
        let mut paths = Vec::new();
        for (name, text) in &self.files {
            let p = src.join(name);
            fs::write(&p, text).map_err(io_err(format!("writing {}", p.display())))?;
            paths.push(p);
        }
        let shim = src.join("nicgen_shim.cpp");
        fs::write(&shim, &self.shim).map_err(io_err(format!("writing {}", shim.display())))?;

        let mut v = Command::new(&tc.verilator);
        v.args(self.verilator_flags())
            .arg("--Mdir")
            .arg(&mdir)
            .args(&paths);
        run(v, &format!("verilating {}", self.top), tmp)?;
        self.check_runtime_needs(&mdir)?;

        let mut cpps: Vec<PathBuf> = fs::read_dir(&mdir)
            .map_err(io_err(format!("listing {}", mdir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
            .collect();
        cpps.sort();
        cpps.push(shim);
        let flags = compile_flags(tc, self.options.trace);
        let mut jobs = Vec::new();
        let mut objects = Vec::new();
        for cpp in &cpps {
            let stem = cpp.file_stem().unwrap().to_string_lossy().into_owned();
            let obj = mdir.join(format!("{stem}.o"));
            let mut cmd = Command::new(&tc.cxx);
            cmd.args(&flags)
                .arg("-I")
                .arg(&mdir)
                .arg("-c")
                .arg(cpp)
                .arg("-o")
                .arg(&obj);
            jobs.push((cmd, format!("compiling {stem}.cpp")));
            objects.push(obj);
        }
        run_parallel(jobs, tmp)?;
        let runtime = runtime_archive(tc, cache, self.options.trace)?;
        let mut link = Command::new(&tc.cxx);
        link.args(LINK_FLAGS)
            .arg("-o")
            .arg(out.join("libmodel.so"))
            .args(&objects)
            .arg(runtime)
            .args(link_libs(self.options.trace));
        run(link, &format!("linking the {} model", self.top), tmp)?;
        let info = format!(
            "top: {}\nfiles: {}\nverilator: {} {}\ncxx: {} {}\n",
            self.top,
            self.files
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            tc.verilator_version,
            self.verilator_flags().join(" "),
            tc.cxx_version,
            compile_flags(tc, self.options.trace).join(" "),
        );
        fs::write(out.join("build-info.txt"), info).map_err(io_err("writing build-info.txt"))?;
        Ok(())
    }

    /// Verilator lists the runtime files a model needs in `V<top>_classes.mk`
    /// (`VM_GLOBAL_FAST`/`VM_GLOBAL_SLOW`). Fail clearly if a newer Verilator wants a file the
    /// runtime archive does not contain, instead of failing at link or load time.
    fn check_runtime_needs(&self, mdir: &Path) -> Result<()> {
        let mk = mdir.join(format!("V{}_classes.mk", self.top));
        let Ok(text) = fs::read_to_string(&mk) else {
            return Ok(());
        };
        let mut have: Vec<&str> = RUNTIME_SOURCES.to_vec();
        if self.options.trace {
            have.extend(RUNTIME_TRACE_SOURCES);
        }
        let mut in_global = false;
        for line in text.lines() {
            let t = line.trim();
            if t.starts_with("VM_GLOBAL_FAST") || t.starts_with("VM_GLOBAL_SLOW") {
                in_global = true;
                continue;
            }
            if !in_global {
                continue;
            }
            let name = t.trim_end_matches('\\').trim();
            if name.is_empty() {
                in_global = false;
                continue;
            }
            if !have.contains(&format!("{name}.cpp").as_str()) {
                return Err(VerilatorError::Invalid(format!(
                    "Verilator wants runtime file {name}.cpp (see {}), which nicgen-tb's runtime archive lacks; \
                     add it to RUNTIME_SOURCES",
                    mk.display()
                )));
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Loaded models

type NewFn = unsafe extern "C" fn() -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type StepFn = unsafe extern "C" fn(*mut c_void, *const u64, *mut u64);
type TraceOpenFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;
type CyclesFn = unsafe extern "C" fn(*mut c_void) -> u64;

struct Api {
    new: NewFn,
    free: FreeFn,
    cycle: StepFn,
    eval: StepFn,
    trace_open: TraceOpenFn,
    trace_close: FreeFn,
    cycles: CyclesFn,
}

struct ModelInner {
    api: Api,
    layout: Layout,
    path: PathBuf,
    trace: Option<bool>,
    // Declared last: dropped after everything that holds its function pointers.
    _lib: libloading::os::unix::Library,
}

/// A loaded model library: its entry points and its layout. Cheap to clone; `Send + Sync`, so
/// threads can share it and each create their own [`Sim`] instances.
#[derive(Clone)]
pub struct Model {
    inner: Arc<ModelInner>,
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("top", &self.inner.layout.top)
            .field("path", &self.inner.path)
            .finish()
    }
}

impl Model {
    /// Loads a model library built elsewhere (`dlopen` with `RTLD_NOW | RTLD_LOCAL`).
    pub fn load(path: &Path) -> Result<Model> {
        Self::load_traced(path, None)
    }

    fn load_traced(path: &Path, trace: Option<bool>) -> Result<Model> {
        use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
        let load_err = |source| VerilatorError::Load {
            path: path.to_path_buf(),
            source,
        };
        // SAFETY: the library is a nicgen model; its initializers are Verilator's and the shim's
        // static constructors, which have no preconditions.
        let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map_err(load_err)?;
        // SAFETY: the types match the shim ABI documented at the top of this module; the
        // pointers are only used while `lib` is alive (ModelInner owns both).
        let (abi, layout_fn, api) = unsafe {
            let abi: libloading::os::unix::Symbol<unsafe extern "C" fn() -> u32> =
                lib.get(b"nicgen_abi_version\0").map_err(load_err)?;
            let layout: libloading::os::unix::Symbol<unsafe extern "C" fn() -> *const c_char> =
                lib.get(b"nicgen_layout\0").map_err(load_err)?;
            let api = Api {
                new: *lib.get::<NewFn>(b"nicgen_new\0").map_err(load_err)?,
                free: *lib.get::<FreeFn>(b"nicgen_free\0").map_err(load_err)?,
                cycle: *lib.get::<StepFn>(b"nicgen_cycle\0").map_err(load_err)?,
                eval: *lib.get::<StepFn>(b"nicgen_eval\0").map_err(load_err)?,
                trace_open: *lib
                    .get::<TraceOpenFn>(b"nicgen_trace_open\0")
                    .map_err(load_err)?,
                trace_close: *lib
                    .get::<FreeFn>(b"nicgen_trace_close\0")
                    .map_err(load_err)?,
                cycles: *lib.get::<CyclesFn>(b"nicgen_cycles\0").map_err(load_err)?,
            };
            (*abi, *layout, api)
        };
        // SAFETY: ABI functions without arguments.
        let found = unsafe { abi() };
        if found != ABI_VERSION {
            return Err(VerilatorError::AbiMismatch {
                path: path.to_path_buf(),
                found,
                expected: ABI_VERSION,
            });
        }
        // SAFETY: the shim returns a pointer to a static NUL-terminated string.
        let json = unsafe {
            let p = layout_fn();
            if p.is_null() {
                return Err(VerilatorError::Layout {
                    path: path.to_path_buf(),
                    message: "nicgen_layout returned NULL".into(),
                });
            }
            CStr::from_ptr(p).to_string_lossy().into_owned()
        };
        let layout = Layout::from_json(&json).map_err(|message| VerilatorError::Layout {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(Model {
            inner: Arc::new(ModelInner {
                api,
                layout,
                path: path.to_path_buf(),
                trace,
                _lib: lib,
            }),
        })
    }

    /// The port layout reported by the shim.
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// The top module's name.
    pub fn top(&self) -> &str {
        &self.inner.layout.top
    }

    /// Path of the loaded library.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// A new, independent instance (its own `VerilatedContext`), all inputs zero, cycle 0.
    pub fn instance(&self) -> Sim {
        // SAFETY: ABI call without preconditions; it returns an owned handle.
        let handle = unsafe { (self.inner.api.new)() };
        assert!(
            !handle.is_null(),
            "nicgen_new of model `{}` returned NULL",
            self.top()
        );
        let l = &self.inner.layout;
        let mut input_mask = vec![0u64; l.in_words];
        for p in &l.inputs {
            input_mask[p.offset..p.offset + p.words].fill(u64::MAX);
            input_mask[p.offset + p.words - 1] = layout::last_word_mask(p.width);
        }
        Sim {
            model: self.clone(),
            handle,
            inputs: vec![0; l.in_words],
            outputs: vec![0; l.out_words],
            trace: None,
            recording: None,
            input_mask,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Simulation instances

#[derive(Debug)]
struct TraceWindow {
    start: u64,
    end: u64,
    path: PathBuf,
    open: bool,
}

/// Input and output buffers of every cycle, captured by [`Sim::record_inputs`], for replay on
/// another simulator (see [`crate::icarus`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// Input buffer applied in each cycle.
    pub inputs: Vec<Vec<u64>>,
    /// Output buffer sampled in each cycle (pre-edge values).
    pub outputs: Vec<Vec<u64>>,
}

/// One running instance of a model. `Send` (it can move to another thread) but not `Sync`.
///
/// Inputs keep their value until set again. After [`cycle`](Self::cycle), [`get_u64`](Self::get_u64)
/// and friends return the values sampled just before that cycle's rising edge; reading an input
/// returns what was applied.
pub struct Sim {
    model: Model,
    handle: *mut c_void,
    inputs: Vec<u64>,
    outputs: Vec<u64>,
    trace: Option<TraceWindow>,
    recording: Option<Recording>,
    /// Per input word, the bits that belong to some port (for `cycle_raw`'s check).
    input_mask: Vec<u64>,
}

// SAFETY: the handle is an instance with its own VerilatedContext, touched only through
// `&mut self` (or `&self` for read-only `nicgen_cycles`), so one thread at a time uses it;
// Verilator supports driving a context from any single thread at a time.
unsafe impl Send for Sim {}

impl fmt::Debug for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("top", &self.model.top())
            .field("cycles", &self.cycles())
            .finish()
    }
}

impl Sim {
    /// The model this instance belongs to.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The port layout.
    pub fn layout(&self) -> &Layout {
        &self.model.inner.layout
    }

    /// The top module's name.
    pub fn top(&self) -> &str {
        self.model.top()
    }

    /// Lengths of the input and output buffers in words, `(in_words, out_words)`.
    pub fn layout_words(&self) -> (usize, usize) {
        (self.inputs.len(), self.outputs.len())
    }

    /// Resolves a port name; the error lists every port.
    pub fn port(&self, name: &str) -> Result<PortId> {
        self.layout()
            .find(name)
            .ok_or_else(|| VerilatorError::NoSuchPort {
                top: self.model.top().to_string(),
                name: name.to_string(),
                available: self.layout().port_list(),
            })
    }

    /// Resolves a port name, `None` if it does not exist (for optional signals).
    pub fn try_port(&self, name: &str) -> Option<PortId> {
        self.layout().find(name)
    }

    /// Width of a port in bits.
    pub fn width(&self, port: PortId) -> u32 {
        self.layout().get(port).width
    }

    /// Name of a port.
    pub fn port_name(&self, port: PortId) -> &str {
        &self.layout().get(port).name
    }

    fn input_words(&mut self, port: PortId, what: &str) -> (&mut [u64], u32) {
        let model = &self.model.inner;
        let p = model.layout.get(port);
        assert!(
            port.dir == Dir::Input,
            "{what}: `{}` is an output of `{}`; only inputs can be set",
            p.name,
            model.layout.top
        );
        (&mut self.inputs[p.offset..p.offset + p.words], p.width)
    }

    fn words(&self, port: PortId) -> &[u64] {
        let p = self.layout().get(port);
        match port.dir {
            Dir::Input => &self.inputs[p.offset..p.offset + p.words],
            Dir::Output => &self.outputs[p.offset..p.offset + p.words],
        }
    }

    /// Sets an input (upper words of a port wider than 64 bits become zero).
    /// Panics if `port` is an output or `value` does not fit the port's width.
    pub fn set(&mut self, port: PortId, value: u64) {
        let name = self.port_name(port).to_string();
        let (words, width) = self.input_words(port, "set");
        assert!(
            width >= 64 || value >> width == 0,
            "set: value {value:#x} does not fit input `{name}` ({width} bits)"
        );
        words.fill(0);
        words[0] = value;
    }

    /// Sets an input from a `bool` (1-bit ports, typically).
    pub fn set_bool(&mut self, port: PortId, value: bool) {
        self.set(port, u64::from(value));
    }

    /// Sets an input of any width. Panics if it does not fit.
    pub fn set_big(&mut self, port: PortId, value: &BigUint) {
        let name = self.port_name(port).to_string();
        let (words, width) = self.input_words(port, "set_big");
        if layout::big_to_words(value, width, words).is_none() {
            panic!("set_big: value {value:#x} does not fit input `{name}` ({width} bits)");
        }
    }

    /// Sets an input from little-endian bytes (byte 0 = bits 7..0). Missing high bytes are zero.
    /// Panics if the bytes hold bits beyond the port's width.
    pub fn set_bytes_le(&mut self, port: PortId, bytes: &[u8]) {
        let name = self.port_name(port).to_string();
        let (words, width) = self.input_words(port, "set_bytes_le");
        let nbytes = (width as usize).div_ceil(8);
        let fits = bytes.len() <= nbytes
            && (bytes.len() < nbytes || width % 8 == 0 || bytes[nbytes - 1] >> (width % 8) == 0);
        assert!(
            fits,
            "set_bytes_le: {} bytes do not fit input `{name}` ({width} bits)",
            bytes.len()
        );
        words.fill(0);
        for (i, b) in bytes.iter().enumerate() {
            words[i / 8] |= u64::from(*b) << ((i % 8) * 8);
        }
    }

    /// Value of a port of at most 64 bits. Panics for wider ports (use [`get_big`](Self::get_big)
    /// or [`get_bytes_le`](Self::get_bytes_le)).
    pub fn get_u64(&self, port: PortId) -> u64 {
        let p = self.layout().get(port);
        assert!(
            p.width <= 64,
            "get_u64: port `{}` is {} bits wide; use get_big or get_bytes_le",
            p.name,
            p.width
        );
        self.words(port)[0]
    }

    /// Value of a port as a `bool`: true iff non-zero.
    pub fn get_bool(&self, port: PortId) -> bool {
        self.words(port).iter().any(|w| *w != 0)
    }

    /// Value of a port of any width.
    pub fn get_big(&self, port: PortId) -> BigUint {
        layout::words_to_big(self.words(port))
    }

    /// Value of a port as `ceil(width / 8)` little-endian bytes.
    pub fn get_bytes_le(&self, port: PortId) -> Vec<u8> {
        layout::words_to_bytes_le(self.words(port), self.width(port))
    }

    /// The raw input buffer (as applied in the last cycle, plus any `set` since).
    pub fn input_words_raw(&self) -> &[u64] {
        &self.inputs
    }

    /// The raw output buffer sampled by the last `cycle` or `eval`.
    pub fn output_words_raw(&self) -> &[u64] {
        &self.outputs
    }

    /// One clock cycle: apply inputs, sample outputs before the rising edge, clock.
    pub fn cycle(&mut self) {
        let now = self.cycles();
        if let Some(w) = &mut self.trace {
            if !w.open && now >= w.start {
                let (path, model) = (w.path.clone(), self.model.clone());
                if let Err(e) = open_trace(&model, self.handle, &path) {
                    panic!("trace window [{}, {}): {e}", w.start, w.end);
                }
                w.open = true;
            }
        }
        let api = &self.model.inner.api;
        // SAFETY: the buffers have the layout's lengths, which the shim indexes within.
        unsafe { (api.cycle)(self.handle, self.inputs.as_ptr(), self.outputs.as_mut_ptr()) };
        if let Some(r) = &mut self.recording {
            r.inputs.push(self.inputs.clone());
            r.outputs.push(self.outputs.clone());
        }
        if self
            .trace
            .as_ref()
            .is_some_and(|w| w.open && now + 1 >= w.end)
        {
            self.stop_trace();
        }
    }

    /// One cycle on whole buffers, for generated typed bindings: copies `inputs` into the input
    /// buffer, runs [`cycle`](Self::cycle) (so trace windows and recording apply), and copies
    /// the sampled outputs into `outputs`. Panics if a length differs from the layout, or if
    /// `inputs` has bits set above a port's width or between ports.
    pub fn cycle_raw(&mut self, inputs: &[u64], outputs: &mut [u64]) {
        let (iw, ow) = self.layout_words();
        assert!(
            inputs.len() == iw && outputs.len() == ow,
            "cycle_raw: buffers of {}/{} words for model `{}` with {iw}/{ow}",
            inputs.len(),
            outputs.len(),
            self.top()
        );
        self.check_clean(inputs);
        self.inputs.copy_from_slice(inputs);
        self.cycle();
        outputs.copy_from_slice(&self.outputs);
    }

    fn check_clean(&self, inputs: &[u64]) {
        if let Some(k) = inputs
            .iter()
            .zip(&self.input_mask)
            .position(|(w, a)| w & !a != 0)
        {
            panic!(
                "cycle_raw: input word {k} of `{}` has bits set outside every port",
                self.top()
            );
        }
    }

    /// Runs `n` cycles with unchanged inputs.
    pub fn cycles_n(&mut self, n: u64) {
        for _ in 0..n {
            self.cycle();
        }
    }

    /// Applies inputs and evaluates without a clock edge (combinational outputs update).
    pub fn eval(&mut self) {
        let api = &self.model.inner.api;
        // SAFETY: as in `cycle`.
        unsafe { (api.eval)(self.handle, self.inputs.as_ptr(), self.outputs.as_mut_ptr()) };
    }

    /// Number of cycles run so far.
    pub fn cycles(&self) -> u64 {
        // SAFETY: read-only ABI call on a live handle.
        unsafe { (self.model.inner.api.cycles)(self.handle) }
    }

    /// Writes an FST trace of cycles `start..end` to `path`: the file is opened when cycle `start`
    /// begins (now, if that has passed) and closed after cycle `end - 1`. Replaces a pending or
    /// open window. Fails if the model was built without tracing.
    pub fn trace_window(&mut self, start: u64, end: u64, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref().to_path_buf();
        if self.model.inner.trace == Some(false) {
            return Err(VerilatorError::TraceUnavailable {
                top: self.model.top().to_string(),
            });
        }
        if start >= end {
            return Err(VerilatorError::Invalid(format!(
                "empty trace window [{start}, {end})"
            )));
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
        }
        self.stop_trace();
        let mut w = TraceWindow {
            start,
            end,
            path,
            open: false,
        };
        if self.cycles() >= start {
            open_trace(&self.model, self.handle, &w.path)?;
            w.open = true;
        }
        self.trace = Some(w);
        Ok(())
    }

    /// Closes the trace file now (if open) and drops any pending window.
    pub fn stop_trace(&mut self) {
        if let Some(w) = self.trace.take() {
            if w.open {
                // SAFETY: live handle.
                unsafe { (self.model.inner.api.trace_close)(self.handle) };
            }
        }
    }

    /// Starts (`true`) or stops recording every cycle's input and output buffers. Starting
    /// clears a previous recording.
    pub fn record_inputs(&mut self, on: bool) {
        self.recording = if on { Some(Recording::default()) } else { None };
    }

    /// Input buffers recorded so far, one per cycle.
    pub fn recorded(&self) -> Vec<Vec<u64>> {
        self.recording
            .as_ref()
            .map(|r| r.inputs.clone())
            .unwrap_or_default()
    }

    /// Output buffers recorded so far, one per cycle.
    pub fn recorded_outputs(&self) -> Vec<Vec<u64>> {
        self.recording
            .as_ref()
            .map(|r| r.outputs.clone())
            .unwrap_or_default()
    }

    /// Takes the recording so far and keeps recording into a fresh one (if recording).
    pub fn take_recording(&mut self) -> Recording {
        match &mut self.recording {
            Some(r) => std::mem::take(r),
            None => Recording::default(),
        }
    }
}

fn open_trace(model: &Model, handle: *mut c_void, path: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        VerilatorError::Invalid(format!("trace path {} contains NUL", path.display()))
    })?;
    // SAFETY: live handle, NUL-terminated path.
    let code = unsafe { (model.inner.api.trace_open)(handle, c.as_ptr()) };
    match code {
        0 => Ok(()),
        -1 => Err(VerilatorError::TraceUnavailable {
            top: model.top().to_string(),
        }),
        code => Err(VerilatorError::TraceOpen {
            path: path.to_path_buf(),
            code,
        }),
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.stop_trace();
        // SAFETY: the handle came from nicgen_new and is freed exactly once.
        unsafe { (self.model.inner.api.free)(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_toolchain() -> Toolchain {
        Toolchain {
            verilator: "verilator".into(),
            verilator_version: "Verilator 5.006".into(),
            include_dir: "/usr/share/verilator/include".into(),
            cxx: "c++".into(),
            cxx_version: "c++ 12.2.0".into(),
            ar: "ar".into(),
        }
    }

    fn build(text: &str, shim: &str, trace: bool) -> VerilatorBuild {
        VerilatorBuild::new(
            "top",
            vec![("top.v".into(), text.into())],
            shim,
            VerilatorOptions {
                trace,
                cache_dir: None,
            },
        )
    }

    #[test]
    fn thread_traits() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<Sim>();
        send_sync::<Model>();
    }

    #[test]
    fn key_depends_on_every_input() {
        let tc = fake_toolchain();
        let base = build("module top; endmodule", "shim", false).key_with(&tc);
        assert_eq!(base.len(), 64);
        assert_eq!(
            base,
            build("module top; endmodule", "shim", false).key_with(&tc)
        );
        assert_ne!(
            base,
            build("module top;  endmodule", "shim", false).key_with(&tc)
        );
        assert_ne!(
            base,
            build("module top; endmodule", "shim2", false).key_with(&tc)
        );
        assert_ne!(
            base,
            build("module top; endmodule", "shim", true).key_with(&tc)
        );
        let mut other = tc.clone();
        other.verilator_version = "Verilator 5.020".into();
        assert_ne!(
            base,
            build("module top; endmodule", "shim", false).key_with(&other)
        );
        let mut other = tc.clone();
        other.cxx_version = "clang 16".into();
        assert_ne!(
            base,
            build("module top; endmodule", "shim", false).key_with(&other)
        );
        // Moving text between the file name and the body must change the key.
        let a = VerilatorBuild::new(
            "top",
            vec![("a.v".into(), "bc".into())],
            "s",
            Default::default(),
        );
        let b = VerilatorBuild::new(
            "top",
            vec![("a.vb".into(), "c".into())],
            "s",
            Default::default(),
        );
        assert_ne!(a.key_with(&tc), b.key_with(&tc));
    }

    #[test]
    fn rejects_bad_inputs() {
        let bad_name = VerilatorBuild::new(
            "top",
            vec![("../x.v".into(), String::new())],
            "",
            Default::default(),
        );
        assert!(
            matches!(bad_name.check(), Err(VerilatorError::Invalid(m)) if m.contains("plain file name"))
        );
        let none = VerilatorBuild::new("top", vec![], "", Default::default());
        assert!(none.check().is_err());
        let bad_top = VerilatorBuild::new(
            "1top",
            vec![("a.v".into(), String::new())],
            "",
            Default::default(),
        );
        assert!(bad_top.check().is_err());
        let dup = VerilatorBuild::new(
            "top",
            vec![("a.v".into(), String::new()), ("a.v".into(), String::new())],
            "",
            Default::default(),
        );
        assert!(dup.check().is_err());
    }

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

    #[test]
    fn missing_verilator_message_says_how_to_fix() {
        let e = VerilatorError::NotFound { detail: "x".into() }.to_string();
        assert!(
            e.contains("apt-get install verilator") && e.contains("VERILATOR="),
            "{e}"
        );
    }

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
