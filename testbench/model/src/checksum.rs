//! The Internet checksum (RFC 1071): ones'-complement sums, pseudo-headers, the RFC 1624
//! incremental update, and the model of the hardware checksum stage.
//!
//! # Conventions
//!
//! * Bytes are summed as big-endian 16-bit words: byte 0 is the high byte of the first word.
//!   An odd trailing byte is the high byte of a last word whose low byte is zero.
//! * A **sum** is the ones'-complement sum, folded to 16 bits with end-around carry
//!   ([`fold`]), and **not** complemented. A **checksum** (the value written into a header)
//!   is the complement of a sum.
//! * Folding never maps 0xFFFF to 0x0000 or back. Ones'-complement arithmetic has two zeros;
//!   end-around-carry addition yields +0 (0x0000) only when every addend is 0x0000, so the sum
//!   of a buffer is 0x0000 exactly when all its bytes are zero, and any sum that is
//!   numerically a multiple of 0xFFFF (but not 0) comes out as -0 (0xFFFF).
//! * A header that carries a correct checksum sums to 0xFFFF (checksum field included).
//!
//! Sums of pieces can be joined with [`combine`] when every piece starts at an even offset of
//! the whole; a piece that starts at an odd offset contributes its sum byte-swapped
//! (`s.swap_bytes()`), because its bytes sit in the other half of each word (RFC 1071 §2(B)).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ip::IpProtocol;

/// Folds a wide accumulator of 16-bit words to 16 bits with end-around carry.
///
/// The result is 0x0000 only for `acc == 0`; a non-zero multiple of 0xFFFF folds to 0xFFFF.
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    acc as u16
}

/// Unfolded sum of big-endian 16-bit words (odd tail padded with a zero low byte).
fn accumulate(data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(2);
    let mut acc: u64 = words
        .by_ref()
        .map(|w| u64::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Ones'-complement sum of `data`, folded, not complemented.
///
/// ```
/// use nicgen_model::checksum::sum;
/// assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
/// assert_eq!(sum(&[0xFF, 0xFF, 0x00, 0x01]), 0x0001); // 0xFFFF + 1 wraps around to 1
/// ```
pub fn sum(data: &[u8]) -> u16 {
    fold(accumulate(data))
}

/// The checksum to write into a header: the complement of [`sum`].
pub fn checksum(data: &[u8]) -> u16 {
    !sum(data)
}

/// Ones'-complement sum of several sums (each folded, not complemented).
///
/// Joining the sums of consecutive pieces gives the sum of the whole when each piece starts at
/// an even offset (see the module docs for odd offsets).
pub fn combine(sums: &[u16]) -> u16 {
    fold(sums.iter().map(|&s| u64::from(s)).sum())
}

/// Sum of the IPv4 pseudo-header: source, destination, zero byte, protocol, L4 length.
///
/// `length` is the length of the TCP/UDP header plus data.
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, length: u16) -> u16 {
    let mut acc = accumulate(&src.octets()) + accumulate(&dst.octets());
    acc += u64::from(u8::from(protocol));
    acc += u64::from(length);
    fold(acc)
}

/// Sum of the IPv6 pseudo-header: source, destination, 32-bit upper-layer length, three zero
/// bytes, next header.
///
/// `length` is the upper-layer (TCP/UDP header plus data) length, without extension headers.
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: IpProtocol, length: u32) -> u16 {
    let mut acc = accumulate(&src.octets()) + accumulate(&dst.octets());
    acc += u64::from(length >> 16) + u64::from(length & 0xFFFF);
    acc += u64::from(u8::from(next_header));
    fold(acc)
}

/// Ones'-complement sum of two addresses given as big-endian integers (IPv4 in the low 32
/// bits, the rest 0), folded, not complemented: the pseudo-header's address part, which the
/// header parser reports per frame (`ip_sum`) so that the checksum units need not carry the
/// addresses. With the protocol and the L4 length added it is [`pseudo_header`].
///
/// ```
/// use nicgen_model::checksum::{address_sum, combine, pseudo_header_v4};
/// use nicgen_model::ip::IpProtocol;
/// let (s, d) = ([10, 0, 0, 1], [10, 0, 0, 2]);
/// let a = address_sum(u32::from_be_bytes(s).into(), u32::from_be_bytes(d).into());
/// assert_eq!(a, 0x0a00 + 0x0001 + 0x0a00 + 0x0002);
/// let ps = pseudo_header_v4(s.into(), d.into(), IpProtocol::Udp, 28);
/// assert_eq!(combine(&[a, 17, 28]), ps);
/// ```
pub fn address_sum(src: u128, dst: u128) -> u16 {
    fold(accumulate(&src.to_be_bytes()) + accumulate(&dst.to_be_bytes()))
}

/// Pseudo-header sum for either IP version.
///
/// # Panics
///
/// If `src` and `dst` are of different IP versions, or `length` does not fit the IPv4
/// pseudo-header's 16 bits.
pub fn pseudo_header(src: IpAddr, dst: IpAddr, protocol: IpProtocol, length: u32) -> u16 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let length = u16::try_from(length).expect("IPv4 L4 length exceeds 16 bits");
            pseudo_header_v4(s, d, protocol, length)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => pseudo_header_v6(s, d, protocol, length),
        _ => panic!("pseudo-header with mixed IP versions: {src} -> {dst}"),
    }
}

/// RFC 1624 incremental update, equation 3: `HC' = ~(~HC + ~m + m')`.
///
/// `hc` is the checksum stored in the header, `old` the 16-bit word before the change and
/// `new` the word after; returns the checksum to store. Gives the same value as recomputing
/// the checksum from scratch (including the 0x0000/0xFFFF cases that RFC 1141's form got
/// wrong) as long as the covered data does not sum to +0.
pub fn update(hc: u16, old: u16, new: u16) -> u16 {
    !fold(u64::from(!hc) + u64::from(!old) + u64::from(new))
}

/// [`update`] for a field wider than 16 bits (an address, a sequence number).
///
/// `old` and `new` are the field's bytes before and after; the field must start at an even
/// offset within the checksummed data.
///
/// # Panics
///
/// If `old` and `new` differ in length.
pub fn update_bytes(hc: u16, old: &[u8], new: &[u8]) -> u16 {
    assert_eq!(
        old.len(),
        new.len(),
        "incremental update of fields of different lengths"
    );
    update(hc, sum(old), sum(new))
}

/// Model of the hardware **checksum stage**: the ones'-complement sum of every byte of
/// `frame`, as big-endian 16-bit words (byte 0 is the high byte of the first word; an odd last
/// byte is padded with a zero low byte), folded to 16 bits with end-around carry and **not**
/// complemented.
///
/// The folding convention is exactly that of [`sum`]: an all-zero frame (or an empty one) gives
/// 0x0000, a frame of 0xFF bytes gives 0xFFFF (ones'-complement -0), and the stage never turns
/// 0xFFFF into 0x0000 or 0x0000 into 0xFFFF. Whoever uses the result (RX checksum-complete
/// reporting, a checksum check that expects 0xFFFF) applies its own offsets and complements.
pub fn stream_csum(frame: &[u8]) -> u16 {
    sum(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;

    /// The IPv4 header of wire-formats.md §3.1, checksum field included.
    const IPV4_HEADER: &str = "45 00 00 28 00 01 00 00 40 06 f6 cb c0 00 02 01 c0 00 02 02";

    #[test]
    fn ipv4_header_checksum_vector() {
        let mut header = hex(IPV4_HEADER);
        assert_eq!(sum(&header), 0xFFFF, "a valid header sums to 0xFFFF");
        header[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(checksum(&header), 0xF6CB);
    }

    #[test]
    fn odd_tail_is_the_high_byte() {
        assert_eq!(sum(&[0x01]), 0x0100);
        assert_eq!(sum(&[0x00, 0x01, 0x02]), 0x0201);
        assert_eq!(sum(&[]), 0x0000);
    }

    #[test]
    fn fold_keeps_both_zeros_apart() {
        assert_eq!(fold(0), 0x0000);
        assert_eq!(fold(0xFFFF), 0xFFFF);
        assert_eq!(fold(0x1_FFFE), 0xFFFF);
        assert_eq!(fold(0xFFFF_FFFF), 0xFFFF);
        assert_eq!(fold(0x1_0000), 0x0001);
    }

    #[test]
    fn stream_csum_edge_frames() {
        assert_eq!(stream_csum(&[0u8; 64]), 0x0000);
        assert_eq!(stream_csum(&[0xFFu8; 64]), 0xFFFF);
        // 32 words of -0 plus the padded tail 0xFF00.
        assert_eq!(stream_csum(&[0xFFu8; 65]), 0xFF00);
        assert_eq!(stream_csum(&[]), 0x0000);
    }

    #[test]
    fn combine_matches_sum_of_whole() {
        let data: Vec<u8> = (0..=255u8)
            .cycle()
            .take(1001)
            .map(|b| b.wrapping_mul(37))
            .collect();
        for split in [0, 2, 64, 1000] {
            let (a, b) = data.split_at(split);
            assert_eq!(combine(&[sum(a), sum(b)]), sum(&data), "split at {split}");
        }
        // A piece that starts at an odd offset contributes its sum byte-swapped.
        for split in [1, 63, 999] {
            let (a, b) = data.split_at(split);
            assert_eq!(
                combine(&[sum(a), sum(b).swap_bytes()]),
                sum(&data),
                "split at {split}"
            );
        }
    }

    #[test]
    fn pseudo_headers() {
        // TCP SYN of wire-formats.md §3.2: 192.0.2.1:12345 -> 192.0.2.2:80, checksum 0xFB55.
        let syn = hex("3039 0050 0000 0000 0000 0000 5002 ffff 0000 0000");
        let ph = pseudo_header_v4(
            Ipv4Addr::new(192, 0, 2, 1),
            Ipv4Addr::new(192, 0, 2, 2),
            IpProtocol::Tcp,
            syn.len() as u16,
        );
        assert_eq!(!combine(&[ph, sum(&syn)]), 0xFB55);

        // IPv6/UDP "hello" of §3.2: checksum 0x458D.
        let udp = hex("04d2 162e 000d 0000 6865 6c6c 6f");
        let ph = pseudo_header_v6(
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
            IpProtocol::Udp,
            udp.len() as u32,
        );
        assert_eq!(!combine(&[ph, sum(&udp)]), 0x458D);
        assert_eq!(
            pseudo_header(
                "2001:db8::1".parse().unwrap(),
                "2001:db8::2".parse().unwrap(),
                IpProtocol::Udp,
                13
            ),
            ph
        );
    }

    #[test]
    #[should_panic(expected = "mixed IP versions")]
    fn pseudo_header_rejects_mixed_versions() {
        pseudo_header(
            "10.0.0.1".parse().unwrap(),
            "::1".parse().unwrap(),
            IpProtocol::Udp,
            8,
        );
    }

    #[test]
    fn incremental_update_matches_recompute() {
        let mut header = hex(IPV4_HEADER);
        // Rewrite the identification field (word 2) through every value class, including
        // those that drive the checksum to 0x0000 and 0xFFFF.
        let mut seed = 0x1234_5678u32;
        let mut values: Vec<u16> = vec![0x0000, 0xFFFF, 0x0001, 0xFFFE];
        for _ in 0..2000 {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            values.push((seed >> 16) as u16);
        }
        // The identification that makes the header sum 0xFFFF, i.e. the checksum 0x0000.
        let mut rest = header.clone();
        rest[4..6].copy_from_slice(&[0, 0]);
        rest[10..12].copy_from_slice(&[0, 0]);
        values.push(!sum(&rest));
        for &new in &values {
            let old = u16::from_be_bytes([header[4], header[5]]);
            let hc = u16::from_be_bytes([header[10], header[11]]);
            header[4..6].copy_from_slice(&new.to_be_bytes());
            let updated = update(hc, old, new);
            header[10..12].copy_from_slice(&[0, 0]);
            assert_eq!(updated, checksum(&header), "ident {old:#06x} -> {new:#06x}");
            header[10..12].copy_from_slice(&updated.to_be_bytes());
            assert_eq!(sum(&header), 0xFFFF);
        }
    }

    #[test]
    fn incremental_update_of_an_address() {
        let mut header = hex(IPV4_HEADER);
        let hc = u16::from_be_bytes([header[10], header[11]]);
        let old = header[12..16].to_vec();
        let new = [10, 1, 2, 3];
        header[12..16].copy_from_slice(&new);
        let updated = update_bytes(hc, &old, &new);
        header[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(updated, checksum(&header));
    }
}
