//! IPv4 (RFC 791): header with options, header checksum, fragment fields.
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 1 | version \[7:4\] (4), IHL \[3:0\] (header length in 32-bit words, 5..15) |
//! | 1 | 1 | DSCP \[7:2\], ECN \[1:0\] |
//! | 2 | 2 | total length (header + payload) |
//! | 4 | 2 | identification |
//! | 6 | 2 | flags: reserved \[15\], DF \[14\], MF \[13\]; fragment offset \[12:0\] in 8-byte units |
//! | 8 | 1 | TTL |
//! | 9 | 1 | protocol |
//! | 10 | 2 | header checksum |
//! | 12 | 4 | source address |
//! | 16 | 4 | destination address |
//! | 20 | IHL·4 − 20 | options |
//!
//! The payload is `IHL·4 .. total length`: Ethernet padding after the datagram is not part of
//! it. The header checksum is the complement of the ones'-complement sum of the header with
//! the checksum field taken as zero; a header with a correct checksum sums to 0xFFFF.

use std::net::Ipv4Addr;

use crate::checksum;
use crate::error::{Error, Result};
use crate::ip::IpProtocol;

mod field {
    use std::ops::Range;

    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
    /// End of the fixed header; options follow.
    pub const OPTIONS: usize = 20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::OPTIONS;
/// Longest header (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1FFF;

/// A zero-copy view of an IPv4 packet.
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

    /// Checks that the buffer holds the fixed header, the options (IHL) and the whole datagram
    /// (total length), and that IHL and total length agree with each other. The buffer may be
    /// longer than the datagram (Ethernet padding).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        Error::check_len("ipv4 header", HEADER_LEN, len)?;
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed("ipv4 IHL below 5"));
        }
        Error::check_len("ipv4 options", header_len, len)?;
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::Malformed(
                "ipv4 total length shorter than the header",
            ));
        }
        Error::check_len("ipv4 total length", total_len, len)
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn read_u16(&self, at: std::ops::Range<usize>) -> u16 {
        let data = self.buffer.as_ref();
        u16::from_be_bytes([data[at.start], data[at.start + 1]])
    }

    /// Version field (4 for IPv4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL·4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0F) * 4
    }

    /// Differentiated services code point (6 bits).
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification (2 bits; 3 = CE).
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total length: header plus payload.
    pub fn total_len(&self) -> u16 {
        self.read_u16(field::LENGTH)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        self.read_u16(field::IDENT)
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.read_u16(field::FLG_OFF) & FLAG_DF != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        self.read_u16(field::FLG_OFF) & FLAG_MF != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (self.read_u16(field::FLG_OFF) & OFFSET_MASK) * 8
    }

    /// A fragment of a larger datagram: MF set or a non-zero offset. Only the first fragment
    /// (offset 0) carries the L4 header.
    pub fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        self.read_u16(field::CHECKSUM)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let a = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(a[0], a[1], a[2], a[3])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let a = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(a[0], a[1], a[2], a[3])
    }

    /// The option bytes (empty when IHL is 5).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }

    /// The header, options included.
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }

    /// Whether the header checksum is correct (the header sums to 0xFFFF).
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(self.header()) == 0xFFFF
    }

    /// The payload: from the end of the header to total length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn write_u16(&mut self, at: std::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[at].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets version and IHL from a header length in bytes.
    ///
    /// # Panics
    ///
    /// If `header_len` is not a multiple of 4 in 20..=60.
    pub fn set_version_and_header_len(&mut self, version: u8, header_len: usize) {
        assert!(
            header_len.is_multiple_of(4) && (HEADER_LEN..=MAX_HEADER_LEN).contains(&header_len),
            "IPv4 header length {header_len} is not a multiple of 4 in 20..=60"
        );
        self.buffer.as_mut()[field::VER_IHL] = version << 4 | (header_len / 4) as u8;
    }

    /// Sets DSCP (6 bits) and ECN (2 bits).
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: u8) {
        assert!(
            dscp < 64 && ecn < 4,
            "DSCP {dscp} or ECN {ecn} out of range"
        );
        self.buffer.as_mut()[field::DSCP_ECN] = dscp << 2 | ecn;
    }

    /// Sets the total length.
    pub fn set_total_len(&mut self, value: u16) {
        self.write_u16(field::LENGTH, value);
    }

    /// Sets the identification.
    pub fn set_ident(&mut self, value: u16) {
        self.write_u16(field::IDENT, value);
    }

    /// Sets the flags word: DF, MF and the fragment offset in bytes; the reserved bit is
    /// cleared.
    ///
    /// # Panics
    ///
    /// If `frag_offset` is not a multiple of 8 or exceeds the 13-bit field.
    pub fn set_flags_and_offset(&mut self, dont_frag: bool, more_frags: bool, frag_offset: u16) {
        assert!(
            frag_offset.is_multiple_of(8) && frag_offset / 8 <= OFFSET_MASK,
            "fragment offset {frag_offset} is not a multiple of 8 below 65536"
        );
        let mut word = frag_offset / 8;
        if dont_frag {
            word |= FLAG_DF;
        }
        if more_frags {
            word |= FLAG_MF;
        }
        self.write_u16(field::FLG_OFF, word);
    }

    /// Sets the TTL.
    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value;
    }

    /// Sets the protocol.
    pub fn set_protocol(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = value.into();
    }

    /// Sets the checksum field as is.
    pub fn set_checksum(&mut self, value: u16) {
        self.write_u16(field::CHECKSUM, value);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.octets());
    }

    /// The option bytes, mutable (their length is set by IHL).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::OPTIONS..end]
    }

    /// Computes the header checksum over the current header and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let value = checksum::checksum(self.header());
        self.set_checksum(value);
    }

    /// The payload, mutable (header length to total length).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

/// The parsed IPv4 header.
///
/// The reserved flag bit is not represented (emitted as 0); the checksum is not represented
/// (computed by [`Repr::emit`], checked by [`Packet::verify_checksum`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload.
    pub protocol: IpProtocol,
    /// Payload length (total length minus header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP, 6 bits.
    pub dscp: u8,
    /// ECN, 2 bits.
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't fragment.
    pub dont_frag: bool,
    /// More fragments.
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: u16,
    /// Option bytes, a multiple of 4 up to 40.
    pub options: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Parses a checked packet. Fails on a version other than 4; does not check the checksum.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Unsupported(
                "ipv4 header with a version other than 4",
            ));
        }
        let data: &'a [u8] = packet.buffer.as_ref();
        let header_len = packet.header_len();
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - header_len,
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            options: &data[field::OPTIONS..header_len],
        })
    }

    /// Header length this representation emits (20 + options).
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header (options and checksum included) into the front of `packet`; the
    /// payload bytes are left alone.
    ///
    /// # Panics
    ///
    /// If the options are not a multiple of 4 up to 40 bytes, the total length exceeds
    /// 65535, a field is out of range, or the buffer is shorter than the header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let header_len = self.buffer_len();
        let total_len =
            u16::try_from(header_len + self.payload_len).expect("IPv4 total length exceeds 65535");
        packet.set_version_and_header_len(4, header_len);
        packet.set_dscp_ecn(self.dscp, self.ecn);
        packet.set_total_len(total_len);
        packet.set_ident(self.ident);
        packet.set_flags_and_offset(self.dont_frag, self.more_frags, self.frag_offset);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.options_mut().copy_from_slice(self.options);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::{EtherType, Frame};
    use crate::vectors::{hex, T1};

    /// wire-formats.md §3.1.
    const HEADER: &str = "45 00 00 28 00 01 00 00 40 06 f6 cb c0 00 02 01 c0 00 02 02";

    /// IPv4 with a record-route option (IHL 7), from the scapy-built QinQ frame.
    const WITH_OPTIONS: &str = "4700 0027 0007 4000 3f11 14b2 0a00 0001 0a00 0002 0707 0401 0203
                                0400 04d2 12b5 000b e1d4 7879 7a";

    fn syn_repr() -> Repr<'static> {
        Repr {
            src_addr: Ipv4Addr::new(192, 0, 2, 1),
            dst_addr: Ipv4Addr::new(192, 0, 2, 2),
            protocol: IpProtocol::Tcp,
            payload_len: 20,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            options: &[],
        }
    }

    #[test]
    fn parse_reference_header() {
        let mut bytes = hex(HEADER);
        bytes.extend_from_slice(&[0; 20]);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum());
        assert_eq!(packet.checksum(), 0xF6CB);
        assert_eq!(Repr::parse(&packet).unwrap(), syn_repr());
        assert_eq!(packet.payload().len(), 20);
    }

    #[test]
    fn emit_reference_header() {
        let repr = syn_repr();
        let mut buf = vec![0xA5; repr.buffer_len()];
        // The payload is not in the buffer: emit into a header-sized view.
        let mut packet = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut packet);
        assert_eq!(buf, hex(HEADER));
    }

    #[test]
    fn cnp_capture_t1() {
        let bytes = hex(T1);
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        assert_eq!(frame.ethertype(), EtherType::Ipv4);
        let packet = Packet::new_checked(frame.payload()).unwrap();
        assert!(packet.verify_checksum());
        assert_eq!(packet.checksum(), 0x9161);
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(repr.src_addr, Ipv4Addr::new(10, 0, 17, 1));
        assert_eq!(repr.dst_addr, Ipv4Addr::new(10, 0, 18, 1));
        assert_eq!((repr.dscp, repr.ecn), (48, 2));
        assert_eq!(repr.ident, 0x718C);
        assert!(repr.dont_frag && !repr.more_frags && repr.frag_offset == 0);
        assert_eq!(
            (repr.ttl, repr.protocol, repr.payload_len),
            (64, IpProtocol::Udp, 40)
        );

        // Re-emitting reproduces the captured header byte for byte.
        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, packet.header());
    }

    #[test]
    fn options_round_trip() {
        let bytes = hex(WITH_OPTIONS);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum());
        assert_eq!(packet.header_len(), 28);
        assert_eq!(packet.options(), hex("0707 0401 0203 0400"));
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(repr.payload_len, 11);
        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes[..28]);
    }

    #[test]
    fn padding_is_not_payload() {
        let mut bytes = hex(HEADER);
        bytes.extend_from_slice(&[0x11; 20]);
        bytes.extend_from_slice(&[0x00; 6]); // Ethernet padding
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.payload(), [0x11; 20]);
    }

    #[test]
    fn fragments() {
        let mut bytes = hex(HEADER);
        bytes.extend_from_slice(&[0; 20]);
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        assert!(!packet.is_fragment());
        packet.set_flags_and_offset(false, true, 0);
        assert!(packet.is_fragment() && packet.more_frags() && packet.frag_offset() == 0);
        packet.set_flags_and_offset(false, false, 1480);
        assert!(packet.is_fragment() && !packet.more_frags());
        assert_eq!(packet.frag_offset(), 1480);
        assert_eq!(&bytes[6..8], [0x00, 0xB9]);
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        assert!(!packet.verify_checksum());
        packet.fill_checksum();
        assert!(packet.verify_checksum());
    }

    #[test]
    fn truncated_and_malformed() {
        let mut bytes = hex(HEADER);
        bytes.extend_from_slice(&[0; 20]);
        assert!(matches!(
            Packet::new_checked(&bytes[..19]),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            Packet::new_checked(&bytes[..39]),
            Err(Error::Truncated {
                what: "ipv4 total length",
                needed: 40,
                got: 39
            })
        ));
        let mut bad = bytes.clone();
        bad[0] = 0x44;
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(Error::Malformed(_))
        ));
        let mut bad = bytes.clone();
        bad[0] = 0x4F; // IHL 15 = 60 bytes > 40
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(Error::Truncated { .. })
        ));
        let mut bad = bytes.clone();
        bad[2..4].copy_from_slice(&[0, 16]);
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(Error::Malformed(_))
        ));
        let mut bad = bytes;
        bad[0] = 0x65;
        let packet = Packet::new_checked(&bad[..]).unwrap();
        assert!(matches!(Repr::parse(&packet), Err(Error::Unsupported(_))));
    }
}
