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
//! ([`OutStage`]). The take is built twice from separate copies of the command's valid: one
//! for the control state and its decode flops, one for the history registers' enables (rule 3),
//! so the decodes' take is a net of a few dozen loads rather than one per data bit as well.
//!
//! The engine is built in stages, each a function in the file of its part: the command slice
//! (here), the plan's analysis (`plan.rs`: which registers the lanes read, where each template
//! applies), the control state and its decodes, the handshake and the next state
//! (`control.rs`), the input's history, the lanes and the output stage (`datapath.rs`).

mod control;
mod datapath;
mod plan;

pub use plan::SpliceKind;
pub(crate) use plan::{plans, Plan};

use super::{record_reg_slice_ctl, Stream, StreamCfg};
use control::{control, handshake, next_state};
use datapath::{history, lanes, out_reg_handshake, out_register, out_slice, OutSide};
use nicgen_edsl::prelude::*;
use plan::{acts, lane_use, Progs};

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
    /// the output valid through the take into the decode flops would be long.
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

nicgen_edsl::record! {
    /// A splice's per-frame command (`s_axis_cmd_tdata`).
    pub struct SpliceCmd(inserted: u32) {
        /// Splice this frame (else it passes unchanged).
        en: 1,
        /// Insert: the inserted bytes, byte `j` (the `j`-th on the wire) at bits `8j+7:8j`;
        /// left out for delete.
        bytes: 8 * inserted,
    }
}

/// The ports of [`super::stream_insert()`] and [`super::stream_delete()`].
pub struct SplicePorts {
    /// The frames in (`s_axis_*`).
    pub s_axis: Stream,
    /// The frames out (`m_axis_*`).
    pub m_axis: Stream,
    /// One command per frame (`s_axis_cmd_*`).
    pub cmd: RecordStream<SpliceCmd<u32>>,
}

impl Ports for SplicePorts {
    /// The streams' shape and the bytes the command carries (0 for delete).
    type Cfg = (StreamCfg, u32);
    fn ports(io: &Io, (stream, inserted): &(StreamCfg, u32)) -> Self {
        SplicePorts {
            s_axis: Stream::sink(io, "s_axis", stream),
            m_axis: Stream::source(io, "m_axis", stream),
            cmd: RecordStream::sink(io, "s_axis_cmd", SpliceCmd::shape(*inserted)),
        }
    }
}

impl SpliceCfg {
    /// The configuration of the splice's ports.
    pub(crate) fn ports(&self) -> (StreamCfg, u32) {
        let inserted = match self.kind {
            SpliceKind::Insert => self.n,
            SpliceKind::Delete => 0,
        };
        (self.stream, inserted)
    }
}

/// The command after the engine's own register slice.
pub(super) struct CmdSlice {
    /// The registered command's fields.
    pub fields: SpliceCmd,
    /// Its valid (a flop of the handshake's own: the control take).
    pub valid: Sig,
    /// The same valid from the slice's output copy: the data take.
    pub valid_data: Sig,
    /// The slice's downstream ready: the handshake sets it.
    pub ready: Sig,
}

/// The command through a register slice of its own (`cmd_*`): the frame's first beat waits for
/// its valid, which must not come from the requester's logic, placed elsewhere, into every
/// decode flop (docs/TIMING.md, rule 9). The slice's ready (`s_axis_cmd_tready`) is a flop.
fn command_slice(cmd: &RecordStream<SpliceCmd<u32>>) -> CmdSlice {
    let q = record_reg_slice_ctl("cmd", cmd.data, cmd.valid);
    cmd.ready.set(q.s_ready);
    CmdSlice {
        fields: cmd.shape.unpack(q.data),
        valid: q.valid_ctl,
        valid_data: q.valid,
        ready: q.ready,
    }
}

/// Build the splice inside its module, with its ports `p`, from the plans of enabled and
/// disabled frames (saturating at beat `sat`).
pub(crate) fn splice(cfg: &SpliceCfg, en_plan: &Plan, dis_plan: &Plan, sat: usize, p: SplicePorts) {
    let w = (cfg.stream.data_bits / 8) as usize;
    let (s, m) = (&p.s_axis, &p.m_axis);
    // The input's take, twice: `take` for the control state and its decode flops, `take_data`
    // for the history registers' enables (one load per data bit), each from its own copy of
    // the command's valid, so that the decode flops do not sit behind the data registers' net
    // (docs/TIMING.md, rule 3).
    let take = wire(1).named("take");
    let take_data = wire(1).named("take_data");
    let cmd = command_slice(&p.cmd);
    let progs = Progs::new(en_plan, dis_plan, sat);
    let mut ctl = control(&progs, sat, w, take, s.last(), cmd.fields.en);
    let used = lane_use(&progs, w, cfg.n as usize);
    let hist = history(cfg, s, cmd.fields.bytes, &mut ctl, take_data, &used);
    let acts = acts(&progs);
    let hs = handshake(
        cfg,
        &progs,
        &acts,
        &mut ctl,
        &hist,
        s,
        &cmd,
        (take, take_data),
    );
    next_state(&ctl, &hs, cmd.fields.en, take, s.last());
    let out_reg =
        (cfg.out == OutStage::Register).then(|| out_reg_handshake(m, ctl.oready, hs.emit_valid));
    let lanes = lanes(w, &acts, &mut ctl.dec, &hist);
    let side = OutSide {
        cons_slot: ctl.cons_slot,
        last_in: s.last(),
        final_cons: hs.final_cons,
        final_ent: hs.final_ent,
        user: s.user().zip(hist.user_p),
    };
    match out_reg {
        Some(r) => out_register(r, &lanes, &side, m),
        None => out_slice(cfg, &lanes, &side, hs.emit_valid, ctl.oready, m),
    }
}
