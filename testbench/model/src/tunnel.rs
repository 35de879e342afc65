//! Overlay tunnels on receive: recognising VXLAN and NVGRE in a whole frame, the checksum
//! verdicts of both header sets, RSS on the inner headers, and decapsulation steered by a
//! (tunnel kind, VNI/VSID) table.
//!
//! # What is recognised
//!
//! The frame (no FCS) is parsed by [`crate::parse::parse_headers`] with the window of
//! [`TunnelConfig::window`] (a receive parser sees the first `window` bytes of a frame; the
//! default covers any frame): outer Ethernet with up to two VLAN tags, outer IPv4 (options included) or IPv6.
//! Then, when the outer IP header is well formed and the packet is not an IP fragment:
//!
//! * **VXLAN**: a well-formed UDP datagram whose destination port is
//!   [`TunnelConfig::vxlan_port`] (4789 by default). The VXLAN header starts after the UDP
//!   header; the inner frame runs to the end of the UDP datagram (its length field).
//! * **NVGRE**: IP protocol 47. The GRE header starts at the L4 offset; the inner frame runs to
//!   the end of the IP datagram.
//!
//! Anything else is [`TunnelKind::None`]. A fragmented outer packet is not a tunnel here: its
//! inner frame is not whole.
//!
//! A recognised tunnel whose header is wrong is **malformed** ([`Malformed`], first failing
//! check in this order): fewer bytes than the tunnel header ([`Malformed::ShortTunnelHeader`];
//! for GRE first the 4-byte base, then the flags/version and protocol checks, then the 8 bytes
//! with the key), the VXLAN header or the GRE header's 8 bytes not wholly within the window
//! (checked after the first length check), VXLAN I flag clear, GRE version not 0, GRE flags not exactly K, GRE protocol
//! not 0x6558, fewer than 14 bytes of inner frame. A malformed tunnel is delivered undecapsulated
//! and flagged, never dropped.
//!
//! The inner frame is parsed with the same [`crate::parse::parse_headers`] (its offsets are
//! relative to the inner frame), and both header sets get their checksum verdicts from
//! [`crate::rx::checksum_verdicts`] (an outer UDP checksum of 0 over IPv4 counts as good, over
//! IPv6 as bad).
//!
//! # Decapsulation ([`decap`])
//!
//! A [`Steering`] table maps (kind, id) to a receive queue; the id is the VNI, or for NVGRE the
//! VSID (the FlowID is per-flow entropy, not part of the key).
//!
//! * hit (or [`Steering::decap_all`] for a well-formed tunnel): the outer headers up to and
//!   including the VXLAN/GRE header are removed, the inner frame is delivered with the inner
//!   checksum verdicts; the queue is the entry's (`None` under `decap_all` without an entry:
//!   RSS decides);
//! * miss: the whole frame is delivered with the outer verdicts, queue `None`;
//! * malformed: the whole frame is delivered with the outer verdicts and the reason.
//!
//! # RSS ([`tunnel_rss`])
//!
//! With the inner offloads enabled for the tunnel's kind ([`InnerOffload`]) and a well-formed tunnel, the
//! hash type and Toeplitz input come from the inner headers; otherwise from the outer ones
//! (then all VXLAN traffic between two VTEPs differs only in the outer UDP source port).

use std::collections::HashMap;

use crate::parse::{malformed as code, parse_headers, ParseResult, MIN_WINDOW};
use crate::rss::{rss_parsed, RssType};
use crate::rx::{checksum_verdicts, CsumVerdicts};
use crate::toeplitz::KEY_LEN;
use crate::{gre, ip::IpProtocol, udp, vxlan};

/// What the receive side is configured to recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TunnelConfig {
    /// UDP destination port of VXLAN.
    pub vxlan_port: u16,
    /// Bytes of the frame the parser sees (at least [`MIN_WINDOW`]): the outer headers are
    /// parsed within it, and a tunnel header that does not lie wholly within it is
    /// [`Malformed::BeyondWindow`].
    pub window: usize,
}

impl TunnelConfig {
    /// The defaults with VXLAN on UDP port `port`.
    pub fn with_vxlan_port(port: u16) -> TunnelConfig {
        TunnelConfig {
            vxlan_port: port,
            ..TunnelConfig::default()
        }
    }
}

impl Default for TunnelConfig {
    fn default() -> Self {
        TunnelConfig {
            vxlan_port: vxlan::DEFAULT_PORT,
            window: crate::parse::MAX_FRAME_LEN,
        }
    }
}

/// The tunnel a frame is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TunnelKind {
    /// Not a tunnel.
    None,
    /// VXLAN over UDP.
    Vxlan,
    /// NVGRE (GRE, protocol 0x6558, with key).
    Nvgre,
}

impl TunnelKind {
    /// The name reports print.
    pub fn name(self) -> &'static str {
        match self {
            TunnelKind::None => "none",
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::Nvgre => "nvgre",
        }
    }

    /// The number a receive parser's record carries (`tunnel`): 0 none, 1 VXLAN, 2 NVGRE.
    pub fn code(self) -> u8 {
        match self {
            TunnelKind::None => 0,
            TunnelKind::Vxlan => 1,
            TunnelKind::Nvgre => 2,
        }
    }

    /// The kind of a record's `tunnel` number ([`TunnelKind::code`]); `None` for a number no
    /// kind has.
    pub fn from_code(code: u8) -> Option<TunnelKind> {
        [TunnelKind::None, TunnelKind::Vxlan, TunnelKind::Nvgre]
            .into_iter()
            .find(|k| k.code() == code)
    }
}

/// Why a recognised tunnel cannot be decapsulated (see the module docs for the order).
/// The hardware reports these by [`Malformed::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// The datagram ends inside the VXLAN or GRE header.
    ShortTunnelHeader,
    /// The VXLAN header, or the 8 bytes of an NVGRE header, lie partly beyond the parser's
    /// window ([`TunnelConfig::window`]).
    BeyondWindow,
    /// VXLAN flags without the I bit.
    VxlanIFlagClear,
    /// GRE version not 0.
    GreVersion,
    /// GRE flags other than K alone (C, R, S or reserved0 set, or K clear).
    GreFlags,
    /// GRE protocol type not 0x6558.
    GreProtocol,
    /// Fewer than 14 bytes after the tunnel header.
    InnerTooShort,
}

impl Malformed {
    /// Every reason, in check order.
    pub const ALL: [Malformed; 7] = [
        Malformed::ShortTunnelHeader,
        Malformed::BeyondWindow,
        Malformed::VxlanIFlagClear,
        Malformed::GreVersion,
        Malformed::GreFlags,
        Malformed::GreProtocol,
        Malformed::InnerTooShort,
    ];

    /// The stable name reports print.
    pub fn name(self) -> &'static str {
        match self {
            Malformed::ShortTunnelHeader => "short_tunnel_header",
            Malformed::BeyondWindow => "tunnel_header_beyond_window",
            Malformed::VxlanIFlagClear => "vxlan_i_flag_clear",
            Malformed::GreVersion => "bad_gre_version",
            Malformed::GreFlags => "bad_gre_flags",
            Malformed::GreProtocol => "bad_gre_protocol",
            Malformed::InnerTooShort => "inner_frame_too_short",
        }
    }

    /// The number a receive parser's record carries (`tunnel_bad`): 1 + the position in
    /// [`Malformed::ALL`], the check order (0 is no reason).
    pub fn code(self) -> u8 {
        1 + Malformed::ALL
            .iter()
            .position(|m| *m == self)
            .expect("every reason is in ALL") as u8
    }
}

impl From<gre::Defect> for Malformed {
    fn from(d: gre::Defect) -> Self {
        match d {
            gre::Defect::Version => Malformed::GreVersion,
            gre::Defect::Flags => Malformed::GreFlags,
            gre::Defect::Protocol => Malformed::GreProtocol,
        }
    }
}

/// The inner frame of a well-formed tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Inner {
    /// First byte of the inner Ethernet header in the frame.
    pub off: usize,
    /// End of the inner frame in the frame (UDP datagram end for VXLAN, IP end for NVGRE).
    pub end: usize,
    /// The inner headers; offsets relative to `off`.
    pub headers: ParseResult,
    /// Checksum verdicts of the inner headers.
    pub csum: CsumVerdicts,
}

/// What the receive side learns about a frame's tunnel ([`parse_tunnel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tunnel {
    /// The tunnel kind the outer headers announce (also for a malformed tunnel).
    pub kind: TunnelKind,
    /// VNI or VSID; 0 when not a well-formed tunnel.
    pub id: u32,
    /// NVGRE FlowID; 0 otherwise.
    pub flow_id: u8,
    /// The outer headers (the whole frame's parse): outer L3 at `l3_off`, L4 at `l4_off`.
    pub outer: ParseResult,
    /// Checksum verdicts of the outer headers.
    pub outer_csum: CsumVerdicts,
    /// First byte of the VXLAN or GRE header; `None` when not a tunnel.
    pub tunnel_off: Option<usize>,
    /// The inner frame; `None` unless the tunnel is well formed.
    pub inner: Option<Inner>,
    /// Why the tunnel is malformed.
    pub malformed: Option<Malformed>,
}

impl Tunnel {
    /// A well-formed tunnel (its inner frame can be delivered).
    pub fn is_well_formed(&self) -> bool {
        self.inner.is_some()
    }

    /// The inner frame's bytes within `frame` (the frame this was parsed from).
    pub fn inner_frame<'a>(&self, frame: &'a [u8]) -> Option<&'a [u8]> {
        self.inner.map(|i| &frame[i.off..i.end])
    }

    /// The headers RSS hashes: the inner ones when `inner` enables them for this kind and
    /// the tunnel is well formed, else the outer ones.
    pub fn rss_headers(&self, inner: InnerOffload) -> &ParseResult {
        match &self.inner {
            Some(i) if inner.enabled(self.kind) => &i.headers,
            _ => &self.outer,
        }
    }
}

/// Parses the tunnel of `frame` (no FCS) as the module docs describe.
pub fn parse_tunnel(frame: &[u8], cfg: &TunnelConfig) -> Tunnel {
    let outer = parse_headers(frame, cfg.window.max(MIN_WINDOW));
    let mut t = Tunnel {
        kind: TunnelKind::None,
        id: 0,
        flow_id: 0,
        outer,
        outer_csum: checksum_verdicts(frame, &outer),
        tunnel_off: None,
        inner: None,
        malformed: None,
    };
    let ip_whole = outer.l3 != 0
        && !outer.frag
        && !matches!(
            outer.malformed,
            code::EXT_TRUNC | code::EXT_LIMIT | code::EXT_WINDOW
        );
    let l4_off = usize::from(outer.l4_off);
    let ip_end = usize::from(outer.ip_end);
    if outer.l4 == crate::parse::L4_UDP && outer.dst_port == cfg.vxlan_port {
        t.kind = TunnelKind::Vxlan;
        let tunnel_off = l4_off + udp::HEADER_LEN;
        let udp_end = l4_off
            + udp::Packet::new_unchecked(&frame[l4_off..])
                .datagram()
                .len();
        t.tunnel_off = Some(tunnel_off);
        let bytes = &frame[tunnel_off..udp_end];
        let header = match vxlan::Packet::new_checked(bytes) {
            Err(_) => Err(Malformed::ShortTunnelHeader),
            Ok(_) if tunnel_off + vxlan::HEADER_LEN > cfg.window => Err(Malformed::BeyondWindow),
            Ok(p) => vxlan::Repr::parse(&p).map_err(|_| Malformed::VxlanIFlagClear),
        };
        match header {
            Ok(repr) => finish(
                &mut t,
                frame,
                tunnel_off + vxlan::HEADER_LEN,
                udp_end,
                repr.vni,
                0,
            ),
            Err(m) => t.malformed = Some(m),
        }
    } else if ip_whole && IpProtocol::from(outer.ip_proto) == IpProtocol::Gre {
        t.kind = TunnelKind::Nvgre;
        t.tunnel_off = Some(l4_off);
        let bytes = &frame[l4_off..ip_end];
        let header = if bytes.len() < gre::BASE_LEN {
            Err(Malformed::ShortTunnelHeader)
        } else if l4_off + gre::NVGRE_HEADER_LEN > cfg.window {
            Err(Malformed::BeyondWindow)
        } else {
            let p = gre::Packet::new_unchecked(bytes);
            match p.nvgre_defect() {
                Some(d) => Err(d.into()),
                None if bytes.len() < gre::NVGRE_HEADER_LEN => Err(Malformed::ShortTunnelHeader),
                None => Ok(gre::Repr::parse(&p).expect("checked above")),
            }
        };
        match header {
            Ok(r) => finish(
                &mut t,
                frame,
                l4_off + gre::NVGRE_HEADER_LEN,
                ip_end,
                r.vsid,
                r.flow_id,
            ),
            Err(m) => t.malformed = Some(m),
        }
    }
    t
}

/// Fills in the inner frame `frame[off..end]` of a tunnel whose header is good.
fn finish(t: &mut Tunnel, frame: &[u8], off: usize, end: usize, id: u32, flow_id: u8) {
    let inner = &frame[off..end];
    if inner.len() < crate::ethernet::header_len(0) {
        t.malformed = Some(Malformed::InnerTooShort);
        return;
    }
    let headers = parse_headers(inner, inner.len().max(MIN_WINDOW));
    t.id = id;
    t.flow_id = flow_id;
    t.inner = Some(Inner {
        off,
        end,
        headers,
        csum: checksum_verdicts(inner, &headers),
    });
}

/// Which tunnel kinds get the inner offloads when delivered whole: their inner headers are
/// parsed, their checksums verified (the inner verdicts, beside the outer ones) and hashed by
/// RSS (inner RSS). The kinds without it hash on the outer headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InnerOffload {
    /// VXLAN gets the inner offloads.
    pub vxlan: bool,
    /// NVGRE gets the inner offloads.
    pub nvgre: bool,
}

impl InnerOffload {
    /// Both kinds.
    pub const ALL: InnerOffload = InnerOffload {
        vxlan: true,
        nvgre: true,
    };

    /// Whether `kind` gets the inner offloads.
    pub fn enabled(self, kind: TunnelKind) -> bool {
        match kind {
            TunnelKind::None => false,
            TunnelKind::Vxlan => self.vxlan,
            TunnelKind::Nvgre => self.nvgre,
        }
    }
}

/// RSS of a parsed frame, `(hash, type, queue)` as [`crate::rss::rss`] computes it, on
/// [`Tunnel::rss_headers`].
pub fn tunnel_rss(
    t: &Tunnel,
    inner: InnerOffload,
    key: &[u8; KEY_LEN],
    enables: u8,
    table: &[u32],
) -> (u32, RssType, u32) {
    rss_parsed(key, enables, table, t.rss_headers(inner))
}

/// The decapsulation steering table: (kind, VNI/VSID) → receive queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Steering {
    entries: HashMap<(TunnelKind, u32), u32>,
    /// Decapsulate every well-formed tunnel, also without an entry.
    pub decap_all: bool,
    /// The kinds whose well-formed tunnels, delivered whole, get the inner offloads.
    pub inner: InnerOffload,
}

impl Steering {
    /// An empty table.
    pub fn new() -> Self {
        Steering::default()
    }

    /// Steers tunnel `kind` with VNI/VSID `id` to `queue` (replacing an earlier entry).
    ///
    /// # Panics
    ///
    /// If `kind` is [`TunnelKind::None`].
    pub fn insert(&mut self, kind: TunnelKind, id: u32, queue: u32) {
        assert_ne!(kind, TunnelKind::None, "steering entry without a tunnel");
        self.entries.insert((kind, id), queue);
    }

    /// The queue of (kind, id).
    pub fn lookup(&self, kind: TunnelKind, id: u32) -> Option<u32> {
        self.entries.get(&(kind, id)).copied()
    }

    /// Every entry, `(kind, id, queue)`, ordered by kind code and id.
    pub fn entries(&self) -> Vec<(TunnelKind, u32, u32)> {
        let mut v: Vec<_> = self.entries.iter().map(|(&(k, i), &q)| (k, i, q)).collect();
        v.sort_by_key(|&(k, i, _)| (k.code(), i));
        v
    }
}

/// What [`decap`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecapReport {
    /// The outer headers were removed.
    pub decapped: bool,
    /// The tunnel kind the frame was recognised as.
    pub kind: TunnelKind,
    /// VNI or VSID (0 unless well formed).
    pub id: u32,
    /// NVGRE FlowID.
    pub flow_id: u8,
    /// The steering entry's queue; `None` when RSS decides.
    pub queue: Option<u32>,
    /// Checksum verdicts of the delivered frame's headers: inner when decapsulated, else outer.
    pub csum: CsumVerdicts,
    /// Why the tunnel is malformed.
    pub malformed: Option<Malformed>,
}

/// Decapsulation of `frame` (no FCS) as the module docs describe; returns the report and the
/// frame as delivered.
pub fn decap(frame: &[u8], cfg: &TunnelConfig, steering: &Steering) -> (DecapReport, Vec<u8>) {
    let t = parse_tunnel(frame, cfg);
    let queue = t
        .is_well_formed()
        .then(|| steering.lookup(t.kind, t.id))
        .flatten();
    let mut report = DecapReport {
        decapped: false,
        kind: t.kind,
        id: t.id,
        flow_id: t.flow_id,
        queue,
        csum: t.outer_csum,
        malformed: t.malformed,
    };
    match t.inner {
        Some(inner) if queue.is_some() || steering.decap_all => {
            report.decapped = true;
            report.csum = inner.csum;
            (report, frame[inner.off..inner.end].to_vec())
        }
        _ => (report, frame.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encap::{encap, EncapKind};
    use crate::parse::{L3_IPV4, L3_IPV6, L4_TCP, L4_UDP};
    use crate::rss::ALL_TYPES;
    use crate::tcp::Flags;
    use crate::toeplitz::MICROSOFT_KEY;
    use crate::vectors::overlay::{ctx, pattern, tcp_frame, udp_frame, Ip, NVGRE};

    fn inners() -> Vec<(Vec<u8>, u8, u8)> {
        let mut v = Vec::new();
        for v6 in [false, true] {
            let ip = Ip { v6, ident: 3 };
            let l3 = if v6 { L3_IPV6 } else { L3_IPV4 };
            v.push((
                tcp_frame(ip, false, 9, Flags::ACK, &pattern(77)),
                l3,
                L4_TCP,
            ));
            v.push((udp_frame(ip, &pattern(3)), l3, L4_UDP));
        }
        v
    }

    fn kinds() -> [(EncapKind, TunnelKind, u32, u8); 3] {
        [
            (EncapKind::vxlan(0xFEDCBA), TunnelKind::Vxlan, 0xFEDCBA, 0),
            (
                EncapKind::Vxlan {
                    vni: 1,
                    dst_port: 4789,
                    udp_checksum: true,
                },
                TunnelKind::Vxlan,
                1,
                0,
            ),
            (NVGRE, TunnelKind::Nvgre, 0x123456, 0xAB),
        ]
    }

    #[test]
    fn encap_parse_decap_round_trip() {
        let cfg = TunnelConfig::default();
        let mut n = 0;
        for (kind, want_kind, id, flow_id) in kinds() {
            for outer_v6 in [false, true] {
                for vlan in [false, true] {
                    for (inner, l3, l4) in inners() {
                        let c = ctx(outer_v6, vlan, kind);
                        let f = encap(&inner, &c, 77).unwrap();
                        let t = parse_tunnel(&f, &cfg);
                        assert_eq!(
                            (t.kind, t.id, t.flow_id, t.malformed),
                            (want_kind, id, flow_id, None)
                        );
                        let l3_off = 14 + 4 * usize::from(vlan);
                        let l4_off = l3_off + if outer_v6 { 40 } else { 20 };
                        assert_eq!(usize::from(t.outer.l3_off), l3_off);
                        assert_eq!(usize::from(t.outer.l4_off), l4_off);
                        let tunnel_off =
                            l4_off + if want_kind == TunnelKind::Vxlan { 8 } else { 0 };
                        assert_eq!(t.tunnel_off, Some(tunnel_off));
                        let i = t.inner.unwrap();
                        assert_eq!((i.off, i.end), (tunnel_off + 8, f.len()));
                        assert_eq!(
                            (i.headers.l3, i.headers.l4, i.headers.l4_off),
                            (l3, l4, if l3 == L3_IPV6 { 54 } else { 34 })
                        );
                        assert_eq!(t.inner_frame(&f), Some(&inner[..]));
                        let outer_l4 = (want_kind == TunnelKind::Vxlan).then_some(true);
                        assert_eq!(
                            t.outer_csum,
                            CsumVerdicts {
                                l3: Some(true),
                                l4: outer_l4
                            }
                        );
                        assert_eq!(
                            i.csum,
                            CsumVerdicts {
                                l3: Some(true),
                                l4: Some(true)
                            }
                        );

                        // Hit, miss, decap_all.
                        let mut s = Steering::new();
                        s.insert(want_kind, id, 5);
                        let (r, d) = decap(&f, &cfg, &s);
                        assert_eq!(d, inner);
                        assert_eq!(
                            (r.decapped, r.kind, r.id, r.flow_id, r.queue, r.csum),
                            (true, want_kind, id, flow_id, Some(5), i.csum)
                        );
                        let mut other = Steering::new();
                        other.insert(want_kind, id ^ 1, 5);
                        let (r, d) = decap(&f, &cfg, &other);
                        assert_eq!(d, f);
                        assert_eq!(
                            (r.decapped, r.queue, r.csum, r.kind),
                            (false, None, t.outer_csum, want_kind)
                        );
                        other.decap_all = true;
                        let (r, d) = decap(&f, &cfg, &other);
                        assert_eq!((r.decapped, r.queue, d), (true, None, inner.clone()));
                        n += 1;
                    }
                }
            }
        }
        assert_eq!(n, 3 * 2 * 2 * 4);
    }

    /// An IPv4/TCP ACK with one payload byte.
    fn small_inner() -> Vec<u8> {
        let ip = Ip {
            v6: false,
            ident: 3,
        };
        tcp_frame(ip, false, 9, Flags::ACK, b"x")
    }

    /// A good VXLAN (IPv4 outer) and NVGRE (IPv6 outer, VLAN) frame; tunnel header offsets 42
    /// and 58.
    fn good() -> (Vec<u8>, Vec<u8>) {
        let inner = small_inner();
        (
            encap(&inner, &ctx(false, false, EncapKind::vxlan(5)), 0).unwrap(),
            encap(&inner, &ctx(true, true, NVGRE), 0).unwrap(),
        )
    }

    /// Cuts the frame at `end` and rewrites the outer lengths to match (IPv4 at 14 without
    /// VLAN with UDP at 34; IPv6 at 18 with GRE at 58).
    fn cut(f: &[u8], end: usize, vxlan: bool) -> Vec<u8> {
        let mut g = f[..end].to_vec();
        if vxlan {
            g[16..18].copy_from_slice(&((end - 14) as u16).to_be_bytes());
            let mut ip = crate::ipv4::Packet::new_unchecked(&mut g[14..]);
            ip.fill_checksum();
            g[38..40].copy_from_slice(&((end - 34) as u16).to_be_bytes());
            g[40..42].fill(0);
        } else {
            g[22..24].copy_from_slice(&((end - 58) as u16).to_be_bytes());
        }
        g
    }

    #[test]
    fn every_malformed_reason() {
        let (vx, gre) = good();
        let mut cases: Vec<(Vec<u8>, Malformed)> = vec![
            (cut(&vx, 49, true), Malformed::ShortTunnelHeader),
            (cut(&vx, 42, true), Malformed::ShortTunnelHeader),
            (cut(&gre, 61, false), Malformed::ShortTunnelHeader),
            (cut(&gre, 65, false), Malformed::ShortTunnelHeader),
            (cut(&vx, 63, true), Malformed::InnerTooShort),
            (cut(&gre, 79, false), Malformed::InnerTooShort),
        ];
        let mut i_clear = vx.clone();
        i_clear[42] = 0xF7;
        i_clear[40..42].fill(0);
        cases.push((i_clear, Malformed::VxlanIFlagClear));
        for (word, why) in [
            (0xA000u16, Malformed::GreFlags),
            (0x3000, Malformed::GreFlags),
            (0x2080, Malformed::GreFlags),
            (0x0000, Malformed::GreFlags),
            (0x2001, Malformed::GreVersion),
            (0xB001, Malformed::GreVersion),
        ] {
            let mut g = gre.clone();
            g[58..60].copy_from_slice(&word.to_be_bytes());
            cases.push((g, why));
        }
        let mut proto = gre.clone();
        proto[60..62].copy_from_slice(&[0x08, 0x00]);
        cases.push((proto, Malformed::GreProtocol));
        // A window that ends inside the NVGRE header (IPv6 outer with a tag: GRE at 58..66).
        let narrow = TunnelConfig {
            window: 64,
            ..TunnelConfig::default()
        };
        let mut cases: Vec<_> = cases
            .into_iter()
            .map(|(f, why)| (f, why, TunnelConfig::default()))
            .collect();
        cases.push((gre.clone(), Malformed::BeyondWindow, narrow));
        let mut seen = std::collections::HashSet::new();
        for (f, why, cfg) in &cases {
            let cfg = *cfg;
            let t = parse_tunnel(f, &cfg);
            assert_eq!(t.malformed, Some(*why), "{}", why.name());
            assert!(t.inner.is_none() && t.kind != TunnelKind::None);
            assert_eq!((t.id, t.flow_id), (0, 0));
            let mut s = Steering::new();
            s.insert(t.kind, 5, 1);
            s.insert(t.kind, 0x123456, 1);
            s.decap_all = true;
            let (r, d) = decap(f, &cfg, &s);
            assert_eq!(
                (r.decapped, r.malformed, r.queue, &d),
                (false, Some(*why), None, f)
            );
            assert_eq!(r.csum, t.outer_csum);
            assert_eq!(
                r.csum.l3,
                Some(true),
                "{}: the outer headers are fine",
                why.name()
            );
            seen.insert(*why);
        }
        assert_eq!(seen.len(), Malformed::ALL.len());
        let names: std::collections::HashSet<_> = Malformed::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), Malformed::ALL.len());
        assert_eq!(Malformed::InnerTooShort.name(), "inner_frame_too_short");
    }

    #[test]
    fn checksum_verdicts_outer_and_inner() {
        let cfg = TunnelConfig::default();
        let s = Steering {
            decap_all: true,
            ..Steering::new()
        };
        let inner = small_inner();
        let with = EncapKind::Vxlan {
            vni: 5,
            dst_port: 4789,
            udp_checksum: true,
        };
        let f = encap(&inner, &ctx(false, false, with), 0).unwrap();
        // A bad inner TCP checksum: still decapsulated, reported bad; the outer UDP checksum
        // covers the inner bytes and goes bad too.
        let mut bad_inner = f.clone();
        bad_inner[50 + 34 + 16] ^= 1;
        let t = parse_tunnel(&bad_inner, &cfg);
        assert_eq!(t.outer_csum.l4, Some(false));
        assert_eq!(
            t.inner.unwrap().csum,
            CsumVerdicts {
                l3: Some(true),
                l4: Some(false)
            }
        );
        let (r, _) = decap(&bad_inner, &cfg, &s);
        assert_eq!((r.decapped, r.csum.l4), (true, Some(false)));
        // A bad outer IPv4 header checksum.
        let mut bad_outer = f.clone();
        bad_outer[24] ^= 1;
        assert_eq!(parse_tunnel(&bad_outer, &cfg).outer_csum.l3, Some(false));
        // Zero outer UDP checksum: good over IPv4, bad over IPv6.
        let zero4 = encap(&inner, &ctx(false, false, EncapKind::vxlan(5)), 0).unwrap();
        assert_eq!(parse_tunnel(&zero4, &cfg).outer_csum.l4, Some(true));
        let mut zero6 = encap(&inner, &ctx(true, false, EncapKind::vxlan(5)), 0).unwrap();
        zero6[60..62].fill(0);
        let t = parse_tunnel(&zero6, &cfg);
        assert_eq!(
            (t.outer_csum.l4, t.kind, t.id),
            (Some(false), TunnelKind::Vxlan, 5)
        );
    }

    #[test]
    fn not_tunnels() {
        let cfg = TunnelConfig::default();
        let inner = small_inner();
        let vx = encap(&inner, &ctx(false, false, EncapKind::vxlan(5)), 0).unwrap();
        // Another port is plain UDP unless configured.
        let to_8472 = EncapKind::Vxlan {
            vni: 5,
            dst_port: 8472,
            udp_checksum: false,
        };
        let linux = encap(&inner, &ctx(false, false, to_8472), 0).unwrap();
        let t = parse_tunnel(&linux, &cfg);
        assert_eq!(
            (t.kind, t.tunnel_off, t.malformed),
            (TunnelKind::None, None, None)
        );
        let t = parse_tunnel(&linux, &TunnelConfig::with_vxlan_port(8472));
        assert_eq!((t.kind, t.id), (TunnelKind::Vxlan, 5));
        assert_eq!(
            parse_tunnel(&vx, &TunnelConfig::with_vxlan_port(8472)).kind,
            TunnelKind::None
        );
        // Plain TCP and UDP, a fragmented VXLAN packet, a truncated frame.
        let mut frag = vx.clone();
        frag[20] |= 0x20;
        frag[24..26].fill(0);
        for f in [
            inner.clone(),
            udp_frame(Ip { v6: true, ident: 0 }, b"x"),
            frag,
            vec![0; 5],
        ] {
            let t = parse_tunnel(&f, &cfg);
            assert_eq!(
                (t.kind, t.tunnel_off, t.inner, t.malformed),
                (TunnelKind::None, None, None, None)
            );
            let (r, d) = decap(
                &f,
                &cfg,
                &Steering {
                    decap_all: true,
                    ..Steering::new()
                },
            );
            assert_eq!((r.decapped, d), (false, f.clone()));
        }
    }

    #[test]
    fn inner_hashes_the_inner_headers_when_enabled() {
        let cfg = TunnelConfig::default();
        let table: Vec<u32> = (0..64).collect();
        let inner = tcp_frame(Ip { v6: true, ident: 0 }, false, 9, Flags::ACK, b"x");
        let inner_alone = rss_of_plain(&inner, &table);
        for (kind, enable) in [
            (
                EncapKind::vxlan(5),
                InnerOffload {
                    vxlan: true,
                    nvgre: false,
                },
            ),
            (
                NVGRE,
                InnerOffload {
                    vxlan: false,
                    nvgre: true,
                },
            ),
        ] {
            let f = encap(&inner, &ctx(false, false, kind), 0).unwrap();
            let t = parse_tunnel(&f, &cfg);
            let outer = rss_of_plain(&f, &table);
            assert_eq!(
                tunnel_rss(&t, enable, &MICROSOFT_KEY, ALL_TYPES, &table),
                inner_alone
            );
            assert_eq!(inner_alone.1, RssType::TcpIpv6);
            for off in [
                InnerOffload::default(),
                InnerOffload {
                    vxlan: !enable.vxlan,
                    nvgre: !enable.nvgre,
                },
            ] {
                assert_eq!(
                    tunnel_rss(&t, off, &MICROSOFT_KEY, ALL_TYPES, &table),
                    outer
                );
            }
            assert_ne!(outer.0, inner_alone.0);
        }
        // A malformed tunnel hashes on the outer headers.
        let mut bad = encap(&inner, &ctx(false, false, NVGRE), 0).unwrap();
        bad[34] = 0xA0;
        let t = parse_tunnel(&bad, &cfg);
        let all = InnerOffload {
            vxlan: true,
            nvgre: true,
        };
        assert_eq!(
            tunnel_rss(&t, all, &MICROSOFT_KEY, ALL_TYPES, &table),
            rss_of_plain(&bad, &table)
        );
    }

    fn rss_of_plain(f: &[u8], table: &[u32]) -> (u32, RssType, u32) {
        let p = parse_headers(f, f.len().max(MIN_WINDOW));
        rss_parsed(&MICROSOFT_KEY, ALL_TYPES, table, &p)
    }
}
