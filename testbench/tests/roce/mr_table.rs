//! Differential tests of `mr_table` (the RoCE memory-region table) against
//! `nicgen_model::rdma::MrTable`, at 16 (one bank), 256 and 4096 entries (two block-RAM banks),
//! with `verilator -Wall` clean and the 16-entry run replayed on Icarus.
//!
//! Writes register (a new tag in an empty or a used slot), re-register and deregister, on a
//! small pool of slots (the first, the last, the middle and a few others) so that requests hit.
//! Requests come in every cycle for a third of a run and at random otherwise: keys that hit,
//! miss by tag, name an empty slot or a slot past the table; the region's PD or another;
//! ranges inside, the whole region, straddling its start or its end, zero-length at its end
//! and one past it, `va + len` over 2^64, anywhere; regions whose end wraps, that end at
//! 2^64 - 1, of length 0; every right set and needed. In a twentieth of the cycles the
//! request names the slot written in the same cycle, which it must see (the module's write
//! rule). Each result, due `LATENCY` cycles after its request, must be the model's verdict with
//! the writes up to the request's cycle; no result comes without a request; every error code,
//! and a verdict changed by the same cycle's write, occur often in every run. After reset the
//! table is empty, `busy` for `entries` cycles, and ignores writes meanwhile.

use nicgen_edsl::Shape;
use nicgen_hdl::roce::mr_table::{
    err, ACCESS_LOCAL_WRITE, ACCESS_REMOTE_ATOMIC, ACCESS_REMOTE_READ, ACCESS_REMOTE_WRITE, LATENCY,
};
use nicgen_hdl::roce::{mr_table, MrReq, MrRes, MrTableCfg};
use nicgen_model::rdma::{Access, AccessError, MrTable};
use nicgen_tb::PortId;
use nicgen_tb::Sim;
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

/// The table's ports in the simulation.
struct Ports {
    wr_en: PortId,
    wr_index: PortId,
    wr_valid: PortId,
    wr_tag: PortId,
    wr_pd: PortId,
    wr_va: PortId,
    wr_len: PortId,
    wr_access: PortId,
    req_data: PortId,
    req_valid: PortId,
    res_data: PortId,
    res_valid: PortId,
    busy: PortId,
}

impl Ports {
    fn of(sim: &Sim) -> Ports {
        let p = |n: &str| sim.port(n).unwrap();
        Ports {
            wr_en: p("wr_en"),
            wr_index: p("wr_index"),
            wr_valid: p("wr_valid"),
            wr_tag: p("wr_tag"),
            wr_pd: p("wr_pd"),
            wr_va: p("wr_va"),
            wr_len: p("wr_len"),
            wr_access: p("wr_access"),
            req_data: p("s_axis_req_tdata"),
            req_valid: p("s_axis_req_tvalid"),
            res_data: p("m_axis_res_tdata"),
            res_valid: p("m_axis_res_tvalid"),
            busy: p("busy"),
        }
    }
}

/// A write of one slot: `Some` registers the region, `None` deregisters.
#[derive(Clone, Copy, Debug)]
struct Write {
    index: u32,
    region: Option<Region>,
}

/// A region as written: tag, PD, base, length, rights.
#[derive(Clone, Copy, Debug)]
struct Region {
    tag: u8,
    pd: u32,
    va: u64,
    len: u64,
    access: u8,
}

/// A check request.
#[derive(Clone, Copy, Debug)]
struct Req {
    key: u32,
    pd: u32,
    va: u64,
    len: u32,
    need: u8,
    remote: bool,
    id: u8,
}

/// A verdict: (ok, error code, remote, id).
type Verdict = (bool, u32, bool, u8);

fn code(r: &Result<nicgen_model::rdma::Mr, AccessError>) -> u32 {
    match r {
        Ok(_) => err::NONE,
        Err(AccessError::BadKey) => err::BAD_KEY,
        Err(AccessError::WrongPd) => err::WRONG_PD,
        Err(AccessError::OutOfBounds) => err::OUT_OF_BOUNDS,
        Err(AccessError::NoPermission) => err::NO_PERMISSION,
    }
}

/// The model's verdict on `q`.
fn verdict(t: &MrTable, q: &Req) -> Verdict {
    let r = t.check(q.key, q.pd, q.va, u64::from(q.len), Access(q.need));
    (r.is_ok(), code(&r), q.remote, q.id)
}

fn apply(t: &mut MrTable, w: &Write) {
    match w.region {
        Some(r) => {
            t.register(w.index, r.tag, r.pd, r.va, r.len, Access(r.access));
        }
        None => t.deregister(w.index),
    }
}

/// Drives one cycle's inputs: a write or none, a request or none.
fn drive(sim: &mut Sim, p: &Ports, w: Option<&Write>, q: Option<&Req>) {
    sim.set_bool(p.wr_en, w.is_some());
    if let Some(w) = w {
        let r = w.region.unwrap_or(Region {
            tag: 0,
            pd: 0,
            va: 0,
            len: 0,
            access: 0,
        });
        sim.set(p.wr_index, w.index.into());
        sim.set_bool(p.wr_valid, w.region.is_some());
        sim.set(p.wr_tag, r.tag.into());
        sim.set(p.wr_pd, r.pd.into());
        sim.set(p.wr_va, r.va);
        sim.set(p.wr_len, r.len);
        sim.set(p.wr_access, r.access.into());
    }
    sim.set_bool(p.req_valid, q.is_some());
    if let Some(q) = q {
        let v = MrReq {
            key: q.key.into(),
            pd: q.pd.into(),
            va: q.va.into(),
            len: q.len.into(),
            need: q.need.into(),
            remote: q.remote.into(),
            id: q.id.into(),
        };
        sim.set_bytes_le(p.req_data, &MrReq::shape().encode(&v));
    }
}

/// The result the table shows in the cycle just run, if any.
fn result(sim: &Sim, p: &Ports) -> Option<Verdict> {
    sim.get_bool(p.res_valid).then(|| {
        let r = MrRes::shape().decode(&sim.get_bytes_le(p.res_data));
        (r.ok == 1, r.err as u32, r.remote == 1, r.id as u8)
    })
}

/// A random region: small or anywhere, ending at 2^64 - 1 or wrapping past it, or empty.
fn random_region(rng: &mut StdRng) -> Region {
    let len = match rng.gen_range(0..6) {
        0 => 0,
        1 => rng.gen_range(1..=64),
        2 => rng.gen_range(0..1u64 << 40),
        _ => rng.gen_range(1..=1 << 16),
    };
    let va = match rng.gen_range(0..8) {
        0 => u64::MAX - len,
        1 => u64::MAX - rng.gen_range(0..=len),
        2 => rng.gen(),
        3 => 0,
        _ => u64::from(rng.gen::<u32>()) << 12,
    };
    Region {
        tag: rng.gen(),
        pd: rng.gen_range(1..=3),
        va,
        len,
        access: rng.gen_range(0..16),
    }
}

/// A random request, mostly about a slot of `pool` as the model holds it.
fn random_req(rng: &mut StdRng, t: &MrTable, pool: &[u32], entries: u32) -> Req {
    let index = pool[rng.gen_range(0..pool.len())];
    let held = t.slot(index).copied();
    let tag: u8 = rng.gen();
    let key = match (rng.gen_range(0..10), held) {
        // A slot past the table, or an arbitrary key.
        (0, _) => (rng.gen_range(entries..1 << 24) << 8) | u32::from(tag),
        (1, _) => rng.gen(),
        // The region's key with another tag.
        (2, Some(m)) => m.lkey ^ rng.gen_range(1..=255),
        (_, Some(m)) => m.lkey,
        (_, None) => (index << 8) | u32::from(tag),
    };
    let (base, len) = held.map_or((rng.gen(), rng.gen_range(0..4096)), |m| (m.va, m.len));
    let end = base.wrapping_add(len);
    let small = |rng: &mut StdRng| rng.gen_range(0..=16u64);
    let (va, l) = match rng.gen_range(0..9) {
        // Inside, and the whole region.
        0 | 1 => {
            let off = rng.gen_range(0..=len);
            (
                base.wrapping_add(off),
                rng.gen_range(0..=(len - off).min(1 << 20)),
            )
        }
        2 => (base, len.min(u64::from(u32::MAX))),
        // Straddling the start, the end; zero-length at the end and one past it.
        3 => {
            let k = 1 + small(rng);
            (base.wrapping_sub(k), k + small(rng))
        }
        4 => {
            let k = small(rng);
            (end.wrapping_sub(k), k + small(rng))
        }
        5 => (end.wrapping_add(rng.gen_range(0..=1)), 0),
        // Past 2^64.
        6 => {
            let k = small(rng);
            (u64::MAX - k, k + 1 + rng.gen_range(0..1u64 << 31))
        }
        _ => (rng.gen(), rng.gen_range(0..1u64 << 32)),
    };
    let need = match held {
        Some(m) if rng.gen_bool(0.5) => m.access.0 & rng.gen::<u8>(),
        _ => rng.gen_range(0..16),
    };
    let pd = match held {
        Some(m) if rng.gen_bool(0.8) => m.pd,
        _ => rng.gen_range(0..=3),
    };
    Req {
        key,
        pd,
        va,
        len: l as u32,
        need,
        remote: rng.gen(),
        id: rng.gen(),
    }
}

/// The table at `entries`; `None` without Verilator (its lint: `generated_verilog_is_lint_clean`).
fn unit(entries: u32) -> Option<Dut> {
    dut(&mr_table(&MrTableCfg { entries }).unwrap().into_def())
}

/// Runs `cycles` cycles of random writes and requests from `seed` after reset, checking each
/// result at its due cycle; returns how often each error code and a verdict that the same
/// cycle's write changed occurred.
fn run(sim: &mut Sim, entries: u32, seed: u64, cycles: u64) -> ([u32; 5], u32) {
    let p = Ports::of(sim);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pool: Vec<u32> = vec![0, 1, entries / 2, entries - 2, entries - 1];
    while pool.len() < 10 {
        pool.push(rng.gen_range(0..entries));
    }
    let mut model = MrTable::new(entries as usize);
    let mut due: VecDeque<(u64, Verdict)> = VecDeque::new();
    let (mut codes, mut same_cycle) = ([0u32; 5], 0);
    for cycle in 0..cycles {
        let every = cycle < cycles / 3;
        let w = rng.gen_bool(0.25).then(|| Write {
            index: pool[rng.gen_range(0..pool.len())],
            region: rng.gen_bool(0.8).then(|| random_region(&mut rng)),
        });
        let mut q =
            (every || rng.gen_bool(0.6)).then(|| random_req(&mut rng, &model, &pool, entries));
        // A request about the slot being written in the same cycle.
        if let (Some(w), Some(q)) = (&w, &mut q) {
            if rng.gen_bool(0.2) {
                q.key = match w.region {
                    Some(r) => MrTable::key(w.index, r.tag),
                    None => (q.key & 0xff) | (w.index << 8),
                };
                if let Some(r) = w.region {
                    q.pd = r.pd;
                    q.va = r.va;
                    q.len = r.len.min(64) as u32;
                    q.need = r.access;
                }
            }
        }
        drive(sim, &p, w.as_ref(), q.as_ref());
        sim.cycle();
        // Writes while the table clears itself are ignored.
        let busy = sim.get_bool(p.busy);
        if let Some(q) = &q {
            let before = verdict(&model, q);
            if let (Some(w), false) = (&w, busy) {
                apply(&mut model, w);
            }
            let want = verdict(&model, q);
            same_cycle += u32::from(want != before);
            codes[want.1 as usize] += 1;
            due.push_back((cycle + LATENCY, want));
        } else if let (Some(w), false) = (&w, busy) {
            apply(&mut model, w);
        }
        let got = result(sim, &p);
        match due.front() {
            Some(&(c, want)) if c == cycle => {
                due.pop_front();
                assert_eq!(
                    got,
                    Some(want),
                    "entries {entries}, seed {seed:#x}, cycle {cycle}: the request of cycle {}",
                    c - LATENCY
                );
            }
            _ => assert_eq!(got, None, "cycle {cycle}: a result without a request"),
        }
    }
    (codes, same_cycle)
}

#[test]
fn checks_match_the_model() {
    for (entries, cycles) in [(16u32, 30_000u64), (256, 30_000), (4096, 20_000)] {
        let Some(d) = unit(entries) else {
            return;
        };
        let mut sim = recording_sim(&d);
        let seed = 0x3e70 + u64::from(entries);
        let (codes, same_cycle) = run(&mut sim, entries, seed, cycles);
        for (c, n) in codes.iter().enumerate() {
            assert!(
                *n > 300,
                "entries {entries}: code {c} only {n} times: {codes:?}"
            );
        }
        assert!(
            same_cycle > 100,
            "entries {entries}: the same cycle's write changed {same_cycle} verdicts"
        );
        if entries == 16 {
            icarus_agrees(&d, &sim.take_recording());
        }
    }
}

/// One cycle of `drive`; the result shown in it goes to `got`; returns `busy`.
fn step(
    sim: &mut Sim,
    p: &Ports,
    w: Option<&Write>,
    q: Option<&Req>,
    got: &mut Vec<Verdict>,
) -> bool {
    drive(sim, p, w, q);
    sim.cycle();
    got.extend(result(sim, p));
    sim.get_bool(p.busy)
}

#[test]
fn reset_empties_the_table_and_busy_lasts_one_sweep() {
    let entries = 16;
    let Some(d) = unit(entries) else {
        return;
    };
    let mut sim = d.model.instance();
    let p = Ports::of(&sim);
    let write = Write {
        index: 5,
        region: Some(Region {
            tag: 0x42,
            pd: 1,
            va: 0x1000,
            len: 0x100,
            access: 15,
        }),
    };
    let req = Req {
        key: MrTable::key(5, 0x42),
        pd: 1,
        va: 0x1000,
        len: 8,
        need: 4,
        remote: true,
        id: 9,
    };
    let bad = (false, err::BAD_KEY, true, 9);
    let good = (true, err::NONE, true, 9);
    // The second round starts with slot 5 registered: the sweep must clear it.
    for round in 0..2 {
        reset(&mut sim);
        let mut got = Vec::new();
        for c in 0..entries {
            let busy = step(&mut sim, &p, Some(&write), Some(&req), &mut got);
            assert!(busy, "round {round}: not busy in cycle {c} of the sweep");
        }
        // The writes of the sweep were ignored: the key misses until written again.
        assert!(!step(&mut sim, &p, None, Some(&req), &mut got));
        step(&mut sim, &p, Some(&write), None, &mut got);
        step(&mut sim, &p, None, Some(&req), &mut got);
        for _ in 0..LATENCY {
            step(&mut sim, &p, None, None, &mut got);
        }
        let mut want = vec![bad; entries as usize + 1];
        want.push(good);
        assert_eq!(got, want, "round {round}");
    }
}

#[test]
fn the_access_bits_are_the_models() {
    for (hw, model) in [
        (ACCESS_LOCAL_WRITE, Access::LOCAL_WRITE),
        (ACCESS_REMOTE_WRITE, Access::REMOTE_WRITE),
        (ACCESS_REMOTE_READ, Access::REMOTE_READ),
        (ACCESS_REMOTE_ATOMIC, Access::REMOTE_ATOMIC),
    ] {
        assert_eq!(hw, u32::from(model.0));
    }
}

#[test]
fn impossible_sizes_are_refused_with_a_reason() {
    for entries in [0, 8, 100, 8192] {
        let Err(e) = mr_table(&MrTableCfg { entries }) else {
            panic!("entries {entries} was built");
        };
        assert!(
            e.mentions(&format!("entries {entries}")) && e.mentions("power of two"),
            "{e}"
        );
    }
}

#[test]
fn generated_verilog_is_lint_clean() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for entries in [16, 256, 2048, 4096] {
        let def = mr_table(&MrTableCfg { entries }).unwrap();
        lint_clean(&nicgen_edsl::generate(&def, &Default::default()));
    }
}
