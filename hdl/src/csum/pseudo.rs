//! Small ones'-complement sums computed once per frame: the addresses' part of the IPv4 /
//! IPv6 pseudo-header (RFC 793 / RFC 8200 8.1), pipelined in the header parser, the
//! pseudo-header sum the checksum units make from it, and the three-operand add and fold they
//! finish with.
//!
//! Address fields are the address as a big-endian integer (IPv4 in the low 32 bits), so 16-bit
//! slices are the network-order words.
//!
//! Golden model: `nicgen_model::checksum`; test: `testbench/tests/csum/pseudo.rs`.

use nicgen_edsl::prelude::*;

/// `x + y + z` of three 16-bit values, exact in 18 bits: a carry-save layer, then one carry
/// chain (`name` names the layer's two outputs and the sum).
pub fn add3(x: Sig, y: Sig, z: Sig, name: &str) -> Sig {
    let sum = (x ^ y ^ z).named(&format!("{name}_csa_sum"));
    let carry = ((x & y) | (x & z) | (y & z)).named(&format!("{name}_csa_carry"));
    (sum.zext(18) + cat(&[carry, lit(1, 0u32)]).zext(18)).named(name)
}

/// The ones'-complement fold of `total` (16 low bits plus a few high ones) when `lo + hi`
/// carries out at most once: `lo + hi` and `lo + hi + 1` as two chains side by side, and a
/// select; so one carry chain deep.
pub fn fold_once(total: Sig, name: &str) -> Sig {
    let (hi, lo) = (total.slice(total.width() - 1, 16), total.slice(15, 0));
    let plain = (lo.zext(17) + hi.zext(17)).named(name);
    let wrapped = (lo.zext(17) + hi.zext(17) + 1u32).named(&format!("{name}_wrap"));
    mux(plain.bit(16), wrapped.slice(15, 0), plain.slice(15, 0))
}

/// Registered stages of [`address_sum_pipelined`].
pub const ADDRESS_SUM_STAGES: u32 = 4;

/// Registered stages of [`pseudo_from_address_sum`].
pub const PSEUDO_FROM_SUM_STAGES: u32 = 2;

/// Three values to two (a carry-save layer): same sum, one LUT level, no carry chain.
fn csa(a: Sig, b: Sig, c: Sig) -> (Sig, Sig) {
    let w = a.width();
    let maj = (a & b) | (a & c) | (b & c);
    (a ^ b ^ c, cat(&[maj.slice(w - 2, 0), lit(1, 0u32)]))
}

/// `levels` carry-save layers over `words` (each layer turns every three values into two).
pub(crate) fn csa_layers(mut words: Vec<Sig>, levels: u32) -> Vec<Sig> {
    for _ in 0..levels {
        if words.len() <= 2 {
            break;
        }
        let mut next = Vec::new();
        let mut it = words.chunks(3);
        for ch in &mut it {
            if ch.len() == 3 {
                let (s, c) = csa(ch[0], ch[1], ch[2]);
                next.push(s);
                next.push(c);
            } else {
                next.extend_from_slice(ch);
            }
        }
        words = next;
    }
    words
}

/// The ones'-complement sum of `addrs` (the two addresses, 256 bits, IPv4's unused words
/// already 0) as 16-bit words, folded, not complemented: the pseudo-header's address part
/// (`nicgen_model::checksum::address_sum`), [`ADDRESS_SUM_STAGES`] cycles after `addrs`.
/// Free-running (no enable, no valid: the caller delays its own valid): three carry-save
/// layers per stage for two stages (16 words to 2), then the carry chain, then the fold; so
/// no stage holds more than one carry chain or three LUT levels.
pub fn address_sum_pipelined(addrs: Sig, name: &str) -> Sig {
    // 16 words of 16 bits sum below 2^20.
    const W: u32 = 20;
    assert_eq!(
        addrs.width(),
        256,
        "address_sum_pipelined: two 128-bit addresses"
    );
    let words: Vec<Sig> = (0..16)
        .map(|k| addrs.slice(16 * k + 15, 16 * k).zext(W))
        .collect();
    let reg_all = |v: Vec<Sig>, stage: &str| -> Vec<Sig> {
        v.iter()
            .enumerate()
            .map(|(i, x)| {
                let r = reg(W).named(&format!("{name}_{stage}_{i}"));
                r.set(*x);
                r
            })
            .collect()
    };
    // 16 -> 11 -> 8 -> 6, 6 -> 4 -> 3 -> 2.
    let s1 = reg_all(csa_layers(words, 3), "p1");
    let s2 = reg_all(csa_layers(s1, 3), "p2");
    assert_eq!(s2.len(), 2);
    let total = reg(W).named(&format!("{name}_total"));
    total.set(s2[0] + s2[1]);
    // lo + hi is below 0x1000F: one end-around carry at most.
    let sum = reg(16).named(name);
    sum.set(fold_once(total, &format!("{name}_fold")));
    sum
}

/// The pseudo-header sum from the addresses' sum (`ip_sum`, as [`address_sum_pipelined`]
/// gives it), the protocol and the L4 length, [`PSEUDO_FROM_SUM_STAGES`] cycles after
/// `valid`, one per cycle, no stall: a carry-save layer and one chain, then the fold. For
/// IPv4 the L4 length fits 16 bits; for IPv6 the 32-bit upper-layer length of RFC 8200 has
/// 16 zero bits on top in a frame, so both versions add the same three words.
pub fn pseudo_from_address_sum(valid: Sig, ip_sum: Sig, proto: Sig, l4_len: Sig) -> (Sig, Sig) {
    assert_eq!(ip_sum.width(), 16, "pseudo_from_address_sum: a 16-bit sum");
    let raw = reg(18).named("pseudo_raw");
    raw.set(add3(ip_sum, proto.zext(16), l4_len, "pseudo_add"));
    let v1 = reg_init(1, 0u32).named("pseudo_raw_valid");
    v1.set(valid);
    let sum = reg(16).named("pseudo_folded");
    sum.set(fold_once(raw, "pseudo_fold"));
    let v2 = reg_init(1, 0u32).named("pseudo_folded_valid");
    v2.set(v1);
    (sum, v2)
}
