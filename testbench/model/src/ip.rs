//! IP protocol numbers (IPv4 `protocol`, IPv6 `next header`), shared by both IP versions.

use std::fmt;

/// An IANA protocol number as carried in the IPv4 `protocol` and IPv6 `next header` fields.
///
/// Numbers the model gives meaning to have a variant; every other value survives a round trip
/// through [`IpProtocol::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    /// 0: IPv6 hop-by-hop options header.
    HopByHop,
    /// 1: ICMP.
    Icmp,
    /// 6: TCP.
    Tcp,
    /// 17: UDP.
    Udp,
    /// 43: IPv6 routing header.
    Ipv6Route,
    /// 44: IPv6 fragment header.
    Ipv6Frag,
    /// 47: GRE (NVGRE rides on it).
    Gre,
    /// 50: IPsec ESP.
    Esp,
    /// 51: IPsec AH.
    Ah,
    /// 58: ICMPv6.
    Icmpv6,
    /// 59: IPv6 "no next header".
    Ipv6NoNxt,
    /// 60: IPv6 destination options header.
    Ipv6Opts,
    /// Any other number.
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(value: u8) -> Self {
        match value {
            0 => IpProtocol::HopByHop,
            1 => IpProtocol::Icmp,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            43 => IpProtocol::Ipv6Route,
            44 => IpProtocol::Ipv6Frag,
            47 => IpProtocol::Gre,
            50 => IpProtocol::Esp,
            51 => IpProtocol::Ah,
            58 => IpProtocol::Icmpv6,
            59 => IpProtocol::Ipv6NoNxt,
            60 => IpProtocol::Ipv6Opts,
            other => IpProtocol::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> Self {
        match value {
            IpProtocol::HopByHop => 0,
            IpProtocol::Icmp => 1,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Ipv6Route => 43,
            IpProtocol::Ipv6Frag => 44,
            IpProtocol::Gre => 47,
            IpProtocol::Esp => 50,
            IpProtocol::Ah => 51,
            IpProtocol::Icmpv6 => 58,
            IpProtocol::Ipv6NoNxt => 59,
            IpProtocol::Ipv6Opts => 60,
            IpProtocol::Unknown(other) => other,
        }
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpProtocol::Unknown(n) => write!(f, "protocol {n}"),
            known => write!(f, "{known:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_round_trips() {
        for n in 0..=255u8 {
            assert_eq!(u8::from(IpProtocol::from(n)), n);
        }
        // A known number never hides inside Unknown.
        assert_eq!(IpProtocol::from(17), IpProtocol::Udp);
    }
}
