//! `rx_csum`: RX checksum verification and checksum-complete, driven by parsed offsets.
//!
//! Each frame arrives on `s_axis` after its request on `s_axis_req` (the header parser's offsets
//! for that frame, record [`RX_CSUM_REQ`]); the request is taken before or with the frame's first
//! beat, so every byte's role is known when it passes. Two masked frame sums run side by side
//! ([`crate::csum::frame_sum`]):
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
//! stream at `l4_off + 6`.
//!
//! Byte masks come from thermometer decoders of each bound's byte-in-beat index plus one compare
//! of the beat index, not a comparator per byte.
//!
//! - Ports: `s_axis_*` (data, keep, valid, ready, last), `s_axis_req_tdata/_tvalid/_tready`,
//!   `m_axis_res_tdata/_tvalid/_tready` (record [`RX_CSUM_RES`], one per frame, in order).
//! - Latency: result `ceil(log2(W/2)/levels_per_stage) + 3` cycles after the last beat.
//!   Throughput: 1 beat/cycle, no bubble between frames (the next request loads with the last
//!   beat); the whole pipeline stalls only while a result waits.
//! - Cost: two frame sums, four thermometer decoders, a pseudo-header adder; LUT/FF not yet
//!   measured (the per-block area table is open work of the pipeline issue).
//! - Golden model: `nicgen_model::checksum` (sums, pseudo-headers); test:
//!   `testbench/tb/tests/rx_csum.rs`.

use super::byte_pos::ge_mask;
use crate::csum::frame_sum::{frame_sum, stage, SumIn};
use crate::csum::pseudo::{ones_sum, pseudo_sum};
use crate::record::RecordLayout;
use crate::stream::{stream_in, StreamCfg};
use nicgen_edsl::prelude::*;

/// What the checksum unit needs to know about a frame (from the header parser).
pub const RX_CSUM_REQ: RecordLayout = RecordLayout {
    name: "rx_csum_req",
    fields: &[
        ("l3", 2),      // 0 none, 1 IPv4, 2 IPv6
        ("l4", 2),      // 0 none, 1 TCP, 2 UDP
        ("l3_off", 16), // first byte of the IP header
        ("l4_off", 16), // first byte of the TCP/UDP header (= end of IP headers)
        ("end", 16),    // end of the IP datagram, clipped to the frame length
        ("l4_len", 16), // TCP/UDP length for the pseudo-header
        ("proto", 8),   // upper-layer protocol for the pseudo-header
        ("src_ip", 128),
        ("dst_ip", 128),
    ],
};

/// The verdicts for one frame.
pub const RX_CSUM_RES: RecordLayout = RecordLayout {
    name: "rx_csum_res",
    fields: &[
        ("l3_ok", 1), // IPv4 header sums to 0xFFFF (meaningful for IPv4 only)
        ("l4_ok", 1), // TCP/UDP checksum verifies, or UDP over IPv4 with checksum 0
        ("csum", 16), // ones'-complement sum of the IP datagram (checksum-complete)
    ],
};

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RxCsumCfg {
    pub data_bits: u32,
    pub levels_per_stage: u32,
}

pub fn rx_csum(cfg: &RxCsumCfg) -> Result<Rc<ModuleDef>, ElabError> {
    let scfg = StreamCfg::new(cfg.data_bits, 0);
    scfg.check("rx_csum")?;
    if cfg.levels_per_stage == 0 {
        return Err(ElabError::config(
            "rx_csum",
            "levels_per_stage must be at least 1",
        ));
    }
    let cfg = *cfg;
    Module::build(format!("rx_csum_d{}", cfg.data_bits), move || {
        doc("RX checksum verification (IPv4 header, TCP/UDP with pseudo-header) and");
        doc("checksum-complete over the IP datagram, from the parser's offsets.");
        let bytes = cfg.data_bits / 8;
        let s = stream_in("s_axis", &scfg);
        let req_data = input("s_axis_req_tdata", RX_CSUM_REQ.width());
        let req_valid = input("s_axis_req_tvalid", 1);
        let res_ready = input("m_axis_res_tready", 1);
        let res_valid = reg_init(1, 0u32).named("res_valid");
        let adv = (!res_valid | res_ready).named("advance");

        // The current frame's request.
        let have = reg_init(1, 0u32).named("have_req");
        let beat = (s.valid() & have & adv).named("beat");
        let frame_end = (beat & s.last()).named("frame_end");
        let take = (req_valid & (!have | frame_end)).named("take_req");
        output("s_axis_req_tready", !have | frame_end);
        s.ready().set(have & adv);
        have.set(mux(take, 1u32, mux(frame_end, 0u32, have)));
        let rq = RX_CSUM_REQ.unpack(req_data);
        // Keep the offsets of the current frame (the addresses only feed the pseudo-header).
        let held = |f: &str| {
            let x = rq.get(f);
            let r = reg(x.width()).enable(take).named(f);
            r.set(x);
            r
        };
        let (l3_t, l4_t, l3_off, l4_off, end) = (
            held("l3"),
            held("l4"),
            held("l3_off"),
            held("l4_off"),
            held("end"),
        );

        // Pseudo-header sum, computed as the request is taken (off the byte path).
        let pseudo_now = pseudo_sum(
            rq.get("l3"),
            rq.get("src_ip"),
            rq.get("dst_ip"),
            rq.get("proto"),
            rq.get("l4_len"),
        );
        let pseudo = reg(16).enable(take).named("pseudo");
        pseudo.set(pseudo_now);

        // Byte offset of the current beat.
        let pos = reg_init(16, 0u32).named("pos");
        pos.set_if(beat, mux(s.last(), 0u32, pos + bytes as u64));
        let kept = s.keep();
        let ge_l3 = ge_mask(pos, l3_off, bytes);
        let ge_l4 = ge_mask(pos, l4_off, bytes);
        let ge_end = ge_mask(pos, end, bytes);
        let hdr_mask = (kept & ge_l3 & !ge_l4).named("hdr_mask");
        let ip_mask = (kept & ge_l3 & !ge_end).named("ip_mask");

        // UDP checksum field (bytes l4_off+6, +7) as it passes: is each byte zero?
        let byte_zero: Vec<Sig> = (0..bytes)
            .rev()
            .map(|b| s.data().slice(8 * b + 7, 8 * b).eq(0u32))
            .collect();
        let byte_zero = cat(&byte_zero).named("byte_zero");
        let mut zero_next = Vec::new();
        for k in 0..2u32 {
            let at = (l4_off + (6 + k) as u64).named(&format!("udp_ck{k}_at"));
            let here = (ge_mask(pos, at, bytes) & !ge_mask(pos, at + 1u32, bytes) & kept)
                .named(&format!("udp_ck{k}_here"));
            let hit = here.or_reduce();
            let zero = (here & byte_zero).or_reduce();
            let z = reg(1).named(&format!("udp_ck{k}_zero"));
            let next = mux(beat & hit, zero, z);
            z.set(mux(frame_end, 0u32, next));
            zero_next.push(next);
        }

        let sum_in = |mask: Sig| SumIn {
            data: s.data(),
            mask,
            beat,
            last: s.last(),
            adv,
        };
        let hdr = frame_sum(&sum_in(hdr_mask), cfg.levels_per_stage, "hdr_");
        let ip = frame_sum(&sum_in(ip_mask), cfg.levels_per_stage, "ip_");

        // Per-frame facts, sampled with the last beat and carried as far as the sums.
        let fields = [l3_t, l4_t, pseudo];
        let mut side = cat(&fields);
        let mut zero_hi = zero_next[0];
        let mut zero_lo = zero_next[1];
        for _ in 0..hdr.latency {
            side = stage(side, adv);
            zero_hi = stage(zero_hi, adv);
            zero_lo = stage(zero_lo, adv);
        }
        let (l3, l4, ps) = (side.slice(19, 18), side.slice(17, 16), side.slice(15, 0));
        let l4_sum = ones_sum(&[ip.sum, !hdr.sum, ps]).named("l4_sum");
        let udp_no_csum = (l3.eq(1u32) & l4.eq(2u32) & zero_hi & zero_lo).named("udp_no_csum");
        let l3_ok = hdr.sum.eq(0xFFFFu32);
        let l4_ok = l4_sum.eq(0xFFFFu32) | udp_no_csum;
        let res = reg(RX_CSUM_RES.width())
            .enable(adv & hdr.valid)
            .named("res");
        res.set(RX_CSUM_RES.pack(&[("l3_ok", l3_ok), ("l4_ok", l4_ok), ("csum", ip.sum)]));
        res_valid.set_if(adv, hdr.valid);
        output("m_axis_res_tdata", res);
        output("m_axis_res_tvalid", res_valid);
    })
}
