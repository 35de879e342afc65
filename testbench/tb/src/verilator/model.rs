//! Building and loading a model: verilate, compile, link against the runtime archive, `dlopen`;
//! and the shim ABI the loaded library speaks.
//!
//! [`VerilatorBuild`] is the request (top, Verilog texts, shim text, options); its key covers
//! everything that could change the library, so a cache hit is always the right library. The
//! design and the shim are verilated and compiled before the runtime archive is fetched, so an
//! error in either shows up before a possibly long runtime compile. [`Model`] owns the opened
//! library together with the function pointers taken from it, so no pointer outlives it; the ABI
//! is checked by version number at load time, and the port layout is read from the library
//! itself, so a model and the layout it was built with cannot disagree.

use super::cache::{cache_dir, fresh_dir, install_dir, FileLock, KeyHasher};
use super::progress::{report, BuildStep};
use super::sim::Sim;
use super::toolchain::{
    compile_flags, link_libs, run, run_parallel, runtime_archive, Toolchain, LINK_FLAGS,
    RUNTIME_SOURCES, RUNTIME_TRACE_SOURCES,
};
use super::{io_err, Result, VerilatorError};
use crate::layout::Layout;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// The shim ABI version this crate speaks. Version 1 is these C functions of the model library:
///
/// ```c
/// uint32_t nicgen_abi_version(void);            // returns 1
/// const char* nicgen_layout(void);              // JSON, see crate::layout
/// void* nicgen_new(void);                       // one VerilatedContext per instance
/// void  nicgen_free(void* h);
/// void  nicgen_cycle(void* h, const uint64_t* in, uint64_t* out);
/// void  nicgen_eval(void* h, const uint64_t* in, uint64_t* out);
/// int   nicgen_trace_open(void* h, const char* path);   // FST; 0 ok, -1 built without tracing
/// void  nicgen_trace_close(void* h);
/// uint64_t nicgen_cycles(void* h);
/// ```
/// `nicgen_cycle` applies the inputs, evaluates, samples *all* outputs into `out` (the values
/// the coming rising edge will see), then evaluates `clk=1` and `clk=0` and dumps the trace if
/// one is open. So after [`Sim::cycle`] the outputs are the pre-edge values of that cycle, and a
/// handshake "happened" in that cycle iff `valid && ready` in the buffers. `nicgen_eval` applies
/// inputs and evaluates without a clock edge. The inputs listed in the layout exclude the clock.
///
/// The shim is compiled with `-DVM_TRACE={0,1} -DVM_TRACE_FST={0,1}` matching the build, and
/// with `-DNICGEN_TRACE=1` when tracing, so one shim text serves both: it guards its FST code
/// with `#if VM_TRACE_FST` (or `#ifdef NICGEN_TRACE`), and calls `traceEverOn(true)` on its
/// context before constructing the model when tracing. The Rust side never puts bits above a
/// port's width into the input buffer, so the shim may copy words without masking.
pub const ABI_VERSION: u32 = 1;

/// Flags passed to `verilator`, besides `--top-module`, `--Mdir` and the file list.
const VERILATOR_FLAGS: &[&str] = &["--cc", "--threads", "1"];
/// Extra Verilator flag when tracing is enabled.
const VERILATOR_TRACE_FLAG: &str = "--trace-fst";
/// Environment variable with more Verilator flags (split at whitespace), for profiling: with
/// `-fno-inline` every module keeps a C++ class of its own, so a profiler names the block a
/// cycle's work is in. Part of the content key, like every flag.
pub const EXTRA_FLAGS_ENV: &str = "NICGEN_VERILATOR_FLAGS";

// ---------------------------------------------------------------------------------------------
// Builds

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
///
/// # Build pipeline
/// 1. [`Toolchain::detect`]: `$VERILATOR` or `verilator` on `PATH`, `verilator --version`, the
///    include directory (`verilator --getenv VERILATOR_ROOT`/include), `$CXX` or `c++`.
/// 2. The content key: SHA-256 over the Verilog files (names and texts), the shim, the Verilator
///    version, the exact Verilator and compiler flags, the compiler's `--version` line, the
///    trace option and the ABI version.
/// 3. Cache layout under [`cache_dir`]: `models/<key>/libmodel.so`,
///    `runtime/<key2>/libverilated.a`, `locks/*.lock`, and `tmp/` for builds in progress, which
///    are renamed into place atomically when complete.
/// 4. `verilator --cc --threads 1 --top-module TOP [--trace-fst]`; every generated `.cpp` plus the
///    shim is compiled with `-O2 -fPIC` in parallel (bounded by the available cores) and linked
///    with `-shared -Wl,-Bsymbolic` against the runtime archive (`-pthread`, and `-lz` for FST).
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
        if let Ok(extra) = std::env::var(EXTRA_FLAGS_ENV) {
            f.extend(extra.split_whitespace().map(str::to_string));
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
    /// Reports its steps when it builds (to the observer set with
    /// [`super::set_build_observer`], else one line per step on stderr), nothing on a cache hit.
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
        let tmp = fresh_dir(&cache.join("tmp"), &format!("model-{}", &key[..8]))?;
        self.build_in(&tc, &tmp, &cache)?;
        install_dir(&tmp.join("out"), &final_dir)?;
        let _ = fs::remove_dir_all(&tmp);
        report(BuildStep::Done {
            top: self.top.clone(),
        });
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

        report(BuildStep::Verilating {
            top: self.top.clone(),
        });
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
        let total = jobs.len();
        let compiled = |done| {
            report(BuildStep::Compiling {
                top: self.top.clone(),
                done,
                total,
            })
        };
        compiled(0);
        run_parallel(jobs, tmp, &compiled)?;
        let runtime = runtime_archive(tc, cache, self.options.trace)?;
        report(BuildStep::Linking {
            top: self.top.clone(),
        });
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

/// The entry points of one loaded library, one per ABI function (see [`ABI_VERSION`]).
pub(super) struct Api {
    pub(super) new: NewFn,
    pub(super) free: FreeFn,
    pub(super) cycle: StepFn,
    pub(super) eval: StepFn,
    pub(super) trace_open: TraceOpenFn,
    pub(super) trace_close: FreeFn,
    pub(super) cycles: CyclesFn,
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
/// threads can share it and each create their own [`Sim`] instances. A handle may carry
/// [`InstanceHooks`] ([`Model::with_hooks`]), which every instance it creates runs.
#[derive(Clone)]
pub struct Model {
    inner: Arc<ModelInner>,
    hooks: Option<Arc<dyn InstanceHooks>>,
}

/// What a [`Model`] handle does with each instance it creates, beyond what the caller asks of
/// that instance: e.g. open a trace window as the instance starts (`nicgen sim --trace`), or
/// note where an instance was when it ended, and whether a failing check was unwinding through
/// it (the tests' waveform of a failure, [`crate::waves`]). Hooks keep the runners that create
/// instances unaware of tracing.
pub trait InstanceHooks: Send + Sync {
    /// A new instance, before its first cycle. The returned tag is handed back to
    /// [`dropped`](Self::dropped) for the same instance.
    fn created(&self, sim: &mut Sim) -> u64;
    /// The instance is being dropped, `panicking` if its thread is unwinding (a check failed
    /// with the instance alive); `sim` still holds its state, e.g. the cycle it had reached.
    /// Runs before the instance's trace file is closed.
    fn dropped(&self, _tag: u64, _sim: &Sim, _panicking: bool) {}
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
        // SAFETY: the types match the shim ABI documented on `ABI_VERSION`; the
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
            hooks: None,
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

    /// A new, independent instance (its own `VerilatedContext`), all inputs zero, cycle 0,
    /// after this handle's hooks (if any) have seen it.
    pub fn instance(&self) -> Sim {
        let mut sim = Sim::new(self.clone());
        if let Some(h) = &self.hooks {
            let tag = h.created(&mut sim);
            sim.set_hook_tag(tag);
        }
        sim
    }

    /// A handle on the same library whose instances run `hooks` (replacing this handle's).
    pub fn with_hooks(&self, hooks: Arc<dyn InstanceHooks>) -> Model {
        Model {
            inner: self.inner.clone(),
            hooks: Some(hooks),
        }
    }

    /// Whether the library was built with FST tracing (`None` if it was loaded by path and
    /// nobody said).
    pub fn traced(&self) -> Option<bool> {
        self.inner.trace
    }

    /// This handle's hooks, for [`Sim`]'s drop.
    pub(super) fn hooks(&self) -> Option<&Arc<dyn InstanceHooks>> {
        self.hooks.as_ref()
    }

    /// The entry points, for [`Sim`].
    pub(super) fn api(&self) -> &Api {
        &self.inner.api
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
}
