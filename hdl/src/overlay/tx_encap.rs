//! `tx_encap`: VXLAN / NVGRE encapsulation on transmit. Each frame whose command says `en`
//! leaves with the outer headers of its context in front (outer Ethernet, IPv4 or IPv6, UDP and
//! VXLAN, or GRE), lengths, outer IPv4 header checksum, outer UDP source port and checksum
//! filled; a frame with `en = 0` passes unchanged. It sits in the TX path after the checksum
//! insertion (the inner checksums are done) and before the VLAN insert and FCS (the outer VLAN
//! tag is the VLAN insert's).
//!
//! Outer headers built (offsets from the start of the output frame):
//!
//! | Header | Offset | Bytes | Fields |
//! |---|---|---|---|
//! | Ethernet | 0 | 14 | context MACs, EtherType 0x0800 / 0x86DD |
//! | IPv4 | 14 | 20 | `45`, TOS, total length, ID (the context's counter), DF, TTL, protocol 17 / 47, header checksum, addresses |
//! | IPv6 | 14 | 40 | version 6, traffic class, flow label, payload length, next header 17 / 47, hop limit, addresses |
//! | UDP (VXLAN) | 34 / 54 | 8 | source port `0xC000 \| (h & 0x3FFF)`, destination port, length, checksum |
//! | VXLAN | 42 / 62 | 8 | `08 00 00 00`, VNI, `00` |
//! | GRE (NVGRE) | 34 / 54 | 8 | `20 00 65 58`, VSID, FlowID |
//!
//! `h` is the Toeplitz hash (Microsoft key) of the inner flow: the addresses and ports of a
//! well-formed, unfragmented TCP or UDP packet, the addresses of other IP, the 12 MAC bytes of
//! a frame that is not IP. The outer UDP checksum is 0 over IPv4 unless the context asks for it,
//! and always computed over IPv6 (0 computed is sent as 0xFFFF). The IPv4 ID is a counter per
//! context that steps with every frame the context encapsulates (IPv6 ones too, where it is not
//! sent), so the segments of one TSO send get consecutive IDs.
//!
//! The model (`nicgen_model::encap::udp_source_port`) parses the whole inner frame; the parser
//! here reads its first `window` bytes, so the two agree when the inner headers lie within
//! them (128 bytes hold Ethernet with two tags, IPv4 with options or IPv6 with a short
//! extension header chain, and TCP).
//!
//! **Store and forward**, because the outer headers come first and hold what only the whole
//! inner frame tells: its length (IP and UDP lengths, the IPv4 header checksum) and the sum of
//! all its bytes (the outer UDP checksum). The frame waits in a block-RAM frame FIFO while its
//! length, sum and flow hash are found beside it.
//!
//! **Drops** (each counted, so that delivered + dropped = offered): a frame longer than
//! `max_frame` bytes, whatever its command (it may not fit the FIFO; `stat_drop_oversize`),
//! and a frame to encapsulate that is shorter than an Ethernet header, 14 bytes
//! (`stat_drop_short`). `max_frame` is at most 65499, so every frame that fits also fits an
//! outer IP datagram (65535 bytes with 36 bytes of outer IPv4, UDP and VXLAN headers): the
//! model's "exceeds the outer IP length field" cannot occur for a frame this block keeps.
//!
//! ## Contexts (`cfg_we`, `cfg_addr`, `cfg_wdata[31:0]`; write-only, one word a cycle)
//! `cfg_addr = context · 16 + word`. A write to any word of a context also restarts its IPv4 ID
//! counter at 0 (as does reset). Write a context while none of its frames is in flight.
//!
//! | word | bits | field |
//! |---|---|---|
//! | 0 | 31:0 | outer destination MAC bytes 0..3 (byte 0 in 31:24) |
//! | 1 | 31:16, 15:0 | destination MAC bytes 4..5; source MAC bytes 0..1 |
//! | 2 | 31:0 | source MAC bytes 2..5 |
//! | 3 | 7:0, 15:8, 16, 17, 18, 19 | TTL / hop limit; TOS / traffic class; IPv6; NVGRE (else VXLAN); outer UDP checksum over IPv4; DF |
//! | 4 | 23:0, 31:24 | VNI / VSID; NVGRE FlowID |
//! | 5 | 15:0 | VXLAN UDP destination port |
//! | 6 | 19:0 | IPv6 flow label |
//! | 8..11 | 31:0 | source address, a 128-bit big-endian integer (word 8 = bytes 0..3); IPv4 in word 11 |
//! | 12..15 | 31:0 | destination address, likewise; IPv4 in word 15 |
//!
//! Word 7 and the unlisted bits are ignored (an IPv4 context's words 8..10 and 12..14 too).
//!
//! - Ports ([`EncapPorts`]): `s_axis_*` (inner frames, no FCS), `s_axis_cmd_*` ([`EncapCmd`]:
//!   one per frame, in frame order, through a register slice: up to two taken ahead, a frame's
//!   first beat waits for its command's), `m_axis_*`, `cfg_*` ([`EncapWrite`]),
//!   `stat_drop_oversize`, `stat_drop_short` ([`EncapDrops`]: a pulse per dropped frame).
//! - Internals: the input is taken while the per-frame side queues have room
//!   ([`crate::timing::Reserve`]) and forked to (1) the frame FIFO
//!   ([`crate::stream::stream_fifo_in`], block RAM, frame mode: a frame to drop is marked bad on
//!   its last beat, and the FIFO discards it) and (2) the header parser
//!   ([`crate::eth::eth_hdr_parse`], a view of the flow fields). At the input the block counts
//!   the frame's bytes, keeps its first 12 bytes (the MACs) and sums it
//!   ([`mod@crate::csum::frame_sum`]), into two record FIFOs. Per frame, the parser's record and
//!   the side records are joined into a request to [`crate::rss::rss_toeplitz`] (the key at
//!   its reset value, every hash type enabled; a non-IP frame is asked as IPv6 with the MACs as
//!   source address, which hashes exactly those 12 bytes), whose tag carries the frame's
//!   command, length, sum and drop flags. The header pipeline (never stalls: a
//!   [`crate::timing::Reserve`] on the command queues) takes each result through a register
//!   slice: H0 reads and steps the context's ID counter (LUT RAM, with a valid flop per
//!   context for the restart) and starts the context read (one memory per word with a
//!   registered read: block RAM for many contexts), H1 is the registered read, H2 its
//!   register (docs/TIMING.md, rule 7), where the lengths and partial sums start; H3 adds
//!   them and folds once, H4 folds again and writes the commands of three byte inserts
//!   ([`crate::stream::stream_insert()`]) in series behind the frame FIFO: A inserts 42 bytes at
//!   offset 0 (Ethernet, the first 20 bytes of the IP header, the tunnel header), B the 8-byte
//!   UDP header at 34 (VXLAN only), C the last 20 bytes of an IPv6 header at 34 (IPv6 only).
//!   Constant offsets and lengths keep each insert a 2- to 4-input mux per lane. A and B have
//!   output registers, C a register slice, so `m_axis_tready` stops at C's slice.
//! - Latency: a frame leaves once it is whole in the FIFO and its header commands are queued:
//!   the parser's record (23 cycles after the beat that closes its window, or 7 after the last
//!   beat), the join, the hash (8), the header pipeline (6) and the inserts. Measured
//!   (`back_to_back_cycles`): the first output beat 41 cycles after a one-beat frame's beat, 24
//!   cycles after a 1500-byte frame's last beat.
//! - Throughput: 1 beat/cycle in and out; an encapsulated frame takes
//!   `ceil((len + outer) / W)` output cycles, the inserts' stall cycles being the outer
//!   headers' extra beats. The FIFO holds two longest frames (one jumbo frame at 8 bits), so
//!   one frame streams out while the next comes in. Measured (`back_to_back_cycles`, sink always ready): the output
//!   carries a beat in every cycle for back-to-back inner frames of 64 and of 1500 bytes at 64
//!   and 512 bits (e.g. 200 frames of 64 bytes at 512 bits: 500 output beats in 500 cycles),
//!   and frames passed unchanged (`en = 0`) take one cycle each at 512 bits (200 of 60 bytes in
//!   200 cycles): the side and command queues ([`crate::timing::Reserve`] credits) are 32 deep, more than a
//!   one-beat frame's cycles from input to header commands.
//! - Cost: the frame FIFO (`2 · max_frame` bytes of block RAM, rounded up to a power of two
//!   of beats), the parser with its window, the Toeplitz trees of `rss_toeplitz` (the bulk of
//!   the logic), 15 context memories of `contexts` words (up to 32 bits each), the ID LUT RAM,
//!   three inserts and their command FIFOs (32 entries of 337, 65 and 161 bits); in the TX
//!   path ([`crate::eth::eth_tx`]) between the checksum insertion and the VLAN insert.
//! - Golden model: `nicgen_model::encap::encap`; test: `testbench/tests/overlay/tx_encap.rs`.

use crate::csum::{frame_sum, SumIn};
use crate::eth::eth_hdr_parse::{eth_hdr_parse, HdrParseCfg, View};
use crate::rss::rss_toeplitz::{l3 as rss_l3, rss_toeplitz, RssCfg, RssReq};
use crate::stream::stream_fifo::FIFO_MAX_DEPTH;
use crate::stream::{
    record_fifo, record_reg_slice, record_reg_slice_ctl, stream_fifo_in, stream_fork,
    stream_insert, FifoCfg, FifoRam, InsertCfg, OutStage, SpliceCmd, Stream, StreamCfg,
};
use crate::timing::{stage, Reserve};
use nicgen_edsl::prelude::*;

/// The configuration words of a context ([`EncapWrite`]; the module docs' table).
pub mod ctx_word {
    /// Outer destination MAC bytes 0..3.
    pub const DST_MAC_HI: u32 = 0;
    /// Destination MAC bytes 4..5 (31:16), source MAC bytes 0..1 (15:0).
    pub const MACS_MID: u32 = 1;
    /// Source MAC bytes 2..5.
    pub const SRC_MAC_LO: u32 = 2;
    /// TTL / hop limit, TOS / traffic class, flags ([`super::ctx_flag`]).
    pub const IP: u32 = 3;
    /// VNI / VSID (23:0), FlowID (31:24).
    pub const TUNNEL: u32 = 4;
    /// UDP destination port (15:0).
    pub const UDP_PORT: u32 = 5;
    /// IPv6 flow label (19:0).
    pub const FLOW_LABEL: u32 = 6;
    /// Source address words 8..11, destination address words 12..15.
    pub const SRC_ADDR: u32 = 8;
    pub const DST_ADDR: u32 = 12;
    /// Words per context (the low bits of `cfg_addr`).
    pub const WORDS: u32 = 16;
}

/// The flag bits of word [`ctx_word::IP`].
pub mod ctx_flag {
    pub const IPV6: u32 = 1 << 16;
    pub const NVGRE: u32 = 1 << 17;
    pub const UDP_CHECKSUM: u32 = 1 << 18;
    pub const DF: u32 = 1 << 19;
}

/// The bytes A inserts at offset 0: Ethernet, the IP header's first 20, the tunnel header.
const A_BYTES: u32 = 42;
/// The UDP header (B) and the rest of an IPv6 header (C), both inserted at offset 34.
const B_BYTES: u32 = 8;
const C_BYTES: u32 = 20;
const BC_OFF: u32 = 34;
/// Entries of each insert's command queue (and so the header pipeline's reservation).
const CMD_DEPTH: u32 = 32;
/// Entries of each per-frame side queue at the input.
const SIDE_DEPTH: u32 = 32;
/// Largest `max_frame`: an inner frame that fits also fits the outer IPv4 datagram with
/// VXLAN (65535 - 20 - 8 - 8).
pub const MAX_FRAME_LIMIT: u32 = 65499;

/// Encapsulation parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EncapCfg {
    /// Bus width: 8 or a multiple of 16 bits.
    pub data_bits: u32,
    /// Encapsulation contexts: a power of two, 2..=1024.
    pub contexts: u32,
    /// Longest inner frame kept, in bytes (longer ones are dropped): 64..=[`MAX_FRAME_LIMIT`].
    pub max_frame: u32,
    /// The header parser's window (see `eth_hdr_parse`): the inner headers the flow hash reads
    /// must lie in the first `window` bytes.
    pub window: u32,
}

impl EncapCfg {
    /// Bits of a context number.
    pub fn ctx_bits(&self) -> u32 {
        clog2(self.contexts as u64).max(1)
    }
    /// The command's shape.
    pub fn cmd(&self) -> EncapCmd<u32> {
        EncapCmd::shape(self.ctx_bits())
    }
    /// The configuration port's shape.
    pub fn write(&self) -> EncapWrite<u32> {
        EncapWrite::shape(self.ctx_bits() + clog2(ctx_word::WORDS as u64))
    }
    /// Beats of the frame FIFO: two longest frames, a power of two, at most
    /// [`FIFO_MAX_DEPTH`] (one jumbo frame at 8 bits: it streams out before the next comes in).
    pub fn fifo_beats(&self) -> u32 {
        (2 * self.max_frame.div_ceil(self.data_bits / 8))
            .next_power_of_two()
            .clamp(32, FIFO_MAX_DEPTH)
    }
}

nicgen_edsl::record! {
    /// A frame's command (`s_axis_cmd_tdata`).
    pub struct EncapCmd(ctx_bits: u32) {
        /// Encapsulate (else the frame passes unchanged).
        en: 1,
        /// The context.
        ctx: ctx_bits,
    }
}

nicgen_edsl::record! {
    /// The configuration port (`cfg_we`, `cfg_addr`, `cfg_wdata`).
    pub struct EncapWrite(addr_bits: u32) {
        we: 1,
        /// Context · 16 + word.
        addr: addr_bits,
        wdata: 32,
    }
}

nicgen_edsl::record! {
    /// The drop pulses (`stat_drop_oversize`, `stat_drop_short`).
    pub struct EncapDrops {
        /// A frame longer than `max_frame` bytes.
        drop_oversize: 1,
        /// A frame to encapsulate shorter than 14 bytes.
        drop_short: 1,
    }
}

nicgen_edsl::record! {
    /// What the input learns of a frame by its last beat.
    struct FrameInfo(ctx_bits: u32) {
        en: 1,
        ctx: ctx_bits,
        len: 16,
        oversize: 1,
        short: 1,
        /// Bytes 0..12 (destination and source MAC), byte 0 in the top bits.
        macs: 96,
    }
}

nicgen_edsl::record! {
    /// The frame's sum (`frame_sum`, folded).
    struct FrameSum {
        sum: 16,
    }
}

nicgen_edsl::record! {
    /// What rides through the flow hash as its tag.
    struct FrameTag(ctx_bits: u32) {
        en: 1,
        ctx: ctx_bits,
        len: 16,
        sum: 16,
        oversize: 1,
        short: 1,
    }
}

/// The ports of [`tx_encap`].
pub struct EncapPorts {
    /// Inner frames (`s_axis_*`).
    pub s_axis: Stream,
    /// Frames out (`m_axis_*`).
    pub m_axis: Stream,
    /// One command per frame (`s_axis_cmd_*`).
    pub cmd: RecordStream<EncapCmd<u32>>,
    /// Context writes (`cfg_*`).
    pub cfg: EncapWrite,
    /// Drop pulses (`stat_*`).
    pub stats: EncapDrops,
}

impl Ports for EncapPorts {
    type Cfg = EncapCfg;
    fn ports(io: &Io, cfg: &EncapCfg) -> Self {
        let stream = StreamCfg::new(cfg.data_bits, 0);
        EncapPorts {
            s_axis: Stream::sink(io, "s_axis", &stream),
            m_axis: Stream::source(io, "m_axis", &stream),
            cmd: RecordStream::sink(io, "s_axis_cmd", cfg.cmd()),
            cfg: io.inputs("cfg_", &cfg.write()),
            stats: io.outputs("stat_", &EncapDrops::shape()),
        }
    }
}

/// The parser's one view: the flow the hash reads, as the RX path's RSS view.
const FLOW_VIEW: &[View] = &[View {
    name: "flow",
    fields: crate::eth::eth_rx::rss_fields,
}];

/// The bytes of `x`, most significant first (a big-endian field's wire order).
fn be_bytes(x: Sig) -> Vec<Sig> {
    let w = x.width();
    (0..w / 8)
        .map(|i| x.slice(w - 1 - 8 * i, w - 8 - 8 * i))
        .collect()
}

/// Bytes in wire order as a splice command's `bytes` (byte `j` at bits `8j+7:8j`).
fn wire_word(bytes: &[Sig]) -> Sig {
    cat(&bytes.iter().rev().copied().collect::<Vec<_>>())
}

/// `x` zero-extended to `w` bits.
fn z(x: Sig, w: u32) -> Sig {
    x.zext(w)
}

/// The encapsulation block for `cfg`: module `tx_encap_d<W>_c<contexts>_m<max_frame>`.
pub fn tx_encap(cfg: &EncapCfg) -> Result<Block<EncapPorts>, ElabError> {
    let stream = StreamCfg::new(cfg.data_bits, 0);
    stream.check("tx_encap")?;
    let bad = |m: String| Err(ElabError::config("tx_encap", m));
    if !cfg.contexts.is_power_of_two() || !(2..=1024).contains(&cfg.contexts) {
        return bad(format!(
            "{} contexts: a power of two in 2..=1024 (the context number is the high bits \
             of cfg_addr)",
            cfg.contexts
        ));
    }
    if !(64..=MAX_FRAME_LIMIT).contains(&cfg.max_frame) {
        return bad(format!(
            "max_frame {} must be 64..={MAX_FRAME_LIMIT} (a longer inner frame would not fit \
             the outer IPv4 datagram)",
            cfg.max_frame
        ));
    }
    if cfg.max_frame.div_ceil(cfg.data_bits / 8) > cfg.fifo_beats() {
        return bad(format!(
            "max_frame {} at {} bits does not fit a FIFO of {} beats",
            cfg.max_frame,
            cfg.data_bits,
            cfg.fifo_beats()
        ));
    }
    let w = cfg.data_bits;
    let cb = cfg.ctx_bits();
    let ustream = StreamCfg::new(w, 1);
    let fork = stream_fork(&ustream, &["parse", "data"])?;
    let parse = eth_hdr_parse(&HdrParseCfg {
        data_bits: w,
        user_bits: 0,
        window: cfg.window,
        fifo_depth: 32,
        views: FLOW_VIEW,
        tunnels: false,
    })?;
    let fifo = stream_fifo_in(
        &FifoCfg::new(ustream, cfg.fifo_beats()).frames(),
        FifoRam::Block,
    )?;
    let rss_cfg = RssCfg {
        table_size: 2,
        queues: 2,
        tag_bits: FrameTag::shape(cb).width(),
        ..RssCfg::default()
    };
    let rss = rss_toeplitz(&rss_cfg)?;
    let q_info = record_fifo(FrameInfo::shape(cb), SIDE_DEPTH)?;
    let q_sum = record_fifo(FrameSum::shape(), SIDE_DEPTH)?;
    let ins = |off: u32, n: u32, out: OutStage| {
        stream_insert(&InsertCfg {
            stream,
            off,
            n,
            out,
        })
    };
    let ins_a = ins(0, A_BYTES, OutStage::Register)?;
    let ins_b = ins(BC_OFF, B_BYTES, OutStage::Register)?;
    let ins_c = ins(BC_OFF, C_BYTES, OutStage::Slice)?;
    let q_a = record_fifo(SpliceCmd::shape(A_BYTES), CMD_DEPTH)?;
    let q_b = record_fifo(SpliceCmd::shape(B_BYTES), CMD_DEPTH)?;
    let q_c = record_fifo(SpliceCmd::shape(C_BYTES), CMD_DEPTH)?;
    let name = format!("tx_encap_d{w}_c{}_m{}", cfg.contexts, cfg.max_frame);
    let cfg = *cfg;
    Block::build(name, cfg, move |p: EncapPorts| {
        doc("VXLAN/NVGRE encapsulation: store and forward, outer headers from a context table.");
        let wb = w / 8;
        let s = &p.s_axis;

        // ---- Input: command, gate, fork; the frame's length, MACs and sum. ----
        let c = record_reg_slice_ctl("cmd", p.cmd.data, p.cmd.valid);
        p.cmd.ready.set(c.s_ready);
        let cf = p.cmd.shape.unpack(c.data);
        let side = Reserve::new(SIDE_DEPTH);
        let u_fork = fork.instance("u_fork");
        // Beats of the frame so far, saturating where the MACs end: 0 is the first beat.
        let mac_beats = 12u32.div_ceil(wb);
        let bcnt = reg_init(clog2(mac_beats as u64 + 1).max(1), 0u32).named("beat_count");
        let first = bcnt.eq(0u32).named("first");
        let go = (side.room & (!first | c.valid_ctl)).named("go");
        let fork_in = &u_fork.s_axis;
        fork_in.valid().set(s.valid() & go);
        s.ready().set(fork_in.ready() & go);
        let take = (s.valid() & fork_in.ready() & go).named("take");
        let last = s.last();
        c.ready.set(take & first);
        bcnt.set_if(
            take,
            mux(
                last,
                lit(bcnt.width(), 0u32),
                mux(bcnt.eq(mac_beats as u64), bcnt, bcnt + 1u32),
            ),
        );
        let en_q = reg(1).named("en_q");
        let ctx_q = reg(cb).named("ctx_q");
        en_q.set_if(take & first, cf.en);
        ctx_q.set_if(take & first, cf.ctx);
        let en_cur = mux(first, cf.en, en_q).named("en_cur");
        let ctx_cur = mux(first, cf.ctx, ctx_q).named("ctx_cur");
        // Bytes in this beat: all of them but in the last beat, whose kept run starts at
        // lane 0 (stream rule 4): its end is the one lane whose keep is set and the next's not.
        let nbytes = if wb == 1 {
            lit(18, 1u32)
        } else {
            let k = s.keep();
            let arms: Vec<(Sig, Sig)> = (0..wb)
                .map(|i| {
                    let end = if i + 1 == wb {
                        k.bit(i)
                    } else {
                        k.bit(i) & !k.bit(i + 1)
                    };
                    (end, lit(18, i + 1))
                })
                .collect();
            mux(last, select(&arms, 0u32), lit(18, wb))
        }
        .named("beat_bytes");
        let count = reg_init(17, 0u32).named("byte_count");
        let over = reg_init(1, 0u32).named("over");
        let total = (count.zext(18) + nbytes).named("total");
        let over_now = (over | total.gt(cfg.max_frame as u64)).named("over_now");
        let short = (!over_now & en_cur & total.lt(14u64)).named("short");
        count.set_if(take, mux(last, lit(17, 0u32), total.trunc(17)));
        over.set_if(take, !last & over_now);
        fork_in.set_beat(&crate::stream::Beat {
            data: s.data(),
            keep: s.keep(),
            last,
            user: last & (over_now | short),
        });
        // The MACs: byte `i` from lane `i mod W` of beat `i / W`, as the beat is taken (the
        // frame's record reads this beat's bytes directly).
        let macs: Vec<Sig> = (0..12u32)
            .map(|i| {
                let here = bcnt.eq((i / wb) as u64);
                let lane = s.data().slice(8 * (i % wb) + 7, 8 * (i % wb));
                let r = reg(8).named(&format!("mac{i}"));
                r.set_if(take & here, lane);
                mux(here, lane, r)
            })
            .collect();
        let u_info = q_info.instance("u_info_q");
        let info = FrameInfo {
            en: en_cur,
            ctx: ctx_cur,
            len: total.trunc(16),
            oversize: over_now,
            short,
            macs: cat(&macs),
        };
        u_info.s_axis.data.set(u_info.s_axis.shape.pack(&info));
        u_info.s_axis.valid.set(take & last);
        u_info.s_axis.ready.unused();
        let sum = frame_sum(
            &SumIn {
                data: s.data(),
                mask: s.keep(),
                beat: take,
                last,
                adv: lit(1, 1u32),
            },
            2,
            "sum_",
        );
        let u_sum = q_sum.instance("u_sum_q");
        u_sum.s_axis.data.set(sum.sum);
        u_sum.s_axis.valid.set(sum.valid);
        u_sum.s_axis.ready.unused();

        // The frame FIFO and the parser behind the fork.
        let u_fifo = fifo.instance("u_fifo");
        connect(&u_fork.m_axis[1], &u_fifo.s_axis);
        let u_parse = parse.instance("u_parse");
        let fp = &u_fork.m_axis[0];
        u_parse.s_axis.data().set(fp.data());
        u_parse.s_axis.keep().set(fp.keep());
        u_parse.s_axis.last().set(fp.last());
        u_parse.s_axis.valid().set(fp.valid());
        fp.ready().set(u_parse.s_axis.ready());
        if let Some(u) = fp.user() {
            u.unused();
        }
        if let Some(d) = &u_fifo.drops {
            d.drop_bad.unused();
            d.drop_oversize.unused();
        }

        // ---- Join: parser record + side records -> flow hash request. ----
        let view = &u_parse.views[0];
        let pf = view.fields();
        let u_rss = rss.instance("u_rss");
        let join = (u_info.m_axis.valid & u_sum.m_axis.valid & view.valid).named("join_valid");
        let pop = (join & u_rss.req.ready).named("join_pop");
        u_info.m_axis.ready.set(pop);
        u_sum.m_axis.ready.set(pop);
        view.ready.set(pop);
        side.update(take & last, pop);
        let fi = u_info.m_axis.shape.unpack(u_info.m_axis.data);
        let ip = pf.l3.ne(0u32).named("inner_ip");
        let tag = FrameTag {
            en: fi.en,
            ctx: fi.ctx,
            len: fi.len,
            sum: u_sum.m_axis.data,
            oversize: fi.oversize,
            short: fi.short,
        };
        let req = RssReq {
            l3: mux(ip, pf.l3, lit(2, rss_l3::IPV6 as u32)),
            l4: mux(ip, pf.l4, lit(2, 0u32)),
            frag: pf.frag & ip,
            src_ip: mux(ip, pf.src_ip, cat(&[fi.macs, lit(32, 0u32)])),
            dst_ip: mux(ip, pf.dst_ip, lit(128, 0u32)),
            src_port: pf.src_port,
            dst_port: pf.dst_port,
            tag: FrameTag::shape(cb).pack(&tag),
        };
        u_rss.req.data.set(u_rss.req.shape.pack(&req));
        u_rss.req.valid.set(join);
        u_rss.cfg.we.set(lit(1, 0u32));
        u_rss.cfg.addr.set(lit(u_rss.cfg.addr.width(), 0u32));
        u_rss.cfg.wdata.set(lit(32, 0u32));

        // ---- Header pipeline. ----
        let res_q = record_reg_slice("res_q", u_rss.res.data, u_rss.res.valid);
        u_rss.res.ready.set(res_q.s_ready);
        let res = u_rss.res.shape.unpack(res_q.data);
        res.rss_type.unused();
        res.queue.unused();
        let t = FrameTag::shape(cb).unpack(res.tag);
        // A frame's places are reserved until C takes its command. C takes a command at most
        // two frames ahead of its input (its slice), and A and B have taken theirs for every
        // frame C has seen, so their queues hold at most two commands more than are reserved.
        let hdr = Reserve::new(CMD_DEPTH - 2);
        res_q.ready.set(hdr.room);
        let take0 = (res_q.valid & hdr.room).named("h0_take");
        let drop0 = (t.oversize | t.short).named("h0_drop");
        let enc0 = (take0 & t.en & !drop0).named("h0_encap");
        let stat_over = reg_init(1, 0u32).named("drop_oversize_q");
        stat_over.set(take0 & t.oversize);
        let stat_short = reg_init(1, 0u32).named("drop_short_q");
        stat_short.set(take0 & t.short);
        p.stats.drop_oversize.set(stat_over);
        p.stats.drop_short.set(stat_short);

        // Context writes: word and context of the address.
        let wr = &p.cfg;
        let wsel = wr.addr.slice(3, 0);
        let wctx = wr.addr.slice(cb + 3, 4);
        // The IPv4 ID counters: a LUT RAM read and stepped in H0, a valid flop per context
        // (reset or a write to the context restarts its counter at 0).
        let ids = memory("ip_id", 16, cfg.contexts);
        let id_ram = ids.read_async(t.ctx);
        let id_arms: Vec<(u64, Sig)> = (0..cfg.contexts)
            .map(|k| {
                let v = reg_init(1, 0u32).named(&format!("id_valid{k}"));
                let cleared = wr.we & wctx.eq(k as u64);
                v.set(!cleared & (v | (enc0 & t.ctx.eq(k as u64))));
                (k as u64, v)
            })
            .collect();
        let id_valid = case(t.ctx, &id_arms, 0u32).named("id_valid");
        let id0 = mux(id_valid, id_ram, lit(16, 0u32)).named("id0");
        ids.write(enc0, t.ctx, id0 + 1u32);
        // H1 and H2 load only with a frame, so that between frames they hold the last frame's
        // fields: the command queues, written whenever not full, then never hold unknown bits
        // in simulation (an idle result slice's context would read any memory word).
        let v1 = reg_init(1, 0u32).named("h1_valid");
        v1.set(take0 & !drop0);
        // The context memories, read in H0 (registered read: H1), registered again in H2.
        let word = |k: u32, bits: u32| {
            let m = memory(&format!("ctx_w{k}"), bits, cfg.contexts);
            m.write(wr.we & wsel.eq(k as u64), wctx, wr.wdata.slice(bits - 1, 0));
            stage(m.read_sync(t.ctx, None), v1).named(&format!("h2_w{k}"))
        };
        let w0 = word(ctx_word::DST_MAC_HI, 32);
        let w1 = word(ctx_word::MACS_MID, 32);
        let w2 = word(ctx_word::SRC_MAC_LO, 32);
        let w3 = word(ctx_word::IP, 20);
        let w4 = word(ctx_word::TUNNEL, 32);
        let w5 = word(ctx_word::UDP_PORT, 16);
        let w6 = word(ctx_word::FLOW_LABEL, 20);
        let src_w: Vec<Sig> = (0..4).map(|k| word(ctx_word::SRC_ADDR + k, 32)).collect();
        let dst_w: Vec<Sig> = (0..4).map(|k| word(ctx_word::DST_ADDR + k, 32)).collect();
        // The frame's fields along H1 and H2.
        let h2 = |x: Sig, n: &str| {
            stage(stage(x, take0 & !drop0).named(&format!("h1_{n}")), v1).named(&format!("h2_{n}"))
        };
        let v2 = reg_init(1, 0u32).named("h2_valid");
        v2.set(v1);
        let en2 = h2(t.en, "en");
        let len2 = h2(t.len, "len");
        let sum2 = h2(t.sum, "sum");
        let hash2 = h2(res.hash.slice(13, 0), "hash");
        res.hash.unused();
        let id2 = h2(id0, "id");

        // H2: the context's fields, lengths and partial sums.
        let dmac = cat(&[w0, w1.slice(31, 16)]);
        let smac = cat(&[w1.slice(15, 0), w2]);
        let ttl = w3.slice(7, 0);
        let tos = w3.slice(15, 8);
        let v6 = w3.bit(16);
        let nvgre = w3.bit(17);
        let udpc = w3.bit(18);
        let df = w3.bit(19);
        let vni = w4.slice(23, 0);
        let flow_id = w4.slice(31, 24);
        let dport = w5;
        let flabel = w6;
        // An IPv4 context's address is its low word; the others count as 0.
        let addr = |ws: &[Sig]| {
            let hi = cat(&[ws[0], ws[1], ws[2]]) & v6.repl(96);
            cat(&[hi, ws[3]])
        };
        let src = addr(&src_w).named("h2_src");
        let dst = addr(&dst_w).named("h2_dst");
        let tun = mux(nvgre, lit(16, 8u32), lit(16, 16u32));
        let ip4_len = (len2 + tun + 20u32).named("h2_ip4_len");
        let ip6_plen = (len2 + tun).named("h2_ip6_plen");
        let udp_len = (len2 + 16u32).named("h2_udp_len");
        let proto = mux(nvgre, lit(8, 47u32), lit(8, 17u32));
        let sport = cat(&[lit(2, 3u32), hash2]).named("h2_sport");
        const SW: u32 = 21;
        let words = |x: Sig| -> Vec<Sig> { be_bytes(x).chunks(2).map(|p| z(cat(p), SW)).collect() };
        let add = |v: Vec<Sig>| v.into_iter().reduce(|a, b| a + b).expect("terms");
        let mut aw = words(src);
        aw.extend(words(dst));
        let addr_sum = add(aw);
        let ip_misc = add(vec![
            z(cat(&[lit(8, 0x45u32), tos]), SW),
            z(ip4_len, SW),
            z(id2, SW),
            z(cat(&[lit(1, 0u32), df, lit(14, 0u32)]), SW),
            z(cat(&[ttl, proto]), SW),
        ]);
        let udp_misc = add(vec![
            lit(SW, 17u32),
            z(udp_len, SW),
            z(udp_len, SW),
            z(sport, SW),
            z(dport, SW),
            lit(SW, 0x0800u32),
            z(vni.slice(23, 8), SW),
            z(cat(&[vni.slice(7, 0), lit(8, 0u32)]), SW),
            z(sum2, SW),
        ]);
        // H3: the totals, folded once.
        let v3 = reg_init(1, 0u32).named("h3_valid");
        v3.set(v2);
        let addr_sum3 = delay(addr_sum).named("h3_addr_sum");
        let ip_misc3 = delay(ip_misc).named("h3_ip_misc");
        let udp_misc3 = delay(udp_misc).named("h3_udp_misc");
        let fold = |x: Sig| z(x.slice(15, 0), 17) + z(x.slice(SW - 1, 16), 17);
        let ip_f3 = fold(addr_sum3 + ip_misc3).named("h3_ip_fold");
        let udp_f3 = fold(addr_sum3 + udp_misc3).named("h3_udp_fold");
        // H4: the second fold, the complement, the commands; the H2 fields carried along.
        let v4_ = reg_init(1, 0u32).named("h4_valid");
        v4_.set(v3);
        let h4 =
            |x: Sig, n: &str| delay(delay(x).named(&format!("h3_{n}"))).named(&format!("h4_{n}"));
        let ip_f = delay(ip_f3).named("h4_ip_fold");
        let udp_f = delay(udp_f3).named("h4_udp_fold");
        let fold2 = |x: Sig| (x.slice(15, 0) + z(x.bit(16), 16)).named("fold2");
        let ip_csum = !fold2(ip_f);
        let udp_raw = !fold2(udp_f);
        let en4 = h4(en2, "en");
        let v6_4 = h4(v6, "v6");
        let nvgre4 = h4(nvgre, "nvgre");
        let udpc4 = h4(udpc, "udpc");
        let df4 = h4(df, "df");
        let udp_csum = mux(
            v6_4 | udpc4,
            mux(udp_raw.eq(0u32), lit(16, 0xFFFFu32), udp_raw),
            lit(16, 0u32),
        );
        let dmac4 = h4(dmac, "dmac");
        let smac4 = h4(smac, "smac");
        let ttl4 = h4(ttl, "ttl");
        let tos4 = h4(tos, "tos");
        let proto4 = h4(proto, "proto");
        let vni4 = h4(vni, "vni");
        let flow_id4 = h4(flow_id, "flow_id");
        let dport4 = h4(dport, "dport");
        let flabel4 = h4(flabel, "flabel");
        let src4 = h4(src, "src");
        let dst4 = h4(dst, "dst");
        let ip4_len4 = h4(ip4_len, "ip4_len");
        let ip6_plen4 = h4(ip6_plen, "ip6_plen");
        let udp_len4 = h4(udp_len, "udp_len");
        let sport4 = h4(sport, "sport");
        let id4 = h4(id2, "id");

        let ethertype = mux(v6_4, lit(16, 0x86DDu32), lit(16, 0x0800u32));
        let mut a = be_bytes(dmac4);
        a.extend(be_bytes(smac4));
        a.extend(be_bytes(ethertype));
        let ip4: Vec<Sig> = [
            vec![lit(8, 0x45u32), tos4],
            be_bytes(ip4_len4),
            be_bytes(id4),
            vec![
                cat(&[lit(1, 0u32), df4, lit(6, 0u32)]),
                lit(8, 0u32),
                ttl4,
                proto4,
            ],
            be_bytes(ip_csum),
            be_bytes(src4.slice(31, 0)),
            be_bytes(dst4.slice(31, 0)),
        ]
        .concat();
        let ip6_head = cat(&[lit(4, 6u32), tos4, flabel4]);
        let ip6: Vec<Sig> = [
            be_bytes(ip6_head),
            be_bytes(ip6_plen4),
            vec![proto4, ttl4],
            be_bytes(src4.slice(127, 32)),
        ]
        .concat();
        a.extend(ip4.iter().zip(&ip6).map(|(x, y)| mux(v6_4, *y, *x)));
        let vx = [
            vec![lit(8, 0x08u32), lit(8, 0u32), lit(8, 0u32), lit(8, 0u32)],
            be_bytes(vni4),
            vec![lit(8, 0u32)],
        ]
        .concat();
        let gre = [
            be_bytes(lit(32, 0x2000_6558u32)),
            be_bytes(vni4),
            vec![flow_id4],
        ]
        .concat();
        a.extend(vx.iter().zip(&gre).map(|(x, y)| mux(nvgre4, *y, *x)));
        debug_assert_eq!(a.len() as u32, A_BYTES);
        let b = [
            be_bytes(sport4),
            be_bytes(dport4),
            be_bytes(udp_len4),
            be_bytes(udp_csum),
        ]
        .concat();
        let cbytes = [be_bytes(src4.slice(31, 0)), be_bytes(dst4)].concat();
        debug_assert_eq!(cbytes.len() as u32, C_BYTES);

        let u_qa = q_a.instance("u_cmd_a");
        let u_qb = q_b.instance("u_cmd_b");
        let u_qc = q_c.instance("u_cmd_c");
        let push = |q: &RecordFifoSide, en: Sig, bytes: &[Sig]| {
            q.data.set(q.shape.pack(&SpliceCmd {
                en,
                bytes: wire_word(bytes),
            }));
            q.valid.set(v4_);
            q.ready.unused();
        };
        push(&u_qa.s_axis, en4, &a);
        push(&u_qb.s_axis, en4 & !nvgre4, &b);
        push(&u_qc.s_axis, en4 & v6_4, &cbytes);
        hdr.update(take0 & !drop0, u_qc.m_axis.fire());

        // ---- Output: FIFO -> A -> B -> C. ----
        let u_a = ins_a.instance("u_ins_a");
        let u_b = ins_b.instance("u_ins_b");
        let u_c = ins_c.instance("u_ins_c");
        let fo = &u_fifo.m_axis;
        u_a.s_axis.data().set(fo.data());
        u_a.s_axis.keep().set(fo.keep());
        u_a.s_axis.last().set(fo.last());
        u_a.s_axis.valid().set(fo.valid());
        fo.ready().set(u_a.s_axis.ready());
        if let Some(u) = fo.user() {
            u.unused();
        }
        connect(&u_qa.m_axis, &u_a.cmd);
        connect(&u_qb.m_axis, &u_b.cmd);
        connect(&u_qc.m_axis, &u_c.cmd);
        connect(&u_a.m_axis, &u_b.s_axis);
        connect(&u_b.m_axis, &u_c.s_axis);
        connect(&u_c.m_axis, &p.m_axis);
    })
}

/// A command queue's write side.
type RecordFifoSide = RecordStream<SpliceCmd<u32>>;
