//! Running frames through the simulated TX path (`eth_tx`): what `nicgen sim tx` does, and what
//! the TX tests drive.

use crate::sim_rx::Knobs;
use anyhow::{anyhow, bail, Result};
use nicgen_edsl::{generate, EmitOptions, Shape};
use nicgen_hdl::eth::eth_tx::{eth_tx, TxCfg, TxCmd};
use nicgen_hdl::preset::Preset;
use nicgen_model::tx::TxRequest;
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

/// The [`TxCmd`] record (bytes, little-endian) that asks the TX path for `r`.
pub fn tx_cmd(r: &TxRequest) -> Vec<u8> {
    TxCmd::shape().encode(&TxCmd {
        csum_l3: r.csum_l3 as u128,
        csum_l4: r.csum_l4 as u128,
        vlan: r.vlan_tci.is_some() as u128,
        vlan_tci: r.vlan_tci.unwrap_or(0) as u128,
        encap: 0,
        encap_ctx: 0,
        tso: 0,
    })
}

/// Drive `frames` with their requests; returns the wire frames (FCS included), in order, and
/// the cycles taken.
pub fn run_tx(
    model: &Model,
    frames: &[(Vec<u8>, TxRequest)],
    k: Knobs,
    mut on_frame: impl FnMut(usize),
) -> Result<(Vec<Vec<u8>>, u64)> {
    let mut sim = model.instance();
    let rst = sim.port("rst")?;
    sim.set(rst, 1);
    sim.cycles_n(2);
    sim.set(rst, 0);
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
        drv.push(f.clone());
        cmd.push(tx_cmd(r));
    }
    let n = frames.len();
    let start = sim.cycles();
    let mut seen = 0;
    run_until_seeded(&mut sim, k.seed, 20_000, |sim| {
        let mut agents: Vec<&mut dyn Agent> =
            vec![&mut drv, &mut mon_in, &mut cmd, &mut sink, &mut mon_out];
        let p = step(sim, &mut agents)?;
        while seen < sink.frames().len() {
            on_frame(seen);
            seen += 1;
        }
        Ok(Status::new(p, sink.frames().len() == n))
    })
    .map_err(|e| {
        anyhow!(
            "the TX simulation stopped making progress after {} of {n} frames: {e}",
            sink.frames().len()
        )
    })?;
    Ok((
        sink.frames().iter().map(|f| f.data.clone()).collect(),
        sim.cycles() - start,
    ))
}
