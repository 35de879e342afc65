//! The preset top (`nic_core`) end to end at 64 and 512 bits: frames in, the same frames out
//! minus the ones the frame FIFO drops, one checksum per delivered frame, every frame accounted
//! for, monitors on all three streams; replayed on Icarus; an FST trace window is written.

mod blocks;
use blocks::*;
use nicgen_hdl::preset::Preset;
use nicgen_model::checksum::stream_csum;
use nicgen_model::stream::{fifo_frames, MarkedFrame};
use std::cell::Cell;

#[test]
fn nic_core_delivers_checksums_and_accounts_for_every_frame() {
    for (pi, preset) in ["nic64", "nic512"].into_iter().enumerate() {
        let p = Preset::builtin(preset).unwrap();
        let Some(d) = dut(&nicgen_hdl::top::nic_core(&p).unwrap()) else {
            return;
        };
        let bpb = (p.data_bits / 8) as usize;
        let cap = p.fifo.depth as usize * bpb;
        for (ki, k) in matrix(50 + pi as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            let raw = random_frames(k.seed, 30, cap + bpb);
            let frames: Vec<(Vec<u8>, u64)> = raw
                .iter()
                .enumerate()
                .map(|(i, f)| (f.clone(), (i % 7 == 3) as u64))
                .collect();
            let marked: Vec<MarkedFrame> = frames
                .iter()
                .map(|(b, u)| MarkedFrame {
                    bytes: b.clone(),
                    bad: *u == 1,
                })
                .collect();
            let want = fifo_frames(&marked, cap);
            let sums: Vec<Vec<u8>> = want
                .delivered
                .iter()
                .map(|f| stream_csum(f).to_le_bytes().to_vec())
                .collect();
            let (bad_p, big_p) = (
                sim.port("stat_drop_bad").unwrap(),
                sim.port("stat_drop_oversize").unwrap(),
            );
            let dropped = Cell::new(0usize);
            let total = frames.len();
            let got = run_frames(
                &mut sim,
                k,
                &frames,
                &["m_axis", "m_axis_csum"],
                |g, _| g[0].len() + dropped.get() == total && g[1].len() == g[0].len(),
                |s| dropped.set(dropped.get() + (s.get_u64(bad_p) + s.get_u64(big_p)) as usize),
            );
            let out: Vec<Vec<u8>> = got[0].iter().map(|f| f.0.clone()).collect();
            let csums: Vec<Vec<u8>> = got[1].iter().map(|f| f.0.clone()).collect();
            assert_eq!(out, want.delivered, "{preset} {k:?}");
            assert_eq!(csums, sums, "{preset} {k:?}");
            assert_eq!(
                out.len() + dropped.get(),
                total,
                "accounting {preset} {k:?}"
            );
            if ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn fst_trace_window_of_the_top() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let gen = nicgen_edsl::generate(&nicgen_hdl::top::nic_core(&p).unwrap(), &Default::default());
    let model = nicgen_tb::VerilatorBuild::new(
        &gen.top,
        gen.verilog.clone(),
        &gen.shim_cpp,
        nicgen_tb::VerilatorOptions {
            trace: true,
            cache_dir: None,
        },
    )
    .build()
    .unwrap();
    let mut sim = model.instance();
    let path = std::env::temp_dir().join(format!("nicgen-nic-core-{}.fst", std::process::id()));
    sim.trace_window(5, 25, &path).unwrap();
    reset(&mut sim);
    sim.cycles_n(40);
    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    assert!(len > 100, "trace file {} has {len} bytes", path.display());
    let _ = std::fs::remove_file(&path);
}
