//! Stages 4..17, the extension-header walk: per extension header two read stages (the word at
//! the header offset, and the TCP/UDP fields there if the walk has arrived: first an AND-OR
//! per group of at most 8 words, registered, then the OR of the groups and the next select's
//! length compares) and a compute stage (checks, next offset, next select); a fifth header's
//! read stages only latch the TCP/UDP fields or give up (`EXT_LIMIT`).

use super::capture::Window;
use super::l3::Carry;
use super::tunnel::TunRead;
use super::{code, is_ext, malformed, stage, MAX_EXT_HEADERS, S_L4, S_WALK0};
use nicgen_edsl::prelude::*;
use std::collections::HashMap;

/// Words a read stage can see: the first read is the L4 header of IPv4 (words 8..=20) or the
/// first header after IPv6 (13..=15); after `k` extension headers the offset is at least
/// 54 + 8k (word 13 + 2k). Words past `(window - 3) / 4` have no byte in the window.
pub(super) fn read_range(k: u32, window: u32) -> (u32, u32) {
    let last = (window - 3) / 4;
    if k == 0 {
        (8, last.min(20))
    } else {
        (13 + 2 * k, last)
    }
}

/// A one-hot select: `(word index, bit)`.
pub(super) type Sel = Vec<(u32, Sig)>;

/// The two registers of a select bit: `sel` (no reset) and `sel_l4` (reset to 0).
pub(super) fn sel_regs(hit: Sig, name: &str) -> (Sig, Sig) {
    let l4 = reg_init(1, 0u32).named(&format!("{name}_l4"));
    l4.set(hit);
    (stage(hit, name), l4)
}

/// AND-OR mux with a registered one-hot select (bytes beyond the window fold to 0).
fn pick(sel: &[(u32, Sig)], mut at: impl FnMut(u32) -> Sig, width: u32) -> Sig {
    let terms: Vec<Sig> = sel
        .iter()
        .map(|(j, bit)| at(*j) & bit.repl(width))
        .collect();
    or_tree(terms, width)
}

/// OR as a balanced tree (a chain maps to a LUT level more); 0 for no terms.
fn or_tree(mut terms: Vec<Sig>, width: u32) -> Sig {
    if terms.is_empty() {
        return lit(width, 0u32);
    }
    while terms.len() > 1 {
        terms = terms
            .chunks(2)
            .map(|c| if c.len() == 2 { c[0] | c[1] } else { c[0] })
            .collect();
    }
    terms[0]
}

/// The first level of a read stage's mux: the select in groups of at most 8 words (an 8-term
/// AND-OR is two LUT4 levels), as even as possible.
fn groups(sel: &[(u32, Sig)]) -> Vec<Sel> {
    let g = sel.len().div_ceil(8).max(1);
    let size = sel.len().div_ceil(g).max(1);
    sel.chunks(size).map(|c| c.to_vec()).collect()
}

/// State of the extension-header walk between walk stages.
#[derive(Clone)]
pub(super) struct Walk {
    /// One-hot word select for the next read stage: `(word index, bit)` (all 0 when the word
    /// is beyond the window).
    pub sel: Vec<(u32, Sig)>,
    /// A second register of the same select for the UDP length and TCP data offset muxes, so
    /// each copy drives 32 or 20 AND-OR inputs instead of 52. It has a reset (to 0, harmless:
    /// the stage is not valid then) so that synthesis does not merge it with `sel`, which has
    /// none.
    pub sel_l4: Vec<(u32, Sig)>,
    /// Offset of the current header (bytes from the frame start).
    pub p: Sig,
    /// `ip_end - p`, 18 bits two's complement (negative only in frames whose L3 checks
    /// failed): carried along the walk, so no read stage subtracts before it compares.
    pub rem: Sig,
    /// The word index `m` (`p / 4`) the next read stage derives its select differences from:
    /// that of `p`, or anything when the walk is not stepping (its select does not matter
    /// then), so it is the adder's output without the `walking` mux, and a register of its own
    /// (not on `p`'s fan-out).
    pub p_sel: Option<Sig>,
    /// Protocol / next-header value of the header at `p`.
    pub nh: Sig,
    /// `nh == 44` (a fragment header), registered with `nh` so that the read stage's selects
    /// are not behind the compare.
    pub nh_frag: Sig,
    pub walking: Sig,
    pub latched: Sig,
    pub ecode: Sig,
    pub frag: Sig,
    pub ports: Option<Sig>,
    pub ulen: Option<Sig>,
    pub doff: Option<Sig>,
    /// TCP/UDP fields read by the last read stage, taken (if `latch`) in the next stage, so the
    /// latch mux is not behind the word mux.
    pub pending: Option<Pending>,
    /// The last step's header ran past the payload (`len >= rem / 8`), applied in the next
    /// stage, so the length compare is not behind the other checks.
    pub trunc_len: Option<Sig>,
}

#[derive(Clone, Copy)]
pub(super) struct Pending {
    latch: Sig,
    word: Sig,
    ulen: Sig,
    doff: Sig,
}

impl Walk {
    /// The state one stage on, through the first read stage: the select is used up there
    /// (by the group muxes), and so is `p_sel` (by the next select's differences). At the first
    /// read `latched` and `ecode` are still constants, and at the last `nh_frag` is.
    fn delayed(&self, st: u32, first: bool, last: bool) -> Walk {
        let d = |x: Sig, nm: &str| stage(x, &format!("{nm}_s{st}"));
        let o = |x: Option<Sig>, nm: &str| x.map(|v| d(v, nm));
        Walk {
            sel: Vec::new(),
            sel_l4: Vec::new(),
            p: d(self.p, "p"),
            rem: d(self.rem, "rem"),
            p_sel: None,
            nh: d(self.nh, "nh"),
            nh_frag: if last {
                self.nh_frag
            } else {
                d(self.nh_frag, "nh_frag")
            },
            walking: d(self.walking, "walking"),
            latched: if first {
                self.latched
            } else {
                d(self.latched, "latched")
            },
            ecode: if first {
                self.ecode
            } else {
                d(self.ecode, "ecode")
            },
            frag: d(self.frag, "frag"),
            ports: o(self.ports, "ports"),
            ulen: o(self.ulen, "ulen"),
            doff: o(self.doff, "doff"),
            pending: None,
            trunc_len: None,
        }
    }

    /// Ports, UDP length and TCP data offset with the pending read taken in.
    fn settle(&self) -> (Sig, Sig, Sig) {
        let p = self.pending.expect("a read stage came before");
        let take = |new: Sig, old: Option<Sig>| match old {
            Some(o) => mux(p.latch, new, o),
            None => new,
        };
        (
            take(p.word, self.ports),
            take(p.ulen, self.ulen),
            take(p.doff, self.doff),
        )
    }
}

/// `<x>_s<st>`, the name of a stage's register.
fn n(x: &str, st: u32) -> String {
    format!("{x}_s{st}")
}

/// The stage being built: its number, its valid and the carried fields.
struct Pipe {
    st: u32,
    valid: Sig,
    carry: Carry,
}

impl Pipe {
    /// The stage's valid register, `v<st>`.
    fn enter(&mut self) {
        let vr = reg_init(1, 0u32).named(&format!("v{}", self.st));
        vr.set(self.valid);
        self.valid = vr;
    }

    /// The carried fields into the next stage.
    fn leave(&mut self) {
        let st = self.st;
        self.carry = self.carry.map(&mut |x, nm| stage(x, &n(nm, st)));
        self.st += 1;
    }
}

/// What the walk hands to the TCP/UDP stage.
pub(super) struct Walked {
    /// The stage's valid.
    pub valid: Sig,
    pub carry: Carry,
    /// The walk's last state: the TCP/UDP header at `p` (protocol `nh`), its fields taken in.
    pub walk: Walk,
    /// The L4 length (`ip_end - p`).
    pub rem: Sig,
    /// The checks against constants: TCP too short, TCP header past the window, UDP too short,
    /// UDP header past the window.
    pub l4_pre: [Sig; 4],
    /// The tunnel header's bytes at the L4 offset, in stage-18 registers (with
    /// `HdrParseCfg::tunnels`).
    pub tun: Option<TunRead>,
}

/// The walk, from its state after stage 3 to the TCP/UDP stage. `ports_wanted`: some view
/// carries the ports (else the word's port half is not used); `tunnels`: read the tunnel
/// header's bytes too ([`super::tunnel::read`]).
pub(super) fn walk(
    walk: Walk,
    carry: Carry,
    valid: Sig,
    win: &mut Window,
    w: u32,
    ports_wanted: bool,
    tunnels: bool,
) -> Walked {
    let mut pipe = Pipe {
        st: S_WALK0,
        valid,
        carry,
    };
    let mut walk = walk;
    for k in 0..MAX_EXT_HEADERS {
        let g = read_groups(&mut pipe, &mut walk, k, win, w);
        let r = read_next(&mut pipe, walk, g, w, ports_wanted);
        walk = compute(&mut pipe, r, k);
    }
    // The offset is final here: the fifth read only latches the TCP/UDP fields or gives up.
    let tun = tunnels.then(|| super::tunnel::read(walk.p, win, w));
    let g = read_groups(&mut pipe, &mut walk, MAX_EXT_HEADERS, win, w);
    Walked {
        tun,
        ..read_last(pipe, walk, g, w)
    }
}

/// The first read stage's registers.
struct Groups {
    /// Per group: the word, the UDP length, the TCP data offset.
    gw: Vec<Sig>,
    gu: Vec<Sig>,
    gd: Vec<Sig>,
    /// Per next-select word `j`: its flag per group.
    gto: Vec<(u32, Vec<Sig>)>,
    /// `m` within the window's words (else the next select is 0).
    m_small: Option<Sig>,
    /// Per next-select word `j`: the `even` and fragment-hit compares of `m`.
    pre: Vec<(u32, Sig, Sig)>,
}

/// Read, first half: the mux per group, and the compares of the next select that do not need
/// the word. `walk` moves on to the next stage.
fn read_groups(pipe: &mut Pipe, walk: &mut Walk, k: u32, win: &mut Window, w: u32) -> Groups {
    let last = k == MAX_EXT_HEADERS;
    let st = pipe.st;
    pipe.enter();
    if let Some(tl) = walk.trunc_len {
        walk.walking = walk.walking & !tl;
        walk.ecode = mux(tl, code(malformed::EXT_TRUNC), walk.ecode);
        walk.trunc_len = None;
    }
    // The next select's length compares, per pair of words: when the header is at word
    // `x`, the next one is at word `j = x + 2 + 2 * len`, so "the next header is at `j`"
    // is the length byte of word `x` equal to `(j - 2 - x) / 2`. Per word, that compare
    // against a constant is registered from the window a stage earlier (the byte is the
    // same); the select picks it as it picks the word, per group, and the second read
    // stage ORs the groups: one LUT from registers to the select's flag, instead of a
    // compare behind the groups' OR (docs/TIMING.md, rule 10).
    let next_range = (!last).then(|| read_range(k + 1, w));
    let pairs = |x: u32| {
        next_range
            .into_iter()
            .flat_map(|(lo, hi)| lo..=hi)
            .filter(move |&j| j >= x + 2 && (j - x).is_multiple_of(2))
            .map(move |j| (j, (j - 2 - x) / 2))
    };
    let mut len_to: HashMap<(u32, u32), Sig> = HashMap::new();
    for &(x, _) in &walk.sel {
        for (_, v) in pairs(x) {
            let f = if 4 * x + 3 >= w {
                lit(1, 0u32)
            } else {
                let len = win.at(4 * x + 3, st - 1);
                stage(len.eq(v as u64), &n(&format!("len_w{x}_is{v}"), st))
            };
            len_to.insert((x, v), f);
        }
    }
    let (mut gw, mut gu, mut gd) = (Vec::new(), Vec::new(), Vec::new());
    // Per next-select word `j`: its flag per group.
    let mut gto: Vec<(u32, Vec<Sig>)> = next_range
        .map(|(lo, hi)| (lo..=hi).map(|j| (j, Vec::new())).collect())
        .unwrap_or_default();
    for (g, (gs, gs_l4)) in groups(&walk.sel)
        .iter()
        .zip(groups(&walk.sel_l4).iter())
        .enumerate()
    {
        let word = pick(gs, |x| win.word(x, st), 32);
        let ulen = pick(gs_l4, |x| win.be(4 * x + 6, 2, st), 16);
        // TCP data offset: the high nibble of byte 12.
        let doff = pick(gs_l4, |x| win.at(4 * x + 14, st).slice(7, 4), 4);
        // The flags from `sel_l4`, the copy with the smaller fan-out.
        for (j, flags) in gto.iter_mut() {
            let terms: Vec<Sig> = gs_l4
                .iter()
                .filter(|(x, _)| *j >= *x + 2 && (*j - *x).is_multiple_of(2))
                .map(|(x, bit)| len_to[&(*x, (*j - 2 - *x) / 2)] & *bit)
                .collect();
            flags.push(stage(or_tree(terms, 1), &n(&format!("next{j}_g{g}"), st)));
        }
        gw.push(stage(word, &n(&format!("word_g{g}"), st)));
        gu.push(stage(ulen, &n(&format!("ulen_g{g}"), st)));
        gd.push(stage(doff, &n(&format!("doff_g{g}"), st)));
    }
    // For the next read's one-hot, per word j it can see: `even` (the next word is at
    // or after `m + 2`, an even distance away) and the fragment hit (`j = m + 2`: after
    // a fragment header the next word is m + 2) compare `m` with constants. When the
    // walk is not stepping, the next read's select does not matter: its latch is
    // already taken (or the frame has an EXT_* code).
    // `m` beyond the window's words (`m_small` false) is registered apart and applied
    // in the second read stage.
    let (m_small, pre) = match (walk.p_sel, next_range) {
        (Some(m), Some((lo, hi))) if lo <= hi => {
            let is_frag = walk.nh_frag;
            let mw = clog2(hi as u64 + 1);
            let m_small = stage(m.slice(13, mw).eq(0u32), &n("m_small", st));
            let ml = m.slice(mw - 1, 0);
            let pre = (lo..=hi)
                .map(|j| {
                    let even = ml.le((j - 2) as u64) & ml.bit(0).eq((j % 2) as u64);
                    let fhit = is_frag & ml.eq((j - 2) as u64);
                    (
                        j,
                        stage(!is_frag & even, &n(&format!("sel{j}_even"), st)),
                        stage(fhit, &n(&format!("sel{j}_frag"), st)),
                    )
                })
                .collect();
            (Some(m_small), pre)
        }
        _ => (None, Vec::new()),
    };
    *walk = walk.delayed(st, k == 0, last);
    pipe.leave();
    Groups {
        gw,
        gu,
        gd,
        gto,
        m_small,
        pre,
    }
}

/// Read, second half: the OR of the groups.
struct Ored {
    /// The word at the header, the UDP length and the TCP data offset there.
    dw: Sig,
    ul: Sig,
    dof: Sig,
    /// The walk has arrived: take the TCP/UDP fields.
    latch: Sig,
    /// Bytes from the current header to the end of the datagram, and whether that is
    /// negative (only in frames whose L3 checks failed).
    rem_now: Sig,
    rem_neg: Sig,
    /// A fragment's offset is not 0, per group (the compute stage ORs them).
    off_nz: Vec<Sig>,
}

/// The second read stage's valid and the OR of the groups' words.
fn or_groups(pipe: &mut Pipe, walk: &Walk, g: &Groups) -> Ored {
    let st = pipe.st;
    pipe.enter();
    let rem_neg = walk.rem.bit(17);
    let rem_now = walk.rem.slice(15, 0);
    let off_nz: Vec<Sig> = g.gw.iter().map(|x| x.slice(15, 3).or_reduce()).collect();
    let dw = or_tree(g.gw.clone(), 32).named(&n("word", st));
    let ul = or_tree(g.gu.clone(), 16).named(&n("udp_len", st));
    let dof = or_tree(g.gd.clone(), 4).named(&n("tcp_off", st));
    let latch = !walk.walking & !walk.latched;
    Ored {
        dw,
        ul,
        dof,
        latch,
        rem_now,
        rem_neg,
        off_nz,
    }
}

/// The fifth read stages' second half: no compute stage follows, so the TCP/UDP fields are
/// taken in here and the checks against constants registered, so that the TCP/UDP stage
/// compares registers; a fifth extension header gives up (`EXT_LIMIT`).
fn read_last(mut pipe: Pipe, walk: Walk, g: Groups, w: u32) -> Walked {
    let o = or_groups(&mut pipe, &walk, &g);
    let st = pipe.st;
    let rem_now = o.rem_now;
    let rem = stage(rem_now, &n("rem", st));
    // The TCP/UDP checks against constants, registered here for stage 18: too short
    // for the header, the header past the window.
    let l4_pre = [
        stage(rem_now.lt(20u32), &n("tcp_short", st)),
        stage(walk.p.gt((w - 20) as u64), &n("tcp_win", st)),
        stage(rem_now.lt(8u32), &n("udp_short", st)),
        stage(walk.p.gt((w - 8) as u64), &n("udp_win", st)),
    ];
    walk.rem.unused();
    let take = |new: Sig, old: Option<Sig>, nm: &str| {
        let v = match old {
            Some(old) => mux(o.latch, new, old),
            None => new,
        };
        Some(stage(v, &n(nm, st)))
    };
    let walk = Walk {
        sel: Vec::new(),
        sel_l4: Vec::new(),
        p: stage(walk.p, &n("p", st)),
        rem: walk.rem,
        p_sel: None,
        nh: stage(walk.nh, &n("nh", st)),
        nh_frag: lit(1, 0u32),
        walking: lit(1, 0u32),
        latched: lit(1, 1u32),
        ecode: stage(
            mux(walk.walking, code(malformed::EXT_LIMIT), walk.ecode),
            &n("ecode", st),
        ),
        frag: stage(walk.frag, &n("frag", st)),
        ports: take(o.dw, walk.ports, "ports"),
        ulen: take(o.ul, walk.ulen, "ulen"),
        doff: take(o.dof, walk.doff, "doff"),
        pending: None,
        trunc_len: None,
    };
    pipe.leave();
    assert_eq!(pipe.st, S_L4, "walk stage count");
    Walked {
        valid: pipe.valid,
        carry: pipe.carry,
        walk,
        rem,
        l4_pre,
        tun: None,
    }
}

/// The second read stage's registers for the compute stage.
struct Read {
    /// The walk with the TCP/UDP fields read here pending.
    read: Walk,
    /// The word at the header (its next-header byte).
    word: Sig,
    is_frag: Sig,
    trunc_pre: Sig,
    win_bad: Sig,
    step_len: Sig,
    step8: Sig,
    p: Sig,
    p8: Sig,
    rem: Sig,
    rem8: Sig,
    nh: Sig,
    walking: Sig,
    latched: Sig,
    ecode: Sig,
    frag: Sig,
    /// Per next-select word `j`: `even`, the length compare, the fragment hit.
    pre: Vec<(u32, Sig, Sig, Sig)>,
    off_nz: Vec<Sig>,
    len_step: Sig,
    len_cmp: Sig,
    len_n: Sig,
    rem7: Sig,
}

/// Read, second half, of a header the walk may step past: the OR of the groups, the TCP/UDP
/// fields pending, and everything the compute stage needs that does not depend on the word.
fn read_next(pipe: &mut Pipe, walk: Walk, g: Groups, w: u32, ports_wanted: bool) -> Read {
    let o = or_groups(pipe, &walk, &g);
    let st = pipe.st;
    let (rem_now, rem_neg) = (o.rem_now, o.rem_neg);
    // The word's low half is the destination port when the word is the TCP/UDP header;
    // a record without the ports does not use it.
    let word_q = stage(o.dw, &n("word_q", st));
    let word_q = if ports_wanted {
        word_q
    } else {
        word_q.unused()
    };
    let pending = Pending {
        latch: stage(o.latch, &n("latch", st)),
        word: word_q,
        ulen: stage(o.ul, &n("ulen_q", st)),
        doff: stage(o.dof, &n("doff_q", st)),
    };
    let keep = |x: Option<Sig>, nm: &str| x.map(|v| stage(v, &n(nm, st)));
    let (ports, ulen, doff) = (
        keep(walk.ports, "ports"),
        keep(walk.ulen, "ulen"),
        keep(walk.doff, "doff"),
    );
    let latched = walk.latched | o.latch;
    // Everything the compute stage needs that does not depend on the word.
    let is_frag = walk.nh_frag;
    let trunc_pre = rem_neg | mux(is_frag, rem_now.lt(8u32), rem_now.lt(2u32));
    let win_bad = mux(
        is_frag,
        walk.p.gt((w - 4) as u64),
        walk.p.gt((w - 2) as u64),
    );
    let r = |x: Sig, nm: &str| stage(x, &n(nm, st));
    let is_frag_now = is_frag;
    let is_frag = r(is_frag, "is_frag");
    let trunc_pre = r(trunc_pre, "trunc_pre");
    let win_bad = r(win_bad, "win_bad");
    // The next offset: p + 8 + len * 8 (`step_len`), p + 8 (a fragment header: `step8`)
    // or p (the walk has stopped), picked after the adder from registered selects.
    let step_len = r(walk.walking & !is_frag_now, "step_len");
    let step8 = r(walk.walking & is_frag_now, "step8");
    let p = r(walk.p, "p");
    let p8 = r(walk.p + 8u32, "p8");
    let rem = r(walk.rem, "rem_q");
    let rem8 = r(walk.rem - 8u32, "rem8");
    let nh = r(walk.nh, "nh");
    let walking = r(walk.walking, "walking");
    let latched = r(latched, "latched");
    let ecode = r(walk.ecode, "ecode");
    let frag = r(walk.frag, "frag");
    // The next select's length compares: the OR of the groups' flags.
    let pre: Vec<(u32, Sig, Sig, Sig)> = g
        .pre
        .iter()
        .map(|(j, even, fhit)| {
            let m_small = g.m_small.expect("made with the flags");
            let flags = &g.gto.iter().find(|(x, _)| x == j).expect("same range").1;
            (
                *j,
                r(m_small & *even, &format!("sel{j}_even")),
                r(or_tree(flags.clone(), 1), &format!("sel{j}_len_eq")),
                r(m_small & *fhit, &format!("sel{j}_frag")),
            )
        })
        .collect();
    let off_nz: Vec<Sig> = o
        .off_nz
        .iter()
        .enumerate()
        .map(|(g, x)| r(*x, &format!("frag_off_nz_g{g}")))
        .collect();
    let read = Walk {
        ports,
        ulen,
        doff,
        pending: Some(pending),
        ..walk.clone()
    };
    // The length byte again, one copy per carry chain of the compute stage, each in the
    // polarity its chain adds (a subtraction's operand would be inverted by a LUT in front of
    // the chain), none shared with the word's register or with another chain, so that each
    // sits by its chain (the word's register also feeds the next header, the ports and their
    // muxes). Each copy is kept apart by what it is: the offset's and the compare's are zero
    // where their results are not used (the walk does not step past a length; a fragment
    // header has none), and the remainder's is the complement, added to `rem - 7`
    // (`rem8 - len8 = rem7 + !len8`, 18 bits).
    let len_b = o.dw.slice(23, 16);
    let len_step = r(len_b & (walk.walking & !is_frag_now).repl(8), "len_step");
    let len_cmp = r(len_b & walk.walking.repl(8), "len_cmp");
    let len_n = r(!len_b, "len_n");
    let rem7 = r(walk.rem - 7u32, "rem7");
    pipe.leave();
    Read {
        read,
        word: pending.word,
        is_frag,
        trunc_pre,
        win_bad,
        step_len,
        step8,
        p,
        p8,
        rem,
        rem8,
        nh,
        walking,
        latched,
        ecode,
        frag,
        pre,
        off_nz,
        len_step,
        len_cmp,
        len_n,
        rem7,
    }
}

/// The compute stage of extension header `k`: the checks, the next offset and remainder, the
/// next header and the next read's select.
fn compute(pipe: &mut Pipe, r: Read, k: u32) -> Walk {
    let st = pipe.st;
    pipe.enter();
    // (len + 1) * 8 > rem  <=>  len >= rem / 8 (no adder before the compare).
    let q = r.rem.slice(15, 3);
    let (is_frag, walking) = (r.is_frag, r.walking);
    let pre_bad = r.trunc_pre | r.win_bad;
    let ok_pre = walking & !pre_bad;
    let trunc_len = ok_pre & !is_frag & r.len_cmp.zext(13).ge(q);
    let err = mux(
        r.trunc_pre,
        code(malformed::EXT_TRUNC),
        code(malformed::EXT_WINDOW),
    );
    let len8 = cat(&[r.len_step, lit(3, 0u32)]);
    let p_len = r.p8 + len8.zext(16);
    let rem_len = r.rem7 + cat(&[lit(7, 0x7fu32), r.len_n, lit(3, 7u32)]);
    let pick3 = |sum: Sig, plus8: Sig, same: Sig| mux(r.step_len, sum, mux(r.step8, plus8, same));
    // The next read's `m` may be anything when the walk does not step.
    let p_next = mux(is_frag, r.p8, p_len);
    let nh_next = r.word.slice(31, 24);
    let later_frag = is_frag & or_tree(r.off_nz, 1);
    let (ports, ulen, doff) = r.read.settle();
    let (sel, sel_l4): (Sel, Sel) = r
        .pre
        .iter()
        .map(|(j, even, len_eq, fhit)| {
            let hit = *fhit | (*even & *len_eq);
            let (a, b) = sel_regs(hit, &n(&format!("sel{j}"), st));
            ((*j, a), (*j, b))
        })
        .unzip();
    // A failed step leaves an EXT_* code, after which offset, protocol and fragment flag
    // are not valid: they may step anyway (the checks stay off the wide muxes).
    let walk = Walk {
        sel,
        sel_l4,
        p: stage(pick3(p_len, r.p8, r.p), &n("p", st)),
        rem: stage(pick3(rem_len, r.rem8, r.rem), &n("rem", st)),
        p_sel: (k + 1 < MAX_EXT_HEADERS).then(|| stage(p_next.slice(15, 2), &n("m_sel", st))),
        nh: stage(mux(walking, nh_next, r.nh), &n("nh", st)),
        nh_frag: if k + 1 < MAX_EXT_HEADERS {
            stage(mux(walking, nh_next.eq(44u32), is_frag), &n("nh_frag", st))
        } else {
            lit(1, 0u32)
        },
        // Its two halves registered apart (the next read stage ANDs them), so that the
        // next-header compare is not behind the checks.
        walking: stage(ok_pre & !later_frag, &n("walk_go", st))
            & stage(is_ext(nh_next), &n("next_ext", st)),
        latched: stage(r.latched, &n("latched", st)),
        ecode: stage(mux(walking & pre_bad, err, r.ecode), &n("ecode", st)),
        frag: stage(r.frag | (walking & is_frag), &n("frag", st)),
        ports: Some(stage(ports, &n("ports", st))),
        ulen: Some(stage(ulen, &n("ulen", st))),
        doff: Some(stage(doff, &n("doff", st))),
        pending: None,
        trunc_len: Some(stage(trunc_len, &n("trunc_len", st))),
    };
    pipe.leave();
    walk
}
