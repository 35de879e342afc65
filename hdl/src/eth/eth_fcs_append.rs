//! `eth_fcs_append`: TX MAC framing: pad to 60 bytes, append the FCS.
//!
//! In: frames without FCS, 1 byte or more. Out: each frame padded with zero bytes to at least 60
//! bytes, followed by the CRC-32 of the padded frame, least significant byte first:
//!
//! | Offset | Size | Field |
//! |---|---|---|
//! | 0 | L | the frame as given |
//! | L | max(0, 60 − L) | zero padding |
//! | max(L, 60) | 4 | FCS |
//!
//! - Ports: `s_axis_tdata/tkeep/tvalid/tready/tlast`, `m_axis_tdata/tkeep/tvalid/tready/tlast`
//!   (no `tuser`). `s_axis_tready` is combinational from `m_axis_tready` (the whole block
//!   advances together); every `m_axis` signal comes from a flop.
//! - Internals: a padder turns the input into the padded frame (the bytes after `tlast` count
//!   as zero, whole zero beats follow while the input waits); its beat is registered before the
//!   CRC, so its masked keep does not sit in front of the data-term trees. Its beats feed the
//!   two-stage CRC ([`super::crc32::beat_crc`]) and a delay line as deep as the CRC pipeline.
//!   The register after a last beat with `n` bytes has also run over `W − n` zero bytes (`W` =
//!   bytes per beat); the inverse of that advance, `A^-(W−n)`, is applied as `log2(W)` constant
//!   32x32 matrices, each switched in by one bit of `W − n`, [`UNADVANCE_PER_STAGE`] per pipeline
//!   register. At the end of the line the output register takes the beat with the bytes after
//!   the frame zeroed and the FCS put in: rotated once by `n mod 4`, FCS byte `(i − n) mod 4` is
//!   byte `i mod 4` of the rotated value, so byte `i` of the beat picks a fixed byte under a
//!   window mask (no per-byte 4-way mux). FCS bytes that do not fit leave in one carry beat (up
//!   to 4 below 32 bits) while the pipeline holds. The byte-count facts the end needs (`n mod 4`,
//!   spill count) are decoded at the front and travel down the line.
//! - Latency: `4 + ceil(log2(W) / UNADVANCE_PER_STAGE)` cycles from a padded beat to the output
//!   (4 at 8 bits, 7 at 64, 10 at 512; see [`latency`]).
//! - Throughput: 1 beat/cycle: a frame of `L` bytes occupies exactly
//!   `ceil((max(L, 60) + 4) / W)` output cycles, back to back; the input waits only during its
//!   padding and carry beats.
//! - Cost: the two-stage CRC, the un-advance matrices, the delay line (shift registers) and the
//!   FCS insertion; LUT/FF/Fmax per preset: results/AREA.md, row `eth_fcs_append`.
//! - Golden model: `nicgen_model::mac::fcs_append`; test: `testbench/tests/eth/eth_fcs_append.rs`.

use super::crc32::{apply_mat, beat_crc, keep_onehot, onehot_value, unadvance_zeros, XOROUT};
use crate::stream::stream_fwd_reg::PassPorts;
use crate::stream::StreamCfg;
use nicgen_edsl::prelude::*;

/// Shortest frame on the wire without FCS: what the block pads to.
pub const PAD_TO: u32 = 60;

/// Parameters of [`eth_fcs_append`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FcsAppendCfg {
    /// Bus width: 8 or a multiple of 16 bits.
    pub data_bits: u32,
}

/// Un-advance matrices between pipeline registers in [`eth_fcs_append`]: one, because two
/// 32x32 matrices in series do not fit a cycle of the presets' clocks on ECP5 (LUT4); one
/// more stage per matrix; see [`eth_fcs_append_pipelined`].
pub const UNADVANCE_PER_STAGE: u32 = 1;

/// Pipeline registers of the un-advance.
fn unadvance_stages(cfg: &FcsAppendCfg, per_stage: u32) -> u32 {
    z_bits(cfg.data_bits / 8).div_ceil(per_stage.max(1))
}

/// Bits of `W − n` (0..W−1); 0 on a one-byte bus.
fn z_bits(w: u32) -> u32 {
    32 - (w - 1).leading_zeros()
}

/// Latency in cycles from a padded beat entering the block to its leaving the output register:
/// the delay line (the padder's register, 2 CRC stages, the un-advance registers), then the
/// output register.
pub fn latency(cfg: &FcsAppendCfg, unadvance_per_stage: u32) -> u32 {
    1 + 2 + unadvance_stages(cfg, unadvance_per_stage) + 1
}

/// The block with the default pipelining ([`UNADVANCE_PER_STAGE`]).
pub fn eth_fcs_append(cfg: &FcsAppendCfg) -> Result<Block<PassPorts>, ElabError> {
    eth_fcs_append_pipelined(cfg, UNADVANCE_PER_STAGE)
}

/// The block with `unadvance_per_stage` (1..=6) un-advance matrices between pipeline registers
/// (fewer: higher Fmax, more latency and flops).
pub fn eth_fcs_append_pipelined(
    cfg: &FcsAppendCfg,
    unadvance_per_stage: u32,
) -> Result<Block<PassPorts>, ElabError> {
    let scfg = StreamCfg::new(cfg.data_bits, 0);
    scfg.check("eth_fcs_append")?;
    if !(1..=6).contains(&unadvance_per_stage) {
        return Err(ElabError::config(
            "eth_fcs_append",
            format!(
                "unadvance_per_stage {unadvance_per_stage} is outside 1..=6 (matrices between \
                 pipeline registers)"
            ),
        ));
    }
    let cfg = *cfg;
    let per_stage = unadvance_per_stage;
    let name = if per_stage == UNADVANCE_PER_STAGE {
        format!("eth_fcs_append_d{}", cfg.data_bits)
    } else {
        format!("eth_fcs_append_d{}_u{per_stage}", cfg.data_bits)
    };
    Block::build(name, scfg, move |p: PassPorts| {
        doc("TX MAC framing: pads frames to 60 bytes and appends the FCS (LSB first);");
        doc("1 beat/cycle, extra cycles only for padding and FCS carry beats.");
        let w = cfg.data_bits / 8;
        let (s, m) = (p.s_axis, p.m_axis);
        let ones = |n: u32| lit(n, (BigUint::from(1u32) << n) - 1u32);
        let stage = |d: Sig, en: Sig, name: &str| -> Sig {
            let r = reg(d.width()).enable(en).named(name);
            r.set(d);
            r
        };

        // ---- Advance: the output register is free, and no FCS carry beat is pending.
        // `out_valid` and `carrying` (`fcs_left != 0`, kept as a flop: it gates every stage's
        // enable) are two copies each: copy 0 for the control (the padder, the input's ready,
        // the valid flops), copy 1 (stored complemented) for the same two enables of the data
        // registers (the CRC, the un-advance, the delay line's payload, the output payload),
        // so that the padder's and the input's control do not sit behind one advance net of
        // some 600 loads (docs/TIMING.md, rule 3).
        let out_valid = Replicated::new("out_valid", 2, 1, Some(0));
        let carry = Replicated::new("carrying", 2, 1, Some(0));
        let (out_v, carrying) = (out_valid.get(0), carry.get(0));
        let adv_out = (!out_v | m.ready()).named("out_advance");
        let fcs_left = reg_init(3, 0u32).enable(adv_out).named("fcs_left");
        let adv = (adv_out & !carrying).named("advance");
        let adv_out_d = (out_valid.get_n(1) | m.ready()).named("out_advance_data");
        let adv_d = (adv_out_d & carry.get_n(1)).named("advance_data");

        // ---- Padder: the input frame, then zero beats up to 60 bytes.
        let padding = reg_init(1, 0u32).enable(adv).named("padding");
        s.ready().set(adv & !padding);
        let take = (adv & (padding | s.valid())).named("take");
        // Beat index within the padded frame, saturating where padding no longer matters.
        let pad_beats = PAD_TO.div_ceil(w);
        let bw = 32 - pad_beats.leading_zeros();
        let beat = reg_init(bw, 0u32).enable(take).named("beat_idx");
        // Bytes of the input frame in this beat (none while padding). The data is not masked
        // here: the CRC gates bytes by keep inside its network, and the output register zeroes
        // the rest in the LUT that also inserts the FCS (masking here cost ~500 LUTs at 512 bits).
        let keep_in = (s.keep() & (!padding).repl(w)).named("keep_in");
        let ends = (padding | s.last()).named("frame_ends");
        // The frame ends here but 60 bytes end beyond this beat: (beat + 1)·W < 60.
        let full_pad_beats = (PAD_TO - 1) / w;
        let more_pad = if full_pad_beats == 0 {
            lit(1, 0u32)
        } else {
            ends & beat.lt(full_pad_beats as u64)
        }
        .named("more_pad");
        let plast = (ends & !more_pad).named("pad_last");
        padding.set_if(take, more_pad);
        beat.set(mux(
            plast,
            lit(bw, 0u32),
            mux(beat.eq(pad_beats as u64), beat, beat + 1u32),
        ));
        // Bytes up to 60 in this beat: a constant mask per beat index.
        let pad_arms: Vec<(u64, Sig)> = (0..pad_beats)
            .map(|b| {
                let n = (PAD_TO - b * w).min(w);
                (b as u64, lit(w, (BigUint::from(1u32) << n) - 1u32))
            })
            .collect();
        let pad_keep = case(beat, &pad_arms, lit(w, 0u32)).named("pad_keep");
        let pkeep = mux(plast, keep_in | pad_keep, ones(w)).named("pkeep");
        let first = reg_init(1, 1u32).enable(take).named("first");
        first.set(plast);

        // What the end of the line needs to know about the last beat's byte count n, decoded
        // here from its one-hot and carried along: n mod 4 (FCS rotation), W − n mod 4 (FCS
        // bytes that fit) and n + 4 − W (FCS bytes that spill into carry beats).
        let onehot = keep_onehot(pkeep, "pad_tail");
        let tail0 = onehot_value(&onehot, 7, |n| {
            let spill = (n + 4).saturating_sub(w) as u64;
            spill << 4 | ((w - n) as u64 & 3) << 2 | (n as u64 & 3)
        })
        .named("tail_info");

        // ---- CRC of the padded frame; the last beat's zero tail is undone afterwards.
        // The padder's beat, registered: the CRC's data-term trees and the delay line start at
        // flops, not behind the padder's masked keep.
        let data_p = stage(s.data(), adv_d, "pad_data");
        let keep_p = stage(keep_in, adv_d, "pad_real");
        let first_p = stage(first, adv_d, "pad_first");
        let take_p = {
            let r = reg_init(1, 0u32).enable(adv).named("pad_valid");
            r.set(take);
            r
        };
        let crc = beat_crc(data_p, keep_p, take_p, first_p, adv_d);
        let zb = z_bits(w);
        let crc_final = if zb == 0 {
            crc
        } else {
            let z0 = onehot_value(&onehot, zb, |n| (w - n) as u64).named("tail_zeros");
            let z2 = stage(
                stage(stage(z0, adv_d, "tail_zeros0"), adv_d, "tail_zeros1"),
                adv_d,
                "tail_zeros2",
            );
            // The select bits travel with the partial result; a register keeps only the bits
            // that later matrices still need.
            let mut zs: Vec<Sig> = (0..zb).map(|b| z2.bit(b)).collect();
            let mut y = crc;
            for b in 0..zb {
                let mat = unadvance_zeros(1u64 << b);
                y = mux(
                    zs[b as usize],
                    apply_mat(&mat, y, &format!("unadv{b}_m")),
                    y,
                )
                .named(&format!("unadv{b}"));
                if (b + 1) % per_stage == 0 || b + 1 == zb {
                    y = stage(y, adv_d, &format!("unadv{b}_q"));
                    for (k, zk) in zs.iter_mut().enumerate().skip(b as usize + 1) {
                        *zk = stage(*zk, adv_d, &format!("tail_zero{k}_s{b}"));
                    }
                }
            }
            y
        };
        let fcs = (crc_final ^ XOROUT).named("fcs");

        // ---- Delay line: as deep as the CRC pipeline.
        let depth = 1 + 2 + unadvance_stages(&cfg, per_stage);
        let mut dv = take;
        let mut dd = s.data();
        let mut dr = keep_in;
        let mut dk = pkeep;
        let mut dl = plast;
        let mut dt = tail0;
        for i in 1..=depth {
            dv = {
                let r = reg_init(1, 0u32)
                    .enable(adv)
                    .named(&format!("line{i}_valid"));
                r.set(dv);
                r
            };
            dd = stage(dd, adv_d, &format!("line{i}_data"));
            dr = stage(dr, adv_d, &format!("line{i}_real"));
            dk = stage(dk, adv_d, &format!("line{i}_keep"));
            dl = stage(dl, adv_d, &format!("line{i}_last"));
            dt = stage(dt, adv_d, &format!("line{i}_tail"));
        }

        // ---- Merge: FCS byte (i − n) mod 4 is byte i mod 4 of the FCS rotated by n mod 4.
        let nm4 = dt.slice(1, 0);
        let fb = |j: u32| fcs.slice(8 * j + 7, 8 * j);
        let rot_arms: Vec<(u64, Sig)> = (1..4u32)
            .map(|r| {
                let parts: Vec<Sig> = (0..4).rev().map(|k| fb((k + 4 - r) % 4)).collect();
                (r as u64, cat(&parts))
            })
            .collect();
        let rot = case(nm4, &rot_arms, fcs).named("fcs_rot");
        // Window: zero-filled bytes i with n <= i < n + 4 (none on a full or middle beat).
        let win: Vec<Sig> = (0..w)
            .map(|i| {
                let after = !dk.bit(i);
                if i < 4 {
                    after
                } else {
                    after & dk.bit(i - 4)
                }
            })
            .collect();
        // Frame bytes where the input had them, FCS bytes in the window, zeros elsewhere.
        let merged_bytes: Vec<Sig> = (0..w)
            .rev()
            .map(|i| {
                let d = dd.slice(8 * i + 7, 8 * i) & dr.bit(i).repl(8);
                let f = rot.slice(8 * (i % 4) + 7, 8 * (i % 4));
                mux(win[i as usize], f, d)
            })
            .collect();
        let merged = cat(&merged_bytes).named("merged");
        // Keep with the FCS: bytes below n + 4.
        let mkeep_bits: Vec<Sig> = (0..w)
            .rev()
            .map(|i| if i < 4 { lit(1, 1u32) } else { dk.bit(i - 4) })
            .collect();
        let mkeep = cat(&mkeep_bits).named("merged_keep");
        // FCS bytes that spill past the beat: n + 4 − W of them, from FCS byte W − n on.
        let spills = if w >= 4 { dk.bit(w - 4) } else { lit(1, 1u32) };
        let carry_now = (dv & dl & spills).named("carry_now");
        let left0 = dt.slice(6, 4);
        // Spilled FCS bytes, lowest first: FCS >> 8·(W − n) (W − n is 0..3 when it spills).
        let arms: Vec<(u64, Sig)> = (1..4u32).map(|j| (j as u64, fcs.shr(8 * j))).collect();
        let rem0 = case(dt.slice(3, 2), &arms, fcs).named("fcs_spilled");
        let rem = reg(32).enable(adv_out_d).named("fcs_rem");

        // ---- Output register: the merged beat, or a carry beat.
        let cw = w.min(4);
        let carry_data = if w > 4 {
            rem.zext(8 * w)
        } else {
            rem.trunc(8 * w)
        };
        let carry_keep_bits: Vec<Sig> = (0..w)
            .rev()
            .map(|i| {
                if i < cw {
                    fcs_left.gt(i as u64)
                } else {
                    lit(1, 0u32)
                }
            })
            .collect();
        let carry_keep = cat(&carry_keep_bits);
        let carry_last = if w >= 4 {
            lit(1, 1u32)
        } else {
            fcs_left.le(w as u64)
        };
        out_valid.set_if(adv_out, carrying | dv);
        let o_d = stage(mux(carrying, carry_data, merged), adv_out_d, "out_data");
        let o_k = stage(mux(carrying, carry_keep, mkeep), adv_out_d, "out_keep");
        let o_l = stage(mux(carrying, carry_last, dl & !spills), adv_out, "out_last");
        let left_next = mux(
            carrying,
            mux(carry_last, lit(3, 0u32), fcs_left - w.min(4)),
            mux(carry_now, left0, lit(3, 0u32)),
        )
        .named("fcs_left_next");
        fcs_left.set(left_next);
        carry.set_if(adv_out, left_next.ne(0u32));
        rem.set(mux(carrying, rem.shr(8 * w.min(4)), rem0));
        m.valid().set(out_v);
        m.data().set(o_d);
        m.keep().set(o_k);
        m.last().set(o_l);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_at_every_width() {
        for d in [8, 16, 32, 48, 64, 128, 256, 512] {
            eth_fcs_append(&FcsAppendCfg { data_bits: d }).unwrap();
        }
        assert!(eth_fcs_append(&FcsAppendCfg { data_bits: 12 }).is_err());
        let c = FcsAppendCfg { data_bits: 512 };
        assert_eq!(latency(&c, 2), 7);
        assert_eq!(latency(&c, 1), 10);
        let e = eth_fcs_append_pipelined(&c, 0).unwrap_err();
        assert!(e.mentions("unadvance_per_stage 0"));
    }
}
