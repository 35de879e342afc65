//! Reference vectors shared by several modules' tests, and the hex-dump reader.

/// Decodes a hex dump ("45 00 00 28", "4500 0028", or with `0010:` offset labels) into bytes.
///
/// Used by the tests to paste vectors from the reference notes verbatim.
pub fn hex(dump: &str) -> Vec<u8> {
    let digits: String = dump
        .lines()
        .map(|line| match line.split_once(':') {
            Some((_, rest)) => rest,
            None => line,
        })
        .flat_map(|line| line.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("bad hex digit"))
        .collect()
}

/// scapy: TC 0x2E, flow 0x12345, hop-by-hop (PadN) / routing / destination options (PadN)
/// / TCP 40000 -> 443 with MSS, NOP, WScale, SAckOK, timestamps and "GET /\r\n".
pub const IPV6_EXT_TCP: &str = "62e1 2345 0047 0040 2001 0db8 0000 0000 0000 0000 0000 0001
    2001 0db8 0000 0000 0000 0000 0000 0002
    2b00 0104 0000 0000 3c00 0000 0000 0000 0600 0104 0000 0000
    9c40 01bb 0102 0304 a0b0 c0d0 a018 01f6 1280 0000 0204 05b4 0103 0307 0402 080a
    0000 0001 0000 0002 4745 5420 2f0d 0a";

/// scapy: first fragment (M=1, ident 0xDEADBEEF) carrying UDP 1 -> 2 "abc".
pub const IPV6_FIRST_FRAGMENT: &str = "6000 0000 0013 2c40 fe80 0000 0000 0000 0000 0000 0000 0001
     ff02 0000 0000 0000 0000 0000 0000 0001
     1100 0001 dead beef 0001 0002 000b 3ded 6162 63";

/// wire-formats.md §1.6 T1: a real ConnectX-4 Lx CNP capture (Ethernet, no FCS; the last four
/// bytes are the ICRC). IPv4 checksum 0x9161, UDP 0 -> 4791 with checksum 0.
pub const T1: &str = "e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2
                      003c 718c 4000 4011 9161 0a00 1101 0a00
                      1201 0000 12b7 0028 0000 8100 ffff 4000
                      0118 0000 0000 0000 0000 0000 0000 0000
                      0000 0000 0000 82fd 002a";

/// wire-formats.md §1.6 T2: scapy's RoCE UC SEND vector. IPv4 checksum 0xB4D5; UDP checksum
/// field 0, computed value 0xACA2.
pub const T2: &str = "248a07a8fa22 248a07a8fa22 0800
                      4501 0040 0478 4000 4011 b4d5 c0a8 0007 c0a8 0007
                      c000 12b7 002c 0000
                      2460 ffff 0000 00d3 00cf 1710
                      4630 818b e289 35d9 0e9a 9550 5401 be88 5e50 0000
                      78f3 53f3";

/// wire-formats.md §1.6 T3: RC SEND Only over IPv4 (AckReq, M, payload 00..0F).
pub const T3: &str = "0000: 0200 0000 0002 0200 0000 0001 0800 4502
                      0010: 003c 0000 4000 4011 b75b c0a8 0101 c0a8
                      0020: 0102 c000 12b7 0028 0000 0440 ffff 0000
                      0030: 0011 8000 0100 0001 0203 0405 0607 0809
                      0040: 0a0b 0c0d 0e0f 1649 c6ab";

/// wire-formats.md §1.6 T4: RC RDMA WRITE Only + RETH over IPv6, payload "hello" + 3 pad.
pub const T4: &str = "0000: 0200 0000 0002 0200 0000 0001 86dd 6000
                      0010: 0000 0030 1140 fe80 0000 0000 0000 0000
                      0020: 0000 0000 0001 fe80 0000 0000 0000 0000
                      0030: 0000 0000 0002 d1a2 12b7 0030 0000 0a70
                      0040: ffff 0000 0022 8012 3456 0000 7f00 0000
                      0050: 1000 0000 1234 0000 0005 6865 6c6c 6f00
                      0060: 0000 ff73 feb2";

/// wire-formats.md §1.6 T5: RC ACKNOWLEDGE (AETH syndrome 0x1F, MSN 1).
pub const T5: &str = "0000: 0200 0000 0002 0200 0000 0001 0800 4502
                      0010: 0030 0000 4000 4011 b767 c0a8 0102 c0a8
                      0020: 0101 c000 12b7 001c 0000 1100 ffff 0000
                      0030: 0033 0000 0100 1f00 0001 2e38 796f";

/// wire-formats.md §1.6 T6: NAK PSN sequence error (syndrome 0x60, MSN 4); bytes 0x00-0x2f as
/// T5.
pub const T6: &str = "0000: 0200 0000 0002 0200 0000 0001 0800 4502
                      0010: 0030 0000 4000 4011 b767 c0a8 0102 c0a8
                      0020: 0101 c000 12b7 001c 0000 1100 ffff 0000
                      0030: 0033 0000 0105 6000 0004 1bf3 afe4";

/// wire-formats.md §1.6 T7: UD SEND Only (SE, DETH Q_Key 0x80010000, payload "ABCDEFGH").
pub const T7: &str = "0000: 0200 0000 0002 0200 0000 0001 0800 4500
                      0010: 003c 1234 4000 4011 147b 0a00 0001 0a00
                      0020: 0002 c123 12b7 0028 0000 6480 ffff 0000
                      0030: 0001 0000 0007 8001 0000 0000 0001 4142
                      0040: 4344 4546 4748 207e e972";

/// wire-formats.md §1.6 T8: CNP over IPv6 (TC 0xC2, QP 0x44).
pub const T8: &str = "0000: 0200 0000 0002 0200 0000 0001 86dd 6c20
                      0010: 0000 0028 1140 fe80 0000 0000 0000 0000
                      0020: 0000 0000 0002 fe80 0000 0000 0000 0000
                      0030: 0000 0000 0001 c000 12b7 0028 0000 8100
                      0040: ffff 4000 0044 0000 0000 0000 0000 0000
                      0050: 0000 0000 0000 0000 0000 ad2b c391";

/// wire-formats.md §1.6: the IPv4 equivalent of T8 (TOS 0xC2, 10.0.0.2 -> 10.0.0.1, sport
/// 0xC000, QP 0x44; ID 0, DF, TTL 64 as T3; IP checksum left 0, it is masked), ICRC wire bytes
/// `63 bd c9 ad` as published.
pub const CNP_V4: &str = "0000: 0200 0000 0002 0200 0000 0001 0800 45c2
                          0010: 003c 0000 4000 4011 0000 0a00 0002 0a00
                          0020: 0001 c000 12b7 0028 0000 8100 ffff 4000
                          0030: 0044 0000 0000 0000 0000 0000 0000 0000
                          0040: 0000 0000 0000 63bd c9ad";

/// The RoCEv2 ICRC vectors of wire-formats.md §1.6: (name, frame without FCS as hex, ICRC
/// value; the frame's last four bytes are the value, least significant first).
pub const ROCE_ICRC: [(&str, &str, u32); 9] = [
    ("T1 CX-4 Lx CNP", T1, 0x2A00_FD82),
    ("T2 scapy UC SEND Only", T2, 0xF353_F378),
    ("T3 RC SEND Only IPv4", T3, 0xABC6_4916),
    ("T4 RC WRITE Only IPv6", T4, 0xB2FE_73FF),
    ("T5 RC ACK", T5, 0x6F79_382E),
    ("T6 NAK PSN sequence error", T6, 0xE4AF_F31B),
    ("T7 UD SEND Only", T7, 0x72E9_7E20),
    ("T8 CNP IPv6", T8, 0x91C3_2BAD),
    ("IPv4 CNP", CNP_V4, 0xADC9_BD63),
];

/// Builders of the overlay tests' frames: whole Ethernet frames with correct checksums, made
/// with the crate's own `Repr::emit`s.
pub mod overlay {
    use crate::encap::{EncapContext, EncapKind, OuterIp};
    use crate::ethernet::{self, EtherType, EthernetAddress, VlanTag};
    use crate::ip::IpProtocol;
    use crate::tcp::Flags;
    use crate::{ipv4, ipv6, tcp, udp};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    /// Payload byte k of the worked example: (7k + 3) mod 256.
    pub fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|k| (7 * k + 3) as u8).collect()
    }

    /// The inner (or plain) packet's IP header fields.
    #[derive(Clone, Copy, Debug)]
    pub struct Ip {
        /// IPv6 instead of IPv4.
        pub v6: bool,
        /// IPv4 ID.
        pub ident: u16,
    }

    /// Ethernet 02:..:aa → 02:..:bb (optionally one C-tag VID 5) / IPv4 10.1.1.1 → 10.1.1.2 or
    /// IPv6 2001:db8::1 → ::2 / `l4` bytes built by `emit_l4` over (src, dst).
    fn frame(
        ip: Ip,
        vlan: bool,
        protocol: IpProtocol,
        l4_len: usize,
        emit_l4: impl FnOnce(&mut [u8], IpAddr, IpAddr),
    ) -> Vec<u8> {
        let eth = ethernet::Repr {
            dst_addr: EthernetAddress([2, 0, 0, 0, 0, 0xbb]),
            src_addr: EthernetAddress([2, 0, 0, 0, 0, 0xaa]),
            outer_tag: vlan.then_some(VlanTag::customer(5)),
            inner_tag: None,
            ethertype: if ip.v6 {
                EtherType::Ipv6
            } else {
                EtherType::Ipv4
            },
        };
        let l3 = eth.buffer_len();
        let l3_len = if ip.v6 { 40 } else { 20 };
        let mut f = vec![0xA5; l3 + l3_len + l4_len];
        eth.emit(&mut ethernet::Frame::new_unchecked(&mut f[..]));
        let (src, dst): (IpAddr, IpAddr) = if ip.v6 {
            let (s, d) = (
                "2001:db8::1".parse().unwrap(),
                "2001:db8::2".parse().unwrap(),
            );
            ipv6::Repr {
                src_addr: s,
                dst_addr: d,
                next_header: protocol,
                payload_len: l4_len,
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 0,
            }
            .emit(&mut ipv6::Packet::new_unchecked(&mut f[l3..]));
            (IpAddr::V6(s), IpAddr::V6(d))
        } else {
            let (s, d) = (Ipv4Addr::new(10, 1, 1, 1), Ipv4Addr::new(10, 1, 1, 2));
            ipv4::Repr {
                src_addr: s,
                dst_addr: d,
                protocol,
                payload_len: l4_len,
                ttl: 64,
                dscp: 0,
                ecn: 0,
                ident: ip.ident,
                dont_frag: true,
                more_frags: false,
                frag_offset: 0,
                options: &[],
            }
            .emit(&mut ipv4::Packet::new_unchecked(&mut f[l3..]));
            (IpAddr::V4(s), IpAddr::V4(d))
        };
        emit_l4(&mut f[l3 + l3_len..], src, dst);
        f
    }

    /// A TCP frame 40000 → 80, seq `seq`, ack 1, window 512, with `flags` and `payload`.
    pub fn tcp_frame(ip: Ip, vlan: bool, seq: u32, flags: Flags, payload: &[u8]) -> Vec<u8> {
        let repr = tcp::Repr {
            src_port: 40000,
            dst_port: 80,
            seq_number: seq,
            ack_number: 1,
            flags,
            window_len: 512,
            urgent_at: 0,
            options: &[],
            payload,
        };
        frame(ip, vlan, IpProtocol::Tcp, repr.buffer_len(), |b, s, d| {
            repr.emit(&mut tcp::Packet::new_unchecked(b), s, d)
        })
    }

    /// A UDP frame 1234 → 5678 with `payload`.
    pub fn udp_frame(ip: Ip, payload: &[u8]) -> Vec<u8> {
        let repr = udp::Repr {
            src_port: 1234,
            dst_port: 5678,
            payload,
        };
        frame(ip, false, IpProtocol::Udp, repr.buffer_len(), |b, s, d| {
            repr.emit(&mut udp::Packet::new_unchecked(b), s, d)
        })
    }

    /// The worked example's outer side: 02:..:01 → 02:..:02, 172.16.0.1 → 172.16.0.2 TTL 64 DF
    /// (IPv6: 2001:db8:ffff::1 → ::2, hop limit 64), optional C-tag VID 100.
    pub fn ctx(v6: bool, vlan: bool, kind: EncapKind) -> EncapContext {
        EncapContext {
            dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            vlan: vlan.then_some(VlanTag::customer(100)),
            ip: if v6 {
                OuterIp::V6 {
                    src: "2001:db8:ffff::1".parse::<Ipv6Addr>().unwrap(),
                    dst: "2001:db8:ffff::2".parse::<Ipv6Addr>().unwrap(),
                    hop_limit: 64,
                    traffic_class: 0,
                    flow_label: 0,
                }
            } else {
                OuterIp::V4 {
                    src: Ipv4Addr::new(172, 16, 0, 1),
                    dst: Ipv4Addr::new(172, 16, 0, 2),
                    ttl: 64,
                    tos: 0,
                    dont_frag: true,
                }
            },
            kind,
            inner_l3_csum: false,
            inner_l4_csum: false,
        }
    }

    /// NVGRE VSID 0x123456, FlowID 0xAB.
    pub const NVGRE: EncapKind = EncapKind::Nvgre {
        vsid: 0x123456,
        flow_id: 0xAB,
    };
}
