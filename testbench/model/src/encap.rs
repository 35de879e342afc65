//! Overlay encapsulation on transmit: VXLAN or NVGRE outer headers in front of an inner
//! Ethernet frame, as the NIC builds them from an [`EncapContext`].
//!
//! [`encap`] writes, in this order:
//!
//! | Header | Fields |
//! |---|---|
//! | outer Ethernet | context MACs, optional 802.1Q/802.1ad tag, EtherType 0x0800 / 0x86DD |
//! | outer IPv4 | TOS, total length, ID (the `ip_id` argument), DF, TTL, protocol 17 / 47, header checksum; no options |
//! | outer IPv6 | traffic class, flow label, payload length, next header 17 / 47, hop limit |
//! | outer UDP (VXLAN) | source port [`udp_source_port`], destination port (4789 by default), length, checksum |
//! | VXLAN / NVGRE | [`crate::vxlan::Repr`] / [`crate::gre::Repr`] |
//! | inner frame | as given, with the inner IPv4 header and TCP/UDP checksums filled when asked |
//!
//! The outer UDP checksum over IPv4 is sent as 0 unless [`EncapKind::Vxlan`]'s `udp_checksum`
//! asks for it (RFC 7348's SHOULD, Linux's default); over IPv6 it is always computed (a zero
//! checksum would need the RFC 6935/6936 opt-in, which this NIC does not offer).
//!
//! # The outer UDP source port
//!
//! A deterministic hash of the inner flow, so that every packet of one inner flow takes the
//! same ECMP path and different flows spread (wire-formats.md §2.4 allows any such hash):
//!
//! 1. the inner frame is parsed by [`crate::parse::parse_headers`] (whole frame as window);
//! 2. `h` is the Toeplitz hash with [`crate::toeplitz::MICROSOFT_KEY`]
//!    ([`crate::rss::rss_parsed`] with every type enabled) over the inner addresses and ports when the inner packet is
//!    well-formed TCP or UDP and not a fragment (the Microsoft 4-tuple, source first), over the
//!    inner addresses when it is other IP, and over the 12 bytes destination MAC ‖ source MAC
//!    of the inner frame when it is not IP;
//! 3. the port is `49152 + (h mod 16384)`, i.e. `0xC000 | (h & 0x3FFF)`: in 49152..=65535.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{Error, Result};
use crate::ethernet::{self, EtherType, EthernetAddress, VlanTag};
use crate::ip::IpProtocol;
use crate::parse::{parse_headers, MIN_WINDOW};
use crate::rss::{rss_parsed, ALL_TYPES};
use crate::toeplitz::{hash, MICROSOFT_KEY};
use crate::{gre, ipv4, ipv6, tx, udp, vxlan};

/// The outer IP header's fixed fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OuterIp {
    /// IPv4 (no options).
    V4 {
        /// Source address (local VTEP).
        src: Ipv4Addr,
        /// Destination address (remote VTEP).
        dst: Ipv4Addr,
        /// Time to live.
        ttl: u8,
        /// TOS byte: DSCP \[7:2\], ECN \[1:0\].
        tos: u8,
        /// Don't fragment.
        dont_frag: bool,
    },
    /// IPv6 (no extension headers).
    V6 {
        /// Source address.
        src: Ipv6Addr,
        /// Destination address.
        dst: Ipv6Addr,
        /// Hop limit.
        hop_limit: u8,
        /// Traffic class.
        traffic_class: u8,
        /// Flow label (20 bits).
        flow_label: u32,
    },
}

impl OuterIp {
    /// Source and destination.
    pub fn addrs(&self) -> (IpAddr, IpAddr) {
        match *self {
            OuterIp::V4 { src, dst, .. } => (src.into(), dst.into()),
            OuterIp::V6 { src, dst, .. } => (src.into(), dst.into()),
        }
    }

    fn header_len(&self) -> usize {
        match self {
            OuterIp::V4 { .. } => ipv4::HEADER_LEN,
            OuterIp::V6 { .. } => ipv6::HEADER_LEN,
        }
    }
}

/// The tunnel and its identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncapKind {
    /// VXLAN over UDP.
    Vxlan {
        /// VNI (24 bits).
        vni: u32,
        /// UDP destination port.
        dst_port: u16,
        /// Compute the outer UDP checksum over IPv4 (over IPv6 it always is).
        udp_checksum: bool,
    },
    /// NVGRE.
    Nvgre {
        /// VSID (24 bits).
        vsid: u32,
        /// FlowID.
        flow_id: u8,
    },
}

impl EncapKind {
    /// VXLAN with `vni` to port 4789 without an outer UDP checksum over IPv4.
    pub fn vxlan(vni: u32) -> Self {
        EncapKind::Vxlan {
            vni,
            dst_port: vxlan::DEFAULT_PORT,
            udp_checksum: false,
        }
    }

    /// Length of the headers after the outer IP header: UDP and VXLAN, or GRE.
    fn header_len(&self) -> usize {
        match self {
            EncapKind::Vxlan { .. } => udp::HEADER_LEN + vxlan::HEADER_LEN,
            EncapKind::Nvgre { .. } => gre::NVGRE_HEADER_LEN,
        }
    }
}

/// Everything the NIC needs to encapsulate one frame (per send queue or per flow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncapContext {
    /// Outer destination MAC (next hop).
    pub dst_mac: EthernetAddress,
    /// Outer source MAC.
    pub src_mac: EthernetAddress,
    /// Outer VLAN tag.
    pub vlan: Option<VlanTag>,
    /// Outer IP header.
    pub ip: OuterIp,
    /// Tunnel.
    pub kind: EncapKind,
    /// Fill the inner IPv4 header checksum (mlx5 `cs_flags` L3_INNER_CSUM).
    pub inner_l3_csum: bool,
    /// Fill the inner TCP/UDP checksum (mlx5 `cs_flags` L4_INNER_CSUM).
    pub inner_l4_csum: bool,
}

impl EncapContext {
    /// Length of the outer headers [`encap`] prepends.
    pub fn outer_len(&self) -> usize {
        ethernet::header_len(usize::from(self.vlan.is_some()))
            + self.ip.header_len()
            + self.kind.header_len()
    }
}

/// The outer UDP source port for `inner` (see the module docs for the definition).
pub fn udp_source_port(inner: &[u8]) -> u16 {
    let p = parse_headers(inner, inner.len().max(MIN_WINDOW));
    let (h, _, _) = rss_parsed(&MICROSOFT_KEY, ALL_TYPES, &[0], &p);
    let h = if p.l3 == crate::parse::L3_NONE {
        hash(&MICROSOFT_KEY, &inner[..inner.len().min(12)])
    } else {
        h
    };
    0xC000 | (h & 0x3FFF) as u16
}

/// `inner` (an Ethernet frame without FCS) encapsulated as `ctx` says, with outer IPv4 ID
/// `ip_id` (ignored over IPv6).
///
/// Fails with [`Error::Truncated`] when `inner` is shorter than an Ethernet header and with
/// [`Error::Unsupported`] when the outer IP datagram would exceed 65535 bytes.
///
/// # Panics
///
/// If the VNI/VSID exceeds 24 bits or the IPv6 flow label 20 bits.
pub fn encap(inner: &[u8], ctx: &EncapContext, ip_id: u16) -> Result<Vec<u8>> {
    Error::check_len(
        "inner ethernet header",
        ethernet::header_len(0),
        inner.len(),
    )?;
    let inner = if ctx.inner_l3_csum || ctx.inner_l4_csum {
        let window = inner.len().max(MIN_WINDOW);
        tx::checksum_offload(inner, ctx.inner_l3_csum, ctx.inner_l4_csum, window)
    } else {
        inner.to_vec()
    };
    let l3_off = ethernet::header_len(usize::from(ctx.vlan.is_some()));
    let l4_off = l3_off + ctx.ip.header_len();
    let ip_payload_len = ctx.kind.header_len() + inner.len();
    let ip_len = ctx.ip.header_len() + ip_payload_len;
    let fits = match ctx.ip {
        OuterIp::V4 { .. } => ip_len <= 0xFFFF,
        OuterIp::V6 { .. } => ip_payload_len <= 0xFFFF,
    };
    if !fits {
        return Err(Error::Unsupported(
            "encapsulated frame exceeds the outer IP length field",
        ));
    }
    let mut f = vec![0u8; l4_off + ip_payload_len];

    let (ethertype, protocol) = (
        match ctx.ip {
            OuterIp::V4 { .. } => EtherType::Ipv4,
            OuterIp::V6 { .. } => EtherType::Ipv6,
        },
        match ctx.kind {
            EncapKind::Vxlan { .. } => IpProtocol::Udp,
            EncapKind::Nvgre { .. } => IpProtocol::Gre,
        },
    );
    ethernet::Repr {
        dst_addr: ctx.dst_mac,
        src_addr: ctx.src_mac,
        outer_tag: ctx.vlan,
        inner_tag: None,
        ethertype,
    }
    .emit(&mut ethernet::Frame::new_unchecked(&mut f[..]));
    match ctx.ip {
        OuterIp::V4 {
            src,
            dst,
            ttl,
            tos,
            dont_frag,
        } => ipv4::Repr {
            src_addr: src,
            dst_addr: dst,
            protocol,
            payload_len: ip_payload_len,
            ttl,
            dscp: tos >> 2,
            ecn: tos & 3,
            ident: ip_id,
            dont_frag,
            more_frags: false,
            frag_offset: 0,
            options: &[],
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut f[l3_off..])),
        OuterIp::V6 {
            src,
            dst,
            hop_limit,
            traffic_class,
            flow_label,
        } => ipv6::Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: protocol,
            payload_len: ip_payload_len,
            hop_limit,
            traffic_class,
            flow_label,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut f[l3_off..])),
    }

    match ctx.kind {
        EncapKind::Vxlan {
            vni,
            dst_port,
            udp_checksum,
        } => {
            let mut payload = vec![0u8; vxlan::HEADER_LEN];
            vxlan::Repr { vni }.emit(&mut vxlan::Packet::new_unchecked(&mut payload[..]));
            payload.extend_from_slice(&inner);
            let (src, dst) = ctx.ip.addrs();
            let mut packet = udp::Packet::new_unchecked(&mut f[l4_off..]);
            udp::Repr {
                src_port: udp_source_port(&inner),
                dst_port,
                payload: &payload,
            }
            .emit(&mut packet, src, dst);
            if src.is_ipv4() && !udp_checksum {
                packet.set_checksum(0);
            }
        }
        EncapKind::Nvgre { vsid, flow_id } => {
            gre::Repr { vsid, flow_id }.emit(&mut gre::Packet::new_unchecked(&mut f[l4_off..]));
            f[l4_off + gre::NVGRE_HEADER_LEN..].copy_from_slice(&inner);
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;
    use crate::tcp::Flags;
    use crate::toeplitz::hash_flow;
    use crate::vectors::overlay::{ctx, tcp_frame, udp_frame, Ip, NVGRE};

    fn ack(ip: Ip) -> Vec<u8> {
        tcp_frame(ip, false, 1000, Flags::ACK, &[])
    }

    /// wire-formats.md §2.5's NVGRE variant: outer IPv4 ID 0x3000 and GRE header in front of a
    /// 40-byte inner TCP ACK.
    #[test]
    fn nvgre_example_bytes() {
        let inner = ack(Ip {
            v6: false,
            ident: 0x1000,
        });
        assert_eq!(inner.len(), 54);
        let f = encap(&inner, &ctx(false, false, NVGRE), 0x3000).unwrap();
        assert_eq!(
            f[14..42],
            hex("45 00 00 52 30 00 40 00 40 2f b2 59 ac 10 00 01 ac 10 00 02 20 00 65 58 12 34 56 ab")[..]
        );
        assert_eq!(
            f[..14],
            hex("02 00 00 00 00 02 02 00 00 00 00 01 08 00")[..]
        );
        assert_eq!(f[42..], inner[..]);
    }

    #[test]
    fn vxlan_headers_and_checksum_rules() {
        let v4 = Ip {
            v6: false,
            ident: 1,
        };
        let inner = tcp_frame(v4, false, 1, Flags::ACK, b"odd");
        let sport = udp_source_port(&inner);
        for (outer_v6, udp_checksum, vlan) in [
            (false, false, false),
            (false, true, true),
            (true, false, false),
            (true, true, true),
        ] {
            let kind = EncapKind::Vxlan {
                vni: 0xABCDEF,
                dst_port: 4789,
                udp_checksum,
            };
            let c = ctx(outer_v6, vlan, kind);
            let f = encap(&inner, &c, 0x2000).unwrap();
            assert_eq!(f.len(), c.outer_len() + inner.len());
            let eth = ethernet::Frame::new_checked(&f[..]).unwrap();
            assert_eq!(eth.tag(0), c.vlan);
            let l3 = eth.header_len();
            let (l4, ip_len) = if outer_v6 {
                let ip = ipv6::Packet::new_checked(&f[l3..]).unwrap();
                assert_eq!(ip.next_header(), IpProtocol::Udp);
                (l3 + 40, 40 + usize::from(ip.payload_len()))
            } else {
                let ip = ipv4::Packet::new_checked(&f[l3..]).unwrap();
                assert!(ip.verify_checksum() && ip.dont_frag());
                assert_eq!(
                    (ip.ident(), ip.ttl(), ip.protocol()),
                    (0x2000, 64, IpProtocol::Udp)
                );
                (l3 + 20, usize::from(ip.total_len()))
            };
            assert_eq!(l3 + ip_len, f.len());
            let u = udp::Packet::new_checked(&f[l4..]).unwrap();
            assert_eq!(
                (u.src_port(), u.dst_port(), usize::from(u.len())),
                (sport, 4789, f.len() - l4)
            );
            let (src, dst) = c.ip.addrs();
            assert!(u.verify_checksum(src, dst));
            assert_eq!(u.checksum() == 0, !outer_v6 && !udp_checksum);
            assert_eq!(u.payload()[..8], hex("08 00 00 00 ab cd ef 00")[..]);
            assert_eq!(u.payload()[8..], inner[..]);
        }
    }

    #[test]
    fn source_port_is_the_inner_flow_hash() {
        let v4 = Ip {
            v6: false,
            ident: 1,
        };
        let v6 = Ip { v6: true, ident: 0 };
        let key = &MICROSOFT_KEY;
        let a4: (IpAddr, IpAddr) = ("10.1.1.1".parse().unwrap(), "10.1.1.2".parse().unwrap());
        let a6: (IpAddr, IpAddr) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        let port = |h: u32| 49152 + (h % 16384) as u16;
        // TCP and UDP: the 4-tuple, whatever the payload and the sequence number.
        assert_eq!(
            udp_source_port(&ack(v4)),
            port(hash_flow(key, a4.0, a4.1, Some((40000, 80))))
        );
        assert_eq!(
            udp_source_port(&tcp_frame(v4, false, 77, Flags::PSH, b"data")),
            udp_source_port(&ack(v4))
        );
        assert_eq!(
            udp_source_port(&udp_frame(v6, b"x")),
            port(hash_flow(key, a6.0, a6.1, Some((1234, 5678))))
        );
        // A fragment: the addresses only.
        let mut frag = udp_frame(v4, b"x");
        frag[20] |= 0x20;
        assert_eq!(
            udp_source_port(&frag),
            port(hash_flow(key, a4.0, a4.1, None))
        );
        // Not IP: the MAC pair.
        let mut arp = vec![0u8; 60];
        arp[..12].copy_from_slice(&hex("02 00 00 00 00 bb 02 00 00 00 00 aa"));
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(udp_source_port(&arp), port(hash(key, &arp[..12])));
        // Every result lies in 49152..=65535 and flows spread.
        let ports: std::collections::BTreeSet<u16> = (0..64u8)
            .map(|i| {
                let mut f = ack(v4);
                f[37] = i; // inner destination address
                udp_source_port(&f)
            })
            .collect();
        assert!(ports.len() > 56 && ports.iter().all(|&p| p >= 49152));
    }

    #[test]
    fn inner_checksum_offload() {
        for v6 in [false, true] {
            let good = tcp_frame(Ip { v6, ident: 9 }, false, 1, Flags::ACK, b"payload");
            let mut zeroed = good.clone();
            let (l3, l4) = (14, if v6 { 54 } else { 34 });
            if !v6 {
                zeroed[l3 + 10..l3 + 12].fill(0);
            }
            zeroed[l4 + 16..l4 + 18].fill(0);
            let mut c = ctx(false, false, EncapKind::vxlan(1));
            let plain = encap(&zeroed, &c, 0).unwrap();
            assert_eq!(plain[50..], zeroed[..]);
            c.inner_l3_csum = true;
            c.inner_l4_csum = true;
            assert_eq!(encap(&zeroed, &c, 0).unwrap()[50..], good[..]);
            // Only L4 asked: the IPv4 header checksum stays 0.
            c.inner_l3_csum = false;
            let only_l4 = encap(&zeroed, &c, 0).unwrap();
            assert_eq!(only_l4[50 + l4 + 16..50 + l4 + 18], good[l4 + 16..l4 + 18]);
            assert_eq!(
                only_l4[50 + l3 + 10..50 + l3 + 12],
                zeroed[l3 + 10..l3 + 12]
            );
        }
    }

    #[test]
    fn errors() {
        let c = ctx(false, false, NVGRE);
        assert_eq!(
            encap(&[0; 13], &c, 0),
            Err(Error::Truncated {
                what: "inner ethernet header",
                needed: 14,
                got: 13
            })
        );
        let limit = 0xFFFF - 20 - 8;
        assert!(encap(&vec![0; limit], &c, 0).is_ok());
        assert!(matches!(
            encap(&vec![0; limit + 1], &c, 0),
            Err(Error::Unsupported(_))
        ));
        let c6 = ctx(true, false, EncapKind::vxlan(1));
        assert!(encap(&vec![0; 0xFFFF - 16], &c6, 0).is_ok());
        assert!(encap(&vec![0; 0xFFFF - 15], &c6, 0).is_err());
    }
}
