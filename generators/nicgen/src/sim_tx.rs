//! Running frames through the simulated TX path (`eth_tx`): what `nicgen sim tx` does, and what
//! the TX tests drive.

use crate::sim_rx::Knobs;
use anyhow::{anyhow, bail, Result};
use nicgen_edsl::{generate, EmitOptions, Shape};
use nicgen_hdl::eth::eth_tx::{eth_tx, TxCfg, TxCmd};
use nicgen_hdl::overlay::tx_tso::TsoCmd;
use nicgen_hdl::preset::Preset;
use nicgen_model::encap::EncapContext;
use nicgen_model::tso::{lso_offsets, LsoOffsets};
use nicgen_model::tunnel::TunnelConfig;
use nicgen_model::tx::{tx_frames, TxRequest};
use nicgen_tb::record::RecordDriver;
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamMonitor, StreamPorts, StreamSink,
};
use nicgen_tb::{Model, VerilatorBuild, VerilatorOptions};

/// The TX configuration a preset gives.
pub fn tx_cfg(p: &Preset) -> TxCfg {
    nicgen_hdl::top::tx_cfg(p)
}

/// Build (or take from the cache) the Verilator model of the TX path.
pub fn tx_model(cfg: &TxCfg, preset: &str) -> Result<Model> {
    tx_model_with(cfg, preset, false)
}

/// [`tx_model`], built with FST tracing when `trace` (its own cache entry).
pub fn tx_model_with(cfg: &TxCfg, preset: &str, trace: bool) -> Result<Model> {
    let def = eth_tx(cfg).map_err(|e| anyhow!("{e}"))?;
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

/// The LSO request (a [`TsoCmd`], `lso` set) for `mss`-byte segments of a super-frame with
/// headers at `o`: what a driver puts in the WQE's software-parser fields and mss.
pub fn tso_cmd(o: &LsoOffsets, mss: usize) -> TsoCmd<u128> {
    TsoCmd {
        mss: mss as u128,
        outer_l3: o.outer_l3 as u128,
        outer_l4: o.outer_l4 as u128,
        l3: o.l3 as u128,
        l4: o.l4 as u128,
        hdr_len: o.hdr_len as u128,
        tunnel: o.tunnel as u128,
        outer_v6: o.outer_v6 as u128,
        v6: o.v6 as u128,
        lso: 1,
    }
}

/// The [`TxCmd`] record (bytes, little-endian) that asks the TX path for `r` on `frame`, with
/// encapsulation context `ctx` (the table entry holding `r.encap`). An LSO request's offsets are
/// the model's reading of the frame's headers (`nicgen_model::tso::lso_offsets`), as a driver
/// fills the software-parser offsets; a frame whose headers the model cannot segment gets
/// offsets of 0, which the TX path refuses (and counts).
pub fn tx_cmd(frame: &[u8], r: &TxRequest, ctx: Option<u8>) -> Vec<u8> {
    let tso = match r.mss {
        Some(mss) => {
            let o = lso_offsets(frame, &TunnelConfig::default()).unwrap_or_default();
            TsoCmd::shape().encode(&tso_cmd(&o, mss))
        }
        None => vec![0],
    };
    let mut tso_le = [0u8; 16];
    tso_le[..tso.len()].copy_from_slice(&tso);
    TxCmd::shape().encode(&TxCmd {
        csum_l3: r.csum_l3 as u128,
        csum_l4: r.csum_l4 as u128,
        vlan: r.vlan_tci.is_some() as u128,
        vlan_tci: r.vlan_tci.unwrap_or(0) as u128,
        encap: ctx.is_some() as u128,
        encap_ctx: ctx.unwrap_or(0) as u128,
        tso: u128::from_le_bytes(tso_le),
    })
}

/// What a run of the TX path gave.
#[derive(Debug, Clone, Default)]
pub struct TxRun {
    /// The wire frames (FCS included), in order.
    pub wire: Vec<Vec<u8>>,
    /// Cycles from the first input to the last frame out.
    pub cycles: u64,
    /// LSO sends the path refused and dropped (`stat_lso_bad`).
    pub lso_bad: u64,
    /// Frames the encapsulation engine dropped (`stat_encap_drop`).
    pub encap_drop: u64,
}

/// The distinct encapsulation contexts of `frames`' requests, in order of first use: table
/// entry `i` holds the `i`-th.
pub fn encap_contexts(frames: &[(Vec<u8>, TxRequest)]) -> Vec<EncapContext> {
    let mut v: Vec<EncapContext> = Vec::new();
    for (_, r) in frames {
        if let Some(c) = &r.encap {
            if !v.contains(c) {
                v.push(*c);
            }
        }
    }
    v
}

/// The frames the model sends for `frames` (per-context IPv4 IDs from 0, as after the
/// contexts are written): what [`run_tx`] waits for.
pub fn model_wire(frames: &[(Vec<u8>, TxRequest)], window: usize) -> Vec<Vec<u8>> {
    let ctxs = encap_contexts(frames);
    let mut ids = vec![0u16; ctxs.len()];
    let mut plain_id = 0u16;
    let mut out = Vec::new();
    for (f, r) in frames {
        let id = match &r.encap {
            Some(c) => &mut ids[ctxs.iter().position(|x| x == c).expect("listed")],
            None => &mut plain_id,
        };
        if let Ok(w) = tx_frames(f, r, window, id) {
            out.extend(w);
        }
    }
    out
}

/// Drive `frames` with their requests (the encapsulation contexts they name written first, in
/// table entries from 0); runs until the model's count of frames ([`model_wire`]) is out.
pub fn run_tx(
    model: &Model,
    cfg: &TxCfg,
    frames: &[(Vec<u8>, TxRequest)],
    k: Knobs,
    mut on_frame: impl FnMut(usize),
) -> Result<TxRun> {
    let mut sim = model.instance();
    let rst = sim.port("rst")?;
    sim.set(rst, 1);
    sim.cycles_n(2);
    sim.set(rst, 0);
    let ctxs = encap_contexts(frames);
    if ctxs.len() > cfg.encap_contexts as usize {
        bail!(
            "the requests name {} encapsulation contexts; the TX path has {}",
            ctxs.len(),
            cfg.encap_contexts
        );
    }
    if !ctxs.is_empty() {
        let (we, addr, wdata) = (
            sim.port("cfg_encap_we")?,
            sim.port("cfg_encap_addr")?,
            sim.port("cfg_encap_wdata")?,
        );
        for (i, c) in ctxs.iter().enumerate() {
            let words = crate::tx_opts::driver_ctx(c)
                .words()
                .map_err(|e| anyhow!("encapsulation context {i}: {e}"))?;
            for (w, v) in words.into_iter().enumerate() {
                sim.set(we, 1);
                sim.set(addr, (i * 16 + w) as u64);
                sim.set(wdata, v.into());
                sim.cycle();
            }
        }
        sim.set(we, 0);
    }
    if frames.iter().any(|(_, r)| r.mss.is_some()) && cfg.max_mss == 0 {
        bail!("the requests ask for TSO; this TX path has no segmentation stage (max_mss 0)");
    }
    let want = model_wire(frames, cfg.window as usize).len();
    let sp = StreamPorts::new(&sim, "s_axis")?;
    let mp = StreamPorts::new(&sim, "m_axis")?;
    let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
    let mut mon_in = StreamMonitor::new(sp, k.seed);
    let mut sink = StreamSink::new(mp.clone(), k.seed + 1, k.backpressure);
    let mut mon_out = StreamMonitor::new(mp, k.seed);
    let mut cmd = RecordDriver::new(&sim, "s_axis_cmd", k.seed + 2, k.idle)?;
    for (f, r) in frames {
        if f.is_empty() {
            bail!("an empty frame cannot be sent on a stream");
        }
        if r.aborted {
            // The sender's abort: one byte more on the last beat, `tuser` set.
            let mut g = f.clone();
            g.push(0xA5);
            drv.push_with_user(g, 1);
        } else {
            drv.push(f.clone());
        }
        let ctx = r
            .encap
            .map(|c| ctxs.iter().position(|x| *x == c).expect("listed") as u8);
        cmd.push(tx_cmd(f, r, ctx));
    }
    let (bad_p, drop_p) = (sim.port("stat_lso_bad")?, sim.port("stat_encap_drop")?);
    let (mut lso_bad, mut encap_drop) = (0u64, 0u64);
    let start = sim.cycles();
    let mut seen = 0;
    run_until_seeded(&mut sim, k.seed, 20_000, |sim| {
        let mut agents: Vec<&mut dyn Agent> =
            vec![&mut drv, &mut mon_in, &mut cmd, &mut sink, &mut mon_out];
        let p = step(sim, &mut agents)?;
        lso_bad += sim.get_u64(bad_p);
        encap_drop += sim.get_u64(drop_p);
        while seen < sink.frames().len() {
            on_frame(seen);
            seen += 1;
        }
        Ok(Status::new(p, sink.frames().len() >= want))
    })
    .map_err(|e| {
        anyhow!(
            "the TX simulation stopped making progress after {} of {want} frames: {e}",
            sink.frames().len()
        )
    })?;
    let cycles = sim.cycles() - start;
    // Frames past the model's count, and drops still on their way, would show here.
    sim.cycles_n(64);
    lso_bad += sim.get_u64(bad_p);
    encap_drop += sim.get_u64(drop_p);
    Ok(TxRun {
        wire: sink.frames().iter().map(|f| f.data.clone()).collect(),
        cycles,
        lso_bad,
        encap_drop,
    })
}
