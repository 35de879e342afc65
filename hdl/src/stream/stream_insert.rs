//! `stream_insert`: insert `n` bytes, given per frame, at frame offset `off` (TX VLAN insert:
//! `off = 12`, `n = 4`, bytes = TPID + TCI), at any bus width.
//!
//! Per frame, output = `frame[..off] ++ bytes ++ frame[off..]` when enabled, else the frame
//! unchanged. A frame shorter than `off` passes unchanged (it has no offset `off`); a frame of
//! exactly `off` bytes gets the bytes appended.
//!
//! - Ports ([`SplicePorts`]): `s_axis_*` (data in), `m_axis_*` (data out), `s_axis_cmd_tdata`
//!   (a [`SpliceCmd`](super::stream_bytes::SpliceCmd): `[0]` enable, byte `j` of the inserted
//!   bytes at `[8j+8:8j+1]`, byte 0 first on the wire), `s_axis_cmd_tvalid/tready`: one command
//!   per frame, through a register slice (its ready is a flop; up to two commands are taken
//!   ahead of their frames; a frame's first beat waits for its command's). The last output
//!   beat carries the last input beat's `tuser`.
//! - Internals: the byte-splice engine of [`super::stream_bytes`]: a saturating beat counter,
//!   the previous beat `P`, the inserted bytes, a 2..4-input mux per output byte lane and the
//!   output stage the caller picks ([`OutStage`]): a register (the lanes load straight into it),
//!   or a register slice. The TX path uses the register.
//! - Latency: 1 cycle (an input beat leaves through the output stage in the next cycle), with
//!   either stage.
//! - Throughput: 1 beat/cycle; the input is stalled only for output beats that have no input
//!   beat of their own: `ceil((len + n) / W) - ceil(len / W)` cycles per enabled frame (at
//!   64 bits and n = 4: one cycle when the last beat holds more than 4 bytes; at 8 bits: 4).
//! - Cost: a beat of output flops, the top `n` lanes of `P`, the command slice (its bits twice),
//!   the lane muxes and about a dozen decode flops; LUT/FF/Fmax per preset: results/AREA.md, row
//!   `tx vlan insert`.
//! - Golden model: `nicgen_model::stream::insert_bytes`; test:
//!   `testbench/tests/stream/stream_bytes.rs`.

use super::stream_bytes::{plans, splice, OutStage, SpliceCfg, SpliceKind, SplicePorts};
use super::StreamCfg;
use nicgen_edsl::prelude::*;

/// Insert parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InsertCfg {
    pub stream: StreamCfg,
    /// Frame offset of the first inserted byte; 0 (prepend) to 4096.
    pub off: u32,
    /// Bytes inserted per enabled frame; 1 to 64.
    pub n: u32,
    /// The output stage (see [`OutStage`]).
    pub out: OutStage,
}

/// The insert block for `cfg`.
pub fn stream_insert(cfg: &InsertCfg) -> Result<Block<SplicePorts>, ElabError> {
    cfg.stream.check("stream_insert")?;
    if cfg.off > 4096 {
        return Err(ElabError::config(
            "stream_insert",
            format!("offset {} must be 0 to 4096", cfg.off),
        ));
    }
    if cfg.n == 0 || cfg.n > 64 {
        return Err(ElabError::config(
            "stream_insert",
            format!(
                "byte count {} must be 1 to 64 (the command carries them)",
                cfg.n
            ),
        ));
    }
    let sc = SpliceCfg {
        stream: cfg.stream,
        off: cfg.off,
        n: cfg.n,
        kind: SpliceKind::Insert,
        out: cfg.out,
    };
    let (en, dis, sat) = plans(&sc).map_err(|e| ElabError::config("stream_insert", e))?;
    let name = format!(
        "stream_insert_{}_o{}_n{}{}",
        cfg.stream.suffix(),
        cfg.off,
        cfg.n,
        cfg.out.suffix()
    );
    Block::build(name, sc.ports(), move |p: SplicePorts| {
        doc(&format!(
            "Inserts {} command bytes at frame offset {} into frames whose command enables it.",
            sc.n, sc.off
        ));
        splice(&sc, &en, &dis, sat, p);
    })
}
