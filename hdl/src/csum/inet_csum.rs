//! `inet_csum`: Internet-checksum stage.
//!
//! Sums every frame's kept bytes as big-endian 16-bit words in ones'-complement arithmetic
//! (RFC 1071; byte 0 of the frame is the high byte of the first word, an odd trailing byte is
//! padded with zero) and emits the folded, non-complemented 16-bit sum once per frame, when the
//! frame's last beat has been summed.
//!
//! Per beat, the kept bytes form `data_bits / 16` words that a pipelined adder tree reduces
//! (a register every `levels_per_stage` levels); a wide accumulator adds the beat sums of a frame
//! without folding (so no end-around carry sits on the critical path); two final stages fold the
//! total to 16 bits. On an 8-bit bus each byte alternates between the high and low half of a word.
//!
//! - Ports: `s_axis_tdata/tkeep/tvalid/tready/tlast`; `m_axis_csum_tdata[15:0]` (the sum),
//!   `m_axis_csum_tkeep` (always 2'b11), `m_axis_csum_tvalid`, `m_axis_csum_tready`,
//!   `m_axis_csum_tlast` (always 1): a stream of one 2-byte frame per input frame.
//! - Latency: `ceil(log2(data_bits/16) / levels_per_stage) + 3` cycles from the last beat to the
//!   result. Throughput 1 beat/cycle; the whole pipeline stalls only while a result waits.
//! - Cost (adder tree of `data_bits/16` words): see `results/BENCH.md` for LUT/FF by width.
//! - Frames up to 2^16 beats are summed exactly (accumulator of tree width + 16 bits).
//! - Golden model: `nicgen_model::checksum::stream_csum`; test: `testbench/tb/tests/inet_csum.rs`
//!   (also replayed on Icarus).

use crate::stream::{stream_in, StreamCfg};
use nicgen_edsl::prelude::*;

/// Checksum stage parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CsumCfg {
    /// Input bus width: 8 or a multiple of 16.
    pub data_bits: u32,
    /// Adder-tree levels between pipeline registers (1 = fastest, more = fewer flops).
    pub levels_per_stage: u32,
}

/// A pipeline register that advances with `adv` (no reset: data).
fn stage(d: Sig, adv: Sig) -> Sig {
    let r = reg(d.width()).enable(adv);
    r.set(d);
    r
}

/// A pipeline valid bit that advances with `adv` (reset to 0).
fn stage_init(d: Sig, adv: Sig) -> Sig {
    let r = reg_init(d.width(), 0u32).enable(adv);
    r.set(d);
    r
}

pub fn inet_csum(cfg: &CsumCfg) -> Result<Rc<ModuleDef>, ElabError> {
    let scfg = StreamCfg::new(cfg.data_bits, 0);
    scfg.check("inet_csum")?;
    if cfg.levels_per_stage == 0 {
        return Err(ElabError::config(
            "inet_csum",
            "levels_per_stage must be at least 1",
        ));
    }
    let cfg = *cfg;
    Module::build(
        format!("inet_csum_d{}_l{}", cfg.data_bits, cfg.levels_per_stage),
        move || {
            doc("Internet-checksum stage: ones'-complement sum of each frame's kept bytes,");
            doc("emitted once per frame on m_axis_csum after the last beat.");
            let s = stream_in("s_axis", &scfg);
            let out_valid = reg_init(1, 0u32).named("csum_valid");
            let out_ready = input("m_axis_csum_tready", 1);
            // Every stage advances together unless a finished result is waiting.
            let adv = (!out_valid | out_ready).named("advance");
            s.ready().set(adv);
            let beat = (s.valid() & adv).named("beat");

            // Level 0: the kept bytes as big-endian words.
            let bytes = cfg.data_bits / 8;
            // AND with the replicated keep bit (not a mux): the same logic, and Verilator's C++
            // for it has no data-dependent branch (random tkeep ran 3x slower with a mux).
            let byte = |i: u32| s.data().slice(8 * i + 7, 8 * i) & s.keep().bit(i).repl(8);
            let mut words: Vec<Sig> = if bytes == 1 {
                // Alternate high/low halves: `odd` is the frame offset parity of this byte.
                let odd = reg_init(1, 0u32).named("odd");
                odd.set_if(beat, mux(s.last(), 0u32, !odd));
                vec![mux(
                    odd,
                    cat(&[lit(8, 0u32), byte(0)]),
                    cat(&[byte(0), lit(8, 0u32)]),
                )]
            } else {
                (0..bytes / 2)
                    .map(|k| cat(&[byte(2 * k), byte(2 * k + 1)]).named(&format!("word{k}")))
                    .collect()
            };

            // Pipelined adder tree; `v`/`last` travel with the partial sums. A stage register is
            // placed every `levels_per_stage` levels and after the final level.
            let mut v = beat;
            let mut last = s.last();
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
                        .map(|(k, w)| w.named(&format!("sum{level}_{k}")))
                        .collect();
                }
                if done || level % cfg.levels_per_stage == 0 || words.len() == 1 {
                    stage_no += 1;
                    words = words
                        .iter()
                        .enumerate()
                        .map(|(k, w)| stage(*w, adv).named(&format!("sum{level}_{k}_q")))
                        .collect();
                    v = stage_init(v, adv).named(&format!("valid_s{stage_no}"));
                    last = stage(last, adv).named(&format!("last_s{stage_no}"));
                }
                if words.len() == 1 {
                    break;
                }
            }
            let beat_sum = words[0];

            // Accumulate a frame without folding.
            let acc_w = beat_sum.width() + 16;
            let acc = reg(acc_w).enable(adv).named("acc");
            let first = reg_init(1, 1u32).enable(adv).named("first");
            let total = (mux(first, 0u32, acc) + beat_sum.zext(acc_w)).named("total");
            acc.set_if(v, total);
            first.set_if(v, last);
            let t_valid = reg_init(1, 0u32).enable(adv).named("total_valid");
            t_valid.set(v & last);
            let t = reg(acc_w).enable(adv).named("total_q");
            t.set(total);

            // Fold: sum the 16-bit chunks, then two end-around carries.
            let chunks = acc_w.div_ceil(16);
            let f1w = 16 + clog2(chunks as u64) + 1;
            let mut f1 = lit(f1w, 0u32);
            for c in 0..chunks {
                let hi = (16 * c + 15).min(acc_w - 1);
                f1 = f1 + t.slice(hi, 16 * c).zext(f1w);
            }
            let f1_valid = reg_init(1, 0u32).enable(adv).named("fold_valid");
            f1_valid.set(t_valid);
            let f1q = reg(f1w).enable(adv).named("fold1");
            f1q.set(f1);
            let f2 = (f1q.slice(15, 0).zext(17) + f1q.slice(f1w - 1, 16).zext(17)).named("fold2");
            let f3 = f2.slice(15, 0) + f2.bit(16).zext(16);
            let csum = reg(16).enable(adv).named("csum");
            csum.set(f3);
            out_valid.set_if(adv, f1_valid);

            output("m_axis_csum_tdata", csum);
            output("m_axis_csum_tkeep", lit(2, 3u32));
            output("m_axis_csum_tvalid", out_valid);
            output("m_axis_csum_tlast", lit(1, 1u32));
        },
    )
}
