//! Differential tests of `tx_tso` against `nicgen_model::tso::tso`: bus width (64 and 512;
//! fewer jobs at 16 and 8) x idle x backpressure over plain TCP (IPv4, IPv6, with and without
//! a VLAN tag) and VXLAN (outer UDP checksum 0 or not) and NVGRE super-frames (IPv4 and IPv6
//! outer and inner; IPv4 and TCP options in the plain or inner headers), payloads of 0 to
//! about 20 KB at random MSS (1, small, around the beat, 1448, 8948), flags CWR, FIN and PSH
//! set; frames without LSO passed unchanged; refused commands (MSS 0, MSS over the limit, a
//! TCP header past `hdr_len`, an odd offset, tunnel code 3, headers over 256 bytes, a frame
//! ending inside its headers) dropped and counted on `stat_bad` (delivered super-frames +
//! dropped = offered). Every segment out is also accepted by the receive model's checksum
//! verdicts. One run at 64 and at 512 bits is replayed on Icarus. 64 KiB sends at MSS 1448
//! and 8948 print their cycle counts (not asserted); 256 KiB and one byte more; frames
//! without LSO longer than a segment.

use nicgen_edsl::record::Shape;
use nicgen_hdl::overlay::tx_tso::{MAX_HDR, USER_BAD};
use nicgen_hdl::overlay::{tx_tso, TsoCfg, TsoCmd};
use nicgen_model::encap::{encap, EncapKind};
use nicgen_model::tcp::Flags;
use nicgen_model::tso::{lso_offsets, tso, LsoOffsets};
use nicgen_model::tunnel::{parse_tunnel, TunnelConfig, TunnelKind};
use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip, NVGRE};
use nicgen_tb::record::RecordDriver;
use nicgen_tb::stream::{
    run_until_seeded, step, Status, StreamDriver, StreamMonitor, StreamPorts, StreamSink,
};
use nicgen_tb::Sim;
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The largest MSS the tested block takes (jumbo frames' 8948 fit).
const MAX_MSS: u32 = 9000;

/// The largest MSS at `bits` per beat: on the 8-bit bus a frame buffer of two 9256-byte
/// segments would be deeper than a FIFO holds.
fn max_mss(bits: u32) -> u32 {
    if bits == 8 {
        4000
    } else {
        MAX_MSS
    }
}

/// The command's offsets of a super-frame built here: the model's, as a driver finds them.
fn offsets(f: &[u8]) -> LsoOffsets {
    lso_offsets(f, &TunnelConfig::default()).expect("a super-frame the model segments")
}

/// One frame and its command.
#[derive(Clone, Debug)]
struct Job {
    frame: Vec<u8>,
    o: LsoOffsets,
    mss: usize,
    lso: bool,
    /// The block's `max_mss`.
    max_mss: usize,
}

impl Job {
    fn cmd(&self) -> Vec<u8> {
        TsoCmd::shape().encode(&TsoCmd {
            lso: self.lso as u128,
            ..nicgen::sim_tx::tso_cmd(&self.o, self.mss)
        })
    }
    /// The block's refusal rule (module docs).
    fn refused(&self) -> bool {
        let o = &self.o;
        let odd = [o.outer_l3, o.outer_l4, o.l3, o.l4, o.hdr_len]
            .iter()
            .any(|x| x % 2 == 1);
        self.lso
            && (self.mss == 0
                || self.mss > self.max_mss
                || o.hdr_len > MAX_HDR as usize
                || odd
                || o.tunnel == 3
                || o.l4 + 20 > o.hdr_len
                || self.frame.len() < o.hdr_len)
    }
    /// An LSO send that ends inside its headers (and is not refused for its command): the
    /// block sends its bytes as one frame flagged `bad` in `tuser`.
    fn short(&self) -> bool {
        let o = &self.o;
        self.refused()
            && self.frame.len() < o.hdr_len
            && !Job {
                frame: vec![0; o.hdr_len],
                ..self.clone()
            }
            .refused()
    }
    /// The frames the block must send unflagged.
    fn expect(&self) -> Vec<Vec<u8>> {
        if !self.lso {
            vec![self.frame.clone()]
        } else if self.refused() {
            vec![]
        } else {
            tso(&self.frame, self.mss, &TunnelConfig::default())
                .unwrap_or_else(|e| panic!("model refuses {self:?}: {e}"))
        }
    }
}

/// IPv4 options (router alert) and TCP options (NOP, NOP, timestamps) in a plain IPv4 frame.
fn with_options(mut f: Vec<u8>) -> Vec<u8> {
    let o = offsets(&f);
    assert!(!o.v6 && o.tunnel == 0);
    let l3 = o.l3;
    f.splice(l3 + 20..l3 + 20, [0x94, 4, 0, 0]);
    f[l3] = 0x46;
    let l4 = l3 + 24;
    f.splice(l4 + 20..l4 + 20, [1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9]);
    f[l4 + 12] = 0x80;
    f
}

/// A super-frame: sequence near the wrap, flags ACK|PSH|CWR|FIN, `len` payload bytes, IPv4
/// ID near the wrap; plain (with `vlan`) or encapsulated by `kind`.
fn superframe(
    kind: Option<EncapKind>,
    outer_v6: bool,
    v6: bool,
    vlan: bool,
    len: usize,
) -> Vec<u8> {
    let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::CWR.0 | Flags::FIN.0);
    let inner = Ip { v6, ident: 0xFFFE };
    let payload = pattern(len);
    match kind {
        None => tcp_frame(inner, vlan, 0xFFFF_F000, flags, &payload),
        Some(k) => {
            let plain = tcp_frame(inner, false, 0xFFFF_F000, flags, &payload);
            encap(&plain, &ctx(outer_v6, vlan, k), 0x7FFE).unwrap()
        }
    }
}

/// A random MSS: one byte, a few bytes, around the beat, the usual ones, anything up to the
/// limit `max`.
fn mss(rng: &mut StdRng, w: usize, max: usize) -> usize {
    match rng.gen_range(0..8) {
        0 => 1,
        1 => rng.gen_range(2..40),
        2 => (w as i64 + rng.gen_range(-2..=2)).max(1) as usize,
        3 => 1448,
        4 => 8948.min(max),
        _ => rng.gen_range(1..=max),
    }
}

/// Random jobs: every header shape, payloads mostly short, some to 20 KB; one in eight passed
/// through (when short enough), one in eight refused.
fn jobs(seed: u64, count: usize, w: usize) -> Vec<Job> {
    let mut rng = StdRng::seed_from_u64(seed);
    let vxlan_csum = EncapKind::Vxlan {
        vni: 42,
        dst_port: 4789,
        udp_checksum: true,
    };
    let kinds = [
        None,
        Some(EncapKind::vxlan(42)),
        Some(vxlan_csum),
        Some(NVGRE),
    ];
    (0..count)
        .map(|i| {
            let kind = kinds[rng.gen_range(0..kinds.len())];
            let (outer_v6, v6, vlan): (bool, bool, bool) = (rng.gen(), rng.gen(), rng.gen());
            let len = match rng.gen_range(0..10) {
                0 => 0,
                1 => rng.gen_range(1..10),
                2 => rng.gen_range(5000..20000),
                _ => rng.gen_range(0..3000),
            };
            // IPv4 and TCP options in the plain or inner headers, now and then.
            let frame = match (kind, !v6 && rng.gen_bool(0.3)) {
                (None, true) => with_options(superframe(None, false, false, vlan, len)),
                (Some(k), true) => {
                    let plain = with_options(superframe(None, false, false, false, len));
                    encap(&plain, &ctx(outer_v6, vlan, k), 0x7FFE).unwrap()
                }
                _ => superframe(kind, outer_v6, v6, vlan, len),
            };
            let o = offsets(&frame);
            let max_mss = max_mss(8 * w as u32) as usize;
            let mut mss = mss(&mut rng, w, max_mss);
            if len / mss > 200 {
                mss = len / 100 + 1;
            }
            let mut job = Job {
                frame,
                o,
                mss,
                lso: true,
                max_mss,
            };
            match (i % 8, rng.gen_range(0..7)) {
                (3, _) if job.frame.len() < 9000 => job.lso = false,
                (5, 0) => job.mss = 0,
                (5, 1) => job.mss = max_mss + 1,
                (5, 2) => job.o.hdr_len = job.o.l4 + 18,
                (5, 3) => job.o.l3 += 1,
                (5, 4) => job.o.hdr_len = MAX_HDR as usize + 2,
                (5, 5) => job.o.tunnel = 3,
                (5, _) => job.frame.truncate(rng.gen_range(1..job.o.hdr_len)),
                _ => {}
            }
            job
        })
        .collect()
}

fn cfg(w: u32) -> TsoCfg {
    TsoCfg {
        data_bits: w,
        max_mss: max_mss(w),
        user_bits: 0,
    }
}

/// What one run gave: the frames out, `stat_bad` pulses, and the cycles from the first input
/// beat to the last output beat.
struct Run {
    /// The frames out without the `bad` flag, and their `tuser`s.
    frames: Vec<Vec<u8>>,
    users: Vec<u64>,
    /// The frames out flagged `bad` (sends that ended inside their headers).
    short: Vec<Vec<u8>>,
    bad: usize,
    /// `stat_long` pulses (none of the jobs here earns one).
    flagged: usize,
    cycles: u64,
    /// The cycles of the input's and the output's transfers.
    ti: Vec<u64>,
    to: Vec<u64>,
}

/// Drive `js` with their commands; collect until `want` unflagged frames and a flagged one
/// per short send are out and every refused job is counted.
fn run_jobs(sim: &mut Sim, k: Knobs, js: &[Job], want: usize) -> Run {
    let refused = js.iter().filter(|j| j.refused()).count();
    let want = want + js.iter().filter(|j| j.short()).count();
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mp = StreamPorts::new(sim, "m_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
    let mut cmd = RecordDriver::new(sim, "s_axis_cmd", k.seed ^ 0xc0de, k.idle).unwrap();
    for j in js {
        drv.push(j.frame.clone());
        cmd.push(j.cmd());
    }
    let mut sink = StreamSink::new(mp.clone(), k.seed ^ 0x5eed, k.backpressure);
    let mut mi = StreamMonitor::new(sp.clone(), k.seed);
    let mut mo = StreamMonitor::new(mp.clone(), k.seed);
    let mut ti = Transfers::new(sp);
    let mut to = Transfers::new(mp);
    let bad_p = sim.port("stat_bad").unwrap();
    let long_p = sim.port("stat_long").unwrap();
    let (mut bad, mut flagged) = (0, 0);
    run_until_seeded(sim, k.seed, 2000, |sim| {
        let progressed = step(
            sim,
            &mut [
                &mut drv, &mut cmd, &mut sink, &mut mi, &mut mo, &mut ti, &mut to,
            ],
        )?;
        bad += sim.get_u64(bad_p) as usize;
        flagged += sim.get_u64(long_p) as usize;
        Ok(Status::new(
            progressed,
            sink.frames().len() >= want && bad >= refused,
        ))
    })
    .unwrap_or_else(|e| panic!("seed {:#x}: {e}", k.seed));
    sim.cycles_n(30);
    bad += sim.get_u64(bad_p) as usize;
    flagged += sim.get_u64(long_p) as usize;
    let flagged_bad = |f: &&nicgen_tb::stream::ReceivedFrame| f.user >> USER_BAD & 1 == 1;
    Run {
        frames: sink
            .frames()
            .iter()
            .filter(|f| !flagged_bad(f))
            .map(|f| f.data.clone())
            .collect(),
        users: sink
            .frames()
            .iter()
            .filter(|f| !flagged_bad(f))
            .map(|f| f.user)
            .collect(),
        short: sink
            .frames()
            .iter()
            .filter(flagged_bad)
            .map(|f| f.data.clone())
            .collect(),
        bad,
        flagged,
        cycles: to.cycles.last().unwrap_or(&0) - ti.cycles.first().unwrap_or(&0) + 1,
        ti: ti.cycles,
        to: to.cycles,
    }
}

/// Every segment passes the receive model's checksum verdicts, outer and inner.
fn check_verdicts(seg: &[u8], kind: u8) {
    let t = parse_tunnel(seg, &TunnelConfig::default());
    let want = [TunnelKind::None, TunnelKind::Vxlan, TunnelKind::Nvgre][kind as usize];
    assert_eq!((t.kind, t.malformed), (want, None), "{seg:02x?}");
    assert_eq!(t.outer_csum.l3, Some(true), "{seg:02x?}");
    if let Some(inner) = t.inner {
        assert_eq!(inner.csum.l3, Some(true), "{seg:02x?}");
        assert_eq!(inner.csum.l4, Some(true), "{seg:02x?}");
    } else {
        assert_eq!(t.outer_csum.l4, Some(true), "{seg:02x?}");
    }
}

/// The jobs of `seed` through the block at each width, over the idle x backpressure matrix;
/// Icarus replays one run per width.
fn differential(widths: &[u32], count: usize, icarus: bool) {
    for &w in widths {
        let Some(d) = dut(&tx_tso(&cfg(w)).unwrap_or_else(|e| panic!("{e}")).into_def()) else {
            return;
        };
        for (ki, k) in matrix(300 + w as u64).into_iter().enumerate() {
            let mut sim = recording_sim(&d);
            let js = jobs(k.seed, count, (w / 8) as usize);
            let want: Vec<Vec<u8>> = js.iter().flat_map(|j| j.expect()).collect();
            let r = run_jobs(&mut sim, k, &js, want.len());
            let refused = js.iter().filter(|j| j.refused()).count();
            assert!(
                refused > 0 && js.iter().any(|j| !j.lso),
                "w={w} {k:?}: the jobs exercise refusals and pass-through"
            );
            for (i, (got, want)) in r.frames.iter().zip(&want).enumerate() {
                assert!(
                    got == want,
                    "w={w} {k:?} frame {i}: got {} bytes {got:02x?}, want {} bytes \
                     {want:02x?}; jobs (len, offsets, mss, lso): {:?}",
                    got.len(),
                    want.len(),
                    js.iter()
                        .map(|j| (j.frame.len(), j.o, j.mss, j.lso))
                        .collect::<Vec<_>>()
                );
            }
            assert_eq!(
                (r.frames.len(), r.bad, r.flagged),
                (want.len(), refused, 0),
                "w={w} {k:?}: (frames out, refused)"
            );
            // A short send's bytes come out whole, flagged; every job's last frame carries the
            // last-segment flag, no other does.
            let shorts: Vec<Vec<u8>> = js
                .iter()
                .filter(|j| j.short())
                .map(|j| j.frame.clone())
                .collect();
            assert_eq!(r.short, shorts, "w={w} {k:?}: short sends");
            let mut at = 0;
            for j in &js {
                let n = j.expect().len();
                if j.lso {
                    for s in &r.frames[at..at + n] {
                        check_verdicts(s, j.o.tunnel);
                    }
                }
                for (i, u) in r.users[at..at + n].iter().enumerate() {
                    assert_eq!(
                        u & 1,
                        u64::from(i == n - 1),
                        "w={w} {k:?}: last-segment flag"
                    );
                }
                at += n;
            }
            if icarus && ki == 3 {
                icarus_agrees(&d, &sim.take_recording());
            }
        }
    }
}

#[test]
fn tso_matches_the_model() {
    differential(&[64, 512], 24, true);
}

/// The narrow buses: two bytes per beat (a 128-beat header file); one (a field's two bytes
/// in two beats).
#[test]
fn tso_matches_the_model_at_16_and_8_bits() {
    differential(&[16, 8], 8, false);
}

/// 64 KiB super-frames (plain IPv4, VXLAN over IPv6) at MSS 1448 and 8948, sink always
/// ready: the segments match the model; the cycles from the first beat in to the last beat
/// out are printed beside the beats the segments need. Also printed: the store-and-forward
/// latency of a one-segment frame, from its last beat in to its first beat out.
#[test]
fn tso_throughput_64k() {
    let k = Knobs {
        seed: 5,
        idle: 0.0,
        backpressure: 0.0,
    };
    for w in [64, 512] {
        let Some(d) = dut(&tx_tso(&cfg(w)).unwrap().into_def()) else {
            return;
        };
        let bpb = (w / 8) as usize;
        let frame = superframe(None, false, false, false, 1000);
        let one = [Job {
            o: offsets(&frame),
            frame,
            mss: 1448,
            lso: true,
            max_mss: MAX_MSS as usize,
        }];
        let mut sim = d.model.instance();
        reset(&mut sim);
        let r = run_jobs(&mut sim, k, &one, 1);
        assert!(r.frames == one[0].expect());
        println!(
            "tx_tso w={w}: one segment of 1054 bytes: first beat out {} cycles after the last \
             beat in",
            r.to[0] - r.ti[r.ti.len() - 1]
        );
        for (kind, outer_v6) in [(None, false), (Some(EncapKind::vxlan(7)), true)] {
            for mss in [1448, 8948] {
                let mut frame = superframe(kind, outer_v6, false, false, 0);
                frame.extend(pattern(65536));
                let js = [Job {
                    o: offsets(&frame),
                    frame,
                    mss,
                    lso: true,
                    max_mss: MAX_MSS as usize,
                }];
                let mut sim = d.model.instance();
                reset(&mut sim);
                let want = js[0].expect();
                let r = run_jobs(&mut sim, k, &js, want.len());
                assert!(r.frames == want, "w={w} {kind:?} mss {mss}");
                let beats: usize = want.iter().map(|s| s.len().div_ceil(bpb)).sum();
                let span = r.to[r.to.len() - 1] - r.to[0] + 1;
                println!(
                    "tx_tso w={w} {} mss {mss}: {} segments, {beats} output beats, {} cycles \
                     first beat in to last out ({:.2} beats/cycle), {span} cycles first beat \
                     out to last ({:.2} beats/cycle)",
                    if kind.is_some() { "vxlan/ipv6" } else { "ipv4" },
                    want.len(),
                    r.cycles,
                    beats as f64 / r.cycles as f64,
                    beats as f64 / span as f64
                );
            }
        }
    }
}

/// The 256 KiB super-frame the model allows (512 bits): segmented, not flagged; one byte
/// more: segmented all the same (its first segments are the model's for 256 KiB, the last
/// one byte longer) and counted on `stat_long`.
#[test]
fn tso_quarter_mebibyte() {
    let Some(d) = dut(&tx_tso(&cfg(512)).unwrap().into_def()) else {
        return;
    };
    let mut frame = superframe(Some(NVGRE), true, true, true, 0);
    frame.extend(pattern(256 * 1024));
    let mut job = Job {
        o: offsets(&frame),
        frame,
        mss: 8948,
        lso: true,
        max_mss: MAX_MSS as usize,
    };
    let k = Knobs {
        seed: 9,
        idle: 0.1,
        backpressure: 0.1,
    };
    let want = job.expect();
    let mut sim = d.model.instance();
    reset(&mut sim);
    let r = run_jobs(&mut sim, k, std::slice::from_ref(&job), want.len());
    assert!(r.frames == want && r.flagged == 0);
    job.frame.push(0x5a);
    let mut sim = d.model.instance();
    reset(&mut sim);
    let r = run_jobs(&mut sim, k, &[job], want.len());
    let n = want.len();
    assert_eq!((r.frames.len(), r.flagged), (n, 1));
    assert!(r.frames[..n - 1] == want[..n - 1]);
    assert_eq!(r.frames[n - 1].len(), want[n - 1].len() + 1);
}

#[test]
fn impossible_parameters_are_refused_with_a_reason() {
    let e = tx_tso(&TsoCfg {
        data_bits: 24,
        max_mss: 1000,
        user_bits: 0,
    })
    .unwrap_err();
    assert!(e.to_string().contains("data_bits 24"), "{e}");
    let e = tx_tso(&TsoCfg {
        data_bits: 8,
        max_mss: 9000,
        user_bits: 0,
    })
    .unwrap_err();
    assert!(e.to_string().contains("frame buffer of 32768 beats"), "{e}");
    let e = tx_tso(&TsoCfg {
        data_bits: 64,
        max_mss: 0,
        user_bits: 0,
    })
    .unwrap_err();
    assert!(e.to_string().contains("max_mss 0"), "{e}");
}

#[test]
fn generated_verilog_is_lint_clean() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    for w in [8, 16, 64, 512] {
        let def = tx_tso(&cfg(w)).unwrap();
        lint_clean(&nicgen_edsl::generate(&def, &Default::default()));
    }
}

/// A frame without LSO longer than the frame buffer's segment (`MAX_HDR + max_mss` bytes)
/// leaves cut into pieces of that length, unchanged; one of exactly that length leaves whole.
#[test]
fn long_frames_without_lso_leave_in_pieces() {
    let Some(d) = dut(&tx_tso(&cfg(64)).unwrap().into_def()) else {
        return;
    };
    let piece = (MAX_HDR + MAX_MSS) as usize;
    let whole = superframe(None, false, false, false, piece - 54);
    let long = superframe(None, false, true, true, piece + 500);
    let job = |frame: &Vec<u8>| Job {
        o: offsets(frame),
        frame: frame.clone(),
        mss: 1448,
        lso: false,
        max_mss: MAX_MSS as usize,
    };
    let js = [job(&whole), job(&long)];
    let want: Vec<Vec<u8>> = [whole.clone()]
        .into_iter()
        .chain(long.chunks(piece).map(|c| c.to_vec()))
        .collect();
    assert_eq!((whole.len(), want.len()), (piece, 3));
    let mut sim = d.model.instance();
    reset(&mut sim);
    let k = Knobs {
        seed: 11,
        idle: 0.2,
        backpressure: 0.3,
    };
    let r = run_jobs(&mut sim, k, &js, want.len());
    assert!(r.frames == want && r.bad == 0);
}
