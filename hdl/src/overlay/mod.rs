//! Overlay networks: the blocks of VXLAN and NVGRE de-capsulation and encapsulation. Tunnel
//! recognition itself is part of the header parser
//! ([`crate::eth::eth_hdr_parse::HdrParseCfg::tunnels`]).
//!
//! - [`mod@tunnel_steering`]: the de-capsulation steering table, (tunnel kind, VNI/VSID) → receive
//!   queue.

pub mod tunnel_steering;

pub use tunnel_steering::{tunnel_steering, SteerCfg, SteerKey, SteerResult, SteerWrite};
