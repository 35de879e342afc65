//! `record_fifo` passes every item through unchanged and in order under random idle and
//! backpressure; the sink checks the hold rule.

mod blocks;
use blocks::*;
use nicgen_hdl::stream::record_fifo;
use nicgen_tb::record::{RecordDriver, RecordSink};
use nicgen_tb::stream::{run_until_seeded, step, Status};
use rand::{rngs::StdRng, Rng, SeedableRng};

#[test]
fn record_fifo_is_identity() {
    for (width, depth) in [(1u32, 2u32), (37, 4), (300, 16)] {
        let Some(d) = dut(&record_fifo(width, depth).unwrap()) else {
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
            run_until_seeded(&mut sim, k.seed, 100, |sim| {
                let p = step(sim, &mut [&mut drv, &mut sink])?;
                Ok(Status::new(p, sink.items.len() == items.len()))
            })
            .unwrap();
            assert_eq!(sink.items, items, "width {width} depth {depth} {k:?}");
        }
    }
}
