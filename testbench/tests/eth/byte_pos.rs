//! `byte_pos::ge_mask_tracked` against its definition, `ge_mask` of the beat's frame offset: a
//! module holds both side by side (the reference keeps the offset and the bound in registers
//! and compares), and random sequences of `take` (a new bound; the next beat is the frame's
//! first) and `beat` (move on a beat), in any combination, must give the same byte mask at
//! every cycle after the first `take`, at 8, 64 and 512 bits. `eq_mask_tracked_with` likewise
//! against a per-byte equality with the registered offset, gated by the enable taken with the
//! bound. `ge_bound_flags_plus(b, k)` against `ge_bound_flags(b + k)` wherever `b + k` does
//! not wrap.

use nicgen_edsl::prelude::*;
use nicgen_hdl::eth::byte_pos::{
    eq_mask_tracked_with, ge_bound_flags, ge_bound_flags_plus, ge_mask, ge_mask_tracked, Take,
};
use nicgen_tests::*;
use rand::{rngs::StdRng, Rng, SeedableRng};

fn pair(bits: u32) -> Rc<ModuleDef> {
    let bytes = bits / 8;
    Module::build(format!("ge_mask_pair_d{bits}"), move || {
        let bound = input("bound", 16);
        let take = input("take", 1);
        let beat = input("beat", 1);
        // Reference: the beat's offset and the bound, registered, then compared.
        let pos = reg_init(16, 0u32).named("pos");
        pos.set(mux(take, 0u32, mux(beat, pos + bytes as u64, pos)));
        let held = reg(16).enable(take).named("bound_q");
        held.set(bound);
        output("want", ge_mask(pos, held, bytes));
        output("got", ge_mask_tracked(bound, take, beat, bytes, "tracked"));
        let enable = input("enable", 1);
        let en_q = reg(1).enable(take).named("enable_q");
        en_q.set(enable);
        let at: Vec<Sig> = (0..bytes)
            .rev()
            .map(|i| (pos.zext(17) + i as u64).eq(held.zext(17)) & en_q)
            .collect();
        output("want_eq", cat(&at));
        let flags = ge_bound_flags(bound, bytes);
        output(
            "got_eq",
            eq_mask_tracked_with(
                bound,
                flags,
                enable,
                Take::one(take),
                beat,
                bytes,
                "tracked_eq",
            ),
        );
        for k in plus_offsets(bytes) {
            output(
                &format!("want_plus{k}"),
                ge_bound_flags(bound + k as u64, bytes),
            );
            output(
                &format!("got_plus{k}"),
                ge_bound_flags_plus(bound, k, bytes),
            );
        }
    })
    .unwrap()
}

/// The constants `ge_bound_flags_plus` is checked with: below, at and past one and two beats.
fn plus_offsets(bytes: u32) -> Vec<u32> {
    let mut k = vec![0, 6, bytes - 1, bytes, 2 * bytes + 1];
    k.sort_unstable();
    k.dedup();
    k
}

#[test]
fn tracked_mask_equals_the_compared_mask() {
    for bits in [8u32, 64, 512] {
        let Some(d) = dut(&pair(bits)) else { return };
        lint_clean(&d.gen);
        let bytes = bits / 8;
        let mut sim = d.model.instance();
        reset(&mut sim);
        let (pb, pt, pe, pw, pg) = (
            sim.port("bound").unwrap(),
            sim.port("take").unwrap(),
            sim.port("beat").unwrap(),
            sim.port("want").unwrap(),
            sim.port("got").unwrap(),
        );
        let (pen, pwe, pge) = (
            sim.port("enable").unwrap(),
            sim.port("want_eq").unwrap(),
            sim.port("got_eq").unwrap(),
        );
        let plus: Vec<_> = plus_offsets(bytes)
            .into_iter()
            .map(|k| {
                let want = sim.port(&format!("want_plus{k}")).unwrap();
                (k, want, sim.port(&format!("got_plus{k}")).unwrap())
            })
            .collect();
        let mut hits = 0u32;
        let mut rng = StdRng::seed_from_u64(bits as u64);
        let mut started = false;
        let mut checked = 0u32;
        for cycle in 0..20_000u32 {
            // Bounds near the first beats, anywhere in a jumbo frame, and at the 16-bit edge.
            let bound: u64 = match rng.gen_range(0..4) {
                0 => rng.gen_range(0..4 * bytes as u64),
                1 => rng.gen_range(0..9100),
                2 => rng.gen_range(0xFF00..=0xFFFF),
                _ => rng.gen_range(0..=0xFFFF),
            };
            let take = rng.gen_bool(0.05);
            let beat = rng.gen_bool(0.7);
            sim.set(pb, bound);
            sim.set_bool(pt, take);
            sim.set_bool(pe, beat);
            sim.set_bool(pen, rng.gen_bool(0.8));
            sim.eval();
            for &(k, pwant, pgot) in &plus {
                if bound + u64::from(k) > 0xFFFF {
                    continue;
                }
                let (want, got) = (sim.get_big(pwant), sim.get_big(pgot));
                assert_eq!(
                    got, want,
                    "{bits} bits, bound {bound}: flags of bound + {k} {got:x}, want {want:x}"
                );
            }
            if started {
                let (want, got) = (sim.get_big(pw), sim.get_big(pg));
                assert_eq!(
                    got, want,
                    "{bits} bits, cycle {cycle}: tracked {got:x}, compared {want:x}"
                );
                let (want, got) = (sim.get_big(pwe), sim.get_big(pge));
                assert_eq!(
                    got, want,
                    "{bits} bits, cycle {cycle}: tracked eq {got:x}, compared eq {want:x}"
                );
                hits += u32::from(want != 0u32.into());
                checked += 1;
            }
            sim.cycle();
            started |= take;
        }
        assert!(
            checked > 10_000,
            "{bits} bits: only {checked} cycles checked"
        );
        assert!(
            hits > 100,
            "{bits} bits: the bound's byte was seen in only {hits} beats"
        );
    }
}
