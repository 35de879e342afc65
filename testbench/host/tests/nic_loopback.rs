//! The whole NIC (`nicgen_hdl::nic`) in MAC loopback, driven by the real driver (`sw-driver`'s
//! `Device` and `NetDev`) through the simulated host: random frames with checksum-offload and
//! VLAN requests on several queues at once, every frame back intact with the flags the golden
//! model gives (`nicgen_model::tx::tx_frame` then `rx::rx_frame`), rings wrapping many times,
//! DMA answers late and out of order. `NICGEN_LOOPBACK_FRAMES` sets the frame count (400 by
//! default, as in CI; `nicgen sim loopback --frames N` runs longer ones).

use nicgen_driver::device::{Device, RssEnables};
use nicgen_driver::netdev::{Completion, NetDev, NetDevConfig, TxOffload};
use nicgen_hdl::host::bar_regs::BuildInfo;
use nicgen_hdl::nic::nic;
use nicgen_hdl::preset::Preset;
use nicgen_hdl::top::rx_cfg;
use nicgen_host::{HostConfig, SimHost};
use nicgen_model::rx::{rx_frame, RxConfig};
use nicgen_model::toeplitz::MICROSOFT_KEY;
use nicgen_model::tx::{tx_frame, TxRequest};
use nicgen_tb::stream::{StreamDriver, StreamPorts, StreamSink};
use nicgen_tb::{Model, VerilatorBuild, VerilatorOptions};
use rand::{rngs::StdRng, Rng, SeedableRng};

fn model(p: &Preset) -> Option<Model> {
    if !nicgen_tb::verilator::verilator_required() {
        return None;
    }
    let g = nicgen_edsl::generate(&nic(p, &BuildInfo::unknown()).unwrap(), &Default::default());
    Some(
        VerilatorBuild::new(
            &g.top,
            g.verilog.clone(),
            &g.shim_cpp,
            VerilatorOptions::default(),
        )
        .build()
        .unwrap(),
    )
}

/// An IPv4 or IPv6 TCP/UDP frame of `len` bytes (or a plain one) with garbage checksums.
fn frame(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    let v6 = rng.gen_bool(0.3);
    let proto: u8 = if rng.gen_bool(0.5) { 6 } else { 17 };
    if rng.gen_bool(0.1) {
        f.extend([0x88, 0xb5]);
        f.extend((0..len - 14).map(|_| rng.gen::<u8>()));
        return f;
    }
    let hdr = if v6 { 40 } else { 20 };
    let l4len = len.max(14 + hdr + 20) - 14 - hdr;
    if v6 {
        f.extend([0x86, 0xdd, 0x60, 0, 0, 0]);
        f.extend((l4len as u16).to_be_bytes());
        f.extend([proto, 64]);
        f.extend((0..32).map(|_| rng.gen::<u8>()));
    } else {
        f.extend([0x08, 0x00, 0x45, 0]);
        f.extend(((20 + l4len) as u16).to_be_bytes());
        f.extend([0, 0, 0x40, 0, 64, proto, rng.gen(), rng.gen()]);
        f.extend((0..8).map(|_| rng.gen::<u8>()));
    }
    let l4 = f.len();
    f.extend((0..l4len).map(|_| rng.gen::<u8>()));
    if proto == 6 {
        f[l4 + 12] = 0x50;
    } else {
        f[l4 + 4..l4 + 6].copy_from_slice(&(l4len as u16).to_be_bytes());
    }
    f
}

fn frames_wanted() -> usize {
    std::env::var("NICGEN_LOOPBACK_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

fn loopback(preset: &str, queues: usize, seed: u64, max_len: usize) {
    let p = Preset::builtin(preset).unwrap();
    let Some(m) = model(&p) else { return };
    let mut host = SimHost::new(m.instance(), HostConfig::from_seed(seed)).unwrap();
    // The MAC side is unused in loopback: nothing comes in, whatever goes out is taken.
    let mac_rx = StreamDriver::new(
        StreamPorts::new(host.sim(), "s_axis_mac_rx").unwrap(),
        seed,
        0.0,
    );
    let mac_tx = StreamSink::new(
        StreamPorts::new(host.sim(), "m_axis_mac_tx").unwrap(),
        seed,
        0.0,
    );
    host.add_agent(mac_rx);
    let wire = host.add_agent(mac_tx);
    host.reset(4).unwrap();
    let mut dev = Device::open(host).unwrap();
    dev.set_loopback(true).unwrap();
    let table: Vec<u16> = (0..p.rss.table_size)
        .map(|i| (i as usize % queues) as u16)
        .collect();
    dev.program_rss(&MICROSOFT_KEY, RssEnables::ALL, &table)
        .unwrap();
    let mut nd = NetDev::new(
        dev,
        NetDevConfig {
            queues,
            sq_log_size: 5,
            rq_log_size: 4,
            eq_log_size: 6,
            rx_buf_size: 9216,
            tx_buf_size: max_len,
            ..NetDevConfig::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rcfg = rx_cfg(&p);
    let mcfg = RxConfig {
        max_frame: rcfg.max_frame() as usize,
        window: rcfg.window as usize,
        rss_key: MICROSOFT_KEY,
        rss_enables: 0x3F,
        table: table.iter().map(|&q| q as u32).collect(),
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let n = frames_wanted();
    let mut expected: std::collections::VecDeque<(Vec<u8>, nicgen_model::rx::RxReport)> =
        Default::default();
    let (mut sent, mut received) = (0usize, 0usize);
    let mut in_flight = 0usize;
    while received < n {
        // Keep a few frames in flight per queue.
        while sent < n && in_flight < 8 {
            let len = if rng.gen_bool(0.1) {
                rng.gen_range(1000..=max_len)
            } else {
                rng.gen_range(60..300)
            };
            let f = frame(&mut rng, len);
            let off = TxOffload {
                csum_l3: rng.gen(),
                csum_l4: rng.gen(),
                vlan_tci: rng.gen_bool(0.2).then(|| rng.gen::<u16>() & 0xEFFF),
                inline_headers: rng.gen_bool(0.3),
            };
            let req = TxRequest {
                csum_l3: off.csum_l3,
                csum_l4: off.csum_l4,
                vlan_tci: off.vlan_tci,
            };
            let on_wire = tx_frame(&f, &req, rcfg.window as usize);
            let (report, delivered) = rx_frame(&on_wire, &mcfg);
            let delivered = delivered.expect("a good frame is delivered");
            let q = sent % queues;
            nd.send(q, &f, off)
                .unwrap_or_else(|e| panic!("send {sent}: {e}"));
            expected.push_back((delivered, report));
            sent += 1;
            in_flight += 1;
        }
        let mut got_any = false;
        for q in 0..queues {
            for c in nd.poll(q).unwrap() {
                match c {
                    Completion::Rx(r) => {
                        // Frames come back in order per RSS queue; match by content.
                        let pos = expected
                            .iter()
                            .position(|(d, _)| *d == r.data)
                            .unwrap_or_else(|| {
                                panic!(
                                    "{preset}: frame {} bytes came back that was not sent",
                                    r.data.len()
                                )
                            });
                        let (_, rep) = expected.remove(pos).unwrap();
                        assert_eq!(r.l3_ok, rep.l3_csum_ok == Some(true), "{preset}: l3_ok");
                        assert_eq!(r.l4_ok, rep.l4_csum_ok == Some(true), "{preset}: l4_ok");
                        assert_eq!(Some(r.csum), rep.csum, "{preset}: checksum-complete");
                        assert_eq!(Some(r.rss_hash), rep.rss_hash, "{preset}: RSS hash");
                        assert_eq!(
                            r.vlan.map(|t| (t & 0xFFF, (t >> 13) as u8)),
                            rep.vlan,
                            "{preset}: VLAN"
                        );
                        assert_eq!(Some(r.queue as u32), rep.queue, "{preset}: RSS queue");
                        received += 1;
                        in_flight -= 1;
                        got_any = true;
                    }
                    Completion::Tx { .. } => {}
                    Completion::Error {
                        queue,
                        kind,
                        syndrome,
                        ..
                    } => {
                        panic!(
                            "{preset}: error completion on queue {queue} ({kind:?}): {syndrome:?}"
                        )
                    }
                }
            }
        }
        if !got_any {
            if let Err(e) = nd.wait((1u64 << queues) - 1, 200_000) {
                let st = nd.device().stats();
                let dma = nd.device().backend().dma().stats();
                let wire = nd
                    .device()
                    .backend()
                    .agent(wire)
                    .map_or(0, |s| s.frames().len());
                panic!("{preset}: {e} after {sent} sent, {received} received; counters {:?}; DMA {dma:?}; {wire} frames on the wire", st.named());
            }
        }
    }
    let mut dev = nd.close().unwrap();
    let stats = dev.stats();
    let _ = wire;
    let named = stats.named();
    let get = |k: &str| named.iter().find(|(n, _)| *n == k).map(|x| x.1).unwrap();
    assert_eq!(get("rx_delivered"), n as u64, "{preset}: RX_DELIVERED");
    assert_eq!(get("tx_frames"), n as u64, "{preset}: TX_FRAMES");
    assert_eq!(get("rx_no_wqe"), 0, "{preset}: no frame without a buffer");
}

#[test]
fn loopback_nic64_two_queues() {
    loopback("nic64", 2, 1, 1514);
}

#[test]
fn loopback_nic512_three_queues() {
    loopback("nic512", 3, 2, 1514);
}
