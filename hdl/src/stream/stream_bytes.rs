//! The byte-splice engine behind [`super::stream_insert()`] and [`super::stream_delete()`] (not a
//! block itself): insert or delete a constant number of bytes `n` at a constant frame offset
//! `off`, at any bus width, 1 beat/cycle.
//!
//! Because `off`, `n` and the width `W` (bytes/beat) are constants, every output lane always
//! takes its byte from one of a few fixed places: the current input beat (`cur`), the previous
//! one (register `P`), the beat holding the bytes before `off` (register `H`, only when the
//! splice spans more than a beat), or the inserted bytes (`INS`). No barrel shifter: a 2- to
//! 4-input mux per byte lane.
//!
//! At elaboration a *plan* is computed from the byte mapping of a long frame. Output beat `c`
//! is emitted when input beat `e(c)` is consumed:
//! `e(c) = max(need(c), know(c), e(c-1))`, where `need` is the input beat holding its last
//! source byte and `know` the beat whose arrival tells whether `c` is the frame's last output
//! beat; delete also waits one beat (`e(c) >= c + 1`), so the first beat of a frame never emits
//! and can carry the previous frame's final (flushed) beat. Per consumed beat `m` the plan holds
//! the output beat emitted in the same cycle (if any), the extra output beats emitted in stall
//! cycles (insert only: the output is longer than the input), and the beats still to flush if
//! `m` was the frame's last beat. The plan is the same for every `m` past the splice (steady
//! state), so the hardware is a saturating beat counter decoded into a handful of ranges.
//!
//! `tkeep` travels through the same lane muxes as the data, which is what makes short frames
//! work without special cases: a byte that does not exist has keep 0, and a beat is the frame's
//! last when the next beat's lane 0 would be empty.
//!
//! Every decode of the control state (lane sources, consume slot, first beat) is a flop loaded
//! from the state's next value, built as taken and as held, with the take, `tlast` and `tkeep`
//! as mux selects in front of the flop (docs/TIMING.md, rule 10). So a lane is a 2- to 4-input
//! mux whose selects are flops, and the input's ready is one LUT of those flops, the command's
//! valid (a register slice of the engine's own, rule 9) and the output stage's room
//! ([`OutStage`]).

use super::{stream_in, stream_out, StreamCfg};
use nicgen_edsl::prelude::*;
use std::collections::HashMap;

/// On buses up to 64 bits the beat counter is one-hot when it has at most this many states (a
/// range decode is an OR of a few flops). Wider
/// buses keep it binary: there one-hot lets ABC fold the decode into every lane's LUT (2x the
/// LUTs at 512 bits) for no gain.
const ONE_HOT_STATES: usize = 32;

/// Insert or delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpliceKind {
    Insert,
    Delete,
}

/// Where an output byte comes from in a long frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ByteSrc {
    In(u64),
    Ins(usize),
}

/// Where the keep bit of an inserted byte comes from (the frame reached `off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum InsKeep {
    One,
    Zero,
    Cur(usize),
    P(usize),
}

/// One output lane's source in one plan step (hardware view).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    Cur(usize),
    P(usize),
    H(usize),
    /// Inserted byte `j` from the command stream (first beat) or the `INS` register.
    Ins {
        j: usize,
        cmd: bool,
        keep: InsKeep,
    },
    Zero,
}

pub(crate) type Template = Vec<Lane>;

/// The plan of one program (enabled or disabled frames) for each consumed beat index `m`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// Output beat emitted in the cycle that consumes beat `m`.
    pub cons: Option<Template>,
    /// After consuming `m`: stall emissions (also when `m` is not last), then the flush beats
    /// (only when `m` was the frame's last beat).
    pub stalls: Vec<Template>,
    pub flush: Vec<Template>,
}

impl Step {
    fn entries(&self) -> Vec<&Template> {
        self.stalls.iter().chain(self.flush.iter()).collect()
    }
}

/// The plan: steps for `m = 0..=sat` (`sat` and beyond are identical).
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
}

/// Elaboration-time geometry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geo {
    pub w: u64,
    pub off: u64,
    pub n: u64,
    pub kind: SpliceKind,
}

impl Geo {
    /// Beat holding byte `off - 1` (-1 when `off = 0`) and how many bytes of it precede `off`.
    fn ct(&self) -> (i64, u64) {
        if self.off == 0 {
            (-1, 0)
        } else {
            let ct = (self.off - 1) / self.w;
            (ct as i64, self.off - ct * self.w)
        }
    }
    fn src(&self, en: bool, p: u64) -> ByteSrc {
        if !en || p < self.off {
            return ByteSrc::In(p);
        }
        match self.kind {
            SpliceKind::Delete => ByteSrc::In(p + self.n),
            SpliceKind::Insert if p < self.off + self.n => ByteSrc::Ins((p - self.off) as usize),
            SpliceKind::Insert => ByteSrc::In(p - self.n),
        }
    }

    /// Compute the plan of enabled (`en`) or disabled frames for `m = 0..=horizon`.
    pub fn plan(&self, en: bool, horizon: u64) -> Result<Plan, String> {
        let w = self.w;
        let (ct, rt) = self.ct();
        // Output beats of a long frame with their emission beat.
        let mut beats: Vec<(Vec<ByteSrc>, i64)> = Vec::new();
        let mut prev_e = 0i64;
        let mut c = 0u64;
        loop {
            let lanes: Vec<ByteSrc> = (0..w).map(|i| self.src(en, c * w + i)).collect();
            let need = lanes
                .iter()
                .filter_map(|s| match s {
                    ByteSrc::In(x) => Some((x / w) as i64),
                    _ => None,
                })
                .max()
                .unwrap_or(-1);
            let know = match self.src(en, (c + 1) * w) {
                ByteSrc::In(x) if x % w != 0 => (x / w) as i64,
                ByteSrc::In(x) => (x / w) as i64 - 1,
                ByteSrc::Ins(_) => ct,
            };
            let mut e = need.max(know).max(prev_e);
            if self.kind == SpliceKind::Delete {
                e = e.max(c as i64 + 1);
            }
            prev_e = e;
            if e > horizon as i64 + 2 {
                break;
            }
            beats.push((lanes, e));
            c += 1;
        }
        let h_ok = |b: i64, m: i64| en && b == ct && ct < m;
        let ins_keep_after = |m: i64| {
            if m > ct {
                InsKeep::One
            } else if m == ct {
                InsKeep::P(rt as usize - 1)
            } else {
                InsKeep::Zero
            }
        };
        let mut steps = Vec::new();
        for m in 0..=horizon as i64 {
            let cons_res = |lanes: &[ByteSrc]| -> Result<Template, String> {
                lanes
                    .iter()
                    .map(|s| match *s {
                        ByteSrc::In(x) => {
                            let (b, l) = ((x / w) as i64, (x % w) as usize);
                            if b == m {
                                Ok(Lane::Cur(l))
                            } else if b == m - 1 {
                                Ok(Lane::P(l))
                            } else if h_ok(b, m) {
                                Ok(Lane::H(l))
                            } else {
                                Err(format!("consume step {m} needs byte {x} of beat {b}"))
                            }
                        }
                        ByteSrc::Ins(j) => Ok(Lane::Ins {
                            j,
                            cmd: m == 0,
                            keep: if m > ct {
                                InsKeep::One
                            } else if m == ct {
                                InsKeep::Cur(rt as usize - 1)
                            } else {
                                InsKeep::Zero
                            },
                        }),
                    })
                    .collect()
            };
            let after_res = |lanes: &[ByteSrc], flush: bool| -> Result<Template, String> {
                lanes
                    .iter()
                    .map(|s| match *s {
                        ByteSrc::In(x) => {
                            let (b, l) = ((x / w) as i64, (x % w) as usize);
                            if b == m {
                                Ok(Lane::P(l))
                            } else if h_ok(b, m) {
                                Ok(Lane::H(l))
                            } else if b > m && flush {
                                Ok(Lane::Zero)
                            } else {
                                Err(format!("step after beat {m} needs byte {x} of beat {b}"))
                            }
                        }
                        ByteSrc::Ins(j) => {
                            let keep = ins_keep_after(m);
                            Ok(if keep == InsKeep::Zero {
                                Lane::Zero
                            } else {
                                Lane::Ins {
                                    j,
                                    cmd: false,
                                    keep,
                                }
                            })
                        }
                    })
                    .collect()
            };
            let here: Vec<&(Vec<ByteSrc>, i64)> = beats.iter().filter(|b| b.1 == m).collect();
            let cons = match here.first() {
                Some(b) => Some(cons_res(&b.0)?),
                None => None,
            };
            let stalls = here
                .iter()
                .skip(1)
                .map(|b| after_res(&b.0, false))
                .collect::<Result<Vec<_>, _>>()?;
            let mut flush = Vec::new();
            for b in beats.iter().filter(|b| b.1 > m) {
                let t = after_res(&b.0, true)?;
                if t.iter().all(|l| *l == Lane::Zero) {
                    break;
                }
                if t[0] == Lane::Zero {
                    return Err(format!(
                        "flush after beat {m}: lane 0 empty but not the rest"
                    ));
                }
                flush.push(t);
            }
            let step = Step {
                cons,
                stalls,
                flush,
            };
            if step.cons.is_none() && step.entries().is_empty() {
                return Err(format!(
                    "a frame ending at beat {m} would have no last beat"
                ));
            }
            steps.push(step);
        }
        Ok(Plan { steps })
    }
}

/// The splice's output stage: which of the two ways to trade a flop of handshake for a beat
/// of flops the caller's timing needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutStage {
    /// An output register: one beat of flops. Its room is its valid and the next block's ready
    /// (`!out_valid | m_axis_tready`), so the input's take reads the next block's ready, and a
    /// beat that emits nothing (a "no emission" decode flop) is taken whatever the room. The
    /// lanes load straight into the register. The TX VLAN insert uses it (at every width): its
    /// take is short there, and the slice's extra 2:1 mux per output bit would follow the
    /// lanes.
    Register,
    /// A register slice (`record_reg_slice`): two beats of flops and a 2:1 mux per output bit,
    /// but its upstream ready is a flop, so the take is one LUT of flops (the input's valid, the
    /// slot, the first beat, the command's valid, the room) and the next block's ready stops at
    /// the slice. The RX VLAN strip uses it (at every width): with a register, the route from
    /// the output valid through the take's 91 loads into the decode flops would be long.
    Slice,
}

impl OutStage {
    /// The module name's suffix: none for the register.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            OutStage::Register => "",
            OutStage::Slice => "_oslice",
        }
    }
}

/// Parameters of a splice block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpliceCfg {
    pub stream: StreamCfg,
    pub off: u32,
    pub n: u32,
    pub kind: SpliceKind,
    pub out: OutStage,
}

/// Plans of enabled and disabled frames over a common saturation point `sat`: steps for
/// `m >= sat` are all equal to step `sat`.
pub(crate) fn plans(cfg: &SpliceCfg) -> Result<(Plan, Plan, usize), String> {
    let geo = Geo {
        w: (cfg.stream.data_bits / 8) as u64,
        off: cfg.off as u64,
        n: cfg.n as u64,
        kind: cfg.kind,
    };
    let horizon = (geo.off + geo.n) / geo.w + 8;
    let en = geo.plan(true, horizon)?;
    let dis = geo.plan(false, horizon)?;
    let steady = |p: &Plan| {
        let last = p.steps.len() - 1;
        let mut s = last;
        while s > 0 && p.steps[s - 1] == p.steps[last] {
            s -= 1;
        }
        s
    };
    let sat = steady(&en).max(steady(&dis));
    if sat + 4 > horizon as usize {
        return Err("the plan does not reach a steady state".into());
    }
    Ok((en, dis, sat))
}

/// Runs of equal steps in `0..=sat`: `(first, last)`, the final run open-ended.
fn runs(p: &Plan, sat: usize) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = Vec::new();
    for m in 0..=sat {
        match v.last_mut() {
            Some(r) if p.steps[r.0] == p.steps[m] => r.1 = m,
            _ => v.push((m, m)),
        }
    }
    v
}

/// Where a template applies: slot `slot` (0: the consume step, `j`: entry `j`) of the beats
/// `a..=b` (`a..` when `open`) of program `prog`.
#[derive(Clone, Copy, Debug)]
struct Act {
    prog: usize,
    slot: usize,
    a: usize,
    b: usize,
    open: bool,
}

/// The saturating count of consumed beats of a frame, `0..=max`: one-hot when short.
struct BeatCounter {
    r: Sig,
    max: usize,
    one_hot: bool,
}

impl BeatCounter {
    fn new(max: usize, bytes_per_beat: usize) -> Self {
        let one_hot = bytes_per_beat <= 8 && max < ONE_HOT_STATES;
        let r = if one_hot {
            reg_init(max as u32 + 1, 1u32).named("beat_oh")
        } else {
            reg_init(clog2(max as u64 + 1), 0u32).named("beat_cnt")
        };
        BeatCounter { r, max, one_hot }
    }
    /// The register value meaning `v`.
    fn value(&self, v: usize) -> Sig {
        if self.one_hot {
            lit(self.max as u32 + 1, BigUint::from(1u8) << v)
        } else {
            lit(self.r.width(), v as u64)
        }
    }
    /// `x` (a value in the counter's encoding: the register or its next value) means `v`.
    fn is(&self, x: Sig, v: usize) -> Sig {
        if self.one_hot {
            x.bit(v as u32)
        } else {
            x.eq(v as u64)
        }
    }
    /// `x` is in `a..=b`, or `a..` when `open`.
    fn range(&self, x: Sig, a: usize, b: usize, open: bool) -> Sig {
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
    fn next_sat(&self) -> Sig {
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
struct State<'a> {
    bc: &'a BeatCounter,
    /// Consumed beats of this frame, in the counter's encoding.
    beats: Sig,
    /// Stall/flush index.
    js: Sig,
    /// The frame's last beat was consumed; its flush entries are being emitted.
    ended: Sig,
    /// The frame's enable (valid past its first beat).
    en: Sig,
}

impl State<'_> {
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
    fn cons_slot(&self) -> Sig {
        !self.ended & self.js_is(0)
    }
    /// A frame's first beat is next.
    fn first(&self) -> Sig {
        self.ended | self.bc.is(self.beats, 0)
    }
    /// The part of an activation that the state alone decides: consume steps past the first
    /// beat (at the first beat the enable is the command's, see `Decodes::cond`), entries.
    fn act(&self, r: &Act) -> Sig {
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
struct Decodes<'a> {
    /// The next state when the input beat is taken and is not its frame's last.
    next_more: State<'a>,
    /// ... when it is the last and its emission ends the frame.
    next_done: State<'a>,
    /// ... when it is the last and flush entries follow.
    next_flush: State<'a>,
    /// The next state when the input beat is not taken.
    next_hold: State<'a>,
    take: Sig,
    /// The input beat is its frame's last.
    last: Sig,
    /// The consume step emits the frame's last bytes (with `last`: the frame is done).
    fin: Sig,
    made: HashMap<String, Sig>,
    /// `cons_slot & bc == 0`: a first beat (not after a flush) can be consumed.
    at0: Sig,
    cmd_en: Sig,
}

impl<'a> Decodes<'a> {
    /// A flip-flop of `f(next)`, reset to `init` (its value in the reset state), shared by
    /// every caller with the same `key`.
    fn flop(&mut self, key: String, name: &str, init: u32, f: impl Fn(&State<'a>) -> Sig) -> Sig {
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
    fn cond(&mut self, acts: &[Act]) -> Sig {
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

/// Merge activations into maximal beat ranges per program and slot (a range decode is cheaper
/// than an OR of runs).
fn merge_acts(v: &[Act]) -> Vec<Act> {
    let mut v = v.to_vec();
    v.sort_by_key(|x| (x.prog, x.slot, x.a));
    let mut merged: Vec<Act> = Vec::new();
    for x in v {
        match merged.last_mut() {
            Some(r) if (r.prog, r.slot) == (x.prog, x.slot) && !r.open && r.b + 1 == x.a => {
                r.b = x.b;
                r.open = x.open;
            }
            _ => merged.push(x),
        }
    }
    merged
}

/// Build the splice inside an open module. Ports: `s_axis_*`, `s_axis_cmd_tdata/tvalid/tready`
/// (`tdata[0]` = enable, insert: byte `j` at `tdata[8j+8:8j+1]`), `m_axis_*`.
pub(crate) fn splice_body(cfg: &SpliceCfg, en_plan: &Plan, dis_plan: &Plan, sat: usize) {
    let w = (cfg.stream.data_bits / 8) as usize;
    let n = cfg.n as usize;
    let s = stream_in("s_axis", &cfg.stream);
    let m = stream_out("m_axis", &cfg.stream);
    let cmd_w = if cfg.kind == SpliceKind::Insert {
        1 + 8 * cfg.n
    } else {
        1
    };
    // The command through a register slice of its own: the frame's first beat waits for its
    // valid, which must not come from the requester's logic, placed elsewhere, into every
    // decode flop (docs/TIMING.md, rule 9). The slice's ready is a flop.
    let take = wire(1).named("take");
    let cmd_q = crate::stream::record_reg_slice(
        "cmd",
        input("s_axis_cmd_tdata", cmd_w),
        input("s_axis_cmd_tvalid", 1),
    );
    output_wire("s_axis_cmd_tready", 1).set(cmd_q.s_ready);
    let cmd_data = cmd_q.data;
    let cmd_valid = cmd_q.valid;
    let cmd_en = cmd_data.bit(0);

    // State: consumed beats of this frame (saturating), stall/flush index, frame ended, the
    // frame's enable. Their next values are built explicitly (below), because the decodes the
    // lanes and the handshake use are registered from them.
    let bc = BeatCounter::new(sat + 1, w);
    let max_entries = en_plan
        .steps
        .iter()
        .chain(dis_plan.steps.iter())
        .map(|st| st.entries().len())
        .max()
        .unwrap_or(0);
    let jw = clog2(max_entries as u64 + 2);
    let js = reg_init(jw, 0u32).named("entry");
    let ended = reg_init(1, 0u32).named("ended");
    let en_q = reg_init(1, 0u32).named("frame_en");
    let next_state = |tag: &str| State {
        bc: &bc,
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
        last: s.last(),
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

    // Per program: runs of equal steps.
    struct Prog<'a> {
        plan: &'a Plan,
        runs: Vec<(usize, usize)>,
    }
    let progs = [
        Prog {
            plan: en_plan,
            runs: runs(en_plan, sat),
        },
        Prog {
            plan: dis_plan,
            runs: runs(dis_plan, sat),
        },
    ];
    // Registers referenced by the templates.
    let mut p_lanes = vec![false; w];
    let mut p_keep_lanes = vec![false; w];
    let mut h_lanes = vec![false; w];
    let mut cur_keep_lanes = vec![false; w];
    let mut cur_lanes = vec![false; w];
    let mut ins_reg = vec![false; n];
    {
        let mut note = |l: &Lane| match *l {
            Lane::Cur(i) => {
                cur_lanes[i] = true;
                cur_keep_lanes[i] = true;
            }
            Lane::P(i) => {
                p_lanes[i] = true;
                p_keep_lanes[i] = true;
            }
            Lane::H(i) => h_lanes[i] = true,
            Lane::Ins { j, cmd, keep } => {
                if !cmd {
                    ins_reg[j] = true;
                }
                match keep {
                    InsKeep::Cur(i) => cur_keep_lanes[i] = true,
                    InsKeep::P(i) => p_keep_lanes[i] = true,
                    _ => {}
                }
            }
            Lane::Zero => {}
        };
        for p in &progs {
            for st in &p.plan.steps {
                for t in st
                    .cons
                    .iter()
                    .chain(st.stalls.iter())
                    .chain(st.flush.iter())
                {
                    t.iter().for_each(&mut note);
                }
            }
        }
    }
    // Lane 0 of every entry is used for last-beat detection (already noted above).

    let byte = |x: Sig, i: usize| x.slice(8 * i as u32 + 7, 8 * i as u32);
    let p_data: Vec<Option<Sig>> = (0..w)
        .map(|i| {
            p_lanes[i].then(|| {
                let r = reg(8).enable(take).named(&format!("p_data{i}"));
                r.set(byte(s.data(), i));
                r
            })
        })
        .collect();
    let p_keep: Vec<Option<Sig>> = (0..w)
        .map(|i| {
            p_keep_lanes[i].then(|| {
                let r = reg(1).enable(take).named(&format!("p_keep{i}"));
                r.set(s.keep().bit(i as u32));
                r
            })
        })
        .collect();
    let (ct, _) = Geo {
        w: w as u64,
        off: cfg.off as u64,
        n: cfg.n as u64,
        kind: cfg.kind,
    }
    .ct();
    let h_load = if ct >= 0 {
        let at_ct = if ct == 0 {
            first
        } else {
            let ct = ct as usize;
            dec.flop("at_ct".into(), "at_ct", 0, |st| {
                !st.ended & st.bc.is(st.beats, ct)
            })
        };
        (take & en_cons & at_ct).named("h_load")
    } else {
        lit(1, 0u32)
    };
    let h_data: Vec<Option<(Sig, Sig)>> = (0..w)
        .map(|i| {
            h_lanes[i].then(|| {
                let d = reg(8).enable(h_load).named(&format!("h_data{i}"));
                d.set(byte(s.data(), i));
                let k = reg(1).enable(h_load).named(&format!("h_keep{i}"));
                k.set(s.keep().bit(i as u32));
                (d, k)
            })
        })
        .collect();
    // Inserted bytes read after the first beat, one register per byte.
    let ins_q: Vec<Option<Sig>> = (0..n)
        .map(|j| {
            ins_reg[j].then(|| {
                let r = reg(8).enable(take & first).named(&format!("ins_byte{j}"));
                r.set(byte(cmd_data.slice(8 * n as u32, 1), j));
                r
            })
        })
        .collect();
    let user_p = s.user().map(|u| {
        let r = reg(u.width()).enable(take).named("p_user");
        r.set(u);
        r
    });
    // Unreferenced input lanes (bytes that are never output in any plan) are waived.
    if (0..w).any(|i| !cur_lanes[i] && !p_lanes[i] && !h_lanes[i]) {
        s.data().unused();
    }
    if (0..w).any(|i| !cur_keep_lanes[i] && !p_keep_lanes[i] && !h_lanes[i]) {
        s.keep().unused();
    }

    let lane_data = |l: &Lane| -> Option<Sig> {
        match *l {
            Lane::Cur(i) => Some(byte(s.data(), i)),
            Lane::P(i) => p_data[i],
            Lane::H(i) => h_data[i].map(|h| h.0),
            Lane::Ins { j, cmd: true, .. } => Some(byte(cmd_data.slice(8 * n as u32, 1), j)),
            Lane::Ins { j, .. } => ins_q[j],
            Lane::Zero => None,
        }
    };
    // Keep of a lane as seen in the cycle it is emitted.
    let lane_keep = |l: &Lane| -> Sig {
        match *l {
            Lane::Cur(i) => s.keep().bit(i as u32),
            Lane::P(i) => p_keep[i].expect("noted"),
            Lane::H(i) => h_data[i].expect("noted").1,
            Lane::Ins { keep, .. } => match keep {
                InsKeep::One => lit(1, 1u32),
                InsKeep::Zero => lit(1, 0u32),
                InsKeep::Cur(i) => s.keep().bit(i as u32),
                InsKeep::P(i) => p_keep[i].expect("noted"),
            },
            Lane::Zero => lit(1, 0u32),
        }
    };
    // Keep of a lane of an entry after `m` as predicted while `m` is being consumed (P = cur).
    let lane_keep_at_consume = |l: &Lane| -> Sig {
        match *l {
            Lane::P(i) => s.keep().bit(i as u32),
            Lane::Ins {
                keep: InsKeep::P(i),
                ..
            } => s.keep().bit(i as u32),
            other => lane_keep(&other),
        }
    };

    // Template activations (decoded per lane below) and the activations of the handshake's
    // conditions; those that end a frame are grouped by the lane whose keep tells it (`None`:
    // always the last), so that each group is one registered decode ANDed with a keep bit.
    let mut acts: Vec<(Template, Act)> = Vec::new();
    let mut emit_acts: Vec<Act> = Vec::new(); // consume steps that emit
    let mut stall_acts: Vec<Act> = Vec::new(); // consume steps followed by stalls
    let mut stall_end_acts: Vec<Act> = Vec::new(); // the last stall entry
    let mut final_cons: Vec<(Option<Lane>, Vec<Act>)> = Vec::new();
    let mut final_ent: Vec<(Option<Lane>, Vec<Act>)> = Vec::new();
    let group = |v: &mut Vec<(Option<Lane>, Vec<Act>)>, l: Option<Lane>, a: Act| match v
        .iter_mut()
        .find(|g| g.0 == l)
    {
        Some(g) => g.1.push(a),
        None => v.push((l, vec![a])),
    };
    for (pi, p) in progs.iter().enumerate() {
        let nr = p.runs.len();
        for (ri, &(a, b)) in p.runs.iter().enumerate() {
            let open = ri + 1 == nr;
            let st = &p.plan.steps[a];
            let at = |slot: usize| Act {
                prog: pi,
                slot,
                a,
                b,
                open,
            };
            let entries = st.entries();
            // Consume side.
            if let Some(t) = &st.cons {
                emit_acts.push(at(0));
                acts.push((t.clone(), at(0)));
                group(&mut final_cons, entries.first().map(|e| e[0]), at(0));
            }
            if !st.stalls.is_empty() {
                stall_acts.push(at(0));
                stall_end_acts.push(at(st.stalls.len()));
            }
            for (k, t) in entries.iter().enumerate() {
                let j = k + 1;
                acts.push(((*t).clone(), at(j)));
                group(&mut final_ent, entries.get(j).map(|nx| nx[0]), at(j));
            }
        }
    }
    let or_all = |v: Vec<Sig>| -> Sig {
        v.into_iter()
            .reduce(|a, b| a | b)
            .unwrap_or_else(|| lit(1, 0u32))
    };
    // The consume step emits (only in a consume slot: the decodes include it).
    let c_emit = dec.cond(&emit_acts);
    // The consume emission is the frame's last (when its beat is).
    let final_cons: Vec<Sig> = final_cons
        .iter()
        .map(|(l, v)| {
            let c = dec.cond(v);
            match l {
                None => c,
                Some(l) => c & !lane_keep_at_consume(l),
            }
        })
        .collect();
    let final_cons = or_all(final_cons).named("cons_final");
    let has_stall = dec.cond(&stall_acts);
    let stall_end = dec.cond(&stall_end_acts);
    // The flush entry being emitted is the frame's last (entries: only while `ended`); each
    // group's activations merged once.
    let final_ent: Vec<(Option<Lane>, Vec<Act>)> = final_ent
        .into_iter()
        .map(|(l, v)| (l, merge_acts(&v)))
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
                Some(l) => c & !lane_keep(l),
            }
        })
        .collect();
    let final_ent_v = or_all(final_ent_v).named("entry_final");

    // Handshake. With overlap (delete), a frame's first beat is taken in the cycle that emits
    // the previous frame's last flush entry. Take happens only in a consume slot or (overlap)
    // while ended, so the conditions above, which include the consume slot, are the whole
    // story there: a consume step with stalls cannot overlap (checked).
    let overlap = en_plan.steps[0].cons.is_none() && dis_plan.steps[0].cons.is_none();
    assert!(
        !overlap || stall_acts.is_empty(),
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
            let quiet = if emit_acts.iter().all(|r| r.a > 0) {
                let emits = merge_acts(&emit_acts);
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
    let final_ent = final_ent_v;
    let s_ready = (slot & (!first | cmd_valid) & out_ok).named("s_ready");
    s.ready().set(s_ready);
    take.set(s.valid() & s_ready);
    // The command slice's ready, written out rather than as `take & first`: the slice loads
    // only while it holds no command or gives it up (`!valid | ready`), so its own valid needs
    // not be in the ready, and its enables are not behind `take`, whose decode flops' 2:1
    // muxes (60-100 loads) would put it 2 LUTs and a long route ahead of them.
    cmd_q.ready.set(first & s.valid() & slot & out_ok);
    let emit_valid =
        ((c_emit & s.valid() & (!first | cmd_valid)) | stall_step | ended).named("emit_valid");

    // Next state, one per way the cycle ends (in each, later updates win).
    let last_in = s.last();
    let upd = |cur: Sig, updates: &[(Sig, Sig)]| -> Sig {
        updates.iter().fold(cur, |v, &(c, x)| mux(c, x, v))
    };
    let js_inc = js + 1u32;
    let zero_js = lit(jw, 0u32);
    let one_js = lit(jw, 1u32);
    let ent_emit = ended & oready;
    dec.fin.set(c_emit & final_cons);
    let h = dec.next_hold;
    // Taken: the frame moves on one beat (the take overrides a flush entry's update: with
    // overlap, the next frame's first beat is taken while the last entry is emitted). The
    // frame's enable is the command's at its first beat, whichever way the beat goes.
    let beat_on = mux(ended, bc.value(1), bc.next_sat());
    let taken_en = mux(first, cmd_en, en_q);
    // Not the frame's last beat: on to the next, through the step's stall entries if any.
    let more = dec.next_more;
    more.js.set(mux(has_stall, one_js, zero_js));
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
    h.js.set(upd(
        js,
        &[
            (stall_step & oready, mux(stall_end, zero_js, js_inc)),
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

    // The output register's handshake, and its payload's enable from a complement copy of
    // `out_valid`: the same value, but a net of its own, so that `out_room` drives the control
    // state alone, not the 70-odd enables too (docs/TIMING.md, rule 3). It is built here,
    // before the lanes, and the register's branch below builds its own `last` and `user` muxes:
    // the construction order is the emitted netlist's order, which Yosys and nextpnr follow,
    // and the nic64 TX path's Fmax moves with it (docs/TIMING.md, "Keeping a change").
    let out_reg = (cfg.out == OutStage::Register).then(|| {
        let out_valid = reg_init(1, 0u32).named("out_valid");
        oready.set(!out_valid | m.ready());
        out_valid.set_if(oready, emit_valid);
        let out_empty = reg_init(1, 1u32).named("out_empty");
        out_empty.set_if(oready, !emit_valid);
        let load = (out_empty | m.ready()).named("out_load");
        (out_valid, load)
    });
    let mut data_lanes = Vec::new();
    let mut keep_lanes = Vec::new();
    for i in 0..w {
        let mut groups: Vec<(Lane, Vec<Act>)> = Vec::new();
        let mut index: HashMap<Lane, usize> = HashMap::new();
        for (t, a) in &acts {
            let l = t[i];
            if l == Lane::Zero {
                continue;
            }
            let k = *index.entry(l).or_insert_with(|| {
                groups.push((l, Vec::new()));
                groups.len() - 1
            });
            groups[k].1.push(*a);
        }
        let mut darms = Vec::new();
        let mut karms = Vec::new();
        for (l, conds) in &groups {
            let c = dec.cond(conds);
            if let Some(d) = lane_data(l) {
                darms.push((c, d));
            }
            karms.push((c, lane_keep(l)));
        }
        // A lane no arm selects has keep 0, so its data is free: the last arm is the default
        // (no zero fallback), and a two-source lane is a single 2:1 mux per bit.
        let ddef = darms.pop().map_or_else(|| lit(8, 0u32), |a| a.1);
        data_lanes.push(select(&darms, ddef));
        keep_lanes.push(select(&karms, lit(1, 0u32)));
    }
    data_lanes.reverse();
    keep_lanes.reverse();
    if let Some((out_valid, load)) = out_reg {
        // The payload registers load whenever the output register has room (their contents
        // do not matter while `out_valid` is low): the enable does not wait for the
        // handshake's decode.
        let od = reg(8 * w as u32).enable(load).named("out_data");
        od.set(cat(&data_lanes));
        let ok = reg(w as u32).enable(load).named("out_keep");
        ok.set(cat(&keep_lanes));
        let ol = reg(1).enable(load).named("out_last");
        ol.set(mux(cons_slot, last_in & final_cons, final_ent));
        m.data().set(od);
        m.keep().set(ok);
        m.last().set(ol);
        if let (Some(u), Some(pu), Some(mu)) = (s.user(), user_p, m.user()) {
            let ou = reg(u.width()).enable(load).named("out_user");
            ou.set(mux(cons_slot, u, pu));
            mu.set(ou);
        }
        m.valid().set(out_valid);
        return;
    }
    // The output register slice: its registers load whenever they may, whatever
    // `emit_valid` (a word loaded without its valid is never shown), so only the slice's
    // control flops wait for the handshake.
    let out_last = mux(cons_slot, last_in & final_cons, final_ent);
    let out_user = s.user().zip(user_p).map(|(u, pu)| mux(cons_slot, u, pu));
    let mut fields = vec![cat(&data_lanes), cat(&keep_lanes), out_last];
    fields.extend(out_user);
    fields.reverse();
    let out_q = crate::stream::record_reg_slice("out", cat(&fields), emit_valid);
    oready.set(out_q.s_ready);
    out_q.ready.set(m.ready());
    let dw = 8 * w as u32;
    m.data().set(out_q.data.slice(dw - 1, 0));
    m.keep().set(out_q.data.slice(dw + w as u32 - 1, dw));
    m.last().set(out_q.data.bit(dw + w as u32));
    if let Some(mu) = m.user() {
        mu.set(out_q.data.slice(out_q.data.width() - 1, dw + w as u32 + 1));
    }
    m.valid().set(out_q.valid);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference splice on bytes (the golden models live in the testbench crate).
    fn reference(kind: SpliceKind, f: &[u8], off: usize, n: usize, en: bool) -> Vec<u8> {
        if !en || f.len() < off {
            return f.to_vec();
        }
        match kind {
            SpliceKind::Insert => {
                let ins: Vec<u8> = (0..n).map(|j| 0xa0 + j as u8).collect();
                [&f[..off], &ins[..], &f[off..]].concat()
            }
            SpliceKind::Delete => {
                let end = (off + n).min(f.len());
                [&f[..off], &f[end..]].concat()
            }
        }
    }

    /// Execute a plan on one frame the way the hardware does (P = previous beat, H = beat `ct`
    /// captured when consumed, last = next entry's lane 0 empty), counting busy cycles.
    fn run(plan: &Plan, sat: usize, w: usize, ct: i64, f: &[u8], n: usize) -> (Vec<u8>, usize) {
        let ins: Vec<u8> = (0..n).map(|j| 0xa0 + j as u8).collect();
        let beats: Vec<&[u8]> = f.chunks(w).collect();
        let mut out = Vec::new();
        let mut p: Vec<Option<u8>> = vec![None; w];
        let mut h: Vec<Option<u8>> = vec![None; w];
        let mut cycles = 0;
        let lanes = |t: &Template,
                     cur: &[Option<u8>],
                     p: &[Option<u8>],
                     h: &[Option<u8>]|
         -> Vec<Option<u8>> {
            t.iter()
                .map(|l| match *l {
                    Lane::Cur(i) => cur[i],
                    Lane::P(i) => p[i],
                    Lane::H(i) => h[i],
                    Lane::Ins { j, keep, .. } => match keep {
                        InsKeep::One => Some(ins[j]),
                        InsKeep::Zero => None,
                        InsKeep::Cur(i) => cur[i].map(|_| ins[j]),
                        InsKeep::P(i) => p[i].map(|_| ins[j]),
                    },
                    Lane::Zero => None,
                })
                .collect()
        };
        let push = |v: Vec<Option<u8>>, out: &mut Vec<u8>| {
            let k = v.iter().take_while(|b| b.is_some()).count();
            assert!(v[k..].iter().all(|b| b.is_none()), "keep not contiguous");
            out.extend(v.into_iter().flatten());
        };
        for (m, beat) in beats.iter().enumerate() {
            let st = &plan.steps[m.min(sat)];
            let cur: Vec<Option<u8>> = (0..w).map(|i| beat.get(i).copied()).collect();
            cycles += 1;
            if let Some(t) = &st.cons {
                let v = lanes(t, &cur, &p, &h);
                assert!(v[0].is_some(), "consume emission with empty lane 0");
                push(v, &mut out);
            }
            p = cur.clone();
            if m as i64 == ct {
                h = cur.clone();
            }
            let last = m + 1 == beats.len();
            let list: Vec<&Template> = if last {
                st.entries()
            } else {
                st.stalls.iter().collect()
            };
            for t in list {
                let v = lanes(t, &[], &p, &h);
                if v[0].is_none() {
                    assert!(last, "stall with empty lane 0");
                    break;
                }
                push(v, &mut out);
                cycles += 1;
            }
        }
        (out, cycles)
    }

    #[test]
    fn plans_match_the_reference_on_bytes_for_many_geometries() {
        for kind in [SpliceKind::Insert, SpliceKind::Delete] {
            for w in [1usize, 2, 4, 8, 16, 64] {
                for off in 0..20usize {
                    if kind == SpliceKind::Delete && off == 0 {
                        continue;
                    }
                    for n in 1..10usize {
                        let g = Geo {
                            w: w as u64,
                            off: off as u64,
                            n: n as u64,
                            kind,
                        };
                        let cfg = SpliceCfg {
                            stream: StreamCfg::new(8 * w as u32, 0),
                            off: off as u32,
                            n: n as u32,
                            kind,
                            out: OutStage::Register,
                        };
                        let (en, dis, sat) = plans(&cfg)
                            .unwrap_or_else(|e| panic!("{kind:?} w{w} off{off} n{n}: {e}"));
                        for len in 1..(off + n + 3 * w + 2) {
                            let f: Vec<u8> = (0..len).map(|i| i as u8).collect();
                            for (en_f, plan) in [(true, &en), (false, &dis)] {
                                let (got, cycles) = run(plan, sat, w, g.ct().0, &f, n);
                                let want = reference(kind, &f, off, n, en_f);
                                assert_eq!(
                                    got, want,
                                    "{kind:?} w{w} off{off} n{n} len{len} en{en_f}"
                                );
                                let (ib, ob) = (len.div_ceil(w), want.len().div_ceil(w));
                                match kind {
                                    // One cycle per input beat; the flush shares the next
                                    // frame's first (silent) cycle.
                                    SpliceKind::Delete => {
                                        assert!(cycles <= ib + 1);
                                        assert!(plan
                                            .steps
                                            .iter()
                                            .all(|s| s.stalls.is_empty() && s.flush.len() <= 1));
                                        assert!(plan.steps[0].cons.is_none());
                                    }
                                    // Exactly as many cycles as output beats.
                                    SpliceKind::Insert => assert_eq!(
                                        cycles,
                                        ob.max(ib),
                                        "{kind:?} w{w} off{off} n{n} len{len} en{en_f}"
                                    ),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
