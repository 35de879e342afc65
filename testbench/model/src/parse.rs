//! The header parse result of the RX parser (`eth_hdr_parse`): what a NIC learns about a frame
//! from its first `window` bytes and its length.
//!
//! [`parse_headers`] walks Ethernet (two tags at most), IPv4 or IPv6 (extension headers
//! included) and TCP or UDP with this crate's views ([`crate::ethernet::Frame`],
//! [`crate::ipv4::Packet`], [`crate::ipv6::Packet`], [`crate::tcp::Packet`],
//! [`crate::udp::Packet`]) and reports the first thing that is wrong as a [`malformed`] code.
//! Two limits of the hardware are part of the model, not accidents of it:
//!
//! * only the first `window` bytes are looked at (lengths come from the frame length, which a
//!   parser learns at the end of the frame): an extension header whose fields lie beyond the
//!   window, or a TCP (20 bytes) / UDP (8 bytes) header that does not fit in it, stops the walk
//!   with [`malformed::EXT_WINDOW`] / [`malformed::L4_WINDOW`];
//! * at most [`MAX_EXT_HEADERS`] IPv6 extension headers are walked ([`malformed::EXT_LIMIT`]).
//!
//! Frames longer than [`MAX_FRAME_LEN`] bytes are taken as their first [`MAX_FRAME_LEN`] bytes
//! (the length field of the result is 16 bits wide).
//!
//! # The order of the checks (the first failure is reported)
//!
//! 1. Ethernet: `Frame::new_checked` → [`malformed::L2_TRUNC`]. EtherTypes other than 0x0800
//!    and 0x86DD end the parse here without error.
//! 2. IPv4, in the order of `ipv4::Packet::new_checked` then `Repr::parse`: fixed header cut
//!    (`L3_TRUNC`), IHL < 5 (`IPV4_IHL`), options cut (`L3_TRUNC`), total length < IHL·4
//!    (`IPV4_TOTAL_LEN`), total length beyond the frame (`IP_TRUNC`), version ≠ 4
//!    (`IP_VERSION`). IPv6: fixed header cut (`L3_TRUNC`), payload length beyond the frame
//!    (`IP_TRUNC`), version ≠ 6 (`IP_VERSION`).
//! 3. IPv6 extension headers (hop-by-hop 0, routing 43, destination options 60, fragment 44),
//!    per header: a fifth one (`EXT_LIMIT`); fewer than 2 bytes (fragment: 8) left in the
//!    payload (`EXT_TRUNC`); its first 2 bytes (fragment: 4) beyond the window (`EXT_WINDOW`);
//!    its length `(byte 1 + 1)·8` beyond the payload (`EXT_TRUNC`). A fragment header with a
//!    non-zero offset ends the walk (the upper-layer header is in the first fragment). This is
//!    the walk of `ipv6::Packet::ext_headers` with the two limits added.
//! 4. Fragments (IPv4 MF or offset ≠ 0; any IPv6 fragment header) end the parse without error
//!    and without L4.
//! 5. TCP (6): segment (from `l4_off` to the end of the datagram) shorter than 20
//!    (`L4_TRUNC`), header beyond the window (`L4_WINDOW`), then `tcp::Packet::new_checked`:
//!    data offset < 5 (`L4_BAD`), options beyond the segment (`L4_TRUNC`). UDP (17): datagram
//!    shorter than 8 (`L4_TRUNC`), header beyond the window (`L4_WINDOW`), then
//!    `udp::Packet::new_checked`: length field < 8 (`L4_BAD`), length field beyond the IP
//!    payload (`L4_TRUNC`). Other protocols: no L4, no error.
//!
//! # Which fields are valid when
//!
//! Fields that are not valid are 0 in a [`ParseResult`] from [`parse_headers`]
//! ([`ParseResult::canonical`] applies the same rules to a result decoded from hardware).
//!
//! | Fields | Valid when |
//! |---|---|
//! | `frame_len`, `malformed`, `user` | always |
//! | `vlan_count`, `ethertype`, `l3_off` | `malformed != L2_TRUNC` |
//! | `tag0_tpid_s`, `tag0_tci` / `tag1_tci` | additionally `vlan_count >= 1` / `== 2` |
//! | `src_ip`, `dst_ip`, `ip_sum`, `ip_end` | `l3 != 0` (every IP header check passed) |
//! | `ipv4_opts` | `l3 == 1` |
//! | `frag`, `ip_proto`, `l4_off`, `l4_len` | `l3 != 0` and `malformed` is not an `EXT_*` code |
//! | `src_port`, `dst_port` | `l4 != 0` (every TCP/UDP check passed, not a fragment) |

use crate::error::Error;
use crate::ethernet::{Frame, TagProtocol};
use crate::ip::IpProtocol;
use crate::{ipv4, ipv6, tcp, udp};

/// IPv6 extension headers walked at most; one more is [`malformed::EXT_LIMIT`].
pub const MAX_EXT_HEADERS: usize = 4;
/// Longest frame length reported; longer frames are parsed as their first 65535 bytes.
pub const MAX_FRAME_LEN: usize = 0xFFFF;
/// Smallest window: the Ethernet header with two tags and an IPv6 fixed header (62 bytes)
/// always fit.
pub const MIN_WINDOW: usize = 64;

/// `l3` values.
pub const L3_NONE: u8 = 0;
/// `l3`: IPv4.
pub const L3_IPV4: u8 = 1;
/// `l3`: IPv6.
pub const L3_IPV6: u8 = 2;
/// `l4` values.
pub const L4_NONE: u8 = 0;
/// `l4`: TCP.
pub const L4_TCP: u8 = 1;
/// `l4`: UDP.
pub const L4_UDP: u8 = 2;

/// Reason codes of the `malformed` field (4 bits; 0 = nothing wrong). The first failing check
/// in the order of the module docs is reported.
pub mod malformed {
    /// Nothing wrong (parsing may still have stopped early: non-IP, fragment, other L4).
    pub const NONE: u8 = 0;
    /// Fewer than 14 bytes, or a VLAN tag (0x8100 / 0x88A8) cut by the frame end.
    pub const L2_TRUNC: u8 = 1;
    /// The frame ends inside the IP header: the IPv4 fixed header (20), IPv4 options (IHL·4)
    /// or the IPv6 fixed header (40).
    pub const L3_TRUNC: u8 = 2;
    /// IPv4 IHL below 5.
    pub const IPV4_IHL: u8 = 3;
    /// IPv4 total length below IHL·4.
    pub const IPV4_TOTAL_LEN: u8 = 4;
    /// The datagram (IPv4 total length, IPv6 40 + payload length) runs past the frame end.
    pub const IP_TRUNC: u8 = 5;
    /// Version field not 4 under EtherType 0x0800 / not 6 under 0x86DD.
    pub const IP_VERSION: u8 = 6;
    /// An IPv6 extension header runs past the payload length.
    pub const EXT_TRUNC: u8 = 7;
    /// More than [`super::MAX_EXT_HEADERS`] IPv6 extension headers.
    pub const EXT_LIMIT: u8 = 8;
    /// The fields of an IPv6 extension header (2 bytes; fragment header 4) lie beyond the
    /// capture window.
    pub const EXT_WINDOW: u8 = 9;
    /// TCP segment shorter than 20 bytes or than its data offset; UDP datagram shorter than 8
    /// bytes or than its length field.
    pub const L4_TRUNC: u8 = 10;
    /// TCP data offset below 5; UDP length field below 8.
    pub const L4_BAD: u8 = 11;
    /// The TCP (20 bytes) or UDP (8 bytes) header does not fit in the capture window.
    pub const L4_WINDOW: u8 = 12;
}

/// What the parser reports for one frame (the fields of the hardware record `ParseMeta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ParseResult {
    /// VLAN tags recognized (0..=2).
    pub vlan_count: u8,
    /// The outer tag is an 802.1ad S-tag (TPID 0x88A8), not a C-tag (0x8100).
    pub tag0_tpid_s: bool,
    /// TCI of the outer tag.
    pub tag0_tci: u16,
    /// TCI of the inner tag.
    pub tag1_tci: u16,
    /// EtherType after the tags.
    pub ethertype: u16,
    /// [`L3_NONE`], [`L3_IPV4`] or [`L3_IPV6`]: set only when every IP header check passed.
    pub l3: u8,
    /// [`L4_NONE`], [`L4_TCP`] or [`L4_UDP`]: set only when every TCP/UDP check passed.
    pub l4: u8,
    /// Offset of the IP header in the frame (14 + 4 · `vlan_count`).
    pub l3_off: u8,
    /// Offset of the upper-layer header (after IPv4 options / IPv6 extension headers).
    pub l4_off: u16,
    /// End of the IP datagram: `l3_off` + total length (IPv4) or + 40 + payload length (IPv6).
    pub ip_end: u16,
    /// Frame length in bytes (saturating at 65535).
    pub frame_len: u16,
    /// A fragment: IPv4 MF or fragment offset ≠ 0, or an IPv6 fragment header.
    pub frag: bool,
    /// IPv4 header with options (IHL > 5).
    pub ipv4_opts: bool,
    /// The final upper-layer protocol number (after IPv6 extension headers).
    pub ip_proto: u8,
    /// Source address; IPv4 in the low 32 bits.
    pub src_ip: u128,
    /// Destination address; IPv4 in the low 32 bits.
    pub dst_ip: u128,
    /// [`crate::checksum::address_sum`] of the two addresses: the pseudo-header's address
    /// part, folded, not complemented.
    pub ip_sum: u16,
    /// TCP/UDP source port.
    pub src_port: u16,
    /// TCP/UDP destination port.
    pub dst_port: u16,
    /// `ip_end - l4_off`: the TCP segment / UDP datagram length as the IP header gives it.
    pub l4_len: u16,
    /// A [`malformed`] code.
    pub malformed: u8,
    /// The stream `tuser` of the frame's last beat; [`parse_headers`] leaves it 0.
    pub user: u64,
}

impl ParseResult {
    /// The result with every field that is not valid (see the module docs) set to 0.
    pub fn canonical(&self) -> ParseResult {
        use malformed::*;
        let mut c = *self;
        if c.malformed == L2_TRUNC {
            c.vlan_count = 0;
            c.ethertype = 0;
            c.l3_off = 0;
        }
        if c.vlan_count < 1 {
            c.tag0_tpid_s = false;
            c.tag0_tci = 0;
        }
        if c.vlan_count < 2 {
            c.tag1_tci = 0;
        }
        if c.l3 == L3_NONE {
            c.src_ip = 0;
            c.dst_ip = 0;
            c.ip_sum = 0;
            c.ip_end = 0;
        }
        if c.l3 != L3_IPV4 {
            c.ipv4_opts = false;
        }
        if c.l3 == L3_NONE || matches!(c.malformed, EXT_TRUNC | EXT_LIMIT | EXT_WINDOW) {
            c.frag = false;
            c.ip_proto = 0;
            c.l4_off = 0;
            c.l4_len = 0;
        }
        if c.l4 == L4_NONE {
            c.src_port = 0;
            c.dst_port = 0;
        }
        c
    }

    /// What the headers claim and the byte ranges the checksum units work on, derived from
    /// the valid fields only (the parser reports them with every record, so that the paths'
    /// dispatch does not derive them).
    pub fn claims(&self) -> Claims {
        use malformed::*;
        let l2_ok = self.malformed != L2_TRUNC;
        let ext_bad = matches!(self.malformed, EXT_TRUNC | EXT_LIMIT | EXT_WINDOW);
        let ip_ok = self.l3 != L3_NONE;
        let l3 = match (l2_ok, self.ethertype) {
            (true, 0x0800) => L3_IPV4,
            (true, 0x86DD) => L3_IPV6,
            _ => L3_NONE,
        };
        let l4 = match (ip_ok && !ext_bad && !self.frag, self.ip_proto) {
            (true, 6) => L4_TCP,
            (true, 17) => L4_UDP,
            _ => L4_NONE,
        };
        let l3_off = if l2_ok {
            u16::from(self.l3_off)
        } else {
            self.frame_len
        };
        let end = if ip_ok { self.ip_end } else { self.frame_len };
        let l4_off = if ip_ok && !ext_bad { self.l4_off } else { end };
        Claims {
            l3,
            l4,
            vlan: l2_ok && self.vlan_count >= 1,
            ext_bad,
            l3_off,
            l4_off,
            end,
        }
    }
}

/// The claims of a [`ParseResult`] ([`ParseResult::claims`]): what the EtherType and the IP
/// header say is there, whether checked or not, and where the checksum units start and stop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// As the EtherType claims, when the L2 header is intact: [`L3_IPV4`], [`L3_IPV6`] or
    /// [`L3_NONE`].
    pub l3: u8,
    /// As the IP header claims, when every IP header check passed, the extension headers were
    /// walked and it is not a fragment: [`L4_TCP`], [`L4_UDP`] or [`L4_NONE`].
    pub l4: u8,
    /// An outer VLAN tag is there (the L2 header is intact and has one or two tags).
    pub vlan: bool,
    /// `malformed` is an `EXT_*` code: the IPv6 extension-header chain is broken.
    pub ext_bad: bool,
    /// First byte of the IP header; the frame length when the L2 header is cut.
    pub l3_off: u16,
    /// First byte of the TCP/UDP header; `end` when the IP headers did not parse.
    pub l4_off: u16,
    /// End of the IP datagram; the frame length when the IP headers did not parse.
    pub end: u16,
}

fn be16(data: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([data[at], data[at + 1]])
}

/// Maps an error of the IPv4/IPv6 views to its code.
fn l3_code(e: Error) -> u8 {
    match e {
        Error::Truncated {
            what: "ipv4 header" | "ipv4 options" | "ipv6 header",
            ..
        } => malformed::L3_TRUNC,
        Error::Truncated {
            what: "ipv4 total length" | "ipv6 payload length",
            ..
        } => malformed::IP_TRUNC,
        Error::Malformed("ipv4 IHL below 5") => malformed::IPV4_IHL,
        Error::Malformed("ipv4 total length shorter than the header") => malformed::IPV4_TOTAL_LEN,
        other => panic!("parse model: unexpected IP error {other:?}"),
    }
}

/// Maps an error of the TCP/UDP views to its code: truncations and malformed lengths.
fn l4_code(e: Error) -> u8 {
    match e {
        Error::Truncated { .. } => malformed::L4_TRUNC,
        Error::Malformed(_) => malformed::L4_BAD,
        other => panic!("parse model: unexpected L4 error {other:?}"),
    }
}

/// Parses the headers of `frame` (an Ethernet frame without FCS) as a parser that sees only
/// the first `window` bytes and the frame length would. Returns a canonical result (invalid
/// fields 0).
///
/// # Panics
///
/// If `window` is below [`MIN_WINDOW`].
pub fn parse_headers(frame: &[u8], window: usize) -> ParseResult {
    assert!(
        window >= MIN_WINDOW,
        "window {window} below {MIN_WINDOW} bytes"
    );
    let frame = &frame[..frame.len().min(MAX_FRAME_LEN)];
    let mut r = ParseResult {
        frame_len: frame.len() as u16,
        ..ParseResult::default()
    };
    parse_into(frame, window, &mut r);
    r.ip_sum = crate::checksum::address_sum(r.src_ip, r.dst_ip);
    r.canonical()
}

fn parse_into(frame: &[u8], window: usize, r: &mut ParseResult) {
    use malformed::*;
    // L2.
    let Ok(eth) = Frame::new_checked(frame) else {
        r.malformed = L2_TRUNC;
        return;
    };
    r.vlan_count = eth.tag_count() as u8;
    if let Some(tag) = eth.tag(0) {
        r.tag0_tpid_s = tag.protocol == TagProtocol::Service;
        r.tag0_tci = tag.tci();
    }
    if let Some(tag) = eth.tag(1) {
        r.tag1_tci = tag.tci();
    }
    r.ethertype = u16::from(eth.ethertype());
    let l3_off = eth.header_len();
    r.l3_off = l3_off as u8;
    let l3 = &frame[l3_off..];

    // L3.
    let ip_end;
    let mut l4_off;
    let mut proto;
    match r.ethertype {
        0x0800 => {
            let ip = match ipv4::Packet::new_checked(l3) {
                Ok(ip) => ip,
                Err(e) => {
                    r.malformed = l3_code(e);
                    return;
                }
            };
            if ip.version() != 4 {
                r.malformed = IP_VERSION;
                return;
            }
            r.l3 = L3_IPV4;
            r.src_ip = u128::from(u32::from(ip.src_addr()));
            r.dst_ip = u128::from(u32::from(ip.dst_addr()));
            ip_end = l3_off + usize::from(ip.total_len());
            r.ip_end = ip_end as u16;
            r.ipv4_opts = ip.header_len() > ipv4::HEADER_LEN;
            r.frag = ip.is_fragment();
            proto = u8::from(ip.protocol());
            l4_off = l3_off + ip.header_len();
        }
        0x86DD => {
            let ip = match ipv6::Packet::new_checked(l3) {
                Ok(ip) => ip,
                Err(e) => {
                    r.malformed = l3_code(e);
                    return;
                }
            };
            if ip.version() != 6 {
                r.malformed = IP_VERSION;
                return;
            }
            r.l3 = L3_IPV6;
            r.src_ip = u128::from(ip.src_addr());
            r.dst_ip = u128::from(ip.dst_addr());
            ip_end = l3_off + ipv6::HEADER_LEN + usize::from(ip.payload_len());
            r.ip_end = ip_end as u16;
            proto = u8::from(ip.next_header());
            l4_off = l3_off + ipv6::HEADER_LEN;
            // Extension headers (ipv6::Packet::ext_headers with the window and count limits).
            let mut count = 0;
            loop {
                let is_frag = match IpProtocol::from(proto) {
                    IpProtocol::HopByHop | IpProtocol::Ipv6Route | IpProtocol::Ipv6Opts => false,
                    IpProtocol::Ipv6Frag => true,
                    _ => break,
                };
                if count == MAX_EXT_HEADERS {
                    r.malformed = EXT_LIMIT;
                    return;
                }
                let (need, seen) = if is_frag { (8, 4) } else { (2, 2) };
                if l4_off + need > ip_end {
                    r.malformed = EXT_TRUNC;
                    return;
                }
                if l4_off + seen > window {
                    r.malformed = EXT_WINDOW;
                    return;
                }
                let len = if is_frag {
                    8
                } else {
                    (usize::from(frame[l4_off + 1]) + 1) * 8
                };
                if l4_off + len > ip_end {
                    r.malformed = EXT_TRUNC;
                    return;
                }
                count += 1;
                let next = frame[l4_off];
                let offset = be16(frame, l4_off + 2) & !0x7;
                l4_off += len;
                proto = next;
                if is_frag {
                    r.frag = true;
                    if offset != 0 {
                        break;
                    }
                }
            }
        }
        _ => return,
    }
    r.ip_proto = proto;
    r.l4_off = l4_off as u16;
    r.l4_len = (ip_end - l4_off) as u16;
    if r.frag {
        return;
    }

    // L4.
    let segment = &frame[l4_off..ip_end];
    match IpProtocol::from(proto) {
        IpProtocol::Tcp => {
            if segment.len() < tcp::HEADER_LEN {
                r.malformed = L4_TRUNC;
            } else if l4_off + tcp::HEADER_LEN > window {
                r.malformed = L4_WINDOW;
            } else {
                match tcp::Packet::new_checked(segment) {
                    Ok(t) => {
                        r.l4 = L4_TCP;
                        r.src_port = t.src_port();
                        r.dst_port = t.dst_port();
                    }
                    Err(e) => r.malformed = l4_code(e),
                }
            }
        }
        IpProtocol::Udp => {
            if segment.len() < udp::HEADER_LEN {
                r.malformed = L4_TRUNC;
            } else if l4_off + udp::HEADER_LEN > window {
                r.malformed = L4_WINDOW;
            } else {
                match udp::Packet::new_checked(segment) {
                    Ok(u) => {
                        r.l4 = L4_UDP;
                        r.src_port = u.src_port();
                        r.dst_port = u.dst_port();
                    }
                    Err(e) => r.malformed = l4_code(e),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::malformed::*;
    use super::*;
    use crate::vectors::{hex, IPV6_EXT_TCP, IPV6_FIRST_FRAGMENT, T1, T2};

    const W: usize = 128;

    /// An Ethernet header (untagged unless `tags` are given) in front of `payload`.
    fn eth(tags: &[(u16, u16)], ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        for (tpid, tci) in tags {
            f.extend_from_slice(&tpid.to_be_bytes());
            f.extend_from_slice(&tci.to_be_bytes());
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn cnp_capture_t1() {
        let f = hex(T1);
        let r = parse_headers(&f, W);
        assert_eq!(
            r,
            ParseResult {
                ethertype: 0x0800,
                l3: L3_IPV4,
                l4: L4_UDP,
                l3_off: 14,
                l4_off: 34,
                ip_end: 74,
                frame_len: 74,
                ip_proto: 17,
                src_ip: 0x0a00_1101,
                dst_ip: 0x0a00_1201,
                ip_sum: 0x0a00 + 0x1101 + 0x0a00 + 0x1201,
                src_port: 0,
                dst_port: 4791,
                l4_len: 40,
                ..ParseResult::default()
            }
        );
        let r2 = parse_headers(&hex(T2), W);
        assert_eq!(
            (r2.l4, r2.src_port, r2.dst_port, r2.l4_len),
            (L4_UDP, 0xc000, 4791, 44)
        );
    }

    #[test]
    fn ipv6_extension_headers_agree_with_the_view() {
        let ip = hex(IPV6_EXT_TCP);
        let f = eth(&[(0x88a8, 0xa064), (0x8100, 0x7abc)], 0x86dd, &ip);
        let r = parse_headers(&f, W);
        let ext = ipv6::Packet::new_checked(&ip[..])
            .unwrap()
            .ext_headers()
            .unwrap();
        assert_eq!(
            (r.vlan_count, r.tag0_tpid_s, r.tag0_tci, r.tag1_tci),
            (2, true, 0xa064, 0x7abc)
        );
        assert_eq!((r.l3, r.l4, r.malformed), (L3_IPV6, L4_TCP, NONE));
        assert_eq!(usize::from(r.l4_off), 22 + ext.upper_layer_offset());
        assert_eq!((r.src_port, r.dst_port, r.ip_proto), (40000, 443, 6));
        assert_eq!(usize::from(r.ip_end), f.len());
        // The same frame with a window that ends inside the TCP header, and before the
        // destination-options header.
        assert_eq!(parse_headers(&f, 100).malformed, L4_WINDOW);
        assert_eq!(parse_headers(&f, 80).malformed, L4_WINDOW);
        assert_eq!(parse_headers(&f, 106).malformed, NONE);
        let early = parse_headers(&f, 64);
        assert_eq!((early.l3, early.malformed), (L3_IPV6, EXT_WINDOW));
        assert_eq!(
            (early.ip_proto, early.l4_off, usize::from(early.ip_end)),
            (0, 0, f.len())
        );
    }

    #[test]
    fn ipv6_fragments() {
        let f = eth(&[], 0x86dd, &hex(IPV6_FIRST_FRAGMENT));
        let r = parse_headers(&f, W);
        assert_eq!(
            (r.l3, r.l4, r.frag, r.ip_proto, r.l4_off),
            (L3_IPV6, L4_NONE, true, 17, 62)
        );
        assert_eq!(r.malformed, NONE);
        // A later fragment: the walk stops at the fragment header.
        let mut ip = hex(IPV6_FIRST_FRAGMENT);
        ip[42..44].copy_from_slice(&[0x00, 0x28]);
        let r = parse_headers(&eth(&[], 0x86dd, &ip), W);
        assert_eq!(
            (r.frag, r.ip_proto, r.l4_off, r.src_port),
            (true, 17, 62, 0)
        );
    }

    #[test]
    fn ipv4_checks_in_order() {
        let t1 = hex(T1);
        let mut f = t1.clone();
        f[14] = 0x44; // IHL 4
        assert_eq!(parse_headers(&f, W).malformed, IPV4_IHL);
        f[14] = 0x4f; // IHL 15: a 60-byte header, then nothing left for UDP
        assert_eq!(parse_headers(&f, W).malformed, L4_TRUNC);
        assert_eq!(parse_headers(&f[..73], W).malformed, L3_TRUNC);
        let mut f = t1.clone();
        f[16..18].copy_from_slice(&[0, 19]);
        assert_eq!(parse_headers(&f, W).malformed, IPV4_TOTAL_LEN);
        f[16..18].copy_from_slice(&[0, 61]);
        assert_eq!(parse_headers(&f, W).malformed, IP_TRUNC);
        let mut f = t1.clone();
        f[14] = 0x65;
        let r = parse_headers(&f, W);
        assert_eq!(
            (r.l3, r.malformed, r.ethertype),
            (L3_NONE, IP_VERSION, 0x0800)
        );
        let mut f = t1.clone();
        f[20] = 0x20; // MF
        let r = parse_headers(&f, W);
        assert_eq!(
            (r.l3, r.l4, r.frag, r.malformed, r.ip_proto),
            (L3_IPV4, L4_NONE, true, NONE, 17)
        );
        // Truncations at every header boundary.
        let want = [
            (13, L2_TRUNC),
            (14, L3_TRUNC),
            (33, L3_TRUNC),
            (34, IP_TRUNC),
            (73, IP_TRUNC),
        ];
        for (len, code) in want {
            assert_eq!(parse_headers(&t1[..len], W).malformed, code, "len {len}");
        }
    }

    #[test]
    fn l2_and_l4_edges() {
        assert_eq!(
            parse_headers(&[0x55], W),
            ParseResult {
                frame_len: 1,
                malformed: L2_TRUNC,
                ..Default::default()
            }
        );
        let tagged = eth(&[(0x8100, 5)], 0x0806, &[0; 28]);
        assert_eq!(parse_headers(&tagged[..17], W).malformed, L2_TRUNC);
        let r = parse_headers(&tagged, W);
        assert_eq!(
            (r.vlan_count, r.tag0_tci, r.ethertype, r.l3_off, r.l3),
            (1, 5, 0x0806, 18, 0)
        );
        // UDP length 7 and UDP length beyond the datagram.
        let mut f = hex(T1);
        f[38..40].copy_from_slice(&[0, 7]);
        assert_eq!(parse_headers(&f, W).malformed, L4_BAD);
        f[38..40].copy_from_slice(&[0, 41]);
        assert_eq!(parse_headers(&f, W).malformed, L4_TRUNC);
        // IPv4 total length leaving 7 bytes of UDP.
        let mut f = hex(T1);
        f[16..18].copy_from_slice(&[0, 27]);
        let r = parse_headers(&f, W);
        assert_eq!(
            (r.l3, r.l4, r.malformed, r.l4_len),
            (L3_IPV4, L4_NONE, L4_TRUNC, 7)
        );
        // Frames longer than 65535 bytes.
        let big = vec![0u8; 70000];
        assert_eq!(parse_headers(&big, W).frame_len, 0xFFFF);
    }

    #[test]
    fn canonical_is_idempotent_on_model_output() {
        for f in [hex(T1), hex(T2), vec![1, 2, 3]] {
            let r = parse_headers(&f, W);
            assert_eq!(r.canonical(), r);
        }
    }
}
