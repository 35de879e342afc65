//! Stage 1, the L2/VLAN decode: the TPID and EtherType compares at each tag count, the tags'
//! fields, and the IP bytes stage 2 only picks by tag count.

use super::capture::Window;
use super::{is_ext, stage, S_L2};
use nicgen_edsl::prelude::*;

nicgen_edsl::record! {
    /// The L2 fields of the record, as registered for the early store (`l2_s2`, `l2_s4`);
    /// stage 1 registers them without the EtherType (`l2_s1`, [`tags_only`]).
    pub(super) struct L2Fields {
        ethertype: 16,
        tag0_tci: 16,
        tag1_tci: 16,
        tag0_tpid_s: 1,
    }
}

/// The shape of stage 1's register: the tags' fields, the EtherType left out (it is picked by
/// tag count in stage 2).
pub(super) fn tags_only() -> L2Fields<u32> {
    L2Fields {
        ethertype: 0,
        ..L2Fields::shape()
    }
}

/// Stage 1's registers.
pub(super) struct L2 {
    /// Stage 1 holds a frame (the close, registered).
    pub valid: Sig,
    /// The outer TPID (bytes 12..14) is a VLAN tag.
    pub tag0: Sig,
    /// The inner TPID (bytes 16..18) is a VLAN tag.
    pub tag1: Sig,
    /// The EtherType is IPv4, per tag count (bit `t`: after `t` tags).
    pub et_v4: Sig,
    /// The EtherType is IPv6, per tag count.
    pub et_v6: Sig,
    /// The tags' fields ([`tags_only`]).
    pub tags: Sig,
    /// The IPv6 next header is an extension header, per tag count.
    pub ext_at: Vec<Sig>,
    /// IPv4 MF or a fragment offset, per tag count.
    pub frag_at: Vec<Sig>,
}

/// Stage 1: the compares on the window's L2 bytes; stage 2 combines them (the inner tag counts
/// after an outer one).
pub(super) fn decode(win: &mut Window, valid: Sig) -> L2 {
    let tpid0 = win.be(12, 2, S_L2);
    let tci0 = win.be(14, 2, S_L2);
    let tpid1 = win.be(16, 2, S_L2);
    let tci1 = win.be(18, 2, S_L2);
    let et2 = win.be(20, 2, S_L2);
    // An IPv6 next header (byte l3 + 6) is an extension header, for each tag count.
    let ext_at: Vec<Sig> = (0..3u32)
        .map(|t| {
            stage(
                is_ext(win.at(20 + 4 * t, S_L2)),
                &format!("nh_ext6_t{t}_s1"),
            )
        })
        .collect();
    // The compares only; stage 2 combines them (the inner tag counts after an outer one).
    let tag = |x: Sig| x.eq(0x8100u32) | x.eq(0x88a8u32);
    let tag0 = stage(tag(tpid0), "tag0_s1");
    let tag1 = stage(tag(tpid1), "tag1_s1");
    let et_is = |v: u32, nm: &str| {
        stage(
            cat(&[et2.eq(v as u64), tpid1.eq(v as u64), tpid0.eq(v as u64)]),
            nm,
        )
    };
    let et_v4 = et_is(0x0800, "et_v4_s1");
    let et_v6 = et_is(0x86dd, "et_v6_s1");
    let tags = L2Fields {
        ethertype: Sig::absent("L2Fields", "ethertype"),
        tag0_tci: tci0,
        tag1_tci: tci1,
        tag0_tpid_s: tpid0.eq(0x88a8u32),
    };
    let tags = stage(tags_only().pack(&tags), "l2_s1");
    // IPv4 MF or a fragment offset, for each tag count (bytes l3 + 6, l3 + 7), so that
    // stage 2 only picks.
    let frag_at: Vec<Sig> = (0..3u32)
        .map(|t| {
            let x = win.be(20 + 4 * t, 2, S_L2);
            stage(
                x.bit(13) | x.slice(12, 0).or_reduce(),
                &format!("frag4_t{t}_s1"),
            )
        })
        .collect();
    L2 {
        valid,
        tag0,
        tag1,
        et_v4,
        et_v6,
        tags,
        ext_at,
        frag_at,
    }
}
