//! IPv6 (RFC 8200): the fixed header, and skipping extension headers to the upper layer.
//!
//! Fixed header:
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 4 | version \[31:28\] (6), traffic class \[27:20\] (DSCP \[27:22\], ECN \[21:20\]), flow label \[19:0\] |
//! | 4 | 2 | payload length (everything after the fixed header, extension headers included) |
//! | 6 | 1 | next header |
//! | 7 | 1 | hop limit |
//! | 8 | 16 | source address |
//! | 24 | 16 | destination address |
//!
//! Extension headers skipped by [`Packet::ext_headers`], any number, in any order:
//!
//! | Next header | Header | Length |
//! |---|---|---|
//! | 0 | hop-by-hop options | (byte 1 + 1) · 8 |
//! | 43 | routing | (byte 1 + 1) · 8 |
//! | 60 | destination options | (byte 1 + 1) · 8 |
//! | 44 | fragment: next header, reserved, offset \[15:3\] (8-byte units), M \[0\], identification (32) | 8 |
//!
//! Byte 0 of each is the next header. Any other value (TCP, UDP, ESP, AH, no-next-header, ...)
//! ends the walk. A non-first fragment (offset ≠ 0) also ends it: its upper-layer header is in
//! the first fragment.

use std::net::Ipv6Addr;

use crate::error::{Error, Result};
use crate::ip::IpProtocol;

mod field {
    use std::ops::Range;

    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Range<usize> = 8..24;
    pub const DST_ADDR: Range<usize> = 24..40;
    pub const PAYLOAD: usize = 40;

    /// Within an extension header.
    pub mod ext {
        pub const NXT_HDR: usize = 0;
        pub const LENGTH: usize = 1;
        /// Fragment header: offset and M flag.
        pub const FRAG_OFF: std::ops::Range<usize> = 2..4;
        /// Fragment header: identification.
        pub const FRAG_IDENT: std::ops::Range<usize> = 4..8;
        /// Fragment header length.
        pub const FRAG_LEN: usize = 8;
    }
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// The fields of an IPv6 fragment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fragment {
    /// Offset of this fragment's data in the original payload, in bytes.
    pub offset: u16,
    /// More fragments follow.
    pub more_frags: bool,
    /// Identification.
    pub ident: u32,
}

/// Where the extension headers end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtHeaders {
    /// The next-header value that ended the walk: the upper-layer protocol (or, for a
    /// non-first fragment, the protocol of the fragmented payload).
    pub upper_protocol: IpProtocol,
    /// Bytes of extension headers between the fixed header and the upper layer.
    pub len: usize,
    /// The fragment header, if one was crossed.
    pub fragment: Option<Fragment>,
}

impl ExtHeaders {
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub fn upper_layer_offset(&self) -> usize {
        HEADER_LEN + self.len
    }

    /// Whether the upper-layer header is present, i.e. this is not a non-first fragment.
    pub fn has_upper_layer(&self) -> bool {
        self.fragment.is_none_or(|f| f.offset == 0)
    }
}

/// A zero-copy view of an IPv6 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps `buffer` after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the fixed header and the payload length it announces (the
    /// buffer may be longer: Ethernet padding).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        Error::check_len("ipv6 header", HEADER_LEN, len)?;
        Error::check_len(
            "ipv6 payload length",
            HEADER_LEN + usize::from(self.payload_len()),
            len,
        )
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn first_word(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Version field (6 for IPv6).
    pub fn version(&self) -> u8 {
        (self.first_word() >> 28) as u8
    }

    /// Traffic class (DSCP << 2 | ECN).
    pub fn traffic_class(&self) -> u8 {
        (self.first_word() >> 20) as u8
    }

    /// Flow label, 20 bits.
    pub fn flow_label(&self) -> u32 {
        self.first_word() & 0x000F_FFFF
    }

    /// Payload length: everything after the fixed header.
    pub fn payload_len(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The next-header field of the fixed header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        let mut octets = [0; 16];
        octets.copy_from_slice(&self.buffer.as_ref()[field::SRC_ADDR]);
        Ipv6Addr::from(octets)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let mut octets = [0; 16];
        octets.copy_from_slice(&self.buffer.as_ref()[field::DST_ADDR]);
        Ipv6Addr::from(octets)
    }

    /// Everything after the fixed header, up to the payload length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }

    /// Walks the extension headers (see the module docs) to the upper layer.
    ///
    /// Fails with [`Error::Truncated`] when an extension header runs past the payload length.
    pub fn ext_headers(&self) -> Result<ExtHeaders> {
        let payload = self.payload();
        let mut next = self.next_header();
        let mut len = 0;
        let mut fragment = None;
        loop {
            let header = &payload[len..];
            let header_len = match next {
                IpProtocol::HopByHop | IpProtocol::Ipv6Route | IpProtocol::Ipv6Opts => {
                    Error::check_len("ipv6 extension header", 2, header.len())?;
                    (usize::from(header[field::ext::LENGTH]) + 1) * 8
                }
                IpProtocol::Ipv6Frag => field::ext::FRAG_LEN,
                _ => break,
            };
            Error::check_len("ipv6 extension header", header_len, header.len())?;
            if next == IpProtocol::Ipv6Frag {
                let off = &header[field::ext::FRAG_OFF];
                let off = u16::from_be_bytes([off[0], off[1]]);
                let id = &header[field::ext::FRAG_IDENT];
                let frag = Fragment {
                    offset: off & !0x7,
                    more_frags: off & 1 != 0,
                    ident: u32::from_be_bytes([id[0], id[1], id[2], id[3]]),
                };
                fragment = Some(frag);
                next = IpProtocol::from(header[field::ext::NXT_HDR]);
                len += header_len;
                if frag.offset != 0 {
                    break;
                }
                continue;
            }
            next = IpProtocol::from(header[field::ext::NXT_HDR]);
            len += header_len;
        }
        Ok(ExtHeaders {
            upper_protocol: next,
            len,
            fragment,
        })
    }

    /// The upper-layer protocol and bytes (header and data) after the extension headers.
    pub fn upper_layer(&self) -> Result<(IpProtocol, &[u8])> {
        let ext = self.ext_headers()?;
        Ok((ext.upper_protocol, &self.payload()[ext.len..]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_first_word(&mut self, word: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&word.to_be_bytes());
    }

    /// Sets the version (4 bits).
    pub fn set_version(&mut self, version: u8) {
        let word = self.first_word() & 0x0FFF_FFFF | u32::from(version & 0x0F) << 28;
        self.set_first_word(word);
    }

    /// Sets the traffic class.
    pub fn set_traffic_class(&mut self, tc: u8) {
        let word = self.first_word() & 0xF00F_FFFF | u32::from(tc) << 20;
        self.set_first_word(word);
    }

    /// Sets the flow label.
    ///
    /// # Panics
    ///
    /// If `label` exceeds 20 bits.
    pub fn set_flow_label(&mut self, label: u32) {
        assert!(
            label < 1 << 20,
            "flow label {label:#x} does not fit 20 bits"
        );
        let word = self.first_word() & 0xFFF0_0000 | label;
        self.set_first_word(word);
    }

    /// Sets the payload length.
    pub fn set_payload_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&len.to_be_bytes());
    }

    /// Sets the next header of the fixed header.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.into();
    }

    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value;
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.octets());
    }

    /// Everything after the fixed header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The parsed fixed IPv6 header. Extension headers are payload here; see
/// [`Packet::ext_headers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Next header of the fixed header.
    pub next_header: IpProtocol,
    /// Payload length (extension headers included).
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class (DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Flow label, 20 bits.
    pub flow_label: u32,
}

impl Repr {
    /// Parses a checked packet. Fails on a version other than 6.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::Unsupported(
                "ipv6 header with a version other than 6",
            ));
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Length of the fixed header this representation emits (40).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header into the front of `packet`; the payload is left alone.
    ///
    /// # Panics
    ///
    /// If the payload length exceeds 65535 (jumbograms are not modelled), the flow label
    /// exceeds 20 bits, or the buffer is shorter than 40 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let payload_len =
            u16::try_from(self.payload_len).expect("IPv6 payload length exceeds 65535");
        packet.set_first_word(0);
        packet.set_version(6);
        packet.set_traffic_class(self.traffic_class);
        packet.set_flow_label(self.flow_label);
        packet.set_payload_len(payload_len);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;
    use crate::vectors::{IPV6_EXT_TCP as EXT_TCP, IPV6_FIRST_FRAGMENT as FIRST_FRAGMENT};

    /// IPv6/UDP "hello" of wire-formats.md §3.2.
    const HELLO: &str = "6000 0000 000d 1140 2001 0db8 0000 0000 0000 0000 0000 0001
                         2001 0db8 0000 0000 0000 0000 0000 0002
                         04d2 162e 000d 458d 6865 6c6c 6f";

    /// scapy: non-first fragment (offset 40, last) of a UDP datagram.
    const LATER_FRAGMENT: &str = "6000 0000 0010 2c40 fe80 0000 0000 0000 0000 0000 0000 0001
        ff02 0000 0000 0000 0000 0000 0000 0001
        1100 0028 dead beef 7461 696c 7461 696c";

    fn hello_repr() -> Repr {
        Repr {
            src_addr: "2001:db8::1".parse().unwrap(),
            dst_addr: "2001:db8::2".parse().unwrap(),
            next_header: IpProtocol::Udp,
            payload_len: 13,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
    }

    #[test]
    fn parse_and_emit_hello() {
        let bytes = hex(HELLO);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), hello_repr());
        assert_eq!(
            packet.upper_layer().unwrap(),
            (IpProtocol::Udp, &bytes[40..])
        );

        let mut buf = vec![0xA5; hello_repr().buffer_len()];
        hello_repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes[..40]);
    }

    #[test]
    fn skips_hop_by_hop_routing_and_destination_options() {
        let bytes = hex(EXT_TCP);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!((repr.traffic_class, repr.flow_label), (0x2E, 0x12345));
        assert_eq!(repr.next_header, IpProtocol::HopByHop);
        let ext = packet.ext_headers().unwrap();
        assert_eq!(
            ext,
            ExtHeaders {
                upper_protocol: IpProtocol::Tcp,
                len: 24,
                fragment: None
            }
        );
        assert_eq!(ext.upper_layer_offset(), 64);
        assert_eq!(&bytes[64..66], [0x9c, 0x40]);

        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes[..40]);
    }

    #[test]
    fn fragments() {
        let bytes = hex(FIRST_FRAGMENT);
        let ext = Packet::new_checked(&bytes[..])
            .unwrap()
            .ext_headers()
            .unwrap();
        let frag = Fragment {
            offset: 0,
            more_frags: true,
            ident: 0xDEAD_BEEF,
        };
        assert_eq!(
            ext,
            ExtHeaders {
                upper_protocol: IpProtocol::Udp,
                len: 8,
                fragment: Some(frag)
            }
        );
        assert!(ext.has_upper_layer());

        let bytes = hex(LATER_FRAGMENT);
        let ext = Packet::new_checked(&bytes[..])
            .unwrap()
            .ext_headers()
            .unwrap();
        assert_eq!(
            ext.fragment,
            Some(Fragment {
                offset: 40,
                more_frags: false,
                ident: 0xDEAD_BEEF
            })
        );
        assert_eq!(ext.upper_protocol, IpProtocol::Udp);
        assert!(!ext.has_upper_layer());
    }

    #[test]
    fn truncated() {
        let bytes = hex(HELLO);
        assert!(matches!(
            Packet::new_checked(&bytes[..39]),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            Packet::new_checked(&bytes[..52]),
            Err(Error::Truncated {
                what: "ipv6 payload length",
                needed: 53,
                got: 52
            })
        ));
        // An extension header that claims more bytes than the payload has.
        let mut bytes = hex(EXT_TCP);
        bytes[41] = 0x20;
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(matches!(packet.ext_headers(), Err(Error::Truncated { .. })));
        // A wrong version parses as a view but not as a Repr.
        let mut bytes = hex(HELLO);
        bytes[0] = 0x40;
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(matches!(Repr::parse(&packet), Err(Error::Unsupported(_))));
    }
}
