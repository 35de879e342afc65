//! `rx_decap`: the receive side's tunnel stage: recognises VXLAN and NVGRE in each frame, looks
//! the tunnel up in the steering table and de-capsulates it, verifies the outer checksums, and
//! tells the parse side which frame to parse, before the rest of the RX path.
//!
//! ```text
//!                +-> FIFO (LUT) -> reg -> eth_hdr_parse (tunnel view) -> slice -> steering lookup -+
//! s_axis (FCS    |                                                          2 stages, never stall  |
//! checked) ------+                              +-- trim command FIFO, outer csum request FIFO <---+
//!                |                              v                                                  |
//!                +-> cut -> FIFO (block RAM) -> fork -+-> stream_trim ---> tag -> m_axis           |
//!                                                     +-> rx_csum (outer) -^                       |
//!                                                                           ^                      |
//!                                                 tunnel record FIFO -------+ <--------------------+
//!                                                 m_parse_cmd (the parse side's trim) <------------+
//! ```
//!
//! Every frame in leaves on `m_axis`, in order, with a [`TunMeta`] record in the `tuser` of its
//! last beat, above the FCS check's bits (the rest of the RX path reports it in `RxMeta`). The
//! rules are those of the golden model `nicgen_model::tunnel::decap` and `nicgen_model::rx`:
//! - a frame the FCS check passed whose tunnel is well formed (the parser's `tunnel` non-zero,
//!   `tunnel_bad` zero) is de-capsulated when its (kind, VNI/VSID) hits the steering table or
//!   `decap_all` is set: it leaves as its inner frame, `frame[inner_off .. inner_end]` (the
//!   outer headers and any padding after the inner frame removed); the rest of the RX path then
//!   parses, verifies and hashes the inner headers, so the checksum verdicts and RSS it reports
//!   are the inner ones, and a hit's queue overrides RSS's;
//! - a well-formed tunnel that is not de-capsulated, of a kind with the inner offloads
//!   (`TUNNEL_CTL` `inner_vxlan`, `inner_nvgre`), leaves whole, but its `m_parse_cmd` command
//!   keeps only its inner frame: the RX path's parser, checksum unit and RSS see the inner
//!   headers (`TunMeta::inner_off` moves the checksum unit's offsets into the whole frame), and
//!   the record's outer fields, from this stage's parser and its own checksum unit, give the
//!   outer headers' report;
//! - every other frame leaves whole, with its tunnel kind and its malformed reason (never
//!   dropped here: a malformed tunnel is delivered undecapsulated and flagged).
//!
//! Every frame's outer verdicts are summed here (`rx_csum` on the data side, before the trim):
//! the tag holds a frame's last beat until they are out, a few cycles after the checksum unit
//! took that beat; the fork lets the checksum unit run ahead of the trim, so that wait is paid
//! once per burst, not per frame.
//!
//! Why here, in front of the RX path and not beside it: once the outer headers are gone (or,
//! with the inner offloads, hidden from the parse side by its trim), the path's one parser,
//! checksum unit and RSS see the inner frame, and no second set of them is built for inner
//! verdicts; this stage's own parser already holds the outer headers' report, and a checksum
//! unit (about 1.6 k LUT at 64 bits) gives their verdicts.
//!
//! Bounded buffering, never a hang: the trim needs a frame's command at its first beat, and the
//! command needs the parser's record, which comes after the frame's last beat (its `tuser`).
//! So the data side holds whole frames: a FIFO of two of the longest frames. A frame longer
//! than the longest legal frame ([`DecapCfg::cut_beats`] beats, more than `mtu + 22` bytes) is
//! cut there: its data ends with `tuser` `bad | oversize` and the rest of its beats are not
//! stored (the FCS check marks such a frame oversize at its real end anyway, and the frame
//! buffer behind drops it), while the parser still sees it whole. The FIFO then never holds
//! more than one cut frame beside frames whose commands are known, so room always returns.
//!
//! - Ports ([`DecapPorts`]): `s_axis_*` (frames from the FCS check, `tuser` = `rx_user`;
//!   `s_axis_tready` is a room flag from flops: high while both FIFOs have room for `room`
//!   more beats, the beats already in flight in front; a beat arriving is always taken),
//!   `m_axis_*` (`tuser` = [`TunMeta`] above `rx_user` on the last beat, 0 above it on the
//!   others), `cfg_*` (configuration writes, [`cfg_addr`]), `m_parse_cmd_*` (one
//!   [`TrimCmd`] per frame for the parse side's trim, in frame order, no ready: the taker
//!   queues [`PARSE_CMD_AHEAD`]).
//! - Configuration: `VXLAN_PORT` (reset 4789), `TUNNEL_CTL` bit 0 `decap_all`, bit 1
//!   `inner_vxlan`, bit 2 `inner_nvgre` (reset 0),
//!   `STEER_QUEUE` (the queue the next entry write takes) and `STEER + i` (entry `i`: bit 31
//!   valid, bits 25:24 kind, 1 VXLAN and 2 NVGRE, bits 23:0 VNI or VSID).
//! - Latency: store-and-forward: a frame's first beat leaves after its last beat came in and
//!   its record went through the parser (`eth_hdr_parse::LATENCY_AFTER_LAST`), the record's
//!   slice, the lookup's three stages and the register in front of the FIFOs, the command FIFO
//!   and the trim; its last beat also waits
//!   for the outer verdicts (not measured apart from the RX path).
//! - Throughput: a record a cycle through the lookup; the data 1 beat/cycle, the trim's bubbles
//!   only where outer bytes disappear: VXLAN frames of 92 to 9000 bytes go through the RX path
//!   with `decap_all`, and whole with the inner offloads, in their ideal beats at 64 and 512
//!   bits (results/PIPELINE.md).
//! - Cost: a second header parser with one view (tunnel fields, the outer report and checksum
//!   request), the steering table ([`mod@super::tunnel_steering`]), a block-RAM FIFO of two
//!   longest frames, a LUT-RAM FIFO, a fork with two 32-beat LUT-RAM FIFOs, `rx_csum`,
//!   a forward register and a skid buffer in front of [`crate::stream::stream_trim()`], three
//!   32-entry record FIFOs and the register in front of them; LUT/FF/Fmax: results/AREA.md,
//!   row `rx_decap`. The nic64 RX path with this stage does not meet its clock yet
//!   (results/AREA-paths.md): its worst paths are this stage's output handshake (the FIFOs'
//!   room flags behind it reach the pops of its verdict and record queues) and its lookup
//!   decisions (the record and the steering result to the words of its FIFOs).
//! - Golden model: `nicgen_model::tunnel::decap` (with `nicgen_model::rx::rx_frame` for the
//!   whole path); test: `testbench/tests/eth/eth_rx.rs` (the tunnel runs), and the blocks'
//!   own tests (`eth_hdr_parse`, `tunnel_steering`, `stream_trim`).

use super::tunnel_steering::{tunnel_steering, SteerCfg, SteerKey, SteerWrite};
use crate::eth::eth_hdr_parse::{eth_hdr_parse, HdrParseCfg, ParseMeta, View};
use crate::eth::rx_csum::{reported_verdicts, rx_csum, RxCsumCfg, RxCsumReq, RxCsumRes};
use crate::eth::rx_user;
use crate::rss::rss_toeplitz::CfgWrite;
use crate::stream::stream_fifo::{stream_fifo_room, FifoRam};
use crate::stream::{
    record_fifo, stream_fork_buffered, stream_fwd_reg, stream_skid, stream_trim, FifoCfg, Stream,
    StreamCfg, TrimCfg, TrimCmd,
};
use crate::timing::Reserve;
use nicgen_edsl::prelude::*;

/// Configuration addresses of the tunnel stage, in the RX path's configuration space (beside
/// `rss_toeplitz::cfg_addr`, whose addresses they do not overlap).
pub mod cfg_addr {
    /// UDP destination port of VXLAN (bits 15:0).
    pub const VXLAN_PORT: u32 = 0x020;
    /// Bit 0: de-capsulate every well-formed tunnel, also without a steering entry.
    pub const TUNNEL_CTL: u32 = 0x021;
    /// The queue (bits `queue_bits - 1 : 0`) that the next `STEER` write gives its entry.
    pub const STEER_QUEUE: u32 = 0x022;
    /// Steering entry i is at `STEER + i`: bit 31 valid, bits 25:24 kind, bits 23:0 id.
    pub const STEER: u32 = 0xC00;
}

/// The default VXLAN port (IANA).
pub const VXLAN_PORT_DEFAULT: u32 = 4789;

/// Tunnel stage parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecapCfg {
    pub data_bits: u32,
    /// Parser header window, bytes: tunnel headers must end within it.
    pub window: u32,
    /// The longest legal frame without FCS, bytes (`mtu + 22`).
    pub max_frame: u32,
    /// Beats that may already be on their way when `s_axis_tready` falls.
    pub room: u32,
    /// The steering table.
    pub steer: SteerCfg,
    /// The outer checksum unit's adder levels per stage (`rx_csum`).
    pub levels_per_stage: u32,
}

impl DecapCfg {
    /// Beats of one frame the data FIFO stores at most: more than the longest legal frame.
    pub fn cut_beats(&self) -> u32 {
        self.max_frame.div_ceil(self.data_bits / 8) + 1
    }
    /// Entries of the data FIFO: two cut frames and the room, at most 16384 (the FIFO's
    /// limit; at 8 bits with a jumbo MTU that is one cut frame and its room, so a jumbo frame
    /// after a jumbo frame waits for the first one's command).
    pub fn data_depth(&self) -> u32 {
        (2 * self.cut_beats() + self.room + 4)
            .next_power_of_two()
            .min(16384)
    }
    /// The `tuser` of `m_axis`: `rx_user`, then [`TunMeta`].
    pub fn out_user_bits(&self) -> u32 {
        rx_user::BITS + TunMeta::shape(self.steer.queue_bits).width()
    }
    /// The parse side's trims (`m_parse_cmd`): `head` up to the window.
    pub fn parse_trim(&self, stream: StreamCfg) -> TrimCfg {
        TrimCfg {
            stream,
            max_head: self.window,
        }
    }
}

nicgen_edsl::record! {
    /// What the tunnel stage tells the rest of the RX path about a frame (in the `tuser` of the
    /// frame's last beat, above `rx_user`).
    pub struct TunMeta(queue_bits: u32) {
        /// Tunnel kind (`eth_hdr_parse::tunnel_kind`: 0 none, 1 VXLAN, 2 NVGRE).
        tunnel: 2,
        /// Why the tunnel is malformed (`eth_hdr_parse::tunnel_bad`, 0 for none).
        bad: 3,
        /// VNI or VSID of a well-formed tunnel.
        id: 24,
        /// NVGRE FlowID.
        flow_id: 8,
        /// The frame leaves as its inner frame.
        decap: 1,
        /// A steering entry holds the tunnel: `queue` overrides RSS.
        steered: 1,
        queue: queue_bits,
        /// Delivered whole with the inner offloads: the parse side sees the inner frame, from
        /// byte `inner_off` of the delivered one (`m_parse_cmd`), and the fields below report
        /// the outer headers.
        inner: 1,
        inner_off: 16,
        /// The outer headers, as the RX path reports a frame's own (`RxMeta`): the outer tag
        /// and its TCI, the L3 and L4 claims, their checksum verdicts, the checksum-complete
        /// and the parser's malformed reason. Every frame's, also without `inner`.
        outer_vlan: 1,
        outer_tci: 16,
        outer_l3: 2,
        outer_l4: 2,
        outer_l3_ok: 1,
        outer_l4_ok: 1,
        outer_csum: 16,
        outer_malformed: 4,
    }
}

nicgen_edsl::record! {
    /// A frame's tunnel record while its outer checksums are still being summed: [`TunMeta`]
    /// without the verdicts, with what they are made from.
    struct TunPending(queue_bits: u32) {
        tunnel: 2,
        bad: 3,
        id: 24,
        flow_id: 8,
        decap: 1,
        steered: 1,
        queue: queue_bits,
        inner: 1,
        inner_off: 16,
        vlan: 1,
        tci: 16,
        l3: 2,
        l4: 2,
        /// The parser's own L3 / L4 (a well-formed header), IPv6, a broken extension chain.
        ip_ok: 1,
        ipv6: 1,
        l4_parsed: 1,
        ext_bad: 1,
        malformed: 4,
    }
}

/// The ports of [`rx_decap()`].
pub struct DecapPorts {
    /// Frames from the FCS check (`s_axis_*`, `tuser` = `rx_user`); `s_axis_tready` is the
    /// room flag.
    pub s_axis: Stream,
    /// Frames out, de-capsulated or whole (`m_axis_*`, `tuser` = [`TunMeta`] above `rx_user`).
    pub m_axis: Stream,
    /// Configuration writes (`cfg_*`, [`cfg_addr`]).
    pub cfg: CfgWrite,
    /// The parse side's trim, one command per frame in frame order (`m_parse_cmd_*`, no
    /// ready: the taker holds [`PARSE_CMD_AHEAD`]): a frame with the inner offloads keeps its
    /// inner frame, every other frame passes whole.
    pub parse_cmd: RecordValid<TrimCmd<u32>>,
}

/// How many `m_parse_cmd` records may be out ahead of their frames' first beats at the parse
/// side's trim: those of the frames this stage may hold (`DEC_DEPTH` from the lookup to the
/// last beat out) and of the frames between its output and that trim (a 16-beat FIFO and two
/// registers in `eth_rx`), with a margin.
pub const PARSE_CMD_AHEAD: u32 = 64;

impl Ports for DecapPorts {
    type Cfg = DecapCfg;
    fn ports(io: &Io, cfg: &DecapCfg) -> Self {
        DecapPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(cfg.data_bits, rx_user::BITS)),
            m_axis: Stream::source(
                io,
                "m_axis",
                &StreamCfg::new(cfg.data_bits, cfg.out_user_bits()),
            ),
            cfg: io.inputs("cfg_", &CfgWrite::shape()),
            parse_cmd: RecordValid::source(
                io,
                "m_parse_cmd",
                cfg.parse_trim(StreamCfg::new(cfg.data_bits, 0)).cmd(),
            ),
        }
    }
}

/// The parser's one output: the tunnel fields (with the frame length, which the parser's
/// tunnel verdict shares its registers with, and this stage does not read), what the RX path
/// reports of the outer headers, and the outer checksum unit's request.
const TUN_VIEWS: &[View] = &[View {
    name: "tun",
    fields: tun_fields,
}];

fn tun_fields(m: ParseMeta<u32>) -> ParseMeta<u32> {
    ParseMeta {
        tunnel: m.tunnel,
        tunnel_bad: m.tunnel_bad,
        tunnel_id: m.tunnel_id,
        flow_id: m.flow_id,
        inner_off: m.inner_off,
        inner_end: m.inner_end,
        frame_len: m.frame_len,
        malformed: m.malformed,
        l3: m.l3,
        l4: m.l4,
        tag0_tci: m.tag0_tci,
        l3_claim: m.l3_claim,
        l4_claim: m.l4_claim,
        vlan: m.vlan,
        ext_bad: m.ext_bad,
        ip_proto: m.ip_proto,
        l4_len: m.l4_len,
        ip_sum: m.ip_sum,
        csum_l3_off: m.csum_l3_off,
        csum_l4_off: m.csum_l4_off,
        csum_end: m.csum_end,
        ..ParseMeta::default()
    }
}

/// Entries of each FIFO of the fork to the trim and the outer checksum unit: 8 keep 1
/// beat/cycle; the trim's side also holds the beats that pass while the tag waits for a
/// frame's verdicts (the checksum unit's latency after the last beat, less the trim's).
const FORK_DEPTH: u32 = 32;

/// Entries of the command, checksum-request and tunnel FIFOs: the frames the lookup may run
/// ahead of the tag. A record is owed its place from the lookup until its frame's last beat
/// leaves with its outer verdicts (the lookup, the command FIFO and the trim's command slice,
/// the trim, and the checksum unit's latency after the last beat: about 20 cycles), so
/// one-beat frames back to back need more than 16.
const DEC_DEPTH: u32 = 32;

/// Depth of the LUT-RAM FIFO in front of the parser.
const PARSE_Q_DEPTH: u32 = 16;

pub fn rx_decap(cfg: &DecapCfg) -> Result<Block<DecapPorts>, ElabError> {
    let w = cfg.data_bits;
    let ucfg = StreamCfg::new(w, rx_user::BITS);
    let parse_q = stream_fifo_room(&FifoCfg::new(ucfg, PARSE_Q_DEPTH), FifoRam::Lut, cfg.room)?;
    let data_q = stream_fifo_room(
        &FifoCfg {
            stream: ucfg,
            depth: cfg.data_depth(),
            frame_mode: false,
        },
        FifoRam::Block,
        cfg.room,
    )?;
    let parse_reg = stream_fwd_reg(&ucfg)?;
    let parse = eth_hdr_parse(&HdrParseCfg {
        data_bits: w,
        user_bits: rx_user::BITS,
        window: cfg.window,
        fifo_depth: 32,
        views: TUN_VIEWS,
        tunnels: true,
    })?;
    let steer = tunnel_steering(&cfg.steer)?;
    let tcfg = TrimCfg {
        stream: ucfg,
        max_head: cfg.window,
    };
    let trim = stream_trim(&tcfg)?;
    let cmd_q = record_fifo(tcfg.cmd(), DEC_DEPTH)?;
    let qb = cfg.steer.queue_bits;
    let meta_q = record_fifo(TunPending::shape(qb), DEC_DEPTH)?;
    let csum_q = record_fifo(RxCsumReq::shape(), DEC_DEPTH)?;
    let fork = stream_fork_buffered(&ucfg, &["trim", "csum"], FORK_DEPTH)?;
    let trim_reg = stream_fwd_reg(&ucfg)?;
    let trim_skid = stream_skid(&ucfg)?;
    let csum = rx_csum(&RxCsumCfg {
        data_bits: w,
        levels_per_stage: cfg.levels_per_stage,
    })?;
    let cfg = *cfg;
    Block::build(format!("rx_decap_d{w}"), cfg, move |p: DecapPorts| {
        doc("RX tunnel stage: VXLAN/NVGRE recognition, steering lookup, de-capsulation.");
        let s = &p.s_axis;
        let user = s.user().expect("rx stream has tuser");

        // ---- Configuration ----
        let c = &p.cfg;
        let _ = c.wdata.slice(30, 26).unused(); // no field of any tunnel register
        let at = |a: u32| (c.we & c.addr.eq(a as u64)).named(&format!("cfg_at_{a:03x}"));
        let vxlan_port = reg_init(16, VXLAN_PORT_DEFAULT).named("vxlan_port");
        vxlan_port.set_if(at(cfg_addr::VXLAN_PORT), c.wdata.slice(15, 0));
        let decap_all = reg_init(1, 0u32).named("decap_all");
        decap_all.set_if(at(cfg_addr::TUNNEL_CTL), c.wdata.bit(0));
        let inner_vxlan = reg_init(1, 0u32).named("inner_vxlan");
        inner_vxlan.set_if(at(cfg_addr::TUNNEL_CTL), c.wdata.bit(1));
        let inner_nvgre = reg_init(1, 0u32).named("inner_nvgre");
        inner_nvgre.set_if(at(cfg_addr::TUNNEL_CTL), c.wdata.bit(2));
        let steer_queue = reg_init(qb, 0u32).named("steer_queue");
        steer_queue.set_if(at(cfg_addr::STEER_QUEUE), c.wdata.slice(qb - 1, 0));
        let u_steer = steer.instance("u_steering");
        let ib = u_steer.wr.index.width();
        let steer_at = (c.we
            & c.addr.ge(cfg_addr::STEER as u64)
            & c.addr.lt((cfg_addr::STEER + cfg.steer.entries) as u64))
        .named("cfg_at_steer");
        let wr = SteerWrite {
            en: steer_at,
            index: (c.addr - cfg_addr::STEER as u64).resize(ib),
            valid: c.wdata.bit(31),
            kind: c.wdata.slice(25, 24),
            id: c.wdata.slice(23, 0),
            queue: steer_queue,
        };
        u_steer.wr.en.set(wr.en);
        u_steer.wr.index.set(wr.index);
        u_steer.wr.valid.set(wr.valid);
        u_steer.wr.kind.set(wr.kind);
        u_steer.wr.id.set(wr.id);
        u_steer.wr.queue.set(wr.queue);

        // ---- Input: every beat arriving is taken (the room flag held the sender back) ----
        let u_parse_q = parse_q.instance("u_parse_q");
        let u_data_q = data_q.instance("u_data_q");
        let room_of = |q: &crate::stream::FifoPorts| q.room.expect("built with a room flag");
        s.ready().set(room_of(&u_parse_q) & room_of(&u_data_q));
        u_parse_q.s_axis.set_beat(&s.beat());
        u_parse_q.s_axis.valid().set(s.valid());
        // Never full: the room flag.
        let _ = u_parse_q.s_axis.ready().unused();
        // The data side stores at most `cut_beats` beats of a frame; a longer frame ends there,
        // marked bad and oversize, and its other beats are not stored. Whether the next beat is
        // the cut-th is a flop, decided a write ahead (`count == cut - 2`), so that the data
        // FIFO's `tlast` and `tuser` come from flops, not from the count's compare.
        let cut = cfg.cut_beats();
        let count = reg_init(clog2(cut as u64 + 1), 0u32).named("frame_beats");
        let discarding = reg_init(1, 0u32).named("discarding");
        let at_cut = reg_init(1, 0u32).named("at_cut");
        let write = (s.valid() & !discarding).named("data_write");
        let ends = (s.last() | at_cut).named("data_ends");
        let cut_user = lit(
            rx_user::BITS,
            (1u64 << rx_user::BAD) | (1u64 << rx_user::OVERSIZE),
        );
        u_data_q.s_axis.data().set(s.data());
        u_data_q.s_axis.keep().set(s.keep());
        u_data_q.s_axis.last().set(ends);
        u_data_q
            .s_axis
            .user()
            .expect("rx stream has tuser")
            .set(mux(
                s.last(),
                user,
                mux(at_cut, cut_user, lit(rx_user::BITS, 0u32)),
            ));
        u_data_q.s_axis.valid().set(write);
        let _ = u_data_q.s_axis.ready().unused(); // never full: the room flag
        count.set_if(write, mux(ends, lit(count.width(), 0u32), count + 1u32));
        at_cut.set_if(write, !ends & count.eq((cut - 2) as u64));
        discarding.set_if(s.valid(), !s.last() & (discarding | (at_cut & write)));

        // ---- Parse side ----
        let u_parse_reg = parse_reg.instance("u_parse_reg");
        connect(&u_parse_q.m_axis, &u_parse_reg.s_axis);
        let u_parse = parse.instance("u_parse");
        connect(&u_parse_reg.m_axis, &u_parse.s_axis);
        u_parse
            .vxlan_port
            .expect("built with tunnels")
            .set(vxlan_port);

        // ---- Lookup: a record a cycle, never stalled once taken ----
        // A record is taken while the two FIFOs behind have a place reserved for it (`owed`
        // counts records from their lookup until the tunnel FIFO gives them out, which is never
        // before the command FIFO gives out the same frame's command).
        let v = &u_parse.views[0];
        let q = crate::eth::out_slice(v, "tun_rec");
        let reserve = Reserve::new(DEC_DEPTH);
        q.ready.set(reserve.room);
        let take = (q.valid & reserve.room).named("lookup_take");
        let f = v.shape.unpack(q.data.unused());
        u_steer.lookup.valid.set(take);
        u_steer.lookup.set_fields(&SteerKey {
            kind: f.tunnel,
            id: f.tunnel_id,
        });
        // The record waits for the steering result (3 cycles).
        let rec3 =
            delay(delay(delay(q.data).named("tun_rec_s1")).named("tun_rec_s2")).named("tun_rec_s3");
        let valid3 =
            delay(delay(delay(take).named("lookup_s1")).named("lookup_s2")).named("lookup_s3");
        let r = u_steer.result.fields();
        let _ = u_steer.result.valid.unused(); // = lookup_s3
        let g = v.shape.unpack(rec3.unused());
        let bad = g.user.bit(rx_user::BAD);
        let good = (!bad & g.tunnel.ne(0u32) & g.tunnel_bad.eq(0u32)).named("tunnel_good");
        let steered = (good & r.hit).named("steered");
        let decap = (good & (r.hit | decap_all)).named("decap");
        let inner_kind = mux(
            g.tunnel.eq(1u32),
            inner_vxlan,
            g.tunnel.eq(2u32) & inner_nvgre,
        );
        let inner = (good & !decap & inner_kind).named("inner");
        let u_cmd_q = cmd_q.instance("u_cmd_q");
        let u_meta_q = meta_q.instance("u_meta_q");
        let u_csum_q = csum_q.instance("u_csum_q");
        let hb = tcfg.head_bits();
        // The inner frame's command (the data side's when `decap`, the parse side's when
        // `inner`), or the whole frame.
        let keep_inner = |on: Sig| TrimCmd {
            head: mux(on, g.inner_off.resize(hb), lit(hb, 0u32)),
            len: mux(on, g.inner_end - g.inner_off, lit(16, 0xFFFFu32)),
            drop: lit(1, 0u32),
        };
        // What goes into the three FIFOs and to the parse side is worked out from the record
        // and the steering result, then registered once more (`*_s4`), so that the FIFOs'
        // write data come from flops of their own, not through the decision and its fan-out
        // (docs/TIMING.md, rule 12).
        let valid4 = delay(valid3).named("lookup_s4");
        let s4 = |x: Sig, nm: &str| delay(x).named(&format!("{nm}_s4"));
        let cmd_word = u_cmd_q.s_axis.shape.pack(&keep_inner(decap));
        u_cmd_q.s_axis.data.set(s4(cmd_word, "trim_cmd"));
        u_cmd_q.s_axis.valid.set(valid4);
        let _ = u_cmd_q.s_axis.ready.unused(); // never full: `owed`
        let parse_word = p.parse_cmd.shape.pack(&keep_inner(inner));
        p.parse_cmd.data.set(s4(parse_word, "parse_cmd"));
        p.parse_cmd.valid.set(valid4);
        let csum_word = u_csum_q.s_axis.shape.pack(&RxCsumReq {
            l3: g.l3,
            l4: g.l4,
            l3_off: g.csum_l3_off,
            l4_off: g.csum_l4_off,
            end: g.csum_end,
            l4_len: g.l4_len,
            proto: g.ip_proto,
            ip_sum: g.ip_sum,
        });
        u_csum_q.s_axis.data.set(s4(csum_word, "csum_req"));
        u_csum_q.s_axis.valid.set(valid4);
        let _ = u_csum_q.s_axis.ready.unused(); // never full: `owed`
        let gate = |x: Sig| x & (!bad).repl(x.width());
        let meta_word = u_meta_q.s_axis.shape.pack(&TunPending {
            tunnel: gate(g.tunnel),
            bad: gate(g.tunnel_bad),
            id: gate(g.tunnel_id),
            flow_id: gate(g.flow_id),
            decap,
            steered,
            queue: r.queue & steered.repl(qb),
            inner,
            inner_off: g.inner_off.resize(16) & inner.repl(16),
            vlan: gate(g.vlan),
            tci: gate(g.tag0_tci),
            l3: gate(g.l3_claim),
            l4: gate(g.l4_claim),
            ip_ok: g.l3.ne(0u32),
            ipv6: g.l3.eq(2u32),
            l4_parsed: g.l4.ne(0u32),
            ext_bad: g.ext_bad,
            malformed: gate(g.malformed),
        });
        u_meta_q.s_axis.data.set(s4(meta_word, "tun_pending"));
        u_meta_q.s_axis.valid.set(valid4);
        let _ = u_meta_q.s_axis.ready.unused(); // never full: `owed`

        // ---- Data side: a fork to the trim and the outer checksums; the tunnel record and
        // the verdicts onto the trimmed frame's last beat ----
        let u_fork = fork.instance("u_fork");
        connect(&u_data_q.m_axis, &u_fork.s_axis);
        let (to_trim, to_csum) = (&u_fork.m_axis[0], &u_fork.m_axis[1]);
        let u_csum = csum.instance("u_rx_csum");
        u_csum.s_axis.data().set(to_csum.data());
        u_csum.s_axis.keep().set(to_csum.keep());
        u_csum.s_axis.last().set(to_csum.last());
        u_csum.s_axis.valid().set(to_csum.valid());
        to_csum.ready().set(u_csum.s_axis.ready());
        let _ = to_csum.user().expect("rx stream has tuser").unused();
        // Register slices after the LUT-RAM FIFOs, and a forward register after the fork's,
        // so that their reads do not reach the trim's command adder, its lane masks or the
        // checksum unit's request queue (docs/TIMING.md, rule 9); a skid buffer behind the
        // forward register, so that the trim's ready reaches one flop, not the register's
        // enables (rule 1).
        crate::eth::out_slice(&u_csum_q.m_axis, "csum_req").drive(&u_csum.req);
        let u_trim = trim.instance("u_trim");
        let u_trim_reg = trim_reg.instance("u_trim_reg");
        let u_trim_skid = trim_skid.instance("u_trim_skid");
        connect(to_trim, &u_trim_reg.s_axis);
        connect(&u_trim_reg.m_axis, &u_trim_skid.s_axis);
        connect(&u_trim_skid.m_axis, &u_trim.s_axis);
        crate::eth::out_slice(&u_cmd_q.m_axis, "trim_cmd").drive(&u_trim.cmd);
        // Never: a command keeps at least the inner frame's 14 bytes, which lie in the frame
        // (the parser checked), or the whole frame.
        let _ = u_trim.drop.unused();
        let o = &u_trim.m_axis;
        let m = &p.m_axis;
        // A frame's last beat waits for its verdicts (they come a few cycles after the
        // checksum unit took the same beat, which the fork gave it no later than the trim).
        let res = &u_csum.res;
        let res_ok = (!o.last() | res.valid).named("verdicts_here");
        m.data().set(o.data());
        m.keep().set(o.keep());
        m.last().set(o.last());
        m.valid().set(o.valid() & res_ok);
        o.ready().set(m.ready() & res_ok);
        let t = u_meta_q.m_axis.fields();
        let _ = u_meta_q.m_axis.valid.unused(); // pushed before its frame's command
        let c = RxCsumRes::unpack(res.data);
        let verdicts = reported_verdicts(t.l3, t.l4, t.ip_ok, t.ipv6, t.ext_bad, t.l4_parsed, &c);
        let meta = TunMeta::shape(qb)
            .pack(&TunMeta {
                tunnel: t.tunnel,
                bad: t.bad,
                id: t.id,
                flow_id: t.flow_id,
                decap: t.decap,
                steered: t.steered,
                queue: t.queue,
                inner: t.inner,
                inner_off: t.inner_off,
                outer_vlan: t.vlan,
                outer_tci: t.tci,
                outer_l3: t.l3,
                outer_l4: t.l4,
                outer_l3_ok: verdicts.0,
                outer_l4_ok: verdicts.1,
                outer_csum: c.csum,
                outer_malformed: t.malformed,
            })
            .named("tun_meta");
        let ou = o.user().expect("rx stream has tuser");
        m.user()
            .expect("out stream has tuser")
            .set(cat(&[meta & o.last().repl(meta.width()), ou]));
        let pop = (o.valid() & m.ready() & o.last() & res.valid).named("meta_pop");
        u_meta_q.m_axis.ready.set(pop);
        res.ready.set(pop);
        reserve.update(take, pop);
    })
}
