//! Shared fixtures for the integration tests: the hand-written test designs and their shims.
#![allow(dead_code)]

use nicgen_tb::{Model, VerilatorBuild, VerilatorOptions};

pub const PIPE_V: &str = include_str!("../hdl/tb_pipe.v");
pub const PIPE_SHIM: &str = include_str!("../hdl/tb_pipe_shim.cpp");
pub const COUNTER_V: &str = include_str!("../hdl/tb_counter.v");
pub const COUNTER_SHIM: &str = include_str!("../hdl/tb_counter_shim.cpp");

pub fn pipe_files() -> Vec<(String, String)> {
    vec![("tb_pipe.v".to_string(), PIPE_V.to_string())]
}

pub fn pipe_build(trace: bool) -> VerilatorBuild {
    VerilatorBuild::new(
        "tb_pipe",
        pipe_files(),
        PIPE_SHIM,
        VerilatorOptions {
            trace,
            cache_dir: None,
        },
    )
}

pub fn counter_build() -> VerilatorBuild {
    VerilatorBuild::new(
        "tb_counter",
        vec![("tb_counter.v".to_string(), COUNTER_V.to_string())],
        COUNTER_SHIM,
        VerilatorOptions::default(),
    )
}

/// The pipe model without tracing, or `None` when the test should be skipped.
pub fn pipe_model() -> Option<Model> {
    if !nicgen_tb::verilator::verilator_required() {
        return None;
    }
    Some(pipe_build(false).build().expect("building tb_pipe"))
}
