//! Ethernet II frames with up to two VLAN tags (802.1Q C-tag, 802.1ad S-tag), and the VLAN
//! strip/insert offloads.
//!
//! Frames here start at the destination address and end with the payload (padding included);
//! the FCS is not part of them (see [`crate::crc32`]).
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 6 | destination address |
//! | 6 | 6 | source address |
//! | 12 | 2 | EtherType, or the TPID of the outer tag (0x8100 C-tag, 0x88A8 S-tag) |
//! | 14 | 2 | outer tag TCI: PCP \[15:13\], DEI \[12\], VID \[11:0\] |
//! | 16 | 2 | EtherType, or the TPID of the inner tag |
//! | 18 | 2 | inner tag TCI |
//! | 14 + 4·tags − 2 | 2 | EtherType of the payload |
//!
//! At most two tags are parsed. A third TPID (or 0x9100 anywhere) is not a tag here: it is
//! returned as the payload EtherType, as a two-tag hardware parser would see it.

use std::fmt;

use crate::error::{Error, Result};

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xFF; 6]);

    /// The address in the first six bytes of `data`.
    ///
    /// # Panics
    ///
    /// If `data` is shorter than six bytes.
    pub fn from_bytes(data: &[u8]) -> Self {
        let mut bytes = [0; 6];
        bytes.copy_from_slice(&data[..6]);
        EthernetAddress(bytes)
    }

    /// The six bytes, in wire order.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Group bit (I/G, bit 0 of the first byte) set: multicast or broadcast.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// All ones.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Not multicast (and so not broadcast).
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Locally administered (U/L, bit 1 of the first byte).
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// The EtherType (or TPID) field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    /// 0x0800.
    Ipv4,
    /// 0x0806.
    Arp,
    /// 0x8100: 802.1Q customer tag (C-tag).
    Vlan,
    /// 0x86DD.
    Ipv6,
    /// 0x8808: MAC control (PAUSE, PFC).
    MacControl,
    /// 0x88A8: 802.1ad service tag (S-tag).
    QinQ,
    /// Any other value (including 802.3 length values below 0x0600).
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x8100 => EtherType::Vlan,
            0x86DD => EtherType::Ipv6,
            0x8808 => EtherType::MacControl,
            0x88A8 => EtherType::QinQ,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Vlan => 0x8100,
            EtherType::Ipv6 => 0x86DD,
            EtherType::MacControl => 0x8808,
            EtherType::QinQ => 0x88A8,
            EtherType::Unknown(other) => other,
        }
    }
}

/// Which kind of VLAN tag, i.e. which TPID precedes the TCI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagProtocol {
    /// 802.1Q C-tag, TPID 0x8100.
    Customer,
    /// 802.1ad S-tag, TPID 0x88A8.
    Service,
}

impl TagProtocol {
    /// The TPID written before the TCI.
    pub const fn tpid(self) -> u16 {
        match self {
            TagProtocol::Customer => 0x8100,
            TagProtocol::Service => 0x88A8,
        }
    }

    /// The tag kind a TPID announces, if it is one.
    pub const fn from_tpid(tpid: u16) -> Option<Self> {
        match tpid {
            0x8100 => Some(TagProtocol::Customer),
            0x88A8 => Some(TagProtocol::Service),
            _ => None,
        }
    }
}

/// One VLAN tag: TPID and the tag control information.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanTag {
    /// C-tag or S-tag.
    pub protocol: TagProtocol,
    /// Priority code point, 3 bits.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 12 bits.
    pub vid: u16,
}

impl VlanTag {
    /// A C-tag (0x8100) with the given VID, PCP 0, DEI 0.
    pub const fn customer(vid: u16) -> Self {
        VlanTag {
            protocol: TagProtocol::Customer,
            pcp: 0,
            dei: false,
            vid,
        }
    }

    /// The 16-bit TCI: PCP \[15:13\], DEI \[12\], VID \[11:0\].
    ///
    /// # Panics
    ///
    /// If `pcp` exceeds 3 bits or `vid` 12 bits.
    pub fn tci(&self) -> u16 {
        assert!(self.pcp < 8, "VLAN PCP {} does not fit 3 bits", self.pcp);
        assert!(
            self.vid < 0x1000,
            "VLAN VID {:#x} does not fit 12 bits",
            self.vid
        );
        u16::from(self.pcp) << 13 | u16::from(self.dei) << 12 | self.vid
    }

    /// The tag with this TPID kind and TCI.
    pub const fn from_tci(protocol: TagProtocol, tci: u16) -> Self {
        VlanTag {
            protocol,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0FFF,
        }
    }
}

mod field {
    use std::ops::Range;

    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    /// The EtherType of an untagged frame, or the outer TPID.
    pub const TYPE_OR_TPID: usize = 12;
    /// Length of an untagged header.
    pub const UNTAGGED_LEN: usize = 14;
    /// Length of one tag (TPID + TCI).
    pub const TAG_LEN: usize = 4;
    /// Tags the parser recognizes.
    pub const MAX_TAGS: usize = 2;

    /// Where tag `index` (0 = outermost) starts: its TPID.
    pub const fn tag(index: usize) -> usize {
        TYPE_OR_TPID + TAG_LEN * index
    }
}

/// Number of bytes of a header with `tags` VLAN tags.
pub const fn header_len(tags: usize) -> usize {
    field::UNTAGGED_LEN + field::TAG_LEN * tags
}

fn read_u16(data: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([data[at], data[at + 1]])
}

/// A zero-copy view of an Ethernet frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Frame { buffer }
    }

    /// Wraps `buffer` after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the buffer holds the whole header, every announced tag included.
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        let mut tags = 0;
        loop {
            Error::check_len("ethernet header", header_len(tags), data.len())?;
            if tags == field::MAX_TAGS
                || TagProtocol::from_tpid(read_u16(data, field::tag(tags))).is_none()
            {
                return Ok(());
            }
            tags += 1;
        }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination address.
    pub fn dst_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[field::DESTINATION])
    }

    /// Source address.
    pub fn src_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[field::SOURCE])
    }

    /// Number of VLAN tags (0, 1 or 2).
    pub fn tag_count(&self) -> usize {
        let data = self.buffer.as_ref();
        (0..field::MAX_TAGS)
            .take_while(|&i| TagProtocol::from_tpid(read_u16(data, field::tag(i))).is_some())
            .count()
    }

    /// Tag `index`, 0 being the outermost; `None` past the last tag.
    pub fn tag(&self, index: usize) -> Option<VlanTag> {
        if index >= self.tag_count() {
            return None;
        }
        let data = self.buffer.as_ref();
        let at = field::tag(index);
        let protocol = TagProtocol::from_tpid(read_u16(data, at))?;
        Some(VlanTag::from_tci(protocol, read_u16(data, at + 2)))
    }

    /// Header length: 14 bytes plus 4 per tag.
    pub fn header_len(&self) -> usize {
        header_len(self.tag_count())
    }

    /// The EtherType after the tags: what the payload is.
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(read_u16(self.buffer.as_ref(), self.header_len() - 2))
    }

    /// Everything after the header (padding included).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr.0);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&addr.0);
    }

    /// Writes tag `index` (TPID and TCI) at its place, 12 + 4·index. Tags are found by their
    /// TPIDs, so write them outermost first, then [`set_ethertype`](Self::set_ethertype).
    ///
    /// # Panics
    ///
    /// If `index` is 2 or more.
    pub fn set_tag(&mut self, index: usize, tag: VlanTag) {
        assert!(
            index < field::MAX_TAGS,
            "at most {} VLAN tags",
            field::MAX_TAGS
        );
        let at = field::tag(index);
        let data = self.buffer.as_mut();
        data[at..at + 2].copy_from_slice(&tag.protocol.tpid().to_be_bytes());
        data[at + 2..at + 4].copy_from_slice(&tag.tci().to_be_bytes());
    }

    /// Sets the EtherType after the tags currently in the buffer.
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        let at = self.header_len() - 2;
        self.buffer.as_mut()[at..at + 2].copy_from_slice(&u16::from(ethertype).to_be_bytes());
    }

    /// Everything after the header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

/// The parsed Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// Source address.
    pub src_addr: EthernetAddress,
    /// The outermost tag, or the only one.
    pub outer_tag: Option<VlanTag>,
    /// The second tag; [`Repr::parse`] sets it only together with `outer_tag`.
    pub inner_tag: Option<VlanTag>,
    /// The EtherType of the payload.
    pub ethertype: EtherType,
}

impl Repr {
    /// Parses the header of a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr> {
        frame.check_len()?;
        Ok(Repr {
            dst_addr: frame.dst_addr(),
            src_addr: frame.src_addr(),
            outer_tag: frame.tag(0),
            inner_tag: frame.tag(1),
            ethertype: frame.ethertype(),
        })
    }

    /// The tags present, outermost first.
    pub fn tags(&self) -> impl Iterator<Item = VlanTag> {
        self.outer_tag.into_iter().chain(self.inner_tag)
    }

    /// Header length this representation emits.
    pub fn buffer_len(&self) -> usize {
        header_len(self.tags().count())
    }

    /// Writes the header (addresses, tags, EtherType) into the front of `frame`.
    ///
    /// # Panics
    ///
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        assert!(
            frame.buffer.as_ref().len() >= self.buffer_len(),
            "buffer too short for header"
        );
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        let mut tags = 0;
        for (index, tag) in self.tags().enumerate() {
            frame.set_tag(index, tag);
            tags += 1;
        }
        let at = header_len(tags) - 2;
        frame.buffer.as_mut()[at..at + 2].copy_from_slice(&u16::from(self.ethertype).to_be_bytes());
    }
}

/// VLAN strip offload: removes the outermost tag of `frame`.
///
/// Returns the tag and the frame without it, or `None` when the frame is untagged.
pub fn vlan_strip(frame: &[u8]) -> Result<Option<(VlanTag, Vec<u8>)>> {
    let view = Frame::new_checked(frame)?;
    let Some(tag) = view.tag(0) else {
        return Ok(None);
    };
    let at = field::tag(0);
    let mut stripped = Vec::with_capacity(frame.len() - field::TAG_LEN);
    stripped.extend_from_slice(&frame[..at]);
    stripped.extend_from_slice(&frame[at + field::TAG_LEN..]);
    Ok(Some((tag, stripped)))
}

/// VLAN insert offload: adds `tag` as the new outermost tag, right after the source address.
///
/// `frame` needs at least the 12 address bytes and an EtherType/TPID; existing tags move
/// inwards (a frame that already has two tags then has three, the innermost of which the
/// parser here no longer recognizes).
pub fn vlan_insert(frame: &[u8], tag: VlanTag) -> Result<Vec<u8>> {
    Error::check_len("ethernet header", header_len(0), frame.len())?;
    let at = field::tag(0);
    let mut tagged = Vec::with_capacity(frame.len() + field::TAG_LEN);
    tagged.extend_from_slice(&frame[..at]);
    tagged.extend_from_slice(&tag.protocol.tpid().to_be_bytes());
    tagged.extend_from_slice(&tag.tci().to_be_bytes());
    tagged.extend_from_slice(&frame[at..]);
    Ok(tagged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;

    /// Double-tagged IPv4/UDP frame built with scapy: S-tag PCP 5 VID 100, C-tag PCP 3 DEI 1
    /// VID 0xABC.
    const QINQ: &str = "0200 0000 0002 0200 0000 0001 88a8 a064 8100 7abc 0800
                        4700 0027 0007 4000 3f11 14b2 0a00 0001 0a00 0002 0707 0401 0203 0400
                        04d2 12b5 000b e1d4 7879 7a";

    const SRC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const DST: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    fn qinq_repr() -> Repr {
        Repr {
            dst_addr: DST,
            src_addr: SRC,
            outer_tag: Some(VlanTag {
                protocol: TagProtocol::Service,
                pcp: 5,
                dei: false,
                vid: 100,
            }),
            inner_tag: Some(VlanTag {
                protocol: TagProtocol::Customer,
                pcp: 3,
                dei: true,
                vid: 0xABC,
            }),
            ethertype: EtherType::Ipv4,
        }
    }

    #[test]
    fn parse_double_tagged() {
        let bytes = hex(QINQ);
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        assert_eq!(frame.tag_count(), 2);
        assert_eq!(frame.header_len(), 22);
        assert_eq!(frame.payload()[0], 0x47);
        assert_eq!(Repr::parse(&frame).unwrap(), qinq_repr());
    }

    #[test]
    fn emit_double_tagged() {
        let bytes = hex(QINQ);
        let repr = qinq_repr();
        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes[..22]);
    }

    #[test]
    fn untagged_and_single_tagged_round_trip() {
        for outer_tag in [None, Some(VlanTag::customer(7))] {
            let repr = Repr {
                dst_addr: EthernetAddress::BROADCAST,
                src_addr: SRC,
                outer_tag,
                inner_tag: None,
                ethertype: EtherType::Ipv6,
            };
            let mut buf = vec![0xA5; repr.buffer_len() + 3];
            repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
            let frame = Frame::new_checked(&buf[..]).unwrap();
            assert_eq!(Repr::parse(&frame).unwrap(), repr);
            assert_eq!(frame.payload(), [0xA5; 3]);
        }
    }

    #[test]
    fn truncated_headers() {
        let bytes = hex(QINQ);
        for len in [0, 13, 17, 21] {
            assert!(
                matches!(
                    Frame::new_checked(&bytes[..len]),
                    Err(Error::Truncated { .. })
                ),
                "len {len}"
            );
        }
        assert!(Frame::new_checked(&bytes[..22]).is_ok());
    }

    #[test]
    fn third_tpid_is_the_ethertype() {
        let mut bytes = hex(QINQ);
        bytes[20..22].copy_from_slice(&[0x81, 0x00]);
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        assert_eq!(frame.tag_count(), 2);
        assert_eq!(frame.ethertype(), EtherType::Vlan);
    }

    #[test]
    fn strip_then_insert_restores_the_frame() {
        let bytes = hex(QINQ);
        let (tag, stripped) = vlan_strip(&bytes).unwrap().unwrap();
        assert_eq!(Some(tag), qinq_repr().outer_tag);
        let frame = Frame::new_checked(&stripped[..]).unwrap();
        assert_eq!(frame.tag_count(), 1);
        assert_eq!(frame.tag(0), qinq_repr().inner_tag);
        assert_eq!(vlan_insert(&stripped, tag).unwrap(), bytes);

        let (_, untagged) = vlan_strip(&stripped).unwrap().unwrap();
        assert_eq!(untagged.len(), bytes.len() - 8);
        assert_eq!(vlan_strip(&untagged).unwrap(), None);
    }

    #[test]
    fn addresses() {
        assert!(EthernetAddress::BROADCAST.is_broadcast());
        assert!(EthernetAddress([0x01, 0x00, 0x5e, 0, 0, 1]).is_multicast());
        assert!(SRC.is_unicast() && SRC.is_local());
        assert_eq!(SRC.to_string(), "02:00:00:00:00:01");
        assert_eq!(
            VlanTag::from_tci(TagProtocol::Customer, 0x7abc).tci(),
            0x7abc
        );
    }
}
