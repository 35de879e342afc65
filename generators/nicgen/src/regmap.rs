//! Rendering the register and descriptor map (`nicgen_hdl::host::regmap`) into the two committed
//! files generated from it: the driver's constants and the register document. `nicgen regmap
//! --write` writes them; `tests/regmap.rs` fails, naming that command, when either is stale.

use nicgen_hdl::host::regmap::{Access, BLOCKS, CONSTS, DESCS};
use std::fmt::Write;

/// The driver's constants, relative to the workspace root.
pub const DRIVER_PATH: &str = "sw-driver/src/regs.rs";
/// The register document, relative to the workspace root.
pub const DOC_PATH: &str = "docs/REGISTERS.md";
/// The command that regenerates both.
pub const REGEN: &str = "cargo run -p nicgen -- regmap --write";

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Ro => "RO",
        Access::Ro64 => "RO, 64-bit",
        Access::Rw => "RW",
        Access::Wo => "WO",
    }
}

fn doc_line(out: &mut String, indent: &str, text: &str) {
    let _ = writeln!(out, "{indent}/// {text}");
}

/// `sw-driver/src/regs.rs`.
pub fn render_driver() -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "//! The register and descriptor map of the nicgen NIC: BAR 0 offsets, register fields,\n\
         //! descriptor layouts and numbered constants.\n\
         //!\n\
         //! GENERATED from `hdl/src/host/regmap.rs` by `{REGEN}`; do not edit.\n\
         //! Offsets are absolute BAR 0 byte offsets. Descriptor fields are big-endian.\n"
    );
    o.push_str(
        "/// A bit field of a 32-bit register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub lsb: u32,
    pub bits: u32,
}

impl Field {
    /// The field's mask in place.
    pub const fn mask(self) -> u32 {
        (((1u64 << self.bits) - 1) as u32) << self.lsb
    }
    /// The field's value in `reg`.
    pub const fn get(self, reg: u32) -> u32 {
        (reg & self.mask()) >> self.lsb
    }
    /// `value` placed in the field (bits beyond the field are dropped).
    pub const fn put(self, value: u32) -> u32 {
        (value << self.lsb) & self.mask()
    }
}

/// A field of a descriptor: `bits` at `lsb` of the big-endian `container`-byte value at `byte`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescField {
    pub byte: usize,
    pub container: usize,
    pub lsb: u32,
    pub bits: u32,
}

impl DescField {
    fn container_value(self, buf: &[u8]) -> u64 {
        buf[self.byte..self.byte + self.container]
            .iter()
            .fold(0u64, |v, b| (v << 8) | *b as u64)
    }
    fn mask(self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }
    /// The field's value in the descriptor `buf`.
    pub fn get(self, buf: &[u8]) -> u64 {
        (self.container_value(buf) >> self.lsb) & self.mask()
    }
    /// Write `value` into the field of `buf`, keeping the container's other bits.
    pub fn set(self, buf: &mut [u8], value: u64) {
        let m = self.mask() << self.lsb;
        let v = (self.container_value(buf) & !m) | ((value << self.lsb) & m);
        for i in 0..self.container {
            buf[self.byte + i] = (v >> (8 * (self.container - 1 - i))) as u8;
        }
    }
}

",
    );
    for b in BLOCKS {
        doc_line(&mut o, "", b.doc);
        let _ = writeln!(o, "pub mod {} {{", b.name);
        let _ = writeln!(o, "    #[allow(unused_imports)]\n    use super::Field;");
        let _ = writeln!(o, "    /// First byte of the block.");
        let _ = writeln!(o, "    pub const BLOCK_BASE: u32 = {:#06x};", b.base);
        let _ = writeln!(o, "    /// Bytes the block spans.");
        let _ = writeln!(o, "    pub const BLOCK_SPAN: u32 = {:#06x};", b.span);
        for r in b.regs {
            let _ = writeln!(
                o,
                "    /// {} ({}).",
                r.doc.trim_end_matches('.'),
                access_name(r.access)
            );
            let _ = writeln!(
                o,
                "    pub const {}: u32 = {:#06x};",
                r.name,
                b.base + r.offset
            );
            if r.count > 1 {
                let _ = writeln!(o, "    /// Elements of `{}`, 4 bytes apart.", r.name);
                let _ = writeln!(o, "    pub const {}_COUNT: u32 = {};", r.name, r.count);
            }
            if r.reset != 0 {
                let _ = writeln!(o, "    pub const {}_RESET: u32 = {:#x};", r.name, r.reset);
            }
            for fl in r.fields {
                let _ = writeln!(o, "    /// `{}.{}`: {}.", r.name, fl.name, fl.doc);
                let _ = writeln!(
                    o,
                    "    pub const {}_{}: Field = Field {{ lsb: {}, bits: {} }};",
                    r.name,
                    fl.name.to_uppercase(),
                    fl.lsb,
                    fl.bits
                );
            }
        }
        let _ = writeln!(o, "}}\n");
    }
    let _ = writeln!(
        o,
        "/// Descriptor layouts in host memory (big-endian, mlx5)."
    );
    let _ = writeln!(o, "pub mod desc {{");
    for d in DESCS {
        doc_line(&mut o, "    ", d.doc);
        let _ = writeln!(o, "    pub mod {} {{", d.name);
        let _ = writeln!(o, "        use super::super::DescField;");
        let _ = writeln!(o, "        /// Bytes of the layout.");
        let _ = writeln!(o, "        pub const SIZE: usize = {};", d.bytes);
        for fl in d.fields {
            let _ = writeln!(o, "        /// {}.", fl.doc);
            // One field per line: rustfmt's layout for a literal this wide, so the generated
            // file passes `cargo fmt --check` unchanged.
            let _ = writeln!(
                o,
                "        pub const {}: DescField = DescField {{\n            \
                 byte: {:#04x},\n            \
                 container: {},\n            \
                 lsb: {},\n            \
                 bits: {},\n        \
                 }};",
                fl.name.to_uppercase(),
                fl.byte,
                fl.container,
                fl.lsb,
                fl.bits
            );
        }
        let _ = writeln!(o, "    }}");
    }
    let _ = writeln!(o, "}}\n");
    let _ = writeln!(o, "/// Numbered constants shared with the NIC.");
    let _ = writeln!(o, "pub mod consts {{");
    for g in CONSTS {
        doc_line(&mut o, "    ", g.doc);
        let _ = writeln!(o, "    pub mod {} {{", g.name);
        for (n, v, doc) in g.values {
            let _ = writeln!(o, "        /// {doc}.");
            let _ = writeln!(o, "        pub const {n}: u32 = {v:#x};");
        }
        let _ = writeln!(o, "    }}");
    }
    let _ = writeln!(o, "}}");
    o
}

/// `docs/REGISTERS.md`.
pub fn render_doc() -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# nicgen register and descriptor map\n");
    let _ = writeln!(
        o,
        "Generated from `hdl/src/host/regmap.rs` by `{REGEN}`; do not edit. The same map builds \
         the BAR decoder in the hardware and the driver's constants (`sw-driver/src/regs.rs`).\n"
    );
    let _ = writeln!(
        o,
        "BAR 0 is a 32-bit AXI4-Lite register space; values are little-endian numbers. Descriptors \
         and doorbell payloads are mlx5's, with big-endian fields.\n"
    );
    let _ = writeln!(o, "## Blocks\n");
    let _ = writeln!(o, "| block | base | span | what |\n|---|---:|---:|---|");
    for b in BLOCKS {
        let _ = writeln!(
            o,
            "| `{}` | `{:#07x}` | `{:#x}` | {} |",
            b.name, b.base, b.span, b.doc
        );
    }
    for b in BLOCKS {
        let _ = writeln!(o, "\n## `{}` at `{:#07x}`\n\n{}\n", b.name, b.base, b.doc);
        let _ = writeln!(
            o,
            "| offset | register | access | meaning |\n|---:|---|---|---|"
        );
        for r in b.regs {
            let name = if r.count > 1 {
                format!("`{}[{}]`", r.name, r.count)
            } else {
                format!("`{}`", r.name)
            };
            let mut doc = r.doc.to_string();
            if r.reset != 0 {
                let _ = write!(doc, " Reset value {:#x}.", r.reset);
            }
            for fl in r.fields {
                let bits = if fl.bits == 1 {
                    format!("{}", fl.lsb)
                } else {
                    format!("{}:{}", fl.lsb + fl.bits - 1, fl.lsb)
                };
                let _ = write!(doc, "<br>`[{bits}]` `{}`: {}", fl.name, fl.doc);
            }
            let _ = writeln!(
                o,
                "| `{:#07x}` | {name} | {} | {doc} |",
                b.base + r.offset,
                access_name(r.access)
            );
        }
    }
    let _ = writeln!(o, "\n## Descriptors (host memory, big-endian)");
    for d in DESCS {
        let _ = writeln!(o, "\n### `{}` ({} bytes)\n\n{}\n", d.name, d.bytes, d.doc);
        let _ = writeln!(
            o,
            "| byte | container | bits | field | meaning |\n|---:|---:|---|---|---|"
        );
        for fl in d.fields {
            let bits = if fl.bits == 1 {
                format!("{}", fl.lsb)
            } else {
                format!("{}:{}", fl.lsb + fl.bits - 1, fl.lsb)
            };
            let _ = writeln!(
                o,
                "| `{:#04x}` | {} B | `[{bits}]` | `{}` | {} |",
                fl.byte, fl.container, fl.name, fl.doc
            );
        }
    }
    let _ = writeln!(o, "\n## Constants");
    for g in CONSTS {
        let _ = writeln!(
            o,
            "\n### `{}`\n\n{}\n\n| name | value | meaning |\n|---|---:|---|",
            g.name, g.doc
        );
        for (n, v, doc) in g.values {
            let _ = writeln!(o, "| `{n}` | `{v:#x}` | {doc} |");
        }
    }
    o
}

/// Both generated files: (path relative to the workspace root, text).
pub fn rendered() -> [(&'static str, String); 2] {
    [(DRIVER_PATH, render_driver()), (DOC_PATH, render_doc())]
}
