//! `tx_tso`: TCP segmentation offload (mlx5 LSO) of plain, VXLAN and NVGRE super-frames, over
//! IPv4 and IPv6 outer and inner headers: each super-frame leaves as segments of `mss` payload
//! bytes, each a complete frame with the per-segment rewrites of wire-formats.md §2.5.
//!
//! The block is two engines, a register slice between them and a frame buffer in the second:
//!
//! - The **cutter** captures a super-frame's headers (`hdr_len` bytes, at most [`MAX_HDR`])
//!   into a register file of `MAX_HDR / W` beats (`W` bytes per beat), then for every segment
//!   emits the headers again followed by the next `mss` payload bytes. The payload streams
//!   through a ring of `2 W` bytes behind read and write pointers (a beat's payload written
//!   at the write pointer, a segment's bytes read at the read pointer, each a rotation by a
//!   register); the input stalls only while the ring is full, i.e. while a header is emitted.
//!   A segment is the super-frame's last when the input has ended and the ring empties with
//!   it.
//! - The **fixer** is store-and-forward per segment: its length is known only at its end, and
//!   every rewritten field but the sequence number depends on it (lengths, checksums, FIN and
//!   PSH). While a segment enters the frame buffer, six masked frame sums
//!   ([`mod@crate::csum::frame_sum`]) run over it with the rewritten fields masked out, and the
//!   fields' original values are captured (IPv4 IDs, sequence number, TCP flags word). At its
//!   end the new fields are computed; the segment then leaves the buffer with them written.
//!   [`crate::eth::tx_csum`] is not reused: its request (lengths, pseudo-header) is needed
//!   before a frame's first beat, which the cutter cannot know, and it rewrites one IP header
//!   where TSO rewrites two.
//!
//! Per segment `i` of `n`, `L` its length (offsets from the command; none of the super-frame's
//! own length fields is read):
//!
//! | Field | At | Value |
//! |---|---|---|
//! | outer IPv4 total length, ID, checksum | `outer_l3 + 2, 4, 10` | `L - outer_l3`, ID + i, recomputed |
//! | outer IPv6 payload length | `outer_l3 + 4` | `L - outer_l3 - 40` |
//! | outer UDP length (VXLAN) | `outer_l4 + 4` | `L - outer_l4` |
//! | outer UDP checksum (VXLAN) | `outer_l4 + 6` | 0 stays 0; else recomputed (0 sent as 0xFFFF) |
//! | inner (or only) IPv4 total length, ID, checksum | `l3 + 2, 4, 10` | `L - l3`, ID + i, recomputed |
//! | inner (or only) IPv6 payload length | `l3 + 4` | `L - l3 - 40` |
//! | TCP sequence | `l4 + 4` | base + i·mss |
//! | TCP flags | `l4 + 13` | CWR cleared but on segment 0, FIN and PSH but on segment n−1 |
//! | TCP checksum | `l4 + 16` | recomputed over the pseudo-header and the segment |
//!
//! Commands (record [`TsoCmd`], one per frame, in frame order):
//!
//! - `lso = 0`: the frame passes unchanged. It must fit the frame buffer's segment
//!   (`MAX_HDR + max_mss` bytes); a longer one leaves cut into pieces of that length.
//! - `lso = 1` with `mss = 0`, `mss > max_mss`, `hdr_len > MAX_HDR`, an odd header offset
//!   (the fields are written as aligned 16-bit words), `tunnel = 3`, a TCP header that does
//!   not end by `hdr_len` (`l4 + 20 > hdr_len`) ([`refuses`]): the frame is dropped whole and
//!   counted on `stat_bad`. Nothing of it has left by then.
//! - `lso = 1` and a super-frame that ends inside its headers: counted on `stat_bad`, and its
//!   bytes leave unchanged as one frame flagged `bad` in `tuser` ([`USER_BAD`]), so that a
//!   stage behind that keeps frames in order with another path (`crate::overlay::tx_lso`)
//!   sees the send end and drops it there. (The headers are captured before the end shows.)
//! - A super-frame aborted by its sender (`s_axis_tuser`, [`USER_IN_ABORT`], on its last
//!   beat): its last segment leaves flagged `bad` (and is counted on `stat_bad`), so the
//!   segments before it, each whole, are the send's only ones; none carries FIN or PSH.
//! - A payload over 256 KiB ([`MAX_PAYLOAD`]) is segmented all the same (the counters wrap as
//!   the model's do) and counted on `stat_long`: refusing it would mean buffering 256 KiB.
//!
//! - Widths: 8 to 512 bits, powers of two (a field at an even offset stays in one beat but on
//!   the 8-bit bus, where the fixer writes and captures its two bytes in two beats). The frame
//!   buffer must fit one FIFO ([`FIFO_MAX_DEPTH`] beats): `max_mss` up to 7936 at 8 bits,
//!   16128 at 16 bits, 16383 from 32 bits.
//! - Ports ([`TsoPorts`]): `s_axis_*` (super-frames in; `tuser`: abort), `s_axis_cmd_*` ([`TsoCmd`], through a
//!   register slice whose ready is a flop), `s_axis_cmd_tuser` (with `user_bits`: the
//!   command's sideband, held for the send), `m_axis_*` (segments and passed frames out;
//!   `tuser` on every beat: [`USER_LAST_SEG`] the send's last frame, [`USER_BAD`], and from
//!   [`USER_CMD`] on the command's sideband), `stat_bad`, `stat_long` (a pulse per frame). The
//!   input goes through a register slice (ready from a flop).
//! - Timing (docs/TIMING.md): the ports follow rules 1, 2 and 9 (the input and command
//!   register slices), the engines rule 2 (a register slice between them), the frame buffer
//!   rule 7 and the result queue rule 8 ([`Reserve`]). Inside, three paths are longer than the
//!   rules allow and are what a 512-bit build at speed would cut first: the ring's rotations
//!   (`log2(2 W)` levels of muxes after a subtract of two registers), whose lanes' write
//!   selects wait for the input's take; the fixer's byte masks and captures, compares of the
//!   beat offset ([`ge_mask`]) rather than tracked masks (rule 10); the fields' two stages of
//!   ones'-complement sums, each a chain of adders (up to ten terms) behind a subtract.
//! - Latency: store-and-forward per segment: a one-segment frame's first beat leaves 13
//!   cycles (64 bits) or 15 (512 bits) after its last beat entered.
//! - Throughput: the cutter emits one beat per cycle while the ring holds one; between
//!   segments two cycles pass (the fixer takes a segment's request once the previous segment
//!   has left the slice); the replicated headers cost `ceil(hdr_len / W)` beats per segment,
//!   during which the input waits. The frame buffer holds two segments, so one enters
//!   while the previous leaves. `tso_throughput_64k` in the test prints the cycles of 64 KiB
//!   sends at MSS 1448 and 8948.
//! - Cost: the header register file (`MAX_HDR` bytes), a `2 W`-byte ring with its two
//!   rotations, the frame buffer (block RAM, two segments of `MAX_HDR + max_mss` bytes), six
//!   frame sums, about thirty byte-position compares, a 16-entry result queue, twelve field
//!   writers on the output; in the TX path, part of the `tx_lso` row of results/AREA.md.
//! - Golden model: `nicgen_model::tso::tso`; test: `testbench/tests/overlay/tx_tso.rs`.

use crate::csum::frame_sum::{frame_sum, SumIn};
use crate::eth::byte_pos::ge_mask;
use crate::stream::stream_fifo::{stream_fifo_in, FifoRam, FIFO_MAX_DEPTH};
use crate::stream::{
    record_fifo, record_reg_slice, record_reg_slice_ctl, stream_reg_slice, Beat, FifoCfg,
    FifoPorts, RecordFifoPorts, Stream, StreamCfg,
};
use crate::timing::{stage, stage_init, Reserve};
use nicgen_edsl::prelude::*;
use nicgen_edsl::record::Word;

/// Largest header (`hdr_len`) a super-frame may have, in bytes.
pub const MAX_HDR: u32 = 256;

/// Largest TCP payload of one super-frame the block promises to segment without a flag.
pub const MAX_PAYLOAD: u32 = 256 * 1024;

/// Results (segments past their last beat and not yet out) the fix-up queue holds.
const RES_DEPTH: u32 = 16;

/// Sum-tree levels between registers in the frame sums.
const LEVELS_PER_STAGE: u32 = 2;

nicgen_edsl::record! {
    /// One super-frame's command (`s_axis_cmd_tdata`): the mlx5 LSO Ethernet segment's `mss`
    /// and the header offsets the driver computes (the software-parser offsets). Offsets are
    /// bytes from the frame's start; header offsets are even.
    pub struct TsoCmd {
        /// Payload bytes per segment (1 to `max_mss`).
        mss: 14,
        /// The outer IP header (tunnels only).
        outer_l3: 8,
        /// The first byte after the outer IP header: the outer UDP header (VXLAN) or the GRE
        /// header (NVGRE); tunnels only.
        outer_l4: 8,
        /// The inner (or only) IP header.
        l3: 8,
        /// The TCP header.
        l4: 8,
        /// The end of the TCP header: the first payload byte (at most [`MAX_HDR`]).
        hdr_len: 9,
        /// 0 none, 1 VXLAN, 2 NVGRE (3 is refused).
        tunnel: 2,
        /// The outer IP header is IPv6.
        outer_v6: 1,
        /// The inner (or only) IP header is IPv6.
        v6: 1,
        /// Segment the frame; 0 passes it unchanged.
        lso: 1,
    }
}

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TsoCfg {
    /// Bus width: a power of two from 8 to 512 bits.
    pub data_bits: u32,
    /// Largest `mss` a command may carry (the frame buffer holds two segments of
    /// `MAX_HDR + max_mss` bytes); 1 to 16383.
    pub max_mss: u32,
    /// Bits of `s_axis_cmd_tuser`, carried to `m_axis_tuser` of every frame the command gives
    /// (0: no such port).
    pub user_bits: u32,
}

/// The largest `max_mss` at `data_bits`: two segments of `MAX_HDR + max_mss` bytes in one FIFO
/// of [`FIFO_MAX_DEPTH`] beats, and 16383 (the command's 14 bits).
pub fn max_mss_at(data_bits: u32) -> u32 {
    let beats = FIFO_MAX_DEPTH / 2;
    (beats * (data_bits / 8)).saturating_sub(MAX_HDR).min(16383)
}

impl TsoCfg {
    /// Beats of the frame buffer: two of the longest segments, rounded up to a power of two.
    pub fn buffer_beats(&self) -> u32 {
        let seg = (MAX_HDR + self.max_mss).div_ceil(self.data_bits / 8);
        (2 * seg).next_power_of_two().max(16)
    }
}

/// `m_axis_tuser` bit 0: the frame is its super-frame's last.
pub const USER_LAST_SEG: u32 = 0;
/// `m_axis_tuser` bit 1: the frame is a refused super-frame's bytes, to be dropped behind.
pub const USER_BAD: u32 = 1;
/// `m_axis_tuser` bits from 2 on: the command's `s_axis_cmd_tuser`.
pub const USER_CMD: u32 = 2;
/// `s_axis_tuser` bit 0, on a super-frame's last beat: the sender aborts it (`sq_engine` met a
/// DMA error after the send's first bytes had left). The beat's bytes count as payload; the
/// segment they end in, the send's last, leaves flagged [`USER_BAD`], so every whole segment
/// before it goes out and the partial one is dropped.
pub const USER_IN_ABORT: u32 = 0;

/// The ports of [`tx_tso`].
pub struct TsoPorts {
    /// Super-frames in (`s_axis_*`; `tuser`: [`USER_IN_ABORT`]).
    pub s_axis: Stream,
    /// Segments out (`m_axis_*`).
    pub m_axis: Stream,
    /// One command per frame (`s_axis_cmd_*`).
    pub cmd: RecordStream<TsoCmd<u32>>,
    /// The command's sideband (`s_axis_cmd_tuser`, with `user_bits`).
    pub cmd_user: Option<Sig>,
    /// `stat_bad`: a frame dropped for its command or for ending inside its headers.
    pub bad: Sig,
    /// `stat_long`: a super-frame with more than [`MAX_PAYLOAD`] payload bytes (segmented).
    pub long: Sig,
}

impl Ports for TsoPorts {
    type Cfg = TsoCfg;
    fn ports(io: &Io, cfg: &TsoCfg) -> Self {
        let s = StreamCfg::new(cfg.data_bits, 1);
        TsoPorts {
            s_axis: Stream::sink(io, "s_axis", &s),
            m_axis: Stream::source(
                io,
                "m_axis",
                &StreamCfg::new(cfg.data_bits, USER_CMD + cfg.user_bits),
            ),
            cmd: RecordStream::sink(io, "s_axis_cmd", TsoCmd::shape()),
            cmd_user: (cfg.user_bits > 0).then(|| io.input("s_axis_cmd_tuser", cfg.user_bits)),
            bad: io.output("stat_bad", 1),
            long: io.output("stat_long", 1),
        }
    }
}

nicgen_edsl::states! {
    /// The cutter's states.
    enum Cut {
        /// Waiting for a command.
        Idle,
        /// Capturing the headers.
        Capture,
        /// Handing the fixer a segment's request.
        Start,
        /// Emitting a segment's beats.
        Emit,
        /// Discarding a refused frame.
        Drop,
    }
}

nicgen_edsl::record! {
    /// What the fixer needs of a segment besides its bytes: the command's offsets and flags,
    /// held from the segment's request to its last beat.
    struct SegReq {
        mss: 14,
        outer_l3: 16,
        outer_l4: 16,
        l3: 16,
        l4: 16,
        tunnel: 2,
        outer_v6: 1,
        v6: 1,
        lso: 1,
        /// Segment 0 of its super-frame.
        first: 1,
    }
}

nicgen_edsl::record! {
    /// A segment's facts at its last beat, carried beside its sums.
    struct Side {
        req: SegReq::WIDTH,
        /// Its length in bytes.
        len: 16,
        outer_id: 16,
        inner_id: 16,
        seq: 32,
        /// TCP data offset byte and flags byte.
        flags_word: 16,
        /// The outer UDP checksum is not 0.
        udp_csum: 1,
        /// The super-frame's last segment.
        last_seg: 1,
        /// Its super-frame was aborted ([`USER_IN_ABORT`]): this, its last segment, is dropped.
        abort: 1,
    }
}

nicgen_edsl::record! {
    /// One 16-bit field to write at an even offset of a segment.
    struct Put {
        value: 16,
        at: 16,
        en: 1,
    }
}

/// Fields the fixer writes per segment.
const PUTS: usize = 12;

/// The ports' checks and the module `tx_tso_d<W>_m<max_mss>`.
pub fn tx_tso(cfg: &TsoCfg) -> Result<Block<TsoPorts>, ElabError> {
    let w = cfg.data_bits;
    if !(8..=512).contains(&w) || !w.is_power_of_two() {
        return Err(ElabError::config(
            "tx_tso",
            format!(
                "data_bits {w} must be a power of two from 8 to 512 (whole bytes, and a \
                 16-bit field at an even offset must not straddle two beats but on the \
                 8-bit bus)"
            ),
        ));
    }
    if cfg.max_mss == 0 || cfg.max_mss > 16383 {
        return Err(ElabError::config(
            "tx_tso",
            format!(
                "max_mss {} must be 1 to 16383 (the command's mss has 14 bits)",
                cfg.max_mss
            ),
        ));
    }
    let scfg = StreamCfg::new(w, 0);
    let depth = cfg.buffer_beats();
    if depth > FIFO_MAX_DEPTH {
        return Err(ElabError::config(
            "tx_tso",
            format!(
                "max_mss {} needs a frame buffer of {depth} beats at {w} bits, more than a \
                 FIFO holds ({FIFO_MAX_DEPTH})",
                cfg.max_mss
            ),
        ));
    }
    let buf = stream_fifo_in(
        &FifoCfg {
            stream: scfg,
            depth,
            frame_mode: false,
        },
        FifoRam::Block,
    )?;
    let resq = record_fifo(
        Word::shape(Put::WIDTH * PUTS as u32 + USER_CMD + cfg.user_bits),
        RES_DEPTH,
    )?;
    let cfg = *cfg;
    let name = if cfg.user_bits > 0 {
        format!("tx_tso_d{}_m{}_u{}", w, cfg.max_mss, cfg.user_bits)
    } else {
        format!("tx_tso_d{}_m{}", w, cfg.max_mss)
    };
    Block::build(name, cfg, move |p: TsoPorts| {
        doc("TCP segmentation offload of plain, VXLAN and NVGRE super-frames.");
        let seg = cut(&cfg, &p);
        fix(&cfg, &p, &seg, &buf, &resq);
    })
}

/// Whether the block refuses LSO command `c` (the module docs' rule): `mss` 0 or over
/// `max_mss`, `hdr_len` over [`MAX_HDR`], an odd offset, tunnel kind 3, or a TCP header that
/// does not end by `hdr_len`.
pub fn refuses(c: &TsoCmd<Sig>, max_mss: u32) -> Sig {
    let odd = c.outer_l3.bit(0) | c.outer_l4.bit(0) | c.l3.bit(0) | c.l4.bit(0) | c.hdr_len.bit(0);
    c.mss.eq(0u32)
        | c.mss.gt(max_mss)
        | c.hdr_len.gt(MAX_HDR)
        | odd
        | c.tunnel.eq(3u32)
        | (c.l4.zext(9) + 20u32).gt(c.hdr_len)
}

/// Byte lane `i` of `x`.
fn lane(x: Sig, i: u32) -> Sig {
    x.slice(8 * i + 7, 8 * i)
}

/// Bytes in a beat: its `keep` is a run from lane 0 (stream rules 3 and 4 in
/// [`mod@crate::stream`]).
fn keep_count(keep: Sig, bits: u32) -> Sig {
    let n = keep.width();
    let arms: Vec<(Sig, Sig)> = (0..n)
        .rev()
        .map(|i| (keep.bit(i), lit(bits, i + 1)))
        .collect();
    select(&arms, lit(bits, 0u32))
}

/// `min(a, b)`.
fn min(a: Sig, b: Sig) -> Sig {
    mux(a.lt(b), a, b)
}

/// `v` (a power of two of lanes) rotated by `by` lanes, down (lane `i` of the result is lane
/// `(i + by) mod n`) or up (`(i - by) mod n`); one level of 2:1 muxes per bit of `by`.
fn rotate(v: &[Sig], by: Sig, down: bool) -> Vec<Sig> {
    let n = v.len();
    let mut cur = v.to_vec();
    for b in 0..by.width() {
        let d = if down {
            (1usize << b) % n
        } else {
            n - (1usize << b) % n
        };
        cur = (0..n)
            .map(|i| mux(by.bit(b), cur[(i + d) % n], cur[i]))
            .collect();
    }
    cur
}

/// Lanes below `n` (a thermometer of `lanes` bits).
fn below(n: Sig, lanes: u32) -> Sig {
    let bits: Vec<Sig> = (0..lanes).rev().map(|i| n.gt(i)).collect();
    cat(&bits)
}

/// The cutter's segment stream, seen by the fixer.
struct Segments {
    data: Sig,
    keep: Sig,
    last: Sig,
    /// The segment is the super-frame's last (with `last`).
    last_seg: Sig,
    /// The super-frame was aborted (with `last_seg`: the segment is dropped).
    abort: Sig,
    valid: Sig,
    /// Set by the fixer.
    ready: Sig,
    /// A segment's request is presented (the cutter is in `Start`).
    req_valid: Sig,
    /// Set by the fixer: the request is taken.
    req_ready: Sig,
    req: SegReq,
    /// The command's user bits above the `bad` flag, held for the super-frame.
    user: Sig,
}

/// The cutter: headers captured, then per segment the headers and `mss` payload bytes.
fn cut(cfg: &TsoCfg, p: &TsoPorts) -> Segments {
    let wb = cfg.data_bits / 8;
    let lw = clog2(wb as u64);
    // Byte counts up to 2W (the queue), and header counts up to MAX_HDR.
    let cb = clog2(2 * wb as u64 + 1);
    let hb_bits = 9;
    let beats = (MAX_HDR / wb).max(1);
    let hi_bits = clog2(beats as u64).max(1);

    let in_shape = StreamCfg::new(cfg.data_bits, 1).beat();
    let in_sl = record_reg_slice("in", in_shape.pack(&p.s_axis.beat()), p.s_axis.valid());
    p.s_axis.ready().set(in_sl.s_ready);
    let inp = in_shape.unpack(in_sl.data);
    let in_valid = in_sl.valid;
    let cmd_in = match p.cmd_user {
        Some(u) => cat(&[u, p.cmd.data]),
        None => p.cmd.data,
    };
    let cq = record_reg_slice_ctl("cmd", cmd_in, p.cmd.valid);
    p.cmd.ready.set(cq.s_ready);
    let c = TsoCmd::unpack(cq.data.slice(TsoCmd::WIDTH - 1, 0));

    let st = Fsm::new("cut_state", Cut::Idle);
    let idle = st.is(Cut::Idle);
    let take_cmd = (idle & cq.valid_ctl).named("take_cmd");
    cq.ready.set(take_cmd);

    // The command, held for the super-frame.
    let held = |x: Sig, name: &str| {
        let r = reg(x.width()).enable(take_cmd).named(name);
        r.set(x);
        r
    };
    let user = (cfg.user_bits > 0).then(|| {
        held(
            cq.data.slice(cq.data.width() - 1, TsoCmd::WIDTH),
            "cmd_user",
        )
    });
    // A super-frame that ends inside its headers leaves as one frame of the bytes captured,
    // unchanged (`lso` and `hdr` are rewritten for it) and flagged `bad`.
    let lso = reg(1).named("cmd_lso");
    lso.set_if(take_cmd, c.lso);
    let mss = held(c.mss, "cmd_mss");
    let hdr = reg(hb_bits).named("cmd_hdr");
    hdr.set_if(take_cmd, mux(c.lso, c.hdr_len, lit(hb_bits, 0u32)));
    let bad_sf = reg(1).named("cmd_short");
    bad_sf.set_if(take_cmd, lit(1, 0u32));
    let req = SegReq {
        mss,
        outer_l3: held(c.outer_l3.zext(16), "cmd_outer_l3"),
        outer_l4: held(c.outer_l4.zext(16), "cmd_outer_l4"),
        l3: held(c.l3.zext(16), "cmd_l3"),
        l4: held(c.l4.zext(16), "cmd_l4"),
        tunnel: held(c.tunnel, "cmd_tunnel"),
        outer_v6: held(c.outer_v6, "cmd_outer_v6"),
        v6: held(c.v6, "cmd_v6"),
        lso,
        first: wire(1),
    };
    let bad_cmd = (c.lso & refuses(&c, cfg.max_mss)).named("bad_cmd");

    // Input side.
    let cap = st.is(Cut::Capture);
    let start = st.is(Cut::Start);
    let emit = st.is(Cut::Emit);
    let dropping = st.is(Cut::Drop);
    let count = reg(cb).named("queue_count");
    let ended = reg_init(1, 0u32).named("ended");
    // The queue takes a beat when it holds at most W bytes once this cycle's output beat
    // has taken its bytes.
    let room = wire(1).named("queue_room");
    let in_ready = (cap | dropping | ((start | emit) & !ended & room)).named("in_ready");
    in_sl.ready.set(in_ready);
    let in_take = (in_valid & in_ready).named("in_take");
    let n_in = keep_count(inp.keep, lw + 1);
    // Header bytes still to capture; the beat's lanes below it are header.
    let cap_rem = reg(hb_bits).named("cap_rem");
    let cap_beat = reg(hi_bits).named("cap_beat");
    let skip = mux(cap, min(cap_rem, lit(hb_bits, wb)), lit(hb_bits, 0u32))
        .resize(lw + 1)
        .named("skip");
    let appended = mux(n_in.gt(skip), n_in - skip, lit(lw + 1, 0u32)).named("appended");
    let header_done = (cap & in_take & cap_rem.le(wb)).named("header_done");
    let short = (cap & in_take & inp.last & n_in.zext(hb_bits).lt(cap_rem)).named("short");
    lso.set_if(short, lit(1, 0u32));
    hdr.set_if(short, hdr - cap_rem + n_in.zext(hb_bits));
    bad_sf.set_if(short, lit(1, 1u32));
    cap_rem.set_if(take_cmd, mux(c.lso, c.hdr_len, lit(hb_bits, 0u32)));
    cap_rem.set_if(cap & in_take, cap_rem - min(cap_rem, lit(hb_bits, wb)));
    cap_beat.set_if(take_cmd, lit(hi_bits, 0u32));
    cap_beat.set_if(cap & in_take, cap_beat + 1u32);
    let h: Vec<Sig> = (0..beats)
        .map(|k| {
            let r = reg(cfg.data_bits)
                .enable(cap & in_take & cap_beat.eq(k))
                .named(&format!("hdr_{k}"));
            r.set(inp.data);
            r
        })
        .collect();
    ended.set_if(take_cmd, lit(1, 0u32));
    ended.set_if(in_take & inp.last & !dropping, lit(1, 1u32));
    // An aborted super-frame: its last segment (the one its last byte ends) is flagged bad.
    let abort_in = (in_take & inp.last & inp.user.bit(USER_IN_ABORT) & !dropping).named("abort_in");
    let aborted = reg_init(1, 0u32).named("aborted");
    aborted.set(select(
        &[(take_cmd, lit(1, 0u32)), (abort_in, lit(1, 1u32))],
        aborted,
    ));

    // Emit side: per beat, the header bytes still to send (`hrem`), then payload from the
    // queue, at most `mss_rem`.
    let hrem = reg(hb_bits).named("hdr_rem");
    let hidx = reg(hi_bits).named("hdr_beat");
    // Payload bytes left in the segment: `mss`, or for a frame passed unchanged the longest
    // segment the frame buffer takes.
    let mss_rem = reg(15).named("mss_rem");
    let first = reg(1).named("first_seg");
    req.first.set(first);
    let hb = min(hrem, lit(hb_bits, wb))
        .resize(lw + 1)
        .named("hdr_bytes");
    let room_out = (lit(lw + 1, wb) - hb).named("pay_room");
    let pn = mux(
        mss_rem.lt(room_out.zext(15)),
        mss_rem.resize(lw + 1),
        room_out,
    )
    .named("pay_want");
    // Payload bytes this beat takes: what it wants, or what is left once the input has ended.
    let pn_c = pn.zext(cb);
    let tk = mux(ended & count.lt(pn_c), count, pn_c)
        .resize(lw + 1)
        .named("pay_take");
    let beat_ok = (ended | count.ge(pn_c)).named("beat_ok");
    // The queue empties with this beat after the input's last: the super-frame's last segment.
    let drained = (ended & count.eq(tk.zext(cb))).named("drained");
    let seg_end = (hrem.le(wb) & (mss_rem.eq(tk.zext(15)) | drained)).named("seg_end");
    let o_bytes = (hb + tk).named("out_bytes");
    let hsel = case(
        hidx,
        &h.iter()
            .enumerate()
            .map(|(k, r)| (k as u64, *r))
            .collect::<Vec<_>>(),
        lit(cfg.data_bits, 0u32),
    );
    // The queue: a ring of 2W bytes behind read and write pointers (registers), so that both
    // sides are a rotation by flops. The output's payload lanes (from `hb` on) read
    // `[rp, rp + W - hb)`; a beat's payload lanes `[skip, skip + appended)` land at
    // `[wp, wp + appended)`.
    let pw = clog2(2 * wb as u64);
    let ring_lanes = 2 * wb as usize;
    let queue = reg(16 * wb).named("queue");
    let rp = reg_init(pw, 0u32).named("queue_rd");
    let wp = reg_init(pw, 0u32).named("queue_wr");
    let q_lanes: Vec<Sig> = (0..ring_lanes).map(|k| lane(queue, k as u32)).collect();
    let q_out = rotate(&q_lanes, (rp - hb.resize(pw)).named("queue_rd_at"), true);
    let hmask = below(hb, wb);
    let lanes: Vec<Sig> = (0..wb)
        .rev()
        .map(|i| mux(hmask.bit(i), lane(hsel, i), q_out[i as usize]))
        .collect();
    let o_valid = (emit & beat_ok).named("seg_valid");
    let o_ready = wire(1).named("seg_ready");
    let fire = (o_valid & o_ready).named("seg_fire");
    let tk_eff = mux(fire, tk, lit(lw + 1, 0u32)).zext(cb);
    let mid = (count - tk_eff).named("queue_mid");
    room.set(mid.le(wb));
    // A beat is written over the W lanes from `wp` on: they hold nothing not yet read once
    // this cycle's take is out (`room`), and lanes past its payload are never read.
    let add = in_take & !dropping & !idle;
    let d_lanes: Vec<Sig> = (0..ring_lanes as u32)
        .map(|k| {
            if k < wb {
                lane(inp.data, k)
            } else {
                lit(8, 0u32)
            }
        })
        .collect();
    let q_in = rotate(&d_lanes, (wp - skip.resize(pw)).named("queue_wr_at"), false);
    let next_q: Vec<Sig> = (0..ring_lanes)
        .rev()
        .map(|k| {
            let window = !(lit(pw, k as u32) - wp).bit(pw - 1);
            mux(add & window, q_in[k], q_lanes[k])
        })
        .collect();
    queue.set(cat(&next_q));
    rp.set(mux(take_cmd, wp, rp + tk_eff.resize(pw)));
    wp.set(wp + mux(add, appended.resize(pw), lit(pw, 0u32)));
    count.set(mux(
        take_cmd,
        lit(cb, 0u32),
        mid + mux(add, appended.zext(cb), lit(cb, 0u32)),
    ));

    // Segment bookkeeping.
    let req_ready = wire(1).named("seg_req_ready");
    let started = (start & req_ready).named("seg_started");
    hrem.set_if(started, hdr);
    hidx.set_if(started, lit(hi_bits, 0u32));
    mss_rem.set_if(
        started,
        mux(lso, mss.zext(15), lit(15, MAX_HDR + cfg.max_mss)),
    );
    first.set_if(take_cmd, lit(1, 1u32));
    first.set_if(started, lit(1, 0u32));
    hrem.set_if(fire, hrem - hb.zext(hb_bits));
    hidx.set_if(fire & hb.ne(0u32), hidx + 1u32);
    mss_rem.set_if(fire, mss_rem - tk.zext(15));
    let done_sf = (fire & seg_end & drained).named("sf_done");

    // Payload bytes, for the 256 KiB flag.
    let pay = reg(19).named("pay_count");
    let long = reg(1).named("pay_long");
    let sum = pay.zext(20) + mux(add, appended.zext(20), lit(20, 0u32));
    pay.set_if(take_cmd, lit(19, 0u32));
    pay.set_if(
        !take_cmd & add,
        mux(sum.gt(MAX_PAYLOAD), lit(20, MAX_PAYLOAD + 1), sum).resize(19),
    );
    long.set_if(take_cmd, lit(1, 0u32));
    long.set_if(!take_cmd & sum.gt(MAX_PAYLOAD), lit(1, 1u32));
    let long_q = reg_init(1, 0u32).named("stat_long_q");
    long_q.set(done_sf & lso & long);
    p.long.set(long_q);
    let bad_q = reg_init(1, 0u32).named("stat_bad_q");
    bad_q.set((take_cmd & bad_cmd) | short | (abort_in & !short));
    p.bad.set(bad_q);

    st.next(&[
        (take_cmd & bad_cmd, Cut::Drop),
        (take_cmd & c.lso, Cut::Capture),
        (take_cmd, Cut::Start),
        (short, Cut::Start),
        (header_done, Cut::Start),
        (dropping & in_take & inp.last, Cut::Idle),
        (started, Cut::Emit),
        (done_sf, Cut::Idle),
        (fire & seg_end, Cut::Start),
    ]);

    // Lanes past the beat's bytes are zero: the ring's unwritten lanes are never shown.
    let keep = below(o_bytes, wb);
    let shown: Vec<Sig> = (0..wb)
        .rev()
        .map(|i| lanes[(wb - 1 - i) as usize] & keep.bit(i).repl(8))
        .collect();
    Segments {
        data: cat(&shown),
        keep,
        last: seg_end,
        last_seg: drained,
        abort: aborted,
        valid: o_valid,
        ready: o_ready,
        req_valid: start,
        req_ready,
        req,
        user: match user {
            Some(u) => cat(&[u, bad_sf]),
            None => bad_sf,
        },
    }
}

/// The ones'-complement sum of 16-bit `terms` (at most 16), folded to 16 bits.
fn ones_sum(terms: &[Sig]) -> Sig {
    let mut s = lit(20, 0u32);
    for t in terms {
        s = s + t.zext(20);
    }
    let f1 = s.slice(15, 0).zext(17) + s.slice(19, 16).zext(17);
    f1.slice(15, 0) + f1.bit(16).zext(16)
}

/// The fixer: each segment into the frame buffer with its sums and captured fields, its
/// fields computed at its end, then out of the buffer with them written.
fn fix(
    cfg: &TsoCfg,
    p: &TsoPorts,
    seg: &Segments,
    buf: &Block<FifoPorts>,
    resq: &Block<RecordFifoPorts<Word<u32>>>,
) {
    let wb = cfg.data_bits / 8;
    let adv = lit(1, 1u32);
    let m = &p.m_axis;
    let u_buf = buf.instance("u_frame_buf");
    let u_res = resq.instance("u_result_q");

    // The cutter's beats through a register slice, so that the fixer's ready does not reach
    // the cutter's queue within a cycle (docs/TIMING.md, rule 2); the segment's "last of the
    // super-frame" flag rides as `tuser`. A request is taken only once the previous segment
    // has left the slice (`have` falls with its last beat), so the cutter's held command is
    // the taken segment's.
    let shape = StreamCfg::new(cfg.data_bits, 2).beat();
    let sl = record_reg_slice(
        "seg",
        shape.pack(&Beat {
            data: seg.data,
            keep: seg.keep,
            last: seg.last,
            user: cat(&[seg.abort & seg.last_seg, seg.last_seg]),
        }),
        seg.valid,
    );
    seg.ready.set(sl.s_ready);
    let sb = shape.unpack(sl.data);

    // Input side: a segment's request, then its beats, while the result queue has a place for
    // it (`Reserve`: the sums never stall).
    let reserve = Reserve::new(RES_DEPTH);
    let have = reg_init(1, 0u32).named("have_req");
    let buf_ready = u_buf.s_axis.ready();
    let beat = (sl.valid & have & reserve.room & buf_ready).named("fix_beat");
    sl.ready.set(have & reserve.room & buf_ready);
    let frame_end = (beat & sb.last).named("fix_end");
    seg.req_ready.set(!have);
    let take = (seg.req_valid & !have).named("fix_take");
    have.set(take | (have & !frame_end));
    u_buf.s_axis.data().set(sb.data);
    u_buf.s_axis.keep().set(sb.keep);
    u_buf.s_axis.last().set(sb.last);
    u_buf.s_axis.valid().set(sl.valid & have & reserve.room);
    let rq_word = reg(SegReq::WIDTH).enable(take).named("fix_req");
    rq_word.set(seg.req.pack());
    let user_word = reg(seg.user.width()).enable(take).named("fix_user");
    user_word.set(seg.user);
    let rq = SegReq::unpack(rq_word);

    // Stage A: the beat registered; its offset in the segment.
    let data_a = stage(sb.data, adv).named("fix_data_a");
    let keep_a = stage(sb.keep, adv).named("fix_keep_a");
    let last_a = stage(sb.last, adv).named("fix_last_a");
    let last_seg_a = stage(sb.user.bit(0), adv).named("fix_last_seg_a");
    let abort_a = stage(sb.user.bit(1), adv).named("fix_abort_a");
    let beat_a = stage_init(beat, adv).named("fix_beat_a");
    let pos_a = reg_init(16, 0u32).named("fix_pos_a");
    pos_a.set_if(beat_a, mux(last_a, lit(16, 0u32), pos_a + wb));
    let ge = |b: Sig| ge_mask(pos_a, b, wb);
    let range = |lo: Sig, hi: Sig| ge(lo) & !ge(hi);
    let word = |at: Sig| range(at, at + 2u32);
    let (ol3, ol4, l3, l4) = (rq.outer_l3, rq.outer_l4, rq.l3, rq.l4);
    // The sums: outer and inner IPv4 header without length, ID and checksum; the inner and
    // outer addresses (the pseudo-headers'); TCP without sequence, flags word and checksum;
    // the outer UDP datagram without any of the fields rewritten in it.
    let so_mask = (keep_a & range(ol3, ol4) & !range(ol3 + 2u32, ol3 + 6u32) & !word(ol3 + 10u32))
        .named("so_mask");
    let si_mask = (keep_a & range(l3, l4) & !range(l3 + 2u32, l3 + 6u32) & !word(l3 + 10u32))
        .named("si_mask");
    // An IP header's addresses: the pseudo-header's part.
    let addrs = |at: Sig, v6: Sig| {
        mux(
            v6,
            range(at + 8u32, at + 40u32),
            range(at + 12u32, at + 20u32),
        )
    };
    let inner_fields = mux(
        rq.v6,
        word(l3 + 4u32),
        range(l3 + 2u32, l3 + 6u32) | word(l3 + 10u32),
    );
    let tcp_fields = range(l4 + 4u32, l4 + 8u32) | word(l4 + 12u32) | word(l4 + 16u32);
    let sa_mask = (keep_a & addrs(l3, rq.v6)).named("sa_mask");
    let st_mask = (keep_a & ge(l4) & !tcp_fields).named("st_mask");
    let soa_mask = (keep_a & addrs(ol3, rq.outer_v6)).named("soa_mask");
    let su_mask = (keep_a & ge(ol4) & !range(ol4 + 4u32, ol4 + 8u32) & !inner_fields & !tcp_fields)
        .named("su_mask");
    let data_b = stage(data_a, adv).named("fix_data_b");
    let beat_b = stage_init(beat_a, adv).named("fix_beat_b");
    let last_b = stage(last_a, adv).named("fix_last_b");
    let sum = |mask: Sig, name: &str| {
        frame_sum(
            &SumIn {
                data: data_b,
                mask: stage(mask, adv).named(&format!("{name}mask_b")),
                beat: beat_b,
                last: last_b,
                adv,
            },
            LEVELS_PER_STAGE,
            name,
        )
    };
    let so = sum(so_mask, "so_");
    let si = sum(si_mask, "si_");
    let sa = sum(sa_mask, "sa_");
    let st = sum(st_mask, "st_");
    let soa = sum(soa_mask, "soa_");
    let su = sum(su_mask, "su_");
    for s in [&si, &sa, &st, &soa, &su] {
        s.valid.unused();
    }

    // The original fields, captured as they pass (the value includes this beat's).
    // Each byte on its own: on an 8-bit bus a word's two bytes are two beats.
    let capture_byte = |at: Sig, name: &str| {
        let oh = (ge(at) & !ge(at + 1u32)).named(&format!("{name}_at"));
        let mut new = lit(8, 0u32);
        for i in 0..wb {
            new = new | (oh.bit(i).repl(8) & lane(data_a, i));
        }
        let here = (beat_a & oh.or_reduce()).named(&format!("{name}_here"));
        let r = reg(8).enable(here).named(name);
        r.set(new);
        mux(here, new, r)
    };
    let capture = |at: Sig, name: &str| {
        cat(&[
            capture_byte(at, &format!("{name}_hi")),
            capture_byte(at + 1u32, &format!("{name}_lo")),
        ])
    };
    let outer_id = capture(ol3 + 4u32, "cap_outer_id");
    let inner_id = capture(l3 + 4u32, "cap_inner_id");
    let seq_hi = capture(l4 + 4u32, "cap_seq_hi");
    let seq_lo = capture(l4 + 6u32, "cap_seq_lo");
    let flags_word = capture(l4 + 12u32, "cap_flags");
    let udp_ck = capture(ol4 + 6u32, "cap_udp_csum");
    let len_acc = reg_init(16, 0u32).named("fix_len_acc");
    len_acc.set_if(beat_a, mux(last_a, lit(16, 0u32), len_acc + wb));
    let side = Side {
        req: rq_word,
        len: len_acc + keep_count(keep_a, 16),
        outer_id,
        inner_id,
        seq: cat(&[seq_hi, seq_lo]),
        flags_word,
        udp_csum: udp_ck.ne(0u32),
        last_seg: last_seg_a,
        abort: abort_a,
    };
    let mut side = side.pack();
    let mut user_s = user_word;
    for _ in 0..so.latency + 1 {
        side = stage(side, adv);
        user_s = stage(user_s, adv);
    }

    // The segment's fields, as its sums arrive (in segment order).
    let sd = Side::unpack(side);
    let r = SegReq::unpack(sd.req);
    let done = so.valid;
    let idx = reg(16).named("seg_index");
    let off = reg(32).named("seg_seq_off");
    let i_cur = mux(r.first, lit(16, 0u32), idx + 1u32);
    let off_cur = mux(r.first, lit(32, 0u32), off + r.mss.zext(32));
    idx.set_if(done, i_cur);
    off.set_if(done, off_cur);
    let len = sd.len;
    let ip_len = |at: Sig, v6: Sig| mux(v6, len - at - 40u32, len - at);
    let o_len = ip_len(r.outer_l3, r.outer_v6);
    let o_id = sd.outer_id + i_cur;
    let u_len = len - r.outer_l4;
    let i_len = ip_len(r.l3, r.v6);
    let i_id = sd.inner_id + i_cur;
    let seq = sd.seq + off_cur;
    let (seq_hi, seq_lo) = (seq.slice(31, 16), seq.slice(15, 0));
    // CWR (0x80) on segment 0 only; FIN (0x01) and PSH (0x08) on the last only.
    let clear = cat(&[
        !r.first,
        lit(3, 0u32),
        !sd.last_seg,
        lit(2, 0u32),
        !sd.last_seg,
    ]);
    let fw = cat(&[
        sd.flags_word.slice(15, 8),
        sd.flags_word.slice(7, 0) & !clear,
    ]);
    // Two stages: the new fields and the checksums' sums without the checksums they cover;
    // then the checksums (the outer UDP one covers the inner IPv4 and the TCP checksum).
    let s1 = |x: Sig| stage(x, adv);
    let zero = lit(16, 0u32);
    let o_part = ones_sum(&[so.sum, o_len, o_id]);
    let i_part = ones_sum(&[si.sum, i_len, i_id]);
    let t_part = ones_sum(&[
        st.sum,
        seq_hi,
        seq_lo,
        fw,
        sa.sum,
        lit(16, 6u32),
        len - r.l4,
    ]);
    // The outer UDP checksum over its pseudo-header and the datagram as it leaves.
    let u_part = ones_sum(&[
        su.sum,
        soa.sum,
        lit(16, 17u32),
        u_len,
        u_len,
        i_len,
        mux(r.v6, zero, i_id),
        seq_hi,
        seq_lo,
        fw,
    ]);
    let (o_ck, i_ck, t_ck) = (!s1(o_part), !s1(i_part), !s1(t_part));
    let u_raw = ones_sum(&[s1(u_part), mux(s1(r.v6), zero, i_ck), t_ck]);
    let u_ck = mux(u_raw.eq(0xFFFFu32), lit(16, 0xFFFFu32), !u_raw);
    let tun = r.tunnel.ne(0u32) & r.lso;
    let outer4 = tun & !r.outer_v6;
    let inner4 = r.lso & !r.v6;
    // A field: its value (of the second stage) at a position and enable of the first.
    let put = |value: Sig, at: Sig, en: Sig| {
        Put {
            value,
            at: s1(at),
            en: s1(en),
        }
        .pack()
    };
    let puts = [
        put(
            s1(o_len),
            mux(r.outer_v6, r.outer_l3 + 4u32, r.outer_l3 + 2u32),
            tun,
        ),
        put(s1(o_id), r.outer_l3 + 4u32, outer4),
        put(o_ck, r.outer_l3 + 10u32, outer4),
        put(s1(u_len), r.outer_l4 + 4u32, r.lso & r.tunnel.eq(1u32)),
        put(
            u_ck,
            r.outer_l4 + 6u32,
            r.lso & r.tunnel.eq(1u32) & sd.udp_csum,
        ),
        put(s1(i_len), mux(r.v6, r.l3 + 4u32, r.l3 + 2u32), r.lso),
        put(s1(i_id), r.l3 + 4u32, inner4),
        put(i_ck, r.l3 + 10u32, inner4),
        put(s1(seq_hi), r.l4 + 4u32, r.lso),
        put(s1(seq_lo), r.l4 + 6u32, r.lso),
        put(s1(fw), r.l4 + 12u32, r.lso),
        put(t_ck, r.l4 + 16u32, r.lso),
    ];
    // The frame's `tuser` rides above the fields: the command's user bits and `bad` (as held,
    // or the aborted send's last segment), the last-segment flag.
    let bad_out = user_s.bit(0) | sd.abort;
    let user_hi = (user_s.width() > 1).then(|| user_s.slice(user_s.width() - 1, 1));
    let tuser = stage(
        match user_hi {
            Some(h) => cat(&[h, bad_out, sd.last_seg]),
            None => cat(&[bad_out, sd.last_seg]),
        },
        adv,
    );
    let mut words: Vec<Sig> = vec![tuser];
    words.extend(puts.iter().rev().copied());
    let res = stage(cat(&words), adv).named("fix_result");
    let res_valid = stage_init(stage_init(done, adv), adv).named("fix_result_valid");
    u_res.s_axis.data.set(res);
    u_res.s_axis.valid.set(res_valid);
    // Never full: `Reserve` holds a place for every segment past its last beat.
    u_res.s_axis.ready.unused();

    // Output side: a segment's result, then its beats with the fields written.
    let fb = stream_reg_slice("frame_reg", &u_buf.m_axis);
    let q = &u_res.m_axis;
    let out_have = reg_init(1, 0u32).named("have_result");
    let out_beat = (fb.slice.valid & out_have & m.ready()).named("out_beat");
    let out_end = (out_beat & fb.last).named("out_end");
    let pop = (q.valid & (!out_have | out_end)).named("pop_result");
    q.ready.set(!out_have | out_end);
    out_have.set(mux(pop, lit(1, 1u32), mux(out_end, lit(1, 0u32), out_have)));
    reserve.update(frame_end, pop);
    let cur = reg(q.data.width()).enable(pop).named("out_result");
    cur.set(q.data);
    let pos_o = reg_init(16, 0u32).named("out_pos");
    pos_o.set_if(out_beat, mux(fb.last, lit(16, 0u32), pos_o + wb));
    // Each field's bytes in the beat leaving now: the high byte at `at`, the low one the lane
    // after (the same beat: `at` is even) or, on an 8-bit bus, the next beat.
    let at_byte =
        |at: Sig, en: Sig| ge_mask(pos_o, at, wb) & !ge_mask(pos_o, at + 1u32, wb) & en.repl(wb);
    let fields: Vec<(Sig, Sig, Sig)> = (0..PUTS as u32)
        .map(|k| {
            let f = Put::unpack(cur.slice(Put::WIDTH * (k + 1) - 1, Put::WIDTH * k));
            let hi = at_byte(f.at, f.en);
            let lo = if wb == 1 {
                at_byte(f.at + 1u32, f.en)
            } else {
                cat(&[hi.slice(wb - 2, 0), lit(1, 0u32)])
            };
            (hi, lo, f.value)
        })
        .collect();
    let out: Vec<Sig> = (0..wb)
        .rev()
        .map(|i| {
            let mut arms = Vec::new();
            for (hi, lo, v) in &fields {
                arms.push((hi.bit(i), v.slice(15, 8)));
                arms.push((lo.bit(i), v.slice(7, 0)));
            }
            select(&arms, lane(fb.data, i))
        })
        .collect();
    m.data().set(cat(&out));
    let fields_bits = Put::WIDTH * PUTS as u32;
    if let Some(u) = m.user() {
        u.set(cur.slice(cur.width() - 1, fields_bits));
    }
    m.keep().set(fb.keep);
    m.last().set(fb.last);
    m.valid().set(fb.slice.valid & out_have);
    fb.slice.ready.set(m.ready() & out_have);
}
