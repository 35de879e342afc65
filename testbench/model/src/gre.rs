//! GRE (RFC 2784 with the key extension of RFC 2890) as NVGRE (RFC 7637) uses it: IP protocol
//! 47, a key, no checksum, no sequence number, an inner Ethernet frame (without FCS).
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 2 | C \[15\], R \[14\] (RFC 1701 routing), K \[13\], S \[12\], reserved0 \[11:3\], version \[2:0\] |
//! | 2 | 2 | protocol type (0x6558, transparent Ethernet bridging, for NVGRE) |
//! | 4 | 4 | (C = 1 only) checksum, reserved1 |
//! | · | 4 | (K = 1 only) key: NVGRE VSID \[31:8\], FlowID \[7:0\] |
//! | · | 4 | (S = 1 only) sequence number |
//!
//! NVGRE fixes the first word to `0x2000 6558` (C = 0, K = 1, S = 0, version 0), so its header
//! is always 8 bytes ([`NVGRE_HEADER_LEN`]). [`Packet::header_len`] follows the C, K and S bits
//! for any GRE header; [`Packet::nvgre_defect`] says what keeps a header from being NVGRE, and
//! [`Repr::parse`] accepts only NVGRE.

use crate::error::{Error, Result};

mod field {
    use std::ops::Range;

    pub const FLAGS_VER: Range<usize> = 0..2;
    pub const PROTOCOL: Range<usize> = 2..4;
    /// The key of a header without checksum (NVGRE).
    pub const NVGRE_KEY: Range<usize> = 4..8;
    pub const NVGRE_PAYLOAD: usize = 8;
}

/// Length of the base header (flags/version and protocol).
pub const BASE_LEN: usize = 4;
/// Length of an NVGRE header (base and key).
pub const NVGRE_HEADER_LEN: usize = field::NVGRE_PAYLOAD;
/// C: checksum present.
pub const FLAG_C: u16 = 0x8000;
/// R: routing present (RFC 1701; reserved0 in RFC 2784).
pub const FLAG_R: u16 = 0x4000;
/// K: key present.
pub const FLAG_K: u16 = 0x2000;
/// S: sequence number present.
pub const FLAG_S: u16 = 0x1000;
/// Reserved0 bits other than R, zero when sent.
pub const RESERVED0: u16 = 0x0FF8;
/// Version bits.
pub const VERSION: u16 = 0x0007;
/// The flags/version word of NVGRE: K only.
pub const NVGRE_FLAGS: u16 = FLAG_K;
/// Protocol type: transparent Ethernet bridging.
pub const PROTO_TEB: u16 = 0x6558;
/// Largest VSID (24 bits).
pub const MAX_VSID: u32 = 0xFF_FFFF;

/// What keeps a GRE header from being an NVGRE header, in the order [`Packet::nvgre_defect`]
/// checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Defect {
    /// Version bits not 0.
    Version,
    /// C, R or S set, K clear, or a reserved0 bit set.
    Flags,
    /// Protocol type not 0x6558.
    Protocol,
}

impl Defect {
    fn describe(self) -> &'static str {
        match self {
            Defect::Version => "gre version not 0",
            Defect::Flags => "gre flags not K only",
            Defect::Protocol => "gre protocol not 0x6558",
        }
    }
}

/// A zero-copy view of a GRE header and its payload.
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

    /// Checks that the buffer holds the base header and the optional fields its C, K and S
    /// bits announce.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        Error::check_len("gre header", BASE_LEN, len)?;
        Error::check_len("gre optional fields", self.header_len(), len)
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn read_u16(&self, at: std::ops::Range<usize>) -> u16 {
        let d = &self.buffer.as_ref()[at];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The flags/version word.
    pub fn flags_version(&self) -> u16 {
        self.read_u16(field::FLAGS_VER)
    }

    /// The version (3 bits).
    pub fn version(&self) -> u8 {
        (self.flags_version() & VERSION) as u8
    }

    /// Protocol type of the payload.
    pub fn protocol(&self) -> u16 {
        self.read_u16(field::PROTOCOL)
    }

    /// Header length from the C, K and S bits: 4, plus 4 for each present.
    pub fn header_len(&self) -> usize {
        let f = self.flags_version();
        BASE_LEN
            + [FLAG_C, FLAG_K, FLAG_S]
                .iter()
                .filter(|&&b| f & b != 0)
                .count()
                * 4
    }

    /// `None` for an NVGRE header (first word 0x2000 6558), else the first thing wrong.
    pub fn nvgre_defect(&self) -> Option<Defect> {
        let f = self.flags_version();
        if f & VERSION != 0 {
            Some(Defect::Version)
        } else if f != NVGRE_FLAGS {
            Some(Defect::Flags)
        } else if self.protocol() != PROTO_TEB {
            Some(Defect::Protocol)
        } else {
            None
        }
    }

    /// The key of an NVGRE-shaped header (bytes 4..8; meaningless unless K = 1 and C = 0).
    pub fn key(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::NVGRE_KEY];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// The VSID: the key's upper 24 bits.
    pub fn vsid(&self) -> u32 {
        self.key() >> 8
    }

    /// The FlowID: the key's low 8 bits.
    pub fn flow_id(&self) -> u8 {
        self.key() as u8
    }

    /// The payload after the header ([`header_len`](Self::header_len)).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the flags/version word as is.
    pub fn set_flags_version(&mut self, value: u16) {
        self.buffer.as_mut()[field::FLAGS_VER].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the protocol type.
    pub fn set_protocol(&mut self, value: u16) {
        self.buffer.as_mut()[field::PROTOCOL].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the key of an NVGRE-shaped header from VSID and FlowID.
    ///
    /// # Panics
    ///
    /// If `vsid` exceeds 24 bits.
    pub fn set_vsid_flow_id(&mut self, vsid: u32, flow_id: u8) {
        assert!(vsid <= MAX_VSID, "VSID {vsid:#x} exceeds 24 bits");
        let key = vsid << 8 | u32::from(flow_id);
        self.buffer.as_mut()[field::NVGRE_KEY].copy_from_slice(&key.to_be_bytes());
    }
}

/// A parsed NVGRE header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Virtual subnet ID (24 bits).
    pub vsid: u32,
    /// Per-flow entropy (0 when unused).
    pub flow_id: u8,
}

impl Repr {
    /// Parses a checked header. Fails with [`Error::Unsupported`] for anything but NVGRE
    /// (see [`Packet::nvgre_defect`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if let Some(defect) = packet.nvgre_defect() {
            return Err(Error::Unsupported(defect.describe()));
        }
        Ok(Repr {
            vsid: packet.vsid(),
            flow_id: packet.flow_id(),
        })
    }

    /// Header length this representation emits (8).
    pub const fn buffer_len(&self) -> usize {
        NVGRE_HEADER_LEN
    }

    /// Writes the 8-byte NVGRE header into the front of `packet`.
    ///
    /// # Panics
    ///
    /// If the VSID exceeds 24 bits or the buffer is shorter than 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_flags_version(NVGRE_FLAGS);
        packet.set_protocol(PROTO_TEB);
        packet.set_vsid_flow_id(self.vsid, self.flow_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;

    /// wire-formats.md §2.2: VSID 0x123456, FlowID 0xAB.
    const EXAMPLE: &str = "20 00 65 58 12 34 56 ab";

    #[test]
    fn example_round_trip() {
        let bytes = hex(EXAMPLE);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!((packet.header_len(), packet.nvgre_defect()), (8, None));
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            Repr {
                vsid: 0x123456,
                flow_id: 0xAB
            }
        );
        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes);
    }

    #[test]
    fn defects() {
        let cases: [(u16, u16, Option<Defect>, usize); 8] = [
            (0x2000, 0x6558, None, 8),
            (0xA000, 0x6558, Some(Defect::Flags), 12), // C
            (0x3000, 0x6558, Some(Defect::Flags), 12), // S
            (0x6000, 0x6558, Some(Defect::Flags), 8),  // R
            (0x0000, 0x6558, Some(Defect::Flags), 4),  // no key
            (0x2008, 0x6558, Some(Defect::Flags), 8),  // reserved0
            (0x2001, 0x6558, Some(Defect::Version), 8),
            (0x2000, 0x0800, Some(Defect::Protocol), 8),
        ];
        for (flags, proto, defect, len) in cases {
            let mut buf = [0u8; 16];
            let mut p = Packet::new_unchecked(&mut buf[..]);
            p.set_flags_version(flags);
            p.set_protocol(proto);
            let p = Packet::new_checked(&buf[..]).unwrap();
            assert_eq!(
                (p.nvgre_defect(), p.header_len()),
                (defect, len),
                "{flags:#x}"
            );
            let parsed = Repr::parse(&p);
            match defect {
                None => assert!(parsed.is_ok()),
                Some(d) => assert_eq!(parsed, Err(Error::Unsupported(d.describe()))),
            }
        }
    }

    #[test]
    fn truncated() {
        let bytes = hex(EXAMPLE);
        assert!(matches!(
            Packet::new_checked(&bytes[..3]),
            Err(Error::Truncated {
                what: "gre header",
                ..
            })
        ));
        assert_eq!(
            Packet::new_checked(&bytes[..7]),
            Err(Error::Truncated {
                what: "gre optional fields",
                needed: 8,
                got: 7
            })
        );
    }
}
