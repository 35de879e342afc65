//! `nicgen`: generate the NIC's Verilog from a preset.
//!
//! ```text
//! nicgen presets                                   # one preset per line, name first
//! nicgen generate [--preset NAME | --config FILE.toml] --out DIR
//! nicgen sim rx [--preset P] --pcap-in F --report R.jsonl [--rss-key HEX40] [--mtu N]
//! nicgen sim tx [--preset P] --pcap-in F --pcap-out G [--csum l3,l4] [--vlan-insert VID]
//! nicgen sim loopback [--preset P] [--frames N] [--queues Q] [--min-len N] [--max-len N]
//!                     [--seed S] [--tx-mode plain|inline|bf]
//!                     [--rx-mode plain|striding] [--dma-latency-ns N]
//! nicgen sim tap [--preset P] --wire-tap NAME[@NETNS] --host-tap NAME[@NETNS] [--seconds N]
//!   every `sim` command also takes --trace FILE.fst [--trace-window FROM..TO]
//! nicgen regmap [--write | --check] [--root DIR]
//! ```

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};
use nicgen::failure::{Failure, EXIT_CODES};
use nicgen::summary::{self, LoopbackSummary, TapSummary, TxSummary};
use nicgen::trace::Trace;
use nicgen_edsl::{generate, EmitOptions};
use nicgen_hdl::preset::{Preset, BUILTIN, DEFAULT};
use std::path::PathBuf;

/// What a command returns: success, or a failure with its exit code.
type Result<T, E = Failure> = std::result::Result<T, E>;

/// Return early with a bad-argument failure (exit 2).
macro_rules! bad_input {
    ($($t:tt)*) => {
        return Err(Failure::input(anyhow!($($t)*)))
    };
}

#[derive(Parser)]
#[command(
    name = "nicgen",
    version,
    about = "Generate, simulate and measure a ConnectX-4 Lx-class NIC described in Rust",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List the built-in presets (name first, then a description).
    Presets,
    /// Generate Verilog, the file list, manifest.json and the Verilator bindings.
    Generate {
        /// A built-in preset (see `nicgen presets`).
        #[arg(long, conflicts_with = "config")]
        preset: Option<String>,
        /// A preset file (TOML, same fields as the built-in ones).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Output directory (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Run frames from a pcap through the simulated datapath (Verilator).
    #[command(subcommand, after_help = EXIT_CODES)]
    Sim(SimCmd),
    /// Render the register and descriptor map: the driver's constants and the register document.
    Regmap {
        /// Write the generated files into the workspace.
        #[arg(long, conflicts_with = "check")]
        write: bool,
        /// Exit non-zero when a committed generated file differs from the map.
        #[arg(long)]
        check: bool,
        /// Workspace root (default: the current directory).
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
}

#[derive(Subcommand)]
enum SimCmd {
    /// The RX path: one JSON report per input frame, and the per-reason counters.
    Rx {
        /// A built-in preset (see `nicgen presets`; default nic64).
        #[arg(long, conflicts_with = "config")]
        preset: Option<String>,
        /// A preset file (TOML, the same fields as the built-in ones).
        #[arg(long, value_name = "FILE.toml")]
        config: Option<PathBuf>,
        /// Frames as captured, pcap or pcapng (Ethernet, without FCS; the FCS is appended before
        /// the MAC check).
        #[arg(long, value_name = "FILE")]
        pcap_in: PathBuf,
        /// Where to write the JSON-lines report (one object per input frame).
        #[arg(long, value_name = "FILE")]
        report: PathBuf,
        /// Also write the frames as delivered to the host (FCS removed, the outer VLAN tag
        /// stripped where the report says so) to this pcap file.
        #[arg(long, value_name = "FILE")]
        pcap_out: Option<PathBuf>,
        /// The 40-byte Toeplitz key as 80 hex digits (default: the Microsoft verification key).
        #[arg(long)]
        rss_key: Option<String>,
        /// MTU, the largest L2 payload: a frame longer than 14 + 4 × its VLAN tags (0, 1 or 2;
        /// TPID 0x8100 or 0x88A8) + MTU bytes without FCS is dropped as oversize. Default: the
        /// preset's.
        #[arg(long)]
        mtu: Option<u32>,
        /// Tunnels to de-capsulate, each steered to a receive queue: `vxlan:VNI=QUEUE` or
        /// `nvgre:VSID=QUEUE`, comma-separated (the preset's steering table, overlay.steer_entries,
        /// holds them). A frame of such a tunnel is delivered as its inner frame.
        #[arg(long, value_name = "KIND:ID=QUEUE,...")]
        decap: Option<String>,
        /// De-capsulate every well-formed VXLAN and NVGRE frame (RSS on the inner headers picks
        /// the queue unless --decap names the tunnel).
        #[arg(long)]
        decap_all: bool,
        /// Tunnel kinds that get the inner offloads when delivered whole (not de-capsulated):
        /// `vxlan`, `nvgre` or `all`, comma-separated. Such a frame's report keeps the outer
        /// headers' types and verdicts, adds the inner ones (inner_l3, inner_l4,
        /// inner_l3_csum_ok, inner_l4_csum_ok), and RSS hashes the inner headers.
        #[arg(long, value_name = "KIND,...")]
        inner: Option<String>,
        #[command(flatten)]
        trace: TraceArgs,
    },
    /// The whole NIC in MAC loopback under the real driver: random frames out and back,
    /// checked against the golden model.
    Loopback {
        /// A built-in preset (see `nicgen presets`; default nic64).
        #[arg(long, conflicts_with = "config")]
        preset: Option<String>,
        /// A preset file (TOML, the same fields as the built-in ones).
        #[arg(long, value_name = "FILE.toml")]
        config: Option<PathBuf>,
        #[command(flatten)]
        run: LoopbackArgs,
        /// Print the summary as one JSON object instead of `key value` lines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        trace: TraceArgs,
    },
    /// Linux through the RTL: the NIC's wire side on one TAP, its host side (through the
    /// driver) on another, each in a network namespace or the current one.
    Tap {
        /// A built-in preset (see `nicgen presets`; default nic64).
        #[arg(long, conflicts_with = "config")]
        preset: Option<String>,
        /// A preset file (TOML, the same fields as the built-in ones).
        #[arg(long, value_name = "FILE.toml")]
        config: Option<PathBuf>,
        /// The wire-side TAP, NAME or NAME@NETNS: opened inside the namespace, attached to if
        /// it exists (and left there), else created (and removed at the end).
        #[arg(long)]
        wire_tap: String,
        /// The host-side TAP (virtio-net header: checksum offload), NAME or NAME@NETNS, opened
        /// like the wire TAP.
        #[arg(long)]
        host_tap: String,
        /// Stop after this many seconds (default: run until SIGINT or SIGTERM).
        #[arg(long)]
        seconds: Option<u64>,
        /// Write every MAC frame, both ways, to this pcapng file (direction in each packet's
        /// flags, time from the simulated cycle).
        #[arg(long, value_name = "FILE")]
        pcap_wire: Option<PathBuf>,
        /// Carry the host side over VXLAN with the NIC's engines:
        /// `vni=N,local=IP,remote=IP,remote-mac=MAC[,mac=MAC][,port=P]`. Every host-side frame
        /// is encapsulated towards `remote`; the VNI's frames from the wire are de-capsulated
        /// before they reach the host side. The NIC answers no ARP for `local`: give the wire
        /// peer a static neighbour entry.
        #[arg(long, value_name = "SPEC")]
        vxlan: Option<String>,
        /// Print the summary as one JSON object instead of `key value` lines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        trace: TraceArgs,
    },
    /// The TX path: what goes on the wire for each input frame (written without the FCS).
    Tx {
        /// A built-in preset (see `nicgen presets`; default nic64).
        #[arg(long, conflicts_with = "config")]
        preset: Option<String>,
        /// A preset file (TOML, the same fields as the built-in ones).
        #[arg(long, value_name = "FILE.toml")]
        config: Option<PathBuf>,
        /// Frames from the host, pcap or pcapng (Ethernet, without FCS).
        #[arg(long, value_name = "FILE")]
        pcap_in: PathBuf,
        /// Where to write the frames as sent, as pcap (without FCS; the FCS is checked before
        /// it is removed).
        #[arg(long, value_name = "FILE")]
        pcap_out: PathBuf,
        /// Checksum offloads to request for every frame: `l3`, `l4`, `l3,l4` or `none`.
        #[arg(long, default_value = "none")]
        csum: String,
        /// Insert an 802.1Q tag with this VLAN ID (0-4095, PCP 0) into every frame (of the
        /// outer frame, with `--encap`).
        #[arg(long)]
        vlan_insert: Option<u16>,
        /// Encapsulate every frame (every segment) with the NIC's engine:
        /// `vxlan:vni=N,src=IP,dst=IP,smac=MAC,dmac=MAC[,port=P][,udp-csum][,ttl=N][,tos=N]` or
        /// `nvgre:vsid=N,src=IP,dst=IP,smac=MAC,dmac=MAC[,flow=N][,ttl=N][,tos=N]`.
        #[arg(long, value_name = "SPEC")]
        encap: Option<String>,
        /// Segment every frame as an LSO send of `mss=N` payload bytes per segment (its headers
        /// found as a driver finds them: plain, VXLAN on 4789 or NVGRE TCP).
        #[arg(long, value_name = "mss=N")]
        tso: Option<String>,
        /// Print the summary as one JSON object instead of `key value` lines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        trace: TraceArgs,
    },
}

/// `--trace FILE.fst [--trace-window FROM..TO]`, on every `sim` command.
#[derive(clap::Args)]
struct TraceArgs {
    /// Write an FST waveform of the run's signals to this file, to open with GTKWave or Surfer
    /// (`gtkwave FILE.fst`, `surfer FILE.fst`). The model is then built with tracing: a
    /// separate cache entry, slower to build and to run.
    #[arg(long, value_name = "FILE.fst")]
    trace: Option<PathBuf>,
    /// The cycles to dump: FROM..TO (TO excluded) or FROM.. (to the end); default the whole
    /// run. Cycles count from 0 when the simulation starts, reset included; cycle c is at
    /// time 2c in the file.
    #[arg(long, value_name = "FROM..TO", requires = "trace", value_parser = nicgen_tb::waves::parse_window)]
    trace_window: Option<nicgen_tb::waves::Window>,
}

impl TraceArgs {
    fn resolve(self) -> Result<Option<Trace>> {
        Trace::new(self.trace, self.trace_window).map_err(Failure::classify)
    }
}

/// Runs a `sim` command with its `--trace` request, then says where the waveform is (also
/// when the run failed: that is when it is wanted).
fn traced(args: TraceArgs, run: impl FnOnce(Option<&Trace>) -> Result<()>) -> Result<()> {
    let trace = args.resolve()?;
    let result = run(trace.as_ref());
    if let Some(t) = &trace {
        nicgen::progress::clear();
        t.report(result.is_err());
    }
    result
}

/// The frames of `--pcap-in`, each checked to be one the simulated NIC can take: non-empty and
/// at most `limit` bytes (`why` says where the limit comes from).
fn read_frames(path: &PathBuf, limit: usize, why: &str) -> Result<Vec<Vec<u8>>> {
    // The pcap error names the file; the message names the option.
    let frames = nicgen_tb::pcap::read_pcap(path)
        .map_err(|e| Failure::input(anyhow!("cannot read --pcap-in {e}")))?;
    for (i, f) in frames.iter().enumerate() {
        if f.is_empty() {
            bad_input!(
                "frame {i} of {} is empty; the simulated NIC needs at least one byte",
                path.display()
            );
        }
        if f.len() > limit {
            bad_input!(
                "frame {i} of {} is {} bytes; {why} accepts at most {limit}",
                path.display(),
                f.len()
            );
        }
    }
    Ok(frames)
}

/// `sim tx`'s offload options, as written.
struct TxOpts {
    csum: String,
    vlan: Option<u16>,
    encap: Option<String>,
    tso: Option<String>,
}

fn sim_tx(
    p: &Preset,
    pcap_in: &PathBuf,
    pcap_out: &PathBuf,
    o: &TxOpts,
    json: bool,
    trace: Option<&Trace>,
) -> Result<()> {
    let (csum, vlan) = (o.csum.as_str(), o.vlan);
    let encap = match &o.encap {
        Some(spec) => {
            if p.overlay.encap_contexts == 0 {
                bad_input!(
                    "--encap: preset {} has no encapsulation engine (overlay.encap_contexts = 0)",
                    p.name
                );
            }
            Some(nicgen::tx_opts::parse_encap(spec).map_err(Failure::input)?)
        }
        None => None,
    };
    let mss = match &o.tso {
        Some(spec) => {
            if p.overlay.max_mss == 0 {
                bad_input!(
                    "--tso: preset {} has no TSO engine (overlay.max_mss = 0)",
                    p.name
                );
            }
            Some(
                nicgen::tx_opts::parse_tso(spec, p.overlay.max_mss as usize)
                    .map_err(Failure::input)?,
            )
        }
        None => None,
    };
    use nicgen::sim_rx::Knobs;
    use nicgen::sim_tx::{run_tx, tx_cfg, tx_model_with};
    let (mut l3, mut l4) = (false, false);
    for part in csum.split(',').map(str::trim) {
        match part {
            "l3" => l3 = true,
            "l4" => l4 = true,
            "none" | "" => {}
            other => bad_input!("--csum takes `l3`, `l4`, `l3,l4` or `none`, not `{other}`"),
        }
    }
    if let Some(v) = vlan {
        if v > 4095 {
            bad_input!("--vlan-insert {v} is not a VLAN ID; use 0 to 4095");
        }
    }
    // An LSO send is held to the send engine's gather buffer; the TX path alone takes any
    // length its segments fit.
    let (limit, why) = if mss.is_some() {
        (
            65535,
            "an LSO send (the TX path's segmentation stage)".to_string(),
        )
    } else {
        (
            p.mtu as usize + 22,
            format!("the TX path of preset {} (MTU {} + 22)", p.name, p.mtu),
        )
    };
    let frames = read_frames(pcap_in, limit, &why)?;
    writable(pcap_out, "--pcap-out")?;
    let reqs: Vec<_> = frames
        .iter()
        .map(|f| {
            (
                f.clone(),
                nicgen_model::tx::TxRequest {
                    csum_l3: l3,
                    csum_l4: l4,
                    vlan_tci: vlan,
                    mss,
                    encap,
                    aborted: false,
                },
            )
        })
        .collect();
    eprintln!(
        "nicgen: building the TX model for preset {} ({} bits)...",
        p.name, p.data_bits
    );
    let model = nicgen::trace::model(trace, |t| tx_model_with(&tx_cfg(p), &p.name, t))
        .map_err(Failure::classify)?;
    let bar = indicatif::ProgressBar::new(reqs.len() as u64);
    if reqs.len() < 10_000 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let run = run_tx(&model, &tx_cfg(p), &reqs, Knobs::default(), |_| bar.inc(1))
        .map_err(Failure::classify)?;
    let (wire, cycles) = (&run.wire, run.cycles);
    bar.finish_and_clear();
    let mut out = Vec::with_capacity(wire.len());
    for (i, w) in wire.iter().enumerate() {
        if !nicgen_model::crc32::check_fcs(w) {
            return Err(Failure::design(anyhow!(
                "frame {i}: the TX path produced a bad FCS"
            )));
        }
        out.push(w[..w.len() - 4].to_vec());
    }
    nicgen_tb::pcap::write_pcap(pcap_out, &out)
        .map_err(|e| Failure::input(anyhow!("cannot write --pcap-out {e}")))?;
    let summary = TxSummary {
        preset: p.name.clone(),
        frames_in: frames.len(),
        frames_out: out.len(),
        vlan_inserted: if vlan.is_some() { out.len() } else { 0 },
        encapsulated: if encap.is_some() { out.len() } else { 0 },
        lso_sends: if mss.is_some() {
            frames.len() - run.lso_bad as usize
        } else {
            0
        },
        lso_refused: run.lso_bad as usize,
        encap_dropped: run.encap_drop as usize,
        cycles,
    };
    summary::print(&summary, json);
    Ok(())
}

/// Parse `--rss-key`: 80 hex digits (separators `:`, `-` and spaces allowed).
fn parse_key(s: &str) -> Result<[u8; 40]> {
    let hex: String = s
        .chars()
        .filter(|c| !matches!(c, ':' | '-' | ' '))
        .collect();
    if hex.len() != 80 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        bad_input!("--rss-key must be 40 bytes as 80 hex digits (got {} characters); e.g. the Microsoft key 6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa", hex.len());
    }
    let mut k = [0u8; 40];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("checked hex");
    }
    Ok(k)
}

/// The inner offloads `--inner` asks for: `vxlan`, `nvgre` or `all`, comma-separated.
fn parse_inner(spec: &str) -> Result<nicgen_model::tunnel::InnerOffload> {
    use nicgen_model::tunnel::InnerOffload;
    let mut o = InnerOffload::default();
    for item in spec.split(',').map(str::trim) {
        match item {
            "vxlan" => o.vxlan = true,
            "nvgre" => o.nvgre = true,
            "all" => o = InnerOffload::ALL,
            k => bad_input!(
                "--inner: unknown tunnel kind `{k}`; the allowed values are vxlan, nvgre and all (comma-separated)"
            ),
        }
    }
    Ok(o)
}

/// The steering table `--decap`, `--decap-all` and `--inner` ask for (`None` when none is
/// given).
fn parse_decap(
    spec: Option<&str>,
    all: bool,
    inner: Option<&str>,
    p: &Preset,
) -> Result<Option<nicgen_model::tunnel::Steering>> {
    use nicgen_model::tunnel::{Steering, TunnelKind};
    if spec.is_none() && !all && inner.is_none() {
        return Ok(None);
    }
    let inner = inner.map(parse_inner).transpose()?.unwrap_or_default();
    if p.overlay.steer_entries == 0 {
        bad_input!(
            "preset {} has no tunnel stage (overlay.steer_entries = 0); use a preset with one, e.g. nic64",
            p.name
        );
    }
    let mut s = Steering::new();
    s.decap_all = all;
    s.inner = inner;
    for item in spec
        .unwrap_or("")
        .split(',')
        .filter(|i| !i.trim().is_empty())
    {
        let usage = "use KIND:ID=QUEUE, e.g. --decap vxlan:100=2,nvgre:7=1";
        let Some((kind, rest)) = item.trim().split_once(':') else {
            bad_input!("--decap entry `{item}` has no kind; {usage}");
        };
        let kind = match kind {
            "vxlan" => TunnelKind::Vxlan,
            "nvgre" => TunnelKind::Nvgre,
            k => bad_input!("--decap entry `{item}`: unknown tunnel kind `{k}` (vxlan or nvgre)"),
        };
        let Some((id, queue)) = rest.split_once('=') else {
            bad_input!("--decap entry `{item}` has no queue; {usage}");
        };
        let id: u32 = match id.parse() {
            Ok(v) if v < 1 << 24 => v,
            _ => bad_input!("--decap entry `{item}`: the VNI/VSID must be a number below 2^24"),
        };
        let queue: u32 = match queue.parse() {
            Ok(q) if q < p.rss.queues => q,
            _ => bad_input!(
                "--decap entry `{item}`: the queue must be a number below the preset's {} RSS queues",
                p.rss.queues
            ),
        };
        s.insert(kind, id, queue);
    }
    if s.entries().len() > p.overlay.steer_entries as usize {
        bad_input!(
            "--decap names {} tunnels; preset {} steers at most {} (overlay.steer_entries)",
            s.entries().len(),
            p.name,
            p.overlay.steer_entries
        );
    }
    Ok(Some(s))
}

#[allow(clippy::too_many_arguments)]
fn sim_rx(
    p: &Preset,
    pcap_in: &PathBuf,
    report: &PathBuf,
    pcap_out: Option<&PathBuf>,
    steering: Option<&nicgen_model::tunnel::Steering>,
    rss_key: Option<&str>,
    mtu: Option<u32>,
    trace: Option<&Trace>,
) -> Result<()> {
    use nicgen::sim_rx::{run_rx, rx_cfg, rx_model_with, Knobs, RxRecord};
    if let Some(m) = mtu {
        if !(64..=16000).contains(&m) {
            bad_input!("--mtu {m} is out of range; use 64 to 16000");
        }
    }
    let key = rss_key.map(parse_key).transpose()?;
    let frames = read_frames(pcap_in, 16000, "the simulated NIC")?;
    // Before the model build: an unwritable output fails at once.
    writable(report, "--report")?;
    if let Some(path) = pcap_out {
        writable(path, "--pcap-out")?;
    }
    let cfg = rx_cfg(p, mtu);
    let wire: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| {
            let mut w = f.clone();
            nicgen_model::crc32::append_fcs(&mut w);
            w
        })
        .collect();
    eprintln!(
        "nicgen: building the RX model for preset {} ({} bits)...",
        p.name, p.data_bits
    );
    let model = nicgen::trace::model(trace, |t| rx_model_with(&cfg, &p.name, t))
        .map_err(Failure::classify)?;
    let bar = indicatif::ProgressBar::new(wire.len() as u64);
    if wire.len() < 10_000 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let run = run_rx(
        &model,
        &cfg,
        &wire,
        key.as_ref(),
        steering,
        Knobs::default(),
        |_| bar.inc(1),
    )
    .map_err(Failure::classify)?;
    bar.finish_and_clear();
    let mut out = String::new();
    for (i, r) in run.reports.iter().enumerate() {
        let line = serde_json::to_string(&RxRecord::new(i, r)).expect("records serialise");
        out.push_str(&line);
        out.push('\n');
    }
    std::fs::write(report, out)
        .map_err(|e| Failure::input(anyhow!("cannot write --report {}: {e}", report.display())))?;
    if let Some(path) = pcap_out {
        nicgen_tb::pcap::write_pcap(path, &run.delivered)
            .map_err(|e| Failure::input(anyhow!("cannot write --pcap-out {e}")))?;
    }
    // The counters are the hardware's (`stat_rx_*`); run_rx has checked them against the
    // records.
    for (name, value) in &run.counters {
        println!("{name} {value}");
    }
    println!("cycles {}", run.cycles);
    let get = |n: &str| {
        run.counters
            .iter()
            .find(|(k, _)| *k == n)
            .map_or(0, |c| c.1) as usize
    };
    let delivered = get("delivered");
    let dropped =
        get("drop_runt") + get("drop_oversize") + get("drop_fcs") + get("drop_mac_control");
    if delivered + dropped != frames.len() {
        return Err(Failure::design(anyhow!(
            "accounting error: {delivered} delivered + {dropped} dropped != {} frames in",
            frames.len()
        )));
    }
    Ok(())
}

/// Check that `path` (the value of `option`) can be written, by creating it.
fn writable(path: &std::path::Path, option: &str) -> Result<()> {
    std::fs::File::create(path)
        .map(drop)
        .map_err(|e| Failure::input(anyhow!("cannot write {option} {}: {e}", path.display())))
}

/// The preset named by `--preset` / `--config`, or the default.
fn load_preset(preset: Option<&str>, config: Option<&PathBuf>) -> Result<Preset> {
    if let Some(path) = config {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}; check the path", path.display()))
            .map_err(Failure::input)?;
        return Preset::from_toml(&text, &path.display().to_string()).map_err(Failure::input);
    }
    Preset::builtin(preset.unwrap_or(DEFAULT)).map_err(Failure::input)
}

/// The most `--dma-latency-ns` takes: 100 µs, well inside the driver's 1 ms waits.
const MAX_DMA_LATENCY_NS: u64 = 100_000;
/// Largest `--doorbell-batch`: a run of frames stays well inside a send ring.
const MAX_DOORBELL_BATCH: usize = 64;

/// `sim loopback`'s options of the run itself.
#[derive(clap::Args)]
struct LoopbackArgs {
    /// Frames to send (and check on return).
    #[arg(long, default_value_t = 1000)]
    frames: usize,
    /// Queue pairs to use (at most the preset's RSS queue count).
    #[arg(long, default_value_t = nicgen::sim_loopback::DEFAULT_QUEUES)]
    queues: usize,
    /// Smallest frame, bytes without FCS (at least 60, at most --max-len).
    #[arg(long, default_value_t = nicgen::sim_loopback::DEFAULT_MIN_LEN)]
    min_len: usize,
    /// Largest frame, bytes without FCS (at most the preset's MTU + 14).
    #[arg(long, default_value_t = nicgen::sim_loopback::DEFAULT_MAX_LEN)]
    max_len: usize,
    /// Seed of the frames and of the simulated host's DMA timing.
    #[arg(long, default_value_t = nicgen::sim_loopback::DEFAULT_SEED)]
    seed: u64,
    /// Nanoseconds from a DMA read request to its first answer (0 to 100000; default 1000,
    /// a PCIe round trip to host memory). The simulated host is a PCIe Gen3 link, x8 for
    /// presets narrower than 512 bits and x16 for 512, whose bandwidth (less the TLP
    /// headers at MPS 256 B and MRRS 512 B) bounds the DMA in each direction.
    #[arg(long, default_value_t = nicgen::sim_loopback::DMA_LATENCY_NS)]
    dma_latency_ns: u64,
    /// Write every MAC frame, both ways, to this pcapng file (direction in each packet's
    /// flags, time from the simulated cycle); the loop then closes outside the NIC, at its
    /// MAC ports, so that the frames cross them.
    #[arg(long, value_name = "FILE")]
    pcap_wire: Option<PathBuf>,
    /// How the driver hands frames to the send engine.
    #[arg(long, value_enum, default_value_t = nicgen::sim_loopback::TxMode::Plain)]
    tx_mode: nicgen::sim_loopback::TxMode,
    /// Frames per send doorbell (1 to 64): runs of this many frames go to one queue and ring
    /// its doorbell once, the driver asking for one CQE per run (doorbell batching, Linux's
    /// xmit_more). Default 1; with --tx-mode mpwqe 14, a full multi-packet WQE (the run's
    /// frames are its packets).
    #[arg(long, value_name = "N")]
    doorbell_batch: Option<usize>,
    /// Frames in flight at most, 1 to 256 (the send and receive rings are sized to hold
    /// them); default four per queue, with --tx-mode mpwqe 14 per queue up to 32.
    #[arg(long, value_name = "N")]
    in_flight: Option<usize>,
    /// CQE compression on every CQ: runs of like completions written as an mlx5 title CQE
    /// and an array of mini CQEs (checksum format), which the driver expands back.
    #[arg(long)]
    cqe_compress: bool,
    /// Cycles each CQ's session (CQEs merged into one write, compressed with
    /// --cqe-compress) waits for more completions, 0 to 65535; default 256 with
    /// --cqe-compress, else 0 (only completions already waiting).
    #[arg(long, value_name = "CYCLES")]
    cq_session: Option<u16>,
    /// How the driver posts receive buffers: one frame per WQE, or a striding (multi-packet)
    /// RQ whose WQEs each take many frames.
    #[arg(long, value_enum, default_value_t = nicgen::sim_loopback::RxMode::Plain)]
    rx_mode: nicgen::sim_loopback::RxMode,
}

/// The options of `sim loopback` as the runner takes them, for preset `p`.
fn loopback_opts(p: &Preset, a: LoopbackArgs) -> Result<nicgen::sim_loopback::LoopbackOpts> {
    use nicgen::sim_loopback::{pcie_dma, LoopbackOpts};
    if a.dma_latency_ns > MAX_DMA_LATENCY_NS {
        bad_input!(
            "--dma-latency-ns {} is too long; use 0 to {MAX_DMA_LATENCY_NS} (100 µs)",
            a.dma_latency_ns
        );
    }
    let doorbell_batch = a
        .doorbell_batch
        .unwrap_or(a.tx_mode.default_doorbell_batch());
    if !(1..=MAX_DOORBELL_BATCH).contains(&doorbell_batch) {
        bad_input!(
            "--doorbell-batch {doorbell_batch} is out of range; use 1 (a doorbell per frame) to {MAX_DOORBELL_BATCH}"
        );
    }
    Ok(LoopbackOpts {
        frames: a.frames,
        queues: a.queues,
        min_len: a.min_len,
        max_len: a.max_len,
        seed: a.seed,
        dma: pcie_dma(p, a.dma_latency_ns, a.seed),
        fixed_len: None,
        window: match a.in_flight {
            Some(0) => bad_input!("--in-flight 0: use 1 to 256, or leave it out for the default"),
            Some(n) => n,
            None => 0,
        },
        pcap_wire: a.pcap_wire,
        tx_mode: a.tx_mode,
        doorbell_batch,
        cqe_compress: a.cqe_compress,
        cq_session: a
            .cq_session
            .unwrap_or(nicgen::sim_loopback::default_cq_session(a.cqe_compress)),
        rx_mode: a.rx_mode,
    })
}

fn sim_loopback(
    p: &Preset,
    opts: nicgen::sim_loopback::LoopbackOpts,
    dma_latency_ns: u64,
    json: bool,
    trace: Option<&Trace>,
) -> Result<()> {
    use nicgen::sim_loopback::{check_opts, nic_model_with, run_loopback};
    let frames = opts.frames;
    let cqe_compress = opts.cqe_compress;
    let mpwqe = opts.tx_mode == nicgen::sim_loopback::TxMode::Mpwqe;
    if frames == 0 {
        bad_input!("--frames must be at least 1");
    }
    check_opts(p, &opts).map_err(Failure::input)?;
    if let Some(path) = &opts.pcap_wire {
        // Before the model build: an unwritable path fails at once.
        writable(path, "--pcap-wire")?;
    }
    eprintln!(
        "nicgen: building the NIC model for preset {} ({} bits)...",
        p.name, p.data_bits
    );
    let model = nicgen::trace::model(trace, |t| nic_model_with(p, t)).map_err(Failure::classify)?;
    let bar = indicatif::ProgressBar::new(frames as u64);
    if frames < 1000 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let t0 = std::time::Instant::now();
    let r = run_loopback(p, &model, &opts, |n| bar.set_position(n as u64))
        .map_err(Failure::classify)?;
    bar.finish_and_clear();
    let wall = t0.elapsed().as_secs_f64();
    summary::print(&LoopbackSummary::new(p, &r, wall, dma_latency_ns), json);
    if cqe_compress {
        eprintln!(
            "nicgen: CQE compression: {} sessions held {} completions; {} DMA writes",
            r.compressed.0, r.compressed.1, r.dma_writes
        );
    }
    if mpwqe {
        eprintln!(
            "nicgen: multi-packet sends: {} frames in {} send WQEs",
            r.frames, r.tx_wqes
        );
    }
    for n in &r.notes {
        eprintln!("nicgen: mismatch: {n}");
    }
    if r.mismatches > 0 {
        return Err(Failure::design(anyhow!(
            "{} of {} frames came back different from the model",
            r.mismatches,
            r.frames
        )));
    }
    Ok(())
}

fn regmap(write: bool, check: bool, root: &std::path::Path) -> Result<()> {
    use nicgen::regmap::{rendered, REGEN};
    let problems = nicgen_hdl::host::regmap::check();
    if !problems.is_empty() {
        return Err(Failure::design(anyhow!(
            "the register map is inconsistent:\n  {}",
            problems.join("\n  ")
        )));
    }
    if !root.join("Cargo.toml").exists() {
        bad_input!(
            "{} is not the workspace root (no Cargo.toml); run from the root or pass --root DIR",
            root.display()
        );
    }
    let mut stale = Vec::new();
    for (path, text) in rendered() {
        let full = root.join(path);
        let old = std::fs::read_to_string(&full).unwrap_or_default();
        if old == text {
            println!("nicgen: {path} is current");
            continue;
        }
        if write {
            if let Some(dir) = full.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))
                    .map_err(Failure::input)?;
            }
            std::fs::write(&full, &text)
                .with_context(|| format!("cannot write {}", full.display()))
                .map_err(Failure::input)?;
            println!("nicgen: wrote {path}");
        } else {
            println!("nicgen: {path} is stale");
            stale.push(path);
        }
    }
    if check && !stale.is_empty() {
        return Err(Failure::design(anyhow!(
            "{} out of date with hdl/src/host/regmap.rs; run `{REGEN}`",
            stale.join(", ")
        )));
    }
    Ok(())
}

fn main() {
    // clap exits 2 on a usage error (0 for --help and --version) before this runs.
    let cli = Cli::parse();
    nicgen::progress::show_builds();
    if let Err(f) = run(cli) {
        nicgen::progress::clear();
        eprintln!("nicgen: error: {f}");
        std::process::exit(f.code());
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Presets => {
            for (name, _) in BUILTIN {
                let p = Preset::builtin(name).map_err(Failure::design)?;
                let dflt = if *name == DEFAULT { " (default)" } else { "" };
                println!("{name}  {}{dflt}", p.description);
            }
        }
        Cmd::Generate {
            preset,
            config,
            out,
        } => {
            let p = load_preset(preset.as_deref(), config.as_ref())?;
            let top = nicgen_hdl::nic::nic(&p, &nicgen_hdl::host::bar_regs::BuildInfo::current())
                .map_err(|e| Failure::design(anyhow!("{e}")))?;
            let g = generate(
                &top,
                &EmitOptions {
                    preset: p.name.clone(),
                    config_hash: p.config_hash(),
                },
            );
            g.write_to(&out)
                .with_context(|| format!("cannot write to {}", out.display()))
                .map_err(Failure::input)?;
            println!(
                "nicgen: preset {} -> {}: {} modules, top `{}`, config hash {}",
                p.name,
                out.display(),
                g.manifest.modules.len(),
                g.top,
                p.config_hash()
            );
        }
        Cmd::Regmap { write, check, root } => regmap(write, check, &root)?,
        Cmd::Sim(SimCmd::Loopback {
            preset,
            config,
            run,
            json,
            trace,
        }) => traced(trace, |trace| {
            let p = load_preset(preset.as_deref(), config.as_ref())?;
            let dma_latency_ns = run.dma_latency_ns;
            let opts = loopback_opts(&p, run)?;
            sim_loopback(&p, opts, dma_latency_ns, json, trace)
        })?,
        Cmd::Sim(SimCmd::Tap {
            preset,
            config,
            wire_tap,
            host_tap,
            seconds,
            pcap_wire,
            vxlan,
            json,
            trace,
        }) => traced(trace, |trace| {
            use nicgen::sim_tap::{parse_tap_arg, run_tap};
            let p = load_preset(preset.as_deref(), config.as_ref())?;
            let wire = parse_tap_arg(&wire_tap).map_err(Failure::input)?;
            let host = parse_tap_arg(&host_tap).map_err(Failure::input)?;
            let vxlan = vxlan
                .as_deref()
                .map(nicgen::tx_opts::parse_tap_vxlan)
                .transpose()
                .map_err(Failure::input)?;
            if vxlan.is_some() && p.overlay.encap_contexts == 0 {
                return Err(Failure::input(anyhow!(
                    "--vxlan: preset {} has no encapsulation engine (overlay.encap_contexts = 0)",
                    p.name
                )));
            }
            let c = run_tap(
                &p,
                &wire,
                &host,
                seconds,
                pcap_wire.as_deref(),
                vxlan.as_ref(),
                trace,
            )
            .map_err(Failure::classify)?;
            summary::print(
                &TapSummary {
                    preset: p.name.clone(),
                    counts: c,
                },
                json,
            );
            Ok(())
        })?,
        Cmd::Sim(SimCmd::Rx {
            preset,
            config,
            pcap_in,
            report,
            pcap_out,
            rss_key,
            mtu,
            decap,
            decap_all,
            inner,
            trace,
        }) => traced(trace, |trace| {
            let p = load_preset(preset.as_deref(), config.as_ref())?;
            let steering = parse_decap(decap.as_deref(), decap_all, inner.as_deref(), &p)?;
            sim_rx(
                &p,
                &pcap_in,
                &report,
                pcap_out.as_ref(),
                steering.as_ref(),
                rss_key.as_deref(),
                mtu,
                trace,
            )
        })?,
        Cmd::Sim(SimCmd::Tx {
            preset,
            config,
            pcap_in,
            pcap_out,
            csum,
            vlan_insert,
            encap,
            tso,
            json,
            trace,
        }) => traced(trace, |trace| {
            let p = load_preset(preset.as_deref(), config.as_ref())?;
            let o = TxOpts {
                csum,
                vlan: vlan_insert,
                encap,
                tso,
            };
            sim_tx(&p, &pcap_in, &pcap_out, &o, json, trace)
        })?,
    }
    Ok(())
}
