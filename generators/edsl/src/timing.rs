//! Timing idioms as library pieces, each with its cost, so a block states the idiom instead of
//! repeating the trick by hand (the rules behind them: `docs/TIMING.md`).
//!
//! - [`Replicated`]: one register kept as several copies, so that each group of consumers is
//!   driven by a flop of its own and no single net fans out to all of them.

use crate::builder::{reg_at, reg_init_at, Sig};
use crate::ir::Loc;

/// A register replicated into copies with the same value, each to drive its own consumers.
///
/// Synthesis merges registers that compute the same function of the same inputs (Yosys's
/// `opt_merge` does so even across `(* keep *)`, which it applies to wires, not cells), and
/// ABC rebuilds any logically equal node once. So the copies alternate in polarity: copy `k`
/// stores `next` for even `k` and `!next` for odd `k`, and [`Replicated::get`] returns the
/// value in true polarity (the inverter folds into the consumer's LUT). Every copy is also
/// emitted `(* keep *)`, which Vivado honours on registers. Two copies are therefore distinct
/// in every flow; copies of equal polarity beyond two survive in Vivado but may be merged by
/// Yosys.
///
/// Cost: `copies` x width flip-flops and one inverter per odd copy's input, usually absorbed in
/// the LUT that computes `next`. Latency and behaviour are those of one register.
#[derive(Clone, Debug)]
pub struct Replicated {
    regs: Vec<Sig>,
}

impl Replicated {
    /// `copies` registers named `<name>` (copy 0), `<name>_n<k>` (odd copies, complemented) and
    /// `<name>_r<k>` (even copies), with reset value `init` (in true polarity) when given.
    #[track_caller]
    pub fn new(name: &str, copies: u32, width: u32, init: Option<u64>) -> Replicated {
        assert!(copies >= 1, "a replicated register needs at least one copy");
        // Every copy is declared at the caller's line (a closure would record its own).
        let loc = Loc::caller();
        let mask = if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let regs = (0..copies)
            .map(|k| {
                let n = match k {
                    0 => name.to_string(),
                    k if k % 2 == 1 => format!("{name}_n{k}"),
                    k => format!("{name}_r{k}"),
                };
                let r = match init {
                    Some(v) => reg_init_at(width, if k % 2 == 1 { !v & mask } else { v }, loc),
                    None => reg_at(width, loc),
                };
                r.named(&n).keep()
            })
            .collect();
        Replicated { regs }
    }

    /// Give every copy its next value (in true polarity).
    #[track_caller]
    pub fn set(&self, next: Sig) {
        for (k, r) in self.regs.iter().enumerate() {
            if k % 2 == 1 {
                r.set(!next);
            } else {
                r.set(next);
            }
        }
    }

    /// Every copy loads `v` (in true polarity) when `cond` holds; later calls take priority,
    /// as [`Sig::set_if`]. Each copy holds its own value otherwise, so the copies stay apart.
    #[track_caller]
    pub fn set_if(&self, cond: Sig, v: Sig) {
        for (k, r) in self.regs.iter().enumerate() {
            if k % 2 == 1 {
                r.set_if(cond, !v);
            } else {
                r.set_if(cond, v);
            }
        }
    }

    /// Copy `k`, in true polarity.
    #[track_caller]
    pub fn get(&self, k: usize) -> Sig {
        let r = self.regs[k];
        if k % 2 == 1 {
            !r
        } else {
            r
        }
    }

    /// Copy `k`, complemented (free for odd copies, which store the complement).
    #[track_caller]
    pub fn get_n(&self, k: usize) -> Sig {
        let r = self.regs[k];
        if k % 2 == 1 {
            r
        } else {
            !r
        }
    }

    /// Number of copies.
    pub fn copies(&self) -> usize {
        self.regs.len()
    }
}
