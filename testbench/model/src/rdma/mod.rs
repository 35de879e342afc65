//! The RoCEv2 reliable-connected (RC) transport as a golden model on bytes
//! (reference/wire-formats.md §1.3-§1.9).
//!
//! | Module | Contents |
//! |---|---|
//! | [`headers`] | RETH, AETH with its syndromes, AtomicETH, AtomicAckETH, ImmDt, and [`Packet`], a whole frame |
//!
//! PSNs are 24-bit and compared by the half-space rule ([`psn_diff`]).

pub mod headers;

pub use headers::{rnr_timer_us, Aeth, AtomicAckEth, AtomicEth, NakCode, Packet, Reth, Syndrome};

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
