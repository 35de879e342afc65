//! Stream agents against the `tb_pipe` forward register (`s_axis` -> `m_axis`, latency 1).

mod common;

use common::*;
use nicgen_tb::scoreboard::Scoreboard;
use nicgen_tb::stream::*;
use nicgen_tb::Sim;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn reset(sim: &mut Sim) {
    let rst = sim.port("rst").unwrap();
    sim.set(rst, 1);
    sim.cycle();
    sim.set(rst, 0);
}

/// Random frames through the pipe with idle insertion and backpressure; every stream monitored.
fn run_matrix_point(sim: &mut Sim, seed: u64, idle: f64, backpressure: f64) {
    reset(sim);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut src = StreamDriver::new(StreamPorts::new(sim, "s_axis").unwrap(), seed, idle);
    let mut sink = StreamSink::new(
        StreamPorts::new(sim, "m_axis").unwrap(),
        seed ^ 0x5a5a,
        backpressure,
    );
    let mut mon_in = StreamMonitor::new(StreamPorts::new(sim, "s_axis").unwrap(), seed);
    let mut mon_out = StreamMonitor::new(StreamPorts::new(sim, "m_axis").unwrap(), seed);
    let mut sb = Scoreboard::new("m_axis").with_seed(seed);
    let n = 30;
    for _ in 0..n {
        let len = rng.gen_range(1..=41);
        let frame: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        let user = rng.gen_range(0..8);
        sb.expect(frame.clone());
        src.push_with_user(frame, user);
    }
    run_until_seeded(sim, seed, 200, |sim| {
        let progressed = step(sim, &mut [&mut src, &mut sink, &mut mon_in, &mut mon_out])?;
        Ok(Status::new(progressed, sink.frames().len() == n))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    for f in sink.frames() {
        sb.check(&f.data).unwrap_or_else(|e| panic!("{e}"));
    }
    sb.finish().unwrap();
    assert_eq!((mon_in.frames(), mon_out.frames()), (n as u64, n as u64));
    assert_eq!(mon_in.beats(), mon_out.beats());
    assert_eq!(src.frames_sent(), n as u64);
    assert!(src.is_idle());
}

#[test]
fn frames_pass_under_idle_and_backpressure_matrix() {
    let Some(model) = pipe_model() else { return };
    let mut sim = model.instance();
    for (i, (idle, bp)) in [(0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.6, 0.7)]
        .into_iter()
        .enumerate()
    {
        run_matrix_point(&mut sim, 1000 + i as u64, idle, bp);
    }
}

/// A pipe after reset, its input's ports, a driver on them and a sink on its output, neither
/// idle nor backpressured.
fn pipe_agents() -> Option<(Sim, StreamPorts, StreamDriver, StreamSink)> {
    let mut sim = pipe_model()?.instance();
    reset(&mut sim);
    let ports = StreamPorts::new(&sim, "s_axis").unwrap();
    let src = StreamDriver::new(ports.clone(), 1, 0.0);
    let sink = StreamSink::new(StreamPorts::new(&sim, "m_axis").unwrap(), 2, 0.0);
    Some((sim, ports, src, sink))
}

#[test]
fn user_values_and_byte_order() {
    let Some((mut sim, ports, mut src, mut sink)) = pipe_agents() else {
        return;
    };
    assert_eq!(
        (ports.data_bytes, ports.user_width, ports.role),
        (4, 3, Role::IntoDesign)
    );
    src.push_with_user(vec![1, 2, 3, 4, 5, 6], 5);
    src.push_with_user(vec![7], 2);
    // First beat: byte i at tdata[8i+7:8i], all keep bits, no last.
    src.drive(&mut sim);
    sink.drive(&mut sim);
    sim.cycle();
    assert_eq!(sim.get_u64(ports.tdata), 0x0403_0201);
    assert_eq!(sim.get_u64(ports.tkeep.unwrap()), 0b1111);
    assert!(!sim.get_bool(ports.tlast));
    src.observe(&sim).unwrap();
    sink.observe(&sim).unwrap();
    // Second beat: two bytes, keep 0b0011, last.
    src.drive(&mut sim);
    sim.cycle();
    assert_eq!(sim.get_u64(ports.tdata), 0x0605);
    assert_eq!(sim.get_u64(ports.tkeep.unwrap()), 0b0011);
    assert!(sim.get_bool(ports.tlast));
    src.observe(&sim).unwrap();
    sink.observe(&sim).unwrap();
    run_until(&mut sim, 20, |sim| {
        let p = step(sim, &mut [&mut src, &mut sink])?;
        Ok(Status::new(p, sink.frames().len() == 2))
    })
    .unwrap();
    let f = sink.frames();
    assert_eq!(
        (f[0].data.as_slice(), f[0].user),
        (&[1u8, 2, 3, 4, 5, 6][..], 5)
    );
    assert_eq!((f[1].data.as_slice(), f[1].user), (&[7u8][..], 2));
    assert!(f[0].first_cycle < f[0].last_cycle && f[0].last_cycle < f[1].first_cycle);
}

/// `user_on_last_beat`: the frame's value on its last beat, its complement before.
#[test]
fn user_on_the_last_beat_only() {
    let Some((mut sim, ports, mut src, mut sink)) = pipe_agents() else {
        return;
    };
    src.user_on_last_beat();
    src.push_with_user(vec![1, 2, 3, 4, 5, 6, 7, 8, 9], 5);
    let mut users = Vec::new();
    run_until(&mut sim, 20, |sim| {
        let p = step(sim, &mut [&mut src, &mut sink])?;
        if sim.get_bool(ports.tvalid) && sim.get_bool(ports.tready) {
            users.push(sim.get_u64(ports.tuser.unwrap()));
        }
        Ok(Status::new(p, sink.frames().len() == 1))
    })
    .unwrap();
    assert_eq!(users, [2, 2, 5], "tuser per beat (3 bits)");
    assert_eq!(sink.frames()[0].user, 5);
}

#[test]
fn no_progress_is_an_error_not_a_hang() {
    let Some(model) = pipe_model() else { return };
    let mut sim = model.instance();
    reset(&mut sim);
    let mut sink = StreamSink::new(StreamPorts::new(&sim, "m_axis").unwrap(), 3, 0.0);
    let err = run_until_seeded(&mut sim, 77, 25, |sim| {
        let p = step(sim, &mut [&mut sink])?;
        Ok(Status::new(p, !sink.frames().is_empty()))
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no progress for 25 cycles (stopped after cycle 25; seed 0x4d)"
    );
    let err = run_until_budget(&mut sim, 77, 1000, 10, |sim| {
        sim.cycle();
        Ok(Status::Progress)
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "not done after 10 cycles (seed 0x4d)");
}

#[test]
fn port_discovery_errors() {
    let Some(model) = pipe_model() else { return };
    let sim = model.instance();
    let err = StreamPorts::new(&sim, "x_axis").unwrap_err().to_string();
    assert!(
        err.starts_with("stream `x_axis`: no port `x_axis_tdata`"),
        "{err}"
    );
    let m = StreamPorts::new(&sim, "m_axis").unwrap();
    assert_eq!(m.role, Role::OutOfDesign);
    let r = std::panic::catch_unwind(|| StreamDriver::new(m, 0, 0.0));
    assert!(r.is_err(), "a driver on an output stream must be refused");
}

/// Drives `s_axis` by hand and returns the monitor's verdict on each cycle. `m_axis_tready` is
/// held low after the first beat, so `s_axis_tready` falls once the pipe holds a beat.
fn hand_driven(beats: &[(bool, u64, u64, bool)]) -> Option<Vec<Result<bool, Violation>>> {
    let model = pipe_model()?;
    let mut sim = model.instance();
    reset(&mut sim);
    let ports = StreamPorts::new(&sim, "s_axis").unwrap();
    let mut mon = StreamMonitor::new(ports.clone(), 0xbeef);
    let m_ready = sim.port("m_axis_tready").unwrap();
    sim.set(m_ready, 0);
    let mut verdicts = Vec::new();
    for &(valid, data, keep, last) in beats {
        sim.set_bool(ports.tvalid, valid);
        sim.set(ports.tdata, data);
        sim.set(ports.tkeep.unwrap(), keep);
        sim.set_bool(ports.tlast, last);
        sim.cycle();
        verdicts.push(mon.check(&sim));
    }
    Some(verdicts)
}

#[test]
fn monitor_rule_1_data_changed_while_stalled() {
    // Beat A is taken (pipe empty), beat B stalls (pipe full, m_axis not ready), then B changes.
    let Some(v) = hand_driven(&[
        (true, 0xa, 0xf, false),
        (true, 0xb, 0xf, false),
        (true, 0xc, 0xf, false),
    ]) else {
        return;
    };
    assert_eq!(v[0], Ok(true));
    assert_eq!(v[1], Ok(false));
    let e = v[2].clone().unwrap_err();
    assert_eq!(
        (e.rule, e.cycle, e.seed, e.prefix.as_str()),
        (1, 3, 0xbeef, "s_axis")
    );
    assert!(
        e.to_string()
            .contains("tdata changed while tvalid && !tready"),
        "{e}"
    );
}

#[test]
fn monitor_rule_1_valid_withdrawn() {
    let Some(v) = hand_driven(&[
        (true, 0xa, 0xf, false),
        (true, 0xb, 0xf, false),
        (false, 0xb, 0xf, false),
    ]) else {
        return;
    };
    let e = v[2].clone().unwrap_err();
    assert_eq!(e.rule, 1);
    assert!(e.message.contains("tvalid fell"), "{e}");
}

#[test]
fn monitor_rules_3_and_4_on_tkeep() {
    let Some(v) = hand_driven(&[(true, 0xa, 0b0111, false)]) else {
        return;
    };
    let e = v[0].clone().unwrap_err();
    assert_eq!(e.rule, 3);
    assert!(
        e.to_string().contains(
            "rule 3 (full tkeep inside a frame) in cycle 1 (seed 0xbeef): tkeep = 0b0111"
        ),
        "{e}"
    );
    let v = hand_driven(&[(true, 0xa, 0b0101, true)]).unwrap();
    assert_eq!(v[0].clone().unwrap_err().rule, 4);
    let v = hand_driven(&[(true, 0xa, 0, true)]).unwrap();
    assert_eq!(v[0].clone().unwrap_err().rule, 4);
    // Good last beats and idle cycles with garbage are fine.
    let v = hand_driven(&[(true, 0xa, 0b0011, true), (false, 0x1, 0b0101, false)]).unwrap();
    assert_eq!(v, vec![Ok(true), Ok(false)]);
}
