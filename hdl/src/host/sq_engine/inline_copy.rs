//! The inline-copy stage of `sq_engine`: bytes the WQE carries itself (the inline header and
//! inline data segments) copied from the WQE register into the gather buffer at their frame
//! byte position, one buffer row (one byte per lane) per cycle.
//!
//! A copy of `len` bytes from WQE byte `src` to buffer byte `at` writes rows `at / B` to
//! `(at + len - 1) / B` (`B` bytes per beat); lane `i` of row `r` takes WQE byte
//! `(r * B + i + src - at) mod 256`, so a row's bytes are one `B`-byte window of the WQE: two
//! adjacent WQE-register beats funnel-shifted by `(src - at) mod B` bytes, the same shift for
//! the whole copy. The lanes outside `[at, at + len)` are not written, so rows shared with the
//! bytes before or after (another segment's, landing by DMA) keep them. A DMA answer writing
//! the buffer in the same cycle has the lanes' write ports: the copy waits that cycle.
//!
//! Cost: two `2048 / W : 1` multiplexers of a beat and a `log2 B`-stage byte funnel shifter
//! of `2 W` bits, beside a few counters.

use nicgen_edsl::prelude::*;

/// Start a copy.
pub(super) struct Load {
    /// Take the copy (one cycle; never while one is under way).
    pub go: Sig,
    /// WQE byte offset of the first byte (8 bits).
    pub src: Sig,
    /// Buffer byte position of the first byte (`pos_bits`).
    pub at: Sig,
    /// Bytes (`pos_bits`; 0: nothing to copy).
    pub len: Sig,
}

/// The buffer writes of the copy.
pub(super) struct Copy {
    /// A copy is under way.
    pub busy: Sig,
    /// The row written this cycle (`pos_bits - log2 B` bits).
    pub row: Sig,
    /// Per lane: written this cycle.
    pub en: Vec<Sig>,
    /// Per lane: the byte.
    pub data: Vec<Sig>,
}

/// Copy out of the WQE register `wqe` (256 bytes, byte 0 in bits 7:0) into a buffer of
/// `w / 8` byte lanes addressed by `pos_bits`-bit byte positions; `stall` holds the copy for
/// a cycle.
pub(super) fn inline_copy(wqe: Sig, w: u32, pos_bits: u32, load: Load, stall: Sig) -> Copy {
    let b = w / 8;
    let bb = b.trailing_zeros();
    let rb = pos_bits - bb;
    let busy = reg_init(1, 0u32).named("inl_busy");
    let row = reg(rb).named("inl_row");
    let last = reg(rb).named("inl_last_row");
    let delta = reg(8).named("inl_delta");

    let end_m1 = (load.at + load.len - 1u32).named("inl_end_m1");
    let go = (busy & !stall).named("inl_write");
    let at_last = row.eq(last);
    busy.set(select(
        &[(load.go, load.len.ne(0u32)), (go & at_last, lit(1, 0u32))],
        busy,
    ));
    row.set(select(
        &[(load.go, load.at.shr(bb).trunc(rb)), (go, row + 1u32)],
        row,
    ));
    last.set_if(load.go, end_m1.shr(bb).trunc(rb));
    delta.set_if(load.go, load.src - load.at.resize(8));

    // The row's window of the WQE starts at byte (row * B + delta) mod 256.
    let row_pos = if bb == 0 {
        row
    } else {
        cat(&[row, lit(bb, 0u32)])
    };
    let start = (row_pos.resize(8) + delta).named("inl_window");
    let beats = 256 / b;
    let beat_arms: Vec<(u64, Sig)> = (0..beats)
        .map(|k| (k as u64, wqe.slice(w * k + w - 1, w * k)))
        .collect();
    let window = if bb == 0 {
        case(start, &beat_arms, lit(w, 0u32))
    } else {
        let beat = start.shr(bb).trunc(8 - bb);
        let lo = case(beat, &beat_arms, lit(w, 0u32));
        let hi = case(beat + 1u32, &beat_arms, lit(w, 0u32));
        let shift = cat(&[start.trunc(bb), lit(3, 0u32)]);
        cat(&[hi, lo]).shr_by(shift).trunc(w)
    }
    .named("inl_bytes");
    // Lanes before `at` in the first row and after the last byte in the last row stay as
    // they are (with one lane, every row is wholly inside the copy).
    let en = if bb == 0 {
        vec![go]
    } else {
        let first = reg(1).named("inl_first_row");
        let lo_lane = reg(bb).named("inl_first_lane");
        let hi_lane = reg(bb).named("inl_last_lane");
        first.set(select(
            &[(load.go, lit(1, 1u32)), (go, lit(1, 0u32))],
            first,
        ));
        lo_lane.set_if(load.go, load.at.trunc(bb));
        hi_lane.set_if(load.go, end_m1.trunc(bb));
        (0..b)
            .map(|i| go & (!first | lo_lane.le(i as u64)) & (!at_last | hi_lane.ge(i as u64)))
            .collect()
    };
    let data = (0..b).map(|i| window.slice(8 * i + 7, 8 * i)).collect();
    Copy {
        busy,
        row,
        en,
        data,
    }
}
