//! Presets: build configurations as data (TOML), built into the binary and loadable from a file.
//!
//! A preset fixes the datapath width, the clock the figures are quoted at, and the parameters
//! of every block. Unknown fields are rejected, and a bad value names the field and the allowed
//! values.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The built-in presets, in the order `nicgen presets` lists them. The first is the default.
pub const BUILTIN: &[(&str, &str)] = &[
    ("nic64", include_str!("../presets/nic64.toml")),
    ("nic128", include_str!("../presets/nic128.toml")),
    ("nic256", include_str!("../presets/nic256.toml")),
    ("nic512", include_str!("../presets/nic512.toml")),
];

/// The preset used when none is named.
pub const DEFAULT: &str = "nic64";

/// Widths the datapath supports.
pub const DATA_WIDTHS: &[u32] = &[8, 64, 128, 256, 512];

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Datapath width in bits: one of [`DATA_WIDTHS`].
    pub data_bits: u32,
    /// Clock the throughput figures are quoted at, MHz.
    pub clock_mhz: f64,
    /// Largest frame (L2 payload) the datapath accepts, bytes.
    pub mtu: u32,
    pub parser: ParserPreset,
    pub rss: RssPreset,
    pub host: HostPreset,
    pub csum: CsumPreset,
    /// Absent: no tunnel stage.
    #[serde(default)]
    pub overlay: OverlayPreset,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostPreset {
    /// Send, receive and completion queues (each): 2 to 256, at least `rss.queues`.
    pub queues: u32,
    /// Event queues (= interrupt vectors): 1 to 32.
    pub eqs: u32,
    /// Memory-region table entries: 2 to 256.
    pub mrs: u32,
    /// Largest log2 ring size: 1 to 15.
    pub log_max_wq: u32,
    /// DMA port width in bits (`m_dma_*`, `s_dma_rd_cpl_*`): a power of two from `data_bits`
    /// to 512, as a PCIe hard block presents it (256 bits for Gen3 x8); the engines work at
    /// `data_bits` behind width converters. Absent: `data_bits`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma_bits: Option<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ParserPreset {
    /// Header window, bytes: 64 to 1024.
    pub window: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RssPreset {
    /// Indirection-table entries: a power of two from 2 to 2048.
    pub table_size: u32,
    /// Receive queues the reset table spreads over: 1 to 1024.
    pub queues: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CsumPreset {
    /// Adder-tree levels per pipeline stage: 1 to 8.
    pub levels_per_stage: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OverlayPreset {
    /// Entries of the tunnel de-capsulation steering table: 0 (no tunnel stage on receive) to
    /// 255.
    #[serde(default)]
    pub steer_entries: u32,
    /// Encapsulation contexts on transmit (VXLAN/NVGRE outer headers an SQ puts in front of
    /// its frames): 0 (no encapsulation engine) or a power of two from 2 to 32.
    #[serde(default)]
    pub encap_contexts: u32,
    /// Largest LSO `mss`: 0 builds no TSO engine; else 1 to 16383 bytes, and a segment
    /// (headers and `mss` payload bytes) must fit the TX path's largest frame.
    #[serde(default)]
    pub max_mss: u32,
}

/// Why a configuration was refused.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Preset {
    /// A built-in preset by name.
    pub fn builtin(name: &str) -> Result<Preset, ConfigError> {
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((_, text)) => Preset::from_toml(text, &format!("built-in preset `{name}`")),
            None => Err(ConfigError(format!(
                "unknown preset `{name}`; available presets: {} (or pass --config FILE.toml)",
                BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Parse and validate a preset from TOML text; `origin` names the file in messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Preset, ConfigError> {
        let p: Preset = toml::from_str(text).map_err(|e| ConfigError(format!("{origin}: {e}")))?;
        p.validate()
            .map_err(|e| ConfigError(format!("{origin}: {e}")))?;
        Ok(p)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if !DATA_WIDTHS.contains(&self.data_bits) {
            return Err(ConfigError(format!(
                "field `data_bits` = {} is not supported; allowed values: {}",
                self.data_bits,
                DATA_WIDTHS
                    .iter()
                    .map(|w| w.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if !(self.clock_mhz > 0.0 && self.clock_mhz <= 1000.0) {
            return Err(ConfigError(format!(
                "field `clock_mhz` = {} must be in (0, 1000]",
                self.clock_mhz
            )));
        }
        if !(64..=16000).contains(&self.mtu) {
            return Err(ConfigError(format!(
                "field `mtu` = {} must be between 64 and 16000",
                self.mtu
            )));
        }
        let w = self.parser.window;
        if !(64..=1024).contains(&w) {
            return Err(ConfigError(format!(
                "field `parser.window` = {w} must be from 64 to 1024 (64 holds two VLAN tags and an IPv6 header)"
            )));
        }
        let t = self.rss.table_size;
        if !t.is_power_of_two() || !(2..=2048).contains(&t) {
            return Err(ConfigError(format!(
                "field `rss.table_size` = {t} must be a power of two from 2 to 2048"
            )));
        }
        if !(1..=1024).contains(&self.rss.queues) {
            return Err(ConfigError(format!(
                "field `rss.queues` = {} must be from 1 to 1024",
                self.rss.queues
            )));
        }
        let h = &self.host;
        if !(2..=256).contains(&h.queues) || h.queues < self.rss.queues {
            return Err(ConfigError(format!(
                "field `host.queues` = {} must be from 2 to 256 and at least `rss.queues` ({})",
                h.queues, self.rss.queues
            )));
        }
        if !(1..=32).contains(&h.eqs) {
            return Err(ConfigError(format!(
                "field `host.eqs` = {} must be from 1 to 32",
                h.eqs
            )));
        }
        if !(2..=256).contains(&h.mrs) {
            return Err(ConfigError(format!(
                "field `host.mrs` = {} must be from 2 to 256",
                h.mrs
            )));
        }
        if !(1..=15).contains(&h.log_max_wq) {
            return Err(ConfigError(format!(
                "field `host.log_max_wq` = {} must be from 1 to 15",
                h.log_max_wq
            )));
        }
        if let Some(d) = h.dma_bits {
            if !d.is_power_of_two() || d < self.data_bits || !(64..=512).contains(&d) {
                return Err(ConfigError(format!(
                    "field `host.dma_bits` = {d} must be a power of two from 64 to 512 and at least `data_bits` ({})",
                    self.data_bits
                )));
            }
        }
        if !(1..=8).contains(&self.csum.levels_per_stage) {
            return Err(ConfigError(format!(
                "field `csum.levels_per_stage` = {} must be from 1 to 8",
                self.csum.levels_per_stage
            )));
        }
        if self.overlay.steer_entries > 255 {
            return Err(ConfigError(format!(
                "field `overlay.steer_entries` = {} must be from 0 to 255",
                self.overlay.steer_entries
            )));
        }
        let e = self.overlay.encap_contexts;
        if e > 32 || (e != 0 && (e == 1 || !e.is_power_of_two())) {
            return Err(ConfigError(format!(
                "field `overlay.encap_contexts` = {} must be 0 or a power of two from 2 to 32 \
                 (the contexts' words share the core's configuration window with RSS and the \
                 tunnel table)",
                self.overlay.encap_contexts
            )));
        }
        if self.overlay.max_mss
            > self
                .mtu
                .min(crate::overlay::tx_tso::max_mss_at(self.data_bits))
        {
            return Err(ConfigError(format!(
                "field `overlay.max_mss` = {} must be from 0 to the MTU ({}) and at most {} at \
                 {} bits: a segment must fit the TX path's largest frame, and two the TSO \
                 engine's buffer",
                self.overlay.max_mss,
                self.mtu,
                crate::overlay::tx_tso::max_mss_at(self.data_bits),
                self.data_bits
            )));
        }
        Ok(())
    }

    /// The DMA port's width in bits (`host.dma_bits`, else `data_bits`).
    pub fn dma_bits(&self) -> u32 {
        self.host.dma_bits.unwrap_or(self.data_bits)
    }

    /// The canonical TOML of this preset (what the config hash is taken over).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("preset serializes")
    }

    /// Short hash identifying this configuration (stamped into headers and the manifest).
    pub fn config_hash(&self) -> String {
        nicgen_edsl::config_hash(&self.to_toml())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for (n, _) in BUILTIN {
            let p = Preset::builtin(n).unwrap();
            assert_eq!(&p.name, n);
        }
        assert_eq!(BUILTIN[0].0, DEFAULT);
    }

    #[test]
    fn bad_values_name_the_field_and_the_allowed_values() {
        let t = BUILTIN[0].1.replace("data_bits = 64", "data_bits = 100");
        let e = Preset::from_toml(&t, "x.toml").unwrap_err().0;
        assert!(
            e.contains("`data_bits` = 100") && e.contains("8, 64, 128, 256, 512"),
            "{e}"
        );
        let t = BUILTIN[0].1.replace("table_size = 128", "table_size = 100");
        let e = Preset::from_toml(&t, "x.toml").unwrap_err().0;
        assert!(
            e.contains("rss.table_size") && e.contains("power of two"),
            "{e}"
        );
        for bad in ["dma_bits = 32", "dma_bits = 96", "dma_bits = 1024"] {
            let t = BUILTIN[0].1.replace("dma_bits = 256", bad);
            let e = Preset::from_toml(&t, "x.toml").unwrap_err().0;
            assert!(
                e.contains("host.dma_bits") && e.contains("power of two"),
                "{e}"
            );
        }
        let t = BUILTIN[3]
            .1
            .replace("log_max_wq = 12", "log_max_wq = 12\ndma_bits = 256");
        let e = Preset::from_toml(&t, "x.toml").unwrap_err().0;
        assert!(e.contains("at least `data_bits` (512)"), "{e}");
        let t = BUILTIN[0].1.replace("window = 128", "window = 20");
        let e = Preset::from_toml(&t, "x.toml").unwrap_err().0;
        assert!(e.contains("parser.window"), "{e}");
        let t = format!(
            "{}\nbogus = 1\n",
            BUILTIN[0].1.replace("[parser]", "bogus_top = 1\n[parser]")
        );
        let e = Preset::from_toml(&t, "x.toml").unwrap_err().0;
        assert!(e.contains("bogus_top"), "{e}");
        let e = Preset::builtin("nope").unwrap_err().0;
        assert!(e.contains("available presets: nic64"), "{e}");
    }
}
