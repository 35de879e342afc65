//! Small ones'-complement sums computed once per frame: the IPv4 / IPv6 pseudo-header
//! (RFC 793 / RFC 8200 8.1), pipelined, and the three-operand add and fold the checksum units
//! finish with.
//!
//! Address fields are the address as a big-endian integer (IPv4 in the low 32 bits), so 16-bit
//! slices are the network-order words.

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

/// Registered stages of [`pseudo_sum_pipelined`].
pub const PSEUDO_STAGES: u32 = 4;

/// Three values to two (a carry-save layer): same sum, one LUT level, no carry chain.
fn csa(a: Sig, b: Sig, c: Sig) -> (Sig, Sig) {
    let w = a.width();
    let maj = (a & b) | (a & c) | (b & c);
    (a ^ b ^ c, cat(&[maj.slice(w - 2, 0), lit(1, 0u32)]))
}

/// `levels` carry-save layers over `words` (each layer turns every three values into two).
fn csa_layers(mut words: Vec<Sig>, levels: u32) -> Vec<Sig> {
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

/// The IPv4 or IPv6 pseudo-header sum over [`PSEUDO_STAGES`] registered stages, for a request presented with
/// `valid` (the result is valid `PSEUDO_STAGES` cycles later, one per request per cycle, no
/// stall). The 18 words (IPv6; IPv4 uses 6 and zeros) go through carry-save layers, two or three
/// per stage, then one carry chain, then the fold as two chains side by side and a select, so
/// no stage holds more than one carry chain: this sum is the longest path of the checksum units
/// when done in one cycle (53 MHz on ECP5).
///
/// `v6` says the request is IPv6 (else IPv4): it gates 192 bits of the first stage, so pass a
/// flop decoded before the request's register, not a decode of a registered `l3` (that decode,
/// one LUT, with its fan-out on both sides, was a worst path of the TX path).
pub fn pseudo_sum_pipelined(
    valid: Sig,
    v6: Sig,
    src: Sig,
    dst: Sig,
    proto: Sig,
    l4_len: Sig,
) -> (Sig, Sig) {
    // 18 words of 16 bits sum below 2^21.
    const W: u32 = 21;
    let words =
        |x: Sig, n: u32| -> Vec<Sig> { (0..n).map(|k| x.slice(16 * k + 15, 16 * k)).collect() };
    assert_eq!(v6.width(), 1, "pseudo_sum_pipelined: v6 is one bit");
    let mut all = words(src, 8);
    all.extend(words(dst, 8));
    // IPv4: the addresses' low 32 bits only.
    let in_words: Vec<Sig> = all
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let k = i % 8;
            if k < 2 {
                x.zext(W)
            } else {
                mux(v6, *x, lit(16, 0u32)).zext(W)
            }
        })
        .chain([proto.zext(W), l4_len.zext(W)])
        .collect();
    let reg_all = |v: Vec<Sig>, name: &str| -> Vec<Sig> {
        v.iter()
            .enumerate()
            .map(|(i, x)| {
                let r = reg(W).named(&format!("{name}{i}"));
                r.set(*x);
                r
            })
            .collect()
    };
    let stage_valid = |v: Sig, name: &str| {
        let r = reg_init(1, 0u32).named(name);
        r.set(v);
        r
    };
    // 18 -> 12 -> 8, 8 -> 6 -> 4 -> 3, 3 -> 2 and the carry chain.
    let s1 = reg_all(csa_layers(in_words, 2), "pseudo_p1_");
    let v1 = stage_valid(valid, "pseudo_p1_valid");
    let s2 = reg_all(csa_layers(s1, 3), "pseudo_p2_");
    let v2 = stage_valid(v1, "pseudo_p2_valid");
    let last = csa_layers(s2, 1);
    let total = reg(W).named("pseudo_total");
    total.set(last[0] + last[1]);
    let v3 = stage_valid(v2, "pseudo_total_valid");
    // Fold: lo + hi is below 0x1001F, so one end-around carry at most.
    let sum = reg(16).named("pseudo_folded");
    sum.set(fold_once(total, "pseudo_fold"));
    let v4 = stage_valid(v3, "pseudo_folded_valid");
    (sum, v4)
}
