//! Differential tests of `icrc` (the RoCEv2 ICRC, check and insert modes) against
//! `nicgen_model::roce`, over bus width (8, 64, 512 bits) x idle x backpressure, with monitors
//! on every stream and `verilator -Wall` clean; one run per mode at 64 bits is replayed on
//! Icarus and must agree with Verilator cycle by cycle. Frames: the published vectors of
//! reference/wire-formats.md §1.6 (T1..T8 and the IPv4 CNP), random RoCEv2 frames of 0..=4096
//! payload bytes over IPv4 and IPv6 behind 0, 1 and 2 VLAN tags with random masked fields, and
//! frames that are not RoCE (random bytes, and RoCE-shaped frames whose request says not RoCE).
//! Check mode: a fifth of the RoCE frames have one bit flipped (anywhere), and every frame's
//! result must be the model's (`icrc_ok`), with bad and good ones in every run. Insert mode:
//! the RoCE frames come with a zero placeholder and must leave with the model's ICRC; the others
//! unchanged. Every frame in gives exactly one frame or result out. A back-to-back run checks
//! that neither mode stalls its input, that the insert output has no bubble and that both meet
//! `latency`; 16, 48 and 128 bits run once per mode with idle and backpressure.

use nicgen_hdl::roce::icrc::{icrc, latency, IcrcCfg, IcrcMode, IcrcReq, IcrcRes};
use nicgen_model::roce::{
    icrc_at, icrc_insert, icrc_ok, is_roce, l3_of, opcode, roce_frame, Bth, IpHeader, RoceHeaders,
};
use nicgen_model::vectors::{hex, ROCE_ICRC};
use nicgen_tb::record::RecordSink;
use nicgen_tb::stream::{run_until_seeded, step, Status, StreamDriver, StreamMonitor, StreamPorts};
use nicgen_tb::Sim;
use nicgen_tests::cmd::{run_with_cmds, CmdDriver, CmdRun};
use nicgen_tests::*;

use num_bigint::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use nicgen_edsl::Shape;

/// The frames of reference/wire-formats.md §1.6 (without FCS, ICRC last).
fn vectors() -> Vec<Vec<u8>> {
    ROCE_ICRC.iter().map(|v| hex(v.1)).collect()
}

/// One frame of a run with its request.
#[derive(Clone, Debug)]
struct Case {
    frame: Vec<u8>,
    l3_off: u32,
    ipv6: bool,
    roce: bool,
}

impl Case {
    fn of(frame: Vec<u8>) -> Case {
        let roce = is_roce(&frame);
        let (l3, v6) = l3_of(&frame).unwrap_or((14, false));
        Case {
            frame,
            l3_off: l3 as u32,
            ipv6: v6,
            roce,
        }
    }

    fn req(&self) -> BigUint {
        let shape = IcrcReq::shape();
        let v = IcrcReq {
            l3_off: u128::from(self.l3_off),
            ipv6: u128::from(self.ipv6),
            roce: u128::from(self.roce),
        };
        BigUint::from_bytes_le(&shape.encode(&v))
    }
}

/// A random RoCEv2 frame: IPv4 or IPv6, 0..=2 tags, a random opcode and payload of up to
/// `max_payload` bytes, random masked fields (TOS/TC, TTL, flow label, UDP checksum, FECN/BECN).
fn random_roce(rng: &mut StdRng, max_payload: usize) -> Vec<u8> {
    let ntags = rng.gen_range(0..=2);
    let vlans: Vec<(u16, u16)> = (0..ntags)
        .map(|i| {
            let tpid = if i == 0 && ntags == 2 { 0x88A8 } else { 0x8100 };
            (tpid, rng.gen())
        })
        .collect();
    let ip = if rng.gen_bool(0.5) {
        IpHeader::V4 {
            src: rng.gen::<[u8; 4]>().into(),
            dst: rng.gen::<[u8; 4]>().into(),
            tos: rng.gen(),
            ident: rng.gen(),
            ttl: rng.gen(),
            dont_frag: rng.gen(),
        }
    } else {
        IpHeader::V6 {
            src: rng.gen::<[u8; 16]>().into(),
            dst: rng.gen::<[u8; 16]>().into(),
            traffic_class: rng.gen(),
            flow_label: rng.gen_range(0..1 << 20),
            hop_limit: rng.gen(),
        }
    };
    let h = RoceHeaders {
        dst_mac: rng.gen(),
        src_mac: rng.gen(),
        vlans,
        ip,
        src_port: rng.gen_range(0xC000..=0xFFFF),
        udp_checksum: if rng.gen_bool(0.3) { rng.gen() } else { 0 },
    };
    let ops = [
        opcode::RC_SEND_ONLY,
        opcode::RC_SEND_LAST_IMM,
        opcode::RC_WRITE_FIRST,
        opcode::RC_READ_RESPONSE_MIDDLE,
        opcode::RC_ACK,
        opcode::RC_COMPARE_SWAP,
        opcode::CNP,
    ];
    let mut bth = Bth::new(
        ops[rng.gen_range(0..ops.len())],
        rng.gen_range(0..1 << 24),
        rng.gen_range(0..1 << 24),
    );
    bth.fecn = rng.gen();
    bth.becn = rng.gen();
    bth.ack_req = rng.gen();
    bth.se = rng.gen();
    bth.mig = rng.gen();
    let len = if rng.gen_bool(0.1) {
        rng.gen_range(0..=max_payload)
    } else {
        rng.gen_range(0..=max_payload.min(300))
    };
    bth.pad_cnt = ((4 - len % 4) % 4) as u8;
    let body: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
    roce_frame(&h, &bth, &body)
}

/// The frames of one run: the vectors, random RoCE frames, frames that are not RoCE (random
/// bytes; RoCE frames whose request says not RoCE; a UDP port other than 4791), shuffled.
fn cases(seed: u64, n: usize, max_payload: usize) -> Vec<Case> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut v: Vec<Case> = vectors().into_iter().map(Case::of).collect();
    while v.len() < n {
        let c = match rng.gen_range(0..10) {
            0 => {
                let len = rng.gen_range(1..=120);
                Case::of((0..len).map(|_| rng.gen()).collect())
            }
            1 => {
                let mut c = Case::of(random_roce(&mut rng, max_payload));
                c.roce = false;
                c
            }
            2 => {
                let mut f = random_roce(&mut rng, max_payload);
                let (l3, v6) = l3_of(&f).unwrap();
                f[l3 + if v6 { 40 } else { 20 } + 3] ^= 0x10;
                Case::of(f)
            }
            _ => Case::of(random_roce(&mut rng, max_payload)),
        };
        v.push(c);
    }
    for i in (1..v.len()).rev() {
        let j = rng.gen_range(0..=i);
        v.swap(i, j);
    }
    assert!(v.iter().any(|c| c.roce) && v.iter().any(|c| !c.roce));
    v
}

/// What a check-mode run gives: the results as (roce, ok), the cycles the input took a beat
/// and the cycles a result left.
struct CheckRun {
    results: Vec<(bool, bool)>,
    ti: Vec<u64>,
    to: Vec<u64>,
}

/// Check mode: frames and requests in, results out (`m_axis_res`), monitors on the frames,
/// until every result is out and then 20 cycles more (nothing else may come out).
fn run_check(sim: &mut Sim, k: Knobs, cs: &[Case]) -> CheckRun {
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
    let mut mon = StreamMonitor::new(sp.clone(), k.seed);
    let mut ti = Transfers::new(sp);
    let mut cmd = CmdDriver::new(sim, k.seed ^ 0xc0de, k.idle);
    for c in cs {
        drv.push(c.frame.clone());
        cmd.queue.push_back(c.req());
    }
    let mut res = RecordSink::new(sim, "m_axis_res", k.seed ^ 0x5eed, k.backpressure).unwrap();
    let n = cs.len();
    let mut to = Vec::new();
    let mut extra = 0;
    run_until_seeded(sim, k.seed, 500, |sim| {
        let before = res.items.len();
        let p = step(sim, &mut [&mut drv, &mut mon, &mut ti, &mut cmd, &mut res])?;
        if res.items.len() > before {
            to.push(sim.cycles() - 1);
        }
        if res.items.len() >= n {
            extra += 1;
        }
        Ok(Status::new(p || extra > 0, extra > 20))
    })
    .unwrap_or_else(|e| panic!("seed {:#x}: {e}", k.seed));
    let results = res
        .items
        .iter()
        .map(|b| {
            let r = IcrcRes::shape().decode(b);
            (r.roce == 1, r.ok == 1)
        })
        .collect();
    CheckRun {
        results,
        ti: ti.cycles,
        to,
    }
}

/// Check-mode input: a fifth of the RoCE frames with one bit flipped anywhere.
fn corrupt(cs: &mut [Case], seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xbad);
    for c in cs.iter_mut().filter(|c| c.roce) {
        if rng.gen_ratio(1, 5) {
            let bit = rng.gen_range(0..8 * c.frame.len());
            c.frame[bit / 8] ^= 1 << (bit % 8);
        }
    }
}

fn want_check(c: &Case) -> (bool, bool) {
    if c.roce {
        let f = &c.frame;
        let ok = icrc_at(f, c.l3_off as usize, c.ipv6).to_le_bytes() == f[f.len() - 4..];
        (true, ok)
    } else {
        (false, false)
    }
}

#[test]
fn check_matches_the_model() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let Some(d) = unit(w, IcrcMode::Check) else {
            return;
        };
        for (ki, k) in matrix(3100 + wi as u64).into_iter().enumerate() {
            let mut cs = cases(k.seed, 50, 4096);
            corrupt(&mut cs, k.seed);
            let want: Vec<(bool, bool)> = cs.iter().map(want_check).collect();
            // The model's own verdict agrees on frames whose request is the parse.
            for (c, wv) in cs.iter().zip(&want) {
                if c.roce && is_roce(&c.frame) {
                    assert_eq!(wv.1, icrc_ok(&c.frame));
                }
            }
            let mut sim = recording_sim(&d);
            let got = run_check(&mut sim, k, &cs).results;
            assert_eq!(got.len(), cs.len(), "w={w} {k:?}: one result per frame");
            assert_frames(0, &got, &want, &format!("check w={w} {k:?}"));
            assert!(
                want.iter().any(|r| r.0 && r.1),
                "no good RoCE frame in the run"
            );
            assert!(
                want.iter().any(|r| r.0 && !r.1),
                "no bad RoCE frame in the run"
            );
            if w == 64 && ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

/// Insert-mode input and expected output of a case: a RoCE frame with its slot zeroed, out with
/// the model's ICRC; any other frame unchanged.
fn insert_io(c: &Case) -> (Vec<u8>, Vec<u8>) {
    if c.roce {
        let mut f = c.frame.clone();
        let n = f.len();
        f[n - 4..].fill(0);
        let want = icrc_insert(&f, c.l3_off as usize, c.ipv6);
        (f, want)
    } else {
        (c.frame.clone(), c.frame.clone())
    }
}

/// The unit at `w` bits in `mode`, its Verilog lint-clean; `None` without Verilator.
fn unit(w: u32, mode: IcrcMode) -> Option<Dut> {
    let d = dut(&icrc(&IcrcCfg { data_bits: w, mode }).unwrap().into_def())?;
    lint_clean(&d.gen);
    Some(d)
}

/// Insert mode: the cases' frames and requests through the unit until every frame is out;
/// returns the run and the model's frames.
fn run_insert(sim: &mut Sim, k: Knobs, cs: &[Case]) -> (CmdRun, Vec<Vec<u8>>) {
    let io: Vec<(Vec<u8>, Vec<u8>)> = cs.iter().map(insert_io).collect();
    let frames: Vec<(Vec<u8>, u64)> = io.iter().map(|x| (x.0.clone(), 0)).collect();
    let cmds: Vec<BigUint> = cs.iter().map(Case::req).collect();
    let n = cs.len();
    let run = run_with_cmds(sim, k, &frames, &cmds, |_, out| out >= n);
    (run, io.into_iter().map(|x| x.1).collect())
}

/// The frames of an insert run.
fn frames_of(run: &CmdRun) -> Vec<Vec<u8>> {
    run.frames.iter().map(|f| f.0.clone()).collect()
}

#[test]
fn insert_matches_the_model() {
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let Some(d) = unit(w, IcrcMode::Insert) else {
            return;
        };
        for (ki, k) in matrix(3200 + wi as u64).into_iter().enumerate() {
            let cs = cases(k.seed, 50, 4096);
            let mut sim = recording_sim(&d);
            let (run, want) = run_insert(&mut sim, k, &cs);
            // The vectors come out as published.
            for (c, wf) in cs.iter().zip(&want) {
                if c.roce && is_roce(&c.frame) {
                    assert_eq!(wf, &c.frame);
                }
            }
            sim.cycles_n(20);
            let got = frames_of(&run);
            assert_eq!(
                got.len(),
                cs.len(),
                "w={w} {k:?}: one frame out per frame in"
            );
            assert_frames(0, &got, &want, &format!("insert w={w} {k:?}"));
            if w == 64 && ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn back_to_back_frames_never_stall() {
    // Short and long frames back to back, no idle, no backpressure: the input takes a beat
    // every cycle; the insert output leaves in as many cycles as it came in, `latency` later.
    let mut rng = StdRng::seed_from_u64(77);
    let mut cs: Vec<Case> = vectors().into_iter().map(Case::of).collect();
    for _ in 0..20 {
        cs.push(Case::of(random_roce(&mut rng, 200)));
    }
    let k = Knobs {
        seed: 5,
        idle: 0.0,
        backpressure: 0.0,
    };
    for w in [8u32, 64, 512] {
        let bpb = (w / 8) as usize;
        let in_beats: u64 = cs.iter().map(|c| c.frame.len().div_ceil(bpb) as u64).sum();
        for mode in [IcrcMode::Check, IcrcMode::Insert] {
            let cfg = IcrcCfg { data_bits: w, mode };
            let Some(d) = dut(&icrc(&cfg).unwrap().into_def()) else {
                return;
            };
            let mut sim = d.model.instance();
            reset(&mut sim);
            // Requests queued ahead; results never stall the unit.
            let (ti, to) = if mode == IcrcMode::Check {
                let run = run_check(&mut sim, k, &cs);
                let all_ok = run.results.iter().all(|r| r.0 && r.1);
                assert!(all_ok, "w={w}: {:?}", run.results);
                (run.ti, run.to)
            } else {
                let (run, want) = run_insert(&mut sim, k, &cs);
                assert_eq!(frames_of(&run), want, "w={w}");
                assert!(contiguous(&run.to), "w={w}: a bubble on the output");
                (run.ti, run.to)
            };
            assert_eq!(ti.len() as u64, in_beats);
            assert!(contiguous(&ti), "w={w} {mode:?}: the input stalled");
            assert_eq!(
                to.last().unwrap() - ti.last().unwrap(),
                u64::from(latency(&cfg)),
                "w={w} {mode:?}: latency of the last beat or result"
            );
        }
    }
}

#[test]
fn other_widths() {
    // Widths with corner cases of their own: 16 bits (the last four bytes over up to three
    // beats, a two-slot hold queue that patches in place), 48 bits (6 bytes: not a multiple of
    // 4), 128 bits. One knob setting each, both modes, the same checks.
    let k = Knobs {
        seed: 3300,
        idle: 0.3,
        backpressure: 0.3,
    };
    for w in [16u32, 48, 128] {
        for mode in [IcrcMode::Check, IcrcMode::Insert] {
            let Some(d) = unit(w, mode) else {
                return;
            };
            let mut cs = cases(k.seed + u64::from(w), 40, 1500);
            let mut sim = d.model.instance();
            reset(&mut sim);
            if mode == IcrcMode::Check {
                corrupt(&mut cs, k.seed);
                let want: Vec<(bool, bool)> = cs.iter().map(want_check).collect();
                let got = run_check(&mut sim, k, &cs).results;
                assert_frames(0, &got, &want, &format!("check w={w}"));
            } else {
                let (run, want) = run_insert(&mut sim, k, &cs);
                assert_frames(0, &frames_of(&run), &want, &format!("insert w={w}"));
            }
        }
    }
}
