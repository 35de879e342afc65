//! Golden models of the wire formats and stateless offloads that the nicgen NIC implements.
//!
//! Every hardware block is tested differentially against this crate: the testbench drives frames
//! through the generated Verilog and compares the bytes that come out with what these functions
//! compute from the bytes that went in.
//!
//! **Invariant: the model works on bytes, never on beats or clocks.** Nothing here knows about
//! bus widths, `tkeep`, pipeline stages, cycles or backpressure; every function takes whole
//! frames (or headers) as byte slices and returns bytes or numbers. When the hardware is split
//! differently, or runs at another datapath width, the model does not change.
//!
//! The style follows smoltcp's `wire` module. Per format there is
//!
//! * a zero-copy view `Packet<T: AsRef<[u8]>>` (Ethernet: [`ethernet::Frame`]) with field
//!   offsets kept in a private `mod field`, a `new_checked` constructor that returns
//!   [`Error::Truncated`] instead of panicking on short input, getters, and setters when
//!   `T: AsMut<[u8]>`;
//! * a `Repr`, the parsed high-level form, with `parse`, `emit` and `buffer_len`.
//!
//! `Repr::parse` checks structure (lengths, version), not checksums: a receiving NIC reports a
//! bad checksum, it does not refuse to parse the packet. Checksums are checked and filled by
//! the `verify_checksum` / `fill_checksum` methods of the views.
//!
//! All multi-byte fields are big-endian (network order) unless a function says otherwise (the
//! Ethernet FCS is sent least significant byte first).
//!
//! Modules:
//!
//! | Module | Contents |
//! |---|---|
//! | [`checksum`] | ones'-complement sums, pseudo-headers, RFC 1624 update, the checksum-stage model |
//! | [`cq`] | completion and event queues: CQE/EQE bytes, owner bits, arming, interrupt moderation |
//! | [`crc32`] | Ethernet FCS (CRC-32, reflected 0xEDB88320) |
//! | [`encap`] | VXLAN/NVGRE encapsulation with outer lengths, checksums and UDP source-port entropy |
//! | [`ethernet`] | Ethernet II with up to two 802.1Q / 802.1ad tags; VLAN strip and insert |
//! | [`gre`] | GRE with key (RFC 2784/2890) as NVGRE uses it: VSID and FlowID |
//! | [`ip`] | the IP protocol numbers shared by IPv4 and IPv6 |
//! | [`ipv4`] | IPv4 with options, header checksum, fragment fields |
//! | [`ipv6`] | IPv6 fixed header and extension-header skipping |
//! | [`mac`] | MAC framing: FCS check/strip with runt/oversize/MAC-control verdicts, pad + FCS append |
//! | [`rdma`] | the RoCEv2 RC transport: extended headers, MRs and QPs, requester and responder with go-back-N, DCQCN, a two-node link |
//! | [`regfile`] | the BAR register file on transactions (address, data, strobes in; response, read data, effect out) |
//! | [`roce`] | RoCEv2: BTH, opcodes, ICRC (the masked CRC-32) and frame builders over IPv4/IPv6 with VLAN tags |
//! | [`rq`] | receive queues: scatter of a frame over a WQE's segments, its completion |
//! | [`sq`] | send queues: WQE checks, gather, frames and completions |
//! | [`tcp`] | TCP with options |
//! | [`udp`] | UDP |
//! | [`toeplitz`] | the Toeplitz RSS hash and the Microsoft input sets |
//! | [`tso`] | TCP segmentation of plain and VXLAN/NVGRE super-frames, and encapsulation + TSO |
//! | [`tunnel`] | VXLAN/NVGRE recognition, outer and inner verdicts, inner RSS, steered decapsulation |
//! | [`vxlan`] | VXLAN header: I flag and VNI |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod checksum;
pub mod cq;
pub mod crc32;
pub mod encap;
mod error;
pub mod ethernet;
pub mod gre;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod mac;
pub mod parse;
pub mod rdma;
pub mod regfile;
pub mod roce;
pub mod rq;
pub mod rss;
pub mod rx;
pub mod sq;
pub mod stream;
pub mod tcp;
pub mod toeplitz;
pub mod tso;
pub mod tunnel;
pub mod tx;
pub mod udp;
pub mod vxlan;

pub use error::{Error, Result};
pub use ethernet::{
    EtherType, EthernetAddress, Frame as EthernetFrame, Repr as EthernetRepr, VlanTag,
};
pub use ip::IpProtocol;
pub use ipv4::{Packet as Ipv4Packet, Repr as Ipv4Repr};
pub use ipv6::{Packet as Ipv6Packet, Repr as Ipv6Repr};
pub use tcp::{Packet as TcpPacket, Repr as TcpRepr};
pub use udp::{Packet as UdpPacket, Repr as UdpRepr};

/// Reference vectors and frame builders, shared by the model's tests and the block tests.
pub mod vectors;
#[cfg(test)]
pub(crate) use vectors::hex;
