//! `tx_csum`: TX checksum insertion (mlx5 `cs_flags`: L3 = IPv4 header checksum, L4 = TCP/UDP
//! checksum over the pseudo-header), store-and-forward.
//!
//! Each frame arrives on `s_axis` after its request on `s_axis_req` (record [`TxCsumReq`]: the
//! header parser's offsets plus the two offload flags). While the frame streams into an internal
//! frame buffer, two masked frame sums ([`mod@crate::csum::frame_sum`]) run over it with the
//! checksum fields themselves masked out (so they count as zero, whatever the host wrote
//! there):
//!
//! | sum | bytes | gives |
//! |---|---|---|
//! | `hdr` | `[l3_off, l4_off)` minus the IPv4 checksum field | IPv4 header checksum `~hdr` |
//! | `ip` | `[l3_off, end)` minus both checksum fields | L4 checksum `~fold(ip + ~hdr + pseudo)` |
//!
//! A UDP checksum that computes to 0 is sent as 0xFFFF. When the frame's sums are done, the
//! frame leaves the buffer with the two fields overwritten (IPv4 header checksum at
//! `l3_off + 10`, TCP at `l4_off + 16`, UDP at `l4_off + 6`); a frame whose request asks for
//! nothing (or is not IPv4 / TCP / UDP) leaves unchanged. The requester clears `do_l4` for
//! fragments and malformed headers.
//!
//! Internals (docs/TIMING.md, rules 7, 8, 9 and 10): the sum pipeline never stalls (`owed`
//! reserves a result-queue place per frame taken); stage A registers the accepted beat and
//! request; every byte mask, on both sides, is tracked from beat to beat
//! ([`super::byte_pos::ge_mask_tracked`]), and stage B registers the beat with its two masks
//! before the first adder; the pseudo-header sum is two stages from the request's `ip_sum`
//! ([`crate::csum::pseudo::pseudo_from_address_sum`]) and queued, and joined in order with the
//! frame's queued sums; the L4 checksum takes a carry-save layer and two single-chain stages,
//! and is queued folded but not complemented (the output side complements it and applies the
//! UDP rule, so no compare sits in front of the queue's LUT RAM); the frame buffer's output goes
//! through a register slice (`frame_reg`, [`crate::stream::beat_reg_slice`]) before the output
//! side, so neither the bank select nor the output side's ready reaches across the block-RAM
//! routing within a cycle. The slice adds no latency: a frame's first beat waits there for its
//! result.
//!
//! - Ports: `s_axis_*`, `s_axis_req_tdata/_tvalid/_tready` (`_tready` from a flop: the request
//!   goes through a skid register, so the take decision never reaches the requester's register
//!   enables), `m_axis_*`.
//! - Latency: store-and-forward: a frame's first beat leaves [`latency`] =
//!   `max(1, ceil(log2(W/2) / levels_per_stage)) + 12` cycles after its last beat entered (`W`
//!   bytes per beat; 14 at 64 bits with 1 level per stage, 15 at 512 bits with 2): stages A
//!   and B, the sums with their accumulate and fold stages, the sums queue and its join with
//!   the pseudo-header queue, three checksum stages, 2 cycles in the result queue, 1 in its
//!   output register, 1 to load the result on the output side.
//! - Throughput: 1 beat/cycle in and out for back-to-back frames of equal beat counts, one-beat
//!   frames included (a request is taken, and a result popped, in the cycle the previous frame's
//!   last beat moves); a frame cannot leave before its own last beat arrived, so a longer frame
//!   after a shorter one waits.
//! - Cost: the frame buffer (`buffer_beats` x (data + keep + 1), block RAM) and its output
//!   slice, a request skid register, a 16-entry result queue, two frame sums, 9 mask trackers;
//!   LUT/FF/Fmax per preset: results/AREA.md, row `tx_csum`.
//! - Golden model: `nicgen_model::tx` (checksum insertion on bytes); test:
//!   `testbench/tests/eth/tx_csum.rs`.

use super::byte_pos::{eq_mask_tracked_with, ge_bound_flags, ge_mask_tracked, Take};
use crate::csum::frame_sum::{frame_sum, latency as sum_latency, SumIn};
use crate::csum::pseudo::{add3, fold_once, pseudo_from_address_sum};
use crate::stream::stream_fifo::{stream_fifo_in, FifoRam};
use crate::stream::{
    record_fifo, stream_fifo, stream_fwd_reg, stream_reg_slice, FifoCfg, Stream, StreamCfg,
};
use crate::timing::{stage, stage_init, Reserve};
use nicgen_edsl::prelude::*;
use nicgen_edsl::record::Word;

nicgen_edsl::record! {
    /// What the insertion unit needs to know about a frame.
    pub struct TxCsumReq {
        /// 0 none, 1 IPv4, 2 IPv6.
        l3: 2,
        /// 0 none, 1 TCP, 2 UDP.
        l4: 2,
        /// First byte of the IP header.
        l3_off: 16,
        /// First byte of the TCP/UDP header.
        l4_off: 16,
        /// End of the IP datagram, clipped to the frame.
        end: 16,
        /// TCP/UDP length for the pseudo-header.
        l4_len: 16,
        /// Upper-layer protocol for the pseudo-header.
        proto: 8,
        /// The pseudo-header's address part: the ones'-complement sum of both addresses'
        /// 16-bit words (the parser's `ip_sum`), not the 256 address bits.
        ip_sum: 16,
        /// Insert the IPv4 header checksum (cs_flags L3_CSUM).
        do_l3: 1,
        /// Insert the TCP/UDP checksum (cs_flags L4_CSUM).
        do_l4: 1,
    }
}

nicgen_edsl::record! {
    /// A request with the two checksum fields' positions, `[pos, pos + 2)`, added before the
    /// request skid register and held with it.
    struct PosReq {
        req: TxCsumReq::WIDTH,
        l4_pos2: 16,
        l4_pos: 16,
        l3_pos2: 16,
        l3_pos: 16,
    }
}

nicgen_edsl::record! {
    /// The per-frame facts that travel beside the sums: the fields' first bytes and what to
    /// put there.
    struct Side {
        l4_pos: 16,
        l3_pos: 16,
        udp: 1,
        do_l4: 1,
        do_l3: 1,
    }
}

nicgen_edsl::record! {
    /// A frame's sums with its [`Side`], queued until its pseudo-header sum is there.
    struct Sums {
        ip: 16,
        hdr: 16,
        side: Side::WIDTH,
    }
}

nicgen_edsl::record! {
    /// What travels from the sums to the output side, one per frame (a multiple of 16 bits:
    /// the result queue is a stream FIFO).
    struct TxCsumRes {
        l3_ck: 16,
        /// Folded, not yet complemented.
        l4_sum: 16,
        /// The fields' first bytes (the output side derives the second byte's one-hot from
        /// the first's by shifting).
        l4_pos: 16,
        l3_pos: 16,
        /// Each position's `ge_bound_flags`, made here so that the output side's trackers load
        /// from flops, not through a compare of the queue's output.
        l4_pos_flags: 2,
        l3_pos_flags: 2,
        do_l3: 1,
        do_l4: 1,
        udp: 1,
        pad: 9,
    }
}

/// Results the queue holds: more than the one-beat frames that can be between their last beat
/// and the result leaving the queue (about [`latency`], 15 cycles at 512 bits) plus one, so that
/// a ready output never throttles the input (`tx_path_sends_back_to_back_frames_without_bubbles`
/// checks this at 64 and 512 bits).
const RES_DEPTH: u32 = 16;

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TxCsumCfg {
    pub data_bits: u32,
    pub levels_per_stage: u32,
    /// Frame buffer depth in beats (power of two): at least two of the largest frames.
    pub buffer_beats: u32,
}

/// Cycles from a frame's last beat in to its first beat out: stages A and B, the frame sums, the
/// sums queue, three checksum stages, then 2 cycles in the result queue, 1 in its output register and
/// 1 to load the result on the output side.
pub fn latency(cfg: &TxCsumCfg) -> u32 {
    sum_latency(cfg.data_bits / 8, cfg.levels_per_stage) + 10
}

/// The ports of [`tx_csum`].
pub struct TxCsumPorts {
    /// The frames in (`s_axis_*`).
    pub s_axis: Stream,
    /// The frames out, checksums inserted (`m_axis_*`).
    pub m_axis: Stream,
    /// One request per frame, before or with its first beat (`s_axis_req_*`).
    pub req: RecordStream<TxCsumReq<u32>>,
}

impl Ports for TxCsumPorts {
    type Cfg = TxCsumCfg;
    fn ports(io: &Io, cfg: &TxCsumCfg) -> Self {
        let s = StreamCfg::new(cfg.data_bits, 0);
        TxCsumPorts {
            s_axis: Stream::sink(io, "s_axis", &s),
            m_axis: Stream::source(io, "m_axis", &s),
            req: RecordStream::sink(io, "s_axis_req", TxCsumReq::shape()),
        }
    }
}

pub fn tx_csum(cfg: &TxCsumCfg) -> Result<Block<TxCsumPorts>, ElabError> {
    let scfg = StreamCfg::new(cfg.data_bits, 0);
    scfg.check("tx_csum")?;
    if cfg.levels_per_stage == 0 {
        return Err(ElabError::config(
            "tx_csum",
            "levels_per_stage must be at least 1",
        ));
    }
    let buf = stream_fifo_in(
        &FifoCfg {
            stream: scfg,
            depth: cfg.buffer_beats,
            frame_mode: false,
        },
        FifoRam::Block,
    )?;
    let res_cfg = StreamCfg::new(TxCsumRes::WIDTH, 0);
    let resq = stream_fifo(&FifoCfg {
        stream: res_cfg,
        depth: RES_DEPTH,
        frame_mode: false,
    })?;
    let res_reg = stream_fwd_reg(&res_cfg)?;
    let sums_fifo = record_fifo(Sums::shape(), RES_DEPTH)?;
    let pseudo_fifo = record_fifo(Word::shape(16), 2 * RES_DEPTH)?;
    let cfg = *cfg;
    let name = format!("tx_csum_d{}", cfg.data_bits);
    Block::build(name, cfg, move |p: TxCsumPorts| {
        doc("TX checksum insertion (IPv4 header, TCP/UDP with pseudo-header), store-and-forward.");
        let bytes = cfg.data_bits / 8;
        let (s, m) = (p.s_axis, p.m_axis);
        let req_in_valid = p.req.valid;
        // The request through a skid register (as `stream_skid`: latency 0, one request of
        // storage), so that `s_axis_req_tready` is a flop: the take decision below (`room`, the
        // frame's beat) stays inside, out of the requester's register enables. The skid copies
        // the input whenever it is empty, so its enable is a flop too. The checksum fields'
        // positions are added before the skid and held with the request, so that the skid's
        // select comes after the adders, not before them.
        // The two checksum fields, `[pos, pos + 2)`: each position one adder from the offset
        // (TCP's field 16 bytes in, UDP's 6, picked after the adders), not a chain of two.
        let rq_in = p.req.fields();
        let l3_at = |k: u32| rq_in.l3_off + (10 + k);
        let l4_at = |k: u32| {
            let o = rq_in.l4_off;
            mux(rq_in.l4.eq(1u32), o + (16 + k), o + (6 + k))
        };
        let req_in_pos = PosReq {
            req: p.req.data,
            l4_pos2: l4_at(2),
            l4_pos: l4_at(0),
            l3_pos2: l3_at(2),
            l3_pos: l3_at(0),
        }
        .pack();
        // The skid's valid, twice: copy 0 enables and selects every bit of the skid, copy 1
        // (stored complemented: "free") is the ready, so that the requester's logic does not
        // start at that net (as `stream_skid`; docs/TIMING.md, rule 3).
        let req_skid_q = Replicated::new("req_skid_valid", 2, 1, Some(0));
        let req_skid_v = req_skid_q.get(0);
        let req_skid = reg(req_in_pos.width())
            .enable(!req_skid_v)
            .named("req_skid_data");
        req_skid.set(req_in_pos);
        p.req.ready.set(req_skid_q.get_n(1));
        let req_valid = (req_in_valid | req_skid_v).named("req_valid");
        let req_pos = PosReq::unpack(mux(req_skid_v, req_skid, req_in_pos).named("req_data"));

        // Input side: frame into the buffer, sums alongside. The sum pipeline never stalls (no
        // enable fans out to its registers): a frame's beats are taken only while every frame
        // taken has a place in the result queue (`owed` counts frames from their last beat until
        // their result is popped).
        let adv = lit(1, 1u32);
        let u_buf = buf.instance("u_frame_buf");
        let u_res = resq.instance("u_result_q");
        let reserve = Reserve::new(RES_DEPTH);
        let room = reserve.room;
        // A request is held, twice: copy 0 (`have_req`) gates the beats, copy 1 (stored
        // complemented, so that synthesis keeps both) is for the request side, so that taking
        // a request does not go through `beat` (a net of 17 loads; docs/TIMING.md, rule 3).
        // `ends` is `frame_end` without `have` (a frame's end implies it).
        let have_q = Replicated::new("have_req", 2, 1, Some(0));
        let (have, have_n) = (have_q.get(0), have_q.get_n(1));
        let buf_ready = u_buf.s_axis.ready();
        let beat = (s.valid() & have & room & buf_ready).named("beat");
        let frame_end = (beat & s.last()).named("frame_end");
        let ends = (s.valid() & s.last() & room & buf_ready).named("req_ends");
        let req_ready = (have_n | ends).named("req_ready");
        let take = (req_valid & req_ready).named("take_req");
        let req_park = (req_in_valid & !req_skid_v & !req_ready).named("req_park");
        req_skid_q.set_if(req_ready, lit(1, 0u32));
        req_skid_q.set_if(req_park, lit(1, 1u32));
        s.ready().set(have & room & buf_ready);
        // Taken anew, or held until its frame ends.
        have_q.set(req_valid | (!have_n & !ends));
        u_buf.s_axis.data().set(s.data());
        u_buf.s_axis.keep().set(s.keep());
        u_buf.s_axis.last().set(s.last());
        // The buffer's write from the complement copy of `have` as well, so that synthesis
        // keeps it apart from `beat` and its 17 loads.
        u_buf.s_axis.valid().set(s.valid() & !have_n & room);

        // Stage A: the accepted beat and the taken request, registered as they are, so that the
        // accept logic drives a few registers, not every mask and adder. Positions derived from
        // the request are computed before the skid (above).
        let rq = TxCsumReq::unpack(req_pos.req);
        let data = stage(s.data(), adv).named("data_a");
        let kept = stage(s.keep(), adv).named("keep_a");
        let last = stage(s.last(), adv).named("last_a");
        let beat_a = stage_init(beat, adv).named("beat_a");
        let take_a = stage_init(take, adv).named("take_a");
        let req = |x: Sig, f: &str| stage(x, adv).named(&format!("{f}_a"));
        let (l3_in, l4_in) = (rq.l3, rq.l4);
        let l3_off = req(rq.l3_off, "l3_off");
        let l4_off = req(rq.l4_off, "l4_off");
        let end = req(rq.end, "end");
        let pos_a = [
            req(req_pos.l3_pos, "l3_pos"),
            req(req_pos.l3_pos2, "l3_pos2"),
            req(req_pos.l4_pos, "l4_pos"),
            req(req_pos.l4_pos2, "l4_pos2"),
        ];
        let is_v4_a = req(l3_in.eq(1u32), "is_v4");
        let do_l3_a = req(rq.do_l3 & l3_in.eq(1u32), "do_l3");
        let do_l4_a = req(
            rq.do_l4 & l3_in.ne(0u32) & (l4_in.eq(1u32) | l4_in.eq(2u32)),
            "do_l4",
        );
        let udp_a = req(l4_in.eq(2u32), "udp");
        // The pseudo-header sum, pipelined from the taken request, waits in a queue for its
        // frame's sums (one entry per request, in order).
        let (pseudo, pseudo_valid) = pseudo_from_address_sum(
            take_a,
            req(rq.ip_sum, "ip_sum"),
            req(rq.proto, "proto"),
            req(rq.l4_len, "l4_len"),
        );
        let u_pseudo = pseudo_fifo.instance("u_pseudo_q");
        u_pseudo.s_axis.data.set(pseudo);
        u_pseudo.s_axis.valid.set(pseudo_valid);
        // Never full: one entry per frame taken and not yet joined, at most `owed` + 1.
        u_pseudo.s_axis.ready.unused();
        // Per frame, from its request until the sums are done with it.
        let held = |x: Sig, name: &str| {
            let r = reg(x.width()).enable(take_a).named(name);
            r.set(x);
            r
        };
        let is_v4 = held(is_v4_a, "is_v4");
        let do_l3 = held(do_l3_a, "do_l3_eff");
        let do_l4 = held(do_l4_a, "do_l4_eff");
        let udp = held(udp_a, "is_udp");
        let pos_held = [held(pos_a[0], "l3_pos"), held(pos_a[2], "l4_pos")];

        // Byte masks of the beat in stage A (see `ge_mask_tracked`).
        let ge = |bound: Sig, name: &str| ge_mask_tracked(bound, take_a, beat_a, bytes, name);
        let ge_l3 = ge(l3_off, "ge_l3");
        let ge_l4 = ge(l4_off, "ge_l4");
        let ge_end = ge(end, "ge_end");
        let l3_field =
            (ge(pos_a[0], "ge_l3_ck") & !ge(pos_a[1], "ge_l3_ck_end") & is_v4.repl(bytes))
                .named("l3_field");
        let l4_field =
            (ge(pos_a[2], "ge_l4_ck") & !ge(pos_a[3], "ge_l4_ck_end") & do_l4.repl(bytes))
                .named("l4_field");
        let hdr_mask = (kept & ge_l3 & !ge_l4 & !l3_field).named("hdr_mask");
        let ip_mask = (kept & ge_l3 & !ge_end & !l3_field & !l4_field).named("ip_mask");
        // Stage B: the beat and its two masks, registered (each mask bit is an AND of up to
        // nine flops: two LUT levels that would otherwise sit in front of the first adder).
        let data_b = stage(data, adv).named("data_b");
        let beat_b = stage_init(beat_a, adv).named("beat_b");
        let last_b = stage(last, adv).named("last_b");
        let hdr_mask = stage(hdr_mask, adv).named("hdr_mask_b");
        let ip_mask = stage(ip_mask, adv).named("ip_mask_b");
        let sum_in = |mask: Sig| SumIn {
            data: data_b,
            mask,
            beat: beat_b,
            last: last_b,
            adv,
        };
        let hdr = frame_sum(&sum_in(hdr_mask), cfg.levels_per_stage, "hdr_");
        let ip = frame_sum(&sum_in(ip_mask), cfg.levels_per_stage, "ip_");

        // Per-frame facts, sampled with the last beat and carried as far as the sums, then
        // queued with them until the frame's pseudo-header sum is there too.
        let mut side = Side {
            l4_pos: pos_held[1],
            l3_pos: pos_held[0],
            udp,
            do_l4,
            do_l3,
        }
        .pack();
        for _ in 0..hdr.latency + 1 {
            side = stage(side, adv);
        }
        let u_sums = sums_fifo.instance("u_sums_q");
        u_sums.s_axis.set_fields(&Sums {
            ip: ip.sum,
            hdr: hdr.sum,
            side,
        });
        u_sums.s_axis.valid.set(hdr.valid);
        // Never full: one entry per frame past its last beat, at most `owed`.
        u_sums.s_axis.ready.unused();

        // Checksums, in three stages so that no path chains two carry chains: a frame's sums
        // and pseudo-header sum, joined and registered; the L4 sum's three operands through a
        // carry-save layer into one chain (18 bits, at most 3 * 0xFFFF); its fold (two chains
        // side by side and a select).
        let join = (u_sums.m_axis.valid & u_pseudo.m_axis.valid).named("join");
        u_sums.m_axis.ready.set(join);
        u_pseudo.m_axis.ready.set(join);
        let sums = u_sums.m_axis.fields();
        let v_valid = stage_init(join, adv).named("ck_valid");
        let ip_sum = stage(sums.ip, adv).named("ip_sum");
        let hdr_sum = stage(sums.hdr, adv).named("hdr_sum");
        let v_side = stage(sums.side, adv).named("ck_side");
        let v_ps = stage(u_pseudo.m_axis.data, adv).named("ck_pseudo");
        let (x, y, z) = (ip_sum, !hdr_sum, v_ps);
        let raw = add3(x, y, z, "l4_raw");
        let r_valid = stage_init(v_valid, adv).named("raw_valid");
        let r_raw = stage(raw, adv).named("l4_raw_q");
        let r_l3_ck = stage(!hdr_sum, adv).named("l3_ck");
        let r_side = stage(v_side, adv).named("raw_side");
        // Fold: lo + hi, minus 0xFFFF when that carries out (hi <= 2, so once is enough).
        let folded = fold_once(r_raw, "l4_fold");
        let f_valid = stage_init(r_valid, adv).named("fold_valid");
        let f_sum = stage(folded, adv).named("l4_folded");
        let f_l3_ck = stage(r_l3_ck, adv).named("l3_ck_q");
        let f_side = Side::unpack(stage(r_side, adv).named("fold_side"));
        // The folded L4 sum is queued as it is; the output side complements it (and applies
        // the UDP rule), so no compare sits between the fold and the queue's LUT RAM.
        let res = TxCsumRes {
            l3_ck: f_l3_ck,
            l4_sum: f_sum,
            l4_pos: f_side.l4_pos,
            l3_pos: f_side.l3_pos,
            l4_pos_flags: ge_bound_flags(f_side.l4_pos, bytes),
            l3_pos_flags: ge_bound_flags(f_side.l3_pos, bytes),
            do_l3: f_side.do_l3,
            do_l4: f_side.do_l4,
            udp: f_side.udp,
            pad: lit(9, 0u32),
        };
        u_res.s_axis.data().set(res.pack());
        u_res
            .s_axis
            .keep()
            .set(lit(res_cfg.keep_bits(), (1u64 << res_cfg.keep_bits()) - 1));
        u_res.s_axis.last().set(lit(1, 1u32));
        u_res.s_axis.valid().set(f_valid);
        u_res.s_axis.ready().unused(); // never full: `owed` reserves a place per frame

        // Output side: take a frame's result, then stream the frame with the fields replaced.
        // The queue's output is registered (its LUT RAM read would otherwise sit in front of
        // the output side's mask trackers).
        let u_res_reg = res_reg.instance("u_result_reg");
        connect(&u_res.m_axis, &u_res_reg.s_axis);
        let q = u_res_reg.m_axis;
        q.keep().unused();
        q.last().unused();
        let out_have = reg_init(1, 0u32).named("have_result");
        // The frame buffer's output goes through a register slice (data, valid and ready from
        // flops): its block-RAM banks are selected after the RAMs' output registers, and that
        // select must not feed `out_end` and the trackers; nor may the output side's ready
        // (`have_result`, `m_axis_tready`) reach the buffer's read logic within a cycle.
        let fb = stream_reg_slice("frame_reg", &u_buf.m_axis);
        let (b_valid, b_data, b_keep, b_last) = (fb.slice.valid, fb.data, fb.keep, fb.last);
        let out_beat = (b_valid & out_have & m.ready()).named("out_beat");
        let out_end = (out_beat & b_last).named("out_end");
        let pop = (q.valid() & (!out_have | out_end)).named("pop_result");
        q.ready().set(!out_have | out_end);
        out_have.set(mux(pop, 1u32, mux(out_end, 0u32, out_have)));
        // Both events are registered inside (`Reserve::update`): the output side's ready
        // runs through `out_end` into `pop`, and must not reach the `owed` counter's adder in
        // the same cycle (docs/TIMING.md, rule 8).
        reserve.update(frame_end, pop);
        let rr = TxCsumRes::unpack(q.data());
        rr.pad.unused();
        // The result's fields held for the frame leaving now, loaded as it starts.
        let cur = |x: Sig, f: &str| {
            let r = reg(x.width()).enable(pop).named(&format!("out_{f}"));
            r.set(x);
            r
        };
        // A UDP checksum that computes to 0 goes out as 0xFFFF (RFC 768).
        let l4_ck = mux(
            rr.udp & rr.l4_sum.eq(0xFFFFu32),
            lit(16, 0xFFFFu32),
            !rr.l4_sum,
        );
        let o_l4ck = cur(l4_ck, "l4_ck");
        let o_l3ck = cur(rr.l3_ck, "l3_ck");
        // Where the fields go in the beat leaving now: for each field, the one-hot register of
        // the byte at its first offset, tracked from beat to beat and loaded empty when the
        // field is not to be written (`do_l3` / `do_l4`), so that the byte select starts at
        // flops, not at an AND of two masks and the flag fanning out to every byte
        // (docs/TIMING.md, rule 10). The field's second byte is that mask
        // shifted by one byte: both fields start at even offsets (l3_off + 10; l4_off + 16 or
        // + 6; the offsets are even), so on a bus of 2 bytes or more the two bytes share a
        // beat; on the 8-bit bus the second is the next beat (`_prev`, cleared as a frame
        // starts). One tracker per field, so that `pop` and `out_beat` drive two trackers, not
        // four.
        let put_at = |bound: Sig, flags: Sig, enable: Sig, name: &str| {
            let hi =
                eq_mask_tracked_with(bound, flags, enable, Take::one(pop), out_beat, bytes, name);
            let lo = if bytes == 1 {
                let prev = reg_init(1, 0u32).named(&format!("{name}_prev"));
                prev.set(mux(pop, lit(1, 0u32), mux(out_beat, hi, prev)));
                prev
            } else {
                cat(&[hi.slice(bytes - 2, 0), lit(1, 0u32)])
            };
            (hi, lo)
        };
        let (put_l3_hi, put_l3_lo) = put_at(rr.l3_pos, rr.l3_pos_flags, rr.do_l3, "out_l3");
        let (put_l4_hi, put_l4_lo) = put_at(rr.l4_pos, rr.l4_pos_flags, rr.do_l4, "out_l4");
        let out_bytes: Vec<Sig> = (0..bytes)
            .rev()
            .map(|i| {
                select(
                    &[
                        (put_l3_hi.bit(i), o_l3ck.slice(15, 8)),
                        (put_l3_lo.bit(i), o_l3ck.slice(7, 0)),
                        (put_l4_hi.bit(i), o_l4ck.slice(15, 8)),
                        (put_l4_lo.bit(i), o_l4ck.slice(7, 0)),
                    ],
                    b_data.slice(8 * i + 7, 8 * i),
                )
            })
            .collect();
        m.data().set(cat(&out_bytes));
        m.keep().set(b_keep);
        m.last().set(b_last);
        m.valid().set(b_valid & out_have);
        fb.slice.ready.set(m.ready() & out_have);
    })
}
