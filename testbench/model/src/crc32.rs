//! The Ethernet frame check sequence: CRC-32 (IEEE 802.3).
//!
//! Parameters: polynomial 0x04C11DB7 processed bit-reflected (0xEDB88320, least significant bit
//! of each byte first), initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF. This is the CRC of zlib
//! and of `crc32("123456789") == 0xCBF43926`.
//!
//! On the wire the FCS follows the frame **least significant byte first**: the CRC value
//! 0x2A00FD82 is sent as `82 fd 00 2a` (see [`fcs`]). The CRC over a frame followed by its
//! correct FCS is the constant [`RESIDUE`].
//!
//! The same CRC, run over a masked copy of the packet, is the RoCEv2 ICRC; [`Crc32`] lets such
//! a caller feed the bytes in pieces.

/// CRC of (frame ‖ its correct FCS) for every frame; what a receiver compares against.
pub const RESIDUE: u32 = 0x2144_DF1C;

/// Byte-at-a-time lookup table for the reflected polynomial, built at compile time.
const TABLE: [u32; 256] = build_table();

const fn build_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
}

/// An incremental CRC-32 computation.
///
/// ```
/// use nicgen_model::crc32::{crc32, Crc32};
/// let mut crc = Crc32::new();
/// crc.update(b"1234");
/// crc.update(b"56789");
/// assert_eq!(crc.finish(), crc32(b"123456789"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crc32 {
    /// The running register, before the final XOR.
    state: u32,
}

impl Crc32 {
    /// A computation with the initial value 0xFFFFFFFF loaded.
    pub fn new() -> Self {
        Crc32 { state: 0xFFFF_FFFF }
    }

    /// Feeds `data`.
    pub fn update(&mut self, data: &[u8]) {
        for &byte in data {
            self.state = TABLE[usize::from((self.state as u8) ^ byte)] ^ (self.state >> 8);
        }
    }

    /// The CRC of everything fed so far (final XOR applied); the computation can continue.
    pub fn finish(&self) -> u32 {
        self.state ^ 0xFFFF_FFFF
    }
}

impl Default for Crc32 {
    fn default() -> Self {
        Self::new()
    }
}

/// CRC-32 of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = Crc32::new();
    crc.update(data);
    crc.finish()
}

/// The four FCS bytes of `frame` (destination MAC through the end of the payload/padding),
/// in wire order.
pub fn fcs(frame: &[u8]) -> [u8; 4] {
    crc32(frame).to_le_bytes()
}

/// Appends the FCS to `frame`.
pub fn append_fcs(frame: &mut Vec<u8>) {
    let fcs = fcs(frame);
    frame.extend_from_slice(&fcs);
}

/// Whether the last four bytes of `frame_with_fcs` are the correct FCS of the bytes before.
///
/// Returns `false` for buffers shorter than four bytes.
pub fn check_fcs(frame_with_fcs: &[u8]) -> bool {
    match frame_with_fcs.len().checked_sub(4) {
        Some(body) => fcs(&frame_with_fcs[..body]) == frame_with_fcs[body..],
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;

    #[test]
    fn check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(&[0]), 0xD202_EF8D);
    }

    #[test]
    fn table_matches_bitwise_definition() {
        fn bitwise(data: &[u8]) -> u32 {
            let mut c = 0xFFFF_FFFFu32;
            for &b in data {
                c ^= u32::from(b);
                for _ in 0..8 {
                    c = if c & 1 != 0 {
                        (c >> 1) ^ 0xEDB8_8320
                    } else {
                        c >> 1
                    };
                }
            }
            !c
        }
        let data: Vec<u8> = (0..300u32).map(|i| (i * 151 + 7) as u8).collect();
        for len in [0, 1, 2, 3, 4, 5, 63, 64, 299, 300] {
            assert_eq!(crc32(&data[..len]), bitwise(&data[..len]), "len {len}");
        }
    }

    #[test]
    fn fcs_is_sent_lsb_first_and_leaves_the_residue() {
        // The minimum frame: the TCP SYN of wire-formats.md §3.2 in an Ethernet frame, padded.
        let mut frame = hex("0200 0000 0002 0200 0000 0001 0800
             4500 0028 0001 0000 4006 f6cb c000 0201 c000 0202
             3039 0050 0000 0000 0000 0000 5002 ffff fb55 0000
             0000 0000 0000");
        assert_eq!(frame.len(), 60);
        let crc = crc32(&frame);
        append_fcs(&mut frame);
        assert_eq!(frame[60..], crc.to_le_bytes());
        assert!(check_fcs(&frame));
        assert_eq!(crc32(&frame), RESIDUE);
        frame[20] ^= 0x10;
        assert!(!check_fcs(&frame));
        assert!(!check_fcs(&[1, 2, 3]));
    }
}
