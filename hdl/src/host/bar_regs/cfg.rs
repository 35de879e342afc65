//! The configuration of `bar_regs`: the `Ro` registers whose values are constants at
//! elaboration, the `id` block built from a preset, the host parameters and the generator's
//! identity, and the checks of a configuration against the map.

use crate::host::regmap::{self, Access, RegRef};
use crate::host::regs::id;
use crate::host::BAR_BITS;
use crate::preset::Preset;
use nicgen_edsl::prelude::*;

/// The register-map ABI revision stamped into `id.VERSION.abi` (the map's doc: "this map: 1").
pub const MAP_ABI: u32 = 1;

/// Elaboration-time configuration of [`bar_regs`](super::bar_regs): the `Ro` registers whose
/// values are constants (the register, e.g. `regs::id::MAGIC`, and one `u32` per element).
/// Every other `Ro` register is an input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BarCfg {
    pub consts: Vec<(RegRef, Vec<u32>)>,
}

impl BarCfg {
    /// No constants: every `Ro` register is an input port.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a constant `Ro` register (checked by [`bar_regs`](super::bar_regs)).
    pub fn with(mut self, reg: RegRef, values: Vec<u32>) -> Self {
        self.consts.push((reg, values));
        self
    }

    /// The constant of register `reg`, if any.
    pub fn get(&self, reg: RegRef) -> Option<&[u32]> {
        self.consts
            .iter()
            .find(|(r, _)| r.path() == reg.path())
            .map(|(_, v)| v.as_slice())
    }

    /// The whole `id` block: `MAGIC`, `VERSION` (the crate's version and [`MAP_ABI`]),
    /// `DATA_BITS`, `CLOCK_KHZ` (rounded), `MTU` and `LIMITS.table_size` from the preset, the
    /// queue counts, `log_max_wq` and `CAPS` from `host`, `PRESET_NAME` (the preset's name, cut
    /// to 16 bytes), `CONFIG_HASH` (the first 8 bytes of [`Preset::config_hash`]'s SHA-256),
    /// `GIT_HASH` / `GIT_FLAGS` from `build`. Fields are packed by their names in the map; a
    /// value that does not fit its field is an error.
    pub fn id(preset: &Preset, host: &HostParams, build: &BuildInfo) -> Result<BarCfg, ElabError> {
        let err = |m: String| ElabError::config("bar_regs", m);
        let [major, minor, patch] = build.version;
        let version = pack(
            id::VERSION,
            &[
                ("abi", MAP_ABI),
                ("major", major),
                ("minor", minor),
                ("patch", patch),
            ],
        )
        .map_err(err)?;
        let queues = pack(
            id::QUEUES,
            &[
                ("queues", host.queues),
                ("eqs", host.eqs),
                ("mrs", host.mrs),
            ],
        )
        .map_err(err)?;
        let limits = pack(
            id::LIMITS,
            &[
                ("table_size", preset.rss.table_size),
                ("log_max_wq", host.log_max_wq),
                ("steer_entries", preset.overlay.steer_entries),
            ],
        )
        .map_err(err)?;
        let overlay = pack(
            id::OVERLAY,
            &[
                ("encap_contexts", preset.overlay.encap_contexts),
                ("max_mss", preset.overlay.max_mss),
                ("log_max_lso", crate::nic::log_max_lso(preset)),
            ],
        )
        .map_err(err)?;
        let caps: Vec<(&str, u32)> = host.caps.iter().map(|c| (*c, 1)).collect();
        let caps = pack(id::CAPS, &caps).map_err(err)?;
        let hash = preset.config_hash();
        let hash: Vec<u8> = (0..hash.len() / 2)
            .map(|i| u8::from_str_radix(&hash[2 * i..2 * i + 2], 16).expect("hex config hash"))
            .collect();
        Ok(BarCfg::new()
            .with(id::MAGIC, vec![regmap::MAGIC])
            .with(id::VERSION, vec![version])
            .with(id::DATA_BITS, vec![preset.data_bits])
            .with(
                id::CLOCK_KHZ,
                vec![(preset.clock_mhz * 1000.0).round() as u32],
            )
            .with(id::MTU, vec![preset.mtu])
            .with(id::QUEUES, vec![queues])
            .with(id::LIMITS, vec![limits])
            .with(id::CAPS, vec![caps])
            .with(id::OVERLAY, vec![overlay])
            .with(id::PRESET_NAME, le_words(preset.name.as_bytes(), 4))
            .with(id::CONFIG_HASH, le_words(&hash, 2))
            .with(id::GIT_HASH, le_words(&build.git_hash, 5))
            .with(
                id::GIT_FLAGS,
                vec![pack(id::GIT_FLAGS, &[("dirty", u32::from(build.git_dirty))]).map_err(err)?],
            ))
    }
}

/// What the host-interface top decides and presets do not (yet) fix: queue counts, ring limits
/// and capabilities, for `id.QUEUES`, `id.LIMITS.log_max_wq` and `id.CAPS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostParams {
    /// Send, receive and completion queues (each).
    pub queues: u32,
    /// Event queues (= interrupt vectors).
    pub eqs: u32,
    /// Memory-region table entries.
    pub mrs: u32,
    /// Largest log2 ring size.
    pub log_max_wq: u32,
    /// Names of the `id.CAPS` fields the device has (e.g. `"csum"`, `"rss"`).
    pub caps: Vec<&'static str>,
}

/// The generator's identity: its version and the git commit it was built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// Major, minor, patch.
    pub version: [u32; 3],
    /// The commit (zero when unknown).
    pub git_hash: [u8; 20],
    /// The work tree had uncommitted changes to tracked files.
    pub git_dirty: bool,
}

impl BuildInfo {
    /// This build of `nicgen-hdl`: the crate version, and the commit and dirty flag that
    /// `hdl/build.rs` read with `git rev-parse HEAD` / `git status --porcelain` when the crate
    /// was compiled (zero and clean outside a git checkout; see `build.rs` for when it reruns).
    /// Designs stamped with it change with every commit; tests that want stable Verilog (and
    /// so a cached simulator build) use [`BuildInfo::unknown`] or fixed values.
    pub fn current() -> BuildInfo {
        let hex = env!("NICGEN_GIT_HASH");
        let mut git_hash = [0u8; 20];
        if hex.len() == 40 {
            for (i, b) in git_hash.iter_mut().enumerate() {
                *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0);
            }
        }
        let v = |s: &str| s.parse::<u32>().unwrap_or(0);
        BuildInfo {
            version: [
                v(env!("CARGO_PKG_VERSION_MAJOR")),
                v(env!("CARGO_PKG_VERSION_MINOR")),
                v(env!("CARGO_PKG_VERSION_PATCH")),
            ],
            git_hash,
            git_dirty: env!("NICGEN_GIT_DIRTY") == "1",
        }
    }

    /// The crate version with no commit (hash zero, clean).
    pub fn unknown() -> BuildInfo {
        BuildInfo {
            git_hash: [0; 20],
            git_dirty: false,
            ..BuildInfo::current()
        }
    }
}

/// `bytes` as `n` little-endian words (byte 0 in bits 7:0 of word 0), zero-padded or cut.
fn le_words(bytes: &[u8], n: usize) -> Vec<u32> {
    let mut b = bytes.to_vec();
    b.resize(4 * n, 0);
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The value of register `reg` with the fields named (as in the map) set.
fn pack(reg: RegRef, fields: &[(&str, u32)]) -> Result<u32, String> {
    let (path, r) = (reg.path(), reg.reg);
    let mut v = 0u32;
    for (name, x) in fields {
        let f = r
            .fields
            .iter()
            .find(|f| f.name == *name)
            .ok_or_else(|| format!("register `{path}` has no field `{name}`"))?;
        if f.bits < 32 && x >> f.bits != 0 {
            return Err(format!(
                "{path}.{name} = {x} does not fit its {} bits",
                f.bits
            ));
        }
        v |= x << f.lsb;
    }
    Ok(v)
}

/// Check the map and the constants against each other.
pub(super) fn check_cfg(cfg: &BarCfg) -> Result<(), ElabError> {
    let err = |m: String| Err(ElabError::config("bar_regs", m));
    let problems = regmap::check();
    if !problems.is_empty() {
        return err(format!("the register map is inconsistent: {problems:?}"));
    }
    for b in regmap::BLOCKS {
        if b.span < 8 || b.base + b.span > 1 << BAR_BITS {
            return err(format!(
                "block {} ({:#x}, span {:#x}) must span at least 8 bytes inside the {BAR_BITS}-bit BAR",
                b.name, b.base, b.span
            ));
        }
    }
    for (i, (reg, vals)) in cfg.consts.iter().enumerate() {
        let path = reg.path();
        let Some((_, r)) = regmap::find(&path).filter(|(_, r)| *r == reg.reg) else {
            return err(format!(
                "constant for `{path}`: no such register in the map"
            ));
        };
        if r.access != Access::Ro {
            return err(format!(
                "constant for `{path}`: it is {:?}; only Ro registers take a constant",
                r.access
            ));
        }
        if vals.len() != r.count as usize {
            return err(format!(
                "constant for `{path}`: {} values for {} elements",
                vals.len(),
                r.count
            ));
        }
        if cfg.consts[..i].iter().any(|(p, _)| p.path() == path) {
            return err(format!("constant for `{path}` given twice"));
        }
    }
    Ok(())
}
