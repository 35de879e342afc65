//! `crc32::crc_update` (the one-cycle CRC-32 update the FCS blocks are built from) against
//! `nicgen_model::crc32` over random bytes, one step and two chained steps.

use nicgen_edsl::prelude::*;
use nicgen_hdl::eth::crc32::{crc_update, INIT, XOROUT};
use nicgen_model::crc32::crc32;
use nicgen_tests::mac::body;
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

#[test]
fn crc_update_matches_the_model() {
    // The one-cycle update of `crc32::crc_update` over 8 bytes, chained through its own output:
    // after bytes b1 and b2 from the initial register, the FCS is !register.
    let def = Module::build("crc_update_k8", || {
        let state = input("state", 32);
        let bytes = input("bytes", 64);
        output("next", crc_update(state, bytes));
    })
    .unwrap();
    let Some(d) = dut(&def) else { return };
    lint_clean(&d.gen);
    let mut sim = d.model.instance();
    let (ps, pb, pn) = (
        sim.port("state").unwrap(),
        sim.port("bytes").unwrap(),
        sim.port("next").unwrap(),
    );
    let mut rng = StdRng::seed_from_u64(17);
    for _ in 0..200 {
        let b1: Vec<u8> = body(&mut rng, 8);
        let b2: Vec<u8> = body(&mut rng, 8);
        sim.set(ps, INIT as u64);
        sim.set_bytes_le(pb, &b1);
        sim.eval();
        let r1 = sim.get_u64(pn);
        assert_eq!(r1 as u32 ^ XOROUT, crc32(&b1), "one step over {b1:02x?}");
        sim.set(ps, r1);
        sim.set_bytes_le(pb, &b2);
        sim.eval();
        let both = [b1, b2].concat();
        assert_eq!(
            sim.get_u64(pn) as u32 ^ XOROUT,
            crc32(&both),
            "two steps over {both:02x?}"
        );
    }
}
