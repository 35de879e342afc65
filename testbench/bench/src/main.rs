//! `nicgen-speed [CYCLES] [RUNS]`: Verilator cycles/s of the 512-bit checksum stage driven from
//! Rust through the emitted typed bindings, random data every cycle; prints one JSON line with
//! every run and the median.

use nicgen_bench::{csum512::InetCsumD512L1, csum512_model, drive_random};
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let cycles: u64 = args
        .get(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(2_000_000);
    let runs: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(3);
    let model = csum512_model()?;
    let mut rates = Vec::new();
    for run in 0..runs {
        let mut dut = InetCsumD512L1::new(model.instance()).map_err(anyhow::Error::msg)?;
        let t = Instant::now();
        let n = drive_random(&mut dut, cycles, 0x9E37_79B9_7F4A_7C15 + run as u64);
        let secs = t.elapsed().as_secs_f64();
        rates.push(cycles as f64 / secs);
        eprintln!("run {run}: {cycles} cycles in {secs:.3} s ({n} checksums)");
    }
    let mut sorted = rates.clone();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = sorted[sorted.len() / 2];
    println!("{{\"top\":\"{}\",\"cycles\":{cycles},\"runs\":{rates:?},\"median_cycles_per_s\":{median:.0}}}", InetCsumD512L1::TOP);
    Ok(())
}
