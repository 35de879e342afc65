//! Byte-position masks: which bytes of a beat lie at or after a frame offset.
//!
//! [`ge_mask`] is the definition (a compare against the beat's offset); the checksum units use
//! [`ge_mask_tracked`], which gives the same mask from registers (see there), and
//! [`eq_mask_tracked_with`], the one-hot of the byte at the bound, from registers too. Tracking
//! from beat to beat keeps every mask one LUT from flops (docs/TIMING.md, rule 10).
//!
//! A beat starting at frame offset `pos` (a multiple of the bus width W) covers `pos..pos+W`.
//! Instead of a comparator per byte, a bound splits into its beat index (one compare) and its
//! byte-in-beat index (a thermometer decoder): `W` small LUTs and one compare per bound.
//!
//! Test: `testbench/tests/eth/byte_pos.rs` holds each tracked mask beside its definition over
//! random bounds and beats.

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

/// [`ge_mask`] for the beat being presented, tracked from beat to beat instead of compared:
/// `take` loads a frame's `bound` (the next beat is the frame's first, at offset 0), `beat`
/// moves on to the next beat. A signed counter holds `bound`'s beat index minus the current
/// beat's; "the bound's beat is this one" and "is behind" are registered from the counter's
/// value one beat ahead (`== 1`, `<= 0`, themselves kept in registers a beat ahead), and the
/// bound's byte-in-beat
/// thermometer is registered at `take`; the mask itself is registered from their next values.
/// So the mask is a register, where [`ge_mask`] puts an offset adder and two wide compares
/// before the data path. Cost: a counter of `17 - log2(W)` bits, two flags and `2 W` bits
/// (thermometer, mask) per bound.
pub fn ge_mask_tracked(bound: Sig, take: Sig, beat: Sig, bytes: u32, name: &str) -> Sig {
    ge_mask_tracked_with(bound, ge_bound_flags(bound, bytes), take, beat, bytes, name)
}

/// The two compares [`ge_mask_tracked`] makes on a bound as it loads, `{beat index == 1, beat
/// index == 0}` (2 bits): a caller whose bound comes from a register can compute them where the
/// bound is made and register them beside it ([`ge_mask_tracked_with`]), so that the tracker's
/// load logic starts at flops instead of a 13-bit compare.
pub fn ge_bound_flags(bound: Sig, bytes: u32) -> Sig {
    let beat = if bytes == 1 {
        bound
    } else {
        bound.slice(15, clog2(bytes as u64))
    };
    cat(&[beat.eq(1u32), beat.eq(0u32)])
}

/// [`ge_bound_flags`] of `base + k`, compared on `base` itself (no adder in front of the
/// compares), for a bound a constant past a register: equal whenever `base + k` does not wrap
/// (frame offsets are far below 2^16), so that an adder and two compares are not one cycle.
pub fn ge_bound_flags_plus(base: Sig, k: u32, bytes: u32) -> Sig {
    let w = base.width() + 1;
    let b = base.zext(w);
    // `base + k < t`, that is `base < t - k` (never when t <= k).
    let below = |t: u32| -> Sig {
        if t <= k {
            lit(1, 0u32)
        } else {
            b.lt((t - k) as u64)
        }
    };
    let (one, zero) = (below(2 * bytes) & !below(bytes), below(bytes));
    cat(&[one, zero])
}

/// [`ge_mask_tracked`] with the bound's [`ge_bound_flags`] given (computed ahead).
pub fn ge_mask_tracked_with(
    bound: Sig,
    flags: Sig,
    take: Sig,
    beat: Sig,
    bytes: u32,
    name: &str,
) -> Sig {
    let therm = per_byte(bound, bytes, |byte, i| byte.le(i as u64));
    let p = Pattern {
        new: therm,
        behind_too: true,
        suffix: "therm",
    };
    track(bound, flags, p, Take::one(take), beat, bytes, name)
}

/// The byte of the beat being presented whose frame offset is exactly `bound`, as a one-hot
/// register (all zero when the bound is in another beat, or when `enable`, sampled with
/// `take`, was 0): `ge(bound) & !ge(bound + 1)` without the AND, so that a consumer that puts
/// a field at the bound starts its select at a flop. Same tracking as [`ge_mask_tracked`]
/// (flags from [`ge_bound_flags`]), the take given as a [`Take`]; cost: the counter, two
/// flags and `2 W` bits.
pub fn eq_mask_tracked_with(
    bound: Sig,
    flags: Sig,
    enable: Sig,
    take: Take,
    beat: Sig,
    bytes: u32,
    name: &str,
) -> Sig {
    let onehot = per_byte(bound, bytes, |byte, i| byte.eq(i as u64)) & enable.repl(bytes);
    let p = Pattern {
        new: onehot,
        behind_too: false,
        suffix: "onehot",
    };
    track(bound, flags, p, take, beat, bytes, name)
}

/// A tracker's take: one value, as two nets the caller keeps apart (the two copies of a
/// [`Replicated`] register, [`Take::replicated`], which synthesis cannot merge), or the same
/// net twice ([`Take::one`]). The tracker's flags (`== 1`, `== 0`, "here") load on `ctl`, its
/// counter, pattern and mask (about `W + 17 - log2(W)` loads) on `wide`, so that the flags'
/// next state, a compare of the counter deep, need not start at a net of 28 loads
/// (docs/TIMING.md, rule 3).
#[derive(Clone, Copy)]
pub struct Take {
    /// For the flags (a few loads).
    pub ctl: Sig,
    /// For the counter, the pattern and the mask.
    pub wide: Sig,
}

impl Take {
    /// The same net for both.
    pub fn one(take: Sig) -> Take {
        Take {
            ctl: take,
            wide: take,
        }
    }

    /// Copy 0 of a two-copy register for the flags, copy 1 (stored complemented) for the rest.
    pub fn replicated(take: &Replicated) -> Take {
        Take {
            ctl: take.get(0),
            wide: take.get(1),
        }
    }
}

/// `f(byte-in-beat index of bound, i)` for each byte `i` of the beat (bit `i`); 1 on a one-byte
/// bus.
fn per_byte(bound: Sig, bytes: u32, f: impl Fn(Sig, u32) -> Sig) -> Sig {
    if bytes == 1 {
        return lit(1, 1u32);
    }
    let byte = bound.slice(clog2(bytes as u64) - 1, 0);
    let bits: Vec<Sig> = (0..bytes).rev().map(|i| f(byte, i)).collect();
    cat(&bits)
}

/// The bytes a tracked mask shows in the bound's own beat, registered as a bound loads.
struct Pattern {
    new: Sig,
    /// Whether beats wholly after the bound's show every byte (`ge`) or none (`eq`).
    behind_too: bool,
    /// Name of the pattern's register after the tracker's.
    suffix: &'static str,
}

/// The tracker: a signed counter holds the bound's beat index minus the current beat's;
/// "here" and "behind" are registered from its value one beat ahead, and the mask register
/// from their next values and the pattern's.
fn track(bound: Sig, flags: Sig, p: Pattern, t: Take, beat: Sig, bytes: u32, name: &str) -> Sig {
    let (take, take_w) = (t.ctl, t.wide);
    let bound_beat = if bytes == 1 {
        bound
    } else {
        bound.slice(15, clog2(bytes as u64))
    };
    let cw = bound_beat.width() + 1;
    let first = bound_beat.zext(cw);
    let c = reg(cw).named(&format!("{name}_beats"));
    c.set(mux(take_w, first, mux(beat, c - 1u32, c)));
    // `c == 1` and `c == 0`, kept in registers beside `c` (compared a beat ahead).
    let is1 = reg_init(1, 0u32).named(&format!("{name}_at1"));
    let is0 = reg_init(1, 0u32).named(&format!("{name}_at0"));
    let (first_is1, first_is0) = (flags.bit(1), flags.bit(0));
    is1.set(mux(take, first_is1, mux(beat, c.eq(2u32), is1)));
    is0.set(mux(take, first_is0, mux(beat, is1, is0)));
    let here = reg_init(1, 0u32).named(&format!("{name}_here"));
    let here_n = mux(take, first_is0, mux(beat, is1, here));
    here.set(here_n);
    let pat = reg(bytes)
        .enable(take_w)
        .named(&format!("{name}_{}", p.suffix));
    pat.set(p.new);
    let pat_n = mux(take_w, p.new, pat);
    let mut mask_n = here_n.repl(bytes) & pat_n;
    if p.behind_too {
        let behind = reg_init(1, 0u32).named(&format!("{name}_behind"));
        let behind_n = mux(take, lit(1, 0u32), mux(beat, c.msb() | is0, behind));
        behind.set(behind_n);
        mask_n = behind_n.repl(bytes) | mask_n;
    }
    let mask = reg(bytes).named(name);
    mask.set(mask_n);
    mask
}
