//! `eth_tx`: the TX offload path for plain traffic, host to wire.
//!
//! ```text
//! s_axis (host) -> fork -+-> eth_hdr_parse -> parse_q -------+-> dispatch (with s_axis_cmd) -+-> tx_csum request
//!                        |                                   |                               +-> VLAN-insert command
//!                        +-> delay FIFO -> slice ------------+-> tx_csum -> FIFO -> slice -> stream_insert (802.1Q) -> FIFO -> skid -> reg -> eth_fcs_append -> m_axis (wire)
//! ```
//!
//! Per frame the host gives a command on `s_axis_cmd` (record [`TxCmd`]: the mlx5 `cs_flags`
//! L3/L4 bits and an optional VLAN tag to insert). The parser finds the headers while the frame
//! waits in a delay FIFO (block RAM) that holds a whole frame, since the parse record comes at
//! the frame's last beat; `tx_csum` writes the IPv4 header checksum (for a well-formed IPv4
//! header, when asked) and the TCP/UDP checksum (for a well-formed TCP/UDP header outside a
//! fragment, when asked); the tag goes in after the MAC addresses; frames are padded to 60 bytes
//! and get their FCS. The parser reports the checksum ranges and the addresses' sum, so the
//! dispatch only routes fields.
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
//!   included).
//! - Latency: store-and-forward in `tx_csum`, plus the parse and FCS pipelines.
//! - Throughput: back to back, every frame costs its ideal `ceil((max(len, 60) + 4) / W)` beats
//!   at 64 and 512 bits, at every size from 60 to 9000 bytes (one cycle per 60-byte frame at 512
//!   bits), also with VLAN tags (`len + 4`) (results/PIPELINE.md). This needs a VLAN command
//!   queue as deep as the frames in flight between dispatch and the insert
//!   ([`TxCfg::vlan_cmd_depth`]).
//! - Cost: the blocks above plus their queues and slices; LUT/FF/Fmax of the whole path:
//!   results/AREA-paths.md, row `eth_tx` (per block: results/AREA.md, the `tx` rows).
//! - Golden model: `nicgen_model::tx::tx_frame`; test: `testbench/tests/eth/eth_tx.rs` (also the
//!   back-to-back cycle counts).

use super::eth_fcs_append::{eth_fcs_append, FcsAppendCfg};
use super::eth_hdr_parse::{eth_hdr_parse, HdrParseCfg, CSUM_RECORD};
use super::tx_csum::{latency as csum_latency, tx_csum, TxCsumCfg, TxCsumReq};
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

/// The ports of [`eth_tx()`].
pub struct TxPorts {
    /// Frames from the host, no FCS (`s_axis_*`).
    pub s_axis: Stream,
    /// Frames to the wire, FCS appended (`m_axis_*`).
    pub m_axis: Stream,
    /// One command per frame (`s_axis_cmd_*`).
    pub cmd: RecordStream<TxCmd<u32>>,
}

impl Ports for TxPorts {
    type Cfg = TxCfg;
    fn ports(io: &Io, cfg: &TxCfg) -> Self {
        let s = StreamCfg::new(cfg.data_bits, 0);
        TxPorts {
            s_axis: Stream::sink(io, "s_axis", &s),
            m_axis: Stream::source(io, "m_axis", &s),
            cmd: RecordStream::sink(io, "s_axis_cmd", TxCmd::shape()),
        }
    }
}

/// Depth of the LUT-RAM FIFOs after `tx_csum` and after the VLAN insert: their `!full` ignores
/// the last cycle's read, so 4 entries keep 1 beat/cycle.
const OUT_Q_DEPTH: u32 = 4;

/// Cycles a frame's first beat spends between `tx_csum` and the VLAN insert (the FIFO after
/// `tx_csum` and the register slice behind it).
pub const CSUM_TO_INSERT: u32 = 2;

/// TX path parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TxCfg {
    pub data_bits: u32,
    pub mtu: u32,
    pub window: u32,
    pub levels_per_stage: u32,
}

impl TxCfg {
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
    pub fn vlan_cmd_depth(&self) -> u32 {
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
    Block::build(format!("eth_tx_d{w}"), *cfg, move |p: TxPorts| {
        doc("TX offload path: header parse, IPv4/TCP/UDP checksum insertion, VLAN insert,");
        doc("padding to 60 bytes and FCS.");
        let u_fork = fork.instance("u_fork");
        connect(&p.s_axis, &u_fork.s_axis);
        let u_parse = parse.instance("u_parse");
        connect(&u_fork.m_axis[0], &u_parse.s_axis);
        let u_delay = delay.instance("u_delay");
        connect(&u_fork.m_axis[1], &u_delay.s_axis);

        // Dispatch: a parse record and a host command per frame.
        // The parse record through a register slice (data, valid and ready from flops).
        let parse_q = super::out_slice(&u_parse.views[0], "parse_q");
        let meta_valid = parse_q.valid;
        let meta = u_parse.views[0].shape.unpack(parse_q.data.unused());
        let cmd = p.cmd.fields();
        let cmd_valid = p.cmd.valid;
        let u_req = q_req.instance("u_csum_req_q");
        let u_ins = q_ins.instance("u_vlan_cmd_q");
        // Each queue is written through a register slice beside the dispatch: the two queues
        // sit far apart (the VLAN command queue by the insert), and the dispatch must decide
        // from flops near it, not from both queues' `full`.
        let go_w = wire(1).named("dispatch_go");
        let req_d = wire(TxCsumReq::WIDTH).named("csum_req_in");
        let ins_d = wire(u_ins.s_axis.shape.width()).named("vlan_cmd_in");
        let req_in = record_reg_slice("csum_req_in_q", req_d, go_w);
        let ins_in = record_reg_slice("vlan_cmd_in_q", ins_d, go_w);
        req_in.drive(&u_req.s_axis);
        ins_in.drive(&u_ins.s_axis);
        let ready = (req_in.s_ready & ins_in.s_ready).named("dispatch_ready");
        let go = (meta_valid & cmd_valid & ready).named("dispatch");
        go_w.set(go);
        parse_q.ready.set(cmd_valid & ready);
        p.cmd.ready.set(meta_valid & ready);
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
        stream_reg_slice("ins_reg", &u_csum_q.m_axis).drive(&u_vlan.s_axis);
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
