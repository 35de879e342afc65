//! Where the host engines' cycles go in one loopback run: the run repeated on a model built with
//! tracing, its waveform (FST) read back with `wellen`, and per engine the share of the cycles
//! each state of its state machine held, plus the handshakes that say what an engine waited for.
//! The goals section of results/HOST.md cites these shares as what bounds a missed goal, so they
//! come from the same run as the row they explain, at every preset, rather than from a trace
//! made by hand.
//!
//! Only the middle of the run is counted (from a third to nine tenths of its cycles), so the
//! driver's set-up, the window's first round trip and the last frames' drain drop out.

use anyhow::{anyhow, Context, Result};
use nicgen::sim_loopback::{nic_model_with, run_loopback, LoopbackOpts};
use nicgen::trace::Trace;
use nicgen_edsl::States;
use nicgen_hdl::host::{cq_engine::CqState, rq_engine::RqState, sq_engine::SqState};
use nicgen_hdl::preset::Preset;
use nicgen_tb::waves::Window;
use std::collections::BTreeMap;
use std::path::Path;

/// The scope of the NIC's engines in the waveform: the `nic` top inside the model's wrapper.
const SCOPE: [&str; 2] = ["nic", "nic"];

/// A state machine's share of the counted cycles per state, by the state's name.
pub struct StateShares(Vec<(&'static str, f64)>);

impl StateShares {
    fn of<S: States>(counts: &BTreeMap<u64, u64>, total: u64) -> StateShares {
        let mut v: Vec<_> = counts
            .iter()
            .map(|(&i, &n)| {
                let name = S::NAMES.get(i as usize).copied().unwrap_or("(unknown)");
                (name, 100.0 * n as f64 / total as f64)
            })
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        StateShares(v)
    }

    /// The share of one state (0 when it never held).
    pub fn get(&self, name: &str) -> f64 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |&(_, s)| s)
    }

    /// The states holding at least `min` % of the cycles, largest first: "Gather 24 %, ...".
    pub fn top(&self, min: f64) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .filter(|(_, s)| *s >= min)
            .map(|(n, s)| format!("{n} {s:.0} %"))
            .collect();
        parts.join(", ")
    }
}

/// The engines' shares over the counted cycles of one run.
pub struct Occupancy {
    /// The counted cycles: `from..to`, cycle c at time 2c in the waveform.
    pub from: u64,
    pub to: u64,
    /// The run's simulated cycles a frame (the whole run).
    pub per_frame: f64,
    /// The send engine's issue side (one WQE at a time).
    pub sq: StateShares,
    /// The receive engine (one frame at a time).
    pub rq: StateShares,
    /// The completion engine (CQEs and EQEs).
    pub cq: StateShares,
    /// % of cycles a DMA answer beat entered the send engine (valid and ready).
    pub sq_answer_beats: f64,
    /// % of cycles the completion engine offered a write request the port did not take.
    pub cq_write_waits: f64,
}

impl std::fmt::Display for Occupancy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{:.1} cycles a frame; counted: cycles {}..{} of the waveform (the middle of the run)",
            self.per_frame, self.from, self.to
        )?;
        writeln!(f, "send engine, issue side: {}", self.sq.top(0.5))?;
        writeln!(f, "receive engine: {}", self.rq.top(0.5))?;
        writeln!(f, "completion engine: {}", self.cq.top(0.5))?;
        writeln!(
            f,
            "DMA answer beats into the send engine: {:.1} %",
            self.sq_answer_beats
        )?;
        write!(
            f,
            "completion engine's write requests waiting for the port: {:.1} %",
            self.cq_write_waits
        )
    }
}

/// Runs `o` on preset `p` traced into `fst` and counts the middle of the run.
pub fn measure(p: &Preset, o: &LoopbackOpts, fst: &Path) -> Result<Occupancy> {
    let traced = nic_model_with(p, true)?;
    let trace = Trace {
        path: fst.to_path_buf(),
        window: Window::ALL,
    };
    let got = run_loopback(p, &trace.attach(&traced), o, |_| {})?;
    anyhow::ensure!(
        got.mismatches == 0,
        "the traced run: {} frames differ from the model",
        got.mismatches
    );
    let mut wave = wellen::simple::read(fst)
        .map_err(|e| anyhow!("{e:?}"))
        .with_context(|| format!("reading {}", fst.display()))?;
    // The run is the last `got.cycles` cycles of the file (the driver's set-up comes first).
    let end = wave.time_table().last().copied().unwrap_or(0) / 2;
    let start = end.saturating_sub(got.cycles);
    let (from, to) = (start + got.cycles / 3, start + got.cycles * 9 / 10);
    let total = to - from;
    let mut at = |inst: &str, name: &str| per_cycle(&mut wave, inst, name, from, to);
    let (sq, rq, cq) = (
        at("u_sq_engine", "state")?,
        at("u_rq_engine", "state")?,
        at("u_cq_engine", "state")?,
    );
    let answers = both(
        &at("u_sq_engine", "s_dma_rd_cpl_tvalid")?,
        &at("u_sq_engine", "s_dma_rd_cpl_tready")?,
        |v, r| v && r,
    );
    let waits = both(
        &at("u_cq_engine", "m_dma_wr_req_tvalid")?,
        &at("u_cq_engine", "m_dma_wr_req_tready")?,
        |v, r| v && !r,
    );
    let pct = |n: u64| 100.0 * n as f64 / total as f64;
    Ok(Occupancy {
        from,
        to,
        per_frame: got.cycles as f64 / got.frames.max(1) as f64,
        sq: StateShares::of::<SqState>(&counts(&sq), total),
        rq: StateShares::of::<RqState>(&counts(&rq), total),
        cq: StateShares::of::<CqState>(&counts(&cq), total),
        sq_answer_beats: pct(answers),
        cq_write_waits: pct(waits),
    })
}

/// The value of `nic.<inst>.<name>` in each cycle of `from..to` (a bit that is X or Z reads 0).
fn per_cycle(
    wave: &mut wellen::simple::Waveform,
    inst: &str,
    name: &str,
    from: u64,
    to: u64,
) -> Result<Vec<u64>> {
    let var = wave
        .hierarchy()
        .lookup_var(&[SCOPE[0], SCOPE[1], inst], name)
        .ok_or_else(|| {
            anyhow!(
                "no signal {}.{inst}.{name} in the waveform",
                SCOPE.join(".")
            )
        })?;
    let sig = wave.hierarchy()[var].signal_ref();
    wave.load_signals(&[sig]);
    let times = wave.time_table();
    let signal = wave
        .get_signal(sig)
        .ok_or_else(|| anyhow!("signal {inst}.{name} did not load"))?;
    // Each change holds from its cycle until the next change.
    let changes: Vec<(u64, u64)> = signal
        .iter_changes()
        .map(|(i, v)| {
            let bits = v.to_bit_string().unwrap_or_default();
            let value = u64::from_str_radix(&bits, 2).unwrap_or(0);
            (times[i as usize] / 2, value)
        })
        .collect();
    let mut out = Vec::with_capacity((to - from) as usize);
    let (mut next, mut value) = (0, 0);
    for cycle in from..to {
        while next < changes.len() && changes[next].0 <= cycle {
            value = changes[next].1;
            next += 1;
        }
        out.push(value);
    }
    Ok(out)
}

/// Cycles per value.
fn counts(values: &[u64]) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for &v in values {
        *m.entry(v).or_insert(0) += 1;
    }
    m
}

/// Cycles in which `f(a, b)` holds for two one-bit signals.
fn both(a: &[u64], b: &[u64], f: impl Fn(bool, bool) -> bool) -> u64 {
    a.iter()
        .zip(b)
        .filter(|&(&x, &y)| f(x != 0, y != 0))
        .count() as u64
}
