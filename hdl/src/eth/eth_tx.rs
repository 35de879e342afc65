//! `eth_tx`: the TX offload path, host to wire.
//!
//! ```text
//! s_axis + s_axis_cmd -> [tx_lso] -> fork -+-> eth_hdr_parse -> parse_q ---+-> dispatch (with the frame's command) -+-> tx_csum request
//!                                          |                              |                                        +-> [encapsulation command]
//!                                          |                              |                                        +-> VLAN-insert command
//!                                          +-> delay FIFO -> slice -------+-> tx_csum -> FIFO -> slice -> [tx_encap] -> stream_insert (802.1Q) -> FIFO -> skid -> reg -> eth_fcs_append -> m_axis (wire)
//! ```
//!
//! Per frame the host gives a command on `s_axis_cmd` (record [`TxCmd`]: the mlx5 `cs_flags`
//! L3/L4 bits, an optional VLAN tag to insert, an encapsulation context and an LSO request).
//!
//! - **Segmentation** ([`mod@crate::overlay::tx_lso`], built when `max_mss` is not 0): an LSO send
//!   leaves as its segments, each a complete frame with every checksum written
//!   ([`mod@crate::overlay::tx_tso`]); other frames go around the engine; each frame (segment)
//!   then has a [`FrameCmd`], the command without the LSO request (a segment's checksum flags
//!   cleared). Refused sends are dropped and counted (`stat_lso_bad`), and so is an aborted
//!   send's last segment: `s_axis_tuser` (1 bit) on an LSO send's last beat aborts it (the send
//!   engine met a DMA error after the send's first bytes had left): its whole segments have
//!   gone out, the partial one is dropped ([`crate::overlay::tx_tso::USER_IN_ABORT`]). Without
//!   the segmentation stage the bit is not looked at (no send is longer than a frame then).
//! - **Checksums**: the parser finds the headers while the frame waits in a delay FIFO (block
//!   RAM) that holds a whole frame, since the parse record comes at the frame's last beat;
//!   `tx_csum` writes the IPv4 header checksum (for a well-formed IPv4 header, when asked) and
//!   the TCP/UDP checksum (for a well-formed TCP/UDP header outside a fragment, when asked).
//!   The parser reports the checksum ranges and the addresses' sum, so the dispatch only routes
//!   fields.
//! - **Encapsulation** ([`mod@crate::overlay::tx_encap`], built when `encap_contexts` is not 0):
//!   after the checksums, so that they are the inner frame's, and before the VLAN insert, so
//!   that the tag is the outer frame's. A frame the engine drops (shorter than an Ethernet
//!   header, counted on `stat_encap_drop`) is known at dispatch from the parse record, and gets
//!   no VLAN command, so the insert's commands stay in step with its frames.
//! - Then the tag goes in after the MAC addresses; frames are padded to 60 bytes and get their
//!   FCS.
//!
//! The small LUT-RAM FIFOs after `tx_csum` and after the VLAN insert give each block a ready
//! that is a flop of the FIFO's own, so no block's ready reaches the registers of the block
//! before it within a cycle; a register after each gives the next block its beats from flops
//! (before the insert a register slice, before the FCS append a forward register behind a skid
//! buffer). Register slices sit on the parse record (`parse_q`), on both queue inputs beside the
//! dispatch (`csum_req_in_q`, `vlan_cmd_in_q`) and on both queue outputs (`csum_req`,
//! `vlan_cmd`), and after the delay FIFO (docs/TIMING.md, rules 1 and 2).
//!
//! - Ports ([`TxPorts`]): `s_axis_*`, `s_axis_cmd_tdata/_tvalid/_tready`, `m_axis_*` (wire, FCS
//!   included), `cfg_encap_*` (context writes, with the engine), `stat_lso_bad`,
//!   `stat_encap_drop` ([`TxStats`]).
//! - Latency: store-and-forward in `tx_csum` (and in `tx_encap`, and per segment in `tx_tso`),
//!   plus the parse and FCS pipelines.
//! - Throughput: back to back, every frame costs its ideal `ceil((max(len, 60) + 4) / W)` beats
//!   at 64 and 512 bits, at every size from 60 to 9000 bytes (one cycle per 60-byte frame at 512
//!   bits), also with VLAN tags (`len + 4`) (results/PIPELINE.md). This needs a VLAN command
//!   queue as deep as the frames in flight between dispatch and the insert
//!   ([`TxCfg::vlan_cmd_depth`]). With the segmentation and encapsulation stages built (every
//!   built-in preset) the same holds for frames that are neither segmented nor encapsulated;
//!   encapsulated frames cost their outer headers' beats; LSO sends their segments'
//!   (results/PIPELINE.md).
//! - Cost: the blocks above plus their queues and slices; LUT/FF/Fmax of the whole path:
//!   results/AREA-paths.md, row `eth_tx` (per block: results/AREA.md, the `tx` rows).
//! - Golden model: `nicgen_model::tx::tx_frames` (`tx_frame` without segmentation and
//!   encapsulation); test: `testbench/tests/eth/eth_tx.rs` (also the back-to-back cycle
//!   counts).

use super::eth_fcs_append::{eth_fcs_append, FcsAppendCfg};
use super::eth_hdr_parse::{eth_hdr_parse, HdrParseCfg, CSUM_RECORD};
use super::tx_csum::{latency as csum_latency, tx_csum, TxCsumCfg, TxCsumReq};
use crate::overlay::tx_encap::{tx_encap, EncapCfg, EncapCmd, EncapWrite};
use crate::overlay::tx_lso::{tx_lso, LsoCfg};
use crate::stream::stream_fifo::{stream_fifo, stream_fifo_in, FifoRam};
use crate::stream::stream_insert::{stream_insert, InsertCfg};
use crate::stream::{
    record_fifo, record_reg_slice, stream_fork, stream_fwd_reg, stream_reg_slice, stream_skid,
    FifoCfg, OutStage, SpliceCmd, Stream, StreamCfg,
};
use nicgen_edsl::prelude::*;

nicgen_edsl::record! {
    /// The per-frame command from the host (`s_axis_cmd`): the mlx5 send WQE's offload requests.
    pub struct TxCmd {
        /// Write the IPv4 header checksum (mlx5 `cs_flags` L3).
        csum_l3: 1,
        /// Write the TCP/UDP checksum (mlx5 `cs_flags` L4).
        csum_l4: 1,
        /// Insert an 802.1Q tag after the MAC addresses (of the outer frame when encapsulated).
        vlan: 1,
        /// The inserted tag's TCI.
        vlan_tci: 16,
        /// Encapsulate the frame (every segment of it) with encapsulation context `encap_ctx`
        /// (`crate::overlay::tx_encap`).
        encap: 1,
        encap_ctx: 8,
        /// Segment the frame (mlx5 LSO): a packed `crate::overlay::tx_tso::TsoCmd`, the send's
        /// `mss` and the header offsets (the WQE's software-parser offsets); `lso = 0` asks for
        /// none. With `lso` the TSO engine writes every checksum of each segment, and
        /// `csum_l3`/`csum_l4` are ignored.
        tso: crate::overlay::tx_tso::TsoCmd::WIDTH,
    }
}

nicgen_edsl::record! {
    /// What the TX path does to one frame past segmentation (each segment of an LSO send):
    /// [`TxCmd`] without `tso`.
    pub struct FrameCmd {
        csum_l3: 1,
        csum_l4: 1,
        vlan: 1,
        vlan_tci: 16,
        encap: 1,
        encap_ctx: 8,
    }
}

impl FrameCmd<Sig> {
    /// The frame part of `c`; with `no_csum` the checksum requests cleared (the TSO engine
    /// writes a segment's checksums).
    pub fn of(c: &TxCmd<Sig>, no_csum: Sig) -> Self {
        FrameCmd {
            csum_l3: c.csum_l3 & !no_csum,
            csum_l4: c.csum_l4 & !no_csum,
            vlan: c.vlan,
            vlan_tci: c.vlan_tci,
            encap: c.encap,
            encap_ctx: c.encap_ctx,
        }
    }
}

/// The ports of [`eth_tx()`].
pub struct TxPorts {
    /// Frames from the host, no FCS (`s_axis_*`; `tuser`: an LSO send aborted, on its last
    /// beat).
    pub s_axis: Stream,
    /// Frames to the wire, FCS appended (`m_axis_*`).
    pub m_axis: Stream,
    /// One command per frame (`s_axis_cmd_*`).
    pub cmd: RecordStream<TxCmd<u32>>,
    /// Encapsulation context writes (`cfg_encap_*`), when the encapsulation engine is built.
    pub encap_cfg: Option<EncapWrite>,
    /// Drop pulses (`stat_*`).
    pub stats: TxStats,
}

nicgen_edsl::record! {
    /// The TX path's drop pulses (`stat_lso_bad`, `stat_encap_drop`), each at most one a cycle;
    /// 0 where the engine is not built.
    pub struct TxStats {
        /// An LSO send refused and dropped whole (`crate::overlay::tx_lso`).
        lso_bad: 1,
        /// A frame to encapsulate shorter than an Ethernet header, dropped
        /// (`crate::overlay::tx_encap`).
        encap_drop: 1,
    }
}

impl Ports for TxPorts {
    type Cfg = TxCfg;
    fn ports(io: &Io, cfg: &TxCfg) -> Self {
        let s = StreamCfg::new(cfg.data_bits, 0);
        TxPorts {
            s_axis: Stream::sink(io, "s_axis", &StreamCfg::new(cfg.data_bits, 1)),
            m_axis: Stream::source(io, "m_axis", &s),
            cmd: RecordStream::sink(io, "s_axis_cmd", TxCmd::shape()),
            encap_cfg: (cfg.encap_contexts > 0)
                .then(|| io.inputs("cfg_encap_", &cfg.encap().write())),
            stats: io.outputs("stat_", &TxStats::shape()),
        }
    }
}

/// Depth of the LUT-RAM FIFOs after `tx_csum` and after the VLAN insert: their `!full` ignores
/// the last cycle's read, so 4 entries keep 1 beat/cycle.
const OUT_Q_DEPTH: u32 = 4;

/// Cycles a frame's first beat spends between `tx_csum` and the VLAN insert (the FIFO after
/// `tx_csum` and the register slice behind it).
pub const CSUM_TO_INSERT: u32 = 2;

/// Cycles from a one-beat frame's beat entering the encapsulation engine to its first beat
/// out, rounded up (`tx_encap`'s `back_to_back_cycles` measures 41 at 512 bits, 48 at 64).
pub const ENCAP_LATENCY: u32 = 48;

/// TX path parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TxCfg {
    pub data_bits: u32,
    pub mtu: u32,
    pub window: u32,
    pub levels_per_stage: u32,
    /// Largest LSO `mss`; 0 builds no segmentation stage (`crate::overlay::tx_lso`).
    pub max_mss: u32,
    /// Encapsulation contexts; 0 builds no encapsulation engine (`crate::overlay::tx_encap`).
    pub encap_contexts: u32,
}

impl TxCfg {
    /// The longest frame the path carries, bytes without FCS: an MTU-sized payload behind an
    /// Ethernet header with two VLAN tags. LSO segments are held to it.
    pub fn max_frame(&self) -> u32 {
        self.mtu + 22
    }
    /// The segmentation stage's parameters.
    pub fn lso(&self) -> LsoCfg {
        LsoCfg {
            data_bits: self.data_bits,
            max_mss: self.max_mss,
            max_frame: self.max_frame(),
        }
    }
    /// The encapsulation engine's parameters.
    pub fn encap(&self) -> EncapCfg {
        EncapCfg {
            data_bits: self.data_bits,
            contexts: self.encap_contexts,
            max_frame: self.max_frame(),
            window: self.window,
        }
    }
    /// Frames the checksum buffer holds at once: two of the largest.
    pub fn buffer_beats(&self) -> u32 {
        let w = self.data_bits / 8;
        // At most 16384 beats (one jumbo frame at 8 bits); two frames wherever that allows.
        (2 * (self.mtu + 22).div_ceil(w) + 2)
            .next_power_of_two()
            .min(16384)
    }
    /// Beats the delay FIFO holds while the parser works: a whole frame, because the parser
    /// emits its record at the frame's last beat (its length checks need the length).
    pub fn delay_beats(&self) -> u32 {
        self.buffer_beats()
    }
    /// The checksum unit's parameters.
    pub fn csum(&self) -> TxCsumCfg {
        TxCsumCfg {
            data_bits: self.data_bits,
            levels_per_stage: self.levels_per_stage,
            buffer_beats: self.buffer_beats(),
        }
    }
    /// Entries of the VLAN command queue. A command waits there from dispatch until its frame's
    /// first beat reaches the insert: 2 cycles until the frame's first beat enters `tx_csum`
    /// (request queue, request register), its beats, `tx_csum`'s latency, [`CSUM_TO_INSERT`],
    /// and 1 cycle to free the entry: `latency + 5` cycles for a one-beat frame. One-beat frames (60 bytes at 512
    /// bits) are dispatched one per cycle, so the queue needs an entry per cycle of that wait
    /// (11 at 512 bits) or dispatch throttles the whole path: 4 entries cost 2.58 cycles per
    /// 60-byte frame instead of 1. Longer frames need fewer entries. (The request queue needs
    /// no such depth: a frame already waits in the delay FIFO when its request comes, since the
    /// parse record follows the frame's last beat, so `tx_csum` takes the request at once.)
    ///
    /// With the encapsulation engine between `tx_csum` and the insert, a command also waits
    /// out the engine's latency ([`ENCAP_LATENCY`]).
    pub fn vlan_cmd_depth(&self) -> u32 {
        let encap = if self.encap_contexts > 0 {
            ENCAP_LATENCY
        } else {
            0
        };
        (csum_latency(&self.csum()) + 3 + CSUM_TO_INSERT + encap).next_power_of_two()
    }
    /// Entries of the encapsulation command queue: a command waits there from dispatch until
    /// its frame's first beat reaches the engine, as a VLAN command waits for the insert
    /// without the engine.
    pub fn encap_cmd_depth(&self) -> u32 {
        (csum_latency(&self.csum()) + 3 + CSUM_TO_INSERT).next_power_of_two()
    }
}

pub fn eth_tx(cfg: &TxCfg) -> Result<Block<TxPorts>, ElabError> {
    let w = cfg.data_bits;
    let scfg = StreamCfg::new(w, 0);
    let fork = stream_fork(&scfg, &["parse", "data"])?;
    let parse = eth_hdr_parse(&HdrParseCfg {
        data_bits: w,
        user_bits: 0,
        window: cfg.window,
        fifo_depth: 32,
        views: CSUM_RECORD,
        tunnels: false,
    })?;
    let delay = stream_fifo_in(
        &FifoCfg {
            stream: scfg,
            depth: cfg.delay_beats(),
            frame_mode: false,
        },
        FifoRam::Block,
    )?;
    let csum = tx_csum(&cfg.csum())?;
    // An output register: the lanes load straight into it; a register slice would put a 2:1
    // mux per output bit behind the lane muxes, and the insert's take is short here.
    let ins = stream_insert(&InsertCfg {
        stream: scfg,
        off: 12,
        n: 4,
        out: OutStage::Register,
    })?;
    let fcs = eth_fcs_append(&FcsAppendCfg { data_bits: w })?;
    let out_q = stream_fifo(&FifoCfg::new(scfg, OUT_Q_DEPTH))?;
    let skid = stream_skid(&scfg)?;
    let fwd = stream_fwd_reg(&scfg)?;
    let q_req = record_fifo(TxCsumReq::shape(), 4)?;
    let q_ins = record_fifo(SpliceCmd::shape(4), cfg.vlan_cmd_depth())?;
    let lso = (cfg.max_mss > 0).then(|| tx_lso(&cfg.lso())).transpose()?;
    let enc = (cfg.encap_contexts > 0)
        .then(|| -> Result<_, ElabError> {
            Ok((
                tx_encap(&cfg.encap())?,
                record_fifo(cfg.encap().cmd(), cfg.encap_cmd_depth())?,
            ))
        })
        .transpose()?;
    let max_frame = cfg.max_frame();
    Block::build(format!("eth_tx_d{w}"), *cfg, move |p: TxPorts| {
        doc("TX offload path: header parse, IPv4/TCP/UDP checksum insertion, VLAN insert,");
        doc("padding to 60 bytes and FCS.");
        // Segmentation (when built): the frames the rest of the path sees, one command each.
        let u_lso = lso.as_ref().map(|l| l.instance("u_lso"));
        let u_fork = fork.instance("u_fork");
        let (cmd, cmd_valid, cmd_ready) = match &u_lso {
            Some(u) => {
                connect(&p.s_axis, &u.s_axis);
                connect(&u.m_axis, &u_fork.s_axis);
                connect(&p.cmd, &u.cmd);
                u.long.unused(); // a send over 256 KiB is segmented all the same
                (FrameCmd::unpack(u.m_cmd.data), u.m_cmd.valid, u.m_cmd.ready)
            }
            None => {
                let c = TxCmd::unpack(p.cmd.data);
                c.tso.unused(); // no segmentation stage: LSO requests are not honoured
                let f = &u_fork.s_axis;
                f.set_beat(&p.s_axis.beat());
                if let Some(u) = p.s_axis.user() {
                    u.unused(); // no send is aborted: none is longer than a frame
                }
                f.valid().set(p.s_axis.valid());
                p.s_axis.ready().set(f.ready());
                (FrameCmd::of(&c, lit(1, 0u32)), p.cmd.valid, p.cmd.ready)
            }
        };
        p.stats
            .lso_bad
            .set(u_lso.as_ref().map_or(lit(1, 0u32), |u| u.bad));
        let u_parse = parse.instance("u_parse");
        connect(&u_fork.m_axis[0], &u_parse.s_axis);
        let u_delay = delay.instance("u_delay");
        connect(&u_fork.m_axis[1], &u_delay.s_axis);

        // Dispatch: a parse record and a host command per frame.
        // The parse record through a register slice (data, valid and ready from flops).
        let parse_q = super::out_slice(&u_parse.views[0], "parse_q");
        let meta_valid = parse_q.valid;
        let meta = u_parse.views[0].shape.unpack(parse_q.data.unused());
        let u_req = q_req.instance("u_csum_req_q");
        let u_ins = q_ins.instance("u_vlan_cmd_q");
        // Each queue is written through a register slice beside the dispatch: the two queues
        // sit far apart (the VLAN command queue by the insert), and the dispatch must decide
        // from flops near it, not from both queues' `full`.
        let go_w = wire(1).named("dispatch_go");
        let req_d = wire(TxCsumReq::WIDTH).named("csum_req_in");
        let ins_d = wire(u_ins.s_axis.shape.width()).named("vlan_cmd_in");
        let req_in = record_reg_slice("csum_req_in_q", req_d, go_w);
        req_in.drive(&u_req.s_axis);
        // The encapsulation command queue, likewise (when built).
        let u_enc = enc.as_ref().map(|(e, q)| {
            (
                e.instance("u_tx_encap"),
                q.instance("u_encap_cmd_q"),
                wire(cfg.encap().cmd().width()).named("encap_cmd_in"),
            )
        });
        let enc_in = u_enc.as_ref().map(|(_, q, d)| {
            let s = record_reg_slice("encap_cmd_in_q", *d, go_w);
            s.drive(&q.s_axis);
            s
        });
        // A frame the engine drops (too short to encapsulate, or longer than the path's
        // longest) never reaches the insert: it gets no VLAN command.
        let enc_drop = match &u_enc {
            Some(_) => ((cmd.encap & meta.frame_len.lt(14u32)) | meta.frame_len.gt(max_frame))
                .named("encap_drops_frame"),
            None => lit(1, 0u32),
        };
        let ins_valid = wire(1).named("vlan_cmd_push");
        let ins_in = record_reg_slice("vlan_cmd_in_q", ins_d, ins_valid);
        ins_in.drive(&u_ins.s_axis);
        let enc_ready = enc_in.as_ref().map_or(lit(1, 1u32), |s| s.s_ready);
        let ready = (req_in.s_ready & ins_in.s_ready & enc_ready).named("dispatch_ready");
        let go = (meta_valid & cmd_valid & ready).named("dispatch");
        go_w.set(go);
        ins_valid.set(go & !enc_drop);
        parse_q.ready.set(cmd_valid & ready);
        cmd_ready.set(meta_valid & ready);
        if let Some((_, q, d)) = &u_enc {
            d.set(q.s_axis.shape.pack(&EncapCmd {
                en: cmd.encap,
                // Contexts past the engine's map onto its own (the send engine refuses them).
                ctx: cmd.encap_ctx.unused().resize(cfg.encap().ctx_bits()),
            }));
        } else {
            cmd.encap.unused();
            cmd.encap_ctx.unused();
        }
        // The parser reports the checksum ranges (clipped to the frame when a header is cut)
        // and sets `l4` only for a TCP/UDP header that passed every check outside a fragment,
        // so the request is routed from the record, not derived.
        let l4_ok = meta.l4.ne(0u32).named("l4_ok");
        req_d.set(
            TxCsumReq {
                l3: meta.l3,
                l4: meta.l4,
                l3_off: meta.csum_l3_off,
                l4_off: meta.csum_l4_off,
                end: meta.csum_end,
                l4_len: meta.l4_len,
                proto: meta.ip_proto,
                ip_sum: meta.ip_sum,
                do_l3: cmd.csum_l3,
                do_l4: cmd.csum_l4 & l4_ok,
            }
            .pack(),
        );
        let tci = cmd.vlan_tci;
        // The tag on the wire: 0x81 0x00 TCI (big-endian).
        ins_d.set(u_ins.s_axis.shape.pack(&SpliceCmd {
            en: cmd.vlan,
            bytes: cat(&[
                tci.slice(7, 0),
                tci.slice(15, 8),
                lit(8, 0x00u32),
                lit(8, 0x81u32),
            ]),
        }));

        let u_csum = csum.instance("u_tx_csum");
        // A register slice between the delay FIFO and tx_csum: tx_csum's beats come from flops
        // (the route from the RAM column is long on its own), and its ready (its request and
        // room) stops at the slice's flops, not in the FIFO's read logic and the block RAMs'
        // read enables behind it (docs/TIMING.md, rule 2).
        stream_reg_slice("csum_in", &u_delay.m_axis).drive(&u_csum.s_axis);
        // The request through a register slice: tx_csum starts adding on it at once.
        super::slice_into(&u_req.m_axis, &u_csum.req, "csum_req");
        // The ready of each block must not reach the registers of the one before it in the
        // same cycle. Between tx_csum and the insert, and between the insert and the FCS
        // append, a small LUT-RAM FIFO and a register: each block's `m_axis_tready` is the
        // FIFO's `!full`, a flop that the reader's ready never reaches (it steps only the read
        // pointer), so a block's output side decides from a flop of its own; and the next
        // block's first-beat decision and lane muxes start at the register's flops
        // (docs/TIMING.md, rules 1 and 2).
        let u_csum_q = out_q.instance("u_csum_q");
        connect(&u_csum.m_axis, &u_csum_q.s_axis);
        // Then a register slice: the insert's ready (a few LUTs of its first-beat state) stops
        // at the slice's flops, not in the FIFO's read logic, and the insert's inputs are flops
        // (a forward register with a skid buffer behind it fed the insert through the skid's
        // output mux, a LUT in front of its first-beat decodes).
        let u_vlan = ins.instance("u_vlan_insert");
        match &u_enc {
            Some((e, q, _)) => {
                // The encapsulation engine between tx_csum and the insert: the inner
                // checksums are done, and the outer frame is the one tagged. Its input through
                // a register slice (its ready is its input slice's and queues' flops), its
                // output from its last insert's register slice.
                stream_reg_slice("encap_in", &u_csum_q.m_axis).drive(&e.s_axis);
                super::slice_into(&q.m_axis, &e.cmd, "encap_cmd");
                connect(&e.m_axis, &u_vlan.s_axis);
                connect(p.encap_cfg.as_ref().expect("encap cfg port"), &e.cfg);
                p.stats
                    .encap_drop
                    .set(e.stats.drop_short | e.stats.drop_oversize);
            }
            None => {
                stream_reg_slice("ins_reg", &u_csum_q.m_axis).drive(&u_vlan.s_axis);
                p.stats.encap_drop.set(lit(1, 0u32));
            }
        }
        // The command through a register slice: the insert decides on it at the first beat.
        super::slice_into(&u_ins.m_axis, &u_vlan.cmd, "vlan_cmd");
        let u_fcs = fcs.instance("u_fcs_append");
        let u_vlan_q = out_q.instance("u_vlan_q");
        connect(&u_vlan.m_axis, &u_vlan_q.s_axis);
        // The FCS append's padding and CRC start from flops, not from the FIFO's LUT-RAM read;
        // a skid buffer in front of that register stops the append's ready (its advance, 573
        // loads) at the register's enables, short of the FIFO's read and count logic.
        let u_vlan_skid = skid.instance("u_vlan_skid");
        connect(&u_vlan_q.m_axis, &u_vlan_skid.s_axis);
        let u_vlan_reg = fwd.instance("u_vlan_reg");
        connect(&u_vlan_skid.m_axis, &u_vlan_reg.s_axis);
        connect(&u_vlan_reg.m_axis, &u_fcs.s_axis);
        connect(&u_fcs.m_axis, &p.m_axis);
    })
}
