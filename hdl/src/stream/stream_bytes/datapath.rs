//! The splice's datapath: the input's history the lanes read (the previous beat `P`, the beat
//! before the splice `H`, the inserted bytes `INS`), the lane muxes, and the two output stages
//! ([`OutStage`](super::OutStage)).

use super::control::{Control, Decodes};
use super::plan::{Act, Acts, Geo, InsKeep, Lane, LaneUse};
use super::SpliceCfg;
use crate::stream::{record_reg_slice, Beat, Stream};
use nicgen_edsl::prelude::*;
use std::collections::HashMap;

/// Byte `i` of `x`.
fn byte(x: Sig, i: usize) -> Sig {
    x.slice(8 * i as u32 + 7, 8 * i as u32)
}

/// What the lanes read besides the current beat, per byte lane (`None`: no template reads it).
pub(super) struct History {
    cur_data: Sig,
    cur_keep: Sig,
    /// The command's inserted bytes (read at a frame's first beat).
    cmd_bytes: Sig,
    /// The previous beat (`P`): data and keep.
    p_data: Vec<Option<Sig>>,
    p_keep: Vec<Option<Sig>>,
    /// The beat before the splice (`H`): data and keep.
    h_data: Vec<Option<(Sig, Sig)>>,
    /// The inserted bytes, read after the first beat (`INS`).
    ins_q: Vec<Option<Sig>>,
    /// The previous beat's `tuser`.
    pub user_p: Option<Sig>,
}

/// The history registers of input `s`, taken with `take`; `cmd_bytes` are the command's
/// inserted bytes.
pub(super) fn history(
    cfg: &SpliceCfg,
    s: &Stream,
    cmd_bytes: Sig,
    ctl: &mut Control,
    take: Sig,
    used: &LaneUse,
) -> History {
    let w = (cfg.stream.data_bits / 8) as usize;
    let n = cfg.n as usize;
    let p_data: Vec<Option<Sig>> = (0..w)
        .map(|i| {
            used.p[i].then(|| {
                let r = reg(8).enable(take).named(&format!("p_data{i}"));
                r.set(byte(s.data(), i));
                r
            })
        })
        .collect();
    let p_keep: Vec<Option<Sig>> = (0..w)
        .map(|i| {
            used.p_keep[i].then(|| {
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
            ctl.first
        } else {
            let ct = ct as usize;
            ctl.dec.flop("at_ct".into(), "at_ct", 0, |st| {
                !st.ended & st.bc.is(st.beats, ct)
            })
        };
        (take & ctl.en_cons & at_ct).named("h_load")
    } else {
        lit(1, 0u32)
    };
    let h_data: Vec<Option<(Sig, Sig)>> = (0..w)
        .map(|i| {
            used.h[i].then(|| {
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
            used.ins[j].then(|| {
                let r = reg(8)
                    .enable(take & ctl.first)
                    .named(&format!("ins_byte{j}"));
                r.set(byte(cmd_bytes, j));
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
    if (0..w).any(|i| !used.cur[i] && !used.p[i] && !used.h[i]) {
        s.data().unused();
    }
    if (0..w).any(|i| !used.cur_keep[i] && !used.p_keep[i] && !used.h[i]) {
        s.keep().unused();
    }
    History {
        cur_data: s.data(),
        cur_keep: s.keep(),
        cmd_bytes,
        p_data,
        p_keep,
        h_data,
        ins_q,
        user_p,
    }
}

impl History {
    /// A lane's data byte as seen in the cycle it is emitted (`None` for an empty lane).
    fn lane_data(&self, l: &Lane) -> Option<Sig> {
        match *l {
            Lane::Cur(i) => Some(byte(self.cur_data, i)),
            Lane::P(i) => self.p_data[i],
            Lane::H(i) => self.h_data[i].map(|h| h.0),
            Lane::Ins { j, cmd: true, .. } => Some(byte(self.cmd_bytes, j)),
            Lane::Ins { j, .. } => self.ins_q[j],
            Lane::Zero => None,
        }
    }

    /// A lane's keep bit as seen in the cycle it is emitted.
    pub(super) fn lane_keep(&self, l: &Lane) -> Sig {
        match *l {
            Lane::Cur(i) => self.cur_keep.bit(i as u32),
            Lane::P(i) => self.p_keep[i].expect("noted"),
            Lane::H(i) => self.h_data[i].expect("noted").1,
            Lane::Ins { keep, .. } => match keep {
                InsKeep::One => lit(1, 1u32),
                InsKeep::Zero => lit(1, 0u32),
                InsKeep::Cur(i) => self.cur_keep.bit(i as u32),
                InsKeep::P(i) => self.p_keep[i].expect("noted"),
            },
            Lane::Zero => lit(1, 0u32),
        }
    }

    /// The keep bit of a lane of an entry after beat `m`, as predicted while `m` is being
    /// consumed (`P` is then the current beat).
    pub(super) fn lane_keep_at_consume(&self, l: &Lane) -> Sig {
        match *l {
            Lane::P(i) => self.cur_keep.bit(i as u32),
            Lane::Ins {
                keep: InsKeep::P(i),
                ..
            } => self.cur_keep.bit(i as u32),
            other => self.lane_keep(&other),
        }
    }
}

/// The output beat before the output stage: one mux per byte lane.
pub(super) struct Lanes {
    /// Data bytes, the highest lane first (as `cat` takes them).
    pub data: Vec<Sig>,
    /// Keep bits, likewise.
    pub keep: Vec<Sig>,
}

/// Every lane's mux: one arm per source the templates give it, each selected by the registered
/// condition of the activations that use it.
pub(super) fn lanes(w: usize, acts: &Acts, dec: &mut Decodes, hist: &History) -> Lanes {
    let mut data_lanes = Vec::new();
    let mut keep_lanes = Vec::new();
    for i in 0..w {
        let mut groups: Vec<(Lane, Vec<Act>)> = Vec::new();
        let mut index: HashMap<Lane, usize> = HashMap::new();
        for (t, a) in &acts.templates {
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
            if let Some(d) = hist.lane_data(l) {
                darms.push((c, d));
            }
            karms.push((c, hist.lane_keep(l)));
        }
        // A lane no arm selects has keep 0, so its data is free: the last arm is the default
        // (no zero fallback), and a two-source lane is a single 2:1 mux per bit.
        let ddef = darms.pop().map_or_else(|| lit(8, 0u32), |a| a.1);
        data_lanes.push(select(&darms, ddef));
        keep_lanes.push(select(&karms, lit(1, 0u32)));
    }
    data_lanes.reverse();
    keep_lanes.reverse();
    Lanes {
        data: data_lanes,
        keep: keep_lanes,
    }
}

/// What the output beat's `last` and `user` are made of (the consume step's or an entry's).
pub(super) struct OutSide {
    /// A consume step is emitting (else a stall or flush entry).
    pub cons_slot: Sig,
    /// The input beat's `tlast`.
    pub last_in: Sig,
    /// The consume emission is the frame's last (when its beat is).
    pub final_cons: Sig,
    /// The entry emitted is the frame's last.
    pub final_ent: Sig,
    /// The input beat's `tuser` and the previous beat's (`P`).
    pub user: Option<(Sig, Sig)>,
}

impl OutSide {
    fn last(&self) -> Sig {
        mux(
            self.cons_slot,
            self.last_in & self.final_cons,
            self.final_ent,
        )
    }
    fn user(&self) -> Option<Sig> {
        self.user.map(|(u, pu)| mux(self.cons_slot, u, pu))
    }
}

/// The output register's handshake ([`OutStage::Register`](super::OutStage::Register)).
pub(super) struct OutReg {
    /// `m_axis_tvalid` (copy 0 of `out_valid`).
    pub valid: Sig,
    /// The payload registers' enable.
    pub load: Sig,
}

/// The output register's valid and room (it drives `oready`), built before the lanes: the
/// construction order is the emitted netlist's order, which Yosys and nextpnr follow, and the
/// nic64 TX path's Fmax moves with it (docs/TIMING.md, "Keeping a change"). The payload's
/// enable reads the complement copy of `out_valid` (`out_valid_n1`), the same value on a net of
/// its own, so that `out_room` drives the control state alone, not the 70-odd enables too
/// (docs/TIMING.md, rule 3).
pub(super) fn out_reg_handshake(m: &Stream, oready: Sig, emit_valid: Sig) -> OutReg {
    let out_valid = Replicated::new("out_valid", 2, 1, Some(0));
    oready.set(out_valid.get_n(0) | m.ready());
    out_valid.set_if(oready, emit_valid);
    let load = (out_valid.get_n(1) | m.ready()).named("out_load");
    OutReg {
        valid: out_valid.get(0),
        load,
    }
}

/// The output register: the lanes load straight into it whenever it has room (its contents do
/// not matter while `out_valid` is low), so the enable does not wait for the handshake's
/// decode.
pub(super) fn out_register(r: OutReg, lanes: &Lanes, side: &OutSide, m: &Stream) {
    let w = lanes.keep.len() as u32;
    let od = reg(8 * w).enable(r.load).named("out_data");
    od.set(cat(&lanes.data));
    let ok = reg(w).enable(r.load).named("out_keep");
    ok.set(cat(&lanes.keep));
    let ol = reg(1).enable(r.load).named("out_last");
    ol.set(side.last());
    m.data().set(od);
    m.keep().set(ok);
    m.last().set(ol);
    if let (Some((u, _)), Some(mu)) = (side.user, m.user()) {
        let ou = reg(u.width()).enable(r.load).named("out_user");
        ou.set(side.user().expect("the input has tuser"));
        mu.set(ou);
    }
    m.valid().set(r.valid);
}

/// The output register slice ([`OutStage::Slice`](super::OutStage::Slice)): its registers load
/// whenever they may, whatever `emit_valid` (a word loaded without its valid is never shown),
/// so only the slice's control flops wait for the handshake; its upstream ready drives
/// `oready`.
pub(super) fn out_slice(
    cfg: &SpliceCfg,
    lanes: &Lanes,
    side: &OutSide,
    emit_valid: Sig,
    oready: Sig,
    m: &Stream,
) {
    let shape = cfg.stream.beat();
    let last = side.last();
    let user = side.user().unwrap_or_else(|| Sig::absent("Beat", "user"));
    let word = shape.pack(&Beat {
        data: cat(&lanes.data),
        keep: cat(&lanes.keep),
        last,
        user,
    });
    let out_q = record_reg_slice("out", word, emit_valid);
    oready.set(out_q.s_ready);
    out_q.ready.set(m.ready());
    m.set_beat(&shape.unpack(out_q.data));
    m.valid().set(out_q.valid);
}
