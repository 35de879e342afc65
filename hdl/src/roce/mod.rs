//! RoCEv2 (RDMA over Converged Ethernet v2) blocks: the transport's per-packet units that sit
//! in the Ethernet paths and the context tables they consult, one block per file: the
//! invariant CRC (`icrc`, checked on RX and inserted on TX) and the memory-region table
//! (`mr_table`: key, PD, bounds and rights of an access). The requester and responder engines,
//! ACK/NAK and retransmission, and DCQCN congestion control will live here too. Wire formats:
//! reference/wire-formats.md §1; golden models: `nicgen_model::roce`, `nicgen_model::rdma`.

pub mod icrc;
pub mod mr_table;

pub use mr_table::{mr_table, MrReq, MrRes, MrTableCfg, MrTablePorts, MrWrite};
