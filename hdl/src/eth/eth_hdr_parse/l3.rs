//! Stages 2 and 3, the IPv4/IPv6 decode: the tag count and the EtherType, the IP fixed header,
//! the addresses (into the early store and the address sum), the lengths and L3 checks, and the
//! one-hot select of the first header after the IP header, where the walk starts.

use super::capture::Window;
use super::l2::{tags_only, L2Fields, L2};
use super::walk::{read_range, sel_regs, Sel, Walk};
use super::{stage, ParseMeta, S_L3};
use crate::csum::pseudo::{address_sum_pipelined, ADDRESS_SUM_STAGES};
use nicgen_edsl::prelude::*;

nicgen_edsl::record! {
    /// The addresses as registered for the early store and the address sum (`addr_s4`).
    pub(super) struct Addrs {
        /// IPv4 in the low 32 bits.
        src_ip: 128,
        /// IPv4 in the low 32 bits.
        dst_ip: 128,
    }
}

/// Three registers of the same value for a select with a wide fan-out, each driving a share
/// of it. They differ in reset (none, to 0, to all ones; the stage's valid bit gates what they
/// select, so the reset value does not matter) so that synthesis does not merge them.
fn fanout_regs(x: Sig, name: &str) -> [Sig; 3] {
    let w = x.width();
    let b = reg_init(w, 0u32).named(&format!("{name}_b"));
    let c = reg_init(w, (1u64 << w) - 1).named(&format!("{name}_c"));
    b.set(x);
    c.set(x);
    [stage(x, &format!("{name}_a")), b, c]
}

/// Stage 2's registers: the IP fixed header's fields, picked by tag count.
pub(super) struct IpFields {
    valid: Sig,
    /// The tag count, in three copies for the address muxes of stage 3.
    vc_addr: [Sig; 3],
    /// IPv4, in three copies for the address muxes of stage 3.
    v4_addr: [Sig; 3],
    /// The L2 fields ([`L2Fields`]).
    l2: Sig,
    vc: Sig,
    v4: Sig,
    v6: Sig,
    ver: Sig,
    ihl: Sig,
    /// IPv4 total length or IPv6 payload length.
    len: Sig,
    /// IPv4 MF or fragment offset.
    frag: Sig,
    /// IPv4 protocol or IPv6 next header.
    nh: Sig,
    /// The first header's word less 3, for IPv4 (tags + IHL).
    m0: Sig,
    /// The IPv6 next header is an extension header.
    ext6: Sig,
}

/// Stage 2: tags and EtherType, the IP fixed header through a 3:1 word mux by tag count.
pub(super) fn fields(l2: &L2, win: &mut Window) -> IpFields {
    let v2 = reg_init(1, 0u32).named("v2");
    v2.set(l2.valid);
    let (tag0, tag1, et_v4, et_v6) = (l2.tag0, l2.tag1, l2.et_v4, l2.et_v6);
    let t0 = tag0;
    let t1 = (tag0 & tag1).named("tag1");
    let vc1 = cat(&[t1, t0 & !t1]).named("vc");
    let pick_et = |x: Sig, y: Sig, z: Sig| mux(t1, z, mux(t0, y, x));
    let v4_1 = pick_et(et_v4.bit(0), et_v4.bit(1), et_v4.bit(2)).named("v4");
    let v6_1 = pick_et(et_v6.bit(0), et_v6.bit(1), et_v6.bit(2)).named("v6");
    let et = pick_et(
        win.be(12, 2, S_L3),
        win.be(16, 2, S_L3),
        win.be(20, 2, S_L3),
    );
    let early_l2 = L2Fields {
        ethertype: et,
        ..tags_only().unpack(l2.tags)
    }
    .pack();
    // Word j of the IP header: word 3 + tags + j of the frame.
    let mut d = Vec::new();
    for j in 0..3 {
        let a = win.word(3 + j, S_L3);
        let bb = win.word(4 + j, S_L3);
        let c = win.word(5 + j, S_L3);
        d.push(case(vc1, &[(0, a), (1, bb)], c).named(&format!("ip_w{j}")));
    }
    let ver = d[0].slice(31, 28);
    let ihl = d[0].slice(27, 24);
    let len16 = mux(v4_1, d[0].slice(15, 0), d[1].slice(31, 16));
    let fa = &l2.frag_at;
    let frag4 = case(vc1, &[(0, fa[0]), (1, fa[1])], fa[2]);
    let nh0 = mux(v4_1, d[2].slice(23, 16), d[1].slice(15, 8));
    // The first header's word less 3, for IPv4 (3 + tags + IHL), so that stage 3 only
    // decodes.
    let m0 = (ihl.zext(5) + vc1.zext(5)).named("m0");
    let ea = &l2.ext_at;
    let ext6 = case(vc1, &[(0, ea[0]), (1, ea[1])], ea[2]);
    // The addresses are picked in stage 3, from selects registered here in three copies
    // (each drives a third of the 256-bit muxes).
    let vc_addr = fanout_regs(vc1, "vc_addr_s2");
    let v4_addr = fanout_regs(v4_1, "v4_addr_s2");
    IpFields {
        valid: v2,
        vc_addr,
        v4_addr,
        l2: stage(early_l2, "l2_s2"),
        vc: stage(vc1, "vc_s2"),
        v4: stage(v4_1, "v4_s2"),
        v6: stage(v6_1, "v6_s2"),
        ver: stage(ver, "ver_s2"),
        ihl: stage(ihl, "ihl_s2"),
        len: stage(len16, "len_s2"),
        frag: stage(frag4, "frag4_s2"),
        nh: stage(nh0, "nh_s2"),
        m0: stage(m0, "m0_s2"),
        ext6: stage(ext6, "nh_ext6_s2"),
    }
}

/// Fields carried unchanged from the L3 stage to the finish.
#[derive(Clone, Copy)]
pub(super) struct Carry {
    pub vc: Sig,
    pub v4: Sig,
    pub v6: Sig,
    pub ip_end: Sig,
    pub hdr_end: Sig,
    pub ver_bad: Sig,
    pub ihl_bad: Sig,
    pub totlen_bad: Sig,
    pub opts: Sig,
}

impl Carry {
    /// Every field through `f(field, name)` (a register per stage).
    pub fn map(&self, f: &mut impl FnMut(Sig, &str) -> Sig) -> Carry {
        Carry {
            vc: f(self.vc, "vc"),
            v4: f(self.v4, "v4"),
            v6: f(self.v6, "v6"),
            ip_end: f(self.ip_end, "ip_end"),
            hdr_end: f(self.hdr_end, "hdr_end"),
            ver_bad: f(self.ver_bad, "ver_bad"),
            ihl_bad: f(self.ihl_bad, "ihl_bad"),
            totlen_bad: f(self.totlen_bad, "totlen_bad"),
            opts: f(self.opts, "ipv4_opts"),
        }
    }
}

/// The fields written into the views' early stores in stage 4.
pub(super) struct Early {
    /// The store's write enable.
    pub valid: Sig,
    pub l2: L2Fields,
    pub addrs: Addrs,
}

/// Stage 3's results.
pub(super) struct Lengths {
    /// Stage 3 holds a frame.
    pub valid: Sig,
    pub early: Early,
    /// `ip_sum` ([`address_sum_pipelined`]) and its store's write enable.
    pub ip_sum: Sig,
    pub sum_valid: Sig,
    pub carry: Carry,
    /// The walk's state at its first read stage.
    pub walk: Walk,
}

/// Stage 3: the addresses, the lengths and L3 checks, the first header's select. `wanted`:
/// the fields some view carries.
pub(super) fn lengths(ip: &IpFields, win: &mut Window, w: u32, wanted: &ParseMeta<u32>) -> Lengths {
    let v3 = reg_init(1, 0u32).named("v3");
    v3.set(ip.valid);
    // Source and destination address: IPv4 words 3 and 4 of the IP header, IPv6 words 2..5
    // and 6..9 (word j of the IP header is word 3 + tags + j of the frame).
    let addr_word = |j: u32, win: &mut Window| {
        let sel = ip.vc_addr[(j as usize) % 3];
        let a = win.word(3 + j, S_L3 + 1);
        let bb = win.word(4 + j, S_L3 + 1);
        let c = win.word(5 + j, S_L3 + 1);
        case(sel, &[(0, a), (1, bb)], c).named(&format!("addr_w{j}"))
    };
    let addr: Vec<Sig> = (2..10).map(|j| addr_word(j, win)).collect();
    let zero = lit(32, 0u32);
    // Most significant word first: dst, then src; IPv4 in the low word of each.
    let v4_words = [zero, zero, zero, addr[2], zero, zero, zero, addr[1]];
    let v6_words = [
        addr[4], addr[5], addr[6], addr[7], addr[0], addr[1], addr[2], addr[3],
    ];
    let addrs: Vec<Sig> = (0..8)
        .map(|i| mux(ip.v4_addr[i % 3], v4_words[i], v6_words[i]))
        .collect();
    // The wide fields go into the output store, in frame order, one cycle later from a
    // register: the tag-count and IPv4/IPv6 picks (three LUTs) and the LUT RAM's write
    // path do not fit one cycle together.
    // The store is read many stages later, when the record closes.
    let addrs = Addrs {
        src_ip: cat(&addrs[4..]),
        dst_ip: cat(&addrs[..4]),
    };
    let addr_q = stage(addrs.pack(), "addr_s4");
    let l2_q = stage(ip.l2, "l2_s4");
    let v_early = reg_init(1, 0u32).named("early_valid");
    v_early.set(v3);
    // The L2 fields no view carries are not built.
    let w2 = wanted;
    if [w2.tag0_tpid_s, w2.ethertype, w2.tag0_tci, w2.tag1_tci].contains(&0) {
        l2_q.unused();
    }
    let early = Early {
        valid: v_early,
        l2: L2Fields::unpack(l2_q),
        addrs: Addrs::unpack(addr_q),
    };
    // The addresses' ones'-complement sum (`ip_sum`, the pseudo-header's address part),
    // from the same register, through a free-running pipeline into a store of its own: the
    // checksum units take these 16 bits instead of the 256 address bits.
    let ip_sum = address_sum_pipelined(addr_q, "ip_sum");
    let mut v_sum = v_early;
    for k in 0..ADDRESS_SUM_STAGES {
        let r = reg_init(1, 0u32).named(&format!("ip_sum_valid{k}"));
        r.set(v_sum);
        v_sum = r;
    }
    // The L3 offset (14 + 4 * tags) and the IPv6 header end (40 more) as constants picked
    // by the tag count, so that each sum below is one adder.
    let by_tags = |base: u32| {
        case(
            ip.vc,
            &[(0, lit(8, base)), (1, lit(8, base + 4))],
            lit(8, base + 8),
        )
    };
    let l3_off = by_tags(14).named("l3_off");
    let l3_end6 = by_tags(54).named("l3_end6");
    let hdr_len = cat(&[ip.ihl, lit(2, 0u32)]);
    let hdr_end = (l3_off + hdr_len.zext(8)).named("hdr_end");
    // IPv4: l3 + total length; IPv6: l3 + 40 + payload length.
    let ip_end = (ip.len.zext(17) + mux(ip.v4, l3_off, l3_end6).zext(17)).named("ip_end");
    let ver_bad = mux(ip.v4, ip.ver.ne(4u32), ip.ver.ne(6u32));
    let ihl_bad = ip.ihl.lt(5u32);
    let totlen_bad = ip.len.lt(hdr_len.zext(16));
    let opts = ip.ihl.gt(5u32);
    let p0 = mux(ip.v4, hdr_end, l3_end6).zext(16);
    // ip_end - p0: the L3 offset cancels (IPv4: total length - IHL * 4; else the payload
    // length).
    let rem0 = mux(ip.v4, ip.len.zext(18) - hdr_len.zext(18), ip.len.zext(18));
    let walking0 = ip.v6 & ip.ext6;
    let carry = Carry {
        vc: ip.vc,
        v4: ip.v4,
        v6: ip.v6,
        ip_end,
        hdr_end,
        ver_bad,
        ihl_bad,
        totlen_bad,
        opts,
    };
    let carry = carry.map(&mut |x, n| stage(x, &format!("{n}_s3")));
    // One-hot of the first header's word: m3 + IHL (IPv4) or m3 + 10 (IPv6), m3 = 3 + tags.
    let (lo0, hi0) = read_range(0, w);
    let (sel0, sel0_l4): (Sel, Sel) = (lo0..=hi0)
        .map(|j| {
            let v4hit = if (3..=3 + 17).contains(&j) {
                ip.m0.eq((j - 3) as u64)
            } else {
                lit(1, 0u32)
            };
            let v6hit = if (13..=15).contains(&j) {
                ip.vc.eq((j - 13) as u64)
            } else {
                lit(1, 0u32)
            };
            let (a, b) = sel_regs(mux(ip.v4, v4hit, v6hit), &format!("sel{j}_s3"));
            ((j, a), (j, b))
        })
        .unzip();
    let walk = Walk {
        sel: sel0,
        sel_l4: sel0_l4,
        p: stage(p0, "p_s3"),
        rem: stage(rem0, "rem_s3"),
        // Only an IPv6 frame walks.
        p_sel: Some(stage(l3_end6.zext(16).slice(15, 2), "m_sel_s3")),
        nh: stage(ip.nh, "nh_s3"),
        nh_frag: stage(ip.nh.eq(44u32), "nh_frag_s3"),
        walking: stage(walking0, "walking_s3"),
        latched: lit(1, 0u32),
        ecode: lit(4, 0u32),
        frag: stage(ip.v4 & ip.frag, "frag_s3"),
        ports: None,
        ulen: None,
        doff: None,
        pending: None,
        trunc_len: None,
    };
    Lengths {
        valid: v3,
        early,
        ip_sum,
        sum_valid: v_sum,
        carry,
        walk,
    }
}
