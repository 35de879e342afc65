//! `record_fifo` passes every item through unchanged and in order under random idle and
//! backpressure; the sink checks the hold rule. Without idle or backpressure it moves one item
//! per cycle.

use nicgen_hdl::stream::record_fifo;
use nicgen_tests::*;

#[test]
fn record_fifo_is_identity() {
    record_identity(
        [(1u32, 2u32), (37, 4), (300, 16)]
            .into_iter()
            .map(|(w, depth)| {
                (
                    record_fifo(nicgen_edsl::record::Word::shape(w), depth)
                        .unwrap()
                        .into_def(),
                    w,
                    format!("fifo depth {depth}"),
                )
            }),
    );
}
