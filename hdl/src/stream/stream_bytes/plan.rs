//! The splice's plan, computed at elaboration from the byte mapping of a long frame (see
//! [the engine's doc](super)): for every consumed beat, which output beat is emitted and where
//! each of its lanes comes from; then, from the plans, which registers the lanes read and where
//! each template and each handshake condition applies. Plain Rust: no signals.

use super::SpliceCfg;

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
    pub(super) fn entries(&self) -> Vec<&Template> {
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
pub(super) struct Geo {
    pub w: u64,
    pub off: u64,
    pub n: u64,
    pub kind: SpliceKind,
}

impl Geo {
    /// Beat holding byte `off - 1` (-1 when `off = 0`) and how many bytes of it precede `off`.
    pub(super) fn ct(&self) -> (i64, u64) {
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
pub(super) struct Act {
    pub prog: usize,
    pub slot: usize,
    pub a: usize,
    pub b: usize,
    pub open: bool,
}

/// Merge activations into maximal beat ranges per program and slot (a range decode is cheaper
/// than an OR of runs).
pub(super) fn merge_acts(v: &[Act]) -> Vec<Act> {
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

/// The plans of enabled (program 0) and disabled (program 1) frames, each with its runs of
/// equal steps.
pub(super) struct Progs<'a> {
    pub plans: [&'a Plan; 2],
    pub runs: [Vec<(usize, usize)>; 2],
}

impl<'a> Progs<'a> {
    pub(super) fn new(en: &'a Plan, dis: &'a Plan, sat: usize) -> Self {
        Progs {
            plans: [en, dis],
            runs: [runs(en, sat), runs(dis, sat)],
        }
    }

    /// Every template of both plans.
    fn templates(&self) -> impl Iterator<Item = &Template> {
        self.plans.iter().flat_map(|p| {
            p.steps.iter().flat_map(|st| {
                st.cons
                    .iter()
                    .chain(st.stalls.iter())
                    .chain(st.flush.iter())
            })
        })
    }
}

/// Which lanes of the input beat and which registers the templates read, per byte lane (the
/// inserted bytes per byte of the command).
pub(super) struct LaneUse {
    /// Input lanes read as they arrive.
    pub cur: Vec<bool>,
    pub cur_keep: Vec<bool>,
    /// Lanes of the previous beat (`P`).
    pub p: Vec<bool>,
    pub p_keep: Vec<bool>,
    /// Lanes of the beat before the splice (`H`).
    pub h: Vec<bool>,
    /// Inserted bytes read after the first beat (`INS`).
    pub ins: Vec<bool>,
}

/// The lanes and registers the plans read, on `w` byte lanes with `n` inserted bytes. Lane 0
/// of every entry is among them (it tells a frame's last beat).
pub(super) fn lane_use(progs: &Progs, w: usize, n: usize) -> LaneUse {
    let mut u = LaneUse {
        cur: vec![false; w],
        cur_keep: vec![false; w],
        p: vec![false; w],
        p_keep: vec![false; w],
        h: vec![false; w],
        ins: vec![false; n],
    };
    for t in progs.templates() {
        for l in t {
            match *l {
                Lane::Cur(i) => {
                    u.cur[i] = true;
                    u.cur_keep[i] = true;
                }
                Lane::P(i) => {
                    u.p[i] = true;
                    u.p_keep[i] = true;
                }
                Lane::H(i) => u.h[i] = true,
                Lane::Ins { j, cmd, keep } => {
                    if !cmd {
                        u.ins[j] = true;
                    }
                    match keep {
                        InsKeep::Cur(i) => u.cur_keep[i] = true,
                        InsKeep::P(i) => u.p_keep[i] = true,
                        _ => {}
                    }
                }
                Lane::Zero => {}
            }
        }
    }
    u
}

/// Where the templates and the handshake's conditions apply, over the runs of both programs.
/// The conditions that end a frame are grouped by the lane whose keep tells it (`None`: always
/// the last), so that each group is one registered decode ANDed with a keep bit.
pub(super) struct Acts {
    /// Every template with where it applies (decoded per lane).
    pub templates: Vec<(Template, Act)>,
    /// Consume steps that emit.
    pub emit: Vec<Act>,
    /// Consume steps followed by stall entries.
    pub stall: Vec<Act>,
    /// The last stall entry of a step.
    pub stall_end: Vec<Act>,
    /// Consume emissions that end the frame when their beat is its last.
    pub final_cons: Vec<(Option<Lane>, Vec<Act>)>,
    /// Entries that end the frame.
    pub final_ent: Vec<(Option<Lane>, Vec<Act>)>,
}

/// The activations of both programs' runs.
pub(super) fn acts(progs: &Progs) -> Acts {
    let mut v = Acts {
        templates: Vec::new(),
        emit: Vec::new(),
        stall: Vec::new(),
        stall_end: Vec::new(),
        final_cons: Vec::new(),
        final_ent: Vec::new(),
    };
    let group = |v: &mut Vec<(Option<Lane>, Vec<Act>)>, l: Option<Lane>, a: Act| match v
        .iter_mut()
        .find(|g| g.0 == l)
    {
        Some(g) => g.1.push(a),
        None => v.push((l, vec![a])),
    };
    for (pi, (plan, runs)) in progs.plans.iter().zip(&progs.runs).enumerate() {
        let nr = runs.len();
        for (ri, &(a, b)) in runs.iter().enumerate() {
            let open = ri + 1 == nr;
            let st = &plan.steps[a];
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
                v.emit.push(at(0));
                v.templates.push((t.clone(), at(0)));
                group(&mut v.final_cons, entries.first().map(|e| e[0]), at(0));
            }
            if !st.stalls.is_empty() {
                v.stall.push(at(0));
                v.stall_end.push(at(st.stalls.len()));
            }
            for (k, t) in entries.iter().enumerate() {
                let j = k + 1;
                v.templates.push(((*t).clone(), at(j)));
                group(&mut v.final_ent, entries.get(j).map(|nx| nx[0]), at(j));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::super::{OutStage, StreamCfg};
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
