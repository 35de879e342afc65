//! The whole NIC in MAC loopback under the real driver (`nicgen::sim_loopback`): random frames
//! with checksum, VLAN and inline-header requests on several queues at once, by pointer or
//! (`TxMode::Inline`) the small ones wholly in the WQE, or (`TxMode::Bf`) also every WQE through
//! the BlueFlame window, or several per doorbell (doorbell batching), or (`TxMode::Mpwqe`)
//! runs of them as the packets of enhanced multi-packet send WQEs, received into plain or
//! striding RQs, also with CQE compression, come back exactly as the golden model says, while
//! the rings wrap many times and the simulated host answers DMA reads late, out of order, and
//! with stalls. `NICGEN_LOOPBACK_FRAMES` sets the frames per run (400 by default, as in CI);
//! `nicgen sim loopback --frames 10000` is the long run.

use nicgen::sim_loopback::{nic_model, run_loopback, LoopbackOpts, LoopbackReport, RxMode, TxMode};
use nicgen_hdl::preset::Preset;
use nicgen_host::DmaConfig;

fn frames() -> usize {
    std::env::var("NICGEN_LOOPBACK_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

/// DMA reads answered 5-150 cycles late, out of order, with a stalled request one time in five.
fn reordered_stalled(seed: u64) -> DmaConfig {
    DmaConfig {
        seed,
        latency_min: 5,
        latency_max: 150,
        req_stall: 0.2,
        ..DmaConfig::default()
    }
}

fn run(preset: &str, queues: usize, max_len: usize, dma: DmaConfig) {
    run_mode(preset, queues, max_len, dma, TxMode::Plain);
}

fn run_mode(preset: &str, queues: usize, max_len: usize, dma: DmaConfig, tx_mode: TxMode) {
    let _ = run_modes(
        preset,
        queues,
        max_len,
        dma,
        Modes {
            tx: tx_mode,
            ..Modes::default()
        },
    );
}

/// How the driver and the NIC run a loopback: the send and receive modes, frames per send
/// doorbell, CQE compression.
#[derive(Clone, Copy)]
struct Modes {
    tx: TxMode,
    rx: RxMode,
    doorbell_batch: usize,
    cqe_compress: bool,
}

impl Default for Modes {
    fn default() -> Self {
        Modes {
            tx: TxMode::Plain,
            rx: RxMode::Plain,
            doorbell_batch: 1,
            cqe_compress: false,
        }
    }
}

/// `None` when Verilator is missing and not required.
fn run_modes(
    preset: &str,
    queues: usize,
    max_len: usize,
    dma: DmaConfig,
    m: Modes,
) -> Option<LoopbackReport> {
    if !nicgen_tb::verilator::verilator_required() {
        return None;
    }
    let p = Preset::builtin(preset).unwrap();
    let model = nic_model(&p).unwrap();
    let o = LoopbackOpts {
        frames: frames(),
        queues,
        min_len: 60,
        max_len,
        seed: dma.seed,
        dma,
        fixed_len: None,
        window: 0,
        pcap_wire: None,
        tx_mode: m.tx,
        doorbell_batch: m.doorbell_batch,
        cqe_compress: m.cqe_compress,
        cq_session: nicgen::sim_loopback::default_cq_session(m.cqe_compress),
        rx_mode: m.rx,
    };
    let r = run_loopback(&p, &model, &o, |_| {}).unwrap_or_else(|e| panic!("{preset}: {e:#}"));
    assert_eq!(r.frames, o.frames);
    assert_eq!(r.mismatches, 0, "{preset}: {:?}", r.notes);
    if m.tx == TxMode::Mpwqe {
        // Most runs share one WQE: far fewer WQEs than frames.
        assert!(
            2 * r.tx_wqes < r.frames as u64,
            "{preset}: {} WQEs for {} frames",
            r.tx_wqes,
            r.frames
        );
    }
    Some(r)
}

#[test]
fn nic64_four_queues_jumbo_frames_late_reordered_dma() {
    run(
        "nic64",
        4,
        9014,
        DmaConfig {
            seed: 11,
            ..DmaConfig::default()
        },
    );
}

/// Inline sends: every frame up to the inline limit goes wholly in its WQE (header modes,
/// VLAN and checksum requests as random as in the plain runs), the longer ones by pointer,
/// interleaved on the same rings.
#[test]
fn nic64_inline_sends_two_queues_reordered_stalled_dma() {
    run_mode("nic64", 2, 1514, reordered_stalled(15), TxMode::Inline);
}

/// BlueFlame sends: every WQE also written through the doorbell page (the small frames inline),
/// with random sizes, DMA answers late, out of order and stalled, on two queues at once.
#[test]
fn nic64_bf_sends_two_queues_reordered_stalled_dma() {
    run_mode("nic64", 2, 1514, reordered_stalled(17), TxMode::Bf);
}

/// Striding receive: every RQ a multi-packet RQ (16 KiB WQEs of 64-byte strides), frames of
/// random sizes up to jumbo packed into the strides, filler CQEs where a frame does not fit in
/// a WQE's strides left, on two queues with DMA answers late, out of order and stalled.
#[test]
fn nic64_striding_rq_two_queues_reordered_stalled_dma() {
    run_modes(
        "nic64",
        2,
        9014,
        DmaConfig {
            wr_data_stall: 0.2,
            ..reordered_stalled(19)
        },
        Modes {
            rx: RxMode::Striding,
            ..Modes::default()
        },
    );
}

/// Striding receive with BlueFlame sends (the small frames inline) and CQE compression at once:
/// random frames up to 1514 bytes on two queues, DMA answers late, out of order and stalled;
/// every frame as the model says, and the driver checks every CQE's `wqe_id` against the WQE it
/// expects. The sessions here are of send completions (random flows' receive completions
/// differ in their RSS hash, which the checksum mini format does not carry);
/// `striding_rq_compressed_receive_sessions_end_at_the_wqe` compresses receive completions.
#[test]
fn nic64_striding_rq_bf_inline_cqe_compression_reordered_stalled_dma() {
    let Some(r) = run_modes(
        "nic64",
        2,
        1514,
        DmaConfig {
            wr_data_stall: 0.2,
            ..reordered_stalled(23)
        },
        Modes {
            tx: TxMode::Bf,
            rx: RxMode::Striding,
            cqe_compress: true,
            ..Modes::default()
        },
    ) else {
        return;
    };
    assert!(r.compressed.0 > 0, "no compressed session");
}

/// Multi-packet sends: runs of up to 14 frames to one queue go as the packets of enhanced
/// multi-packet send WQEs (one CQE each), frames with a VLAN insert or inline headers as plain
/// SENDs between them, random sizes up to 1514 bytes, DMA answers late, out of order and
/// stalled, on two queues at once.
#[test]
fn nic64_mpwqe_sends_two_queues_reordered_stalled_dma() {
    run_modes(
        "nic64",
        2,
        1514,
        reordered_stalled(21),
        Modes {
            tx: TxMode::Mpwqe,
            doorbell_batch: TxMode::Mpwqe.default_doorbell_batch(),
            ..Modes::default()
        },
    );
}

/// The same at 512 bits with jumbo frames (a multi-packet WQE takes as many as fit the send
/// engine's gather buffer) on three queues.
#[test]
fn nic512_mpwqe_sends_three_queues_jumbo_frames_reordered_stalled_dma() {
    run_modes(
        "nic512",
        3,
        9014,
        reordered_stalled(23),
        Modes {
            tx: TxMode::Mpwqe,
            doorbell_batch: TxMode::Mpwqe.default_doorbell_batch(),
            ..Modes::default()
        },
    );
}

/// A 64-byte frame (60 bytes and the FCS) sent by BlueFlame with its bytes inline makes no DMA
/// read between the driver's first write for it and the frame leaving the MAC (the loop closed
/// outside the NIC, so the frame crosses the MAC port); the same send without BlueFlame reads
/// the WQE, and only the WQE (its 8-byte doorbell carries the producer counter, so the
/// doorbell record is not read).
#[test]
fn nic64_blueflame_inline_64_byte_send_makes_no_dma_read() {
    use nicgen::sim_loopback::open_loopback;
    use nicgen::wire::WireCapture;
    use nicgen_driver::netdev::{NetDevConfig, TxOffload, MAX_BLUEFLAME, MAX_TX_INLINE};
    use nicgen_host::HostConfig;
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let model = nic_model(&p).unwrap();
    let table = vec![0u16; p.rss.table_size as usize];
    let frame = nicgen::traffic::udp_frame(60, 1);
    let off = TxOffload::default();
    let reads_before_leaving = |blueflame: usize| {
        let pcap = std::env::temp_dir().join(format!(
            "nicgen-bf-reads-{}-{blueflame}.pcapng",
            std::process::id()
        ));
        let capture = WireCapture::create(&pcap, p.clock_mhz).unwrap();
        let (mut nd, wire) = open_loopback(
            &p,
            &model,
            HostConfig::from_seed(5),
            &table,
            NetDevConfig {
                tx_inline: MAX_TX_INLINE,
                tx_blueflame: blueflame,
                ..NetDevConfig::default()
            },
            Some(capture),
        )
        .unwrap();
        // One frame around the loop first, then quiet: nothing left in flight.
        let mut sent = 0;
        let mut reads = Vec::new();
        for _ in 0..2 {
            let hw = nd.device().backend();
            hw.run(3000).unwrap();
            let r0 = hw.dma().stats().read_requests;
            nd.send(0, &frame, off).unwrap();
            sent += 1;
            let hw = nd.device().backend();
            let mut left = 20_000;
            while hw.agent(wire).unwrap().counts().tx_frames < sent {
                hw.cycle().unwrap();
                left -= 1;
                assert!(left > 0, "the frame never left");
            }
            reads.push(hw.dma().stats().read_requests - r0);
            let _ = nd.poll(0).unwrap();
        }
        let _ = std::fs::remove_file(&pcap);
        reads[1]
    };
    assert_eq!(reads_before_leaving(MAX_BLUEFLAME), 0, "BlueFlame + inline");
    assert_eq!(
        reads_before_leaving(0),
        1,
        "inline without BlueFlame: the WQE"
    );
}

/// CQE compression: every CQ writes runs of like completions as a title and mini CQEs, which
/// the driver expands; random sizes and requests, DMA answers late, reordered and stalled, and
/// every frame still as the model says (send and receive completions share each CQ, so both
/// kinds of session occur, and error-free runs of both).
#[test]
fn nic64_cqe_compression_two_queues_reordered_stalled_dma() {
    run_modes(
        "nic64",
        2,
        1514,
        reordered_stalled(17),
        Modes {
            cqe_compress: true,
            ..Modes::default()
        },
    );
}

#[test]
fn nic512_three_queues_with_dma_stalls() {
    run(
        "nic512",
        3,
        1514,
        DmaConfig {
            seed: 12,
            latency_min: 10,
            latency_max: 400,
            req_stall: 0.2,
            wr_data_stall: 0.2,
            ..DmaConfig::default()
        },
    );
}

/// Also doorbell batching: runs of 3 frames ring once and ask for one CQE (the window of 8
/// cuts some runs short, which then ring early).
#[test]
fn nic128_two_queues_with_late_dma_batched_doorbells() {
    run_modes(
        "nic128",
        2,
        1514,
        DmaConfig {
            seed: 13,
            latency_min: 20,
            latency_max: 200,
            ..DmaConfig::default()
        },
        Modes {
            doorbell_batch: 3,
            ..Modes::default()
        },
    );
}

#[test]
fn nic256_four_queues_jumbo_frames() {
    run(
        "nic256",
        4,
        9014,
        DmaConfig {
            seed: 14,
            ..DmaConfig::default()
        },
    );
}

/// Bad send descriptors posted through the driver (`NetDev::post_raw`), by plain doorbell and by
/// BlueFlame (the WQE also written through the doorbell page): each completes as an
/// error with its syndrome, stops only its queue, and the driver's reset brings it back; the
/// other queue keeps working throughout. Every case must reach the NIC: one the driver's
/// encoder refuses fails the test, since the NIC's check would go untested.
#[test]
fn bad_descriptors_error_their_queue_only_and_recover() {
    bad_descriptors(false, false);
}

/// The same inside enhanced multi-packet send WQEs: each bad packet after a good one fails the
/// whole WQE (no packet of it is sent) and names its own segment; an inline header or a VLAN
/// insert in such a WQE is LOCAL_QP_OP.
#[test]
fn bad_multi_packet_wqes_error_their_queue_only_and_recover() {
    bad_descriptors(false, true);
}

/// The same with CQE compression on both CQs: the error CQEs are never compressed and still
/// reach their own queue, between the other completions' sessions.
#[test]
fn bad_descriptors_with_cqe_compression_error_their_queue_only_and_recover() {
    bad_descriptors(true, false);
}

/// Bad WQEs through the driver: SENDs, or (`mpwqe`) enhanced multi-packet sends whose bad
/// packet follows a good one.
fn bad_descriptors(cqe_compress: bool, mpwqe: bool) {
    use nicgen::sim_loopback::open_loopback;
    use nicgen_driver::desc::{
        CsFlags, DataSeg, EthSeg, Gather, L2Header, SendOpcode, SendWqe, Syndrome,
    };
    use nicgen_driver::netdev::{Completion, NetDevConfig, TxOffload, MAX_BLUEFLAME};
    use nicgen_host::HostConfig;
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let model = nic_model(&p).unwrap();
    let table: Vec<u16> = (0..p.rss.table_size).map(|i| (i % 2) as u16).collect();
    // Plain doorbells, then every WQE (all are at most 256 bytes) also by BlueFlame (plain
    // doorbells only with compression: the send path is the same).
    let blueflames: &[usize] = if cqe_compress {
        &[0]
    } else {
        &[0, MAX_BLUEFLAME]
    };
    for &tx_blueflame in blueflames {
        let how = if tx_blueflame > 0 { " (BlueFlame)" } else { "" };
        let (mut nd, _) = open_loopback(
            &p,
            &model,
            HostConfig::from_seed(3),
            &table,
            NetDevConfig {
                queues: 2,
                tx_blueflame,
                cqe_compress,
                cq_session: nicgen::sim_loopback::default_cq_session(cqe_compress),
                ..NetDevConfig::default()
            },
            None,
        )
        .unwrap();
        let lkey = nd.lkey().0;
        let good = nicgen::traffic::udp_frame(200, 1);
        let off = TxOffload {
            csum_l3: true,
            csum_l4: true,
            vlan_tci: None,
            inline_headers: false,
            lso: None,
        };
        // Each case: a WQE with one data segment (byte_count, lkey, addr), after that many bytes of
        // inline data, and its syndrome.
        let cases = [
            (
                "lkey not registered",
                0usize,
                (64u32, lkey + 5, 0x1_0000_0000u64),
                Syndrome::LocalProt,
            ),
            (
                "address outside the region",
                0,
                (64, lkey, 0x10_0000),
                Syndrome::LocalProt,
            ),
            (
                "longer than the largest frame",
                0,
                (20_000, lkey, 0x1_0000_0000),
                Syndrome::LocalLength,
            ),
            (
                "zero length",
                0,
                (0, lkey, 0x1_0000_0000),
                Syndrome::LocalLength,
            ),
            (
                "zero length after inline data",
                20,
                (0, lkey, 0x1_0000_0000),
                Syndrome::LocalLength,
            ),
            (
                "lkey not registered after inline data",
                33,
                (64, lkey + 5, 0x1_0000_0000),
                Syndrome::LocalProt,
            ),
        ];
        // A multi-packet WQE's good first packet (the driver's region starts at the simulated
        // host memory's base).
        let good_packet = Gather::Ptr(DataSeg {
            byte_count: 60,
            lkey,
            addr: 0x1_0000_0000,
        });
        let eth = |header| EthSeg {
            cs_flags: CsFlags::default(),
            header,
            lso: None,
        };
        let mut wqes: Vec<(&str, SendWqe, Syndrome, usize)> = cases
            .into_iter()
            .map(|(what, inline, (n, k, a), synd)| {
                let wqe = SendWqe {
                    opcode: if mpwqe {
                        SendOpcode::EnhancedMpsw
                    } else {
                        SendOpcode::Send
                    },
                    wqe_index: 0,
                    sqn: 0,
                    cq_update: true,
                    eth: Some(eth(L2Header::None)),
                    gather: [
                        mpwqe.then(|| good_packet.clone()),
                        (inline > 0).then(|| Gather::Inline(vec![0x5A; inline])),
                        Some(Gather::Ptr(DataSeg {
                            byte_count: n,
                            lkey: k,
                            addr: a,
                        })),
                    ]
                    .into_iter()
                    .flatten()
                    .collect(),
                };
                // The failing segment: the pointer, after ctrl, eth, the good packet and the
                // inline data's DS.
                let seg = 2
                    + usize::from(mpwqe)
                    + if inline > 0 {
                        (4 + inline).div_ceil(16)
                    } else {
                        0
                    };
                (what, wqe, synd, seg)
            })
            .collect();
        if mpwqe {
            for (what, header) in [
                ("inline header", L2Header::Inline(good[..18].to_vec())),
                ("VLAN insert", L2Header::VlanInsert(5)),
            ] {
                let wqe = SendWqe {
                    opcode: SendOpcode::EnhancedMpsw,
                    wqe_index: 0,
                    sqn: 0,
                    cq_update: true,
                    eth: Some(eth(header)),
                    gather: vec![good_packet.clone(), good_packet.clone()],
                };
                wqes.push((what, wqe, Syndrome::LocalQpOp, 0));
            }
        }
        // Completions of queue `q` until one matches, polling and waiting in device time.
        let next = |nd: &mut nicgen_driver::netdev::NetDev<nicgen_host::SimHost>, q: usize| {
            for _ in 0..200 {
                let cs = nd.poll(q).unwrap();
                if let Some(c) = cs.into_iter().find(|c| !matches!(c, Completion::Tx { .. })) {
                    return c;
                }
                let _ = nd.wait(1 << q, 50_000);
            }
            panic!("queue {q}: nothing came back");
        };
        let (n_cases, mut reached, mut refused) = (wqes.len(), 0, Vec::new());
        for (what, wqe, synd, seg) in wqes {
            // Every case must reach the hardware: a WQE the driver's encoder refuses would leave
            // the NIC's check untested.
            if let Err(e) = nd.post_raw(0, wqe) {
                refused.push(format!("{what}: {e}"));
                continue;
            }
            reached += 1;
            match next(&mut nd, 0) {
                Completion::Error {
                    syndrome,
                    vendor_syndrome,
                    ..
                } => {
                    assert_eq!(
                        (syndrome, vendor_syndrome as usize),
                        (synd, seg),
                        "{what}{how}"
                    )
                }
                c => panic!("{what}{how}: expected an error completion, got {c:?}"),
            }
            // Queue 1 still works while queue 0 is in error (the frame comes back on the RQ RSS
            // picks, either one).
            nd.send(1, &good, off).unwrap();
            let mut back = false;
            for _ in 0..200 {
                back = (0..2).any(|q| {
                    nd.poll(q)
                        .unwrap()
                        .iter()
                        .any(|c| matches!(c, Completion::Rx(_)))
                });
                if back {
                    break;
                }
                let _ = nd.wait(3, 50_000);
            }
            assert!(back, "{what}{how}: the other queue");
            nd.reset_queue_after_error(0).unwrap();
            nd.send(0, &good, off).unwrap();
        }
        assert!(
            refused.is_empty() && reached == n_cases,
            "{reached} of {n_cases} bad descriptors reached the NIC; the driver refused: {refused:?}"
        );
    }
}

/// A bad striding receive WQE through the driver's raw receive post (an lkey the NIC does not
/// know, or an address outside the region), with and without CQE compression: the first frame
/// RSS sends into it completes in error (LOCAL_PROT, segment 1, the CQE naming that WQE in
/// `wqe_id`), RQ 0 stops while queue 1 keeps sending and receiving, and after the driver's
/// reset RQ 0 takes frames again; every frame received is one that was sent, whole.
#[test]
fn bad_striding_receive_wqes_error_their_queue_only_and_recover() {
    for cqe_compress in [false, true] {
        bad_striding_receive_wqes(cqe_compress);
    }
}

fn bad_striding_receive_wqes(cqe_compress: bool) {
    use nicgen::sim_loopback::open_loopback;
    use nicgen_driver::desc::{DataSeg, Syndrome};
    use nicgen_driver::device::RqStrides;
    use nicgen_driver::netdev::{Completion, Direction, NetDev, NetDevConfig, TxOffload};
    use nicgen_host::{HostConfig, SimHost};
    use std::collections::HashSet;
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let model = nic_model(&p).unwrap();
    let table: Vec<u16> = (0..p.rss.table_size).map(|i| (i % 2) as u16).collect();
    // Two WQEs per RQ of 256 64-byte strides (16 KiB: the largest frame fits), frames up to
    // jumbo: the raw WQE comes up after a few frames.
    let (mut nd, _) = open_loopback(
        &p,
        &model,
        HostConfig::from_seed(5),
        &table,
        NetDevConfig {
            queues: 2,
            rq_log_size: 1,
            tx_buf_size: 9014,
            rx_striding: Some(RqStrides {
                log_num_strides: 8,
                log_stride_size: 6,
            }),
            cqe_compress,
            cq_session: nicgen::sim_loopback::default_cq_session(cqe_compress),
            ..NetDevConfig::default()
        },
        None,
    )
    .unwrap();
    let how = if cqe_compress {
        " (CQE compression)"
    } else {
        ""
    };
    let lkey = nd.lkey().0;
    // No offload: a frame comes back exactly as sent.
    let off = TxOffload::default();
    let mut sent = HashSet::new();
    let mut seq = 0usize;
    // Send one frame (alternating queues, sizes 60..=9014), then poll both queues: the frames
    // received per RQ, and the receive errors.
    let mut step = |nd: &mut NetDev<SimHost>, what: &str| {
        seq += 1;
        let mut f = nicgen::traffic::udp_frame(60 + (seq * 2711) % 8955, seq);
        // A flow of its own (UDP source port; no UDP checksum), so RSS spreads the frames.
        f[34..36].copy_from_slice(&(seq as u16).to_be_bytes());
        sent.insert(f.clone());
        nd.send(seq % 2, &f, off).unwrap();
        let (mut rx, mut errs) = ([0usize; 2], Vec::new());
        for _ in 0..50 {
            for q in 0..2 {
                for c in nd.poll(q).unwrap() {
                    match c {
                        Completion::Rx(r) => {
                            assert!(sent.contains(&r.data), "{what}{how}: a frame not sent");
                            rx[r.queue] += 1;
                        }
                        Completion::Error {
                            kind: Direction::Receive,
                            syndrome,
                            vendor_syndrome,
                            queue,
                            ..
                        } => errs.push((queue, syndrome, vendor_syndrome)),
                        Completion::Tx { .. } => {}
                        c => panic!("{what}{how}: {c:?}"),
                    }
                }
            }
            if rx.iter().sum::<usize>() + errs.len() > 0 {
                break;
            }
            let _ = nd.wait(3, 20_000);
        }
        (rx, errs)
    };
    for (what, seg) in [
        (
            "lkey not registered",
            DataSeg {
                byte_count: 16384,
                lkey: lkey + 5,
                addr: 0x1_0000_0000,
            },
        ),
        (
            "address outside the region",
            DataSeg {
                byte_count: 16384,
                lkey,
                addr: 0x10_0000,
            },
        ),
    ] {
        nd.post_rx_raw(0, seg).unwrap();
        // Frames until one reaches the raw WQE; RQ 0 takes frames before it.
        let (mut errs, mut before) = (Vec::new(), 0);
        for _ in 0..100 {
            let (rx, e) = step(&mut nd, what);
            before += rx[0];
            errs.extend(e);
            if !errs.is_empty() {
                break;
            }
        }
        assert_eq!(
            errs,
            [(0, Syndrome::LocalProt, 1)],
            "{what}{how}: the error"
        );
        assert!(before > 0, "{what}{how}: no frame before the raw WQE");
        // RQ 0 is in error: its frames are dropped; queue 1 keeps sending and receiving.
        let mut rx = [0usize; 2];
        for _ in 0..12 {
            let (r, e) = step(&mut nd, what);
            assert!(e.is_empty(), "{what}{how}: {e:?}");
            (rx[0], rx[1]) = (rx[0] + r[0], rx[1] + r[1]);
        }
        assert_eq!(rx[0], 0, "{what}{how}: RQ 0 in error took a frame");
        assert!(rx[1] > 0, "{what}{how}: queue 1 stopped");
        nd.reset_queue_after_error(0).unwrap();
        let mut back = 0;
        for _ in 0..30 {
            back += step(&mut nd, what).0[0];
            if back > 2 {
                break;
            }
        }
        assert!(back > 2, "{what}{how}: RQ 0 did not recover");
    }
}

/// Compressed receive sessions on a striding RQ: bursts of one flow's 60-byte frames (one
/// stride each), sent from queue 1 and received on RQ 0, so that CQ 0 holds only their
/// completions, which the NIC writes as compressed sessions. A session never spans two WQEs
/// (the mini CQE has no `wqe_id`; the driver checks each expanded CQE's against the WQE it
/// expects), and each frame comes back whole, in order, in the WQE its strides are in.
#[test]
fn striding_rq_compressed_receive_sessions_end_at_the_wqe() {
    use nicgen::sim_loopback::open_loopback;
    use nicgen_driver::netdev::{Completion, NetDevConfig, TxOffload};
    use nicgen_host::HostConfig;
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let model = nic_model(&p).unwrap();
    let table: Vec<u16> = (0..p.rss.table_size).map(|i| (i % 2) as u16).collect();
    let (mut nd, _) = open_loopback(
        &p,
        &model,
        HostConfig::from_seed(7),
        &table,
        NetDevConfig {
            queues: 2,
            rq_log_size: 2,
            rx_striding: RxMode::Striding.rx_striding(),
            cqe_compress: true,
            cq_session: nicgen::sim_loopback::default_cq_session(true),
            ..NetDevConfig::default()
        },
        None,
    )
    .unwrap();
    let off = TxOffload::default();
    let frame = |port: u16, k: usize| {
        let mut f = nicgen::traffic::udp_frame(60, k);
        f[34..36].copy_from_slice(&port.to_be_bytes());
        f
    };
    // Send `frames` from queue 1 and poll both queues until as many frames came back: the
    // received frames (queue, data, WQE).
    let burst = |nd: &mut nicgen_driver::netdev::NetDev<nicgen_host::SimHost>,
                 frames: &[Vec<u8>]| {
        for (i, f) in frames.iter().enumerate() {
            if i + 1 < frames.len() {
                nd.send_more(1, f, off).unwrap();
            } else {
                nd.send(1, f, off).unwrap();
            }
        }
        let mut got = Vec::new();
        for _ in 0..400 {
            for q in 0..2 {
                for c in nd.poll(q).unwrap() {
                    match c {
                        Completion::Rx(r) => got.push((r.queue, r.data, r.wqe)),
                        Completion::Tx { .. } => {}
                        c => panic!("{c:?}"),
                    }
                }
            }
            if got.len() == frames.len() {
                break;
            }
            let _ = nd.wait(3, 20_000);
        }
        assert_eq!(got.len(), frames.len(), "frames back");
        got
    };
    // A flow RSS puts on RQ 0: its probe frame is the first in RQ 0, at stride 0 of WQE 0.
    let port = (1u16..64)
        .find(|&port| burst(&mut nd, &[frame(port, 0)])[0].0 == 0)
        .expect("a flow for RQ 0");
    let (sessions, _) = nd.compressed();
    // RQ 0's current WQE and the strides used in it.
    let (mut wqe, mut stride) = (0u16, 1usize);
    let mut k = 0;
    for _ in 0..12 {
        let frames: Vec<Vec<u8>> = (0..40)
            .map(|_| {
                k += 1;
                frame(port, k)
            })
            .collect();
        let got = burst(&mut nd, &frames);
        for ((q, data, w), f) in got.into_iter().zip(&frames) {
            assert_eq!((q, &data), (0, f), "frame {k}: whole, in order, on RQ 0");
            // One stride each: the WQE changes after its 256 strides.
            if w == wqe {
                stride += 1;
            } else {
                assert_eq!(w, wqe.wrapping_add(1), "frame {k}: the next WQE");
                assert_eq!(stride, 256, "WQE {wqe} left before its strides were used");
                stride = 1;
            }
            wqe = w;
        }
    }
    let (after, in_sessions) = nd.compressed();
    eprintln!("{} sessions, {in_sessions} completions", after - sessions);
    assert!(wqe >= 1, "the frames crossed a WQE boundary");
    assert!(
        after - sessions > 20,
        "few compressed sessions: {}",
        after - sessions
    );
}

/// LSO and encapsulation end to end: the driver posts LSO WQEs (plain TCP over IPv4 and IPv6,
/// and VXLAN and NVGRE super-frames the host encapsulated), some on a send queue created with
/// the NIC's VXLAN encapsulation context; the NIC segments and encapsulates, the loopback
/// returns the wire frames, and the RX path de-capsulates the NIC's tunnel (its VNI steered).
/// Every segment comes back as the golden model's (`tx_frames`, then the RX path's
/// de-capsulation), with good checksum verdicts; the RX counters agree.
#[test]
fn nic64_lso_and_encapsulated_sends_come_back_as_the_models_segments() {
    use nicgen::sim_loopback::open_loopback;
    use nicgen_driver::device::{InnerOffload, TunnelKind};
    use nicgen_driver::lso::LsoRequest;
    use nicgen_driver::netdev::{Completion, NetDevConfig, TxOffload};
    use nicgen_host::HostConfig;
    use nicgen_model::encap::{encap, EncapKind};
    use nicgen_model::tcp::Flags;
    use nicgen_model::tx::{tx_frames, TxRequest};
    use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip, NVGRE};
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let model = nic_model(&p).unwrap();
    let table = vec![0u16; p.rss.table_size as usize];
    let nic_ctx = ctx(false, false, EncapKind::vxlan(0x5A5A));
    // Super-frames: (frame, mss, sent on the encapsulating queue).
    let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::CWR.0);
    let sends: Vec<(Vec<u8>, usize, bool)> = [
        (false, None, 3000usize, 1448usize, false),
        (true, None, 4000, 1000, false),
        (false, Some(EncapKind::vxlan(42)), 5000, 1400, false),
        (true, Some(NVGRE), 2000, 536, false),
        (false, None, 8000, 1448, true),
        (true, None, 1, 1448, true),
        (false, None, 6000, 2900, true),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (v6, kind, len, mss, on_encap))| {
        let plain = tcp_frame(
            Ip {
                v6,
                ident: 100 * i as u16,
            },
            false,
            1000 * i as u32,
            flags,
            &pattern(len),
        );
        let f = match kind {
            Some(k) => encap(&plain, &ctx(v6, false, k), 7).unwrap(),
            None => plain,
        };
        (f, mss, on_encap)
    })
    .collect();
    // The model: the wire frames, then the RX path's de-capsulation of the NIC's tunnel.
    let mut id = 0u16;
    let mut want: Vec<(bool, Vec<u8>)> = Vec::new();
    for (f, mss, on_encap) in &sends {
        let req = TxRequest {
            mss: Some(*mss),
            encap: on_encap.then_some(nic_ctx),
            ..TxRequest::default()
        };
        for w in tx_frames(f, &req, p.parser.window as usize, &mut id).unwrap() {
            let w = &w[..w.len() - 4];
            want.push((
                *on_encap,
                if *on_encap {
                    w[nic_ctx.outer_len()..].to_vec()
                } else {
                    w.to_vec()
                },
            ));
        }
    }
    let open = |encap: Option<u8>| {
        open_loopback(
            &p,
            &model,
            HostConfig::from_seed(9),
            &table,
            NetDevConfig {
                tx_buf_size: 9216,
                tx_encap: encap,
                ..NetDevConfig::default()
            },
            None,
        )
        .unwrap()
        .0
    };
    let mut got: Vec<Vec<u8>> = Vec::new();
    for on_encap in [false, true] {
        let mut nd = open(on_encap.then_some(0));
        if on_encap {
            nd.device()
                .program_encap(0, &nicgen::tx_opts::driver_ctx(&nic_ctx))
                .unwrap();
            nd.device()
                .program_tunnels(
                    4789,
                    false,
                    InnerOffload::NONE,
                    &[(TunnelKind::Vxlan, 0x5A5A, 0)],
                )
                .unwrap();
        }
        let mine: Vec<&(Vec<u8>, usize, bool)> = sends.iter().filter(|s| s.2 == on_encap).collect();
        let expect = want.iter().filter(|w| w.0 == on_encap).count();
        let mut back = 0;
        for (f, mss, _) in &mine {
            let off = TxOffload {
                lso: Some(LsoRequest::for_frame(f, *mss as u16, 4789).unwrap()),
                ..TxOffload::default()
            };
            nd.send(0, f, off).unwrap();
        }
        for _ in 0..2000 {
            for c in nd.poll(0).unwrap() {
                match c {
                    Completion::Rx(r) => {
                        // (A tunnel the host encapsulated comes back whole: its verdicts are
                        // the outer headers'.)
                        if r.tunnel_kind == 0 || r.decapped {
                            assert!(r.l3_ok && r.l4_ok, "segment {back}: checksum verdicts");
                        }
                        assert_eq!(r.decapped, on_encap, "segment {back}: de-capsulated");
                        got.push(r.data);
                        back += 1;
                    }
                    Completion::Tx { .. } => {}
                    c => panic!("{c:?}"),
                }
            }
            if back == expect {
                break;
            }
            let _ = nd.wait(1, 20_000);
        }
        assert_eq!(
            back, expect,
            "segments back (encapsulating queue: {on_encap})"
        );
    }
    assert_eq!(got.len(), want.len());
    for (i, (g, (_, w))) in got.iter().zip(&want).enumerate() {
        assert!(g == w, "segment {i}: got {g:02x?}\nwant {w:02x?}");
    }
}

/// Tunnels delivered whole through the whole NIC and the driver with the inner offloads on:
/// VXLAN and NVGRE frames (IPv4 outers, IPv4 and IPv6 inner TCP) complete with `tunneled`, not
/// `decapped`, and CHECKSUM_UNNECESSARY at level 1; one with a corrupted inner TCP checksum
/// has `l4_ok` clear (its outer headers are good), so nothing is claimed verified; RSS hashed
/// the inner flow (the hash of the same inner frame sent plain). With the inner offloads off
/// the same frames are not `tunneled`: the VXLAN ones complete at level 0 (their outer UDP
/// checksum), the NVGRE ones at none (no outer L4 checksum).
#[test]
fn nic64_tunnels_delivered_whole_get_the_inner_offloads() {
    use nicgen::sim_loopback::open_loopback;
    use nicgen_driver::device::InnerOffload;
    use nicgen_driver::netdev::{Completion, NetDevConfig, RxFrame, TxOffload};
    use nicgen_host::HostConfig;
    use nicgen_model::encap::{encap, EncapKind};
    use nicgen_model::tcp::Flags;
    use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip, NVGRE};
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let p = Preset::builtin("nic64").unwrap();
    let model = nic_model(&p).unwrap();
    let table = vec![0u16; p.rss.table_size as usize];
    let (mut nd, _) = open_loopback(
        &p,
        &model,
        HostConfig::from_seed(11),
        &table,
        NetDevConfig::default(),
        None,
    )
    .unwrap();
    // Every frame sent comes back (one queue, RSS table of zeros).
    let round_trip = |nd: &mut nicgen_driver::netdev::NetDev<_>, f: &[u8]| -> RxFrame {
        nd.send(0, f, TxOffload::default()).unwrap();
        for _ in 0..2000 {
            for c in nd.poll(0).unwrap() {
                match c {
                    Completion::Rx(r) => return r,
                    Completion::Tx { .. } => {}
                    c => panic!("{c:?}"),
                }
            }
            let _ = nd.wait(1, 20_000);
        }
        panic!("the frame did not come back");
    };
    let flags = Flags(Flags::ACK.0 | Flags::PSH.0);
    // (inner frame, tunnel kind, corrupt the inner TCP checksum)
    let cases = [
        (false, EncapKind::vxlan(42), false),
        (true, EncapKind::vxlan(43), false),
        (false, NVGRE, false),
        (true, NVGRE, false),
        (false, EncapKind::vxlan(44), true),
    ];
    for inner_on in [true, false] {
        let inner = if inner_on {
            InnerOffload::ALL
        } else {
            InnerOffload::NONE
        };
        nd.device()
            .program_tunnels(4789, false, inner, &[])
            .unwrap();
        for (i, &(v6, kind, bad)) in cases.iter().enumerate() {
            let ctx_s = format!("inner offloads {inner_on}, case {i}");
            let mut plain = tcp_frame(
                Ip {
                    v6,
                    ident: i as u16,
                },
                false,
                7,
                flags,
                &pattern(200),
            );
            if bad {
                // The TCP checksum's first byte (after Ethernet and a 20-byte IPv4 header).
                plain[14 + 20 + 16] ^= 0x55;
            }
            let f = encap(&plain, &ctx(false, false, kind), 9).unwrap();
            let r = round_trip(&mut nd, &f);
            assert_eq!(r.data, f, "{ctx_s}: delivered whole");
            assert!(!r.decapped && r.tunnel_kind != 0, "{ctx_s}: {r:?}");
            assert_eq!(r.tunneled, inner_on, "{ctx_s}: tunneled");
            // Without the inner offloads only the outer headers count: VXLAN's UDP checksum
            // is verified (level 0), NVGRE's outer has no L4 checksum to verify (none).
            let vxlan = kind != NVGRE;
            let level = if inner_on {
                (!bad).then_some(1)
            } else {
                vxlan.then_some(0)
            };
            assert_eq!(r.csum_unnecessary(), level, "{ctx_s}: {r:?}");
            assert!(r.l3_ok, "{ctx_s}: l3_ok");
            if inner_on {
                let alone = round_trip(&mut nd, &plain);
                assert_eq!(
                    r.rss_hash, alone.rss_hash,
                    "{ctx_s}: RSS hashed the inner flow"
                );
            }
        }
    }
}
