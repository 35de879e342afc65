//! The timing idioms the blocks share, as library pieces. Each is documented once here, with
//! what it costs and the rule of docs/TIMING.md it implements; a block that uses one names the
//! piece and the rule instead of repeating the trick by hand.
//!
//! - [`Replicated`] (rule 3): one register kept as copies of alternating polarity, each driving
//!   consumers of its own. Cost: `copies` x width flops.
//! - [`record_reg_slice`] (rules 2 and 3): a register slice on a record stream; `valid`, `data`
//!   and the upstream ready come from flops; latency 1. Cost: two data registers, four control
//!   flops, a 2:1 mux per data bit.
//! - [`record_reg_slice_wide`] (rule 4): the same in two halves, each with control flops of its
//!   own. Cost: one flop and one LUT more.
//! - [`beat_reg_slice`], [`stream_reg_slice`] (rule 2): [`record_reg_slice`] on a stream beat
//!   (`data`, `keep`, `last`); [`BeatReg::drive`] feeds the slice into a stream.
//! - [`Reserve`] (rule 8): the result reservation of a pipeline that never stalls. Cost: a
//!   count of `log2(depth) + 1` bits and three flops.
//! - [`stage`], [`stage_init`] (rule 8): a pipeline register advancing with the pipeline's
//!   enable. Cost: width flops.
//!
//! The instance forms of the register slices are the blocks [`crate::stream::stream_fwd_reg()`]
//! (cuts valid and data), [`crate::stream::stream_skid()`] (cuts ready) and
//! [`crate::stream::record_fifo()`] (a queue whose ready and valid are flops, rule 1).

pub use crate::stream::record_reg_slice::{
    beat_reg_slice, record_reg_slice, record_reg_slice_wide, stream_reg_slice, BeatReg, RecordReg,
};
pub use nicgen_edsl::timing::Replicated;

use nicgen_edsl::prelude::*;

/// A pipeline register that advances with `adv` (no reset: data).
///
/// Cost: `d.width()` flops with clock enable `adv`. In the never-stalling pipelines of
/// docs/TIMING.md rule 8 `adv` is a constant 1 and the enable disappears; where a pipeline
/// does stall (`inet_csum`), `adv` is one net to every register of it.
pub fn stage(d: Sig, adv: Sig) -> Sig {
    let r = reg(d.width()).enable(adv);
    r.set(d);
    r
}

/// A pipeline valid bit (or any control field) that advances with `adv`, reset to 0.
///
/// Cost: as [`stage`], with a reset.
pub fn stage_init(d: Sig, adv: Sig) -> Sig {
    let r = reg_init(d.width(), 0u32).enable(adv);
    r.set(d);
    r
}

/// Places reserved in a result queue of `depth` entries, for units whose pipeline never stalls
/// (`rx_csum`, `tx_csum`; docs/TIMING.md, rule 8): a frame is owed a place from its last beat
/// in until its result is taken out, and beats are taken only while `room`. `room` is a
/// register computed from the count alone, one frame early (the count grows by at most one a
/// cycle), so it costs the input one AND.
///
/// The two events (`taken`, `given`) are registered before they step the count, so the accept
/// logic and the output side's ready end at a flop each, not in the count's adder; `room` is
/// computed from the count and those two flops, `owed + taken_q - given_q`, which is exactly
/// the count the unregistered form would hold: the same throughput, no place kept back.
///
/// Cost: the count (`log2(depth) + 1` flops and an adder), the `room` flop and the two event
/// flops; the pipeline it guards needs no stall enable at all.
pub struct Reserve {
    /// Frames owed a place, less the events of the last cycle (in `taken_q`/`given_q`).
    pub owed: Sig,
    /// Another frame may be taken.
    pub room: Sig,
    /// With [`Reserve::with_ready_copy`]: the same flag in a second register, for the ready
    /// that leaves the unit, so place and route can put it by the upstream FIFO's read side
    /// while `room` stays with the accept logic (docs/TIMING.md, rule 3).
    pub ready_room: Option<Sig>,
    copies: Option<Replicated>,
    depth: u32,
}

impl Reserve {
    /// The count `owed` and the flag `room` (registers) for a queue of `depth` results.
    pub fn new(depth: u32) -> Reserve {
        let owed = reg_init(clog2(depth as u64) + 1, 0u32).named("owed");
        let room = reg_init(1, 1u32).named("room");
        Reserve {
            owed,
            room,
            ready_room: None,
            copies: None,
            depth,
        }
    }
    /// [`Reserve::new`] with `ready_room`.
    #[track_caller]
    pub fn with_ready_copy(depth: u32) -> Reserve {
        let owed = reg_init(clog2(depth as u64) + 1, 0u32).named("owed");
        let copies = Replicated::new("room", 2, 1, Some(1));
        Reserve {
            owed,
            room: copies.get(0),
            ready_room: Some(copies.get(1)),
            copies: Some(copies),
            depth,
        }
    }
    /// `taken`: a frame's last beat comes in this cycle; `given`: a result leaves the queue.
    pub fn update(&self, taken: Sig, given: Sig) {
        let owed = self.owed;
        let taken_q = reg_init(1, 0u32).named("owed_taken_q");
        let given_q = reg_init(1, 0u32).named("owed_given_q");
        taken_q.set(taken);
        given_q.set(given);
        owed.set(mux(
            taken_q & !given_q,
            owed + 1u32,
            mux(given_q & !taken_q, owed - 1u32, owed),
        ));
        // owed + taken_q - given_q < depth - 1, by cases of the two flops.
        let d = u64::from(self.depth);
        let room_next = mux(
            taken_q & !given_q,
            owed.lt(d - 2),
            mux(given_q & !taken_q, owed.lt(d), owed.lt(d - 1)),
        )
        .named("room_next");
        match &self.copies {
            Some(c) => c.set(room_next),
            None => self.room.set(room_next),
        }
    }
}
