//! `stream_delete`: delete `n` bytes at frame offset `off` from the frames a command says to
//! (RX VLAN strip: `off = 12`, `n = 4`), at any bus width, 1 beat/cycle.
//!
//! Per frame, output = `frame[..off] ++ frame[off + n..]` when enabled, else the frame
//! unchanged. A frame of at most `off` bytes passes unchanged; a frame of `off + 1 ..= off + n`
//! bytes loses what exists of the deleted range (it leaves with `off` bytes).
//!
//! - Ports ([`SplicePorts`]): `s_axis_*` (data in), `m_axis_*` (data out),
//!   `s_axis_cmd_tdata[0]` (enable), `s_axis_cmd_tvalid/tready`: one command per frame, through
//!   a register slice (its ready is a flop; up to two commands are taken ahead of their frames;
//!   a frame's first beat waits for its command's). `tuser` travels with the data: the last
//!   output beat carries the last input beat's `tuser` (e.g. `bad`).
//! - Internals: the byte-splice engine of [`super::stream_bytes`]: a saturating beat counter,
//!   the previous beat `P`, the beat before the splice `H` (only when the deleted range spans
//!   more than a beat, i.e. narrow buses), a 2..4-input mux per output byte lane and the output
//!   stage the caller picks ([`OutStage`]): a register, or a register slice, whose room is a
//!   flop, so the input's take does not read the next block's ready. The RX path uses the slice.
//! - Latency: an input beat leaves when the next one arrives (or, for the frame's last beat, in
//!   the following cycle), then 1 cycle in the output stage, with either stage.
//! - Throughput: 1 input beat/cycle, never stalls the input except for output backpressure; the
//!   output has a bubble only where beats disappear (the last beat of a frame is flushed in the
//!   cycle that takes the next frame's first beat, which emits nothing).
//! - Cost: two or three beats of flops, the command slice, the lane muxes and about a dozen
//!   decode flops; LUT/FF/Fmax per preset: results/AREA.md, row `rx vlan strip`.
//! - Golden model: `nicgen_model::stream::delete_bytes`; test:
//!   `testbench/tests/stream/stream_bytes.rs`.

use super::stream_bytes::{plans, splice, OutStage, SpliceCfg, SpliceKind, SplicePorts};
use super::StreamCfg;
use nicgen_edsl::prelude::*;

/// Delete parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeleteCfg {
    pub stream: StreamCfg,
    /// Frame offset of the first deleted byte; at least 1 (a frame cannot become empty).
    pub off: u32,
    /// Bytes deleted; 1 to 256.
    pub n: u32,
    /// The output stage (see [`OutStage`]).
    pub out: OutStage,
}

/// The delete block for `cfg`.
pub fn stream_delete(cfg: &DeleteCfg) -> Result<Block<SplicePorts>, ElabError> {
    cfg.stream.check("stream_delete")?;
    if cfg.off == 0 || cfg.off > 4096 {
        return Err(ElabError::config(
            "stream_delete",
            format!(
                "offset {} must be 1 to 4096 (at offset 0 a short frame would become empty)",
                cfg.off
            ),
        ));
    }
    if cfg.n == 0 || cfg.n > 256 {
        return Err(ElabError::config(
            "stream_delete",
            format!("byte count {} must be 1 to 256", cfg.n),
        ));
    }
    let sc = SpliceCfg {
        stream: cfg.stream,
        off: cfg.off,
        n: cfg.n,
        kind: SpliceKind::Delete,
        out: cfg.out,
    };
    let (en, dis, sat) = plans(&sc).map_err(|e| ElabError::config("stream_delete", e))?;
    let name = format!(
        "stream_delete_{}_o{}_n{}{}",
        cfg.stream.suffix(),
        cfg.off,
        cfg.n,
        cfg.out.suffix()
    );
    Block::build(name, sc.ports(), move |p: SplicePorts| {
        doc(&format!(
            "Deletes {} bytes at frame offset {} from frames whose command enables it.",
            sc.n, sc.off
        ));
        splice(&sc, &en, &dis, sat, p);
    })
}
