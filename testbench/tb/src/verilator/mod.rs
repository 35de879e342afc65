//! Verilator runtime glue: build a generated top into a cached shared library, load it, and
//! step it one clock cycle per FFI call.
//!
//! # Why it looks like this
//! Verilator is the project's simulator (docs/DESIGN.md, decision 2). The eDSL emits Verilog
//! plus a small C++ shim per top with a fixed C ABI; this module turns that text into a loaded
//! model. It does not depend on the eDSL: it receives text. Builds are cached by *content*
//! (never by timestamp), the Verilator runtime is compiled once and reused by every model, and
//! concurrent builds of the same model from several test threads or processes are serialized
//! by a file lock so exactly one of them compiles.
//!
//! # How the parts fit
//! ```text
//!  Verilog + shim text
//!        │ VerilatorBuild::build
//!        ▼
//!  cache.rs      key = SHA-256 of the texts, tool versions and flags
//!                models/<key>/libmodel.so there? ──────────── yes ──────────────────────┐
//!        │ no: lock the key, build in tmp/, rename into place                           │
//!        ▼                                                                              │
//!  model.rs      verilate ─► compile the model and the shim ─► link ◄─ runtime archive   │
//!                                  (toolchain.rs: compiled once, cached the same way)   │
//!        │                                                                              │
//!        ▼                                                                              │
//!  model.rs      Model::load: dlopen (RTLD_LOCAL), check the ABI version, read layout ◄─┘
//!        │ Model::instance (one VerilatedContext each)
//!        ▼
//!  sim.rs        Sim: set inputs ─► cycle() (one FFI call) ─► get outputs;
//!                trace window; recording
//! ```
//! `progress.rs` reports the steps of a build (to an observer the program sets, else as lines
//! on stderr). `toolchain.rs` also finds the tools (`Toolchain::detect`: verilator, its include directory,
//! c++, ar and their version lines, which the keys include), holds their flags and runs them.
//!
//! Each model library carries its own copy of the Verilator runtime and is opened with
//! `RTLD_LOCAL`, so several models coexist in one process; each [`Sim`] owns its own
//! `VerilatedContext`, so instances are independent and may live on different threads.
//!
//! [`ABI_VERSION`] documents the shim ABI and [`VerilatorBuild`] the build steps. Everything
//! public is re-exported here; the submodules are private, so the split is free to change.

mod cache;
mod model;
mod progress;
mod sim;
mod toolchain;

pub use cache::{cache_dir, target_dir};
pub use model::{
    CacheStatus, InstanceHooks, Model, VerilatorBuild, VerilatorOptions, ABI_VERSION,
    EXTRA_FLAGS_ENV,
};
pub use progress::{set_build_observer, BuildStep};
pub use sim::{Recording, Sim};
pub use toolchain::{verilator_available, verilator_required, Toolchain};

use std::io;
use std::path::PathBuf;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_traits() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<Sim>();
        send_sync::<Model>();
    }

    #[test]
    fn missing_verilator_message_says_how_to_fix() {
        let e = VerilatorError::NotFound { detail: "x".into() }.to_string();
        assert!(
            e.contains("apt-get install verilator") && e.contains("VERILATOR="),
            "{e}"
        );
    }
}
