//! `stream_skid` against its golden model, the identity on frames: bus width (8, 64, 512 bits)
//! x idle x backpressure, monitors on every stream.

use nicgen_hdl::stream::stream_skid;
use nicgen_tests::*;

#[test]
fn skid_buffer_is_identity() {
    stream_identity("stream_skid", |c| stream_skid(c).unwrap().into_def());
}
