//! The whole RX offload path on bytes: what the NIC reports for one frame off the wire.
//!
//! [`rx_frame`] chains the MAC check ([`crate::mac::fcs_check`]), the header parse
//! ([`crate::parse::parse_headers`]), checksum verification and checksum-complete
//! ([`crate::checksum`]), RSS ([`crate::rss::rss`]) and VLAN strip, and returns the report the
//! `nicgen sim rx` command prints, plus the frame as delivered to the host.
//!
//! Reporting rules (mlx5 CQE semantics, see wire-formats.md §3.3 and §4.7):
//! - a frame is dropped only for `runt`, `oversize`, `fcs` or `mac_control` (first that applies,
//!   in that order); a dropped frame reports nothing else;
//! - `l3` comes from the EtherType after the tags (IPv4 0x0800, IPv6 0x86DD), even when the IP
//!   header is malformed; `l3_csum_ok` is then false (IPv4: the header must also sum to 0xFFFF;
//!   IPv6 has no header checksum and reports true when it and its extension headers are well
//!   formed);
//! - `l4` is TCP/UDP by the IP protocol when the IP header is well formed and the packet is not
//!   a fragment; `l4_csum_ok` is false when the L4 header is malformed; a UDP datagram over IPv4
//!   with checksum 0 is not checked and reports true (mlx5 `l4_ok`, Linux
//!   CHECKSUM_UNNECESSARY);
//! - `csum` is the ones'-complement sum (not complemented) of the IP datagram, from the first byte
//!   after the tags to the IP end (to the frame end when there is no well-formed IP header);
//! - the outer VLAN tag (0x8100 or 0x88A8) is stripped and reported;
//! - RSS uses the parsed addresses/ports; a frame without a well-formed IP header hashes to 0 with
//!   type none and goes to table entry 0.
//!
//! With [`RxConfig::overlay`], a frame that passed the MAC check first goes through
//! [`crate::tunnel::decap`]: a de-capsulated frame continues as its inner frame (every rule above
//! then applies to the inner headers, and a steering entry's queue replaces RSS's), any other
//! frame whole; the report adds the tunnel ([`TunnelReport`]).

use crate::checksum::{combine, pseudo_header, sum};
use crate::ip::IpProtocol;
use crate::mac::fcs_check;
use crate::parse::{malformed, parse_headers, ParseResult, L3_IPV4, L3_IPV6, L4_TCP, L4_UDP};
use crate::rss::{rss_parsed, RssType};
use crate::tunnel::{decap, parse_tunnel, Malformed, Steering, TunnelConfig, TunnelKind};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// RX configuration (what the driver programs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxConfig {
    /// Largest L2 payload: a frame without FCS longer than 14 + 4 × its VLAN tags + `mtu` is
    /// `oversize` ([`crate::mac::max_frame`]).
    pub mtu: usize,
    /// Header window of the parser, bytes.
    pub window: usize,
    /// Toeplitz key.
    pub rss_key: [u8; 40],
    /// One bit per RSS type 1..=6 (see [`RssType`]).
    pub rss_enables: u8,
    /// Indirection table (power-of-two length).
    pub table: Vec<u32>,
    /// Tunnel recognition and de-capsulation in front of the path; `None`: none.
    pub overlay: Option<Overlay>,
}

/// The receive side's tunnel configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlay {
    /// The VXLAN port; the window is the parser's ([`RxConfig::window`]).
    pub tunnel: TunnelConfig,
    /// The steering table and `decap_all`.
    pub steering: Steering,
}

/// What the tunnel stage reports about a delivered frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunnelReport {
    /// The tunnel kind the outer headers announce ([`TunnelKind::None`]: not a tunnel).
    pub kind: TunnelKind,
    /// VNI or VSID (0 unless the tunnel is well formed).
    pub id: u32,
    /// NVGRE FlowID.
    pub flow_id: u8,
    /// The outer headers were removed: the report's other fields describe the inner frame.
    pub decap: bool,
    /// Delivered whole with the inner offloads ([`crate::tunnel::InnerOffload`]): the report's
    /// own fields describe the outer headers, [`RxReport::inner`] the inner ones, and RSS
    /// hashed the inner headers.
    pub inner: bool,
    /// Why the tunnel is malformed.
    pub malformed: Option<Malformed>,
}

/// The inner headers' types and checksum verdicts of a tunnel ([`RxReport::inner`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InnerHeaders {
    /// "ipv4" / "ipv6", as the inner EtherType claims.
    pub l3: Option<&'static str>,
    /// "tcp" / "udp", as the inner IP header claims.
    pub l4: Option<&'static str>,
    /// The inner IPv4 header checksum (IPv6: header chain) verified.
    pub l3_csum_ok: Option<bool>,
    /// The inner TCP/UDP checksum verified.
    pub l4_csum_ok: Option<bool>,
}

/// Why a frame was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Shorter than 64 bytes with FCS.
    Runt,
    /// Longer than the maximum frame.
    Oversize,
    /// The FCS does not verify.
    Fcs,
    /// EtherType 0x8808 (PAUSE, PFC, other MAC control).
    MacControl,
}

impl DropReason {
    /// The name reports print.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Runt => "runt",
            DropReason::Oversize => "oversize",
            DropReason::Fcs => "fcs",
            DropReason::MacControl => "mac_control",
        }
    }
}

/// The per-frame report (one JSON object per input frame in `nicgen sim rx`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxReport {
    /// Why the frame was dropped; `None` when delivered.
    pub drop: Option<DropReason>,
    /// (vid, pcp) of the stripped outer tag.
    pub vlan: Option<(u16, u8)>,
    /// "ipv4" / "ipv6".
    pub l3: Option<&'static str>,
    /// "tcp" / "udp".
    pub l4: Option<&'static str>,
    /// IPv4 header checksum (IPv6: header chain) verified.
    pub l3_csum_ok: Option<bool>,
    /// TCP/UDP checksum verified.
    pub l4_csum_ok: Option<bool>,
    /// Checksum-complete: ones'-complement sum of the IP datagram.
    pub csum: Option<u16>,
    /// A [`malformed`] code (non-zero).
    pub malformed: Option<u8>,
    /// RSS hash type.
    pub rss_type: Option<RssType>,
    /// Toeplitz hash.
    pub rss_hash: Option<u32>,
    /// Receive queue: from the indirection table, or the tunnel's steering entry.
    pub queue: Option<u32>,
    /// The tunnel stage's report (with [`RxConfig::overlay`], for a delivered frame).
    pub tunnel: Option<TunnelReport>,
    /// The inner headers of a tunnel: of a de-capsulated frame (then the same as the report's
    /// own fields), or of one delivered whole with the inner offloads; `None` otherwise.
    pub inner: Option<InnerHeaders>,
}

impl RxReport {
    /// The report of a frame dropped for `reason`: nothing else is known about it.
    pub fn dropped(reason: DropReason) -> RxReport {
        RxReport {
            drop: Some(reason),
            vlan: None,
            l3: None,
            l4: None,
            l3_csum_ok: None,
            l4_csum_ok: None,
            csum: None,
            malformed: None,
            rss_type: None,
            rss_hash: None,
            queue: None,
            tunnel: None,
            inner: None,
        }
    }
}

/// The name of a [`malformed`] code as reports print it.
pub fn malformed_name(code: u8) -> &'static str {
    use malformed::*;
    match code {
        L2_TRUNC => "truncated_l2",
        L3_TRUNC => "truncated_l3",
        IPV4_IHL => "bad_ihl",
        IPV4_TOTAL_LEN => "bad_ip_total_length",
        IP_TRUNC => "ip_length_exceeds_frame",
        IP_VERSION => "bad_ip_version",
        EXT_TRUNC => "truncated_ext_header",
        EXT_LIMIT => "too_many_ext_headers",
        EXT_WINDOW => "ext_header_beyond_window",
        L4_TRUNC => "truncated_l4",
        L4_BAD => "bad_l4_header",
        L4_WINDOW => "l4_header_beyond_window",
        _ => "unknown",
    }
}

/// The RSS type name as reports print it.
pub fn rss_type_name(t: RssType) -> Option<&'static str> {
    match t {
        RssType::None => None,
        RssType::Ipv4 => Some("IPV4"),
        RssType::TcpIpv4 => Some("TCP_IPV4"),
        RssType::UdpIpv4 => Some("UDP_IPV4"),
        RssType::Ipv6 => Some("IPV6"),
        RssType::TcpIpv6 => Some("TCP_IPV6"),
        RssType::UdpIpv6 => Some("UDP_IPV6"),
    }
}

impl RxReport {
    /// The tunnel kind's name (`vxlan`, `nvgre`), when the frame announces one.
    pub fn tunnel_name(&self) -> Option<&'static str> {
        self.tunnel
            .filter(|t| t.kind != TunnelKind::None)
            .map(|t| t.kind.name())
    }
    /// The VNI or VSID of a well-formed tunnel.
    pub fn vni(&self) -> Option<u32> {
        self.tunnel
            .filter(|t| t.kind != TunnelKind::None && t.malformed.is_none())
            .map(|t| t.id)
    }
    /// The outer headers were removed (`None` without a tunnel stage or for a dropped frame).
    pub fn decap(&self) -> Option<bool> {
        self.tunnel.map(|t| t.decap)
    }
    /// The report as one JSON object (the `nicgen sim rx` line format).
    pub fn to_json(&self, index: usize) -> String {
        let s = |v: Option<&str>| {
            v.map(|x| format!("\"{x}\""))
                .unwrap_or_else(|| "null".into())
        };
        let b = |v: Option<bool>| v.map(|x| x.to_string()).unwrap_or_else(|| "null".into());
        let vlan = self
            .vlan
            .map(|(vid, pcp)| format!("{{\"vid\":{vid},\"pcp\":{pcp}}}"))
            .unwrap_or_else(|| "null".into());
        let inner = self.inner.unwrap_or_default();
        format!(
            "{{\"index\":{index},\"action\":\"{}\",\"drop_reason\":{},\"vlan\":{vlan},\"l3\":{},\"l4\":{},\"l3_csum_ok\":{},\"l4_csum_ok\":{},\"csum\":{},\"malformed\":{},\"rss_type\":{},\"rss_hash\":{},\"queue\":{},\"tunnel\":{},\"vni\":{},\"decap\":{},\"tunnel_malformed\":{},\"inner_l3\":{},\"inner_l4\":{},\"inner_l3_csum_ok\":{},\"inner_l4_csum_ok\":{}}}",
            if self.drop.is_some() { "drop" } else { "deliver" },
            s(self.drop.map(DropReason::name)),
            s(self.l3),
            s(self.l4),
            b(self.l3_csum_ok),
            b(self.l4_csum_ok),
            s(self.csum.map(|c| format!("0x{c:04x}")).as_deref()),
            s(self.malformed.map(malformed_name)),
            s(self.rss_type.and_then(rss_type_name)),
            s(self.rss_hash.map(|h| format!("0x{h:08x}")).as_deref()),
            self.queue.map(|q| q.to_string()).unwrap_or_else(|| "null".into()),
            s(self.tunnel_name()),
            self.vni().map(|v| v.to_string()).unwrap_or_else(|| "null".into()),
            b(self.decap()),
            s(self.tunnel.and_then(|t| t.malformed).map(Malformed::name)),
            s(inner.l3),
            s(inner.l4),
            b(inner.l3_csum_ok),
            b(inner.l4_csum_ok),
        )
    }
}

/// The checksum verdicts of one parsed frame ([`checksum_verdicts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CsumVerdicts {
    /// IPv4 header checksum (IPv6: header chain) verified; `None` when the EtherType is not IP.
    pub l3: Option<bool>,
    /// TCP/UDP checksum verified (a zero UDP checksum over IPv4 counts as verified); `None` when
    /// the IP header does not claim TCP or UDP.
    pub l4: Option<bool>,
}

/// The L3 and L4 checksum verdicts of `frame` (no FCS) whose headers `p` describes (a
/// [`parse_headers`] result of the same frame), by the reporting rules of the module docs.
pub fn checksum_verdicts(frame: &[u8], p: &ParseResult) -> CsumVerdicts {
    let f = frame;
    let c = p.claims();
    let ip_ok = p.l3 != 0;
    let start = c.l3_off as usize;
    let end = c.end as usize;
    let l4_off = c.l4_off as usize;
    // IPv6 extension headers belong to L3: a broken (or unparsed) chain is not reported good.
    let ext_bad = c.ext_bad;
    let l3 = matches!(c.l3, L3_IPV4 | L3_IPV6)
        .then(|| ip_ok && !ext_bad && (p.l3 == L3_IPV6 || sum(&f[start..l4_off]) == 0xFFFF));
    let l4 = matches!(c.l4, L4_TCP | L4_UDP).then(|| {
        if p.l4 != L4_TCP && p.l4 != L4_UDP {
            return false;
        }
        let addr = |a: u128| -> IpAddr {
            if p.l3 == L3_IPV4 {
                Ipv4Addr::from(a as u32).into()
            } else {
                Ipv6Addr::from(a).into()
            }
        };
        let seg = &f[l4_off..end];
        let udp4_zero = p.l4 == L4_UDP && p.l3 == L3_IPV4 && seg[6] == 0 && seg[7] == 0;
        let ps = pseudo_header(
            addr(p.src_ip),
            addr(p.dst_ip),
            IpProtocol::from(p.ip_proto),
            p.l4_len as u32,
        );
        udp4_zero || combine(&[ps, sum(seg)]) == 0xFFFF
    });
    CsumVerdicts { l3, l4 }
}

/// What the path reports of one frame's headers ([`headers`]).
struct Headers {
    parse: ParseResult,
    /// (vid, pcp) of the outer tag.
    vlan: Option<(u16, u8)>,
    l3: Option<&'static str>,
    l4: Option<&'static str>,
    verdicts: CsumVerdicts,
    /// Checksum-complete.
    csum: u16,
}

/// The parse of `f` (no FCS) with header window `window`, and what the reporting rules of the
/// module docs make of it.
fn headers(f: &[u8], window: usize) -> Headers {
    let p = parse_headers(f, window);
    // What the headers claim and where the checksum-complete sum runs, as the parser reports
    // it (`ParseResult::claims`): from the IP header to the datagram's end, clipped to the
    // frame when a header is cut.
    let c = p.claims();
    let start = c.l3_off as usize;
    let end = c.end as usize;
    Headers {
        parse: p,
        vlan: c
            .vlan
            .then_some((p.tag0_tci & 0xFFF, (p.tag0_tci >> 13) as u8)),
        l3: match c.l3 {
            L3_IPV4 => Some("ipv4"),
            L3_IPV6 => Some("ipv6"),
            _ => None,
        },
        l4: match c.l4 {
            L4_TCP => Some("tcp"),
            L4_UDP => Some("udp"),
            _ => None,
        },
        verdicts: checksum_verdicts(f, &p),
        csum: sum(&f[start..end.max(start)]),
    }
}

/// What the NIC reports for one frame as it came off the wire (FCS included), and the frame it
/// delivers to the host (FCS removed, outer VLAN tag stripped), if any.
pub fn rx_frame(wire: &[u8], cfg: &RxConfig) -> (RxReport, Option<Vec<u8>>) {
    let v = fcs_check(wire, cfg.mtu);
    let drop = if v.runt {
        Some(DropReason::Runt)
    } else if v.oversize {
        Some(DropReason::Oversize)
    } else if v.fcs_bad {
        Some(DropReason::Fcs)
    } else if v.mac_control {
        Some(DropReason::MacControl)
    } else {
        None
    };
    if let Some(reason) = drop {
        return (RxReport::dropped(reason), None);
    }
    let (tunnel, steered, f, inner_range) = match &cfg.overlay {
        Some(o) => {
            let tc = TunnelConfig {
                window: cfg.window,
                ..o.tunnel
            };
            let (r, out) = decap(&v.frame, &tc, &o.steering);
            // Delivered whole, a well-formed tunnel of a kind with the inner offloads.
            let inner_range = (!r.decapped && o.steering.inner.enabled(r.kind))
                .then(|| parse_tunnel(&v.frame, &tc).inner.map(|i| (i.off, i.end)))
                .flatten();
            let t = TunnelReport {
                kind: r.kind,
                id: r.id,
                flow_id: r.flow_id,
                decap: r.decapped,
                inner: inner_range.is_some(),
                malformed: r.malformed,
            };
            (Some(t), r.queue, out, inner_range)
        }
        None => (None, None, v.frame.clone(), None),
    };
    let f = &f;
    let h = headers(f, cfg.window);
    // The inner offloads: the inner frame parsed as a de-capsulated one would be.
    let ih = inner_range.map(|(a, b)| headers(&f[a..b], cfg.window));
    let rss_on = ih.as_ref().map_or(&h.parse, |i| &i.parse);
    let (hash, t, queue) = rss_parsed(&cfg.rss_key, cfg.rss_enables, &cfg.table, rss_on);
    let mut delivered = f.clone();
    if h.vlan.is_some() {
        delivered.drain(12..16);
    }
    let decapped = tunnel.is_some_and(|t| t.decap);
    let inner = if decapped { Some(&h) } else { ih.as_ref() }.map(|i| InnerHeaders {
        l3: i.l3,
        l4: i.l4,
        l3_csum_ok: i.verdicts.l3,
        l4_csum_ok: i.verdicts.l4,
    });
    let report = RxReport {
        drop: None,
        vlan: h.vlan,
        l3: h.l3,
        l4: h.l4,
        l3_csum_ok: h.verdicts.l3,
        l4_csum_ok: h.verdicts.l4,
        csum: Some(h.csum),
        malformed: (h.parse.malformed != 0).then_some(h.parse.malformed),
        rss_type: Some(t),
        rss_hash: Some(hash),
        queue: Some(steered.unwrap_or(queue)),
        tunnel,
        inner,
    };
    (report, Some(delivered))
}

#[cfg(test)]
mod tests {
    use super::*;
    fn append_fcs(f: &[u8]) -> Vec<u8> {
        let mut v = f.to_vec();
        crate::crc32::append_fcs(&mut v);
        v
    }
    use crate::toeplitz::MICROSOFT_KEY;
    use crate::vectors::hex;

    fn cfg() -> RxConfig {
        RxConfig {
            mtu: 1500,
            window: 128,
            rss_key: MICROSOFT_KEY,
            rss_enables: 0x3F,
            table: (0..128).map(|i| i % 4).collect(),
            overlay: None,
        }
    }

    #[test]
    fn tcp_syn_vector_reports_good_checksums() {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend(hex(
            "45 00 00 28 00 01 00 00 40 06 f6 cb c0 00 02 01 c0 00 02 02",
        ));
        f.extend(hex(
            "30 39 00 50 00 00 00 00 00 00 00 00 50 02 ff ff fb 55 00 00",
        ));
        f.resize(60, 0);
        let (r, d) = rx_frame(&append_fcs(&f), &cfg());
        assert_eq!(
            (r.l3, r.l4, r.l3_csum_ok, r.l4_csum_ok),
            (Some("ipv4"), Some("tcp"), Some(true), Some(true))
        );
        assert_eq!(r.rss_type, Some(RssType::TcpIpv4));
        assert_eq!(d.unwrap(), f);
        // Padding after the datagram is not in the checksum-complete value.
        assert_eq!(r.csum, Some(sum(&f[14..54])));
        assert!(r
            .to_json(3)
            .starts_with("{\"index\":3,\"action\":\"deliver\",\"drop_reason\":null,"));
    }

    #[test]
    fn bad_fcs_and_runts_are_dropped() {
        let f = vec![0u8; 60];
        let mut w = append_fcs(&f);
        w[61] ^= 1;
        assert_eq!(rx_frame(&w, &cfg()).0.drop, Some(DropReason::Fcs));
        assert_eq!(
            rx_frame(&append_fcs(&[0u8; 40]), &cfg()).0.drop,
            Some(DropReason::Runt)
        );
        let r = rx_frame(&w, &cfg()).0;
        assert_eq!(r.to_json(0), "{\"index\":0,\"action\":\"drop\",\"drop_reason\":\"fcs\",\"vlan\":null,\"l3\":null,\"l4\":null,\"l3_csum_ok\":null,\"l4_csum_ok\":null,\"csum\":null,\"malformed\":null,\"rss_type\":null,\"rss_hash\":null,\"queue\":null,\"tunnel\":null,\"vni\":null,\"decap\":null,\"tunnel_malformed\":null,\"inner_l3\":null,\"inner_l4\":null,\"inner_l3_csum_ok\":null,\"inner_l4_csum_ok\":null}");
    }
}
