//! `stream_fwd_reg` against its golden model, the identity on frames: bus width (8, 64, 512
//! bits) x idle x backpressure, monitors on every stream; and its parameter check.

use nicgen_hdl::stream::{stream_fwd_reg, StreamCfg};
use nicgen_tests::*;

#[test]
fn forward_register_is_identity() {
    stream_identity("stream_fwd_reg", |c| stream_fwd_reg(c).unwrap().into_def());
}

#[test]
fn impossible_parameters_are_refused_with_a_reason() {
    let e = stream_fwd_reg(&StreamCfg::new(12, 0)).unwrap_err();
    assert!(e.to_string().contains("not whole bytes"), "{e}");
}
