//! The errors of the simulated host, and port lookup with the contract's widths.

use crate::axil::AxilError;
use crate::dma::DmaViolation;
use crate::memory::MemError;
use nicgen_tb::stream::StreamError;
use nicgen_tb::{Dir, PortId, Sim};

/// Everything that can go wrong around the simulated NIC.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostError {
    /// The model lacks a port of the host contract, or has it with the wrong width or
    /// direction.
    #[error("model `{top}`, port `{port}`: {message}")]
    Port {
        /// Top module.
        top: String,
        /// Port name.
        port: String,
        /// What is wrong.
        message: String,
    },
    /// A configuration value is unusable.
    #[error("host config: `{field}` {message}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The NIC broke a rule of the DMA port.
    #[error(transparent)]
    Dma(#[from] DmaViolation),
    /// A BAR (AXI4-Lite) transaction failed.
    #[error(transparent)]
    Axil(#[from] AxilError),
    /// An extra agent (a stream driver, sink or monitor) failed.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// A host memory access by the driver failed.
    #[error(transparent)]
    Memory(#[from] MemError),
}

/// Looks up port `name` and checks its direction and width (`None`: any width).
pub(crate) fn port(
    sim: &Sim,
    name: &str,
    dir: Dir,
    width: Option<u32>,
) -> Result<PortId, HostError> {
    let err = |message: String| HostError::Port {
        top: sim.top().to_string(),
        port: name.to_string(),
        message,
    };
    let p = sim.try_port(name).ok_or_else(|| {
        err(format!(
            "missing (the host contract of hdl/src/host needs it; ports: {})",
            sim.layout().port_list()
        ))
    })?;
    if p.dir != dir {
        return Err(err(format!(
            "is an {}, the contract makes it an {}",
            dir_name(p.dir),
            dir_name(dir)
        )));
    }
    match width {
        Some(w) if sim.width(p) != w => Err(err(format!(
            "is {} bits wide, the contract says {w}",
            sim.width(p)
        ))),
        _ => Ok(p),
    }
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Input => "input",
        Dir::Output => "output",
    }
}
