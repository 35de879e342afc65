//! `stream_trim`: cut each frame down to `frame[head .. min(head + len, frame_len)]` with
//! `head` and `len` from a per-frame command (VXLAN/NVGRE decap: the outer headers removed and
//! the padding past the inner frame's datagram dropped), at any bus width, 1 beat/cycle.
//!
//! A frame is discarded whole when its command says `drop`, when `len = 0`, or when it has at
//! most `head` bytes (nothing would remain: AXI-Stream frames cannot be empty); each discarded
//! frame raises `stat_drop` for one cycle, so delivered + dropped = offered.
//!
//! - Ports ([`TrimPorts`]): `s_axis_*` (frames in), `m_axis_*` (frames out), `s_axis_cmd_*`
//!   ([`TrimCmd`]: `head`, `len`, `drop`; one command per frame, in frame order, through a
//!   register slice whose ready is a flop: up to two commands are taken ahead of their frames,
//!   a frame's first beat waits for its command's), `stat_drop` (a pulse per discarded frame).
//!   The last output beat carries the `tuser` of the frame's last input beat, also when `len`
//!   ends the output before the frame's end (that beat then waits for the frame's last beat).
//! - Internals: the end offset `head + len` is added in front of the command slice. Per input
//!   beat two byte counters, stepped by `W` (bytes per beat, any width: no division), give
//!   the bytes still to skip and to keep; their lane masks (`lane >= skip`, `lane < keep`)
//!   clear `tkeep` of every byte outside the kept range as the beat is registered (`Q`). The
//!   kept bytes are then one contiguous run, realigned by the constant shift `s = head mod W`
//!   (the skip counter's value at the run's first beat, frozen from there on, carried with
//!   each beat): output beat = bytes `s .. s + W` of `{Q, P}` (`P` the beat before `Q`, with
//!   `Q`'s lanes empty when `P` ends its frame). `P` leaves (retires) once `Q` holds the next
//!   beat or `P` is its frame's last; it emits a beat when its lane `s` is kept, the beat is
//!   last when `Q`'s lane `s` is not. Beats before the run (whole leading beats when
//!   `head >= W`) and after it retire without output. A last output beat whose frame has not
//!   ended (cut by `len`) waits in the output register (`O`) until the frame's last input
//!   beat retires with its `tuser`. `O` feeds a register slice (`m_axis`), so no downstream
//!   ready reaches the input: `s_axis_tready` is a few LUTs of flops. The data registers of
//!   `Q`, `P` and `O` load whenever their stage may move (a word loaded without its valid is
//!   never shown), with enables built from copies of the valid flops of their own
//!   (docs/TIMING.md, rule 3), so `s_axis_tvalid` reaches only the control flops.
//! - Lanes: each output byte lane (8 data bits + keep) is a `W:1` shift, `ceil(log2 W)` levels
//!   of 2:1 muxes whose selects are flops (the beat's `s`): 6 levels at 512 bits, i.e. 3 LUT6
//!   levels (ECP5: a 4:1 mux per slice pair, LUT4 then PFUMX then L6MUX21), from flops (`P`,
//!   `Q`) into the flops of `O`. The input's masks are the counters' compares with lane
//!   constants and `tkeep`, about 4 LUT levels into `Q`. The shift is the bulk of the cost: a
//!   variable shift of a whole beat, where `stream_bytes` needs 2- to 4-input lanes.
//! - Latency: the output beat that starts in input beat `b` leaves `m_axis` 4 cycles after `b`
//!   is taken (`Q`, `P`, `O`, the slice) when the beat after `b` follows at once: `b` waits in
//!   `P` for it, as the shift needs its first bytes (a frame's last beat does not wait).
//! - Throughput: 1 input beat/cycle, stalled only by output backpressure; the output has
//!   bubbles only where beats disappear (skipped or cut beats, the shorter output of a
//!   shifted frame); a frame's end is never a bubble.
//! - Cost: five beats of flops (`Q`, `P`, `O`, the output slice's register and skid
//!   register), the command slice (`2 x (head bits + 18)` bits), two byte counters
//!   (head bits, 17 bits), `W x 9 x ceil(log2 W)` 2:1 muxes for the shift and one `W:1` mux
//!   for the lead byte's keep; about twenty-five control flops (six of them copies). In
//!   results/AREA.md within the row `rx_decap` (the de-capsulation trim).
//! - Golden model: `nicgen_model::stream::trim_bytes`; test:
//!   `testbench/tests/stream/stream_trim.rs`.

use super::{record_reg_slice, record_reg_slice_ctl, Beat, Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// Trim parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TrimCfg {
    pub stream: StreamCfg,
    /// The largest `head` a command carries (the `head` field holds `0..=max_head`); 1 to 4096.
    pub max_head: u32,
}

impl TrimCfg {
    /// Bits of the command's `head` field.
    pub fn head_bits(&self) -> u32 {
        clog2(self.max_head as u64 + 1)
    }
    /// The command's shape.
    pub fn cmd(&self) -> TrimCmd<u32> {
        TrimCmd::shape(self.head_bits())
    }
}

nicgen_edsl::record! {
    /// A trim's per-frame command (`s_axis_cmd_tdata`): output =
    /// `frame[head .. min(head + len, frame_len)]`.
    pub struct TrimCmd(head_bits: u32) {
        /// Bytes removed from the front (the outer headers): `0..=max_head`
        /// (`clog2(max_head + 1)` bits; any value the field holds works).
        head: head_bits,
        /// Bytes kept at most after them (an IP datagram's length: 16 bits); 0 discards the
        /// frame.
        len: 16,
        /// Discard the whole frame.
        drop: 1,
    }
}

nicgen_edsl::record! {
    /// The command as the engine keeps it: the end offset added up front.
    struct TrimPlan(head_bits: u32, end_bits: u32) {
        /// The command's `head`.
        head: head_bits,
        /// `head + len`: the end of the kept bytes.
        end: end_bits,
        /// Nothing is kept (`drop` or `len = 0`).
        nothing: 1,
    }
}

/// The ports of [`stream_trim`].
pub struct TrimPorts {
    /// The frames in (`s_axis_*`).
    pub s_axis: Stream,
    /// The trimmed frames out (`m_axis_*`).
    pub m_axis: Stream,
    /// One command per frame (`s_axis_cmd_*`).
    pub cmd: RecordStream<TrimCmd<u32>>,
    /// `stat_drop`: high for one cycle per discarded frame.
    pub drop: Sig,
}

impl Ports for TrimPorts {
    type Cfg = TrimCfg;
    fn ports(io: &Io, cfg: &TrimCfg) -> Self {
        TrimPorts {
            s_axis: Stream::sink(io, "s_axis", &cfg.stream),
            m_axis: Stream::source(io, "m_axis", &cfg.stream),
            cmd: RecordStream::sink(io, "s_axis_cmd", cfg.cmd()),
            drop: io.output("stat_drop", 1),
        }
    }
}

/// The trim block for `cfg`: module `stream_trim_<stream>_h<max_head>`.
pub fn stream_trim(cfg: &TrimCfg) -> Result<Block<TrimPorts>, ElabError> {
    cfg.stream.check("stream_trim")?;
    if cfg.max_head == 0 || cfg.max_head > 4096 {
        return Err(ElabError::config(
            "stream_trim",
            format!(
                "max_head {} must be 1 to 4096 (a trim of no head is a truncation only; \
                 outer headers are far shorter than 4096 bytes)",
                cfg.max_head
            ),
        ));
    }
    let name = format!("stream_trim_{}_h{}", cfg.stream.suffix(), cfg.max_head);
    let cfg = *cfg;
    Block::build(name, cfg, move |p: TrimPorts| {
        doc(&format!(
            "Keeps bytes head .. head + len of each frame (head up to {}), discards a frame \
             of which nothing remains.",
            cfg.max_head
        ));
        trim(&cfg, p);
    })
}

/// `x >= k` for a constant `k` that may not fit `x`'s width.
fn ge_const(x: Sig, k: u32) -> Sig {
    if x.width() < 32 && k >= 1 << x.width() {
        lit(1, 0u32)
    } else {
        x.ge(k)
    }
}

/// `x - k` for a constant `k` (wrapping; callers use it only where `x >= k`).
fn sub_const(x: Sig, k: u32) -> Sig {
    if x.width() < 32 && k >= 1 << x.width() {
        x
    } else {
        x - k
    }
}

/// Byte lane `i` of `x` (`size` bits per lane).
fn lane(x: Sig, i: usize, size: u32) -> Sig {
    x.slice(size * i as u32 + size - 1, size * i as u32)
}

/// The first `w` lanes of `v` shifted down by `sh` lanes (lane `i` = `v[i + sh]`, zero past
/// the end): one level of 2:1 muxes per bit of `sh`.
fn shift_lanes(mut v: Vec<Sig>, sh: Sig, w: usize) -> Vec<Sig> {
    let size = v[0].width();
    let bits = sh.width();
    for k in 0..bits {
        let d = 1usize << k;
        let zero = lit(size, 0u32);
        // The lanes the later levels still read: `w` plus their shifts.
        let need = w + (1usize << bits) - (2 * d);
        let at = |i: usize| v.get(i).copied().unwrap_or(zero);
        v = (0..need)
            .map(|i| mux(sh.bit(k), at(i + d), at(i)))
            .collect();
    }
    v.truncate(w);
    v
}

fn trim(cfg: &TrimCfg, p: TrimPorts) {
    let wb = cfg.stream.keep_bits();
    let w = wb as usize;
    let (s, m) = (&p.s_axis, &p.m_axis);
    let head_bits = cfg.head_bits();
    let end_bits = head_bits.max(16) + 1;
    // Shift select bits: 0 at 8 bits (one lane, nothing to shift).
    let sh_bits = if wb == 1 { 0 } else { clog2(wb as u64) };

    // The command, with the end offset added, through a register slice of the engine's own
    // (docs/TIMING.md, rule 9): the first beat's masks start at its flops.
    let c = p.cmd.fields();
    let plan_shape = TrimPlan::shape(head_bits, end_bits);
    let plan_in = TrimPlan {
        head: c.head,
        end: c.head.zext(end_bits) + c.len.zext(end_bits),
        nothing: c.drop | c.len.eq(0u32),
    };
    let cq = record_reg_slice_ctl("cmd", plan_shape.pack(&plan_in), p.cmd.valid);
    p.cmd.ready.set(cq.s_ready);
    let plan = plan_shape.unpack(cq.data);

    // The handshake's nets, set below: each built twice, from copies of the valid flops of
    // their own, once for the control flops and once for the data registers' enables (one
    // load per data bit), so that no control decision sits behind a wide net (docs/TIMING.md,
    // rule 3).
    let q_free = wire(1).named("q_free");
    let q_free_data = wire(1).named("q_free_data");
    let take = wire(1).named("take");

    // Input side: the state for the beat on `s_axis` (a frame's first beat reads the command).
    let mid = reg_init(1, 0u32).named("mid");
    let first = !mid;
    let skip_q = reg(head_bits).named("skip_q");
    let rem_q = reg(end_bits).named("rem_q");
    let started_q = reg(1).named("started_q");
    let nothing_q = reg(1).named("nothing_q");
    let skip = mux(first, plan.head, skip_q).named("skip");
    let rem = mux(first, plan.end, rem_q).named("rem");
    let started = (mid & started_q).named("started");
    let nothing = mux(first, plan.nothing, nothing_q).named("nothing");
    // `skip`: bytes of this beat and later still to skip. `skip >= W`: the whole beat goes;
    // below, the run starts at lane `skip`, and `skip` freezes there: it is the frame's shift.
    // (`pre` and the next count are worked out for both sources side by side and picked by
    // `first` last, so that `mid` reaches the counter through a multiplexer, not through the
    // compare and the subtract.)
    let pre_first = ge_const(plan.head, wb).named("pre_first");
    let pre_mid = ge_const(skip_q, wb).named("pre_mid");
    let pre = mux(first, pre_first, pre_mid).named("pre");
    // `rem`: bytes from this beat's lane 0 to the end offset (0 past it).
    let rem_all_first = ge_const(plan.end, wb).named("rem_all_first");
    let rem_all_mid = ge_const(rem_q, wb).named("rem_all_mid");
    let rem_all = mux(first, rem_all_first, rem_all_mid).named("rem_all");
    let lo_bits = sh_bits.max(1);
    let skip_lo = skip.resize(lo_bits);
    let rem_lo = rem.resize(lo_bits);
    let keep_in: Vec<Sig> = (0..w)
        .map(|i| {
            let lo = !pre & (started | skip_lo.le(i as u32));
            let hi = rem_all | rem_lo.gt(i as u32);
            s.keep().bit(i as u32) & lo & hi & !nothing
        })
        .collect();
    let keep_in = cat(&keep_in.into_iter().rev().collect::<Vec<_>>()).named("keep_in");
    mid.set_if(take, !s.last());
    let skip_next_first = mux(pre_first, sub_const(plan.head, wb), plan.head);
    let skip_next_mid = mux(pre_mid, sub_const(skip_q, wb), skip_q);
    skip_q.set_if(take, mux(first, skip_next_first, skip_next_mid));
    let zero = lit(end_bits, 0u32);
    let rem_next_first = mux(rem_all_first, sub_const(plan.end, wb), zero);
    let rem_next_mid = mux(rem_all_mid, sub_const(rem_q, wb), zero);
    rem_q.set_if(take, mux(first, rem_next_first, rem_next_mid));
    started_q.set_if(take, !pre);
    nothing_q.set_if(take, nothing);

    // `Q`: the beat taken, its keep masked. Its data registers load whenever `Q` may move
    // (a word loaded without its valid is never shown), so `s_axis_tvalid` reaches only the
    // valid and the counters.
    let q_v = Replicated::new("q_valid", 2, 1, Some(0));
    let q_data = reg(cfg.stream.data_bits)
        .enable(q_free_data)
        .named("q_data");
    q_data.set(s.data());
    let q_keep = reg(wb).enable(q_free_data).named("q_keep");
    q_keep.set(keep_in);
    let q_last = reg(1).enable(q_free_data).named("q_last");
    q_last.set(s.last());
    let q_user = s.user().map(|u| {
        let r = reg(u.width()).enable(q_free_data).named("q_user");
        r.set(u);
        r
    });
    let q_sh = (sh_bits > 0).then(|| {
        let r = reg(sh_bits).enable(q_free_data).named("q_shift");
        r.set(skip.resize(sh_bits));
        r
    });
    // `Q`'s lane `s` is kept: `P`'s beat is not the last when `Q` continues the run.
    let keep_lanes: Vec<Sig> = (0..w).map(|i| q_keep.bit(i as u32)).collect();
    let q_lead = match q_sh {
        Some(sh) => shift_lanes(keep_lanes, sh, 1)[0],
        None => keep_lanes[0],
    }
    .named("q_lead");

    // `P`: the beat before `Q`, retired once its output beat is complete.
    let p_v = Replicated::new("p_valid", 2, 1, Some(0));
    let p_last = Replicated::new("p_last", 2, 1, Some(0));
    let p_emit = Replicated::new("p_emit", 2, 1, Some(0));
    let load_p = wire(1).named("load_p");
    let load_p_data = wire(1).named("load_p_data");
    let p_data = reg(cfg.stream.data_bits)
        .enable(load_p_data)
        .named("p_data");
    p_data.set(q_data);
    let p_keep = reg(wb).enable(load_p_data).named("p_keep");
    p_keep.set(q_keep);
    let p_user = q_user.map(|u| {
        let r = reg(u.width()).enable(load_p_data).named("p_user");
        r.set(u);
        r
    });
    let p_sh = q_sh.map(|sh| {
        let r = reg(sh_bits).enable(load_p_data).named("p_shift");
        r.set(sh);
        r
    });

    // `O`: the formed beat, shown (`o_valid`) or held for its frame's end (`o_park`).
    let o_v = Replicated::new("o_valid", 2, 1, Some(0));
    let o_park = Replicated::new("o_park", 2, 1, Some(0));
    let beat = cfg.stream.beat();
    let o_data = reg(cfg.stream.data_bits).named("o_data");
    let o_keep = reg(wb).named("o_keep");
    let o_last = reg(1).named("o_last");
    let o_user = q_user.map(|u| reg(u.width()).named("o_user"));
    let out = record_reg_slice(
        "out",
        beat.pack(&Beat {
            data: o_data,
            keep: o_keep,
            last: o_last,
            user: o_user.unwrap_or_else(|| Sig::absent("Beat", "user")),
        }),
        o_v.get(0),
    );
    let ob = beat.unpack(out.data);
    m.set_beat(&ob);
    m.valid().set(out.valid);
    out.ready.set(m.ready());

    // The handshake: every term a flop. Copy 0 of the valid flops makes the control nets,
    // copy 1 the same nets for the data registers' enables.
    let nets = |k: usize, sfx: &str| {
        let room = ((o_v.get_n(k) & o_park.get_n(k)) | (o_v.get(k) & out.s_ready))
            .named(&format!("o_room{sfx}"));
        let retire = (p_v.get(k) & (p_last.get(k) | q_v.get(k)) & (p_emit.get_n(k) | room))
            .named(&format!("retire{sfx}"));
        let load = retire | p_v.get_n(k);
        // `Q` is free when it is empty or moves on: `!q_v | load`, which with `q_v` set
        // reduces to this sum of flops and `room` (two LUT levels to `s_axis_tready`, not
        // four through `retire` and `load`).
        let free = (q_v.get_n(k) | p_v.get_n(k) | p_emit.get_n(k) | room)
            .named(&format!("q_free_now{sfx}"));
        (room, retire, load, free)
    };
    let (_, retire, load, free) = nets(0, "");
    load_p.set(load);
    q_free.set(free);
    let (o_room_data, _, load, free) = nets(1, "_data");
    load_p_data.set(load);
    q_free_data.set(free);
    let q_v_ = q_v.get(0);
    let (p_last_, p_emit_) = (p_last.get(0), p_emit.get(0));
    let s_ready = (q_free & (mid | cq.valid_ctl)).named("s_ready");
    s.ready().set(s_ready);
    take.set(s.valid() & s_ready);
    cq.ready.set(take & first);
    q_v.set(take | (q_v_ & !load_p));
    p_v.set_if(load_p, q_v_);
    p_last.set_if(load_p, q_last);
    p_emit.set_if(load_p, q_lead);

    // The formed beat: bytes `s .. s + W` of `{Q, P}`, `Q`'s lanes empty when `P` ends its
    // frame. Lane = 8 data bits and the keep bit.
    let q_keep_m = q_keep & p_last.get_n(1).repl(wb);
    let lanes: Vec<Sig> = (0..w)
        .map(|i| cat(&[p_keep.bit(i as u32), lane(p_data, i, 8)]))
        .chain((0..w).map(|i| cat(&[q_keep_m.bit(i as u32), lane(q_data, i, 8)])))
        .collect();
    let formed = match p_sh {
        Some(sh) => shift_lanes(lanes, sh, w),
        None => lanes[..w].to_vec(),
    };
    let f_data = cat(&formed
        .iter()
        .rev()
        .map(|l| l.slice(7, 0))
        .collect::<Vec<_>>());
    let f_keep = cat(&formed.iter().rev().map(|l| l.bit(8)).collect::<Vec<_>>());
    // The beat is the run's last when `Q` does not continue it; it waits in `O` when its
    // frame's last input beat is neither `P` nor `Q`.
    let out_last = (p_last_ | !q_lead).named("out_last");
    let wr = (retire & p_emit_).named("wr");
    let park = (out_last & !p_last_ & !q_last).named("park");
    let release = (retire & p_last_ & o_park.get(0)).named("release");
    o_data.set_if(o_room_data, f_data);
    o_keep.set_if(o_room_data, f_keep);
    o_last.set_if(o_room_data, out_last);
    // `O`'s `tuser` loads whenever `O` may move or is parked (one LUT of copy-1 flops), not
    // on `wr | release`, whose net would put `retire` in front of every `tuser` bit: a word
    // loaded while `O` stays empty is never shown, and a parked beat's `tuser` is loaded
    // again, right, in the cycle its frame's last beat retires (`release`, `P` then holds
    // that beat).
    if let (Some(ou), Some(pu), Some(qu)) = (o_user, p_user, q_user) {
        ou.set_if(o_room_data | o_park.get(1), mux(p_last.get(1), pu, qu));
    }
    o_v.set(mux(wr, !park, release | (o_v.get(0) & !out.s_ready)));
    o_park.set(mux(wr, park, o_park.get(0) & !release));

    // Drops: a frame whose last beat retires with nothing emitted.
    let emitted = reg_init(1, 0u32).named("emitted");
    emitted.set_if(retire, !p_last_ & (emitted | p_emit_));
    let drop = reg_init(1, 0u32).named("drop_q");
    drop.set(retire & p_last_ & !emitted & !p_emit_);
    p.drop.set(drop);
}
