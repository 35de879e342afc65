//! The driver loopback: the whole NIC (`nicgen_hdl::nic`) simulated by Verilator behind the
//! simulated host (`nicgen_host::SimHost`), driven by the real driver (`nicgen_driver`'s
//! `Device` and `NetDev`) with the MAC loopback on. Random frames (IPv4/IPv6 TCP/UDP and
//! others, `min_len` to `max_len` bytes) with random checksum, VLAN and inline-header requests go out
//! on every queue; each must come back exactly as the golden model says (`tx::tx_frame` then
//! `rx::rx_frame`: bytes, L3 and L4 types, checksum verdicts, checksum-complete, RSS type, hash
//! and queue, VLAN). The driver hands frames over as [`TxMode`] says and receives them as
//! [`RxMode`] says.
//! What `nicgen sim loopback` runs and what `testbench/system/loopback.rs` checks.
//!
//! With a wire capture ([`LoopbackOpts::pcap_wire`]) the loop closes outside the NIC instead:
//! its MAC loopback stays off and a cable agent ([`crate::wire::MacWire`]) carries each frame
//! from `m_axis_mac_tx` back into `s_axis_mac_rx`, so every frame crosses the MAC ports, where
//! the capture sees it once each way.

use crate::wire::{MacWire, WireCapture, WireCounts};
use anyhow::{anyhow, bail, Result};
use nicgen_driver::desc::MPWQE_MAX_PACKETS;
use nicgen_driver::device::{Device, RqStrides, RssEnables};
use nicgen_driver::netdev::{
    Completion, NetDev, NetDevConfig, TxOffload, MAX_BLUEFLAME, MAX_TX_INLINE,
};
use nicgen_edsl::{generate, EmitOptions};
use nicgen_hdl::host::bar_regs::BuildInfo;
use nicgen_hdl::nic::nic;
use nicgen_hdl::preset::Preset;
use nicgen_hdl::top::rx_cfg;
use nicgen_host::AgentId;
use nicgen_host::{DmaConfig, HostConfig, PcieLink, SimHost};
use nicgen_model::rx::{rx_frame, RxConfig, RxReport};
use nicgen_model::toeplitz::MICROSOFT_KEY;
use nicgen_model::tx::{tx_frame, TxRequest};
use nicgen_tb::{Model, VerilatorBuild, VerilatorOptions};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::VecDeque;
use std::path::PathBuf;

/// How the driver hands frames to the NIC's send engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TxMode {
    /// Each frame in a buffer its WQE points to: the NIC reads it by DMA.
    #[default]
    Plain,
    /// Frames up to 218 bytes wholly in the WQE (an inline data segment: no read of a
    /// buffer); longer ones as plain.
    Inline,
    /// As inline, and every WQE (all are at most 256 bytes) also written through the UAR
    /// page's BlueFlame window: the NIC reads neither the WQE nor the doorbell record, so a
    /// frame of up to 218 bytes costs no DMA read at all.
    Bf,
    /// Enhanced multi-packet send WQEs (mlx5e's MPWQE): each run of frames to one queue
    /// (`--doorbell-batch`, by default 14, the most one WQE carries) goes as the packets of as
    /// few WQEs as hold them, each packet from its buffer, one CQE per WQE; a frame with a VLAN
    /// tag to insert or inline headers goes as a plain SEND. A run starts once the frames in
    /// flight leave room for all of it; with random traffic, its frames share one offload
    /// request, as one flow's packets do, and ask for no inline headers (mlx5e uses
    /// multi-packet WQEs only where the device needs none).
    Mpwqe,
}

// `TxMode::Inline`'s doc (the CLI's help) names the limit.
const _: () = assert!(MAX_TX_INLINE == 218);

impl TxMode {
    /// The driver's setting for this mode.
    fn tx_inline(self) -> usize {
        match self {
            TxMode::Plain | TxMode::Mpwqe => 0,
            TxMode::Inline | TxMode::Bf => MAX_TX_INLINE,
        }
    }
    /// The driver's BlueFlame setting for this mode.
    fn tx_blueflame(self) -> usize {
        match self {
            TxMode::Bf => MAX_BLUEFLAME,
            TxMode::Plain | TxMode::Inline | TxMode::Mpwqe => 0,
        }
    }
    /// Frames per send doorbell when none is asked for: a full multi-packet WQE with
    /// [`TxMode::Mpwqe`], else one.
    pub fn default_doorbell_batch(self) -> usize {
        match self {
            TxMode::Mpwqe => MPWQE_MAX_PACKETS,
            _ => 1,
        }
    }
}

/// How the driver posts receive buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RxMode {
    /// One buffer per receive WQE, one frame each.
    #[default]
    Plain,
    /// A striding (multi-packet) RQ: each WQE a 16 KiB buffer of 256 strides of 64 bytes
    /// that takes frames until its strides are used; each CQE names the frame's first stride
    /// and the strides it took.
    Striding,
}

impl RxMode {
    /// The driver's setting for this mode.
    pub fn rx_striding(self) -> Option<RqStrides> {
        match self {
            RxMode::Plain => None,
            // 16 KiB: every frame the engine takes fits in one WQE.
            RxMode::Striding => Some(RqStrides {
                log_num_strides: 8,
                log_stride_size: 6,
            }),
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct LoopbackOpts {
    pub frames: usize,
    /// Queue pairs in use (frames are sent round robin; RSS spreads them back).
    pub queues: usize,
    /// Smallest random frame, bytes (without FCS): 60 ..= `max_len`.
    pub min_len: usize,
    /// Largest frame, bytes (without FCS): 60 ..= the preset's MTU + 14.
    pub max_len: usize,
    pub seed: u64,
    /// The simulated host's DMA (latency, reordering, stalls).
    pub dma: DmaConfig,
    /// Every frame exactly this long, UDP/IPv4, both checksums requested, no VLAN (the
    /// benchmark's traffic); `None`: random frames and requests.
    pub fixed_len: Option<usize>,
    /// Frames in flight at most, 1..=[`MAX_IN_FLIGHT`] (0: four per queue; with
    /// [`TxMode::Mpwqe`], a full multi-packet WQE, 14, per queue up to 32). The rings are
    /// sized to hold them.
    pub window: usize,
    /// Write every MAC frame, both ways, to this pcapng file (the loop then closes outside the
    /// NIC, see the module docs).
    pub pcap_wire: Option<PathBuf>,
    /// How frames go to the send engine.
    pub tx_mode: TxMode,
    /// Frames per send doorbell (1: a doorbell per frame): each run of this many consecutive
    /// frames goes to one queue, all but the last with [`NetDev::send_more`] (a batch also ends
    /// where the frames or the window end).
    pub doorbell_batch: usize,
    /// CQE compression on every CQ (mini-CQE arrays, checksum format).
    pub cqe_compress: bool,
    /// Device cycles each CQ's session waits for more completions (`NetDevConfig::cq_session`).
    pub cq_session: u16,
    /// How the driver posts receive buffers.
    pub rx_mode: RxMode,
}

/// `nicgen sim loopback`'s defaults: queue pairs, frame lengths (bytes without FCS), seed.
pub const DEFAULT_QUEUES: usize = 4;
pub const DEFAULT_MIN_LEN: usize = 60;
pub const DEFAULT_MAX_LEN: usize = 1514;
pub const DEFAULT_SEED: u64 = 1;

impl LoopbackOpts {
    /// The run `nicgen sim loopback --frames <frames>` makes on preset `p`: every other option
    /// at its default.
    pub fn cli_defaults(p: &Preset, frames: usize) -> LoopbackOpts {
        LoopbackOpts {
            frames,
            queues: DEFAULT_QUEUES,
            min_len: DEFAULT_MIN_LEN,
            max_len: DEFAULT_MAX_LEN,
            seed: DEFAULT_SEED,
            dma: pcie_dma(p, DMA_LATENCY_NS, DEFAULT_SEED),
            fixed_len: None,
            window: 0,
            pcap_wire: None,
            tx_mode: TxMode::Plain,
            doorbell_batch: 1,
            cqe_compress: false,
            cq_session: default_cq_session(false),
            rx_mode: RxMode::Plain,
        }
    }
}

/// The CQ session period of a loopback with CQE compression unless one is given, device
/// cycles: about the time the send engine takes per frame, so that a queue's next completion of
/// the same kind usually still finds the session open.
pub const CQE_COMPRESS_SESSION: u16 = 256;

/// The CQ session period to use when none is given: [`CQE_COMPRESS_SESSION`] with CQE
/// compression, else 0 (a session takes only the completions already waiting).
pub fn default_cq_session(cqe_compress: bool) -> u16 {
    if cqe_compress {
        CQE_COMPRESS_SESSION
    } else {
        0
    }
}

/// Frames in flight at most (`--in-flight`): what a receive ring of 256 WQEs holds.
pub const MAX_IN_FLIGHT: usize = 256;

/// log2 slots of each receive ring of the loopback for `window` frames in flight: all of them
/// fit in one ring, since RSS may send all of them to the same queue (32 at least).
fn rq_log_size(window: usize) -> u8 {
    window.max(32).next_power_of_two().trailing_zeros() as u8
}

/// log2 WQEBBs of each send ring: four per frame in flight (an inline send of the largest
/// inline frame), 64 at least.
fn sq_log_size(window: usize) -> u8 {
    (4 * window).max(64).next_power_of_two().trailing_zeros() as u8
}

/// The frames in flight a run keeps (`o.window`, or its default).
fn window_of(o: &LoopbackOpts) -> usize {
    match (o.window, o.tx_mode) {
        (0, TxMode::Mpwqe) => (MPWQE_MAX_PACKETS * o.queues).min(32),
        (0, _) => 4 * o.queues,
        (w, _) => w,
    }
}

/// Received frames the loop takes from one queue per poll, as NAPI's default weight (64): a
/// busy queue cannot hold the others back.
pub const NAPI_BUDGET: usize = 64;

/// What came back.
#[derive(Clone, Debug, Default)]
pub struct LoopbackReport {
    pub frames: usize,
    pub bytes: usize,
    /// Frames that came back different from the model's prediction (0 for a pass).
    pub mismatches: usize,
    pub cycles: u64,
    /// Wire bytes the PCIe link carried over those cycles, NIC to host and host to NIC
    /// (`nicgen_host::DmaStats::link_up_bytes`; 0 without a link).
    pub link_bytes: (u64, u64),
    /// First mismatches, described.
    pub notes: Vec<String>,
    /// Frames that crossed the MAC ports each way (zero with the NIC's own loopback, where no
    /// frame leaves the NIC).
    pub wire: WireCounts,
    /// DMA writes the NIC made over those cycles (frames, CQEs, EQEs).
    pub dma_writes: u64,
    /// Compressed CQE sessions the driver expanded, and the completions they held.
    pub compressed: (u64, u64),
    /// Send WQEs the NIC executed (fewer than the frames with multi-packet WQEs).
    pub tx_wqes: u64,
}

/// DMA read latency of the simulated host when none is asked for: 1 µs, a PCIe read's round
/// trip through a server's root complex to DRAM.
pub const DMA_LATENCY_NS: u64 = 1000;

/// The PCIe link a board with preset `p`'s datapath would have: Gen3 x16 (126 Gb/s a
/// direction) for a 512-bit datapath (100GbE), Gen3 x8 (63 Gb/s) for the narrower ones (10 and
/// 25GbE), as ConnectX-4 Lx boards have.
pub fn host_link(p: &Preset) -> PcieLink {
    PcieLink::gen3(if p.data_bits >= 512 { 16 } else { 8 })
}

/// The simulated host's DMA for preset `p`: its [`host_link`] at its clock, every read answered
/// `latency_ns` after its request ([`DmaConfig::pcie`]).
pub fn pcie_dma(p: &Preset, latency_ns: u64, seed: u64) -> DmaConfig {
    DmaConfig::pcie(host_link(p), p.clock_mhz, latency_ns, seed)
}

/// Build (or take from the cache) the model of the whole NIC. The identification block is
/// stamped with no commit, so the model does not change with every commit.
pub fn nic_model(p: &Preset) -> Result<Model> {
    nic_model_with(p, false)
}

/// [`nic_model`], built with FST tracing when `trace` (its own cache entry).
pub fn nic_model_with(p: &Preset, trace: bool) -> Result<Model> {
    let def = nic(p, &BuildInfo::unknown()).map_err(|e| anyhow!("{e}"))?;
    let g = generate(
        &def,
        &EmitOptions {
            preset: p.name.clone(),
            config_hash: p.config_hash(),
        },
    );
    Ok(VerilatorBuild::new(
        &g.top,
        g.verilog.clone(),
        &g.shim_cpp,
        VerilatorOptions {
            trace,
            ..Default::default()
        },
    )
    .build()?)
}

/// A fresh instance of `model` behind a simulated host configured by `host`, opened by the
/// driver with RSS spreading over `table`, and a `NetDev` with `cfg` (receive buffers always
/// hold the preset's largest frame). Without `capture` the NIC's MAC loopback is on and its
/// MAC side idle; with it the loop closes outside the NIC through the returned [`MacWire`],
/// which records every frame both ways.
pub fn open_loopback(
    p: &Preset,
    model: &Model,
    host: HostConfig,
    table: &[u16],
    cfg: NetDevConfig,
    capture: Option<WireCapture>,
) -> Result<(NetDev<SimHost>, AgentId<MacWire>)> {
    let seed = host.dma.seed;
    let mut host = SimHost::new(model.instance(), host)?;
    let cable = capture.is_some();
    let wire = host.add_agent(MacWire::new(host.sim(), seed, cable, capture)?);
    host.reset(4)?;
    let mut dev = Device::open(host)?;
    dev.set_loopback(!cable)?;
    dev.program_rss(&MICROSOFT_KEY, RssEnables::ALL, table)?;
    let nd = NetDev::new(
        dev,
        NetDevConfig {
            rx_buf_size: (p.mtu as usize + 22).next_multiple_of(64),
            ..cfg
        },
    )
    .map_err(|e| anyhow!("{e}"))?;
    Ok((nd, wire))
}

/// An IPv4 or IPv6 TCP/UDP frame of `len` bytes (or another EtherType) with garbage checksums;
/// `len` from 60 up (IPv6 only from 74 bytes, where its headers and a TCP header fit).
pub fn random_frame(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    if rng.gen_bool(0.1) {
        f.extend([0x88, 0xb5]);
        f.extend((0..len.max(60) - 14).map(|_| rng.gen::<u8>()));
        return f;
    }
    let v6 = len >= 14 + 40 + 20 && rng.gen_bool(0.3);
    let proto: u8 = if rng.gen_bool(0.5) { 6 } else { 17 };
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

/// Compare a received frame with the model's report, field by field: every field the report
/// has for a delivered frame that the CQE carries (all but `malformed`, which the CQE has no
/// bit for; the bytes are compared by the caller); a description of the first difference.
fn differs(r: &nicgen_driver::netdev::RxFrame, rep: &RxReport) -> Option<String> {
    use nicgen_driver::desc::{L3Type, L4Type};
    use nicgen_model::rss::RssType;
    let l3 = match rep.l3 {
        Some("ipv4") => L3Type::Ipv4,
        Some("ipv6") => L3Type::Ipv6,
        _ => L3Type::None,
    };
    let l4 = match rep.l4 {
        Some("tcp") => L4Type::Tcp,
        Some("udp") => L4Type::Udp,
        _ => L4Type::None,
    };
    // What the hash covered (mlx5 rss_hash_type: IP 1 IPv4, 2 IPv6; L4 1 TCP, 2 UDP).
    let rss = match rep.rss_type.unwrap_or(RssType::None) {
        RssType::None => (0, 0),
        RssType::Ipv4 => (1, 0),
        RssType::TcpIpv4 => (1, 1),
        RssType::UdpIpv4 => (1, 2),
        RssType::Ipv6 => (2, 0),
        RssType::TcpIpv6 => (2, 1),
        RssType::UdpIpv6 => (2, 2),
    };
    // With the inner offloads (CQE `tunneled`) the verdicts cover the inner headers too; an
    // outer without TCP/UDP (NVGRE's GRE) adds no L4 checksum.
    let whole = rep.tunnel.is_some_and(|t| t.inner);
    let inner = rep.inner.unwrap_or_default();
    let l3_ok = rep.l3_csum_ok == Some(true) && (!whole || inner.l3_csum_ok == Some(true));
    let l4_ok = if whole {
        (rep.l4.is_none() || rep.l4_csum_ok == Some(true)) && inner.l4_csum_ok == Some(true)
    } else {
        rep.l4_csum_ok == Some(true)
    };
    let checks = [
        ("L3 type", r.l3_type == l3),
        ("L4 type", r.l4_type == l4),
        ("l3_ok", r.l3_ok == l3_ok),
        ("l4_ok", r.l4_ok == l4_ok),
        ("checksum-complete", Some(r.csum) == rep.csum),
        ("RSS type", (r.rss_type.ip(), r.rss_type.l4()) == rss),
        ("RSS hash", Some(r.rss_hash) == rep.rss_hash),
        ("RSS queue", Some(r.queue as u32) == rep.queue),
        (
            "VLAN",
            r.vlan.map(|t| (t & 0xFFF, (t >> 13) as u8)) == rep.vlan,
        ),
        (
            "tunnel",
            rep.tunnel.is_none_or(|t| {
                (
                    r.decapped,
                    r.tunneled,
                    r.tunnel_kind,
                    r.tunnel_id,
                    r.tunnel_bad,
                ) == (
                    t.decap,
                    t.inner,
                    t.kind.code(),
                    t.id,
                    t.malformed.map_or(0, |m| m.code()),
                )
            }),
        ),
    ];
    checks
        .iter()
        .find(|(_, ok)| !ok)
        .map(|(what, _)| format!("{what} differs: got {r:?}, model {rep:?}"))
}

/// Whether `o` asks for something preset `p` can do: 1 to the preset's RSS queue count of
/// queues, frames from 60 bytes to its MTU + 14, the smallest no larger than the largest.
pub fn check_opts(p: &Preset, o: &LoopbackOpts) -> Result<()> {
    if o.queues == 0 || o.queues > p.rss.queues as usize {
        bail!(
            "--queues {} must be from 1 to the preset's RSS queue count ({})",
            o.queues,
            p.rss.queues
        );
    }
    let max_wire = (p.mtu + 14) as usize;
    if !(60..=max_wire).contains(&o.max_len) {
        bail!(
            "--max-len {} must be from 60 to {max_wire} (the preset's MTU + 14)",
            o.max_len
        );
    }
    if !(60..=o.max_len).contains(&o.min_len) {
        bail!(
            "--min-len {} must be from 60 to --max-len ({}); use a value in that range or raise \
             --max-len",
            o.min_len,
            o.max_len
        );
    }
    if o.window > MAX_IN_FLIGHT {
        bail!(
            "--in-flight {} is too many; use 1 to {MAX_IN_FLIGHT} (each queue's rings are sized \
             to hold them), or leave it out for four per queue",
            o.window
        );
    }
    Ok(())
}

/// Run the loopback on `model` (built for `p`); `progress` is called with the frames back so
/// far. Options `p` cannot do ([`check_opts`]) are an error tagged as bad input.
pub fn run_loopback(
    p: &Preset,
    model: &Model,
    o: &LoopbackOpts,
    mut progress: impl FnMut(usize),
) -> Result<LoopbackReport> {
    check_opts(p, o).map_err(crate::failure::Failure::input)?;
    let table: Vec<u16> = (0..p.rss.table_size)
        .map(|i| (i as usize % o.queues) as u16)
        .collect();
    let capture = match &o.pcap_wire {
        Some(path) => Some(WireCapture::create(path, p.clock_mhz).map_err(|e| {
            crate::failure::Failure::input(anyhow!("cannot write --pcap-wire {e}"))
        })?),
        None => None,
    };
    let (mut nd, wire) = open_loopback(
        p,
        model,
        HostConfig {
            dma: o.dma.clone(),
            clock_mhz: p.clock_mhz,
            ..HostConfig::from_seed(o.seed)
        },
        &table,
        NetDevConfig {
            queues: o.queues,
            sq_log_size: sq_log_size(window_of(o)),
            rq_log_size: rq_log_size(window_of(o)),
            eq_log_size: 7,
            tx_buf_size: o.max_len,
            tx_inline: o.tx_mode.tx_inline(),
            tx_blueflame: o.tx_mode.tx_blueflame(),
            tx_mpwqe: o.tx_mode == TxMode::Mpwqe,
            cqe_compress: o.cqe_compress,
            cq_session: o.cq_session,
            rx_striding: o.rx_mode.rx_striding(),
            ..NetDevConfig::default()
        },
        capture,
    )?;
    let rcfg = rx_cfg(p);
    let mcfg = RxConfig {
        mtu: rcfg.mtu as usize,
        window: rcfg.window as usize,
        rss_key: MICROSOFT_KEY,
        rss_enables: 0x3F,
        table: table.iter().map(|&q| q as u32).collect(),
        // The driver programs no steering entry: tunnels are recognised, never de-capsulated.
        overlay: crate::sim_rx::model_cfg(&rcfg).overlay,
    };
    let start_cycles = nd.device().backend().cycles();
    let link0 = link_bytes(nd.device().backend());
    let writes0 = nd.device().backend().dma().stats().writes;
    let mut rng = StdRng::seed_from_u64(o.seed);
    let mut expected: VecDeque<(Vec<u8>, RxReport)> = VecDeque::new();
    let mut rep = LoopbackReport::default();
    let (mut sent, mut in_flight) = (0usize, 0usize);
    // Enough in flight to keep the rings busy without overrunning them.
    let window = window_of(o);
    let batch = o.doorbell_batch.max(1);
    let mut run_off = None;
    while rep.frames < o.frames {
        // Multi-packet sends start a run only when the window has room for all of it, so a
        // run is not cut into short WQEs by the frames coming back one at a time.
        let run_room = |sent: usize, in_flight: usize| {
            o.tx_mode != TxMode::Mpwqe
                || !sent.is_multiple_of(batch)
                || in_flight + batch.min(o.frames - sent) <= window
        };
        while sent < o.frames && in_flight < window && run_room(sent, in_flight) {
            let (f, off) = match o.fixed_len {
                Some(len) => (
                    crate::traffic::udp_frame(len, sent),
                    TxOffload {
                        csum_l3: true,
                        csum_l4: true,
                        vlan_tci: None,
                        inline_headers: false,
                        lso: None,
                    },
                ),
                None => {
                    // A multi-packet run shares one request (drawn at its first frame).
                    if o.tx_mode != TxMode::Mpwqe || sent.is_multiple_of(batch) {
                        run_off = None;
                    }
                    let len = if rng.gen_bool(0.1) {
                        rng.gen_range(o.min_len..=o.max_len)
                    } else {
                        rng.gen_range(o.min_len..=o.max_len.min(400).max(o.min_len))
                    };
                    let off = *run_off.get_or_insert_with(|| TxOffload {
                        csum_l3: rng.gen(),
                        csum_l4: rng.gen(),
                        vlan_tci: rng.gen_bool(0.2).then(|| rng.gen::<u16>() & 0xEFFF),
                        // Multi-packet sends go where no inline header is needed (as mlx5e's).
                        inline_headers: o.tx_mode != TxMode::Mpwqe && rng.gen_bool(0.3),
                        lso: None,
                    });
                    (random_frame(&mut rng, len), off)
                }
            };
            let req = TxRequest {
                csum_l3: off.csum_l3,
                csum_l4: off.csum_l4,
                vlan_tci: off.vlan_tci,
                ..TxRequest::default()
            };
            let (report, delivered) = rx_frame(&tx_frame(&f, &req, mcfg.window), &mcfg);
            let delivered =
                delivered.ok_or_else(|| anyhow!("frame {sent}: the model drops it: {report:?}"))?;
            let queue = sent / batch % o.queues;
            let batch_ends =
                (sent + 1) % batch == 0 || sent + 1 == o.frames || in_flight + 1 == window;
            if batch_ends {
                nd.send(queue, &f, off)
            } else {
                nd.send_more(queue, &f, off)
            }
            .map_err(|e| anyhow!("sending frame {sent}: {e}"))?;
            expected.push_back((delivered, report));
            sent += 1;
            in_flight += 1;
        }
        let mut got_any = false;
        for q in 0..o.queues {
            for c in nd
                .poll_budget(q, NAPI_BUDGET)
                .map_err(|e| anyhow!("polling queue {q}: {e}"))?
            {
                match c {
                    Completion::Rx(r) => {
                        // Per RSS queue, frames come back in order; across queues they may
                        // not: match by content.
                        match expected.iter().position(|(d, _)| *d == r.data) {
                            Some(i) => {
                                let (_, report) = expected.remove(i).expect("found above");
                                if let Some(d) = differs(&r, &report) {
                                    rep.mismatches += 1;
                                    if rep.notes.len() < 5 {
                                        rep.notes.push(d);
                                    }
                                }
                            }
                            None => {
                                rep.mismatches += 1;
                                if rep.notes.len() < 5 {
                                    rep.notes.push(format!(
                                        "a {}-byte frame came back that was never sent",
                                        r.data.len()
                                    ));
                                }
                            }
                        }
                        rep.frames += 1;
                        rep.bytes += r.data.len();
                        in_flight -= 1;
                        got_any = true;
                        progress(rep.frames);
                    }
                    Completion::Tx { .. } => {}
                    Completion::Error {
                        queue,
                        kind,
                        syndrome,
                        ..
                    } => bail!("error completion on queue {queue} ({kind:?}): {syndrome:?}"),
                }
            }
        }
        if !got_any {
            let all = (1u64 << o.queues) - 1;
            if let Err(e) = nd.wait(all, 1_000_000) {
                let st = nd.device().stats();
                bail!(
                    "{e} after {sent} frames sent and {} received; counters {:?}",
                    rep.frames,
                    st.named()
                );
            }
        }
    }
    rep.cycles = nd.device().backend().cycles() - start_cycles;
    let link1 = link_bytes(nd.device().backend());
    rep.link_bytes = (link1.0 - link0.0, link1.1 - link0.1);
    rep.dma_writes = nd.device().backend().dma().stats().writes - writes0;
    rep.compressed = nd.compressed();
    let mac = nd
        .device()
        .backend()
        .agent_mut(wire)
        .expect("the MAC agent of this host");
    rep.wire = mac.counts();
    mac.finish()
        .map_err(|e| crate::failure::Failure::input(anyhow!("cannot write --pcap-wire {e}")))?;
    let mut dev = nd.close().map_err(|e| anyhow!("{e}"))?;
    let st = dev.stats();
    rep.tx_wqes = st.tx_wqes;
    if st.rx_delivered != o.frames as u64 || st.tx_frames != o.frames as u64 {
        bail!(
            "the counters disagree: {} sent and {} delivered, {} frames",
            st.tx_frames,
            st.rx_delivered,
            o.frames
        );
    }
    Ok(rep)
}

/// The wire bytes `host`'s PCIe link has carried so far: (to the host, to the NIC).
fn link_bytes(host: &SimHost) -> (u64, u64) {
    let s = host.dma().stats();
    (s.link_up_bytes, s.link_down_bytes)
}

/// Cycles from the SQ doorbell (the BAR write done) to the send CQE in host memory, for one
/// `len`-byte UDP/IPv4 frame in loopback on an idle NIC, behind the preset's PCIe link with
/// every DMA read answered `latency_ns` after its request ([`pcie_dma`], answers in order).
/// Polls the CQ every cycle.
pub fn doorbell_to_cqe(p: &Preset, model: &Model, len: usize, latency_ns: u64) -> Result<u64> {
    doorbell_to_cqe_mode(p, model, len, latency_ns, TxMode::Plain)
}

/// [`doorbell_to_cqe`] with the frame handed over as `tx_mode` says (with BlueFlame, the
/// doorbell is the write that commits the WQE written through the window).
pub fn doorbell_to_cqe_mode(
    p: &Preset,
    model: &Model,
    len: usize,
    latency_ns: u64,
    tx_mode: TxMode,
) -> Result<u64> {
    use nicgen_driver::hw::Interrupts;
    let (mut nd, _) = open_loopback(
        p,
        model,
        HostConfig {
            dma: DmaConfig {
                reorder: false,
                ..pcie_dma(p, latency_ns, 0)
            },
            clock_mhz: p.clock_mhz,
            relax_cycles: 1,
            ..HostConfig::default()
        },
        &vec![0u16; p.rss.table_size as usize],
        NetDevConfig {
            tx_inline: tx_mode.tx_inline(),
            tx_blueflame: tx_mode.tx_blueflame(),
            tx_mpwqe: tx_mode == TxMode::Mpwqe,
            ..NetDevConfig::default()
        },
        None,
    )?;
    let frame = crate::traffic::udp_frame(len, 0);
    let off = TxOffload {
        csum_l3: true,
        csum_l4: true,
        vlan_tci: None,
        inline_headers: false,
        lso: None,
    };
    // Warm up (the first doorbell also reads the RQ's record), then measure.
    let mut best = u64::MAX;
    for round in 0..3 {
        nd.send(0, &frame, off).map_err(|e| anyhow!("{e}"))?;
        let t0 = nd.device().backend().cycles();
        let mut waited = 0u64;
        loop {
            let done = nd
                .poll(0)
                .map_err(|e| anyhow!("{e}"))?
                .iter()
                .any(|c| matches!(c, Completion::Tx { .. }));
            if done {
                break;
            }
            nd.device().backend().relax();
            waited += 1;
            if waited > 1_000_000 {
                bail!("no send completion within a million cycles");
            }
        }
        let dt = nd.device().backend().cycles() - t0;
        // Let the looped-back frame arrive before the next round.
        for _ in 0..2000 {
            nd.device().backend().relax();
            nd.poll(0).map_err(|e| anyhow!("{e}"))?;
        }
        if round > 0 {
            best = best.min(dt);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn random_frames_have_the_length_asked_for() {
        let mut rng = StdRng::seed_from_u64(7);
        for len in (60..=200).chain([1514, 9014]) {
            for _ in 0..20 {
                assert_eq!(
                    random_frame(&mut rng, len).len(),
                    len,
                    "asked for {len} bytes"
                );
            }
        }
    }
}
