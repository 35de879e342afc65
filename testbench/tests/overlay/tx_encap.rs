//! `tx_encap` against `nicgen_model::encap::encap`: bus widths 8, 64 and 512 x idle x
//! backpressure, six contexts written through the configuration port (VXLAN and NVGRE, IPv4
//! and IPv6 outers, the outer UDP checksum on and off, other ports, TTLs, TOS, flow labels,
//! DF set and clear) and used interleaved, each frame's command picking one; inner IPv4 (with
//! options) and IPv6 (with extension headers) TCP and UDP frames, tagged or not, with random
//! addresses and ports, some fragments, some with bytes after the datagram; frames that are
//! not IP; frames of 14 to 1500 bytes and exactly `max_frame`; commands with `en = 0`; and
//! the drop rules: frames longer than `max_frame` (any command; some longer than
//! the whole frame FIFO) and frames to encapsulate shorter than 14 bytes, counted on the
//! `stat_*` pulses against the model's outcome (delivered + dropped = offered). The IPv4 ID
//! follows a per-context counter from 0 that steps with every encapsulated frame, and restarts
//! when the context is written. Every encapsulated frame delivered is also read back by the
//! model's tunnel parser (the tunnel kind and VNI/VSID found, the inner frame where it
//! belongs) with good outer checksums. One run per width is replayed on Icarus. Back-to-back
//! runs of 64- and 1500-byte inner frames print their cycle counts.

use nicgen_edsl::Shape;
use nicgen_hdl::overlay::tx_encap::ctx_word;
use nicgen_hdl::overlay::{tx_encap, EncapCfg, EncapCmd};
use nicgen_model::encap::{encap, EncapContext, EncapKind, OuterIp};
use nicgen_model::ethernet::EthernetAddress;
use nicgen_model::tunnel::{parse_tunnel, TunnelConfig, TunnelKind};
use nicgen_tb::Sim;
use nicgen_tests::cmd::{run_with_cmds, CmdRun};
use nicgen_tests::csum_frames::build;
use nicgen_tests::*;
use num_bigint::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Contexts in the table; the tests use [`CTX_SLOTS`] of them.
const CONTEXTS: u32 = 16;
const MAX_FRAME: u32 = 1536;
/// The table entries the contexts of [`contexts`] go to.
const CTX_SLOTS: [u32; 6] = [0, 3, 7, 9, 12, 15];

/// Bytes the frame FIFO holds.
fn fifo_bytes(c: &EncapCfg) -> usize {
    (c.fifo_beats() * c.data_bits / 8) as usize
}

fn cfg(w: u32) -> EncapCfg {
    EncapCfg {
        data_bits: w,
        contexts: CONTEXTS,
        max_frame: MAX_FRAME,
        window: 128,
    }
}

/// Six contexts, one per row of the matrix of outer IP version x tunnel x checksum rule.
/// An outer side 172.16.0.1 (IPv6: 2001:db8:ffff::1) with `kind`, untagged (the model's
/// worked-example context); the rest is set per context by [`contexts`].
fn ctx(v6: bool, kind: EncapKind) -> EncapContext {
    nicgen_model::vectors::overlay::ctx(v6, false, kind)
}

fn contexts() -> Vec<EncapContext> {
    let vx = |vni, dst_port, udp_checksum| EncapKind::Vxlan {
        vni,
        dst_port,
        udp_checksum,
    };
    let mut c = vec![
        ctx(false, vx(0x123456, 4789, false)),
        ctx(false, vx(0xABCDEF, 8472, true)),
        ctx(true, vx(0x000001, 4789, false)),
        ctx(
            false,
            EncapKind::Nvgre {
                vsid: 0x123456,
                flow_id: 0xAB,
            },
        ),
        ctx(
            true,
            EncapKind::Nvgre {
                vsid: 0xFEDCBA,
                flow_id: 0x01,
            },
        ),
        ctx(true, vx(0x00F00D, 4790, true)),
    ];
    for (i, x) in c.iter_mut().enumerate() {
        let i = i as u8;
        x.dst_mac = EthernetAddress([0x02, 0x10, 0x20, 0x30, 0x40, 0x50 + i]);
        x.src_mac = EthernetAddress([0x0A, 0x1B, 0x2C, 0x3D, 0x4E, 0x60 + i]);
        x.ip = match x.ip {
            OuterIp::V4 { src, .. } => OuterIp::V4 {
                src,
                dst: Ipv4Addr::new(172, 16, i, 200 - i),
                ttl: 17 + i,
                tos: 0xB8 | i,
                dont_frag: i.is_multiple_of(2),
            },
            OuterIp::V6 { src, .. } => OuterIp::V6 {
                src,
                dst: Ipv6Addr::new(0x2001, 0xdb8, 0xeeee, i.into(), 0, 0, 0xffff, 0x1234),
                hop_limit: 33 + i,
                traffic_class: 0x2C ^ i,
                flow_label: 0xABCDE - u32::from(i),
            },
        };
    }
    c
}

/// The context's configuration words, encoded by the driver (`nicgen_driver::encap`, the
/// register map's `encap_ctx` layout). An IPv4 context's unused address words then get junk,
/// which the block must ignore.
fn ctx_words(c: &EncapContext) -> [u32; 16] {
    let mut w = nicgen::tx_opts::driver_ctx(c)
        .words()
        .expect("the test's contexts fit their fields");
    if let OuterIp::V4 { .. } = c.ip {
        let (sa, da) = (ctx_word::SRC_ADDR as usize, ctx_word::DST_ADDR as usize);
        for k in 0..3 {
            w[sa + k] = 0xDEAD_0000 | k as u32;
            w[da + k] = 0xBEEF_0000 | k as u32;
        }
    }
    w
}

/// Write context `c` into table entry `slot`, a word a cycle.
fn write_ctx(sim: &mut Sim, slot: u32, c: &EncapContext) {
    let (we, addr, wdata) = (
        sim.port("cfg_we").unwrap(),
        sim.port("cfg_addr").unwrap(),
        sim.port("cfg_wdata").unwrap(),
    );
    for (k, v) in ctx_words(c).into_iter().enumerate() {
        sim.set(we, 1);
        sim.set(addr, u64::from(slot * ctx_word::WORDS + k as u32));
        sim.set(wdata, v.into());
        sim.cycle();
    }
    sim.set(we, 0);
}

/// One frame, its command and what the model makes of it.
#[derive(Clone, Debug)]
struct Job {
    frame: Vec<u8>,
    en: bool,
    /// Index into [`contexts`].
    ctx: usize,
}

/// What leaves the block for a job.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Frame(Vec<u8>),
    Oversize,
    Short,
}

impl Job {
    fn cmd(&self, c: &EncapCfg) -> BigUint {
        BigUint::from_bytes_le(&c.cmd().encode(&EncapCmd {
            en: self.en as u128,
            ctx: CTX_SLOTS[self.ctx] as u128,
        }))
    }
}

/// The model's outcomes for `js`, with the per-context ID counters `ids` (stepped by every
/// encapsulated frame).
fn expect(js: &[Job], ctxs: &[EncapContext], ids: &mut [u16]) -> Vec<Outcome> {
    js.iter()
        .map(|j| {
            if j.frame.len() > MAX_FRAME as usize {
                Outcome::Oversize
            } else if !j.en {
                Outcome::Frame(j.frame.clone())
            } else if j.frame.len() < 14 {
                Outcome::Short
            } else {
                let id = ids[j.ctx];
                ids[j.ctx] = id.wrapping_add(1);
                Outcome::Frame(encap(&j.frame, &ctxs[j.ctx], id).expect("fits"))
            }
        })
        .collect()
}

/// A random inner frame of at most `max_len` (at least 14) bytes: one in five not IP (ARP, or
/// an unknown EtherType), the others TCP or UDP over IPv4 (with options) or IPv6 (with
/// extension headers), tagged or not, with random addresses and ports
/// ([`nicgen_tests::csum_frames::build`]), some IPv4 ones made fragments, some with bytes
/// after the datagram up to `max_len`.
fn inner_frame(rng: &mut StdRng, max_len: usize) -> Vec<u8> {
    if rng.gen_bool(0.2) {
        let len = rng.gen_range(14..=max_len);
        let mut f: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        let ethertype = if rng.gen_bool(0.5) { 0x0806u16 } else { 0x88B5 };
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());
        return f;
    }
    let b = loop {
        let b = build(rng);
        if b.frame.len() <= max_len {
            break b;
        }
    };
    let mut f = b.frame;
    if b.offsets.ipv4 == Some(true) && rng.gen_bool(0.25) {
        f[b.offsets.l3_off + 6] |= 0x20; // more fragments: the addresses only
    }
    if rng.gen_bool(0.3) {
        let len = rng.gen_range(f.len()..=max_len);
        f.extend((f.len()..len).map(|_| rng.gen::<u8>()));
    }
    f
}

/// `n` random jobs: mostly inner frames of 14..=`max_len` bytes, some of exactly
/// `MAX_FRAME`, some longer, a few longer than the frame FIFO (`fifo_bytes`), some shorter
/// than 14; `en` on four in five.
fn jobs(seed: u64, n: usize, max_len: usize, fifo_bytes: usize) -> Vec<Job> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let frame = match rng.gen_range(0..24) {
                0 => (0..rng.gen_range(1..14)).map(|_| rng.gen()).collect(),
                1 => (0..MAX_FRAME as usize).map(|_| rng.gen()).collect(),
                2 => {
                    let len = rng.gen_range(MAX_FRAME as usize + 1..=MAX_FRAME as usize + 100);
                    (0..len).map(|_| rng.gen()).collect()
                }
                3 => {
                    let len = fifo_bytes + rng.gen_range(1..=64);
                    (0..len).map(|_| rng.gen()).collect()
                }
                4..=9 => inner_frame(&mut rng, 128),
                _ => inner_frame(&mut rng, max_len),
            };
            Job {
                frame,
                en: rng.gen_bool(0.8),
                ctx: rng.gen_range(0..CTX_SLOTS.len()),
            }
        })
        .collect()
}

/// Run `js` after the contexts are written; the frames out and the drop pulses.
fn run_jobs(sim: &mut Sim, c: &EncapCfg, k: Knobs, js: &[Job]) -> (CmdRun, usize, usize) {
    let over_p = sim.port("stat_drop_oversize").unwrap();
    let short_p = sim.port("stat_drop_short").unwrap();
    let frames: Vec<(Vec<u8>, u64)> = js.iter().map(|j| (j.frame.clone(), 0)).collect();
    let cmds: Vec<BigUint> = js.iter().map(|j| j.cmd(c)).collect();
    let (mut over, mut short) = (0, 0);
    let r = run_with_cmds(sim, k, &frames, &cmds, |sim, out| {
        over += sim.get_u64(over_p) as usize;
        short += sim.get_u64(short_p) as usize;
        out + over + short == js.len()
    });
    (r, over, short)
}

/// The frames of `r` against the model's outcomes, and every encapsulated one through the
/// model's tunnel parser.
fn check(
    what: &str,
    js: &[Job],
    want: &[Outcome],
    ctxs: &[EncapContext],
    (r, over, short): &(CmdRun, usize, usize),
) {
    let frames: Vec<&Vec<u8>> = want
        .iter()
        .filter_map(|o| match o {
            Outcome::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    let n = |o: Outcome| want.iter().filter(|w| **w == o).count();
    for (i, (got, want)) in r.frames.iter().zip(&frames).enumerate() {
        assert!(
            got.0 == **want,
            "{what}: delivered frame {i}: got {:02x?},\nwant {want:02x?}",
            got.0
        );
    }
    assert_eq!(
        (r.frames.len(), *over, *short),
        (frames.len(), n(Outcome::Oversize), n(Outcome::Short)),
        "{what}: (delivered, oversize, short)"
    );
    // The encapsulated frames as a receiver sees them.
    let delivered = js
        .iter()
        .zip(want)
        .filter(|(_, o)| matches!(o, Outcome::Frame(_)));
    for ((j, _), (got, _)) in delivered.zip(&r.frames) {
        if !j.en {
            continue;
        }
        let c = &ctxs[j.ctx];
        let (kind, id, port) = match c.kind {
            EncapKind::Vxlan { vni, dst_port, .. } => (TunnelKind::Vxlan, vni, dst_port),
            EncapKind::Nvgre { vsid, .. } => (TunnelKind::Nvgre, vsid, 4789),
        };
        let t = parse_tunnel(got, &TunnelConfig::with_vxlan_port(port));
        assert_eq!((t.kind, t.id), (kind, id), "{what}: tunnel of {got:02x?}");
        let inner = t.inner.expect("a well-formed tunnel");
        assert_eq!(
            (inner.off, inner.end, &got[inner.off..]),
            (c.outer_len(), got.len(), &j.frame[..]),
            "{what}: inner frame"
        );
        assert_eq!(t.outer_csum.l3, Some(true), "{what}: outer L3 checksum");
        let l4 = matches!(c.kind, EncapKind::Vxlan { .. }).then_some(true);
        assert_eq!(t.outer_csum.l4, l4, "{what}: outer UDP checksum");
    }
}

#[test]
fn encap_matches_the_model() {
    let ctxs = contexts();
    for (wi, w) in WIDTHS.into_iter().enumerate() {
        let c = cfg(w);
        let Some(d) = dut(&tx_encap(&c).unwrap_or_else(|e| panic!("{e}")).into_def()) else {
            return;
        };
        let n = if w == 8 { 40 } else { 80 };
        for (ki, k) in matrix(300 + wi as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            for (slot, x) in CTX_SLOTS.iter().zip(&ctxs) {
                write_ctx(&mut sim, *slot, x);
            }
            let js = jobs(k.seed, n, 1500, fifo_bytes(&c));
            let want = expect(&js, &ctxs, &mut [0; CTX_SLOTS.len()]);
            let encapsulated = js
                .iter()
                .zip(&want)
                .filter(|(j, o)| j.en && matches!(o, Outcome::Frame(_)))
                .count();
            let dropped = want.iter().filter(|o| **o == Outcome::Oversize).count();
            assert!(
                encapsulated >= n / 2 && dropped > 0,
                "w={w} {k:?}: the jobs exercise encapsulation ({encapsulated}) and drops ({dropped})"
            );
            let r = run_jobs(&mut sim, &c, k, &js);
            check(&format!("w={w} {k:?}"), &js, &want, &ctxs, &r);
            if ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

/// The outcomes the differential test relies on occur: every context, both commands, both
/// drops, the frame lengths at the edges.
#[test]
fn the_jobs_reach_every_case() {
    let js = jobs(7, 300, 1500, fifo_bytes(&cfg(64)));
    let ctxs = contexts();
    let want = expect(&js, &ctxs, &mut [0; CTX_SLOTS.len()]);
    for o in [Outcome::Oversize, Outcome::Short] {
        assert!(want.contains(&o), "{o:?}");
    }
    assert!(js.iter().any(|j| j.frame.len() > fifo_bytes(&cfg(64))));
    for x in 0..CTX_SLOTS.len() {
        assert!(js.iter().any(|j| j.en && j.ctx == x && j.frame.len() >= 14));
    }
    assert!(js.iter().any(|j| !j.en));
    assert!(js.iter().any(|j| j.frame.len() == MAX_FRAME as usize));
    assert!(js.iter().any(|j| (1000..=1500).contains(&j.frame.len())));
    assert!(js.iter().any(|j| (14..64).contains(&j.frame.len())));
    assert!(js
        .iter()
        .any(|j| j.frame.len() >= 14 && j.frame[12..14] == [0x08, 0x06]));
}

/// Writing a context restarts its IPv4 ID counter at 0; the other contexts' counters go on.
#[test]
fn writing_a_context_restarts_its_ip_id() {
    let ctxs = contexts();
    let c = cfg(64);
    let Some(d) = dut(&tx_encap(&c).unwrap().into_def()) else {
        return;
    };
    let k = Knobs {
        seed: 11,
        idle: 0.2,
        backpressure: 0.3,
    };
    let mut sim = d.model.instance();
    reset(&mut sim);
    for (slot, x) in CTX_SLOTS.iter().zip(&ctxs) {
        write_ctx(&mut sim, *slot, x);
    }
    let mut ids = [0u16; CTX_SLOTS.len()];
    let js = jobs(5, 30, 300, fifo_bytes(&c));
    let want = expect(&js, &ctxs, &mut ids);
    let r = run_jobs(&mut sim, &c, k, &js);
    check("first run", &js, &want, &ctxs, &r);
    assert!(
        ids[0] > 0 && ids[3] > 0,
        "contexts 0 and 3 were used: {ids:?}"
    );
    write_ctx(&mut sim, CTX_SLOTS[0], &ctxs[0]);
    ids[0] = 0;
    let mut js = jobs(6, 30, 300, fifo_bytes(&c));
    for j in js.iter_mut().step_by(3) {
        (j.ctx, j.en) = (0, true);
    }
    let before = ids;
    let want = expect(&js, &ctxs, &mut ids);
    assert!(
        ids[0] > 0 && ids[3] > before[3],
        "the second run encapsulates with contexts 0 and 3 (IPv4 outers): {ids:?}"
    );
    let r = run_jobs(&mut sim, &c, k, &js);
    check("after rewriting context 0", &js, &want, &ctxs, &r);
}

/// Cycles for back-to-back inner frames of 64 and 1500 bytes (random inner frames padded to
/// that length) encapsulated (VXLAN over IPv4 and IPv6 alternating), and of 60 bytes passed
/// unchanged (`en = 0`), sink always ready: printed, with the beats in and out, not asserted
/// (the frames are).
#[test]
fn back_to_back_cycles() {
    let ctxs = contexts();
    let k = Knobs {
        seed: 1,
        idle: 0.0,
        backpressure: 0.0,
    };
    for w in [64, 512] {
        let c = cfg(w);
        let Some(d) = dut(&tx_encap(&c).unwrap().into_def()) else {
            return;
        };
        let bpb = (w / 8) as usize;
        for (len, en) in [(64usize, true), (1500, true), (60, false)] {
            let mut sim = d.model.instance();
            reset(&mut sim);
            for (slot, x) in CTX_SLOTS.iter().zip(&ctxs) {
                write_ctx(&mut sim, *slot, x);
            }
            let n = if len < 100 { 200 } else { 40 };
            let mut rng = StdRng::seed_from_u64(len as u64);
            let js: Vec<Job> = (0..n)
                .map(|i| {
                    let mut frame = inner_frame(&mut rng, len);
                    frame.resize(len, i as u8);
                    Job {
                        frame,
                        en,
                        ctx: if i % 2 == 0 { 0 } else { 2 },
                    }
                })
                .collect();
            let want = expect(&js, &ctxs, &mut [0; CTX_SLOTS.len()]);
            let res = run_jobs(&mut sim, &c, k, &js);
            check(&format!("w={w} len={len}"), &js, &want, &ctxs, &res);
            let r = res.0;
            let out_beats: usize = want
                .iter()
                .map(|o| match o {
                    Outcome::Frame(f) => f.len().div_ceil(bpb),
                    _ => 0,
                })
                .sum();
            let span = |t: &[u64]| t.last().unwrap() - t[0] + 1;
            println!(
                "tx_encap w={w}: {n} inner frames of {len} bytes: {} beats in over {} cycles, \
                 {out_beats} beats out over {} cycles (first out {} cycles after first in)",
                r.ti.len(),
                span(&r.ti),
                span(&r.to),
                r.to[0] - r.ti[0],
            );
        }
    }
}

#[test]
fn impossible_parameters_are_refused_with_a_reason() {
    let e = tx_encap(&EncapCfg {
        contexts: 12,
        ..cfg(64)
    })
    .unwrap_err();
    assert!(e.to_string().contains("12 contexts"), "{e}");
    let e = tx_encap(&EncapCfg {
        max_frame: 65500,
        ..cfg(64)
    })
    .unwrap_err();
    assert!(e.to_string().contains("max_frame 65500"), "{e}");
    // One frame longer than the largest FIFO (a jumbo frame fits, alone, at 8 bits).
    tx_encap(&EncapCfg {
        max_frame: 9022,
        ..cfg(8)
    })
    .unwrap();
    let e = tx_encap(&EncapCfg {
        max_frame: 20000,
        ..cfg(8)
    })
    .unwrap_err();
    assert!(e.to_string().contains("FIFO"), "{e}");
    let e = tx_encap(&cfg(24)).unwrap_err();
    assert!(e.to_string().contains("multiple of 16"), "{e}");
}

#[test]
fn generated_verilog_is_lint_clean() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for (w, contexts) in [(8, 2), (64, 16), (512, 256)] {
        let def = tx_encap(&EncapCfg { contexts, ..cfg(w) }).unwrap();
        lint_clean(&nicgen_edsl::generate(&def, &Default::default()));
    }
}
