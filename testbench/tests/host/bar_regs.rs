//! `bar_regs` against the register-file model (`nicgen_model::regfile`): reads and writes of
//! every register element of the map and of unmapped addresses, partial `wstrb`, with random
//! idle on `aw`, `w` and `ar` and random backpressure on `b` and `r`, random values on the
//! `ro_*` inputs (changed whenever no read is in flight). Checked: every response and read
//! datum, every `Wo` strobe (data and index) and `Rw` write pulse in order (exactly one per
//! write that has an effect, no later than its response), the `Rw` outputs in every cycle,
//! `Ro64` latching, the AXI hold rules on `b` and `r`; Icarus replays a shorter run;
//! `verilator -Wall` is clean.

use nicgen_hdl::host::bar_regs::{bar_regs, BarCfg, BuildInfo, HostParams};
use nicgen_hdl::host::{regmap, BAR_BITS};
use nicgen_hdl::Preset;
use nicgen_model::regfile::{Access, Effect, RegFile, RegSpec, Resp};
use nicgen_tb::{PortId, Sim};
use nicgen_tests::*;
use num_bigint::BigUint;
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
use std::collections::VecDeque;

/// The map as the model's register list, in map order (`block.REG`).
fn specs() -> Vec<RegSpec> {
    let mut v = Vec::new();
    for b in regmap::BLOCKS {
        for r in b.regs {
            v.push(RegSpec {
                name: format!("{}.{}", b.name, r.name),
                addr: b.base + r.offset,
                access: match r.access {
                    regmap::Access::Ro => Access::Ro,
                    regmap::Access::Ro64 => Access::Ro64,
                    regmap::Access::Rw => Access::Rw,
                    regmap::Access::Wo => Access::Wo,
                },
                count: r.count,
                reset: r.reset,
            });
        }
    }
    v
}

/// The constant `cfg` gives register `path` (`block.REG`), if any.
fn const_of<'a>(cfg: &'a BarCfg, path: &str) -> Option<&'a [u32]> {
    regmap::RegRef::find(path).and_then(|r| cfg.get(r))
}

/// The id block of `nic64` with a made-up commit, so that every constant arm is exercised
/// and the Verilog (and so the cached simulator) does not change with each commit.
fn cfg() -> BarCfg {
    BarCfg::id(
        &Preset::builtin("nic64").unwrap(),
        &HostParams {
            queues: 64,
            eqs: 8,
            mrs: 16,
            log_max_wq: 12,
            caps: vec!["csum", "rss", "vlan", "loopback"],
        },
        &BuildInfo {
            version: [0, 1, 0],
            git_hash: std::array::from_fn(|i| 0xA0 ^ (i as u8 * 13)),
            git_dirty: true,
        },
    )
    .unwrap()
}

/// A register's ports, by access kind.
enum Ports {
    Const,
    Ro(PortId),
    Rw {
        q: PortId,
        we: PortId,
    },
    Wo {
        we: PortId,
        data: PortId,
        index: Option<PortId>,
    },
}

fn ports(sim: &Sim, specs: &[RegSpec], cfg: &BarCfg) -> Vec<Ports> {
    specs
        .iter()
        .map(|s| {
            let base = s.name.replace('.', "_").to_lowercase();
            let p = |n: String| sim.port(&n).unwrap_or_else(|e| panic!("{n}: {e}"));
            match s.access {
                Access::Ro if const_of(cfg, &s.name).is_some() => Ports::Const,
                Access::Ro | Access::Ro64 => Ports::Ro(p(format!("ro_{base}"))),
                Access::Rw => Ports::Rw {
                    q: p(format!("rw_{base}")),
                    we: p(format!("rw_{base}_we")),
                },
                Access::Wo => Ports::Wo {
                    we: p(format!("wo_{base}_we")),
                    data: p(format!("wo_{base}_data")),
                    index: (s.count > 1).then(|| p(format!("wo_{base}_index"))),
                },
            }
        })
        .collect()
}

/// `n` 32-bit words of a port, element 0 first.
fn words(sim: &Sim, p: PortId, n: u32) -> Vec<u32> {
    let mut d = sim.get_big(p).to_u32_digits();
    d.resize(n as usize, 0);
    d
}

struct Axil {
    awaddr: PortId,
    awvalid: PortId,
    awready: PortId,
    wdata: PortId,
    wstrb: PortId,
    wvalid: PortId,
    wready: PortId,
    bresp: PortId,
    bvalid: PortId,
    bready: PortId,
    araddr: PortId,
    arvalid: PortId,
    arready: PortId,
    rdata: PortId,
    rresp: PortId,
    rvalid: PortId,
    rready: PortId,
}

impl Axil {
    fn new(sim: &Sim) -> Axil {
        let p = |n: &str| sim.port(&format!("s_axil_{n}")).unwrap();
        Axil {
            awaddr: p("awaddr"),
            awvalid: p("awvalid"),
            awready: p("awready"),
            wdata: p("wdata"),
            wstrb: p("wstrb"),
            wvalid: p("wvalid"),
            wready: p("wready"),
            bresp: p("bresp"),
            bvalid: p("bvalid"),
            bready: p("bready"),
            araddr: p("araddr"),
            arvalid: p("arvalid"),
            arready: p("arready"),
            rdata: p("rdata"),
            rresp: p("rresp"),
            rvalid: p("rvalid"),
            rready: p("rready"),
        }
    }
}

/// One write: byte address, data, strobes.
type Write = (u32, u32, u8);

/// The transactions of one run: writes and reads (issued on their own channels).
struct Traffic {
    writes: Vec<Write>,
    reads: Vec<u32>,
}

/// An address with no register (inside a block's hole or outside every block).
fn unmapped(rng: &mut StdRng, model: &RegFile) -> u32 {
    loop {
        let a = if rng.gen_bool(0.5) {
            let b = &regmap::BLOCKS[rng.gen_range(0..regmap::BLOCKS.len())];
            b.base + rng.gen_range(0..b.span)
        } else {
            rng.gen_range(0..1u32 << BAR_BITS)
        };
        if model.decode(a).is_none() {
            return a;
        }
    }
}

/// An address of a random element of a random register (either dword of an `Ro64`).
fn element(rng: &mut StdRng, specs: &[RegSpec]) -> u32 {
    let s = &specs[rng.gen_range(0..specs.len())];
    s.addr + 4 * rng.gen_range(0..s.dwords())
}

fn strobes(rng: &mut StdRng) -> u8 {
    if rng.gen_bool(0.85) {
        0xF
    } else {
        rng.gen_range(0..0xF)
    }
}

/// With `sweep`, one write and one read of every dword of every register; then `n` random
/// transactions (registers, `Ro64` low-then-high pairs, unmapped addresses, random low
/// address bits), shuffled; and a write and a read of one `Rw` element at the same index of
/// both lists every 20 transactions.
fn traffic(seed: u64, sweep: bool, n: usize, model: &RegFile) -> Traffic {
    let mut rng = StdRng::seed_from_u64(seed);
    let specs = model.specs();
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    if sweep {
        for s in specs {
            for d in 0..s.dwords() {
                writes.push(vec![(s.addr + 4 * d, rng.gen(), strobes(&mut rng))]);
                reads.push(vec![s.addr + 4 * d]);
            }
        }
    }
    for _ in 0..n {
        let k = rng.gen_range(0..100);
        let addr = match k {
            0..=59 => element(&mut rng, specs),
            60..=74 => unmapped(&mut rng, model),
            _ => rng.gen_range(0..1u32 << BAR_BITS),
        } | if rng.gen_bool(0.2) {
            rng.gen_range(0..4)
        } else {
            0
        };
        if rng.gen_bool(0.5) {
            writes.push(vec![(addr, rng.gen(), strobes(&mut rng))]);
        } else if rng.gen_bool(0.2) {
            let r64: Vec<&RegSpec> = specs.iter().filter(|s| s.access == Access::Ro64).collect();
            let s = r64[rng.gen_range(0..r64.len())];
            let e = s.addr + 8 * rng.gen_range(0..s.count);
            reads.push(vec![e, e + 4]);
        } else {
            reads.push(vec![addr]);
        }
    }
    // Shuffle whole groups (a low-then-high pair stays together).
    writes.shuffle(&mut rng);
    reads.shuffle(&mut rng);
    let mut t = Traffic {
        writes: writes.into_iter().flatten().collect(),
        reads: reads.into_iter().flatten().collect(),
    };
    // Writes and reads of one Rw element at the same place in both lists, so that they race.
    let rw: Vec<&RegSpec> = specs.iter().filter(|s| s.access == Access::Rw).collect();
    for _ in 0..t.writes.len().min(t.reads.len()) / 20 {
        let i = rng.gen_range(0..t.writes.len().min(t.reads.len()));
        let s = rw[rng.gen_range(0..rw.len())];
        let a = s.addr + 4 * rng.gen_range(0..s.count);
        t.writes[i] = (a, rng.gen(), 0xF);
        t.reads[i] = a;
    }
    t
}

/// What a run covered (so the test fails if it stops exercising something).
#[derive(Default, Debug)]
struct Coverage {
    write_resps: [usize; 4],
    read_resps: [usize; 4],
    effects: Vec<usize>,
    /// `Ro64` high reads whose latched value differed from the input at that time.
    stale_high_reads: usize,
    /// Reads of `Rw` elements with a write to them in flight (either value accepted).
    racing_reads: usize,
    /// Writes whose `aw` came first, whose `w` came first, whose halves came together.
    first: [usize; 3],
    cycles: u64,
}

/// The hold rule of a response channel (`b`, `r`): once valid without ready, valid and the
/// payload stay until ready.
struct Held {
    name: &'static str,
    waiting: Option<(u64, u64)>,
}

impl Held {
    fn new(name: &'static str) -> Held {
        Held {
            name,
            waiting: None,
        }
    }

    /// This cycle's sample; the payload when it transfers.
    fn observe(
        &mut self,
        valid: bool,
        ready: bool,
        payload: (u64, u64),
    ) -> Result<Option<(u64, u64)>, String> {
        if let Some(w) = self.waiting.take() {
            if !valid || payload != w {
                return Err(format!(
                    "{} changed before ready (valid {valid}, {payload:x?}, was {w:x?})",
                    self.name
                ));
            }
        }
        if valid && !ready {
            self.waiting = Some(payload);
        }
        Ok((valid && ready).then_some(payload))
    }
}

struct Read {
    addr: u32,
    /// `Rw` values the element held since the `ar` handshake (any may be returned).
    window: Vec<u32>,
}

/// Run `t` through the DUT with the given timing knobs; panic (naming the seed) on the first
/// difference from the model.
fn run(sim: &mut Sim, cfg: &BarCfg, t: &Traffic, k: Knobs) -> Coverage {
    let seed = k.seed;
    let specs = specs();
    let mut model = RegFile::new(specs.clone(), BAR_BITS);
    let regs = ports(sim, &specs, cfg);
    let ax = Axil::new(sim);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xBA5);
    let mut cov = Coverage {
        effects: vec![0; specs.len()],
        ..Coverage::default()
    };

    // Ro input values (constants stay; Ro64 as 64-bit values).
    let mut ro: Vec<Vec<u64>> = specs
        .iter()
        .map(|s| match const_of(cfg, &s.name) {
            Some(v) => v.iter().map(|x| u64::from(*x)).collect(),
            None => vec![0; s.count as usize],
        })
        .collect();
    let apply_ro = |sim: &mut Sim, ro: &[Vec<u64>], i: usize| {
        if let Ports::Ro(p) = regs[i] {
            let mut digits = Vec::new();
            for v in &ro[i] {
                digits.push(*v as u32);
                if specs[i].access == Access::Ro64 {
                    digits.push((v >> 32) as u32);
                }
            }
            sim.set_big(p, &BigUint::from_slice(&digits));
        }
    };
    let mut rw_now: Vec<Vec<u32>> = specs
        .iter()
        .map(|s| vec![s.reset; s.count as usize])
        .collect();

    let (mut aw_next, mut w_next, mut ar_next) = (0usize, 0usize, 0usize);
    let (mut aw_on, mut w_on, mut ar_on) = (false, false, false);
    let (mut aw_done, mut w_done, mut modeled) = (0usize, 0usize, 0usize);
    let mut b_done = 0usize;
    // Expected effects in order, and per write the total expected through it.
    let mut exp_effects: VecDeque<Effect> = VecDeque::new();
    let mut exp_b: VecDeque<(Resp, usize)> = VecDeque::new();
    let (mut effects_expected, mut effects_seen) = (0usize, 0usize);
    let mut reads: VecDeque<Read> = VecDeque::new();
    let mut r_done = 0usize;
    let mut b_chan = Held::new("b");
    let mut r_chan = Held::new("r");
    let mut ro_due = true;

    let chance = |rng: &mut StdRng, p: f64| p > 0.0 && rng.gen_bool(p);
    let limit = 40 * (t.writes.len() + t.reads.len()) as u64 + 1000;
    while b_done < t.writes.len() || r_done < t.reads.len() {
        let c = sim.cycles();
        assert!(
            c < limit,
            "seed {seed}: stalled (b {b_done}/{}, r {r_done}/{})",
            t.writes.len(),
            t.reads.len()
        );
        // ---- Drive. A valid, once raised, holds with its payload until its handshake.
        if !aw_on && aw_next < t.writes.len() && !chance(&mut rng, k.idle) {
            aw_on = true;
            sim.set(ax.awaddr, u64::from(t.writes[aw_next].0));
        }
        if !w_on && w_next < t.writes.len() && !chance(&mut rng, k.idle) {
            w_on = true;
            sim.set(ax.wdata, u64::from(t.writes[w_next].1));
            sim.set(ax.wstrb, u64::from(t.writes[w_next].2));
        }
        // Ro inputs change only while no read is in flight (a read samples them some time
        // between its `ar` handshake and its `rvalid`); now and then `ar` pauses for that.
        ro_due |= rng.gen_bool(0.05);
        if ro_due && reads.is_empty() {
            ro_due = false;
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..specs.len());
                if matches!(regs[i], Ports::Ro(_)) {
                    for v in ro[i].iter_mut() {
                        *v = if specs[i].access == Access::Ro64 {
                            rng.gen()
                        } else {
                            u64::from(rng.gen::<u32>())
                        };
                    }
                    apply_ro(sim, &ro, i);
                }
            }
        }
        if !ar_on && !ro_due && ar_next < t.reads.len() && !chance(&mut rng, k.idle) {
            ar_on = true;
            sim.set(ax.araddr, u64::from(t.reads[ar_next]));
        }
        sim.set_bool(ax.awvalid, aw_on);
        sim.set_bool(ax.wvalid, w_on);
        sim.set_bool(ax.arvalid, ar_on);
        sim.set_bool(ax.bready, !chance(&mut rng, k.backpressure));
        sim.set_bool(ax.rready, !chance(&mut rng, k.backpressure));
        sim.cycle();

        // ---- Observe (pre-edge samples of this cycle).
        let fail = |what: String| -> ! { panic!("seed {seed}, cycle {c}: {what}") };
        let aw_hs = aw_on && sim.get_bool(ax.awready);
        let w_hs = w_on && sim.get_bool(ax.wready);
        // Which half of a write came first (index 0: aw, 1: w, 2: together).
        if aw_hs && w_hs && aw_done == w_done {
            cov.first[2] += 1;
        } else if aw_hs && aw_done == w_done {
            cov.first[0] += 1;
        } else if w_hs && aw_done == w_done {
            cov.first[1] += 1;
        }
        if aw_hs {
            aw_on = false;
            aw_next += 1;
            aw_done += 1;
        }
        if w_hs {
            w_on = false;
            w_next += 1;
            w_done += 1;
        }
        while modeled < aw_done.min(w_done) {
            let (a, d, s) = t.writes[modeled];
            let (resp, eff) = model.write(a, d, s);
            if let Some(e) = eff {
                exp_effects.push_back(e);
                effects_expected += 1;
            }
            exp_b.push_back((resp, effects_expected));
            modeled += 1;
        }
        // Effects: Rw pulses (with the new value) and Wo strobes, in write order.
        let mut seen = Vec::new();
        for (i, p) in regs.iter().enumerate() {
            let n = specs[i].count;
            match p {
                Ports::Rw { q, we } => {
                    let we = sim.get_big(*we);
                    let q = words(sim, *q, n);
                    for e in 0..n {
                        if we.bit(e.into()) {
                            rw_now[i][e as usize] = q[e as usize];
                            seen.push(Effect {
                                reg: i,
                                index: e,
                                data: q[e as usize],
                            });
                        }
                    }
                    if q != rw_now[i] {
                        fail(format!(
                            "{} = {q:x?} without a write pulse; expected {:x?}",
                            specs[i].name, rw_now[i]
                        ));
                    }
                }
                Ports::Wo { we, data, index } if sim.get_bool(*we) => seen.push(Effect {
                    reg: i,
                    index: index.map_or(0, |x| sim.get_u64(x) as u32),
                    data: sim.get_u64(*data) as u32,
                }),
                _ => {}
            }
        }
        for e in seen {
            match exp_effects.pop_front() {
                Some(x) if x == e => {}
                x => fail(format!(
                    "effect on {}[{}] = {:#x}, expected {}",
                    specs[e.reg].name,
                    e.index,
                    e.data,
                    x.map_or("none".into(), |x| format!(
                        "{}[{}] = {:#x}",
                        specs[x.reg].name, x.index, x.data
                    ))
                )),
            }
            effects_seen += 1;
            cov.effects[e.reg] += 1;
        }
        // b: hold rule, response, effects no later than the response.
        let b = b_chan.observe(
            sim.get_bool(ax.bvalid),
            sim.get_bool(ax.bready),
            (sim.get_u64(ax.bresp), 0),
        );
        if let Some((bresp, _)) = b.unwrap_or_else(|e| fail(e)) {
            let Some((resp, through)) = exp_b.pop_front() else {
                fail("bvalid with no write outstanding".into())
            };
            let w = t.writes[b_done];
            if bresp != resp as u64 {
                fail(format!("write {w:x?}: bresp {bresp}, expected {resp:?}"));
            }
            if effects_seen < through {
                fail(format!("write {w:x?}: response before its effect"));
            }
            cov.write_resps[bresp as usize] += 1;
            b_done += 1;
        }
        // ar: a read joins the in-flight list with the Rw value of its element.
        if ar_on && sim.get_bool(ax.arready) {
            ar_on = false;
            reads.push_back(Read {
                addr: t.reads[ar_next],
                window: Vec::new(),
            });
            ar_next += 1;
        }
        for r in reads.iter_mut() {
            if let Some(h) = model.decode(r.addr) {
                if specs[h.reg].access == Access::Rw {
                    let v = rw_now[h.reg][h.index as usize];
                    if !r.window.contains(&v) {
                        r.window.push(v);
                    }
                }
            }
        }
        // r: hold rule, response and data.
        let r = r_chan.observe(
            sim.get_bool(ax.rvalid),
            sim.get_bool(ax.rready),
            (sim.get_u64(ax.rresp), sim.get_u64(ax.rdata)),
        );
        if let Some(r_now) = r.unwrap_or_else(|e| fail(e)) {
            let Some(rd) = reads.pop_front() else {
                fail("rvalid with no read outstanding".into())
            };
            let hit = model.decode(rd.addr);
            let (resp, data) = model.read(rd.addr, |i, e| ro[i][e as usize]);
            let (got_resp, got) = (r_now.0, r_now.1 as u32);
            let ok_data = match hit {
                Some(h) if specs[h.reg].access == Access::Rw => {
                    if rd.window.len() > 1 {
                        cov.racing_reads += 1;
                    }
                    rd.window.contains(&got)
                }
                Some(h) if h.high => {
                    let now = (ro[h.reg][h.index as usize] >> 32) as u32;
                    cov.stale_high_reads += usize::from(now != data);
                    got == data
                }
                _ => got == data,
            };
            if got_resp != resp as u64 || !ok_data {
                let name = hit.map_or("unmapped".into(), |h| specs[h.reg].name.clone());
                fail(format!(
                        "read {:#x} ({name}): {got_resp}/{got:#x}, expected {resp:?}/{data:#x} (Rw window {:x?})",
                        rd.addr, rd.window
                    ));
            }
            cov.read_resps[got_resp as usize] += 1;
            r_done += 1;
        }
    }
    assert!(
        exp_effects.is_empty(),
        "seed {seed}: effects never seen: {exp_effects:?}"
    );
    // A few idle cycles: nothing more may happen.
    sim.set_bool(ax.awvalid, false);
    sim.set_bool(ax.wvalid, false);
    sim.set_bool(ax.arvalid, false);
    for _ in 0..4 {
        sim.cycle();
        assert!(
            !sim.get_bool(ax.bvalid) && !sim.get_bool(ax.rvalid),
            "seed {seed}: extra response"
        );
        for p in &regs {
            match p {
                Ports::Rw { we, .. } | Ports::Wo { we, .. } => {
                    assert!(!sim.get_bool(*we), "seed {seed}: strobe with no write")
                }
                _ => {}
            }
        }
    }
    cov.cycles = sim.cycles();
    cov
}

#[test]
fn bar_regs_matches_the_model_under_random_timing() {
    let cfg = cfg();
    let Some(d) = dut(&bar_regs(&cfg).unwrap()) else {
        return;
    };
    lint_clean(&d.gen);
    let specs = specs();
    let model = RegFile::new(specs.clone(), BAR_BITS);
    let mut racing = 0;
    for k in matrix(7) {
        let t = traffic(k.seed, true, 3000, &model);
        let mut sim = d.model.instance();
        reset(&mut sim);
        let cov = run(&mut sim, &cfg, &t, k);
        eprintln!(
            "{k:?}: {} writes, {} reads, {cov:?}",
            t.writes.len(),
            t.reads.len()
        );
        // The run exercised what it claims to.
        for (i, s) in specs.iter().enumerate() {
            let writable = matches!(s.access, Access::Rw | Access::Wo);
            assert_eq!(cov.effects[i] > 0, writable, "{k:?}: effects on {}", s.name);
        }
        for r in [Resp::Okay, Resp::SlvErr, Resp::DecErr] {
            assert!(
                cov.write_resps[r as usize] > 0,
                "{k:?}: no write answered {r:?}"
            );
        }
        assert!(
            cov.read_resps[Resp::Okay as usize] > 0 && cov.read_resps[Resp::DecErr as usize] > 0
        );
        assert!(
            cov.stale_high_reads > 0,
            "{k:?}: Ro64 latching never tested"
        );
        racing += cov.racing_reads;
        if k.idle > 0.0 {
            assert!(
                cov.first.iter().all(|n| *n > 0),
                "{k:?}: aw/w orders {:?}",
                cov.first
            );
        }
        // Throughput: with no idle or backpressure, about 2 cycles per write (the channels
        // of reads and writes run side by side).
        if k.idle == 0.0 && k.backpressure == 0.0 {
            let per = cov.cycles as f64 / t.writes.len().max(t.reads.len()) as f64;
            assert!(per < 2.2, "{k:?}: {per:.2} cycles per transaction");
        }
    }
    assert!(
        racing > 0,
        "no read of an Rw element overlapped a write to it"
    );
}

#[test]
fn bar_regs_icarus_replay() {
    let cfg = cfg();
    let Some(d) = dut(&bar_regs(&cfg).unwrap()) else {
        return;
    };
    let model = RegFile::new(specs(), BAR_BITS);
    let k = Knobs {
        seed: 71,
        idle: 0.3,
        backpressure: 0.3,
    };
    let t = traffic(k.seed, false, 1000, &model);
    let mut sim = recording_sim(&d);
    run(&mut sim, &cfg, &t, k);
    icarus_agrees(&d, &sim.take_recording());
}
