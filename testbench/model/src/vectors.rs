//! Reference vectors shared by several modules' tests, and the hex-dump reader.

/// Decodes a hex dump ("45 00 00 28", "4500 0028", or with `0010:` offset labels) into bytes.
///
/// Used by the tests to paste vectors from the reference notes verbatim.
pub fn hex(dump: &str) -> Vec<u8> {
    let digits: String = dump
        .lines()
        .map(|line| match line.split_once(':') {
            Some((_, rest)) => rest,
            None => line,
        })
        .flat_map(|line| line.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("bad hex digit"))
        .collect()
}

/// scapy: TC 0x2E, flow 0x12345, hop-by-hop (PadN) / routing / destination options (PadN)
/// / TCP 40000 -> 443 with MSS, NOP, WScale, SAckOK, timestamps and "GET /\r\n".
pub const IPV6_EXT_TCP: &str = "62e1 2345 0047 0040 2001 0db8 0000 0000 0000 0000 0000 0001
    2001 0db8 0000 0000 0000 0000 0000 0002
    2b00 0104 0000 0000 3c00 0000 0000 0000 0600 0104 0000 0000
    9c40 01bb 0102 0304 a0b0 c0d0 a018 01f6 1280 0000 0204 05b4 0103 0307 0402 080a
    0000 0001 0000 0002 4745 5420 2f0d 0a";

/// scapy: first fragment (M=1, ident 0xDEADBEEF) carrying UDP 1 -> 2 "abc".
pub const IPV6_FIRST_FRAGMENT: &str = "6000 0000 0013 2c40 fe80 0000 0000 0000 0000 0000 0000 0001
     ff02 0000 0000 0000 0000 0000 0000 0001
     1100 0001 dead beef 0001 0002 000b 3ded 6162 63";

/// wire-formats.md §1.6 T1: a real ConnectX-4 Lx CNP capture (Ethernet, no FCS; the last four
/// bytes are the ICRC). IPv4 checksum 0x9161, UDP 0 -> 4791 with checksum 0.
pub const T1: &str = "e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2
                      003c 718c 4000 4011 9161 0a00 1101 0a00
                      1201 0000 12b7 0028 0000 8100 ffff 4000
                      0118 0000 0000 0000 0000 0000 0000 0000
                      0000 0000 0000 82fd 002a";

/// wire-formats.md §1.6 T2: scapy's RoCE UC SEND vector. IPv4 checksum 0xB4D5; UDP checksum
/// field 0, computed value 0xACA2.
pub const T2: &str = "248a07a8fa22 248a07a8fa22 0800
                      4501 0040 0478 4000 4011 b4d5 c0a8 0007 c0a8 0007
                      c000 12b7 002c 0000
                      2460 ffff 0000 00d3 00cf 1710
                      4630 818b e289 35d9 0e9a 9550 5401 be88 5e50 0000
                      78f3 53f3";
