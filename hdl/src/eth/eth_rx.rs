//! `eth_rx`: the RX offload path for plain traffic, wire to host.
//!
//! ```text
//! s_axis (wire, FCS) -> eth_fcs_check -> FIFO -> fork -+-> eth_hdr_parse -> meta slice -> classify    -> dispatch -+-> pending queue ------------+
//!                                                      |                                                             +-> rx_csum request           |
//!                                                      |                                                             +-> VLAN-strip command        +-> m_axis_meta
//!                                                      |                                                             +-> rss_toeplitz request -----+    (RX_META, one per frame)
//!                                                      +-> frame buffer (frame mode: drops bad frames)
//!                                                             -> skid -> reg -> fork -+-> rx_csum ---------------------------+
//!                                                                                     +-> stream_delete (outer VLAN tag) -> m_axis (host)
//! ```
//!
//! Every input frame produces exactly one [`rx_meta`] record on `m_axis_meta`, in input order:
//! dropped frames (runt, oversize, bad FCS, MAC control: the `tuser` bits of
//! [`super::eth_fcs_check`]) never reach `m_axis` (the frame buffer discards them) and report
//! only their reason; delivered frames report the parse, the checksum verdicts, the
//! checksum-complete value and RSS, and come out on `m_axis` without FCS and without their outer
//! VLAN tag. The reporting rules are those of the golden model `nicgen_model::rx` (read there).
//!
//! The FCS check never stalls: its beats go into a 16-beat LUT-RAM FIFO, and the input is
//! taken while that FIFO has room for every beat inside the check (its `s_axis_room` flop,
//! [`stream_fifo_room`], is `s_axis_tready`), so the input fork's ready reaches neither the
//! check's registers nor the input, only the FIFO's read pointer. The skid buffer after the
//! frame buffer (`stream_skid`: latency 0, `s_axis_tready` from a flop) keeps the output fork's ready (rx_csum and VLAN strip) out of the block-RAM
//! read enables within a cycle; a forward register (`stream_fwd_reg`) after that skid gives
//! rx_csum and the strip their beats from flops, not from the block RAM's outputs; the parse
//! record (`parse_q`), the pending record (`pend_q`), the checksum and RSS results
//! (`csum_res_q`, `rss_res_q`), the checksum request (`csum_req`) and the strip command
//! (`strip_cmd`) go through register slices, so that no queue's LUT-RAM read feeds the
//! dispatch, the record assembly or a unit's first-beat logic, and neither the record
//! assembly's `emit` nor `rx_csum`'s first beat reaches back into another unit or queue; the
//! dispatch writes the pending, request and strip queues through register slices too
//! (`pending_in_q`, `csum_req_in_q`, `strip_cmd_in_q`), so it decides from flops beside it and
//! each queue's write enable comes from a slice's valid flop; and what the dispatch derives
//! from the parse record (claims, checksum offsets, `deliver`) is registered with it first (the
//! classify slice, `class`), so the dispatch and those slices start at flops and the dispatch's
//! readiness stops at that slice.
//!
//! The frame buffer is store-and-forward (drops are known at the frame's end), so a frame leaves
//! after its last beat arrived; the parse result is known by then, which is what lets
//! `rx_csum` and the VLAN strip work from offsets known at the frame's first beat.
//!
//! - Ports: `s_axis_*` (wire frames with FCS), `m_axis_*` (delivered frames),
//!   `m_axis_meta_tdata/_tvalid/_tready` ([`rx_meta`]), `cfg_we/_addr/_wdata` (RSS key,
//!   hash-type enables, indirection table: see `rss_toeplitz`), `stat_drop_bad` (one pulse per
//!   dropped frame, from the buffer), `stat_rx_<name>` (64-bit counters, [`RX_STATS`]; a
//!   record's events are registered and show in the counters 2 cycles after it is emitted).
//! - Latency: store-and-forward, plus the parse and checksum pipelines.
//! - Throughput: measured at the ideal beats per frame for every size from 60 to 9000 bytes at
//!   64 and 512 bits, back to back (`cargo xtask bench-pipeline`, `results/PIPELINE.md`).
//! - Golden model: `nicgen_model::rx::rx_frame`; test: `generators/nicgen/tests/eth_rx.rs`.

use super::eth_fcs_check::{eth_fcs_check, max_beats_inside, FcsCheckCfg};
use super::eth_hdr_parse::{eth_hdr_parse, malformed, meta_layout, HdrParseCfg};
use super::rx_csum::{rx_csum, RxCsumCfg, RX_CSUM_REQ, RX_CSUM_RES};
use super::rx_user;
use crate::record::RecordLayout;
use crate::rss::rss_toeplitz::{rss_toeplitz, RssCfg};
use crate::stats::stat_counters;
use crate::stream::stream_delete::{stream_delete, DeleteCfg};
use crate::stream::stream_fifo::{stream_fifo_in, stream_fifo_room, FifoRam};
use crate::stream::{
    record_fifo, record_reg_slice, record_reg_slice_wide, stream_fork, stream_fwd_reg, stream_in,
    stream_out, stream_skid, FifoCfg, Stream, StreamCfg,
};
use nicgen_edsl::prelude::*;
use std::sync::Mutex;

/// RX path parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RxCfg {
    pub data_bits: u32,
    /// Largest L2 payload; frames longer than `mtu + 22` bytes (two tags) without FCS are
    /// `oversize`.
    pub mtu: u32,
    /// Parser header window, bytes.
    pub window: u32,
    pub rss: RssCfg,
    pub levels_per_stage: u32,
}

impl RxCfg {
    /// Frames the buffer must hold at once: two of the largest.
    pub fn buffer_beats(&self) -> u32 {
        let w = self.data_bits / 8;
        // At most 16384 beats (one jumbo frame at 8 bits); two frames wherever that allows.
        (2 * (self.mtu + 22 + 4).div_ceil(w) + 2)
            .next_power_of_two()
            .min(16384)
    }
    pub fn max_frame(&self) -> u32 {
        self.mtu + 22
    }
}

/// The per-frame record on `m_axis_meta` for `queue_bits`-wide queue numbers.
pub fn rx_meta(queue_bits: u32) -> RecordLayout {
    static CACHE: Mutex<Vec<(u32, &'static [(&'static str, u32)])>> = Mutex::new(Vec::new());
    let mut c = CACHE.lock().unwrap();
    let fields = match c.iter().find(|(q, _)| *q == queue_bits) {
        Some((_, f)) => *f,
        None => {
            let v: Vec<(&'static str, u32)> = vec![
                ("drop", 1),
                ("runt", 1),
                ("oversize", 1),
                ("fcs_bad", 1),
                ("mac_control", 1),
                ("vlan", 1),
                ("vlan_tci", 16),
                ("l3", 2), // as the EtherType claims: 0 none, 1 IPv4, 2 IPv6
                ("l4", 2), // as the IP header claims (not fragments): 0 none, 1 TCP, 2 UDP
                ("l3_ok", 1),
                ("l4_ok", 1),
                ("csum", 16),
                ("malformed", 4),
                ("rss_type", 3),
                ("rss_hash", 32),
                ("queue", queue_bits),
            ];
            let f: &'static [(&'static str, u32)] = Box::leak(v.into_boxed_slice());
            c.push((queue_bits, f));
            f
        }
    };
    RecordLayout {
        name: "rx_meta",
        fields,
    }
}

/// The RX counters, `stat_rx_<name>` (64 bits each): every record, the delivered frames, the
/// drops by reason, and among delivered frames the malformed ones, the VLAN-stripped ones and
/// the checksum failures.
pub const RX_STATS: [&str; 10] = [
    "frames_in",
    "delivered",
    "drop_runt",
    "drop_oversize",
    "drop_fcs",
    "drop_mac_control",
    "malformed",
    "vlan_stripped",
    "l3_csum_bad",
    "l4_csum_bad",
];

/// What the dispatcher keeps per frame until the results come back.
const PENDING: RecordLayout = RecordLayout {
    name: "rx_pending",
    fields: &[
        ("deliver", 1),
        ("runt", 1),
        ("oversize", 1),
        ("fcs_bad", 1),
        ("mac_control", 1),
        ("vlan", 1),
        ("vlan_tci", 16),
        ("l3", 2),
        ("l4", 2),
        ("ip_ok", 1),
        ("ipv6", 1),
        ("l4_parsed", 1),
        ("ext_bad", 1),
        ("malformed", 4),
    ],
};

/// What the classify stage derives from a parse record, registered with it.
const CLASS: RecordLayout = RecordLayout {
    name: "rx_class",
    fields: &[
        ("deliver", 1),
        ("l3_claim", 2),
        ("l4_claim", 2),
        ("ip_ok", 1),
        ("ext_bad", 1),
        ("vlan", 1),
        ("l3_off", 16),
        ("l4_off", 16),
        ("end", 16),
    ],
};

/// Depth of the LUT-RAM FIFO after the FCS check.
const FCS_Q_DEPTH: u32 = 16;

/// The FCS check's input is taken while the FIFO after it has this many free entries (its
/// `s_axis_room` flop): the beats inside the check ([`max_beats_inside`]) and four more, the
/// margin the occupancy counter this flag replaced kept too. The flag ignores the last
/// cycle's read, so it errs towards stopping the input.
fn fcs_q_room(data_bits: u32) -> u32 {
    4 + max_beats_inside(data_bits)
}

pub fn eth_rx(cfg: &RxCfg) -> Result<Rc<ModuleDef>, ElabError> {
    let w = cfg.data_bits;
    let ucfg = StreamCfg::new(w, rx_user::BITS);
    let fcs = eth_fcs_check(&FcsCheckCfg::for_mtu(w, cfg.mtu))?;
    let fork_in = stream_fork(&ucfg, &["parse", "data"])?;
    let fcs_q = stream_fifo_room(
        &FifoCfg::new(ucfg, FCS_Q_DEPTH),
        FifoRam::Lut,
        fcs_q_room(w),
    )?;
    let parse = eth_hdr_parse(&HdrParseCfg {
        data_bits: w,
        user_bits: rx_user::BITS,
        window: cfg.window,
        fifo_depth: 32,
    })?;
    let buf = stream_fifo_in(
        &FifoCfg {
            stream: ucfg,
            depth: cfg.buffer_beats(),
            frame_mode: true,
        },
        FifoRam::Block,
    )?;
    let dcfg = StreamCfg::new(w, 0);
    let fork_out = stream_fork(&dcfg, &["csum", "host"])?;
    let buf_skid = stream_skid(&dcfg)?;
    let buf_reg = stream_fwd_reg(&dcfg)?;
    let csum = rx_csum(&RxCsumCfg {
        data_bits: w,
        levels_per_stage: cfg.levels_per_stage,
    })?;
    let strip = stream_delete(&DeleteCfg {
        stream: dcfg,
        off: 12,
        n: 4,
    })?;
    let rss = rss_toeplitz(&cfg.rss)?;
    let stats = stat_counters("rx", &RX_STATS, 64)?;
    let meta_l = meta_layout(rx_user::BITS);
    let q_pending = record_fifo(PENDING.width(), 32)?;
    let q_csum = record_fifo(RX_CSUM_REQ.width(), 4)?;
    let q_strip = record_fifo(1, 4)?;
    let rss_req_l = cfg.rss.req_layout();
    let rss_res_l = cfg.rss.res_layout();
    let qbits = cfg.rss.queue_bits();
    let out_l = rx_meta(qbits);
    let cfg = *cfg;
    Module::build(format!("eth_rx_d{w}"), move || {
        doc("RX offload path: FCS check, header parse, checksum verification and");
        doc("checksum-complete, RSS, VLAN strip; one metadata record per frame.");
        let s = stream_in("s_axis", &StreamCfg::new(w, 0));
        let m = stream_out("m_axis", &dcfg);

        // The FCS check never stalls (its `m_axis_tready` is 1, so no enable fans out to its
        // registers): its beats go into a small LUT-RAM FIFO, and the input is taken only while
        // that FIFO has room for every beat already inside the check. The FIFO's `s_axis_room`
        // is a flop computed from its own pointers, so the input's ready and the check's input
        // decisions start at a flop, and the readers' readiness (through the fork) reaches only
        // the FIFO's read pointer (an occupancy counter here, stepped by the fork's pop, was the
        // whole path's worst path on two seeds).
        let u_fcs = instance(&fcs, "u_fcs_check");
        let u_fcs_q = instance(&fcs_q, "u_fcs_q");
        let room = u_fcs_q.get("s_axis_room").named("in_room");
        for f in ["tdata", "tkeep", "tlast"] {
            u_fcs.set(&format!("s_axis_{f}"), s.0.f(f));
        }
        u_fcs.set("s_axis_tvalid", s.valid() & room);
        s.ready().set(room);
        u_fcs.unused("s_axis_tready"); // 1: its m_axis_tready is 1
        for f in ["tdata", "tkeep", "tlast", "tuser", "tvalid"] {
            u_fcs_q.set(&format!("s_axis_{f}"), u_fcs.get(&format!("m_axis_{f}")));
        }
        u_fcs.set("m_axis_tready", lit(1, 1u32));
        u_fcs_q.unused("s_axis_tready"); // never full: `in_room` keeps a place for every beat
        let checked = u_fcs_q.bundle_out("m_axis", &ucfg.spec());
        let u_fork_in = instance(&fork_in, "u_fork_in");
        u_fork_in.connect_in("s_axis", &checked);

        // Parse side.
        let u_parse = instance(&parse, "u_parse");
        u_parse.connect_in(
            "s_axis",
            &u_fork_in.bundle_out("m_axis_parse", &ucfg.spec()),
        );

        // Data side: the frame buffer drops what the MAC check marked bad.
        let u_buf = instance(&buf, "u_frame_buf");
        u_buf.connect_in("s_axis", &u_fork_in.bundle_out("m_axis_data", &ucfg.spec()));
        output("stat_drop_bad", u_buf.get("stat_drop_bad"));
        u_buf.unused("stat_drop_oversize");
        let buffered = Stream(u_buf.bundle_out("m_axis", &ucfg.spec()));
        let _ = buffered.user().expect("rx stream has tuser").unused();
        // A skid buffer: the ready of the VLAN strip and of rx_csum (through the fork) must not
        // reach the frame buffer's read enables within a cycle.
        let u_buf_skid = instance(&buf_skid, "u_buf_skid");
        for f in ["tdata", "tkeep", "tvalid", "tlast"] {
            u_buf_skid.set(&format!("s_axis_{f}"), buffered.0.f(f));
        }
        buffered.ready().set(u_buf_skid.get("s_axis_tready"));
        // Then a forward register: the frame's beats reach rx_csum and the VLAN strip from
        // flops, so their first-beat and frame-end decisions (which take the checksum request
        // and the strip command) do not start at the frame buffer's block-RAM outputs.
        let u_buf_reg = instance(&buf_reg, "u_buf_reg");
        u_buf_reg.connect_in("s_axis", &u_buf_skid.bundle_out("m_axis", &dcfg.spec()));
        let u_fork_out = instance(&fork_out, "u_fork_out");
        u_fork_out.connect_in("s_axis", &u_buf_reg.bundle_out("m_axis", &dcfg.spec()));

        // Dispatch: one parse record at a time to every unit that needs it.
        // The parse record through a register slice (data, valid and ready from flops).
        let parse_q = super::out_slice(&u_parse, "m_axis_meta", "parse_q");
        let meta = meta_l.unpack(parse_q.data.unused());
        let user = meta.get("user");
        let deliver = (!user.bit(rx_user::BAD)).named("deliver");
        let mal = meta.get("malformed");
        let l2_ok = mal.ne(malformed::L2_TRUNC as u64).named("l2_ok");
        let ethertype = meta.get("ethertype");
        let l3_claim = mux(
            l2_ok & ethertype.eq(0x0800u32),
            lit(2, 1u32),
            mux(l2_ok & ethertype.eq(0x86DDu32), lit(2, 2u32), lit(2, 0u32)),
        );
        let ip_ok = meta.get("l3").ne(0u32).named("ip_ok");
        let ext_bad = (mal.eq(malformed::EXT_TRUNC as u64)
            | mal.eq(malformed::EXT_LIMIT as u64)
            | mal.eq(malformed::EXT_WINDOW as u64))
        .named("ext_bad");
        let proto_ok = (ip_ok & !ext_bad).named("proto_ok");
        let proto = meta.get("ip_proto");
        let l4_go = (proto_ok & !meta.get("frag")).named("l4_go");
        let l4_claim = mux(
            l4_go & proto.eq(6u32),
            lit(2, 1u32),
            mux(l4_go & proto.eq(17u32), lit(2, 2u32), lit(2, 0u32)),
        );
        let vlan = (l2_ok & meta.get("vlan_count").ne(0u32)).named("vlan");
        let frame_len = meta.get("frame_len");
        let l3_off = mux(l2_ok, meta.get("l3_off").zext(16), frame_len);
        let end = mux(ip_ok, meta.get("ip_end"), frame_len);
        let l4_off = mux(proto_ok, meta.get("l4_off"), end);

        // Stage C, classification: what the dispatch derives from the parse record (the claims,
        // the checksum offsets, `deliver`: compares and muxes up to four LUTs deep) is
        // registered with the record, so the dispatch's decision and the queue slices it writes
        // start at flops (on one seed the path's worst path ran from `parse_q` through these
        // LUTs into the pending slice, with 4.8 ns of routing). A register slice, so its ready
        // towards `parse_q` is a flop too: as a forward register, the dispatch's readiness ran
        // on through its load into `parse_q`'s load and that slice's 400 clock enables (the
        // worst path of a seed, 6.6 ns of routing). Latency 1, one record per cycle.
        let derived = CLASS
            .pack(&[
                ("deliver", deliver),
                ("l3_claim", l3_claim),
                ("l4_claim", l4_claim),
                ("ip_ok", ip_ok),
                ("ext_bad", ext_bad),
                ("vlan", vlan),
                ("l3_off", l3_off),
                ("l4_off", l4_off),
                ("end", end),
            ])
            .named("class_fields");
        let cls = record_reg_slice_wide(
            "class",
            cat(&[parse_q.data, derived]).named("class_in"),
            parse_q.valid,
        );
        parse_q.ready.set(cls.s_ready);
        // Some of the record's fields were only classified, not passed on.
        let cd = cls.data.unused();
        let c = CLASS.unpack(cd.slice(CLASS.width() - 1, 0));
        let meta = meta_l.unpack(cd.slice(cd.width() - 1, CLASS.width()));
        let deliver = c.get("deliver");
        let l3_claim = c.get("l3_claim");
        let l4_claim = c.get("l4_claim");
        let ip_ok = c.get("ip_ok");
        let ext_bad = c.get("ext_bad");
        let vlan = c.get("vlan");
        let proto = meta.get("ip_proto");
        let l3_off = c.get("l3_off");
        let l4_off = c.get("l4_off");
        let end = c.get("end");
        let user = meta.get("user");
        let mal = meta.get("malformed");
        let meta_valid = cls.valid;

        let u_pending = instance(&q_pending, "u_pending_q");
        let u_csum_q = instance(&q_csum, "u_csum_req_q");
        let u_strip_q = instance(&q_strip, "u_strip_cmd_q");
        let u_rss = instance(&rss, "u_rss");
        // The three queues are written through register slices beside the dispatch: the
        // dispatch decides from flops near it (the slices' `s_ready`, RSS's credit flop), and
        // each queue's write enable comes from its slice's valid flop, not through the
        // dispatch's logic (the 332-bit request queue's write enable ended the RX path's worst
        // path on one seed). RSS registers its request itself.
        let go_w = wire(1).named("dispatch_go");
        let push_w = wire(1).named("dispatch_push");
        let pend_d = wire(PENDING.width()).named("pending_in");
        let csum_d = wire(RX_CSUM_REQ.width()).named("csum_req_in");
        let strip_d = wire(1).named("strip_cmd_in");
        let pend_in = record_reg_slice("pending_in_q", pend_d, go_w);
        let csum_in = record_reg_slice_wide("csum_req_in_q", csum_d, push_w);
        let strip_in = record_reg_slice("strip_cmd_in_q", strip_d, push_w);
        for (u, q) in [
            (&u_pending, &pend_in),
            (&u_csum_q, &csum_in),
            (&u_strip_q, &strip_in),
        ] {
            u.set("s_axis_tdata", q.data);
            u.set("s_axis_tvalid", q.valid);
            q.ready.set(u.get("s_axis_tready"));
        }
        let need = |r: Sig| !deliver | r;
        let all_ready = (pend_in.s_ready
            & need(csum_in.s_ready)
            & need(strip_in.s_ready)
            & need(u_rss.get("s_axis_req_tready")))
        .named("dispatch_ready");
        let go = (meta_valid & all_ready).named("dispatch");
        cls.ready.set(all_ready);
        go_w.set(go);
        push_w.set(go & deliver);
        pend_d.set(
            PENDING
                .pack(&[
                    ("deliver", deliver),
                    ("runt", user.bit(rx_user::RUNT)),
                    ("oversize", user.bit(rx_user::OVERSIZE)),
                    ("fcs_bad", user.bit(rx_user::FCS_BAD)),
                    ("mac_control", user.bit(rx_user::MAC_CONTROL)),
                    ("vlan", vlan),
                    ("vlan_tci", meta.get("tag0_tci")),
                    ("l3", l3_claim),
                    ("l4", l4_claim),
                    ("ip_ok", ip_ok),
                    ("ipv6", meta.get("l3").eq(2u32)),
                    ("l4_parsed", meta.get("l4").ne(0u32)),
                    ("ext_bad", ext_bad),
                    ("malformed", mal),
                ])
                .named("pending_fields"),
        );
        csum_d.set(
            RX_CSUM_REQ
                .pack(&[
                    ("l3", meta.get("l3")),
                    ("l4", meta.get("l4")),
                    ("l3_off", l3_off),
                    ("l4_off", l4_off),
                    ("end", end),
                    ("l4_len", meta.get("l4_len")),
                    ("proto", proto),
                    ("src_ip", meta.get("src_ip")),
                    ("dst_ip", meta.get("dst_ip")),
                ])
                .named("csum_req_fields"),
        );
        strip_d.set(vlan);
        let rss_req = rss_req_l
            .pack(&[
                ("l3", meta.get("l3")),
                ("l4", meta.get("l4")),
                ("frag", meta.get("frag")),
                ("src_ip", meta.get("src_ip")),
                ("dst_ip", meta.get("dst_ip")),
                ("src_port", meta.get("src_port")),
                ("dst_port", meta.get("dst_port")),
                ("tag", lit(cfg.rss.tag_bits, 0u32)),
            ])
            .named("rss_req");
        u_rss.set("s_axis_req_tdata", rss_req);
        u_rss.set("s_axis_req_tvalid", go & deliver);
        u_rss.set("cfg_we", input("cfg_we", 1));
        u_rss.set(
            "cfg_addr",
            input("cfg_addr", crate::rss::rss_toeplitz::cfg_addr::BITS),
        );
        u_rss.set("cfg_wdata", input("cfg_wdata", 32));

        // Checksums and VLAN strip on the buffered frame.
        let u_csum = instance(&csum, "u_rx_csum");
        u_csum.connect_in(
            "s_axis",
            &u_fork_out.bundle_out("m_axis_csum", &dcfg.spec()),
        );
        // The request through a register slice: the queue's LUT-RAM read travels to rx_csum
        // from flops. (rx_csum's `s_axis_req_tready` is a flop, its own request queue's
        // `full`, so the frame end there reaches neither this slice nor the queue.)
        super::slice_into(&u_csum_q, "m_axis", &u_csum, "s_axis_req", "csum_req");
        let u_strip = instance(&strip, "u_vlan_strip");
        u_strip.connect_in(
            "s_axis",
            &u_fork_out.bundle_out("m_axis_host", &dcfg.spec()),
        );
        // The command through a register slice: the strip decides on it at the first beat.
        super::slice_into(&u_strip_q, "m_axis", &u_strip, "s_axis_cmd", "strip_cmd");
        connect(&m.0, &u_strip.bundle_out("m_axis", &dcfg.spec()));

        // Assemble one record per frame, in order. The pending record comes through a register
        // slice: `emit` (it decides with the record's `deliver`) pops two result queues and
        // counts, and must not start at the queue's LUT-RAM read.
        let pend_q = super::out_slice(&u_pending, "m_axis", "pend_q");
        let p = PENDING.unpack(pend_q.data);
        let p_valid = pend_q.valid;
        // The checksum and RSS results through register slices too: `emit` must not reach the
        // two units' pop and reservation logic, nor start at the RSS queue's LUT-RAM read.
        let csum_q = super::out_slice(&u_csum, "m_axis_res", "csum_res_q");
        let rss_q = super::out_slice(&u_rss, "m_axis_res", "rss_res_q");
        let c_valid = csum_q.valid;
        let r_valid = rss_q.valid;
        let p_deliver = p.get("deliver");
        let out_valid = reg_init(1, 0u32).named("meta_valid");
        let out_ready = input("m_axis_meta_tready", 1);
        let room = (!out_valid | out_ready).named("meta_room");
        let emit = (p_valid & room & (!p_deliver | (c_valid & r_valid))).named("emit");
        pend_q.ready.set(emit);
        csum_q.ready.set(emit & p_deliver);
        rss_q.ready.set(emit & p_deliver);
        let c = RX_CSUM_RES.unpack(csum_q.data);
        let r = rss_res_l.unpack(rss_q.data.unused());
        let d = p_deliver;
        let gate = |x: Sig| x & d.repl(x.width());
        let l3 = gate(p.get("l3"));
        let l4 = gate(p.get("l4"));
        let l3_ok =
            d & l3.ne(0u32) & p.get("ip_ok") & !p.get("ext_bad") & (p.get("ipv6") | c.get("l3_ok"));
        let l4_ok = d & l4.ne(0u32) & p.get("l4_parsed") & c.get("l4_ok");
        let rec = out_l
            .pack(&[
                ("drop", !d),
                ("runt", p.get("runt")),
                ("oversize", p.get("oversize")),
                ("fcs_bad", p.get("fcs_bad")),
                ("mac_control", p.get("mac_control")),
                ("vlan", d & p.get("vlan")),
                ("vlan_tci", gate(p.get("vlan_tci"))),
                ("l3", l3),
                ("l4", l4),
                ("l3_ok", l3_ok),
                ("l4_ok", l4_ok),
                ("csum", gate(c.get("csum"))),
                ("malformed", gate(p.get("malformed"))),
                ("rss_type", gate(r.get("rss_type"))),
                ("rss_hash", gate(r.get("hash"))),
                ("queue", gate(r.get("queue"))),
            ])
            .named("meta_rec");
        // Per-reason counters, one event per emitted record (the drop reason by the same
        // precedence as the report: runt, oversize, FCS, MAC control). The events are
        // registered (a count shows 2 cycles after its record is emitted), so that `emit` does
        // not fan out to the counters' enables.
        let u_stats = instance(&stats, "u_rx_stats");
        let (runt, over, fcs) = (p.get("runt"), p.get("oversize"), p.get("fcs_bad"));
        let inc = |n: &str, x: Sig| {
            let r = reg_init(1, 0u32).named(&format!("ev_{n}"));
            r.set(emit & x);
            u_stats.set(&format!("inc_{n}"), r);
        };
        inc("frames_in", lit(1, 1u32));
        inc("delivered", d);
        inc("drop_runt", !d & runt);
        inc("drop_oversize", !d & !runt & over);
        inc("drop_fcs", !d & !runt & !over & fcs);
        inc("drop_mac_control", !d & !runt & !over & !fcs);
        inc("malformed", d & p.get("malformed").ne(0u32));
        inc("vlan_stripped", d & p.get("vlan"));
        inc("l3_csum_bad", l3.ne(0u32) & !l3_ok);
        inc("l4_csum_bad", l4.ne(0u32) & !l4_ok);
        for n in RX_STATS {
            let name = format!("stat_rx_{n}");
            output(&name, u_stats.get(&format!("stat_{n}")));
        }

        let out = reg(out_l.width()).enable(emit).named("meta_q");
        out.set(rec);
        out_valid.set(mux(emit, 1u32, mux(out_ready, 0u32, out_valid)));
        output("m_axis_meta_tdata", out);
        output("m_axis_meta_tvalid", out_valid);
    })
}
