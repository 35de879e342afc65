//! The steering table (`tunnel_steering`) against `nicgen_model::tunnel::Steering`: random
//! writes (valid and invalid entries, indices past the table) and lookups (VXLAN, NVGRE, no
//! tunnel) in every cycle, with ids from a small pool so that keys hit, miss and are written
//! twice. Each result, `LATENCY` (3) cycles after its key, must be what the model's table built from the
//! valid entries (lowest entry last, so it wins) answers, with the writes up to the cycle
//! before the key. Replayed on Icarus.

use nicgen_edsl::Shape;
use nicgen_hdl::overlay::tunnel_steering::LATENCY;
use nicgen_hdl::overlay::{tunnel_steering, SteerCfg, SteerKey, SteerResult};
use nicgen_model::tunnel::{Steering, TunnelKind};
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// An entry as the test tracks it: (kind, id, queue).
type Entry = (u32, u32, u32);

/// The tunnel of a key's `kind` (none for 0: not a tunnel, which never hits).
fn kind_of(k: u32) -> Option<TunnelKind> {
    TunnelKind::from_code(k as u8).filter(|k| *k != TunnelKind::None)
}

/// The model's table of the valid entries, the lowest entry inserted last.
fn model_of(entries: &[Option<Entry>]) -> Steering {
    let mut s = Steering::new();
    for &(kind, id, queue) in entries.iter().rev().flatten() {
        s.insert(
            kind_of(kind).expect("entries hold a tunnel kind"),
            id,
            queue,
        );
    }
    s
}

#[test]
fn steering_matches_the_model() {
    for (entries, queue_bits) in [(16u32, 6u32), (12, 3), (1, 1)] {
        let cfg = SteerCfg {
            entries,
            queue_bits,
        };
        let def = tunnel_steering(&cfg).unwrap();
        let Some(d) = dut(&def) else {
            return;
        };
        lint_clean(&d.gen);
        let mut sim = recording_sim(&d);
        let port = |n: &str| sim.port(n).unwrap();
        let (wr_en, wr_index, wr_valid, wr_kind, wr_id, wr_queue) = (
            port("wr_en"),
            port("wr_index"),
            port("wr_valid"),
            port("wr_kind"),
            port("wr_id"),
            port("wr_queue"),
        );
        let (lk_data, lk_valid, res_data, res_valid) = (
            port("lookup_tdata"),
            port("lookup_tvalid"),
            port("result_tdata"),
            port("result_tvalid"),
        );
        let index_max = (entries as u64).next_power_of_two().max(2) - 1;
        let mut rng = StdRng::seed_from_u64(0x57ee + entries as u64);
        let mut table: Vec<Option<Entry>> = vec![None; entries as usize];
        // Expected results, by the cycle they are due.
        let mut due: std::collections::VecDeque<(u64, Option<u32>)> = Default::default();
        let (mut hits, mut misses) = (0, 0);
        for cycle in 0..20_000u64 {
            let write = rng.gen_bool(0.3);
            let (index, valid) = (rng.gen_range(0..=index_max), rng.gen_bool(0.8));
            let entry = (
                rng.gen_range(1..=2u32),
                rng.gen_range(0..6u32) << 20,
                rng.gen_range(0..1u32 << queue_bits),
            );
            sim.set(wr_en, write.into());
            sim.set(wr_index, index);
            sim.set(wr_valid, valid.into());
            sim.set(wr_kind, entry.0.into());
            sim.set(wr_id, entry.1.into());
            sim.set(wr_queue, entry.2.into());
            let look = rng.gen_bool(0.7);
            let key = (rng.gen_range(0..=2u32), rng.gen_range(0..6u32) << 20);
            sim.set(lk_valid, look.into());
            sim.set_bytes_le(
                lk_data,
                &SteerKey::shape().encode(&SteerKey {
                    kind: key.0.into(),
                    id: key.1.into(),
                }),
            );
            if look {
                // The key sees the writes of the cycles before it.
                let want = kind_of(key.0).and_then(|k| model_of(&table).lookup(k, key.1));
                due.push_back((cycle + LATENCY, want));
            }
            // `cycle` samples the outputs before its edge: the results of this cycle.
            sim.cycle();
            let got_valid = sim.get_bool(res_valid);
            match due.front() {
                Some(&(c, want)) if c == cycle => {
                    due.pop_front();
                    assert!(
                        got_valid,
                        "cycle {cycle}: no result for the key of cycle {}",
                        c - 2
                    );
                    let r = SteerResult::shape(queue_bits).decode(&sim.get_bytes_le(res_data));
                    let got = (r.hit != 0).then_some(r.queue as u32);
                    assert_eq!(got, want, "entries {entries}, cycle {cycle}: {table:?}");
                    if got.is_some() {
                        hits += 1;
                    } else {
                        misses += 1;
                    }
                }
                _ => assert!(!got_valid, "cycle {cycle}: a result without a key"),
            }
            if write && index < entries as u64 {
                table[index as usize] = valid.then_some(entry);
            }
        }
        assert!(
            hits > 300 && misses > 300,
            "entries {entries}: hits {hits}, misses {misses}"
        );
        icarus_agrees(&d, &sim.take_recording());
    }
}
