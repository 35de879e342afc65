//! The output: per view, the record stores (LUT RAMs in parts with pointers of their own), the
//! record stream's valid and count, and the input credit.

use super::{view_layout, HdrParseCfg, ParseMeta};
use nicgen_edsl::prelude::*;

/// The record's shape, for its [`Shape`] functions by field index.
type Meta = ParseMeta<u32>;

/// A shape from one width per field (by index).
fn shape_from(mut width: impl FnMut(usize) -> u32) -> Meta {
    <Meta as Shape>::values_from(|i| width(i).into()).map(|w| w as u32)
}

/// The fields some view carries, at their width (0: no view carries the field, so it is not
/// built).
pub(super) fn wanted(cfg: &HdrParseCfg) -> ParseMeta<u32> {
    let shapes: Vec<Meta> = cfg
        .views
        .iter()
        .map(|v| view_layout(v, cfg.user_bits))
        .collect();
    // Per field, the widest of the views' widths.
    shape_from(|i| shapes.iter().map(|s| s.field_width(i)).max().unwrap_or(0))
}

/// The fields written into a view's early store, in stage 4: the L2 fields and the addresses.
fn early_part(m: Meta) -> Meta {
    ParseMeta {
        tag0_tpid_s: m.tag0_tpid_s,
        ethertype: m.ethertype,
        tag0_tci: m.tag0_tci,
        tag1_tci: m.tag1_tci,
        src_ip: m.src_ip,
        dst_ip: m.dst_ip,
        ..ParseMeta::default()
    }
}

/// The field written into a view's sum store, `4 + ADDRESS_SUM_STAGES` stages after the
/// early one.
fn sum_part(m: Meta) -> Meta {
    ParseMeta {
        ip_sum: m.ip_sum,
        ..ParseMeta::default()
    }
}

/// `user`, in a store of its own beside the late one.
fn user_part(m: Meta) -> Meta {
    ParseMeta {
        user: m.user,
        ..ParseMeta::default()
    }
}

/// The fields written into a view's late store, at the end of the finish: the others.
fn late_part(m: Meta) -> Meta {
    // The fields of `m` that none of the other stores holds.
    let others = [early_part(m), sum_part(m), user_part(m)];
    shape_from(|i| {
        if others.iter().any(|o| o.field_width(i) > 0) {
            0
        } else {
            m.field_width(i)
        }
    })
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

/// The write enables of the stores: the early one (stage 4), the sum's, the late one (and
/// `user`'s).
pub(super) struct Stores {
    pub early: Sig,
    pub sum: Sig,
    pub late: Sig,
}

/// The views' stores and record streams from the record's fields `rec` (every field the views
/// carry), written at `en`; the credit counts frames closed (`close`, registered) and records
/// taken. Returns the OR of the views' credit flags: the input ready's next value, inverted.
pub(super) fn output(
    cfg: &HdrParseCfg,
    ports: &[RecordStream<Meta>],
    rec: &ParseMeta,
    en: Stores,
    close_q: Sig,
) -> Sig {
    // Per view, up to four stores (the fields written in stage 4, `ip_sum` in stage
    // `4 + ADDRESS_SUM_STAGES`, the rest and `user` at the end), each split into parts with
    // pointers of their own that start at different values (see `store_write`), and a count
    // and valid of its own. Records stored in stage 4 and 8 are read long after: a view's
    // record is valid only once its last store is written.
    doc("Per output view, record stores <view>_{early,sum,late}_p<k>: parts of LUT RAMs, each");
    doc("with its own pointers (<store>_wr_p<k>, <store>_rd_p<k>, reset to k: record i is at");
    doc("i + k) so that no pointer drives every RAM cell and synthesis does not merge them.");
    let depth = cfg.fifo_depth;
    let aw = clog2(depth as u64);
    let nf = <Meta as Shape>::NAMES.len();
    let mut next_offset = 0u32;
    let mut credit_high: Vec<Sig> = Vec::new();
    for (view, port) in cfg.views.iter().zip(ports) {
        let vn = view.name;
        let shape = port.shape;
        let m_valid = reg_init(1, 0u32).named(&format!("{vn}_valid"));
        let out = (m_valid & port.ready).named(&format!("{vn}_pop"));
        let stores = [
            ("early", early_part(shape), en.early),
            ("sum", sum_part(shape), en.sum),
            ("late", late_part(shape), en.late),
            ("user", user_part(shape), en.late),
        ];
        // Each field of the view, read back from its store.
        let mut fields: Vec<Option<Sig>> = vec![None; nf];
        for (group, part, en) in stores {
            if part.width() == 0 {
                continue;
            }
            let store = format!("{vn}_{group}");
            let parts = store_write(&store, part.pack(rec), en, depth, next_offset);
            next_offset += parts.len() as u32;
            let q = store_read(&store, &parts, out, depth).named(&format!("{store}_q"));
            let back = part.unpack(q);
            for (i, f) in fields.iter_mut().enumerate() {
                if part.field_width(i) > 0 {
                    *f = Some(<Meta as Shape>::sig(&back, i));
                }
            }
        }
        // Records stored and not taken, and whether there is one, as flops (no compare of
        // the pointers in front of the pop, which steps the credit counter).
        let stored = reg_init(aw + 1, 0u32).named(&format!("{vn}_count"));
        let put = en.late & !out;
        let got = out & !en.late;
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
        port.set_fields(&<Meta as Shape>::sigs_from(|i| {
            fields[i]
                .unwrap_or_else(|| Sig::absent(<Meta as Shape>::NAME, <Meta as Shape>::NAMES[i]))
        }));
        port.valid.set(m_valid);
    }
    credit_high
        .into_iter()
        .reduce(|a, b| a | b)
        .expect("at least one view")
}
