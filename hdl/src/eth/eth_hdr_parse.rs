//! `eth_hdr_parse`: RX header parser. Captures the first `window` bytes of every frame, walks
//! Ethernet (up to two VLAN tags), IPv4 or IPv6 (up to four extension headers) and TCP or UDP,
//! and emits one metadata record ([`PARSE_META`]) per frame, in frame order.
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
//!
//! The checks, their order and the malformed codes are those of the golden model
//! `nicgen_model::parse` (its module docs list them, and which record fields are valid when;
//! [`malformed`] has the same numbers). In short: `l3 != 0` only when every IP header check
//! passed, `l4 != 0` only when every TCP/UDP check passed and the packet is not a fragment,
//! `malformed` names the first failed check (0 for none), and fields that are not valid carry
//! whatever the pipeline computed (not 0). Parameters outside the ranges of [`HdrParseCfg`] are
//! rejected at elaboration.
//!
//! - **Ports**: `s_axis_tdata/tkeep/tvalid/tready/tlast[/tuser]` (8 or a multiple of 16 bits);
//!   per output [`View`] (`HdrParseCfg::views`; one, `meta`, by default) `m_axis_<view>_tdata`
//!   ([`view_layout`]: the record, with `user` = the `tuser` of the frame's last beat on top
//!   when `user_bits > 0`), `_tvalid`, `_tready`: one transfer per frame, in frame order, no
//!   `tkeep`/`tlast`. `s_axis_tready` is a flop (no path from any view's ready).
//! - **Internals.** *Capture*: a byte register per window byte, byte `i` written from lane
//!   `i mod B` (`B` bytes per beat) while a one-hot beat counter points at beat `i / B`: every
//!   cycle, taken or not, so valid/ready stay off the `window · 8` enables. The window *closes*
//!   on the beat holding byte `window − 1` or on `tlast`, whichever comes first. *Parse*: a
//!   pipeline that never stalls (docs/TIMING.md, rule 8), started by the close: (1) the TPID and
//!   EtherType compares; (2) tags and EtherType, the IP fixed header through a 3:1 word mux;
//!   (3) datagram end, L3 checks, the one-hot select of the first header's word; (4-17) the
//!   walk: per extension header two *read* stages (the 4-byte word at the header offset through
//!   an AND-OR mux with a registered one-hot select, every header offset being 2 mod 4; the
//!   first ORs groups of at most 8 words, the second the groups and compares the length byte
//!   with each select's target) and a *compute* stage (checks, next offset, next select from
//!   registered flags: rule 10), then a fifth pair of read stages; (18) TCP/UDP checks and each
//!   protocol's code, (19) the walk's code. Stage `s` runs `s` cycles after the close and the
//!   next frame reaches beat `j` no earlier than `1 + j` cycles after it, so capture byte `i`
//!   still holds this frame in stage `s` iff `s ≤ 1 + i / B`; a stage that reads an older byte
//!   gets a delayed copy, made at elaboration only where needed. *Finish*: the frame length (a
//!   saturating byte counter) and `tuser` wait in a small FIFO; one stage compares lengths, one
//!   picks the code, one registers the record with the flags the claims need, so that the claims
//!   (what the EtherType and the IP header claim, the checksum units' byte ranges) are one LUT
//!   from flops (rule 12). *Addresses' sum*: `ip_sum`, the pseudo-header's address part, through
//!   four free-running stages ([`crate::csum::pseudo::address_sum_pipelined`]), so the checksum
//!   units get 16 bits per frame instead of 256. *Output*: per view, LUT-RAM record stores
//!   indexed in frame order and read asynchronously, each split into parts of at most 40 bits
//!   with pointers of their own (rule 4); per view a credit count of frames closed − records
//!   taken and a flop "count ≥ `fifo_depth` − 2", whose OR is `s_axis_tready`'s next value, so
//!   the stores never overwrite a record not taken (rule 5).
//! - **Latency**: the record is valid [`LATENCY`] (23) cycles after the beat that closes the
//!   window, and no earlier than [`LATENCY_AFTER_LAST`] (7) cycles after the `tlast` beat.
//! - **Throughput**: 1 beat/cycle whatever the frame sizes (1-byte frames back to back
//!   included), as long as the sink keeps fewer than `fifo_depth` records waiting: with a sink
//!   that is always ready, `fifo_depth ≥ LATENCY + 4` never throttles the input. The input is
//!   never held for a frame that is still arriving.
//! - **Cost**: `window` bytes of capture registers, about twenty pipeline stages (the walk's
//!   second read stage and the delayed window bytes are most of the flops), the LUT-RAM record
//!   stores; LUT/FF/Fmax per preset: results/AREA.md, rows `rx eth_hdr_parse` and
//!   `tx eth_hdr_parse`.
//! - **Golden model**: `nicgen_model::parse::parse_headers`; **test**:
//!   `testbench/tests/eth/eth_hdr_parse.rs` (widths 8, 64, 512 × idle × backpressure, plus 16,
//!   32 and 128 bits with other windows and FIFO depths; every code reached; the
//!   wire-formats vectors; latency and back-to-back throughput).

use crate::csum::pseudo::{address_sum_pipelined, ADDRESS_SUM_STAGES};
use crate::record::RecordLayout;
use crate::stream::{stream_in, StreamCfg};
use nicgen_edsl::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

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

/// The metadata record, least significant field first (`m_axis_meta_tdata` bit 0 is
/// `malformed[0]`). Widths in bits; `l3`: 0 none, 1 IPv4, 2 IPv6; `l4`: 0 none, 1 TCP, 2 UDP;
/// IPv4 addresses sit in the low 32 bits of `src_ip`/`dst_ip`; offsets and lengths in bytes.
pub const PARSE_META: RecordLayout = RecordLayout {
    name: "parse_meta",
    fields: &[
        ("malformed", 4),
        ("l3", 2),
        ("l4", 2),
        ("vlan_count", 2),
        ("tag0_tpid_s", 1),
        ("frag", 1),
        ("ipv4_opts", 1),
        ("l3_off", 8),
        ("ip_proto", 8),
        ("frame_len", 16),
        ("ip_end", 16),
        ("l4_off", 16),
        ("l4_len", 16),
        ("src_port", 16),
        ("dst_port", 16),
        ("ethertype", 16),
        ("tag0_tci", 16),
        ("tag1_tci", 16),
        ("src_ip", 128),
        ("dst_ip", 128),
        // The ones'-complement sum of both addresses' 16-bit words (IPv4: the low 32 bits
        // each), folded, not complemented: the pseudo-header's address part.
        ("ip_sum", 16),
        // The claims (`nicgen_model::parse::ParseResult::claims`), valid in every record:
        // what the EtherType claims when L2 is intact (0 none, 1 IPv4, 2 IPv6); what the IP
        // header claims when it parsed, its extension headers were walked and it is not a
        // fragment (0 none, 1 TCP, 2 UDP); an outer VLAN tag (L2 intact, a tag); a broken
        // extension-header chain; and the byte ranges of the checksum units, clipped to the
        // frame when a header is cut.
        ("l3_claim", 2),
        ("l4_claim", 2),
        ("vlan", 1),
        ("ext_bad", 1),
        ("csum_l3_off", 16),
        ("csum_l4_off", 16),
        ("csum_end", 16),
    ],
};

/// The fields of [`PARSE_META`] that only RSS and the VLAN strip use: the TX path's record
/// ([`CSUM_RECORD`]) leaves them out.
pub const RSS_VLAN_FIELDS: [&str; 8] = [
    "tag0_tpid_s",
    "ethertype",
    "tag0_tci",
    "tag1_tci",
    "src_ip",
    "dst_ip",
    "src_port",
    "dst_port",
];

/// Which [`PARSE_META`] fields a [`View`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fields {
    All,
    Except(&'static [&'static str]),
    Only(&'static [&'static str]),
}

impl Fields {
    pub fn has(&self, name: &str) -> bool {
        match self {
            Fields::All => true,
            Fields::Except(v) => !v.contains(&name),
            Fields::Only(v) => v.contains(&name),
        }
    }
}

/// One output record stream of the parser, `m_axis_<name>_tdata/_tvalid/_tready`: one record
/// per frame, in frame order, with the [`PARSE_META`] fields `fields` picks (in that order),
/// plus `user` when the input has a `tuser` ([`view_layout`]). Each view has record stores,
/// read pointers, a count and a valid of its own, so that its consumer takes its records
/// whenever it is ready, whatever the other views' consumers do (no consumer's ready reaches
/// another's logic); a frame's fields are stored once per view that carries them. The input
/// stops while any view may hold `fifo_depth` records (its credit count, a cycle late, is
/// `fifo_depth - 2` or more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct View {
    pub name: &'static str,
    pub fields: Fields,
}

/// One stream, `m_axis_meta_*`, with every field (the default).
pub const ONE_RECORD: &[View] = &[View {
    name: "meta",
    fields: Fields::All,
}];

/// One stream, `m_axis_meta_*`, without [`RSS_VLAN_FIELDS`]: what TX checksum insertion
/// needs. The addresses are still parsed for `ip_sum`; the other fields are not built.
pub const CSUM_RECORD: &[View] = &[View {
    name: "meta",
    fields: Fields::Except(&RSS_VLAN_FIELDS),
}];

/// The record of `view` for `user_bits` of `tuser`: the [`PARSE_META`] fields it carries, in
/// that order, and `user` on top when `user_bits > 0`.
pub fn view_layout(view: &View, user_bits: u32) -> RecordLayout {
    if user_bits == 0 && view.fields == Fields::All {
        return PARSE_META;
    }
    type Layouts = BTreeMap<(Fields, u32), &'static [(&'static str, u32)]>;
    static LAYOUTS: Mutex<Layouts> = Mutex::new(BTreeMap::new());
    let mut m = LAYOUTS.lock().unwrap_or_else(|e| e.into_inner());
    let f = *m.entry((view.fields, user_bits)).or_insert_with(|| {
        let mut f: Vec<(&'static str, u32)> = PARSE_META
            .fields
            .iter()
            .copied()
            .filter(|(n, _)| view.fields.has(n))
            .collect();
        if user_bits > 0 {
            f.push(("user", user_bits));
        }
        Box::leak(f.into_boxed_slice())
    });
    RecordLayout {
        name: "parse_view",
        fields: f,
    }
}

/// The record of a one-view parser with every field ([`ONE_RECORD`]).
pub fn meta_layout(user_bits: u32) -> RecordLayout {
    view_layout(&ONE_RECORD[0], user_bits)
}

/// Parameters of [`eth_hdr_parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HdrParseCfg {
    /// Input bus width: 8 or a multiple of 16 bits.
    pub data_bits: u32,
    /// Input `tuser` width (0..=64; 0 = no `tuser`); the last beat's value lands in `user`.
    pub user_bits: u32,
    /// Bytes captured and parsed per frame: 64..=1024.
    pub window: u32,
    /// Records that may wait on the output (a power of two, 4..=256); [`LATENCY`] + 4 or more
    /// for full rate with a sink that is always ready (LUTRAM: 32 deep costs what 16 does on
    /// Xilinx).
    pub fifo_depth: u32,
    /// The output streams ([`View`]); [`ONE_RECORD`] by default.
    pub views: &'static [View],
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
        }
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

/// The captured window as the parse stages see it.
struct Window {
    bytes_per_beat: u32,
    window: u32,
    data: Sig,
    /// Write enable per beat index (the beat holding bytes `k·B..`).
    wen: Vec<Sig>,
    bank: HashMap<u32, Sig>,
    copies: HashMap<(u32, u32), Sig>,
    lanes_used: Vec<bool>,
}

impl Window {
    /// The capture register of byte `i` (made on first use).
    fn bank(&mut self, i: u32) -> Sig {
        if let Some(s) = self.bank.get(&i) {
            return *s;
        }
        let b = self.bytes_per_beat;
        let lane = i % b;
        self.lanes_used[lane as usize] = true;
        let r = reg(8)
            .enable(self.wen[(i / b) as usize])
            .named(&format!("win_b{i}"));
        r.set(self.data.slice(8 * lane + 7, 8 * lane));
        self.bank.insert(i, r);
        r
    }

    /// Byte `i` of the frame as seen by pipeline stage `stage`: the capture register while the
    /// next frame cannot have overwritten it yet, else a copy delayed from the last stage that
    /// could still read it.
    fn at(&mut self, i: u32, stage: u32) -> Sig {
        if i >= self.window {
            return lit(8, 0u32);
        }
        let intact_until = 1 + i / self.bytes_per_beat;
        if stage <= intact_until {
            return self.bank(i);
        }
        if let Some(s) = self.copies.get(&(i, stage)) {
            return *s;
        }
        let prev = self.at(i, stage - 1);
        let r = delay(prev).named(&format!("win_b{i}_s{stage}"));
        self.copies.insert((i, stage), r);
        r
    }

    /// Bytes `i..i+n` as a big-endian value (byte `i` most significant).
    fn be(&mut self, i: u32, n: u32, stage: u32) -> Sig {
        let parts: Vec<Sig> = (i..i + n).map(|j| self.at(j, stage)).collect();
        cat(&parts)
    }

    /// Word `m`: bytes `2 + 4m .. 6 + 4m` (every header offset is 2 mod 4).
    fn word(&mut self, m: u32, stage: u32) -> Sig {
        self.be(2 + 4 * m, 4, stage)
    }
}

fn stage(d: Sig, name: &str) -> Sig {
    delay(d).named(name)
}

fn is_ext(nh: Sig) -> Sig {
    nh.eq(0u32) | nh.eq(43u32) | nh.eq(60u32) | nh.eq(44u32)
}

fn code(c: u32) -> Sig {
    lit(4, c)
}

/// Words a read stage can see: the first read is the L4 header of IPv4 (words 8..=20) or the
/// first header after IPv6 (13..=15); after `k` extension headers the offset is at least
/// 54 + 8k (word 13 + 2k). Words past `(window - 3) / 4` have no byte in the window.
fn read_range(k: u32, window: u32) -> (u32, u32) {
    let last = (window - 3) / 4;
    if k == 0 {
        (8, last.min(20))
    } else {
        (13 + 2 * k, last)
    }
}

/// A one-hot select: `(word index, bit)`.
type Sel = Vec<(u32, Sig)>;

/// The two registers of a select bit: `sel` (no reset) and `sel_l4` (reset to 0).
fn sel_regs(hit: Sig, name: &str) -> (Sig, Sig) {
    let l4 = reg_init(1, 0u32).named(&format!("{name}_l4"));
    l4.set(hit);
    (stage(hit, name), l4)
}

/// Three registers of the same value for a select with a wide fan-out, each driving a share
/// of it. They differ in reset (none, to 0, to all ones; the stage's valid bit gates what they
/// select, so the reset value does not matter) so that synthesis does not merge them.
fn fanout_regs(x: Sig, name: &str) -> [Sig; 3] {
    let w = x.width();
    let b = reg_init(w, 0u32).named(&format!("{name}_b"));
    let c = reg_init(w, (1u64 << w) - 1).named(&format!("{name}_c"));
    b.set(x);
    c.set(x);
    [stage(x, &format!("{name}_a")), b, c]
}

/// Bits per part of a record store (at most): each part's read pointer drives about
/// `STORE_PART_BITS / 2` LUT RAM cells on ECP5 (16 × 4 bits each, two per 4 bits at depth 32),
/// few enough that the pointer sits by its cells (docs/TIMING.md, rule 4).
const STORE_PART_BITS: u32 = 40;

/// One part of a record store: a LUT RAM holding `width` bits of the record, whose write and
/// read pointers both start at `offset` (the record `i` sits at `(i + offset) mod depth`).
struct StorePart {
    mem: Mem,
    offset: u32,
}

/// A record store written in order at `en`, split into parts of at most [`STORE_PART_BITS`]
/// bits (a multiple of 4, the width of an ECP5 LUT RAM cell), the first part's pointers
/// starting at `offset0`, the next ones at `offset0 + 1`, ... Each part has its own write and
/// read pointer, so that no address net spans the whole store (docs/TIMING.md, rule 4). The
/// copies start at different values, so that synthesis does not merge them (they are otherwise
/// the same counter), at no cost.
fn store_write(name: &str, word: Sig, en: Sig, depth: u32, offset0: u32) -> Vec<StorePart> {
    let aw = clog2(depth as u64);
    let n = word.width().div_ceil(STORE_PART_BITS);
    let size = word.width().div_ceil(n).next_multiple_of(4);
    (0..n)
        .map(|i| {
            let lo = i * size;
            let hi = (lo + size).min(word.width()) - 1;
            let offset = (offset0 + i) % depth;
            let mem = memory(&format!("{name}_p{offset}"), hi - lo + 1, depth);
            let wr = reg_init(aw, offset).named(&format!("{name}_wr_p{offset}"));
            mem.write(en, wr, word.slice(hi, lo));
            wr.set_if(en, wr + 1u32);
            StorePart { mem, offset }
        })
        .collect()
}

/// The record the read pointers point at (the parts in the order of [`store_write`]); every
/// pointer steps at `next`.
fn store_read(name: &str, parts: &[StorePart], next: Sig, depth: u32) -> Sig {
    let aw = clog2(depth as u64);
    let words: Vec<Sig> = parts
        .iter()
        .rev()
        .map(|part| {
            let rd = reg_init(aw, part.offset).named(&format!("{name}_rd_p{}", part.offset));
            rd.set_if(next, rd + 1u32);
            part.mem.read_async(rd)
        })
        .collect();
    cat(&words)
}

/// AND-OR mux with a registered one-hot select (bytes beyond the window fold to 0).
fn pick(sel: &[(u32, Sig)], mut at: impl FnMut(u32) -> Sig, width: u32) -> Sig {
    let terms: Vec<Sig> = sel
        .iter()
        .map(|(j, bit)| at(*j) & bit.repl(width))
        .collect();
    or_tree(terms, width)
}

/// OR as a balanced tree (a chain maps to a LUT level more); 0 for no terms.
fn or_tree(mut terms: Vec<Sig>, width: u32) -> Sig {
    if terms.is_empty() {
        return lit(width, 0u32);
    }
    while terms.len() > 1 {
        terms = terms
            .chunks(2)
            .map(|c| if c.len() == 2 { c[0] | c[1] } else { c[0] })
            .collect();
    }
    terms[0]
}

/// The first level of a read stage's mux: the select in groups of at most 8 words (an 8-term
/// AND-OR is two LUT4 levels), as even as possible.
fn groups(sel: &[(u32, Sig)]) -> Vec<Sel> {
    let g = sel.len().div_ceil(8).max(1);
    let size = sel.len().div_ceil(g).max(1);
    sel.chunks(size).map(|c| c.to_vec()).collect()
}

/// State of the extension-header walk between walk stages.
#[derive(Clone)]
struct Walk {
    /// One-hot word select for the next read stage: `(word index, bit)` (all 0 when the word
    /// is beyond the window).
    sel: Vec<(u32, Sig)>,
    /// A second register of the same select for the UDP length and TCP data offset muxes, so
    /// each copy drives 32 or 20 AND-OR inputs instead of 52. It has a reset (to 0, harmless:
    /// the stage is not valid then) so that synthesis does not merge it with `sel`, which has
    /// none.
    sel_l4: Vec<(u32, Sig)>,
    /// Offset of the current header (bytes from the frame start).
    p: Sig,
    /// `ip_end - p`, 18 bits two's complement (negative only in frames whose L3 checks
    /// failed): carried along the walk, so no read stage subtracts before it compares.
    rem: Sig,
    /// The word index `m` (`p / 4`) the next read stage derives its select differences from:
    /// that of `p`, or anything when the walk is not stepping (its select does not matter
    /// then), so it is the adder's output without the `walking` mux, and a register of its own
    /// (not on `p`'s fan-out).
    p_sel: Option<Sig>,
    /// Protocol / next-header value of the header at `p`.
    nh: Sig,
    /// `nh == 44` (a fragment header), registered with `nh` so that the read stage's selects
    /// are not behind the compare.
    nh_frag: Sig,
    walking: Sig,
    latched: Sig,
    ecode: Sig,
    frag: Sig,
    ports: Option<Sig>,
    ulen: Option<Sig>,
    doff: Option<Sig>,
    /// TCP/UDP fields read by the last read stage, taken (if `latch`) in the next stage, so the
    /// latch mux is not behind the word mux.
    pending: Option<Pending>,
    /// The last step's header ran past the payload (`len >= rem / 8`), applied in the next
    /// stage, so the length compare is not behind the other checks.
    trunc_len: Option<Sig>,
}

#[derive(Clone, Copy)]
struct Pending {
    latch: Sig,
    word: Sig,
    ulen: Sig,
    doff: Sig,
}

impl Walk {
    /// The state one stage on, through the first read stage: the select is used up there
    /// (by the group muxes), and so is `p_sel` (by the next select's differences). At the first
    /// read `latched` and `ecode` are still constants, and at the last `nh_frag` is.
    fn delayed(&self, st: u32, first: bool, last: bool) -> Walk {
        let d = |x: Sig, nm: &str| stage(x, &format!("{nm}_s{st}"));
        let o = |x: Option<Sig>, nm: &str| x.map(|v| d(v, nm));
        Walk {
            sel: Vec::new(),
            sel_l4: Vec::new(),
            p: d(self.p, "p"),
            rem: d(self.rem, "rem"),
            p_sel: None,
            nh: d(self.nh, "nh"),
            nh_frag: if last {
                self.nh_frag
            } else {
                d(self.nh_frag, "nh_frag")
            },
            walking: d(self.walking, "walking"),
            latched: if first {
                self.latched
            } else {
                d(self.latched, "latched")
            },
            ecode: if first {
                self.ecode
            } else {
                d(self.ecode, "ecode")
            },
            frag: d(self.frag, "frag"),
            ports: o(self.ports, "ports"),
            ulen: o(self.ulen, "ulen"),
            doff: o(self.doff, "doff"),
            pending: None,
            trunc_len: None,
        }
    }

    /// Ports, UDP length and TCP data offset with the pending read taken in.
    fn settle(&self) -> (Sig, Sig, Sig) {
        let p = self.pending.expect("a read stage came before");
        let take = |new: Sig, old: Option<Sig>| match old {
            Some(o) => mux(p.latch, new, o),
            None => new,
        };
        (
            take(p.word, self.ports),
            take(p.ulen, self.ulen),
            take(p.doff, self.doff),
        )
    }
}

/// Fields carried unchanged from the L3 stage to the finish.
#[derive(Clone, Copy)]
struct Carry {
    vc: Sig,
    v4: Sig,
    v6: Sig,
    ip_end: Sig,
    hdr_end: Sig,
    ver_bad: Sig,
    ihl_bad: Sig,
    totlen_bad: Sig,
    opts: Sig,
}

impl Carry {
    fn map(&self, f: &mut impl FnMut(Sig, &str) -> Sig) -> Carry {
        Carry {
            vc: f(self.vc, "vc"),
            v4: f(self.v4, "v4"),
            v6: f(self.v6, "v6"),
            ip_end: f(self.ip_end, "ip_end"),
            hdr_end: f(self.hdr_end, "hdr_end"),
            ver_bad: f(self.ver_bad, "ver_bad"),
            ihl_bad: f(self.ihl_bad, "ihl_bad"),
            totlen_bad: f(self.totlen_bad, "totlen_bad"),
            opts: f(self.opts, "ipv4_opts"),
        }
    }
}

pub fn eth_hdr_parse(cfg: &HdrParseCfg) -> Result<Rc<ModuleDef>, ElabError> {
    const BLOCK: &str = "eth_hdr_parse";
    let scfg = StreamCfg::new(cfg.data_bits, cfg.user_bits);
    scfg.check(BLOCK)?;
    if cfg.user_bits > 64 {
        return Err(ElabError::config(
            BLOCK,
            format!(
                "tuser of {} bits: at most 64 are carried into the record",
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
        let names: &[&str] = match v.fields {
            Fields::All => &[],
            Fields::Except(n) | Fields::Only(n) => n,
        };
        if let Some(n) = names
            .iter()
            .find(|n| !PARSE_META.fields.iter().any(|f| f.0 == **n))
        {
            return Err(ElabError::config(
                BLOCK,
                format!("view `{}` names `{n}`, which is not a record field", v.name),
            ));
        }
    }
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
        "eth_hdr_parse_{}_w{}_f{}{views_suffix}",
        scfg.suffix(),
        cfg.window,
        cfg.fifo_depth,
    );
    Module::build(name, move || {
        doc("RX header parser: captures the first `window` bytes of each frame, parses L2 (two");
        doc("tags), IPv4/IPv6 (+4 extension headers), TCP/UDP; one parse_meta record per frame.");
        let s = stream_in("s_axis", &scfg);
        let b = cfg.data_bits / 8;
        let w = cfg.window;
        let depth = cfg.fifo_depth;
        let aw = clog2(depth as u64);

        // ---------------------------------------------------------------- capture
        // The input ready, in two flops: `ready` for the capture's own logic and, holding the
        // complement so that synthesis keeps it apart, `ready_port_n` for `s_axis_tready`, so
        // that each can sit by its loads (docs/TIMING.md, rule 3).
        let ready = reg_init(1, 1u32).named("ready");
        let ready_port_n = reg_init(1, 0u32).named("ready_port_n");
        s.ready().set(!ready_port_n);
        let acc = (s.valid() & ready).named("beat");
        let last = s.last();
        let k_beats = w.div_ceil(b);
        let wsel = reg_init(k_beats, 1u32).named("beat_sel");
        let past = reg_init(1, 0u32).named("past_window");
        // A copy of the selector's last bit for the close logic (the selector itself drives
        // the enables of the whole window).
        let wsel_last = reg_init(1, (k_beats == 1) as u32).named("at_window_end");
        wsel_last.set_if(
            acc,
            if k_beats == 1 {
                last
            } else {
                !last & wsel.bit(k_beats - 2)
            },
        );
        let shifted = if k_beats == 1 {
            lit(1, 0u32)
        } else {
            cat(&[wsel.slice(k_beats - 2, 0), lit(1, 0u32)])
        };
        wsel.set_if(acc, mux(last, lit(k_beats, 1u32), shifted));
        past.set_if(acc, !last & (past | wsel_last));
        let close = (acc & !past & (last | wsel_last)).named("close");
        // The close, registered for the input credit (at the end). It holds the complement so
        // that synthesis keeps it apart from `v1` (the same close, registered, which drives
        // the whole of stage 1), and the credit's flags do not sit behind `v1`'s fan-out.
        let close_n_q = reg_init(1, 1u32).named("credit_close_n");
        close_n_q.set(!close);
        let close_q = !close_n_q;
        let wen: Vec<Sig> = (0..k_beats)
            // The beat slot is written every cycle, whatever is on the bus: a beat that is not
            // (yet) taken is rewritten when it is, and the slot of beat `j` of a new frame is
            // reached no earlier than a real beat `j` could be, so nothing the parse still
            // reads is touched (see the module docs). Valid and ready stay off the enables.
            .map(|k| wsel.bit(k).named(&format!("win_we{k}")))
            .collect();
        let mut win = Window {
            bytes_per_beat: b,
            window: w,
            data: s.data(),
            wen,
            bank: HashMap::new(),
            copies: HashMap::new(),
            lanes_used: vec![false; b as usize],
        };

        // Frame length: bytes before this beat, plus the kept bytes of the last beat.
        let off = reg_init(16, 0u32).named("frame_off");
        let ovf = reg_init(1, 0u32).named("frame_off_ovf");
        let off_next = off.add_wide(b as u64);
        off.set_if(acc, mux(last, lit(16, 0u32), off_next.trunc(16)));
        ovf.set_if(acc, !last & (ovf | off_next.msb()));
        let kw = clog2(b as u64 + 1);
        let keep = s.keep();
        let mut nkeep = lit(kw, 0u32);
        for i in 0..b {
            let edge = if i + 1 < b {
                keep.bit(i) & !keep.bit(i + 1)
            } else {
                keep.bit(i)
            };
            nkeep = nkeep | mux(edge, lit(kw, (i + 1) as u64), lit(kw, 0u32));
        }
        // The beat's offset, overflow flag, kept bytes and `tuser` are registered every cycle
        // (no enable: `beat` stays off them); the cycle after a last beat adds them up and
        // pushes the length.
        let off_q = stage(off, "frame_off_q");
        let ovf_q = stage(ovf, "frame_off_ovf_q");
        let nkeep_q = stage(nkeep, "last_keep_q");
        let len_sum = off_q.add_wide(nkeep_q.zext(16));
        let frame_len =
            mux(ovf_q | len_sum.msb(), lit(16, 0xFFFFu32), len_sum.trunc(16)).named("frame_len");
        // The length (and `tuser`) is registered once more before the LUT-RAM write, so that
        // the adder, the saturation and the RAM's write data are not one cycle.
        let len_push = reg_init(1, 0u32).named("len_push");
        len_push.set(stage(acc & last, "len_push_early"));
        let user_q = s.user().map(|u| stage(u, "user_q"));
        let len_word = stage(
            match user_q {
                Some(u) => cat(&[u, frame_len]),
                None => frame_len,
            },
            "len_word",
        );
        let len_mem = memory("len_fifo", len_word.width(), depth);
        let len_wr = reg_init(aw + 1, 0u32).named("len_wr");
        let len_rd = reg_init(aw + 1, 0u32).named("len_rd");
        len_mem.write(len_push, len_wr.trunc(aw), len_word);
        len_wr.set_if(len_push, len_wr + 1u32);
        let len_empty = len_wr.eq(len_rd).named("len_empty");
        // The oldest length waits in a register (the LUTRAM read is not on the compare path).
        let head_v = reg_init(1, 0u32).named("len_head_valid");
        let len_head = reg(len_word.width()).named("len_head");
        let head_load = wire(1);
        len_head.set_if(head_load, len_mem.read_async(len_rd.trunc(aw)));
        len_rd.set_if(head_load, len_rd + 1u32);

        // ---------------------------------------------------------------- stage 1: L2
        let v1 = reg_init(1, 0u32).named("v1");
        v1.set(close);
        let tpid0 = win.be(12, 2, S_L2);
        let tci0 = win.be(14, 2, S_L2);
        let tpid1 = win.be(16, 2, S_L2);
        let tci1 = win.be(18, 2, S_L2);
        let et2 = win.be(20, 2, S_L2);
        // An IPv6 next header (byte l3 + 6) is an extension header, for each tag count.
        let ext_at: Vec<Sig> = (0..3u32)
            .map(|t| {
                stage(
                    is_ext(win.at(20 + 4 * t, S_L2)),
                    &format!("nh_ext6_t{t}_s1"),
                )
            })
            .collect();
        // The compares only; stage 2 combines them (the inner tag counts after an outer one).
        let tag = |x: Sig| x.eq(0x8100u32) | x.eq(0x88a8u32);
        let tag0 = stage(tag(tpid0), "tag0_s1");
        let tag1 = stage(tag(tpid1), "tag1_s1");
        let et_is = |v: u32, nm: &str| {
            stage(
                cat(&[et2.eq(v as u64), tpid1.eq(v as u64), tpid0.eq(v as u64)]),
                nm,
            )
        };
        let et_v4 = et_is(0x0800, "et_v4_s1");
        let et_v6 = et_is(0x86dd, "et_v6_s1");
        let s0 = tpid0.eq(0x88a8u32);
        let l2_1 = stage(cat(&[s0, tci1, tci0]), "l2_s1");
        // IPv4 MF or a fragment offset, for each tag count (bytes l3 + 6, l3 + 7), so that
        // stage 2 only picks.
        let frag_at: Vec<Sig> = (0..3u32)
            .map(|t| {
                let x = win.be(20 + 4 * t, 2, S_L2);
                stage(
                    x.bit(13) | x.slice(12, 0).or_reduce(),
                    &format!("frag4_t{t}_s1"),
                )
            })
            .collect();

        // ---------------------------------------------------------------- stage 2: L3 fields
        let v2 = reg_init(1, 0u32).named("v2");
        v2.set(v1);
        let t0 = tag0;
        let t1 = (tag0 & tag1).named("tag1");
        let vc1 = cat(&[t1, t0 & !t1]).named("vc");
        let pick_et = |x: Sig, y: Sig, z: Sig| mux(t1, z, mux(t0, y, x));
        let v4_1 = pick_et(et_v4.bit(0), et_v4.bit(1), et_v4.bit(2)).named("v4");
        let v6_1 = pick_et(et_v6.bit(0), et_v6.bit(1), et_v6.bit(2)).named("v6");
        let et = pick_et(
            win.be(12, 2, S_L3),
            win.be(16, 2, S_L3),
            win.be(20, 2, S_L3),
        );
        let early_l2 = cat(&[l2_1, et]);
        // Word j of the IP header: word 3 + tags + j of the frame.
        let mut d = Vec::new();
        for j in 0..3 {
            let a = win.word(3 + j, S_L3);
            let bb = win.word(4 + j, S_L3);
            let c = win.word(5 + j, S_L3);
            d.push(case(vc1, &[(0, a), (1, bb)], c).named(&format!("ip_w{j}")));
        }
        let ver = d[0].slice(31, 28);
        let ihl = d[0].slice(27, 24);
        let len16 = mux(v4_1, d[0].slice(15, 0), d[1].slice(31, 16));
        let frag4 = case(vc1, &[(0, frag_at[0]), (1, frag_at[1])], frag_at[2]);
        let nh0 = mux(v4_1, d[2].slice(23, 16), d[1].slice(15, 8));
        // The first header's word less 3, for IPv4 (3 + tags + IHL), so that stage 3 only
        // decodes.
        let m0 = (ihl.zext(5) + vc1.zext(5)).named("m0");
        let ext6 = case(vc1, &[(0, ext_at[0]), (1, ext_at[1])], ext_at[2]);
        // The addresses are picked in stage 3, from selects registered here in three copies
        // (each drives a third of the 256-bit muxes).
        let vc_addr = fanout_regs(vc1, "vc_addr_s2");
        let v4_addr = fanout_regs(v4_1, "v4_addr_s2");
        let l2_2 = stage(early_l2, "l2_s2");
        let vc2 = stage(vc1, "vc_s2");
        let v4_2 = stage(v4_1, "v4_s2");
        let v6_2 = stage(v6_1, "v6_s2");
        let ver2 = stage(ver, "ver_s2");
        let ihl2 = stage(ihl, "ihl_s2");
        let len2 = stage(len16, "len_s2");
        let frag2 = stage(frag4, "frag4_s2");
        let nh2 = stage(nh0, "nh_s2");
        let m0_2 = stage(m0, "m0_s2");
        let ext6_2 = stage(ext6, "nh_ext6_s2");

        // ---------------------------------------------------------------- stage 3: lengths
        let v3 = reg_init(1, 0u32).named("v3");
        v3.set(v2);
        // Source and destination address: IPv4 words 3 and 4 of the IP header, IPv6 words 2..5
        // and 6..9 (word j of the IP header is word 3 + tags + j of the frame).
        let addr_word = |j: u32, win: &mut Window| {
            let sel = vc_addr[(j as usize) % 3];
            let a = win.word(3 + j, S_L3 + 1);
            let bb = win.word(4 + j, S_L3 + 1);
            let c = win.word(5 + j, S_L3 + 1);
            case(sel, &[(0, a), (1, bb)], c).named(&format!("addr_w{j}"))
        };
        let addr: Vec<Sig> = (2..10).map(|j| addr_word(j, &mut win)).collect();
        let zero = lit(32, 0u32);
        // Most significant word first: dst, then src; IPv4 in the low word of each.
        let v4_words = [zero, zero, zero, addr[2], zero, zero, zero, addr[1]];
        let v6_words = [
            addr[4], addr[5], addr[6], addr[7], addr[0], addr[1], addr[2], addr[3],
        ];
        let addrs: Vec<Sig> = (0..8)
            .map(|i| mux(v4_addr[i % 3], v4_words[i], v6_words[i]))
            .collect();
        // The wide fields go into the output store, in frame order, one cycle later from a
        // register: the tag-count and IPv4/IPv6 picks (three LUTs) and the LUT RAM's write
        // path do not fit one cycle together.
        // The store is read many stages later, when the record closes.
        // A field is built when some view carries it.
        let wanted = |n: &str| cfg.views.iter().any(|v| v.fields.has(n));
        let addr_q = stage(cat(&addrs), "addr_s4");
        let l2_q = stage(l2_2, "l2_s4");
        let v_early = reg_init(1, 0u32).named("early_valid");
        v_early.set(v3);
        // `addr_q` is {dst, src}; `l2_q` is {tag0_tpid_s, tag1_tci, tag0_tci, ethertype}.
        let early_fields: Vec<(&str, Sig)> = vec![
            ("ethertype", l2_q.slice(15, 0)),
            ("tag0_tci", l2_q.slice(31, 16)),
            ("tag1_tci", l2_q.slice(47, 32)),
            ("tag0_tpid_s", l2_q.slice(48, 48)),
            ("src_ip", addr_q.slice(127, 0)),
            ("dst_ip", addr_q.slice(255, 128)),
        ];
        // The L2 fields no view carries are not built.
        if !RSS_VLAN_FIELDS[..4].iter().all(|n| wanted(n)) {
            l2_q.unused();
        }
        // The addresses' ones'-complement sum (`ip_sum`, the pseudo-header's address part),
        // from the same register, through a free-running pipeline into a store of its own: the
        // checksum units take these 16 bits instead of the 256 address bits.
        let ip_sum = address_sum_pipelined(addr_q, "ip_sum");
        let mut v_sum = v_early;
        for k in 0..ADDRESS_SUM_STAGES {
            let r = reg_init(1, 0u32).named(&format!("ip_sum_valid{k}"));
            r.set(v_sum);
            v_sum = r;
        }
        // The L3 offset (14 + 4 * tags) and the IPv6 header end (40 more) as constants picked
        // by the tag count, so that each sum below is one adder.
        let by_tags = |base: u32| {
            case(
                vc2,
                &[(0, lit(8, base)), (1, lit(8, base + 4))],
                lit(8, base + 8),
            )
        };
        let l3_off = by_tags(14).named("l3_off");
        let l3_end6 = by_tags(54).named("l3_end6");
        let hdr_len = cat(&[ihl2, lit(2, 0u32)]);
        let hdr_end = (l3_off + hdr_len.zext(8)).named("hdr_end");
        // IPv4: l3 + total length; IPv6: l3 + 40 + payload length.
        let ip_end = (len2.zext(17) + mux(v4_2, l3_off, l3_end6).zext(17)).named("ip_end");
        let ver_bad = mux(v4_2, ver2.ne(4u32), ver2.ne(6u32));
        let ihl_bad = ihl2.lt(5u32);
        let totlen_bad = len2.lt(hdr_len.zext(16));
        let opts = ihl2.gt(5u32);
        let p0 = mux(v4_2, hdr_end, l3_end6).zext(16);
        // ip_end - p0: the L3 offset cancels (IPv4: total length - IHL * 4; else the payload
        // length).
        let rem0 = mux(v4_2, len2.zext(18) - hdr_len.zext(18), len2.zext(18));
        let walking0 = v6_2 & ext6_2;
        let carry = Carry {
            vc: vc2,
            v4: v4_2,
            v6: v6_2,
            ip_end,
            hdr_end,
            ver_bad,
            ihl_bad,
            totlen_bad,
            opts,
        };
        let mut carry = carry.map(&mut |x, n| stage(x, &format!("{n}_s3")));
        // One-hot of the first header's word: m3 + IHL (IPv4) or m3 + 10 (IPv6), m3 = 3 + tags.
        let (lo0, hi0) = read_range(0, w);
        let (sel0, sel0_l4): (Sel, Sel) = (lo0..=hi0)
            .map(|j| {
                let v4hit = if (3..=3 + 17).contains(&j) {
                    m0_2.eq((j - 3) as u64)
                } else {
                    lit(1, 0u32)
                };
                let v6hit = if (13..=15).contains(&j) {
                    vc2.eq((j - 13) as u64)
                } else {
                    lit(1, 0u32)
                };
                let (a, b) = sel_regs(mux(v4_2, v4hit, v6hit), &format!("sel{j}_s3"));
                ((j, a), (j, b))
            })
            .unzip();
        let mut walk = Walk {
            sel: sel0,
            sel_l4: sel0_l4,
            p: stage(p0, "p_s3"),
            rem: stage(rem0, "rem_s3"),
            // Only an IPv6 frame walks.
            p_sel: Some(stage(l3_end6.zext(16).slice(15, 2), "m_sel_s3")),
            nh: stage(nh2, "nh_s3"),
            nh_frag: stage(nh2.eq(44u32), "nh_frag_s3"),
            walking: stage(walking0, "walking_s3"),
            latched: lit(1, 0u32),
            ecode: lit(4, 0u32),
            frag: stage(v4_2 & frag2, "frag_s3"),
            ports: None,
            ulen: None,
            doff: None,
            pending: None,
            trunc_len: None,
        };
        let mut valid = v3;

        // ---------------------------------------------------------------- stages 4..17: walk
        // Per extension header two read stages (the word at `p`, and the TCP/UDP fields there if
        // the walk has arrived: first an AND-OR per group of at most 8 words, registered, then
        // the OR of the groups and the next select's length compares) and a compute stage
        // (checks, next offset, next select); a fifth header's read stages only latch TCP/UDP
        // fields or give up (`EXT_LIMIT`).
        let mut st = S_WALK0;
        let mut rem_l4 = None;
        let mut l4_pre = None;
        let n = |x: &str, st: u32| format!("{x}_s{st}");
        for k in 0..=MAX_EXT_HEADERS {
            let last = k == MAX_EXT_HEADERS;
            // ---------------------------------------- read, first half: the mux per group
            let vr = reg_init(1, 0u32).named(&format!("v{st}"));
            vr.set(valid);
            valid = vr;
            if let Some(tl) = walk.trunc_len {
                walk.walking = walk.walking & !tl;
                walk.ecode = mux(tl, code(malformed::EXT_TRUNC), walk.ecode);
                walk.trunc_len = None;
            }
            // The next select's length compares, per pair of words: when the header is at word
            // `x`, the next one is at word `j = x + 2 + 2 * len`, so "the next header is at `j`"
            // is the length byte of word `x` equal to `(j - 2 - x) / 2`. Per word, that compare
            // against a constant is registered from the window a stage earlier (the byte is the
            // same); the select picks it as it picks the word, per group, and the second read
            // stage ORs the groups: one LUT from registers to the select's flag, instead of a
            // compare behind the groups' OR (docs/TIMING.md, rule 10).
            let next_range = (!last).then(|| read_range(k + 1, w));
            let pairs = |x: u32| {
                next_range
                    .into_iter()
                    .flat_map(|(lo, hi)| lo..=hi)
                    .filter(move |&j| j >= x + 2 && (j - x) % 2 == 0)
                    .map(move |j| (j, (j - 2 - x) / 2))
            };
            let mut len_to: HashMap<(u32, u32), Sig> = HashMap::new();
            for &(x, _) in &walk.sel {
                for (_, v) in pairs(x) {
                    let f = if 4 * x + 3 >= w {
                        lit(1, 0u32)
                    } else {
                        let len = win.at(4 * x + 3, st - 1);
                        stage(len.eq(v as u64), &n(&format!("len_w{x}_is{v}"), st))
                    };
                    len_to.insert((x, v), f);
                }
            }
            let (mut gw, mut gu, mut gd) = (Vec::new(), Vec::new(), Vec::new());
            // Per next-select word `j`: its flag per group.
            let mut gto: Vec<(u32, Vec<Sig>)> = next_range
                .map(|(lo, hi)| (lo..=hi).map(|j| (j, Vec::new())).collect())
                .unwrap_or_default();
            for (g, (gs, gs_l4)) in groups(&walk.sel)
                .iter()
                .zip(groups(&walk.sel_l4).iter())
                .enumerate()
            {
                let word = pick(gs, |x| win.word(x, st), 32);
                let ulen = pick(gs_l4, |x| win.be(4 * x + 6, 2, st), 16);
                // TCP data offset: the high nibble of byte 12.
                let doff = pick(gs_l4, |x| win.at(4 * x + 14, st).slice(7, 4), 4);
                // The flags from `sel_l4`, the copy with the smaller fan-out.
                for (j, flags) in gto.iter_mut() {
                    let terms: Vec<Sig> = gs_l4
                        .iter()
                        .filter(|(x, _)| *j >= *x + 2 && (*j - *x) % 2 == 0)
                        .map(|(x, bit)| len_to[&(*x, (*j - 2 - *x) / 2)] & *bit)
                        .collect();
                    flags.push(stage(or_tree(terms, 1), &n(&format!("next{j}_g{g}"), st)));
                }
                gw.push(stage(word, &n(&format!("word_g{g}"), st)));
                gu.push(stage(ulen, &n(&format!("ulen_g{g}"), st)));
                gd.push(stage(doff, &n(&format!("doff_g{g}"), st)));
            }
            // For the next read's one-hot, per word j it can see: `even` (the next word is at
            // or after `m + 2`, an even distance away) and the fragment hit (`j = m + 2`: after
            // a fragment header the next word is m + 2) compare `m` with constants. When the
            // walk is not stepping, the next read's select does not matter: its latch is
            // already taken (or the frame has an EXT_* code).
            // `m` beyond the window's words (`m_small` false) is registered apart and applied
            // in the second read stage.
            let (m_small, pre): (Option<Sig>, Vec<(u32, Sig, Sig)>) = match (walk.p_sel, next_range)
            {
                (Some(m), Some((lo, hi))) if lo <= hi => {
                    let is_frag = walk.nh_frag;
                    let mw = clog2(hi as u64 + 1);
                    let m_small = stage(m.slice(13, mw).eq(0u32), &n("m_small", st));
                    let ml = m.slice(mw - 1, 0);
                    let pre = (lo..=hi)
                        .map(|j| {
                            let even = ml.le((j - 2) as u64) & ml.bit(0).eq((j % 2) as u64);
                            let fhit = is_frag & ml.eq((j - 2) as u64);
                            (
                                j,
                                stage(!is_frag & even, &n(&format!("sel{j}_even"), st)),
                                stage(fhit, &n(&format!("sel{j}_frag"), st)),
                            )
                        })
                        .collect();
                    (Some(m_small), pre)
                }
                _ => (None, Vec::new()),
            };
            walk = walk.delayed(st, k == 0, last);
            carry = carry.map(&mut |x, nm| stage(x, &n(nm, st)));
            st += 1;

            // ---------------------------------------- read, second half: the OR of the groups
            let vr = reg_init(1, 0u32).named(&format!("v{st}"));
            vr.set(valid);
            valid = vr;
            // Bytes from the current header to the end of the datagram (negative: only in
            // frames whose L3 checks failed).
            let rem_neg = walk.rem.bit(17);
            let rem_now = walk.rem.slice(15, 0);
            // A fragment's offset is not 0, per group (the compute stage ORs them).
            let off_nz: Vec<Sig> = gw.iter().map(|g| g.slice(15, 3).or_reduce()).collect();
            let dw = or_tree(gw, 32).named(&n("word", st));
            let ul = or_tree(gu, 16).named(&n("udp_len", st));
            let dof = or_tree(gd, 4).named(&n("tcp_off", st));
            let latch = !walk.walking & !walk.latched;
            if last {
                rem_l4 = Some(stage(rem_now, &n("rem", st)));
                // The TCP/UDP checks against constants, registered here for stage 18: too short
                // for the header, the header past the window.
                l4_pre = Some([
                    stage(rem_now.lt(20u32), &n("tcp_short", st)),
                    stage(walk.p.gt((w - 20) as u64), &n("tcp_win", st)),
                    stage(rem_now.lt(8u32), &n("udp_short", st)),
                    stage(walk.p.gt((w - 8) as u64), &n("udp_win", st)),
                ]);
                walk.rem.unused();
                // No compute stage follows: the TCP/UDP fields are taken in here, so that the
                // checks compare registers.
                let take = |new: Sig, old: Option<Sig>, nm: &str| {
                    let v = match old {
                        Some(o) => mux(latch, new, o),
                        None => new,
                    };
                    Some(stage(v, &n(nm, st)))
                };
                // A fifth extension header: give up.
                walk = Walk {
                    sel: Vec::new(),
                    sel_l4: Vec::new(),
                    p: stage(walk.p, &n("p", st)),
                    rem: walk.rem,
                    p_sel: None,
                    nh: stage(walk.nh, &n("nh", st)),
                    nh_frag: lit(1, 0u32),
                    walking: lit(1, 0u32),
                    latched: lit(1, 1u32),
                    ecode: stage(
                        mux(walk.walking, code(malformed::EXT_LIMIT), walk.ecode),
                        &n("ecode", st),
                    ),
                    frag: stage(walk.frag, &n("frag", st)),
                    ports: take(dw, walk.ports, "ports"),
                    ulen: take(ul, walk.ulen, "ulen"),
                    doff: take(dof, walk.doff, "doff"),
                    pending: None,
                    trunc_len: None,
                };
                carry = carry.map(&mut |x, nm| stage(x, &n(nm, st)));
                st += 1;
                break;
            }
            // The word's low half is the destination port when the word is the TCP/UDP header;
            // a record without the ports does not use it.
            let word_q = stage(dw, &n("word_q", st));
            let word_q = if wanted("dst_port") {
                word_q
            } else {
                word_q.unused()
            };
            let pending = Pending {
                latch: stage(latch, &n("latch", st)),
                word: word_q,
                ulen: stage(ul, &n("ulen_q", st)),
                doff: stage(dof, &n("doff_q", st)),
            };
            let keep = |x: Option<Sig>, nm: &str| x.map(|v| stage(v, &n(nm, st)));
            let (ports, ulen, doff) = (
                keep(walk.ports, "ports"),
                keep(walk.ulen, "ulen"),
                keep(walk.doff, "doff"),
            );
            let latched = walk.latched | latch;
            // Everything the compute stage needs that does not depend on the word.
            let is_frag = walk.nh_frag;
            let trunc_pre = rem_neg | mux(is_frag, rem_now.lt(8u32), rem_now.lt(2u32));
            let win_bad = mux(
                is_frag,
                walk.p.gt((w - 4) as u64),
                walk.p.gt((w - 2) as u64),
            );
            let r = |x: Sig, nm: &str| stage(x, &n(nm, st));
            let is_frag_now = is_frag;
            let is_frag = r(is_frag, "is_frag");
            let trunc_pre = r(trunc_pre, "trunc_pre");
            let win_bad = r(win_bad, "win_bad");
            // The next offset: p + 8 + len * 8 (`step_len`), p + 8 (a fragment header: `step8`)
            // or p (the walk has stopped), picked after the adder from registered selects.
            let step_len = r(walk.walking & !is_frag_now, "step_len");
            let step8 = r(walk.walking & is_frag_now, "step8");
            let p = r(walk.p, "p");
            let p8 = r(walk.p + 8u32, "p8");
            let rem = r(walk.rem, "rem_q");
            let rem8 = r(walk.rem - 8u32, "rem8");
            let q = rem.slice(15, 3);
            let nh = r(walk.nh, "nh");
            let walking = r(walk.walking, "walking");
            let latched = r(latched, "latched");
            let ecode = r(walk.ecode, "ecode");
            let frag = r(walk.frag, "frag");
            // The next select's length compares: the OR of the groups' flags.
            let pre: Vec<(u32, Sig, Sig, Sig)> = pre
                .iter()
                .map(|(j, even, fhit)| {
                    let m_small = m_small.expect("made with the flags");
                    let flags = &gto.iter().find(|(x, _)| x == j).expect("same range").1;
                    (
                        *j,
                        r(m_small & *even, &format!("sel{j}_even")),
                        r(or_tree(flags.clone(), 1), &format!("sel{j}_len_eq")),
                        r(m_small & *fhit, &format!("sel{j}_frag")),
                    )
                })
                .collect();
            let off_nz: Vec<Sig> = off_nz
                .iter()
                .enumerate()
                .map(|(g, x)| r(*x, &format!("frag_off_nz_g{g}")))
                .collect();
            let read = Walk {
                ports,
                ulen,
                doff,
                pending: Some(pending),
                ..walk.clone()
            };
            let dw_r = pending.word;
            // The length byte again, one copy per carry chain of the compute stage, each in
            // the polarity its chain adds (a subtraction's operand would be inverted by a LUT
            // in front of the chain), none shared with the word's register or with another
            // chain, so that each sits by its chain (the word's register also feeds the next
            // header, the ports and their muxes). Each copy is kept apart by what it is: the offset's and the compare's are zero where their results
            // are not used (the walk does not step past a length; a fragment header has none),
            // and the remainder's is the complement, added to `rem - 7` (`rem8 - len8 = rem7 +
            // !len8`, 18 bits).
            let len_b = dw.slice(23, 16);
            let len_step = r(len_b & (walk.walking & !is_frag_now).repl(8), "len_step");
            let len_cmp = r(len_b & walk.walking.repl(8), "len_cmp");
            let len_n = r(!len_b, "len_n");
            let rem7 = r(walk.rem - 7u32, "rem7");
            carry = carry.map(&mut |x, nm| stage(x, &n(nm, st)));
            st += 1;

            // ---------------------------------------- compute
            // (len + 1) * 8 > rem  <=>  len >= rem / 8 (no adder before the compare).
            let vc_ = reg_init(1, 0u32).named(&format!("v{st}"));
            vc_.set(valid);
            valid = vc_;
            let pre_bad = trunc_pre | win_bad;
            let ok_pre = walking & !pre_bad;
            let trunc_len = ok_pre & !is_frag & len_cmp.zext(13).ge(q);
            let err = mux(
                trunc_pre,
                code(malformed::EXT_TRUNC),
                code(malformed::EXT_WINDOW),
            );
            let len8 = cat(&[len_step, lit(3, 0u32)]);
            let p_len = p8 + len8.zext(16);
            let rem_len = rem7 + cat(&[lit(7, 0x7fu32), len_n, lit(3, 7u32)]);
            let pick3 =
                |sum: Sig, plus8: Sig, same: Sig| mux(step_len, sum, mux(step8, plus8, same));
            // The next read's `m` may be anything when the walk does not step.
            let p_next = mux(is_frag, p8, p_len);
            let nh_next = dw_r.slice(31, 24);
            let later_frag = is_frag & or_tree(off_nz, 1);
            let (ports, ulen, doff) = read.settle();
            let (sel, sel_l4): (Sel, Sel) = pre
                .iter()
                .map(|(j, even, len_eq, fhit)| {
                    let hit = *fhit | (*even & *len_eq);
                    let (a, b) = sel_regs(hit, &n(&format!("sel{j}"), st));
                    ((*j, a), (*j, b))
                })
                .unzip();
            // A failed step leaves an EXT_* code, after which offset, protocol and fragment flag
            // are not valid: they may step anyway (the checks stay off the wide muxes).
            walk = Walk {
                sel,
                sel_l4,
                p: stage(pick3(p_len, p8, p), &n("p", st)),
                rem: stage(pick3(rem_len, rem8, rem), &n("rem", st)),
                p_sel: (k + 1 < MAX_EXT_HEADERS)
                    .then(|| stage(p_next.slice(15, 2), &n("m_sel", st))),
                nh: stage(mux(walking, nh_next, nh), &n("nh", st)),
                nh_frag: if k + 1 < MAX_EXT_HEADERS {
                    stage(mux(walking, nh_next.eq(44u32), is_frag), &n("nh_frag", st))
                } else {
                    lit(1, 0u32)
                },
                // Its two halves registered apart (the next read stage ANDs them), so that the
                // next-header compare is not behind the checks.
                walking: stage(ok_pre & !later_frag, &n("walk_go", st))
                    & stage(is_ext(nh_next), &n("next_ext", st)),
                latched: stage(latched, &n("latched", st)),
                ecode: stage(mux(walking & pre_bad, err, ecode), &n("ecode", st)),
                frag: stage(frag | (walking & is_frag), &n("frag", st)),
                ports: Some(stage(ports, &n("ports", st))),
                ulen: Some(stage(ulen, &n("ulen", st))),
                doff: Some(stage(doff, &n("doff", st))),
                pending: None,
                trunc_len: Some(stage(trunc_len, &n("trunc_len", st))),
            };
            carry = carry.map(&mut |x, nm| stage(x, &n(nm, st)));
            st += 1;
        }

        // ---------------------------------------------------------------- stage 18: TCP/UDP
        assert_eq!(st, S_L4, "walk stage count");
        let v_l4 = reg_init(1, 0u32).named(&format!("v{S_L4}"));
        v_l4.set(valid);
        let valid = v_l4;
        // The comparisons first, the codes in the next stage (the fields are registers: the
        // last read stage took them in).
        let ports = walk.ports.expect("the last read stage takes the ports");
        let ulen = walk.ulen.expect("the last read stage takes the UDP length");
        let doff = walk
            .doff
            .expect("the last read stage takes the data offset");
        let rem = rem_l4.expect("the last read stage measures the L4 length");
        let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_s{S_L4}"));
        let tcp = f(walk.nh.eq(6u32), "is_tcp");
        let udp = f(walk.nh.eq(17u32), "is_udp");
        // Per protocol: the code of the first failed check among those that compare with
        // constants, whether one failed, and the length check (an adder) on its own.
        let [t_short, t_win, u_short, u_win] =
            l4_pre.expect("the last read stage makes the constant checks");
        let doff_short = !(doff.bit(3) | (doff.bit(2) & (doff.bit(1) | doff.bit(0))));
        let t_checks = [
            (t_short, code(malformed::L4_TRUNC)),
            (t_win, code(malformed::L4_WINDOW)),
            // doff < 5 as a LUT of four bits, ulen < 8 as a zero test of its upper 13 bits: a
            // compare with a constant would be mapped to a carry chain.
            (doff_short, code(malformed::L4_BAD)),
        ];
        let u_checks = [
            (u_short, code(malformed::L4_TRUNC)),
            (u_win, code(malformed::L4_WINDOW)),
            (ulen.slice(15, 3).eq(0u32), code(malformed::L4_BAD)),
        ];
        let any = |c: &[(Sig, Sig)]| c.iter().map(|(x, _)| *x).reduce(|a, b| a | b).unwrap();
        let tcp_first = f(select(&t_checks, 0u32), "tcp_code");
        let tcp_any = f(any(&t_checks), "tcp_bad");
        let tcp_long = f(cat(&[doff, lit(2, 0u32)]).zext(16).gt(rem), "tcp_doff_long");
        let udp_first = f(select(&u_checks, 0u32), "udp_code");
        let udp_any = f(any(&u_checks), "udp_bad");
        let udp_long = f(ulen.gt(rem), "udp_len_long");
        let walk_bad = f(walk.ecode.ne(0u32), "walk_bad");
        let ecode = f(walk.ecode, "ecode");
        let wfrag = f(walk.frag, "frag");
        let ip_proto = f(walk.nh, "ip_proto");
        let l4_off = f(walk.p, "l4_off");
        let l4_len = f(rem, "l4_len");
        let ports = f(ports, "ports");
        let carry = carry.map(&mut |x, nm| f(x, nm));
        let v_codes = reg_init(1, 0u32).named(&format!("v{}", S_L4 + 1));
        v_codes.set(valid);
        let valid = v_codes;
        let proto_code = |any: Sig, first: Sig, long: Sig| {
            mux(any, first, mux(long, code(malformed::L4_TRUNC), code(0)))
        };
        let l4_code = mux(
            tcp,
            proto_code(tcp_any, tcp_first, tcp_long),
            mux(udp, proto_code(udp_any, udp_first, udp_long), code(0)),
        );
        let late = mux(walk_bad, ecode, mux(wfrag, code(0), l4_code));
        let l4_ok =
            !walk_bad & !wfrag & !(tcp & (tcp_any | tcp_long)) & !(udp & (udp_any | udp_long));
        let l4c = cat(&[l4_ok & udp, l4_ok & tcp]);

        // The finish waits here for the frame length (frames longer than the window).
        let v_pf = reg_init(1, 0u32).named("v_fin");
        let hold = (v_pf & !head_v).named("hold");
        let take = !hold;
        v_pf.set_if(take, valid);
        let held = |x: Sig, nm: &str| {
            let r = reg(x.width()).enable(take).named(&format!("{nm}_fin"));
            r.set(x);
            r
        };
        // The length thresholds that depend on the tags and the IP version wait here too, so
        // that each length check below compares two registers: the L3 offset 14 + 4 * tags,
        // and the end of the IP fixed header (20 more for IPv4, 40 for IPv6).
        let by_tags = |base: u32| {
            case(
                carry.vc,
                &[(0, lit(8, base)), (1, lit(8, base + 4))],
                lit(8, base + 8),
            )
        };
        let l2_min = held(by_tags(14), "l2_min");
        let hdr_min = held(mux(carry.v4, by_tags(34), by_tags(54)), "hdr_min");
        let c = carry.map(&mut |x, nm| held(x, nm));
        let ip_proto = held(ip_proto, "ip_proto");
        let l4_off = held(l4_off, "l4_off");
        let l4_len = held(l4_len, "l4_len");
        let frag = held(wfrag, "frag");
        let late = held(late, "late");
        let l4c = held(l4c, "l4");
        let ports = held(ports, "ports");

        // ---------------------------------------------------------------- finish 1: lengths
        let pop = (v_pf & head_v).named("len_pop");
        head_load.set(!len_empty & (!head_v | pop));
        head_v.set(mux(head_load, lit(1, 1u32), head_v & !pop));
        let n = len_head.slice(15, 0);
        // Each check only where it applies (IPv4 options and lengths: IPv4 frames; the IP
        // checks: IP frames), folded into the LUT behind its compare.
        let is_ip = c.v4 | c.v6;
        let trunc_l2 = n.lt(l2_min.zext(16));
        let trunc_hdr = is_ip & n.lt(hdr_min.zext(16));
        let trunc_opt = c.v4 & n.lt(c.hdr_end.zext(16));
        // The length is at most 0xFFFF: past that the datagram is always cut.
        let trunc_ip = is_ip & (c.ip_end.bit(16) | n.lt(c.ip_end.trunc(16)));
        let vf1 = reg_init(1, 0u32).named("v_fin1");
        vf1.set(pop);
        let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_fin1"));
        let trunc_l2 = f(trunc_l2, "trunc_l2");
        let trunc_hdr = f(trunc_hdr, "trunc_hdr");
        let trunc_opt = f(trunc_opt, "trunc_opt");
        let trunc_ip = f(trunc_ip, "trunc_ip");
        // The checks that do not need the length, and the code when no length check fails
        // (the version, else the walk's code; 0 for a frame that is not IP).
        let ihl_bad = f(c.v4 & c.ihl_bad, "ihl_bad");
        let totlen_bad = f(c.v4 & c.totlen_bad, "totlen_bad");
        let l3_pre_ok = f(
            is_ip & !c.ver_bad & !(c.v4 & (c.ihl_bad | c.totlen_bad)),
            "l3_pre_ok",
        );
        let tail = f(
            mux(
                is_ip,
                mux(c.ver_bad, code(malformed::IP_VERSION), late),
                code(0),
            ),
            "code_tail",
        );
        // Whether that code is an `EXT_*` one, and the L4 verdict's share of it, decided
        // here so that `proto_ok` below is one LUT of five flops, not a decode of the code.
        // With no length check failed, an IP frame past `l3_pre_ok` has no IHL or total-length
        // error either, so the verdict is an `EXT_*` code exactly when this code is.
        let ext_code = is_ip
            & !c.ver_bad
            & (late.eq(malformed::EXT_TRUNC as u64)
                | late.eq(malformed::EXT_LIMIT as u64)
                | late.eq(malformed::EXT_WINDOW as u64));
        let proto_pre_ok = f(
            is_ip & !c.ver_bad & !(c.v4 & (c.ihl_bad | c.totlen_bad)) & !ext_code,
            "proto_pre_ok",
        );
        // `ext_code` where no IPv4 header check failed: with the truncation flag of the IP
        // datagram (below), what `ext_bad` needs, so that it is one LUT of two flops.
        let ext_ok = f(ext_code & !(c.v4 & (c.ihl_bad | c.totlen_bad)), "ext_ok");
        let len_word1 = f(len_head, "len");
        let v4 = f(c.v4, "v4");
        let v6 = f(c.v6, "v6");
        let vc = f(c.vc, "vc");
        let opts = f(c.opts, "ipv4_opts");
        // Past the length checks only the low 16 bits of `ip_end` are reported.
        let ip_end = f(c.ip_end.trunc(16), "ip_end");
        let l3_off = f(l2_min, "l3_off");
        let ip_proto = f(ip_proto, "ip_proto");
        let l4_off = f(l4_off, "l4_off");
        let l4_len = f(l4_len, "l4_len");
        let frag = f(frag, "frag");
        let l4c = f(l4c, "l4");
        let ports = f(ports, "ports");

        // ---------------------------------------------------------------- finish 2: verdict
        // The first failed check in the golden model's order (each flag is already limited to
        // the frames it applies to).
        let bad = select(
            &[
                (trunc_l2, code(malformed::L2_TRUNC)),
                (trunc_hdr, code(malformed::L3_TRUNC)),
                (ihl_bad, code(malformed::IPV4_IHL)),
                (trunc_opt, code(malformed::L3_TRUNC)),
                (totlen_bad, code(malformed::IPV4_TOTAL_LEN)),
                (trunc_ip, code(malformed::IP_TRUNC)),
            ],
            tail,
        );
        // Where `l3_pre_ok` holds (an IP header with a sane IHL and total length), the IP
        // datagram's end is the farthest of the length thresholds (IPv4: total length >= IHL * 4
        // >= 20; IPv6: 40 + payload length), so the other truncation flags imply `trunc_ip`,
        // and the verdicts below need only it: one LUT of two flops each, rather than the OR
        // of all six flags.
        let l3_ok = (l3_pre_ok & !trunc_ip).named("l3_ok");
        let l3 = cat(&[l3_ok & v6, l3_ok & v4]);
        let l4 = mux(l3_ok, l4c, lit(2, 0u32));
        // For the claims below: the verdict is an `EXT_*` code when no L3 check failed and
        // the walk's code (in `tail`) is one.
        let ext_bad = ext_ok & !trunc_ip;
        // ---------------------------------------------------------------- finish 3: claims
        // The record is registered once more, with what the claims need, so that they are
        // one LUT from flops and the store's write data from flops too (docs/TIMING.md,
        // rule 12).
        let vf2 = reg_init(1, 0u32).named("v_fin2");
        vf2.set(vf1);
        let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_fin2"));
        let late_fields: Vec<(&str, Sig)> = vec![
            ("malformed", f(bad, "malformed")),
            ("l3", f(l3, "l3")),
            ("l4", f(l4, "l4")),
            ("vlan_count", f(vc, "vc")),
            ("frag", f(frag, "frag")),
            ("ipv4_opts", f(opts, "ipv4_opts")),
            ("l3_off", f(l3_off, "l3_off")),
            ("ip_proto", f(ip_proto, "ip_proto")),
            ("frame_len", f(len_word1.slice(15, 0), "frame_len")),
            ("ip_end", f(ip_end, "ip_end")),
            ("l4_off", f(l4_off, "l4_off")),
            ("l4_len", f(l4_len, "l4_len")),
            ("src_port", f(ports.slice(31, 16), "src_port")),
            ("dst_port", f(ports.slice(15, 0), "dst_port")),
        ];

        let user = (cfg.user_bits > 0).then(|| f(len_word1.slice(15 + cfg.user_bits, 16), "user"));
        let field = |n: &str| late_fields.iter().find(|(m, _)| *m == n).unwrap().1;
        let l2_ok = f(!trunc_l2, "l2_ok");
        let ip_ok = f(l3_ok, "ip_ok");
        let proto_ok = f(proto_pre_ok & !trunc_ip, "proto_ok");
        let ext_bad = f(ext_bad, "ext_bad");
        let eth_v4 = f(v4, "eth_v4");
        let eth_v6 = f(v6, "eth_v6");
        let is_tcp = f(ip_proto.eq(6u32), "proto_tcp");
        let is_udp = f(ip_proto.eq(17u32), "proto_udp");
        let l4_go = proto_ok & !field("frag");
        let frame_len = field("frame_len");
        let c_end = mux(ip_ok, field("ip_end"), frame_len);
        let claims: Vec<(&str, Sig)> = vec![
            ("l3_claim", cat(&[l2_ok & eth_v6, l2_ok & eth_v4])),
            ("l4_claim", cat(&[l4_go & is_udp, l4_go & is_tcp])),
            ("vlan", l2_ok & field("vlan_count").ne(0u32)),
            ("ext_bad", ext_bad),
            (
                "csum_l3_off",
                mux(l2_ok, field("l3_off").zext(16), frame_len),
            ),
            ("csum_l4_off", mux(proto_ok, field("l4_off"), c_end)),
            ("csum_end", c_end),
        ];
        let late_fields: Vec<(&str, Sig)> = late_fields.into_iter().chain(claims).collect();

        // ---------------------------------------------------------------- output views
        // Per view, up to three stores (the fields written in stage 4, `ip_sum` in stage
        // `4 + ADDRESS_SUM_STAGES`, the rest at the end), each split into parts with pointers
        // of their own that start at different values (see `store_write`), and a count and
        // valid of its own. Records stored in stage 4 and 8 are read long after: a view's
        // record is valid only once its last store is written.
        doc("Per output view, record stores <view>_{early,sum,late}_p<k>: parts of LUT RAMs, each");
        doc("with its own pointers (<store>_wr_p<k>, <store>_rd_p<k>, reset to k: record i is at");
        doc("i + k) so that no pointer drives every RAM cell and synthesis does not merge them.");
        let sum_fields: Vec<(&str, Sig)> = vec![("ip_sum", ip_sum)];
        let mut user_field: Vec<(&str, Sig)> = Vec::new();
        if let Some(u) = user {
            user_field.push(("user", u));
        }
        let mut next_offset = 0u32;
        let mut credit_high: Vec<Sig> = Vec::new();
        for view in cfg.views {
            let vn = view.name;
            let mut vals: Vec<(&str, Sig)> = Vec::new();
            let m_ready = input(&format!("m_axis_{vn}_tready"), 1);
            let m_valid = reg_init(1, 0u32).named(&format!("{vn}_valid"));
            let out = (m_valid & m_ready).named(&format!("{vn}_pop"));
            for (group, fields, en) in [
                ("early", &early_fields, v_early),
                ("sum", &sum_fields, v_sum),
                ("late", &late_fields, vf2),
                ("user", &user_field, vf2),
            ] {
                let picked: Vec<(&str, Sig)> = fields
                    .iter()
                    .copied()
                    .filter(|(n, _)| *n == "user" || view.fields.has(n))
                    .collect();
                if picked.is_empty() {
                    continue;
                }
                let word = cat(&picked.iter().rev().map(|(_, x)| *x).collect::<Vec<_>>());
                let store = format!("{vn}_{group}");
                let parts = store_write(&store, word, en, depth, next_offset);
                next_offset += parts.len() as u32;
                let q = store_read(&store, &parts, out, depth).named(&format!("{store}_q"));
                let mut lo = 0;
                for (n, x) in picked {
                    vals.push((n, q.slice(lo + x.width() - 1, lo)));
                    lo += x.width();
                }
            }
            // Records stored and not taken, and whether there is one, as flops (no compare of
            // the pointers in front of the pop, which steps the credit counter).
            let stored = reg_init(aw + 1, 0u32).named(&format!("{vn}_count"));
            let put = vf2 & !out;
            let got = out & !vf2;
            stored.set_if(put | got, mux(put, stored + 1u32, stored - 1u32));
            m_valid.set(put | (m_valid & !(got & stored.eq(1u32))));
            // Frames closed and not taken from this view, counted from registered copies of
            // the close and the pop, so the count and its flag step from flops only: neither
            // `s_axis_tready` (through `close`) nor the consumer's ready (through the pop)
            // reaches them, and the input ready is one OR of the views' flags (docs/TIMING.md,
            // rule 5). The count `C` in cycle t is the true count `N` of cycle t-1; the flag
            // `<view>_credit_high` is `C >= fifo_depth - 2`; the ready of cycle t+1 is the flags
            // of cycle t. So ready in cycle t+1 means `N(t-1) <= fifo_depth - 3`, and at most
            // three frames close in cycles t-1..t+1: `N` never exceeds `fifo_depth`, and the
            // stores never overwrite a record not taken.
            let pop_q = reg_init(1, 0u32).named(&format!("{vn}_pop_q"));
            pop_q.set(out);
            let in_flight = reg_init(aw + 1, 0u32).named(&format!("{vn}_in_flight"));
            let (inc, dec) = (close_q & !pop_q, pop_q & !close_q);
            in_flight.set_if(inc | dec, mux(inc, in_flight + 1u32, in_flight - 1u32));
            let high = reg_init(1, 0u32).named(&format!("{vn}_credit_high"));
            let at_d2 = in_flight.eq((depth - 2) as u64);
            let at_d3 = in_flight.eq((depth - 3) as u64);
            high.set(mux(inc, high | at_d3, mux(dec, high & !at_d2, high)));
            credit_high.push(high);
            output(
                &format!("m_axis_{vn}_tdata"),
                view_layout(view, cfg.user_bits).pack(&vals),
            );
            output(&format!("m_axis_{vn}_tvalid"), m_valid);
        }
        let any_high = credit_high
            .into_iter()
            .reduce(|a, b| a | b)
            .expect("at least one view");
        ready.set(!any_high);
        ready_port_n.set(any_high);

        if win.lanes_used.iter().any(|u| !u) {
            // The MAC addresses are not parsed: at some widths whole lanes carry only them.
            s.data().unused();
        }
    })
}
