//! `tx_csum`: TX checksum insertion (mlx5 `cs_flags`: L3 = IPv4 header checksum, L4 = TCP/UDP
//! checksum over the pseudo-header), store-and-forward.
//!
//! Each frame arrives on `s_axis` after its request on `s_axis_req` (record [`TX_CSUM_REQ`]: the
//! header parser's offsets plus the two offload flags). While the frame streams into an internal
//! frame buffer, two masked frame sums ([`crate::csum::frame_sum`]) run over it with the checksum
//! fields themselves masked out (so they count as zero, whatever the host wrote there):
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
//! - Ports: `s_axis_*`, `s_axis_req_tdata/_tvalid/_tready`, `m_axis_*`.
//! - Latency: store-and-forward: a frame's first beat leaves [`latency`] =
//!   `max(1, ceil(log2(W/2) / levels_per_stage)) + 5` cycles after its last beat entered (`W`
//!   bytes per beat; 6 at 64 bits, 8 at 512 bits with 2 levels per stage): the sums with their
//!   accumulate and fold stages, 2 cycles in the result queue, 1 to load the result on the
//!   output side.
//! - Throughput (measured in the test): 1 beat/cycle in and out for back-to-back frames of
//!   equal beat counts, one-beat frames included (a request is taken, and a result popped, in
//!   the cycle the previous frame's last beat moves); a frame cannot leave before its own last
//!   beat arrived, so a longer frame after a shorter one waits.
//! - Cost: the frame buffer (`buffer_beats` x (data + keep + 1), block RAM), a 16-entry result queue, two
//!   frame sums, position decoders on both sides; LUT/FF not yet measured.
//! - Golden model: `nicgen_model::tx` (checksum insertion on bytes); test:
//!   `testbench/tb/tests/tx_csum.rs`.

use super::byte_pos::{at_mask, ge_mask};
use crate::csum::frame_sum::{frame_sum, latency as sum_latency, stage, SumIn};
use crate::csum::pseudo::{ones_sum, pseudo_sum};
use crate::record::RecordLayout;
use crate::stream::stream_fifo::{stream_fifo_in, FifoRam};
use crate::stream::{stream_fifo, stream_in, stream_out, FifoCfg, StreamCfg};
use nicgen_edsl::prelude::*;

/// What the insertion unit needs to know about a frame.
pub const TX_CSUM_REQ: RecordLayout = RecordLayout {
    name: "tx_csum_req",
    fields: &[
        ("l3", 2),      // 0 none, 1 IPv4, 2 IPv6
        ("l4", 2),      // 0 none, 1 TCP, 2 UDP
        ("l3_off", 16), // first byte of the IP header
        ("l4_off", 16), // first byte of the TCP/UDP header
        ("end", 16),    // end of the IP datagram, clipped to the frame
        ("l4_len", 16), // TCP/UDP length for the pseudo-header
        ("proto", 8),
        ("src_ip", 128),
        ("dst_ip", 128),
        ("do_l3", 1), // insert the IPv4 header checksum (cs_flags L3_CSUM)
        ("do_l4", 1), // insert the TCP/UDP checksum (cs_flags L4_CSUM)
    ],
};

/// What travels from the sums to the output side, one per frame (16-bit multiple for the queue).
const TX_CSUM_RES: RecordLayout = RecordLayout {
    name: "tx_csum_res",
    fields: &[
        ("l3_ck", 16),
        ("l4_ck", 16),
        ("l3_pos", 16),
        ("l4_pos", 16),
        ("do_l3", 1),
        ("do_l4", 1),
        ("pad", 14),
    ],
};

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TxCsumCfg {
    pub data_bits: u32,
    pub levels_per_stage: u32,
    /// Frame buffer depth in beats (power of two): at least two of the largest frames.
    pub buffer_beats: u32,
}

/// Cycles from a frame's last beat in to its first beat out: the frame sums, then 2 cycles in
/// the result queue and 1 to load the result on the output side.
pub fn latency(cfg: &TxCsumCfg) -> u32 {
    sum_latency(cfg.data_bits / 8, cfg.levels_per_stage) + 3
}

pub fn tx_csum(cfg: &TxCsumCfg) -> Result<Rc<ModuleDef>, ElabError> {
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
    let resq = stream_fifo(&FifoCfg {
        stream: StreamCfg::new(TX_CSUM_RES.width(), 0),
        depth: 16,
        frame_mode: false,
    })?;
    let cfg = *cfg;
    Module::build(format!("tx_csum_d{}", cfg.data_bits), move || {
        doc("TX checksum insertion (IPv4 header, TCP/UDP with pseudo-header), store-and-forward.");
        let bytes = cfg.data_bits / 8;
        let s = stream_in("s_axis", &scfg);
        let m = stream_out("m_axis", &scfg);
        let req_data = input("s_axis_req_tdata", TX_CSUM_REQ.width());
        let req_valid = input("s_axis_req_tvalid", 1);

        // Input side: frame into the buffer, sums alongside.
        let u_buf = instance(&buf, "u_frame_buf");
        let u_res = instance(&resq, "u_result_q");
        let res_space = u_res.get("s_axis_tready");
        let adv = res_space.named("advance");
        let have = reg_init(1, 0u32).named("have_req");
        let buf_ready = u_buf.get("s_axis_tready");
        let beat = (s.valid() & have & adv & buf_ready).named("beat");
        let frame_end = (beat & s.last()).named("frame_end");
        let take = (req_valid & (!have | frame_end)).named("take_req");
        output("s_axis_req_tready", !have | frame_end);
        s.ready().set(have & adv & buf_ready);
        have.set(mux(take, 1u32, mux(frame_end, 0u32, have)));
        u_buf.set("s_axis_tdata", s.data());
        u_buf.set("s_axis_tkeep", s.keep());
        u_buf.set("s_axis_tlast", s.last());
        u_buf.set("s_axis_tvalid", s.valid() & have & adv);

        let rq = TX_CSUM_REQ.unpack(req_data);
        let held = |f: &str| {
            let x = rq.get(f);
            let r = reg(x.width()).enable(take).named(f);
            r.set(x);
            r
        };
        let l3 = held("l3");
        let l4 = held("l4");
        let l3_off = held("l3_off");
        let l4_off = held("l4_off");
        let end = held("end");
        let is_v4 = l3.eq(1u32);
        let do_l3 = (held("do_l3") & is_v4).named("do_l3_eff");
        let do_l4 =
            (held("do_l4") & (l3.ne(0u32)) & (l4.eq(1u32) | l4.eq(2u32))).named("do_l4_eff");
        let pseudo = reg(16).enable(take).named("pseudo");
        pseudo.set(pseudo_sum(
            rq.get("l3"),
            rq.get("src_ip"),
            rq.get("dst_ip"),
            rq.get("proto"),
            rq.get("l4_len"),
        ));
        let l3_pos = (l3_off + 10u32).named("l3_pos");
        let l4_pos = (l4_off + mux(l4.eq(1u32), lit(16, 16u32), lit(16, 6u32))).named("l4_pos");

        let pos = reg_init(16, 0u32).named("pos");
        pos.set_if(beat, mux(s.last(), 0u32, pos + bytes as u64));
        let field = |at: Sig, on: Sig| {
            (at_mask(pos, at, bytes) | at_mask(pos, at + 1u32, bytes)) & on.repl(bytes)
        };
        let l3_field = field(l3_pos, is_v4).named("l3_field");
        let l4_field = field(l4_pos, do_l4).named("l4_field");
        let ge_l3 = ge_mask(pos, l3_off, bytes);
        let hdr_mask =
            (s.keep() & ge_l3 & !ge_mask(pos, l4_off, bytes) & !l3_field).named("hdr_mask");
        let ip_mask =
            (s.keep() & ge_l3 & !ge_mask(pos, end, bytes) & !l3_field & !l4_field).named("ip_mask");
        let sum_in = |mask: Sig| SumIn {
            data: s.data(),
            mask,
            beat,
            last: s.last(),
            adv,
        };
        let hdr = frame_sum(&sum_in(hdr_mask), cfg.levels_per_stage, "hdr_");
        let ip = frame_sum(&sum_in(ip_mask), cfg.levels_per_stage, "ip_");

        let mut side = cat(&[do_l3, do_l4, l4.eq(2u32), pseudo, l3_pos, l4_pos]);
        for _ in 0..hdr.latency {
            side = stage(side, adv);
        }
        let (s_do_l3, s_do_l4, s_udp) = (side.bit(50), side.bit(49), side.bit(48));
        let (s_pseudo, s_l3_pos, s_l4_pos) =
            (side.slice(47, 32), side.slice(31, 16), side.slice(15, 0));
        let l3_ck = !hdr.sum;
        let l4_raw = !ones_sum(&[ip.sum, !hdr.sum, s_pseudo]);
        let l4_ck = mux(s_udp & l4_raw.eq(0u32), lit(16, 0xFFFFu32), l4_raw).named("l4_ck");
        let res = TX_CSUM_RES.pack(&[
            ("l3_ck", l3_ck),
            ("l4_ck", l4_ck),
            ("l3_pos", s_l3_pos),
            ("l4_pos", s_l4_pos),
            ("do_l3", s_do_l3),
            ("do_l4", s_do_l4),
            ("pad", lit(14, 0u32)),
        ]);
        u_res.set("s_axis_tdata", res);
        u_res.set(
            "s_axis_tkeep",
            lit(
                TX_CSUM_RES.width() / 8,
                (1u64 << (TX_CSUM_RES.width() / 8)) - 1,
            ),
        );
        u_res.set("s_axis_tlast", lit(1, 1u32));
        u_res.set("s_axis_tvalid", hdr.valid);

        // Output side: take a frame's result, then stream the frame with the fields replaced.
        let q = u_res.get("m_axis_tdata").unused();
        u_res.unused("m_axis_tkeep");
        u_res.unused("m_axis_tlast");
        let q_valid = u_res.get("m_axis_tvalid");
        let out_have = reg_init(1, 0u32).named("have_result");
        let b_valid = u_buf.get("m_axis_tvalid");
        let out_beat = (b_valid & out_have & m.ready()).named("out_beat");
        let out_end = (out_beat & u_buf.get("m_axis_tlast")).named("out_end");
        let pop = (q_valid & (!out_have | out_end)).named("pop_result");
        u_res.set("m_axis_tready", !out_have | out_end);
        out_have.set(mux(pop, 1u32, mux(out_end, 0u32, out_have)));
        let rr = TX_CSUM_RES.unpack(q);
        let cur = |f: &str| {
            let x = rr.get(f);
            let r = reg(x.width()).enable(pop).named(&format!("out_{f}"));
            r.set(x);
            r
        };
        let (o_l3ck, o_l4ck, o_l3pos, o_l4pos, o_do_l3, o_do_l4) = (
            cur("l3_ck"),
            cur("l4_ck"),
            cur("l3_pos"),
            cur("l4_pos"),
            cur("do_l3"),
            cur("do_l4"),
        );
        let opos = reg_init(16, 0u32).named("out_pos");
        opos.set_if(
            out_beat,
            mux(u_buf.get("m_axis_tlast"), 0u32, opos + bytes as u64),
        );
        let put_l3_hi = at_mask(opos, o_l3pos, bytes) & o_do_l3.repl(bytes);
        let put_l3_lo = at_mask(opos, o_l3pos + 1u32, bytes) & o_do_l3.repl(bytes);
        let put_l4_hi = at_mask(opos, o_l4pos, bytes) & o_do_l4.repl(bytes);
        let put_l4_lo = at_mask(opos, o_l4pos + 1u32, bytes) & o_do_l4.repl(bytes);
        let bd = u_buf.get("m_axis_tdata");
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
                    bd.slice(8 * i + 7, 8 * i),
                )
            })
            .collect();
        m.data().set(cat(&out_bytes));
        m.keep().set(u_buf.get("m_axis_tkeep"));
        m.last().set(u_buf.get("m_axis_tlast"));
        m.valid().set(b_valid & out_have);
        u_buf.set("m_axis_tready", m.ready() & out_have);
    })
}
