//! Byte-position masks: which bytes of a beat lie at or after a frame offset.
//!
//! A beat starting at frame offset `pos` (a multiple of the bus width W) covers `pos..pos+W`.
//! Instead of a comparator per byte, a bound splits into its beat index (one compare) and its
//! byte-in-beat index (a thermometer decoder): `W` small LUTs and one compare per bound.

use nicgen_edsl::prelude::*;

/// Bytes of the beat starting at byte offset `pos` whose frame offset is `>= bound`.
pub fn ge_mask(pos: Sig, bound: Sig, bytes: u32) -> Sig {
    let lw = clog2(bytes as u64);
    if bytes == 1 {
        return pos.ge(bound);
    }
    let beat_idx = pos.slice(15, lw);
    let bound_beat = bound.slice(15, lw);
    let bound_byte = bound.slice(lw - 1, 0);
    let after = beat_idx.gt(bound_beat);
    let here = beat_idx.eq(bound_beat);
    let bits: Vec<Sig> = (0..bytes)
        .rev()
        .map(|i| after | (here & bound_byte.le(i as u64)))
        .collect();
    cat(&bits)
}

/// One-hot (or zero) mask of the byte at frame offset `at` within the beat at `pos`.
pub fn at_mask(pos: Sig, at: Sig, bytes: u32) -> Sig {
    ge_mask(pos, at, bytes) & !ge_mask(pos, at + 1u32, bytes)
}
