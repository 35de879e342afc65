//! `record_fifo`, `record_reg_slice` and `record_reg_slice_wide` pass every item through unchanged and in order under
//! random idle and backpressure; the sink checks the hold rule. Without idle or backpressure
//! both move one item per cycle.

mod blocks;
use blocks::*;
use nicgen_edsl::prelude::*;
use nicgen_hdl::stream::{record_fifo, record_reg_slice, record_reg_slice_wide, RecordReg};
use nicgen_tb::record::{RecordDriver, RecordSink};
use nicgen_tb::stream::{run_until_seeded, step, Status};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// A register slice alone in a module, with record-stream ports.
fn reg_slice(width: u32, wide: bool) -> Rc<ModuleDef> {
    let kind = if wide { "_wide" } else { "" };
    Module::build(format!("record_slice{kind}_w{width}"), move || {
        let slice: fn(&str, Sig, Sig) -> RecordReg = if wide {
            record_reg_slice_wide
        } else {
            record_reg_slice
        };
        let r = slice(
            "slice",
            input("s_axis_tdata", width),
            input("s_axis_tvalid", 1),
        );
        output("s_axis_tready", r.s_ready);
        r.ready.set(input("m_axis_tready", 1));
        output("m_axis_tdata", r.data);
        output("m_axis_tvalid", r.valid);
    })
    .unwrap()
}

#[test]
fn record_fifo_is_identity() {
    identity(
        [(1u32, 2u32), (37, 4), (300, 16)]
            .into_iter()
            .map(|(w, depth)| {
                (
                    record_fifo(w, depth).unwrap(),
                    w,
                    format!("fifo depth {depth}"),
                )
            }),
    );
}

#[test]
fn record_reg_slice_is_identity() {
    identity(
        [1u32, 37, 300]
            .into_iter()
            .map(|w| (reg_slice(w, false), w, "slice".to_string())),
    );
}

/// The wide slice: both halves' control copies must agree under every handshake pattern (a
/// half that loads or holds a cycle apart from the other corrupts the record).
#[test]
fn record_reg_slice_wide_is_identity() {
    identity(
        [2u32, 37, 300]
            .into_iter()
            .map(|w| (reg_slice(w, true), w, "wide slice".to_string())),
    );
}

fn identity(duts: impl Iterator<Item = (Rc<ModuleDef>, u32, String)>) {
    for (def, width, what) in duts {
        let Some(d) = dut(&def) else {
            return;
        };
        for k in matrix(90 + width as u64) {
            let mut sim = d.model.instance();
            reset(&mut sim);
            let mut rng = StdRng::seed_from_u64(k.seed);
            let bytes = width.div_ceil(8) as usize;
            let items: Vec<Vec<u8>> = (0..200)
                .map(|_| {
                    let mut v: Vec<u8> = (0..bytes).map(|_| rng.gen()).collect();
                    if width % 8 != 0 {
                        *v.last_mut().unwrap() &= (1u8 << (width % 8)) - 1;
                    }
                    v
                })
                .collect();
            let mut drv = RecordDriver::new(&sim, "s_axis", k.seed, k.idle).unwrap();
            let mut sink = RecordSink::new(&sim, "m_axis", k.seed + 1, k.backpressure).unwrap();
            for i in &items {
                drv.push(i.clone());
            }
            let start = sim.cycles();
            run_until_seeded(&mut sim, k.seed, 100, |sim| {
                let p = step(sim, &mut [&mut drv, &mut sink])?;
                Ok(Status::new(p, sink.items.len() == items.len()))
            })
            .unwrap();
            assert_eq!(sink.items, items, "width {width} {what} {k:?}");
            if k.idle == 0.0 && k.backpressure == 0.0 {
                let cycles = sim.cycles() - start;
                assert!(
                    cycles <= items.len() as u64 + 3,
                    "width {width} {what}: {} items took {cycles} cycles",
                    items.len()
                );
            }
        }
    }
}
