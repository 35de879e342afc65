//! End-to-end tests of the Verilator glue on hand-written designs and shims.

mod common;

use common::*;
use nicgen_tb::verilator::{verilator_required, CacheStatus};
use nicgen_tb::VerilatorError;
use num_bigint::BigUint;

/// Cycle semantics: outputs after `cycle()` are the values sampled before that cycle's edge.
#[test]
fn cycle_semantics_of_a_two_stage_pipe() {
    let Some(model) = pipe_model() else { return };
    let mut sim = model.instance();
    let rst = sim.port("rst").unwrap();
    let d = sim.port("d").unwrap();
    let q = sim.port("q").unwrap();
    let count = sim.port("count").unwrap();
    assert_eq!(sim.width(d), 100);

    sim.set(rst, 1);
    sim.cycle();
    sim.set(rst, 0);
    assert_eq!(sim.cycles(), 1);

    let value =
        |i: u64| (BigUint::from(i + 1) << 90u32) + BigUint::from(0x1234_5678_9abc_def0u64 ^ i);
    let mut seen = Vec::new();
    for i in 0..6u64 {
        sim.set_big(d, &value(i));
        sim.cycle();
        seen.push(sim.get_big(q));
        // `count` was reset at the edge of cycle 0 and counts edges since: pre-edge value in
        // cycle i+1 (the i-th after reset) is i.
        assert_eq!(sim.get_u64(count), i);
    }
    // Applied in cycle k, d reaches stage1 at edge k and stage2 at edge k+1, so q shows it in
    // the pre-edge sample of cycle k+2.
    assert_eq!(seen[0], BigUint::from(0u32));
    assert_eq!(seen[1], BigUint::from(0u32));
    for (i, q) in seen.iter().enumerate().skip(2) {
        assert_eq!(*q, value(i as u64 - 2), "cycle {i}");
    }
    // Bytes view of a 100-bit port: 13 bytes, little-endian.
    let bytes = sim.get_bytes_le(q);
    assert_eq!(bytes.len(), 13);
    assert_eq!(BigUint::from_bytes_le(&bytes), value(3));
    assert_eq!(sim.cycles(), 7);
}

#[test]
fn eval_updates_combinational_outputs_without_a_clock() {
    let Some(model) = pipe_model() else { return };
    let mut sim = model.instance();
    let a = sim.port("a").unwrap();
    let a_inc = sim.port("a_inc").unwrap();
    sim.set(a, 0xff);
    sim.eval();
    assert_eq!(sim.get_u64(a_inc), 0x00);
    sim.set(a, 41);
    sim.eval();
    assert_eq!(sim.get_u64(a_inc), 42);
    assert_eq!(sim.cycles(), 0);
    // Inputs read back what was applied.
    assert_eq!(sim.get_u64(a), 41);
}

#[test]
fn set_bytes_le_and_port_errors() {
    let Some(model) = pipe_model() else { return };
    let mut sim = model.instance();
    let d = sim.port("d").unwrap();
    let mut bytes = vec![0u8; 13];
    bytes[0] = 0x11;
    bytes[12] = 0x0f;
    sim.set_bytes_le(d, &bytes);
    assert_eq!(sim.get_bytes_le(d), bytes);
    assert_eq!(
        sim.get_big(d),
        (BigUint::from(0xfu32) << 96u32) + BigUint::from(0x11u32)
    );

    let err = sim.port("no_such").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, VerilatorError::NoSuchPort { .. }));
    assert!(
        msg.contains("no_such") && msg.contains("s_axis_tdata[32]") && msg.contains("q[100]"),
        "{msg}"
    );

    let q = sim.port("q").unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.get_u64(q)));
    let p = r.unwrap_err();
    let text = p.downcast_ref::<String>().unwrap();
    assert!(text.contains("100 bits wide"), "{text}");
}

#[test]
#[should_panic(expected = "does not fit input `a` (8 bits)")]
fn set_rejects_values_wider_than_the_port() {
    let Some(model) = pipe_model() else {
        panic!("does not fit input `a` (8 bits) (skipped)")
    };
    let mut sim = model.instance();
    let a = sim.port("a").unwrap();
    sim.set(a, 0x100);
}

#[test]
#[should_panic(expected = "is an output")]
fn set_rejects_outputs() {
    let Some(model) = pipe_model() else {
        panic!("is an output (skipped)")
    };
    let mut sim = model.instance();
    let q = sim.port("q").unwrap();
    sim.set(q, 1);
}

#[test]
fn second_build_is_a_cache_hit_and_the_key_follows_the_text() {
    if !verilator_required() {
        return;
    }
    let (_, first) = pipe_build(false).build_with_status().unwrap();
    let (_, second) = pipe_build(false).build_with_status().unwrap();
    assert!(matches!(first, CacheStatus::Hit | CacheStatus::Built));
    assert_eq!(second, CacheStatus::Hit);

    let key = pipe_build(false).key().unwrap();
    assert_eq!(key, pipe_build(false).key().unwrap());
    let edited = nicgen_tb::VerilatorBuild::new(
        "tb_pipe",
        vec![(
            "tb_pipe.v".into(),
            PIPE_V.replace("Hand-written", "Hand written"),
        )],
        PIPE_SHIM,
        Default::default(),
    );
    assert_ne!(key, edited.key().unwrap());
    assert_ne!(key, pipe_build(true).key().unwrap());
}

#[test]
fn two_models_and_many_instances_in_one_process() {
    let Some(pipe) = pipe_model() else { return };
    let counter = counter_build().build().unwrap();
    let mut p1 = pipe.instance();
    let mut p2 = pipe.instance();
    let mut c = counter.instance();
    let (rst, en, step, value) = (
        c.port("rst").unwrap(),
        c.port("en").unwrap(),
        c.port("step").unwrap(),
        c.port("value").unwrap(),
    );
    c.set(rst, 1);
    c.cycle();
    c.set(rst, 0);
    c.set(en, 1);
    c.set(step, 3);
    let a1 = p1.port("a").unwrap();
    let inc1 = p1.port("a_inc").unwrap();
    p1.set(a1, 1);
    p2.set(a1, 2);
    for i in 0..10u64 {
        c.cycle();
        p1.cycle();
        p2.cycle();
        assert_eq!(c.get_u64(value), 3 * i);
    }
    assert_eq!(p1.get_u64(inc1), 2);
    assert_eq!(p2.get_u64(inc1), 3);
    assert_eq!((p1.cycles(), p2.cycles(), c.cycles()), (10, 10, 11));
}

#[test]
fn instances_run_on_parallel_threads_and_move_between_threads() {
    let Some(model) = pipe_model() else { return };
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let model = model.clone();
            std::thread::spawn(move || {
                let mut sim = model.instance();
                let rst = sim.port("rst").unwrap();
                let d = sim.port("d").unwrap();
                let q = sim.port("q").unwrap();
                sim.set(rst, 1);
                sim.cycle();
                sim.set(rst, 0);
                for i in 0..2000u64 {
                    sim.set(d, t * 1_000_000 + i);
                    sim.cycle();
                    if i >= 2 {
                        assert_eq!(sim.get_big(q), BigUint::from(t * 1_000_000 + i - 2));
                    }
                }
                sim
            })
        })
        .collect();
    // The instances come back to this thread and keep working here.
    for h in handles {
        let mut sim = h.join().unwrap();
        let before = sim.cycles();
        sim.cycle();
        assert_eq!(sim.cycles(), before + 1);
    }
}

#[test]
fn concurrent_builds_of_one_model_build_once() {
    if !verilator_required() {
        return;
    }
    let results: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(|| counter_build().build_with_status().map(|(_, s)| s)))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert!(
        results.iter().filter(|s| **s == CacheStatus::Built).count() <= 1,
        "{results:?}"
    );
}

#[test]
fn fst_trace_window_writes_a_file() {
    if !verilator_required() {
        return;
    }
    let model = pipe_build(true).build().unwrap();
    let dir = std::env::temp_dir().join(format!("nicgen-tb-fst-{}", std::process::id()));
    let path = dir.join("pipe.fst");
    let _ = std::fs::remove_file(&path);
    let mut sim = model.instance();
    let d = sim.port("d").unwrap();
    sim.trace_window(5, 15, &path).unwrap();
    for i in 0..10 {
        sim.set(d, i);
        sim.cycle();
    }
    // Still open (window ends at 15): the file exists, but FST writes its blocks on close.
    for i in 10..20 {
        sim.set(d, i);
        sim.cycle();
    }
    let len = std::fs::metadata(&path).expect("trace file").len();
    assert!(len > 100, "FST file is {len} bytes");
    // Closed at the end of the window: a complete file with cycles 5..15 (this hand-written
    // shim dumps cycle c at times 10c and 10c + 5).
    let info = nicgen_tb::waves::check_fst(&path).unwrap();
    assert_eq!((info.start_time, info.end_time), (50, 145), "{info:?}");
    assert!(info.vars > 0 && info.sections > 0, "{info:?}");
    let _ = std::fs::remove_dir_all(&dir);

    // An untraced model refuses a trace window clearly.
    let untraced = pipe_build(false).build().unwrap();
    let mut sim = untraced.instance();
    let err = sim.trace_window(0, 10, dir.join("x.fst")).unwrap_err();
    assert!(err.to_string().contains("built without tracing"), "{err}");
}

#[test]
fn missing_verilator_is_reported_clearly() {
    // Only the message; the environment is process-wide, so do not change VERILATOR here.
    let e = VerilatorError::NotFound {
        detail: "`verilator` is not on PATH and VERILATOR is unset".into(),
    };
    assert!(e.to_string().contains("Install it"));
}

/// The entry points the eDSL's generated typed bindings use.
#[test]
fn raw_buffer_cycle_for_generated_bindings() {
    let Some(model) = pipe_model() else { return };
    let mut sim = model.instance();
    assert_eq!(sim.top(), "tb_pipe");
    assert_eq!(sim.layout_words(), (10, 10));
    let mut inp = vec![0u64; 10];
    let mut out = vec![0u64; 10];
    inp[0] = 1; // rst
    sim.cycle_raw(&inp, &mut out);
    inp[0] = 0;
    inp[3] = 9; // a
    sim.cycle_raw(&inp, &mut out);
    assert_eq!(out[2], 10); // a_inc
    assert_eq!(sim.get_u64(sim.port("a_inc").unwrap()), 10);
    // Bits above a port's width are refused: the shim copies words without masking.
    inp[3] = 0x100;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sim.cycle_raw(&inp, &mut out)
    }));
    assert!(r.is_err());
}

/// Build errors name the step and the command and show the tool's last lines. Both fail
/// before the runtime is needed, so a throwaway cache directory costs nothing.
#[test]
fn build_errors_show_the_command_and_the_output() {
    if !verilator_required() {
        return;
    }
    let cache = std::env::temp_dir().join(format!("nicgen-tb-errcache-{}", std::process::id()));
    let options = nicgen_tb::VerilatorOptions {
        trace: false,
        cache_dir: Some(cache.clone()),
    };
    let bad_verilog = vec![(
        "tb_pipe.v".to_string(),
        PIPE_V.replace("assign q = stage2;", "assign q = stage3;"),
    )];
    let err = nicgen_tb::VerilatorBuild::new("tb_pipe", bad_verilog, PIPE_SHIM, options.clone())
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("verilating tb_pipe failed: `"), "{text}");
    assert!(
        text.contains("--top-module tb_pipe") && text.contains("stage3"),
        "{text}"
    );

    let bad_shim = PIPE_SHIM.replace("out[2] = t.a_inc;", "out[2] = t.no_such_port;");
    let err = nicgen_tb::VerilatorBuild::new("tb_pipe", pipe_files(), bad_shim, options)
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("compiling nicgen_shim.cpp failed: `"),
        "{text}"
    );
    assert!(
        text.contains("no_such_port") && text.contains("-fPIC"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}
