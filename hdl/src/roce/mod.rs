//! RoCEv2 (RDMA over Converged Ethernet v2) blocks: the transport's per-packet units that sit
//! in the Ethernet paths, one block per file. Today the invariant CRC (`icrc`, checked on RX
//! and inserted on TX); the requester and responder engines, ACK/NAK and retransmission, and
//! DCQCN congestion control will live here too. Wire formats: reference/wire-formats.md §1;
//! golden model: `nicgen_model::roce`.

pub mod icrc;
