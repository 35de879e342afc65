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
//! Each lane source is selected by one decode per program and slot over the merged range of
//! beats that use it; past the first beat that decode reads only flops (the frame's enable
//! `en_q`, not the command mux behind `ended`). A lane's data has no zero default (a lane
//! nothing selects has keep 0), so a two-source lane is a 2:1 mux per bit. This took the nic64 RX VLAN strip from
//! 424 to 111 LUT4 and 155.6 to 217.8 MHz on ECP5 (figures and command in
//! the `stream_delete` module docs).

use super::{stream_in, stream_out, StreamCfg};
use nicgen_edsl::prelude::*;
use std::collections::HashMap;

/// On buses up to 64 bits the beat counter is one-hot when it has at most this many states (a
/// range decode is an OR of a few flops: 117 -> 158 MHz for the 8-bit delete on ECP5). Wider
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

/// Parameters of a splice block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpliceCfg {
    pub stream: StreamCfg,
    pub off: u32,
    pub n: u32,
    pub kind: SpliceKind,
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
    fn is(&self, v: usize) -> Sig {
        if self.one_hot {
            self.r.bit(v as u32)
        } else {
            self.r.eq(v as u64)
        }
    }
    /// In `a..=b`, or `a..` when `open`.
    fn range(&self, a: usize, b: usize, open: bool) -> Sig {
        let b = if open { self.max } else { b.min(self.max) };
        if a > b {
            return lit(1, 0u32);
        }
        if a == 0 && b == self.max {
            return lit(1, 1u32);
        }
        if self.one_hot {
            return self.r.slice(b as u32, a as u32).or_reduce();
        }
        let ge = if a == 0 {
            lit(1, 1u32)
        } else {
            self.r.ge(a as u64)
        };
        if open {
            ge
        } else if a == b {
            self.r.eq(a as u64)
        } else {
            ge & self.r.le(b as u64)
        }
    }
    /// The value plus one, saturating at `max`.
    fn next_sat(&self) -> Sig {
        if self.one_hot {
            let m = self.max as u32;
            let top = self.r.bit(m) | self.r.bit(m - 1);
            if m == 1 {
                cat(&[top, lit(1, 0u32)])
            } else {
                cat(&[top, self.r.slice(m - 2, 0), lit(1, 0u32)])
            }
        } else {
            mux(self.r.eq(self.max as u64), self.r, self.r + 1u32)
        }
    }
    fn set_if(&self, c: Sig, v: Sig) {
        self.r.set_if(c, v);
    }
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
    let cmd_data = input("s_axis_cmd_tdata", cmd_w);
    let cmd_valid = input("s_axis_cmd_tvalid", 1);
    let cmd_ready = output_wire("s_axis_cmd_tready", 1);
    let cmd_en = cmd_data.bit(0);

    // State: consumed beats of this frame (saturating), stall/flush index, frame ended.
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

    // Range decodes: consume side on `bc` (forced to 0 while `ended`: only a first beat can be
    // consumed then), entries on `bc - 1` (i.e. `bc` in the range shifted by one).
    let bc_in = |a: usize, b: usize, open: bool| bc.range(a, b, open);
    let cons_in = |a: usize, b: usize, open: bool| -> Sig {
        let r = !ended & bc_in(a, b, open);
        if a == 0 {
            r | ended
        } else {
            r
        }
    };
    let ent_in = |a: usize, b: usize, open: bool| -> Sig { bc_in(a + 1, b + 1, open) };
    let js_is = |j: usize| js.eq(j as u64);

    let first = (ended | bc.is(0)).named("first_beat");
    let en_cons = mux(first, cmd_en, en_q).named("en_cons");
    let oready = wire(1).named("out_room");
    let cons_slot_norm = (!ended & js.eq(0u64)).named("consume_slot");

    // Per program: runs and their decodes.
    struct Prog<'a> {
        plan: &'a Plan,
        runs: Vec<(usize, usize)>,
        cons_sel: Sig,
        ent_sel: Sig,
    }
    let progs = [
        Prog {
            plan: en_plan,
            runs: runs(en_plan, sat),
            cons_sel: en_cons,
            ent_sel: en_q,
        },
        Prog {
            plan: dis_plan,
            runs: runs(dis_plan, sat),
            cons_sel: !en_cons,
            ent_sel: !en_q,
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

    let take = wire(1).named("take");
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
            !ended & bc.is(ct as usize)
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
    en_q.set_if(take & first, cmd_en);
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

    // Template activations (as runs, decoded per lane below), last-beat logic, stall counts.
    let mut acts: Vec<(Template, Act)> = Vec::new();
    let mut emits_arms: Vec<Sig> = Vec::new(); // consume step emits
    let mut final_cons_arms: Vec<Sig> = Vec::new(); // consume emission is the frame's last
    let mut has_stall_arms: Vec<Sig> = Vec::new(); // after a non-last consume: stalls follow
    let mut stall_end_arms: Vec<Sig> = Vec::new(); // stall `js` is the last stall
    let mut final_ent_arms: Vec<Sig> = Vec::new(); // entry `js` is the frame's last beat
    for (pi, p) in progs.iter().enumerate() {
        let nr = p.runs.len();
        for (ri, &(a, b)) in p.runs.iter().enumerate() {
            let open = ri + 1 == nr;
            let st = &p.plan.steps[a];
            // Past the first beat (`a >= 1`: `bc >= 1`, not `ended`) the frame's enable is the
            // flop `en_q`, so the command mux (behind `first`, from `ended`) stays out of the
            // decodes that select the lanes.
            let en_sel = if a == 0 { p.cons_sel } else { p.ent_sel };
            let csel = (cons_in(a, b, open) & en_sel).named(&format!(
                "c_{}_{a}",
                if std::ptr::eq(p.plan, en_plan) {
                    "en"
                } else {
                    "dis"
                }
            ));
            let esel = ent_in(a, b, open) & p.ent_sel;
            let entries = st.entries();
            // Consume side.
            if let Some(t) = &st.cons {
                emits_arms.push(csel);
                acts.push((
                    t.clone(),
                    Act {
                        prog: pi,
                        slot: 0,
                        a,
                        b,
                        open,
                    },
                ));
                let fin = match entries.first() {
                    None => lit(1, 1u32),
                    Some(e) => !lane_keep_at_consume(&e[0]),
                };
                final_cons_arms.push(csel & fin);
            }
            if !st.stalls.is_empty() {
                has_stall_arms.push(csel);
                stall_end_arms.push(esel & js_is(st.stalls.len()));
            }
            for (k, t) in entries.iter().enumerate() {
                let j = k + 1;
                let sel = esel & js_is(j);
                acts.push((
                    (*t).clone(),
                    Act {
                        prog: pi,
                        slot: j,
                        a,
                        b,
                        open,
                    },
                ));
                let fin = match entries.get(j) {
                    None => lit(1, 1u32),
                    Some(nx) => !lane_keep(&nx[0]),
                };
                final_ent_arms.push(sel & fin);
            }
        }
    }
    let or_all = |v: &[Sig]| -> Sig {
        v.iter()
            .copied()
            .reduce(|a, b| a | b)
            .unwrap_or_else(|| lit(1, 0u32))
    };
    let emits = or_all(&emits_arms).named("cons_emits");
    let final_cons = or_all(&final_cons_arms).named("cons_final");
    let has_stall = or_all(&has_stall_arms).named("has_stall");
    let stall_end = or_all(&stall_end_arms).named("stall_end");
    let final_ent = (ended & or_all(&final_ent_arms)).named("entry_final");
    // A lane source's condition: its activations merged into maximal beat ranges per program
    // and slot, one range decode each (a range decode is cheaper than an OR of runs, and the
    // lanes a program selects at every beat need none). Consume ranges are ANDed with
    // `cons_slot_norm` (not `ended`), so they decode `bc` alone; one from beat 0 takes the
    // command mux (`en_cons`, right at every beat), one past the first beat the flop `en_q`
    // (measured: a mux without `ended` for beat 0 let ABC fold it into every insert lane).
    let act_cond = |v: &[Act]| -> Sig {
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
        let terms: Vec<Sig> = merged
            .iter()
            .map(|r| {
                let p = &progs[r.prog];
                if r.slot == 0 {
                    let en_sel = if r.a == 0 { p.cons_sel } else { p.ent_sel };
                    bc_in(r.a, r.b, r.open) & en_sel & cons_slot_norm
                } else {
                    ent_in(r.a, r.b, r.open) & p.ent_sel & js_is(r.slot)
                }
            })
            .collect();
        or_all(&terms)
    };

    // Handshake.
    let overlap = en_plan.steps[0].cons.is_none() && dis_plan.steps[0].cons.is_none();
    let c_emit = (cons_slot_norm & emits).named("cons_emit");
    let slot = if overlap {
        cons_slot_norm | final_ent
    } else {
        cons_slot_norm
    };
    let out_ok = !(c_emit | ended) | oready;
    let s_ready = (slot & (!first | cmd_valid) & out_ok).named("s_ready");
    s.ready().set(s_ready);
    take.set(s.valid() & s_ready);
    cmd_ready.set(first & slot & out_ok & s.valid());
    let stall_step = (!ended & !js.eq(0u64)).named("stall_step");
    let emit_valid =
        ((c_emit & s.valid() & (!first | cmd_valid)) | stall_step | ended).named("emit_valid");

    // State updates (later assignments win).
    let last_in = s.last();
    // stall emitted
    js.set_if(
        stall_step & oready,
        mux(stall_end, lit(jw, 0u32), js + 1u32),
    );
    // entry emitted
    let ent_emit = ended & oready;
    js.set_if(ent_emit, mux(final_ent, lit(jw, 0u32), js + 1u32));
    ended.set_if(ent_emit & final_ent, 0u32);
    bc.set_if(ent_emit & final_ent, bc.value(0));
    // consume
    let done_now = last_in & c_emit & final_cons;
    let to_end = last_in & !done_now;
    bc.set_if(take, mux(ended, bc.value(1), bc.next_sat()));
    bc.set_if(take & done_now, bc.value(0));
    ended.set_if(take, to_end);
    js.set_if(
        take,
        mux(
            to_end | (!last_in & has_stall),
            lit(jw, 1u32),
            lit(jw, 0u32),
        ),
    );

    // The output register.
    let out_valid = reg_init(1, 0u32).named("out_valid");
    oready.set(!out_valid | m.ready());
    out_valid.set_if(oready, emit_valid);
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
            let c = act_cond(conds);
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
    // The payload registers load whenever the output register has room (their contents do not
    // matter while `out_valid` is low): the enable does not wait for the handshake decode.
    let od = reg(8 * w as u32).enable(oready).named("out_data");
    od.set(cat(&data_lanes));
    let ok = reg(w as u32).enable(oready).named("out_keep");
    ok.set(cat(&keep_lanes));
    let ol = reg(1).enable(oready).named("out_last");
    ol.set(mux(cons_slot_norm, last_in & final_cons, final_ent));
    m.data().set(od);
    m.keep().set(ok);
    m.last().set(ol);
    if let (Some(u), Some(pu), Some(mu)) = (s.user(), user_p, m.user()) {
        let ou = reg(u.width()).enable(oready).named("out_user");
        ou.set(mux(cons_slot_norm, u, pu));
        mu.set(ou);
    }
    m.valid().set(out_valid);
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
