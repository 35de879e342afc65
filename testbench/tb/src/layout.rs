//! The port layout of a simulated top module, shared by the Verilator and Icarus runners.
//!
//! The generated C++ shim exchanges one flat buffer of `u64` words per direction with Rust on
//! every cycle (one FFI call per cycle, no per-port calls). This module is the single Rust-side
//! description of those buffers: the JSON returned by the shim's `nicgen_layout()` parses into
//! a [`Layout`], and the helpers here read and write a port's bits inside a word buffer.
//!
//! Packing rule (ABI version 1): a port occupies `words = ceil(width / 64)` consecutive words
//! starting at word `offset`; bit `i` of the port value is bit `i % 64` of word
//! `offset + i / 64`. Bits above `width` in the last word are zero. The clock is not part of
//! the input buffer: the shim toggles it.
//!
//! The layout lives in its own module (rather than in `verilator`) so the Icarus replay can use
//! it without loading a Verilator model.

use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// One port in a word buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortLayout {
    /// The Verilog port name, exactly as declared in the top module.
    pub name: String,
    /// Width in bits (at least 1).
    pub width: u32,
    /// First word of the port in the buffer.
    pub offset: usize,
    /// Number of words, `ceil(width / 64)`.
    pub words: usize,
}

/// The layout of a top module's input and output word buffers, as reported by `nicgen_layout()`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Name of the top module.
    pub top: String,
    /// Length of the input buffer in words.
    pub in_words: usize,
    /// Length of the output buffer in words.
    pub out_words: usize,
    /// Inputs, excluding the clock.
    pub inputs: Vec<PortLayout>,
    /// Outputs.
    pub outputs: Vec<PortLayout>,
    /// Name of the clock input that the shim toggles. Optional in the JSON: absent means `clk`,
    /// `null` means the top has no clock. Only the Icarus replay needs it.
    #[serde(default = "default_clock")]
    pub clock: Option<String>,
}

fn default_clock() -> Option<String> {
    Some("clk".to_string())
}

/// Direction of a port, seen from the simulated module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Driven by the testbench.
    Input,
    /// Driven by the module.
    Output,
}

/// A resolved port: a direction and an index into [`Layout::inputs`] or [`Layout::outputs`].
/// Small and `Copy`, so a testbench looks ports up once and then uses them every cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortId {
    /// Which buffer the port lives in.
    pub dir: Dir,
    /// Index into the layout's port list for that direction.
    pub index: usize,
}

impl Layout {
    /// Parses and validates the JSON produced by a shim's `nicgen_layout()`.
    pub fn from_json(json: &str) -> Result<Layout, String> {
        let layout: Layout =
            serde_json::from_str(json).map_err(|e| format!("cannot parse layout JSON: {e}"))?;
        layout.validate()?;
        Ok(layout)
    }

    /// Checks the invariants the runtime relies on: widths non-zero, `words` consistent with
    /// `width`, ports inside their buffer and not overlapping, names unique.
    pub fn validate(&self) -> Result<(), String> {
        let mut names = HashSet::new();
        for (dir, ports, len) in [
            ("input", &self.inputs, self.in_words),
            ("output", &self.outputs, self.out_words),
        ] {
            let mut used = vec![false; len];
            for p in ports {
                if !names.insert(p.name.as_str()) {
                    return Err(format!("port name `{}` appears twice", p.name));
                }
                if p.width == 0 {
                    return Err(format!("{dir} `{}` has width 0", p.name));
                }
                if p.words != words_for(p.width) {
                    return Err(format!(
                        "{dir} `{}`: width {} needs {} words, layout says {}",
                        p.name,
                        p.width,
                        words_for(p.width),
                        p.words
                    ));
                }
                if p.offset + p.words > len {
                    return Err(format!(
                        "{dir} `{}` (offset {}, {} words) is outside the {len}-word {dir} buffer",
                        p.name, p.offset, p.words
                    ));
                }
                for w in &mut used[p.offset..p.offset + p.words] {
                    if *w {
                        return Err(format!("{dir} `{}` overlaps another port", p.name));
                    }
                    *w = true;
                }
            }
        }
        if let Some(clk) = &self.clock {
            if names.contains(clk.as_str()) {
                return Err(format!("clock `{clk}` must not be listed as a port"));
            }
        }
        Ok(())
    }

    /// Looks a port up by name in both directions.
    pub fn find(&self, name: &str) -> Option<PortId> {
        if let Some(index) = self.inputs.iter().position(|p| p.name == name) {
            return Some(PortId {
                dir: Dir::Input,
                index,
            });
        }
        self.outputs
            .iter()
            .position(|p| p.name == name)
            .map(|index| PortId {
                dir: Dir::Output,
                index,
            })
    }

    /// The layout entry of a resolved port.
    pub fn get(&self, id: PortId) -> &PortLayout {
        match id.dir {
            Dir::Input => &self.inputs[id.index],
            Dir::Output => &self.outputs[id.index],
        }
    }

    /// A one-line list of all port names, for error messages.
    pub fn port_list(&self) -> String {
        let fmt = |ports: &[PortLayout]| {
            ports
                .iter()
                .map(|p| format!("{}[{}]", p.name, p.width))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "inputs: {}; outputs: {}",
            fmt(&self.inputs),
            fmt(&self.outputs)
        )
    }
}

/// Number of 64-bit words that hold `width` bits.
pub fn words_for(width: u32) -> usize {
    (width as usize).div_ceil(64)
}

/// Mask of the valid bits in the last word of a port of `width` bits.
pub fn last_word_mask(width: u32) -> u64 {
    match width % 64 {
        0 => u64::MAX,
        r => (1u64 << r) - 1,
    }
}

/// Reads a port's value as a `BigUint` from its words.
pub fn words_to_big(words: &[u64]) -> BigUint {
    let digits: Vec<u32> = words
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .collect();
    BigUint::from_slice(&digits)
}

/// Writes `value` into `words` (little-endian words); `None` if it needs more than `width` bits.
pub fn big_to_words(value: &BigUint, width: u32, words: &mut [u64]) -> Option<()> {
    if value.bits() > u64::from(width) {
        return None;
    }
    words.fill(0);
    for (i, d) in value.iter_u64_digits().enumerate() {
        words[i] = d;
    }
    Some(())
}

/// A port's value as `ceil(width / 8)` little-endian bytes.
pub fn words_to_bytes_le(words: &[u64], width: u32) -> Vec<u8> {
    let n = (width as usize).div_ceil(8);
    words.iter().flat_map(|w| w.to_le_bytes()).take(n).collect()
}

/// Formats a port value as hex, most significant digit first, `ceil(width / 4)` digits.
pub fn words_to_hex(words: &[u64], width: u32) -> String {
    let digits = (width as usize).div_ceil(4);
    let mut s = String::with_capacity(digits);
    for d in (0..digits).rev() {
        let nibble = (words[d / 16] >> ((d % 16) * 4)) & 0xf;
        s.push(char::from_digit(nibble as u32, 16).unwrap());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = r#"{"top":"t","in_words":3,"out_words":1,
        "inputs":[{"name":"rst","width":1,"offset":0,"words":1},
                  {"name":"d","width":100,"offset":1,"words":2}],
        "outputs":[{"name":"q","width":64,"offset":0,"words":1}]}"#;

    #[test]
    fn parses_and_defaults_clock() {
        let l = Layout::from_json(JSON).unwrap();
        assert_eq!(l.clock.as_deref(), Some("clk"));
        assert_eq!(
            l.find("d"),
            Some(PortId {
                dir: Dir::Input,
                index: 1
            })
        );
        assert_eq!(
            l.find("q"),
            Some(PortId {
                dir: Dir::Output,
                index: 0
            })
        );
        assert_eq!(l.find("nope"), None);
        assert!(l.port_list().contains("d[100]"));
    }

    #[test]
    fn explicit_null_clock_means_none() {
        let json = JSON.replacen("\"top\":\"t\"", "\"top\":\"t\",\"clock\":null", 1);
        assert_eq!(Layout::from_json(&json).unwrap().clock, None);
    }

    #[test]
    fn rejects_bad_layouts() {
        let bad_words = JSON.replace(
            r#""width":100,"offset":1,"words":2"#,
            r#""width":100,"offset":1,"words":1"#,
        );
        assert!(Layout::from_json(&bad_words)
            .unwrap_err()
            .contains("needs 2 words"));
        let outside = JSON.replace(r#""in_words":3"#, r#""in_words":2"#);
        assert!(Layout::from_json(&outside).unwrap_err().contains("outside"));
        let overlap = JSON.replace(r#""offset":1,"words":2"#, r#""offset":0,"words":2"#);
        assert!(Layout::from_json(&overlap)
            .unwrap_err()
            .contains("overlaps"));
        let dup = JSON.replace("\"q\"", "\"rst\"");
        assert!(Layout::from_json(&dup).unwrap_err().contains("twice"));
        assert!(Layout::from_json("{").unwrap_err().contains("cannot parse"));
    }

    #[test]
    fn value_conversions() {
        let words = [0x0123_4567_89ab_cdefu64, 0xf];
        let big = words_to_big(&words);
        assert_eq!(
            big,
            (BigUint::from(0xfu32) << 64u32) + BigUint::from(0x0123_4567_89ab_cdefu64)
        );
        let mut back = [7u64; 2];
        big_to_words(&big, 68, &mut back).unwrap();
        assert_eq!(back, words);
        assert!(big_to_words(&big, 67, &mut back).is_none());
        assert_eq!(words_to_hex(&words, 68), "f0123456789abcdef");
        assert_eq!(words_to_hex(&[5], 3), "5");
        assert_eq!(
            words_to_bytes_le(&words, 68),
            vec![0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, 0x0f]
        );
        assert_eq!(last_word_mask(100), (1 << 36) - 1);
        assert_eq!(last_word_mask(128), u64::MAX);
        assert_eq!(words_for(64), 1);
        assert_eq!(words_for(65), 2);
    }
}
