//! The `nicgen` command's library side: running frames through the simulated datapaths, shared
//! by the command line and its tests.

pub mod failure;
pub mod progress;
pub mod regmap;
pub mod results;
pub mod sim_loopback;
pub mod sim_rx;
pub mod sim_tap;
pub mod sim_tx;
pub mod summary;
pub mod trace;
pub mod traffic;
pub mod tx_opts;
pub mod wire;
