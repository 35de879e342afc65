//! `stream_fifo`: synchronous stream FIFO, optionally in frame (store-and-forward) mode, in
//! LUT RAM or block RAM.
//!
//! One memory of `depth` words holds `{tuser, tlast, tkeep, tdata}`. Pointers carry one extra
//! wrap bit. [`FifoRam::Lut`] reads it combinationally (LUT RAM) and `m_axis_t*` come straight
//! from the read port; [`FifoRam::Block`] reads it through a registered read port (`read_sync`:
//! RAMB18/36, DP16KD) followed by an output register, two stages that never stall, into a
//! 16-entry LUT-RAM output queue whose read side is `m_axis`. A read starts while every word
//! read and not yet delivered has a place in that queue (a flop, `can_read`), so `m_axis_tready`
//! never reaches the RAMs' enables (docs/TIMING.md, rule 7). A FIFO deeper than
//! [`BRAM_BANK_DEPTH`] is built as banks, each with its own registered read and output
//! register, selected after them, so that the ECP5 flow can make each output register the
//! RAM's own.
//!
//! **Frame mode** (`frame_mode = true`): the reader sees only complete frames (the write pointer
//! is published to `wr_commit` at `tlast`). A frame whose last beat carries `tuser[0]` (`bad`,
//! see the stream sideband table) is discarded by rewinding the write pointer; so is a frame with
//! more beats than the FIFO holds (it could never be published). Each drop pulses
//! `stat_drop_bad` or `stat_drop_oversize` for one cycle, so every frame in is accounted for:
//! out + dropped = in. The input is never blocked by a frame being dropped.
//!
//! No pointer comparison sits in front of a pointer register: `full`, `s_axis_room` and the
//! read side's "data available" are flops picked from registered compares of the occupancy
//! (rule 5); the oversize check is the top bit of a per-frame beat counter; the RAM is written
//! whenever the FIFO is not full (rule 6).
//!
//! - API: [`stream_fifo`]`(&cfg)` builds the LUT-RAM FIFO, [`stream_fifo_in`]`(&cfg, ram)` either
//!   kind (module name suffix `_bram` for block RAM), [`stream_fifo_room`] also `s_axis_room` (a
//!   flop: at least N entries free).
//! - Ports ([`FifoPorts`]): `s_axis_*`, `m_axis_*`, `s_axis_room` where built by
//!   [`stream_fifo_room`], and in frame mode `stat_drop_bad`, `stat_drop_oversize`
//!   ([`FifoDrops`]). `s_axis_tready` is a flop (`!full`) or 1 while a frame is being dropped;
//!   `m_axis_tvalid` is a flop in both RAM kinds.
//! - Latency (beat written to `m_axis_tvalid`): Lut 2 cycles, Block 7 cycles; in frame mode from
//!   the frame's last beat (+1 for the commit).
//! - Throughput: 1 beat/cycle in and out, no bubbles under any `m_axis_tready` pattern, for
//!   `depth >= 4` (at depth 2 the one-cycle-late flags halve it). Storage: `depth` beats, + up to
//!   [`BLOCK_PREFETCH`] beats read from the block RAM and not yet delivered; frame mode accepts
//!   frames of up to `depth` beats.
//! - Cost: `depth x (data + keep + 1 + user)` bits of LUT RAM or block RAM, three (frame mode:
//!   four) counters of `log2(depth) + 1` bits; Block adds an output register per bank, a bank
//!   select and the 16-word output queue; LUT/FF/Fmax per preset: results/AREA.md, rows
//!   `rx frame buffer` (frame mode) and `tx delay FIFO`.
//! - Golden model: `nicgen_model::stream::fifo_frames` (identity in plain mode); test:
//!   `testbench/tests/stream/stream_fifo.rs`.

use super::{Stream, StreamCfg, TUSER_BAD};
use nicgen_edsl::prelude::*;

/// Where the FIFO keeps its words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FifoRam {
    /// Distributed (LUT) RAM with a combinational read: small depths (16..64).
    #[default]
    Lut,
    /// Block RAM with a registered read and a first-word-fall-through output register: deep
    /// FIFOs (hundreds to 16384 beats, e.g. jumbo frames).
    Block,
}

/// FIFO parameters. The storage kind is the second argument of [`stream_fifo_in`]
/// ([`stream_fifo`] is LUT RAM), so that existing `FifoCfg { .. }` literals keep compiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FifoCfg {
    pub stream: StreamCfg,
    /// Entries (beats); a power of two from 2 to 16384.
    pub depth: u32,
    /// Store-and-forward with dropping of bad and oversize frames (needs `tuser`).
    pub frame_mode: bool,
}

impl FifoCfg {
    /// A plain FIFO of `depth` beats.
    pub fn new(stream: StreamCfg, depth: u32) -> Self {
        FifoCfg {
            stream,
            depth,
            frame_mode: false,
        }
    }
    /// The same in frame mode.
    pub fn frames(mut self) -> Self {
        self.frame_mode = true;
        self
    }
}

/// Depth of one block RAM at its 9-bit width (ECP5 `DP16KD`, Xilinx `RAMB18E1`: 2048 x 9). A
/// deeper [`FifoRam::Block`] FIFO is built as `depth / BRAM_BANK_DEPTH` banks, each with its own
/// registered read and output register, and the bank is selected after the output registers.
/// Left to the synthesis tool, one deep memory becomes several RAMs in depth with a select mux
/// between their outputs and the output register, which keeps that register out of the RAMs.
pub const BRAM_BANK_DEPTH: u32 = 2048;

/// Entries of a [`FifoRam::Block`] FIFO's output queue (LUT RAM: one 16-deep primitive).
pub const BLOCK_OUT_DEPTH: u32 = 16;

/// Words a [`FifoRam::Block`] FIFO holds beyond its RAM: read from the RAM and not yet
/// delivered (in its two read stages and its output queue). Two fewer than the queue's depth,
/// so that the queue's `full` (conservative for a cycle) never rises.
pub const BLOCK_PREFETCH: u32 = BLOCK_OUT_DEPTH - 2;

/// Largest supported depth (a 9000-byte jumbo frame is 1125 beats at 64 bits, 9000 at 8 bits).
pub const FIFO_MAX_DEPTH: u32 = 16384;

nicgen_edsl::record! {
    /// The frame-mode FIFO's drop pulses (`stat_drop_bad`, `stat_drop_oversize`): high for
    /// one cycle per frame dropped.
    pub struct FifoDrops {
        /// A frame whose last beat carries `tuser[0]` (bad).
        drop_bad: 1,
        /// A frame of more beats than the FIFO holds.
        drop_oversize: 1,
    }
}

/// The ports of a [`stream_fifo`].
pub struct FifoPorts {
    /// Beats in (`s_axis_*`).
    pub s_axis: Stream,
    /// Beats out, in order (`m_axis_*`).
    pub m_axis: Stream,
    /// `s_axis_room` (a flop), when built by [`stream_fifo_room`].
    pub room: Option<Sig>,
    /// `stat_drop_bad`, `stat_drop_oversize`, in frame mode.
    pub drops: Option<FifoDrops>,
}

impl Ports for FifoPorts {
    /// The FIFO's parameters and the room threshold of [`stream_fifo_room`].
    type Cfg = (FifoCfg, Option<u32>);
    fn ports(io: &Io, (cfg, room): &(FifoCfg, Option<u32>)) -> Self {
        FifoPorts {
            s_axis: Stream::sink(io, "s_axis", &cfg.stream),
            m_axis: Stream::source(io, "m_axis", &cfg.stream),
            room: room.map(|_| io.output("s_axis_room", 1)),
            drops: cfg
                .frame_mode
                .then(|| io.outputs("stat_", &FifoDrops::shape())),
        }
    }
}

/// The FIFO in LUT RAM (the default storage).
pub fn stream_fifo(cfg: &FifoCfg) -> Result<Block<FifoPorts>, ElabError> {
    stream_fifo_in(cfg, FifoRam::Lut)
}

/// The FIFO in the given storage kind.
pub fn stream_fifo_in(cfg: &FifoCfg, ram: FifoRam) -> Result<Block<FifoPorts>, ElabError> {
    build(cfg, ram, None)
}

/// The FIFO with one more output, `s_axis_room` (a flop): high when at least `room` entries are
/// free, counting the beats written up to the last cycle and ignoring the reads of the last
/// cycle (so it is conservative for one cycle, like `full`). For a writer that must know ahead
/// that a burst will fit (beats already in a pipeline in front of the FIFO): its decision then
/// starts at a flop, and the reader's `tready` reaches only the read pointer. In block RAM the
/// count is of the RAM's entries: up to [`BLOCK_PREFETCH`] beats more are past the RAM.
pub fn stream_fifo_room(
    cfg: &FifoCfg,
    ram: FifoRam,
    room: u32,
) -> Result<Block<FifoPorts>, ElabError> {
    if room == 0 || room > cfg.depth {
        return Err(ElabError::config(
            "stream_fifo",
            format!(
                "room threshold {room} must be from 1 to the depth ({})",
                cfg.depth
            ),
        ));
    }
    build(cfg, ram, Some(room))
}

fn build(cfg: &FifoCfg, ram: FifoRam, room: Option<u32>) -> Result<Block<FifoPorts>, ElabError> {
    cfg.stream.check("stream_fifo")?;
    if cfg.depth < 2 || !cfg.depth.is_power_of_two() || cfg.depth > FIFO_MAX_DEPTH {
        return Err(ElabError::config(
            "stream_fifo",
            format!(
                "FIFO depth {} is not a power of two from 2 to {FIFO_MAX_DEPTH}",
                cfg.depth
            ),
        ));
    }
    if cfg.frame_mode && cfg.stream.user_bits == 0 {
        return Err(ElabError::config(
            "stream_fifo",
            "frame mode needs a tuser bit to mark bad frames (user_bits >= 1)",
        ));
    }
    let name = format!(
        "stream_fifo_{}_n{}{}{}{}",
        cfg.stream.suffix(),
        cfg.depth,
        if cfg.frame_mode { "_frame" } else { "" },
        if ram == FifoRam::Block { "_bram" } else { "" },
        room.map(|r| format!("_room{r}")).unwrap_or_default()
    );
    let out_q = match ram {
        FifoRam::Lut => None,
        FifoRam::Block => Some(build(
            &FifoCfg::new(cfg.stream, BLOCK_OUT_DEPTH),
            FifoRam::Lut,
            None,
        )?),
    };
    let cfg = *cfg;
    Block::build(name, (cfg, room), move |p: FifoPorts| {
        doc(&format!(
            "Synchronous stream FIFO, {} beats in {}{}.",
            cfg.depth,
            match ram {
                FifoRam::Lut => "LUT RAM",
                FifoRam::Block => "block RAM with a registered read and an output register",
            },
            if cfg.frame_mode {
                ", frame mode (drops bad and oversize frames)"
            } else {
                ""
            }
        ));
        let (s, m) = (&p.s_axis, &p.m_axis);
        let aw = clog2(cfg.depth as u64);
        let pw = aw + 1;
        // A stored word is the beat's payload, `{tuser, tlast, tkeep, tdata}`.
        let beat = cfg.stream.beat();
        let word = beat.pack(&s.beat());
        // Block RAM deeper than one RAM's native depth is split into banks, so that each
        // bank's read goes straight into its own output register (see `BRAM_BANK_DEPTH`).
        let banks = match ram {
            FifoRam::Lut => 1,
            FifoRam::Block => (cfg.depth / BRAM_BANK_DEPTH).max(1),
        };
        let bank_bits = banks.trailing_zeros();
        let baw = aw - bank_bits;
        let mems: Vec<Mem> = (0..banks)
            .map(|k| {
                let name = if banks == 1 {
                    "store".to_string()
                } else {
                    format!("store{k}")
                };
                memory(&name, word.width(), cfg.depth / banks)
            })
            .collect();

        let wr_ptr = reg_init(pw, 0u32).named("wr_ptr");
        let rd_ptr = reg_init(pw, 0u32).named("rd_ptr");
        let write = wire(1).named("write");
        let take = wire(1).named("take");
        // `full` as a flop: occupancy plus this cycle's write reaches `depth` (reads of this
        // cycle are ignored: conservative for one cycle, never blocking for good). So a write
        // while !full always finds a free entry. The occupancy is compared with the threshold
        // (minus the few steps it can have taken since) `lag` cycles late, in flops, and last
        // cycles' writes and reads (flops too) pick the right compare, so only this cycle's
        // `write` is late, in a 2:1 mux in front of the flop. `lag` is 2: the subtraction and
        // the compares get a cycle each (docs/TIMING.md, rule 5). After a frame is dropped
        // (the write pointer rewound) the estimate is high for `lag` cycles: conservative.
        let occ = (wr_ptr - rd_ptr).named("occupancy");
        let lag: usize = 2;
        // A register of `d`, reset to `init` (or not reset).
        let flop = |name: &str, init: Option<u32>, d: Sig| -> Sig {
            let r = match init {
                Some(v) => reg_init(d.width(), v),
                None => reg(d.width()),
            }
            .named(name);
            r.set(d);
            r
        };
        let (occ_late, hist) = {
            let mut o = occ;
            let mut hist: Vec<(Sig, Sig)> = Vec::new();
            let (mut w, mut t) = (write, take);
            for i in 1..=lag {
                if i > 1 {
                    o = flop(&format!("occupancy_q{}", i - 1), None, o);
                }
                w = flop(&format!("write_q{i}"), Some(0), w);
                t = flop(&format!("take_q{i}"), Some(0), t);
                hist.push((w, t));
            }
            (o, hist)
        };
        let depth = cfg.depth;
        // Whether occupancy + this cycle's write reaches `thr`.
        let reaches = |thr: u32, name: &str| -> Sig {
            // at[d + lag]: the occupancy `lag` cycles ago >= thr - d, d = -lag..=lag + 1.
            let at: Vec<Sig> = (-(lag as i64)..=lag as i64 + 1)
                .map(|d| {
                    let c = i64::from(thr) - d;
                    if c <= 0 {
                        lit(1, 1u32)
                    } else if c > i64::from(depth) {
                        lit(1, 0u32)
                    } else {
                        flop(&format!("{name}_occ_ge{c}"), Some(0), occ_late.ge(c as u64))
                    }
                })
                .collect();
            // The net step since (writes minus reads of the last `lag` cycles) picks the
            // compare; this cycle's write, one step further.
            let bits: Vec<Sig> = hist.iter().flat_map(|(w, t)| [*w, *t]).collect();
            let key = cat(&bits.iter().rev().copied().collect::<Vec<_>>());
            let pick = |extra: i64| -> Sig {
                let arms: Vec<(u64, Sig)> = (0..1u64 << bits.len())
                    .map(|v| {
                        let step: i64 = (0..lag)
                            .map(|i| ((v >> (2 * i)) & 1) as i64 - ((v >> (2 * i + 1)) & 1) as i64)
                            .sum();
                        (v, at[(step + extra + lag as i64) as usize])
                    })
                    .collect();
                case(key, &arms, lit(1, 0u32))
            };
            mux(write, pick(1), pick(0))
        };
        let full = reg_init(1, 0u32).named("full");
        full.set(reaches(depth, "full"));
        if let (Some(r), Some(room_out)) = (room, p.room) {
            // Free entries >= r next cycle, counting this cycle's write and not its read: the
            // same form as `full` (which is `room` 1, inverted).
            let room_q = reg_init(1, 1u32).named("room");
            room_q.set(!reaches(depth - r + 1, "room"));
            room_out.set(room_q);
        }

        // The pointer the reader may advance to.
        let visible = if cfg.frame_mode {
            reg_init(pw, 0u32).named("wr_commit")
        } else {
            wr_ptr
        };

        if cfg.frame_mode {
            let dropping = reg_init(1, 0u32).named("dropping");
            let drop_bad = reg_init(1, 0u32).named("drop_bad_q");
            let drop_big = reg_init(1, 0u32).named("drop_oversize_q");
            // 1 + beats of this frame written so far; its top bit means the frame already
            // fills the FIFO, so one more non-last beat makes it oversize.
            let frame_cnt = reg_init(pw, 1u32).named("frame_cnt");
            let at_limit = frame_cnt.msb().named("at_limit");
            let last = s.last();
            let bad = s.user().expect("checked above").bit(TUSER_BAD);
            s.ready().set(!full | dropping);
            write.set(s.valid() & !full & !dropping);
            let overflow = (write & !last & at_limit).named("overflow");
            let end = (s.valid() & last & (!full | dropping)).named("end");
            let discard = (end & (bad | dropping)).named("discard");
            let publish = (write & last & !bad).named("publish");
            let wr_next = (wr_ptr + 1u32).named("wr_next");
            wr_ptr.set_if(write, wr_next);
            wr_ptr.set_if(overflow | discard, visible);
            visible.set_if(publish, wr_next);
            frame_cnt.set_if(write, frame_cnt + 1u32);
            frame_cnt.set_if(end | overflow, 1u32);
            dropping.set_if(overflow, 1u32);
            dropping.set_if(end, 0u32);
            drop_bad.set(end & bad & !dropping);
            drop_big.set(end & dropping);
            let drops = p.drops.expect("declared in frame mode");
            drops.drop_bad.set(drop_bad);
            drops.drop_oversize.set(drop_big);
        } else {
            s.ready().set(!full);
            write.set(s.valid() & !full);
            wr_ptr.set_if(write, wr_ptr + 1u32);
        }
        // The RAM is written whenever it is not full, valid or not (as in `record_fifo`): while
        // not full, slot `wr_ptr` holds nothing readable (not yet published, in frame mode)
        // and only `write` moves the pointer, so a word written without it is overwritten
        // before it can be read. So the RAMs' write enables start at the `full` flop (and the
        // bank's pointer bits), not at the writer's valid (docs/TIMING.md, rule 6).
        for (k, mem) in mems.iter().enumerate() {
            let en = if banks == 1 {
                !full
            } else {
                (!full & wr_ptr.slice(aw - 1, baw).eq(k as u64)).named(&format!("write{k}"))
            };
            mem.write(en, wr_ptr.trunc(baw), word);
        }

        // Read side. `avail` (a flop) says an entry can be read now; `take` reads it. It is
        // computed one cycle late like `full`: entries published in this cycle show next cycle.
        let avail = reg_init(1, 0u32).named("avail");
        match ram {
            FifoRam::Lut => {
                let ready_cnt = (visible - rd_ptr).named("readable");
                let two_or_more = ready_cnt.slice(pw - 1, 1).or_reduce();
                let exactly_one = ready_cnt.eq(1u64);
                avail.set(two_or_more | (exactly_one & !take));
            }
            FifoRam::Block => {
                // The pointer difference is registered too (no subtractor in front of `avail`,
                // whose `take` fans out to the pointer and the RAM). It is one cycle old: since
                // then the reader took `took` entries and the writer only added some, so at
                // least `readable_q - took` are readable now, and after this cycle's `take`,
                // `readable_q - took - take`. Entries show one cycle later than in Lut mode;
                // the throughput stays 1 beat/cycle (4 entries in flight when streaming).
                let ready_q = reg_init(pw, 0u32).named("readable_q");
                ready_q.set(visible - rd_ptr);
                let took = reg_init(1, 0u32).named("took");
                took.set(take);
                let at_least = |k: u64| ready_q.ge(k);
                avail.set(
                    at_least(3) | (at_least(2) & !(took & take)) | (at_least(1) & !(took | take)),
                );
            }
        }
        rd_ptr.set_if(take, rd_ptr + 1u32);

        match ram {
            FifoRam::Lut => {
                take.set(avail & m.ready());
                let q = mems[0].read_async(rd_ptr.trunc(aw)).named("rd_word");
                m.set_beat(&beat.unpack(q));
                m.valid().set(avail);
            }
            FifoRam::Block => {
                // The RAM's registered read (stage 1) and its output register (stage 2) never
                // stall: each word moves on every cycle and lands in the output queue, a small
                // LUT-RAM FIFO whose read side is `m_axis`. A read starts only while every word
                // started and not yet delivered (`owed`) has a place in that queue, and
                // `can_read` (a flop) says so for this cycle; so `take` is an AND of two flops,
                // and `m_axis_tready` reaches the queue's read pointer and the `owed` counter,
                // never the RAMs' read and output enables (a net to every RAM of the FIFO).
                let q = out_q.as_ref().expect("built for Block").instance("u_out_q");
                let ram_valid = reg_init(1, 0u32).named("ram_valid");
                let out_valid = reg_init(1, 0u32).named("out_valid");
                let can_read = reg_init(1, 1u32).named("can_read");
                take.set(avail & can_read);
                ram_valid.set(take);
                out_valid.set(ram_valid);
                let pop = (q.m_axis.valid() & m.ready()).named("pop");
                // `owed` counts the words started before this cycle's RAM read (`ram_valid` is
                // last cycle's `take`), so its adder starts at flops and `pop`, not at `take`
                // (a net to every RAM enable and the read pointer). Words owed a place:
                // `owed + ram_valid`.
                let owed = reg_init(clog2(u64::from(BLOCK_OUT_DEPTH)) + 1, 0u32).named("owed");
                let owed_next = mux(ram_valid, owed + 1u32, owed) - pop.zext(owed.width());
                owed.set(owed_next.named("owed_next"));
                // Next cycle's `take` adds one word: at most `BLOCK_PREFETCH` owed, so
                // `owed + ram_valid - pop + take < limit`. The compares are of `owed` itself;
                // the three steps only pick one (`take` last, one 2:1 mux before the flop).
                let limit = u64::from(BLOCK_PREFETCH);
                let below = |k: u64| owed.lt(k).named(&format!("owed_lt{k}"));
                let pick = |base: u64| {
                    // `owed < base - ram_valid + pop`
                    mux(
                        ram_valid,
                        mux(pop, below(base), below(base - 1)),
                        mux(pop, below(base + 1), below(base)),
                    )
                };
                can_read.set(mux(take, pick(limit - 1), pick(limit)));
                // Per bank: the RAM's registered read, then its output register (nothing in
                // between, so the output register can be the RAM's own). The bank's words are
                // selected after the output registers.
                let outs: Vec<Sig> = mems
                    .iter()
                    .enumerate()
                    .map(|(k, mem)| {
                        let sfx = if banks == 1 {
                            String::new()
                        } else {
                            k.to_string()
                        };
                        let word = mem
                            .read_sync(rd_ptr.trunc(baw), Some(take))
                            .named(&format!("ram_word{sfx}"));
                        let out = reg(word.width()).named(&format!("out_word{sfx}"));
                        out.set(word);
                        out
                    })
                    .collect();
                let word = if banks == 1 {
                    outs[0]
                } else {
                    let ram_bank = reg(bank_bits).enable(take).named("ram_bank");
                    ram_bank.set(rd_ptr.slice(aw - 1, baw));
                    let out_bank = reg(bank_bits).named("out_bank");
                    out_bank.set(ram_bank);
                    let arms: Vec<(u64, Sig)> = outs
                        .iter()
                        .enumerate()
                        .map(|(k, o)| (k as u64, *o))
                        .collect();
                    case(out_bank, &arms, outs[0]).named("out_word")
                };
                q.s_axis.set_beat(&beat.unpack(word));
                q.s_axis.valid().set(out_valid);
                // Never full: it holds at most `BLOCK_PREFETCH` words, two fewer than its depth.
                q.s_axis.ready().unused();
                connect(&q.m_axis, m);
            }
        }
    })
}
