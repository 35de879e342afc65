//! `nicgen`: generate the NIC's Verilog from a preset.
//!
//! ```text
//! nicgen presets                                   # one preset per line, name first
//! nicgen generate [--preset NAME | --config FILE.toml] --out DIR
//! ```

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use nicgen_edsl::{generate, EmitOptions};
use nicgen_hdl::preset::{Preset, BUILTIN, DEFAULT};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "nicgen",
    version,
    about = "Generate, simulate and measure a ConnectX-4 Lx-class NIC described in Rust"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List the built-in presets (name first, then a description).
    Presets,
    /// Generate Verilog, the file list, manifest.json and the Verilator bindings.
    Generate {
        /// A built-in preset (see `nicgen presets`).
        #[arg(long, conflicts_with = "config")]
        preset: Option<String>,
        /// A preset file (TOML, same fields as the built-in ones).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Output directory (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
}

/// The preset named by `--preset` / `--config`, or the default.
fn load_preset(preset: Option<&str>, config: Option<&PathBuf>) -> Result<Preset> {
    if let Some(path) = config {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!("cannot read config file {}; check the path", path.display())
        })?;
        return Ok(Preset::from_toml(&text, &path.display().to_string())?);
    }
    Ok(Preset::builtin(preset.unwrap_or(DEFAULT))?)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("nicgen: error: {e:#}");
        std::process::exit(2);
    }
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Presets => {
            for (name, _) in BUILTIN {
                let p = Preset::builtin(name)?;
                let dflt = if *name == DEFAULT { " (default)" } else { "" };
                println!("{name}  {}{dflt}", p.description);
            }
        }
        Cmd::Generate {
            preset,
            config,
            out,
        } => {
            let p = load_preset(preset.as_deref(), config.as_ref())?;
            let top = match nicgen_hdl::top::nic_core(&p) {
                Ok(t) => t,
                Err(e) => bail!("{e}"),
            };
            let g = generate(
                &top,
                &EmitOptions {
                    preset: p.name.clone(),
                    config_hash: p.config_hash(),
                },
            );
            g.write_to(&out)
                .with_context(|| format!("cannot write to {}", out.display()))?;
            println!(
                "nicgen: preset {} -> {}: {} modules, top `{}`, config hash {}",
                p.name,
                out.display(),
                g.manifest.modules.len(),
                g.top,
                p.config_hash()
            );
        }
    }
    Ok(())
}
