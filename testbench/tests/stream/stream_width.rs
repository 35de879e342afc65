//! `stream_narrow` and `stream_widen` against their golden model, the identity on frames,
//! with transfers laid out as on the DMA port (first byte at byte `off` of the first beat,
//! `tkeep` marking only the data): width pairs 64/8, 256/64, 512/64, 512/256 x idle x
//! backpressure; every frame, its `tuser` and the beat count `ceil((off + len) / (W/8))` on
//! the output side; one beat a cycle without idle or backpressure; the generated Verilog
//! lint-clean; and the parameter checks.

use nicgen_hdl::stream::{stream_narrow, stream_widen, WidthCfg};
use nicgen_tb::stream::{run_until_seeded, step, Status, StreamDriver, StreamPorts, StreamSink};
use nicgen_tests::*;
use rand::{rngs::StdRng, Rng, SeedableRng};

const PAIRS: [(u32, u32); 4] = [(64, 8), (256, 64), (512, 64), (512, 256)];

/// Runs 60 transfers of random length and offset through the converter `cfg` (narrowing
/// when `narrowing`) under every knob of the matrix and checks them.
fn transfers(narrowing: bool, cfg: WidthCfg, seed: u64) {
    let build = if narrowing {
        stream_narrow
    } else {
        stream_widen
    };
    let def = build(&cfg).unwrap().into_def();
    let Some(d) = dut(&def) else { return };
    lint_clean(&d.gen);
    let narrow_bytes = (cfg.in_bits.min(cfg.out_bits) / 8) as usize;
    let (in_bytes, out_bytes) = ((cfg.in_bits / 8) as usize, (cfg.out_bits / 8) as usize);
    let what = format!(
        "{} {} -> {}",
        if narrowing { "narrow" } else { "widen" },
        cfg.in_bits,
        cfg.out_bits
    );
    for k in matrix(seed) {
        let mut sim = d.model.instance();
        reset(&mut sim);
        let mut rng = StdRng::seed_from_u64(k.seed);
        let user_max = if cfg.user_bits > 0 {
            1u64 << cfg.user_bits
        } else {
            1
        };
        let items: Vec<(Vec<u8>, usize, u64)> = (0..60)
            .map(|_| {
                let len = match rng.gen_range(0..4) {
                    0 => rng.gen_range(1..=narrow_bytes),
                    _ => rng.gen_range(1..=4 * in_bytes.max(out_bytes) + 3),
                };
                let off = if rng.gen_bool(0.3) {
                    0
                } else {
                    rng.gen_range(0..narrow_bytes)
                };
                let frame = (0..len).map(|_| rng.gen()).collect();
                (frame, off, rng.gen_range(0..user_max))
            })
            .collect();
        let mut drv = StreamDriver::new(StreamPorts::new(&sim, "s_axis").unwrap(), k.seed, k.idle);
        for (f, off, u) in &items {
            drv.push_at(f.clone(), *off, *u);
        }
        let out = StreamPorts::new(&sim, "m_axis").unwrap();
        let mut sink = StreamSink::new(out.clone(), k.seed + 1, k.backpressure);
        let mut beats = Transfers::new(out);
        let n = items.len();
        let start = sim.cycles();
        run_until_seeded(&mut sim, k.seed, 200, |sim| {
            let p = step(sim, &mut [&mut drv, &mut sink, &mut beats])?;
            Ok(Status::new(p, sink.frames().len() == n))
        })
        .unwrap_or_else(|e| panic!("{what} {k:?}: {e}"));
        for (i, ((f, off, u), got)) in items.iter().zip(sink.frames()).enumerate() {
            assert_eq!(&got.data, f, "{what} {k:?}: frame {i} (offset {off})");
            assert_eq!(got.user, *u, "{what} {k:?}: tuser of frame {i}");
        }
        let want: usize = items
            .iter()
            .map(|(f, off, _)| (off + f.len()).div_ceil(out_bytes))
            .sum();
        assert_eq!(beats.cycles.len(), want, "{what} {k:?}: output beats");
        if k.idle == 0.0 && k.backpressure == 0.0 {
            // The narrow side moves a beat every cycle: all of it when it is the output, and
            // the whole run within the input's beats plus the latency when it is the input.
            let in_beats: usize = items
                .iter()
                .map(|(f, off, _)| (off + f.len()).div_ceil(in_bytes))
                .sum();
            if narrowing {
                assert!(contiguous(&beats.cycles), "{what}: a bubble on the output");
            }
            let took = (sim.cycles() - start) as usize;
            assert!(
                took <= in_beats.max(want) + 4,
                "{what}: {} input and {want} output beats took {took} cycles",
                in_beats
            );
        }
    }
}

#[test]
fn narrowing_keeps_every_byte_in_place() {
    for (i, (wide, narrow)) in PAIRS.into_iter().enumerate() {
        let cfg = WidthCfg {
            in_bits: wide,
            out_bits: narrow,
            user_bits: 9,
        };
        transfers(true, cfg, 40 + i as u64);
    }
}

#[test]
fn widening_keeps_every_byte_in_place() {
    for (i, (wide, narrow)) in PAIRS.into_iter().enumerate() {
        let user_bits = if i % 2 == 0 { 0 } else { 3 };
        let cfg = WidthCfg {
            in_bits: narrow,
            out_bits: wide,
            user_bits,
        };
        transfers(false, cfg, 50 + i as u64);
    }
}

#[test]
fn impossible_parameters_are_refused_with_a_reason() {
    let cfg = |in_bits, out_bits| WidthCfg {
        in_bits,
        out_bits,
        user_bits: 0,
    };
    let e = stream_narrow(&cfg(64, 64)).unwrap_err();
    assert!(e.to_string().contains("must be wider"), "{e}");
    let e = stream_widen(&cfg(64, 32)).unwrap_err();
    assert!(e.to_string().contains("must be wider"), "{e}");
    let e = stream_narrow(&cfg(96, 32)).unwrap_err();
    assert!(e.to_string().contains("power of two"), "{e}");
    let e = stream_widen(&cfg(12, 64)).unwrap_err();
    assert!(e.to_string().contains("not whole bytes"), "{e}");
}
