//! Receive-side scaling for one packet: hash-type selection, the Toeplitz hash of the chosen
//! Microsoft input set ([`crate::toeplitz`]), and the indirection-table lookup.
//!
//! Hash types (the hardware's `rss_type` codes; enable bit `t - 1` enables type `t`):
//!
//! | code | type | input set | mlx5 CQE `rss_hash_type` |
//! |---|---|---|---|
//! | 0 | none | — (hash 0) | 0x00 |
//! | 1 | IPV4 | IPv4 2-tuple | 0x04 |
//! | 2 | TCP_IPV4 | IPv4 4-tuple | 0x44 |
//! | 3 | UDP_IPV4 | IPv4 4-tuple | 0x84 |
//! | 4 | IPV6 | IPv6 2-tuple | 0x08 |
//! | 5 | TCP_IPV6 | IPv6 4-tuple | 0x48 |
//! | 6 | UDP_IPV6 | IPv6 4-tuple | 0x88 |
//!
//! Selection: the 4-tuple type when the L4 is TCP or UDP, the packet is not an IP fragment and
//! the type is enabled; else the 2-tuple type of the IP version when enabled (a disabled
//! 4-tuple type falls back to the addresses, as mlx5 does when a traffic type's TIR selects
//! only the IP fields); else none: hash 0, and the queue is table entry 0.

use crate::parse::ParseResult;
use crate::toeplitz::{hash_flow, KEY_LEN};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The L3 protocol of the packet (request code in parentheses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L3 {
    /// Not IP (0; code 3 is treated the same).
    None,
    /// IPv4 (1).
    Ipv4,
    /// IPv6 (2).
    Ipv6,
}

impl L3 {
    /// From the 2-bit request code; 3 is reserved and means none.
    pub fn from_code(c: u8) -> L3 {
        match c {
            1 => L3::Ipv4,
            2 => L3::Ipv6,
            _ => L3::None,
        }
    }
}

/// The L4 protocol of the packet (request code in parentheses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L4 {
    /// Neither TCP nor UDP (0; code 3 is treated the same).
    Other,
    /// TCP (1).
    Tcp,
    /// UDP (2).
    Udp,
}

impl L4 {
    /// From the 2-bit request code; 3 means other.
    pub fn from_code(c: u8) -> L4 {
        match c {
            1 => L4::Tcp,
            2 => L4::Udp,
            _ => L4::Other,
        }
    }
}

/// What was hashed (the `rss_type` code is the discriminant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RssType {
    /// Nothing hashed.
    None = 0,
    /// IPv4 addresses.
    Ipv4 = 1,
    /// IPv4 addresses and TCP ports.
    TcpIpv4 = 2,
    /// IPv4 addresses and UDP ports.
    UdpIpv4 = 3,
    /// IPv6 addresses.
    Ipv6 = 4,
    /// IPv6 addresses and TCP ports.
    TcpIpv6 = 5,
    /// IPv6 addresses and UDP ports.
    UdpIpv6 = 6,
}

impl RssType {
    /// The 3-bit code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The type for a code (7 is not a type).
    pub fn from_code(c: u8) -> Option<RssType> {
        Some(match c {
            0 => RssType::None,
            1 => RssType::Ipv4,
            2 => RssType::TcpIpv4,
            3 => RssType::UdpIpv4,
            4 => RssType::Ipv6,
            5 => RssType::TcpIpv6,
            6 => RssType::UdpIpv6,
            _ => return None,
        })
    }

    /// The mlx5 CQE `rss_hash_type` byte: bits 3:2 IP fields (1 IPv4, 2 IPv6), bits 7:6 L4
    /// fields (1 TCP, 2 UDP).
    pub fn cqe_hash_type(self) -> u8 {
        let ip = match self {
            RssType::None => 0,
            RssType::Ipv4 | RssType::TcpIpv4 | RssType::UdpIpv4 => 1,
            _ => 2,
        };
        let l4 = match self {
            RssType::TcpIpv4 | RssType::TcpIpv6 => 1,
            RssType::UdpIpv4 | RssType::UdpIpv6 => 2,
            _ => 0,
        };
        ip << 2 | l4 << 6
    }

    /// Whether the enable register `enables` (bit `code - 1`) enables this type.
    pub fn enabled(self, enables: u8) -> bool {
        self != RssType::None && enables >> (self.code() - 1) & 1 == 1
    }
}

/// Enable-register value with every type enabled.
pub const ALL_TYPES: u8 = 0x3F;

/// The hash type for a packet under `enables` (see the module docs for the rule).
pub fn select_type(enables: u8, l3: L3, l4: L4, frag: bool) -> RssType {
    let (two, tcp, udp) = match l3 {
        L3::None => return RssType::None,
        L3::Ipv4 => (RssType::Ipv4, RssType::TcpIpv4, RssType::UdpIpv4),
        L3::Ipv6 => (RssType::Ipv6, RssType::TcpIpv6, RssType::UdpIpv6),
    };
    let four = match l4 {
        L4::Tcp => Some(tcp),
        L4::Udp => Some(udp),
        L4::Other => None,
    };
    match four {
        Some(t) if !frag && t.enabled(enables) => t,
        _ if two.enabled(enables) => two,
        _ => RssType::None,
    }
}

/// RSS for one packet: `(hash, type, queue)`.
///
/// `src`/`dst` are the addresses as big-endian integers (an IPv4 address in the low 32 bits;
/// higher bits are ignored for IPv4); ports are hashed only for a 4-tuple type. The queue is
/// `table[hash & (table.len() - 1)]`.
///
/// # Panics
///
/// If `table.len()` is not a power of two.
#[allow(clippy::too_many_arguments)]
pub fn rss(
    key: &[u8; KEY_LEN],
    enables: u8,
    table: &[u32],
    l3: L3,
    l4: L4,
    frag: bool,
    src: u128,
    dst: u128,
    sport: u16,
    dport: u16,
) -> (u32, RssType, u32) {
    assert!(
        table.len().is_power_of_two(),
        "indirection table of {} entries is not a power of two",
        table.len()
    );
    let t = select_type(enables, l3, l4, frag);
    let ports = matches!(
        t,
        RssType::TcpIpv4 | RssType::UdpIpv4 | RssType::TcpIpv6 | RssType::UdpIpv6
    )
    .then_some((sport, dport));
    let addr = |a: u128| -> IpAddr {
        match l3 {
            L3::Ipv4 => Ipv4Addr::from(a as u32).into(),
            _ => Ipv6Addr::from(a).into(),
        }
    };
    let hash = match t {
        RssType::None => 0,
        _ => hash_flow(key, addr(src), addr(dst), ports),
    };
    (hash, t, table[hash as usize & (table.len() - 1)])
}

/// [`rss`] on the fields of a header parse: its L3/L4 codes, fragment flag, addresses and
/// ports.
pub fn rss_parsed(
    key: &[u8; KEY_LEN],
    enables: u8,
    table: &[u32],
    p: &ParseResult,
) -> (u32, RssType, u32) {
    rss(
        key,
        enables,
        table,
        L3::from_code(p.l3),
        L4::from_code(p.l4),
        p.frag,
        p.src_ip,
        p.dst_ip,
        p.src_port,
        p.dst_port,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toeplitz::MICROSOFT_KEY;

    fn v4(s: &str) -> u128 {
        u32::from(s.parse::<Ipv4Addr>().unwrap()) as u128
    }

    fn v6(s: &str) -> u128 {
        u128::from(s.parse::<Ipv6Addr>().unwrap())
    }

    #[test]
    fn microsoft_vectors_through_rss() {
        let table: Vec<u32> = (0..128).map(|i| i % 16).collect();
        let ms = |l3, l4, frag, s, d| {
            rss(
                &MICROSOFT_KEY,
                ALL_TYPES,
                &table,
                l3,
                l4,
                frag,
                s,
                d,
                2794,
                1766,
            )
        };
        let (s, d) = (v4("66.9.149.187"), v4("161.142.100.80"));
        let r = ms(L3::Ipv4, L4::Tcp, false, s, d);
        assert_eq!(r, (0x51cc_c178, RssType::TcpIpv4, 0x78 % 16));
        let r = ms(L3::Ipv4, L4::Other, false, s, d);
        assert_eq!(r, (0x323e_8fc2, RssType::Ipv4, 0x42 % 16));
        let (s, d) = (v6("3ffe:2501:200:1fff::7"), v6("3ffe:2501:200:3::1"));
        let r = ms(L3::Ipv6, L4::Udp, false, s, d);
        assert_eq!((r.0, r.1), (0x4020_7d3d, RssType::UdpIpv6));
        let r = ms(L3::Ipv6, L4::Udp, true, s, d);
        assert_eq!(
            (r.0, r.1),
            (0x2cc1_8cd5, RssType::Ipv6),
            "fragments hash the addresses only"
        );
    }

    #[test]
    fn ipv4_ignores_the_high_address_bits() {
        let table = [7u32; 4];
        let v4 = |s, d| {
            rss(
                &MICROSOFT_KEY,
                ALL_TYPES,
                &table,
                L3::Ipv4,
                L4::Udp,
                false,
                s,
                d,
                1,
                2,
            )
        };
        let a = v4(0x0a00_0001, 0x0a00_0002);
        let b = v4(
            0xffff_0000_0000_0000_0000_0000_0a00_0001,
            0x1234_0000_0a00_0002,
        );
        assert_eq!(a, b);
        assert_eq!(a.2, 7);
    }

    #[test]
    fn selection_and_fallback() {
        use RssType::*;
        // Every type enabled.
        assert_eq!(select_type(ALL_TYPES, L3::Ipv4, L4::Tcp, false), TcpIpv4);
        assert_eq!(select_type(ALL_TYPES, L3::Ipv6, L4::Udp, false), UdpIpv6);
        assert_eq!(select_type(ALL_TYPES, L3::Ipv4, L4::Other, false), Ipv4);
        assert_eq!(select_type(ALL_TYPES, L3::Ipv6, L4::Tcp, true), Ipv6);
        assert_eq!(select_type(ALL_TYPES, L3::None, L4::Tcp, false), None);
        // TCP_IPV4 disabled: fall back to IPV4; both disabled: none.
        let no_tcp4 = ALL_TYPES & !(1 << 1);
        assert_eq!(select_type(no_tcp4, L3::Ipv4, L4::Tcp, false), Ipv4);
        assert_eq!(select_type(no_tcp4 & !1, L3::Ipv4, L4::Tcp, false), None);
        // Only UDP_IPV6 enabled: UDP/IPv6 hashes, TCP/IPv6 and fragments do not.
        let only = 1 << 5;
        assert_eq!(select_type(only, L3::Ipv6, L4::Udp, false), UdpIpv6);
        assert_eq!(select_type(only, L3::Ipv6, L4::Tcp, false), None);
        assert_eq!(select_type(only, L3::Ipv6, L4::Udp, true), None);
        assert_eq!(select_type(only, L3::Ipv4, L4::Udp, false), None);
    }

    #[test]
    fn nothing_hashed_goes_to_entry_zero() {
        let table = [5u32, 1, 2, 3];
        let r = rss(
            &MICROSOFT_KEY,
            0,
            &table,
            L3::Ipv4,
            L4::Tcp,
            false,
            1,
            2,
            3,
            4,
        );
        assert_eq!(r, (0, RssType::None, 5));
    }

    #[test]
    fn cqe_hash_type_bytes() {
        let want = [0x00, 0x04, 0x44, 0x84, 0x08, 0x48, 0x88];
        for (c, w) in want.into_iter().enumerate() {
            let t = RssType::from_code(c as u8).unwrap();
            assert_eq!(t.code(), c as u8);
            assert_eq!(t.cqe_hash_type(), w, "{t:?}");
        }
        assert_eq!(RssType::from_code(7), Option::None);
        assert_eq!(L3::from_code(3), L3::None);
        assert_eq!(L4::from_code(3), L4::Other);
    }
}
