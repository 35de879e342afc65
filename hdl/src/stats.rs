//! `stat_counters`: a bank of event counters, one per named reason.
//!
//! Each counter `stat_<name>` (`bits` wide, reset to 0 by `rst`, wrapping) adds 1 in every cycle
//! its `inc_<name>` is high. The counters are read as plain outputs; the register map (host
//! interface) exposes them to the driver.
//!
//! - Ports: `inc_<name>` (1 bit each) in, `stat_<name>` (`bits` each) out.
//! - Latency: a count is visible the cycle after its event.
//! - Throughput: one event per counter per cycle.
//! - Cost: `bits` flip-flops and one `bits`-wide incrementer per counter; inside row `eth_rx` of
//!   results/AREA-paths.md.
//! - Golden model: the per-reason counts of `nicgen_model::rx` reports (`nicgen sim rx` checks
//!   that the hardware counters equal the counts of its records); test:
//!   `testbench/tests/eth/eth_rx.rs`.
//!
//! Inside a block, [`event_counter`] builds one such counter (32 bits) to drive a field of the
//! block's counter record, a group of `stat_<name>` outputs in its ports
//! (`io.outputs("stat_", &XStats::shape())`).

use nicgen_edsl::prelude::*;

/// Counter bank `stat_counters_<tag>` with one `bits`-wide counter per name.
pub fn stat_counters(tag: &str, names: &[&str], bits: u32) -> Result<Rc<ModuleDef>, ElabError> {
    if names.is_empty() || !(1..=64).contains(&bits) {
        return Err(ElabError::config(
            "stat_counters",
            "needs at least one counter name and 1..=64 bits per counter",
        ));
    }
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    Module::build(format!("stat_counters_{tag}"), move || {
        doc("Event counters: stat_<name> counts the cycles inc_<name> was high (reset to 0, wrapping).");
        for n in &names {
            let inc = input(&format!("inc_{n}"), 1);
            let c = reg_init(bits, 0u32).named(&format!("count_{n}"));
            c.set_if(inc, c + 1u32);
            output(&format!("stat_{n}"), c);
        }
    })
}

/// A 32-bit event counter inside the current module: register `count_<name>` (reset to 0,
/// wrapping), incremented in every cycle `ev` is high. A block drives its `stat_<name>` output
/// (a field of its counter record in its ports) with it.
#[track_caller]
pub fn event_counter(name: &str, ev: Sig) -> Sig {
    let r = reg_init(32, 0u32).named(&format!("count_{name}"));
    r.set_if(ev, r + 1u32);
    r
}

/// A 32-bit event counter inside the current module: register `count_<name>` (reset to 0,
/// wrapping), incremented when `ev` is high, on output `stat_<name>`.
pub fn stat_counter(name: &str, ev: Sig) {
    let r = reg_init(32, 0u32).named(&format!("count_{name}"));
    r.set_if(ev, r + 1u32);
    output(&format!("stat_{name}"), r);
}
