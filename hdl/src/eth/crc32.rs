//! CRC-32 (Ethernet FCS) as parallel XOR networks built at elaboration time.
//!
//! Parameters: reflected polynomial 0xEDB88320 (bit 0 of each byte first), register initialised
//! to 0xFFFFFFFF, final XOR 0xFFFFFFFF; the FCS goes on the wire least significant byte first.
//! A frame followed by its correct FCS leaves the register at [`RESIDUE_REG`] (0xDEBB20E3, the
//! well-known residue 0x2144DF1C before the final XOR).
//!
//! The register update over one byte is linear over GF(2) in (register, byte); over `k` bytes it
//! is `next = A^k·state ⊕ D_k·bytes` (`A`: one zero byte). Plain Rust computes those matrices
//! here ([`Mat32`] for the 32x32 ones, [`data_columns`] for `D_k`, cross-checked against the
//! bitwise definition as they are built), and [`xor_network`] turns a matrix into hardware:
//! output bit `j` (`<name>_b<j>` in the Verilog) is the XOR of the input bits its row selects,
//! as a tree of 3-input XORs (which maps to fewer LUTs than a flat XOR or 6-input trees). The
//! maps "advance over `j` zero bytes" ([`advance_zeros`]) and its inverse ([`unadvance_zeros`])
//! are constants of the same kind; the FCS blocks use them to handle a partial last beat without
//! one CRC network per byte count. [`crc_update`] is the whole one-cycle update of a register
//! over `k` bytes.
//!
//! [`beat_crc`] is the pipelined per-beat CRC register both FCS blocks share ([`beat_crc_from`]:
//! the same with a per-frame start value, for the RoCEv2 ICRC unit): stage 1 registers
//! the data term of the beat (as partial terms of at most 16 bytes, two on a 64-bit beat, bytes
//! gated by `tkeep` inside the trees), stage 2 closes the loop `state ← A^W·state ⊕ Σ partials`,
//! whose feedback is about 16 register bits plus the partials per output bit.
//!
//! - Cost: each output bit of a `k`-byte data network XORs about `4k` input bits (about 2,500
//!   LUTs at 512 bits); measured inside the rows `eth_fcs_check` and `eth_fcs_append` of
//!   results/AREA.md.
//! - Golden model: `nicgen_model::crc32`; test: `testbench/tests/eth/crc32.rs`, the unit tests
//!   in this file (against a bitwise software CRC) and, through the blocks,
//!   `testbench/tests/eth/eth_fcs_check.rs`, `testbench/tests/eth/eth_fcs_append.rs` and
//!   `testbench/tests/roce/icrc.rs`.

use nicgen_edsl::prelude::*;

/// Reflected generator polynomial.
pub const POLY: u32 = 0xEDB8_8320;
/// Initial register value.
pub const INIT: u32 = 0xFFFF_FFFF;
/// Final XOR.
pub const XOROUT: u32 = 0xFFFF_FFFF;
/// Register value after a frame and its correct FCS (before the final XOR).
pub const RESIDUE_REG: u32 = 0xDEBB_20E3;

/// The register after one more byte (bitwise definition; the reference for everything else).
pub fn byte_step(mut state: u32, byte: u8) -> u32 {
    state ^= u32::from(byte);
    for _ in 0..8 {
        state = if state & 1 != 0 {
            (state >> 1) ^ POLY
        } else {
            state >> 1
        };
    }
    state
}

/// The register after `bytes` starting from `state` (no final XOR).
pub fn bytes_step(state: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(state, |s, &b| byte_step(s, b))
}

/// A 32x32 matrix over GF(2): `cols[k]` is the image of input bit `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mat32 {
    pub cols: [u32; 32],
}

impl Mat32 {
    pub fn identity() -> Mat32 {
        let mut cols = [0u32; 32];
        for (k, c) in cols.iter_mut().enumerate() {
            *c = 1 << k;
        }
        Mat32 { cols }
    }

    /// The matrix of a linear map given as a function.
    pub fn of(f: impl Fn(u32) -> u32) -> Mat32 {
        let mut cols = [0u32; 32];
        for (k, c) in cols.iter_mut().enumerate() {
            *c = f(1 << k);
        }
        Mat32 { cols }
    }

    /// `M·v`.
    pub fn apply(&self, v: u32) -> u32 {
        let mut acc = 0;
        for (k, c) in self.cols.iter().enumerate() {
            if v >> k & 1 == 1 {
                acc ^= c;
            }
        }
        acc
    }

    /// `self·o` (apply `o` first).
    pub fn mul(&self, o: &Mat32) -> Mat32 {
        let mut cols = [0u32; 32];
        for (k, c) in cols.iter_mut().enumerate() {
            *c = self.apply(o.cols[k]);
        }
        Mat32 { cols }
    }

    /// `self^e`.
    pub fn pow(&self, mut e: u64) -> Mat32 {
        let mut base = *self;
        let mut acc = Mat32::identity();
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.mul(&base);
            }
            base = base.mul(&base);
            e >>= 1;
        }
        acc
    }

    /// The inverse (Gauss-Jordan), or `None` when singular.
    pub fn inverse(&self) -> Option<Mat32> {
        // Rows of the augmented matrix [M | I]: row j = (row j of M, e_j).
        let mut rows: Vec<(u32, u32)> = (0..32).map(|j| (self.row(j), 1u32 << j)).collect();
        for col in 0..32 {
            let p = (col..32).find(|&r| rows[r].0 >> col & 1 == 1)?;
            rows.swap(col, p);
            let pivot = rows[col];
            for (r, row) in rows.iter_mut().enumerate() {
                if r != col && row.0 >> col & 1 == 1 {
                    row.0 ^= pivot.0;
                    row.1 ^= pivot.1;
                }
            }
        }
        // Now row j of the right half is row j of the inverse.
        let mut cols = [0u32; 32];
        for (j, (_, inv_row)) in rows.iter().enumerate() {
            for (k, c) in cols.iter_mut().enumerate() {
                if inv_row >> k & 1 == 1 {
                    *c |= 1 << j;
                }
            }
        }
        Some(Mat32 { cols })
    }

    /// Which input bits feed output bit `j`.
    pub fn row(&self, j: usize) -> u32 {
        (0..32)
            .filter(|&k| self.cols[k] >> j & 1 == 1)
            .fold(0, |acc, k| acc | 1 << k)
    }
}

/// The register map of one zero byte: `A` with `A·s = byte_step(s, 0)`.
pub fn zero_byte() -> Mat32 {
    Mat32::of(|s| byte_step(s, 0))
}

/// `A^j`: advance the register over `j` zero bytes.
pub fn advance_zeros(j: u64) -> Mat32 {
    zero_byte().pow(j)
}

/// `A^-j`: undo an advance over `j` zero bytes (`A` is invertible: the polynomial has a
/// non-zero constant term).
pub fn unadvance_zeros(j: u64) -> Mat32 {
    zero_byte()
        .inverse()
        .expect("the CRC-32 zero-byte map is invertible")
        .pow(j)
}

/// `D_k`: the image of each of the `8k` data bits (byte 0 = bits 7:0) when `k` bytes are fed to
/// a zero register. The register after `k` bytes is `A^k·state ⊕ Σ data_columns[i]·bit_i`.
pub fn data_columns(k: usize) -> Vec<u32> {
    // A byte is XORed into the register and then shifted like a zero byte, so data bit `b` of
    // the last byte maps to column `b` of `A`, and of byte `q` to column `b` of `A^(k-q)`.
    let a = zero_byte();
    let mut cols = vec![0u32; 8 * k];
    let mut after = a;
    for q in (0..k).rev() {
        cols[8 * q..8 * q + 8].copy_from_slice(&after.cols[..8]);
        after = a.mul(&after);
    }
    // Cross-check against the bitwise definition before any hardware is built from it: rustc
    // 1.95 at opt-level 3 miscompiles a form of this function that feeds `byte_step(0, 1 << b)`
    // through `Mat32::apply` (every column comes out zero).
    let data: Vec<u8> = (0..k)
        .map(|i| (i as u8).wrapping_mul(0x9D) ^ 0x5B)
        .collect();
    let mut sum = 0u32;
    for (i, c) in cols.iter().enumerate() {
        if data[i / 8] >> (i % 8) & 1 == 1 {
            sum ^= c;
        }
    }
    assert_eq!(
        sum,
        bytes_step(0, &data),
        "CRC-32 data matrix for {k} bytes fails its self-check (miscompiled elaboration code?)"
    );
    cols
}

/// `A^j·RESIDUE_REG` for `j = 0..n`: the register a good frame leaves when `j` zero bytes follow
/// its FCS (the check's table of expected values, one per zero-filled tail length).
pub fn residue_after_zeros(n: usize) -> Vec<u32> {
    let a = zero_byte();
    let mut v = Vec::with_capacity(n);
    let mut r = RESIDUE_REG;
    for _ in 0..n {
        v.push(r);
        r = a.apply(r);
    }
    v
}

// ------------------------------------------------------------------------------------------
// Hardware.

/// Fan-in of the XOR trees the networks are built from. Yosys/ABC (`synth_xilinx`) maps a flat
/// `^{...}` or a binary tree of a 512-bit CRC data term to 4,060 LUTs, a tree of 3-input XORs
/// to 2,174 (5-input: 2,331; 6-input: 2,581; ~1,700 would be ideal without sharing).
pub const XOR_FAN_IN: usize = 3;

/// XOR of `terms` as a tree of [`XOR_FAN_IN`]-input XORs (`^{^{a, b, c}, ...}`); 0 when empty.
#[track_caller]
pub fn xor_tree(mut terms: Vec<Sig>) -> Sig {
    if terms.is_empty() {
        return lit(1, 0u32);
    }
    while terms.len() > 1 {
        terms = terms
            .chunks(XOR_FAN_IN)
            .map(|c| {
                if c.len() == 1 {
                    c[0]
                } else {
                    cat(c).xor_reduce()
                }
            })
            .collect();
    }
    terms[0]
}

/// A 32-bit linear map in gates: output bit `j` is the XOR of the bits `i` of `input` whose
/// column `cols[i]` has bit `j` set. `cols.len()` must equal the input width. Output bit `j` is
/// named `<name>_b<j>` in the Verilog.
#[track_caller]
pub fn xor_network(input: Sig, cols: &[u32], name: &str) -> Sig {
    assert_eq!(
        cols.len(),
        input.width() as usize,
        "xor_network: one column per input bit"
    );
    let outs: Vec<Sig> = (0..32)
        .rev()
        .map(|j| {
            xor_tree(
                (0..cols.len())
                    .rev()
                    .filter(|&i| cols[i] >> j & 1 == 1)
                    .map(|i| input.bit(i as u32))
                    .collect(),
            )
            .named(&format!("{name}_b{j}"))
        })
        .collect();
    cat(&outs)
}

/// [`xor_network`] over the bytes of `input` that `keep` marks, the others counting as zero:
/// each byte's taps are XORed first and then ANDed with its keep bit (one gate per byte and
/// output bit). Masking the data in front of the trees instead costs 3,354 LUTs at 512 bits
/// against 2,498 this way (2,174 unmasked).
#[track_caller]
pub fn xor_network_kept(input: Sig, keep: Sig, cols: &[u32], name: &str) -> Sig {
    assert_eq!(
        cols.len(),
        input.width() as usize,
        "xor_network_kept: one column per input bit"
    );
    assert_eq!(
        keep.width() * 8,
        input.width(),
        "xor_network_kept: one keep bit per byte"
    );
    let outs: Vec<Sig> = (0..32)
        .rev()
        .map(|j| {
            let terms: Vec<Sig> = (0..keep.width())
                .rev()
                .filter_map(|byte| {
                    let taps: Vec<Sig> = (8 * byte..8 * byte + 8)
                        .rev()
                        .filter(|&i| cols[i as usize] >> j & 1 == 1)
                        .map(|i| input.bit(i))
                        .collect();
                    (!taps.is_empty()).then(|| xor_tree(taps) & keep.bit(byte))
                })
                .collect();
            xor_tree(terms).named(&format!("{name}_b{j}"))
        })
        .collect();
    cat(&outs)
}

/// `M·v` in gates (`v` 32 bits); output bits named `<name>_b<j>`.
#[track_caller]
pub fn apply_mat(m: &Mat32, v: Sig, name: &str) -> Sig {
    xor_network(v, &m.cols, name)
}

/// The register after `bytes` (8k bits, byte 0 = bits 7:0, fed first) from `state`, in one
/// cycle: one XOR reduction per output bit over the selected state and data bits.
#[track_caller]
pub fn crc_update(state: Sig, bytes: Sig) -> Sig {
    let k = (bytes.width() / 8) as usize;
    let mut cols = advance_zeros(k as u64).cols.to_vec();
    cols.extend(data_columns(k));
    xor_network(cat(&[bytes, state]), &cols, "crc_next")
}

/// The data term alone: the register after `bytes` from a zero register.
#[track_caller]
pub fn crc_data_term(bytes: Sig) -> Sig {
    xor_network(
        bytes,
        &data_columns((bytes.width() / 8) as usize),
        "crc_data",
    )
}

/// `data` with the bytes whose `keep` bit is clear forced to zero (AND with the replicated keep
/// bit: no data-dependent branch in Verilator's C++).
#[track_caller]
pub fn mask_bytes(data: Sig, keep: Sig) -> Sig {
    let n = keep.width();
    let parts: Vec<Sig> = (0..n).rev().map(|i| keep.bit(i).repl(8)).collect();
    data & cat(&parts)
}

/// The last beat's byte count as a one-hot: element `v - 1` is set when a thermometer `keep`
/// (`0b0..01..1`, as a `tlast` beat's `tkeep`) has exactly `v` bits set (`<name>_is<v>`).
#[track_caller]
pub fn keep_onehot(keep: Sig, name: &str) -> Vec<Sig> {
    let n = keep.width();
    (1..=n)
        .map(|v| {
            if v == n {
                keep.bit(v - 1)
            } else {
                (keep.bit(v - 1) & !keep.bit(v)).named(&format!("{name}_is{v}"))
            }
        })
        .collect()
}

/// A `width`-bit value chosen by a one-hot (from [`keep_onehot`]): `f(v)` where element `v - 1`
/// is set; an OR of the one-hot bits per result bit (the table is folded into the wiring, no
/// adder or comparator).
#[track_caller]
pub fn onehot_value(onehot: &[Sig], width: u32, f: impl Fn(u32) -> u64) -> Sig {
    let bits: Vec<Sig> = (0..width)
        .rev()
        .map(|b| {
            let terms: Vec<Sig> = (1..=onehot.len() as u32)
                .filter(|&v| f(v) >> b & 1 == 1)
                .map(|v| onehot[v as usize - 1])
                .collect();
            match terms.len() {
                0 => lit(1, 0u32),
                1 => terms[0],
                _ => cat(&terms).or_reduce(),
            }
        })
        .collect();
    cat(&bits)
}

/// The number of set bits of a thermometer `keep`, in `bits(width)` bits (see [`keep_onehot`]).
#[track_caller]
pub fn keep_count(keep: Sig, name: &str) -> Sig {
    let w = 32 - keep.width().leading_zeros();
    onehot_value(&keep_onehot(keep, name), w, u64::from)
}

/// Bytes per data-term partial in [`beat_crc`] on a beat of `bytes` bytes: 16 on wide buses (a
/// 16-byte partial XORs ~64 bits per output), half the beat up to 8 bytes, so that a 64-bit
/// beat's data term is two 4-byte partials (one 8-byte partial would be 3-4 LUT4 levels deep
/// from the input behind its keep gating; stage 2 XORs the two partials into its feedback in
/// the same number of levels).
pub fn part_bytes(bytes: u32) -> u32 {
    if bytes <= 8 {
        bytes.div_ceil(2)
    } else {
        16
    }
}

/// The pipelined CRC register over a stream of beats (all registers advance on `adv`).
///
/// `data`/`keep` is the beat; bytes whose `keep` bit is clear count as zero. `take` says a beat
/// enters this cycle (`adv` must be high), `first` that it is the first beat of a frame (the
/// register restarts from [`INIT`]). Stage 1 registers the data term as
/// `ceil(bytes / part_bytes(bytes))` partials ([`part_bytes`]); stage 2 updates the returned
/// register: after the beat taken in advance-cycle `T`, it holds the register over the frame so
/// far, zero-filled bytes included, from cycle `T+2`.
/// Cost: `32·ceil(bytes / part_bytes(bytes)) + 34` flops and the XOR networks.
#[track_caller]
pub fn beat_crc(data: Sig, keep: Sig, take: Sig, first: Sig, adv: Sig) -> Sig {
    beat_crc_from(data, keep, take, first, None, adv)
}

/// [`beat_crc`] whose register starts a frame from a value the caller gives per frame.
///
/// `start`, presented with the first beat, is `A^W·s` (`W` bytes per beat) where `s` is the
/// register before the frame's byte 0: the update `state ← A^W·state ⊕ data` then starts from
/// `s`. It is registered beside the stage-1 partials (32 more flops); `None` is [`INIT`], a
/// constant. A unit whose CRC starts inside the frame (the ICRC at the IP header) gives
/// `A^W·A^-off·seed` and zeroes the `off` bytes in front through `keep`.
#[track_caller]
pub fn beat_crc_from(
    data: Sig,
    keep: Sig,
    take: Sig,
    first: Sig,
    start: Option<Sig>,
    adv: Sig,
) -> Sig {
    let bytes = data.width() / 8;
    let cols = data_columns(bytes as usize);
    let pb = part_bytes(bytes);
    let parts: Vec<Sig> = (0..bytes.div_ceil(pb))
        .map(|g| {
            let lo = g * pb;
            let hi = (lo + pb).min(bytes);
            let term = xor_network_kept(
                data.slice(8 * hi - 1, 8 * lo),
                keep.slice(hi - 1, lo),
                &cols[8 * lo as usize..8 * hi as usize],
                &format!("crc_part{g}_d"),
            );
            let r = reg(32).enable(adv).named(&format!("crc_part{g}"));
            r.set(term);
            r
        })
        .collect();
    let v1 = reg_init(1, 0u32).enable(adv).named("crc_v1");
    v1.set(take);
    let first1 = reg(1).enable(adv).named("crc_first1");
    first1.set(first);
    let state = reg(32).enable(adv).named("crc_state");
    let adv_k = advance_zeros(bytes as u64);
    let start1 = match start {
        None => lit(32, adv_k.apply(INIT)),
        Some(s) => {
            let r = reg(32).enable(adv).named("crc_start1");
            r.set(s);
            r
        }
    };
    let from = mux(first1, start1, apply_mat(&adv_k, state, "crc_fb")).named("crc_from");
    let sum = parts[1..].iter().fold(parts[0], |acc, p| acc ^ *p);
    state.set_if(v1, from ^ sum);
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u32) -> Vec<u8> {
        (0..n as u32)
            .map(|i| (i.wrapping_mul(131) ^ seed) as u8)
            .collect()
    }

    #[test]
    fn byte_step_is_the_zlib_crc() {
        assert_eq!(bytes_step(INIT, b"123456789") ^ XOROUT, 0xCBF4_3926);
        // A frame and its FCS (LSB first) leave the residue.
        let f = data(60, 7);
        let fcs = bytes_step(INIT, &f) ^ XOROUT;
        let mut g = f.clone();
        g.extend_from_slice(&fcs.to_le_bytes());
        assert_eq!(bytes_step(INIT, &g), RESIDUE_REG);
    }

    #[test]
    fn the_update_matrices_match_the_bytewise_crc() {
        for k in [1usize, 2, 3, 8, 64] {
            let cols = data_columns(k);
            let a = advance_zeros(k as u64);
            for seed in 0..4u32 {
                let d = data(k, seed * 77);
                let s = 0x1234_5678u32.rotate_left(seed);
                let mut want = a.apply(s);
                for (i, c) in cols.iter().enumerate() {
                    if d[i / 8] >> (i % 8) & 1 == 1 {
                        want ^= c;
                    }
                }
                assert_eq!(want, bytes_step(s, &d), "k={k} seed={seed}");
            }
        }
    }

    #[test]
    fn unadvance_undoes_zero_bytes() {
        for j in [0u64, 1, 2, 5, 63] {
            let s = 0xA5A5_0F0F ^ j as u32;
            let fwd = bytes_step(s, &vec![0; j as usize]);
            assert_eq!(advance_zeros(j).apply(s), fwd);
            assert_eq!(unadvance_zeros(j).apply(fwd), s, "j={j}");
        }
        let i = Mat32::identity();
        assert_eq!(zero_byte().mul(&unadvance_zeros(1)), i);
        assert_eq!(residue_after_zeros(3)[2], bytes_step(RESIDUE_REG, &[0, 0]));
    }
}
