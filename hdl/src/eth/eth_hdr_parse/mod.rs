//! `eth_hdr_parse`: RX header parser. Captures the first `window` bytes of every frame, walks
//! Ethernet (up to two VLAN tags), IPv4 or IPv6 (up to four extension headers) and TCP or UDP,
//! and emits one metadata record ([`ParseMeta`]) per frame, in frame order.
//!
//! The input stream is not modified and not forwarded: the block sits beside the payload path
//! (fork the stream in front of it); it only reads. Frames are Ethernet without FCS.
//!
//! Headers handled (offsets from the start of the frame; `l3` = 14 + 4 · tags):
//!
//! | Header | Offset | Size | Field used |
//! |---|---|---|---|
//! | Ethernet | 12 | 2 | TPID 0x8100 (C-tag) / 0x88A8 (S-tag), else EtherType |
//! | | 14 / 18 | 2 | TCI of the outer / inner tag |
//! | | 16 / 20 | 2 | TPID of the inner tag or EtherType / EtherType after two tags |
//! | IPv4 | l3 + 0 | 1 | version \[7:4\], IHL \[3:0\] |
//! | | l3 + 2 | 2 | total length |
//! | | l3 + 6 | 2 | MF \[13\], fragment offset \[12:0\] |
//! | | l3 + 9 | 1 | protocol |
//! | | l3 + 12 / 16 | 4 / 4 | source / destination address |
//! | IPv6 | l3 + 0 | 1 | version \[7:4\] |
//! | | l3 + 4 | 2 | payload length |
//! | | l3 + 6 | 1 | next header |
//! | | l3 + 8 / 24 | 16 / 16 | source / destination address |
//! | ext. header (0, 43, 60) | p + 0 / p + 1 | 1 / 1 | next header / length − 1 in 8-byte units |
//! | fragment (44) | p + 0 / p + 2 | 1 / 2 | next header / offset \[15:3\] |
//! | TCP | l4 + 0 / 2 | 2 / 2 | source / destination port |
//! | | l4 + 12 | 1 | data offset \[7:4\] |
//! | UDP | l4 + 0 / 2 / 4 | 2 / 2 / 2 | source port / destination port / length |
//! | VXLAN (tunnels) | l4 + 8 / 12 | 1 / 3 | flags (I = bit 3) / VNI |
//! | GRE (tunnels) | l4 + 0 / 2 / 4 | 2 / 2 / 4 | flags and version / protocol / key (VSID, FlowID) |
//!
//! The checks, their order and the malformed codes are those of the golden model
//! `nicgen_model::parse` (its module docs list them, and which record fields are valid when;
//! [`malformed`] has the same numbers). In short: `l3 != 0` only when every IP header check
//! passed, `l4 != 0` only when every TCP/UDP check passed and the packet is not a fragment,
//! `malformed` names the first failed check (0 for none), and fields that are not valid carry
//! whatever the pipeline computed (not 0). Parameters outside the ranges of [`HdrParseCfg`] are
//! rejected at elaboration.
//!
//! With [`HdrParseCfg::tunnels`] the parser also recognises VXLAN (UDP to the port on the
//! `vxlan_port` input) and NVGRE (IP protocol 47) in the outer headers, as
//! `nicgen_model::tunnel::parse_tunnel` does with the same window: the record's `tunnel`,
//! `tunnel_bad` ([`tunnel_bad`]: the first failed check of the tunnel header, 0 for none),
//! and for a well-formed tunnel its id, FlowID and the inner frame's byte range, which a
//! de-capsulating path cuts out of the frame. Without it these fields read 0 and no logic is
//! built.
//!
//! - **Ports** ([`HdrParsePorts`]): `s_axis_tdata/tkeep/tvalid/tready/tlast[/tuser]` (8 or a
//!   multiple of 16 bits); per output [`View`] (`HdrParseCfg::views`; one, `meta`, by default)
//!   `m_axis_<view>_tdata` ([`view_layout`]: the [`ParseMeta`] fields the view keeps, with
//!   `user` = the `tuser` of the frame's last beat on top when `user_bits > 0`), `_tvalid`,
//!   `_tready`: one transfer per frame, in frame order, no `tkeep`/`tlast`. `s_axis_tready` is
//!   a flop (no path from any view's ready).
//! - **Internals**, one file per stage group. *Capture* (`capture.rs`): a byte register per
//!   window byte, byte `i` written from lane `i mod B` (`B` bytes per beat) while a one-hot beat
//!   counter points at beat `i / B`: every cycle, taken or not, so valid/ready stay off the
//!   `window · 8` enables. The window *closes* on the beat holding byte `window − 1` or on
//!   `tlast`, whichever comes first. *Parse*: a pipeline that never stalls (docs/TIMING.md,
//!   rule 8), started by the close: (1, `l2.rs`) the TPID and EtherType compares; (2, `l3.rs`)
//!   tags and EtherType, the IP fixed header through a 3:1 word mux; (3) datagram end, L3
//!   checks, the one-hot select of the first header's word; (4-17, `walk.rs`) the walk: per
//!   extension header two *read* stages (the 4-byte word at the header offset through an AND-OR
//!   mux with a registered one-hot select, every header offset being 2 mod 4; the first ORs
//!   groups of at most 8 words, the second the groups and compares the length byte with each
//!   select's target) and a *compute* stage (checks, next offset, next select from registered
//!   flags: rule 10), then a fifth pair of read stages; (18, `l4.rs`) TCP/UDP checks and each
//!   protocol's code, (19) the walk's code. Stage `s` runs `s` cycles after the close and the
//!   next frame reaches beat `j` no earlier than `1 + j` cycles after it, so capture byte `i`
//!   still holds this frame in stage `s` iff `s ≤ 1 + i / B`; a stage that reads an older byte
//!   gets a delayed copy, made at elaboration only where needed. *Finish* (`finish.rs`): the
//!   frame length (a saturating byte counter) and `tuser` wait in a small FIFO; one stage
//!   compares lengths, one picks the code, one registers the record with the flags the claims
//!   need, so that the claims (what the EtherType and the IP header claim, the checksum units'
//!   byte ranges) are one LUT from flops (rule 12). *Addresses' sum*: `ip_sum`, the
//!   pseudo-header's address part, through four free-running stages
//!   ([`crate::csum::pseudo::address_sum_pipelined`]), so the checksum units get 16 bits per
//!   frame instead of 256. *Tunnels* (`tunnel.rs`, with [`HdrParseCfg::tunnels`]): from the
//!   walk's final offset (stage 15), a one-hot select of the L4 word (16), the 12 bytes the
//!   checks need per group of at most 4 words (17) and their OR (18), each check against the
//!   bytes, the UDP length and the L4 remainder a flag beside the TCP/UDP codes (19), the first
//!   failed one picked in the finish's first stage and the verdict joined with the L3/L4 ones
//!   in its second; the record's latency does not change.
//!   *Output* (`views.rs`): per view, LUT-RAM record stores indexed in
//!   frame order and read asynchronously, each split into parts of at most 40 bits with
//!   pointers of their own (rule 4); per view a credit count of frames closed − records taken
//!   and a flop "count ≥ `fifo_depth` − 2", whose OR is `s_axis_tready`'s next value, so the
//!   stores never overwrite a record not taken (rule 5).
//! - **Latency**: the record is valid [`LATENCY`] (23) cycles after the beat that closes the
//!   window, and no earlier than [`LATENCY_AFTER_LAST`] (7) cycles after the `tlast` beat.
//! - **Throughput**: 1 beat/cycle whatever the frame sizes (1-byte frames back to back
//!   included), as long as the sink keeps fewer than `fifo_depth` records waiting: with a sink
//!   that is always ready, `fifo_depth ≥ LATENCY + 4` never throttles the input. The input is
//!   never held for a frame that is still arriving.
//! - **Cost**: `window` bytes of capture registers, about twenty pipeline stages (the walk's
//!   second read stage and the delayed window bytes are most of the flops), the LUT-RAM record
//!   stores; with tunnels, a 97-bit AND-OR read over the L4 words the window holds, the window
//!   bytes it needs delayed to stage 17, and the tunnel fields' finish registers; LUT/FF/Fmax per preset: results/AREA.md, rows `rx eth_hdr_parse` and
//!   `tx eth_hdr_parse`.
//! - **Golden model**: `nicgen_model::parse::parse_headers` (tunnels:
//!   `nicgen_model::tunnel::parse_tunnel`); **test**: `testbench/tests/eth/eth_hdr_parse.rs`
//!   (widths 8, 64, 512 × idle × backpressure, plus 16, 32 and 128 bits with other windows and
//!   FIFO depths; every code reached; the wire-formats vectors; latency and back-to-back
//!   throughput; VXLAN and NVGRE frames over IPv4 with options and IPv6 with a hop-by-hop
//!   header, tagged or not, broken in every way the model names, at 8, 64 and 512 bits).

mod capture;
mod finish;
mod l2;
mod l3;
mod l4;
mod tunnel;
mod views;
mod walk;

pub use tunnel::{tunnel_bad, tunnel_kind};

use crate::stream::{Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// The malformed reason codes of the record (the same numbers as `nicgen_model::parse::malformed`,
/// where the checks are spelled out).
pub mod malformed {
    /// Nothing wrong.
    pub const NONE: u32 = 0;
    /// Fewer than 14 bytes, or a VLAN tag cut by the frame end.
    pub const L2_TRUNC: u32 = 1;
    /// The frame ends inside the IPv4 fixed header, the IPv4 options or the IPv6 fixed header.
    pub const L3_TRUNC: u32 = 2;
    /// IPv4 IHL below 5.
    pub const IPV4_IHL: u32 = 3;
    /// IPv4 total length below IHL · 4.
    pub const IPV4_TOTAL_LEN: u32 = 4;
    /// The IP datagram (total length / 40 + payload length) runs past the frame end.
    pub const IP_TRUNC: u32 = 5;
    /// IP version field does not match the EtherType.
    pub const IP_VERSION: u32 = 6;
    /// An IPv6 extension header runs past the payload length.
    pub const EXT_TRUNC: u32 = 7;
    /// More than four IPv6 extension headers.
    pub const EXT_LIMIT: u32 = 8;
    /// An IPv6 extension header's fields lie beyond the window.
    pub const EXT_WINDOW: u32 = 9;
    /// TCP segment shorter than 20 bytes or its data offset; UDP shorter than 8 or its length.
    pub const L4_TRUNC: u32 = 10;
    /// TCP data offset below 5; UDP length field below 8.
    pub const L4_BAD: u32 = 11;
    /// The TCP (20-byte) or UDP (8-byte) header does not fit in the window.
    pub const L4_WINDOW: u32 = 12;
}

/// IPv6 extension headers walked at most (one walk stage each).
pub const MAX_EXT_HEADERS: u32 = 4;

nicgen_edsl::record! {
    /// The metadata record, least significant field first (`m_axis_meta_tdata` bit 0 is
    /// `malformed[0]`); offsets and lengths in bytes. Every field of
    /// `nicgen_model::parse::ParseResult` but `user`, then the claims
    /// (`nicgen_model::parse::ParseResult::claims`), valid in every record, then `user`.
    pub struct ParseMeta(user_bits: u32) {
        /// The first failed check ([`malformed`]), 0 for none.
        malformed: 4,
        /// 0 none, 1 IPv4, 2 IPv6.
        l3: 2,
        /// 0 none, 1 TCP, 2 UDP.
        l4: 2,
        vlan_count: 2,
        /// The outer tag's TPID is 0x88A8 (an S-tag).
        tag0_tpid_s: 1,
        frag: 1,
        ipv4_opts: 1,
        l3_off: 8,
        ip_proto: 8,
        frame_len: 16,
        ip_end: 16,
        l4_off: 16,
        l4_len: 16,
        src_port: 16,
        dst_port: 16,
        ethertype: 16,
        tag0_tci: 16,
        tag1_tci: 16,
        /// IPv4 in the low 32 bits.
        src_ip: 128,
        /// IPv4 in the low 32 bits.
        dst_ip: 128,
        /// The ones'-complement sum of both addresses' 16-bit words (IPv4: the low 32 bits
        /// each), folded, not complemented: the pseudo-header's address part.
        ip_sum: 16,
        /// What the EtherType claims when L2 is intact (0 none, 1 IPv4, 2 IPv6).
        l3_claim: 2,
        /// What the IP header claims when it parsed, its extension headers were walked and it
        /// is not a fragment (0 none, 1 TCP, 2 UDP).
        l4_claim: 2,
        /// An outer VLAN tag (L2 intact, a tag).
        vlan: 1,
        /// A broken extension-header chain.
        ext_bad: 1,
        /// The byte ranges of the checksum units, clipped to the frame when a header is cut.
        csum_l3_off: 16,
        csum_l4_off: 16,
        csum_end: 16,
        /// The tunnel the outer headers announce ([`tunnel_kind`]: 0 none, 1 VXLAN, 2 NVGRE);
        /// always 0 unless [`HdrParseCfg::tunnels`].
        tunnel: 2,
        /// Why that tunnel cannot be de-capsulated ([`tunnel_bad`], 0 for none).
        tunnel_bad: 3,
        /// VNI or VSID of a well-formed tunnel, else 0.
        tunnel_id: 24,
        /// NVGRE FlowID of a well-formed NVGRE tunnel, else 0.
        flow_id: 8,
        /// The inner frame of a well-formed tunnel: its first byte, and its end (the UDP
        /// datagram's for VXLAN, the IP datagram's for NVGRE); 0 and 0 otherwise.
        inner_off: 16,
        inner_end: 16,
        /// The `tuser` of the frame's last beat (left out when the input has no `tuser`).
        user: user_bits,
    }
}

/// A typed edit of the record's shape: the fields a [`View`] carries keep their width, the
/// others get width 0 (`user` rides in every view whatever the edit does with it).
pub type FieldPick = fn(ParseMeta<u32>) -> ParseMeta<u32>;

/// Every field ([`ONE_RECORD`]).
pub fn all_fields(m: ParseMeta<u32>) -> ParseMeta<u32> {
    m
}

/// Every field but those only RSS and the VLAN strip use: the TX path's record
/// ([`CSUM_RECORD`]).
pub fn without_rss_vlan(m: ParseMeta<u32>) -> ParseMeta<u32> {
    ParseMeta {
        tag0_tpid_s: 0,
        ethertype: 0,
        tag0_tci: 0,
        tag1_tci: 0,
        src_ip: 0,
        dst_ip: 0,
        src_port: 0,
        dst_port: 0,
        ..without_tunnel(m)
    }
}

/// Every field but the tunnel's.
pub fn without_tunnel(m: ParseMeta<u32>) -> ParseMeta<u32> {
    ParseMeta {
        tunnel: 0,
        tunnel_bad: 0,
        tunnel_id: 0,
        flow_id: 0,
        inner_off: 0,
        inner_end: 0,
        ..m
    }
}

/// One output record stream of the parser, `m_axis_<name>_tdata/_tvalid/_tready`: one record
/// per frame, in frame order, with the [`ParseMeta`] fields `fields` keeps, plus `user` when
/// the input has a `tuser` ([`view_layout`]). Each view has record stores, read pointers, a
/// count and a valid of its own, so that its consumer takes its records whenever it is ready,
/// whatever the other views' consumers do (no consumer's ready reaches another's logic); a
/// frame's fields are stored once per view that carries them. The input stops while any view
/// may hold `fifo_depth` records (its credit count, a cycle late, is `fifo_depth - 2` or more).
/// Two views are equal when they have the same name and carry the same fields.
#[derive(Clone, Copy)]
pub struct View {
    pub name: &'static str,
    pub fields: FieldPick,
}

impl PartialEq for View {
    fn eq(&self, other: &View) -> bool {
        self.name == other.name && view_layout(self, 0) == view_layout(other, 0)
    }
}

impl Eq for View {}

impl std::hash::Hash for View {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h);
        view_layout(self, 0).hash(h);
    }
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields: Vec<&str> = view_layout(self, 0)
            .layout()
            .into_iter()
            .map(|(n, _, _)| n)
            .collect();
        write!(f, "View({}: {})", self.name, fields.join(", "))
    }
}

/// One stream, `m_axis_meta_*`, with every field (the default).
pub const ONE_RECORD: &[View] = &[View {
    name: "meta",
    fields: all_fields,
}];

/// One stream, `m_axis_meta_*`, without the fields only RSS and the VLAN strip use
/// ([`without_rss_vlan`]): what TX checksum insertion needs. The addresses are still parsed
/// for `ip_sum`; the other fields are not built.
pub const CSUM_RECORD: &[View] = &[View {
    name: "meta",
    fields: without_rss_vlan,
}];

/// The record of `view` for `user_bits` of `tuser`: [`ParseMeta`] with the fields the view
/// leaves out at width 0, and `user` on top when `user_bits > 0`.
pub fn view_layout(view: &View, user_bits: u32) -> ParseMeta<u32> {
    let full = ParseMeta::shape(user_bits);
    ParseMeta {
        user: full.user,
        ..(view.fields)(full)
    }
}

/// The record of a one-view parser with every field ([`ONE_RECORD`]).
pub fn meta_layout(user_bits: u32) -> ParseMeta<u32> {
    ParseMeta::shape(user_bits)
}

/// Parameters of [`eth_hdr_parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HdrParseCfg {
    /// Input bus width: 8 or a multiple of 16 bits.
    pub data_bits: u32,
    /// Input `tuser` width (0..=128; 0 = no `tuser`); the last beat's value lands in `user`.
    pub user_bits: u32,
    /// Bytes captured and parsed per frame: 64..=1024.
    pub window: u32,
    /// Records that may wait on the output (a power of two, 4..=256); [`LATENCY`] + 4 or more
    /// for full rate with a sink that is always ready (LUTRAM: 32 deep costs what 16 does on
    /// Xilinx).
    pub fifo_depth: u32,
    /// The output streams ([`View`]); [`ONE_RECORD`] by default.
    pub views: &'static [View],
    /// Recognise VXLAN (on the UDP port of the `vxlan_port` input) and NVGRE tunnels in the
    /// outer headers: the record's tunnel fields (else they are 0 and no logic is built).
    pub tunnels: bool,
}

impl HdrParseCfg {
    /// The defaults: window 128, 32 records, one stream with every field.
    pub fn new(data_bits: u32, user_bits: u32) -> HdrParseCfg {
        HdrParseCfg {
            data_bits,
            user_bits,
            window: 128,
            fifo_depth: 32,
            views: ONE_RECORD,
            tunnels: false,
        }
    }

    fn stream(&self) -> StreamCfg {
        StreamCfg::new(self.data_bits, self.user_bits)
    }
}

/// Stage number of the L2 decode, the L3 extraction and the first walk stage (stage `s` runs
/// `s` cycles after the closing beat).
const S_L2: u32 = 1;
const S_L3: u32 = 2;
const S_WALK0: u32 = 4;
/// Stage of the TCP/UDP checks (after two read stages and a compute stage per extension
/// header and two last read stages).
const S_L4: u32 = S_WALK0 + 3 * MAX_EXT_HEADERS + 2;

/// Cycles from the beat that closes the window to `m_axis_meta_tvalid` (when the frame length
/// is already known): the parse stages, the TCP/UDP codes, the wait-for-length register, one
/// verdict stage, the store.
pub const LATENCY: u32 = S_L4 + 5;

/// Cycles from a frame's `tlast` beat to `m_axis_meta_tvalid` at the earliest (frames longer
/// than the window wait for their length): the length's two registers, its FIFO and head
/// register, the three finish stages.
pub const LATENCY_AFTER_LAST: u32 = 7;

/// The parser's ports: the frames it reads, and one record stream per [`View`].
pub struct HdrParsePorts {
    /// The frames (`s_axis_*`), read only.
    pub s_axis: Stream,
    /// The record streams `m_axis_<view>_*`, in [`HdrParseCfg::views`] order, each shaped by
    /// [`view_layout`].
    pub views: Vec<RecordStream<ParseMeta<u32>>>,
    /// The UDP destination port of VXLAN (`vxlan_port`, 16 bits, a configuration register's
    /// value); only with [`HdrParseCfg::tunnels`].
    pub vxlan_port: Option<Sig>,
}

impl Ports for HdrParsePorts {
    type Cfg = HdrParseCfg;
    fn ports(io: &Io, cfg: &HdrParseCfg) -> Self {
        HdrParsePorts {
            s_axis: Stream::sink(io, "s_axis", &cfg.stream()),
            views: cfg
                .views
                .iter()
                .map(|v| {
                    let prefix = format!("m_axis_{}", v.name);
                    RecordStream::source(io, &prefix, view_layout(v, cfg.user_bits))
                })
                .collect(),
            vxlan_port: cfg.tunnels.then(|| io.input("vxlan_port", 16)),
        }
    }
}

/// A pipeline register (no reset, no enable) named `name`.
#[track_caller]
fn stage(d: Sig, name: &str) -> Sig {
    delay(d).named(name)
}

/// A next-header value that starts an IPv6 extension header this parser walks (hop-by-hop,
/// routing, destination options, fragment).
fn is_ext(nh: Sig) -> Sig {
    nh.eq(0u32) | nh.eq(43u32) | nh.eq(60u32) | nh.eq(44u32)
}

/// A [`malformed`] code as a constant.
fn code(c: u32) -> Sig {
    lit(4, c)
}

/// Reject parameters the parser cannot be built with.
fn check(cfg: &HdrParseCfg) -> Result<(), ElabError> {
    const BLOCK: &str = "eth_hdr_parse";
    cfg.stream().check(BLOCK)?;
    if cfg.user_bits > 128 {
        return Err(ElabError::config(
            BLOCK,
            format!(
                "tuser of {} bits: at most 128 are carried into the record",
                cfg.user_bits
            ),
        ));
    }
    if !(64..=1024).contains(&cfg.window) {
        return Err(ElabError::config(
            BLOCK,
            format!(
                "window of {} bytes: it must be 64..=1024 (64 holds two VLAN tags and an IPv6 fixed header)",
                cfg.window
            ),
        ));
    }
    if !(4..=256).contains(&cfg.fifo_depth) || !cfg.fifo_depth.is_power_of_two() {
        return Err(ElabError::config(
            BLOCK,
            format!(
                "fifo_depth {} is not a power of two in 4..=256 (the input credit keeps 3 in hand)",
                cfg.fifo_depth
            ),
        ));
    }
    if cfg.views.is_empty() {
        return Err(ElabError::config(
            BLOCK,
            "a parser needs at least one output view",
        ));
    }
    for (i, v) in cfg.views.iter().enumerate() {
        if cfg.views[..i].iter().any(|u| u.name == v.name) {
            return Err(ElabError::config(
                BLOCK,
                format!("two output views are named `{}`", v.name),
            ));
        }
        if view_layout(v, cfg.user_bits).width() == 0 {
            return Err(ElabError::config(
                BLOCK,
                format!("view `{}` carries no field", v.name),
            ));
        }
    }
    Ok(())
}

/// Build the parser (module `eth_hdr_parse_<stream>_w<window>_f<depth>[_<view><width>...]`).
pub fn eth_hdr_parse(cfg: &HdrParseCfg) -> Result<Block<HdrParsePorts>, ElabError> {
    check(cfg)?;
    let cfg = *cfg;
    // One view with every field: no suffix; else each view's name and record width.
    let views_suffix: String = if cfg.views == ONE_RECORD {
        String::new()
    } else {
        cfg.views
            .iter()
            .map(|v| format!("_{}{}", v.name, view_layout(v, cfg.user_bits).width()))
            .collect()
    };
    let name = format!(
        "eth_hdr_parse_{}_w{}_f{}{}{views_suffix}",
        cfg.stream().suffix(),
        cfg.window,
        cfg.fifo_depth,
        if cfg.tunnels { "_t" } else { "" },
    );
    Block::build(name, cfg, move |p: HdrParsePorts| {
        doc("RX header parser: captures the first `window` bytes of each frame, parses L2 (two");
        doc("tags), IPv4/IPv6 (+4 extension headers), TCP/UDP; one ParseMeta record per frame.");
        let s = &p.s_axis;
        // The fields some view carries; the others are not built.
        let wanted = views::wanted(&cfg);
        let input = capture::input(s);
        let (mut win, close) = capture::window(s, input.beat, cfg.window);
        let len = capture::frame_len(s, input.beat, cfg.fifo_depth);
        let l2 = l2::decode(&mut win, close.v1.get(0));
        let ip = l3::fields(&l2, &mut win);
        let hdr = l3::lengths(&ip, &mut win, cfg.window, &wanted);
        let walked = walk::walk(
            hdr.walk,
            hdr.carry,
            hdr.valid,
            &mut win,
            cfg.window,
            wanted.dst_port > 0,
            cfg.tunnels,
        );
        let fin = finish::finish(l4::decode(walked, p.vxlan_port), &len);
        let (l2f, addrs) = (hdr.early.l2, hdr.early.addrs);
        let rec = ParseMeta {
            tag0_tpid_s: l2f.tag0_tpid_s,
            ethertype: l2f.ethertype,
            tag0_tci: l2f.tag0_tci,
            tag1_tci: l2f.tag1_tci,
            src_ip: addrs.src_ip,
            dst_ip: addrs.dst_ip,
            ip_sum: hdr.ip_sum,
            ..fin.rec
        };
        let stores = views::Stores {
            early: hdr.early.valid,
            sum: hdr.sum_valid,
            late: fin.valid,
        };
        let any_high = views::output(&cfg, &p.views, &rec, stores, close.v1.get(1));
        input.ready.set(!any_high);

        if win.lanes_unused() {
            // The MAC addresses are not parsed: at some widths whole lanes carry only them.
            s.data().unused();
        }
    })
}
