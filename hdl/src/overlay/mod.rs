//! Overlay networks: the blocks of VXLAN and NVGRE de-capsulation and encapsulation. Tunnel
//! recognition itself is part of the header parser
//! ([`crate::eth::eth_hdr_parse::HdrParseCfg::tunnels`]).
//!
//! - [`mod@rx_decap`]: the receive side's tunnel stage in front of the RX path: recognition,
//!   steering lookup and de-capsulation.
//! - [`mod@tunnel_steering`]: the de-capsulation steering table, (tunnel kind, VNI/VSID) → receive
//!   queue.
//! - [`mod@tx_encap`]: VXLAN / NVGRE encapsulation on transmit, outer headers from a table of
//!   contexts.
//! - [`mod@tx_tso`]: TCP segmentation offload of plain, VXLAN and NVGRE super-frames.
//! - [`mod@tx_lso`]: the TX path's segmentation stage: the TSO engine for LSO sends, a bypass
//!   for the other frames, merged in order.

pub mod rx_decap;
pub mod tunnel_steering;
pub mod tx_encap;
pub mod tx_lso;
pub mod tx_tso;

pub use rx_decap::{rx_decap, DecapCfg, DecapPorts, TunMeta};
pub use tunnel_steering::{tunnel_steering, SteerCfg, SteerKey, SteerResult, SteerWrite};
pub use tx_encap::{tx_encap, EncapCfg, EncapCmd, EncapDrops, EncapPorts, EncapWrite};
pub use tx_lso::{tx_lso, LsoCfg, LsoPorts};
pub use tx_tso::{tx_tso, TsoCfg, TsoCmd, TsoPorts};
