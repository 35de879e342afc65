//! `record_reg_slice`: a register slice on a record stream (`data`, `valid`, `ready`; no
//! keep/last), built in the current module rather than as an instance, for records whose width
//! is not a stream width (parse records, commands, requests between the blocks of `eth_rx` and
//! `eth_tx`).
//!
//! - Cuts both directions: `valid`, `data` and the upstream ready all come from flops (a forward
//!   register with a skid register behind its ready, SpinalHDL's `m2sPipe().s2mPipe()`;
//!   docs/TIMING.md, rule 2). The data registers' enables and the upstream ready read copies of
//!   the valid flops of their own ([`Replicated`], rule 3).
//! - [`record_reg_slice_ctl`]: the same with one more copy of the output valid for a consumer
//!   whose handshake waits on it (a splice's command).
//! - [`record_reg_slice_wide`]: the same for records of hundreds of bits, each half of the data
//!   registers with control flops of its own, so that no enable net spans the whole record
//!   (rule 4).
//! - [`beat_reg_slice`]: the plain slice on a stream beat (`data`, `keep`, `last`);
//!   [`stream_reg_slice`] takes a stream and sets its ready; [`BeatReg::drive`] feeds the slice
//!   into a stream (an instance's input).
//! - Latency 1 cycle. Throughput 1 record/cycle.
//! - Cost: two data registers (output and skid), four control flops, a 2:1 mux on the data (the
//!   wide slice: one flop and one LUT more); no row of its own in results/AREA.md.
//! - Golden model: identity on records; test: `testbench/tests/stream/record_reg_slice.rs`.

use super::{Beat, Stream};
use nicgen_edsl::prelude::*;

/// The signals of a [`record_reg_slice`].
pub struct RecordReg {
    /// The registered record.
    pub data: Sig,
    /// Its valid (a flop).
    pub valid: Sig,
    /// The same valid from a copy of its own for the consumer's handshake
    /// ([`record_reg_slice_ctl`]); `valid` itself otherwise.
    pub valid_ctl: Sig,
    /// The downstream ready: the caller sets it.
    pub ready: Sig,
    /// The upstream ready (a flop: the skid register is empty): connect it to the source.
    pub s_ready: Sig,
}

/// Registers `data`/`valid` as `<name>_data`/`<name>_valid`, with the skid register
/// `<name>_skid_*`; latency 1, 1 record/cycle.
#[track_caller]
pub fn record_reg_slice(name: &str, data: Sig, valid: Sig) -> RecordReg {
    slice(name, data, valid, false)
}

/// [`record_reg_slice`] whose output valid has one more copy, `<name>_valid_ctl`
/// ([`RecordReg::valid_ctl`]), for a consumer that decides its handshake from the valid in a
/// cycle already full (a splice's first beat waits for its command): that copy's only loads
/// are the consumer's, so the placer puts it beside them, not beside the slice's own control
/// flops (docs/TIMING.md, rule 3). It loads under the data registers' enable, which reads the
/// complemented copy, so its next-state logic differs from copy 0's and synthesis keeps both.
#[track_caller]
pub fn record_reg_slice_ctl(name: &str, data: Sig, valid: Sig) -> RecordReg {
    slice(name, data, valid, true)
}

#[track_caller]
fn slice(name: &str, data: Sig, valid: Sig, ctl: bool) -> RecordReg {
    let ready = wire(1).named(&format!("{name}_ready"));
    // The output valid, twice: copy 0 (`<name>_valid`) is the output and feeds the control
    // flops, copy 1 (`<name>_valid_n1`) only the data registers' enable (see `load_data`).
    let valid_q = Replicated::new(&format!("{name}_valid"), 2, 1, Some(0));
    // The skid register's valid, twice: copy 0 selects and enables every data bit, copy 1
    // (`<name>_skid_valid_n1`, stored complemented: "free") is the upstream ready, so that the
    // source's logic does not start at that net.
    let skid = Replicated::new(&format!("{name}_skid_valid"), 2, 1, Some(0));
    let skid_v = skid.get(0);
    let s_ready = skid.get_n(1);
    let take = (valid & s_ready).named(&format!("{name}_take"));
    // Two loads of the same value, one for the control flops and one for the data registers'
    // clock enables, each from its own copy of the output valid, so that the control flops'
    // next state does not sit behind a net of one load per data bit (docs/TIMING.md, rule 3).
    let load = (valid_q.get_n(0) | ready).named(&format!("{name}_load"));
    let load_data = (valid_q.get_n(1) | ready).named(&format!("{name}_load_data"));
    // The output register loads from the skid register first, else from the input. The data
    // registers load whenever they may (the skid register whenever it is empty, the output
    // register whenever it may move), whatever the input's valid, which so only reaches the
    // valid flops: a word loaded without its valid is never shown.
    let next_v = (skid_v | take).named(&format!("{name}_next_valid"));
    valid_q.set_if(load, next_v);
    let skid_d = reg(data.width())
        .enable(!skid_v)
        .named(&format!("{name}_skid_data"));
    skid_d.set(data);
    let skid_next = (!load & next_v).named(&format!("{name}_skid_next"));
    skid.set(skid_next);
    let data_q = reg(data.width())
        .enable(load_data)
        .named(&format!("{name}_data"));
    data_q.set(mux(skid_v, skid_d, data));
    let valid_ctl = if ctl {
        let c = reg_init(1, 0u32).named(&format!("{name}_valid_ctl")).keep();
        c.set_if(load_data, next_v);
        c
    } else {
        valid_q.get(0)
    };
    RecordReg {
        data: data_q,
        valid: valid_q.get(0),
        valid_ctl,
        ready,
        s_ready,
    }
}

/// A forward register on a record stream: `data` and `valid` from flops (`<name>_data`,
/// `<name>_valid`), the upstream ready `!valid | ready` a LUT of the caller's `ready`; latency
/// 1, 1 record/cycle. For a LUT-RAM read that must go straight into a register (no skid
/// multiplexer in front of it: docs/TIMING.md, rule 7) where the consumer's ready is a flop.
#[track_caller]
pub fn record_fwd_reg(name: &str, data: Sig, valid: Sig) -> RecordReg {
    let ready = wire(1).named(&format!("{name}_ready"));
    let valid_q = reg_init(1, 0u32).named(&format!("{name}_valid"));
    let load = (!valid_q | ready).named(&format!("{name}_load"));
    valid_q.set_if(load, valid);
    let data_q = reg(data.width())
        .enable(load)
        .named(&format!("{name}_data"));
    data_q.set(data);
    RecordReg {
        data: data_q,
        valid: valid_q,
        valid_ctl: valid_q,
        ready,
        s_ready: load,
    }
}

/// A stream beat (`data`, `keep`, `last`) through a [`record_reg_slice`]: the slice's signals
/// with the registered beat cut back into its fields.
pub struct BeatReg {
    pub data: Sig,
    pub keep: Sig,
    pub last: Sig,
    /// The slice: `valid`, the caller's `ready`, the upstream `s_ready` (its `data` is the
    /// packed beat, a [`Beat`] without `user`).
    pub slice: RecordReg,
}

/// [`record_reg_slice`] on a stream beat without `tuser`, for a register that must cut the
/// ready as well as the data where a [`super::stream_skid()`] and a [`super::stream_fwd_reg()`]
/// would be two instances.
pub fn beat_reg_slice(name: &str, data: Sig, keep: Sig, last: Sig, valid: Sig) -> BeatReg {
    let shape = Beat::shape(data.width(), 0);
    let word = shape.pack(&Beat {
        data,
        keep,
        last,
        ..shape.zeros()
    });
    let slice = record_reg_slice(name, word, valid);
    let b = shape.unpack(slice.data);
    BeatReg {
        data: b.data,
        keep: b.keep,
        last: b.last,
        slice,
    }
}

/// [`beat_reg_slice`] on a stream without `tuser`: the stream's ready is set to the slice's
/// upstream ready (a flop).
pub fn stream_reg_slice(name: &str, s: &Stream) -> BeatReg {
    let r = beat_reg_slice(name, s.data(), s.keep(), s.last(), s.valid());
    s.ready().set(r.slice.s_ready);
    r
}

impl BeatReg {
    /// Feed the slice into `sink` (a stream without `tuser`, e.g. an instance's input): its
    /// payload and valid from the slice, the slice's ready from its ready.
    #[track_caller]
    pub fn drive(&self, sink: &Stream) {
        sink.data().set(self.data);
        sink.keep().set(self.keep);
        sink.last().set(self.last);
        sink.valid().set(self.slice.valid);
        self.slice.ready.set(sink.ready());
    }
}

impl RecordReg {
    /// Feed the slice into `sink` (a record stream of the same width, e.g. an instance's
    /// input): its record and valid from the slice, the slice's ready from its ready.
    #[track_caller]
    pub fn drive<S: Shape>(&self, sink: &RecordStream<S>) {
        sink.data.set(self.data);
        sink.valid.set(self.valid);
        self.ready.set(sink.ready);
    }
}

/// [`record_reg_slice`] with its registers in two halves (low and high bits), each half's
/// clock enables from its own copy of the output valid (`<name>_valid_lo`, `<name>_valid_n1`)
/// and its skid select from its own copy of the skid's valid (`<name>_skid_valid_lo`,
/// `<name>_skid_valid_n1`). So no enable or select net fans out to more than half the record,
/// and the control flops (`<name>_valid`, the skid's) and the upstream ready read neither
/// half's nets. Same ports, latency and throughput.
pub fn record_reg_slice_wide(name: &str, data: Sig, valid: Sig) -> RecordReg {
    let w = data.width();
    assert!(
        w >= 2,
        "record_reg_slice_wide `{name}`: a record of {w} bit(s) has no halves"
    );
    let ready = wire(1).named(&format!("{name}_ready"));
    // The output valid: copy 0 for the control flops and the output, copy 1 (the complement,
    // `<name>_valid_n1`) for the high half's enables only.
    let valid_q = Replicated::new(&format!("{name}_valid"), 2, 1, Some(0));
    // The skid's valid: copy 0 for the control and the low half, copy 1 for the high half.
    let skid = Replicated::new(&format!("{name}_skid_valid"), 2, 1, Some(0));
    let skid_v = skid.get(0);
    let s_ready = (!skid_v).named(&format!("{name}_s_ready"));
    let take = (valid & s_ready).named(&format!("{name}_take"));
    let load = (valid_q.get_n(0) | ready).named(&format!("{name}_load"));
    let next_v = (skid_v | take).named(&format!("{name}_next_valid"));
    valid_q.set_if(load, next_v);
    skid.set(!load & next_v);
    // The low half's enables from one more copy of the output valid, `valid_lo`, that the
    // control flops do not read either: the same value as `valid` from a next-state
    // expression of its own (no enable), a register gated differently, so that it merges
    // neither with `valid` nor with `valid_n1` (docs/TIMING.md, rules 3 and 4).
    let valid_lo = reg_init(1, 0u32).named(&format!("{name}_valid_lo"));
    valid_lo.set(next_v | (valid_q.get(0) & !ready));
    let load_lo = (!valid_lo | ready).named(&format!("{name}_load_lo"));
    // And the low half's skid select and enable from one more copy of the skid's valid, built
    // the same way from the low half's own copies (`skid_next` is `valid & !ready & (skid |
    // input valid)`), so that the upstream ready, copy 0, drives the control logic alone.
    let skid_lo = reg_init(1, 0u32).named(&format!("{name}_skid_valid_lo"));
    skid_lo.set(valid_lo & !ready & (skid_lo | valid));
    let load_hi = (valid_q.get_n(1) | ready).named(&format!("{name}_load_hi"));
    let half = w / 2;
    let halves = [
        (data.slice(half - 1, 0), !skid_lo, load_lo, skid_lo, "lo"),
        (
            data.slice(w - 1, half),
            skid.get_n(1),
            load_hi,
            skid.get(1),
            "hi",
        ),
    ];
    let mut parts = Vec::new();
    for (d, skid_en, out_en, from_skid, h) in halves {
        let skid_d = reg(d.width())
            .enable(skid_en)
            .named(&format!("{name}_skid_data_{h}"));
        skid_d.set(d);
        let data_q = reg(d.width())
            .enable(out_en)
            .named(&format!("{name}_data_{h}"));
        data_q.set(mux(from_skid, skid_d, d));
        parts.push(data_q);
    }
    RecordReg {
        data: cat(&[parts[1], parts[0]]).named(&format!("{name}_data")),
        valid: valid_q.get(0),
        valid_ctl: valid_q.get(0),
        ready,
        s_ready,
    }
}
