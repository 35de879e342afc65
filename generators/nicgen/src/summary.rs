//! What `nicgen sim tx|loopback|tap` print when they finish: one serialisable struct per
//! command, printed either as `key value` lines or, with `--json`, as one JSON object. Both
//! come from the same value, so the text and the JSON always carry the same figures, in the
//! struct's field order.

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// `sim tx`: frames read, frames written, frames that got a VLAN tag, cycles simulated.
#[derive(Clone, Debug, Serialize)]
pub struct TxSummary {
    pub preset: String,
    pub frames_in: usize,
    pub frames_out: usize,
    pub vlan_inserted: usize,
    /// Frames out with outer headers (`--encap`).
    pub encapsulated: usize,
    /// Frames segmented as LSO sends (`--tso`), and those refused (their headers cannot be
    /// segmented: not TCP, or a segment longer than the path's longest frame).
    pub lso_sends: usize,
    pub lso_refused: usize,
    /// Frames the encapsulation engine dropped (shorter than an Ethernet header).
    pub encap_dropped: usize,
    pub cycles: u64,
}

/// `sim loopback`: frames and bytes back, frames that differed from the golden model, the
/// simulated throughput at the preset's clock, and how fast the simulation ran (wall clock).
#[derive(Clone, Debug, Serialize)]
pub struct LoopbackSummary {
    pub preset: String,
    pub frames: usize,
    /// Frame bytes back (without FCS).
    pub bytes: usize,
    /// Frames that differed from the golden model.
    pub errors: usize,
    /// Simulated cycles from the first send to the last frame back.
    pub cycles: u64,
    /// Millions of frames per second of simulated time at the preset clock, three decimals.
    pub mpps: f64,
    /// Gb/s of frame bytes (without FCS) in simulated time at the preset clock, three decimals.
    pub gbps: f64,
    /// Simulated cycles per wall-clock second.
    pub sim_cycles_per_s: u64,
    /// Frames back per wall-clock second.
    pub sim_frames_per_s: u64,
    /// The simulated host's DMA read latency, ns.
    pub dma_latency_ns: u64,
    /// `sim_frames_per_s` under the name scripts read it by.
    pub frames_per_second: u64,
    /// `gbps` to two decimals, under the name scripts read it by.
    pub simulated_gbps: f64,
}

impl LoopbackSummary {
    /// The summary of run `r` of preset `p`, which took `wall` seconds.
    pub fn new(
        p: &nicgen_hdl::preset::Preset,
        r: &crate::sim_loopback::LoopbackReport,
        wall: f64,
        dma_latency_ns: u64,
    ) -> LoopbackSummary {
        let seconds = r.cycles as f64 / (p.clock_mhz * 1e6);
        let gbps = r.bytes as f64 * 8.0 / seconds / 1e9;
        let per_wall = |x: f64| (x / wall).round() as u64;
        LoopbackSummary {
            preset: p.name.clone(),
            frames: r.frames,
            bytes: r.bytes,
            errors: r.mismatches,
            cycles: r.cycles,
            mpps: three_decimals(r.frames as f64 / seconds / 1e6),
            gbps: three_decimals(gbps),
            sim_cycles_per_s: per_wall(r.cycles as f64),
            sim_frames_per_s: per_wall(r.frames as f64),
            dma_latency_ns,
            frames_per_second: per_wall(r.frames as f64),
            simulated_gbps: two_decimals(gbps),
        }
    }
}

/// `sim tap`: frames moved per direction and frames the NIC dropped on receive.
#[derive(Clone, Debug, Serialize)]
pub struct TapSummary {
    pub preset: String,
    #[serde(flatten)]
    pub counts: crate::sim_tap::TapCounts,
}

/// `x` rounded to two decimals, as the summaries print throughput.
pub fn two_decimals(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `x` rounded to three decimals.
pub fn three_decimals(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Print `s` on stdout: one JSON object with `json`, else one `key value` line per field.
pub fn print(s: &impl Serialize, json: bool) {
    let text = serde_json::to_string(s).expect("summaries serialise");
    if json {
        println!("{text}");
        return;
    }
    let Fields(fields) = serde_json::from_str(&text).expect("a summary is a JSON object");
    for (k, v) in fields {
        match v {
            Value::String(s) => println!("{k} {s}"),
            v => println!("{k} {v}"),
        }
    }
}

/// A JSON object's fields in the order they were written (serde_json's `Map` sorts them).
struct Fields(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Fields, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = m.next_entry()? {
                    v.push(kv);
                }
                Ok(Fields(v))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keeps_the_field_order() {
        let p = nicgen_hdl::preset::Preset::builtin("nic64").unwrap();
        let r = crate::sim_loopback::LoopbackReport {
            frames: 3,
            bytes: 200,
            cycles: 999,
            ..Default::default()
        };
        let s = LoopbackSummary::new(&p, &r, 0.5, 1000);
        let text = serde_json::to_string(&s).unwrap();
        let Fields(f) = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "preset",
                "frames",
                "bytes",
                "errors",
                "cycles",
                "mpps",
                "gbps",
                "sim_cycles_per_s",
                "sim_frames_per_s",
                "dma_latency_ns",
                "frames_per_second",
                "simulated_gbps"
            ]
        );
        // 999 cycles at 156.25 MHz are 6.3936 us: 3 frames, 1600 bits.
        let get = |k: &str| f.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("mpps"), serde_json::json!(0.469));
        assert_eq!(get("gbps"), serde_json::json!(0.25));
        assert_eq!(get("simulated_gbps"), serde_json::json!(0.25));
        assert_eq!(get("sim_cycles_per_s"), serde_json::json!(1998));
        assert_eq!(get("sim_frames_per_s"), serde_json::json!(6));
    }
}
