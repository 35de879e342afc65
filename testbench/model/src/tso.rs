//! TCP segmentation offload (TSO) on bytes, for plain TCP and for TCP inside VXLAN or NVGRE,
//! over IPv4 and IPv6 outer and inner headers: what hardware TSO must produce, byte for byte,
//! from one "super-frame" (wire-formats.md §2.5, Linux GSO semantics).
//!
//! # Input
//!
//! A super-frame is one Ethernet frame (no FCS) with complete headers and up to
//! [`MAX_PAYLOAD`] bytes of TCP payload: plain (Ethernet, ≤ 2 VLAN tags, IPv4 with options or
//! IPv6, TCP with options), or a tunnel the host already encapsulated, as Linux hands it for
//! `NETIF_F_GSO_UDP_TUNNEL[_CSUM]` / GRE: outer Ethernet, outer IPv4/IPv6, then UDP to the
//! VXLAN port ([`crate::tunnel::TunnelConfig::vxlan_port`]) with a VXLAN header, or an NVGRE
//! header (IP protocol 47), then the inner Ethernet, IPv4/IPv6 and TCP headers.
//!
//! **Length fields are not trusted.** IPv4 total length, IPv6 payload length and UDP length
//! are 16 bits wide, so a super-frame with 256 KiB of payload cannot state its length; the
//! stack leaves whatever it likes there. The payload is everything after the (inner) TCP
//! header to the end of the buffer, and every length is rewritten per segment. The headers
//! are found by their own fields: EtherType and VLAN TPIDs, IHL, IPv4 protocol / IPv6 next
//! header, UDP destination port, GRE flags, TCP data offset.
//!
//! Refused with an [`Error`] (never a panic): MSS 0 ([`Error::Malformed`]); headers cut by
//! the buffer end ([`Error::Truncated`]); a packet that is not TCP (after the tunnel, if any),
//! not IP, an IP fragment, IPv6 extension headers, a wrong IP version, a VXLAN header without
//! the I flag, a GRE header that is not NVGRE, more than [`MAX_PAYLOAD`] bytes of payload, or a
//! segment whose IP length would exceed 65535 ([`Error::Unsupported`] / [`Error::Malformed`]).
//!
//! # Output: segment i of n (wire-formats.md §2.5)
//!
//! The payload is cut into n = ⌈len / MSS⌉ pieces (n = 1 when it fits one MSS, also for an
//! empty payload), each MSS bytes but the last. Segment i is the super-frame's headers, with
//!
//! | Header | Field | Value |
//! |---|---|---|
//! | outer IPv4 | total length, ID, checksum | this segment's, base ID + i (mod 2¹⁶), recomputed |
//! | outer IPv6 | payload length | this segment's |
//! | outer UDP | length | this segment's |
//! | | checksum | 0 stays 0; otherwise recomputed (0 computed is sent as 0xFFFF) |
//! | VXLAN / NVGRE, inner Ethernet | – | copied |
//! | inner (or only) IPv4 | total length, ID, checksum | this segment's, base ID + i, recomputed |
//! | inner (or only) IPv6 | payload length | this segment's |
//! | TCP | sequence number | base + i·MSS (mod 2³²) |
//! | | flags | CWR only on segment 0; FIN and PSH only on segment n−1; the rest (and the reserved bits) copied |
//! | | checksum | recomputed over the pseudo-header with this segment's length |
//! | | ack, window, urgent pointer, options | copied |
//!
//! followed by its piece of the payload. IDs always increment (no fixed-ID mode): with DF = 0
//! that is required, with DF = 1 it is what Linux does without `SKB_GSO_TCP_FIXEDID`.
//!
//! [`encap_tso`] is the NIC's own encapsulation combined with TSO: the inner super-frame is
//! segmented as plain TCP, then every segment is encapsulated by [`crate::encap::encap`] with
//! outer IPv4 ID base + i.

use std::net::IpAddr;

use crate::encap::{encap, EncapContext};
use crate::error::{Error, Result};
use crate::ethernet::{EtherType, Frame};
use crate::ip::IpProtocol;
use crate::tcp::Flags;
use crate::tunnel::TunnelConfig;
use crate::{gre, ipv4, ipv6, tcp, udp, vxlan};

/// Largest TCP payload of one super-frame.
pub const MAX_PAYLOAD: usize = 256 * 1024;

/// Where an IP header is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ip {
    off: usize,
    v4: bool,
}

/// The headers of a super-frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// The outer IP header and the outer UDP header (VXLAN only) of a tunnel.
    outer: Option<(Ip, Option<usize>)>,
    /// The inner (or only) IP header.
    ip: Ip,
    tcp_off: usize,
    payload_off: usize,
}

/// The EtherType and L3 offset of the Ethernet header at `off`.
fn walk_eth(frame: &[u8], off: usize) -> Result<(EtherType, usize)> {
    let eth = Frame::new_checked(&frame[off..])?;
    Ok((eth.ethertype(), off + eth.header_len()))
}

/// The IP header at `off` under `ethertype`: where it is, its protocol and the L4 offset.
/// Length fields are not looked at.
fn walk_ip(frame: &[u8], ethertype: EtherType, off: usize) -> Result<(Ip, IpProtocol, usize)> {
    let data = &frame[off..];
    match ethertype {
        EtherType::Ipv4 => {
            Error::check_len("ipv4 header", ipv4::HEADER_LEN, data.len())?;
            let p = ipv4::Packet::new_unchecked(data);
            if p.version() != 4 {
                return Err(Error::Unsupported(
                    "ipv4 header with a version other than 4",
                ));
            }
            if p.header_len() < ipv4::HEADER_LEN {
                return Err(Error::Malformed("ipv4 IHL below 5"));
            }
            Error::check_len("ipv4 options", p.header_len(), data.len())?;
            if p.is_fragment() {
                return Err(Error::Unsupported("tso of an ip fragment"));
            }
            Ok((Ip { off, v4: true }, p.protocol(), off + p.header_len()))
        }
        EtherType::Ipv6 => {
            Error::check_len("ipv6 header", ipv6::HEADER_LEN, data.len())?;
            let p = ipv6::Packet::new_unchecked(data);
            if p.version() != 6 {
                return Err(Error::Unsupported(
                    "ipv6 header with a version other than 6",
                ));
            }
            let next = p.next_header();
            if matches!(
                next,
                IpProtocol::HopByHop
                    | IpProtocol::Ipv6Route
                    | IpProtocol::Ipv6Frag
                    | IpProtocol::Ipv6Opts
            ) {
                return Err(Error::Unsupported("tso with ipv6 extension headers"));
            }
            Ok((Ip { off, v4: false }, next, off + ipv6::HEADER_LEN))
        }
        _ => Err(Error::Unsupported("tso of a frame that is not ip")),
    }
}

/// The layout of `frame`; tunnels are looked for only with `tunnels`.
fn layout(frame: &[u8], tunnels: Option<&TunnelConfig>) -> Result<Layout> {
    let (ethertype, l3_off) = walk_eth(frame, 0)?;
    let (ip, proto, l4_off) = walk_ip(frame, ethertype, l3_off)?;
    let (outer, ip, proto, tcp_off) = match (proto, tunnels) {
        (IpProtocol::Tcp, _) => (None, ip, proto, l4_off),
        (IpProtocol::Udp, Some(cfg)) => {
            let u = udp::Packet::new_unchecked(&frame[l4_off..]);
            Error::check_len("udp header", udp::HEADER_LEN, frame.len() - l4_off)?;
            if u.dst_port() != cfg.vxlan_port {
                return Err(Error::Unsupported("tso of udp that is not vxlan"));
            }
            let at = l4_off + udp::HEADER_LEN;
            vxlan::Repr::parse(&vxlan::Packet::new_checked(&frame[at..])?)?;
            let (inner_type, inner_l3) = walk_eth(frame, at + vxlan::HEADER_LEN)?;
            let (inner, proto, tcp_off) = walk_ip(frame, inner_type, inner_l3)?;
            (Some((ip, Some(l4_off))), inner, proto, tcp_off)
        }
        (IpProtocol::Gre, Some(_)) => {
            gre::Repr::parse(&gre::Packet::new_checked(&frame[l4_off..])?)?;
            let (inner_type, inner_l3) = walk_eth(frame, l4_off + gre::NVGRE_HEADER_LEN)?;
            let (inner, proto, tcp_off) = walk_ip(frame, inner_type, inner_l3)?;
            (Some((ip, None)), inner, proto, tcp_off)
        }
        _ => (None, ip, proto, l4_off),
    };
    if proto != IpProtocol::Tcp {
        return Err(Error::Unsupported("tso of a packet that is not tcp"));
    }
    let t = tcp::Packet::new_checked(&frame[tcp_off..])?;
    Ok(Layout {
        outer,
        ip,
        tcp_off,
        payload_off: tcp_off + t.header_len(),
    })
}

/// Where a super-frame's headers are: what the driver tells the NIC with an LSO send (mlx5's
/// software-parser offsets with `mss`), bytes from the frame's start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LsoOffsets {
    /// The outer IP header (tunnels; 0 otherwise).
    pub outer_l3: usize,
    /// The outer UDP header (VXLAN) or the GRE header (NVGRE); 0 otherwise.
    pub outer_l4: usize,
    /// The inner (or only) IP header.
    pub l3: usize,
    /// The TCP header.
    pub l4: usize,
    /// The first payload byte: the end of the TCP header.
    pub hdr_len: usize,
    /// 0 plain, 1 VXLAN, 2 NVGRE.
    pub tunnel: u8,
    /// The outer IP header is IPv6.
    pub outer_v6: bool,
    /// The inner (or only) IP header is IPv6.
    pub v6: bool,
}

/// The [`LsoOffsets`] of super-frame `frame` as [`tso`] finds its headers (VXLAN on `cfg`'s
/// port, NVGRE), refused as [`tso`] refuses it.
pub fn lso_offsets(frame: &[u8], cfg: &TunnelConfig) -> Result<LsoOffsets> {
    let l = layout(frame, Some(cfg))?;
    let (outer_l3, outer_l4, tunnel, outer_v6) = match l.outer {
        Some((ip, Some(udp))) => (ip.off, udp, 1, !ip.v4),
        Some((ip, None)) => (ip.off, ip.off + ip_header_len(frame, ip), 2, !ip.v4),
        None => (0, 0, 0, false),
    };
    Ok(LsoOffsets {
        outer_l3,
        outer_l4,
        l3: l.ip.off,
        l4: l.tcp_off,
        hdr_len: l.payload_off,
        tunnel,
        outer_v6,
        v6: !l.ip.v4,
    })
}

/// Bytes of the IP header `ip` in `f` (IPv4 with options; IPv6 without extension headers).
fn ip_header_len(f: &[u8], ip: Ip) -> usize {
    if ip.v4 {
        ipv4::Packet::new_unchecked(&f[ip.off..]).header_len()
    } else {
        ipv6::HEADER_LEN
    }
}

/// Source and destination of the IP header `ip` in `f`.
fn addrs(f: &[u8], ip: Ip) -> (IpAddr, IpAddr) {
    if ip.v4 {
        let p = ipv4::Packet::new_unchecked(&f[ip.off..]);
        (p.src_addr().into(), p.dst_addr().into())
    } else {
        let p = ipv6::Packet::new_unchecked(&f[ip.off..]);
        (p.src_addr().into(), p.dst_addr().into())
    }
}

/// Rewrites the length of the IP header `ip` for the segment `f`, and for IPv4 the ID
/// (`base + i`) and the checksum. The length was checked to fit.
fn fix_ip(f: &mut [u8], ip: Ip, base_id: u16, i: usize) {
    let len = f.len() - ip.off;
    if ip.v4 {
        let mut p = ipv4::Packet::new_unchecked(&mut f[ip.off..]);
        p.set_total_len(len as u16);
        p.set_ident(base_id.wrapping_add(i as u16));
        p.fill_checksum();
    } else {
        let mut p = ipv6::Packet::new_unchecked(&mut f[ip.off..]);
        p.set_payload_len((len - ipv6::HEADER_LEN) as u16);
    }
}

fn ipv4_ident(f: &[u8], ip: Ip) -> u16 {
    ipv4::Packet::new_unchecked(&f[ip.off..]).ident()
}

/// Segments `frame` laid out as `l`.
fn segment(frame: &[u8], l: &Layout, mss: usize) -> Result<Vec<Vec<u8>>> {
    if mss == 0 {
        return Err(Error::Malformed("tso mss 0"));
    }
    let headers = &frame[..l.payload_off];
    let payload = &frame[l.payload_off..];
    if payload.len() > MAX_PAYLOAD {
        return Err(Error::Unsupported("tso payload beyond 256 KiB"));
    }
    // The longest segment's outermost IP length must fit 16 bits.
    let outermost = l.outer.map_or(l.ip, |(ip, _)| ip);
    let longest = headers.len() + mss.min(payload.len()) - outermost.off;
    let fixed = if outermost.v4 { 0 } else { ipv6::HEADER_LEN };
    if longest - fixed > 0xFFFF {
        return Err(Error::Malformed("tso segment exceeds the ip length field"));
    }
    let tcp = tcp::Packet::new_unchecked(&frame[l.tcp_off..]);
    let (seq, flags) = (tcp.seq_number(), tcp.flags());
    let ip_id = if l.ip.v4 { ipv4_ident(frame, l.ip) } else { 0 };
    let outer_id = match l.outer {
        Some((ip, _)) if ip.v4 => ipv4_ident(frame, ip),
        _ => 0,
    };
    let outer_udp_csum = l.outer.and_then(|(_, udp_off)| {
        udp_off.filter(|&at| udp::Packet::new_unchecked(&frame[at..]).checksum() != 0)
    });
    let pieces: Vec<&[u8]> = if payload.is_empty() {
        vec![payload]
    } else {
        payload.chunks(mss).collect()
    };
    let n = pieces.len();
    let flag_byte = |f: Flags| f.0 as u8;
    let segments = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut f = Vec::with_capacity(headers.len() + piece.len());
            f.extend_from_slice(headers);
            f.extend_from_slice(piece);
            fix_ip(&mut f, l.ip, ip_id, i);
            // Flags: byte 13 holds CWR..FIN; byte 12 (data offset, reserved, AE) is copied.
            let mut byte = flag_byte(flags);
            if i > 0 {
                byte &= !flag_byte(Flags::CWR);
            }
            if i + 1 < n {
                byte &= !flag_byte(Flags::FIN | Flags::PSH);
            }
            f[l.tcp_off + 13] = byte;
            let (src, dst) = addrs(&f, l.ip);
            let mut t = tcp::Packet::new_unchecked(&mut f[l.tcp_off..]);
            t.set_seq_number(seq.wrapping_add((i * mss) as u32));
            t.fill_checksum(src, dst);
            if let Some((outer, udp_off)) = l.outer {
                fix_ip(&mut f, outer, outer_id, i);
                if let Some(at) = udp_off {
                    let len = (f.len() - at) as u16;
                    udp::Packet::new_unchecked(&mut f[at..]).set_len(len);
                }
                if let Some(at) = outer_udp_csum {
                    let (src, dst) = addrs(&f, outer);
                    udp::Packet::new_unchecked(&mut f[at..]).fill_checksum(src, dst);
                }
            }
            f
        })
        .collect();
    Ok(segments)
}

/// The segments of super-frame `frame` (no FCS) at `mss` bytes of TCP payload each, as the
/// module docs describe; tunnels are recognised as `cfg` says.
pub fn tso(frame: &[u8], mss: usize, cfg: &TunnelConfig) -> Result<Vec<Vec<u8>>> {
    segment(frame, &layout(frame, Some(cfg))?, mss)
}

/// The NIC's encapsulation with TSO: `inner` (a plain TCP super-frame) segmented at `mss`, then
/// segment i encapsulated by [`encap`] with `ctx` and outer IPv4 ID `ip_id_base + i`.
pub fn encap_tso(
    inner: &[u8],
    mss: usize,
    ctx: &EncapContext,
    ip_id_base: u16,
) -> Result<Vec<Vec<u8>>> {
    segment(inner, &layout(inner, None)?, mss)?
        .iter()
        .enumerate()
        .map(|(i, s)| encap(s, ctx, ip_id_base.wrapping_add(i as u16)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encap::EncapKind;
    use crate::hex;
    use crate::tunnel::{parse_tunnel, TunnelKind};
    use crate::vectors::overlay::{ctx, pattern, tcp_frame, udp_frame, Ip, NVGRE};

    /// The offsets the driver gives an LSO send: plain IPv4 and IPv6, VXLAN and NVGRE (IPv4 and
    /// IPv6 outers) around them.
    #[test]
    fn lso_offsets_find_every_header() {
        let cfg = TunnelConfig::default();
        for v6 in [false, true] {
            let inner = tcp_frame(Ip { v6, ident: 1 }, false, 0, Flags::ACK, &pattern(3000));
            let (l3, l4) = (14, if v6 { 54 } else { 34 });
            let hdr = l4 + 4 * usize::from(inner[l4 + 12] >> 4);
            let o = lso_offsets(&inner, &cfg).unwrap();
            assert_eq!(
                o,
                LsoOffsets {
                    l3,
                    l4,
                    hdr_len: hdr,
                    v6,
                    ..LsoOffsets::default()
                }
            );
            for outer_v6 in [false, true] {
                let ol4 = if outer_v6 { 54 } else { 34 };
                for (kind, tunnel, at) in [(EncapKind::vxlan(7), 1, ol4 + 16), (NVGRE, 2, ol4 + 8)]
                {
                    let f = crate::encap::encap(&inner, &ctx(outer_v6, false, kind), 0).unwrap();
                    assert_eq!(
                        lso_offsets(&f, &cfg).unwrap(),
                        LsoOffsets {
                            outer_l3: 14,
                            outer_l4: ol4,
                            l3: at + l3,
                            l4: at + l4,
                            hdr_len: at + hdr,
                            tunnel,
                            outer_v6,
                            v6,
                        },
                        "v6 {v6} outer_v6 {outer_v6} tunnel {tunnel}"
                    );
                }
            }
        }
        assert!(lso_offsets(
            &udp_frame(
                Ip {
                    v6: false,
                    ident: 1
                },
                &[0; 10]
            ),
            &cfg
        )
        .is_err());
    }

    /// wire-formats.md §2.5, headers of segment 0 (and its first 8 payload bytes).
    const SEGMENT0: &str = "
0000: 02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 00
0010: 04 42 20 00 40 00 40 11 be 87 ac 10 00 01 ac 10
0020: 00 02 c8 22 12 b5 04 2e 61 04 08 00 00 00 12 34
0030: 56 00 02 00 00 00 00 bb 02 00 00 00 00 aa 08 00
0040: 45 00 04 10 10 00 40 00 40 06 10 e4 0a 01 01 01
0050: 0a 01 01 02 9c 40 00 50 00 00 03 e8 00 00 00 01
0060: 50 90 02 00 dc 29 00 00 03 0a 11 18 1f 26 2d 34";

    const A: u16 = Flags::ACK.0;
    const P: u16 = Flags::PSH.0;
    const C: u16 = Flags::CWR.0;
    const F: u16 = Flags::FIN.0;

    fn be16(f: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([f[at], f[at + 1]])
    }

    fn be32(f: &[u8], at: usize) -> u32 {
        u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]])
    }

    /// The worked example's super-frame: segment 0's headers with the original flags
    /// ACK|PSH|CWR and 2500 payload bytes. Its length fields are left as segment 0's (wrong for
    /// the super-frame; TSO must not read them) or set to junk.
    fn example_super_frame(junk_lengths: bool) -> Vec<u8> {
        let mut f = hex(SEGMENT0)[..104].to_vec();
        f[97] = (A | P | C) as u8;
        if junk_lengths {
            for at in [16, 38, 66] {
                f[at..at + 2].copy_from_slice(&[0x12, 0x34]);
            }
        }
        f.extend(pattern(2500));
        f
    }

    #[test]
    fn worked_example_byte_exact() {
        /// Frame length; outer IP length, ID, checksum; UDP length, checksum; inner IP length,
        /// ID, checksum; TCP sequence, flags, checksum.
        type Row = (usize, [u16; 3], [u16; 2], [u16; 3], (u32, u16, u16));
        let cfg = TunnelConfig::default();
        let want: [Row; 3] = [
            (
                1104,
                [1090, 0x2000, 0xbe87],
                [1070, 0x6104],
                [1040, 0x1000, 0x10e4],
                (1000, A | C, 0xdc29),
            ),
            (
                1104,
                [1090, 0x2001, 0xbe86],
                [1070, 0x6104],
                [1040, 0x1001, 0x10e3],
                (2000, A, 0xf5df),
            ),
            (
                604,
                [590, 0x2002, 0xc079],
                [570, 0x62f8],
                [540, 0x1002, 0x12d6],
                (3000, A | P, 0x7d43),
            ),
        ];
        for junk in [false, true] {
            let segs = tso(&example_super_frame(junk), 1000, &cfg).unwrap();
            assert_eq!(segs.len(), 3);
            for (i, (s, w)) in segs.iter().zip(&want).enumerate() {
                let got = (
                    s.len(),
                    [be16(s, 16), be16(s, 18), be16(s, 24)],
                    [be16(s, 38), be16(s, 40)],
                    [be16(s, 66), be16(s, 68), be16(s, 74)],
                    (be32(s, 88), u16::from(s[97]), be16(s, 100)),
                );
                assert_eq!(&got, w, "segment {i}");
                assert_eq!(
                    &s[104..],
                    &pattern(2500)[i * 1000..(i * 1000 + 1000).min(2500)]
                );
            }
            assert_eq!(segs[0][..112], hex(SEGMENT0)[..]);
        }
    }

    /// Every segment of a TSO run is accepted by the receive model: a well-formed tunnel (or
    /// none), every checksum verdict good; the payloads join to the original.
    fn check_segments(superframe: &[u8], segs: &[Vec<u8>], mss: usize, kind: TunnelKind) {
        let cfg = TunnelConfig::default();
        let l = layout(superframe, Some(&cfg)).unwrap();
        let payload = &superframe[l.payload_off..];
        let n = payload.len().div_ceil(mss).max(1);
        assert_eq!(segs.len(), n);
        let mut joined = Vec::new();
        let seq0 = be32(superframe, l.tcp_off + 4);
        let flags0 = superframe[l.tcp_off + 13];
        for (i, s) in segs.iter().enumerate() {
            let t = parse_tunnel(s, &cfg);
            assert_eq!((t.kind, t.malformed), (kind, None), "segment {i}");
            assert_eq!(t.outer_csum.l3, Some(true), "segment {i}");
            let outer_l4 = (kind != TunnelKind::Nvgre).then_some(true);
            assert_eq!(t.outer_csum.l4, outer_l4, "segment {i}");
            if let Some(inner) = t.inner {
                assert_eq!(inner.csum.l3, Some(true), "segment {i}");
                assert_eq!(inner.csum.l4, Some(true), "segment {i}");
                assert_eq!(inner.end, s.len());
            }
            assert_eq!(
                s[..l.tcp_off + 4],
                superframe[..l.tcp_off + 4]
                    .iter()
                    .enumerate()
                    .map(|(k, &b)| if is_rewritten(&l, k) { s[k] } else { b })
                    .collect::<Vec<_>>()[..],
                "segment {i}: only length/ID/checksum fields change"
            );
            assert_eq!(be32(s, l.tcp_off + 4), seq0.wrapping_add((i * mss) as u32));
            let mut flags = flags0;
            if i > 0 {
                flags &= !(C as u8);
            }
            if i + 1 < n {
                flags &= !((F | P) as u8);
            }
            assert_eq!(s[l.tcp_off + 13], flags, "segment {i}");
            let ids: Vec<(usize, u16)> = [l.outer.map(|o| o.0), Some(l.ip)]
                .into_iter()
                .flatten()
                .filter(|ip| ip.v4)
                .map(|ip| {
                    (
                        ip.off + 4,
                        be16(superframe, ip.off + 4).wrapping_add(i as u16),
                    )
                })
                .collect();
            for (at, id) in ids {
                assert_eq!(be16(s, at), id, "segment {i}: IPv4 ID at {at}");
            }
            joined.extend_from_slice(&s[l.payload_off..]);
        }
        assert_eq!(joined, payload);
    }

    /// Offsets of the length, ID and checksum fields TSO rewrites (before the TCP sequence).
    fn is_rewritten(l: &Layout, k: usize) -> bool {
        let ip = |ip: Ip_| {
            if ip.v4 {
                [2, 3, 4, 5, 10, 11].iter().any(|&d| ip.off + d == k)
            } else {
                [4, 5].iter().any(|&d| ip.off + d == k)
            }
        };
        ip(l.ip)
            || l.outer
                .is_some_and(|(o, udp)| ip(o) || udp.is_some_and(|u| (u + 4..u + 8).contains(&k)))
    }
    type Ip_ = super::Ip;

    /// A TCP super-frame (sequence 0xFFFF_F000, flags ACK|PSH|CWR|FIN, `len` payload bytes),
    /// plain or encapsulated by `kind` with outer IPv4 ID 0x7FFE.
    fn superframe(
        kind: Option<EncapKind>,
        outer_v6: bool,
        inner: Ip,
        vlan: bool,
        len: usize,
    ) -> Vec<u8> {
        let flags = Flags(A | P | C | F);
        match kind {
            None => tcp_frame(inner, vlan, 0xFFFF_F000, flags, &pattern(len)),
            Some(k) => {
                let plain = tcp_frame(inner, false, 0xFFFF_F000, flags, &pattern(len));
                crate::encap::encap(&plain, &ctx(outer_v6, vlan, k), 0x7FFE).unwrap()
            }
        }
    }

    #[test]
    fn tunnels_and_plain_over_ipv4_and_ipv6() {
        let vx_csum = EncapKind::Vxlan {
            vni: 42,
            dst_port: 4789,
            udp_checksum: true,
        };
        let kinds = [
            (None, TunnelKind::None),
            (Some(EncapKind::vxlan(7)), TunnelKind::Vxlan),
            (Some(vx_csum), TunnelKind::Vxlan),
            (Some(NVGRE), TunnelKind::Nvgre),
        ];
        let mut runs = 0;
        for (kind, want) in kinds {
            for outer_v6 in [false, true] {
                for v6 in [false, true] {
                    for vlan in [false, true] {
                        // Odd lengths, MSS not dividing, one MSS exactly, one byte over.
                        for (len, mss) in [
                            (2501, 1000),
                            (999, 1000),
                            (1000, 1000),
                            (1001, 1000),
                            (4097, 1448),
                            (33, 7),
                        ] {
                            let inner = Ip { v6, ident: 0xFFFE };
                            let f = superframe(kind, outer_v6, inner, vlan, len);
                            let segs = tso(&f, mss, &TunnelConfig::default()).unwrap();
                            check_segments(&f, &segs, mss, want);
                            runs += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(runs, 4 * 2 * 2 * 2 * 6);
    }

    #[test]
    fn ip_and_tcp_options_are_copied() {
        let cfg = TunnelConfig::default();
        let v4 = Ip {
            v6: false,
            ident: 0,
        };
        // Router alert in the IPv4 header (IHL 6); NOP, NOP, timestamps in TCP (offset 8).
        let mut f = superframe(None, false, v4, false, 3000);
        f.splice(34..34, [0x94, 4, 0, 0]);
        f[14] = 0x46;
        f.splice(58..58, [1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9]);
        f[58 - 20 + 12] = 0x80;
        let segs = tso(&f, 1000, &cfg).unwrap();
        check_segments(&f, &segs, 1000, TunnelKind::None);
        for s in &segs {
            assert_eq!(s[34..38], [0x94, 4, 0, 0]);
            assert_eq!(s[58..70], f[58..70]);
        }
    }

    #[test]
    fn outer_udp_checksum_zero_stays_zero_and_equal_segments_share_one() {
        let cfg = TunnelConfig::default();
        let inner = Ip {
            v6: false,
            ident: 1,
        };
        let zero = tso(
            &superframe(Some(EncapKind::vxlan(7)), false, inner, false, 3100),
            1000,
            &cfg,
        )
        .unwrap();
        assert!(zero.iter().all(|s| be16(s, 40) == 0));
        let kind = EncapKind::Vxlan {
            vni: 7,
            dst_port: 4789,
            udp_checksum: true,
        };
        let with = tso(
            &superframe(Some(kind), false, inner, false, 3100),
            1000,
            &cfg,
        )
        .unwrap();
        // The LCO property (wire-formats.md §2.5): full-MSS segments have the same outer UDP
        // checksum, non-zero.
        let sums: Vec<u16> = with.iter().map(|s| be16(s, 40)).collect();
        assert!(
            sums[0] != 0 && sums[..3].iter().all(|&c| c == sums[0]),
            "{sums:x?}"
        );
        assert_ne!(sums[3], sums[0]);
    }

    #[test]
    fn single_segment_and_empty_payload_keep_every_flag() {
        let cfg = TunnelConfig::default();
        for len in [0, 1, 1000] {
            let f = superframe(Some(NVGRE), true, Ip { v6: true, ident: 0 }, true, len);
            let segs = tso(&f, 1000, &cfg).unwrap();
            assert_eq!(segs.len(), 1, "payload {len}");
            check_segments(&f, &segs, 1000, TunnelKind::Nvgre);
            let l = layout(&f, Some(&cfg)).unwrap();
            assert_eq!(u16::from(segs[0][l.tcp_off + 13]), A | P | C | F);
        }
    }

    #[test]
    fn quarter_mebibyte() {
        let cfg = TunnelConfig::default();
        // A super-frame cannot carry 256 KiB in its own length fields; TSO does not care. The
        // IPv4 IDs and the sequence number wrap.
        let runs = [
            (None, false, 1448, TunnelKind::None),
            (Some(EncapKind::vxlan(9)), false, 8960, TunnelKind::Vxlan),
            (Some(NVGRE), true, 1440, TunnelKind::Nvgre),
        ];
        for (kind, outer_v6, mss, want) in runs {
            let inner = Ip {
                v6: outer_v6,
                ident: 0xFFF0,
            };
            let mut big = superframe(kind, outer_v6, inner, true, 0);
            big.extend(pattern(MAX_PAYLOAD));
            let segs = tso(&big, mss, &cfg).unwrap();
            assert_eq!(segs.len(), MAX_PAYLOAD.div_ceil(mss));
            check_segments(&big, &segs, mss, want);
            big.push(0);
            assert_eq!(
                tso(&big, mss, &cfg),
                Err(Error::Unsupported("tso payload beyond 256 KiB"))
            );
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let cfg = TunnelConfig::default();
        let inner = Ip {
            v6: false,
            ident: 0,
        };
        let good = superframe(Some(EncapKind::vxlan(1)), false, inner, false, 100);
        assert_eq!(tso(&good, 0, &cfg), Err(Error::Malformed("tso mss 0")));
        // Every cut inside the headers: an error, never a panic.
        for len in 0..104 {
            assert!(tso(&good[..len], 100, &cfg).is_err(), "cut at {len}");
        }
        assert!(tso(&good[..104], 100, &cfg).is_ok());
        let not_tcp = [
            udp_frame(inner, b"hello"),
            udp_frame(Ip { v6: true, ident: 0 }, b"hello"),
            crate::encap::encap(&udp_frame(inner, b"x"), &ctx(false, false, NVGRE), 0).unwrap(),
        ];
        for f in &not_tcp {
            assert!(matches!(tso(f, 100, &cfg), Err(Error::Unsupported(_))));
        }
        let mut bad = good.clone();
        bad[42] = 0; // VXLAN I flag
        assert_eq!(
            tso(&bad, 100, &cfg),
            Err(Error::Malformed("vxlan I flag clear"))
        );
        let gre = superframe(Some(NVGRE), false, inner, false, 100);
        let mut bad = gre.clone();
        bad[34] = 0xB0; // C and S
        assert!(matches!(tso(&bad, 100, &cfg), Err(Error::Unsupported(_))));
        let mut frag = superframe(None, false, inner, false, 100);
        frag[20] |= 0x20; // MF
        assert_eq!(
            tso(&frag, 100, &cfg),
            Err(Error::Unsupported("tso of an ip fragment"))
        );
        let mut ext = superframe(None, false, Ip { v6: true, ident: 0 }, false, 100);
        ext[20] = 0; // next header: hop-by-hop
        assert!(matches!(tso(&ext, 100, &cfg), Err(Error::Unsupported(_))));
        let mut ihl = superframe(None, false, inner, false, 100);
        ihl[14] = 0x44;
        assert_eq!(
            tso(&ihl, 100, &cfg),
            Err(Error::Malformed("ipv4 IHL below 5"))
        );
        // A segment whose IP length cannot be written.
        let mut big = superframe(None, false, inner, false, 0);
        big.extend(pattern(70000));
        assert!(matches!(tso(&big, 65536, &cfg), Err(Error::Malformed(_))));
        assert!(tso(&big, 65535 - 40, &cfg).is_ok());
        // VXLAN to another port is plain UDP: not TCP.
        let other = TunnelConfig::with_vxlan_port(8472);
        assert_eq!(
            tso(&good, 100, &other),
            Err(Error::Unsupported("tso of udp that is not vxlan"))
        );
    }

    #[test]
    fn encap_tso_is_tso_of_the_encapsulated_super_frame() {
        let cfg = TunnelConfig::default();
        for (v6, outer_v6, kind) in [
            (false, false, EncapKind::vxlan(3)),
            (
                true,
                false,
                EncapKind::Vxlan {
                    vni: 3,
                    dst_port: 4789,
                    udp_checksum: true,
                },
            ),
            (false, true, EncapKind::vxlan(3)),
            (true, true, NVGRE),
            (false, false, NVGRE),
        ] {
            let inner = tcp_frame(
                Ip { v6, ident: 0x10 },
                false,
                5,
                Flags(A | P | C),
                &pattern(5000),
            );
            let c = ctx(outer_v6, true, kind);
            let segs = encap_tso(&inner, 1400, &c, 0xFFFF).unwrap();
            let whole = crate::encap::encap(&inner, &c, 0xFFFF).unwrap();
            assert_eq!(
                segs,
                tso(&whole, 1400, &cfg).unwrap(),
                "{v6} {outer_v6} {kind:?}"
            );
            for (i, s) in segs.iter().enumerate() {
                let plain = segment(&inner, &layout(&inner, None).unwrap(), 1400).unwrap();
                assert_eq!(
                    s,
                    &crate::encap::encap(&plain[i], &c, 0xFFFFu16.wrapping_add(i as u16)).unwrap()
                );
            }
        }
        // The inner super-frame must be plain TCP.
        let tunnelled = superframe(
            Some(EncapKind::vxlan(1)),
            false,
            Ip {
                v6: false,
                ident: 0,
            },
            false,
            10,
        );
        assert!(encap_tso(&tunnelled, 100, &ctx(false, false, NVGRE), 0).is_err());
    }
}
