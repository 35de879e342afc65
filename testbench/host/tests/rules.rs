//! The host's side of the contract at the ports, with the test playing the NIC by hand
//! (`fixtures::puppet`): every DMA rule violation is caught and named; answers are contiguous,
//! reordered only when asked, and `err` for unallocated memory; unallocated writes are dropped
//! and counted; reads wait for earlier writes; `irq` pulses are latched per vector; a BAR
//! transaction that is never answered fails after its budget, naming the missing handshake;
//! with a PCIe link model, a read is answered after the configured latency and reads and writes
//! stream at the link's rate less its TLP costs, as `nicgen_host::link` predicts.

mod fixtures;
use fixtures::*;
use nicgen_driver::hw::{DmaMemory, Interrupts, RegisterSpace};
use nicgen_hdl::host::{DmaRdCplUser, DmaRdReq, DmaWrReq, Shape};
use nicgen_host::{AxilError, DmaConfig, DmaRule, HostConfig, HostError, PcieLink, SimHost};
use nicgen_tb::stream::{StreamMonitor, StreamPorts};
use nicgen_tb::Model;

const W: u32 = 64;
const BEAT: usize = (W / 8) as usize;
const VECTORS: u32 = 3;

fn puppet_model() -> Option<Model> {
    model(&puppet(W, VECTORS))
}

/// The test, playing the NIC's side of the ports.
struct Nic {
    host: SimHost,
}

impl Nic {
    fn new(model: &Model, dma: DmaConfig) -> Nic {
        Nic::with(
            model,
            HostConfig {
                dma,
                ..HostConfig::default()
            },
        )
    }

    fn with(model: &Model, config: HostConfig) -> Nic {
        Nic {
            host: host(model, config),
        }
    }

    /// Drives the NIC output `name` (through the puppet's `drv_<name>`).
    fn drive(&mut self, name: &str, bytes: &[u8]) {
        let sim = self.host.sim_mut();
        let p = sim.port(&format!("drv_{name}")).expect("puppet port");
        sim.set_bytes_le(p, bytes);
    }

    fn drive_bit(&mut self, name: &str, v: bool) {
        self.drive(name, &[u8::from(v)]);
    }

    /// What the host drives on input `name` in the cycle just run.
    fn host_bit(&self, name: &str) -> bool {
        let sim = self.host.sim();
        sim.get_bool(sim.port(name).expect("contract port"))
    }

    /// Offers an item on channel `ch` (`tdata` plus `extra` ports) until the host takes it.
    fn offer(&mut self, ch: &str, tdata: &[u8], extra: &[(&str, &[u8])]) -> Result<(), HostError> {
        self.drive(&format!("{ch}_tdata"), tdata);
        for (suffix, v) in extra {
            self.drive(&format!("{ch}_{suffix}"), v);
        }
        self.drive_bit(&format!("{ch}_tvalid"), true);
        let mut taken = false;
        for _ in 0..1000 {
            self.host.cycle()?;
            taken = self.host_bit(&format!("{ch}_tready"));
            if taken {
                break;
            }
        }
        self.drive_bit(&format!("{ch}_tvalid"), false);
        assert!(taken, "the host never took the item on {ch}");
        Ok(())
    }

    fn read(&mut self, addr: u64, len: usize, tag: u8) -> Result<(), HostError> {
        let req = DmaRdReq::shape().encode(&DmaRdReq {
            addr: u128::from(addr),
            len: len as u128,
            tag: u128::from(tag),
            ..Default::default()
        });
        self.offer("m_dma_rd_req", &req, &[])
    }

    fn write_req(&mut self, addr: u64, len: usize) -> Result<(), HostError> {
        let req = DmaWrReq::shape().encode(&DmaWrReq {
            addr: u128::from(addr),
            len: len as u128,
            ..Default::default()
        });
        self.offer("m_dma_wr_req", &req, &[])
    }

    fn write_beat(&mut self, data: &[u8], keep: u8, last: bool) -> Result<(), HostError> {
        self.offer(
            "m_dma_wr",
            data,
            &[("tkeep", &[keep]), ("tlast", &[u8::from(last)])],
        )
    }

    /// A well-formed write: request, then its beats.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), HostError> {
        self.write_req(addr, data.len())?;
        let beats: Vec<&[u8]> = data.chunks(BEAT).collect();
        for (i, b) in beats.iter().enumerate() {
            self.write_beat(b, keep(b.len()), i + 1 == beats.len())?;
        }
        Ok(())
    }

    /// Takes answers (with `tready` always high) until `n` are complete or `cycles` pass.
    fn answers(&mut self, n: usize, cycles: u64) -> Vec<Answer> {
        self.drive_bit("s_dma_rd_cpl_tready", true);
        let sim_port = |h: &SimHost, s: &str| h.sim().port(&format!("s_dma_rd_cpl_{s}")).unwrap();
        let p = ["tdata", "tkeep", "tvalid", "tlast", "tuser"].map(|s| sim_port(&self.host, s));
        let mut out: Vec<Answer> = Vec::new();
        let mut current: Option<Answer> = None;
        for _ in 0..cycles {
            if out.len() == n {
                break;
            }
            self.host.cycle().unwrap_or_else(|e| panic!("{e}"));
            let sim = self.host.sim();
            if !sim.get_bool(p[2]) {
                continue;
            }
            let user = DmaRdCplUser::shape().decode(&sim.get_bytes_le(p[4]));
            let tag = user.tag as u8;
            let a = current.get_or_insert_with(|| Answer {
                tag,
                err: user.err != 0,
                data: Vec::new(),
            });
            assert_eq!(a.tag, tag, "beats of answers interleaved");
            let n_keep = sim.get_u64(p[1]).count_ones() as usize;
            assert_eq!(
                sim.get_u64(p[1]),
                u64::from(keep(n_keep)),
                "tkeep contiguous"
            );
            a.data.extend_from_slice(&sim.get_bytes_le(p[0])[..n_keep]);
            if sim.get_bool(p[3]) {
                out.extend(current.take());
            }
        }
        out
    }

    /// Takes answer beats (with `tready` always high) until `n` answers are complete; returns
    /// the cycle indices of the first and the last beat.
    fn beat_cycles(&mut self, n: usize, limit: u64) -> (u64, u64) {
        self.drive_bit("s_dma_rd_cpl_tready", true);
        let sim = self.host.sim();
        let valid = sim.port("s_dma_rd_cpl_tvalid").unwrap();
        let last = sim.port("s_dma_rd_cpl_tlast").unwrap();
        let (mut first, mut done) = (None, 0);
        for _ in 0..limit {
            self.host.cycle().unwrap_or_else(|e| panic!("{e}"));
            let sim = self.host.sim();
            if sim.get_bool(valid) {
                let now = sim.cycles() - 1;
                first.get_or_insert(now);
                if sim.get_bool(last) {
                    done += 1;
                    if done == n {
                        return (first.unwrap(), now);
                    }
                }
            }
        }
        panic!("{done} of {n} answers in {limit} cycles");
    }
}

#[derive(Debug)]
struct Answer {
    tag: u8,
    err: bool,
    data: Vec<u8>,
}

fn keep(n: usize) -> u8 {
    ((1u16 << n) - 1) as u8
}

/// Expects the violation of `rule` on `channel`.
fn violated(r: Result<(), HostError>, rule: DmaRule, channel: &str) -> String {
    match r {
        Err(HostError::Dma(v)) if v.rule == rule && v.channel == channel => v.to_string(),
        other => panic!("expected {rule} broken on {channel}, got {other:?}"),
    }
}

#[test]
fn request_lengths_and_boundaries_are_checked() {
    let Some(m) = puppet_model() else { return };
    let base = HostConfig::default().memory.base;
    let cases: [(&str, u64, usize, DmaRule); 4] = [
        ("m_dma_rd_req", base, 0, DmaRule::Length),
        ("m_dma_wr_req", base, 4097, DmaRule::Length),
        ("m_dma_rd_req", base + 0xff0, 32, DmaRule::Boundary),
        ("m_dma_wr_req", base + 1, 4096, DmaRule::Boundary),
    ];
    for (ch, addr, len, rule) in cases {
        let mut nic = Nic::new(&m, DmaConfig::default());
        let r = if ch == "m_dma_rd_req" {
            nic.read(addr, len, 0)
        } else {
            nic.write_req(addr, len)
        };
        let msg = violated(r, rule, ch);
        assert!(msg.contains(&format!("{len} bytes at {addr:#x}")), "{msg}");
    }
    // The largest legal requests pass.
    let mut nic = Nic::new(&m, DmaConfig::default());
    nic.read(base, 4096, 0).unwrap();
    nic.write_req(base + 0xfff, 1).unwrap();
}

#[test]
fn a_tag_is_not_reused_while_outstanding() {
    let Some(m) = puppet_model() else { return };
    let base = HostConfig::default().memory.base;
    let slow = DmaConfig {
        latency_min: 100,
        latency_max: 100,
        ..DmaConfig::default()
    };
    let mut nic = Nic::new(&m, slow);
    nic.read(base, 8, 3).unwrap();
    nic.read(base, 8, 4).unwrap();
    let msg = violated(nic.read(base + 8, 8, 3), DmaRule::TagInUse, "m_dma_rd_req");
    assert!(msg.contains("tag 3"), "{msg}");
    // Once its answer is complete the tag is free again.
    let fast = DmaConfig {
        latency_min: 2,
        latency_max: 2,
        ..DmaConfig::default()
    };
    let mut nic = Nic::new(&m, fast);
    nic.read(base, 8, 3).unwrap();
    assert_eq!(nic.answers(1, 100).len(), 1);
    nic.read(base, 8, 3).unwrap();
}

#[test]
fn write_beats_tlast_and_tkeep_are_checked() {
    let Some(m) = puppet_model() else { return };
    let base = HostConfig::default().memory.base;
    let data = [7u8; BEAT];
    // (request length, beats as (tkeep, tlast) of which the last breaks `rule`, words of the
    // message). 12 bytes are a full beat, then 4 bytes with tlast.
    type Case<'a> = (usize, &'a [(u8, bool)], DmaRule, &'a [&'a str]);
    let cases: [Case; 4] = [
        (
            12,
            &[(0xff, true)],
            DmaRule::WriteBeats,
            &["beat 1 of 2", "tlast before"],
        ),
        (
            8,
            &[(0xff, false)],
            DmaRule::WriteBeats,
            &["beat 1 of 1", "no tlast"],
        ),
        (
            12,
            &[(0x7f, false)],
            DmaRule::WriteKeep,
            &["tkeep 0x7f", "(tkeep 0xff)"],
        ),
        (
            12,
            &[(0xff, false), (0xff, true)],
            DmaRule::WriteKeep,
            &["carries 4 bytes"],
        ),
    ];
    for (len, beats, rule, words) in cases {
        let mut nic = Nic::new(&m, DmaConfig::default());
        nic.write_req(base, len).unwrap();
        let Some(((keep, last), good)) = beats.split_last() else {
            continue;
        };
        for (k, l) in good {
            nic.write_beat(&data, *k, *l).unwrap();
        }
        let msg = violated(nic.write_beat(&data, *keep, *last), rule, "m_dma_wr");
        assert!(words.iter().all(|w| msg.contains(w)), "{msg}");
    }
}

#[test]
fn requests_hold_until_taken() {
    let Some(m) = puppet_model() else { return };
    let never = DmaConfig {
        req_stall: 1.0,
        ..DmaConfig::default()
    };
    let req = DmaRdReq::shape().encode(&DmaRdReq {
        addr: 0x1_0000_0000,
        len: 8,
        ..Default::default()
    });
    let mut nic = Nic::new(&m, never.clone());
    nic.drive("m_dma_rd_req_tdata", &req);
    nic.drive_bit("m_dma_rd_req_tvalid", true);
    nic.host.cycle().unwrap();
    nic.drive_bit("m_dma_rd_req_tvalid", false);
    let msg = violated(nic.host.cycle().map(|_| ()), DmaRule::Hold, "m_dma_rd_req");
    assert!(msg.contains("tvalid fell"), "{msg}");

    let mut nic = Nic::new(&m, never);
    let wr_req = |len| {
        DmaWrReq::shape().encode(&DmaWrReq {
            len,
            ..Default::default()
        })
    };
    nic.drive("m_dma_wr_req_tdata", &wr_req(8));
    nic.drive_bit("m_dma_wr_req_tvalid", true);
    nic.host.cycle().unwrap();
    nic.drive("m_dma_wr_req_tdata", &wr_req(9));
    let msg = violated(nic.host.cycle().map(|_| ()), DmaRule::Hold, "m_dma_wr_req");
    assert!(msg.contains("changed"), "{msg}");
}

/// Eight reads of 20 bytes at distinct offsets, answered with `config`; returns the answers.
fn eight_reads(m: &Model, config: DmaConfig) -> (Vec<Answer>, Vec<u8>) {
    let mut nic = Nic::new(m, config);
    let r = nic.host.alloc(4096, 4096).expect("region");
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 13 + 5) as u8).collect();
    nic.host.write(r.addr, &data);
    let mon = StreamPorts::new(nic.host.sim(), "s_dma_rd_cpl").unwrap();
    nic.host.add_agent(StreamMonitor::new(mon, 1));
    for tag in 0..8u8 {
        nic.read(r.addr + u64::from(tag) * 100, 20, tag).unwrap();
    }
    let answers = nic.answers(8, 1000);
    assert_eq!(answers.len(), 8);
    (answers, data)
}

#[test]
fn answers_are_whole_correct_and_reordered_only_when_asked() {
    let Some(m) = puppet_model() else { return };
    let jittery = DmaConfig {
        seed: 11,
        latency_min: 10,
        latency_max: 100,
        ..DmaConfig::default()
    };
    for reorder in [true, false] {
        let (answers, data) = eight_reads(
            &m,
            DmaConfig {
                reorder,
                ..jittery.clone()
            },
        );
        for a in &answers {
            let at = usize::from(a.tag) * 100;
            assert!(!a.err);
            assert_eq!(a.data, data[at..at + 20], "answer of tag {}", a.tag);
        }
        let tags: Vec<u8> = answers.iter().map(|a| a.tag).collect();
        let in_order = tags.windows(2).all(|t| t[0] < t[1]);
        assert_eq!(
            in_order, !reorder,
            "reorder {reorder}: answer order {tags:?}"
        );
    }
}

#[test]
fn unallocated_memory_reads_answer_err_and_writes_are_dropped() {
    let Some(m) = puppet_model() else { return };
    let mut nic = Nic::new(&m, DmaConfig::default());
    let r = nic.host.alloc(64, 64).expect("region");
    // A read that runs 8 bytes past the region.
    nic.read(r.addr + 40, 32, 9).unwrap();
    let a = nic.answers(1, 1000);
    assert!(a[0].err && a[0].tag == 9, "{a:?}");
    assert_eq!(a[0].data, [0; 32]);
    // A write that runs past the region is dropped whole: its mapped part is not written.
    nic.write(r.addr + 40, &[0xee; 32]).unwrap();
    nic.write(r.addr, &[0x11; 8]).unwrap();
    let mut back = [0u8; 64];
    nic.host.read(r.addr, &mut back);
    assert_eq!(back[..8], [0x11; 8]);
    assert_eq!(back[8..], [0; 56]);
    let s = nic.host.dma().stats();
    assert_eq!(
        (s.read_errors, s.dropped_writes, s.dropped_write_bytes),
        (1, 1, 32)
    );
    assert_eq!((s.writes, s.write_bytes), (1, 8));
}

#[test]
fn a_read_does_not_pass_an_earlier_write() {
    let Some(m) = puppet_model() else { return };
    let quick = DmaConfig {
        latency_min: 1,
        latency_max: 1,
        ..DmaConfig::default()
    };
    let mut nic = Nic::new(&m, quick);
    let r = nic.host.alloc(64, 64).expect("region");
    nic.write_req(r.addr, 8).unwrap();
    nic.read(r.addr, 8, 0).unwrap();
    // The write's data comes 20 cycles later; the read must see it.
    nic.host.run(20).unwrap();
    assert_eq!(nic.host.dma().outstanding_reads(), 1, "the read waits");
    nic.write_beat(&[0x5a; 8], 0xff, true).unwrap();
    let a = nic.answers(1, 100);
    assert_eq!(a[0].data, [0x5a; 8]);
}

#[test]
fn irq_pulses_are_latched_per_vector() {
    let Some(m) = puppet_model() else { return };
    let mut nic = Nic::new(&m, DmaConfig::default());
    assert_eq!(nic.host.vectors(), VECTORS as usize);
    for bits in [0b101, 0b001] {
        nic.drive("irq", &[bits]);
        nic.host.cycle().unwrap();
    }
    nic.drive("irq", &[0]);
    assert_eq!(nic.host.wait(0b010, 1000), 0, "vector 1 never fired");
    assert_eq!(nic.host.wait(0b011, 1000), 0b001);
    assert_eq!(nic.host.irq().pending(), 0b100, "vector 2 stays pending");
    assert_eq!(
        nic.host.wait(0b100, 0),
        0b100,
        "already pending: no time needed"
    );
    assert_eq!(nic.host.irq().pending(), 0);
    let counts: Vec<u64> = (0..3).map(|v| nic.host.irq().count(v)).collect();
    assert_eq!(counts, [2, 0, 1]);
}

fn bar_host(m: &Model) -> Nic {
    Nic::with(
        m,
        HostConfig {
            axil_budget: 50,
            ..HostConfig::default()
        },
    )
}

fn timeout(r: Result<impl std::fmt::Debug, HostError>) -> &'static str {
    match r {
        Err(HostError::Axil(AxilError::Timeout {
            waiting_for,
            budget: 50,
            ..
        })) => waiting_for,
        other => panic!("expected a BAR timeout, got {other:?}"),
    }
}

#[test]
fn bar_transactions_fail_after_the_budget() {
    let Some(m) = puppet_model() else { return };
    let mut nic = bar_host(&m);
    let t0 = nic.host.cycles();
    assert_eq!(timeout(nic.host.try_read32(0x40)), "arready");
    assert_eq!(nic.host.cycles() - t0, 50);
    assert_eq!(timeout(nic.host.try_write32(0x40, 1)), "awready and wready");
    nic.drive_bit("s_axil_awready", true);
    assert_eq!(timeout(nic.host.try_write32(0x40, 1)), "wready");
    nic.drive_bit("s_axil_wready", true);
    assert_eq!(timeout(nic.host.try_write32(0x40, 1)), "bvalid");
    nic.drive_bit("s_axil_arready", true);
    assert_eq!(timeout(nic.host.try_read32(0x40)), "rvalid");
    let msg = nic.host.try_read32(0x40).unwrap_err().to_string();
    assert!(
        msg.contains("no rvalid within 50 cycles") && msg.contains("never answered"),
        "{msg}"
    );
}

#[test]
fn bar_responses_and_offsets_are_checked() {
    let Some(m) = puppet_model() else { return };
    let mut nic = bar_host(&m);
    for p in [
        "s_axil_arready",
        "s_axil_rvalid",
        "s_axil_awready",
        "s_axil_wready",
        "s_axil_bvalid",
    ] {
        nic.drive_bit(p, true);
    }
    nic.drive("s_axil_rdata", &0x1234_5678u32.to_le_bytes());
    assert_eq!(nic.host.try_read32(0x40).unwrap(), 0x1234_5678);
    nic.host.try_write32(0x40, 5).unwrap();
    nic.drive("s_axil_rresp", &[2]);
    let e = nic.host.try_read32(0x40).unwrap_err();
    assert!(
        matches!(e, HostError::Axil(AxilError::Response { resp: 2, .. })),
        "{e:?}"
    );
    assert!(e.to_string().contains("SLVERR"), "{e}");
    for bad in [0x3, 1 << 20] {
        let e = nic.host.try_write32(bad, 0).unwrap_err();
        assert!(
            matches!(e, HostError::Axil(AxilError::BadOffset { .. })),
            "{e:?}"
        );
    }
}

#[test]
fn the_driver_traits_panic_with_the_error() {
    let Some(m) = puppet_model() else { return };
    let mut nic = bar_host(&m);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| nic.host.read32(0x40)));
    let msg = panicked.expect_err("a dead BAR must not read as a value");
    let msg = msg.downcast_ref::<String>().expect("a formatted message");
    assert!(
        msg.starts_with("simulated host, register read: BAR read at 0x40: no arready"),
        "{msg}"
    );
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut buf = [0u8; 4];
        nic.host.read(0x10, &mut buf)
    }));
    let msg = panicked.expect_err("reading unallocated memory must fail");
    let msg = msg.downcast_ref::<String>().expect("a formatted message");
    assert!(
        msg.contains("4 bytes at 0x10 are not all inside allocated memory"),
        "{msg}"
    );
}

#[test]
fn the_host_refuses_a_model_without_the_contract() {
    let Some(m) = model(&contract_without_irq()) else {
        return;
    };
    let e = SimHost::new(m.instance(), HostConfig::default()).unwrap_err();
    assert!(e.to_string().contains("port `irq`: missing"), "{e}");
}

/// A module with the DMA and BAR ports of the contract but no `irq`.
fn contract_without_irq() -> std::rc::Rc<nicgen_edsl::ModuleDef> {
    use nicgen_edsl::prelude::*;
    Module::build("no_irq", || {
        for (name, width, nic_drives) in contract_ports(W, 1) {
            match (name, nic_drives) {
                ("irq", _) => {}
                (_, true) => output(name, lit(width, 0u32)),
                (_, false) => {
                    input(name, width).unused();
                }
            }
        }
    })
    .unwrap()
}

/// PCIe Gen3 x1 at 250 MHz: 3.94 wire bytes a cycle, narrower than the puppet's 8-byte beats,
/// so the link and not the port sets the pace.
const X1_MHZ: f64 = 250.0;

fn x1(latency_ns: u64) -> DmaConfig {
    DmaConfig::pcie(PcieLink::gen3(1), X1_MHZ, latency_ns, 3)
}

#[test]
fn a_pcie_read_is_answered_after_its_latency_in_cycles() {
    let Some(m) = puppet_model() else { return };
    for (ns, cycles) in [(1000, 250), (2000, 500), (10, 3)] {
        let config = DmaConfig::pcie(PcieLink::gen3(16), X1_MHZ, ns, 1);
        assert_eq!((config.latency_min, config.latency_max), (cycles, cycles));
        let mut nic = Nic::new(&m, config);
        let r = nic.host.alloc(64, 64).expect("region");
        nic.read(r.addr, 64, 0).unwrap();
        let accepted = nic.host.cycles() - 1;
        let (first, last) = nic.beat_cycles(1, 10_000);
        assert_eq!(first - accepted, cycles, "{ns} ns at {X1_MHZ} MHz");
        assert_eq!(
            last - first,
            7,
            "eight beats, the x16 link never holds one back"
        );
    }
}

#[test]
fn pcie_reads_stream_at_the_link_rate_less_the_completion_headers() {
    let Some(m) = puppet_model() else { return };
    // Eight aligned 4 KiB reads, all accepted before the first answer is due (each costs 8
    // request TLPs upstream: 49 cycles), so the answers stream back to back.
    let reads = 8u64;
    let config = x1(4000);
    let timing = config.link.expect("a link");
    let mut nic = Nic::new(&m, config);
    let r = nic.host.alloc(4096 * reads as usize, 4096).expect("region");
    for tag in 0..reads {
        nic.read(r.addr + tag * 4096, 4096, tag as u8).unwrap();
    }
    let (first, last) = nic.beat_cycles(reads as usize, 100_000);
    // Downstream per read: the data and 16 completion TLPs of 256 B, 20 B each. The last
    // beat (8 B, no TLP start) goes as soon as the wire is free, before it is paid for.
    let per_read = timing.read_cost(0, 4096).1 - 8 * 4;
    assert_eq!(per_read, 4096 + 16 * 20);
    let predicted = ((reads * per_read - 8) as f64 / timing.bytes_per_cycle).round() as u64;
    // The wire moves in whole cycles: one cycle at each end.
    assert!(
        last - first + 2 >= predicted && last - first <= predicted + 2,
        "{} cycles from first to last beat, the link model says {predicted}",
        last - first
    );
    assert!(
        predicted > reads * 512 + 500,
        "the link, not the port's beat, must be the limit"
    );
    let s = nic.host.dma().stats();
    assert_eq!(
        (s.link_up_bytes, s.link_down_bytes),
        (
            reads * timing.read_cost(0, 4096).0,
            reads * timing.read_cost(0, 4096).1
        ),
        "{s:?}"
    );
}

#[test]
fn pcie_writes_stream_at_the_link_rate_less_the_write_headers() {
    let Some(m) = puppet_model() else { return };
    let writes = 4u64;
    let config = x1(1000);
    let timing = config.link.expect("a link");
    let mut nic = Nic::new(&m, config);
    let r = nic
        .host
        .alloc(4096 * writes as usize, 4096)
        .expect("region");
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    let t0 = nic.host.cycles();
    for w in 0..writes {
        nic.write(r.addr + w * 4096, &data).unwrap();
    }
    let took = nic.host.cycles() - t0;
    // Upstream per write: the data and 16 posted write TLPs of 256 B, 24 B each.
    let per_write = timing.write_cost(0, 4096).0;
    assert_eq!(per_write, 4096 + 16 * 24);
    let predicted = ((writes * per_write - 8) as f64 / timing.bytes_per_cycle).round() as u64;
    assert!(
        took + 2 >= predicted && took <= predicted + 2 + writes,
        "{took} cycles for {writes} writes of 4 KiB, the link model says {predicted}"
    );
    let s = nic.host.dma().stats();
    assert_eq!(
        (s.link_up_bytes, s.link_down_bytes),
        (writes * per_write, writes * timing.write_cost(0, 4096).1),
        "{s:?}"
    );
    let mut back = vec![0; 4096];
    nic.host.read(r.addr + 3 * 4096, &mut back);
    assert!(back == data, "the last write landed");
}
