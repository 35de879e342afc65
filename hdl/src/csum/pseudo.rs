//! Small ones'-complement sums computed once per frame: constant-count word sums and the
//! IPv4 / IPv6 pseudo-header (RFC 793 / RFC 8200 8.1).
//!
//! Address fields are the address as a big-endian integer (IPv4 in the low 32 bits), so 16-bit
//! slices are the network-order words.

use nicgen_edsl::prelude::*;

/// Sum of 16-bit words with the end-around carry folded.
pub fn ones_sum(words: &[Sig]) -> Sig {
    let w = 16 + clog2(words.len().max(2) as u64) + 1;
    let mut acc = lit(w, 0u32);
    for x in words {
        acc = acc + x.zext(w);
    }
    let f = acc.slice(15, 0).zext(17) + acc.slice(w - 1, 16).zext(17);
    f.slice(15, 0) + f.bit(16).zext(16)
}

/// The IPv4 or IPv6 pseudo-header sum of a request record.
pub fn pseudo_sum(l3: Sig, src: Sig, dst: Sig, proto: Sig, l4_len: Sig) -> Sig {
    let words =
        |x: Sig, n: u32| -> Vec<Sig> { (0..n).map(|k| x.slice(16 * k + 15, 16 * k)).collect() };
    let mut v4 = words(src, 2);
    v4.extend(words(dst, 2));
    v4.push(proto.zext(16));
    v4.push(l4_len);
    let mut v6 = words(src, 8);
    v6.extend(words(dst, 8));
    v6.push(proto.zext(16));
    v6.push(l4_len);
    mux(l3.eq(2u32), ones_sum(&v6), ones_sum(&v4))
}
