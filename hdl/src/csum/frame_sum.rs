//! `frame_sum`: the pipelined ones'-complement frame sum, as logic built inside the calling
//! module (not a module of its own), shared by every block that sums bytes of a frame.
//!
//! Per beat, the bytes selected by `mask` form big-endian 16-bit words (byte 0 of the frame is
//! the high byte of the first word; the mask zeroes the rest) that a pipelined adder tree
//! reduces, with a register every `levels_per_stage` levels and after the last. A wide
//! accumulator adds a frame's beat sums without folding (no end-around carry on the critical
//! path; exact for frames up to 2^16 beats); two final stages fold the total to 16 bits
//! (RFC 1071, non-complemented, 0xFFFF kept as is; the second as a select between two
//! chains, see [`super::pseudo::fold_once`]). On an 8-bit bus each byte alternates between
//! the high and low half of a word by its frame-offset parity. Its registers are
//! [`crate::timing::stage`]s; the checksum units' never-stalling pipelines around it reserve
//! their result's place with [`crate::timing::Reserve`] (docs/TIMING.md, rule 8).
//!
//! - Ports: none of its own (logic inside the caller); everything advances with `adv` (the
//!   caller's pipeline enable).
//! - Latency: the result appears `ceil(log2(W/2) / levels_per_stage) + 2` advancing cycles after
//!   the frame's last beat, where the caller registers it (see [`mod@super::inet_csum`]).
//! - Throughput: 1 beat/cycle.
//! - Cost: an adder tree of `W/2` words, a wide accumulator and two fold stages; measured inside
//!   the rows `rx_csum` and `tx_csum` of results/AREA.md and `checksum stage` of
//!   results/BENCH.md.
//! - Golden model: `nicgen_model::checksum`; test: through `testbench/tests/csum/inet_csum.rs`.

use super::pseudo::{csa_layers, fold_once};
use crate::timing::{stage, stage_init};
use nicgen_edsl::prelude::*;

/// The inputs of one frame sum.
#[derive(Clone, Copy, Debug)]
pub struct SumIn {
    /// The beat's bytes (byte `i` at bits `8i+7:8i`).
    pub data: Sig,
    /// One bit per byte: include it in the sum.
    pub mask: Sig,
    /// A beat of the frame is presented and accepted this cycle.
    pub beat: Sig,
    /// The beat is the frame's last.
    pub last: Sig,
    /// Pipeline enable: every register here advances only when it is high.
    pub adv: Sig,
}

/// The result, to be registered by the caller on `adv`.
#[derive(Clone, Copy, Debug)]
pub struct SumOut {
    /// A frame's sum is ready this cycle (qualify with `adv`).
    pub valid: Sig,
    /// The folded 16-bit sum.
    pub sum: Sig,
    /// Advancing cycles from a frame's last beat (`beat && last`) to `valid`.
    pub latency: u32,
}

/// Advancing cycles from a frame's last beat to its sum ([`SumOut::latency`]) on a bus of
/// `bytes` bytes: a register every `levels_per_stage` adder levels (at least one), then the
/// accumulator and the fold.
pub fn latency(bytes: u32, levels_per_stage: u32) -> u32 {
    let words = (bytes / 2).max(1);
    let levels = 32 - (words - 1).leading_zeros();
    levels.div_ceil(levels_per_stage).max(1) + 2
}

/// Build the frame sum; `prefix` keeps names apart when a module has several.
pub fn frame_sum(i: &SumIn, levels_per_stage: u32, prefix: &str) -> SumOut {
    let bytes = i.data.width() / 8;
    let adv = i.adv;
    let n = |s: &str| format!("{prefix}{s}");
    // AND with the replicated mask bit (not a mux): the same logic, and Verilator's C++ for it
    // has no data-dependent branch (random masks ran 3x slower with a mux).
    let byte = |k: u32| i.data.slice(8 * k + 7, 8 * k) & i.mask.bit(k).repl(8);
    let mut words: Vec<Sig> = if bytes == 1 {
        // Alternate high/low halves: `odd` is the frame-offset parity of this byte.
        let odd = reg_init(1, 0u32).named(&n("odd"));
        odd.set_if(i.beat, mux(i.last, 0u32, !odd));
        vec![mux(
            odd,
            cat(&[lit(8, 0u32), byte(0)]),
            cat(&[byte(0), lit(8, 0u32)]),
        )]
    } else {
        (0..bytes / 2)
            .map(|k| cat(&[byte(2 * k), byte(2 * k + 1)]).named(&n(&format!("word{k}"))))
            .collect()
    };

    // Pipelined adder tree; `v`/`last` travel with the partial sums.
    let mut v = i.beat;
    let mut last = i.last;
    let mut level = 0;
    let mut stage_no = 0;
    loop {
        let done = words.len() == 1;
        if !done {
            words = words
                .chunks(2)
                .map(|p| {
                    if p.len() == 2 {
                        p[0].add_wide(p[1])
                    } else {
                        p[0].zext(p[0].width() + 1)
                    }
                })
                .collect();
            level += 1;
            words = words
                .iter()
                .enumerate()
                .map(|(k, w)| w.named(&n(&format!("sum{level}_{k}"))))
                .collect();
        }
        if done || level % levels_per_stage == 0 || words.len() == 1 {
            stage_no += 1;
            words = words
                .iter()
                .enumerate()
                .map(|(k, w)| stage(*w, adv).named(&n(&format!("sum{level}_{k}_q"))))
                .collect();
            v = stage_init(v, adv).named(&n(&format!("valid_s{stage_no}")));
            last = stage(last, adv).named(&n(&format!("last_s{stage_no}")));
        }
        if words.len() == 1 {
            break;
        }
    }
    let beat_sum = words[0];

    // Accumulate a frame without folding. The accumulator is cleared after a frame's last beat
    // (a synchronous reset, off the adder's inputs), so the adder reads two registers: a
    // "first beat" flop selecting 0 or the accumulator would fan out to every adder bit (68
    // loads) in front of the carry chain.
    let acc_w = beat_sum.width() + 16;
    let acc = reg_init(acc_w, 0u32).enable(adv).named(&n("acc"));
    let total = (acc + beat_sum.zext(acc_w)).named(&n("total"));
    acc.set_if(v, mux(last, lit(acc_w, 0u32), total));
    let t_valid = stage_init(v & last, adv).named(&n("total_valid"));
    let t = stage(total, adv).named(&n("total_q"));

    // Fold: sum the 16-bit chunks, then two end-around carries. The chunks (three at 64 and
    // 512 bits) go through carry-save layers to two, so the stage holds one carry chain, not
    // two in series with a route between them.
    let chunks = acc_w.div_ceil(16);
    let f1w = 16 + clog2(chunks as u64) + 1;
    let parts: Vec<Sig> = (0..chunks)
        .map(|c| {
            let hi = (16 * c + 15).min(acc_w - 1);
            t.slice(hi, 16 * c).zext(f1w)
        })
        .collect();
    let parts = csa_layers(parts, chunks);
    let f1 = parts
        .into_iter()
        .reduce(|a, b| a + b)
        .expect("at least one chunk");
    let f1_valid = stage_init(t_valid, adv).named(&n("fold_valid"));
    let f1q = stage(f1, adv).named(&n("fold1"));
    // `lo + hi` carries out at most once (`hi` is a few bits), so the end-around carry is
    // picked from two chains side by side rather than added by a second chain.
    let f3 = fold_once(f1q, &n("fold2"));
    debug_assert_eq!(stage_no + 2, latency(bytes, levels_per_stage));
    SumOut {
        valid: f1_valid,
        sum: f3,
        latency: stage_no + 2,
    }
}
