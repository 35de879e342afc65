//! A design: a top module and everything below it, emitted as Verilog files plus a manifest.
//!
//! Modules are emitted once per distinct structure: two instances built from the same function
//! with the same config produce identical text and share one file (structural deduplication),
//! while different structures that asked for the same name get `name_1`, `name_2`, ...

use crate::ir::*;
use crate::names::Namer;
use crate::shim;
use crate::verilog::Emitter;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// The generator's name and version, stamped into every file header.
pub const GENERATOR: &str = concat!("nicgen-edsl ", env!("CARGO_PKG_VERSION"));

/// What goes into file headers and the manifest.
#[derive(Clone, Debug, Default)]
pub struct EmitOptions {
    /// Name of the preset (or config file) the design was built from.
    pub preset: String,
    /// Hash of the configuration, as the manifest and identification registers carry it.
    pub config_hash: String,
}

/// One port of the top as the manifest and the simulator bindings see it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct TopPort {
    pub name: String,
    pub dir: Dir,
    pub width: u32,
}

/// `manifest.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Manifest {
    pub top: String,
    pub files: Vec<String>,
    pub modules: Vec<String>,
    pub ports: Vec<TopPort>,
    pub config_hash: String,
    pub preset: String,
    pub generator: String,
    /// Hash of all emitted Verilog text.
    pub verilog_hash: String,
}

/// Everything the generator writes for one top.
#[derive(Clone, Debug)]
pub struct Generated {
    pub top: String,
    /// (file name, contents), children before parents, the top last.
    pub verilog: Vec<(String, String)>,
    pub manifest: Manifest,
    /// The C++ shim for Verilator (one `extern "C"` call per clock cycle).
    pub shim_cpp: String,
    /// The Rust side of the bindings: `#[repr(C)]` in/out structs and a wrapper type.
    pub shim_rs: String,
    /// GTKWave translate-filter files, one per state enumeration: (file name, contents), each
    /// line `<hex value> <state>`, so a state register shows `Idle` rather than `0`.
    pub wave_filters: Vec<(String, String)>,
}

impl Generated {
    /// The file list in dependency order (for `-f` style tool invocations).
    pub fn file_list(&self) -> String {
        self.verilog.iter().map(|(n, _)| format!("{n}\n")).collect()
    }

    /// Write `<dir>/<file>.v`, `files.f`, `manifest.json`, and the bindings under `<dir>/sim/`.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir.join("sim"))?;
        for (n, t) in &self.verilog {
            std::fs::write(dir.join(n), t)?;
        }
        std::fs::write(dir.join("files.f"), self.file_list())?;
        let m = serde_json::to_string_pretty(&self.manifest).expect("manifest serializes");
        std::fs::write(dir.join("manifest.json"), m + "\n")?;
        std::fs::write(
            dir.join("sim").join(format!("{}_shim.cpp", self.top)),
            &self.shim_cpp,
        )?;
        std::fs::write(
            dir.join("sim").join(format!("{}_sim.rs", self.top)),
            &self.shim_rs,
        )?;
        if !self.wave_filters.is_empty() {
            std::fs::create_dir_all(dir.join("waves"))?;
            for (n, t) in &self.wave_filters {
                std::fs::write(dir.join("waves").join(n), t)?;
            }
        }
        Ok(())
    }
}

const SELF: &str = "__nicgen_module_name__";

/// Emit `top` and its hierarchy.
pub fn generate(top: &Rc<ModuleDef>, opts: &EmitOptions) -> Generated {
    let mut order: Vec<Rc<ModuleDef>> = Vec::new();
    let mut seen: HashMap<*const ModuleDef, ()> = HashMap::new();
    post_order(top, &mut order, &mut seen);

    let mut namer = Namer::default();
    for k in ["clk", "rst"] {
        namer.reserve(k);
    }
    let top_name = namer.fresh(&top.name);
    let mut final_name: HashMap<*const ModuleDef, String> = HashMap::new();
    let mut by_body: HashMap<String, String> = HashMap::new();
    let mut files: Vec<(String, String)> = Vec::new();
    let mut modules = Vec::new();
    for def in &order {
        let names = final_name.clone();
        let lookup = move |d: &ModuleDef| names[&(d as *const ModuleDef)].clone();
        let body = Emitter::new(def, &lookup).module_text(SELF);
        let is_top = Rc::ptr_eq(def, top);
        if let Some(existing) = by_body.get(&body) {
            if !is_top {
                final_name.insert(Rc::as_ptr(def), existing.clone());
                continue;
            }
        }
        let name = if is_top {
            top_name.clone()
        } else {
            namer.fresh(&def.name)
        };
        by_body.insert(body.clone(), name.clone());
        final_name.insert(Rc::as_ptr(def), name.clone());
        let text = format!("{}{}", header(def, &name, opts), body.replace(SELF, &name));
        files.push((format!("{name}.v"), text));
        modules.push(name);
    }
    let mut ports = Vec::new();
    if top.has_clock {
        ports.push(TopPort {
            name: "clk".into(),
            dir: Dir::Input,
            width: 1,
        });
    }
    if top.has_reset {
        ports.push(TopPort {
            name: "rst".into(),
            dir: Dir::Input,
            width: 1,
        });
    }
    for p in &top.ports {
        ports.push(TopPort {
            name: p.name.clone(),
            dir: p.dir,
            width: p.width,
        });
    }
    let mut h = Sha256::new();
    for (n, t) in &files {
        h.update(n.as_bytes());
        h.update(t.as_bytes());
    }
    let verilog_hash = hex(&h.finalize()[..16]);
    let manifest = Manifest {
        top: top_name.clone(),
        files: files.iter().map(|f| f.0.clone()).collect(),
        modules,
        ports: ports.clone(),
        config_hash: opts.config_hash.clone(),
        preset: opts.preset.clone(),
        generator: GENERATOR.into(),
        verilog_hash,
    };
    let shim_cpp = shim::cpp(&top_name, &ports);
    let shim_rs = shim::rust(&top_name, &ports);
    Generated {
        top: top_name,
        verilog: files,
        manifest,
        shim_cpp,
        shim_rs,
        wave_filters: wave_filters(&order),
    }
}

/// One translate-filter file per distinct enumeration (`<Enum>.txt`; a second enumeration of
/// the same name but other states gets `<Enum>_1.txt`).
fn wave_filters(order: &[Rc<ModuleDef>]) -> Vec<(String, String)> {
    let mut seen: Vec<EnumDef> = Vec::new();
    let mut namer = Namer::default();
    let mut out = Vec::new();
    for def in order {
        for e in &def.enums {
            if seen.contains(e) {
                continue;
            }
            seen.push(e.clone());
            let digits = e.width.div_ceil(4) as usize;
            let text: String = e
                .variants
                .iter()
                .enumerate()
                .map(|(k, v)| format!("{k:0digits$x} {v}\n"))
                .collect();
            out.push((format!("{}.txt", namer.fresh(&e.name)), text));
        }
    }
    out
}

fn post_order(
    d: &Rc<ModuleDef>,
    out: &mut Vec<Rc<ModuleDef>>,
    seen: &mut HashMap<*const ModuleDef, ()>,
) {
    if seen.insert(Rc::as_ptr(d), ()).is_some() {
        return;
    }
    for i in &d.insts {
        post_order(&i.module, out, seen);
    }
    out.push(d.clone());
}

fn header(def: &ModuleDef, name: &str, opts: &EmitOptions) -> String {
    let mut s = format!("// {name}.v: generated by {GENERATOR}; do not edit, regenerate.\n");
    if !opts.preset.is_empty() || !opts.config_hash.is_empty() {
        s.push_str(&format!(
            "// Preset: {}; config hash: {}\n",
            opts.preset, opts.config_hash
        ));
    }
    let file = def.loc.file;
    s.push_str(&format!("// Described in: {file}:{}\n", def.loc.line));
    if !def.doc.is_empty() {
        s.push_str("//\n");
        for l in &def.doc {
            if l.is_empty() {
                s.push_str("//\n");
            } else {
                s.push_str(&format!("// {l}\n"));
            }
        }
    }
    s.push('\n');
    s
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A stable short hash of any serializable configuration (for `config_hash`).
pub fn config_hash(text: &str) -> String {
    let mut h = Sha256::new();
    h.update(text.as_bytes());
    hex(&h.finalize()[..8])
}
