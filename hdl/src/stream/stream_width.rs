//! `stream_narrow` and `stream_widen`: width converters between a wide and a narrow stream
//! whose widths are powers of two, `k = wide / narrow` narrow beats to a wide one, byte `i`
//! of a wide beat being byte `i % (narrow/8)` of its narrow beat `i / (narrow/8)`. They keep
//! every byte at its place and every frame boundary, so they also keep the DMA port's `off`
//! (`crate::host`, rules 2 and 3): a transfer whose first byte sits at byte `off < narrow/8`
//! of its first beat has it there on both sides, and each side carries exactly
//! `ceil((off + len) / (W/8))` beats of its own width `W`.
//!
//! - `stream_narrow` (wide in, narrow out): holds the wide beat and sends its narrow pieces
//!   in order, from piece 0 up to the last piece with a `tkeep` bit on the frame's last beat
//!   (all `k` pieces of the other beats); each piece has its bytes' `tkeep` and the wide
//!   beat's `tuser`, and `tlast` on the frame's last piece. A piece with no byte in the middle
//!   of a frame is sent as it is (the DMA rules never make one).
//! - `stream_widen` (narrow in, wide out): gathers narrow beats into lanes 0, 1, ... of a
//!   wide beat, which goes out when lane `k - 1` is filled or the frame ends; lanes after the
//!   frame's end carry `tkeep` 0. `tuser` is the last narrow beat's. The wide beat leaves
//!   through a forward register ([`mod@super::stream_fwd_reg`]).
//! - Ports: `s_axis_*` in, `m_axis_*` out ([`WidthCfg`]).
//! - Latency: `stream_narrow` 1 cycle (the held beat), `stream_widen` 1 cycle after the beat
//!   that completes a wide beat. Throughput: the narrow side's, one narrow beat a cycle with
//!   no bubble (`stream_narrow` takes the next wide beat in the cycle its last piece leaves).
//! - Cost: `stream_narrow` one wide payload register and a `k`-way multiplexer of
//!   `narrow + narrow/8` bits; `stream_widen` `k - 1` lanes of narrow payload registers, the
//!   wide forward register, a piece counter; no row in results/AREA.md (the NIC's DMA port,
//!   `crate::nic`, is where they are used).
//! - Golden model: the identity on frames (`nicgen_model::stream`); test:
//!   `testbench/tests/stream/stream_width.rs`.

use super::stream_fwd_reg::stream_fwd_reg;
use super::{Beat, Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// The two widths and the `tuser` width of a converter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WidthCfg {
    /// `s_axis_tdata` bits.
    pub in_bits: u32,
    /// `m_axis_tdata` bits.
    pub out_bits: u32,
    /// `tuser` bits on both sides (0: none).
    pub user_bits: u32,
}

impl WidthCfg {
    fn check(&self, block: &str, narrowing: bool) -> Result<(u32, u32), ElabError> {
        let (wide, narrow) = if narrowing {
            (self.in_bits, self.out_bits)
        } else {
            (self.out_bits, self.in_bits)
        };
        for bits in [wide, narrow] {
            StreamCfg::new(bits, self.user_bits).check(block)?;
            if !bits.is_power_of_two() {
                return Err(ElabError::config(
                    block,
                    format!("stream width {bits} must be a power of two"),
                ));
            }
        }
        if wide <= narrow {
            return Err(ElabError::config(
                block,
                format!("the wide side ({wide} bits) must be wider than the narrow ({narrow})"),
            ));
        }
        Ok((wide, narrow))
    }
}

/// The ports of a width converter.
pub struct WidthPorts {
    pub s_axis: Stream,
    pub m_axis: Stream,
}

impl Ports for WidthPorts {
    type Cfg = WidthCfg;
    fn ports(io: &Io, cfg: &WidthCfg) -> Self {
        WidthPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(cfg.in_bits, cfg.user_bits)),
            m_axis: Stream::source(io, "m_axis", &StreamCfg::new(cfg.out_bits, cfg.user_bits)),
        }
    }
}

/// Wide beats in (`in_bits`), narrow beats out (`out_bits`).
pub fn stream_narrow(cfg: &WidthCfg) -> Result<Block<WidthPorts>, ElabError> {
    let (wide, narrow) = cfg.check("stream_narrow", true)?;
    let cfg = *cfg;
    Block::build(
        format!("stream_narrow_{wide}_to_{narrow}_u{}", cfg.user_bits),
        cfg,
        move |p: WidthPorts| {
            doc("Width converter: each wide beat sent as its narrow pieces, in order, up to");
            doc("the frame's last byte; bytes keep their places.");
            let (s, m) = (p.s_axis, p.m_axis);
            let k = wide / narrow;
            let nb = narrow / 8;
            let jb = clog2(k as u64);
            let valid = reg_init(1, 0u32).named("held");
            let piece = reg_init(jb, 0u32).named("piece");
            let b = s.beat();
            let take = wire(1).named("take");
            let load = (take & s.valid()).named("load");
            let held = |x: Sig, name: &str| {
                let r = reg(x.width()).enable(load).named(name);
                r.set(x);
                r
            };
            let data = held(b.data, "held_data");
            let keep = held(b.keep, "held_keep");
            let last = held(b.last, "held_last");
            let user = if cfg.user_bits > 0 {
                held(b.user, "held_user")
            } else {
                b.user
            };
            // Whether any piece after piece `j` has a byte.
            let some: Vec<Sig> = (0..k)
                .map(|i| keep.slice(nb * (i + 1) - 1, nb * i).or_reduce())
                .collect();
            let after: Vec<(u64, Sig)> = (0..k)
                .map(|j| {
                    let rest: Vec<Sig> = some[(j + 1) as usize..].to_vec();
                    let any = if rest.is_empty() {
                        lit(1, 0u32)
                    } else {
                        cat(&rest).or_reduce()
                    };
                    (j as u64, any)
                })
                .collect();
            let more = case(piece, &after, lit(1, 0u32)).named("bytes_after_piece");
            let end = (last & !more).named("frame_end");
            let done = (piece.eq((k - 1) as u64) | end).named("beat_done");
            let pieces = |x: Sig, per: u32| -> Vec<(u64, Sig)> {
                (0..k)
                    .map(|i| (i as u64, x.slice(per * (i + 1) - 1, per * i)))
                    .collect()
            };
            m.set_beat(&Beat {
                data: case(piece, &pieces(data, narrow), lit(narrow, 0u32)),
                keep: case(piece, &pieces(keep, nb), lit(nb, 0u32)),
                last: end,
                user,
            });
            m.valid().set(valid);
            let fire = (valid & m.ready()).named("fire");
            take.set(!valid | (fire & done));
            s.ready().set(take);
            valid.set_if(take, s.valid());
            piece.set(select(
                &[(take, lit(jb, 0u32)), (fire, piece + 1u32)],
                piece,
            ));
        },
    )
}

/// Narrow beats in (`in_bits`), wide beats out (`out_bits`).
pub fn stream_widen(cfg: &WidthCfg) -> Result<Block<WidthPorts>, ElabError> {
    let (wide, narrow) = cfg.check("stream_widen", false)?;
    let cfg = *cfg;
    let out_reg = stream_fwd_reg(&StreamCfg::new(wide, cfg.user_bits))?;
    Block::build(
        format!("stream_widen_{narrow}_to_{wide}_u{}", cfg.user_bits),
        cfg,
        move |p: WidthPorts| {
            doc("Width converter: narrow beats gathered into the lanes of a wide beat, which");
            doc("leaves when full or at the frame's end; bytes keep their places.");
            let (s, m) = (p.s_axis, p.m_axis);
            let k = wide / narrow;
            let nb = narrow / 8;
            let jb = clog2(k as u64);
            let lane = reg_init(jb, 0u32).named("lane");
            let u_out = out_reg.instance("u_out_reg");
            let b = s.beat();
            let complete = (lane.eq((k - 1) as u64) | b.last).named("completes");
            // A beat that completes the wide beat waits for the output register; any other
            // goes into its lane.
            let ready = (!complete | u_out.s_axis.ready()).named("in_ready");
            s.ready().set(ready);
            let fire = (s.valid() & ready).named("fire");
            let mut data = Vec::new();
            let mut keep = Vec::new();
            for i in 0..k {
                let here = lane.eq(i as u64);
                if i + 1 < k {
                    let st = fire & here & !complete;
                    let d = reg(narrow).enable(st).named(&format!("lane{i}_data"));
                    d.set(b.data);
                    let kp = reg(nb).enable(st).named(&format!("lane{i}_keep"));
                    kp.set(b.keep);
                    let filled = lane.gt(i as u64);
                    data.push(mux(here, b.data, d));
                    keep.push(select(&[(here, b.keep), (filled, kp)], lit(nb, 0u32)));
                } else {
                    data.push(b.data);
                    keep.push(mux(here, b.keep, lit(nb, 0u32)));
                }
            }
            data.reverse();
            keep.reverse();
            u_out.s_axis.set_beat(&Beat {
                data: cat(&data),
                keep: cat(&keep),
                last: b.last,
                user: b.user,
            });
            u_out.s_axis.valid().set(s.valid() & complete);
            connect(&u_out.m_axis, &m);
            lane.set(select(
                &[(fire & complete, lit(jb, 0u32)), (fire, lane + 1u32)],
                lane,
            ));
        },
    )
}
