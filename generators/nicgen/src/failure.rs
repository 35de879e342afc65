//! Why a `nicgen` command failed, and its exit code.
//!
//! A CI script has to tell "the NIC is wrong" from "the command was called wrongly" from "this
//! machine cannot run it", so each has its own exit code ([`EXIT_CODES`], also in `--help` and
//! the README). The library tags the errors whose class it knows where it raises them
//! (`Err(Failure::input(...))?` inside an `anyhow::Error`); the command line classifies the
//! rest by the step that failed ([`Failure::classify`] for building and running models).

use nicgen_tb::VerilatorError;

/// The exit codes, as `--help` prints them.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the simulated design did something wrong: a frame differs from the golden model, a frame
     is lost, a counter disagrees, the simulation stops making progress (also: `regmap
     --check` found a stale file)
  2  bad arguments or bad input: a usage error, a missing, unreadable or corrupt file, a bad
     preset or config value, an output that cannot be written, a namespace that does not
     exist
  3  the environment lacks something: Verilator or the C++ compiler, root (CAP_NET_ADMIN)
     or /dev/net/tun for `sim tap`";

/// A failed command: the error, classified by whose fault it is.
#[derive(Debug)]
pub enum Failure {
    /// Exit 1: the simulated design did something wrong.
    Design(anyhow::Error),
    /// Exit 2: bad arguments or bad input.
    Input(anyhow::Error),
    /// Exit 3: the environment lacks a tool or a permission.
    Environment(anyhow::Error),
}

impl Failure {
    /// A design failure (exit 1).
    pub fn design(e: impl Into<anyhow::Error>) -> Failure {
        Failure::Design(e.into())
    }

    /// A bad argument or input (exit 2).
    pub fn input(e: impl Into<anyhow::Error>) -> Failure {
        Failure::Input(e.into())
    }

    /// Something missing from the machine (exit 3).
    pub fn environment(e: impl Into<anyhow::Error>) -> Failure {
        Failure::Environment(e.into())
    }

    /// The process exit code.
    pub fn code(&self) -> i32 {
        match self {
            Failure::Design(_) => 1,
            Failure::Input(_) => 2,
            Failure::Environment(_) => 3,
        }
    }

    /// The error itself.
    pub fn error(&self) -> &anyhow::Error {
        match self {
            Failure::Design(e) | Failure::Input(e) | Failure::Environment(e) => e,
        }
    }

    /// The class a tagged error or a known tool error in `e`'s chain says, if any.
    fn tagged(e: &anyhow::Error) -> Option<fn(anyhow::Error) -> Failure> {
        for cause in e.chain() {
            if let Some(f) = cause.downcast_ref::<Failure>() {
                return Some(match f {
                    Failure::Design(_) => Failure::Design,
                    Failure::Input(_) => Failure::Input,
                    Failure::Environment(_) => Failure::Environment,
                });
            }
            if let Some(v) = cause.downcast_ref::<VerilatorError>() {
                return Some(match v {
                    VerilatorError::NotFound { .. } | VerilatorError::Io { .. } => {
                        Failure::Environment
                    }
                    // A compiler that cannot start is missing from the machine.
                    VerilatorError::CommandFailed { status, .. }
                        if status.starts_with("could not start") =>
                    {
                        Failure::Environment
                    }
                    _ => Failure::Design,
                });
            }
        }
        None
    }

    /// An error from building or running a model: a tagged error keeps its class; a missing
    /// tool or an unwritable model cache is the environment's; anything else is the design's
    /// (Verilator or the compiler rejected the generated design, or the simulation stopped,
    /// lost or mangled a frame, or a counter disagreed).
    pub fn classify(e: anyhow::Error) -> Failure {
        match Failure::tagged(&e) {
            Some(f) => f(e),
            None => Failure::Design(e),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error())
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::{anyhow, Context};

    #[test]
    fn a_tag_survives_context_and_picks_the_code() {
        let e: anyhow::Error = Failure::input(anyhow!("--queues 9 is too many")).into();
        let e = e.context("running the loopback");
        let f = Failure::classify(e);
        assert_eq!(f.code(), 2);
        assert_eq!(
            f.to_string(),
            "running the loopback: --queues 9 is too many"
        );
        assert_eq!(Failure::classify(anyhow!("frame 3 differs")).code(), 1);
        let missing: anyhow::Error = VerilatorError::NotFound {
            detail: "`verilator` is not on PATH".into(),
        }
        .into();
        assert_eq!(Failure::classify(missing).code(), 3);
        let r: anyhow::Result<()> = Err(anyhow!("x")).context("y");
        assert_eq!(Failure::classify(r.unwrap_err()).code(), 1);
    }
}
