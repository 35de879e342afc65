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
//! whatever the pipeline computed (not 0).
//!
//! - **Ports**: `s_axis_tdata/tkeep/tvalid/tready/tlast[/tuser]` (8 or a multiple of 16 bits);
//!   `m_axis_meta_tdata` ([`meta_layout`]: [`PARSE_META`], 429 bits, with `user` = the `tuser`
//!   of the frame's last beat on top when `user_bits > 0`), `m_axis_meta_tvalid`,
//!   `m_axis_meta_tready`: one transfer per frame, in frame order, no `tkeep`/`tlast`.
//!   `s_axis_tready` is a flop (no path from `m_axis_meta_tready`).
//! - **Internals.** *Capture*: a byte register per window byte, byte `i` written from lane
//!   `i mod B` (`B` bytes per beat) while a one-hot beat counter points at beat `i / B`: every
//!   cycle, taken or not, so valid/ready stay off the `window · 8` enables (a beat not yet
//!   taken is written again when it is; idle cycles write only slots the frame has not
//!   reached). The window *closes* on the beat holding byte `window − 1` or on `tlast`,
//!   whichever comes first. *Parse*: a pipeline that never stalls, started by the close:
//!   (1) TPIDs, tags, EtherType; (2) the IP fixed header through a 3:1 word mux (0..2 tags);
//!   addresses, TCIs and EtherType go straight into the output store; (3) datagram end, L3
//!   checks, one-hot of the first header's word; (4-12) the walk: per extension header a
//!   *read* stage (the 4-byte word at the header offset through an AND-OR mux with a
//!   registered one-hot select; every header offset is 2 mod 4, so the muxes are word-aligned;
//!   the TCP/UDP fields there are latched if the walk has arrived) and a *compute* stage
//!   (checks; next offset; next one-hot `j = m + 2 + 2·len` as `len == (j − m − 2) / 2` with
//!   the difference prepared by the read stage; `(len + 1)·8 > rem` as `len ≥ rem / 8`,
//!   applied a stage later), then a fifth read stage; (13-14) TCP/UDP comparisons, then codes.
//!   For timing: `rem = ip_end − p` is carried along the walk (stepped with `p`), so no stage
//!   subtracts before it compares; the next `p` and `rem` are picked after their adders from
//!   selects the read stage registers (step by `len`, by 8, or stay); the read stage derives
//!   the select differences from a register of its own (`m_sel`, `p / 4` before the `walking`
//!   mux) with constant compares, and `nh == 44` comes registered; each one-hot select bit has
//!   two registers, one for the word mux and one (`sel*_l4`, with a reset so that synthesis
//!   does not merge the two) for the UDP length / data offset muxes, and the length byte of
//!   the word two (`len_sel`, the same way) for the select compares; the muxes OR their terms
//!   as a balanced tree; the TCP/UDP length checks compare both the new and the held field
//!   and pick after.
//!   Stage `s` runs exactly `s` cycles after the close, and the next frame reaches beat `j` no
//!   earlier than `1 + j` cycles after it, so capture byte `i` still holds this frame in stage
//!   `s` iff `s ≤ 1 + i / B`; a stage that reads an older byte gets a delayed copy, made at
//!   elaboration only where needed (none at 8 bits, a few bytes at 64, most of the window at
//!   512).
//!   *Finish*: the frame length (a saturating byte counter) and `tuser` go into a small FIFO
//!   at `tlast`, whose head waits in a register; the parse result waits in a register until
//!   its length is there (frames longer than the window), then one stage compares lengths and
//!   one picks the code. *Output*: two LUTRAMs indexed in frame order (the wide fields written
//!   from stage 2, the rest at the end), read asynchronously; a credit counter (frames closed −
//!   records taken) drops `s_axis_tready` when `fifo_depth` records are pending.
//! - **Latency**: the record is valid [`LATENCY`] (17) cycles after the beat that closes the
//!   window, and no earlier than 5 cycles after the `tlast` beat.
//! - **Throughput**: 1 beat/cycle whatever the frame sizes (1-byte frames back to back
//!   included), as long as the sink keeps fewer than `fifo_depth` records waiting: with a sink
//!   that is always ready, `fifo_depth ≥ LATENCY + 2` never throttles the input. The input is
//!   never held for a frame that is still arriving.
//! - **Cost** (window 128, 32 records, no `tuser`). `yosys synth_xilinx -noiopad` (Yosys
//!   0.23, `cargo xtask bench-area --presets nic64,nic512 --only xilinx --blocks "tx
//!   eth_hdr_parse"`): 64 bits: 3,997 LUT, 3,130 FF, 57 SRL16E, 75 RAM32M (the two record
//!   stores and the length FIFO); 512 bits: 3,968 LUT, 7,129 FF, 385 SRL16E, 75 RAM32M (the
//!   extra flip-flops and SRLs are the delayed window copies a 64-byte beat needs). ECP5-85k,
//!   64 bits, out of context (`cargo xtask bench-area --presets nic64 --seeds 1,2,3 --only
//!   ecp5 --blocks
//!   "rx eth_hdr_parse,tx eth_hdr_parse"`: Yosys 0.70 `synth_ecp5` + nextpnr-ecp5 0.11): the
//!   TX instance (no `tuser`) 7,680 LUT4 (`TRELLIS_COMB`), 3,522 FF, 224 `TRELLIS_RAMW`, Fmax
//!   146.5 / 141.5 / 140.6 MHz (median 141.5; 132.8 before the timing changes above, which
//!   cost about 300 FF); the RX instance (5-bit `tuser`) 7,729 LUT4, 3,537 FF, Fmax 143.5 /
//!   144.0 / 142.1 (median 143.5; 133.9 before) — still below the 156.25 MHz of 10G at 64
//!   bits. The paths left are routing-bound (3-4 LUTs, one net of 3-4 ns across the window
//!   registers): mostly the word and field muxes of the read stages (select register to
//!   AND-OR tree), then the `len == (j − m − 2) / 2` selects, the stage-3 `ip_end` adder,
//!   the finish's length compares.
//! - **Golden model**: `nicgen_model::parse::parse_headers`; **test**:
//!   `testbench/tb/tests/eth_hdr_parse.rs` (widths 8, 64, 512 × idle × backpressure, plus 16,
//!   32 and 128 bits with other windows and FIFO depths; every code reached; the
//!   wire-formats.md vectors; latency and back-to-back throughput).
//!
//! Parameters outside the ranges of [`HdrParseCfg`] are rejected at elaboration.

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
    ],
};

/// The record on `m_axis_meta_tdata`: [`PARSE_META`], plus `user` (`user_bits` wide) on top
/// when the input has a `tuser`.
pub fn meta_layout(user_bits: u32) -> RecordLayout {
    if user_bits == 0 {
        return PARSE_META;
    }
    static LAYOUTS: Mutex<BTreeMap<u32, &'static [(&'static str, u32)]>> =
        Mutex::new(BTreeMap::new());
    let mut m = LAYOUTS.lock().unwrap_or_else(|e| e.into_inner());
    let fields = *m.entry(user_bits).or_insert_with(|| {
        let mut f = PARSE_META.fields.to_vec();
        f.push(("user", user_bits));
        Box::leak(f.into_boxed_slice())
    });
    RecordLayout {
        name: "parse_meta_user",
        fields,
    }
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
    /// Records that may wait on the output (a power of two, 2..=256); [`LATENCY`] + 2 or more
    /// for full rate with a sink that is always ready (LUTRAM: 32 deep costs what 16 does on
    /// Xilinx).
    pub fifo_depth: u32,
}

impl HdrParseCfg {
    /// The defaults: window 128, 32 records.
    pub fn new(data_bits: u32, user_bits: u32) -> HdrParseCfg {
        HdrParseCfg {
            data_bits,
            user_bits,
            window: 128,
            fifo_depth: 32,
        }
    }
}

/// Stage number of the L2 decode, the L3 extraction and the first walk stage (stage `s` runs
/// `s` cycles after the closing beat).
const S_L2: u32 = 1;
const S_L3: u32 = 2;
const S_WALK0: u32 = 4;
/// Stage of the TCP/UDP checks (after a read and a compute stage per extension header and a
/// last read stage).
const S_L4: u32 = S_WALK0 + 2 * MAX_EXT_HEADERS + 1;

/// Cycles from the beat that closes the window to `m_axis_meta_tvalid` (when the frame length
/// is already known): the parse stages, the TCP/UDP codes, the wait-for-length register, one
/// verdict stage, the store.
pub const LATENCY: u32 = S_L4 + 4;

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

/// AND-OR mux with a registered one-hot select (bytes beyond the window fold to 0), its OR a
/// balanced tree (a chain maps to a LUT level more).
fn pick(sel: &[(u32, Sig)], mut at: impl FnMut(u32) -> Sig, width: u32) -> Sig {
    let mut terms: Vec<Sig> = sel
        .iter()
        .map(|(j, bit)| at(*j) & bit.repl(width))
        .collect();
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
    if !(2..=256).contains(&cfg.fifo_depth) || !cfg.fifo_depth.is_power_of_two() {
        return Err(ElabError::config(
            BLOCK,
            format!(
                "fifo_depth {} is not a power of two in 2..=256",
                cfg.fifo_depth
            ),
        ));
    }
    let cfg = *cfg;
    let name = format!(
        "eth_hdr_parse_{}_w{}_f{}",
        scfg.suffix(),
        cfg.window,
        cfg.fifo_depth
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
        let in_flight = reg_init(aw + 1, 0u32).named("in_flight");
        let ready = reg_init(1, 1u32).named("ready");
        s.ready().set(ready);
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
        let len_sum = off.add_wide(nkeep.zext(16));
        let frame_len =
            mux(ovf | len_sum.msb(), lit(16, 0xFFFFu32), len_sum.trunc(16)).named("frame_len_in");
        let len_push = reg_init(1, 0u32).named("len_push");
        len_push.set(acc & last);
        let len_q = reg(16).enable(acc & last).named("len_q");
        len_q.set(frame_len);
        let user_q = s.user().map(|u| {
            let r = reg(u.width()).enable(acc & last).named("user_q");
            r.set(u);
            r
        });
        let len_word = match user_q {
            Some(u) => cat(&[u, len_q]),
            None => len_q,
        };
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
        let tag = |x: Sig| x.eq(0x8100u32) | x.eq(0x88a8u32);
        let t0 = tag(tpid0).named("tag0");
        let t1 = (t0 & tag(tpid1)).named("tag1");
        let vc = cat(&[t1, t0 & !t1]);
        let pick_et = |x: Sig, y: Sig, z: Sig| mux(t1, z, mux(t0, y, x));
        let et = pick_et(tpid0, tpid1, et2);
        let v4 = pick_et(tpid0.eq(0x0800u32), tpid1.eq(0x0800u32), et2.eq(0x0800u32));
        let v6 = pick_et(tpid0.eq(0x86ddu32), tpid1.eq(0x86ddu32), et2.eq(0x86ddu32));
        let s0 = tpid0.eq(0x88a8u32);
        let vc1 = stage(vc, "vc_s1");
        let v4_1 = stage(v4, "v4_s1");
        let v6_1 = stage(v6, "v6_s1");
        let early_l2 = stage(cat(&[s0, tci1, tci0, et]), "l2_s1");

        // ---------------------------------------------------------------- stage 2: L3 fields
        let v2 = reg_init(1, 0u32).named("v2");
        v2.set(v1);
        // Word j of the IP header: word 3 + tags + j of the frame.
        let mut d = Vec::new();
        for j in 0..10 {
            let a = win.word(3 + j, S_L3);
            let bb = win.word(4 + j, S_L3);
            let c = win.word(5 + j, S_L3);
            d.push(case(vc1, &[(0, a), (1, bb)], c).named(&format!("ip_w{j}")));
        }
        let ver = d[0].slice(31, 28);
        let ihl = d[0].slice(27, 24);
        let len16 = mux(v4_1, d[0].slice(15, 0), d[1].slice(31, 16));
        let frag4 = d[1].bit(13) | d[1].slice(12, 0).or_reduce();
        let nh0 = mux(v4_1, d[2].slice(23, 16), d[1].slice(15, 8));
        let zero96 = lit(96, 0u32);
        let src = mux(v4_1, cat(&[zero96, d[3]]), cat(&[d[2], d[3], d[4], d[5]]));
        let dst = mux(v4_1, cat(&[zero96, d[4]]), cat(&[d[6], d[7], d[8], d[9]]));
        // The wide fields go straight into the output store, in frame order.
        let early_word = cat(&[dst, src, early_l2]);
        let early_mem = memory("meta_early", early_word.width(), depth);
        let early_wr = reg_init(aw, 0u32).named("early_wr");
        early_mem.write(v2, early_wr, early_word);
        early_wr.set_if(v2, early_wr + 1u32);
        let vc2 = stage(vc1, "vc_s2");
        let v4_2 = stage(v4_1, "v4_s2");
        let v6_2 = stage(v6_1, "v6_s2");
        let ver2 = stage(ver, "ver_s2");
        let ihl2 = stage(ihl, "ihl_s2");
        let len2 = stage(len16, "len_s2");
        let frag2 = stage(frag4, "frag4_s2");
        let nh2 = stage(nh0, "nh_s2");

        // ---------------------------------------------------------------- stage 3: lengths
        let v3 = reg_init(1, 0u32).named("v3");
        v3.set(v2);
        let l3_off = (cat(&[lit(4, 0u32), vc2, lit(2, 0u32)]) + 14u32).named("l3_off");
        let hdr_len = cat(&[ihl2, lit(2, 0u32)]);
        let hdr_end = (l3_off + hdr_len.zext(8)).named("hdr_end");
        let ip_len = mux(v4_2, len2.zext(17), len2.zext(17) + 40u32);
        let ip_end = (l3_off.zext(17) + ip_len).named("ip_end");
        let ver_bad = mux(v4_2, ver2.ne(4u32), ver2.ne(6u32));
        let ihl_bad = ihl2.lt(5u32);
        let totlen_bad = len2.lt(hdr_len.zext(16));
        let opts = ihl2.gt(5u32);
        let p0 = mux(v4_2, hdr_end, l3_off + 40u32).zext(16);
        // ip_end - p0: the L3 offset cancels (IPv4: total length - IHL * 4; else the payload
        // length).
        let rem0 = mux(v4_2, len2.zext(18) - hdr_len.zext(18), len2.zext(18));
        let walking0 = v6_2 & is_ext(nh2);
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
                let mut v4hit = lit(1, 0u32);
                for t in 0..3u32 {
                    if (3 + t..=3 + t + 15).contains(&j) {
                        v4hit = v4hit | (vc2.eq(t as u64) & ihl2.eq((j - 3 - t) as u64));
                    }
                }
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
            p_sel: Some(stage((l3_off + 40u32).zext(16).slice(15, 2), "m_sel_s3")),
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

        // ---------------------------------------------------------------- stages 4..12: walk
        // Per extension header a read stage (the word at `p`, and the TCP/UDP fields there if
        // the walk has arrived) and a compute stage (checks, next offset); a fifth read stage
        // only latches TCP/UDP fields or gives up (`EXT_LIMIT`).
        let mut st = S_WALK0;
        let mut rem_l4 = None;
        for k in 0..=MAX_EXT_HEADERS {
            let vr = reg_init(1, 0u32).named(&format!("v{st}"));
            vr.set(valid);
            valid = vr;
            if let Some(tl) = walk.trunc_len {
                walk.walking = walk.walking & !tl;
                walk.ecode = mux(tl, code(malformed::EXT_TRUNC), walk.ecode);
                walk.trunc_len = None;
            }
            // Bytes from the current header to the end of the datagram (negative: only in
            // frames whose L3 checks failed).
            let rem_neg = walk.rem.bit(17);
            let rem_now = walk.rem.slice(15, 0);
            let (sel, sel_l4) = (walk.sel.clone(), walk.sel_l4.clone());
            let dw = pick(&sel, |x| win.word(x, st), 32).named(&format!("word_s{st}"));
            let ul =
                pick(&sel_l4, |x| win.be(4 * x + 6, 2, st), 16).named(&format!("udp_len_s{st}"));
            // TCP data offset: the high nibble of byte 12.
            let dof = pick(&sel_l4, |x| win.at(4 * x + 14, st), 8)
                .named(&format!("tcp_off_s{st}"))
                .slice(7, 4);
            let latch = !walk.walking & !walk.latched;
            let n = |x: &str, st: u32| format!("{x}_s{st}");
            let pending = Pending {
                latch: stage(latch, &n("latch", st)),
                word: stage(dw, &n("word_q", st)),
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
            if k == MAX_EXT_HEADERS {
                rem_l4 = Some(stage(rem_now, &n("rem", st)));
                walk.rem.unused();
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
                    ports,
                    ulen,
                    doff,
                    pending: Some(pending),
                    trunc_len: None,
                };
                carry = carry.map(&mut |x, nm| stage(x, &n(nm, st)));
                st += 1;
                break;
            }
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
            // For the next read's one-hot: d = j - (m + 2) per word j it can see; the next word
            // is m + 2 + 2 * len (m + 2 after a fragment header). Words past the window are
            // never read, so differences as wide as the window's word index do. When the walk
            // is not stepping, the next read's select does not matter: its latch is already
            // taken (or the frame has an EXT_* code).
            // `even` (d >= 0 and even) and the fragment hit (d = 0) compare `m` with constants;
            // only the length target needs the subtraction.
            let m = walk.p_sel.expect("a compute stage follows");
            let (lo, hi) = read_range(k + 1, w);
            let mw = clog2(hi as u64 + 1);
            let m_small = m.slice(13, mw).eq(0u32);
            let ml = m.slice(mw - 1, 0);
            let pre: Vec<(u32, Sig, Sig, Sig)> = (lo..=hi)
                .map(|j| {
                    let d = lit(mw + 1, j - 2) - ml.zext(mw + 1);
                    let even = m_small & ml.le((j - 2) as u64) & ml.bit(0).eq((j % 2) as u64);
                    // After a fragment header the next word is m + 2, else m + 2 + 2 * len.
                    (
                        j,
                        r(!is_frag_now & even, &format!("sel{j}_even")),
                        r(d.slice(mw - 1, 1), &format!("sel{j}_len")),
                        r(
                            is_frag_now & m_small & ml.eq((j - 2) as u64),
                            &format!("sel{j}_frag"),
                        ),
                    )
                })
                .collect();
            let read = Walk {
                ports,
                ulen,
                doff,
                pending: Some(pending),
                ..walk.clone()
            };
            let dw_r = pending.word;
            // A second register of the length byte for the next-select compares (17 of them),
            // with a reset so that synthesis keeps it apart from `word_q`'s bits, which feed
            // the adders and the length check.
            let len_sel = reg_init(8, 0u32).named(&n("len_sel", st));
            len_sel.set(dw.slice(23, 16));
            carry = carry.map(&mut |x, nm| stage(x, &n(nm, st)));
            st += 1;

            // Compute: (len + 1) * 8 > rem  <=>  len >= rem / 8 (no adder before the compare).
            let vc_ = reg_init(1, 0u32).named(&format!("v{st}"));
            vc_.set(valid);
            valid = vc_;
            let len = dw_r.slice(23, 16);
            let pre_bad = trunc_pre | win_bad;
            let ok_pre = walking & !pre_bad;
            let trunc_len = ok_pre & !is_frag & len.zext(13).ge(q);
            let err = mux(
                trunc_pre,
                code(malformed::EXT_TRUNC),
                code(malformed::EXT_WINDOW),
            );
            let len8 = cat(&[len, lit(3, 0u32)]);
            let p_len = p8 + len8.zext(16);
            let pick3 =
                |sum: Sig, plus8: Sig, same: Sig| mux(step_len, sum, mux(step8, plus8, same));
            // The next read's `m` may be anything when the walk does not step.
            let p_next = mux(is_frag, p8, p_len);
            let nh_next = dw_r.slice(31, 24);
            let later_frag = is_frag & dw_r.slice(15, 3).or_reduce();
            let (ports, ulen, doff) = read.settle();
            let len_is = |tgt: Sig| {
                let tw = tgt.width();
                if tw >= 8 {
                    len_sel.zext(tw).eq(tgt)
                } else {
                    len_sel.slice(7, tw).eq(0u32) & len_sel.slice(tw - 1, 0).eq(tgt)
                }
            };
            let (sel, sel_l4): (Sel, Sel) = pre
                .iter()
                .map(|(j, even, tgt, fhit)| {
                    let hit = *fhit | (*even & len_is(*tgt));
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
                rem: stage(pick3(rem8 - len8.zext(18), rem8, rem), &n("rem", st)),
                p_sel: (k + 1 < MAX_EXT_HEADERS)
                    .then(|| stage(p_next.slice(15, 2), &n("m_sel", st))),
                nh: stage(mux(walking, nh_next, nh), &n("nh", st)),
                nh_frag: if k + 1 < MAX_EXT_HEADERS {
                    stage(mux(walking, nh_next.eq(44u32), is_frag), &n("nh_frag", st))
                } else {
                    lit(1, 0u32)
                },
                walking: stage(ok_pre & !later_frag & is_ext(nh_next), &n("walking", st)),
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

        // ---------------------------------------------------------------- stage 13: TCP/UDP
        assert_eq!(st, S_L4, "walk stage count");
        let v_l4 = reg_init(1, 0u32).named(&format!("v{S_L4}"));
        v_l4.set(valid);
        let valid = v_l4;
        // The comparisons first, the codes in the next stage. The UDP length and TCP data
        // offset checks compare both candidates (the last read's and the earlier latched
        // value) and pick after, so the latch mux is not in front of the compares.
        let (ports, _, _) = walk.settle();
        let pend = walk.pending.expect("a read stage came before");
        let either = |new: Sig, old: Option<Sig>, cmp: &dyn Fn(Sig) -> Sig| match old {
            Some(o) => mux(pend.latch, cmp(new), cmp(o)),
            None => cmp(new),
        };
        let rem = rem_l4.expect("the last read stage measures the L4 length");
        let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_s{S_L4}"));
        let tcp = f(walk.nh.eq(6u32), "is_tcp");
        let udp = f(walk.nh.eq(17u32), "is_udp");
        let t_short = f(rem.lt(20u32), "tcp_short");
        let t_win = f(walk.p.gt((w - 20) as u64), "tcp_win");
        let t_bad = f(
            either(pend.doff, walk.doff, &|d| d.lt(5u32)),
            "tcp_doff_bad",
        );
        let t_long = f(
            either(pend.doff, walk.doff, &|d| {
                cat(&[d, lit(2, 0u32)]).zext(16).gt(rem)
            }),
            "tcp_doff_long",
        );
        let u_short = f(rem.lt(8u32), "udp_short");
        let u_win = f(walk.p.gt((w - 8) as u64), "udp_win");
        let u_bad = f(either(pend.ulen, walk.ulen, &|u| u.lt(8u32)), "udp_len_bad");
        let u_long = f(either(pend.ulen, walk.ulen, &|u| u.gt(rem)), "udp_len_long");
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
        let tcp_code = select(
            &[
                (t_short, code(malformed::L4_TRUNC)),
                (t_win, code(malformed::L4_WINDOW)),
                (t_bad, code(malformed::L4_BAD)),
                (t_long, code(malformed::L4_TRUNC)),
            ],
            0u32,
        );
        let udp_code = select(
            &[
                (u_short, code(malformed::L4_TRUNC)),
                (u_win, code(malformed::L4_WINDOW)),
                (u_bad, code(malformed::L4_BAD)),
                (u_long, code(malformed::L4_TRUNC)),
            ],
            0u32,
        );
        let l4_code = mux(tcp, tcp_code, mux(udp, udp_code, code(0)));
        let late = mux(walk_bad, ecode, mux(wfrag, code(0), l4_code));
        let l4_ok = !walk_bad
            & !wfrag
            & !(tcp & (t_short | t_win | t_bad | t_long))
            & !(udp & (u_short | u_win | u_bad | u_long));
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
        let t0 = c.vc.ne(0u32);
        let t1 = c.vc.bit(1);
        let trunc_l2 = n.lt(14u32) | (t0 & n.lt(18u32)) | (t1 & n.lt(22u32));
        let hdr_min = |base: u32| {
            case(
                c.vc,
                &[(0, n.lt((14 + base) as u64)), (1, n.lt((18 + base) as u64))],
                n.lt((22 + base) as u64),
            )
        };
        let trunc_hdr = mux(c.v4, hdr_min(20), hdr_min(40));
        let trunc_opt = n.lt(c.hdr_end.zext(16));
        let trunc_ip = n.zext(17).lt(c.ip_end);
        let vf1 = reg_init(1, 0u32).named("v_fin1");
        vf1.set(pop);
        let f = |x: Sig, nm: &str| stage(x, &format!("{nm}_fin1"));
        let trunc_l2 = f(trunc_l2, "trunc_l2");
        let trunc_hdr = f(trunc_hdr, "trunc_hdr");
        let trunc_opt = f(trunc_opt, "trunc_opt");
        let trunc_ip = f(trunc_ip, "trunc_ip");
        let len_word1 = f(len_head, "len");
        // Past the length checks only the low 16 bits of `ip_end` are reported.
        let c = c.map(&mut |x, nm| f(if nm == "ip_end" { x.trunc(16) } else { x }, nm));
        let ip_proto = f(ip_proto, "ip_proto");
        let l4_off = f(l4_off, "l4_off");
        let l4_len = f(l4_len, "l4_len");
        let frag = f(frag, "frag");
        let late = f(late, "late");
        let l4c = f(l4c, "l4");
        let ports = f(ports, "ports");

        // ---------------------------------------------------------------- finish 2: verdict
        let v4_code = select(
            &[
                (trunc_hdr, code(malformed::L3_TRUNC)),
                (c.ihl_bad, code(malformed::IPV4_IHL)),
                (trunc_opt, code(malformed::L3_TRUNC)),
                (c.totlen_bad, code(malformed::IPV4_TOTAL_LEN)),
                (trunc_ip, code(malformed::IP_TRUNC)),
                (c.ver_bad, code(malformed::IP_VERSION)),
            ],
            0u32,
        );
        let v6_code = select(
            &[
                (trunc_hdr, code(malformed::L3_TRUNC)),
                (trunc_ip, code(malformed::IP_TRUNC)),
                (c.ver_bad, code(malformed::IP_VERSION)),
            ],
            0u32,
        );
        let l3_code = mux(c.v4, v4_code, v6_code);
        let is_ip = c.v4 | c.v6;
        let l3_ok = (is_ip & !trunc_l2 & l3_code.eq(0u32)).named("l3_ok");
        let bad = select(
            &[
                (trunc_l2, code(malformed::L2_TRUNC)),
                (!is_ip, code(0)),
                (l3_code.ne(0u32), l3_code),
            ],
            late,
        );
        let l3 = cat(&[l3_ok & c.v6, l3_ok & c.v4]);
        let l4 = mux(l3_ok, l4c, lit(2, 0u32));
        let l3_off = cat(&[lit(4, 0u32), c.vc, lit(2, 0u32)]) + 14u32;
        let late_fields: Vec<(&str, Sig)> = vec![
            ("malformed", bad),
            ("l3", l3),
            ("l4", l4),
            ("vlan_count", c.vc),
            ("frag", frag),
            ("ipv4_opts", c.opts),
            ("l3_off", l3_off),
            ("ip_proto", ip_proto),
            ("frame_len", len_word1.slice(15, 0)),
            ("ip_end", c.ip_end),
            ("l4_off", l4_off),
            ("l4_len", l4_len),
            ("src_port", ports.slice(31, 16)),
            ("dst_port", ports.slice(15, 0)),
        ];
        let mut late_parts: Vec<Sig> = late_fields.iter().map(|(_, x)| *x).collect();
        if cfg.user_bits > 0 {
            late_parts.push(len_word1.slice(15 + cfg.user_bits, 16));
        }
        late_parts.reverse();
        let late_word = cat(&late_parts);
        let late_mem = memory("meta_late", late_word.width(), depth);
        let late_wr = reg_init(aw + 1, 0u32).named("late_wr");
        late_mem.write(vf1, late_wr.trunc(aw), late_word);
        late_wr.set_if(vf1, late_wr + 1u32);

        // ---------------------------------------------------------------- output
        let rd = reg_init(aw + 1, 0u32).named("meta_rd");
        let m_ready = input("m_axis_meta_tready", 1);
        let m_valid = late_wr.ne(rd).named("meta_valid");
        let out = (m_valid & m_ready).named("meta_pop");
        rd.set_if(out, rd + 1u32);
        in_flight.set(in_flight + close.zext(aw + 1) - out.zext(aw + 1));
        // Full next cycle: `fifo_depth` records closed and not taken (no adder on this path).
        let full_next = (in_flight.eq((depth - 1) as u64) & close & !out)
            | (in_flight.eq(depth as u64) & (close | !out));
        ready.set(!full_next);
        let e = early_mem.read_async(rd.trunc(aw)).named("early_q");
        let l = late_mem.read_async(rd.trunc(aw)).named("late_q");
        // Unpack both words in the order they were packed.
        let mut vals: Vec<(&str, Sig)> = Vec::new();
        let mut lo = 0;
        for (nm, x) in [
            ("ethertype", 16),
            ("tag0_tci", 16),
            ("tag1_tci", 16),
            ("tag0_tpid_s", 1),
            ("src_ip", 128),
            ("dst_ip", 128),
        ] {
            vals.push((nm, e.slice(lo + x - 1, lo)));
            lo += x;
        }
        let mut lo = 0;
        for (nm, x) in &late_fields {
            let wdt = x.width();
            vals.push((nm, l.slice(lo + wdt - 1, lo)));
            lo += wdt;
        }
        if cfg.user_bits > 0 {
            vals.push(("user", l.slice(lo + cfg.user_bits - 1, lo)));
        }
        let layout = meta_layout(cfg.user_bits);
        output("m_axis_meta_tdata", layout.pack(&vals));
        output("m_axis_meta_tvalid", m_valid);

        if win.lanes_used.iter().any(|u| !u) {
            // The MAC addresses are not parsed: at some widths whole lanes carry only them.
            s.data().unused();
        }
    })
}
