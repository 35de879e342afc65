//! The Toeplitz hash used for receive-side scaling (RSS), with the Microsoft input sets.
//!
//! For a 40-byte (320-bit) key K and an input of n bytes: the result starts at 0; for every
//! input bit i that is 1 (bit 0 is the most significant bit of byte 0), XOR in the 32-bit
//! window of K made of key bits i .. i+31 (key bit 0 is the most significant bit of key byte
//! 0). A 40-byte key therefore covers inputs up to 36 bytes.
//!
//! Input sets (Microsoft's definition, used by mlx5 and DPDK), all fields in network byte
//! order, **source before destination**:
//!
//! | Set | Bytes | Input |
//! |---|---|---|
//! | IPv4 2-tuple | 8 | source address, destination address |
//! | IPv4 4-tuple | 12 | source address, destination address, source port, destination port |
//! | IPv6 2-tuple | 32 | source address, destination address |
//! | IPv6 4-tuple | 36 | source address, destination address, source port, destination port |
//!
//! The mlx5 driver picks a random key per boot, so the hardware takes its key from the
//! configuration (CREATE_TIR); [`MICROSOFT_KEY`] is the verification key.

use std::net::IpAddr;

/// Length of an RSS key in bytes.
pub const KEY_LEN: usize = 40;

/// Longest input a [`KEY_LEN`]-byte key covers.
pub const MAX_INPUT_LEN: usize = KEY_LEN - 4;

/// Microsoft's RSS verification key.
pub const MICROSOFT_KEY: [u8; KEY_LEN] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// Toeplitz hash of `input` under `key`.
///
/// # Panics
///
/// If `input` is longer than [`MAX_INPUT_LEN`] bytes.
pub fn hash(key: &[u8; KEY_LEN], input: &[u8]) -> u32 {
    assert!(
        input.len() <= MAX_INPUT_LEN,
        "Toeplitz input of {} bytes is longer than the {MAX_INPUT_LEN} a {KEY_LEN}-byte key covers",
        input.len()
    );
    let key_bit = |k: usize| {
        key.get(k / 8)
            .map_or(0, |byte| u32::from(byte >> (7 - k % 8) & 1))
    };
    // The 32-bit key window that starts at the current input bit.
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    let mut result = 0;
    for (i, &byte) in input.iter().enumerate() {
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                result ^= window;
            }
            window = window << 1 | key_bit(32 + 8 * i + bit);
        }
    }
    result
}

/// The Microsoft input for a flow: source address, destination address, then, if `ports` is
/// given, source port and destination port.
///
/// # Panics
///
/// If `src` and `dst` are of different IP versions.
pub fn input(src: IpAddr, dst: IpAddr, ports: Option<(u16, u16)>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(MAX_INPUT_LEN);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            bytes.extend_from_slice(&s.octets());
            bytes.extend_from_slice(&d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            bytes.extend_from_slice(&s.octets());
            bytes.extend_from_slice(&d.octets());
        }
        _ => panic!("RSS input with mixed IP versions: {src} -> {dst}"),
    }
    if let Some((src_port, dst_port)) = ports {
        bytes.extend_from_slice(&src_port.to_be_bytes());
        bytes.extend_from_slice(&dst_port.to_be_bytes());
    }
    bytes
}

/// RSS hash of a flow: [`hash`] of [`input`].
///
/// `ports: None` gives the 2-tuple hash, `Some((src_port, dst_port))` the 4-tuple hash.
pub fn hash_flow(key: &[u8; KEY_LEN], src: IpAddr, dst: IpAddr, ports: Option<(u16, u16)>) -> u32 {
    hash(key, &input(src, dst, ports))
}

/// The Microsoft RSS verification flows, shared by every test that checks a Toeplitz hash.
/// wire-formats.md §3.6: (source, source port, destination, destination port,
/// 2-tuple hash, 4-tuple hash).
pub const MICROSOFT_V4: [(&str, u16, &str, u16, u32, u32); 5] = [
    (
        "66.9.149.187",
        2794,
        "161.142.100.80",
        1766,
        0x323e_8fc2,
        0x51cc_c178,
    ),
    (
        "199.92.111.2",
        14230,
        "65.69.140.83",
        4739,
        0xd718_262a,
        0xc626_b0ea,
    ),
    (
        "24.19.198.95",
        12898,
        "12.22.207.184",
        38024,
        0xd2d0_a5de,
        0x5c2b_394a,
    ),
    (
        "38.27.205.30",
        48228,
        "209.142.163.6",
        2217,
        0x8298_9176,
        0xafc7_327f,
    ),
    (
        "153.39.163.191",
        44251,
        "202.188.127.2",
        1303,
        0x5d18_09c5,
        0x10e8_28a2,
    ),
];

/// IPv6 flows, same columns as [`MICROSOFT_V4`].
pub const MICROSOFT_V6: [(&str, u16, &str, u16, u32, u32); 3] = [
    (
        "3ffe:2501:200:1fff::7",
        2794,
        "3ffe:2501:200:3::1",
        1766,
        0x2cc1_8cd5,
        0x4020_7d3d,
    ),
    (
        "3ffe:501:8::260:97ff:fe40:efab",
        14230,
        "ff02::1",
        4739,
        0x0f0c_461c,
        0xdde5_1bbf,
    ),
    (
        "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
        44251,
        "fe80::200:f8ff:fe21:67cf",
        38024,
        0x4b61_e985,
        0x02d1_feef,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn check(rows: &[(&str, u16, &str, u16, u32, u32)]) {
        for &(src, sport, dst, dport, two, four) in rows {
            let (s, d) = (src.parse().unwrap(), dst.parse().unwrap());
            assert_eq!(hash_flow(&MICROSOFT_KEY, s, d, None), two, "{src} -> {dst}");
            assert_eq!(
                hash_flow(&MICROSOFT_KEY, s, d, Some((sport, dport))),
                four,
                "{src}:{sport} -> {dst}:{dport}"
            );
        }
    }

    #[test]
    fn microsoft_ipv4_vectors() {
        check(&MICROSOFT_V4);
    }

    #[test]
    fn microsoft_ipv6_vectors() {
        check(&MICROSOFT_V6);
    }

    #[test]
    fn input_layout() {
        let v4 = input(
            "1.2.3.4".parse().unwrap(),
            "5.6.7.8".parse().unwrap(),
            Some((0x0102, 0x0304)),
        );
        assert_eq!(v4, [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4]);
        let v6 = input("::1".parse().unwrap(), "::2".parse().unwrap(), Some((1, 2)));
        assert_eq!(v6.len(), MAX_INPUT_LEN);
    }

    #[test]
    fn hash_is_linear_in_the_input() {
        // Toeplitz is XOR-linear: h(a ^ b) = h(a) ^ h(b); a single set bit selects one window.
        let mut a = [0u8; MAX_INPUT_LEN];
        a[0] = 0x80;
        assert_eq!(hash(&MICROSOFT_KEY, &a), 0x6d5a_56da);
        a[35] = 0x01; // the last input bit selects key bits 287..318
        let b: Vec<u8> = (0..MAX_INPUT_LEN as u8)
            .map(|i| i.wrapping_mul(77))
            .collect();
        let c: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
        assert_eq!(
            hash(&MICROSOFT_KEY, &c),
            hash(&MICROSOFT_KEY, &a) ^ hash(&MICROSOFT_KEY, &b)
        );
    }

    #[test]
    #[should_panic(expected = "longer than the 36")]
    fn rejects_long_input() {
        hash(&MICROSOFT_KEY, &[0; 37]);
    }
}
