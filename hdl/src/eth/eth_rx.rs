//! `eth_rx`: the RX offload path, wire to host.
//!
//! ```text
//!                                          +-> FIFO [-> trim] -> reg -> eth_hdr_parse =+= pend view --> slice ----------------------+
//!                                          |                                          += csum view --> slice -> rx_csum request    |
//! s_axis (FCS) -> reg -> eth_fcs_check ----+                                          += strip view -> slice -> VLAN-strip command +-> m_axis_meta
//!                   [-> rx_decap, with a   |                                          += rss view ---> slice -> rss_toeplitz ------+   (RxMeta, one
//!                    tunnel stage]         +-> FIFO -> reg -> frame buffer (frame mode: drops bad frames)                          |    per frame)
//!                                                  -> reg -> buffered fork -+-> rx_csum -------------------------------------------+
//!                                                                           +-> slice -> stream_delete (outer VLAN tag) -> m_axis (host)
//! ```
//!
//! With the tunnel stage ([`crate::overlay::rx_decap()`], when `steer_entries` is not 0) the FCS
//! check's beats go through it first: it recognises VXLAN and NVGRE, looks the tunnel up in its
//! steering table and removes the outer headers of the tunnels it steers (or of every
//! well-formed one with `decap_all`), so the parser, the checksum unit and RSS below see the
//! inner frame: their verdicts and hash are the inner ones, and a steering hit's queue replaces
//! RSS's. Its record rides in the `tuser` of the frame's last beat on the parse side and lands
//! in the `RxMeta` tunnel fields. Around the parse side's trim that record waits in a queue of
//! its own (`u_tun_q`), so the parse FIFO and the trim carry `rx_user` only; it joins its
//! frame's last beat again at the parser's input register.
//!
//! The inner offloads (a well-formed tunnel delivered whole, of a kind `TUNNEL_CTL` enables):
//! the tunnel stage's command to the parse side's trim (`u_parse_trim`, behind the parser's
//! FIFO) keeps the inner frame, so the parser, the checksum unit and RSS work on the inner
//! headers while the frame buffer holds the whole frame. The checksum request's offsets move
//! by the inner frame's start, the strip takes the outer tag (from the tunnel record), and the
//! record reports the outer headers from the tunnel record (this stage's parse and outer
//! verdicts) and the parser's as `inner_*`, with RSS on the inner headers.
//!
//! Every input frame produces exactly one [`RxMeta`] record on `m_axis_meta`, in input order:
//! dropped frames (runt, oversize, bad FCS, MAC control: the `tuser` bits of
//! [`super::eth_fcs_check`]) never reach `m_axis` (the frame buffer discards them) and report
//! only their reason; delivered frames report the parse, the checksum verdicts, the
//! checksum-complete value and RSS, and come out on `m_axis` without FCS and without their outer
//! VLAN tag. The reporting rules are those of the golden model `nicgen_model::rx` (read there).
//! The frame buffer is store-and-forward (drops are known at the frame's end), so a frame leaves
//! after its last beat arrived; the parse result is known by then, which is what lets `rx_csum`
//! and the VLAN strip work from offsets known at the frame's first beat.
//!
//! No ready is shared between two consumers, and no consumer's ready reaches a wide register's
//! enables through another block's logic (docs/TIMING.md, rules 1, 2, 8 and 11):
//! - The FCS check never stalls: its beats go into two 16-beat LUT-RAM FIFOs (parser, frame
//!   buffer), and the input is taken, into a forward register in front of the check, while both
//!   have room for every beat inside the check (their `s_axis_room` flops,
//!   [`stream_fifo_room`]); a forward register follows each FIFO. With the tunnel stage, its
//!   own room flag holds the input back instead, and its output enters the two FIFOs under
//!   theirs, through a forward register (`u_decap_reg`).
//! - The parser gives each consumer its own record stream ([`RX_VIEWS`]: the record assembly,
//!   the checksum unit, the VLAN strip, RSS), each through a register slice; the checksum unit,
//!   the strip and RSS skip the records of dropped frames. The parser reports what they need
//!   ready-made (the claims, the checksum ranges, the addresses' sum: rule 12).
//! - After the frame buffer a register slice (`buf_reg`), then a buffered fork
//!   ([`stream_fork_buffered`]); rx_csum reads its FIFO directly, the strip through a register
//!   slice (`host_reg`).
//! - The record assembly takes the pending record, the checksum result and the RSS result
//!   through register slices (`pend_q`, `csum_res_q`, `rss_res_q`).
//!
//! - Ports ([`RxPorts`]): `s_axis_*` (wire frames with FCS), `m_axis_*` (delivered frames),
//!   `m_axis_meta_tdata/_tvalid/_tready` ([`RxMeta`]), `cfg_we/_addr/_wdata` (RSS key,
//!   hash-type enables, indirection table: see `rss_toeplitz`), `stat_drop_bad` (one pulse per
//!   dropped frame, from the buffer), `stat_rx_<name>` (64-bit counters, [`RX_STATS`]; a
//!   record's events are registered and show in the counters 2 cycles after it is emitted).
//! - Latency: store-and-forward, plus the parse and checksum pipelines (with the tunnel stage,
//!   twice store-and-forward: see `rx_decap`).
//! - Throughput: the ideal beats per frame for every size from 60 to 9000 bytes at 64 and 512
//!   bits, back to back (results/PIPELINE.md).
//! - Cost: the blocks above plus their queues and slices; LUT/FF/Fmax of the whole path:
//!   results/AREA-paths.md, row `eth_rx` (per block: results/AREA.md, the `rx` rows).
//! - Golden model: `nicgen_model::rx::rx_frame` (with `RxConfig::overlay` for the tunnel
//!   stage); test: `testbench/tests/eth/eth_rx.rs`.

use super::eth_fcs_check::{eth_fcs_check, max_beats_inside, FcsCheckCfg};
use super::eth_hdr_parse::{eth_hdr_parse, HdrParseCfg, ParseMeta, View};
use super::rx_csum::{reported_verdicts, rx_csum, RxCsumCfg, RxCsumReq, RxCsumRes};
use super::rx_user;
use crate::overlay::rx_decap::{rx_decap, DecapCfg, TunMeta, PARSE_CMD_AHEAD};
use crate::overlay::tunnel_steering::SteerCfg;
use crate::rss::rss_toeplitz::{rss_toeplitz, CfgWrite, RssCfg, RssReq};
use crate::stats::counter_bank;
use crate::stream::stream_delete::{stream_delete, DeleteCfg};
use crate::stream::stream_fifo::{stream_fifo_in, stream_fifo_room, FifoRam};
use crate::stream::{
    record_fifo, record_fwd_reg, stream_fork_buffered, stream_fwd_reg, stream_reg_slice,
    stream_skid, stream_trim, FifoCfg, OutStage, RecordReg, SpliceCmd, Stream, StreamCfg,
};
use nicgen_edsl::prelude::*;

/// RX path parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RxCfg {
    pub data_bits: u32,
    /// Largest L2 payload; a frame longer than `14 + 4 * tags + mtu` bytes without FCS, its own
    /// VLAN tags counted (up to two), is `oversize`.
    pub mtu: u32,
    /// Parser header window, bytes.
    pub window: u32,
    pub rss: RssCfg,
    pub levels_per_stage: u32,
    /// Entries of the tunnel steering table; 0 builds no tunnel stage ([`rx_decap`]).
    pub steer_entries: u32,
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
    /// The largest frame delivered, without FCS: two tags and `mtu` bytes of payload.
    pub fn max_frame(&self) -> u32 {
        self.mtu + 22
    }
    /// The tunnel stage's parameters, when it is built.
    pub fn decap(&self) -> Option<DecapCfg> {
        (self.steer_entries > 0).then(|| DecapCfg {
            data_bits: self.data_bits,
            window: self.window,
            max_frame: self.max_frame(),
            room: fcs_q_room(self.data_bits),
            steer: SteerCfg {
                entries: self.steer_entries,
                queue_bits: self.rss.queue_bits(),
            },
            levels_per_stage: self.levels_per_stage,
        })
    }
    /// Bits of [`TunMeta`] the parse side's `tuser` carries above `rx_user` (0 without the
    /// tunnel stage).
    fn tun_bits(&self) -> u32 {
        self.decap()
            .map_or(0, |d| d.out_user_bits() - rx_user::BITS)
    }
}

nicgen_edsl::record! {
    /// The per-frame record on `m_axis_meta`, for `queue_bits`-wide queue numbers.
    pub struct RxMeta(queue_bits: u32) {
        /// The frame was dropped (the reason in the next four fields).
        drop: 1,
        runt: 1,
        oversize: 1,
        fcs_bad: 1,
        mac_control: 1,
        /// An outer VLAN tag was stripped; its TCI.
        vlan: 1,
        vlan_tci: 16,
        /// As the EtherType claims: 0 none, 1 IPv4, 2 IPv6.
        l3: 2,
        /// As the IP header claims (not fragments): 0 none, 1 TCP, 2 UDP.
        l4: 2,
        l3_ok: 1,
        l4_ok: 1,
        /// Checksum complete: the ones'-complement sum of the bytes after the L3 header.
        csum: 16,
        /// Malformed reasons (see the parser).
        malformed: 4,
        /// The RSS hash type, the hash and the queue: RSS's pick, or the steering entry's
        /// when the frame's tunnel hit one.
        rss_type: 3,
        rss_hash: 32,
        queue: queue_bits,
        /// The tunnel the outer headers announce (0 none, 1 VXLAN, 2 NVGRE), why it is
        /// malformed (`eth_hdr_parse::tunnel_bad`), its VNI/VSID and NVGRE FlowID.
        tunnel: 2,
        tunnel_bad: 3,
        tunnel_id: 24,
        flow_id: 8,
        /// The outer headers were removed: every field above but the tunnel's describes the
        /// inner frame.
        decap: 1,
        /// Delivered whole with the inner offloads (`rx_decap`, `TUNNEL_CTL`): the fields
        /// above describe the outer headers, RSS hashed the inner ones, and the four below
        /// are the inner headers' types (0 none, 1 IPv4 / TCP, 2 IPv6 / UDP) and checksum
        /// verdicts; all four 0 otherwise.
        inner: 1,
        inner_l3: 2,
        inner_l4: 2,
        inner_l3_ok: 1,
        inner_l4_ok: 1,
    }
}

nicgen_edsl::record! {
    /// The RX counters, `stat_rx_<name>` (64 bits each): every record, the delivered frames,
    /// the drops by reason, and among delivered frames the malformed ones, the VLAN-stripped
    /// ones and the checksum failures.
    pub struct RxStats {
        frames_in: 64,
        delivered: 64,
        drop_runt: 64,
        drop_oversize: 64,
        drop_fcs: 64,
        drop_mac_control: 64,
        malformed: 64,
        vlan_stripped: 64,
        l3_csum_bad: 64,
        l4_csum_bad: 64,
        decapped: 64,
        tunnel_malformed: 64,
    }
}

/// The names of the RX counters ([`RxStats`]), in port order.
pub const RX_STATS: &[&str] = <RxStats<u32> as Shape>::NAMES;

/// The ports of [`eth_rx()`].
pub struct RxPorts {
    /// Wire frames with FCS (`s_axis_*`).
    pub s_axis: Stream,
    /// Delivered frames, FCS and outer VLAN tag removed (`m_axis_*`).
    pub m_axis: Stream,
    /// One record per input frame, in input order (`m_axis_meta_*`).
    pub meta: RecordStream<RxMeta<u32>>,
    /// RSS configuration writes (`cfg_we/_addr/_wdata`, see `rss_toeplitz`).
    pub cfg: CfgWrite,
    /// One pulse per frame the frame buffer drops (`stat_drop_bad`).
    pub drop_bad: Sig,
    /// The counters (`stat_rx_<name>`).
    pub stats: RxStats,
}

impl Ports for RxPorts {
    type Cfg = RxCfg;
    fn ports(io: &Io, cfg: &RxCfg) -> Self {
        let s = StreamCfg::new(cfg.data_bits, 0);
        RxPorts {
            s_axis: Stream::sink(io, "s_axis", &s),
            m_axis: Stream::source(io, "m_axis", &s),
            meta: RecordStream::source(io, "m_axis_meta", RxMeta::shape(cfg.rss.queue_bits())),
            cfg: io.inputs("cfg_", &CfgWrite::shape()),
            drop_bad: io.output("stat_drop_bad", 1),
            stats: io.outputs("stat_rx_", &RxStats::shape()),
        }
    }
}

/// The parser's output streams on the RX path, one per consumer: the record assembly (`pend`,
/// which waits for the checksum and RSS results), the checksum unit, the VLAN strip and RSS.
/// Every view also carries `user` (the FCS check's `tuser`: the drop and its reason).
pub const RX_VIEWS: &[View] = &[
    View {
        name: "pend",
        fields: pend_fields,
    },
    View {
        name: "csum",
        fields: csum_fields,
    },
    View {
        name: "strip",
        fields: strip_fields,
    },
    View {
        name: "rss",
        fields: rss_fields,
    },
];

/// The `pend` view: the verdict, the claims and the outer tag's TCI.
fn pend_fields(m: ParseMeta<u32>) -> ParseMeta<u32> {
    ParseMeta {
        malformed: m.malformed,
        l3: m.l3,
        l4: m.l4,
        tag0_tci: m.tag0_tci,
        l3_claim: m.l3_claim,
        l4_claim: m.l4_claim,
        vlan: m.vlan,
        ext_bad: m.ext_bad,
        ..ParseMeta::default()
    }
}

/// The `csum` view: what `rx_csum` needs.
fn csum_fields(m: ParseMeta<u32>) -> ParseMeta<u32> {
    ParseMeta {
        l3: m.l3,
        l4: m.l4,
        ip_proto: m.ip_proto,
        l4_len: m.l4_len,
        ip_sum: m.ip_sum,
        csum_l3_off: m.csum_l3_off,
        csum_l4_off: m.csum_l4_off,
        csum_end: m.csum_end,
        ..ParseMeta::default()
    }
}

/// The `strip` view: whether there is an outer tag to strip.
fn strip_fields(m: ParseMeta<u32>) -> ParseMeta<u32> {
    ParseMeta {
        vlan: m.vlan,
        ..ParseMeta::default()
    }
}

/// The `rss` view: the flow RSS hashes (the encapsulation engine's flow hash reads the same).
pub(crate) fn rss_fields(m: ParseMeta<u32>) -> ParseMeta<u32> {
    ParseMeta {
        l3: m.l3,
        l4: m.l4,
        frag: m.frag,
        src_port: m.src_port,
        dst_port: m.dst_port,
        src_ip: m.src_ip,
        dst_ip: m.dst_ip,
        ..ParseMeta::default()
    }
}
const V_PEND: usize = 0;
const V_CSUM: usize = 1;
const V_STRIP: usize = 2;
const V_RSS: usize = 3;

nicgen_edsl::record! {
    /// What the record assembly uses per frame (from the `pend` view) until the results come
    /// back.
    struct RxPending {
        deliver: 1,
        runt: 1,
        oversize: 1,
        fcs_bad: 1,
        mac_control: 1,
        vlan: 1,
        vlan_tci: 16,
        l3: 2,
        l4: 2,
        ip_ok: 1,
        ipv6: 1,
        l4_parsed: 1,
        ext_bad: 1,
        malformed: 4,
    }
}

/// Entries of each FIFO of the buffered fork to rx_csum and the VLAN strip (8 keep 1
/// beat/cycle).
const OUT_FORK_DEPTH: u32 = 8;

/// Depth of the LUT-RAM FIFOs after the FCS check.
const FCS_Q_DEPTH: u32 = 16;

/// Depth of the tunnel record queue beside the parse side's trim: more than the frames that can
/// be between the parse FIFO's input and the parser's input register (one beat each at most
/// [`FCS_Q_DEPTH`] in the FIFO, 8 in the registers, skid buffers and trim between them).
const TUN_Q_DEPTH: u32 = 32;

/// The path's input is taken while the FIFO after the FCS check has this many free entries (its
/// `s_axis_room` flop): the beat in the input register, the beats inside the check
/// ([`max_beats_inside`]) and four more, a margin for the flag, which ignores the last cycle's
/// read and so errs towards stopping the input.
fn fcs_q_room(data_bits: u32) -> u32 {
    1 + 4 + max_beats_inside(data_bits)
}

pub fn eth_rx(cfg: &RxCfg) -> Result<Block<RxPorts>, ElabError> {
    let w = cfg.data_bits;
    let ucfg = StreamCfg::new(w, rx_user::BITS);
    let fcs = eth_fcs_check(&FcsCheckCfg::for_mtu(w, cfg.mtu))?;
    let in_reg = stream_fwd_reg(&StreamCfg::new(w, 0))?;
    let fcs_reg = stream_fwd_reg(&ucfg)?;
    let fcs_q = stream_fifo_room(
        &FifoCfg::new(ucfg, FCS_Q_DEPTH),
        FifoRam::Lut,
        fcs_q_room(w),
    )?;
    let tun_bits = cfg.tun_bits();
    // The parser's input carries the tunnel record above `rx_user`; the parse FIFO and the
    // parse side's trim carry `rx_user` only, the record waiting in a queue of its own
    // (`u_tun_q`) until its frame's last beat leaves the trim.
    let pcfg = StreamCfg::new(w, rx_user::BITS + tun_bits);
    let parse_q = stream_fifo_room(
        &FifoCfg::new(ucfg, FCS_Q_DEPTH),
        FifoRam::Lut,
        fcs_q_room(w),
    )?;
    let parse_reg = stream_fwd_reg(&pcfg)?;
    let decap = cfg.decap().map(|d| rx_decap(&d)).transpose()?;
    // With the tunnel stage, the parse side's trim: a frame with the inner offloads reaches
    // the parser as its inner frame.
    let parse_trim = cfg
        .decap()
        .map(|d| -> Result<_, ElabError> {
            let t = d.parse_trim(ucfg);
            Ok((
                stream_trim(&t)?,
                record_fifo(t.cmd(), PARSE_CMD_AHEAD)?,
                stream_fwd_reg(&ucfg)?,
                stream_skid(&ucfg)?,
                record_fifo(TunMeta::shape(d.steer.queue_bits), TUN_Q_DEPTH)?,
            ))
        })
        .transpose()?;
    let parse = eth_hdr_parse(&HdrParseCfg {
        data_bits: w,
        user_bits: rx_user::BITS + tun_bits,
        window: cfg.window,
        fifo_depth: 32,
        views: RX_VIEWS,
        tunnels: false,
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
    let fork_out = stream_fork_buffered(&dcfg, &["csum", "host"], OUT_FORK_DEPTH)?;
    let csum = rx_csum(&RxCsumCfg {
        data_bits: w,
        levels_per_stage: cfg.levels_per_stage,
    })?;
    // A register slice at the output, so the strip's take (91 loads) is one LUT of flops and
    // does not read the next block's ready (docs/TIMING.md, rule 2).
    let strip = stream_delete(&DeleteCfg {
        stream: dcfg,
        off: 12,
        n: 4,
        out: OutStage::Slice,
    })?;
    let rss = rss_toeplitz(&cfg.rss)?;
    let tag_bits = cfg.rss.tag_bits;
    Block::build(format!("eth_rx_d{w}"), *cfg, move |p: RxPorts| {
        doc("RX offload path: FCS check, header parse, checksum verification and");
        doc("checksum-complete, RSS, VLAN strip; one metadata record per frame.");

        // The FCS check never stalls (its `m_axis_tready` is 1, so no enable fans out to its
        // registers): its beats go into two small LUT-RAM FIFOs, one for the parser and one
        // for the frame buffer, and the input is taken only while both have room for every
        // beat already inside the check. Each FIFO's `s_axis_room` is a flop computed from its
        // own pointers, so the input's ready starts at two flops, and each reader's readiness
        // reaches only its own FIFO's read pointer: no fork couples the parser and the buffer
        // (docs/TIMING.md, rules 8 and 11). A forward register (`u_in_reg`, never stalled)
        // takes the input under that ready, so the check's own input decisions (its hold
        // line's writes) start at the register's valid flop, not at the two room flags.
        let u_in_reg = in_reg.instance("u_in_reg");
        let u_fcs = fcs.instance("u_fcs_check");
        let u_fcs_q = fcs_q.instance("u_fcs_q");
        let u_parse_q = parse_q.instance("u_parse_q");
        let room_of = |q: &crate::stream::FifoPorts| q.room.expect("built with a room flag");
        let q_room = (room_of(&u_fcs_q) & room_of(&u_parse_q)).named("q_room");
        // With the tunnel stage, the FCS check's beats go into it (its ready is its own room
        // flag, for the beats inside the check), and its output into the two FIFOs under their
        // room flags; without it, straight into the two FIFOs.
        let u_decap = decap.as_ref().map(|d| d.instance("u_decap"));
        let room = match &u_decap {
            Some(d) => d.s_axis.ready().named("in_room"),
            None => q_room.named("in_room"),
        };
        u_in_reg.s_axis.set_beat(&p.s_axis.beat());
        u_in_reg.s_axis.valid().set(p.s_axis.valid() & room);
        p.s_axis.ready().set(room);
        let _ = u_in_reg.s_axis.ready().unused(); // 1: its m_axis_tready is 1
        u_in_reg.m_axis.ready().set(lit(1, 1u32));
        u_fcs.s_axis.set_beat(&u_in_reg.m_axis.beat());
        u_fcs.s_axis.valid().set(u_in_reg.m_axis.valid());
        let _ = u_fcs.s_axis.ready().unused(); // 1: its m_axis_tready is 1
        u_fcs.m_axis.ready().set(lit(1, 1u32));
        let (front, front_valid) = match &u_decap {
            Some(d) => {
                d.s_axis.set_beat(&u_fcs.m_axis.beat());
                d.s_axis.valid().set(u_fcs.m_axis.valid());
                d.cfg.we.set(p.cfg.we);
                d.cfg.addr.set(p.cfg.addr);
                d.cfg.wdata.set(p.cfg.wdata);
                // A forward register between the stage and the two FIFOs, never stalled: the
                // stage's last-beat valid (its verdicts' queue) and its tunnel record (LUT-RAM
                // reads) reach flops, not the FIFOs' occupancy, room flags and RAMs (rules 1
                // and 6). The beat it holds is one of the room flags' margin.
                let r = parse_reg.instance("u_decap_reg");
                d.m_axis.ready().set(q_room);
                r.s_axis.set_beat(&d.m_axis.beat());
                r.s_axis.valid().set(d.m_axis.valid() & q_room);
                let _ = r.s_axis.ready().unused(); // 1: its m_axis_tready is 1
                r.m_axis.ready().set(lit(1, 1u32));
                (r.m_axis.beat(), r.m_axis.valid())
            }
            None => (u_fcs.m_axis.beat(), u_fcs.m_axis.valid()),
        };
        // The frame buffer's side takes `rx_user`; the parse side also the tunnel record.
        let narrow = |b: &crate::stream::Beat| crate::stream::Beat {
            data: b.data,
            keep: b.keep,
            last: b.last,
            user: b.user.slice(rx_user::BITS - 1, 0),
        };
        u_fcs_q.s_axis.set_beat(&narrow(&front));
        u_parse_q.s_axis.set_beat(&narrow(&front));
        for q in [&u_fcs_q, &u_parse_q] {
            q.s_axis.valid().set(front_valid);
            // Never full: `in_room` (or `q_room` behind the tunnel stage) keeps a place for
            // every beat.
            let _ = q.s_axis.ready().unused();
        }

        // Parse side: a forward register between the FIFO and the parser, so that the parser's
        // input logic (its frame count on `tlast`, its capture) starts at flops, not at the
        // FIFO's LUT-RAM read.
        let u_parse_reg = parse_reg.instance("u_parse_reg");
        match (&parse_trim, &u_decap) {
            (Some((trim, cmd_q, trim_reg, trim_skid, tun_q)), Some(d)) => {
                // The tunnel stage's commands, one per frame, queued until the frame's first
                // beat gets here (never full: `PARSE_CMD_AHEAD`).
                let u_cmd_q = cmd_q.instance("u_parse_cmd_q");
                u_cmd_q.s_axis.data.set(d.parse_cmd.data);
                u_cmd_q.s_axis.valid.set(d.parse_cmd.valid);
                let _ = u_cmd_q.s_axis.ready.unused();
                // A forward register on each of the trim's inputs, so that the FIFOs' LUT-RAM
                // reads do not reach its lane masks or its command adder; a skid buffer behind
                // the data's, so that the trim's ready reaches one flop, not the register's
                // enables.
                let u_trim = trim.instance("u_parse_trim");
                let u_trim_reg = trim_reg.instance("u_parse_trim_reg");
                let u_trim_skid = trim_skid.instance("u_parse_trim_skid");
                connect(&u_parse_q.m_axis, &u_trim_reg.s_axis);
                connect(&u_trim_reg.m_axis, &u_trim_skid.s_axis);
                connect(&u_trim_skid.m_axis, &u_trim.s_axis);
                // The command queue's LUT-RAM read (four banks) goes straight into a forward
                // register; the trim's command ready is a flop, so no skid buffer is needed.
                let cq = &u_cmd_q.m_axis;
                let cmd_reg = record_fwd_reg("parse_cmd", cq.data, cq.valid);
                cq.ready.set(cmd_reg.s_ready);
                cmd_reg.drive(&u_trim.cmd);
                // Never: a command keeps the inner frame (at least 14 bytes, within the frame)
                // or the whole frame.
                let _ = u_trim.drop.unused();
                // The tunnel record: queued with its frame's last beat in front of the parse
                // FIFO, and joined to that beat again behind the trim (a LUT-RAM read straight
                // into the parser's input register). So the FIFO, the trim and the registers
                // between them are 5 bits of `tuser` wide, not 100 more, and no enable of the
                // trim spans the record (docs/TIMING.md, rule 4). Never full: every queued
                // record's frame has a beat in the parse FIFO or behind it, at most
                // `FCS_Q_DEPTH` + 8 beats (`TUN_Q_DEPTH`).
                let u_tun_q = tun_q.instance("u_tun_q");
                u_tun_q.s_axis.data.set(
                    front
                        .user
                        .slice(rx_user::BITS + tun_bits - 1, rx_user::BITS),
                );
                u_tun_q.s_axis.valid.set(front_valid & front.last);
                let _ = u_tun_q.s_axis.ready.unused();
                // Pushed before its frame's first beat enters the parse FIFO.
                let _ = u_tun_q.m_axis.valid.unused();
                let t = u_trim.m_axis.beat();
                u_parse_reg.s_axis.set_beat(&crate::stream::Beat {
                    user: cat(&[u_tun_q.m_axis.data, t.user]),
                    ..t
                });
                u_parse_reg.s_axis.valid().set(u_trim.m_axis.valid());
                u_trim.m_axis.ready().set(u_parse_reg.s_axis.ready());
                u_tun_q
                    .m_axis
                    .ready
                    .set(u_trim.m_axis.valid() & u_trim.m_axis.last() & u_parse_reg.s_axis.ready());
            }
            _ => connect(&u_parse_q.m_axis, &u_parse_reg.s_axis),
        }
        let u_parse = parse.instance("u_parse");
        connect(&u_parse_reg.m_axis, &u_parse.s_axis);

        // Data side: the frame buffer drops what the MAC check marked bad. A forward register
        // in front of it: its write logic (the frame-size check, `tlast`, `tuser`) starts at
        // flops, not at the FIFO's LUT-RAM read.
        let u_fcs_reg = fcs_reg.instance("u_fcs_reg");
        connect(&u_fcs_q.m_axis, &u_fcs_reg.s_axis);
        let u_buf = buf.instance("u_frame_buf");
        connect(&u_fcs_reg.m_axis, &u_buf.s_axis);
        let drops = u_buf.drops.expect("a frame-mode FIFO counts its drops");
        p.drop_bad.set(drops.drop_bad);
        let _ = drops.drop_oversize.unused();
        let buffered = &u_buf.m_axis;
        let _ = buffered.user().expect("rx stream has tuser").unused();
        // A register after the block RAMs (their output is selected among banks), then
        // a buffered fork: rx_csum and the VLAN strip each read a FIFO of their own, so neither
        // consumer's ready reaches the other, the register or the buffer's read logic
        // (docs/TIMING.md, rule 11). rx_csum reads its FIFO directly: its first stage registers
        // the beat without an enable and its ready is one LUT of its own flops, so its ready
        // meets only the FIFO's read pointer. That register is a register slice (its upstream
        // ready a flop), so the fork FIFOs' `full` flops stop at its control flops and enables,
        // short of the frame buffer's read, prefetch count and `can_read`.
        let u_fork_out = fork_out.instance("u_fork_out");
        stream_reg_slice("buf_reg", buffered).drive(&u_fork_out.s_axis);
        let (fork_csum, fork_host) = (&u_fork_out.m_axis[0], &u_fork_out.m_axis[1]);
        // The host side's register cuts the ready too (a register slice: valid, data and the
        // upstream ready from flops), so the strip's ready, which it decides from its command
        // and the beat's position, stops at the slice's enables, short of the fork FIFO's read
        // logic.
        let host_reg = stream_reg_slice("host_reg", fork_host);

        // No dispatch: the parser gives each consumer its own record stream ([`RX_VIEWS`]),
        // with stores, pointers and a valid of its own, so each consumer takes its records when
        // it is ready and no consumer's ready reaches another's logic (a dispatch would gate a
        // 450-bit register slice with the AND of their readies; docs/TIMING.md, rule 11). Each
        // stream goes through a register slice, so that its LUT-RAM read reaches its consumer
        // from flops; the checksum unit, the strip and RSS skip the records of frames the
        // frame buffer drops (`tuser` bit `bad`), a LUT in the handshake.
        // A view's records through a register slice, with their `deliver` (not `bad`); with
        // `copy`, also a flop of its own holding `deliver` for the handshake, apart from the
        // one that gates every field of the record.
        let view_with = |i: usize, slice: &str, copy: bool| {
            let v = &u_parse.views[i];
            let deliver_of = |d: Sig| !v.shape.unpack(d).user.bit(rx_user::BAD);
            // The pending record (the copied one): its ready is the record assembly's
            // `emit`, so its slice is built in halves.
            let (q, copied) =
                super::out_slice_with(v, slice, if copy { Some(&deliver_of) } else { None }, copy);
            let f = v.shape.unpack(q.data.unused());
            let deliver = (!f.user.bit(rx_user::BAD)).named(&format!("{slice}_deliver"));
            (q, f, deliver, copied)
        };
        let view = |i: usize, slice: &str| {
            let (q, f, deliver, _) = view_with(i, slice, false);
            (q, f, deliver)
        };
        // Hands the slice's delivered records to `dst` (as `word`), and takes the others.
        fn hand<S: Shape>(q: &RecordReg, deliver: Sig, dst: &RecordStream<S>, word: Sig) {
            dst.data.set(word);
            dst.valid.set(q.valid & deliver);
            q.ready.set(!deliver | dst.ready);
        }

        // The tunnel stage's record, in a view's `user` above `rx_user` (zeros without the
        // stage).
        let qb = cfg.rss.queue_bits();
        let tun_of = |user: Sig| {
            if tun_bits > 0 {
                TunMeta::shape(qb).unpack(user.slice(rx_user::BITS + tun_bits - 1, rx_user::BITS))
            } else {
                TunMeta::shape(qb).zeros()
            }
        };

        // RSS on the addresses and ports.
        let u_rss = rss.instance("u_rss");
        let (rq, rf, r_deliver) = view(V_RSS, "rss_req");
        let rss_req = RssReq {
            l3: rf.l3,
            l4: rf.l4,
            frag: rf.frag,
            src_ip: rf.src_ip,
            dst_ip: rf.dst_ip,
            src_port: rf.src_port,
            dst_port: rf.dst_port,
            tag: lit(tag_bits, 0u32),
        };
        let rss_req = u_rss.req.shape.pack(&rss_req).named("rss_req_fields");
        hand(&rq, r_deliver, &u_rss.req, rss_req);
        u_rss.cfg.we.set(p.cfg.we);
        u_rss.cfg.addr.set(p.cfg.addr);
        u_rss.cfg.wdata.set(p.cfg.wdata);

        // Checksums and VLAN strip on the buffered frame. (rx_csum's `s_axis_req_tready` is a
        // flop, its own request queue's `full`, so the frame end there does not reach the
        // request slice.)
        let u_csum = csum.instance("u_rx_csum");
        connect(fork_csum, &u_csum.s_axis);
        let (cq, cf, c_deliver) = view(V_CSUM, "csum_req");
        // With the inner offloads the parser saw the inner frame: its offsets move by where
        // that starts in the delivered frame (0 for every other frame).
        let shift = tun_of(cf.user).inner_off;
        let csum_req = RxCsumReq {
            l3: cf.l3,
            l4: cf.l4,
            l3_off: cf.csum_l3_off + shift,
            l4_off: cf.csum_l4_off + shift,
            end: cf.csum_end + shift,
            l4_len: cf.l4_len,
            proto: cf.ip_proto,
            ip_sum: cf.ip_sum,
        }
        .pack()
        .named("csum_req_fields");
        hand(&cq, c_deliver, &u_csum.req, csum_req);
        let u_strip = strip.instance("u_vlan_strip");
        host_reg.drive(&u_strip.s_axis);
        // The command: the strip decides on it at the first beat.
        let (sq, sf, s_deliver) = view(V_STRIP, "strip_cmd");
        // With the inner offloads, the outer tag (the parser saw the inner frame).
        let st = tun_of(sf.user);
        let strip_cmd = u_strip.cmd.shape.pack(&SpliceCmd {
            en: mux(st.inner, st.outer_vlan, sf.vlan),
            ..u_strip.cmd.shape.zeros()
        });
        hand(&sq, s_deliver, &u_strip.cmd, strip_cmd);
        connect(&u_strip.m_axis, &p.m_axis);

        // Assemble one record per frame, in order. The pending record comes through a register
        // slice: `emit` (it decides with the record's `deliver`) pops two result queues and
        // counts, and must not start at the queue's LUT-RAM read.
        // `emit` and the result slices' ready read a copy of the record's `deliver` (the
        // other gates all ~90 bits of the record; docs/TIMING.md, rule 3).
        let (pend_q, pf, p_deliver, p_deliver_hs) = view_with(V_PEND, "pend_q", true);
        let p_deliver_hs = p_deliver_hs.expect("copied").named("pend_q_deliver_hs");
        let user = pf.user;
        let l3_seen = pf.l3;
        let l4_seen = pf.l4;
        let pend = RxPending::unpack(
            RxPending {
                deliver: p_deliver,
                runt: user.bit(rx_user::RUNT),
                oversize: user.bit(rx_user::OVERSIZE),
                fcs_bad: user.bit(rx_user::FCS_BAD),
                mac_control: user.bit(rx_user::MAC_CONTROL),
                vlan: pf.vlan,
                vlan_tci: pf.tag0_tci,
                l3: pf.l3_claim,
                l4: pf.l4_claim,
                ip_ok: l3_seen.ne(0u32),
                ipv6: l3_seen.eq(2u32),
                l4_parsed: l4_seen.ne(0u32),
                ext_bad: pf.ext_bad,
                malformed: pf.malformed,
            }
            .pack()
            .named("pending_fields"),
        );
        let p_valid = pend_q.valid;
        // The checksum and RSS results through register slices too: `emit` must not reach the
        // two units' pop and reservation logic, nor start at the RSS queue's LUT-RAM read.
        let csum_q = super::out_slice(&u_csum.res, "csum_res_q");
        let rss_q = super::out_slice(&u_rss.res, "rss_res_q");
        let c_valid = csum_q.valid;
        let r_valid = rss_q.valid;
        let out_valid = reg_init(1, 0u32).named("meta_valid");
        let out_ready = p.meta.ready;
        let room = (!out_valid | out_ready).named("meta_room");
        let emit = (p_valid & room & (!p_deliver_hs | (c_valid & r_valid))).named("emit");
        pend_q.ready.set(emit);
        // The result slices' ready written out (it is `emit & p_deliver`), not behind `emit`,
        // whose net reaches every bit of the record register. Its room comes from a complement
        // copy of the record's valid, so that synthesis cannot rebuild it as
        // `emit & p_deliver` (docs/TIMING.md, rule 3).
        let out_valid_n = reg_init(1, 1u32).named("meta_valid_n");
        let res_room = (out_valid_n | out_ready).named("res_room");
        let res_take = (p_valid & res_room & p_deliver_hs & c_valid & r_valid).named("res_take");
        csum_q.ready.set(res_take);
        rss_q.ready.set(res_take);
        let c = RxCsumRes::unpack(csum_q.data);
        let r = u_rss.res.shape.unpack(rss_q.data.unused());
        let d = p_deliver;
        let gate = |x: Sig| x & d.repl(x.width());
        let tun = tun_of(user);
        let steered = (d & tun.steered).named("steered");
        // The parser's frame: the delivered one, or with the inner offloads its inner frame.
        let l3_p = gate(pend.l3);
        let l4_p = gate(pend.l4);
        let (l3_ok_p, l4_ok_p) = reported_verdicts(
            l3_p,
            l4_p,
            pend.ip_ok,
            pend.ipv6,
            pend.ext_bad,
            pend.l4_parsed,
            &c,
        );
        let (l3_ok_p, l4_ok_p) = (d & l3_ok_p, d & l4_ok_p);
        // With the inner offloads, the record's own fields are the outer headers' (the tunnel
        // stage's), the inner fields the parser's.
        let inner = (d & tun.inner).named("inner");
        let outer = |o: Sig, p: Sig| mux(inner, o, p);
        let l3 = outer(tun.outer_l3, l3_p);
        let l4 = outer(tun.outer_l4, l4_p);
        let l3_ok = outer(tun.outer_l3_ok, l3_ok_p);
        let l4_ok = outer(tun.outer_l4_ok, l4_ok_p);
        let vlan = d & outer(tun.outer_vlan, pend.vlan);
        let malformed = gate(outer(tun.outer_malformed, pend.malformed));
        let inner_only = |x: Sig| x & inner.repl(x.width());
        let rec = p
            .meta
            .shape
            .pack(&RxMeta {
                drop: !d,
                runt: pend.runt,
                oversize: pend.oversize,
                fcs_bad: pend.fcs_bad,
                mac_control: pend.mac_control,
                vlan,
                vlan_tci: gate(outer(tun.outer_tci, pend.vlan_tci)),
                l3,
                l4,
                l3_ok,
                l4_ok,
                csum: gate(outer(tun.outer_csum, c.csum)),
                malformed,
                rss_type: gate(r.rss_type),
                rss_hash: gate(r.hash),
                queue: mux(steered, tun.queue, gate(r.queue)),
                tunnel: gate(tun.tunnel),
                tunnel_bad: gate(tun.bad),
                tunnel_id: gate(tun.id),
                flow_id: gate(tun.flow_id),
                decap: d & tun.decap,
                inner,
                inner_l3: inner_only(l3_p),
                inner_l4: inner_only(l4_p),
                inner_l3_ok: inner_only(l3_ok_p),
                inner_l4_ok: inner_only(l4_ok_p),
            })
            .named("meta_rec");
        // Per-reason counters, one event per emitted record (the drop reason by the same
        // precedence as the report: runt, oversize, FCS, MAC control). The events are
        // registered (a count shows 2 cycles after its record is emitted), so that `emit` does
        // not fan out to the counters' enables.
        let (runt, over, fcs) = (pend.runt, pend.oversize, pend.fcs_bad);
        let ev = |n: &str, x: Sig| {
            let r = reg_init(1, 0u32).named(&format!("ev_{n}"));
            r.set(emit & x);
            r
        };
        let events = RxStats {
            frames_in: ev("frames_in", lit(1, 1u32)),
            delivered: ev("delivered", d),
            drop_runt: ev("drop_runt", !d & runt),
            drop_oversize: ev("drop_oversize", !d & !runt & over),
            drop_fcs: ev("drop_fcs", !d & !runt & !over & fcs),
            drop_mac_control: ev("drop_mac_control", !d & !runt & !over & !fcs),
            malformed: ev("malformed", malformed.ne(0u32)),
            vlan_stripped: ev("vlan_stripped", vlan),
            l3_csum_bad: ev("l3_csum_bad", l3.ne(0u32) & !l3_ok),
            l4_csum_bad: ev("l4_csum_bad", l4.ne(0u32) & !l4_ok),
            decapped: ev("decapped", d & tun.decap),
            tunnel_malformed: ev("tunnel_malformed", d & tun.bad.ne(0u32)),
        };
        counter_bank(&RxStats::shape(), &events, &p.stats);

        // The record register loads whenever it may move (one LUT of a flop and the ready),
        // not on `emit`: a word loaded without `emit` is never shown, and `emit` stays off its
        // ~150 enables. Its flop is one more copy of the record's valid, from a next-state
        // expression of its own so that synthesis merges it with neither copy above
        // (docs/TIMING.md, rule 3).
        let out_valid_data = reg_init(1, 0u32).named("meta_valid_data").keep();
        out_valid_data.set(emit | (out_valid_data & !out_ready));
        let room_data = (!out_valid_data | out_ready).named("meta_room_data");
        let out = reg(p.meta.shape.width()).enable(room_data).named("meta_q");
        out.set(rec);
        let out_valid_next = mux(emit, 1u32, mux(out_ready, 0u32, out_valid));
        out_valid.set(out_valid_next);
        out_valid_n.set(!out_valid_next);
        p.meta.data.set(out);
        p.meta.valid.set(out_valid);
    })
}
