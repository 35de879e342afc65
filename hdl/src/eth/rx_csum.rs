//! `rx_csum`: RX checksum verification and checksum-complete, driven by parsed offsets.
//!
//! Each frame arrives on `s_axis` after its request on `s_axis_req` (the header parser's offsets
//! for that frame, record [`RxCsumReq`]); the request is taken before or with the frame's first
//! beat, so every byte's role is known when it passes. Two masked frame sums run side by side
//! ([`mod@crate::csum::frame_sum`]):
//!
//! | sum | bytes | gives |
//! |---|---|---|
//! | `hdr` | `[l3_off, l4_off)`: the IP header with options / extension headers | IPv4 header check: `hdr == 0xFFFF` |
//! | `ip` | `[l3_off, end)`: the IP datagram (`end` = IP end clipped to the frame) | checksum-complete (mlx5 `check_sum`), and with `hdr` the L4 sum |
//!
//! L4 check: `fold(ip + ~hdr + pseudo) == 0xFFFF`, where `pseudo` is the IPv4 or IPv6
//! pseudo-header sum (addresses, protocol, `l4_len`) computed when the request is taken. A UDP
//! datagram over IPv4 whose checksum field is 0 carries no checksum and passes (`l4_ok`), as mlx5
//! reports it and Linux counts it (CHECKSUM_UNNECESSARY covers it); the field is picked from the
//! stream at `l4_off + 6`, a stage behind the sums (its offsets are added to a register).
//!
//! Internals (docs/TIMING.md, rules 8, 9 and 10):
//! - requests wait in a two-entry queue, so `s_axis_req_tready` is a flop; a request is taken
//!   with its frame's first beat, so the frame end moves none of the request logic;
//! - the pipeline never stalls: results go into a 16-entry FIFO, and beats are taken only while
//!   every frame taken has a place there (`owed`);
//! - stage A registers the taken request as it is, and the accepted beats reach it through
//!   one more stage (I), so the accept logic drives a few flip-flops rather than every mask
//!   and adder;
//! - each byte mask is tracked from beat to beat and registered
//!   ([`super::byte_pos::ge_mask_tracked`]) instead of compared against a byte offset;
//! - the request carries the addresses' sum (`ip_sum`, made by the header parser); the
//!   pseudo-header sum is two stages from it ([`crate::csum::pseudo::pseudo_from_address_sum`])
//!   and queued; a frame's sums are queued too, and the two queues are joined in order, so no
//!   frame length is too short for it;
//! - the verdict is two stages: the L4 sum's three operands go through a carry-save layer into
//!   one carry chain, and "folds to 0xFFFF" is a compare on the unfolded sum.
//!
//! - Ports: `s_axis_*` (data, keep, valid, ready, last), `s_axis_req_tdata/_tvalid/_tready`,
//!   `m_axis_res_tdata/_tvalid/_tready` (record [`RxCsumRes`], one per frame, in order).
//! - Latency: result `ceil(log2(W/2)/levels_per_stage) + 10` cycles after the last beat.
//! - Throughput: 1 beat/cycle, no bubble between frames (a request is taken with its frame's
//!   first beat, one cycle after it entered the queue); the input stalls only while 15 results
//!   are owed.
//! - Cost: two frame sums, the mask trackers, a two-entry request queue, the pseudo-header and
//!   sums queues and a 16-entry result FIFO; LUT/FF/Fmax per preset: results/AREA.md, row
//!   `rx_csum`.
//! - Golden model: `nicgen_model::checksum` (sums, pseudo-headers); test:
//!   `testbench/tests/eth/rx_csum.rs`.

use super::byte_pos::{
    eq_mask_tracked_with, ge_bound_flags, ge_bound_flags_plus, ge_mask_tracked_with, Take,
};
use crate::csum::frame_sum::{frame_sum, SumIn};
use crate::csum::pseudo::{add3, pseudo_from_address_sum};
use crate::stream::{record_fifo, Stream, StreamCfg};
use crate::timing::{stage, stage_init, Reserve};
use nicgen_edsl::prelude::*;
use nicgen_edsl::record::Word;

nicgen_edsl::record! {
    /// What the checksum unit needs to know about a frame (from the header parser).
    pub struct RxCsumReq {
        /// 0 none, 1 IPv4, 2 IPv6.
        l3: 2,
        /// 0 none, 1 TCP, 2 UDP.
        l4: 2,
        /// First byte of the IP header (even, as is `l4_off`).
        l3_off: 16,
        /// First byte of the TCP/UDP header (= end of IP headers).
        l4_off: 16,
        /// End of the IP datagram, clipped to the frame length.
        end: 16,
        /// TCP/UDP length for the pseudo-header.
        l4_len: 16,
        /// Upper-layer protocol for the pseudo-header.
        proto: 8,
        /// The pseudo-header's address part: the ones'-complement sum of both addresses'
        /// 16-bit words (the parser's `ip_sum`), not the 256 address bits.
        ip_sum: 16,
    }
}

/// The reported verdicts of a frame (`l3_ok`, `l4_ok`), by the rules of `nicgen_model::rx`:
/// from the claims (`l3`, `l4`: 0 none), what the parser found (`ip_ok` a well-formed IP
/// header, `ipv6`, `ext_bad` a broken extension chain, `l4_parsed` a well-formed L4 header)
/// and the checksum unit's result `res`. The RX path and the tunnel stage (outer headers)
/// report with it.
#[allow(clippy::too_many_arguments)]
pub fn reported_verdicts(
    l3: Sig,
    l4: Sig,
    ip_ok: Sig,
    ipv6: Sig,
    ext_bad: Sig,
    l4_parsed: Sig,
    res: &RxCsumRes<Sig>,
) -> (Sig, Sig) {
    (
        l3.ne(0u32) & ip_ok & !ext_bad & (ipv6 | res.l3_ok),
        l4.ne(0u32) & l4_parsed & res.l4_ok,
    )
}

nicgen_edsl::record! {
    /// The verdicts for one frame.
    pub struct RxCsumRes {
        /// IPv4 header sums to 0xFFFF (meaningful for IPv4 only).
        l3_ok: 1,
        /// TCP/UDP checksum verifies, or UDP over IPv4 with checksum 0.
        l4_ok: 1,
        /// Ones'-complement sum of the IP datagram (checksum-complete).
        csum: 16,
    }
}

nicgen_edsl::record! {
    /// The byte trackers' flags ([`super::byte_pos::ge_bound_flags`]) of a request's three
    /// bounds, made as the request is queued.
    struct BoundFlags {
        l3_off: 2,
        l4_off: 2,
        end: 2,
    }
}

nicgen_edsl::record! {
    /// An entry of the request queue: the request and its bounds' tracker flags.
    struct QueuedReq {
        req: RxCsumReq::WIDTH,
        flags: BoundFlags::WIDTH,
    }
}

nicgen_edsl::record! {
    /// A frame's sums and its UDP rule, queued until its pseudo-header sum is there.
    struct Sums {
        ip: 16,
        hdr: 16,
        udp_no_csum: 1,
    }
}

nicgen_edsl::record! {
    /// A frame's protocols (as in [`RxCsumReq`]), carried beside its sums.
    struct Protos {
        l4: 2,
        l3: 2,
    }
}

/// Results the output FIFO holds: more than the one-beat frames that can be between their last
/// beat and the FIFO (the result latency, 13 cycles at 512 bits) plus one, so that a ready
/// consumer never throttles the input (`rx_path_takes_back_to_back_frames_without_bubbles`
/// checks this at 64 and 512 bits).
const RES_DEPTH: u32 = 16;

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RxCsumCfg {
    pub data_bits: u32,
    pub levels_per_stage: u32,
}

/// The ports of [`rx_csum`].
pub struct RxCsumPorts {
    /// The frames (`s_axis_*`).
    pub s_axis: Stream,
    /// One request per frame, before or with its first beat (`s_axis_req_*`).
    pub req: RecordStream<RxCsumReq<u32>>,
    /// One result per frame, in order (`m_axis_res_*`).
    pub res: RecordStream<RxCsumRes<u32>>,
}

impl Ports for RxCsumPorts {
    type Cfg = RxCsumCfg;
    fn ports(io: &Io, cfg: &RxCsumCfg) -> Self {
        RxCsumPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(cfg.data_bits, 0)),
            req: RecordStream::sink(io, "s_axis_req", RxCsumReq::shape()),
            res: RecordStream::source(io, "m_axis_res", RxCsumRes::shape()),
        }
    }
}

pub fn rx_csum(cfg: &RxCsumCfg) -> Result<Block<RxCsumPorts>, ElabError> {
    let scfg = StreamCfg::new(cfg.data_bits, 0);
    scfg.check("rx_csum")?;
    if cfg.levels_per_stage == 0 {
        return Err(ElabError::config(
            "rx_csum",
            "levels_per_stage must be at least 1",
        ));
    }
    let cfg = *cfg;
    let res_fifo = record_fifo(RxCsumRes::shape(), RES_DEPTH)?;
    let sums_fifo = record_fifo(Sums::shape(), RES_DEPTH)?;
    let pseudo_fifo = record_fifo(Word::shape(16), 2 * RES_DEPTH)?;
    let req_fifo = record_fifo(QueuedReq::shape(), 2)?;
    let name = format!("rx_csum_d{}", cfg.data_bits);
    Block::build(name, cfg, move |p: RxCsumPorts| {
        doc("RX checksum verification (IPv4 header, TCP/UDP with pseudo-header) and");
        doc("checksum-complete over the IP datagram, from the parser's offsets.");
        let bytes = cfg.data_bits / 8;
        let s = p.s_axis;
        // The pipeline never stalls (no enable fans out to its registers): results land in a
        // FIFO, and a frame's beats are taken only while every frame already taken has a place
        // there (`owed` counts frames from their last beat until their result leaves).
        let adv = lit(1, 1u32);
        let u_res = res_fifo.instance("u_res_q");
        let res_pop = (u_res.m_axis.valid & p.res.ready).named("res_pop");
        let reserve = Reserve::with_ready_copy(RES_DEPTH);
        let room = reserve.room;

        // Requests wait in a two-entry queue, so that `s_axis_req_tready` is a flop (the
        // queue's `full`): taking a request moves only the queue's pointers, not the upstream
        // register that holds the next request (a wide clock enable, far away).
        // Two entries keep one request per cycle: one is taken while the next is written.
        let u_req = req_fifo.instance("u_req_q");
        // The trackers' flags of each bound are computed as the request is queued (from the
        // upstream slice's flops) and queued with it, so that no compare sits between a
        // stage-A bound and its tracker.
        let rin = p.req.fields();
        let bound_flags = BoundFlags {
            l3_off: ge_bound_flags(rin.l3_off, bytes),
            l4_off: ge_bound_flags(rin.l4_off, bytes),
            end: ge_bound_flags(rin.end, bytes),
        };
        u_req.s_axis.set_fields(&QueuedReq {
            req: p.req.data,
            flags: bound_flags.pack(),
        });
        u_req.s_axis.valid.set(p.req.valid);
        p.req.ready.set(u_req.s_axis.ready);
        let req_there = u_req.m_axis.valid;

        // A frame's request is taken with its first beat: a beat is accepted while the
        // results have room and, at a first beat, its request is there. The frame end moves
        // only `first` and the reservation; the request queue pops on a first beat, whose
        // decision starts at flops (the input FIFO's valid, `room`, `first`, the queue's
        // valid), and the frame end does not run through the request state into the queue's
        // pointers and flags (docs/TIMING.md, rule 9).
        let first = reg_init(1, 1u32).named("first_beat");
        let ready = (room & (!first | req_there)).named("in_ready");
        let beat = (s.valid() & ready).named("beat");
        // The input FIFO's read side (its valid, pointer and RAM enable) sees the same ready
        // from the reservation's second flag.
        let ready_room = reserve.ready_room.expect("built with a ready copy");
        let ready_out = (ready_room & (!first | req_there)).named("in_ready_out");
        let frame_end = (beat & s.last()).named("frame_end");
        // Written out from its four flops (not `beat & first`), so that the request queue's
        // pop is one LUT, not behind `in_ready` and its fan-out to the input FIFO.
        let take = (s.valid() & room & first & req_there).named("take_req");
        u_req.m_axis.ready.set(take);
        first.set(mux(beat, s.last(), first));
        // Both events are registered inside (`Reserve::update`): the consumer's ready comes
        // from far (a slice in `eth_rx`; docs/TIMING.md, rule 8).
        reserve.update(frame_end, res_pop);
        s.ready().set(ready_out);
        let queued = u_req.m_axis.fields();
        let rq = RxCsumReq::unpack(queued.req);

        // Stage A: the taken request, registered as it is, so that the accept logic (`beat`,
        // `take`) drives a few registers, not every mask and sum. The beats reach stage A a
        // cycle later (stage I before it), so a frame's request is there, and the byte
        // trackers loaded, the cycle before its first beat: with the previous frame's last beat
        // at the latest, in the same cycle (no bubble).
        let data = stage(stage(s.data(), adv).named("data_i"), adv).named("data_a");
        let kept = stage(stage(s.keep(), adv).named("keep_i"), adv).named("keep_a");
        let last = stage(stage(s.last(), adv).named("last_i"), adv).named("last_a");
        let beat_a = stage_init(stage_init(beat, adv).named("beat_i"), adv).named("beat_a");
        // The take in stage A, twice: copy 1 (stored complemented, so that synthesis keeps
        // both) loads the byte trackers below, so that copy 0, which holds the request
        // (`take_a` alone drove 186 loads), is not the trackers' net too (docs/TIMING.md,
        // rule 3).
        let take_a_q = Replicated::new("take_a", 2, 1, Some(0));
        take_a_q.set(take);
        let take_a = take_a_q.get(0);
        let req = |x: Sig, f: &str| stage(x, adv).named(&format!("{f}_a"));
        // Per frame, from its request until the sums are done with it.
        let held = |x: Sig, name: &str| {
            let r = reg(x.width()).enable(take_a).named(name);
            r.set(x);
            r
        };
        let l3_t = held(req(rq.l3, "l3"), "l3");
        let l4_t = held(req(rq.l4, "l4"), "l4");

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

        // Byte masks of the beat in stage A, one per bound (see `ge_mask_tracked`): the IP
        // header `[l3_off, l4_off)` and the datagram `[l3_off, end)`.
        // The trackers load on their own copy of the take (`take_a_q`, above).
        let take_t = take_a_q.get(1);
        let flags_a = BoundFlags::unpack(stage(queued.flags, adv).named("bound_flags_a"));
        let ge = |bound: Sig, flags: Sig, name: &str| {
            ge_mask_tracked_with(bound, flags, take_t, beat_a, bytes, name)
        };
        let ge_l3 = ge(req(rq.l3_off, "l3_off"), flags_a.l3_off, "ge_l3");
        let l4_off_a = req(rq.l4_off, "l4_off");
        let ge_l4 = ge(l4_off_a, flags_a.l4_off, "ge_l4");
        let ge_end = ge(req(rq.end, "end"), flags_a.end, "ge_end");
        let hdr_mask = (kept & ge_l3 & !ge_l4).named("hdr_mask");
        let ip_mask = (kept & ge_l3 & !ge_end).named("ip_mask");

        // UDP checksum field (bytes l4_off+6, +7) as it passes: is each byte zero? One stage
        // later than the sums (stage B), so that the field's offsets are added to the stage-A
        // register of `l4_off`, not to the request queue's LUT-RAM read (a read pointer with a
        // fanout of 92 and a carry chain), and its tracker
        // loads on a copy of the take of its own (`take_b`). The byte compares to zero are made
        // before stage A, so each stage holds one bit per byte for them.
        let byte_zero: Vec<Sig> = (0..bytes)
            .rev()
            .map(|b| s.data().slice(8 * b + 7, 8 * b).eq(0u32))
            .collect();
        let byte_zero_i = stage(cat(&byte_zero), adv).named("byte_zero_i");
        let byte_zero_a = stage(byte_zero_i, adv).named("byte_zero_a");
        let byte_zero_b = stage(byte_zero_a, adv).named("byte_zero_b");
        // Two copies: copy 0 (`take_b`) loads the tracker's flags, copy 1 (stored
        // complemented) its counter, pattern and mask (see [`Take`]).
        let take_b_q = Replicated::new("take_b", 2, 1, Some(0));
        take_b_q.set(take_a);
        let take_b = take_b_q.get(0);
        let beat_b = stage_init(beat_a, adv).named("beat_b");
        let last_b = stage(last, adv).named("last_b");
        let kept_b = stage(kept, adv).named("keep_b");
        let frame_end_b = (beat_b & last_b).named("frame_end_b");
        // One tracker, of the field's first byte (a one-hot register,
        // [`super::byte_pos::eq_mask_tracked_with`]); the second byte is that mask shifted by
        // a byte, so `take_b` drives one tracker, not three. The offset and its tracker flags
        // are registered together, so that the tracker's load starts at flops.
        let udp6_a = (l4_off_a + 6u32).named("udp6_a");
        let udp6 = stage(udp6_a, adv).named("udp6_b");
        let udp6_flags = stage(ge_bound_flags_plus(l4_off_a, 6, bytes), adv).named("udp6_flags_b");
        let at6 = eq_mask_tracked_with(
            udp6,
            udp6_flags,
            lit(1, 1u32),
            Take {
                ctl: take_b,
                wide: take_b_q.get(1),
            },
            beat_b,
            bytes,
            "udp_ck",
        );
        // Offsets are even (Ethernet: 14 + 4 per tag; IP headers are multiples of 4 bytes, and
        // the frame sums pair bytes by lane on that ground), so on a bus of 2 bytes or more
        // the field's second byte is in the same beat as its first, one lane up; on the 8-bit
        // bus it is the next beat's byte.
        let at7 = if bytes == 1 {
            let prev = reg_init(1, 0u32).named("udp_ck_prev");
            prev.set(mux(take_b, lit(1, 0u32), mux(beat_b, at6, prev)));
            prev
        } else {
            cat(&[at6.slice(bytes - 2, 0), lit(1, 0u32)])
        };
        let mut zero_next = Vec::new();
        for (k, at) in [at6, at7].into_iter().enumerate() {
            let here = (at & kept_b).named(&format!("udp_ck{k}_here"));
            let hit = here.or_reduce();
            let zero = (here & byte_zero_b).or_reduce();
            let z = reg(1).named(&format!("udp_ck{k}_zero"));
            let next = mux(beat_b & hit, zero, z);
            z.set(mux(frame_end_b, 0u32, next));
            zero_next.push(next);
        }

        let sum_in = |mask: Sig| SumIn {
            data,
            mask,
            beat: beat_a,
            last,
            adv,
        };
        let hdr = frame_sum(&sum_in(hdr_mask), cfg.levels_per_stage, "hdr_");
        let ip = frame_sum(&sum_in(ip_mask), cfg.levels_per_stage, "ip_");

        // Per-frame facts, sampled with the last beat and carried as far as the sums, then
        // queued with them until the frame's pseudo-header sum is there too.
        let mut side = Protos { l3: l3_t, l4: l4_t }.pack();
        let mut zero_hi = zero_next[0];
        let mut zero_lo = zero_next[1];
        for i in 0..hdr.latency {
            side = stage(side, adv);
            // The UDP field's flags are a stage behind the sums already.
            if i > 0 {
                zero_hi = stage(zero_hi, adv);
                zero_lo = stage(zero_lo, adv);
            }
        }
        let protos = Protos::unpack(side);
        let udp_no_csum =
            (protos.l3.eq(1u32) & protos.l4.eq(2u32) & zero_hi & zero_lo).named("udp_no_csum");
        // Registered before the queue, so that the sums' last fold (a carry chain and a pick)
        // and the queue's LUT-RAM write are not one cycle.
        let u_sums = sums_fifo.instance("u_sums_q");
        let sums_in = Sums {
            ip: ip.sum,
            hdr: hdr.sum,
            udp_no_csum,
        };
        u_sums
            .s_axis
            .data
            .set(stage(sums_in.pack(), adv).named("sums_in"));
        u_sums
            .s_axis
            .valid
            .set(stage_init(hdr.valid, adv).named("sums_in_valid"));
        // Never full: one entry per frame past its last beat, at most `owed`.
        u_sums.s_axis.ready.unused();

        // Verdict stage: a frame's sums and pseudo-header sum, joined and registered.
        let join = (u_sums.m_axis.valid & u_pseudo.m_axis.valid).named("join");
        u_sums.m_axis.ready.set(join);
        u_pseudo.m_axis.ready.set(join);
        let sums = u_sums.m_axis.fields();
        let v_valid = stage_init(join, adv).named("verdict_valid");
        let ip_sum = stage(sums.ip, adv).named("ip_sum");
        let hdr_sum = stage(sums.hdr, adv).named("hdr_sum");
        let v_udp0 = stage(sums.udp_no_csum, adv).named("verdict_udp_no_csum");
        let v_ps = stage(u_pseudo.m_axis.data, adv).named("verdict_pseudo");
        // L4: ip + ~hdr + pseudo, unfolded (18 bits: `hi:lo`, at most 3 * 0xFFFF, so hi <= 2).
        // Its ones'-complement fold is 0xFFFF exactly when hi + lo == 0xFFFF (a nonzero multiple
        // of 0xFFFF; hi + lo <= 0x10001 rules out the next one), i.e. lo == 0xFFFF - hi: a
        // compare, no fold adders.
        // Three operands, one carry chain: a carry-save layer first.
        let (x, y, z) = (ip_sum, !hdr_sum, v_ps);
        let l4_raw = add3(x, y, z, "l4_raw");
        // Registered before the compare (a carry chain and a 16-bit compare do not fit one
        // cycle at the nic64 clock on ECP5).
        let raw_valid = stage_init(v_valid, adv).named("l4_raw_valid");
        let l4_raw = stage(l4_raw, adv).named("l4_raw_q");
        let r_udp0 = stage(v_udp0, adv).named("raw_udp_no_csum");
        let r_l3_ok = stage(hdr_sum.eq(0xFFFFu32), adv).named("l3_ok");
        let r_csum = stage(ip_sum, adv).named("csum");
        let (hi, lo) = (l4_raw.slice(17, 16), l4_raw.slice(15, 0));
        let l4_folds_to_ffff =
            (lo.slice(15, 2).and_reduce() & lo.slice(1, 0).eq(!hi)).named("l4_folds_to_ffff");
        let l4_ok = l4_folds_to_ffff | r_udp0;
        let res = RxCsumRes {
            l3_ok: r_l3_ok,
            l4_ok,
            csum: r_csum,
        };
        let res_valid = stage_init(raw_valid, adv).named("res_valid");
        u_res.s_axis.data.set(stage(res.pack(), adv).named("res"));
        u_res.s_axis.valid.set(res_valid);
        u_res.s_axis.ready.unused(); // never full: `owed` reserves a place per frame
        connect(&u_res.m_axis, &p.res);
    })
}
