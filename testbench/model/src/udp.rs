//! UDP (RFC 768) datagrams and their checksum over the pseudo-header.
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 2 | source port |
//! | 2 | 2 | destination port |
//! | 4 | 2 | length (header + data, ≥ 8) |
//! | 6 | 2 | checksum |
//!
//! Checksum rules:
//!
//! * The checksum is the complement of the ones'-complement sum of the pseudo-header and the
//!   datagram (checksum field as zero). A computed value of 0x0000 is sent as 0xFFFF, because
//!   0x0000 means "no checksum".
//! * Over IPv4 a checksum field of 0 means "not computed" and is not checked
//!   ([`Packet::verify_checksum`] returns `true`).
//! * Over IPv6 the checksum is mandatory: a zero field fails verification (the RFC 6935/6936
//!   tunnel exception is the caller's business).

use std::net::IpAddr;

use crate::checksum;
use crate::error::{Error, Result};
use crate::ip::IpProtocol;

mod field {
    use std::ops::Range;

    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
    pub const PAYLOAD: usize = 8;
}

/// Length of the header.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// A zero-copy view of a UDP datagram.
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

    /// Checks that the buffer holds the header and the length the header announces (the
    /// buffer may be longer), and that the length is at least 8.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        Error::check_len("udp header", HEADER_LEN, len)?;
        let datagram_len = usize::from(self.len());
        if datagram_len < HEADER_LEN {
            return Err(Error::Malformed("udp length below 8"));
        }
        Error::check_len("udp length", datagram_len, len)
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn read_u16(&self, at: std::ops::Range<usize>) -> u16 {
        let d = &self.buffer.as_ref()[at];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.read_u16(field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.read_u16(field::DST_PORT)
    }

    /// Length field: header plus data.
    pub fn len(&self) -> u16 {
        self.read_u16(field::LENGTH)
    }

    /// Whether the datagram carries no data (length 8).
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) == HEADER_LEN
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.read_u16(field::CHECKSUM)
    }

    /// The datagram: header and data, up to the length field.
    pub fn datagram(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.len())]
    }

    /// The data, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.datagram()[HEADER_LEN..]
    }

    /// Sum of the pseudo-header and the datagram (checksum field included).
    fn full_sum(&self, src: IpAddr, dst: IpAddr) -> u16 {
        checksum::combine(&[
            checksum::pseudo_header(src, dst, IpProtocol::Udp, u32::from(self.len())),
            checksum::sum(self.datagram()),
        ])
    }

    /// Whether the checksum is acceptable for a datagram from `src` to `dst`: correct, or
    /// absent (zero) over IPv4. A zero checksum over IPv6 is not acceptable.
    ///
    /// # Panics
    ///
    /// If `src` and `dst` are of different IP versions.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        if self.checksum() == 0 {
            return src.is_ipv4() && dst.is_ipv4();
        }
        self.full_sum(src, dst) == 0xFFFF
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn write_u16(&mut self, at: std::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[at].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the source port.
    pub fn set_src_port(&mut self, value: u16) {
        self.write_u16(field::SRC_PORT, value);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, value: u16) {
        self.write_u16(field::DST_PORT, value);
    }

    /// Sets the length field.
    pub fn set_len(&mut self, value: u16) {
        self.write_u16(field::LENGTH, value);
    }

    /// Sets the checksum field as is (0 to send "no checksum" over IPv4).
    pub fn set_checksum(&mut self, value: u16) {
        self.write_u16(field::CHECKSUM, value);
    }

    /// The data, mutable (up to the length field).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes the checksum for a datagram from `src` to `dst` and stores it; a computed 0 is
    /// stored as 0xFFFF.
    ///
    /// # Panics
    ///
    /// If `src` and `dst` are of different IP versions.
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let value = match !self.full_sum(src, dst) {
            0 => 0xFFFF,
            value => value,
        };
        self.set_checksum(value);
    }
}

/// A parsed UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// The data.
    pub payload: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Parses a checked datagram. Does not check the checksum.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>> {
        packet.check_len()?;
        let data: &'a [u8] = packet.buffer.as_ref();
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload: &data[HEADER_LEN..usize::from(packet.len())],
        })
    }

    /// Datagram length this representation emits: 8 + payload.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    /// Writes the datagram into the front of `packet` and fills the checksum for
    /// `src` → `dst`. To send "no checksum" over IPv4, call `set_checksum(0)` afterwards.
    ///
    /// # Panics
    ///
    /// If the datagram exceeds 65535 bytes, the buffer is shorter than
    /// [`buffer_len`](Self::buffer_len), or `src` and `dst` are of different IP versions.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: IpAddr,
        dst: IpAddr,
    ) {
        let len = u16::try_from(self.buffer_len()).expect("UDP datagram exceeds 65535 bytes");
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(len);
        packet.payload_mut().copy_from_slice(self.payload);
        packet.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::Frame;
    use crate::vectors::{hex, IPV6_FIRST_FRAGMENT, T1, T2};
    use crate::{ipv4, ipv6};

    /// The UDP part of wire-formats.md §3.2's IPv6 "hello".
    const HELLO: &str = "04d2 162e 000d 458d 6865 6c6c 6f";

    fn hello_addrs() -> (IpAddr, IpAddr) {
        (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        )
    }

    #[test]
    fn ipv6_hello_vector() {
        let (src, dst) = hello_addrs();
        let bytes = hex(HELLO);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum(src, dst));
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            Repr {
                src_port: 1234,
                dst_port: 5678,
                payload: b"hello"
            }
        );
        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]), src, dst);
        assert_eq!(buf, bytes);
    }

    /// scapy's RoCE vector T2 carries UDP checksum 0; the computed value is 0xACA2.
    #[test]
    fn ipv4_zero_checksum_is_not_checked() {
        let bytes = hex(T2);
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        let ip = ipv4::Packet::new_checked(frame.payload()).unwrap();
        let (src, dst) = (IpAddr::V4(ip.src_addr()), IpAddr::V4(ip.dst_addr()));
        let mut datagram = ip.payload().to_vec();
        let mut packet = Packet::new_checked(&mut datagram[..]).unwrap();
        assert_eq!(packet.checksum(), 0);
        assert!(packet.verify_checksum(src, dst));
        packet.fill_checksum(src, dst);
        assert_eq!(packet.checksum(), 0xACA2);
        assert!(packet.verify_checksum(src, dst));
        packet.set_checksum(0xACA3);
        assert!(!packet.verify_checksum(src, dst));
    }

    #[test]
    fn cnp_capture_t1_udp() {
        let bytes = hex(T1);
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        let ip = ipv4::Packet::new_checked(frame.payload()).unwrap();
        let packet = Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(
            (packet.src_port(), packet.dst_port(), packet.len()),
            (0, 4791, 40)
        );
        assert_eq!(packet.checksum(), 0);
        assert!(packet.verify_checksum(ip.src_addr().into(), ip.dst_addr().into()));
    }

    #[test]
    fn ipv6_zero_checksum_fails() {
        let (src, dst) = hello_addrs();
        let mut bytes = hex(HELLO);
        bytes[6..8].copy_from_slice(&[0, 0]);
        assert!(!Packet::new_checked(&bytes[..])
            .unwrap()
            .verify_checksum(src, dst));
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        // Choose the source port so that the complemented sum comes out 0.
        let (src, dst) = hello_addrs();
        let mut bytes = hex(HELLO);
        bytes[0..2].copy_from_slice(&[0, 0]);
        bytes[6..8].copy_from_slice(&[0, 0]);
        let rest = checksum::combine(&[
            checksum::pseudo_header(src, dst, IpProtocol::Udp, bytes.len() as u32),
            checksum::sum(&bytes),
        ]);
        bytes[0..2].copy_from_slice(&(!rest).to_be_bytes()); // the sum becomes 0xFFFF
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        packet.fill_checksum(src, dst);
        assert_eq!(packet.checksum(), 0xFFFF);
        assert!(packet.verify_checksum(src, dst));
    }

    #[test]
    fn first_fragment_over_ipv6() {
        let bytes = hex(IPV6_FIRST_FRAGMENT);
        let ip = ipv6::Packet::new_checked(&bytes[..]).unwrap();
        let (protocol, upper) = ip.upper_layer().unwrap();
        assert_eq!(protocol, IpProtocol::Udp);
        let packet = Packet::new_checked(upper).unwrap();
        assert_eq!(packet.payload(), b"abc");
        assert!(packet.verify_checksum(ip.src_addr().into(), ip.dst_addr().into()));
        assert_eq!(packet.checksum(), 0x3DED);
    }

    #[test]
    fn trailing_bytes_are_not_payload() {
        let mut bytes = hex(HELLO);
        bytes.extend_from_slice(&[0, 0, 0]);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.payload(), b"hello");
        let (src, dst) = hello_addrs();
        assert!(packet.verify_checksum(src, dst));
    }

    #[test]
    fn truncated_and_malformed() {
        let bytes = hex(HELLO);
        assert!(matches!(
            Packet::new_checked(&bytes[..7]),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            Packet::new_checked(&bytes[..12]),
            Err(Error::Truncated {
                what: "udp length",
                needed: 13,
                got: 12
            })
        ));
        let mut bad = bytes;
        bad[4..6].copy_from_slice(&[0, 7]);
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(Error::Malformed(_))
        ));
    }
}
