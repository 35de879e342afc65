//! Tunnel recognition (`HdrParseCfg::tunnels`): the 16 bytes at the L4 offset, read beside the
//! walk's last read, and the VXLAN and NVGRE header checks, joined with the L3/L4 verdicts in
//! the finish.
//!
//! The walk's offset is final after the fourth extension header's compute stage (the fifth
//! read only latches or gives up), so the read starts there: stage 16 registers a one-hot
//! select of the L4 word from that offset (every header offset is 2 mod 4), stage 17 the
//! AND-OR per group of at most 4 words, stage 18 the OR of the groups: the bytes reach stage 18
//! with the TCP/UDP fields. The checks against the bytes, the UDP length and the L4 remainder
//! are computed there, one flag each; the finish picks the first failed one and decides the
//! verdict: a frame is VXLAN when its
//! UDP header passed every check and its destination port is `vxlan_port`, NVGRE when its IP
//! header did, it is not a fragment and its protocol is 47 (the golden model's order:
//! `nicgen_model::tunnel::parse_tunnel`).

use super::capture::Window;
use super::stage;
use nicgen_edsl::prelude::*;

/// The reason codes of `tunnel_bad` (0: none), in check order: the golden model's
/// `nicgen_model::tunnel::Malformed::code`.
pub mod tunnel_bad {
    /// The datagram ends inside the VXLAN header or the GRE header.
    pub const SHORT: u32 = 1;
    /// The VXLAN header, or the GRE header's 8 bytes, not wholly within the window.
    pub const BEYOND_WINDOW: u32 = 2;
    /// VXLAN flags without the I bit.
    pub const VXLAN_I_FLAG: u32 = 3;
    /// GRE version not 0.
    pub const GRE_VERSION: u32 = 4;
    /// GRE flags other than K alone.
    pub const GRE_FLAGS: u32 = 5;
    /// GRE protocol not 0x6558 (transparent Ethernet bridging).
    pub const GRE_PROTOCOL: u32 = 6;
    /// Fewer than 14 bytes after the tunnel header.
    pub const INNER_SHORT: u32 = 7;
}

/// The `tunnel` field: the kind the outer headers announce (the golden model's
/// `nicgen_model::tunnel::TunnelKind::code`).
pub mod tunnel_kind {
    pub const NONE: u32 = 0;
    pub const VXLAN: u32 = 1;
    pub const NVGRE: u32 = 2;
}

/// UDP header + VXLAN header, and the 14-byte inner Ethernet header after it.
const VXLAN_END: u32 = 16;
/// The GRE header with its key.
const GRE_END: u32 = 8;
const INNER_MIN: u32 = 14;

/// The bytes at the L4 offset the checks need, as read (big-endian), in stage-18 registers.
pub(super) struct TunRead {
    /// Bytes 0..4: the UDP ports, or the GRE flags/version and protocol.
    pub w0: Sig,
    /// Bytes 4..8: the UDP length and checksum, or the GRE key.
    pub w1: Sig,
    /// Byte 8, bit 3: the VXLAN I flag.
    pub vx_i: Sig,
    /// Bytes 12..15: the VNI.
    pub vni: Sig,
    /// The VXLAN header's end (L4 + 16) beyond the window.
    pub far_vx: Sig,
    /// The GRE header's end (L4 + 8) beyond the window.
    pub far_gre: Sig,
}

/// Stages 16-18: the bytes at `p` (the walk's final offset, a stage-15 register), read from
/// the window `w` bytes long.
pub(super) fn read(p: Sig, win: &mut Window, w: u32) -> TunRead {
    const S_SEL: u32 = 16;
    let n = |x: &str, st: u32| format!("tun_{x}_s{st}");
    // L4 starts at 34 or later (14 + 20); a word whose GRE header would end past the window
    // gives no header (BEYOND_WINDOW), so its select is not built.
    let (lo, hi) = (8u32, (w.saturating_sub(2 + GRE_END)) / 4);
    let m = p.slice(15, 2);
    let sel: Vec<(u32, Sig)> = (lo..=hi)
        .map(|x| (x, stage(m.eq(x as u64), &n(&format!("sel{x}"), S_SEL))))
        .collect();
    let far_vx = stage(p.gt((w - VXLAN_END) as u64), &n("far_vx", S_SEL));
    let far_gre = stage(p.gt((w - GRE_END) as u64), &n("far_gre", S_SEL));
    // Per group of at most 4 words, the AND-OR of the bytes the checks need (bytes beyond the
    // window read 0: their header is BEYOND_WINDOW anyway): 8 inputs, two LUT levels.
    let st = S_SEL + 1;
    let size = sel.len().div_ceil(sel.len().div_ceil(4).max(1)).max(1);
    let mut groups = Vec::new();
    for (g, chunk) in sel.chunks(size).enumerate() {
        let terms: Vec<Sig> = chunk
            .iter()
            .map(|&(x, bit)| {
                let at = 4 * x + 2;
                let bytes = cat(&[
                    win.be(at, 8, st),
                    win.at(at + 8, st).bit(3),
                    win.be(at + 12, 3, st),
                ]);
                bytes & bit.repl(bytes.width())
            })
            .collect();
        let or = terms
            .into_iter()
            .reduce(|a, b| a | b)
            .expect("a group has a word");
        groups.push(stage(or, &n(&format!("g{g}"), st)));
    }
    let all = groups.into_iter().reduce(|a, b| a | b).expect("a word");
    let bytes = stage(all, &n("bytes", st + 1));
    TunRead {
        w0: bytes.slice(88, 57),
        w1: bytes.slice(56, 25),
        vx_i: bytes.bit(24),
        vni: bytes.slice(23, 0),
        far_vx: stage(stage(far_vx, &n("far_vx", st)), &n("far_vx", st + 1)),
        far_gre: stage(stage(far_gre, &n("far_gre", st)), &n("far_gre", st + 1)),
    }
}

/// What the tunnel checks hand to the finish (from stage-18 registers), per kind: the kind's
/// candidacy, its reason code as if it were that kind, its id, flow id and inner frame.
pub(super) struct TunPre {
    /// The UDP destination port is `vxlan_port` (VXLAN if the UDP header passes its checks).
    pub vx_port: Sig,
    /// IP protocol 47 (NVGRE if the IP header passes its checks and is not a fragment).
    pub gre_proto: Sig,
    /// The VXLAN checks that failed, one flag each in the golden model's order
    /// ([`VX_CODES`]); the reason is picked from the registered flags ([`vx_code`]).
    pub vx_fail: Sig,
    /// The same for NVGRE ([`GRE_CODES`], [`gre_code`]).
    pub gre_fail: Sig,
    pub vni: Sig,
    /// The GRE key: VSID (upper 24 bits) and FlowID.
    pub key: Sig,
    pub vx_inner: (Sig, Sig),
    pub gre_inner: (Sig, Sig),
}

impl TunPre {
    /// Every field through `f(field, name)` (a register per finish stage).
    pub fn map(&self, f: &mut impl FnMut(Sig, &str) -> Sig) -> TunPre {
        TunPre {
            vx_port: f(self.vx_port, "tun_vx_port"),
            gre_proto: f(self.gre_proto, "tun_gre_proto"),
            vx_fail: f(self.vx_fail, "tun_vx_fail"),
            gre_fail: f(self.gre_fail, "tun_gre_fail"),
            vni: f(self.vni, "tun_vni"),
            key: f(self.key, "tun_key"),
            vx_inner: (
                f(self.vx_inner.0, "tun_vx_off"),
                f(self.vx_inner.1, "tun_vx_end"),
            ),
            gre_inner: (
                f(self.gre_inner.0, "tun_gre_off"),
                f(self.gre_inner.1, "tun_gre_end"),
            ),
        }
    }
}

/// The checks on stage-18 registers: `t` the bytes, `l4_off` and `rem` (IP end − L4 offset)
/// the walk's, `ip_proto` the L4 protocol, `ip_end` the IP datagram's end,
/// `vxlan_port` the configured port.
pub(super) fn checks(
    t: &TunRead,
    l4_off: Sig,
    rem: Sig,
    ip_proto: Sig,
    ip_end: Sig,
    vxlan_port: Sig,
) -> TunPre {
    let ulen = t.w1.slice(31, 16);
    // `rem` is negative only where the L3 checks failed (then no tunnel is reported).
    let rem_lt = |v: u32| rem.bit(rem.width() - 1) | rem.lt(v as u64);
    // Each check a flag of its own, registered before the first failure is picked: the
    // compares and the priority pick are not one cycle.
    let flags = |f: &[Sig]| cat(&f.iter().rev().copied().collect::<Vec<_>>());
    let vx_fail = flags(&[
        ulen.lt(VXLAN_END as u64),
        t.far_vx,
        !t.vx_i,
        ulen.lt((VXLAN_END + INNER_MIN) as u64),
    ]);
    let flags_version = t.w0.slice(31, 16);
    let gre_fail = flags(&[
        rem_lt(4),
        t.far_gre,
        flags_version.slice(2, 0).ne(0u32),
        flags_version.ne(0x2000u32),
        t.w0.slice(15, 0).ne(0x6558u32),
        rem_lt(GRE_END),
        rem_lt(GRE_END + INNER_MIN),
    ]);
    TunPre {
        vx_port: t.w0.slice(15, 0).eq(vxlan_port),
        gre_proto: ip_proto.eq(47u32),
        vx_fail,
        gre_fail,
        vni: t.vni,
        key: t.w1,
        vx_inner: (l4_off + VXLAN_END, l4_off + ulen),
        gre_inner: (l4_off + GRE_END, ip_end.trunc(16)),
    }
}

/// The reasons of [`TunPre::vx_fail`]'s flags, bit 0 first (the first that failed is reported).
pub(super) const VX_CODES: [u32; 4] = [
    tunnel_bad::SHORT,
    tunnel_bad::BEYOND_WINDOW,
    tunnel_bad::VXLAN_I_FLAG,
    tunnel_bad::INNER_SHORT,
];

/// The reasons of [`TunPre::gre_fail`]'s flags, bit 0 first.
pub(super) const GRE_CODES: [u32; 7] = [
    tunnel_bad::SHORT,
    tunnel_bad::BEYOND_WINDOW,
    tunnel_bad::GRE_VERSION,
    tunnel_bad::GRE_FLAGS,
    tunnel_bad::GRE_PROTOCOL,
    tunnel_bad::SHORT,
    tunnel_bad::INNER_SHORT,
];

/// The reason of the first failed check of `fail` (flags in the order of `codes`), 0 for none.
pub(super) fn first_failure(fail: Sig, codes: &[u32]) -> Sig {
    let arms: Vec<(Sig, Sig)> = codes
        .iter()
        .enumerate()
        .map(|(i, &c)| (fail.bit(i as u32), lit(3, c)))
        .collect();
    select(&arms, lit(3, 0u32))
}
