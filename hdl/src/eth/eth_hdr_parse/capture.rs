//! Input and capture: the input ready, the beat selector and the window's close, the capture
//! registers (read by the parse stages through [`Window`]), and the frame length queue.

use super::stage;
use crate::stream::Stream;
use nicgen_edsl::prelude::*;
use std::collections::HashMap;

/// The input side.
pub(super) struct Input {
    /// The input ready, in two copies (docs/TIMING.md, rule 3): copy 0 for the capture's own
    /// logic, copy 1 for `s_axis_tready`, so that each can sit by its loads. Its next value is
    /// the views' credit ([`super::views::output`]).
    pub ready: Replicated,
    /// A beat is taken.
    pub beat: Sig,
}

/// The input ready and the beats taken.
pub(super) fn input(s: &Stream) -> Input {
    let ready = Replicated::new("ready", 2, 1, Some(1));
    s.ready().set(ready.get(1));
    let beat = (s.valid() & ready.get(0)).named("beat");
    Input { ready, beat }
}

/// The window's close, registered.
pub(super) struct Close {
    /// Copy 0 is stage 1's valid (`v1`, which drives the whole of stage 1); copy 1 the input
    /// credit's (in the views), so that the credit's flags do not sit behind `v1`'s fan-out
    /// (docs/TIMING.md, rule 3).
    pub v1: Replicated,
}

/// The beat selector, the window's close and the capture registers: the beat slot `k` is
/// written while the one-hot selector points at it.
pub(super) fn window(s: &Stream, acc: Sig, w: u32) -> (Window, Close) {
    let b = s.data().width() / 8;
    let last = s.last();
    let k_beats = w.div_ceil(b);
    let wsel = reg_init(k_beats, 1u32).named("beat_sel");
    let past = reg_init(1, 0u32).named("past_window");
    // A copy of the selector's last bit for the close logic (the selector itself drives
    // the enables of the whole window).
    let wsel_last = reg_init(1, (k_beats == 1) as u32).named("at_window_end");
    wsel_last.set_if(
        acc,
        if k_beats == 1 {
            last
        } else {
            !last & wsel.bit(k_beats - 2)
        },
    );
    let shifted = if k_beats == 1 {
        lit(1, 0u32)
    } else {
        cat(&[wsel.slice(k_beats - 2, 0), lit(1, 0u32)])
    };
    wsel.set_if(acc, mux(last, lit(k_beats, 1u32), shifted));
    past.set_if(acc, !last & (past | wsel_last));
    let close = (acc & !past & (last | wsel_last)).named("close");
    let v1 = Replicated::new("v1", 2, 1, Some(0));
    v1.set(close);
    let wen: Vec<Sig> = (0..k_beats)
        // The beat slot is written every cycle, whatever is on the bus: a beat that is not
        // (yet) taken is rewritten when it is, and the slot of beat `j` of a new frame is
        // reached no earlier than a real beat `j` could be, so nothing the parse still
        // reads is touched (see the module docs). Valid and ready stay off the enables.
        .map(|k| wsel.bit(k).named(&format!("win_we{k}")))
        .collect();
    let win = Window {
        bytes_per_beat: b,
        window: w,
        data: s.data(),
        wen,
        bank: HashMap::new(),
        copies: HashMap::new(),
        lanes_used: vec![false; b as usize],
    };
    (win, Close { v1 })
}

/// The captured window as the parse stages see it.
pub(super) struct Window {
    bytes_per_beat: u32,
    window: u32,
    data: Sig,
    /// Write enable per beat index (the beat holding bytes `k·B..`).
    wen: Vec<Sig>,
    bank: HashMap<u32, Sig>,
    copies: HashMap<(u32, u32), Sig>,
    lanes_used: Vec<bool>,
}

impl Window {
    /// The capture register of byte `i` (made on first use).
    fn bank(&mut self, i: u32) -> Sig {
        if let Some(s) = self.bank.get(&i) {
            return *s;
        }
        let b = self.bytes_per_beat;
        let lane = i % b;
        self.lanes_used[lane as usize] = true;
        let r = reg(8)
            .enable(self.wen[(i / b) as usize])
            .named(&format!("win_b{i}"));
        r.set(self.data.slice(8 * lane + 7, 8 * lane));
        self.bank.insert(i, r);
        r
    }

    /// Byte `i` of the frame as seen by pipeline stage `stage`: the capture register while the
    /// next frame cannot have overwritten it yet, else a copy delayed from the last stage that
    /// could still read it.
    pub fn at(&mut self, i: u32, stage: u32) -> Sig {
        if i >= self.window {
            return lit(8, 0u32);
        }
        let intact_until = 1 + i / self.bytes_per_beat;
        if stage <= intact_until {
            return self.bank(i);
        }
        if let Some(s) = self.copies.get(&(i, stage)) {
            return *s;
        }
        let prev = self.at(i, stage - 1);
        let r = delay(prev).named(&format!("win_b{i}_s{stage}"));
        self.copies.insert((i, stage), r);
        r
    }

    /// Bytes `i..i+n` as a big-endian value (byte `i` most significant).
    pub fn be(&mut self, i: u32, n: u32, stage: u32) -> Sig {
        let parts: Vec<Sig> = (i..i + n).map(|j| self.at(j, stage)).collect();
        cat(&parts)
    }

    /// Word `m`: bytes `2 + 4m .. 6 + 4m` (every header offset is 2 mod 4).
    pub fn word(&mut self, m: u32, stage: u32) -> Sig {
        self.be(2 + 4 * m, 4, stage)
    }

    /// Some byte lane of the bus is never captured (at some widths whole lanes carry only the
    /// MAC addresses, which are not parsed).
    pub fn lanes_unused(&self) -> bool {
        self.lanes_used.iter().any(|u| !u)
    }
}

nicgen_edsl::record! {
    /// An entry of the frame length queue.
    pub(super) struct LenWord(user_bits: u32) {
        /// Bytes in the frame, saturated at 0xFFFF.
        frame_len: 16,
        /// The `tuser` of the frame's last beat (left out without `tuser`).
        user: user_bits,
    }
}

/// The frame lengths (and `tuser`), in frame order, for the finish stages.
pub(super) struct LenQueue {
    /// The queue is empty.
    pub empty: Sig,
    /// `head` holds the oldest length (the finish pops it).
    pub head_valid: Sig,
    /// The oldest length ([`LenWord`]), in a register (the LUT RAM's read is not on the
    /// finish's compare path).
    pub head: Sig,
    /// The shape of `head`.
    pub shape: LenWord<u32>,
    /// Load `head` from the queue (driven by the finish): `head_free` and not `empty`.
    pub head_load: Sig,
    /// `head` may take a word: it is empty or popped (driven by the finish). Its registers
    /// load on this, whatever `empty`: a word loaded without `head_load` is never shown.
    pub head_free: Sig,
}

/// The frame length: bytes before the last beat plus the kept bytes of the last beat,
/// saturated at 0xFFFF, with the last beat's `tuser`, pushed into a LUT-RAM queue of `depth`.
pub(super) fn frame_len(s: &Stream, acc: Sig, depth: u32) -> LenQueue {
    let b = s.data().width() / 8;
    let aw = clog2(depth as u64);
    let last = s.last();
    // Frame length: bytes before this beat, plus the kept bytes of the last beat.
    let off = reg_init(16, 0u32).named("frame_off");
    let ovf = reg_init(1, 0u32).named("frame_off_ovf");
    let off_next = off.add_wide(b as u64);
    off.set_if(acc, mux(last, lit(16, 0u32), off_next.trunc(16)));
    ovf.set_if(acc, !last & (ovf | off_next.msb()));
    let kw = clog2(b as u64 + 1);
    let keep = s.keep();
    let mut nkeep = lit(kw, 0u32);
    for i in 0..b {
        let edge = if i + 1 < b {
            keep.bit(i) & !keep.bit(i + 1)
        } else {
            keep.bit(i)
        };
        nkeep = nkeep | mux(edge, lit(kw, (i + 1) as u64), lit(kw, 0u32));
    }
    // The beat's offset, overflow flag, kept bytes and `tuser` are registered every cycle
    // (no enable: `beat` stays off them); the cycle after a last beat adds them up and
    // pushes the length.
    let off_q = stage(off, "frame_off_q");
    let ovf_q = stage(ovf, "frame_off_ovf_q");
    let nkeep_q = stage(nkeep, "last_keep_q");
    let len_sum = off_q.add_wide(nkeep_q.zext(16));
    let frame_len =
        mux(ovf_q | len_sum.msb(), lit(16, 0xFFFFu32), len_sum.trunc(16)).named("frame_len");
    // The length (and `tuser`) is registered once more before the LUT-RAM write, so that
    // the adder, the saturation and the RAM's write data are not one cycle.
    let len_push = reg_init(1, 0u32).named("len_push");
    len_push.set(stage(acc & last, "len_push_early"));
    let shape = LenWord::shape(s.user().map_or(0, |u| u.width()));
    let user_q = s.user().map(|u| stage(u, "user_q"));
    let entry = LenWord {
        frame_len,
        user: user_q.unwrap_or_else(|| Sig::absent("LenWord", "user")),
    };
    let len_word = stage(shape.pack(&entry), "len_word");
    let len_mem = memory("len_fifo", len_word.width(), depth);
    let len_wr = reg_init(aw + 1, 0u32).named("len_wr");
    let len_rd = reg_init(aw + 1, 0u32).named("len_rd");
    len_mem.write(len_push, len_wr.trunc(aw), len_word);
    len_wr.set_if(len_push, len_wr + 1u32);
    // `empty` is a flop, stepped by the (registered) push and this cycle's load, as in
    // `record_fifo` (docs/TIMING.md, rule 5): no compare of the read pointer, whose net
    // reaches every LUT-RAM cell, sits in front of the head's enables.
    let head_load = wire(1).named("len_head_load");
    let len_count = reg_init(aw + 1, 0u32).named("len_count");
    len_count.set(mux(
        head_load,
        mux(len_push, len_count, len_count - 1u32),
        mux(len_push, len_count + 1u32, len_count),
    ));
    let len_empty = reg_init(1, 1u32).named("len_empty");
    len_empty.set(!len_push & mux(head_load, len_count.eq(1u64), len_empty));
    // The oldest length waits in a register (the LUTRAM read is not on the compare path).
    let head_v = reg_init(1, 0u32).named("len_head_valid");
    let len_head = reg(len_word.width()).named("len_head");
    let head_free = wire(1).named("len_head_free");
    len_head.set_if(head_free, len_mem.read_async(len_rd.trunc(aw)));
    len_rd.set_if(head_load, len_rd + 1u32);
    LenQueue {
        empty: len_empty,
        head_valid: head_v,
        head: len_head,
        shape,
        head_load,
        head_free,
    }
}
