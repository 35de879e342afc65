//! `inet_csum`: Internet-checksum stage.
//!
//! Sums every frame's kept bytes as big-endian 16-bit words in ones'-complement arithmetic
//! (RFC 1071; byte 0 of the frame is the high byte of the first word, an odd trailing byte is
//! padded with zero) and emits the folded, non-complemented 16-bit sum once per frame, when the
//! frame's last beat has been summed. The sum itself is [`mod@super::frame_sum`] with `tkeep` as
//! the byte mask. Frames up to 2^16 beats are summed exactly (accumulator of tree width + 16
//! bits).
//!
//! - Ports ([`InetCsumPorts`]): `s_axis_tdata/tkeep/tvalid/tready/tlast`;
//!   `m_axis_csum_tdata[15:0]` (the sum), `m_axis_csum_tkeep` (always 2'b11),
//!   `m_axis_csum_tvalid`, `m_axis_csum_tready`, `m_axis_csum_tlast` (always 1): a stream of one
//!   2-byte frame per input frame.
//! - Latency: `ceil(log2(data_bits/16) / levels_per_stage) + 3` cycles from the last beat to the
//!   result.
//! - Throughput: 1 beat/cycle; the whole pipeline stalls only while a result waits.
//! - Cost: an adder tree of `data_bits/16` words; LUT/FF/Fmax per width: results/BENCH.md, rows
//!   `checksum stage`.
//! - Golden model: `nicgen_model::checksum::stream_csum`; test:
//!   `testbench/tests/csum/inet_csum.rs` (also replayed on Icarus).

use super::frame_sum::{frame_sum, SumIn};
use crate::stream::{Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// Checksum stage parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CsumCfg {
    /// Input bus width: 8 or a multiple of 16.
    pub data_bits: u32,
    /// Adder-tree levels between pipeline registers (1 = fastest, more = fewer flops).
    pub levels_per_stage: u32,
}

/// The ports of an [`inet_csum`]: the frames in, their sums out.
pub struct InetCsumPorts {
    /// The frames (`s_axis_*`, no `tuser`).
    pub s_axis: Stream,
    /// One 2-byte frame per input frame, the sum (`m_axis_csum_*`).
    pub m_axis_csum: Stream,
}

impl Ports for InetCsumPorts {
    type Cfg = CsumCfg;
    fn ports(io: &Io, cfg: &CsumCfg) -> Self {
        InetCsumPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(cfg.data_bits, 0)),
            m_axis_csum: Stream::source(io, "m_axis_csum", &StreamCfg::new(16, 0)),
        }
    }
}

/// The checksum stage for `cfg`.
pub fn inet_csum(cfg: &CsumCfg) -> Result<Block<InetCsumPorts>, ElabError> {
    let scfg = StreamCfg::new(cfg.data_bits, 0);
    scfg.check("inet_csum")?;
    if cfg.levels_per_stage == 0 {
        return Err(ElabError::config(
            "inet_csum",
            "levels_per_stage must be at least 1",
        ));
    }
    let cfg = *cfg;
    Block::build(
        format!("inet_csum_d{}_l{}", cfg.data_bits, cfg.levels_per_stage),
        cfg,
        move |p: InetCsumPorts| {
            doc("Internet-checksum stage: ones'-complement sum of each frame's kept bytes,");
            doc("emitted once per frame on m_axis_csum after the last beat.");
            let (s, o) = (&p.s_axis, &p.m_axis_csum);
            let out_valid = reg_init(1, 0u32).named("csum_valid");
            // Every stage advances together unless a finished result is waiting.
            let adv = (!out_valid | o.ready()).named("advance");
            s.ready().set(adv);
            let beat = (s.valid() & adv).named("beat");

            let kept = frame_sum(
                &SumIn {
                    data: s.data(),
                    mask: s.keep(),
                    beat,
                    last: s.last(),
                    adv,
                },
                cfg.levels_per_stage,
                "",
            );
            let csum = reg(16).enable(adv).named("csum");
            csum.set(kept.sum);
            out_valid.set_if(adv, kept.valid);

            o.data().set(csum);
            o.keep().set(lit(2, 3u32));
            o.valid().set(out_valid);
            o.last().set(lit(1, 1u32));
        },
    )
}
