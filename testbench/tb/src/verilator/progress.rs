//! What a model build is doing, for whoever shows progress: the first build of a whole NIC
//! takes minutes, and a user watching one line cannot tell working from stuck.
//!
//! A program sets one observer for the process ([`set_build_observer`]); every build then
//! reports its steps to it ([`BuildStep`]), compile steps once per finished file. Without an
//! observer, builds print one line per step to stderr, so tests and scripts still see what
//! takes the time. The crate itself draws nothing: the command line turns the steps into a
//! spinner with the elapsed time.

use std::sync::OnceLock;

/// A step of a model build (or of the Verilator runtime's, built once per toolchain).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildStep {
    /// Verilating `top`'s Verilog into C++.
    Verilating {
        /// The top module.
        top: String,
    },
    /// Compiling `top`'s C++: `done` of `total` files finished.
    Compiling {
        /// The top module.
        top: String,
        /// Files finished.
        done: usize,
        /// Files in all.
        total: usize,
    },
    /// Compiling the Verilator runtime (once per toolchain): `done` of `total` files.
    Runtime {
        /// Files finished.
        done: usize,
        /// Files in all.
        total: usize,
    },
    /// Linking `top`'s model.
    Linking {
        /// The top module.
        top: String,
    },
    /// `top`'s model is built and in the cache.
    Done {
        /// The top module.
        top: String,
    },
}

impl std::fmt::Display for BuildStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildStep::Verilating { top } => write!(f, "verilating {top}"),
            BuildStep::Compiling { top, done, total } => {
                write!(f, "compiling {top}: {done} of {total} C++ files")
            }
            BuildStep::Runtime { done, total } => {
                write!(
                    f,
                    "compiling the Verilator runtime: {done} of {total} files"
                )
            }
            BuildStep::Linking { top } => write!(f, "linking {top}"),
            BuildStep::Done { top } => write!(f, "built {top}"),
        }
    }
}

type Observer = Box<dyn Fn(&BuildStep) + Send + Sync>;

static OBSERVER: OnceLock<Observer> = OnceLock::new();

/// Send every build step of this process to `f` (from whichever thread builds). Only the
/// first call takes effect; it returns `false` when an observer was already set.
pub fn set_build_observer(f: impl Fn(&BuildStep) + Send + Sync + 'static) -> bool {
    OBSERVER.set(Box::new(f)).is_ok()
}

/// Report `step`: to the observer, or as a line on stderr (without one, only the start of
/// each step, not every file).
pub(super) fn report(step: BuildStep) {
    match OBSERVER.get() {
        Some(f) => f(&step),
        None => {
            let first = match &step {
                BuildStep::Compiling { done, .. } | BuildStep::Runtime { done, .. } => *done == 0,
                BuildStep::Done { .. } => false,
                _ => true,
            };
            if first {
                eprintln!("nicgen: {step}");
            }
        }
    }
}
