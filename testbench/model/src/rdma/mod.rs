//! The RoCEv2 reliable-connected (RC) transport as a golden model on bytes
//! (reference/wire-formats.md §1.3-§1.9): the extended headers, verbs contexts, the requester
//! and responder of a QP, DCQCN congestion control and a two-node link to run them against
//! each other.
//!
//! Frames go in and come out as byte vectors (Ethernet without FCS, ICRC included), so a
//! hardware testbench can feed the same frames to the RTL and to [`Qp::on_frame`] /
//! [`Requester::on_packet`] / [`Responder::on_packet`] and compare what each sends.
//!
//! **Time is a tick count the caller passes in** (`now`); the model never reads a clock. One
//! tick stands for one microsecond, the unit of the IBA timer codes and of the DCQCN
//! parameters.
//!
//! | Module | Contents |
//! |---|---|
//! | [`headers`] | RETH, AETH with its syndromes, AtomicETH, AtomicAckETH, ImmDt, and [`Packet`], a whole frame |
//! | [`context`] | host memory, PDs, MRs with access checks, the keyed MR table, QP states and attributes |
//! | [`requester`] | send work requests → packets; ACK/NAK/response handling, go-back-N, timers |
//! | [`responder`] | request packets → execution, ACK/NAK/READ responses/atomic ACKs |
//! | [`qp`] | a QP: the state machine around a requester and a responder |
//! | [`dcqcn`] | the CNP notification point and the DCQCN reaction point |
//! | [`link`] | a lossy, reordering link, a node, and a two-node simulation |
//!
//! PSNs are 24-bit and compared by the half-space rule ([`psn_diff`]).
//!
//! Not modelled: end-to-end credits (ACKs carry credit code 0x1F and the requester ignores
//! credits), the `max_rd_atomic` bound on outstanding READs/atomics, the SE bit, SEND with
//! Invalidate (NAKed as invalid request), UC/UD transports, shared receive queues and
//! work requests with more than one scatter/gather element.

pub mod context;
pub mod dcqcn;
pub mod headers;
pub mod link;
pub mod qp;
pub mod requester;
pub mod responder;

#[cfg(test)]
mod tests;

pub use context::{Access, AccessError, Host, Mr, MrTable, Mtu, QpAttr, QpError, QpState};
pub use dcqcn::{CnpPacer, Dcqcn, DcqcnParams};
pub use headers::{rnr_timer_us, Aeth, AtomicAckEth, AtomicEth, NakCode, Packet, Reth, Syndrome};
pub use link::{Link, LinkConfig, Node, Pair};
pub use qp::Qp;
pub use requester::{Requester, SendWr, WrOp};
pub use responder::{RecvWr, Responder};

use crate::roce::{IpHeader, RoceHeaders};
use std::net::IpAddr;

/// Mask of a 24-bit PSN.
pub const PSN_MASK: u32 = 0xFF_FFFF;

/// `psn + n` modulo 2^24.
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `a - b` as a signed distance by the half-space rule: positive when `a` is after `b`, in
/// -2^23..2^23.
pub fn psn_diff(a: u32, b: u32) -> i32 {
    (a.wrapping_sub(b) << 8) as i32 >> 8
}

/// How a work request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcStatus {
    /// Done.
    Success,
    /// A receive buffer was too small for the SEND.
    LocalLength,
    /// The responder answered NAK remote access error (0x62).
    RemoteAccess,
    /// The responder answered NAK invalid request (0x61).
    RemoteInvalidRequest,
    /// The responder answered NAK remote operational error (0x63).
    RemoteOperational,
    /// Timeouts or sequence NAKs used up `retry_cnt`.
    RetryExceeded,
    /// RNR NAKs used up `rnr_retry`.
    RnrRetryExceeded,
    /// The QP went to ERROR before this request ran.
    Flushed,
}

/// What a completed work request was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOpcode {
    /// SEND or SEND with immediate.
    Send,
    /// RDMA WRITE or WRITE with immediate.
    RdmaWrite,
    /// RDMA READ.
    RdmaRead,
    /// Atomic compare and swap.
    CmpSwap,
    /// Atomic fetch and add.
    FetchAdd,
    /// A receive consumed by a SEND.
    Recv,
    /// A receive consumed by an RDMA WRITE with immediate.
    RecvRdmaWithImm,
}

/// A work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wc {
    /// The QP it belongs to.
    pub qpn: u32,
    /// The caller's id of the work request.
    pub wr_id: u64,
    /// How it ended.
    pub status: WcStatus,
    /// What it was.
    pub opcode: WcOpcode,
    /// Bytes received (receives) or moved (sends, READs).
    pub byte_len: u32,
    /// The immediate of a SEND/WRITE with immediate (receives).
    pub imm: Option<u32>,
}

/// The local end of a QP's path: the node's MAC and IP address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalAddr {
    /// MAC address.
    pub mac: [u8; 6],
    /// IP address.
    pub ip: IpAddr,
}

/// ECN codepoint the transport sends its frames with: ECT(0), so switches may mark CE.
pub const ECN_ECT0: u8 = 0b10;

/// The headers in front of the BTH for frames from `local` to the peer in `attr`, ECN-capable;
/// `None` when the address families differ.
pub fn path_headers(local: &LocalAddr, attr: &QpAttr) -> Option<RoceHeaders> {
    let ip = match (local.ip, attr.dest_ip) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => IpHeader::V4 {
            src,
            dst,
            tos: ECN_ECT0,
            ident: 0,
            ttl: 64,
            dont_frag: true,
        },
        (IpAddr::V6(src), IpAddr::V6(dst)) => IpHeader::V6 {
            src,
            dst,
            traffic_class: ECN_ECT0,
            flow_label: 0,
            hop_limit: 64,
        },
        _ => return None,
    };
    Some(RoceHeaders {
        dst_mac: attr.dest_mac,
        src_mac: local.mac,
        vlans: Vec::new(),
        ip,
        src_port: attr.src_port,
        udp_checksum: 0,
    })
}

/// Packets of a message of `len` bytes at `mtu`: at least one (a zero-length message is one
/// packet).
pub fn packets_for(len: u32, mtu: usize) -> u32 {
    (len as usize).div_ceil(mtu).max(1) as u32
}

/// The payload bytes of packet `k` of a `len`-byte message at `mtu`.
pub fn chunk_len(len: u32, mtu: usize, k: u32) -> usize {
    let off = k as usize * mtu;
    (len as usize).saturating_sub(off).min(mtu)
}

/// Position of packet `k` of `n` in a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// The only packet.
    Only,
    /// The first of several.
    First,
    /// Neither first nor last.
    Middle,
    /// The last of several.
    Last,
}

impl Position {
    /// Position of packet `k` (0-based) of `n`.
    pub fn of(k: u32, n: u32) -> Position {
        match (k == 0, k + 1 == n) {
            (true, true) => Position::Only,
            (true, false) => Position::First,
            (false, true) => Position::Last,
            (false, false) => Position::Middle,
        }
    }

    /// Whether this packet ends the message.
    pub fn ends(self) -> bool {
        matches!(self, Position::Only | Position::Last)
    }

    /// Whether this packet starts the message.
    pub fn starts(self) -> bool {
        matches!(self, Position::Only | Position::First)
    }
}
