//! Icarus replay of Verilator runs: the same Verilog, the same per-cycle inputs, the same
//! sampled outputs.

mod common;

use common::*;
use nicgen_tb::icarus::{self, icarus_required, IcarusError, XPolicy};
use nicgen_tb::stream::*;
use nicgen_tb::Sim;

/// Records a stream run with idle and backpressure plus changing `d`/`a` inputs.
fn recorded_run(sim: &mut Sim, seed: u64) -> nicgen_tb::Recording {
    sim.record_inputs(true);
    let rst = sim.port("rst").unwrap();
    let d = sim.port("d").unwrap();
    let a = sim.port("a").unwrap();
    sim.set(rst, 1);
    sim.cycle();
    sim.set(rst, 0);
    let mut src = StreamDriver::new(StreamPorts::new(sim, "s_axis").unwrap(), seed, 0.3);
    let mut sink = StreamSink::new(StreamPorts::new(sim, "m_axis").unwrap(), seed + 1, 0.3);
    for i in 0..20usize {
        src.push_with_user(
            (0..(i % 11 + 1) as u8)
                .map(|b| b.wrapping_mul(37).wrapping_add(i as u8))
                .collect(),
            (i % 8) as u64,
        );
    }
    run_until_seeded(sim, seed, 100, |sim| {
        let c = sim.cycles();
        sim.set_big(d, &((num_bigint::BigUint::from(c) << 70u32) + c * 3));
        sim.set(a, c & 0xff);
        let p = step(sim, &mut [&mut src, &mut sink])?;
        Ok(Status::new(p, sink.frames().len() == 20))
    })
    .unwrap();
    sim.take_recording()
}

#[test]
fn icarus_agrees_with_verilator_cycle_by_cycle() {
    let Some(model) = pipe_model() else { return };
    if !icarus_required() {
        return;
    }
    let mut sim = model.instance();
    let rec = recorded_run(&mut sim, 11);
    assert_eq!(rec.inputs.len() as u64, sim.cycles());
    assert_eq!(rec.outputs.len(), rec.inputs.len());
    assert_eq!(
        sim.recorded().len(),
        0,
        "take_recording leaves a fresh recording"
    );
    // Cycle 0 samples registers before the first reset edge: X in Icarus, 0 in Verilator.
    icarus::replay(
        &pipe_files(),
        model.layout(),
        &rec,
        XPolicy::WildcardBefore(1),
    )
    .unwrap();

    // With X as a mismatch, that first cycle is reported, with the X digits shown.
    let err = icarus::replay(&pipe_files(), model.layout(), &rec, XPolicy::Fail).unwrap_err();
    let IcarusError::Mismatch(m) = err else {
        panic!("{err}")
    };
    assert_eq!(m.cycle, 0);
    assert!(m.icarus.contains('x'), "{m}");
}

#[test]
fn a_different_design_is_caught_at_the_first_differing_cycle() {
    let Some(model) = pipe_model() else { return };
    if !icarus_required() {
        return;
    }
    let mut sim = model.instance();
    let rec = recorded_run(&mut sim, 12);
    // `a` counts cycles; a_inc = a + 2 instead of a + 1 differs in every cycle, the first
    // compared (non-X) one being cycle 0 (a_inc is combinational from an input).
    let broken = vec![(
        "tb_pipe.v".to_string(),
        PIPE_V.replace("a + 8'd1", "a + 8'd2"),
    )];
    let err =
        icarus::replay(&broken, model.layout(), &rec, XPolicy::WildcardBefore(1)).unwrap_err();
    let IcarusError::Mismatch(m) = err else {
        panic!("{err}")
    };
    assert_eq!((m.cycle, m.port.as_str()), (0, "a_inc"));
    assert_eq!((m.verilator.as_str(), m.icarus.as_str()), ("0x01", "0x02"));
    assert_eq!(m.differing_cycles, rec.inputs.len());
}

#[test]
fn icarus_compile_errors_are_reported_with_the_command() {
    let Some(model) = pipe_model() else { return };
    if !icarus_required() {
        return;
    }
    let broken = vec![(
        "tb_pipe.v".to_string(),
        PIPE_V.replace("endmodule", "endmodul"),
    )];
    let err = icarus::run_icarus(&broken, model.layout(), &[vec![0; model.layout().in_words]])
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("iverilog failed: `"), "{text}");
    assert!(text.contains("-g2005"), "{text}");
    assert!(text.contains("tb_pipe.v"), "{text}");
}
