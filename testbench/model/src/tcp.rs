//! TCP (RFC 9293) segments: header, options, checksum over the pseudo-header.
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 2 | source port |
//! | 2 | 2 | destination port |
//! | 4 | 4 | sequence number |
//! | 8 | 4 | acknowledgment number |
//! | 12 | 1 | data offset \[7:4\] (header length in 32-bit words, 5..15), reserved \[3:1\], AE (ex-NS) \[0\] |
//! | 13 | 1 | CWR, ECE, URG, ACK, PSH, RST, SYN, FIN (bit 7 .. bit 0) |
//! | 14 | 2 | window |
//! | 16 | 2 | checksum |
//! | 18 | 2 | urgent pointer |
//! | 20 | offset·4 − 20 | options |
//!
//! TCP has no length field: a view covers exactly one segment, i.e. the IP payload. The
//! checksum is the complement of the ones'-complement sum of the pseudo-header (see
//! [`crate::checksum::pseudo_header`]) and the whole segment with the checksum field as zero.

use std::net::IpAddr;
use std::ops::{BitOr, BitOrAssign};

use crate::checksum;
use crate::error::{Error, Result};
use crate::ip::IpProtocol;

mod field {
    use std::ops::Range;

    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    /// Data offset, reserved bits and the nine flags.
    pub const FLAGS: Range<usize> = 12..14;
    pub const WIN_SIZE: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
    pub const OPTIONS: usize = 20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::OPTIONS;
/// Longest header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;

/// The nine TCP flag bits, as in the low bits of header bytes 12-13.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u16);

impl Flags {
    /// No flag set.
    pub const NONE: Flags = Flags(0);
    /// FIN.
    pub const FIN: Flags = Flags(0x001);
    /// SYN.
    pub const SYN: Flags = Flags(0x002);
    /// RST.
    pub const RST: Flags = Flags(0x004);
    /// PSH.
    pub const PSH: Flags = Flags(0x008);
    /// ACK.
    pub const ACK: Flags = Flags(0x010);
    /// URG.
    pub const URG: Flags = Flags(0x020);
    /// ECE.
    pub const ECE: Flags = Flags(0x040);
    /// CWR.
    pub const CWR: Flags = Flags(0x080);
    /// AE (accurate ECN; formerly NS).
    pub const AE: Flags = Flags(0x100);
    /// All nine flag bits.
    const MASK: u16 = 0x1FF;

    /// Whether every flag of `other` is set here.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpOption<'a> {
    /// Kind 0: end of option list.
    EndOfList,
    /// Kind 1: padding.
    NoOperation,
    /// Kind 2, length 4.
    MaxSegmentSize(u16),
    /// Kind 3, length 3.
    WindowScale(u8),
    /// Kind 4, length 2.
    SackPermitted,
    /// Kind 5: SACK blocks (left, right edges).
    Sack(&'a [u8]),
    /// Kind 8, length 10.
    Timestamps {
        /// TSval.
        tsval: u32,
        /// TSecr.
        tsecr: u32,
    },
    /// Any other kind, with its data (length byte excluded).
    Unknown {
        /// Option kind.
        kind: u8,
        /// Option data.
        data: &'a [u8],
    },
}

/// Parses an option list up to its end or an End-of-List option (which is returned).
///
/// Fails with [`Error::Malformed`] on an option whose length byte is below 2 or runs past
/// the list, or whose length does not match its kind.
pub fn parse_options(mut bytes: &[u8]) -> Result<Vec<TcpOption<'_>>> {
    let mut options = Vec::new();
    while let Some(&kind) = bytes.first() {
        match kind {
            0 => {
                options.push(TcpOption::EndOfList);
                break;
            }
            1 => {
                options.push(TcpOption::NoOperation);
                bytes = &bytes[1..];
                continue;
            }
            _ => {}
        }
        let len = usize::from(
            *bytes
                .get(1)
                .ok_or(Error::Malformed("tcp option without length"))?,
        );
        if len < 2 || len > bytes.len() {
            return Err(Error::Malformed("tcp option length out of range"));
        }
        let data = &bytes[2..len];
        let option = match (kind, data.len()) {
            (2, 2) => TcpOption::MaxSegmentSize(u16::from_be_bytes([data[0], data[1]])),
            (3, 1) => TcpOption::WindowScale(data[0]),
            (4, 0) => TcpOption::SackPermitted,
            (5, n) if n % 8 == 0 => TcpOption::Sack(data),
            (8, 8) => TcpOption::Timestamps {
                tsval: u32::from_be_bytes([data[0], data[1], data[2], data[3]]),
                tsecr: u32::from_be_bytes([data[4], data[5], data[6], data[7]]),
            },
            (2..=5 | 8, _) => return Err(Error::Malformed("tcp option length wrong for its kind")),
            _ => TcpOption::Unknown { kind, data },
        };
        options.push(option);
        bytes = &bytes[len..];
    }
    Ok(options)
}

/// A zero-copy view of a TCP segment.
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

    /// Checks that the buffer holds the fixed header and the options the data offset announces.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        Error::check_len("tcp header", HEADER_LEN, len)?;
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed("tcp data offset below 5"));
        }
        Error::check_len("tcp options", header_len, len)
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn read_u16(&self, at: std::ops::Range<usize>) -> u16 {
        let d = &self.buffer.as_ref()[at];
        u16::from_be_bytes([d[0], d[1]])
    }

    fn read_u32(&self, at: std::ops::Range<usize>) -> u32 {
        let d = &self.buffer.as_ref()[at];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.read_u16(field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.read_u16(field::DST_PORT)
    }

    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        self.read_u32(field::SEQ_NUM)
    }

    /// Acknowledgment number (meaningful when ACK is set).
    pub fn ack_number(&self) -> u32 {
        self.read_u32(field::ACK_NUM)
    }

    /// Header length in bytes (data offset·4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::FLAGS.start] >> 4) * 4
    }

    /// The nine flag bits.
    pub fn flags(&self) -> Flags {
        Flags(self.read_u16(field::FLAGS) & Flags::MASK)
    }

    /// Window.
    pub fn window_len(&self) -> u16 {
        self.read_u16(field::WIN_SIZE)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.read_u16(field::CHECKSUM)
    }

    /// Urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        self.read_u16(field::URGENT)
    }

    /// The option bytes.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }

    /// The data after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// Sum of the pseudo-header and the whole segment (checksum field included).
    fn full_sum(&self, src: IpAddr, dst: IpAddr) -> u16 {
        let data = self.buffer.as_ref();
        let len = u32::try_from(data.len()).expect("segment longer than 4 GiB");
        checksum::combine(&[
            checksum::pseudo_header(src, dst, IpProtocol::Tcp, len),
            checksum::sum(data),
        ])
    }

    /// Whether the checksum is correct for a segment from `src` to `dst`.
    ///
    /// # Panics
    ///
    /// If `src` and `dst` are of different IP versions.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        self.full_sum(src, dst) == 0xFFFF
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn write_u16(&mut self, at: std::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[at].copy_from_slice(&value.to_be_bytes());
    }

    fn write_u32(&mut self, at: std::ops::Range<usize>, value: u32) {
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

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, value: u32) {
        self.write_u32(field::SEQ_NUM, value);
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, value: u32) {
        self.write_u32(field::ACK_NUM, value);
    }

    /// Sets data offset and flags; the reserved bits are cleared.
    ///
    /// # Panics
    ///
    /// If `header_len` is not a multiple of 4 in 20..=60.
    pub fn set_header_len_and_flags(&mut self, header_len: usize, flags: Flags) {
        assert!(
            header_len.is_multiple_of(4) && (HEADER_LEN..=MAX_HEADER_LEN).contains(&header_len),
            "TCP header length {header_len} is not a multiple of 4 in 20..=60"
        );
        let word = ((header_len / 4) as u16) << 12 | flags.0 & Flags::MASK;
        self.write_u16(field::FLAGS, word);
    }

    /// Sets the window.
    pub fn set_window_len(&mut self, value: u16) {
        self.write_u16(field::WIN_SIZE, value);
    }

    /// Sets the checksum field as is.
    pub fn set_checksum(&mut self, value: u16) {
        self.write_u16(field::CHECKSUM, value);
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, value: u16) {
        self.write_u16(field::URGENT, value);
    }

    /// The option bytes, mutable (their length is set by the data offset).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::OPTIONS..end]
    }

    /// The data after the header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }

    /// Computes the checksum for a segment from `src` to `dst` and stores it.
    ///
    /// # Panics
    ///
    /// If `src` and `dst` are of different IP versions.
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let value = !self.full_sum(src, dst);
        self.set_checksum(value);
    }
}

/// A parsed TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number (kept even when ACK is clear).
    pub ack_number: u32,
    /// The nine flags.
    pub flags: Flags,
    /// Window.
    pub window_len: u16,
    /// Urgent pointer.
    pub urgent_at: u16,
    /// Option bytes, a multiple of 4 up to 40.
    pub options: &'a [u8],
    /// Segment data.
    pub payload: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Parses a checked segment. Does not check the checksum.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>> {
        packet.check_len()?;
        let data: &'a [u8] = packet.buffer.as_ref();
        let header_len = packet.header_len();
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: packet.ack_number(),
            flags: packet.flags(),
            window_len: packet.window_len(),
            urgent_at: packet.urgent_at(),
            options: &data[field::OPTIONS..header_len],
            payload: &data[header_len..],
        })
    }

    /// Header length (20 + options).
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Segment length this representation emits: header and payload.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload.len()
    }

    /// Writes the whole segment into `packet` and fills the checksum for `src` → `dst`.
    ///
    /// The view must cover exactly [`buffer_len`](Self::buffer_len) bytes, since the checksum
    /// covers the whole buffer.
    ///
    /// # Panics
    ///
    /// If the options are not a multiple of 4 up to 40 bytes, the buffer length differs from
    /// `buffer_len`, or `src` and `dst` are of different IP versions.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: IpAddr,
        dst: IpAddr,
    ) {
        assert_eq!(
            packet.buffer.as_ref().len(),
            self.buffer_len(),
            "TCP buffer length"
        );
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number);
        packet.set_header_len_and_flags(self.header_len(), self.flags);
        packet.set_window_len(self.window_len);
        packet.set_urgent_at(self.urgent_at);
        packet.options_mut().copy_from_slice(self.options);
        packet.payload_mut().copy_from_slice(self.payload);
        packet.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;
    use crate::ipv6;
    use crate::vectors::IPV6_EXT_TCP;

    const SYN: &str = "3039 0050 0000 0000 0000 0000 5002 ffff fb55 0000";

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::from(a)
    }

    #[test]
    fn syn_reference_vector() {
        let (src, dst) = (v4([192, 0, 2, 1]), v4([192, 0, 2, 2]));
        let bytes = hex(SYN);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum(src, dst));
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            Repr {
                src_port: 12345,
                dst_port: 80,
                seq_number: 0,
                ack_number: 0,
                flags: Flags::SYN,
                window_len: 65535,
                urgent_at: 0,
                options: &[],
                payload: &[],
            }
        );
        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]), src, dst);
        assert_eq!(buf, bytes);
        assert_eq!(Packet::new_unchecked(&buf[..]).checksum(), 0xFB55);
        // Wrong addresses: the checksum no longer verifies.
        assert!(!packet.verify_checksum(src, v4([192, 0, 2, 3])));
    }

    #[test]
    fn options_and_payload_over_ipv6() {
        let bytes = hex(IPV6_EXT_TCP);
        let ip = ipv6::Packet::new_checked(&bytes[..]).unwrap();
        let (protocol, segment) = ip.upper_layer().unwrap();
        assert_eq!(protocol, IpProtocol::Tcp);
        let (src, dst) = (IpAddr::V6(ip.src_addr()), IpAddr::V6(ip.dst_addr()));
        let packet = Packet::new_checked(segment).unwrap();
        assert!(packet.verify_checksum(src, dst));
        assert_eq!(packet.checksum(), 0x1280);
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!((repr.src_port, repr.dst_port), (40000, 443));
        assert_eq!(
            (repr.seq_number, repr.ack_number),
            (0x0102_0304, 0xA0B0_C0D0)
        );
        assert_eq!(repr.flags, Flags::PSH | Flags::ACK);
        assert_eq!(repr.window_len, 502);
        assert_eq!(repr.payload, b"GET /\r\n");
        assert_eq!(
            parse_options(repr.options).unwrap(),
            [
                TcpOption::MaxSegmentSize(1460),
                TcpOption::NoOperation,
                TcpOption::WindowScale(7),
                TcpOption::SackPermitted,
                TcpOption::Timestamps { tsval: 1, tsecr: 2 },
            ]
        );

        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]), src, dst);
        assert_eq!(buf, segment);
    }

    #[test]
    fn malformed_options() {
        assert!(parse_options(&[2, 4, 5]).is_err());
        assert!(parse_options(&[2, 3, 5]).is_err());
        assert!(parse_options(&[0x1e, 1]).is_err());
        assert_eq!(
            parse_options(&[1, 0, 0xFF]).unwrap(),
            [TcpOption::NoOperation, TcpOption::EndOfList]
        );
        assert_eq!(
            parse_options(&[0x1e, 3, 9]).unwrap(),
            [TcpOption::Unknown {
                kind: 0x1e,
                data: &[9]
            }]
        );
    }

    #[test]
    fn truncated_and_malformed() {
        let bytes = hex(SYN);
        assert!(matches!(
            Packet::new_checked(&bytes[..19]),
            Err(Error::Truncated { .. })
        ));
        let mut bad = bytes.clone();
        bad[12] = 0x40;
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(Error::Malformed(_))
        ));
        bad[12] = 0x60;
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(Error::Truncated {
                what: "tcp options",
                needed: 24,
                got: 20
            })
        ));
    }
}
