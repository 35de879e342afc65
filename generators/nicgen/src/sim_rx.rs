//! Running frames through the simulated RX path (`eth_rx`) and turning its per-frame records
//! into reports: what `nicgen sim rx` does, and what the RX tests drive.

use anyhow::{anyhow, bail, Result};
use nicgen_edsl::Shape;
use nicgen_edsl::{generate, EmitOptions};
use nicgen_hdl::eth::eth_rx::{eth_rx, RxCfg, RxMeta, RX_STATS};
use nicgen_hdl::overlay::rx_decap::cfg_addr as tun_addr;
use nicgen_hdl::preset::Preset;
use nicgen_hdl::rss::rss_toeplitz::cfg_addr;
use nicgen_model::rss::RssType;
use nicgen_model::rx::{
    malformed_name, rss_type_name, DropReason, InnerHeaders, Overlay, RxReport, TunnelReport,
};
use nicgen_model::tunnel::{Malformed, Steering, TunnelConfig, TunnelKind};
use nicgen_tb::record::RecordSink;
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamMonitor, StreamPorts, StreamSink,
};
use nicgen_tb::{Model, Sim, VerilatorBuild, VerilatorOptions};
use serde::Serialize;

/// The RX configuration a preset (and an optional MTU override) gives.
pub fn rx_cfg(p: &Preset, mtu: Option<u32>) -> RxCfg {
    let mut cfg = nicgen_hdl::top::rx_cfg(p);
    if let Some(m) = mtu {
        cfg.mtu = m;
    }
    cfg
}

/// The golden model's configuration for the RX path as it comes out of reset: the Microsoft
/// key, every hash type on, the table spreading over the queues (`i mod queues`); with the
/// tunnel stage, VXLAN on 4789 and steering `steering` (an empty table after reset).
pub fn model_cfg(cfg: &RxCfg) -> nicgen_model::rx::RxConfig {
    model_cfg_with(cfg, &Steering::new())
}

/// [`model_cfg`] with the steering table `steering`.
pub fn model_cfg_with(cfg: &RxCfg, steering: &Steering) -> nicgen_model::rx::RxConfig {
    nicgen_model::rx::RxConfig {
        overlay: (cfg.steer_entries > 0).then(|| Overlay {
            tunnel: TunnelConfig {
                window: cfg.window as usize,
                ..TunnelConfig::default()
            },
            steering: steering.clone(),
        }),
        mtu: cfg.mtu as usize,
        window: cfg.window as usize,
        rss_key: nicgen_model::toeplitz::MICROSOFT_KEY,
        rss_enables: 0x3F,
        table: (0..cfg.rss.table_size)
            .map(|i| i % cfg.rss.queues)
            .collect(),
    }
}

/// Build (or take from the cache) the Verilator model of the RX path.
pub fn rx_model(cfg: &RxCfg, preset: &str) -> Result<Model> {
    rx_model_with(cfg, preset, false)
}

/// [`rx_model`], built with FST tracing when `trace` (its own cache entry).
pub fn rx_model_with(cfg: &RxCfg, preset: &str, trace: bool) -> Result<Model> {
    let def = eth_rx(cfg).map_err(|e| anyhow!("{e}"))?;
    let g = generate(
        &def,
        &EmitOptions {
            preset: preset.into(),
            config_hash: format!("{cfg:?}"),
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

/// Random idle on the input and backpressure on the outputs (0 for the CLI).
#[derive(Clone, Copy, Debug, Default)]
pub struct Knobs {
    pub seed: u64,
    pub idle: f64,
    pub backpressure: f64,
}

/// What came out of one run.
#[derive(Debug, Default)]
pub struct RxRun {
    pub reports: Vec<RxReport>,
    /// Delivered frames, in order.
    pub delivered: Vec<Vec<u8>>,
    pub cycles: u64,
    /// The hardware counters `stat_rx_<name>` at the end of the run, in [`RX_STATS`] order.
    pub counters: Vec<(&'static str, u64)>,
}

/// The counts the RX counters must hold after `reports`, in [`RX_STATS`] order.
pub fn report_counts(reports: &[RxReport]) -> Vec<(&'static str, u64)> {
    use nicgen_model::rx::DropReason;
    let count = |f: &dyn Fn(&RxReport) -> bool| reports.iter().filter(|r| f(r)).count() as u64;
    RX_STATS
        .iter()
        .map(|&n| {
            let c = match n {
                "frames_in" => reports.len() as u64,
                "delivered" => count(&|r| r.drop.is_none()),
                "drop_runt" => count(&|r| r.drop == Some(DropReason::Runt)),
                "drop_oversize" => count(&|r| r.drop == Some(DropReason::Oversize)),
                "drop_fcs" => count(&|r| r.drop == Some(DropReason::Fcs)),
                "drop_mac_control" => count(&|r| r.drop == Some(DropReason::MacControl)),
                "malformed" => count(&|r| r.malformed.is_some()),
                "vlan_stripped" => count(&|r| r.vlan.is_some()),
                "l3_csum_bad" => count(&|r| r.l3_csum_ok == Some(false)),
                "l4_csum_bad" => count(&|r| r.l4_csum_ok == Some(false)),
                "decapped" => count(&|r| r.decap() == Some(true)),
                "tunnel_malformed" => count(&|r| r.tunnel.is_some_and(|t| t.malformed.is_some())),
                other => unreachable!("RX counter `{other}` has no report rule"),
            };
            (n, c)
        })
        .collect()
}

/// One line of the `nicgen sim rx` report: what the NIC did with input frame `index`. Fields
/// in this order, absent values `null`; `csum` and `rss_hash` in hex (`0x1234`,
/// `0x12345678`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RxRecord {
    pub index: usize,
    /// `deliver` or `drop`.
    pub action: &'static str,
    /// `runt`, `oversize`, `fcs` or `mac_control` for a dropped frame.
    pub drop_reason: Option<&'static str>,
    /// The stripped outer tag.
    pub vlan: Option<Vlan>,
    /// `ipv4` or `ipv6`.
    pub l3: Option<&'static str>,
    /// `tcp` or `udp`.
    pub l4: Option<&'static str>,
    pub l3_csum_ok: Option<bool>,
    pub l4_csum_ok: Option<bool>,
    /// Checksum-complete.
    pub csum: Option<String>,
    /// Why the headers could not be followed (e.g. `truncated_l4`).
    pub malformed: Option<&'static str>,
    /// `IPV4`, `TCP_IPV4`, `UDP_IPV4`, `IPV6`, `TCP_IPV6` or `UDP_IPV6`.
    pub rss_type: Option<&'static str>,
    pub rss_hash: Option<String>,
    /// The receive queue RSS chose, or the tunnel's steering entry.
    pub queue: Option<u32>,
    /// `vxlan` or `nvgre` when the outer headers announce a tunnel.
    pub tunnel: Option<&'static str>,
    /// VNI (VXLAN) or VSID (NVGRE) of a well-formed tunnel.
    pub vni: Option<u32>,
    /// The outer headers were removed (null without a tunnel stage or for a dropped frame).
    pub decap: Option<bool>,
    /// Why the tunnel is malformed (e.g. `vxlan_i_flag_clear`); the frame is delivered whole.
    pub tunnel_malformed: Option<&'static str>,
    /// The inner frame's `l3`, `l4` and verdicts, when it was de-capsulated or delivered
    /// whole with the inner offloads (`--inner`).
    pub inner_l3: Option<&'static str>,
    pub inner_l4: Option<&'static str>,
    pub inner_l3_csum_ok: Option<bool>,
    pub inner_l4_csum_ok: Option<bool>,
}

/// A VLAN tag's ID and priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Vlan {
    pub vid: u16,
    pub pcp: u8,
}

impl RxRecord {
    /// The record of input frame `index`, reported as `r`.
    pub fn new(index: usize, r: &RxReport) -> RxRecord {
        let inner = r.inner.unwrap_or_default();
        RxRecord {
            index,
            action: if r.drop.is_some() { "drop" } else { "deliver" },
            drop_reason: r.drop.map(DropReason::name),
            vlan: r.vlan.map(|(vid, pcp)| Vlan { vid, pcp }),
            l3: r.l3,
            l4: r.l4,
            l3_csum_ok: r.l3_csum_ok,
            l4_csum_ok: r.l4_csum_ok,
            csum: r.csum.map(|c| format!("0x{c:04x}")),
            malformed: r.malformed.map(malformed_name),
            rss_type: r.rss_type.and_then(rss_type_name),
            rss_hash: r.rss_hash.map(|h| format!("0x{h:08x}")),
            queue: r.queue,
            tunnel: r.tunnel_name(),
            vni: r.vni(),
            decap: r.decap(),
            tunnel_malformed: r.tunnel.and_then(|t| t.malformed).map(Malformed::name),
            inner_l3: inner.l3,
            inner_l4: inner.l4,
            inner_l3_csum_ok: inner.l3_csum_ok,
            inner_l4_csum_ok: inner.l4_csum_ok,
        }
    }
}

/// Program the RSS key (40 bytes, Microsoft byte order) through the config port.
pub fn program_rss_key(sim: &mut Sim, key: &[u8; 40]) -> Result<()> {
    let (we, addr, data) = (
        sim.port("cfg_we")?,
        sim.port("cfg_addr")?,
        sim.port("cfg_wdata")?,
    );
    for (i, chunk) in key.chunks(4).enumerate() {
        sim.set(we, 1);
        sim.set(addr, (cfg_addr::KEY + i as u32) as u64);
        sim.set(data, u32::from_be_bytes(chunk.try_into().unwrap()) as u64);
        sim.cycle();
    }
    sim.set(we, 0);
    sim.cycle();
    Ok(())
}

/// Program the tunnel stage: the steering entries (in [`Steering::entries`] order, entry `i`
/// the `i`-th), `decap_all` and the inner offloads. Fails when the table has fewer entries than `steering`.
pub fn program_steering(sim: &mut Sim, cfg: &RxCfg, steering: &Steering) -> Result<()> {
    let entries = steering.entries();
    if entries.len() > cfg.steer_entries as usize {
        bail!(
            "{} steering entries asked for, the preset's table has {} (overlay.steer_entries)",
            entries.len(),
            cfg.steer_entries
        );
    }
    let (we, addr, data) = (
        sim.port("cfg_we")?,
        sim.port("cfg_addr")?,
        sim.port("cfg_wdata")?,
    );
    let write = |sim: &mut Sim, a: u32, d: u32| {
        sim.set(we, 1);
        sim.set(addr, a as u64);
        sim.set(data, d as u64);
        sim.cycle();
    };
    for (i, (kind, id, queue)) in entries.into_iter().enumerate() {
        write(sim, tun_addr::STEER_QUEUE, queue);
        write(
            sim,
            tun_addr::STEER + i as u32,
            1 << 31 | u32::from(kind.code()) << 24 | id,
        );
    }
    let ctl = u32::from(steering.decap_all)
        | u32::from(steering.inner.vxlan) << 1
        | u32::from(steering.inner.nvgre) << 2;
    write(sim, tun_addr::TUNNEL_CTL, ctl);
    sim.set(we, 0);
    sim.cycle();
    Ok(())
}

/// An `RxMeta` L3 code's report name.
fn l3_name(code: u128) -> Option<&'static str> {
    match code {
        1 => Some("ipv4"),
        2 => Some("ipv6"),
        _ => None,
    }
}

/// An `RxMeta` L4 code's report name.
fn l4_name(code: u128) -> Option<&'static str> {
    match code {
        1 => Some("tcp"),
        2 => Some("udp"),
        _ => None,
    }
}

/// Decode one `m_axis_meta` record into a report.
pub fn decode(cfg: &RxCfg, bytes: &[u8]) -> RxReport {
    let f = RxMeta::shape(cfg.rss.queue_bits()).decode(bytes);
    if f.drop == 1 {
        let reason = if f.runt == 1 {
            DropReason::Runt
        } else if f.oversize == 1 {
            DropReason::Oversize
        } else if f.fcs_bad == 1 {
            DropReason::Fcs
        } else {
            DropReason::MacControl
        };
        return RxReport::dropped(reason);
    }
    let (l3, l4) = (l3_name(f.l3), l4_name(f.l4));
    let tci = f.vlan_tci as u16;
    let tunnel = (cfg.steer_entries > 0).then(|| TunnelReport {
        kind: TunnelKind::from_code(f.tunnel as u8).unwrap_or(TunnelKind::None),
        id: f.tunnel_id as u32,
        flow_id: f.flow_id as u8,
        decap: f.decap == 1,
        inner: f.inner == 1,
        malformed: Malformed::ALL
            .into_iter()
            .find(|m| u128::from(m.code()) == f.tunnel_bad),
    });
    let l3_csum_ok = l3.map(|_| f.l3_ok == 1);
    let l4_csum_ok = l4.map(|_| f.l4_ok == 1);
    let inner = if f.decap == 1 {
        Some(InnerHeaders {
            l3,
            l4,
            l3_csum_ok,
            l4_csum_ok,
        })
    } else if f.inner == 1 {
        let (l3, l4) = (l3_name(f.inner_l3), l4_name(f.inner_l4));
        Some(InnerHeaders {
            l3,
            l4,
            l3_csum_ok: l3.map(|_| f.inner_l3_ok == 1),
            l4_csum_ok: l4.map(|_| f.inner_l4_ok == 1),
        })
    } else {
        None
    };
    RxReport {
        drop: None,
        vlan: (f.vlan == 1).then_some((tci & 0xFFF, (tci >> 13) as u8)),
        l3,
        l4,
        l3_csum_ok,
        l4_csum_ok,
        csum: Some(f.csum as u16),
        malformed: (f.malformed != 0).then_some(f.malformed as u8),
        rss_type: Some(RssType::from_code(f.rss_type as u8).unwrap_or(RssType::None)),
        rss_hash: Some(f.rss_hash as u32),
        queue: Some(f.queue as u32),
        tunnel,
        inner,
    }
}

/// Drive `wire_frames` (FCS included) through a fresh instance; one report per frame, in order.
/// `on_frame` is called as each report arrives (progress).
pub fn run_rx(
    model: &Model,
    cfg: &RxCfg,
    wire_frames: &[Vec<u8>],
    rss_key: Option<&[u8; 40]>,
    steering: Option<&Steering>,
    k: Knobs,
    mut on_frame: impl FnMut(usize),
) -> Result<RxRun> {
    let mut sim = model.instance();
    let rst = sim.port("rst")?;
    sim.set(rst, 1);
    sim.cycles_n(2);
    sim.set(rst, 0);
    if let Some(key) = rss_key {
        program_rss_key(&mut sim, key)?;
    }
    if let Some(s) = steering {
        program_steering(&mut sim, cfg, s)?;
    }
    let sp = StreamPorts::new(&sim, "s_axis")?;
    let mp = StreamPorts::new(&sim, "m_axis")?;
    let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
    let mut mon_in = StreamMonitor::new(sp, k.seed);
    let mut sink = StreamSink::new(mp.clone(), k.seed + 1, k.backpressure);
    let mut mon_out = StreamMonitor::new(mp, k.seed);
    let mut meta = RecordSink::new(&sim, "m_axis_meta", k.seed + 2, k.backpressure)?;
    for f in wire_frames {
        if f.is_empty() {
            bail!("an empty frame cannot be sent on a stream");
        }
        drv.push(f.clone());
    }
    let n = wire_frames.len();
    let start = sim.cycles();
    let mut seen = 0;
    // Done when every record is out and so is every frame the records deliver: under
    // backpressure a frame's last beats can leave after its record.
    let mut to_deliver = 0;
    run_until_seeded(&mut sim, k.seed, 20_000, |sim| {
        let mut agents: Vec<&mut dyn Agent> =
            vec![&mut drv, &mut mon_in, &mut sink, &mut mon_out, &mut meta];
        let p = step(sim, &mut agents)?;
        while seen < meta.items.len() {
            on_frame(seen);
            if decode(cfg, &meta.items[seen]).drop.is_none() {
                to_deliver += 1;
            }
            seen += 1;
        }
        Ok(Status::new(
            p,
            meta.items.len() == n && sink.frames().len() >= to_deliver,
        ))
    })
    .map_err(|e| {
        anyhow!(
            "the RX simulation stopped making progress after {} of {n} frames: {e}",
            meta.items.len()
        )
    })?;
    let reports: Vec<RxReport> = meta.items.iter().map(|b| decode(cfg, b)).collect();
    let delivered: Vec<Vec<u8>> = sink.frames().iter().map(|f| f.data.clone()).collect();
    let n_deliver = reports.iter().filter(|r| r.drop.is_none()).count();
    if delivered.len() != n_deliver {
        bail!(
            "{} frames reported delivered but {} came out of the RX path",
            n_deliver,
            delivered.len()
        );
    }
    let cycles = sim.cycles() - start;
    sim.cycle(); // the last record's counts land one cycle after it was emitted
    let mut counters = Vec::with_capacity(RX_STATS.len());
    for n in RX_STATS {
        let port = sim.port(&format!("stat_rx_{n}"))?;
        counters.push((*n, sim.get_u64(port)));
    }
    let want = report_counts(&reports);
    if counters != want {
        bail!("the RX counters disagree with the records: hardware {counters:?}, records {want:?}");
    }
    Ok(RxRun {
        reports,
        delivered,
        cycles,
        counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serialised record is byte for byte the report line format the model documents
    /// (`RxReport::to_json`).
    #[test]
    fn record_is_the_documented_line_format() {
        let delivered = RxReport {
            drop: None,
            vlan: Some((100, 5)),
            l3: Some("ipv4"),
            l4: Some("tcp"),
            l3_csum_ok: Some(true),
            l4_csum_ok: Some(false),
            csum: Some(0xbeef),
            malformed: Some(nicgen_model::parse::malformed::L4_TRUNC),
            rss_type: Some(RssType::TcpIpv4),
            rss_hash: Some(0x1234_5678),
            queue: Some(3),
            tunnel: None,
            inner: None,
        };
        let oversize = RxReport::dropped(DropReason::Oversize);
        let plain = RxReport {
            rss_type: Some(RssType::None),
            malformed: None,
            ..delivered.clone()
        };
        let decapped = RxReport {
            tunnel: Some(TunnelReport {
                kind: TunnelKind::Vxlan,
                id: 100,
                flow_id: 0,
                decap: true,
                inner: false,
                malformed: None,
            }),
            inner: Some(InnerHeaders {
                l3: Some("ipv4"),
                l4: Some("tcp"),
                l3_csum_ok: Some(true),
                l4_csum_ok: Some(false),
            }),
            ..plain.clone()
        };
        let inner = RxReport {
            l4: Some("udp"),
            tunnel: Some(TunnelReport {
                kind: TunnelKind::Vxlan,
                id: 7,
                flow_id: 0,
                decap: false,
                inner: true,
                malformed: None,
            }),
            inner: Some(InnerHeaders {
                l3: Some("ipv6"),
                l4: None,
                l3_csum_ok: Some(true),
                l4_csum_ok: None,
            }),
            ..plain.clone()
        };
        let malformed = RxReport {
            tunnel: Some(TunnelReport {
                kind: TunnelKind::Nvgre,
                id: 0,
                flow_id: 0,
                decap: false,
                inner: false,
                malformed: Some(Malformed::GreFlags),
            }),
            ..plain.clone()
        };
        for (i, r) in [delivered, oversize, plain, decapped, inner, malformed]
            .iter()
            .enumerate()
        {
            assert_eq!(
                serde_json::to_string(&RxRecord::new(i, r)).unwrap(),
                r.to_json(i)
            );
        }
    }
}
