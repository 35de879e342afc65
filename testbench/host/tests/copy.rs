//! End to end through the driver's traits: the copy-engine fixture (`fixtures::copy_engine`)
//! copies random bytes between two DMA regions, programmed over the BAR and waited for by
//! interrupt, at 64 and 512 bits, with the host's latency, reordering, stall and bandwidth
//! knobs on and off; stream monitors check both data streams every cycle.

mod fixtures;
use fixtures::*;
use nicgen_driver::hw::{Backend, DmaMemory, Interrupts, RegisterSpace};
use nicgen_host::{DmaConfig, HostConfig, SimHost};
use nicgen_tb::stream::{StreamMonitor, StreamPorts};
use nicgen_tb::Model;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// Generous simulated time for one copy: 1 ms.
const TIMEOUT_NS: u64 = 1_000_000;

/// Starts a copy of `len` bytes from `src` to `dst`, over the BAR.
fn start_copy(bar: &mut impl RegisterSpace, src: u64, dst: u64, len: usize) {
    bar.write32(reg::SRC_LO, src as u32);
    bar.write32(reg::SRC_HI, (src >> 32) as u32);
    bar.write32(reg::DST_LO, dst as u32);
    bar.write32(reg::DST_HI, (dst >> 32) as u32);
    bar.write32(reg::LEN, len as u32);
    bar.write32(reg::CTRL, 1);
}

/// What the driver side saw of one copy.
struct Copied {
    data: Vec<u8>,
    status: u32,
    irq: u64,
}

/// One copy of `data`, using only the driver's traits: allocate, fill, program, wait, read.
fn copy_via_driver(b: &mut impl Backend, data: &[u8]) -> Copied {
    let align = CHUNK as usize;
    let src = b.alloc(data.len(), align).expect("source region");
    let dst = b.alloc(data.len(), align).expect("destination region");
    b.write(src.addr, data);
    b.wmb();
    start_copy(b, src.addr, dst.addr, data.len());
    let irq = b.wait(1, TIMEOUT_NS);
    let status = b.read32(reg::STATUS);
    let mut copy = vec![0; data.len()];
    b.read(dst.addr, &mut copy);
    b.free(src);
    b.free(dst);
    Copied {
        data: copy,
        status,
        irq,
    }
}

const LENGTHS: [usize; 8] = [1, 7, 64, 255, 256, 1000, 4196, 9000];

fn chunks(len: usize) -> u64 {
    len.div_ceil(CHUNK as usize) as u64
}

/// Runs the copies of [`LENGTHS`] under `dma`; checks data, status, interrupts and the DMA
/// counters; returns the host for knob-specific checks.
fn copies(model: &Model, dma: DmaConfig) -> SimHost {
    let seed = dma.seed;
    let mut host = host(
        model,
        HostConfig {
            dma,
            ..HostConfig::default()
        },
    );
    let cpl = StreamPorts::new(host.sim(), "s_dma_rd_cpl").expect("completion stream");
    let wr = StreamPorts::new(host.sim(), "m_dma_wr").expect("write stream");
    let beat = cpl.data_bytes;
    let mon_cpl = host.add_agent(StreamMonitor::new(cpl, seed));
    let mon_wr = host.add_agent(StreamMonitor::new(wr, seed));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut beats = 0;
    for (i, len) in LENGTHS.into_iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        let got = copy_via_driver(&mut host, &data);
        let what = format!(
            "copy of {len} bytes (seed {seed:#x}, {:?})",
            host.config().dma
        );
        assert_eq!(got.irq, 1, "{what}: no interrupt");
        assert_eq!(got.status, DONE, "{what}: status");
        assert!(got.data == data, "{what}: the copy differs");
        assert_eq!(
            host.irq().count(0),
            i as u64 + 1,
            "{what}: one message per copy"
        );
        beats += (0..chunks(len))
            .map(|c| {
                (len - c as usize * CHUNK as usize)
                    .min(CHUNK as usize)
                    .div_ceil(beat)
            })
            .sum::<usize>() as u64;
    }
    let s = host.dma().stats();
    let reads: u64 = LENGTHS.iter().map(|l| chunks(*l)).sum();
    let bytes: u64 = LENGTHS.iter().map(|l| *l as u64).sum();
    assert_eq!((s.read_requests, s.reads_answered), (reads, reads), "{s:?}");
    assert_eq!((s.read_bytes, s.write_bytes), (bytes, bytes), "{s:?}");
    assert_eq!(s.writes, reads, "{s:?}");
    assert_eq!((s.read_errors, s.dropped_writes), (0, 0), "{s:?}");
    assert!(host.dma().is_idle());
    for id in [mon_cpl, mon_wr] {
        let mon = host.agent(id).expect("monitor");
        assert_eq!(mon.beats(), beats, "beats on each data stream");
        assert_eq!(mon.frames(), reads, "one answer and one write per chunk");
    }
    host
}

fn models() -> Option<Vec<(u32, Model)>> {
    [64, 512]
        .into_iter()
        .map(|w| model(&copy_engine(w)).map(|m| (w, m)))
        .collect()
}

#[test]
fn copies_with_latency_and_reordering() {
    let Some(models) = models() else { return };
    for (w, m) in &models {
        let host = copies(
            m,
            DmaConfig {
                seed: 0x100 + u64::from(*w),
                ..DmaConfig::default()
            },
        );
        let s = host.dma().stats();
        assert!(
            s.out_of_order > 0,
            "{w} bits: answers never overtook ({s:?})"
        );
        assert_eq!(
            s.max_outstanding, TAGS as usize,
            "{w} bits: the engine keeps all its tags busy"
        );
    }
}

#[test]
fn copies_in_order_with_minimal_latency() {
    let Some(models) = models() else { return };
    for (w, m) in &models {
        let host = copies(
            m,
            DmaConfig {
                seed: 0x200 + u64::from(*w),
                latency_min: 1,
                latency_max: 1,
                reorder: false,
                ..DmaConfig::default()
            },
        );
        let s = host.dma().stats();
        assert_eq!(s.out_of_order, 0, "{w} bits: reorder is off ({s:?})");
    }
}

#[test]
fn copies_under_stalls_and_narrow_bandwidth() {
    let Some(models) = models() else { return };
    for (w, m) in &models {
        let bytes_per_cycle = 3;
        let dma = DmaConfig {
            seed: 0x300 + u64::from(*w),
            latency_min: 5,
            latency_max: 60,
            max_outstanding_reads: 2,
            bytes_per_cycle: Some(bytes_per_cycle),
            req_stall: 0.3,
            wr_data_stall: 0.3,
            ..DmaConfig::default()
        };
        let host = copies(m, dma);
        let s = host.dma().stats();
        assert_eq!(
            s.max_outstanding, 2,
            "{w} bits: the host's limit holds ({s:?})"
        );
        let bytes: u64 = LENGTHS.iter().map(|l| *l as u64).sum();
        assert!(
            host.cycles() >= bytes / u64::from(bytes_per_cycle),
            "{w} bits: {bytes} bytes each way in {} cycles at {bytes_per_cycle} bytes/cycle",
            host.cycles()
        );
    }
}

#[test]
fn registers_read_back_through_the_bar() {
    let Some(m) = model(&copy_engine(64)) else {
        return;
    };
    let mut host = host(&m, HostConfig::from_seed(4));
    let before = host.cycles();
    host.write32(reg::SCRATCH, 0xdead_beef);
    host.write32(reg::LEN, 1234);
    assert_eq!(host.read32(reg::SCRATCH), 0xdead_beef);
    assert_eq!(host.read32(reg::LEN), 1234);
    assert_eq!(host.read32(reg::STATUS), 0, "idle after reset");
    assert!(host.cycles() > before, "BAR accesses take simulated time");
}

#[test]
fn unallocated_source_answers_err_and_zeros() {
    let Some(m) = model(&copy_engine(64)) else {
        return;
    };
    let mut host = host(&m, HostConfig::from_seed(5));
    let len = 1000;
    let gone = host.alloc(len, 256).expect("region");
    let dst = host.alloc(len, 256).expect("region");
    host.free(gone);
    host.write(dst.addr, &vec![0xaa; len]);
    start_copy(&mut host, gone.addr, dst.addr, len);
    assert_eq!(host.wait(1, TIMEOUT_NS), 1);
    assert_eq!(host.read32(reg::STATUS), DONE | ERR);
    let mut copy = vec![0xff; len];
    host.read(dst.addr, &mut copy);
    assert!(copy.iter().all(|b| *b == 0), "err answers carry zero data");
    let s = host.dma().stats();
    assert_eq!((s.read_errors, s.read_bytes), (chunks(len), 0), "{s:?}");
}

#[test]
fn unallocated_destination_writes_are_dropped_and_counted() {
    let Some(m) = model(&copy_engine(64)) else {
        return;
    };
    let mut host = host(&m, HostConfig::from_seed(6));
    let len = 1000;
    let src = host.alloc(len, 256).expect("region");
    host.write(src.addr, &vec![0x55; len]);
    let gone = host.alloc(len, 256).expect("region");
    host.free(gone);
    let pages = host.memory().resident_pages();
    start_copy(&mut host, src.addr, gone.addr, len);
    assert_eq!(host.wait(1, TIMEOUT_NS), 1);
    assert_eq!(host.read32(reg::STATUS), DONE);
    let s = host.dma().stats();
    assert_eq!(
        (s.writes, s.dropped_writes, s.dropped_write_bytes),
        (0, chunks(len), len as u64),
        "{s:?}"
    );
    assert_eq!(host.memory().resident_pages(), pages, "nothing was written");
}

#[test]
fn wait_times_out_in_simulated_time() {
    let Some(m) = model(&copy_engine(64)) else {
        return;
    };
    let mut host = host(&m, HostConfig::from_seed(7));
    let t0 = host.now_ns();
    assert_eq!(host.wait(1, 10_000), 0, "nothing was started");
    let waited = host.now_ns() - t0;
    // 250 MHz: 4 ns a cycle.
    assert!((10_000..10_000 + 8).contains(&waited), "waited {waited} ns");
    let t1 = host.now_ns();
    host.relax();
    assert_eq!(host.now_ns() - t1, 8 * 4, "relax lets 8 cycles pass");
}
