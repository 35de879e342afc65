//! VXLAN (RFC 7348): the 8-byte header between an outer UDP datagram and an inner Ethernet
//! frame (without FCS).
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | 1 | flags: R R R R I R R R (I = 0x08, "VNI valid") |
//! | 1 | 3 | reserved |
//! | 4 | 3 | VNI (VXLAN network identifier, 24 bits) |
//! | 7 | 1 | reserved |
//!
//! The outer UDP destination port is 4789 ([`DEFAULT_PORT`]) unless the NIC is configured with
//! another. A receiver ignores the reserved bits and requires I = 1 ([`Repr::parse`] fails
//! otherwise); an encapsulator writes the reserved bits as zero ([`Repr::emit`]).

use crate::error::{Error, Result};

mod field {
    use std::ops::Range;

    pub const FLAGS: usize = 0;
    pub const RESERVED0: Range<usize> = 1..4;
    pub const VNI: Range<usize> = 4..7;
    pub const RESERVED1: usize = 7;
    pub const PAYLOAD: usize = 8;
}

/// Length of the header.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// The I flag ("VNI valid") in byte 0.
pub const FLAG_I: u8 = 0x08;
/// The IANA UDP destination port.
pub const DEFAULT_PORT: u16 = 4789;
/// Largest VNI (24 bits).
pub const MAX_VNI: u32 = 0xFF_FFFF;

/// A zero-copy view of a VXLAN header and the inner frame after it.
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

    /// Checks that the buffer holds the 8-byte header.
    pub fn check_len(&self) -> Result<()> {
        Error::check_len("vxlan header", HEADER_LEN, self.buffer.as_ref().len())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The flags byte.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// Whether the I flag ("VNI valid") is set.
    pub fn i_flag(&self) -> bool {
        self.flags() & FLAG_I != 0
    }

    /// The VNI (24 bits).
    pub fn vni(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::VNI];
        u32::from_be_bytes([0, d[0], d[1], d[2]])
    }

    /// The inner frame.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the flags byte as is.
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Sets the VNI.
    ///
    /// # Panics
    ///
    /// If `vni` exceeds 24 bits.
    pub fn set_vni(&mut self, vni: u32) {
        assert!(vni <= MAX_VNI, "VNI {vni:#x} exceeds 24 bits");
        self.buffer.as_mut()[field::VNI].copy_from_slice(&vni.to_be_bytes()[1..]);
    }

    /// Zeroes both reserved fields.
    pub fn clear_reserved(&mut self) {
        let data = self.buffer.as_mut();
        data[field::RESERVED0].fill(0);
        data[field::RESERVED1] = 0;
    }

    /// The inner frame, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// A parsed VXLAN header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The VNI (24 bits).
    pub vni: u32,
}

impl Repr {
    /// Parses a checked header. Fails with [`Error::Malformed`] when the I flag is clear;
    /// reserved bits are ignored.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if !packet.i_flag() {
            return Err(Error::Malformed("vxlan I flag clear"));
        }
        Ok(Repr { vni: packet.vni() })
    }

    /// Header length this representation emits (8).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (flags 0x08, reserved bits zero, the VNI) into the front of `packet`.
    ///
    /// # Panics
    ///
    /// If the VNI exceeds 24 bits or the buffer is shorter than 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_flags(FLAG_I);
        packet.clear_reserved();
        packet.set_vni(self.vni);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;

    /// The VXLAN header of wire-formats.md §2.5's worked example (VNI 0x123456).
    const EXAMPLE: &str = "08 00 00 00 12 34 56 00";

    #[test]
    fn example_round_trip() {
        let bytes = hex(EXAMPLE);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.i_flag());
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(repr, Repr { vni: 0x123456 });
        let mut buf = vec![0xA5; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes);
    }

    #[test]
    fn reserved_bits_are_ignored_and_i_is_required() {
        let mut bytes = hex("0c ff ff ff 00 00 07 ff");
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.vni, 7);
        bytes[0] = 0xF7; // every bit but I
        assert_eq!(
            Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
            Err(Error::Malformed("vxlan I flag clear"))
        );
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&[0x08u8; 7][..]),
            Err(Error::Truncated {
                what: "vxlan header",
                needed: 8,
                got: 7
            })
        );
    }
}
