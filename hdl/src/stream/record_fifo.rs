//! `record_fifo`: a small FIFO for record streams (`tdata/tvalid/tready`, one item per
//! transfer, no `tkeep`/`tlast`): per-frame requests and results waiting beside the data.
//!
//! - Ports: `s_axis_tdata/_tvalid/_tready`, `m_axis_tdata/_tvalid/_tready`. `s_axis_tready`
//!   and `m_axis_tvalid` are flops (`!full`, `!empty`, exact; docs/TIMING.md, rule 1); the LUT
//!   RAM is written whenever the FIFO is not full (rule 6).
//! - Latency 1 cycle (write to `m_axis_tvalid`). Throughput 1 item/cycle.
//! - Cost: `depth x width` bits of LUT RAM, two pointers and a count of `log2(depth) + 1` bits,
//!   two flag flops; no row of its own in results/AREA.md (part of the blocks that use it).
//! - Golden model: identity on items; test: `testbench/tests/stream/record_fifo.rs`.

use nicgen_edsl::prelude::*;

/// The ports of a [`record_fifo`] of records shaped `S`.
pub struct RecordFifoPorts<S: Shape> {
    /// Records in (`s_axis_*`).
    pub s_axis: RecordStream<S>,
    /// Records out, in order (`m_axis_*`).
    pub m_axis: RecordStream<S>,
}

impl<S: Shape> Ports for RecordFifoPorts<S> {
    type Cfg = (S, u32);
    fn ports(io: &Io, (shape, _depth): &(S, u32)) -> Self {
        RecordFifoPorts {
            s_axis: RecordStream::sink(io, "s_axis", shape.clone()),
            m_axis: RecordStream::source(io, "m_axis", shape.clone()),
        }
    }
}

/// A FIFO of `depth` records shaped `shape` (a power of two, at least 2).
pub fn record_fifo<S: Shape>(shape: S, depth: u32) -> Result<Block<RecordFifoPorts<S>>, ElabError> {
    if depth < 2 || !depth.is_power_of_two() {
        return Err(ElabError::config(
            "record_fifo",
            format!("depth {depth} is not a power of two >= 2"),
        ));
    }
    let width = shape.width();
    if width == 0 {
        return Err(ElabError::config(
            "record_fifo",
            "width must be at least 1 bit",
        ));
    }
    Block::build(
        format!("record_fifo_w{width}_n{depth}"),
        (shape, depth),
        move |p: RecordFifoPorts<S>| {
            doc(&format!("Record FIFO: {depth} items of {width} bits."));
            let aw = clog2(depth as u64);
            let wr = reg_init(aw + 1, 0u32).named("wr_ptr");
            let rd = reg_init(aw + 1, 0u32).named("rd_ptr");
            // `full` and `empty` are flops, exact (not one cycle late): each follows the
            // occupancy `count` through this cycle's push and pop. So `s_axis_tready` and
            // `m_axis_tvalid` come from flops, and no pointer compare sits between a
            // neighbour's handshake and ours.
            let count = reg_init(aw + 1, 0u32).named("count");
            let full = reg_init(1, 0u32).named("full");
            let empty = reg_init(1, 1u32).named("empty");
            let push = (p.s_axis.valid & !full).named("push");
            let pop = (!empty & p.m_axis.ready).named("pop");
            // Each next state is a 2:1 choice on `pop`, between values made from flops and
            // `push` only: the reader's ready usually arrives last (in `rx_csum` it is the
            // frame end, from the frame's `tlast`), and so it meets one LUT before each flop,
            // not an adder's carry and a compare (docs/TIMING.md, rule 5). With a pop, the
            // queue is not full afterwards (a push, if any, refills the place); without one,
            // it fills when a push finds `depth - 1` items.
            count.set(mux(
                pop,
                mux(push, count, count - 1u32),
                mux(push, count + 1u32, count),
            ));
            full.set(!pop & mux(push, count.eq(u64::from(depth - 1)), full));
            empty.set(!push & mux(pop, count.eq(1u64), empty));
            wr.set_if(push, wr + 1u32);
            rd.set_if(pop, rd + 1u32);
            // The RAM is written whenever it is not full, valid or not: while not full, slot
            // `wr` holds nothing unread, and only `push` moves the pointer, so a word written
            // without its valid is overwritten before it can be read. So the write enable (one
            // net to every LUT-RAM cell, `width / 4` of them) is the `full` flop itself, and
            // `push` drives only the pointer and the flags (docs/TIMING.md, rule 6).
            // In LUT RAM, as the queue is small and read asynchronously: synthesis would
            // otherwise make a deep one a block-RAM read port addressed by `rd_ptr`, whose
            // clock-to-output starts the reader's logic.
            let mem = memory("items", width, depth);
            mem.distributed();
            mem.write(!full, wr.trunc(aw), p.s_axis.data);
            p.s_axis.ready.set(!full);
            p.m_axis.data.set(mem.read_async(rd.trunc(aw)));
            p.m_axis.valid.set(!empty);
        },
    )
}
