//! The splice's control: the state registers (a saturating beat counter, the stall/flush
//! entry, the frame's end and enable), their registered decodes, the handshake, and the next
//! state (docs/TIMING.md, rule 10).

use super::datapath::History;
use super::plan::{merge_acts, Act, Acts, Progs};
use super::{CmdSlice, OutStage, SpliceCfg};
use crate::stream::Stream;
use nicgen_edsl::prelude::*;
use std::collections::HashMap;

/// On buses up to 64 bits the beat counter is one-hot when it has at most this many states (a
/// range decode is an OR of a few flops). Wider
/// buses keep it binary: there one-hot lets ABC fold the decode into every lane's LUT (2x the
/// LUTs at 512 bits) for no gain.
const ONE_HOT_STATES: usize = 32;

/// The saturating count of consumed beats of a frame, `0..=max`: one-hot when short.
#[derive(Clone, Copy)]
pub(super) struct BeatCounter {
    /// The register.
    pub r: Sig,
    max: usize,
    one_hot: bool,
}

impl BeatCounter {
    pub(super) fn new(max: usize, bytes_per_beat: usize) -> Self {
        let one_hot = bytes_per_beat <= 8 && max < ONE_HOT_STATES;
        let r = if one_hot {
            reg_init(max as u32 + 1, 1u32).named("beat_oh")
        } else {
            reg_init(clog2(max as u64 + 1), 0u32).named("beat_cnt")
        };
        BeatCounter { r, max, one_hot }
    }
    /// The register value meaning `v`.
    pub(super) fn value(&self, v: usize) -> Sig {
        if self.one_hot {
            lit(self.max as u32 + 1, BigUint::from(1u8) << v)
        } else {
            lit(self.r.width(), v as u64)
        }
    }
    /// `x` (a value in the counter's encoding: the register or its next value) means `v`.
    pub(super) fn is(&self, x: Sig, v: usize) -> Sig {
        if self.one_hot {
            x.bit(v as u32)
        } else {
            x.eq(v as u64)
        }
    }
    /// `x` is in `a..=b`, or `a..` when `open`.
    pub(super) fn range(&self, x: Sig, a: usize, b: usize, open: bool) -> Sig {
        let b = if open { self.max } else { b.min(self.max) };
        if a > b {
            return lit(1, 0u32);
        }
        if a == 0 && b == self.max {
            return lit(1, 1u32);
        }
        if self.one_hot {
            return x.slice(b as u32, a as u32).or_reduce();
        }
        let ge = if a == 0 { lit(1, 1u32) } else { x.ge(a as u64) };
        if open {
            ge
        } else if a == b {
            x.eq(a as u64)
        } else {
            ge & x.le(b as u64)
        }
    }
    /// The register's value plus one, saturating at `max`.
    pub(super) fn next_sat(&self) -> Sig {
        let x = self.r;
        if self.one_hot {
            let m = self.max as u32;
            let top = x.bit(m) | x.bit(m - 1);
            if m == 1 {
                cat(&[top, lit(1, 0u32)])
            } else {
                cat(&[top, x.slice(m - 2, 0), lit(1, 0u32)])
            }
        } else {
            mux(x.eq(self.max as u64), x, x + 1u32)
        }
    }
}

/// The engine's control state as values: the registers, or their next values (the decodes the
/// datapath uses are registered, computed from the next values).
#[derive(Clone, Copy)]
pub(super) struct State {
    pub bc: BeatCounter,
    /// Consumed beats of this frame, in the counter's encoding.
    pub beats: Sig,
    /// Stall/flush index.
    pub js: Sig,
    /// The frame's last beat was consumed; its flush entries are being emitted.
    pub ended: Sig,
    /// The frame's enable (valid past its first beat).
    pub en: Sig,
}

impl State {
    fn range(&self, a: usize, b: usize, open: bool) -> Sig {
        self.bc.range(self.beats, a, b, open)
    }
    fn js_is(&self, j: usize) -> Sig {
        self.js.eq(j as u64)
    }
    /// Program `prog`'s frames (0: enabled, 1: disabled), past their first beat.
    fn prog(&self, prog: usize) -> Sig {
        if prog == 0 {
            self.en
        } else {
            !self.en
        }
    }
    /// A consume step can happen (not flushing, not stalling).
    pub(super) fn cons_slot(&self) -> Sig {
        !self.ended & self.js_is(0)
    }
    /// A frame's first beat is next.
    pub(super) fn first(&self) -> Sig {
        self.ended | self.bc.is(self.beats, 0)
    }
    /// The part of an activation that the state alone decides: consume steps past the first
    /// beat (at the first beat the enable is the command's, see `Decodes::cond`), entries.
    pub(super) fn act(&self, r: &Act) -> Sig {
        if r.slot == 0 {
            self.range(r.a.max(1), r.b, r.open) & self.prog(r.prog) & self.cons_slot()
        } else {
            self.range(r.a + 1, r.b + 1, r.open) & self.prog(r.prog) & self.js_is(r.slot)
        }
    }
}

/// Registered decodes of the control state, one flip-flop per distinct condition, loaded with
/// the condition evaluated on the next state (so it equals the condition on the state, without
/// the state's decode logic in front of the lane muxes and the handshake).
///
/// The next state is built four times, one per way the cycle can end, and each decode flop
/// loads `take ? (last ? (fin ? f(done) : f(flush)) : f(more)) : f(hold)`. Each `f(..)` is a
/// function of registers only; the late signals of the cycle are the selects of a mux tree in
/// front of the flop: the take (the input's valid, the command's, the output's ready) and the
/// input beat's `tlast` and `tkeep` (through `fin`), so that the `tkeep` bit that tells a
/// frame's last emission does not run through the next state's beat count into every decode
/// (docs/TIMING.md, rule 10).
pub(super) struct Decodes {
    /// The next state when the input beat is taken and is not its frame's last.
    pub next_more: State,
    /// ... when it is the last and its emission ends the frame.
    pub next_done: State,
    /// ... when it is the last and flush entries follow.
    pub next_flush: State,
    /// The next state when the input beat is not taken.
    pub next_hold: State,
    take: Sig,
    /// The input beat is its frame's last.
    last: Sig,
    /// The consume step emits the frame's last bytes (with `last`: the frame is done).
    pub fin: Sig,
    pub made: HashMap<String, Sig>,
    /// `cons_slot & bc == 0`: a first beat (not after a flush) can be consumed.
    at0: Sig,
    cmd_en: Sig,
}

impl Decodes {
    /// A flip-flop of `f(next)`, reset to `init` (its value in the reset state), shared by
    /// every caller with the same `key`.
    pub(super) fn flop(
        &mut self,
        key: String,
        name: &str,
        init: u32,
        f: impl Fn(&State) -> Sig,
    ) -> Sig {
        if let Some(s) = self.made.get(&key) {
            return *s;
        }
        let r = reg_init(1, init).named(name);
        let taken = mux(
            self.last,
            mux(self.fin, f(&self.next_done), f(&self.next_flush)),
            f(&self.next_more),
        );
        r.set(mux(self.take, taken, f(&self.next_hold)));
        self.made.insert(key, r);
        r
    }
    /// The condition of a set of activations (merged here into maximal beat ranges): a flop
    /// for the state part, and at a first beat the command's enable.
    pub(super) fn cond(&mut self, acts: &[Act]) -> Sig {
        let merged = merge_acts(acts);
        let state: Vec<Act> = merged
            .iter()
            .filter(|r| r.slot != 0 || r.open || r.b >= 1)
            .copied()
            .collect();
        let mut terms = Vec::new();
        if !state.is_empty() {
            let key = format!("{state:?}");
            // Every such activation needs `bc >= 1`, so the reset value is 0.
            let n = self.made.len();
            terms.push(self.flop(key, &format!("decode{n}"), 0, |st| {
                state
                    .iter()
                    .map(|r| st.act(r))
                    .reduce(|a, b| a | b)
                    .expect("non-empty")
            }));
        }
        let en0 = merged
            .iter()
            .any(|r| r.slot == 0 && r.a == 0 && r.prog == 0);
        let dis0 = merged
            .iter()
            .any(|r| r.slot == 0 && r.a == 0 && r.prog == 1);
        match (en0, dis0) {
            (true, true) => terms.push(self.at0),
            (true, false) => terms.push(self.at0 & self.cmd_en),
            (false, true) => terms.push(self.at0 & !self.cmd_en),
            (false, false) => {}
        }
        terms
            .into_iter()
            .reduce(|a, b| a | b)
            .unwrap_or_else(|| lit(1, 0u32))
    }
}

/// The control state: its registers, the decodes registered from their next values, and the
/// output stage's room.
pub(super) struct Control {
    pub bc: BeatCounter,
    /// Stall/flush index (register) and its width.
    pub js: Sig,
    pub jw: u32,
    /// The frame's last beat was consumed (register).
    pub ended: Sig,
    /// The frame's enable (register).
    pub en_q: Sig,
    pub dec: Decodes,
    /// A frame's first beat is next (a decode flop).
    pub first: Sig,
    /// A consume step can happen (a decode flop).
    pub cons_slot: Sig,
    /// A stall entry is emitted (a decode flop).
    pub stall_step: Sig,
    /// The frame's enable in a consume step: the command's at a first beat.
    pub en_cons: Sig,
    /// The output stage's room: a wire the output stage drives.
    pub oready: Sig,
}

/// The control state's registers and the handshake's state decodes. `take` is the input's take
/// (a wire the handshake drives), `last` the input beat's `tlast`, `cmd_en` the command's
/// enable.
pub(super) fn control(
    progs: &Progs,
    sat: usize,
    w: usize,
    take: Sig,
    last: Sig,
    cmd_en: Sig,
) -> Control {
    // State: consumed beats of this frame (saturating), stall/flush index, frame ended, the
    // frame's enable. Their next values are built explicitly (see `next_state`), because the
    // decodes the lanes and the handshake use are registered from them.
    let bc = BeatCounter::new(sat + 1, w);
    let max_entries = progs
        .plans
        .iter()
        .flat_map(|p| p.steps.iter())
        .map(|st| st.entries().len())
        .max()
        .unwrap_or(0);
    let jw = clog2(max_entries as u64 + 2);
    let js = reg_init(jw, 0u32).named("entry");
    let ended = reg_init(1, 0u32).named("ended");
    let en_q = reg_init(1, 0u32).named("frame_en");
    let next_state = |tag: &str| State {
        bc,
        beats: wire(bc.r.width()).named(&format!("beat_{tag}")),
        js: wire(jw).named(&format!("entry_{tag}")),
        ended: wire(1).named(&format!("ended_{tag}")),
        en: wire(1).named(&format!("frame_en_{tag}")),
    };
    let mut dec = Decodes {
        next_more: next_state("if_more"),
        next_done: next_state("if_done"),
        next_flush: next_state("if_flush"),
        next_hold: next_state("if_hold"),
        take,
        last,
        fin: wire(1).named("cons_done"),
        made: HashMap::new(),
        at0: lit(1, 0u32),
        cmd_en,
    };
    // The handshake's state decodes, as flops (reset values: the reset state is a first beat).
    let first = dec.flop("first".into(), "first_beat", 1, |st| st.first());
    let cons_slot = dec.flop("cons_slot".into(), "consume_slot", 1, |st| st.cons_slot());
    dec.at0 = dec.flop("at0".into(), "consume_first", 1, |st| {
        st.cons_slot() & st.bc.is(st.beats, 0)
    });
    let stall_step = dec.flop("stall_step".into(), "stall_step", 0, |st| {
        !st.ended & !st.js_is(0)
    });
    let en_cons = mux(first, cmd_en, en_q).named("en_cons");
    let oready = wire(1).named("out_room");
    Control {
        bc,
        js,
        jw,
        ended,
        en_q,
        dec,
        first,
        cons_slot,
        stall_step,
        en_cons,
        oready,
    }
}

/// What the handshake decides besides the take: emissions and frame ends.
pub(super) struct Handshake {
    /// The consume step emits (only in a consume slot).
    pub c_emit: Sig,
    /// The consume emission is the frame's last (when its beat is).
    pub final_cons: Sig,
    /// Stall entries follow the consume step.
    pub has_stall: Sig,
    /// The stall entry emitted is its step's last.
    pub stall_end: Sig,
    /// The flush entry emitted is the frame's last.
    pub final_ent: Sig,
    /// An output beat is emitted this cycle.
    pub emit_valid: Sig,
}

/// The handshake: drives the input's ready, the take (`take` for the control state,
/// `take_data` for the history registers: the same value from different flops) and the
/// command slice's ready, and decides emissions and frame ends.
#[allow(clippy::too_many_arguments)]
pub(super) fn handshake(
    cfg: &SpliceCfg,
    progs: &Progs,
    acts: &Acts,
    ctl: &mut Control,
    hist: &History,
    s: &Stream,
    cmd: &CmdSlice,
    (take, take_data): (Sig, Sig),
) -> Handshake {
    let (first, cons_slot, ended, oready) = (ctl.first, ctl.cons_slot, ctl.ended, ctl.oready);
    let dec = &mut ctl.dec;
    let or_all = |v: Vec<Sig>| -> Sig {
        v.into_iter()
            .reduce(|a, b| a | b)
            .unwrap_or_else(|| lit(1, 0u32))
    };
    // The consume step emits (only in a consume slot: the decodes include it).
    let c_emit = dec.cond(&acts.emit);
    // The consume emission is the frame's last (when its beat is).
    let final_cons: Vec<Sig> = acts
        .final_cons
        .iter()
        .map(|(l, v)| {
            let c = dec.cond(v);
            match l {
                None => c,
                Some(l) => c & !hist.lane_keep_at_consume(l),
            }
        })
        .collect();
    let final_cons = or_all(final_cons).named("cons_final");
    let has_stall = dec.cond(&acts.stall);
    let stall_end = dec.cond(&acts.stall_end);
    // The flush entry being emitted is the frame's last (entries: only while `ended`); each
    // group's activations merged once.
    let final_ent: Vec<(Option<super::plan::Lane>, Vec<Act>)> = acts
        .final_ent
        .iter()
        .map(|(l, v)| (*l, merge_acts(v)))
        .collect();
    let ent_state = |merged: &[Act], st: &State| -> Sig {
        st.ended & or_all(merged.iter().map(|r| st.act(r)).collect())
    };
    let final_ent_v: Vec<Sig> = final_ent
        .iter()
        .map(|(l, v)| {
            let key = format!("final_ent {v:?}");
            let n = dec.made.len();
            let c = dec.flop(key, &format!("decode{n}"), 0, |st| ent_state(v, st));
            match l {
                None => c,
                Some(l) => c & !hist.lane_keep(l),
            }
        })
        .collect();
    let final_ent_v = or_all(final_ent_v).named("entry_final");

    // With overlap (delete), a frame's first beat is taken in the cycle that emits the
    // previous frame's last flush entry. Take happens only in a consume slot or (overlap)
    // while ended, so the conditions above, which include the consume slot, are the whole
    // story there: a consume step with stalls cannot overlap (checked).
    let overlap = progs.plans[0].steps[0].cons.is_none() && progs.plans[1].steps[0].cons.is_none();
    assert!(
        !overlap || acts.stall.is_empty(),
        "an overlapping splice has no stalls"
    );
    // The handshake's own state terms, each one flop where the state alone decides them: the
    // consume-or-flush slot (delete: every flush entry is a frame's last), and "this cycle
    // emits nothing" (no consume emission at a first beat, where the command decides).
    let slot = if !overlap {
        cons_slot
    } else if final_ent.iter().all(|g| g.0.is_none()) {
        dec.flop("slot".into(), "in_slot", 1, |st| {
            st.cons_slot() | or_all(final_ent.iter().map(|g| ent_state(&g.1, st)).collect())
        })
    } else {
        cons_slot | final_ent_v
    };
    // The take's room (see [`OutStage`]). With an output register, a beat that emits nothing
    // is taken whatever the room (a "no emission" decode flop): the register's room reads the
    // next block's ready. With a register slice, whose upstream ready (`out_room`) is a flop,
    // such a beat waits for room as well (no decode, one input fewer in the take, which is
    // then one LUT of flops): room is short only while the next block holds the output back.
    let out_ok = match cfg.out {
        OutStage::Register => {
            let quiet = if acts.emit.iter().all(|r| r.a > 0) {
                let emits = merge_acts(&acts.emit);
                dec.flop("quiet".into(), "no_emit", 1, |st| {
                    !(or_all(emits.iter().map(|r| st.act(r)).collect()) | st.ended)
                })
            } else {
                !(c_emit | ended)
            };
            quiet | oready
        }
        OutStage::Slice => oready,
    };
    let s_ready = (slot & (!first | cmd.valid) & out_ok).named("s_ready");
    s.ready().set(s_ready);
    take.set(s.valid() & s_ready);
    take_data.set(s.valid() & slot & (!first | cmd.valid_data) & out_ok);
    // The command slice's ready, written out rather than as `take & first`: the slice loads
    // only while it holds no command or gives it up (`!valid | ready`), so its own valid needs
    // not be in the ready, and its enables are not behind `take`, whose decode flops' 2:1
    // muxes (60-100 loads) would put it 2 LUTs and a long route ahead of them.
    cmd.ready.set(first & s.valid() & slot & out_ok);
    let emit_valid =
        ((c_emit & s.valid() & (!first | cmd.valid)) | ctl.stall_step | ended).named("emit_valid");
    Handshake {
        c_emit,
        final_cons,
        has_stall,
        stall_end,
        final_ent: final_ent_v,
        emit_valid,
    }
}

/// The next state, one per way the cycle ends (in each, later updates win), and the state
/// registers loaded from them.
pub(super) fn next_state(ctl: &Control, hs: &Handshake, cmd_en: Sig, take: Sig, last_in: Sig) {
    let Control {
        bc,
        js,
        jw,
        ended,
        en_q,
        first,
        stall_step,
        oready,
        ..
    } = *ctl;
    let dec = &ctl.dec;
    let upd = |cur: Sig, updates: &[(Sig, Sig)]| -> Sig {
        updates.iter().fold(cur, |v, &(c, x)| mux(c, x, v))
    };
    let js_inc = js + 1u32;
    let zero_js = lit(jw, 0u32);
    let one_js = lit(jw, 1u32);
    let ent_emit = ended & oready;
    dec.fin.set(hs.c_emit & hs.final_cons);
    let h = dec.next_hold;
    // Taken: the frame moves on one beat (the take overrides a flush entry's update: with
    // overlap, the next frame's first beat is taken while the last entry is emitted). The
    // frame's enable is the command's at its first beat, whichever way the beat goes.
    let beat_on = mux(ended, bc.value(1), bc.next_sat());
    let taken_en = mux(first, cmd_en, en_q);
    // Not the frame's last beat: on to the next, through the step's stall entries if any.
    let more = dec.next_more;
    more.js.set(mux(hs.has_stall, one_js, zero_js));
    more.ended.set(lit(1, 0u32));
    more.beats.set(beat_on);
    more.en.set(taken_en);
    // The last beat, and its emission is the frame's last: the next beat is a first beat.
    let done = dec.next_done;
    done.js.set(zero_js);
    done.ended.set(lit(1, 0u32));
    done.beats.set(bc.value(0));
    done.en.set(taken_en);
    // The last beat, with bytes left over: its flush entries follow.
    let flush = dec.next_flush;
    flush.js.set(one_js);
    flush.ended.set(lit(1, 1u32));
    flush.beats.set(beat_on);
    flush.en.set(taken_en);
    // Held: stall and flush entries step.
    let final_ent = hs.final_ent;
    h.js.set(upd(
        js,
        &[
            (stall_step & oready, mux(hs.stall_end, zero_js, js_inc)),
            (ent_emit, mux(final_ent, zero_js, js_inc)),
        ],
    ));
    h.ended
        .set(upd(ended, &[(ent_emit & final_ent, lit(1, 0u32))]));
    h.beats
        .set(upd(bc.r, &[(ent_emit & final_ent, bc.value(0))]));
    h.en.set(en_q);
    let next = |x: fn(&State) -> Sig| {
        let taken = mux(last_in, mux(dec.fin, x(&done), x(&flush)), x(&more));
        mux(take, taken, x(&h))
    };
    js.set(next(|st| st.js));
    ended.set(next(|st| st.ended));
    bc.r.set(next(|st| st.beats));
    en_q.set(next(|st| st.en));
}
