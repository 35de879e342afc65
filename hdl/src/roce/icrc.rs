//! `icrc`: the RoCEv2 invariant CRC at full bus width, checked (RX) or inserted (TX).
//!
//! In: Ethernet frames without FCS whose last four bytes are the ICRC slot, and one request per
//! frame ([`IcrcReq`]: where the IP header starts, IPv4 or IPv6, RoCEv2 or not). The ICRC is the
//! CRC-32 over eight 0xFF bytes, then the frame from the IP header up to the slot, with the
//! fields routers change forced to 0xFF (reference/wire-formats.md §1.5):
//!
//! | Offset from the IP header | IPv4 | IPv6 |
//! |---|---|---|
//! | 0 | – | low nibble (traffic class) |
//! | 1 | TOS | traffic class, flow label |
//! | 2-3 | – | flow label |
//! | 7 | – | hop limit |
//! | 8 | TTL | – |
//! | 10-11 | header checksum | – |
//! | 20+6, 20+7 / 40+6, 40+7 | UDP checksum | UDP checksum |
//! | 20+8+4 / 40+8+4 | BTH byte 4 (FECN, BECN, reserved) | the same |
//!
//! IPv4 is taken without options (IHL 5, as RoCEv2 sends it); `l3_off` is 14, 18 or 22 (0, 1 or
//! 2 VLAN tags): a request with another offset is handled as not RoCE. Two modes, one generator
//! ([`IcrcMode`]):
//!
//! - **check** (RX): the slot holds the received ICRC; one [`IcrcRes`] per frame, in order, on
//!   `m_axis_res` (`roce` = the request's, `ok` = the ICRC is right; both 0 for a frame that is
//!   not RoCE). The frame itself is consumed (the unit sits on a fork of the RX stream). It uses
//!   the residue (§1.5 item 5): the CRC register over the masked stream and the received ICRC is
//!   the CRC-32 residue, advanced over the zero bytes that fill the last beat; one of `W`
//!   constants (`W` = bytes per beat), as in `eth_fcs_check`, so no compare of the slot's bytes
//!   and no CRC network per byte count.
//! - **insert** (TX): the slot holds four zero bytes (the placeholder the sender writes; a
//!   non-zero placeholder would enter the CRC as data) and is replaced by the ICRC on the way
//!   out (`m_axis`); a frame that is not RoCE passes unchanged.
//!
//! Internals. The masks are a fixed function of the byte position and the request: bytes 0..=74
//! (the BTH's byte 4 behind two tags and IPv6) lie in the first `ceil(75 / W)` beats, tracked by
//! a one-hot beat index; per byte lane the request's decoded flags (one-hot `l3_off`, `ipv6`)
//! select the 0xFF nibble masks and whether the byte lies in front of the IP header. The masked
//! beat is registered (`feed_*`) and enters the two-stage CRC register
//! ([`crate::eth::crc32::beat_crc_from`]). Bytes in front of the IP header count as zero
//! (`keep` cleared) and the register starts from `A^-l3_off·seed`, where `seed` (0xDEBB20E3) is
//! the register after the eight 0xFF bytes: a constant per `l3_off`, so the prefix costs no
//! logic. Bytes after the frame in its last beat count as zero too. Insert mode: the register
//! after the last beat has run over the four zero placeholder bytes and `z` fill bytes; the
//! inverse advance `A^-(4+z)` is `log2(W)` constant 32x32 matrices (the first with `A^-4`
//! folded in), one per pipeline stage, each switched by one bit of `z`, as in
//! `eth_fcs_append`. The beats wait in a delay line as long as the CRC pipeline, then in a hold
//! queue of `K - 1` beats (`K = ceil(3/W) + 1` beats can hold the last four bytes; one slot from
//! 32 bits up): a beat leaves it once `K - 1` later beats of its frame have come (so none of the
//! frame's last four bytes is in it) or its frame has ended. With the frame's last beat the
//! ICRC is known: it goes into the last beat through a rotation by the beat's byte count and one
//! 2:1 mux per bit, and into the up to three slot bytes of the beats before it (in the queue, or
//! leaving it in that cycle) per (lane, byte count). The queue drains one beat per cycle while
//! the next frame fills in behind.
//!
//! - Ports: `s_axis_tdata/tkeep/tvalid/tready/tlast` (no `tuser`); `s_axis_cmd_tdata/tvalid/
//!   tready` ([`IcrcReq`], one per frame; a register slice of two entries, so the ready is a
//!   flop, whose output register holds the frame's request until its last beat); check: `m_axis_res_tdata/tvalid/tready` ([`IcrcRes`]); insert:
//!   `m_axis_tdata/tkeep/tvalid/tready/tlast`. Each output leaves a register slice whose upstream
//!   ready (a flop) is the unit's advance: no combinational path from an output ready to the
//!   unit's registers (docs/TIMING.md, rules 1-2); the CRC's data term and its loop are
//!   separate stages as in every `beat_crc` user.
//! - Latency: check: the result is valid 4 cycles after the frame's last beat is taken; insert:
//!   the last beat leaves `3 + u + K` cycles after it is taken (`u` = `max(1, log2 W)`
//!   un-advance stages): 8 at 8 and 64 bits, 11 at 512; see [`latency`].
//! - Throughput: 1 beat/cycle, no bubble between frames, in both modes.
//! - Cost: the CRC (data-term XOR networks, as `eth_fcs_check`), the mask decode (one LUT per
//!   byte lane of the first beats), in insert mode the un-advance matrices, the delay line and
//!   the hold queue (`3 + u` and `K - 1` beat registers, and the output slice's two); the ICRC
//!   into the last beat is one 2:1 mux per bit behind a 4-way rotation; ECP5 LUT4/FF at 64
//!   and 512 bits: results/AREA-icrc.md (Yosys `synth_ecp5` on the unit alone).
//! - Golden model: `nicgen_model::roce::icrc_at` (with `nicgen_model::roce::icrc_ok` and
//!   `nicgen_model::roce::icrc_insert`); test: `testbench/tests/roce/icrc.rs`.

use crate::eth::crc32::{
    apply_mat, beat_crc_from, keep_onehot, onehot_value, residue_after_zeros, unadvance_zeros,
    zero_byte, Mat32, RESIDUE_REG,
};
use crate::stream::record_reg_slice::{beat_reg_slice, record_reg_slice};
use crate::stream::{Stream, StreamCfg};
use crate::timing::{stage, stage_init};
use nicgen_edsl::prelude::*;

/// The IP header offsets the unit takes: behind 0, 1 and 2 VLAN tags.
pub const L3_OFFS: [u32; 3] = [14, 18, 22];

/// The CRC register after the eight 0xFF bytes that stand in for the IB LRH.
pub const SEED: u32 = 0xDEBB_20E3;

/// Check (RX) or insert (TX).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IcrcMode {
    /// One [`IcrcRes`] per frame; the frames are consumed.
    Check,
    /// Frames out with the ICRC in their last four bytes.
    Insert,
}

/// Parameters of [`icrc`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IcrcCfg {
    /// Bus width: 8 or a multiple of 16 bits, up to 512.
    pub data_bits: u32,
    pub mode: IcrcMode,
}

nicgen_edsl::record! {
    /// What the unit needs to know about a frame (from the header parser).
    pub struct IcrcReq {
        /// First byte of the IP header: 14, 18 or 22 ([`L3_OFFS`]).
        l3_off: 5,
        /// IPv6 (else IPv4 without options).
        ipv6: 1,
        /// The frame is RoCEv2 (UDP port 4791); else it passes unchanged / is reported not RoCE.
        roce: 1,
    }
}

nicgen_edsl::record! {
    /// The check's verdict for one frame.
    pub struct IcrcRes {
        /// The request said RoCEv2 (at a supported `l3_off`).
        roce: 1,
        /// RoCEv2 and the ICRC in the frame's last four bytes is right.
        ok: 1,
    }
}

nicgen_edsl::record! {
    /// A request as queued: the offset decoded.
    struct QueuedReq {
        /// One-hot over [`L3_OFFS`], all zero when the frame is not RoCE.
        at: 3,
        ipv6: 1,
    }
}

/// The ports of [`icrc`].
pub struct IcrcPorts {
    /// The frames (`s_axis_*`).
    pub s_axis: Stream,
    /// One request per frame (`s_axis_cmd_*`).
    pub req: RecordStream<IcrcReq<u32>>,
    /// Insert: the frames with their ICRC (`m_axis_*`).
    pub m_axis: Option<Stream>,
    /// Check: one result per frame, in order (`m_axis_res_*`).
    pub res: Option<RecordStream<IcrcRes<u32>>>,
}

impl Ports for IcrcPorts {
    type Cfg = IcrcCfg;
    fn ports(io: &Io, cfg: &IcrcCfg) -> Self {
        let scfg = StreamCfg::new(cfg.data_bits, 0);
        IcrcPorts {
            s_axis: Stream::sink(io, "s_axis", &scfg),
            req: RecordStream::sink(io, "s_axis_cmd", IcrcReq::shape()),
            m_axis: (cfg.mode == IcrcMode::Insert).then(|| Stream::source(io, "m_axis", &scfg)),
            res: (cfg.mode == IcrcMode::Check)
                .then(|| RecordStream::source(io, "m_axis_res", IcrcRes::shape())),
        }
    }
}

/// Last byte position a mask can fall on: BTH byte 4 behind two tags and IPv6.
const LAST_MASKED: u32 = 22 + 40 + 8 + 4;

/// The 0xFF mask of byte `p` of a frame whose IP header (IPv6 when `ipv6`) starts at `l3`.
fn mask_at(p: u32, l3: u32, ipv6: bool) -> u8 {
    let Some(q) = p.checked_sub(l3) else {
        return 0;
    };
    let (ip_len, full): (u32, &[u32]) = if ipv6 {
        (40, &[1, 2, 3, 7])
    } else {
        (20, &[1, 8, 10, 11])
    };
    if ipv6 && q == 0 {
        0x0F
    } else if full.contains(&q) || [ip_len + 6, ip_len + 7, ip_len + 12].contains(&q) {
        0xFF
    } else {
        0
    }
}

/// Un-advance stages in insert mode: one per bit of the fill count `z` (0..W-1), at least one
/// (for `A^-4`).
fn unadvance_stages(w: u32) -> u32 {
    (32 - (w - 1).leading_zeros()).max(1)
}

/// `K`: the beats a frame's last four bytes can span, `ceil(3/W) + 1` (the insert mode's hold
/// queue has `K - 1` slots).
pub fn hold_beats(data_bits: u32) -> u32 {
    3u32.div_ceil(data_bits / 8) + 1
}

/// Cycles from taking a frame's last beat to its output: the result (check) or the last beat
/// (insert) is valid that many cycles later when the output is never stalled.
pub fn latency(cfg: &IcrcCfg) -> u32 {
    match cfg.mode {
        IcrcMode::Check => 4,
        IcrcMode::Insert => 3 + unadvance_stages(cfg.data_bits / 8) + hold_beats(cfg.data_bits),
    }
}

pub fn icrc(cfg: &IcrcCfg) -> Result<Block<IcrcPorts>, ElabError> {
    let scfg = StreamCfg::new(cfg.data_bits, 0);
    scfg.check("icrc")?;
    if cfg.data_bits > 512 {
        return Err(ElabError::config(
            "icrc",
            format!(
                "data_bits {} is over 512 (the widest preset bus; the unit is built and tested up \
                 to 512 bits)",
                cfg.data_bits
            ),
        ));
    }
    let cfg = *cfg;
    let mode = match cfg.mode {
        IcrcMode::Check => "check",
        IcrcMode::Insert => "insert",
    };
    Block::build(
        format!("icrc_{mode}_d{}", cfg.data_bits),
        cfg,
        move |p: IcrcPorts| {
            doc("RoCEv2 ICRC over the masked IP/UDP/BTH stream at full width;");
            doc(match cfg.mode {
                IcrcMode::Check => "check: one {roce, ok} result per frame (residue compare).",
                IcrcMode::Insert => "insert: the last four bytes of a RoCE frame get the ICRC.",
            });
            let w = cfg.data_bits / 8;
            let s = &p.s_axis;

            // The output slice's upstream ready is a flop: everything advances on it.
            let adv = wire(1).named("advance");

            // ---- Requests: decoded as they are queued into a register slice (two entries, its
            // ready a flop), whose output register holds the frame's request from before its
            // first beat to its last, so the masks start at flops (docs/TIMING.md, rules 9-10).
            let rin = p.req.fields();
            let at: Vec<Sig> = L3_OFFS
                .iter()
                .map(|&o| rin.roce & rin.l3_off.eq(o as u64))
                .collect();
            let queued = QueuedReq {
                at: cat(&[at[2], at[1], at[0]]),
                ipv6: rin.ipv6,
            }
            .pack();
            let u_req = record_reg_slice("req", queued, p.req.valid);
            p.req.ready.set(u_req.s_ready);
            let sof = reg_init(1, 1u32).named("first_beat");
            let ready = (adv & (!sof | u_req.valid)).named("in_ready");
            s.ready().set(ready);
            let take = (s.valid() & ready).named("take");
            sof.set_if(take, s.last());
            u_req.ready.set((take & s.last()).named("frame_done"));
            let cur = QueuedReq::unpack(u_req.data);
            let roce = cur.at.or_reduce().named("is_roce");

            // ---- Masks of the first beats: a one-hot beat index over them.
            let hdr_beats = LAST_MASKED / w + 1;
            let beat_at: Vec<Sig> = if hdr_beats > 1 {
                let r = reg_init(hdr_beats - 1, 0u32).enable(take).named("hdr_beat");
                let shifted = if hdr_beats > 2 {
                    cat(&[r.slice(hdr_beats - 3, 0), sof])
                } else {
                    sof
                };
                r.set(mux(s.last(), lit(hdr_beats - 1, 0u32), shifted));
                std::iter::once(sof)
                    .chain((0..hdr_beats - 1).map(|i| r.bit(i)))
                    .collect()
            } else {
                vec![sof]
            };
            let data = s.data();
            let keep = s.keep();
            // Per lane: the high and low nibble masks and "in front of the IP header", each an
            // OR over (header beat, offset, version) of the terms whose position matches.
            let ipv = [!cur.ipv6, cur.ipv6];
            let mut lanes_data = Vec::new();
            let mut lanes_keep = Vec::new();
            for lane in (0..w).rev() {
                let mut hi = Vec::new();
                let mut lo = Vec::new();
                let mut front = Vec::new();
                for (b, &here) in beat_at.iter().enumerate() {
                    let pos = b as u32 * w + lane;
                    for (j, &l3) in L3_OFFS.iter().enumerate() {
                        let sel = here & cur.at.bit(j as u32);
                        if pos < l3 {
                            front.push(sel);
                        }
                        for (v, &ver) in ipv.iter().enumerate() {
                            let m = mask_at(pos, l3, v == 1);
                            if m & 0xF0 != 0 {
                                hi.push(sel & ver);
                            }
                            if m & 0x0F != 0 {
                                lo.push(sel & ver);
                            }
                        }
                    }
                }
                let any = |t: Vec<Sig>| match t.len() {
                    0 => None,
                    _ => Some(cat(&t).or_reduce()),
                };
                let byte = data.slice(8 * lane + 7, 8 * lane);
                let mask = match (any(hi), any(lo)) {
                    (None, None) => None,
                    (h, l) => Some(cat(&[
                        h.unwrap_or(lit(1, 0u32)).repl(4),
                        l.unwrap_or(lit(1, 0u32)).repl(4),
                    ])),
                };
                lanes_data.push(match mask {
                    Some(m) => (byte | m).named(&format!("masked{lane}")),
                    None => byte,
                });
                lanes_keep.push(match any(front) {
                    Some(f) => keep.bit(lane) & !f,
                    None => keep.bit(lane),
                });
            }
            // The register before byte 0 of the frame, advanced over the first beat: a constant
            // per offset.
            let a_w = zero_byte().pow(w as u64);
            let starts: Vec<u32> = L3_OFFS
                .iter()
                .map(|&o| a_w.mul(&unadvance_zeros(o as u64)).apply(SEED))
                .collect();
            let start = mux(
                cur.at.bit(1),
                lit(32, starts[1]),
                mux(cur.at.bit(2), lit(32, starts[2]), lit(32, starts[0])),
            );

            // ---- Feed stage: the masked beat, registered in front of the CRC's trees.
            let f_data = stage(cat(&lanes_data), adv).named("feed_data");
            let f_keep = stage(cat(&lanes_keep), adv).named("feed_crc_keep");
            let f_take = stage_init(take, adv).named("feed_valid");
            let f_first = stage(sof, adv).named("feed_first");
            let f_start = stage(start, adv).named("feed_start");
            let f_last = stage(s.last(), adv).named("feed_last");
            let f_roce = stage(roce, adv).named("feed_roce");
            let f_inkeep = stage(keep, adv).named("feed_keep");
            let crc = beat_crc_from(f_data, f_keep, f_take, f_first, Some(f_start), adv);
            // Fill bytes after the frame in its last beat, from the frame's own keep.
            let zw = (32 - (w - 1).leading_zeros()).max(1);
            let z0 = if w == 1 {
                lit(1, 0u32)
            } else {
                onehot_value(&keep_onehot(f_inkeep, "tail"), zw, |v| u64::from(w - v))
                    .named("tail_zeros")
            };

            match cfg.mode {
                IcrcMode::Check => {
                    let fin1 = stage_init(f_take & f_last, adv).named("fin1");
                    let fin2 = stage_init(fin1, adv).named("fin2");
                    let roce1 = stage(f_roce, adv).named("roce1");
                    let roce2 = stage(roce1, adv).named("roce2");
                    // Good when the register is the residue advanced over the fill bytes (a
                    // table of W constants, selected a stage early).
                    let table = residue_after_zeros(w as usize);
                    let expect = if w == 1 {
                        lit(32, RESIDUE_REG)
                    } else {
                        let arms: Vec<(u64, Sig)> = (1..w)
                            .map(|t| (t as u64, lit(32, table[t as usize])))
                            .collect();
                        let e1 = stage(case(z0, &arms, lit(32, table[0])), adv).named("expect1");
                        stage(e1, adv).named("expect2")
                    };
                    let ok = (roce2 & crc.eq(expect)).named("icrc_ok");
                    let res = IcrcRes { roce: roce2, ok }.pack();
                    let out = record_reg_slice("res_out", res, fin2);
                    out.drive(p.res.as_ref().expect("check mode has m_axis_res"));
                    adv.set(out.s_ready);
                }
                IcrcMode::Insert => {
                    // The ICRC: the register un-advanced over the placeholder and fill bytes.
                    let u = unadvance_stages(w);
                    let a4 = unadvance_zeros(4);
                    let z1 = stage(z0, adv).named("tail_zeros1");
                    let mut z = stage(z1, adv).named("tail_zeros2");
                    let mut y = crc;
                    let zb = 32 - (w - 1).leading_zeros();
                    for b in 0..u {
                        let fold = |m: Mat32| if b == 0 { m.mul(&a4) } else { m };
                        // `z` holds bits b.. of the fill count.
                        let back = if b < zb {
                            let m1 = fold(unadvance_zeros(1u64 << b));
                            let m0 = fold(Mat32::identity());
                            mux(
                                z.bit(0),
                                apply_mat(&m1, y, &format!("unadv{b}_1")),
                                apply_mat(&m0, y, &format!("unadv{b}_0")),
                            )
                        } else {
                            z.unused();
                            apply_mat(&fold(Mat32::identity()), y, &format!("unadv{b}"))
                        };
                        y = stage(back, adv).named(&format!("unadv{b}_q"));
                        if b + 1 < zb {
                            z = stage(z.slice(z.width() - 1, 1), adv)
                                .named(&format!("tail_zeros_s{b}"));
                        }
                    }
                    let icrc = (!y).named("icrc_value");

                    // The beats wait as long as the CRC: feed stage, two CRC stages, `u`.
                    let (mut dd, mut dk, mut dl, mut dv, mut dr) = (
                        stage(data, adv).named("line0_data"),
                        f_inkeep,
                        f_last,
                        f_take,
                        f_roce,
                    );
                    for i in 1..(3 + u) {
                        dd = stage(dd, adv).named(&format!("line{i}_data"));
                        dk = stage(dk, adv).named(&format!("line{i}_keep"));
                        dl = stage(dl, adv).named(&format!("line{i}_last"));
                        dv = stage_init(dv, adv).named(&format!("line{i}_valid"));
                        dr = stage(dr, adv).named(&format!("line{i}_roce"));
                    }
                    hold_queue(w, adv, icrc, dd, dk, dl, dv, dr, p.m_axis.as_ref().unwrap());
                }
            }
        },
    )
}

/// The insert mode's hold queue and output slice (module doc): beats from the delay line in
/// (`valid`/`data`/`keep`/`last`, `roce` of their frame), the ICRC valid with a last beat.
///
/// The queue has `K - 1` slots (one from 32 bits up). Its head leaves when its frame has ended,
/// or when a beat comes in while the queue is full (the head then has `K - 1` later beats, the
/// frame's last beat still to come, so it holds none of the last four bytes, or the incoming beat
/// is the last and the head is patched on its way out). The last beat's ICRC bytes are its bytes
/// `n-4 .. n-1` (`n` = its byte count): byte `b` takes byte `(b - n) mod 4` of the ICRC, so the
/// ICRC is rotated once by `n mod 4` and each lane picks a fixed byte of it under a window of
/// four lanes (one 2:1 mux per bit, as `eth_fcs_append`'s FCS insertion). Bytes in the beats
/// before the last one (at most three) are picked per (lane, byte count).
#[allow(clippy::too_many_arguments)]
#[track_caller]
fn hold_queue(
    w: u32,
    adv: Sig,
    icrc: Sig,
    in_d: Sig,
    in_k: Sig,
    in_l: Sig,
    in_v: Sig,
    in_r: Sig,
    m: &Stream,
) {
    let slots = hold_beats(8 * w) - 1;
    let cw = 32 - slots.leading_zeros();
    let cnt = reg_init(cw, 0u32).enable(adv).named("hold_count");
    let c_is: Vec<Sig> = (0..=slots).map(|c| cnt.eq(c as u64)).collect();
    let names = |f: &'static str| (0..slots).map(move |i| format!("hold{i}_{f}"));
    let slots_d: Vec<Sig> = names("data").map(|n| reg(8 * w).named(&n)).collect();
    let slots_k: Vec<Sig> = names("keep").map(|n| reg(w).named(&n)).collect();
    let slots_l: Vec<Sig> = names("last").map(|n| reg(1).named(&n)).collect();
    let slots_f: Vec<Sig> = names("fin").map(|n| reg(1).named(&n)).collect();
    let end = (in_v & in_l).named("hold_frame_end");
    let patch = (end & in_r).named("hold_patch");
    let rel = (!c_is[0] & (slots_f[0] | (in_v & c_is[slots as usize]))).named("hold_release");
    let n_is = keep_onehot(in_k, "last_bytes");
    let icrc_byte = |j: u32| icrc.slice(8 * j + 7, 8 * j);

    // The last beat: the ICRC rotated by `n mod 4` (rotated byte r = ICRC byte (r - n) mod 4),
    // into the lanes of the window `n-4 .. n-1` (the thermometer keep: kept, and 4 lanes on not).
    let n_mod4 = onehot_value(&n_is, 2, |v| u64::from(v % 4)).named("last_bytes_mod4");
    let rot_arms: Vec<(u64, Sig)> = (1..4u32)
        .map(|r| {
            let bytes: Vec<Sig> = (0..4u32)
                .rev()
                .map(|q| icrc_byte((q + 4 - r) % 4))
                .collect();
            (u64::from(r), cat(&bytes))
        })
        .collect();
    let rot = case(n_mod4, &rot_arms, icrc).named("icrc_rotated");
    let in_patched = cat(&(0..w)
        .rev()
        .map(|lane| {
            let win = if lane + 4 < w {
                in_k.bit(lane) & !in_k.bit(lane + 4)
            } else {
                in_k.bit(lane)
            };
            let byte = in_d.slice(8 * lane + 7, 8 * lane);
            let r = rot.slice(8 * (lane % 4) + 7, 8 * (lane % 4));
            mux(patch & win, r, byte)
        })
        .collect::<Vec<_>>())
    .named("hold_in_patched");

    // A beat `d >= 1` beats before the last: byte `lane` is ICRC byte `j` when its distance from
    // the frame's end, `n + (d-1)·W + W-1-lane`, is `3 - j`, i.e. `n = 4 - j - d·W + lane`.
    // `d_sel(d)` says the beat is `d` before the last.
    let patched = |d_sel: &dyn Fn(u32) -> Sig, data: Sig| -> Sig {
        let lanes: Vec<Sig> = (0..w)
            .rev()
            .map(|lane| {
                let mut out = data.slice(8 * lane + 7, 8 * lane);
                for j in 0..4u32 {
                    let terms: Vec<Sig> = (1..=slots)
                        .filter_map(|d| {
                            let n = 4 + i64::from(lane) - i64::from(j) - i64::from(d * w);
                            (1..=i64::from(w))
                                .contains(&n)
                                .then(|| d_sel(d) & n_is[n as usize - 1])
                        })
                        .collect();
                    if !terms.is_empty() {
                        out = mux(patch & cat(&terms).or_reduce(), icrc_byte(j), out);
                    }
                }
                out
            })
            .collect();
        cat(&lanes)
    };
    // Slot `i` holds the beat `cnt - i` before the incoming one; a finished frame's beats stay
    // as they are.
    let slot_patched: Vec<Sig> = (0..slots)
        .map(|i| {
            let pd = patched(
                &|d| {
                    if i + d <= slots {
                        c_is[(i + d) as usize]
                    } else {
                        lit(1, 0u32)
                    }
                },
                slots_d[i as usize],
            );
            mux(slots_f[i as usize], slots_d[i as usize], pd).named(&format!("hold{i}_patched"))
        })
        .collect();
    let after = (cnt - rel.zext(cw)).named("hold_after_release");
    let fin_all = |f: Sig| f | end;
    for i in 0..slots as usize {
        let write_in = (adv & in_v & after.eq(i as u64)).named(&format!("hold{i}_write"));
        // Shift on a release, or patch in place; else the slot holds (a clock enable).
        let keep_en = (adv & !write_in & (rel | end)).named(&format!("hold{i}_move"));
        let next = |v: &[Sig], own: Sig| -> Sig {
            if i + 1 < slots as usize {
                mux(rel, v[i + 1], own)
            } else {
                own
            }
        };
        slots_d[i].set_if(write_in, in_patched);
        slots_d[i].set_if(keep_en, next(&slot_patched, slot_patched[i]));
        slots_k[i].set_if(write_in, in_k);
        slots_k[i].set_if(keep_en, next(&slots_k, slots_k[i]));
        slots_l[i].set_if(write_in, in_l);
        slots_l[i].set_if(keep_en, next(&slots_l, slots_l[i]));
        slots_f[i].set_if(write_in, in_l);
        slots_f[i].set_if(keep_en, fin_all(next(&slots_f, slots_f[i])));
    }
    cnt.set(after + in_v.zext(cw));
    let out = beat_reg_slice("out", slot_patched[0], slots_k[0], slots_l[0], rel);
    out.drive(m);
    adv.set(out.slice.s_ready);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_at_every_width_and_rejects_bad_params() {
        for d in [8, 16, 32, 48, 64, 128, 256, 512] {
            for mode in [IcrcMode::Check, IcrcMode::Insert] {
                icrc(&IcrcCfg { data_bits: d, mode }).unwrap();
            }
        }
        let e = icrc(&IcrcCfg {
            data_bits: 1024,
            mode: IcrcMode::Check,
        })
        .unwrap_err();
        assert!(e.mentions("data_bits 1024"), "{e}");
        assert!(icrc(&IcrcCfg {
            data_bits: 24,
            mode: IcrcMode::Insert
        })
        .is_err());
    }

    #[test]
    fn the_start_constants_reach_the_seed_at_the_ip_header() {
        use crate::eth::crc32::{advance_zeros, bytes_step, INIT};
        // Eight 0xFF bytes from the preset give the seed.
        assert_eq!(bytes_step(INIT, &[0xFF; 8]), SEED);
        for o in L3_OFFS {
            let before = unadvance_zeros(o as u64).apply(SEED);
            assert_eq!(advance_zeros(o as u64).apply(before), SEED);
        }
    }

    #[test]
    fn masks_match_the_model_table() {
        // IPv4 at 14: TOS 15, TTL 22, csum 24-25, UDP csum 40-41, BTH byte 4 46.
        let v4: Vec<u32> = (0..80).filter(|&p| mask_at(p, 14, false) != 0).collect();
        assert_eq!(v4, [15, 22, 24, 25, 40, 41, 46]);
        let v6: Vec<(u32, u8)> = (0..80)
            .map(|p| (p, mask_at(p, 22, true)))
            .filter(|x| x.1 != 0)
            .collect();
        assert_eq!(
            v6,
            [
                (22, 0x0F),
                (23, 0xFF),
                (24, 0xFF),
                (25, 0xFF),
                (29, 0xFF),
                (68, 0xFF),
                (69, 0xFF),
                (74, 0xFF)
            ]
        );
        assert_eq!(LAST_MASKED, 74);
    }
}
