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
    pub cycles: u64,
}

/// `sim loopback`: frames and bytes back, frames that differed from the golden model, how
/// fast the simulation ran (wall clock) and the simulated throughput at the preset's clock.
#[derive(Clone, Debug, Serialize)]
pub struct LoopbackSummary {
    pub preset: String,
    pub frames: usize,
    pub bytes: usize,
    pub errors: usize,
    pub frames_per_second: u64,
    pub cycles: u64,
    /// Gb/s, two decimals.
    pub simulated_gbps: f64,
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
        let s = LoopbackSummary {
            preset: "nic64".into(),
            frames: 3,
            bytes: 200,
            errors: 0,
            frames_per_second: 10,
            cycles: 999,
            simulated_gbps: two_decimals(1.23456),
        };
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
                "frames_per_second",
                "cycles",
                "simulated_gbps"
            ]
        );
        assert_eq!(f[6].1, serde_json::json!(1.23));
    }
}
